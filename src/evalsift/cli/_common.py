"""What every command shares: the parser class, argument types, shared options, loading ``--data``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from ..errors import DataError, ParameterError


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: ...`` and where to look) and defaults shown in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print one line and exit with status 2 (argparse prints its whole usage block instead)."""
        print(f"error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after every option's help, except where there is no default to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        d = action.default
        if d is None or d is False or d is argparse.SUPPRESS or "%(default)" in text or action.required:
            return text
        if isinstance(d, (list, tuple)):
            return text + f" (default: {','.join(map(str, d))})"
        return text + " (default: %(default)s)"


# ---------------------------------------------------------------------------------- argument types
def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def nonneg_int(text: str) -> int:
    """An integer >= 0."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def seed_int(text: str) -> int:
    """A random seed: an integer from 0 to 2**63 - 1 (what numpy's generators take)."""
    try:
        v = int(text)
    except ValueError:
        v = -1
    if not 0 <= v < 2 ** 63:
        raise argparse.ArgumentTypeError(f"expected a seed, an integer from 0 to 2^63 - 1, got {text!r}")
    return v


def _number(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def open_unit(text: str) -> float:
    """A number strictly between 0 and 1 (a risk, a significance level)."""
    v = _number(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}")
    return v


def fraction(text: str) -> float:
    """A number in (0, 1] (a share of the data)."""
    v = _number(text)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return v


def nonneg_float(text: str) -> float:
    """A number >= 0."""
    v = _number(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def positive_float(text: str) -> float:
    """A number > 0."""
    v = _number(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return v


def int_list(text: str) -> list[int]:
    """``10,20,50`` or ``5..200`` (5, 10, ..., 200: step 5, as the DiffUse paper) or a mix; all >= 1."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if ".." in part:
                lo, _, hi = part.partition("..")
                out.extend(range(int(lo), int(hi) + 1, 5))
            elif part:
                out.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers or LO..HI, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers (e.g. 10,20,50 or 5..200), got {text!r}")
    return out


def _number_list(text: str, ok, expected: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not out or not all(ok(p) for p in out):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return out


def fraction_list(text: str) -> list[float]:
    """Comma-separated numbers in (0, 1]."""
    return _number_list(text, lambda p: 0 < p <= 1, "proportions in (0, 1] such as 0.05,0.1,0.2")


def risk_list(text: str) -> list[float]:
    """Comma-separated risks in (0, 1)."""
    return _number_list(text, lambda p: 0 < p < 1, "risks in (0, 1) such as 0.05,0.1,0.2")


def share_list(text: str) -> list[float]:
    """Comma-separated shares in [0, 1) (gaps, tie shares)."""
    return _number_list(text, lambda p: 0 <= p < 1, "numbers in [0, 1) such as 0,0.02,0.05")


def name_list(text: str) -> list[str]:
    """Comma-separated names, none empty."""
    out = [x.strip() for x in text.split(",")]
    if not out or any(not x for x in out):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return out


def system_list(text: str) -> list[str]:
    """Comma-separated system names (:func:`name_list`), each named once: a system named twice is
    refused by name, not taken as one system fewer."""
    out = name_list(text)
    twice = next((x for x in out if out.count(x) > 1), None)
    if twice is not None:
        times = "twice" if out.count(twice) == 2 else f"{out.count(twice)} times"
        raise argparse.ArgumentTypeError(f"names {twice} {times}; name each system once")
    return out


# ---------------------------------------------------------------------------------- shared options
def add_quiet(p: argparse.ArgumentParser) -> None:
    """``--quiet`` on a sub-command, so it works before or after the sub-command's name."""
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")


def add_by(p: argparse.ArgumentParser, examples: str) -> None:
    """``--by COLUMN`` (one board per value, beside the overall one) and ``--questions FILE`` (MT-Bench's
    categories)."""
    p.add_argument("--by", metavar="COLUMN",
                   help=f"also one board per value of this column (e.g. {examples}), beside the overall one")
    p.add_argument("--questions", metavar="FILE",
                   help="MT-Bench's question.jsonl: each question's category, for --by category (found beside a "
                        "FastChat judgment file when it is there)")


def add_games(p: argparse.ArgumentParser) -> None:
    """``--games combined|separate``: how a FastChat pairwise row's two games count."""
    p.add_argument("--games", choices=["combined", "separate"], default="combined",
                   help="FastChat pairwise judgments (both presentation orders per row): combined (default) counts "
                        "one battle per row by FastChat's rule -- the same winner in both games wins, anything else "
                        "is a tie, a row with an error game is left out; separate counts each game as a battle")


def add_data(p: argparse.ArgumentParser) -> None:
    """``--data`` and ``--include-refs``."""
    p.add_argument("--data", required=True, metavar="SPEC",
                   help="dataset: a path, 'demo', or a name under $EVALSIFT_DATA (e.g. wmt23/en-de, summeval); "
                        "'FORMAT:path' forces a reader")
    p.add_argument("--include-refs", action="store_true",
                   help="keep human references (refA, ...) as systems (mt-metrics-eval data)")
    add_run_system(p)


def add_run_system(p: argparse.ArgumentParser) -> None:
    """``--system NAME``: the name of a harness run whose files record none."""
    p.add_argument("--system", metavar="NAME", help="the system's name where a harness's file holds one run without a "
                                                    "model name (an lm-eval samples file alone, an Every Eval Ever file)")


def load_spec(spec: str, args: argparse.Namespace, **kw):
    """:func:`evalsift.io.load` of ``spec`` with the options the command line gives: ``--include-refs``, and
    ``--system`` for a harness's run that records no model name."""
    from ..io import HARNESSES, load, resolve

    system = getattr(args, "system", None)
    if system and resolve(spec)[0] in HARNESSES:
        kw["system"] = system
    return load(spec, include_refs=getattr(args, "include_refs", False), **kw)


EMBEDDINGS_FORMATS = (".npz with arrays vectors (n, d) and text_hash (hex sha256 of the UTF-8 output text) or texts "
                      "or item_id + system; or .parquet with a list column vector and the same key columns "
                      "(docs/cli.md, 'Precomputed embeddings')")


def add_encoder(p: argparse.ArgumentParser) -> None:
    """``--encoder`` and ``--embeddings`` (read them with :func:`resolve_encoder`)."""
    p.add_argument("--encoder", default="minilm",
                   help="text encoder: minilm (offline all-MiniLM-L6-v2), minilm-onnx (the same vectors through ONNX Runtime, "
                        "1.5x faster here), minilm-int8 (the same model quantised to int8 in ONNX Runtime: faster "
                        "still, vectors close to but not equal to minilm's), tfidf (no torch), or st:<model or path>")
    p.add_argument("--embeddings", metavar="FILE", help="precomputed vectors instead of --encoder: " + EMBEDDINGS_FORMATS)
    add_device(p)


def resolve_encoder(args: argparse.Namespace, pool=None):
    """The encoder a command line asks for: a :class:`~evalsift.embed.PrecomputedEncoder` of ``--embeddings``
    (``pool`` resolves item + system keys), else the ``--encoder`` name. Both at once is an error."""
    path = getattr(args, "embeddings", None)
    if not path:
        return args.encoder
    if args.encoder != "minilm":
        raise ParameterError(f"--embeddings and --encoder exclude each other: the vectors come from {path}, or are "
                             f"computed by --encoder {args.encoder}; give one of them", field="embeddings")
    from ..embed.precomputed import PrecomputedEncoder

    return PrecomputedEncoder.from_file(path, pool=pool)


def device_spec(text: str) -> str:
    """argparse type of ``--device``: auto, cpu, cuda or cuda:N."""
    from ..device import check_device_spec
    from ..errors import ParameterError as _PE

    try:
        return check_device_spec(text)
    except _PE:
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N (a GPU index), got {text!r}") from None


def add_device(p: argparse.ArgumentParser) -> None:
    """``--device auto|cpu|cuda|cuda:N`` on a command that runs a neural model (the main dispatch makes it the
    process default before the command runs, so every model the command loads follows it)."""
    p.add_argument("--device", type=device_spec, default="auto", metavar="auto|cpu|cuda|cuda:N",
                   help="where neural models run (encoders, torch models): auto (default: a CUDA GPU when torch "
                        "sees one, else the CPU), cpu, cuda or cuda:N")


def device_line() -> str | None:
    """``device: ...`` for the terminal, when a neural model ran (None otherwise)."""
    from ..device import device_report

    rep = device_report()
    return f"device: {rep['summary']}" if rep["used"] else None


def add_oracle_opts(p: argparse.ArgumentParser) -> None:
    """How a judge simulated from a score column turns scores into verdicts."""
    p.add_argument("--lower-is-better", action="store_true", help="the oracle's metric is better when lower")
    p.add_argument("--tie-tolerance", type=nonneg_float, default=0.0,
                   help="score difference at or below which an item is a tie")


ORACLE_HELP = ("who judges: metric:NAME simulates the judge from a score column (e.g. metric:mqm); "
               "judgments:FILE replays recorded pairwise verdicts (e.g. judgments:pairs.csv or "
               "judgments:summeval/llm-pairwise/coherence); llm:MODEL asks an LLM judge on any OpenAI-compatible "
               "server (e.g. llm:gpt-4o-mini --judge-url http://localhost:8000/v1). People answer through "
               "'evalsift annotate new --pairwise', whose live Session is the same loop")


def add_judge_opts(p: argparse.ArgumentParser, *, db: bool = True, title: str = "LLM judge (--oracle llm:MODEL)") -> None:
    """Settings of an LLM judge (``--oracle llm:MODEL``) and the store that caches its answers
    (``db=False``: the command's own ``--db`` is that store)."""
    from ..oracle.llm import MAX_CONNECTION_FAILURES

    g = p.add_argument_group(title)
    g.add_argument("--judge-url", metavar="URL", help="the OpenAI-compatible server, e.g. http://localhost:8000/v1 "
                                                      "(default: the openai client's, api.openai.com). Credentials in "
                                                      "it (user:pass@, ?api_key=...) are used, never stored or printed")
    g.add_argument("--judge-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="environment variable holding the API key (the key is never stored or printed)")
    g.add_argument("--judge-template", metavar="FILE", help="your own pairwise prompt template (see docs/llm-judge.md)")
    g.add_argument("--judge-criterion", metavar="TEXT", help="what 'better' means, filled into the template")
    g.add_argument("--judge-concurrency", type=positive_int, default=4, help="requests in flight at once")
    g.add_argument("--judge-timeout", type=positive_float, default=60.0,
                   help=f"seconds per attempt, a hard deadline (connecting, sending, the whole answer); a failed "
                        f"attempt is retried up to {JUDGE_MAX_RETRIES} times after waits of 0.5, 1, 2 s (or the "
                        f"server's Retry-After), so one request takes up to {JUDGE_MAX_RETRIES + 1} x this plus those "
                        f"waits. After {MAX_CONNECTION_FAILURES} requests in a row that get no answer (nothing listens, "
                        "or every attempt times out) the command stops with an error")
    g.add_argument("--retry-errors", action="store_true",
                   help="ask again the answers that had no usable verdict (no [[A]]/[[B]]/[[C]] marker, conflicting "
                        "markers, a refusal, a rating off the scale); without it they are reused from the cache and "
                        "stay errors. Failed calls (network, HTTP errors) are asked again in any case")
    if db:
        g.add_argument("--db", metavar="PATH", help="a store that caches the judge's answers, so a rerun costs nothing "
                                                   "(default: evalsift.db when the judge is an LLM)")


#: the openai client's retries per request for a judge built from the command line (LLMJudge's default)
JUDGE_MAX_RETRIES = 3


def build_oracle(args: argparse.Namespace, spec: str):
    """The oracle a command line asks for, with the options that belong to its kind."""
    from ..oracle import make_oracle

    kind = spec.partition(":")[0]
    if kind == "metric":
        return make_oracle(spec, higher_is_better=not getattr(args, "lower_is_better", False),
                           tie_tolerance=getattr(args, "tie_tolerance", 0.0))
    if kind == "llm":
        from ..store import DEFAULT_DB, Store

        judge = make_oracle(spec, base_url=args.judge_url, key_env=args.judge_key_env, template=args.judge_template,
                            criterion=args.judge_criterion, concurrency=args.judge_concurrency,
                            timeout=args.judge_timeout, max_retries=JUDGE_MAX_RETRIES,
                            retry_unusable=getattr(args, "retry_errors", False))  # validated before any file is created
        judge.cache = Store(getattr(args, "db", None) or DEFAULT_DB).llm_cache()
        return judge
    if kind == "judgments" and getattr(args, "aggregate", None):  # --aggregate: one verdict per item and pair
        return make_oracle(spec, aggregate=args.aggregate, seed=args.aggregate_seed)
    return make_oracle(spec)


PROXY_HELP = ("what is known about every item, to decide sooner with the same guarantee: metric:NAME (an automatic "
              "metric scored for both systems, e.g. metric:COMET-refA) or judge:SPEC (a cheap judge asked about every item "
              "first: judge:llm:MODEL, judge:judgments:FILE); repeat it for several (stacked into one calibration, "
              "fitted on the verdicts seen so far); anytime rule only")


def add_proxy_opts(p: argparse.ArgumentParser) -> None:
    """``--proxy SPEC`` (repeatable) and ``--covariates LIST`` of the commands that decide with a proxy."""
    p.add_argument("--proxy", metavar="SPEC", action="append", help=PROXY_HELP)
    p.add_argument("--covariates", type=name_list, metavar="LIST",
                   help="columns the user already has, stacked with the proxies: length (log ratio of the two "
                        "outputs' lengths) and position (which system was shown first, from recorded judgments)")


def proxy_specs(args: argparse.Namespace) -> list[str]:
    """The ``--proxy`` specs in order, each once: the same spec given twice (as a command line written
    when ``--proxy`` took one value may do) is one proxy, as it was then."""
    return list(dict.fromkeys(args.proxy or ()))


def proxy_judges(args: argparse.Namespace) -> list:
    """Per ``--proxy`` spec (:func:`proxy_specs`), its cheap judge built with the command's options (None
    for a metric)."""
    return [build_oracle(args, s.partition(":")[2]) if s.startswith("judge:") else None for s in proxy_specs(args)]


def proxy_spec(args: argparse.Namespace):
    """``--proxy`` as the library takes it: None, one spec, or the list of several."""
    specs = proxy_specs(args)
    if getattr(args, "covariates", None) and not specs:
        raise ParameterError("--covariates are stacked with a proxy: give at least one --proxy", field="covariates")
    return None if not specs else specs[0] if len(specs) == 1 else specs


def load_data_and_oracle(args: argparse.Namespace):
    """``(pool, oracle)`` of a command with ``--data`` and ``--oracle``; a metric oracle's column must
    be in the data (the error names the metrics there)."""
    pool = load_data(args)
    oracle = build_oracle(args, args.oracle)
    metric = getattr(oracle, "metric", None)
    if metric is not None:
        pool.check_metric(metric)
    return pool, oracle


RULE_HELP = ("the stop rule. anytime: valid -- P(naming the wrong winner) <= risk for every pool, however often "
             "the loop looks; needs a random order: --method random, or diffuse_strata (DiffUse's clusters as strata, "
             "the same guarantee). paper / tie_aware: the DiffUse paper's hypergeometric rule, a "
             "HEURISTIC (no guarantee; on close pairs it names the wrong winner far more often than the stated risk)")


def add_loop_opts(p: argparse.ArgumentParser, default_rule: str | None = "anytime") -> None:
    """The iterative loop's settings. ``default_rule=None``: the rule follows the selector
    (:func:`resolve_risk_rule`)."""
    p.add_argument("--risk", type=open_unit, default=0.2, help="stop with a winner once the risk is at or below this")
    p.add_argument("--min-labels", type=positive_int, default=5, help="size of the first decision set")
    p.add_argument("--max-labels", type=positive_int, default=200,
                   help="never ask about more items than this (a hard cap)")
    p.add_argument("--risk-rule", default=default_rule, choices=["anytime", "paper", "tie_aware"],
                   help=RULE_HELP + ("" if default_rule else " (default: anytime); with a selector that does not judge in "
                                     "a random order (--method diffuse), paper, with a note, as before"))


def add_sampling_opts(p: argparse.ArgumentParser) -> None:
    """How a proxy chooses the items: ``--sampling`` and ``--explore`` (with ``--proxy``)."""
    p.add_argument("--sampling", "--design", dest="sampling", default="uniform", choices=["uniform", "active", "neyman"],
                   help="with --proxy, how the items are drawn: uniform (default) in a random order; active more often "
                        "where the calibrated proxy is unsure; neyman (judge-stratified Neyman allocation) more often "
                        "within the judge's verdicts where people disagree with it most. active and neyman weight "
                        "each verdict by the inverse of its draw probability: the same guarantee; measured no fewer "
                        "labels than uniform so far (docs/proxy.md)")
    p.add_argument("--explore", type=unit_open_closed, default=0.5,
                   help="with --sampling active or neyman: the share of each draw's probability spread uniformly "
                        "(0 < x <= 1)")


def unit_open_closed(text: str) -> float:
    """A number in (0, 1]."""
    v = _number(text)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return v


def resolve_risk_rule(args: argparse.Namespace, selector) -> str:
    """The stop rule of ``args``; when none was given, the valid anytime rule for a selector that
    judges in a uniformly random order, else the paper's rule with a note that it is a heuristic
    (so ``compare --method diffuse`` keeps working as it did before the anytime rule existed)."""
    if args.risk_rule is not None:
        return args.risk_rule
    if getattr(selector, "random_order", False):
        return "anytime"
    note(f"--method {args.method} does not judge the items in a uniformly random order, which the valid anytime "
         "rule needs; using the DiffUse paper's rule, a heuristic (its risk is not a guaranteed error rate). Pass "
         "--risk-rule to choose, or --method random / diffuse_strata for the valid rule")
    return "paper"


# ---------------------------------------------------------------------------------- data
def pair_only(pool, a: str, b: str):
    """``pool`` restricted to the items where both ``a`` and ``b`` have an output (:func:`evalsift.restrict.restrict_pair`),
    with a ``note:`` saying what was left out."""
    from ..restrict import restrict_pair

    r = restrict_pair(pool, a, b)
    if r.dropped:
        note(r.note())
    return r.pool


def load_data(args: argparse.Namespace):
    """The dataset of ``--data``, with the metrics the command line names made ready.

    ``--metric NAME-ref`` (chrF-ref, BLEU-ref, ROUGE-L-ref) that the data lacks is computed against
    its references, and so is the metric of a judge simulated from one (``--oracle metric:NAME-ref``,
    ``--oracle-metric NAME-ref``); ``--human-metric NAME`` makes NAME a human metric whatever the
    data's flags say (naming it on the command line is the statement that it holds human judgments).
    """
    from ..metrics import ensure_metric, ensure_oracle_metric

    pool = load_spec(args.data, args)
    if getattr(args, "metric", None):
        pool, args.metric = ensure_metric(pool, args.metric)
    for option in ("oracle", "oracle_metric"):
        if isinstance(getattr(args, option, None), str):
            pool, resolved = ensure_oracle_metric(pool, getattr(args, option))
            setattr(args, option, resolved)
    human = getattr(args, "human_metric", None)
    if human:
        pool.check_metric(human)
        if not pool.is_human(human):
            pool = pool.with_scores(human, pool.scores[human], human=True)
    return pool


def read_item_ids(path: str) -> list[str]:
    """Item ids from a JSONL file of picks (``item_id``, or subset2evaluate's ``i``), in file order."""
    from ..io._common import iter_jsonl

    ids = []
    for lineno, rec in iter_jsonl(Path(path)):
        if not isinstance(rec, dict):
            raise DataError(f"{path}: line {lineno} is not a JSON object; expected one pick per line with 'item_id'")
        key = "item_id" if "item_id" in rec else "i" if "i" in rec else None
        if key is None:
            raise DataError(f"{path}: line {lineno} has no 'item_id' (or subset2evaluate 'i') field", field="item_id")
        ids.append(str(rec[key]))
    if not ids:
        raise DataError(f"{path}: the file has no items; expected one JSON object per line with 'item_id' "
                        "(e.g. the picks.jsonl that 'evalsift select' writes)")
    return ids


def pool_from_picks(path: str):
    """The items of a picks file as a Pool, with the outputs ``evalsift select`` wrote into it
    (``outputs: {system: text}``, or ``a``, ``b``, ``output_a``, ``output_b`` for a pair), the input
    and the metadata fields ``domain``, ``doc``, ``cost``. DataError when the file holds no outputs."""
    from ..io._common import iter_jsonl
    from ..pool import Pool

    read_item_ids(path)  # the same checks and messages for every line
    rows: dict[str, dict] = {}
    for _, rec in iter_jsonl(Path(path)):
        iid = str(rec.get("item_id", rec.get("i")))
        if iid in rows:
            continue
        outs = dict(rec["outputs"]) if isinstance(rec.get("outputs"), dict) else {}
        if rec.get("a") is not None and rec.get("b") is not None:
            outs.setdefault(str(rec["a"]), rec.get("output_a"))
            outs.setdefault(str(rec["b"]), rec.get("output_b"))
        rows[iid] = {"input": rec.get("input"), "outputs": outs, **{f: rec.get(f) for f in ("domain", "doc", "cost")}}
    systems = list(dict.fromkeys(s for r in rows.values() for s in r["outputs"]))
    if not systems:
        raise DataError(f"{path} holds no outputs (picks written without them, or by another tool); give --data SPEC "
                        "with the dataset they were picked from", field="data")
    meta = {f: [r[f] for r in rows.values()] for f in ("domain", "doc", "cost")
            if all(r[f] is not None for r in rows.values())}
    return Pool(item_ids=list(rows), inputs=[r["input"] for r in rows.values()], systems=systems,
                outputs={s: [r["outputs"].get(s) for r in rows.values()] for s in systems}, metadata=meta,
                name=Path(path).stem)


def picked_pair(path: str) -> tuple[str | None, str | None]:
    """The pair a picks file was selected for (its first line's ``a`` and ``b``), or (None, None)."""
    from ..io._common import iter_jsonl

    for _, rec in iter_jsonl(Path(path)):
        return (rec.get("a"), rec.get("b")) if isinstance(rec, dict) else (None, None)
    return None, None


def picked_positions(path: str, pool, data: str) -> list[int]:
    """Positions in ``pool`` of the items a picks file names, in file order, each once; an id that
    the data lacks is a DataError naming the file and the ids."""
    wanted = read_item_ids(path)
    index = {iid: i for i, iid in enumerate(pool.item_ids)}
    unknown = [i for i in wanted if i not in index]
    if unknown:
        raise DataError(f"{path}: {len(unknown)} item id(s) are not in {data!r} (first: {unknown[:3]}); were the "
                        "picks made from another dataset?", item_id=unknown[0])
    return [index[i] for i in dict.fromkeys(wanted)]


# ---------------------------------------------------------------------------------- what --out creates
# Per running command (the innermost last; :func:`outputs_undone_on_failure` opens one): the folders and files it
# created for its output, in the order created, and the paths that hold progress a rerun resumes from.
_made: list[dict[str, list[Path]]] = []


def _missing(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, outermost first (absolute, ``..`` resolved)."""
    here = Path(os.path.abspath(folder))
    out = []
    for f in (here, *here.parents):
        if f.exists():
            break
        out.append(f)
    return out[::-1]


def _record(kind: str, paths: list[Path]) -> None:
    if _made:
        _made[-1][kind].extend(paths)


def _make_folder(folder: Path) -> None:
    """Create ``folder`` and any missing parents, with a ``note: created folder X`` (a mistyped path
    shows at once); nothing is said when it exists. What it creates is removed again should the command
    fail (:func:`outputs_undone_on_failure`)."""
    if folder.is_dir():
        return
    missing = _missing(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _record("folders", missing)
    note(f"created folder {folder}")


def out_file(path: str, progress: bool = False) -> Path:
    """An output file path whose folder exists (created, with a note); an existing folder is refused.
    Should the command fail, the file is removed when this command created it, and so are the folders
    created for it -- unless ``progress`` (the file holds what a rerun resumes from, e.g. ``judge``'s
    verdicts) and something was written to it."""
    p = Path(path)
    if p.is_dir():
        raise DataError(f"--out {path} is a folder; give a file name such as {p / 'picks.jsonl'}")
    _make_folder(p.parent)
    if not p.exists():
        _record("files", [Path(os.path.abspath(p))])
    if progress:
        _record("progress", [Path(os.path.abspath(p))])
    return p


def out_dir(path: str, progress: Sequence[str] = ()) -> Path:
    """An output folder, created: silently itself (what ``--out DIR`` asks for), with a note when the
    folder it goes into had to be created too; an existing file is refused. Should the command fail, the
    folders it created are removed again with what it wrote into them, unless one of the files named in
    ``progress`` (what a rerun resumes from, e.g. ``bench``'s ``tasks.jsonl``) was written there; a folder
    that existed before is never removed."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise DataError(f"--out {path} is a file; give a folder for results.json and the plot")
    _make_folder(p.parent)
    if not p.is_dir():
        missing = _missing(p)
        p.mkdir(exist_ok=True)
        _record("folders", missing)
    _record("progress", [Path(os.path.abspath(p / name)) for name in progress])
    return p


def _holds_something(path: Path) -> bool:
    try:
        return path.stat().st_size > 0 if path.is_file() else path.is_dir() and any(path.iterdir())
    except OSError:
        return False


@contextmanager
def outputs_undone_on_failure() -> Iterator[None]:
    """Run a command so that a failure leaves no new output behind: when the block raises (an error, an
    internal error, Ctrl-C) or :func:`fail_outputs` is called, every folder that :func:`out_dir` /
    :func:`out_file` created inside it (and the parents created with it) is removed with what the command
    wrote there, and so is an output file it created; a folder or file that existed before is never removed
    and nothing in it touched (the writers replace a file whole: :func:`evalsift.io._common.atomic_file`).
    What a rerun resumes from (their ``progress``) is kept, and with it the folders that lead to it."""
    made: dict[str, list[Path]] = {"folders": [], "files": [], "progress": []}
    _made.append(made)
    try:
        yield
    except BaseException:
        _undo(made)
        raise
    finally:
        del _made[next(i for i, m in enumerate(_made) if m is made)]  # this block's record (not an equal one)


def fail_outputs() -> None:
    """Undo the running command's new outputs now (its exit status says it failed, without an exception)."""
    if _made:
        _undo(_made[-1])


def _undo(made: dict[str, list[Path]]) -> None:
    import shutil

    keep = [p for p in made["progress"] if _holds_something(p)]
    for f in reversed(made["files"]):
        if f not in keep:
            f.unlink(missing_ok=True)
    for folder in reversed(made["folders"]):
        if not any(k == folder or folder in k.parents for k in keep):
            shutil.rmtree(folder, ignore_errors=True)
    made["folders"].clear()
    made["files"].clear()


def print_json(obj: Any) -> None:
    """Pretty, strict JSON on stdout: numpy values converted, NaN written as null."""
    from ..io._common import json_default, plain_json

    print(json.dumps(plain_json(obj), indent=2, default=json_default, allow_nan=False))


def note(text: str) -> None:
    """A ``note: ...`` line on stderr; inside :func:`collect_notes`, appended to its list instead (the command
    prints that list once, and writes the same list into its report)."""
    if _collecting:
        _collecting[-1](str(text))
        return
    print(f"note: {text}", file=sys.stderr)


_collecting: list[Callable[[str], None]] = []  # where note() goes inside the collect_notes blocks open now


def cap_budget(budget: int | None, size: int, option: str, where: str) -> int | None:
    """``budget`` capped at ``size``, the items there are, with a note when it was larger (a budget
    above the pool is taken as "all of it", said once, never silently). ``where``: what the items
    are, for the note (e.g. "the pool", "the pool (A vs B)")."""
    if budget is None or budget <= size:
        return budget
    note(f"{option} {budget} is more than the {size} items in {where}; using all {size}")
    return size


@contextmanager
def collect_notes(notes: list[str]) -> Iterator[list[str]]:
    """Everything a command says inside the block -- its :func:`note` calls and the Python warnings raised
    (each message once, on one line) -- is appended to ``notes`` as it happens instead of being printed, so
    the command prints one list of ``note:`` lines and writes the same list into its report (the report says
    what the terminal says). Should the block fail, what it collected is printed before the error."""
    deferred: list[str] = []

    def keep(text: str, once: bool = False) -> None:
        if not (once and text in notes):
            notes.append(text)
            deferred.append(text)

    def warned(message, category, filename, lineno, file=None, line=None) -> None:
        keep(" ".join(str(message).split()), once=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = warned
        _collecting.append(keep)
        try:
            yield notes
        except BaseException:
            _collecting.remove(keep)
            for text in deferred:
                note(text)
            raise
        _collecting.remove(keep)


AGGREGATE_HELP = ("how several annotators' verdicts on the same item and pair become one: majority (plurality, a "
                  "split is a tie), dawid-skene (Dawid & Skene's confusion-matrix model) or mace (Hovy et al.'s "
                  "MACE); the rule and each annotator's competence are printed. Competence models need the "
                  "annotator/judge field naming the same person across items, and the 'quality' extra "
                  "(crowd-kit). Default: every verdict counted as before")


def add_aggregate(p: argparse.ArgumentParser) -> None:
    """``--aggregate majority|dawid-skene|mace`` (and ``--aggregate-seed``): the rules of
    :func:`evalsift.oracle.aggregate.aggregate_judgments`."""
    from ..stats.crowd import RULES

    p.add_argument("--aggregate", choices=RULES, metavar="|".join(RULES), help=AGGREGATE_HELP)
    p.add_argument("--aggregate-seed", type=int, default=0, metavar="S",
                   help="seed of MACE's random restarts (with --aggregate mace); the same seed gives the same result")
