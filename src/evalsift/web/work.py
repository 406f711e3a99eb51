"""Who judges what next: annotation projects on top of the store, without HTTP (the app calls this).

Three kinds of project:

- **live pairwise** (``annotate new --pairwise``): a :class:`~evalsift.session.Session` decides which
  items people see. At creation the selector is fitted once and the decision sets it will ask for
  (``select(k)`` for every k the loop can reach under ``max_labels``) are stored with the items, so
  the server needs neither the data nor the encoder: it rebuilds the Session from the stored sets,
  settings and judgments (in the order they were stored) and advances it as verdicts arrive. When
  the Session decides, nobody is given more work for the project.
- **fixed pairwise** (``annotate new --from picks.jsonl --mode pairwise``): a given selection of items
  for one pair of systems.
- **score** (``--mode score``): every (item, system) of a given selection is scored on the project's
  scale (e.g. 0-100), for ranking many systems.
- **label** (a score project with a ``question``; ``evalsift omni annotate``): each item is answered yes
  (score 1) or no (score 0) to the question; items may carry an image (``meta["image"]``, a PNG data
  URI) that the page shows instead of text.

Rules for handing out work (one *unit* is an item for a pair, or an (item, system) for scores):

- a unit needs ``overlap`` finished judgments from different annotators; leases that have not
  expired count toward it, so two people are not sent the same unit beyond the overlap;
- an annotator never gets a unit he or she already had (judged, skipped, or let expire);
- a lease lasts ``lease_seconds``; after that the unit goes back to the queue (a late answer is still
  stored: nothing is lost, the unit may then have more than ``overlap`` judgments);
- pairwise outputs are shown in a seeded random order per assignment (``shown_order``); the
  annotator answers 1 (first shown), 2 (second shown) or 0 (tie), and the store keeps the verdict in
  terms of the systems;
- a skip is stored (status ``skipped``) and the unit goes to someone else; the live Session is fed
  finished verdicts only, so one person's skip does not drop an item from the decision;
- with ``overlap`` K on a live project, the Session is given an item's verdicts once K different
  people have judged it (then combined by the Session's rule: plurality, a split is a tie), so the
  decision waits for the overlap instead of running ahead on first answers. Items already asked
  about come first in the queue, so their overlap is completed before new items are opened.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from ..oracle.base import Judgment
from ..pool import Pool
from ..select.base import Selector
from ..session import Session
from ..stats import anytime_risk, hypergeometric_risk, pairwise_risk
from ..store import Project, Store

DEFAULT_LEASE_SECONDS = 600.0
ANSWERS = {"1": "first", "2": "second", "0": "tie"}


class StoredSets(Selector):
    """Replays decision sets computed when a live project was created (item ids per budget k).

    Not registered: it exists so the annotation server can rebuild a project's Session from the
    store without the data, the encoder or the original selector.
    """

    pairwise = True

    def __init__(self, *, sets: dict[str, list[str]] | None = None, sizes: dict[str, list[int]] | None = None,
                 method: str = "", random: bool = False, seed: int = 0) -> None:
        self.sets = dict(sets or {})
        self.sizes = dict(sizes or {})
        self.method = method
        self.random = bool(random)  # the sets are prefixes of a uniformly random order (the anytime rule's need)
        self.seed = seed

    @property
    def random_order(self) -> bool:  # type: ignore[override]
        """True when the stored sets came from a uniformly random order."""
        return self.random

    def _fit(self, pool: Pool) -> None:
        index = {iid: i for i, iid in enumerate(pool.item_ids)}
        missing = sorted({i for s in self.sets.values() for i in s} - set(index))
        if missing:
            raise DataError(f"stored decision sets name items the project does not hold (first: {missing[0]!r})",
                            item_id=missing[0])
        self.positions_ = {int(k): np.array([index[i] for i in v], dtype=int) for k, v in self.sets.items()}

    def _select(self, budget: int):
        if budget not in self.positions_:
            raise ParameterError(f"the project stored decision sets up to {max(self.positions_)} clusters; "
                                 f"the session asked for {budget}")
        sizes = self.sizes.get(str(budget))
        return self.positions_[budget], None, None if sizes is None else np.asarray(sizes)


def decision_sets(selector: Selector, pool: Pool, min_labels: int, max_labels: int) -> tuple[dict, dict]:
    """The decision sets a Session with these caps can ask for: ``select(k)`` for k = min_labels
    while the items asked so far stay within ``max_labels`` (plus the one step that would exceed it,
    which the Session checks). Returns ``(sets, cluster sizes)`` keyed by str(k), as item ids."""
    sets, sizes, asked = {}, {}, set()
    k = min(min_labels, pool.n_items)
    while k <= pool.n_items:
        s = selector.select(k)
        sets[str(k)] = [pool.item_ids[i] for i in s.items]
        if s.cluster_sizes is not None:
            sizes[str(k)] = [int(c) for c in s.cluster_sizes]
        asked |= {int(i) for i in s.items}
        if len(asked) > max_labels:
            break
        k += 1
    return sets, sizes


@dataclass
class _Live:
    session: Session
    last_id: int
    overlap: int
    waiting: dict  # item_id -> finished judgments not yet given to the Session (fewer than `overlap` people)
    fed: set  # items whose judgments the Session has


class Workspace:
    """The annotation projects of one store, and the rules for handing out and taking in work."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._locks: dict[int, threading.Lock] = {}
        self._live: dict[int, _Live] = {}
        self._guard = threading.Lock()

    def _lock(self, project_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(project_id, threading.Lock())

    # ------------------------------------------------------------------ creating projects
    def create_live_pairwise(self, name: str, pool: Pool, a: str, b: str, selector: Selector, *, risk: float = 0.2,
                             min_labels: int = 5, max_labels: int = 200, risk_rule: str = "anytime", overlap: int = 1,
                             lease_seconds: float = DEFAULT_LEASE_SECONDS, data: dict | None = None) -> tuple[int, str]:
        """A project whose items are chosen by a live Session over ``pool`` (already restricted to the
        pair's comparable items). Returns ``(project id, admin token)``."""
        _check_overlap(overlap, lease_seconds)
        probe = Session(pool, selector, a=a, b=b, risk=risk, min_labels=min_labels, max_labels=max_labels,
                        risk_rule=risk_rule)  # validates everything and fits the selector once
        sets, sizes = decision_sets(probe.selector, probe.pool, min_labels, max_labels)
        settings = {"a": a, "b": b, "risk": risk, "min_labels": min_labels, "max_labels": max_labels,
                    "risk_rule": risk_rule, "overlap": overlap, "lease_seconds": lease_seconds}
        sel = {"name": probe.selector.name or type(probe.selector).__name__,
               "params": probe.settings()["selector"]["params"], "sets": sets, "sizes": sizes,
               "random_order": bool(getattr(probe.selector, "random_order", False))}
        pid, token = self.store.create_project(name, kind="pairwise", mode="live", settings=settings, selector=sel,
                                               data=data or {"name": pool.name})
        self.store.add_items(pid, _rows(probe.pool, [a, b]))
        return pid, token

    def create_fixed(self, name: str, pool: Pool, *, mode: str, a: str | None = None, b: str | None = None,
                     systems: Sequence[str] | None = None, scale: tuple[float, float] = (0.0, 100.0),
                     overlap: int = 1, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                     data: dict | None = None, question: str | None = None,
                     meta_columns: Sequence[str] = ()) -> tuple[int, str]:
        """A project over a given selection (``pool`` holds exactly the items to judge, in order):
        ``mode='pairwise'`` (``a`` vs ``b``) or ``mode='score'`` (each of ``systems`` scored on ``scale``).
        With ``question`` (score mode), a yes/no label project: the scale is 0-1 and people answer the
        question (yes = 1). ``meta_columns``: metadata columns of ``pool`` stored with each item (an
        ``image`` column of PNG data URIs is shown on the page)."""
        check_choice("mode", mode, ("pairwise", "score"), where="annotate new")
        _check_overlap(overlap, lease_seconds)
        if mode == "pairwise":
            if not (a and b):
                raise ParameterError("a pairwise project needs the two systems: --a SYS --b SYS", field="a")
            systems = [a, b]
            for s in systems:
                pool.system_index(s)
        else:
            systems = list(systems or pool.systems)
            for s in systems:
                pool.system_index(s)
            if question is not None:
                if not str(question).strip():
                    raise ParameterError("a label project needs a non-empty --question", field="question")
                scale = (0.0, 1.0)
            lo, hi = float(scale[0]), float(scale[1])
            if not lo < hi:
                raise ParameterError(f"--scale needs LOW < HIGH, got {scale}", field="scale")
        settings = {"overlap": overlap, "lease_seconds": lease_seconds, "systems": list(systems),
                    **({"a": a, "b": b} if mode == "pairwise" else {"scale": [float(scale[0]), float(scale[1])]})}
        if mode == "score" and question is not None:
            settings["question"] = str(question).strip()
        pid, token = self.store.create_project(name, kind=mode, mode="fixed", settings=settings,
                                               data=data or {"name": pool.name})
        self.store.add_items(pid, _rows(pool, systems, meta_columns))
        return pid, token

    # ------------------------------------------------------------------ the live session
    def session(self, project_id: int) -> Session | None:
        """The project's Session, brought up to date with the stored verdicts (None for fixed projects)."""
        project = self.store.project(project_id)
        if project.mode != "live":
            return None
        live = self._live.get(project_id)
        if live is None:
            items = self.store.items(project_id)
            st = project.settings
            pool = Pool(item_ids=[r["item_id"] for r in items], inputs=[r["input"] for r in items],
                        systems=[st["a"], st["b"]], outputs={s: [r["outputs"].get(s) for r in items]
                                                             for s in (st["a"], st["b"])}, name=project.name)
            sel = StoredSets(sets=project.selector["sets"], sizes=project.selector.get("sizes"),
                             method=project.selector.get("name", ""),
                             random=project.selector.get("random_order", False))
            sel.name = project.selector.get("name", "")
            session = Session(pool, sel, a=st["a"], b=st["b"], risk=st["risk"], min_labels=st["min_labels"],
                              max_labels=st["max_labels"], risk_rule=st["risk_rule"])
            live = self._live[project_id] = _Live(session, 0, int(st.get("overlap", 1)), {}, set())
        for jid, j in self.store.judgments_with_ids(project_id, since_id=live.last_id):
            live.last_id = jid
            if j.status != "done" or j.is_score:
                continue
            if j.item_id in live.fed:  # a late extra answer: it counts as it comes
                live.session.record(j)
                live.session.advance()
                continue
            waiting = live.waiting.setdefault(j.item_id, [])
            waiting.append(j)
            if len({w.annotator for w in waiting}) >= live.overlap:  # the item has its `overlap` people
                for w in live.waiting.pop(j.item_id):
                    live.session.record(w)
                live.fed.add(j.item_id)
                live.session.advance()
        return live.session

    # ------------------------------------------------------------------ handing out work
    def _units(self, project: Project) -> list[tuple[str, str, str]]:
        """The units that may still need work, in order: (item_id, a, b) -- b is '' for scores."""
        st = project.settings
        if project.mode == "live":
            session = self.session(project.id)
            if session.done:
                return []
            wanted = [session.pool.item_ids[i] for i in (*session.pending(), *session.outstanding())]
            return [(i, st["a"], st["b"]) for i in dict.fromkeys(wanted)]
        items = [r["item_id"] for r in self.store.items(project.id)]
        if project.kind == "pairwise":
            return [(i, st["a"], st["b"]) for i in items]
        return [(i, s, "") for i in items for s in st["systems"]]

    def next_for(self, annotator: dict[str, Any]) -> dict[str, Any]:
        """The next assignment for ``annotator`` (``{id, project_id, name}``), leased now; or
        ``{"done": True, "final": ..., "reason": ...}`` when there is no work for this person: final
        when the project needs nothing more, not final (with ``retry_after`` seconds) when the open
        items are with other people and a live decision may still release more."""
        pid = annotator["project_id"]
        with self._lock(pid):
            project = self.store.project(pid)
            units = self._units(project)
            if not units:
                reason = "the decision is made" if project.mode == "live" else "every item has its judgments"
                return {"done": True, "final": True, "reason": reason, "progress": self.progress(pid, annotator["id"])}
            overlap = int(project.settings.get("overlap", 1))
            done_by, busy, seen = self._counts(pid, annotator["id"])
            if all(len(done_by.get(u, set())) >= overlap for u in units):  # nothing left for anyone
                reason = "the items asked about so far are judged" if project.mode == "live" else \
                    "every item has its judgments"
                return {"done": True, "final": project.mode != "live", "retry_after": 3, "reason": reason,
                        "progress": self.progress(pid, annotator["id"])}
            for item, a, b in units:
                key = (item, a, b)
                if key in seen:
                    continue
                if len(done_by.get(key, set()) | busy.get(key, set())) >= overlap:
                    continue
                order = _shown_order(pid, annotator["id"], item, a) if b else "ab"
                aid = self.store.lease(pid, annotator["id"], item, a, b or None, order,
                                       float(project.settings.get("lease_seconds", DEFAULT_LEASE_SECONDS)))
                return self._assignment(project, aid, item, a, b, order, annotator)
            return {"done": True, "final": False, "retry_after": 3,
                    "reason": "no more work for you now (the rest is with other annotators; more may come)",
                    "progress": self.progress(pid, annotator["id"])}

    def _counts(self, project_id: int, annotator_id: int):
        done_by: dict[tuple, set] = {}
        for j in self.store.judgments(project_id):
            if j.status == "done":
                done_by.setdefault((j.item_id, j.a, j.b if not j.is_score else ""), set()).add(j.annotator)
                if not j.is_score:
                    done_by.setdefault((j.item_id, j.b, j.a), set()).add(j.annotator)
        busy: dict[tuple, set] = {}
        seen = set()
        for r in self.store.assignments(project_id):
            key = (r["item_id"], r["a"], r["b"] or "")
            if r["state"] == "leased":
                busy.setdefault(key, set()).add(f"annotator:{r['annotator_id']}")
            if r["annotator_id"] == annotator_id:
                seen.add(key)
        return done_by, busy, seen

    def _assignment(self, project: Project, assignment_id: int, item: str, a: str, b: str, order: str,
                    annotator: dict[str, Any]) -> dict[str, Any]:
        row = next(r for r in self.store.items(project.id) if r["item_id"] == item)
        out: dict[str, Any] = {"assignment_id": assignment_id, "project": project.name, "kind": project.kind,
                               "item_id": item, "input": row["input"],
                               "progress": self.progress(project.id, annotator["id"])}
        if b:
            first, second = (a, b) if order == "ab" else (b, a)
            out.update(outputs=[row["outputs"].get(first), row["outputs"].get(second)], answers=ANSWERS)
        else:
            out.update(output=row["outputs"].get(a), scale=project.settings["scale"])
            if project.settings.get("question"):
                out["question"] = project.settings["question"]
        if row["meta"].get("image"):
            out["image"] = row["meta"]["image"]
        return out

    def progress(self, project_id: int, annotator_id: int) -> dict[str, int]:
        """How many judgments this annotator has given in the project."""
        mine = [r for r in self.store.assignments(project_id, annotator_id=annotator_id) if r["state"] == "done"]
        return {"judged": len(mine)}

    # ------------------------------------------------------------------ taking in work
    def submit(self, annotator: dict[str, Any], assignment_id: int, *, answer: str | None = None,
               score: float | None = None, skip: bool = False, comment: str = "",
               idempotency_key: str | None = None) -> int:
        """Store one answer to an assignment; returns the judgment id once committed.

        ``answer``: '1' (the first output shown), '2' (the second) or '0' (tie) for pairwise work;
        ``score`` for score work (on a label project -- one with a ``question`` -- only 1 for yes and 0 for
        no, as numbers or the strings "1" / "0"); ``skip=True`` to decline. A repeated ``idempotency_key`` returns
        the first id without storing anything.
        """
        pid = annotator["project_id"]
        row = self.store.assignment(int(assignment_id))
        if row is None or row["annotator_id"] != annotator["id"] or row["project_id"] != pid:
            raise PermissionError("this assignment belongs to someone else")
        project = self.store.project(pid)
        detail: dict[str, Any] = {"assignment": int(assignment_id)}
        if comment:
            detail["comment"] = str(comment)[:5000]
        common = dict(item_id=row["item_id"], a=row["a"], b=row["b"] or "", annotator=annotator["name"],
                      kind="human", shown_order=row["shown_order"])
        if skip:
            j = Judgment(verdict=None, status="skipped", detail=detail, **common)
        elif row["b"]:
            if answer is None or str(answer) not in ANSWERS:
                raise ParameterError(f"answer must be 1 (first output shown), 2 (second) or 0 (tie), got {answer!r}",
                                     field="verdict", item_id=row["item_id"])
            shown_first_is_a = row["shown_order"] == "ab"
            verdict = {"0": "tie", "1": "a" if shown_first_is_a else "b", "2": "b" if shown_first_is_a else "a"}[str(answer)]
            j = Judgment(verdict=verdict, detail={**detail, "answer": str(answer)}, **common)
        elif project.settings.get("question"):  # a yes/no label project: 1 or 0, nothing in between
            value = _label(score)
            if value is None:
                raise ParameterError(f"answer yes (1) or no (0) to the question, got {score!r}", field="score",
                                     item_id=row["item_id"])
            j = Judgment(verdict=None, detail={**detail, "score": value}, **common)
        else:
            lo, hi = project.settings["scale"]
            try:
                value = float(score)
            except (TypeError, ValueError):
                raise ParameterError(f"score must be a number from {lo:g} to {hi:g}, got {score!r}", field="score",
                                     item_id=row["item_id"]) from None
            if not (math.isfinite(value) and lo <= value <= hi):
                raise ParameterError(f"score must be a number from {lo:g} to {hi:g}, got {score!r}", field="score",
                                     item_id=row["item_id"])
            j = Judgment(verdict=None, detail={**detail, "score": value}, **common)
        with self._lock(pid):
            jid = self.store.record_judgment(pid, j, idempotency_key=idempotency_key, assignment_id=int(assignment_id))
            if project.mode == "live":
                self.session(pid)  # advance the live decision now
        return jid

    # ------------------------------------------------------------------ status
    def status(self, project_id: int) -> dict[str, Any]:
        """Counts, the live decision (leader, wins, ties, risk, decided or about how many more), and agreement."""
        with self._lock(project_id):
            return self._status(project_id)

    def _status(self, project_id: int) -> dict[str, Any]:
        project = self.store.project(project_id)
        judgments = self.store.judgments(project_id)
        done = [j for j in judgments if j.status == "done"]
        out: dict[str, Any] = {
            "project": {"id": project.id, "name": project.name, "kind": project.kind, "mode": project.mode},
            "settings": {k: v for k, v in project.settings.items()},
            "items": len(self.store.items(project_id)),
            "annotators": [a["name"] for a in self.store.annotators(project_id)],
            "judgments": {"done": len(done), "skipped": sum(j.status == "skipped" for j in judgments),
                          "total": len(judgments)},
            "open_leases": len(self.store.assignments(project_id, state="leased")),
            "agreement": _agreement(done, project.kind),
        }
        session = self.session(project_id)
        if session is not None:
            d = session.decision()
            leader = None if d.wins_a == d.wins_b else (d.a if d.wins_a > d.wins_b else d.b)
            out["decision"] = {"outcome": d.outcome, "decided": session.done, "winner": d.winner, "leader": leader,
                               "wins_a": d.wins_a, "wins_b": d.wins_b, "ties": d.ties, "risk": d.risk,
                               "risk_threshold": d.risk_threshold, "risk_rule": d.risk_rule,
                               "labels_used": d.labels_used, "decision_set": d.decision_set,
                               "pool_size": d.pool_size, "more_needed_at_least": _more_needed(session, d),
                               "guarantee": d.guarantee, "win_rate_interval": d.win_rate_interval,
                               "note": f"what the risk means: {d.guarantee}"}
        return out


def _agreement(done: list[Judgment], kind: str) -> dict[str, Any]:
    try:
        from ..stats.agreement import agreement_from_judgments
    except ImportError:  # pragma: no cover - the agreement module ships with evalsift
        return {"note": "agreement statistics unavailable"}
    try:
        return agreement_from_judgments(done, kind="score" if kind == "score" else "pairwise")
    except Exception as e:  # noqa: BLE001 - a status page must not fail because of too little overlap
        return {"note": f"agreement not computed: {e}"}


def _more_needed(session: Session, d) -> int | None:
    """The fewest further verdicts that could stop the loop: all of them for the current leader
    (an optimistic lower bound, under the Session's rule). None when decided."""
    if d.outcome != "waiting":
        return None
    lead_a = d.wins_a >= d.wins_b
    values = session.verdict_values()
    for m in range(1, d.pool_size - len(values) + 1):
        if d.risk_rule == "anytime":
            r = anytime_risk(values + [1.0 if lead_a else 0.0] * m, d.pool_size, d.risk_threshold, interval=False)
            leader, risk = r.leader, r.risk
        else:
            wa, wb = (d.wins_a + m, d.wins_b) if lead_a else (d.wins_a, d.wins_b + m)
            r = pairwise_risk(wa, wb, d.ties, d.pool_size, d.risk_rule)
            leader, risk = r.leader, r.risk
        if leader is not None and risk <= d.risk_threshold:
            return m
    return None


def _shown_order(project_id: int, annotator_id: int, item: str, a: str) -> str:
    """A seeded random presentation order per (project, annotator, item): 'ab' or 'ba'."""
    h = hashlib.sha256(f"{project_id}|{annotator_id}|{item}|{a}".encode()).digest()
    return "ab" if h[0] % 2 == 0 else "ba"


def _label(score: Any) -> float | None:
    """A yes/no answer as 1.0 / 0.0: the numbers 1 and 0 or the strings "1" and "0"; None for anything
    else (0.5, 2, true, "yes", missing)."""
    if isinstance(score, str):
        return {"1": 1.0, "0": 0.0}.get(score)
    if isinstance(score, (int, float, np.integer, np.floating)) and not isinstance(score, (bool, np.bool_)):
        return (1.0 if score == 1 else 0.0) if score in (0, 1) else None
    return None


def _rows(pool: Pool, systems: Sequence[str], meta_columns: Sequence[str] = ()) -> list[dict[str, Any]]:
    if not pool.inputs_are_text:
        raise DataError(f"pool {pool.name!r} has non-text inputs; the annotation app shows text", field="input")
    for c in meta_columns:
        if c not in pool.metadata:
            raise DataError(f"pool {pool.name!r} has no metadata column {c!r}", field=c)
    if "image" in meta_columns and not all(isinstance(v, str) and v.startswith("data:image/png;base64,")
                                           for v in pool.metadata["image"]):
        raise DataError("the image column must hold PNG data URIs (data:image/png;base64,...)", field="image")
    return [{"item_id": iid, "position": k, "input": pool.inputs[k],
             "outputs": {s: pool.outputs[s][k] for s in systems},
             "meta": {c: pool.metadata[c][k] for c in meta_columns}} for k, iid in enumerate(pool.item_ids)]


def _check_overlap(overlap: int, lease_seconds: float) -> None:
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 1:
        raise ParameterError(f"--overlap must be a positive integer, got {overlap!r}", field="overlap")
    if not lease_seconds > 0:
        raise ParameterError(f"--lease-seconds must be > 0, got {lease_seconds!r}", field="lease_seconds")


__all__ = ["DEFAULT_LEASE_SECONDS", "StoredSets", "Workspace", "decision_sets", "hypergeometric_risk"]
