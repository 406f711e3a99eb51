"""Replaying an annotation project's export: the decision its admin page shows, from the exported files.

``evalsift annotate export`` writes, beside the verdicts (``--format pairwise`` or ``judgments``), the
project file ``<out>.project.json``: what the decision is about -- every item of the project's pool
with its outputs (not only the judged ones), the pair, the risk rule and risk, the label limits, the
stored decision sets and the proxy's stored values. ``evalsift compare --data <out> --oracle
judgments:<out>`` finds that file and rebuilds the project's Session exactly as the server does
(:func:`~evalsift.web.work.live_session`, :func:`~evalsift.web.work.feed_live`), feeding the
verdicts in the order they were stored, so it prints the admin page's Decision: the same winner,
labels used and risk. Without the project file the pool is the exported items only, and ``compare``
says so in its first line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataError
from ..oracle.base import Judgment
from ..session import Session
from ..store import Project, Store

FORMAT = "evalsift-project/1"
SUFFIX = ".project.json"


def project_file_for(path: str | os.PathLike[str]) -> Path:
    """Where the project file of an export at ``path`` lies: ``<path>.project.json``.

    >>> project_file_for("v.csv").name
    'v.csv.project.json'
    """
    return Path(str(path) + SUFFIX)


def write_project_file(store: Store, project_id: int, export_path: str | os.PathLike[str]) -> Path:
    """Write the project file for an export at ``export_path`` (atomically) and return its path."""
    from ..io._common import json_default

    project = store.project(project_id)
    items = store.items(project_id)
    doc = {"format": FORMAT, "export": Path(export_path).name, "pool_size": len(items),
           "project": {"name": project.name, "kind": project.kind, "mode": project.mode,
                       "settings": project.settings, "selector": project.selector, "data": project.data,
                       "created_at": project.created_at},
           "items": [{"item_id": r["item_id"], "input": r["input"], "outputs": r["outputs"]} for r in items]}
    path = project_file_for(export_path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, default=json_default)
    os.replace(tmp, path)
    return path


def read_project_file(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The project file of the export at ``path`` (None when there is none); DataError when it is damaged."""
    pf = project_file_for(path)
    if not pf.is_file():
        return None
    try:
        doc = json.loads(pf.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{pf}: cannot read the project file ({e}); delete it to compare the exported items alone, "
                        "or export the project again", field="data") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise DataError(f"{pf}: not an evalsift project file (format {found!r}, expected {FORMAT!r})", field="data")
    return doc


def replay(doc: dict[str, Any], judgments: Sequence[Judgment]) -> Session:
    """The project's Session after ``judgments`` (the export's, in stored order), as the server builds it.
    Only live pairwise projects have a Session; DataError for the others."""
    from .work import _Live, feed_live, live_session

    p = doc["project"]
    if p.get("kind") != "pairwise" or p.get("mode") != "live" or p.get("settings", {}).get("arena"):
        raise DataError(f"project {p.get('name')!r} is not a live pairwise project (kind {p.get('kind')}, mode "
                        f"{p.get('mode')}): it has no decision to replay; compare its exported items alone by moving "
                        f"{SUFFIX} aside", field="data")
    project = Project(id=0, name=p["name"], kind=p["kind"], mode=p["mode"], settings=p["settings"],
                      selector=p["selector"], data=p.get("data", {}), created_at=p.get("created_at", ""))
    session = live_session(project, doc["items"])
    known = set(session.pool.item_ids)
    stray = [j.item_id for j in judgments if j.item_id not in known]
    if stray:
        raise DataError(f"the export has verdicts on item(s) {stray[:3]} that the project file's pool does not hold; "
                        "the two files are from different projects or exports: export again", item_id=stray[0])
    live = _Live(session, 0, int(p["settings"].get("overlap", 1)), {}, set(), 0)
    feed_live(live, list(enumerate(judgments, 1)))
    return session


__all__ = ["FORMAT", "SUFFIX", "project_file_for", "read_project_file", "replay", "write_project_file"]
