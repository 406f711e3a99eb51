"""``evalsift estimate``: a new system's full-benchmark score from its scores on a few anchor items; and the
adaptive test's resumable steps for an external harness (``estimate start | next | tell | show --state DIR``).

The steps (:data:`STEPS`) are routed by the first word after ``estimate`` (:class:`_EstimateParser`): any other
command line is the one-shot form, parsed exactly as before. ``start`` fits the test
(:class:`evalsift.estimate.adaptive.AdaptiveTest`) to the known systems once and writes ``DIR/state.json``;
``next`` asks for the next items (printed one per line on stdout; for data read from lm-eval's logs also
``DIR/next.lm-eval.json`` for its ``--samples`` and the ``lm_eval`` command); ``tell`` takes the new system's
scores (a JSONL of ``{item_id, score}`` or the harness's own log of its run on those items); ``show`` prints the
estimate. Each step reads the state, changes a copy and replaces the file whole (or not at all) at its end: a
failed step leaves the state as it was, and any later process resumes it (the draws are seeded per step).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ._common import (Parser, add_quiet, fraction, name_list, note, open_unit, out_dir, positive_float, positive_int,
                      seed_int)

#: the adaptive test's steps, each ``evalsift estimate STEP ...`` (the first word after ``estimate``)
STEPS = ("start", "next", "tell", "show")


class _EstimateParser(Parser):
    """``estimate``'s parser: a command line whose first word is a step (:data:`STEPS`) is parsed by that step's
    own parser (``evalsift estimate next --help``); any other is the one-shot form, parsed as it always was."""

    steps: dict[str, argparse.ArgumentParser]

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse's
        args = list(sys.argv[1:] if args is None else args)
        if args and args[0] in getattr(self, "steps", {}):
            return self.steps[args[0]].parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``estimate``."""
    p = sub.add_parser("estimate", help="a new system's full-benchmark score from a few judged items, with an "
                                        "interval")
    p.add_argument("--data", required=True, metavar="SPEC",
                   help="the known systems' scores on every item plus the new system's on (at least) the anchors: "
                        "a path, a dataset name (alpaca-eval, opencompass-irt, wmt23/en-de) or FORMAT:path")
    p.add_argument("--system", required=True, metavar="NEW", help="the new system (its scores on the anchors are "
                                                                  "read from --data, or from --run; every other "
                                                                  "system is known)")
    p.add_argument("--items", required=True, metavar="FILE", help="anchors.jsonl from `evalsift select anchors`")
    p.add_argument("--run", metavar="SPEC", help="the new system's own harness log covering (at least) the anchors, "
                                                 "e.g. lm-eval's --log_samples output of a run with the --samples "
                                                 "file that `select anchors --export lm-eval` wrote: NEW's scores on "
                                                 "the anchors are read from it (a path or FORMAT:path)")
    p.add_argument("--method", type=name_list, default=None, metavar="M[,M...]",
                   help="mean | aipw (design-based intervals; default aipw) | regression | pirt | gpirt "
                        "(tinyBenchmarks as the paper defines it) | pirt-1d | gpirt-1d (evalsift's one-dimensional "
                        "simplification, pirt-1d with a normal interval) (model-based); several comma-separated")
    p.add_argument("--alpha", type=open_unit, default=0.1, help="1 - the interval's level (default 0.1: 90%%)")
    p.add_argument("--metric", help="the score to estimate (default: the data's human metric, or its only one)")
    p.add_argument("--where", metavar="COLUMN=VALUE", help="only the items with this per-item value, e.g. "
                                                         "benchmark=MMLU (as when the anchors were selected)")
    p.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    p.add_argument("--by", metavar="COLUMN", help="estimate each value of this per-item column (e.g. benchmark) and "
                                                "the totals, with --method separate | shared | shared-offset | mean "
                                                "(default shared-offset,separate): one ability shared across the "
                                                "benchmarks, or each on its own (docs/estimate.md, 'Across "
                                                "benchmarks'; model-based, no interval)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (estimate.json)")
    add_quiet(p)
    p.set_defaults(handler=cmd_estimate)
    p.epilog = ("Adaptive testing for an external harness, step by step (each: --help): evalsift estimate start --data "
                "KNOWN --system NEW --rule active-cs|fisher --budget N --state DIR; evalsift estimate next --state DIR; "
                "evalsift estimate tell --state DIR --results FILE; evalsift estimate show --state DIR")
    p.__class__ = _EstimateParser  # the subparsers action built it as a Parser; only parse_known_args differs
    p.steps = _step_parsers(p.prog)


