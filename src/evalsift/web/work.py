"""Who judges what next: annotation projects on top of the store, without HTTP (the app calls this).

Four kinds of project:

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
- **arena** (``annotate new --arena``): blind battles among K systems over a prompt set; a rule picks each
  next (prompt, pair) and the admin page shows the live Bradley-Terry leaderboard (:mod:`evalsift.web.arena`);
- **label** (a score project with a ``question``; ``evalsift omni annotate``): each item is answered yes
  (score 1) or no (score 0) to the question; items may carry an image (``meta["image"]``, a PNG data
  URI) that the page shows instead of text.

Rules for handing out work (one *unit* is an item for a pair, or an (item, system) for scores; the
units are the store's queue, leased atomically by :meth:`~evalsift.store.Store.lease_next`, so several
threads, processes or servers on one file never give a unit to more people than its overlap):

- a unit needs ``overlap`` finished judgments from different annotators; leases that have not
  expired count toward it, so two people are not sent the same unit beyond the overlap;
- an annotator never gets a unit he or she already had (judged, skipped, or let expire);
- a person who asks again while holding a lease (a reloaded page) gets that same assignment back;
- a lease lasts ``lease_seconds``; after that the unit goes back to the queue. A late answer is still
  stored (nothing is lost); when the unit already has its ``overlap`` people by then, it is an *extra*:
  exported with ``counted: false`` and never counted -- not by the decision, not by an arena's board
  (:class:`~evalsift.store.OverlapCount`; the status's ``judgments.extra``);
- pairwise outputs are shown in a seeded random order per assignment (``shown_order``); the
  annotator answers 1 (first shown), 2 (second shown) or 0 (tie), and the store keeps the verdict in
  terms of the systems;
- one answer per assignment: a second is refused unless the first is undone (:meth:`Workspace.undo`:
  the person's latest judgment is marked withdrawn -- it stays stored -- and the item is theirs again);
- a skip is stored (status ``skipped``) and the unit goes to someone else; the live Session is fed
  finished verdicts only, so one person's skip does not drop an item from the decision. A skip is not a
  judgment: a person's progress (:meth:`Workspace.progress`) counts judged and skipped apart;
- an arena battle may also be answered ``bothbad`` (both outputs are bad): a tie whose ``detail["winner"]``
  is ``tie (bothbad)``, as Chatbot Arena's battle files write it. After a vote (not a skip) in an arena
  project the answer names the two models (``reveal``) unless the project was made ``blind_after_vote``;
  a vote whose models were revealed cannot be undone (it would be answered again knowing them);
- with ``overlap`` K on a live project, the Session is given an item's verdicts once K different
  people have judged it (then combined by the Session's rule: plurality, a split is a tie), so the
  decision waits for the overlap instead of running ahead on first answers. Items already asked
  about come first in the queue, so their overlap is completed before new items are opened;
- a live project keeps every person who asks busy: a person with nothing open gets the decision set's
  open items first, then the items ahead of it -- with a uniform order the selector's next items (the
  next decision sets' new items), with a design (``neyman``, ``active``) a new draw made now, from the
  verdicts in so far, when no item drawn ahead is free for them. Such a draw is recorded in the store
  (:meth:`~evalsift.store.Store.record_draw`: after which judgment, the item, its probability; the
  probability also goes with the assignment and its judgment), and the Session is rebuilt by replaying
  the judgments and these draws in the order they happened, so every server, a restart and a replay of
  the export reach the same state. Verdicts of items ahead wait until the Session reaches them, so the
  stop rule still reads them in draw order; when it decides, the items judged beyond what it used are
  ``judged_ahead`` in the status (about one per person at most while nobody sits on an item; more when
  someone holds one for long, which no longer stops the others). When there is nothing at all for a
  person, the answer says why and until when at the latest (when the first open lease ends);
- a live project may have a proxy (``annotate new --pairwise --proxy SPEC``): its values for every item
  are computed once at creation (a judge asked, a metric scored) and stored with the project; the
  server rebuilds it from the store and the Session's anytime rule uses it exactly as ``compare
  --proxy`` does, so the same verdicts in the same order give the same decision.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..errors import ConflictError, DataError, ParameterError, check_choice
from ..oracle.base import Judgment
from ..pool import Pool
from ..proxy import MetricProxy, make_proxy
from ..select.base import Selector
from ..session import Session
from ..stats import anytime_risk, hypergeometric_risk, pairwise_risk
from ..stats.active import DEFAULT_EXPLORE
from ..store import ADJUDICATOR_KIND, OverlapCount, Project, Store, project_units
from . import arena as _arena
from . import quality as _quality

DEFAULT_LEASE_SECONDS = 600.0
NO_WORK_RETRY = 3
"""Seconds after which a person told to wait (``done`` but not ``final``) asks again (``retry_after``)."""
ANSWERS = {"1": "first", "2": "second", "0": "tie"}
BOTHBAD = "bothbad"
"""An arena battle's fourth answer: both outputs are bad (stored as a tie, ``detail["winner"] = "tie (bothbad)"``)."""
ARENA_ANSWERS = {**ANSWERS, BOTHBAD: "both are bad"}


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
    overlap: int
    last_id: int = 0  # the newest judgment given to feed_live
    waiting: dict = field(default_factory=dict)  # item_id -> verdicts not yet given to the Session (< overlap people)
    fed: set = field(default_factory=set)  # items whose judgments the Session has
    undone: int = 0  # the store's newest retraction when the Session was built (a new one: rebuild)
    last_draw: int = 0  # the newest recorded draw made ahead that the Session has made again
    count: OverlapCount | None = None  # which verdicts count toward their item's overlap (extras never do)
    excluded: frozenset = frozenset()  # people flagged by the gold rule when the Session was built: left out
    adjudicate: bool = False  # split items wait for an adjudicator's verdict, which is given alone
    disputed: dict = field(default_factory=dict)  # item_id -> the split verdicts, held until adjudicated
    adjudicated: dict = field(default_factory=dict)  # item_id -> the adjudicator's verdict

    def __post_init__(self) -> None:
        if self.count is None:
            self.count = OverlapCount(self.overlap)


def live_session(project: Project, items: Sequence[dict[str, Any]]) -> Session:
    """A live pairwise project's Session before any verdict: its pool is every stored item (in the stored
    order, ``items`` as :meth:`~evalsift.store.Store.items` gives them), its selector the stored decision
    sets, its settings and proxy the stored ones. The server and a replay of an export both build it here."""
    st = project.settings
    pool = Pool(item_ids=[r["item_id"] for r in items], inputs=[r["input"] for r in items],
                systems=[st["a"], st["b"]], outputs={s: [r["outputs"].get(s) for r in items]
                                                     for s in (st["a"], st["b"])}, name=project.name)
    sel = StoredSets(sets=project.selector["sets"], sizes=project.selector.get("sizes"),
                     method=project.selector.get("name", ""), random=project.selector.get("random_order", False),
                     seed=int((project.selector.get("params") or {}).get("seed", 0)))
    sel.name = project.selector.get("name", "")
    return Session(pool, sel, a=st["a"], b=st["b"], risk=st["risk"], min_labels=st["min_labels"],
                   max_labels=st["max_labels"], risk_rule=st["risk_rule"], proxy=_stored_proxy(project, pool),
                   sampling=st.get("sampling", "uniform"), explore=st.get("explore", DEFAULT_EXPLORE))


