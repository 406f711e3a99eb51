"""Recorded pairwise datasets: GPT-3.5's choices between SummEval summaries (:func:`read_summeval_pairwise`)
and AlpacaEval's judge preferences (:func:`read_alpaca_preferences`), each as a
:class:`~evalsift.io.pairwise_data.PairwiseData`. Their names under the data root
(``summeval/llm-pairwise/<dimension>``, ``alpaca-eval/preferences``) are resolved by
:func:`evalsift.io.pairwise.read_judgments`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from ..errors import DataError, suggest
from ..oracle.base import Judgment
from ..pool import Pool
from ._common import MISSING_TOKENS, blank_state, empty_file_error, iter_jsonl, natural_key, read_text, to_float, warn_data
from .pairwise_data import ORDERS, PairwiseData, alpaca_verdict

SUMMEVAL_ANNOTATOR = "gpt-3.5-turbo (recorded)"
SUMMEVAL_DIR = "llm-pairwise"
ALPACA_FILE = "preferences_all_annotators.csv.gz"
ALPACA_CONFIG = "weighted_alpaca_eval_gpt4_turbo"


# ---------------------------------------------------------------------------------------- SummEval
_SUMMEVAL_FILE = re.compile(r"^(?P<a>[^-_]+)-(?P<b>[^-_]+)_(?P<dim>[A-Za-z]+)(?P<toggle>_toggle)?\.result$")
_ANSWER = re.compile(r"^(?:[Ss]ummary\s*)?([ABC])(?:$|[\s.:,;)\]])")
# letter -> verdict for system a (the first-named system of the file name): plain files show a's summary
# first (A = a); _toggle files show b's summary first (A = b). C is "both equally good": a tie.
_LETTER = {"ab": {"A": "a", "B": "b", "C": "tie"}, "ba": {"A": "b", "B": "a", "C": "tie"}}


def summeval_answer(resp: Any) -> str | None:
    """The letter of a recorded SummEval answer (``A``, ``B`` or ``C``), None without a recognisable one.

    ``resp`` is a bare letter (any case) or a sentence starting with the capital letter
    (``"A: Summary #1 is more coherent."``) or with ``Summary A``.

    >>> [summeval_answer(r) for r in ("A", "B: Summary #2 is more fluent.", "c", "Summary A", "Both are good", 3)]
    ['A', 'B', 'C', 'A', None, None]
    """
    if not isinstance(resp, str):
        return None
    text = resp.strip()
    if len(text) == 1 and text.upper() in "ABC":
        return text.upper()
    m = _ANSWER.match(text)  # a sentence starts with the capital letter (or "Summary A")
    return m.group(1) if m else None


def summeval_pairwise_files(folder: str | Path) -> dict[str, dict[tuple[str, str], dict[str, Path]]]:
    """``{dimension: {(a, b): {"ab": plain file, "ba": toggle file}}}`` for the ``*.result`` files in ``folder``."""
    out: dict[str, dict[tuple[str, str], dict[str, Path]]] = {}
    for f in sorted(Path(folder).glob("*.result"), key=lambda p: natural_key(p.name)):
        m = _SUMMEVAL_FILE.match(f.name)
        if m is None:
            continue
        order = "ba" if m.group("toggle") else "ab"
        out.setdefault(m.group("dim"), {}).setdefault((m.group("a"), m.group("b")), {})[order] = f
    return out


def _summeval_answers(file: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """``{id: (line, record)}`` of one ``.result`` file; a repeated id is a DataError naming both lines."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, rec in iter_jsonl(file, what="answers", expected="one JSON object per line with id and resp"):
        if not isinstance(rec, dict) or "id" not in rec or "resp" not in rec:
            raise DataError(f"{file}: line {lineno}: expected a JSON object with 'id' and 'resp' "
                            "(and human_score_1, human_score_2).")
        iid = str(rec["id"])
        if iid in out:
            raise DataError(f"{file}: line {lineno} repeats document {iid!r}, first on line {out[iid][0]}; keep one "
                            "answer per document.", item_id=iid)
        out[iid] = (lineno, rec)
    return out


