"""Arena projects in the annotation app: people judge blind battles among K systems; a rule picks each
next battle; the live leaderboard is :mod:`evalsift.arena`'s, computed from the store.

**Units.** An arena project's units are every (prompt, pair) of its systems (position ``item * P + p``,
``P = K (K - 1) / 2`` pairs in :func:`~evalsift.store.schema.arena_pairs` order), each needing
``overlap`` people. A battle is shown as any pairwise assignment: the two outputs in a seeded random
order, answered 1, 2 or 0, the verdict stored in terms of the systems.

**The next battle** (:meth:`ArenaState.pair_probabilities`, :func:`draw`): a pair is drawn with the
rule's probability -- ``active``: Chatbot Arena's (:func:`evalsift.arena.design.pair_probabilities`,
from the human battles so far), ``uniform``: equal -- renormalised over the pairs that still have a
battle for this person, then a prompt uniformly among that pair's battles still open to them. The
probability of the whole draw, ``q = pi(pair) / open prompts``, is kept with the assignment and with
the judgment, and the leaderboard weights each human battle by ``1 / (T q)`` (``T`` human battles):
its weighted sums estimate sums over every (prompt, pair), whatever the rule did. Approximation: ``q``
is the probability among the battles still open to the person; while each person judges a small share
of any pair's prompts that is the probability among all of them.

**Blind.** Each model's output for a prompt is fixed, so a battle that shows a person a text whose model
was named to them after an earlier vote is not blind. Such battles are never drawn for that person
(:meth:`ArenaState.blind`; an output is known by its exact text): the pair is drawn among the pairs
that still have a battle they can be given blind, and the prompt among those. The ``q`` stored counts the
held-back battles in the pair's open prompts: which prompts are held back follows from the person's own
earlier draws, uniform over prompts and independent of any verdict, so the battle drawn stands for them
too and every pair keeps the weight it would have without the reveals (the probability among the blind
ones alone would shrink the pairs' weights to about 0.3 of what they estimate in an 8-model test, and
unevenly). Each reveal holds back every battle on those two texts from the person, so the models are
named only while what they can still be given blind stays at least :data:`SLACK` times what the project
still wants (and no pair -- with ``neyman``, no stratum short of its target -- loses its last blind
battles); past that the reveal is withheld, the page says so, and the person may see those outputs
again (:func:`reveal_vote`). The decision is stored with the vote (``detail["revealed"]``).

``neyman`` (:meth:`ArenaState.target`, :func:`evalsift.arena.design`): the units are cut into strata
at creation, by pair and by what the judges said (:func:`~evalsift.arena.design.design_strata` with
``max_battles`` as the budget); a target number of human battles per stratum is recomputed after every
new battle (the pilot's proportional share first, then Neyman's rule for the rank-sets,
:func:`~evalsift.arena.design.neyman_allocation`), and the next battle comes from a stratum drawn in
proportion to how far it is below its target, a unit uniformly among its open ones. The leaderboard
weights a stratum's battles by ``N_h / n_h`` (units over battles so far) and uses the stratified
variance; the draw's probability is still stored, for the record.

**After the vote** (:func:`reveals`, :meth:`~evalsift.web.work.Workspace.reveal`): as in Chatbot Arena,
once a person's vote on a battle is stored, the answer to it names the two models (which was shown
first, which second, and what the person voted), or says that they are withheld (above); nothing before
the vote names them (``/api/v1/next`` gives the outputs only). ``annotate new --arena --blind-after-vote`` keeps them hidden after the vote
too (``reveal_after_vote: false`` in the arena settings; a project made before the setting reveals).
A vote whose models were revealed cannot be undone (a withheld one can). ``bothbad`` ("both are bad") is a fourth answer:
a tie, stored with ``detail["winner"] = "tie (bothbad)"`` as Chatbot Arena's battle files write it, so
the board counts it as a tie and the export (``annotate export --format arena``) round-trips it.

**Replays.** ``annotate export`` writes beside an arena's export its project file (settings, prompts
with their outputs, the judges' verdicts: :func:`judge_records`); ``evalsift arena --data EXPORT`` then
rebuilds this module's state from the two files and prints the live board itself (:func:`replay_board`),
for ``--format arena`` and ``--format judgments``; a pairwise table keeps no draw probabilities and is
refused, naming those forms.

**Judges.** Verdicts of judges (an LLM asked through the judge client, with its answers cached in the
store; a metric; recorded judgments) on every unit are stored with the project at creation as
judgments of kind ``judge`` (annotator = the judge's spec). They sharpen the leaderboard by PPI++
(:func:`evalsift.arena.bt.fit_bt_ppi`): valid whatever they say.

**When the question is answered.** The stop rule (``top-k:K`` or ``rank-set:S``) looks after
``first``, ``2 first``, ... human battles and at ``max_battles`` (:func:`~evalsift.arena.leaderboard.
planned_looks`), each look at ``alpha / looks`` on the first battles in the order they were stored,
so the answer is wrong with probability at most ``alpha`` (a union bound; asymptotic, as the
rank-sets). Once a look meets the rule, or ``max_battles`` human battles are in, nobody is given more.
While it is open, :func:`status` gives each system's rank-set at the looks' level beside the
``1 - alpha`` board and says why the rule has not stopped in one sentence
(:func:`~evalsift.arena.leaderboard.explain_stop`, as ``evalsift arena --stop`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arena.battles import Battles
from ..arena.design import design_strata, neyman_allocation, pair_probabilities, pilot_allocation, stratum_probabilities
from ..arena.leaderboard import _board, explain_stop, parse_stop, planned_looks, stop_met
from ..errors import DataError
from ..stats.sequential import VALUES
from ..store import OverlapCount, Project, Store
from ..store.schema import arena_pairs

ALLOCATIONS = ("active", "uniform", "neyman")
ASSUMPTION = ("each human battle was drawn by the project's rule with the probability stored with it (among the "
              "battles still open to that person, those held back to keep it blind counted; with neyman, uniformly "
              "among its stratum's open battles, weighted by the stratum's units over its battles), and people's "
              "verdicts do not depend on which battles were drawn; "
              "the judges may be anything (a poor judge lowers the gain, never the validity); intervals and "
              "rank-sets are asymptotic (normal)")
JUDGE_KIND = "judge"
"""The ``kind`` of the judges' stored verdicts in an arena project (people's are ``human``)."""


@dataclass
class ArenaState:
    """An arena project's battles as read from the store: the units (with the judges' verdicts on them)
    and the human battles in the order they were stored, with each draw's probability."""

    project: Project
    systems: list[str]
    pairs: list[tuple[str, str]]
    items: dict[str, int]  # item id -> position
    units: Battles  # one row per unit (a, b: the pair's systems), judges' columns
    last_id: int = 0
    undone: int = 0
    unit: list[int] = field(default_factory=list)  # per human battle: the unit's position
    y: list[float] = field(default_factory=list)  # per human battle: 1 = the pair's first system won
    q: list[float] = field(default_factory=list)  # per human battle: the probability it was drawn with
    looks: dict[int, list[str] | None] = field(default_factory=dict)  # stop-rule look (battles) -> the top, if met
    pair_index: dict[tuple[str, str], int] = field(default_factory=dict)
    rule: tuple[int, np.ndarray] | None = None  # (human battles, the rule's pair probabilities then): one fit per battle
    plan: tuple[int, np.ndarray] | None = None  # neyman: (human battles, the target per stratum then)
    design: tuple[np.ndarray, np.ndarray] | None = None  # neyman: (stratum per unit, units per stratum)
    texts: np.ndarray | None = None  # (prompt, system) -> the id of the output's exact text (equal texts, one id)
    known: dict[str, set[int]] = field(default_factory=dict)  # person -> ids of texts whose model they were shown
    revealed: dict[int, bool] = field(default_factory=dict)  # assignment of a vote -> whether it named the models
    bothbad: int = 0  # human battles answered "both are bad"
    count: OverlapCount | None = None  # which human verdicts count toward their battle's overlap (late extras do not)

    @property
    def settings(self) -> dict[str, Any]:
        """The project's arena settings (``alpha``, ``stop``, ``first``, ``max_battles``, ``allocation``, ``seed``,
        ``reveal_after_vote``)."""
        return self.project.settings["arena"]

    @property
    def n(self) -> int:
        """Human battles so far."""
        return len(self.y)

    @classmethod
    def load(cls, store: Store, project: Project) -> "ArenaState":
        """The state of ``project`` from the store (its items and every judgment that stands)."""
        state = cls.empty(project, store.items(project.id), undone=store.last_retraction(project.id))
        state.update(store)
        return state

    @classmethod
    def empty(cls, project: Project, rows: list[dict[str, Any]], undone: int = 0) -> "ArenaState":
        """The state of ``project`` before any judgment: its units over the items ``rows`` (in stored order,
        each with its ``outputs``, as :meth:`~evalsift.store.Store.items` gives them). :meth:`take` adds the
        judgments; a replay of an export builds the live board so (:func:`replay_board`)."""
        systems = list(project.settings["systems"])
        pairs = arena_pairs(systems)
        items = {r["item_id"]: k for k, r in enumerate(rows)}
        P = len(pairs)
        index = {s: k for k, s in enumerate(systems)}
        pa = np.array([index[a] for a, _ in pairs] * len(rows), dtype=int)
        pb = np.array([index[b] for _, b in pairs] * len(rows), dtype=int)
        n = P * len(rows)
        units = Battles.from_arrays(systems, pa, pb, np.full(n, 0.5), ids=[str(k) for k in range(n)],
                                    source=project.name)
        ids: dict[str, int] = {}  # an output is known by its exact text: equal texts are one output to a reader
        texts = np.array([[ids.setdefault("" if r["outputs"].get(s) is None else str(r["outputs"][s]), len(ids))
                           for s in systems] for r in rows], dtype=int).reshape(len(rows), len(systems))
        return cls(project, systems, pairs, items, units, undone=undone, pair_index={p: i for i, p in enumerate(pairs)},
                   texts=texts)

    def unit_texts(self, pos: np.ndarray) -> np.ndarray:
        """The ids of the two texts each unit at positions ``pos`` shows, as an array ``(2, len(pos))``."""
        pos = np.asarray(pos, dtype=int)
        k = pos // len(self.pairs)
        return np.stack([self.texts[k, self.units.a[pos]], self.texts[k, self.units.b[pos]]])

    def blind(self, pos: np.ndarray, name: str, known: set[int] | None = None) -> np.ndarray:
        """Which of the units at ``pos`` show ``name`` no text whose model was named to them (``known``:
        those texts, default the stored ones)."""
        known = self.known.get(name, set()) if known is None else known
        if not known or not len(pos):
            return np.ones(len(pos), dtype=bool)
        return ~np.isin(self.unit_texts(pos), np.fromiter(known, dtype=int)).any(axis=0)

    def position(self, item_id: str, a: str, b: str) -> tuple[int, bool] | None:
        """The unit of ``item_id`` for the pair ``a``, ``b`` and whether ``a`` is the pair's first system."""
        k = self.items.get(item_id)
        if k is None:
            return None
        pair = self.pair_index
        if (a, b) in pair:
            return k * len(self.pairs) + pair[(a, b)], True
        if (b, a) in pair:
            return k * len(self.pairs) + pair[(b, a)], False
        return None

    def update(self, store: Store) -> None:
        """Read the judgments stored since the last update."""
        self.take(store.judgments_with_ids(self.project.id, since_id=self.last_id))

    def take(self, judgments) -> None:
        """Add ``(store id, Judgment)`` pairs in the order they were stored: the judges' verdicts, the human
        battles of the draw, and which outputs each person was shown the models of (``detail["revealed"]``)."""
        sums: dict[str, dict[int, list[float]]] = {}
        for jid, j in judgments:
            self.last_id = jid
            if j.status != "done" or j.verdict not in VALUES:
                continue
            where = self.position(j.item_id, j.a, j.b)
            if where is None:
                continue
            pos, first = where
            value = VALUES[j.verdict] if first else 1.0 - VALUES[j.verdict]
            if j.kind == JUDGE_KIND:
                sums.setdefault(j.annotator, {}).setdefault(pos, []).append(value)
                continue
            detail = j.detail or {}
            if isinstance(detail.get("assignment"), int) and "revealed" in detail:
                self.revealed[detail["assignment"]] = bool(detail["revealed"])
            if detail.get("revealed"):  # the person now knows which model wrote these two texts
                self.known.setdefault(j.annotator, set()).update(self.unit_texts(np.array([pos])).ravel().tolist())
            if self.count is None:
                self.count = OverlapCount(int(self.project.settings.get("overlap", 1)))
            if not self.count.counts(j):  # a late answer past the battle's overlap: stored, never a second battle
                continue
            prob = detail.get("prob")
            if not isinstance(prob, (int, float)) or not 0 < prob <= 1:
                continue  # not drawn by the project's rule (e.g. a judgment recorded by hand): not a battle of the draw
            self.unit.append(pos)
            self.y.append(value)
            self.q.append(float(prob))
            self.bothbad += str(detail.get("winner", "")).lower() == "tie (bothbad)"
        for name, got in sums.items():  # judges' verdicts come once, at creation
            col = self.units.judges.get(name)
            col = np.full(self.units.n, np.nan) if col is None else col.copy()
            for pos, values in got.items():
                col[pos] = float(np.mean(values))
            self.units.judges[name] = col

    # ------------------------------------------------------------------ the leaderboard
    def board(self, n: int | None = None, alpha: float | None = None):
        """The leaderboard from the first ``n`` human battles (default all) at level ``alpha`` (default the
        project's), with every judge; raises DataError while some model has no battle yet."""
        n = self.n if n is None else n
        if n < 2:
            raise DataError(f"{n} human battle(s) so far: the leaderboard needs every system in a battle", field="battles")
        st = self.settings
        idx = np.asarray(self.unit[:n], dtype=int)
        strata = None
        if st["allocation"] == "neyman":  # post-stratified: a stratum's battles stand for its units
            label, N = self.strata()
            strata = label[idx]
            prob = stratum_probabilities(strata, N)
        else:
            prob = float(n) * np.asarray(self.q[:n])
        return _board(self.units, idx, prob, list(self.units.judges), list(self.units.judges),
                      st["alpha"] if alpha is None else alpha, st.get("seed", 0), "sandwich", 0, "half",
                      st["allocation"], verdicts=np.asarray(self.y[:n]), strata=strata)

    def strata(self) -> tuple[np.ndarray, np.ndarray]:
        """``neyman``: the stratum of every unit and the units per stratum, fixed by the judges' verdicts
        stored at creation and ``max_battles``."""
        if self.design is None:
            self.design = design_strata(self.units, list(self.units.judges), self.settings["max_battles"])
        return self.design

    def target(self) -> np.ndarray:
        """``neyman``: how many human battles each stratum should have by ``max_battles``, recomputed once per
        new human battle: the pilot's proportional share until every stratum has it, then Neyman's rule on
        the leaderboard so far (never below what a stratum has)."""
        if self.plan is not None and self.plan[0] == self.n:
            return self.plan[1]
        label, N = self.strata()
        budget = self.settings["max_battles"]
        idx = np.asarray(self.unit, dtype=int)
        have = np.bincount(label[idx], minlength=len(N))
        pilot = pilot_allocation(N, budget)
        if np.any(have < pilot):
            plan = np.maximum(pilot, have)
        else:
            plan = neyman_allocation(self.units, idx, np.asarray(self.y, float), label, N, list(self.units.judges),
                                     max(budget, int(have.sum())), budget, self.settings["alpha"])
        self.plan = (self.n, plan)
        return plan

    def answered(self) -> dict[str, Any]:
        """The stop rule's looks so far: ``{"rule", "met", "at", "top", "looks", "planned_looks",
        "alpha_per_look"}`` (``top``: with ``top-k``, the systems the meeting look singled out)."""
        st = self.settings
        rule, value = parse_stop(st["stop"], len(self.systems))
        looks = planned_looks(st["first"], st["max_battles"])
        a_look = st["alpha"] / len(looks)
        trail, met_at = [], None
        for look in looks:
            if look > self.n:
                break
            if look not in self.looks:
                try:
                    board = self.board(look, a_look)
                except DataError:
                    self.looks[look] = None
                else:
                    met = stop_met(rule, value, board.rank_set)
                    self.looks[look] = ([self.systems[i] for i in board.order() if board.rank_set[i, 1] <= value]
                                        if met else None)
            trail.append({"battles": look, "met": self.looks[look] is not None})
            if self.looks[look] is not None:
                met_at = look
                break
        return {"rule": st["stop"], "met": met_at is not None, "at": met_at,
                "top": self.looks[met_at] if met_at is not None and rule == "top-k" else None, "looks": trail,
                "planned_looks": looks, "alpha_per_look": a_look,
                "guarantee": f"the answer is wrong with probability at most {st['alpha']} (each of the {len(looks)} "
                             f"planned looks at {a_look:.3g}; asymptotic)"}

    def done(self, store: Store | None = None) -> str | None:
        """Why nobody is given more battles -- the stop rule is met, ``max_battles`` human battles are in, or
        (with ``store``) every battle has its judgments -- or None while the project is open."""
        if self.answered()["met"]:
            return "the question is answered"
        if self.n >= self.settings["max_battles"]:
            return "the project has all its battles"
        if store is not None and store.queue_state(self.project.id)["unfinished"] == 0:
            return "every battle has its judgments"
        return None

    # ------------------------------------------------------------------ the next battle
    def pair_probabilities(self) -> np.ndarray:
        """The rule's probability of each pair for the next battle (before restricting to one person's)."""
        P = len(self.pairs)
        if self.settings["allocation"] == "uniform":
            return np.full(P, 1.0 / P)
        if self.rule is not None and self.rule[0] == self.n:  # no battle since: the same probabilities
            return self.rule[1]
        index = {s: k for k, s in enumerate(self.systems)}
        pa = np.array([index[a] for a, _ in self.pairs])
        pb = np.array([index[b] for _, b in self.pairs])
        idx = np.asarray(self.unit, dtype=int)
        used = np.bincount(idx % P, minlength=P)
        drawn = Battles.from_arrays(self.systems, self.units.a[idx], self.units.b[idx], np.asarray(self.y, float),
                                    prob=self.n * np.asarray(self.q, float))
        q, _ = pair_probabilities(drawn, pa, pb, used)
        self.rule = (self.n, q)
        return q