def feed_live(live: _Live, judgments: Sequence[tuple[int, Judgment]], draws: Sequence[dict[str, Any]] = ()) -> None:
    """Give a live Session the finished verdicts among ``(id, judgment)`` (in the order they were stored):
    an item's verdicts go in together once ``overlap`` different people have judged it; a verdict past the
    overlap (a late answer after the item went to someone else) is an extra: stored, never given
    (:class:`~evalsift.store.OverlapCount`). ``draws``: the draws made ahead of the decision set
    (:meth:`~evalsift.store.Store.draws` rows, in order, read with the judgments in one snapshot), each made
    again before the first judgment stored after its ``after_judgment``. With ``live.adjudicate`` an item
    whose people split waits for an adjudicator's verdict (kind ``adjudicator``) and is given it alone."""
    k = 0

    def draw_until(jid: int | None) -> None:
        nonlocal k
        while k < len(draws) and (jid is None or int(draws[k]["after_judgment"]) < jid):
            live.session.draw_ahead(int(draws[k]["draws"]))
            live.last_draw = int(draws[k]["seq"])
            k += 1

    for jid, j in judgments:
        draw_until(jid)
        live.last_id = jid
        if j.kind == ADJUDICATOR_KIND:  # an adjudicator's verdict: the one given for its disputed item
            if live.adjudicate and j.status == "done" and j.item_id not in live.fed:
                live.adjudicated[j.item_id] = j
                if live.disputed.pop(j.item_id, None) is not None:
                    live.session.record(j)
                    live.fed.add(j.item_id)
                    live.session.advance()
            continue
        if j.is_score or not live.count.counts(j):  # skips, scores and extras past the overlap are not verdicts
            continue
        if j.item_id in live.fed:  # the same person's later verdict on an item given already: their vote now
            live.session.record(j)
            live.session.advance()
            continue
        waiting = live.waiting.setdefault(j.item_id, [])
        waiting.append(j)
        if len({w.annotator for w in waiting}) >= live.overlap:  # the item has its `overlap` people
            verdicts = live.waiting.pop(j.item_id)
            latest = {w.annotator: w.verdict for w in verdicts}
            if live.adjudicate and len(set(latest.values())) > 1:  # split: the adjudicator's verdict counts
                if j.item_id not in live.adjudicated:
                    live.disputed[j.item_id] = verdicts
                    continue
                verdicts = [live.adjudicated[j.item_id]]
            for w in verdicts:
                live.session.record(w)
            live.fed.add(j.item_id)
            live.session.advance()
    draw_until(None)