def _summeval_judgment(iid: str, a: str, b: str, dim: str, folder: Path,
                       got: dict[str, tuple[Path, int, dict[str, Any]]]) -> Judgment:
    """One judgment from the answers of both presentation orders (see :func:`read_summeval_pairwise`)."""
    orders = [o for o in ORDERS if o in got]
    answers = {o: got[o][2]["resp"] for o in orders}
    letters = {o: summeval_answer(answers[o]) for o in orders}
    per_order = {o: (_LETTER[o][letters[o]] if letters[o] else None) for o in orders}
    rec = got[orders[0]][2]
    detail: dict[str, Any] = {
        "source": str(folder), "dimension": dim, "files": {o: got[o][0].name for o in orders},
        "line": {o: got[o][1] for o in orders}, "answers": answers, "shown_orders": orders,
        "order_verdicts": per_order,
        "human_scores": {a: rec.get("human_score_1"), b: rec.get("human_score_2")},
    }
    common = dict(item_id=iid, a=a, b=b, annotator=SUMMEVAL_ANNOTATOR, kind="llm",
                  shown_order=orders[0] if len(orders) == 1 else "both")
    bad = [o for o in orders if per_order[o] is None]
    if bad:
        which = " and ".join("as shown (a first)" if o == "ab" else "swapped (b first)" for o in bad)
        detail["reason"] = (f"no recognisable A/B/C answer {which}: " +
                            "; ".join(repr(str(answers[o])[:80]) for o in bad))
        return Judgment(verdict=None, status="error", detail=detail, **common)
    values = set(per_order.values())
    return Judgment(verdict=values.pop() if len(values) == 1 else "tie", detail=detail, **common)