def reveals(project: Project) -> bool:
    """Whether an arena project names a battle's models to the person once their vote is stored (the
    default, also for projects made before the setting); False for other projects and ``--blind-after-vote``."""
    arena = project.settings.get("arena")
    return bool(arena) and bool(arena.get("reveal_after_vote", True))


def draw(state: ArenaState, store: Store, annotator: dict[str, Any], rng) -> tuple[list[int], float] | None:
    """The next battle for ``annotator`` (``{id, name}``): ``([unit position], probability)``, or None when
    no battle is open to them. Call inside the store transaction that leases it.

    Open to a person: a battle still short of its overlap that they never had. Of those, only the ones
    that show them no output whose model was named to them after an earlier vote can be drawn
    (:meth:`ArenaState.blind`): each model's output for a prompt is fixed, so a revealed text shown again
    would be a battle with a known model. The rule's pair is drawn among the pairs with such a battle, and
    the battle uniformly among the pair's. The probability stored is the pair's times one over the pair's
    battles open to the person, those held back to keep it blind included: which prompts are held back
    follows from the person's earlier draws, uniform over prompts and blind to any verdict, so the battle
    drawn stands for all of them, and a pair keeps the weight it would have had without the reveals (with
    the probability among the blind ones only, the reveals would shrink every pair's weight, unevenly)."""
    everyone = np.asarray(store.free_units(state.project.id, annotator["id"], groups=1, group=0), dtype=int)
    free = everyone[state.blind(everyone, annotator["name"])]
    if not len(free):
        return None
    if state.settings["allocation"] == "neyman":
        return _draw_stratum(state, free, everyone, rng)
    P = len(state.pairs)
    pi = state.pair_probabilities()
    group = free % P
    open_pairs = np.unique(group)
    p = pi[open_pairs] / pi[open_pairs].sum()
    k = int(rng.choice(len(open_pairs), p=p))
    units = free[group == open_pairs[k]]
    u = units[int(rng.integers(len(units)))]
    return [int(u)], float(p[k] / np.count_nonzero(everyone % P == open_pairs[k]))