class Workspace:
    """The annotation projects of one store, and the rules for handing out and taking in work."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._locks: dict[int, threading.Lock] = {}
        self._live: dict[int, _Live] = {}
        self._projects: dict[int, Project] = {}
        self._arenas: dict[int, _arena.ArenaState] = {}
        self._units: dict[int, int] = {}
        self._orders: dict[int, list[int]] = {}  # live uniform project -> its items in the selector's order
        self._guard = threading.Lock()

    def _project(self, project_id: int) -> Project:
        """The project row, read once: a project's settings never change after it is made (a live one's
        hold every stored decision set, too large to parse on every request)."""
        project = self._projects.get(project_id)
        if project is None:
            project = self._projects[project_id] = self.store.project(int(project_id))
        return project

    def _lock(self, project_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(project_id, threading.Lock())

    # ------------------------------------------------------------------ creating projects
    def create_live_pairwise(self, name: str, pool: Pool, a: str, b: str, selector: Selector, *, risk: float = 0.2,
                             min_labels: int = 5, max_labels: int = 200, risk_rule: str = "anytime", overlap: int = 1,
                             lease_seconds: float = DEFAULT_LEASE_SECONDS, data: dict | None = None,
                             guidelines: str | None = None, proxy: Any = None, sampling: str = "uniform",
                             explore: float = DEFAULT_EXPLORE, gold: Sequence[dict[str, Any]] | None = None,
                             gold_rate: float = _quality.DEFAULT_GOLD_RATE, min_gold_accuracy: float | None = None,
                             adjudicate: str | None = None) -> tuple[int, str]:
        """A project whose items are chosen by a live Session over ``pool`` (already restricted to the
        pair's comparable items). ``guidelines``: text shown to annotators on their page. ``proxy``: what
        the Session's anytime rule is sharpened by (a :class:`~evalsift.proxy.MetricProxy` fitted on
        ``pool``, e.g. from :func:`~evalsift.proxy.restrict_to_proxy`, or a spec
        :func:`~evalsift.proxy.make_proxy` takes); its values are stored with the project, so the
        server needs neither the judge nor the metric. ``sampling`` / ``explore``: how the Session draws the
        items with the proxy (``neyman``, ``active``: each draw from the verdicts seen; draws made ahead of the
        decision for people with nothing open are recorded and replayed, see the module doc). ``gold``: gold
        items (rows of :func:`~evalsift.web.quality.read_gold_file`) served at ``gold_rate``, with the rule
        ``min_gold_accuracy``; ``adjudicate``: the adjudication rule (``split``) -- see :mod:`evalsift.web.quality`.
        Returns ``(project id, admin token)``; the project, its items and its queue are written in one transaction."""
        _check_overlap(overlap, lease_seconds)
        quality = _quality_settings(gold, gold_rate, min_gold_accuracy, adjudicate, overlap)
        if proxy is not None and not isinstance(proxy, MetricProxy):
            proxy = make_proxy(proxy, pool, a, b)
            if not isinstance(proxy, MetricProxy):
                raise ParameterError(f"the annotation app stores a proxy's values with the project; "
                                     f"{type(proxy).__name__} is not a MetricProxy (give metric:NAME or judge:SPEC "
                                     "specs, or a MetricProxy)", field="proxy")
        probe = Session(pool, selector, a=a, b=b, risk=risk, min_labels=min_labels, max_labels=max_labels,
                        risk_rule=risk_rule, proxy=proxy, sampling=sampling,
                        explore=explore)  # validates everything and fits the selector once
        sets, sizes = decision_sets(probe.selector, probe.pool, min_labels, max_labels)
        settings = {"a": a, "b": b, "risk": risk, "min_labels": min_labels, "max_labels": max_labels,
                    "risk_rule": risk_rule, "overlap": overlap, "lease_seconds": lease_seconds,
                    **({"proxy": proxy.name} if proxy is not None else {}), **_guidelines(guidelines),
                    **({"sampling": sampling, "explore": float(explore)} if sampling != "uniform" else {}), **quality}
        sel = {"name": probe.selector.name or type(probe.selector).__name__,
               "params": probe.settings()["selector"]["params"], "sets": sets, "sizes": sizes,
               "random_order": bool(getattr(probe.selector, "random_order", False))}
        if proxy is not None:  # its values per item, in the stored items' order
            sel["proxy"] = {**proxy.state(), "items": list(probe.pool.item_ids)}
        items = _rows(probe.pool, [a, b])
        with self.store.transaction():
            pid, token = self.store.create_project(
                name, kind="pairwise", mode="live", settings=settings, selector=sel, data=data or {"name": pool.name},
                items=items, units=project_units("pairwise", "live", settings, [r["item_id"] for r in items]))
            if gold:
                self.store.add_gold_items(pid, gold)
        return pid, token

    def create_fixed(self, name: str, pool: Pool, *, mode: str, a: str | None = None, b: str | None = None,
                     systems: Sequence[str] | None = None, scale: tuple[float, float] = (0.0, 100.0),
                     overlap: int = 1, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                     data: dict | None = None, question: str | None = None,
                     meta_columns: Sequence[str] = (), guidelines: str | None = None,
                     graded: bool = False, gold: Sequence[dict[str, Any]] | None = None,
                     gold_rate: float = _quality.DEFAULT_GOLD_RATE, min_gold_accuracy: float | None = None,
                     adjudicate: str | None = None) -> tuple[int, str]:
        """A project over a given selection (``pool`` holds exactly the items to judge, in order):
        ``mode='pairwise'`` (``a`` vs ``b``) or ``mode='score'`` (each of ``systems`` scored on ``scale``).
        With ``question`` (score mode), a yes/no label project: the scale is 0-1 and people answer the
        question (yes = 1); ``graded=True`` also takes graded answers in [0, 1] (the page offers a 0-4 scale,
        0 = no, 4 = yes, besides yes and no). ``meta_columns``: metadata columns of ``pool`` stored with each item (an
        ``image`` column of PNG data URIs is shown on the page). ``guidelines``: text shown to annotators.
        ``gold``, ``gold_rate``, ``min_gold_accuracy``, ``adjudicate``: as :meth:`create_live_pairwise` (pairwise
        mode only). The project, its items and its queue are written in one transaction."""
        check_choice("mode", mode, ("pairwise", "score"), where="annotate new")
        _check_overlap(overlap, lease_seconds)
        if mode != "pairwise" and (gold or min_gold_accuracy is not None or adjudicate):
            raise ParameterError("gold items and adjudication are supported on pairwise projects (a verdict is right "
                                 "or wrong); a score project has no known answer to compare a score with", field="gold")
        quality = _quality_settings(gold, gold_rate, min_gold_accuracy, adjudicate, overlap)
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
                    **({"a": a, "b": b} if mode == "pairwise" else {"scale": [float(scale[0]), float(scale[1])]}),
                    **_guidelines(guidelines), **quality}
        if mode == "score" and question is not None:
            settings["question"] = str(question).strip()
            if graded:
                settings["graded"] = True
        elif graded:
            raise ParameterError("graded answers belong to a label project: give a question", field="graded")
        items = _rows(pool, systems, meta_columns)
        with self.store.transaction():
            pid, token = self.store.create_project(
                name, kind=mode, mode="fixed", settings=settings, data=data or {"name": pool.name}, items=items,
                units=project_units(mode, "fixed", settings, [r["item_id"] for r in items]))
            if gold:
                self.store.add_gold_items(pid, gold)
        return pid, token

    def create_arena(self, name: str, pool: Pool, systems: Sequence[str] | None = None, *, alpha: float = 0.1,
                     stop: str = "top-k:1", first: int = 50, max_battles: int = 1000, allocation: str = "active",
                     overlap: int = 1, lease_seconds: float = DEFAULT_LEASE_SECONDS, seed: int = 0,
                     judges: dict[str, Sequence[Judgment]] | None = None, data: dict | None = None,
                     guidelines: str | None = None, blind_after_vote: bool = False) -> tuple[int, str]:
        """An arena project (module doc of :mod:`evalsift.web.arena`): every prompt of ``pool`` for every
        pair of ``systems`` (default all of the pool's, at least 3), battles picked by ``allocation``
        (``active``: Chatbot Arena's rule; ``uniform``), until the stop rule ``stop`` (``top-k:K`` or
        ``rank-set:S``, looked at after ``first``, 2 ``first``, ... human battles at level ``alpha`` in
        all) is met or ``max_battles`` human battles are in. ``judges``: name -> the judge's verdicts
        (Judgments on the pool's items for pairs of ``systems``), stored with the project as kind
        ``judge`` and used by the leaderboard (PPI++). After each vote the answer names the battle's two
        models (as Chatbot Arena does) unless ``blind_after_vote``. Written in one transaction."""
        from ..arena.leaderboard import parse_stop

        _check_overlap(overlap, lease_seconds)
        systems = list(systems or pool.systems)
        for s in systems:
            pool.system_index(s)
        if len(set(systems)) != len(systems):
            raise ParameterError(f"--systems names a system twice: {', '.join(systems)}", field="systems")
        if len(systems) < 3:
            raise ParameterError(f"an arena ranks 3 or more systems (got {len(systems)}); for two, use "
                                 "'annotate new --pairwise'", field="systems")
        check_choice("allocation", allocation, _arena.ALLOCATIONS, where="arena")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
            raise ParameterError(f"--alpha must be in (0, 1), got {alpha!r}", field="alpha")
        parse_stop(stop, len(systems))
        for value, what in ((first, "first"), (max_battles, "max_labels")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ParameterError(f"--{what.replace('_', '-')} must be an integer >= 2, got {value!r}", field=what)
        settings = {"systems": systems, "overlap": overlap, "lease_seconds": lease_seconds,
                    "arena": {"alpha": float(alpha), "stop": stop, "first": int(first), "max_battles": int(max_battles),
                              "allocation": allocation, "seed": int(seed),
                              "reveal_after_vote": not bool(blind_after_vote)}, **_guidelines(guidelines)}
        items = _rows(pool, systems)
        verdicts = []
        pairs = {frozenset(p) for p in _arena.arena_pairs(systems)}
        ids = set(pool.item_ids)
        for judge, got in (judges or {}).items():
            for j in got:
                if j.status != "done" or j.verdict is None:
                    continue
                if j.item_id not in ids or frozenset((j.a, j.b)) not in pairs:
                    raise DataError(f"judge {judge!r} judged item {j.item_id!r} for {j.a} vs {j.b}, which is not a battle "
                                    "of this arena", item_id=j.item_id, field="judge")
                verdicts.append(Judgment(item_id=j.item_id, a=j.a, b=j.b, verdict=j.verdict, annotator=str(judge),
                                         kind=_arena.JUDGE_KIND, shown_order=j.shown_order,
                                         detail={"judge_kind": j.kind}))
        with self.store.transaction():
            pid, token = self.store.create_project(
                name, kind="pairwise", mode="live", settings=settings, data=data or {"name": pool.name}, items=items,
                units=project_units("pairwise", "live", settings, [r["item_id"] for r in items]))
            for j in verdicts:
                self.store.record_judgment(pid, j)
        return pid, token

    def arena(self, project_id: int) -> "_arena.ArenaState | None":
        """An arena project's battles, brought up to date with the store (None for other projects);
        read again from the start when a judgment was undone since."""
        project = self._project(project_id)
        if not project.settings.get("arena"):
            return None
        state = self._arenas.get(project_id)
        if state is None or state.undone != self.store.last_retraction(project_id):
            state = self._arenas[project_id] = _arena.ArenaState.load(self.store, project)
        else:
            state.update(self.store)
        return state

    # ------------------------------------------------------------------ the live session
    def session(self, project_id: int) -> Session | None:
        """The project's Session, brought up to date with the stored verdicts that stand (None for fixed
        projects). Rebuilt from the start when a judgment was undone since it was last brought up to date."""
        project = self._project(project_id)
        if project.mode != "live" or project.settings.get("arena"):
            return None
        with self.store.snapshot():  # the judgments and the draws made ahead as of one moment (draws follow them)
            live = self._live.get(project_id)
            undone = self.store.last_retraction(project_id)
            excluded = self.store.excluded(project_id)
            if live is None or live.undone != undone or live.excluded != excluded:  # rebuilt without them
                session = live_session(project, self.store.items(project_id))
                live = self._live[project_id] = _Live(session, int(project.settings.get("overlap", 1)), undone=undone,
                                                      excluded=excluded,
                                                      adjudicate=bool(project.settings.get("adjudicate")))
            feed_live(live, self._standing(project_id, since_id=live.last_id, excluded=excluded),
                      self.store.draws(project_id, since=live.last_draw))
        return live.session

    def _disputes(self, project, judgments=None) -> tuple[dict[str, Any], set[str]]:
        """The project's disputed items and those already adjudicated (:func:`evalsift.web.quality.disputes`
        over ``judgments``, default every stored one), the gold rule's excluded people left out."""
        judgments = self.store.judgments(project.id) if judgments is None else judgments
        return _quality.disputes(judgments, int(project.settings.get("overlap", 1)), self.store.excluded(project.id))

    def _standing(self, project_id: int, *, since_id: int = 0,
                  excluded: frozenset[str] | None = None) -> list[tuple[int, Judgment]]:
        """The judgments the decision reads: those that stand, without the people the gold rule flagged (the one
        place they are left out; they stay in the store)."""
        excluded = self.store.excluded(project_id) if excluded is None else excluded
        return [(i, j) for i, j in self.store.judgments_with_ids(project_id, since_id=since_id)
                if j.annotator not in excluded]

    def _wanted(self, project: Project, session: Session) -> list[int]:
        """Unit positions a live project offers a person now, in order: the decision set's open items, then
        the items ahead of it -- a uniform order's next items (the next decision sets' new items), or a
        design's items drawn ahead. A live project's units are its items in pool order, so a unit's position
        is the item's. When none of them is free for the person, :meth:`next_for` gives a design a new draw."""
        wanted = [*session.pending(), *session.outstanding()]
        if session.sampling != "uniform":
            return [int(i) for i in dict.fromkeys(wanted + session.ahead())]
        order = self._orders.get(project.id)
        if order is None:  # the selector's order: every stored decision set's new items, set after set
            index = {iid: k for k, iid in enumerate(session.pool.item_ids)}
            sets = project.selector.get("sets", {})
            order = self._orders[project.id] = list(dict.fromkeys(
                index[iid] for k in sorted(int(x) for x in sets) for iid in sets[str(k)]))
        seen = set(session.requested())
        return [int(i) for i in dict.fromkeys(wanted + [i for i in order if i not in seen])]

    def _draw_ahead(self, project: Project, session: Session) -> int | None:
        """A design's next draw, made now for a person who has nothing open (recorded in the store with the
        point it was made at and its probability, in the transaction that leases it); None at the cap."""
        live = self._live[project.id]
        before = len(session.requested()) + len(session.ahead())
        if session.draw_ahead(before + 1) == before:
            return None  # max_labels or the pool reached
        item = session.ahead()[-1]
        live.last_draw = self.store.record_draw(project.id, after_judgment=live.last_id, draws=before + 1,
                                                item_id=session.pool.item_ids[item],
                                                prob=session.draw_probability(item))
        return item

    def _why_wait(self, project: Project, annotator: dict[str, Any], units: Sequence[int] | None,
                  session: Session | None = None) -> str:
        """Why a person has no work now and for how long at most: the open items are with other people, and
        the first of their leases ends (the item goes back to the queue unless answered) in so much time."""
        held, first = self.store.next_release(project.id, annotator["id"], units)
        one = held == 1
        if session is not None:
            cap = min(session.max_labels, session.pool.n_items)
            out = (" (all the items it may draw are out)" if session.sampling != "uniform" and
                   len(session.requested()) + len(session.ahead()) >= cap else "")
            what = (f"the decision needs the verdict{'' if one else 's'} on {held} item{'' if one else 's'} "
                    f"{'another annotator holds' if one else 'other annotators hold'} before it can ask for more{out}"
                    if held else "the decision is waiting for its last verdicts")
        else:
            what = f"the rest ({held} item{'' if one else 's'}) is with other annotators" if held else \
                "the rest is with other annotators"
        if not held or first is None:
            return f"{what}; more may come"
        left = max(0, int(math.ceil(first - time.time())))
        return (f"{what}. At the latest in {_duration(left)} {'it goes' if one else 'the first goes'} back to the "
                f"queue (when {'its' if one else 'that'} lease ends, unless it is answered sooner); this page looks "
                f"again every {NO_WORK_RETRY} s")

    # ------------------------------------------------------------------ handing out work
    def next_for(self, annotator: dict[str, Any]) -> dict[str, Any]:
        """The next assignment for ``annotator`` (``{id, project_id, name}``), leased now -- or the one
        the person already holds (a reloaded page gets it back); or ``{"done": True, "final": ...,
        "reason": ...}`` when there is no work for this person: final when nothing more will come for
        them, not final (with ``retry_after`` seconds) when the open items are with other people or a
        live decision may still release more."""
        pid = annotator["project_id"]
        with self._lock(pid):
            project = self._project(pid)
            seconds = float(project.settings.get("lease_seconds", DEFAULT_LEASE_SECONDS))
            who = self.store.annotator_state(annotator["id"])
            if who["role"] == "adjudicator":
                return self._next_dispute(project, annotator, seconds)
            if who["paused"]:  # flagged by the gold rule: nothing more until the admin unpauses
                return self._no_work(project, annotator, True, _quality.PAUSED)
            held = self.store.held(pid, annotator["id"])
            if project.settings.get("arena"):
                with self.store.transaction():  # the battles seen, the draw and the lease in one step, across servers
                    state = self.arena(pid)
                    why = state.done(self.store)
                    if why:
                        return self._no_work(project, annotator, True, why)
                    if held is not None:
                        return self._assignment(project, held, annotator)
                    rng = np.random.default_rng([state.settings["seed"], int(annotator["id"]),
                                                 self.store.assignment_count(pid)])
                    picked = _arena.draw(state, self.store, annotator, rng)
                    row = None if picked is None else self.store.lease_next(
                        pid, annotator["id"], seconds=seconds, candidates=picked[0], prob=picked[1],
                        shown_order=_order_of(pid, annotator["id"]))
            elif project.mode == "live":
                with self.store.transaction():  # the Session's view and the lease in one step, across servers
                    session = self.session(pid)
                    if session.done:
                        return self._no_work(project, annotator, True, "the decision is made")
                    if held is not None:
                        return self._assignment(project, held, annotator)
                    wanted = self._wanted(project, session)
                    prob = None if session.sampling == "uniform" else (
                        lambda unit: session.draw_probability(int(unit["pos"])))  # a design's draw, as it was made
                    row = self.store.lease_next(pid, annotator["id"], seconds=seconds, candidates=wanted,
                                                shown_order=_order_of(pid, annotator["id"]), prob=prob)
                    while row is None and session.sampling != "uniform":  # nothing open to this person: draw ahead
                        item = self._draw_ahead(project, session)
                        if item is None:
                            break
                        wanted.append(item)
                        row = self.store.lease_next(pid, annotator["id"], seconds=seconds, candidates=[item],
                                                    shown_order=_order_of(pid, annotator["id"]), prob=prob)
            else:
                if held is not None:
                    return self._assignment(project, held, annotator)
                row = self.store.lease_next(pid, annotator["id"], seconds=seconds, shown_order=_order_of(pid, annotator["id"]))
            if row is not None:
                return self._assignment(project, row, annotator)
            if project.mode == "live" and project.settings.get("arena"):
                return self._no_work(project, annotator, *_arena.why_no_battle(state, self.store, annotator))
            if project.mode == "live":
                return self._no_work(project, annotator, False, self._why_wait(project, annotator, wanted, session))
            q = self.store.queue_state(pid, annotator["id"])
            if q["unfinished"] == 0:
                return self._no_work(project, annotator, True, "every item has its judgments")
            if q["unfinished_for_me"] == 0:
                return self._no_work(project, annotator, True, "you have had every item that still needs judging")
            return self._no_work(project, annotator, False, "no more work for you now: "
                                 + self._why_wait(project, annotator, None))

    def _no_work(self, project: Project, annotator: dict[str, Any], final: bool, reason: str) -> dict[str, Any]:
        out = {"done": True, "final": final, "reason": reason,
               "progress": self.progress(project.id, annotator["id"])}
        if not final:
            out["retry_after"] = NO_WORK_RETRY
        return out

    def _assignment(self, project: Project, row: dict[str, Any], annotator: dict[str, Any]) -> dict[str, Any]:
        """What the page shows for an assignment row: the input, the outputs in the shown order, the scale."""
        item, a, b, order = row["item_id"], row["a"], row["b"] or "", row["shown_order"]
        stored = self.store.item(project.id, item) or {"input": None, "outputs": {}, "meta": {}}
        shown_id = self._opaque(project, "item", item) if project.settings.get("gold") else item
        out: dict[str, Any] = {"assignment_id": int(row["id"]), "project": project.name, "kind": project.kind,
                               "item_id": shown_id, "input": stored["input"], "expires_at": row["expires_at"],
                               "progress": self.progress(project.id, annotator["id"])}
        if b:  # the systems are never named before the vote (an arena reveals them in the vote's answer)
            first, second = (a, b) if order == "ab" else (b, a)
            out.update(outputs=[stored["outputs"].get(first), stored["outputs"].get(second)],
                       answers=ARENA_ANSWERS if project.settings.get("arena") else ANSWERS)
        else:
            out.update(output=stored["outputs"].get(a), scale=project.settings["scale"])
            if project.settings.get("question"):
                out["question"] = project.settings["question"]
                out["graded"] = bool(project.settings.get("graded"))
        if stored["meta"].get("image"):
            out["image"] = stored["meta"]["image"]
        if b and project.settings.get("adjudicate") and self.store.annotator_state(annotator["id"])["role"] == "adjudicator":
            counts = self._disputes(project)[0].get(item, {})
            first = "a" if order == "ab" else "b"
            second = "b" if first == "a" else "a"
            out["dispute"] = {"first": int(counts.get(first, 0)), "second": int(counts.get(second, 0)),
                              "tie": int(counts.get("tie", 0))}
        return out

    def _opaque(self, project: Project, what: str, value: Any) -> str:
        """An id the API shows in a project with gold items (:func:`~evalsift.web.quality.opaque_id`)."""
        return _quality.opaque_id(self.store._cookie_key(), project.id, what, value)

    def _gold_status(self, project: Project) -> dict[str, Any]:
        """Each annotator's gold accuracy with its anytime interval, and whether the rule flagged them."""
        g = project.settings["gold"]
        risk = float(g.get("risk", _quality.GOLD_RISK))
        record = self.store.gold_record(project.id)
        people = []
        for a in self.store.annotators(project.id):
            if a.get("role") == "adjudicator":
                continue
            acc = _quality.gold_accuracy(record.get(int(a["id"]), []), int(g["items"]), risk)
            flagged = a.get("flagged_at") is not None
            people.append({"name": a["name"], **acc, "text": _quality.interval_text(acc, risk), "flagged": flagged,
                           "excluded": flagged and a.get("cleared_at") is None,
                           "paused": flagged and a.get("cleared_at") is None, "unpaused": a.get("cleared_at") is not None,
                           "reason": a.get("flag_reason")})
        rule = (f"flag a person once the {100 * (1 - risk):g}% anytime upper bound on their gold accuracy is below "
                f"{g['min_accuracy']:g}: their queue is paused and their verdicts leave the decision"
                if g.get("min_accuracy") is not None else "no rule (--min-gold-accuracy not set)")
        return {"items": int(g["items"]), "rate": float(g["rate"]), "min_accuracy": g.get("min_accuracy"),
                "level": 1 - risk, "rule": rule, "correct_means": _quality.GOLD_CORRECT,
                "assumption": _quality.GOLD_ASSUMPTION, "answers": sum(p["answered"] for p in people),
                "annotators": people, "excluded": sorted(self.store.excluded(project.id))}

    def _next_dispute(self, project: Project, annotator: dict[str, Any], seconds: float) -> dict[str, Any]:
        """An adjudicator's next item: the disputed item they hold, or the first disputed item not yet adjudicated,
        not held by another adjudicator and never had by them; or why there is none."""
        pid = project.id
        if not project.settings.get("adjudicate"):
            return self._no_work(project, annotator, True, "this project has no adjudication rule (annotate new "
                                 "--adjudicate split)")
        session = self.session(pid)
        if session is not None and session.done:
            return self._no_work(project, annotator, True, "the decision is made")
        held = self.store.held(pid, annotator["id"])
        if held is not None:
            return self._assignment(project, held, annotator)
        split, done = self._disputes(project)
        mine = {r["item_id"] for r in self.store.assignments(pid, annotator_id=annotator["id"])}
        taken = {r["item_id"] for r in self.store.assignments(pid, state="leased") if r["unit"] is None}
        order = {r["item_id"]: r["position"] for r in self.store.items(pid)}
        open_items = sorted((i for i in split if i not in done and i not in mine and i not in taken),
                            key=lambda i: order.get(i, 0))
        if not open_items:
            waiting = [i for i in split if i not in done and i in taken and i not in mine]
            if waiting:
                return self._no_work(project, annotator, False, "the disputed items are with other adjudicators")
            if project.mode == "fixed" and self.store.queue_state(pid)["unfinished"] == 0:
                return self._no_work(project, annotator, True, "every disputed item is adjudicated")
            return self._no_work(project, annotator, False, "no disputed item needs adjudication now; more may come")
        item = open_items[0]
        st = project.settings
        row = self.store.lease_extra(pid, annotator["id"], item, st["a"], st["b"],
                                     _shown_order(pid, annotator["id"], item, st["a"]), seconds)
        return self._assignment(project, row, annotator)

    def progress(self, project_id: int, annotator_id: int) -> dict[str, Any]:
        """This annotator's progress in the project: ``judged`` (answers that stand, skips and undone ones
        not counted), ``skipped`` (skips that stand) and ``total``: the most this person can be given --
        every unit of a fixed project (an item, or an item and system to score), the item cap of a live
        one, ``min(battles, max_battles)`` of an arena; ``total_is_cap`` is true for the last two (the
        decision or the stop rule may end the work sooner)."""
        project = self._project(project_id)
        units = self._units.get(project_id)
        if units is None:  # a project's units are fixed when it is made
            units = self._units[project_id] = self.store.queue_state(project_id)["units"]
        arena = project.settings.get("arena")
        if arena:
            total, cap = min(units, int(arena["max_battles"])), True
        elif project.mode == "live":
            total, cap = min(units, int(project.settings.get("max_labels", units))), True
        else:
            total, cap = units, False
        gold = project.settings.get("gold")
        if gold:  # gold answers count in the person's own progress: the most they can give grows by the gold items
            total, cap = total + int(gold.get("items", 0)), True
        return {**self.store.answered_by(annotator_id), "total": int(total), "total_is_cap": cap}

    # ------------------------------------------------------------------ taking in work
    def submit(self, annotator: dict[str, Any], assignment_id: int, *, answer: str | int | None = None,
               score: float | None = None, skip: bool = False, comment: str | None = "",
               idempotency_key: str | None = None) -> int:
        """Store one answer to an assignment; returns the judgment id once committed.

        ``answer``: '1' (the first output shown), '2' (the second) or '0' (tie) for pairwise work (the
        integers 1, 2, 0 too); ``score`` for score work, a finite number on the project's scale (a number,
        never a string; on a label project -- one with a ``question`` -- only 1 for yes and 0 for no; on a
        graded label project any number from 0 to 1); ``skip=True`` (a real boolean) to decline. ``idempotency_key`` names this submission:
        sent again with the same answer, the first id comes back and nothing is stored; with another
        answer, ConflictError. A second answer to an assignment is a ConflictError (undo the first).
        """
        pid = annotator["project_id"]
        if isinstance(assignment_id, bool) or not isinstance(assignment_id, int):
            raise ParameterError(f"assignment_id must be an integer, got {json_text(assignment_id)}",
                                 field="assignment_id")
        row = self.store.assignment(assignment_id)
        if row is None or row["annotator_id"] != annotator["id"] or row["project_id"] != pid:
            raise PermissionError("this assignment belongs to someone else")
        if not isinstance(skip, bool):
            raise ParameterError(f"skip must be true or false, got {json_text(skip)}", field="skip",
                                 item_id=row["item_id"])
        given = [k for k, v in (("verdict", answer), ("score", score)) if v is not None] + (["skip"] if skip else [])
        if len(given) > 1:  # e.g. {"verdict": "1", "skip": true}: which one was meant cannot be told
            raise ParameterError(f"the body gives {' and '.join(given)}: send one answer -- a verdict, a score, or "
                                 "skip: true -- nothing was stored", field=given[-1], item_id=row["item_id"])
        if comment is not None and not isinstance(comment, str):
            raise ParameterError(f"comment must be text (a JSON string), got {json_text(comment)}", field="comment",
                                 item_id=row["item_id"])
        if idempotency_key is not None and not (isinstance(idempotency_key, str) and 0 < len(idempotency_key) <= 200):
            raise ParameterError("idempotency_key must be a string of 1-200 characters", field="idempotency_key",
                                 item_id=row["item_id"])
        project = self._project(pid)
        detail: dict[str, Any] = {"assignment": int(assignment_id)}
        if row.get("prob") is not None:  # drawn at random by the project's rule: the weight its battle gets
            detail["prob"] = float(row["prob"])
        if comment:
            detail["comment"] = str(comment)[:5000]
        common = dict(item_id=row["item_id"], a=row["a"], b=row["b"] or "", annotator=annotator["name"],
                      kind="human", shown_order=row["shown_order"])
        if skip:
            j = Judgment(verdict=None, status="skipped", detail=detail, **common)
        elif row["b"] and answer == BOTHBAD:
            if not project.settings.get("arena"):
                raise ParameterError("'bothbad' answers an arena battle; here answer 1 (first output shown), 2 (second) "
                                     "or 0 (tie)", field="verdict", item_id=row["item_id"])
            j = Judgment(verdict="tie", detail={**detail, "answer": BOTHBAD, "winner": "tie (bothbad)"}, **common)
        elif row["b"]:
            key = _answer_key(answer)
            if key is None:
                extra = ", 0 (tie) or 'bothbad' (both are bad)" if project.settings.get("arena") else " or 0 (tie)"
                raise ParameterError(f"verdict must be 1 (first output shown), 2 (second){extra}, got "
                                     f"{_got(answer, 'verdict')}", field="verdict", item_id=row["item_id"])
            shown_first_is_a = row["shown_order"] == "ab"
            verdict = {"0": "tie", "1": "a" if shown_first_is_a else "b", "2": "b" if shown_first_is_a else "a"}[key]
            j = Judgment(verdict=verdict, detail={**detail, "answer": key}, **common)
        elif project.settings.get("question") and project.settings.get("graded"):  # graded: anything in [0, 1]
            value = _score(score)
            if value is None or not 0 <= value <= 1:
                raise ParameterError(f"answer the question with a score from 0 (no) to 1 (yes), got {_got(score)}",
                                     field="score", item_id=row["item_id"])
            j = Judgment(verdict=None, detail={**detail, "score": value}, **common)
        elif project.settings.get("question"):  # a yes/no label project: 1 or 0, nothing in between
            value = _label(score)
            if value is None:
                raise ParameterError(f"answer yes (1) or no (0) to the question, got {_got(score)}", field="score",
                                     item_id=row["item_id"])
            j = Judgment(verdict=None, detail={**detail, "score": value}, **common)
        else:
            lo, hi = project.settings["scale"]
            value = _score(score)
            if value is None or not lo <= value <= hi:
                raise ParameterError(f"score must be a number from {lo:g} to {hi:g}, got {_got(score)}", field="score",
                                     item_id=row["item_id"])
            j = Judgment(verdict=None, detail={**detail, "score": value}, **common)
        gold = self.store.gold_item(pid, row["item_id"]) if project.settings.get("gold") else None
        with self._lock(pid):
            if gold is not None:  # a gold answer: stored apart, never a judgment; then the rule
                got = self.store.record_gold_answer(pid, annotator, assignment_id, j.verdict,
                                                    idempotency_key=idempotency_key)
                self._gold_rule(project, annotator)
                return self._opaque(project, "answer", f"g{got['id']}")
            if row["unit"] is None and row["b"] and self.store.annotator_state(annotator["id"])["role"] == "adjudicator":
                counts = self._disputes(project)[0].get(row["item_id"], {})
                j = replace(j, kind=ADJUDICATOR_KIND, detail={**j.detail, "adjudicated": True, "counts": dict(counts)})
            if j.status == "done" and row["b"] and _arena.reveals(project):  # name the models? decided once, stored
                j = replace(j, detail={**j.detail, "revealed": _arena.reveal_vote(self.arena(pid), self.store,
                                                                                  annotator, row)})
            jid = self.store.record_judgment(pid, j, idempotency_key=idempotency_key, assignment_id=assignment_id)
            if project.mode == "live":
                self.session(pid)  # advance the live decision now
        return self._opaque(project, "answer", f"j{jid}") if project.settings.get("gold") else jid

    def _gold_rule(self, project: Project, annotator: dict[str, Any]) -> bool:
        """After a gold answer: flag the person when the anytime upper bound on their gold accuracy fell below the
        project's ``min_accuracy`` (pause, exclude, the live decision recomputed). True when flagged now."""
        g = project.settings.get("gold") or {}
        if g.get("min_accuracy") is None:
            return False
        acc = _quality.gold_accuracy(self.store.gold_record(project.id).get(int(annotator["id"]), []),
                                     int(g.get("items", 1)), float(g.get("risk", _quality.GOLD_RISK)))
        if not _quality.breaks_rule(acc, g["min_accuracy"]):
            return False
        flagged = self.store.flag_annotator(project.id, int(annotator["id"]),
                                            _quality.flag_reason(acc, g["min_accuracy"], float(g.get("risk", 0.05))))
        if flagged and project.mode == "live":
            self.session(project.id)  # rebuilt without their verdicts
        return flagged

    def reveal(self, annotator: dict[str, Any], assignment_id: int, answer: Any) -> dict[str, Any] | None:
        """What an arena battle's answer shows once the person's vote on it is stored: ``{"first", "second"}``
        (the models in the order their outputs were shown) and ``voted`` (``first``, ``second``, ``tie`` or
        ``bothbad``); ``{"withheld": why, "voted"}`` when the vote's reveal was withheld because the person may
        be shown these outputs again (:func:`~evalsift.web.arena.reveal_vote`); None when the project keeps
        them hidden (``blind_after_vote``, or not an arena), when the assignment is not this person's or holds
        no stored answer, and for a skip."""
        project = self._project(annotator["project_id"])
        if not _arena.reveals(project):
            return None
        row = self.store.assignment(assignment_id)
        if row is None or row["annotator_id"] != annotator["id"] or row["state"] != "done" or not row["b"]:
            return None
        voted = BOTHBAD if answer == BOTHBAD else {"1": "first", "2": "second", "0": "tie"}.get(_answer_key(answer) or "")
        if voted is None:
            return None
        with self._lock(project.id):
            shown = self.arena(project.id).revealed.get(int(assignment_id), True)  # a vote stored before: revealed
        if not shown:
            return {"withheld": _arena.WITHHELD, "voted": voted}
        first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
        return {"first": first, "second": second, "voted": voted}

    def undo(self, annotator: dict[str, Any]) -> dict[str, Any]:
        """Withdraw the annotator's latest judgment that stands (it stays stored, marked undone) and give
        its item back to them: returns the assignment to answer again, with ``undone`` (the judgment id).
        ConflictError when there is nothing to undo, a skipped item has gone to someone else, or the
        judgment is an arena vote whose models were revealed to the person."""
        pid = annotator["project_id"]
        with self._lock(pid):
            project = self._project(pid)
            if _arena.reveals(project):
                mine = [j for j in self.store.judgments(pid) if j.annotator == annotator["name"]
                        and j.kind != _arena.JUDGE_KIND]
                if mine and mine[-1].status == "done" and (mine[-1].detail or {}).get("revealed"):
                    raise ConflictError("the models of your last battle were shown to you after your vote; a revealed "
                                        "vote cannot be undone (it would be answered again knowing them)", field="undo",
                                        item_id=mine[-1].item_id)
            seconds = float(project.settings.get("lease_seconds", DEFAULT_LEASE_SECONDS))
            r = self.store.retract_last(pid, annotator["id"], seconds=seconds)
            if project.mode == "live":
                self.session(pid)  # rebuilt without the undone verdict
            undone = r["judgment_id"]
            if project.settings.get("gold"):  # opaque, as the answer's id was
                undone = self._opaque(project, "answer", f"j{undone}" if undone is not None else f"g{r['gold_answer_id']}")
            return {**self._assignment(project, r["assignment"], annotator), "undone": undone}

    # ------------------------------------------------------------------ status
    def status(self, project_id: int) -> dict[str, Any]:
        """Counts, per-annotator progress, the live decision (leader, wins, ties, risk, decided or about how
        many more), and agreement."""
        with self._lock(project_id):
            return self._status(project_id)

    def _status(self, project_id: int) -> dict[str, Any]:
        project = self._project(project_id)
        judgments = self.store.judgments(project_id)
        judged = len(judgments)
        judgments = [j for j in judgments if j.kind != _arena.JUDGE_KIND]  # an arena's judges are reported apart
        done = [j for j in judgments if j.status == "done"]
        people = self.store.progress(project_id)
        out: dict[str, Any] = {
            "project": {"id": project.id, "name": project.name, "kind": project.kind, "mode": project.mode},
            "settings": {k: v for k, v in project.settings.items()},
            "items": self.store.item_count(project_id),
            "annotators": [a["name"] for a in self.store.annotators(project_id)],
            "progress": people,
            "judgments": {"done": len(done), "skipped": sum(j.status == "skipped" for j in judgments),
                          "undone": sum(p["undone"] for p in people), "total": len(judgments),
                          "extra": _extras(judgments, int(project.settings.get("overlap", 1)))},
            "open_leases": sum(p["open"] for p in people),
            "servers": [{k: s[k] for k in ("hostname", "pid", "address", "started_at")} for s in self.store.servers()],
            "agreement": _agreement(done, project.kind, project.settings.get("scale")),
        }
        if project.mode == "fixed":
            out["queue"] = self.store.queue_state(project_id)
        if project.settings.get("gold"):
            out["gold"] = self._gold_status(project)
        if project.settings.get("adjudicate"):
            split, adjudicated = self._disputes(project, judgments)
            out["adjudication"] = {"rule": project.settings["adjudicate"], "disputed": len(split),
                                   "adjudicated": len(adjudicated & set(split)),
                                   "waiting": sorted(set(split) - adjudicated),
                                   "adjudicators": [a["name"] for a in self.store.annotators(project_id)
                                                    if a.get("role") == "adjudicator"]}
        state = self.arena(project_id)
        if state is not None:
            out["arena"] = _arena.status(state, self.store)
            out["arena"]["judge_verdicts"] = judged - len(judgments)
        session = self.session(project_id)
        if session is not None:
            d = session.decision()
            leader = None if d.wins_a == d.wins_b else (d.a if d.wins_a > d.wins_b else d.b)
            requested = {session.pool.item_ids[i] for i in session.requested()}
            ahead = len({j.item_id for j in done if j.item_id not in requested})
            out["decision"] = {"outcome": d.outcome, "decided": session.done, "winner": d.winner, "leader": leader,
                               "wins_a": d.wins_a, "wins_b": d.wins_b, "ties": d.ties, "risk": d.risk,
                               "risk_threshold": d.risk_threshold, "risk_rule": d.risk_rule,
                               "labels_used": d.labels_used, "decision_set": d.decision_set,
                               "pool_size": d.pool_size, "more_needed_at_least": _more_needed(session, d),
                               "judged_ahead": ahead, "drawn_ahead": len(session.ahead()),
                               "guarantee": d.guarantee, "win_rate_interval": d.win_rate_interval,
                               "proxy": d.proxy, "method": d.method, "sampling": session.sampling,
                               "note": f"what the risk means: {d.guarantee}"}
        return out