def _step_parsers(prog: str) -> dict[str, argparse.ArgumentParser]:
    """The parsers of ``estimate start | next | tell | show`` (module doc)."""
    steps: dict[str, argparse.ArgumentParser] = {}

    def new(name: str, description: str) -> argparse.ArgumentParser:
        q = Parser(prog=f"{prog} {name}", description=description)
        q.add_argument("--state", required=True, metavar="DIR",
                       help="the test's folder (state.json: the whole test, replaced whole after each step)")
        add_quiet(q)
        steps[name] = q
        return q

    q = new("start", "Start an adaptive test of NEW against the known systems of --data: fits the 2PL once and "
                     "writes DIR/state.json (no item is asked yet: `estimate next` asks).")
    q.add_argument("--data", required=True, metavar="SPEC",
                   help="the known systems' scores on every item (the pool): a path (e.g. lm-eval's --output_path "
                        "folder of their runs), a dataset name, or FORMAT:path")
    q.add_argument("--system", required=True, metavar="NEW",
                   help="the new system, as its harness names it (lm-eval: the model name of its run); every other "
                        "system of --data is known")
    q.add_argument("--rule", choices=RULE_NAMES, default="active-cs",
                   help="active-cs: items drawn at random (known probabilities), an interval valid at every step "
                        "(needs the score's range at both ends); fisher: Fluid Benchmarking's most informative item "
                        "at the current ability, model-based, no interval")
    q.add_argument("--budget", required=True, type=positive_int, metavar="N", help="the most items to judge")
    q.add_argument("--batch", type=positive_int, default=10, metavar="K",
                   help="items each `next` asks for (one harness run per batch; `next --batch` overrides)")
    q.add_argument("--metric", help="the score to estimate (default: the data's human metric, or its only one)")
    q.add_argument("--where", metavar="COLUMN=VALUE", help="only the items with this per-item value, e.g. task=arc_easy")
    q.add_argument("--range", type=score_range, metavar="LO,HI",
                   help="the score's stated range, where the data states none (lm-eval's acc is 0,1 already), e.g. "
                        "0,100; active-cs needs both ends")
    q.add_argument("--alpha", type=open_unit, default=0.1, help="1 - the interval's level (active-cs)")
    q.add_argument("--seed", type=seed_int, default=0, help="seed of active-cs's draws (one stream per step)")
    q.add_argument("--floor", type=fraction, default=None,
                   help="active-cs: the uniform share of each draw's probability, in (0, 1] (default: the measured "
                        "best, 1: uniform draws; the 2PL then only serves as the control)")
    q.add_argument("--target-se", type=positive_float, metavar="SE",
                   help="fisher: stop before the budget once the ability's standard error is at most this")
    q.add_argument("--target-width", type=positive_float, metavar="W",
                   help="active-cs: stop before the budget at the first step whose interval is at most this wide (in "
                        "the data's unit; valid: the interval holds whenever one stops)")
    q.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    q.set_defaults(handler=cmd_start)

    q = new("next", "Ask for the next items: their ids one per line on stdout (the same items again until they are "
                    "told); for data read from lm-eval's logs also DIR/next.lm-eval.json for its --samples.")
    q.add_argument("--batch", type=positive_int, metavar="K", help="ask for K items (default: the test's --batch)")
    q.set_defaults(handler=cmd_next)

    q = new("tell", "Tell the new system's scores on the items `next` asked for.")
    q.add_argument("--results", required=True, metavar="FILE",
                   help="a JSONL file of {\"item_id\": ..., \"score\": ...} lines, or the harness's own log of the "
                        "new system's run on those items (e.g. lm-eval's --output_path folder; a path or FORMAT:path)")
    q.set_defaults(handler=cmd_tell)

    q = new("show", "The estimate so far: the score, the interval (active-cs) or none (fisher), and its assumption.")
    q.add_argument("--json", action="store_true", help="print it as JSON")
    q.set_defaults(handler=cmd_show)
    return steps


RULE_NAMES = ("active-cs", "fisher")