def read_summeval_pairwise(folder: str | Path, dimension: str, *, name: str | None = None) -> PairwiseData:
    """GPT-3.5's recorded choices between SummEval summaries on one ``dimension``, as judgments.

    ``folder`` holds ``<Ma>-<Mb>_<dimension>.result`` and ``<Ma>-<Mb>_<dimension>_toggle.result`` (JSONL
    ``{id, resp, human_score_1, human_score_2}``; ``id`` is the SummEval document id, as in
    ``load("summeval")``). Each document of a pair gives ONE judgment of annotator
    ``gpt-3.5-turbo (recorded)`` (kind ``llm``) for systems ``a = Ma`` and ``b = Mb``:

    - the plain file showed ``Ma``'s summary first: ``A`` = Ma better, ``B`` = Mb better;
    - the ``_toggle`` file showed them swapped: ``A`` = **Mb** better, ``B`` = **Ma** better;
    - ``C`` ("both summaries are equally ...") is a tie in either file;
    - the two orders agreeing give that verdict; disagreeing orders give a tie (position bias cancels);
    - an answer without a recognisable ``A``/``B``/``C`` in either order makes the judgment an
      ``error`` (never a verdict) with the raw text in ``detail["reason"]``; a document with only one
      order recorded gets that order's verdict (``shown_order`` says which).

    ``detail`` keeps both raw ``answers``, the ``shown_orders``, each order's verdict
    (``order_verdicts``), the files, lines and the expert means (``human_scores``).

    Evidence for the toggle convention: ``human_score_1`` is ``Ma``'s expert mean and ``human_score_2``
    ``Mb``'s in *both* files (the scores are not swapped; checked against ``summeval.json`` for all
    8,800 lines). Where the experts prefer one summary and the answer is A or B, reading ``A`` as the
    first-named system agrees with the experts on 1,698 of 2,675 plain-file answers (63%) but on only
    996 of 2,675 toggle-file answers (37%); reading the toggle files the other way round (``A`` = Mb)
    agrees on 1,679 (63%), as in the plain files. The evaluation script published with these files
    maps them the same way (in a toggled file ``A`` counts for the second model, ``B`` for the first,
    anything else as "equal").

    >>> data = read_summeval_pairwise("data/summeval/llm-pairwise", "coherence")   # doctest: +SKIP
    >>> len(data.judgments), data.pairs()[0]                                       # doctest: +SKIP
    (1100, ('M22', 'M23'))
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder; expected the SummEval llm-pairwise folder of "
                        "<Ma>-<Mb>_<dimension>[_toggle].result files.")
    found = summeval_pairwise_files(folder)
    if dimension not in found:
        raise DataError(f"{folder}: no <Ma>-<Mb>_{dimension}[_toggle].result files.{suggest(dimension, found)} "
                        f"Dimensions found: {', '.join(sorted(found)) or '(none)'}.", field="dimension")
    judgments: list[Judgment] = []
    items: dict[str, None] = {}
    systems: dict[str, None] = {}
    for (a, b), files in found[dimension].items():
        per_order = {o: _summeval_answers(f) for o, f in files.items()}
        if len(files) == 1:
            (o, f), = files.items()
            warn_data(f"{f}: the {'swapped' if o == 'ab' else 'plain'} order of {a} vs {b} ({dimension}) is missing; "
                      "its judgments come from one presentation order only.")
        ids = list(dict.fromkeys(i for answers in per_order.values() for i in answers))
        systems.update(dict.fromkeys((a, b)))
        for iid in ids:
            items.setdefault(iid, None)
            got = {o: (files[o], *per_order[o][iid]) for o in files if iid in per_order[o]}
            judgments.append(_summeval_judgment(iid, a, b, dimension, folder, got))
    pool = Pool(item_ids=list(items), systems=list(systems),
                name=name if name is not None else f"summeval/{SUMMEVAL_DIR}/{dimension}")
    return PairwiseData(pool=pool, judgments=tuple(judgments), source=str(folder / f"*_{dimension}*.result"))


# ---------------------------------------------------------------------------------------- AlpacaEval
def read_alpaca_preferences(path: str | Path, config: str = ALPACA_CONFIG, *, name: str | None = None) -> PairwiseData:
    """AlpacaEval's recorded judge preferences of annotator config ``config`` as judgments.

    ``path``: the AlpacaEval folder or its ``preferences_all_annotators.csv.gz`` (columns ``model_dir,
    annotator_config, instruction_idx, generator_1, generator_2, annotator, preference, ...``). Each row
    of ``config`` is one judgment of item ``instruction_idx`` (the item ids of ``load("alpaca-eval")``)
    for ``a = generator_1`` (the baseline) and ``b = generator_2`` (the model; the generator column is
    used, not ``model_dir``), annotator ``<config> (recorded)``, kind ``llm``, with the raw
    ``preference`` in ``detail``; the verdict follows :func:`alpaca_verdict`. A row without a
    preference is an ``error`` judgment; a preference that is not a number, or outside [1, 2] and not
    0, is a DataError naming the line. Rows judging the baseline against itself are left out. Two rows
    for the same item and model (AlpacaEval's files repeat ``falcon-40b-instruct`` under two
    ``model_dir``\\ s) are two judgments of the same annotator: the later one counts.

    Output lengths: with the table's ``len_output_1`` / ``len_output_2`` columns (the characters of the
    two outputs the judge saw), the Pool's private per-item column ``_output_length`` holds, for every
    item, ``{system: characters}`` (a length-controlled win rate needs them:
    :mod:`evalsift.winrate`). With ``instructions.jsonl`` beside the table, the per-item column
    ``dataset`` holds each instruction's AlpacaEval subset (helpful_base, koala, oasst, selfinstruct,
    vicuna). The judgments themselves are unchanged.

    >>> data = read_alpaca_preferences("data/alpaca-eval")   # doctest: +SKIP
    >>> data.pairs()[:1]                                     # doctest: +SKIP
    [('gpt4_1106_preview', 'Ein-70B-v0.1')]
    """
    path = Path(path)
    file = path / ALPACA_FILE if path.is_dir() else path
    need = ("annotator_config", "instruction_idx", "generator_1", "generator_2", "preference")
    text = read_text(file)
    if not text.strip():
        raise empty_file_error(file, blank_state(text), "preferences", f"a CSV with a header line naming {', '.join(need)}")
    reader = csv.reader(io.StringIO(text, newline=""))
    judgments: list[Judgment] = []
    items: dict[str, None] = {}
    systems: dict[str, None] = {}
    configs: dict[str, None] = {}
    lengths: dict[str, dict[str, int]] = {}  # item -> system -> characters of its output
    annotator = f"{config} (recorded)"
    try:
        header = next(reader, [])
        missing = [c for c in need if c not in header]
        if missing:
            raise DataError(f"{file}: missing columns {missing}; found {header}. Expected AlpacaEval's "
                            "preferences_all_annotators table.")
        cfg, idx, g1, g2, pref = (header.index(c) for c in need)
        mdir = header.index("model_dir") if "model_dir" in header else None
        lens = [header.index(c) if c in header else None for c in ("len_output_1", "len_output_2")]
        width = max(cfg, idx, g1, g2, pref)
        for r in reader:
            if len(r) <= width:
                if r:
                    raise DataError(f"{file}: line {reader.line_num} has {len(r)} fields, expected {len(header)} "
                                    "(as many as the header).")
                continue
            configs.setdefault(r[cfg], None)
            if r[cfg] != config or r[g1] == r[g2]:
                continue
            line, iid, a, b, raw = reader.line_num, r[idx], r[g1], r[g2], r[pref].strip()
            detail: dict[str, Any] = {"source": str(file), "line": line, "preference": None, "annotator_config": config}
            if mdir is not None:
                detail["model_dir"] = r[mdir]
            common = dict(item_id=iid, a=a, b=b, annotator=annotator, kind="llm", detail=detail)
            items.setdefault(iid, None)
            systems.update(dict.fromkeys((a, b)))
            for system, k in zip((a, b), lens):
                if k is not None and k < len(r) and r[k].strip().isdigit():
                    lengths.setdefault(iid, {}).setdefault(system, int(r[k]))
            if raw in MISSING_TOKENS:
                detail["reason"] = "no recorded preference"
                judgments.append(Judgment(verdict=None, status="error", **common))
                continue
            try:
                value = to_float(raw)
            except (TypeError, ValueError):
                raise DataError(f"{file}: line {line}: preference {raw!r} is not a number; expected a value in [1, 2] "
                                "(1 = baseline wins, 2 = model wins).", field="preference", item_id=iid, system=b) from None
            verdict = alpaca_verdict(value)
            if verdict is None:
                raise DataError(f"{file}: line {line}: preference {value!r} is outside [1, 2] (1 = baseline wins, "
                                "2 = model wins, 1.5 or 0 = a draw).", field="preference", item_id=iid, system=b)
            detail["preference"] = value
            judgments.append(Judgment(verdict=verdict, **common))
    except csv.Error as e:
        raise DataError(f"{file}: line {reader.line_num} is not valid CSV ({e}).") from None
    if config not in configs:
        raise DataError(f"{file}: no rows of annotator config {config!r}.{suggest(config, configs)} Configs in the file: "
                        f"{', '.join(sorted(configs)) or '(none)'}.", field="annotator_config")
    ids = list(items)
    metadata: dict[str, list[Any]] = {}
    if lengths:
        metadata["_output_length"] = [lengths.get(i, {}) for i in ids]
    subsets = _alpaca_subsets(file.parent / "instructions.jsonl")
    if subsets:
        metadata["dataset"] = [subsets.get(i) for i in ids]
    pool = Pool(item_ids=ids, systems=list(systems), metadata=metadata or None,
                name=name if name is not None else f"alpaca-eval/preferences/{config}")
    return PairwiseData(pool=pool, judgments=tuple(judgments), source=f"{file} [{config}]")


def _alpaca_subsets(file: Path) -> dict[str, str]:
    """``{instruction_idx: dataset}`` from AlpacaEval's ``instructions.jsonl``; empty without the file."""
    if not file.is_file():
        return {}
    out: dict[str, str] = {}
    for _, rec in iter_jsonl(file, what="instructions"):
        if isinstance(rec, dict) and "instruction_idx" in rec and rec.get("dataset") is not None:
            out[str(rec["instruction_idx"])] = str(rec["dataset"])
    return out
