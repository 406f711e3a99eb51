"""SummEval (``summeval.json``): CNN/DM articles x summarisation systems with expert scores.

The file maps ``doc_id -> {src, ref_summ, ref_summs[11], sys_summs: {M*: {sys_summ, scores}}}``.
Items are documents (id = ``doc_id``, input = ``src``); systems are the ``M*`` names in natural order
(M0, M1, ..., M23); each score becomes a metric. ``coherence``, ``consistency``, ``fluency`` and
``relevance`` (means of three experts, 1-5) are human; other score names (automatic metrics in some
copies of the file) are not, unless listed in ``human_metrics``. References ``ref_0..ref_10`` come
from ``ref_summs`` (``ref_summ`` is ``ref_summs[0]`` in the public file; used as ``ref_0`` if the
list is missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..errors import DataError
from ..pool import Pool
from ._common import check_human, first_seen, load_json, nan_matrix, natural_key, to_float

EXPERT_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def load_summeval_json(path: Path) -> dict[str, Any]:
    """Parse and shape-check ``summeval.json``; errors name the file, document and field.

    A missing, unreadable, empty, non-UTF-8 or non-JSON file is a DataError naming it.
    """
    data = load_json(path, "a JSON object mapping doc_id -> {src, ref_summs, sys_summs}")
    if not isinstance(data, dict) or not data:
        raise DataError(f"{path}: expected a JSON object mapping doc_id -> {{src, ref_summs, sys_summs}}.")
    for doc_id, doc in data.items():
        if not isinstance(doc, dict) or not isinstance(doc.get("sys_summs"), dict) or "src" not in doc:
            raise DataError(
                f"{path}: document {doc_id!r} must be an object with 'src' and 'sys_summs' "
                "({system: {sys_summ, scores}})."
            )
    return data


def _references(docs: list[dict]) -> dict[str, list[str | None]]:
    refs = [d.get("ref_summs") or ([d["ref_summ"]] if d.get("ref_summ") else []) for d in docs]
    width = max((len(r) for r in refs), default=0)
    return {f"ref_{k}": [r[k] if k < len(r) else None for r in refs] for k in range(width)}


def read_summeval(path: str | Path, *, human_metrics: Iterable[str] | None = None, name: str | None = None) -> Pool:
    """Read ``summeval.json`` (a file, or a folder holding it) into a documents x systems Pool.

    >>> pool = read_summeval("data/summeval/summeval.json")   # doctest: +SKIP
    >>> pool.n_items, pool.n_systems, sorted(pool.human_metrics)  # doctest: +SKIP
    (100, 16, ['coherence', 'consistency', 'fluency', 'relevance'])
    """
    path = Path(path)
    file = path / "summeval.json" if path.is_dir() else path
    data = load_summeval_json(file)
    doc_ids, docs = list(data), list(data.values())
    systems = sorted(first_seen(s for d in docs for s in d["sys_summs"]), key=natural_key)
    col = {s: j for j, s in enumerate(systems)}
    outputs: dict[str, list[str | None]] = {s: [None] * len(docs) for s in systems}
    scores: dict[str, Any] = {}
    for i, (doc_id, d) in enumerate(zip(doc_ids, docs)):
        for s, entry in d["sys_summs"].items():
            outputs[s][i] = entry.get("sys_summ")
            for m, v in (entry.get("scores") or {}).items():
                try:
                    scores.setdefault(m, nan_matrix(len(docs), len(systems)))[i, col[s]] = to_float(v)
                except (TypeError, ValueError):
                    raise DataError(f"{file}: document {doc_id!r}, system {s!r}: score {m!r} is {v!r}, expected a number.") from None
    human = set(EXPERT_DIMENSIONS) & set(scores)
    if human_metrics is not None:
        human |= check_human(human_metrics, scores, str(file))
    return Pool(
        item_ids=doc_ids, inputs=[d["src"] for d in docs], systems=systems, outputs=outputs,
        scores=scores, human_metrics=human, references=_references(docs),
        name=name if name is not None else str(path),
    )