def score_range(text: str) -> tuple[float, float]:
    """argparse type of ``--range LO,HI``: two finite numbers, LO < HI."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two numbers, e.g. 0,100), got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"expected LO,HI with LO < HI, both finite, got {text!r}")
    return lo, hi


def restrict(R, where: str | None):
    """``R`` limited to ``COLUMN=VALUE`` (None: unchanged)."""
    if not where:
        return R
    col, sep, value = where.partition("=")
    if not sep:
        raise DataError(f"--where {where!r}: write COLUMN=VALUE, e.g. benchmark=MMLU.", field="where")
    return R.group(col.strip(), value.strip())


def run_row(spec: str, system: str, R) -> tuple[np.ndarray, str | None]:
    """``system``'s scores on ``R``'s items (NaN where it has none) from its own run ``spec`` (read with
    :func:`evalsift.io.load`; a harness log that records no model name is named ``system``), and a note when the
    run's one system has another name. DataError when the run lacks ``R``'s metric, or holds several systems
    and none is ``system``."""
    return run_scores(spec, system, R.metric, R.item_ids)


def run_scores(spec: str, system: str, metric: str, item_ids: Sequence[str], option: str = "--run"
               ) -> tuple[np.ndarray, str | None]:
    """:func:`run_row` for a metric and item ids (``option``: the command-line option that named ``spec``, for
    the messages)."""
    from ..errors import suggest
    from ..io import HARNESSES, load, resolve

    kw = {"system": system} if resolve(spec)[0] in HARNESSES else {}
    run = load(spec, **kw)
    note_ = None
    if system in run.systems:
        name = system
    elif len(run.systems) == 1:
        name = run.systems[0]
        note_ = f"{option} {spec} holds one system, {name}; its scores are {system}'s"
    else:
        raise DataError(f"{option} {spec} holds systems {', '.join(run.systems)} but not {system!r}."
                        f"{suggest(system, run.systems)} Name the new system as its run does with --system.",
                        field="run", system=system)
    if metric not in run.scores:
        raise DataError(f"{option} {spec} has no {metric!r} score (it has {', '.join(run.metrics)}); run the same task "
                        "and metric as the known systems, or name another with --metric.", field="metric")
    col = np.asarray(run.scores[metric], dtype=float)[:, run.systems.index(name)]
    pos = {str(i): k for k, i in enumerate(run.item_ids)}
    row = np.array([col[pos[i]] if i in pos else np.nan for i in map(str, item_ids)])
    return row, note_


def _fmt(v: float, scale: float) -> str:
    return f"{v * scale:.2f}"


def cmd_estimate(args: argparse.Namespace) -> int:
    """``evalsift estimate``."""
    from ..estimate import KnownSystems, estimate_score, read_anchors, response_matrix

    out = out_dir(args.out)
    R = restrict(response_matrix(args.data, metric=args.metric, keep_partial=[] if args.run else [args.system],
                                 partial_if_present=[args.system] if args.run else [],
                                 include_refs=args.include_refs), args.where)
    known_R, row = R.without(args.system) if args.system in R.systems else (R, None)
    anchors = read_anchors(args.items, R.item_ids)
    truth_from = "the data"
    if args.run:  # NEW's own run: its scores, on the data's items, replace the data's row (or stand for a missing one)
        data_row, (row, run_note) = row, run_row(args.run, args.system, R)
        if run_note:
            R = replace(R, notes=(*R.notes, run_note))
        if data_row is not None and np.isfinite(data_row).all():
            truth_row = data_row
        else:
            truth_row, truth_from = row, f"--run {args.run}"
    else:
        truth_row = row
    y = row[anchors.items]
    missing = [R.item_ids[i] for i, v in zip(anchors.items, y) if not np.isfinite(v)]
    if missing:
        where = f"--run {args.run}" if args.run else "--data"
        fix = ("run the new model on every anchor (`select anchors ... --export lm-eval` writes lm-eval's --samples "
               "file for them)" if args.run else "judge every item of --items first")
        raise DataError(f"{args.system} has no {R.metric} score in {where} on {len(missing)} of the {anchors.n} anchor "
                        f"item(s): {', '.join(repr(m) for m in missing[:5])}{' ...' if len(missing) > 5 else ''}; "
                        f"{fix}.", field="items", system=args.system, item_id=missing[0])
    if args.by:
        return _estimate_across(args, R, known_R, anchors, y, truth_row, truth_from, out)
    args.method = args.method or ["aipw"]
    known = KnownSystems(known_R.Y, bounds=R.bounds)
    scale = R.scale
    truth = float(truth_row.mean()) if np.isfinite(truth_row).all() else None
    results: list[dict[str, Any]] = []
    print(f"{args.system}: {R.metric} over {R.n_items} items, from {anchors.n} judged ({anchors.design} design"
          f"{', seed ' + str(anchors.seed) if anchors.design != 'given' else ''}); {len(known_R.systems)} known systems"
          + (f"; scores in {R.unit}" if scale == 100 else ""))
    for note_ in R.notes:
        print(f"note: {note_}", file=sys.stderr)
    for m in args.method:
        e = estimate_score(known, y, anchors, m, alpha=args.alpha)
        ival = "no interval" if e.low is None else \
            f"{1 - e.alpha:.0%} interval [{_fmt(e.low, scale)}, {_fmt(e.high, scale)}]"
        rule = e.details.get("interval_rule")
        extra = f", {rule} interval" if rule else ""
        if e.details.get("no_interval"):
            extra += f"; {e.details['no_interval']}"
        if rule == "bootstrap-t" and not known.bounded:
            extra += ("; approximate for a score without a stated range at both ends: measured on WMT23 MQM, 0.86-0.89 "
                      "coverage at 50-100 items (docs/estimate.md)")
        if e.details.get("clipped"):
            lo, hi = R.bounds
            extra += (f"; kept inside the score's range [{'-inf' if lo is None else _fmt(lo, scale)}, "
                      f"{'inf' if hi is None else _fmt(hi, scale)}] (the true score lies in it, so the coverage is "
                      "unchanged)")
        print(f"  {m:<11} {_fmt(e.value, scale):>8}  {ival}  ({e.kind}{extra})")
        print(f"  {'':<11} assumes: {e.assumption}")
        results.append({**e.to_dict(), "scale": scale})
    if truth is not None:
        print(f"{truth_from} holds {args.system}'s score on every item: {_fmt(truth, scale)} (not used by the "
              "estimates)")
    res = {"system": args.system, "data": R.source, "metric": R.metric, "unit": R.unit, "items": R.n_items,
           "known_systems": list(known_R.systems), "anchors": str(args.items), "estimates": results,
           "full_score_in_data": truth, "notes": list(R.notes)}
    if args.run:
        res["run"] = str(args.run)
        res["full_score_from"] = truth_from if truth is not None else None
    from ..io._common import write_atomic

    write_atomic(out / "estimate.json", json.dumps(res, indent=2, allow_nan=False))  # whole or not at all
    print(f"wrote {out / 'estimate.json'}", file=sys.stderr)
    return 0


def _estimate_across(args: argparse.Namespace, R: Any, known_R: Any, anchors: Any, y: np.ndarray, truth_row: Any,
                     truth_from: str, out: Path) -> int:
    """``estimate --by COLUMN``: every value of COLUMN and the totals (:mod:`evalsift.estimate.across`)."""
    from ..estimate.across import ACROSS_METHODS, KnownAcross, estimate_across
    from ..io._common import write_atomic

    methods = args.method or ["shared-offset", "separate"]
    bad = [m for m in methods if m not in ACROSS_METHODS]
    if bad:
        raise ParameterError(f"--method {','.join(bad)}: with --by, the estimators are {', '.join(ACROSS_METHODS)} "
                             "(each value of the column and the totals); drop --by for the others", field="method")
    labels = R.column(args.by)
    known = KnownAcross(known_R.Y, labels, bounds=R.bounds)
    scale = R.scale
    full = truth_row is not None and np.isfinite(truth_row).all()
    per, macro, micro = known.truth(truth_row) if full else (None, None, None)
    print(f"{args.system}: {R.metric} over {R.n_items} items in {len(known.groups)} values of {args.by}, from "
          f"{anchors.n} judged; {len(known_R.systems)} known systems" + (f"; scores in {R.unit}" if scale == 100 else ""))
    for note_ in R.notes:
        print(f"note: {note_}", file=sys.stderr)
    width = max(len(g) for g in known.groups + ("mean over values", "mean over items"))
    results = []
    ests = [estimate_across(known, anchors.items, y, m) for m in methods]
    print(f"  {args.by:<{width}} {'judged':>7}" + "".join(f"{m:>15}" for m in methods)
          + (f"{'in the data':>13}" if full else ""))
    for k, g in enumerate(known.groups):
        print(f"  {g:<{width}} {ests[0].judged[k]:>7}" + "".join(f"{_fmt(e.values[k], scale):>15}" for e in ests)
              + (f"{_fmt(per[k], scale):>13}" if full else ""))
    for label, attr, t in (("mean over values", "macro", macro), ("mean over items", "micro", micro)):
        print(f"  {label:<{width}} {anchors.n:>7}" + "".join(f"{_fmt(getattr(e, attr), scale):>15}" for e in ests)
              + (f"{_fmt(t, scale):>13}" if full else ""))
    for e in ests:
        print(f"  {e.method}: no interval (model-based); assumes: {e.assumption}")
        results.append({**e.to_dict(), "scale": scale})
    if full:
        print(f"{truth_from} holds {args.system}'s score on every item (the last column; not used by the estimates)")
    res = {"system": args.system, "data": R.source, "metric": R.metric, "unit": R.unit, "items": R.n_items,
           "by": args.by, "known_systems": list(known_R.systems), "anchors": str(args.items), "estimates": results,
           "full_scores_in_data": None if not full else {"groups": dict(zip(known.groups, map(float, per))),
                                                          "mean_over_groups": macro, "mean_over_items": micro},
           "notes": list(R.notes)}
    write_atomic(out / "estimate.json", json.dumps(res, indent=2, allow_nan=False))
    print(f"wrote {out / 'estimate.json'}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------- the adaptive test's steps (module doc)
STATE_FILE = "state.json"
STATE_FORMAT = "evalsift-estimate-steps"
STATE_VERSION = 1
SAMPLES_FILE = "next.lm-eval.json"


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One step at a time on a state folder (POSIX ``flock``; elsewhere nothing): two harness workers telling at
    once would otherwise each replace the other's state."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(folder / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _start_hint(folder: Path | str) -> str:
    return f"`evalsift estimate start --data KNOWN --system NEW --budget N --state {folder}`"


def read_state(folder: str | Path):
    """``(document, AdaptiveTest)`` of the state folder ``folder`` (``DIR/state.json``); DataError naming the file
    and the fix when there is none or it is not one."""
    from ..estimate.adaptive import AdaptiveTest
    from ..io._common import load_json

    folder = Path(folder)
    path = folder / STATE_FILE
    if not path.is_file():
        where = f"{folder} holds no {STATE_FILE}" if folder.is_dir() else f"{folder} does not exist"
        raise DataError(f"--state {folder}: no adaptive test there ({where}); start one with {_start_hint(folder)}.",
                        field="state")
    doc = load_json(path, "an adaptive test's state (evalsift estimate start writes it)")
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT or "test" not in doc:
        raise DataError(f"{path} is not the state of `evalsift estimate start` (format {STATE_FORMAT!r} expected); "
                        f"give the folder a test was started in, or start one with {_start_hint(folder)}.",
                        field="state")
    if doc.get("version") != STATE_VERSION:
        raise DataError(f"{path}: state version {doc.get('version')!r}; this evalsift reads version {STATE_VERSION}.",
                        field="version")
    try:
        test = AdaptiveTest.from_state(doc["test"])
    except DataError as e:
        raise DataError(f"{path}: {e}; the file was edited or is damaged: start a new test in another folder.",
                        field="state") from None
    return doc, test


def _write_state(folder: Path, doc: dict, test) -> None:
    from ..io._common import write_atomic

    doc["test"] = test.state()
    write_atomic(folder / STATE_FILE, json.dumps(doc, allow_nan=False) + "\n")  # whole or not at all


def _harness_items(doc: dict, item_ids: Sequence[str]):
    """The pool's lm-eval columns as the exporters read them (``item_ids``, ``metadata``, ``name``)."""
    from types import SimpleNamespace

    h = doc["harness"]
    meta = {"task": h["task"], "doc_id": h["doc_id"]}
    if h.get("n_shot") is not None:
        meta["n_shot"] = h["n_shot"]
    return SimpleNamespace(item_ids=list(item_ids), metadata=meta, name=doc["data"])


