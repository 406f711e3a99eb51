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
first, which second, and what the person voted); nothing before the vote names them (``/api/v1/next``
gives the outputs only). ``annotate new --arena --blind-after-vote`` keeps them hidden after the vote
too (``reveal_after_vote: false`` in the arena settings; a project made before the setting reveals).
A vote whose models were revealed cannot be undone. ``bothbad`` ("both are bad") is a fourth answer:
a tie, stored with ``detail["winner"] = "tie (bothbad)"`` as Chatbot Arena's battle files write it, so
the board counts it as a tie and the export (``annotate export --format arena``) round-trips it.

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
from ..store import Project, Store
from ..store.schema import arena_pairs

ALLOCATIONS = ("active", "uniform", "neyman")
ASSUMPTION = ("each human battle was drawn by the project's rule with the probability stored with it (among the "
              "battles still open to that person; with neyman, uniformly among its stratum's open battles, weighted by "
              "the stratum's units over its battles), and people's verdicts do not depend on which battles were drawn; "
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
        systems = list(project.settings["systems"])
        pairs = arena_pairs(systems)
        rows = store.items(project.id)
        items = {r["item_id"]: k for k, r in enumerate(rows)}
        P = len(pairs)
        index = {s: k for k, s in enumerate(systems)}
        pa = np.array([index[a] for a, _ in pairs] * len(rows), dtype=int)
        pb = np.array([index[b] for _, b in pairs] * len(rows), dtype=int)
        n = P * len(rows)
        units = Battles.from_arrays(systems, pa, pb, np.full(n, 0.5), ids=[str(k) for k in range(n)],
                                    source=project.name)
        state = cls(project, systems, pairs, items, units, undone=store.last_retraction(project.id),
                    pair_index={p: i for i, p in enumerate(pairs)})
        state.update(store)
        return state

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
        sums: dict[str, dict[int, list[float]]] = {}
        for jid, j in store.judgments_with_ids(self.project.id, since_id=self.last_id):
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
            prob = (j.detail or {}).get("prob")
            if not isinstance(prob, (int, float)) or not 0 < prob <= 1:
                continue  # not drawn by the project's rule (e.g. a judgment recorded by hand): not a battle of the draw
            self.unit.append(pos)
            self.y.append(value)
            self.q.append(float(prob))
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


def draw(state: ArenaState, store: Store, annotator_id: int, rng) -> tuple[list[int], float] | None:
    """The next battle for an annotator: ``([unit position], probability)``, or None when no battle is
    open to them. Call inside the store transaction that leases it."""
    if state.settings["allocation"] == "neyman":
        return _draw_stratum(state, store, annotator_id, rng)
    P = len(state.pairs)
    free = store.free_units(state.project.id, annotator_id, groups=P)
    if not free:
        return None
    pi = state.pair_probabilities()
    open_pairs = np.array(sorted(free))
    p = pi[open_pairs] / pi[open_pairs].sum()
    k = int(rng.choice(len(open_pairs), p=p))
    units = store.free_units(state.project.id, annotator_id, groups=P, group=int(open_pairs[k]))
    u = units[int(rng.integers(len(units)))]
    return [u], float(p[k] / len(units))


def _draw_stratum(state: ArenaState, store: Store, annotator_id: int, rng) -> tuple[list[int], float] | None:
    """``neyman``: a stratum with a battle open to this person, drawn in proportion to how far it is below
    its target (in proportion to its size once none is below), then one of its open units uniformly."""
    free = np.asarray(store.free_units(state.project.id, annotator_id, groups=1, group=0), dtype=int)
    if not len(free):
        return None
    label, N = state.strata()
    have = np.bincount(label[np.asarray(state.unit, dtype=int)], minlength=len(N))
    open_strata = np.unique(label[free])
    short = np.maximum(state.target()[open_strata] - have[open_strata], 0).astype(float)
    weight = short if short.sum() > 0 else N[open_strata].astype(float)
    k = int(rng.choice(len(open_strata), p=weight / weight.sum()))
    units = free[label[free] == open_strata[k]]
    return [int(units[int(rng.integers(len(units)))])], float(weight[k] / weight.sum() / len(units))


def status(state: ArenaState, store: Store) -> dict[str, Any]:
    """The live leaderboard and the stop rule's state, for the admin page and the status API: each model's
    ``look_rank_set`` (its rank-set at the level every planned look uses) beside its ``rank_set``, and
    ``explanation`` (also ``stop["explanation"]``), why the rule has or has not stopped."""
    st = state.settings
    out: dict[str, Any] = {"systems": state.systems, "pairs": len(state.pairs), "prompts": len(state.items),
                           "human_battles": state.n, "max_battles": st["max_battles"], "alpha": st["alpha"],
                           "allocation": st["allocation"], "judges": list(state.units.judges),
                           "reveal_after_vote": bool(st.get("reveal_after_vote", True)),
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
               coverage=f"live: per-system {1 - st['alpha']:.0%} intervals and simultaneous {1 - st['alpha']:.0%} "
                        f"rank-sets on the {state.n} human battles so far; the stop rule's looks are at "
                        f"{stop['alpha_per_look']:.3g} each")
    if stop["met"]:
        out["answer"] = (f"answered after {stop['at']} human battles: {st['stop']} holds"
                         + (f"; the top: {', '.join(stop['top'])}" if stop["top"] else ""))
    return out


__all__ = ["ALLOCATIONS", "ArenaState", "JUDGE_KIND", "draw", "reveals", "status"]
