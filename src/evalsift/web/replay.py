"""Replaying an annotation project's export: the decision its admin page shows, from the exported files.

``evalsift annotate export`` writes, beside the verdicts (``--format pairwise`` or ``judgments``), the
project file ``<out>.project.json``: what the decision is about -- every item of the project's pool
with its outputs (not only the judged ones), the pair, the risk rule and risk, the label limits, the
stored decision sets and the proxy's stored values. ``evalsift compare --data <out> --oracle
judgments:<out>`` finds that file and rebuilds the project's Session exactly as the server does
(:func:`~evalsift.web.work.live_session`, :func:`~evalsift.web.work.feed_live`), feeding the
verdicts in the order they were stored, so it prints the admin page's Decision: the same winner,
labels used and risk. A project with a design (``--design neyman`` or ``active``) that drew items ahead
of its decision (several people at once) depends on when it drew them: the project file lists those
draws (each after how many of the exported verdicts it was made, the item and its probability) and the
replay makes them again at the same points. Late answers past an item's overlap (``counted: false`` in
the judgments export) are left out as the server leaves them out; so are the verdicts of the people the
gold rule flagged (``excluded: true``; the project file lists them), and in a project with ``--adjudicate
split`` an item its people split on counts its adjudicator's verdict alone (``adjudicated: true``; the project file names the adjudicators). Without the project file the pool is
the exported items only, and ``compare`` says so in its first line; any other form of replaying a live
project's export (``compare --data DATASET --oracle judgments:EXPORT``) is refused, naming this one
(:func:`refuse_other_replay`).
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataError, ParameterError
from ..oracle.base import Judgment
from ..session import Session
from ..store import ADJUDICATOR_KIND, Project, Store

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
    with store.snapshot():  # the verdicts and the draws made ahead as of one moment
        done = [jid for jid, j in store.judgments_with_ids(project_id) if j.status == "done"]
        draws = [{"after_verdicts": bisect.bisect_right(done, int(d["after_judgment"])), "draws": int(d["draws"]),
                  "item_id": d["item_id"], "prob": d["prob"]} for d in store.draws(project_id)]
    doc = {"format": FORMAT, "export": Path(export_path).name, "pool_size": len(items),
           "project": {"name": project.name, "kind": project.kind, "mode": project.mode,
                       "settings": project.settings, "selector": project.selector, "data": project.data,
                       "created_at": project.created_at},
           "items": [{"item_id": r["item_id"], "input": r["input"], "outputs": r["outputs"]} for r in items],
           "draws": draws, "excluded": sorted(store.excluded(project_id)),
           "adjudicators": sorted(a["name"] for a in store.annotators(project_id) if a.get("role") == "adjudicator")}
    if project.settings.get("arena"):  # an arena's judges judged every battle: the live board uses them all
        from .arena import judge_records

        doc["judges"] = judge_records(store, project_id)
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


def is_live_pairwise(doc: dict[str, Any]) -> bool:
    """Whether a project file is a live pairwise project's (one with a decision; not an arena)."""
    p = doc.get("project") or {}
    return p.get("kind") == "pairwise" and p.get("mode") == "live" and not (p.get("settings") or {}).get("arena")


def refuse_other_replay(source: str, data: str) -> None:
    """ParameterError when ``source`` (``--oracle judgments:SOURCE``) is the export of a live pairwise
    project (its project file lies beside it) and ``--data`` is something else: ``compare`` would then run a
    Session of its own over ``data``, drawing its own items, and find verdicts on the exported ones only --
    with a design, or when the data is just the judged items, a decision that is not the project's (a
    project whose admin page says risk 0.9461 came out "B wins ... risk 0.0000"). The message names the
    form that gives the admin page's decision, and how to use the verdicts as plain data instead."""
    doc = read_project_file(source)
    if doc is None or not is_live_pairwise(doc):
        return
    p, st = doc["project"], doc["project"]["settings"]
    sampling = st.get("sampling", "uniform")
    design = f", its {sampling} design and the draws it made" if sampling != "uniform" else ""
    raise ParameterError(
        f"--oracle judgments:{source} is the export of live annotation project {p['name']!r}, and --data {data} is "
        f"not that export: compare would draw its own items from {data} and find verdicts on the exported ones only, "
        f"so its decision would not be the project's. The admin page's decision replays as: evalsift compare "
        f"--data {source} --a {st['a']} --b {st['b']} --oracle judgments:{source} (the project's pool of "
        f"{doc['pool_size']} items, its settings{design}, the verdicts in stored order). To compare on the verdicts "
        f"as plain recorded data instead, move {project_file_for(source)} aside", field="oracle",
        hint="replay the export itself")


def replay(doc: dict[str, Any], judgments: Sequence[Judgment]) -> Session:
    """The project's Session after ``judgments`` (the export's, in stored order), as the server builds it.
    Only live pairwise projects have a Session; DataError for the others."""
    from .work import _Live, feed_live, live_session

    p = doc["project"]
    if not is_live_pairwise(doc):
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
    # as the server builds it: the people the gold rule flagged left out (Workspace._standing), and with
    # --adjudicate a split item given its adjudicator's verdict alone (feed_live)
    excluded = frozenset(doc.get("excluded") or ())
    live = _Live(session, int(p["settings"].get("overlap", 1)), excluded=excluded,
                 adjudicate=bool(p["settings"].get("adjudicate")))
    # the draws made ahead, each again after as many verdicts as the project had then (the exported verdicts
    # are the finished ones that stand, in stored order: the same sequence the server feeds)
    # an adjudicator's verdicts (kind "adjudicator" in the store; a pairwise table has no such kind) are theirs
    adjudicators = frozenset(doc.get("adjudicators") or ())
    verdicts = [replace(j, kind=ADJUDICATOR_KIND) if j.annotator in adjudicators else j
                for j in judgments if j.status == "done" and j.annotator not in excluded]
    draws = [{"seq": k, "after_judgment": int(d["after_verdicts"]), "draws": int(d["draws"])}
             for k, d in enumerate(doc.get("draws") or (), 1)]
    feed_live(live, list(enumerate(verdicts, 1)), draws)
    return session


__all__ = ["FORMAT", "SUFFIX", "is_live_pairwise", "project_file_for", "read_project_file", "refuse_other_replay",
           "replay", "write_project_file"]