def _quality_settings(gold, gold_rate, min_gold_accuracy, adjudicate, overlap) -> dict[str, Any]:
    """The ``gold`` and ``adjudicate`` settings of a new project (checked; nothing without them)."""
    out: dict[str, Any] = {}
    if gold:
        out["gold"] = _quality.gold_settings(gold_rate, min_gold_accuracy, len(gold))
    elif min_gold_accuracy is not None:
        raise ParameterError("--min-gold-accuracy acts on answers to gold items: give them with --gold FILE",
                             field="min_gold_accuracy")
    out.update(_quality.check_adjudicate(adjudicate, overlap))
    return out


def _extras(judgments: Sequence[Judgment], overlap: int) -> int:
    """Finished verdicts past their unit's overlap (late answers after the unit went to someone else): stored,
    never counted (:class:`~evalsift.store.OverlapCount`)."""
    count = OverlapCount(overlap)
    return sum(j.status == "done" and not count.counts(j) for j in judgments)


def _stored_proxy(project: Project, pool: Pool) -> MetricProxy | None:
    """A live project's proxy, rebuilt from the values stored at its creation (None without one)."""
    state = project.selector.get("proxy")
    if state is None:
        return None
    if list(state.get("items", ())) != list(pool.item_ids):
        raise DataError(f"project {project.name!r}: the stored proxy values do not follow the stored items; the store "
                        "is damaged or was edited by hand", field="proxy")
    return MetricProxy.from_state(state)