def _lm_eval_columns(R) -> dict[str, Any] | None:
    """The per-item ``task``, ``doc_id`` (and ``n_shot``) of data read from lm-eval's logs, or None when ``R``
    lacks them or a doc_id is not a document index (a note then: ``next`` prints ids only)."""
    from ..io.export import lm_eval_samples

    if "task" not in R.columns or "doc_id" not in R.columns:
        return None
    plain = lambda v: int(v) if isinstance(v, (int, np.integer)) else str(v)  # noqa: E731
    h = {"tool": "lm-eval", "task": [str(v) for v in R.columns["task"]],
         "doc_id": [plain(v) for v in R.columns["doc_id"]],
         "n_shot": [plain(v) for v in R.columns["n_shot"]] if "n_shot" in R.columns else None}
    try:
        lm_eval_samples(_harness_items({"harness": h, "data": R.source}, R.item_ids), R.item_ids)
    except DataError as e:
        note(f"`estimate next` will print item ids only, no lm-eval --samples file: {e}")
        return None
    return h


def cmd_start(args: argparse.Namespace) -> int:
    """``evalsift estimate start``: the test, fitted to the known systems, in ``--state DIR``."""
    from ..estimate import response_matrix
    from ..estimate.adaptive import DEFAULT_FLOOR, AdaptiveTest
    from ..errors import ParameterError
    from ..io import resolve
    from ._common import cap_budget

    folder = Path(args.state)
    if (folder / STATE_FILE).exists():
        raise DataError(f"--state {folder} holds a test already ({folder / STATE_FILE}); continue it with `evalsift "
                        f"estimate next --state {folder}`, or give another folder for a new test (restarting a test "
                        "after seeing its answers would not keep its guarantee).", field="state")
    if args.target_se is not None and args.rule != "fisher":
        raise ParameterError("--target-se is the fisher rule's stop; with active-cs use --target-width",
                             field="target_se")
    if args.target_width is not None and args.rule != "active-cs":
        raise ParameterError("--target-width is the active-cs rule's stop (fisher has no interval); with fisher use "
                             "--target-se", field="target_width")
    R = restrict(response_matrix(args.data, metric=args.metric, partial_if_present=[args.system],
                                 include_refs=args.include_refs), args.where)
    known_R, row = R.without(args.system) if args.system in R.systems else (R, None)
    for note_ in R.notes:
        if args.range is None or "range" not in note_:  # --range states it
            note(note_)
    bounds = R.bounds
    if args.range is not None:
        lo, hi = args.range
        Yk = known_R.Y[np.isfinite(known_R.Y).all(axis=1)]
        if Yk.size and (Yk.min() < lo or Yk.max() > hi):
            raise DataError(f"--range {lo:g},{hi:g}: the known systems' {R.metric} scores go from {Yk.min():g} to "
                            f"{Yk.max():g}, outside it; state the range the metric can take.", field="range")
        bounds = (lo, hi)
    if args.rule == "active-cs" and (bounds is None or None in bounds):
        raise DataError(f"--rule active-cs needs {R.metric}'s range at both ends, and {R.source} states "
                        f"{'none' if bounds is None else 'only one end'}: give --range LO,HI (e.g. 0,100), or use "
                        "--rule fisher (model-based, no interval).", field="range")
    budget = cap_budget(args.budget, R.n_items, "--budget", "the pool")
    width = None
    if args.target_width is not None:
        width = args.target_width / (bounds[1] - bounds[0])  # the test's [0, 1] scale
    test = AdaptiveTest(known_R, args.rule, budget=budget, seed=args.seed, alpha=args.alpha,
                        floor=DEFAULT_FLOOR if args.floor is None else args.floor, target_se=args.target_se,
                        target_width=width, bounds=bounds)
    truth = float(row.mean()) if row is not None and np.isfinite(row).all() else None
    fmt = resolve(str(args.data))[0]
    doc = {"format": STATE_FORMAT, "version": STATE_VERSION, "system": args.system, "data": str(args.data),
           "format_of_data": fmt, "metric": R.metric, "where": args.where, "unit": R.unit, "scale": R.scale,
           "items": R.n_items, "known_systems": list(known_R.systems), "batch": args.batch,
           "target_width": args.target_width, "full_score_in_data": truth,
           "harness": _lm_eval_columns(R) if fmt == "lm-eval" else None, "rounds": [], "test": None}
    folder = out_dir(args.state)  # a failed start removes the folder it created
    _write_state(folder, doc, test)
    k = len(known_R.systems)
    print(f"started the {args.rule} test of {args.system}: {R.metric} over {R.n_items} items, {k} known systems; "
          f"budget {test.budget} items, {args.batch} per round" + (f"; scores in {R.unit}" if R.scale == 100 else ""))
    print(f"wrote {folder / STATE_FILE}; next: evalsift estimate next --state {folder}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _open_state(folder: Path) -> Iterator[tuple[dict, Any]]:
    """The test's state (document, AdaptiveTest) read under the folder's lock, held for the block; a missing
    state is its clear error before any lock file is made."""
    if not (folder / STATE_FILE).is_file():
        read_state(folder)
    with _locked(folder):
        yield read_state(folder)


def _asked(test) -> list[str]:
    return [test.item_ids[s.item] for s in test.steps if s.score is None]


def cmd_next(args: argparse.Namespace) -> int:
    """``evalsift estimate next``: the next items, on stdout; ``DIR/next.lm-eval.json`` for lm-eval's data."""
    import shlex

    from ..io._common import write_atomic
    from ..io.export import lm_eval_command, lm_eval_samples

    folder = Path(args.state)
    with _open_state(folder) as (doc, test):
        again = _asked(test)
        items = test.ask(args.batch or doc["batch"])
        samples = folder / SAMPLES_FILE
        if not items:
            samples.unlink(missing_ok=True)  # a stale file would run items already told
            reason = test._stop_reason() or "nothing left to ask"
            print(f"the test is done ({reason}): nothing to ask; `evalsift estimate show --state {folder}` prints "
                  "the estimate", file=sys.stderr)
            return 0
        if not again:
            doc["rounds"].append({"asked": list(items), "told": [], "results": []})
        rnd = len(doc["rounds"])
        command = None
        if doc.get("harness"):
            pool = _harness_items(doc, test.item_ids)
            write_atomic(samples, json.dumps(lm_eval_samples(pool, items)) + "\n")
            run_dir = folder / "runs" / f"round-{rnd}"
            command = lm_eval_command(pool, items, samples).replace("NEW_RUN_DIR", shlex.quote(str(run_dir)))
        if not again:
            _write_state(folder, doc, test)
    for iid in items:
        print(iid)
    first = len(test.steps) - len(_asked(test)) + 1
    span = f"step {first}" if len(items) == 1 else f"steps {first}-{first + len(items) - 1}"
    print(f"round {rnd}: {len(items)} item(s) to judge ({span} of at most {test.budget})" + ("; asked before and not told yet" if again else ""), file=sys.stderr)
    if command:
        print(f"wrote {samples} for lm-eval's --samples; run the new model on them (with the options the known runs "
              f"used, e.g. --include_path):\n  {command}\nthen: evalsift estimate tell --state {folder} --results "
              f"{run_dir}", file=sys.stderr)
    else:
        print(f"then: evalsift estimate tell --state {folder} --results FILE (a JSONL of item_id, score lines, or "
              "the harness's log of the new system's run on them)", file=sys.stderr)
    return 0


def _own_results(path: Path) -> bool:
    """Whether ``path`` is a JSONL of ``{item_id, score}`` lines (rather than a harness's log or a table)."""
    from ..io._common import first_line

    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json", ".ndjson"):
        return False
    line, _ = first_line(path)
    try:
        rec = json.loads(line) if line else None
    except json.JSONDecodeError:
        return path.suffix.lower() == ".jsonl"  # iter_jsonl names the bad line
    return isinstance(rec, dict) and "item_id" in rec and "score" in rec and "system" not in rec


def read_results(spec: str, doc: dict, item_ids: Sequence[str]) -> dict[str, float]:
    """``{item_id: score}`` of ``tell --results``: a JSONL of ``{item_id, score}`` lines (every score a number),
    or, read with :func:`evalsift.io.load`, the harness's log of the new system's run (its finite scores on
    the pool's items)."""
    from ..io._common import iter_jsonl, to_float

    path = Path(spec)
    out: dict[str, float] = {}
    if _own_results(path):
        for lineno, rec in iter_jsonl(path, what="scores", expected='{"item_id": ..., "score": ...} per line'):
            if not isinstance(rec, dict) or "item_id" not in rec or "score" not in rec:
                raise DataError(f"{path}: line {lineno} is not an {{item_id, score}} object; write one "
                                '{"item_id": ..., "score": ...} per line.', field="item_id")
            iid = str(rec["item_id"])
            try:
                y = to_float(rec["score"])
            except (TypeError, ValueError):
                y = math.nan
            if not math.isfinite(y):
                raise DataError(f"{path}: line {lineno}: item {iid!r} has no numeric score ({rec['score']!r}); give "
                                "the number, or leave the line out until the item is judged.", field="score",
                                item_id=iid)
            if iid in out:
                raise DataError(f"{path}: line {lineno}: item {iid!r} is scored twice; give one score per item.",
                                field="item_id", item_id=iid)
            out[iid] = y
        return out
    row, note_ = run_scores(spec, doc["system"], doc["metric"], item_ids, option="--results")
    if note_:
        note(note_)
    return {iid: float(v) for iid, v in zip(item_ids, row) if np.isfinite(v)}


def cmd_tell(args: argparse.Namespace) -> int:
    """``evalsift estimate tell``: the new system's scores on the asked items into the state."""
    folder = Path(args.state)
    with _open_state(folder) as (doc, test):
        asked = _asked(test)
        told = {test.item_ids[s.item]: s.score for s in test.steps if s.score is not None}
        scores = read_results(args.results, doc, test.item_ids)
        pool = set(test.item_ids)
        lo, hi = test.bounds if test.bounds is not None else (None, None)
        new: list[str] = []
        for iid, y in scores.items():
            if iid not in pool:
                raise DataError(f"--results {args.results}: item {iid!r} is not in the test's pool ({len(pool)} "
                                f"items of {doc['data']}); give the ids `evalsift estimate next --state {folder}` "
                                "printed.", field="item_id", item_id=iid)
            if iid in told:
                if told[iid] != y:
                    raise DataError(f"--results {args.results}: item {iid!r} was told already with score "
                                    f"{told[iid]:g}, and this gives {y:g}; a told score cannot change (give each "
                                    "round's new results only).", field="score", item_id=iid)
                continue
            if iid not in asked:
                what = f"the {len(asked)} asked now are {', '.join(map(repr, asked[:3]))}{' ...' if len(asked) > 3 else ''}" \
                    if asked else "none is waiting for a score"
                how = f", e.g. lm-eval with --samples {folder / SAMPLES_FILE}" if doc.get("harness") else ""
                raise DataError(f"--results {args.results}: item {iid!r} was not asked ({what}); tell only the items "
                                f"`evalsift estimate next --state {folder}` printed (run the harness on those "
                                f"only{how}).", field="item_id", item_id=iid)
            if (lo is not None and y < lo) or (hi is not None and y > hi):
                raise DataError(f"--results {args.results}: item {iid!r} scored {y:g}, outside {doc['metric']}'s "
                                f"range [{lo:g}, {hi:g}] the test was started with; give the score in the data's unit "
                                f"(as in {doc['data']}).", field="score", item_id=iid)
            test.tell(iid, y)
            new.append(iid)
        if not new:
            if scores and not asked:
                print("every score in --results was told already; nothing changed", file=sys.stderr)
                return 0
            raise DataError(f"--results {args.results} holds no score for the {len(asked)} item(s) asked "
                            f"({', '.join(map(repr, asked[:3]))}{' ...' if len(asked) > 3 else ''})"
                            + (" (nothing is asked: run `evalsift estimate next` first)" if not asked else "")
                            + (f" (its {len(scores)} score(s) were told already)" if scores else "")
                            + f"; run the new system on them, with the metric {doc['metric']}.", field="results")
        for rnd in doc["rounds"]:
            mine = [i for i in rnd["asked"] if i in new]  # in the order asked
            if mine:
                rnd["told"].extend(mine)
                rnd["results"].append(str(args.results))
        _write_state(folder, doc, test)
    left = [i for i in asked if i not in new]
    n = sum(s.score is not None for s in test.steps)
    print(f"told {len(new)} score(s); {n} of at most {test.budget} items judged", file=sys.stderr)
    if left:
        note(f"{len(left)} asked item(s) still have no score ({', '.join(map(repr, left[:3]))}"
             f"{' ...' if len(left) > 3 else ''}); `evalsift estimate next --state {folder}` asks them again")
    if test.done():
        print(f"the test is done ({test._stop_reason()}); `evalsift estimate show --state {folder}` prints the "
              "estimate", file=sys.stderr)
    else:
        print(f"next: evalsift estimate next --state {folder} (or show, for the estimate so far)", file=sys.stderr)
    return 0


def step_summary(doc: dict, test) -> dict[str, Any]:
    """``show``'s content: the estimate (:meth:`Estimate.to_dict`, in the data's unit) and the test's progress."""
    e = test.estimate()
    told = sum(s.score is not None for s in test.steps)
    return {"system": doc["system"], "data": doc["data"], "metric": doc["metric"], "unit": doc["unit"],
            "scale": doc["scale"], "items": doc["items"], "known_systems": doc["known_systems"],
            "rule": test.rule, "budget": test.budget, "seed": test.seed, "told": told,
            "asked_not_told": len(_asked(test)), "in_estimate": e.n, "done": test.done(),
            "stopped": test._stop_reason(), "estimate": e.to_dict(), "full_score_in_data": doc["full_score_in_data"],
            "rounds": len(doc["rounds"])}


def cmd_show(args: argparse.Namespace) -> int:
    """``evalsift estimate show``: the estimate so far, its interval or none, and its assumption."""
    from ._common import print_json

    doc, test = read_state(args.state)
    s = step_summary(doc, test)
    if args.json:
        print_json(s)
        return 0
    e, scale = s["estimate"], s["scale"]
    print(f"{s['system']}: {s['metric']} over {s['items']} items, {s['told']} of at most {s['budget']} judged "
          f"({s['rule']}, {len(s['known_systems'])} known systems)" + (f"; scores in {s['unit']}" if scale == 100 else ""))
    if s["told"] == 0:
        print(f"  no score told yet: `evalsift estimate next --state {args.state}` asks the first items")
    if e["interval"] is not None and s["in_estimate"]:
        ival = f"{e['level']:.0%} interval [{_fmt(e['interval'][0], scale)}, {_fmt(e['interval'][1], scale)}]"
    else:
        ival = "no interval"
    extra = ""
    if test.rule == "fisher" and s["told"]:
        extra = f"; ability {e['ability']:.2f}, standard error {e['ability_se']:.2f}"
    if s["in_estimate"] or test.rule == "fisher":
        print(f"  {test.rule:<11} {_fmt(e['estimate'], scale):>8}  {ival}  ({e['kind']}, from {e['n']} judged"
              f"{extra}; {'stopped: ' + s['stopped'] if s['stopped'] else 'not done'})")
    print(f"  {'':<11} assumes: {e['assumption']}")
    if s["told"] > s["in_estimate"] and test.rule == "active-cs":
        print(f"  {s['told'] - s['in_estimate']} told item(s) wait for an earlier asked one: active-cs uses the "
              "steps in the order drawn")
    if s["asked_not_told"]:
        print(f"  {s['asked_not_told']} asked item(s) not told yet (not in the estimate)")
    if s["full_score_in_data"] is not None:
        print(f"the data holds {s['system']}'s score on every item: {_fmt(s['full_score_in_data'], scale)} (not used "
              "by the estimate)")
    return 0