def _draw_stratum(state: ArenaState, free: np.ndarray, everyone: np.ndarray, rng) -> tuple[list[int], float]:
    """``neyman``: among the units the person can be given blind (``free``; ``everyone``: those open to
    them, the held-back ones included), a stratum drawn in proportion to how far it is below its target (in
    proportion to its size once none is below), then one of its units uniformly; the probability stored
    counts the stratum's held-back units as :func:`draw` does (the board weights by ``N_h / n_h``)."""
    label, N = state.strata()
    have = np.bincount(label[np.asarray(state.unit, dtype=int)], minlength=len(N))
    open_strata = np.unique(label[free])
    short = np.maximum(state.target()[open_strata] - have[open_strata], 0).astype(float)
    weight = short if short.sum() > 0 else N[open_strata].astype(float)
    k = int(rng.choice(len(open_strata), p=weight / weight.sum()))
    units = free[label[free] == open_strata[k]]
    return ([int(units[int(rng.integers(len(units)))])],
            float(weight[k] / weight.sum() / np.count_nonzero(label[everyone] == open_strata[k])))


SLACK = 2
"""A vote's models are named while the battles a person can still be given blind stay at least this many times
those the project still wants (:func:`reveal_vote`): the draw keeps a choice among them."""

WITHHELD = ("the models are not named for this battle: you may be shown these outputs again in a later battle, and "
            "knowing who wrote them would unblind it")