def _agreement(done: list[Judgment], kind: str, scale: Any = None) -> dict[str, Any]:
    """Agreement of the finished judgments, each statistic at the level the data has (a score project's
    ``scale`` tells a rating scale, whose points are categories, from a continuous one)."""
    try:
        from ..stats.agreement import agreement_from_judgments
    except ImportError:  # pragma: no cover - the agreement module ships with evalsift
        return {"note": "agreement statistics unavailable"}
    try:
        if kind == "score":
            return agreement_from_judgments(done, kind="score", scale=scale)
        return agreement_from_judgments(done, kind="pairwise")
    except Exception as e:  # noqa: BLE001 - a status page must not fail because of too little overlap
        return {"note": f"agreement not computed: {e}"}


def _more_needed(session: Session, d) -> int | None:
    """The fewest further verdicts that could stop the loop: all of them for the current leader
    (an optimistic lower bound, under the Session's rule). None when decided, and with a proxy: its
    rule's risk depends on which items come next and what the proxy says of them, so no count of
    verdicts alone bounds it."""
    if d.outcome != "waiting" or d.proxy:  # with a proxy the count depends on which items come next
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


def _order_of(project_id: int, annotator_id: int):
    """The shown-order rule for :meth:`~evalsift.store.Store.lease_next`: a unit row -> 'ab' | 'ba'."""
    return lambda unit: _shown_order(project_id, annotator_id, unit["item_id"], unit["a"])


