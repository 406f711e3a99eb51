"""subset2evaluate item JSONL: one item per line, systems' outputs in ``tgt``, scores in ``scores``.

A line looks like::

    {"i": 0, "src": "Hallo Welt", "ref": "Hello world", "domain": "news", "doc": "d1", "cost": 1.5,
     "tgt": {"A": "Hello world", "B": "Hi world"},
     "scores": {"A": {"human": 0.9, "chrF": 80.1}, "B": {"human": 0.4}}}

Conventions of :func:`read_s2e_jsonl`:

- ``item_id`` is ``str(i)`` when the record has ``i``, else the item's 0-based position in the file.
- Systems are the union over items of ``tgt`` and ``scores`` keys, in first-seen order; metrics the
  union of metric names. A missing (or ``null``) output is ``None``; an output that is not a string
  (a number, a list, ...) is a DataError naming the line and system. A missing (or ``null``) score,
  or one of the missing-value tokens (``"NA"``, ``"N/A"``, ``"-"``, ...), is NaN.
- ``ref`` as a string becomes ``references["ref"]``; as a list (of strings or nulls) it becomes
  ``ref_0``, ``ref_1``, ... (one column per position; items with fewer references get ``None``);
  ``null`` or no ``ref`` means no reference. Any other ``ref`` is a DataError naming the line.
- A file with no items (empty, or only blank lines) is a DataError.
- Every other field (``domain``, ``doc``, ``cost``, ...) is per-item metadata (``None`` where an item
  lacks it), and the whole original record is kept in ``metadata["_record"]`` so that
  :func:`write_s2e_jsonl` re-emits each item's own fields unchanged.
- Following subset2evaluate, a metric named ``human`` is human; pass ``human_metrics`` to choose others.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import check_extra, check_human, clean_value, iter_jsonl, json_default, nan_matrix, to_float

_CORE = ("i", "src", "ref", "tgt", "scores")


def _check_record(rec: Any, path: Path, lineno: int) -> None:
    where = f"{path}: line {lineno}"
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected a JSON object per line, got {type(rec).__name__}.")
    if "tgt" not in rec or not isinstance(rec["tgt"], dict):
        raise DataError(
            f"{where}: field 'tgt' must be an object mapping system name -> output text "
            f"(got {type(rec.get('tgt')).__name__}). Add e.g. \"tgt\": {{\"sysA\": \"...\"}}."
        )
    if "src" not in rec:
        raise DataError(f"{where}: field 'src' (the item's input text) is missing; add \"src\": \"...\".")
    for system, output in rec["tgt"].items():
        if output is not None and not isinstance(output, str):
            raise DataError(
                f"{where}: output of system {system!r} in 'tgt' is {_json_type(output)} {_short(output)}, "
                "expected a string (the system's output text) or null for a missing output.",
                field="tgt", system=str(system), item_id=rec.get("i"),
                hint="make the output a string, or null if it is missing")
    ref = rec.get("ref")
    if not (ref is None or isinstance(ref, str)
            or (isinstance(ref, list) and all(r is None or isinstance(r, str) for r in ref))):
        raise DataError(
            f"{where}: field 'ref' is {_json_type(ref)} {_short(ref)}, expected a reference string, a list of "
            "reference strings, or null for none.",
            field="ref", item_id=rec.get("i"), hint="make 'ref' a string, a list of strings or null")
    scores = rec.get("scores", {})
    if scores is None:
        return
    if not isinstance(scores, dict) or not all(isinstance(v, dict) or v is None for v in scores.values()):
        raise DataError(
            f"{where}: field 'scores' must map system -> {{metric: value}}, "
            "e.g. \"scores\": {\"sysA\": {\"human\": 0.8}}."
        )


def _json_type(value: Any) -> str:
    """The JSON type of a parsed value with its article: 'a number', 'a list', 'an object', ...

    >>> _json_type(3), _json_type([1]), _json_type({})
    ('a number', 'a list', 'an object')
    """
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), f"a {type(value).__name__}")


def _short(value: Any, width: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _references(records: Sequence[dict]) -> dict[str, list[Any]]:
    refs = [r.get("ref") for r in records]
    out: dict[str, list[Any]] = {}
    if any(isinstance(r, str) for r in refs):
        out["ref"] = [r if isinstance(r, str) else None for r in refs]
    width = max((len(r) for r in refs if isinstance(r, list)), default=0)
    for k in range(width):
        out[f"ref_{k}"] = [r[k] if isinstance(r, list) and k < len(r) else None for r in refs]
    return out


def _score_matrices(records: Sequence[dict], lines: Sequence[int], systems: list[str], path: Path) -> dict[str, np.ndarray]:
    col = {s: j for j, s in enumerate(systems)}
    mats: dict[str, np.ndarray] = {}
    for i, (rec, lineno) in enumerate(zip(records, lines)):
        for s, per_metric in (rec.get("scores") or {}).items():
            for m, v in (per_metric or {}).items():
                if m not in mats:
                    mats[m] = nan_matrix(len(records), len(systems))
                try:
                    mats[m][i, col[s]] = to_float(v)
                except (TypeError, ValueError):
                    raise DataError(
                        f"{path}: line {lineno}: score of system {s!r} for metric {m!r} is {v!r}, "
                        "expected a number or null.", field=m, system=s, item_id=rec.get("i")
                    ) from None
    return mats


def read_s2e_jsonl(path: str | Path, *, human_metrics: Iterable[str] | None = None, name: str | None = None) -> Pool:
    """Read subset2evaluate item JSONL into a Pool (see the module docstring for the conventions).

    ``human_metrics`` names the human metrics; by default only a metric literally named ``human``.

    >>> pool = read_s2e_jsonl("wmt23_ende.jsonl")            # doctest: +SKIP
    >>> pool.is_human("human"), pool.n_systems                 # doctest: +SKIP
    (True, 12)
    """
    path = Path(path)
    records, lines, ids = [], [], []
    seen: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path, what="items", expected="one JSON object per line with 'src' and 'tgt'"):
        _check_record(rec, path, lineno)
        iid = str(rec["i"]) if rec.get("i") is not None else str(len(records))
        if iid in seen:
            raise DataError(f"{path}: line {lineno}: item id {iid!r} already used on line {seen[iid]}; ids ('i') must be unique.")
        seen[iid] = lineno
        records.append(rec), lines.append(lineno), ids.append(iid)
    systems = list(dict.fromkeys(s for r in records for s in [*r["tgt"], *(r.get("scores") or {})]))
    scores = _score_matrices(records, lines, systems, path)
    human = {"human"} & set(scores) if human_metrics is None else check_human(human_metrics, scores, str(path))
    extra_fields = list(dict.fromkeys(k for r in records for k in r if k not in _CORE))
    metadata: dict[str, list[Any]] = {f: [r.get(f) for r in records] for f in extra_fields}
    metadata["_record"] = records
    return Pool(
        item_ids=ids,
        inputs=[r["src"] for r in records],
        systems=systems,
        outputs={s: [r["tgt"].get(s) for r in records] for s in systems},
        scores=scores,
        human_metrics=human,
        references=_references(records),
        metadata=metadata,
        name=name if name is not None else str(path),
    )


def _record_for(pool: Pool, i: int) -> dict[str, Any]:
    """The item's original record (if read from s2e JSONL) or one built from the pool's fields."""
    original = pool.metadata.get("_record", [None] * pool.n_items)[i]
    if isinstance(original, dict):
        return dict(original)
    iid = pool.item_ids[i]
    rec: dict[str, Any] = {"i": int(iid) if iid.isdigit() else iid, "src": pool.inputs[i]}
    if "ref" in pool.references:
        rec["ref"] = pool.references["ref"][i]
    elif pool.references:
        rec["ref"] = [c[i] for c in pool.references.values()]
    for f, col in pool.metadata.items():
        if f != "_record" and clean_value(col[i]) is not None:
            rec[f] = clean_value(col[i])
    return rec


def _tgt_scores(pool: Pool, i: int) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    tgt = {s: pool.outputs[s][i] for s in pool.systems if pool.outputs[s][i] is not None}
    scores: dict[str, dict[str, float]] = {}
    for j, s in enumerate(pool.systems):
        vals = {m: float(a[i, j]) for m, a in pool.scores.items() if not math.isnan(a[i, j])}
        if vals or s in tgt:
            scores[s] = vals
    return tgt, scores


def write_s2e_jsonl(pool: Pool, path: str | Path, extra: Mapping[str, Sequence[Any]] | None = None) -> Path:
    """Write ``pool`` as subset2evaluate item JSONL (one item per line, in pool order).

    Items read by :func:`read_s2e_jsonl` keep all their original fields; ``tgt`` and ``scores`` are
    rewritten from the pool, so system views and added metrics show up and NaN scores are left out.
    ``extra`` maps a field name to one value per item, added to every record, e.g.
    ``{"subset2evaluate_utility": utilities}``. Returns the path written.

    >>> write_s2e_jsonl(pool, "out.jsonl", extra={"subset2evaluate_utility": u})  # doctest: +SKIP
    """
    path = Path(path)
    if not pool.inputs_are_text:
        raise DataError(f"{path}: pool {pool.name!r} has {pool.inputs_info()['kind']} inputs; subset2evaluate JSONL "
                        "holds a text 'src' per item", field="src")
    extra_cols = check_extra(extra, pool.n_items, path)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(pool.n_items):
            rec = _record_for(pool, i)
            rec["tgt"], rec["scores"] = _tgt_scores(pool, i)
            for field, values in extra_cols.items():
                rec[field] = clean_value(values[i])
            f.write(json.dumps(rec, ensure_ascii=False, default=json_default) + "\n")
    return path