"""What the answer to a vote says when the reveal is withheld (:func:`reveal_vote`)."""


def reveal_vote(state: ArenaState, store: Store, annotator: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether the answer to ``annotator``'s vote on the assignment ``row`` names the battle's two models, in a
    project that reveals them (:func:`reveals`); decided once, before the vote is stored, and stored with it.

    A revealed output is never shown to the person again (:func:`draw`), so every reveal takes from what they
    can still be given: every open battle on the same texts. The models are named while :data:`SLACK` times as
    many battles as the project still wants (``max_battles`` less those in) stay open to the person blind
    afterwards; past that -- the pool of battles they can judge blind runs low -- the reveal is withheld
    (:data:`WITHHELD`), the outputs stay unnamed, and they may see them again. Each battle anyone judges takes
    at most one from what is left to a person, so a person who keeps voting always has a blind battle until
    the project has its battles, and the draw keeps a choice among them (with room for only as many as
    wanted, the one-person ``neyman`` arena of tests/test_web_arena.py put 0.59 of its battles on the pairs
    its rule favours; 0.67 without reveals, 0.68 with this slack). Withheld too when the reveal would leave a pair that still has a battle for
    the person with none they can be given blind (with ``neyman``: a stratum with fewer than it is short of
    its target), so the rule's draw keeps the groups it had; and when the person holds another open battle
    on one of the texts (a late vote on a lapsed lease)."""
    if not reveals(state.project):
        return False
    if row["state"] == "done" and int(row["id"]) in state.revealed:  # a vote sent again: the answer it had
        return state.revealed[int(row["id"])]
    where = state.position(row["item_id"], row["a"], row["b"] or "")
    if where is None:
        return False
    texts = set(state.unit_texts(np.array([where[0]])).ravel().tolist())
    pid, name = state.project.id, annotator["name"]
    for other in store.assignments(pid, state="leased", annotator_id=annotator["id"]):
        spot = None if other["id"] == row["id"] else state.position(other["item_id"], other["a"], other["b"] or "")
        if spot is not None and texts & set(state.unit_texts(np.array([spot[0]])).ravel().tolist()):
            return False
    free = np.asarray(store.free_units(pid, annotator["id"], groups=1, group=0), dtype=int)
    after = state.blind(free, name, state.known.get(name, set()) | texts)
    if state.settings["allocation"] == "neyman":  # a stratum keeps what it is short of its target
        label, N = state.strata()
        group, G = label[free], len(N)
        short = np.maximum(state.target() - np.bincount(label[np.asarray(state.unit, dtype=int)], minlength=G), 1)
    else:  # a pair keeps one
        group, G = free % len(state.pairs), len(state.pairs)
        short = np.ones(G, dtype=int)
    now = np.bincount(group[state.blind(free, name)], minlength=G)
    if np.any(np.bincount(group[after], minlength=G) < np.minimum(now, short)):
        return False  # it would hold back a group's last blind battles from the rule's draw
    return int(after.sum()) >= SLACK * (int(state.settings["max_battles"]) - state.n - 1)


def why_no_battle(state: ArenaState, store: Store, annotator: dict[str, Any]) -> tuple[bool, str]:
    """``(final, reason)`` when :func:`draw` finds no battle for the person: final when none they could ever be
    given is left (every battle they never had is judged, or shows them an output whose model they were
    shown), else the rest is with other people now (their leases may lapse)."""
    pid = state.project.id
    free = np.asarray(store.free_units(pid, annotator["id"], groups=1, group=0), dtype=int)
    held = np.array(sorted({int(r["unit"]) for r in store.assignments(pid, state="leased")
                            if r["unit"] is not None and r["annotator_id"] != annotator["id"]}), dtype=int)
    mine = {int(r["unit"]) for r in store.assignments(pid, annotator_id=annotator["id"]) if r["unit"] is not None}
    held = held[~np.isin(held, np.fromiter(mine, dtype=int))] if mine and len(held) else held
    if state.blind(held, annotator["name"]).any():
        return False, "no battle is open for you now (the rest are with other annotators or judged by you)"
    if len(free):
        return True, ("every battle left for you shows an output whose model you were shown after an earlier vote, "
                      "so it would not be blind; thank you for your votes")
    return True, "you have had every battle that still needs a vote"


def judge_records(store: Store, project_id: int) -> list[list[str]]:
    """The judges' verdicts stored with an arena project, ``[item_id, a, b, verdict, judge]`` each, in stored
    order: what an export's project file carries so a replay has every (prompt, pair) the live board has."""
    return [[j.item_id, j.a, j.b, j.verdict, j.annotator] for j in store.judgments(project_id)
            if j.kind == JUDGE_KIND and j.status == "done" and j.verdict in VALUES]


REPLAY_FORMS = ("--format arena (.jsonl, .csv or .tsv) or --format judgments (.jsonl)")
"""The export forms whose replay gives an arena project's live board (each human battle with its draw's probability)."""


def replay_board(doc: dict[str, Any], judgments, *, alpha: float | None = None, source: str = "the export"):
    """The live board of the arena project whose project file is ``doc`` (``annotate export`` writes it beside
    the export: the settings, every prompt with its outputs, the judges' verdicts), from the export's human
    battles ``judgments`` in the order they were stored, as :func:`~evalsift.io.pairwise.read_judgments` reads
    an arena battle file (``question_id`` the prompt, ``prob`` kept) or a judgments export -- the very board
    :meth:`ArenaState.board` gives the admin page, at the project's ``alpha`` unless given. DataError naming
    the forms that replay (:data:`REPLAY_FORMS`) when a battle carries no draw probability (a pairwise table),
    and when a battle is not one of the project's."""
    from ..oracle.base import Judgment

    p = doc["project"]
    project = Project(id=0, name=p["name"], kind=p["kind"], mode=p["mode"], settings=p["settings"],
                      selector=p.get("selector") or {}, data=p.get("data") or {}, created_at=p.get("created_at", ""))
    state = ArenaState.empty(project, doc["items"])
    judged = [Judgment(item_id=i, a=a, b=b, verdict=v, annotator=name, kind=JUDGE_KIND)
              for i, a, b, v, name in doc.get("judges") or ()]
    humans = []
    for j in judgments:
        if j.kind == JUDGE_KIND or j.status != "done":
            continue  # a judgments export holds the judges' verdicts too: the project file's are used
        detail = dict(j.detail or {})
        prompt = str(detail["question_id"]) if "question_id" in detail else j.item_id  # a battle file: ids apart
        try:
            prob = float(detail.get("prob"))
        except (TypeError, ValueError):
            prob = float("nan")
        if not 0 < prob <= 1:
            raise DataError(f"{source}: battle {j.item_id!r} carries no draw probability (prob), so the weight the "
                            f"live board of arena project {p['name']!r} gives it is unknown (a pairwise table does not "
                            f"keep it). Export the project again with {REPLAY_FORMS} to replay the live board, or move "
                            f"{source}.project.json aside to fit the battles unweighted", field="prob", item_id=j.item_id)
        if state.position(prompt, j.a, j.b) is None:
            raise DataError(f"{source}: battle {j.item_id!r} ({j.a} vs {j.b} on {prompt!r}) is not a battle of arena "
                            f"project {p['name']!r}: the export and its project file are from different projects or "
                            "exports; export again", item_id=j.item_id, field="data")
        humans.append(Judgment(item_id=prompt, a=j.a, b=j.b, verdict=j.verdict, annotator=j.annotator, kind=j.kind,
                               shown_order=j.shown_order, detail={**detail, "prob": prob}))
    state.take(list(enumerate(judged + humans, 1)))
    board = state.board(alpha=alpha)
    board.notes.append(f"the live board of arena project {p['name']!r}, replayed from {source} and its project file: "
                       f"{state.n} human battles in stored order, each weighted as the app weights it "
                       f"({state.settings['allocation']} draw), with the project's judges"
                       + (f" ({', '.join(state.units.judges)})" if state.units.judges else " (none)"))
    return board


def status(state: ArenaState, store: Store) -> dict[str, Any]:
    """The live leaderboard and the stop rule's state, for the admin page and the status API: each model's
    ``look_rank_set`` (its rank-set at the level every planned look uses) beside its ``rank_set``, and
    ``explanation`` (also ``stop["explanation"]``), why the rule has or has not stopped."""
    st = state.settings
    out: dict[str, Any] = {"systems": state.systems, "pairs": len(state.pairs), "prompts": len(state.items),
                           "human_battles": state.n, "max_battles": st["max_battles"], "alpha": st["alpha"],
                           "allocation": st["allocation"], "judges": list(state.units.judges),
                           "reveal_after_vote": bool(st.get("reveal_after_vote", True)),
                           "bothbad": state.bothbad, "votes_revealed": sum(state.revealed.values()),
                           "votes_withheld": sum(not v for v in state.revealed.values()),
                           "assumption": ASSUMPTION}
    stop = state.answered()
    out["stop"] = stop
    out["answered"] = stop["met"]
    out["closed"] = state.done(store)  # why nobody is given more battles (None while open)
    out["decided"] = out["closed"] is not None
    why = dict(stop=st["stop"], models=state.systems, alpha=st["alpha"], looks=stop["planned_looks"], n=state.n,
               met_at=stop["at"], closed=out["closed"] if out["decided"] and not stop["met"] else None)
    try:
        board = state.board()
    except DataError as e:
        out.update(models=[], reason=str(e))
        stop["explanation"] = explain_stop(**why)
        out["explanation"] = stop["explanation"]["sentence"]
        return out
    d = board.to_dict()
    # the same battles at the level every planned look uses, beside the 1 - alpha board a person reads
    at_look = state.board(alpha=stop["alpha_per_look"])
    for m in d["models"]:
        m["look_rank_set"] = [int(r) for r in at_look.rank_set[state.systems.index(m["name"])]]
    stop["explanation"] = explain_stop(**why, rank_set=board.rank_set, look_rank_set=at_look.rank_set,
                                       order=board.order())
    out["explanation"] = stop["explanation"]["sentence"]
    out.update(models=d["models"], judge_weights=d["judge_weights"], judge_agreement=d["judges"], strata=d["strata"],
               win_matrix=d["win_matrix"], model_order=d["model_order"], few_note=board.few_note(), scale=d["scale"],
               unresolved_note=d["unresolved_note"],
               coverage=f"live: per-system {1 - st['alpha']:.0%} intervals and simultaneous {1 - st['alpha']:.0%} "
                        f"rank-sets on the {state.n} human battles so far; the stop rule's looks are at "
                        f"{stop['alpha_per_look']:.3g} each")
    if stop["met"]:
        out["answer"] = (f"answered after {stop['at']} human battles: {st['stop']} holds"
                         + (f"; the top: {', '.join(stop['top'])}" if stop["top"] else ""))
    return out


__all__ = ["ALLOCATIONS", "ArenaState", "JUDGE_KIND", "REPLAY_FORMS", "SLACK", "WITHHELD", "draw", "judge_records",
           "replay_board", "reveal_vote", "reveals", "status", "why_no_battle"]