def _answer_key(answer: Any) -> str | None:
    """'1', '2' or '0' from the strings or the integers 1, 2, 0; None for anything else (booleans included)."""
    if isinstance(answer, str):
        return answer if answer in ANSWERS else None
    if isinstance(answer, int) and not isinstance(answer, bool):
        return str(answer) if str(answer) in ANSWERS else None
    return None


def _score(score: Any) -> float | None:
    """A finite float from a number (a JSON number: int or float); None for strings (even "70"), booleans,
    NaN, infinities and anything else."""
    if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
        return None
    try:
        value = float(score)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _got(value: Any, what: str = "score") -> str:
    """How an unusable answer is named in a message, in JSON's words: nothing sent, a string given for a
    score (with the fix), or the value as JSON writes it (``null``, ``true``, ``[1]``)."""
    if value is None:
        return f"nothing (the body has no {what})"
    if isinstance(value, str) and what == "score":
        return f"the string {json_text(value)} (send a JSON number, without quotes)"
    return json_text(value)


def json_text(value: Any) -> str:
    """A value from a request body as JSON writes it -- ``null``, ``true``, ``"x"``, ``[1, 2]`` -- for the
    messages a client reads (not Python's ``None`` / ``True``); cut at 60 characters.

    >>> json_text(None), json_text(True), json_text("1"), json_text(2.5)
    ('null', 'true', '"1"', '2.5')
    """
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _duration(seconds: int) -> str:
    """``40 s``, ``9 min 58 s``, ``1 h 5 min``: how long a person waits, for the waiting page."""
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min" + (f" {seconds % 60} s" if seconds % 60 else "")
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _shown_order(project_id: int, annotator_id: int, item: str, a: str) -> str:
    """A seeded random presentation order per (project, annotator, item): 'ab' or 'ba'."""
    h = hashlib.sha256(f"{project_id}|{annotator_id}|{item}|{a}".encode()).digest()
    return "ab" if h[0] % 2 == 0 else "ba"


def _label(score: Any) -> float | None:
    """A yes/no answer as 1.0 / 0.0: the numbers 1 and 0; None for anything else (0.5, 2, true, "1", "yes",
    missing)."""
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


def _guidelines(text: str | None) -> dict[str, str]:
    """``{"guidelines": text}`` for the project's settings (nothing when empty); at most 20,000 characters."""
    if text is None or not str(text).strip():
        return {}
    if len(str(text)) > 20000:
        raise ParameterError(f"guidelines are {len(str(text))} characters; keep them under 20,000", field="guidelines")
    return {"guidelines": str(text).strip()}


def _check_overlap(overlap: int, lease_seconds: float) -> None:
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 1:
        raise ParameterError(f"--overlap must be a positive integer, got {overlap!r}", field="overlap")
    if not lease_seconds > 0:
        raise ParameterError(f"--lease-seconds must be > 0, got {lease_seconds!r}", field="lease_seconds")


__all__ = ["DEFAULT_LEASE_SECONDS", "StoredSets", "Workspace", "decision_sets", "hypergeometric_risk"]
