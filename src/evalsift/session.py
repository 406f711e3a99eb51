"""The adaptive loop: select, judge, check the stop rule, repeat.

:class:`Session` implements DiffUse's iterative algorithm (Ashury-Tahan et al. 2024, Algorithm 1)
for any Selector: the decision set at step ``k`` is ``selector.select(k)``. With DiffUse's tree,
going from ``k`` to ``k + 1`` clusters splits one cluster, so the decision set loses that cluster's
representative (still paid for) and gains the representatives of its two halves (one of them often
the same item, judged once). With ``random`` the set grows by one item.

The loop stops with a winner once the risk is at or below ``risk``; it stops inconclusive when the
next step would take the number of items asked for over ``max_labels`` (a hard cap: never more
requests than that), or when the pool is used up. The risk comes from the stop rule
(``risk_rule``):

- ``anytime`` (the default): valid -- P(ever naming the wrong winner) <= ``risk`` for every pool,
  however often one looks (:func:`evalsift.stats.anytime_risk`). It needs a selector whose decision
  sets are prefixes of a uniformly random order (``random``, ``diffuse_strata``); others are
  refused. With ``diffuse_strata`` the rule also uses DiffUse's clusters as strata (a control
  variate; the same guarantee, decisions sooner when the clusters explain the verdicts).
- ``paper`` and ``tie_aware``: the DiffUse paper's hypergeometric rule (:func:`evalsift.stats.pairwise_risk`),
  a heuristic: a fixed-sample bound checked after every label, on picks that are not a random sample.
  The Decision says which kind of statement its risk is (``guarantee``).

It is written ask/tell, so a synchronous oracle and people answering later drive it the same way::

    session = Session(pool, "random", a="A", b="B", risk=0.2)    # or "diffuse" with risk_rule="paper"
    while not session.done:
        items = session.pending()          # positions in session.pool to ask about now
        if not items and session.outstanding():
            break                          # every open item is out for judgment: come back later
        for j in oracle.judge_pairs(session.pool, items, session.a, session.b):
            session.record(j)              # 'pending' judgments mark an item as asked
        session.advance()                  # no-op while judgments are outstanding

:meth:`Session.run` does exactly this for any oracle.

**Judgments** (see :class:`~evalsift.oracle.base.Judgment`) are kept in the order they arrive and
never changed. What counts for an item (the vote rule, :mod:`evalsift.oracle.votes`, shared with the
replay of recorded verdicts and with a cheap judge used as a proxy):

- per annotator, the **latest** judgment supersedes that annotator's earlier ones (a correction is
  a new judgment; a later ``skipped`` withdraws the annotator's verdict);
- the item's verdict combines the annotators' current verdicts by **plurality** of 'a', 'b' and
  'tie'; a shared top count (a split, e.g. one 'a' and one 'b') is a 'tie';
- an item with no verdict whose latest judgment is ``pending`` is *outstanding* (asked, not yet
  answered: the Session waits and never asks again); one whose latest judgment is ``skipped`` (the
  judge declined) or ``error`` (the judge failed; never a verdict) is left out: the Session moves on
  without it and counts it in the Decision (``skipped``, ``errors``).

**Resume.** A Session is a deterministic function of its settings (:meth:`Session.settings`) and of
the sequence of judgments it was given: :meth:`Session.resume` rebuilds it from both, replaying the
judgments in their order, and reaches the same state and Decision. A store only has to keep the
settings and the judgments.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np

from .errors import DataError, OracleError, ParameterError, check_choice
from .oracle.base import VERDICTS, Judgment, Oracle
from .oracle.votes import VOTE_RULE, ItemVotes
from .restrict import PairRestriction, restrict_pair
from .pool import Pool
from .proxy import make_proxy
from .select import Selector, make_selector
from .select.base import Selection, _jsonable
from .stats import GUARANTEES, SAMPLINGS, STOP_RULES, active_probabilities, pairwise_risk
from .stats.active import DEFAULT_EXPLORE, proxy_strata, residual_spread, stratum_spread
from .stats.sequential import VALUES, AnytimeTest, BudgetAssessment, ResidualPredictor, budget_assessment

BIAS_NOTE = (
    "win_rate_a is the share of the decision set that favours a (ties count half). With a random order "
    "(method random) it estimates the pool's win rate without bias, and win_rate_interval is a confidence "
    "sequence for it at the stated risk. With DiffUse the decision set is not a random sample (each item "
    "stands for a cluster of a different size), so it is biased; weighted_win_rate_a weights each item by "
    "the size of its cluster (None for selectors without clusters), and no interval is given. With "
    "diffuse_strata (a random order, DiffUse's clusters as strata) weighted_win_rate_a is the verdicts seen plus "
    "each unjudged item's stratum prediction, over the pool, and the interval uses the strata too."
)
RERUN_NOTE = ("re-running on new seeds until one names a winner voids the guarantee (a dead heat re-run on 20 seeds "
              "got a winner from some seed in 84-85% of synthetic pools at risk 0.2, 30% at 0.05; "
              "docs/confidence.md)")


@dataclass
class Decision:
    """The outcome of a session: winner or inconclusive, with counts, risk, the trace and the judgments.

    ``labels_used``: items with a verdict among those the session asked for; ``skipped``: asked
    items that ended skipped, ``errors`` those whose judge failed (both left out of the counts); ``judged``: per asked item, its verdict (or status) and the
    votes behind it, so a decision can be audited.
    """

    a: str
    b: str
    outcome: str  # 'winner' | 'inconclusive' | 'waiting'
    winner: str | None
    labels_used: int
    decision_set: int
    wins_a: int
    wins_b: int
    ties: int
    risk: float
    risk_threshold: float
    risk_rule: str
    pool_size: int
    win_rate_a: float
    weighted_win_rate_a: float | None
    bias_note: str
    method: str
    params: dict[str, Any]
    seed: int
    skipped: int = 0
    errors: int = 0
    outstanding: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    guarantee: str = ""
    win_rate_interval: list[float] | None = None
    proxy: str | None = None  # the proxy whose predictions sharpened the anytime rule (e.g. metric:COMET-refA)
    assumptions: list[str] = field(default_factory=list)  # what the risk rests on: order, predictions, missing data
    vote_rule: str = VOTE_RULE
    trace: list[dict[str, Any]] = field(default_factory=list)
    judged: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def summary(self) -> str:
        """The outcome and its risk in one line, then the assumptions the risk rests on, one per line."""
        who = f"{self.winner} wins" if self.outcome == "winner" else self.outcome
        extra = (f", {self.skipped} skipped" if self.skipped else "") + (f", {self.errors} judge errors" if self.errors else "")
        kind = "valid" if self.guarantee.startswith("valid") else "a heuristic"
        kind += f", proxy {self.proxy}" if self.proxy else ""
        head = (f"{who}: {self.a} {self.wins_a} - {self.wins_b} {self.b} ({self.ties} ties) on a decision set of "
                f"{self.decision_set}; {self.labels_used} judgments used{extra}; risk {self.risk:.4f} "
                f"({self.risk_rule} rule, {kind}; threshold {self.risk_threshold})")
        return "\n".join([head, *(f"  assumes {a}" for a in self.assumptions)])


class Session:
    """Iterative pairwise comparison with a stop rule (ask/tell; see the module doc).

    ``selector`` is a registered name, an unfitted Selector, or one already fitted on the pair's
    pool (then that pool is used and ``pool`` may be None; ``a``/``b``, if given, must name the pair
    it was fitted on). With a ``pool``, the pair is restricted to the items where both systems have
    an output (:func:`evalsift.restrict.restrict_pair`; ``Session.restriction`` says what was
    dropped). ``min_labels`` is the first decision set size (the paper's n), ``max_labels`` the cap
    on items asked for (N), ``risk`` the threshold (p). ``judgments`` are replayed in order (resume).

    >>> from evalsift.io import make_demo_pool
    >>> from evalsift.oracle import MetricOracle
    >>> s = Session(make_demo_pool(n_items=300), "random", a="A", b="B", risk=0.1, max_labels=100)
    >>> d = s.run(MetricOracle("human"))
    >>> d.outcome, d.winner, d.labels_used, d.win_rate_interval  # A is the better system of the demo data
    ('winner', 'A', 68, [0.503333, 0.746667])
    """

    def __init__(self, pool: Pool | None, selector: str | Selector = "random", *, a: str | None = None,
                 b: str | None = None, risk: float = 0.2, min_labels: int = 5, max_labels: int = 200,
                 risk_rule: str = "anytime", judgments: Iterable[Judgment] | None = None, proxy: Any = None,
                 sampling: str = "uniform", explore: float = DEFAULT_EXPLORE, budget: int | None = None,
                 **selector_params: Any) -> None:
        if isinstance(risk, bool) or not isinstance(risk, (int, float)) or not 0 < risk < 1:
            raise ParameterError(f"Session: risk must be in (0, 1), got {risk!r}", field="risk")
        for name, v in (("min_labels", min_labels), ("max_labels", max_labels)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ParameterError(f"Session: {name} must be a positive integer, got {v!r}", field=name)
        if not 1 <= min_labels <= max_labels:
            raise ParameterError(f"Session: need 1 <= min_labels <= max_labels, got min_labels={min_labels}, "
                                 f"max_labels={max_labels}", field="min_labels")
        check_choice("risk_rule", risk_rule, STOP_RULES, where="Session")
        check_choice("sampling", sampling, SAMPLINGS, where="Session")
        self.restriction: PairRestriction | None = None
        self.selector = self._fitted(pool, selector, a, b, selector_params)
        if risk_rule == "anytime" and not getattr(self.selector, "random_order", False):
            raise ParameterError(f"the anytime rule's guarantee needs the items in a uniformly random order (method "
                                 f"'random'); selector {self.selector.name or type(self.selector).__name__!r} picks "
                                 "them otherwise. Use method random, or risk_rule 'paper' (the DiffUse paper's "
                                 "heuristic, no guarantee)", field="risk_rule")
        self.pool: Pool = self.selector.pool_
        self.a, self.b = self.pool.systems
        self.proxy_spec = proxy
        self._proxy = None
        if proxy is not None:
            if risk_rule != "anytime":
                raise ParameterError(f"a proxy sharpens the anytime rule; risk_rule {risk_rule!r} cannot use it. Use "
                                     "risk_rule 'anytime' or leave the proxy out", field="proxy")
            self._proxy = make_proxy(proxy, self.pool, self.a, self.b)
        self.sampling, self.explore = sampling, float(explore)
        self._draws: list[int] = []  # active sampling: the items drawn, in order
        self._drawn_with: dict[int, tuple[np.ndarray, int]] = {}  # item -> (weights, draws before it)
        self._strata = None  # neyman: the proxy's strata (its distinct values), None: bins of the prediction
        if sampling != "uniform":
            if self.control is None:
                raise ParameterError(f"{sampling} sampling draws where the predictions are unsure: give a proxy "
                                     "(e.g. metric:COMET-refA) or use method diffuse_strata, or sampling 'uniform'",
                                     field="sampling")
            active_probabilities(np.full(self.pool.n_items, 0.5), np.ones(self.pool.n_items, bool),
                                 explore=self.explore)  # checks explore
            self._rng = np.random.default_rng([int(getattr(self.selector, "seed", 0) or 0), 17])
            if sampling == "neyman":
                self._strata = proxy_strata(getattr(self._proxy, "columns", None))
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
                raise ParameterError(f"Session: budget must be a positive number of items, got {budget!r}", field="budget")
            if risk_rule != "anytime" or sampling != "uniform":
                raise ParameterError("a fixed budget judges a uniformly random sample and reads its interval once: it "
                                     "needs method random (or diffuse_strata) with the anytime rule's bettors and uniform "
                                     f"sampling, not risk_rule {risk_rule!r} / sampling {sampling!r}", field="budget")
            min_labels = max_labels = min(int(budget), self.pool.n_items)
        self.budget = None if budget is None else int(budget)
        self.risk, self.min_labels, self.max_labels, self.risk_rule = risk, int(min_labels), int(max_labels), risk_rule
        self.k = min(self.min_labels, self.pool.n_items)
        self.judgments: list[Judgment] = []
        self.trace: list[dict[str, Any]] = []
        self.outcome: str | None = None
        self._votes: dict[int, ItemVotes] = {}
        self._requested: dict[int, None] = {}  # items that entered a decision set, in order (insertion-ordered)
        self._index = {iid: i for i, iid in enumerate(self.pool.item_ids)}
        self._set = self._select(self.k)
        self._request(self._set.items)
        for j in judgments or ():
            self.record(j)
            self.advance()

    # ------------------------------------------------------------------ construction
    def _fitted(self, pool, selector, a, b, params) -> Selector:
        if isinstance(selector, Selector) and selector.is_fitted:
            return self._check_fitted_pair(pool, selector, a, b, params)
        if pool is None:
            raise ParameterError("Session needs a pool unless the selector is already fitted", field="pool")
        if a is None or b is None:
            if pool.n_systems != 2:
                raise DataError(f"Name the two systems to compare (a=..., b=...); pool {pool.name!r} has "
                                f"{pool.n_systems}: {', '.join(pool.systems[:8])}", field="a")
            a, b = pool.systems
        self.restriction = restrict_pair(pool, a, b)
        sel = make_selector(selector, **params) if isinstance(selector, str) else selector
        if params and not isinstance(selector, str):
            sel.set_params(**params)
        return sel.fit(self.restriction.pool)

    @staticmethod
    def _check_fitted_pair(pool, selector: Selector, a, b, params) -> Selector:
        fitted = selector.pool_
        if params:
            raise ParameterError(f"Session: selector parameters {sorted(params)} were given with an already fitted "
                                 "selector; set them before fitting, or pass an unfitted selector")
        if fitted.n_systems != 2:
            raise ParameterError(f"Session: the selector was fitted on {fitted.n_systems} systems "
                                 f"({', '.join(fitted.systems[:6])}); a session compares two. Fit it on "
                                 "pool.pair(a, b), or pass it unfitted.", field="selector")
        want = (a or fitted.systems[0], b or fitted.systems[1])
        if tuple(want) != tuple(fitted.systems):
            raise ParameterError(f"Session compares {want[0]!r} vs {want[1]!r}, but the selector was fitted on "
                                 f"{fitted.systems[0]!r} vs {fitted.systems[1]!r}. Fit it on pool.pair({want[0]!r}, "
                                 f"{want[1]!r}), or pass it unfitted.", field="selector", system=want[1])
        if pool is not None:
            known = set(pool.item_ids)
            foreign = [i for i in fitted.item_ids if i not in known]
            if foreign:
                raise ParameterError(f"Session: the selector was fitted on items that are not in pool {pool.name!r} "
                                     f"({len(foreign)}, first {foreign[0]!r}); fit it on this pool's pair.",
                                     item_id=foreign[0], field="selector")
        return selector

    # ------------------------------------------------------------------ ask / tell
    @property
    def done(self) -> bool:
        """True once the session has a winner or is inconclusive."""
        return self.outcome is not None

    @property
    def labels_used(self) -> int:
        """Items asked for that have a verdict (each paid for once)."""
        votes = self._votes
        return sum(1 for i in self._requested if (v := votes.get(i)) is not None and v.combined is not None)

    def _state(self, i: int) -> str:
        votes = self._votes.get(i)
        return votes.state() if votes is not None else "new"

    def verdict_of(self, item: int) -> str | None:
        """The combined verdict of an item (position in ``self.pool``), None without one."""
        votes = self._votes.get(int(item))
        return None if votes is None else votes.verdict()

    def requested(self) -> list[int]:
        """Every item the session has asked about so far (positions in ``self.pool``), in order."""
        return list(self._requested)

    def decision_items(self) -> np.ndarray:
        """Positions of the current decision set."""
        return self._set.items

    def pending(self) -> list[int]:
        """Items of the current decision set to ask about now: no verdict, not out for judgment, not skipped."""
        return [] if self.done else self._open()[0]

    def outstanding(self) -> list[int]:
        """Items of the current decision set that were asked about and await a verdict."""
        return self._open()[1]

    def _open(self) -> tuple[list[int], list[int]]:
        """(pending, outstanding) of the current decision set, in one pass."""
        pending, outstanding = [], []
        votes = self._votes
        for i in self._set.items.tolist():
            v = votes.get(i)
            state = "new" if v is None else v.state()
            if state == "new":
                pending.append(i)
            elif state == "outstanding":
                outstanding.append(i)
        return pending, outstanding

    def record(self, judgment: Judgment) -> None:
        """Take one judgment (kept as given; see the module doc for how it counts)."""
        if not isinstance(judgment, Judgment):
            raise OracleError(f"record() takes a Judgment, got {type(judgment).__name__}")
        if {judgment.a, judgment.b} != {self.a, self.b}:
            raise OracleError(f"Judgment for {judgment.a!r} vs {judgment.b!r} does not belong to this session "
                              f"({self.a!r} vs {self.b!r})", item_id=judgment.item_id, system=judgment.b)
        if judgment.item_id not in self._index:
            raise OracleError(f"Judgment for unknown item {judgment.item_id!r}; it is not in pool {self.pool.name!r}",
                              item_id=judgment.item_id)
        v = judgment.verdict
        if judgment.a != self.a and v is not None:  # judged with the systems the other way round
            v = {"a": "b", "b": "a"}.get(v, v)
        self.judgments.append(judgment)
        self._votes.setdefault(self._index[judgment.item_id], ItemVotes()).add(judgment, v)

    def verdict_pairs(self) -> tuple[list[int], list[float]]:
        """(items, values): the decision set's items that have a verdict, in pick order, and their
        verdict values (a 1, b 0, tie 1/2)."""
        votes = self._votes
        pairs = [(i, VALUES[v]) for i in self._set.items.tolist() if (x := votes.get(i)) is not None
                 and (v := x.combined) is not None]
        return [i for i, _ in pairs], [y for _, y in pairs]

    def verdict_values(self) -> list[float]:
        """Verdicts of the decision set in pick order as values (a 1, b 0, tie 1/2), items without one left out."""
        return self.verdict_pairs()[1]

    @property
    def control(self):
        """The predictions the anytime rule uses as a control variate (a
        :class:`~evalsift.stats.Predictor`): the ``proxy`` (``metric:NAME``, ``judge:SPEC``), corrected
        by the selector's strata when it has them (``diffuse_strata``'s clusters:
        :class:`~evalsift.stats.ResidualPredictor`); else the strata alone; else None."""
        strata = getattr(self.selector, "control_", None)
        if self._proxy is None:
            return strata
        if strata is None:
            return self._proxy
        if getattr(self, "_combined", None) is None:
            self._combined = ResidualPredictor(self._proxy, strata)
        return self._combined

    # ------------------------------------------------------------------ active sampling
    def _spread(self, f, items, values):
        """Each item's expected squared error for the next draw: ``active``, by bins of the prediction
        shrunk toward ``f (1 - f)``; ``neyman``, by the proxy's strata (:func:`~evalsift.stats.active.stratum_spread`)."""
        if self.sampling == "neyman":
            return stratum_spread(f, items, values, self._strata)
        return residual_spread(f, items, values)

    def _select(self, k: int):
        """The decision set of size ``k``: the selector's, or (active or neyman sampling) the first ``k``
        draws, drawing more as needed, each with probabilities from the predictions of the verdicts seen."""
        if self.sampling == "uniform":
            return self.selector.select(k)
        while len(self._draws) < min(k, self.pool.n_items):
            items, values = self._drawn_verdicts()
            f = self.control.predict(np.array(items, dtype=int), np.array(values, dtype=float))
            cand = np.ones(self.pool.n_items, dtype=bool)
            cand[self._draws] = False
            e = self._spread(f, items, values)
            p = active_probabilities(f, cand, explore=self.explore, spread=e)
            j = int(self._rng.choice(self.pool.n_items, p=p))
            self._drawn_with[j] = (f, e, len(self._draws))
            self._draws.append(j)
        picked = np.array(self._draws[:k], dtype=int)
        if getattr(self, "_base", None) is None:  # the selector's own first set: its method, params and seed
            self._base = self.selector.select(min(self.min_labels, self.pool.n_items))
        base = self._base
        return Selection(items=picked, item_ids=tuple(self.pool.item_ids[i] for i in picked),
                         method=f"{base.method}+{self.sampling}", params={**base.params, "explore": self.explore},
                         seed=base.seed, budget=k)

    def _drawn_verdicts(self) -> tuple[list[int], list[float]]:
        """(items, values) of the items drawn so far that have a verdict, in draw order: what the next draw
        learns from (the decision set's, and those of items drawn ahead of it and judged already)."""
        votes = self._votes
        pairs = [(i, VALUES[v]) for i in self._draws if (x := votes.get(i)) is not None and (v := x.combined) is not None]
        return [i for i, _ in pairs], [y for _, y in pairs]

    def draw_ahead(self, total: int) -> int:
        """Active or neyman sampling: make the draws up to ``total`` now (at most ``max_labels`` and the pool),
        ahead of the decision set, so that several people can judge at once; returns the number of draws in
        all. A draw made ahead uses the verdicts of the items drawn before it that have one so far (fewer than
        the draw would see later); the anytime rule weights each verdict by the probabilities its draw was
        made with, so the guarantee holds. The decision still reads the verdicts in draw order. A Session
        that drew ahead depends on when it did, so the caller records each call (the annotation app stores
        them and replays them). Nothing is drawn for a uniform order (its order is fixed) or once decided."""
        if self.sampling == "uniform" or self.done:
            return len(self._draws)
        self._select(min(int(total), self.max_labels))
        return len(self._draws)

    def ahead(self) -> list[int]:
        """Items drawn beyond the current decision set (active or neyman sampling), in draw order."""
        return [int(i) for i in self._draws[len(self._set.items):]] if self.sampling != "uniform" else []

    def draw_probability(self, item: int) -> float | None:
        """The probability ``item`` (a position in the pool) was drawn with (active or neyman sampling); None for
        a uniform order or an item not drawn."""
        if self.sampling == "uniform" or int(item) not in self._drawn_with:
            return None
        return float(self._draw_probs(int(item))[int(item)])

    def _draw_probs(self, item: int) -> np.ndarray | None:
        """The probabilities ``item`` was drawn with (active or neyman sampling), None for a uniform order."""
        if self.sampling == "uniform":
            return None
        f, e, before = self._drawn_with[item]
        cand = np.ones(self.pool.n_items, dtype=bool)
        cand[self._draws[:before]] = False
        return active_probabilities(f, cand, explore=self.explore, spread=e)

    def _anytime_test(self) -> AnytimeTest:
        """The anytime rule's state, brought up to date (rebuilt when a verdict changed)."""
        items, values = self.verdict_pairs()
        test = getattr(self, "_anytime", None)
        if test is None or values[:len(test.values)] != test.values or (
                test.control is not None and items[:len(test.items)] != test.items):
            test = self._anytime = AnytimeTest(self.pool.n_items, self.control)
        for i, y in zip(items[len(test.values):], values[len(test.values):]):
            test.update(y, i, self._draw_probs(i))
        return test

    def _budget(self) -> BudgetAssessment:
        """The fixed budget's interval and decision on the verdicts so far (:func:`~evalsift.stats.budget_assessment`)."""
        items, values = self.verdict_pairs()
        key = (tuple(items), tuple(values))
        cached = getattr(self, "_budget_seen", None)
        if cached is None or cached[0] != key:  # the decision reads it twice (risk, interval): computed once
            self._budget_seen = (key, budget_assessment(values, self.pool.n_items, self.risk, control=self.control,
                                                        items=items if self.control is not None else None))
        return self._budget_seen[1]

    def _assess(self) -> tuple[str | None, float]:
        """(leader, risk) under the session's stop rule."""
        if self.budget is not None:
            r = self._budget()
            return r.leader, r.risk
        if self.risk_rule == "anytime":
            r = self._anytime_test().assess(self.risk)
            return r.leader, r.risk
        wa, wb, t = self._counts()
        r = pairwise_risk(wa, wb, t, self.pool.n_items, self.risk_rule)
        return r.leader, r.risk

    def _counts(self) -> tuple[int, int, int]:
        votes = self._votes
        v = [None if (x := votes.get(i)) is None else x.combined for i in self._set.items.tolist()]
        return v.count("a"), v.count("b"), v.count("tie")

    def _request(self, items) -> None:
        for i in items:
            self._requested.setdefault(int(i), None)

    def advance(self) -> bool:
        """Check the stop rule on a fully answered decision set and move on, as far as the judgments
        already recorded allow. Returns ``done``. A no-op while items are pending or outstanding."""
        while not self.done and not any(self._open()):
            wa, wb, t = self._counts()
            leader, r_risk = self._assess()
            self.trace.append({"clusters": self.k, "decision_set": len(self._set.items), "labels_used": self.labels_used,
                               "asked": len(self._requested), "wins_a": wa, "wins_b": wb, "ties": t, "risk": r_risk,
                               "leader": leader})
            if leader is not None and r_risk <= self.risk:
                self.outcome = "winner"
                break
            if self.budget is not None or self.k >= self.pool.n_items:  # a budget is read once, at its end
                self.outcome = "inconclusive"
                break
            nxt = self._select(self.k + 1)
            new = [int(i) for i in nxt.items if int(i) not in self._requested]
            if len(self._requested) + len(new) > self.max_labels:
                self.outcome = "inconclusive"
                break
            self.k += 1
            self._set = nxt
            self._request(nxt.items)
        return self.done

    def run(self, oracle: Oracle, *, retry_errors: int = 1) -> Decision:
        """Drive the loop with ``oracle`` until done, or until every open item is out for judgment
        (an asynchronous oracle answers later: then the Decision's outcome is 'waiting'). Items
        already asked are never asked again -- except that an item whose judge failed (``error``)
        is asked again, up to ``retry_errors`` times, with the next batch (the loop has moved on
        without it meanwhile; a later verdict counts from then on). Errors left at the end are
        reported in the Decision (``errors``; ``judged[...]["error"]`` gives the reason).

        Retries go first in the batch, so replaying the recorded judgments in order
        (:meth:`resume`) reaches the same state."""
        tried: dict[int, int] = {}
        while not self.done:
            todo = self.pending()
            retry = [i for i in self._requested if self._state(i) == "error" and tried.get(i, 0) < retry_errors]
            for i in retry:
                tried[i] = tried.get(i, 0) + 1
            todo = [*retry, *todo]
            if todo:
                judgments = oracle.judge_pairs(self.pool, todo, self.a, self.b)
                for j in judgments:
                    self.record(j)
                answered = {j.item_id for j in judgments}
                silent = [self.pool.item_ids[i] for i in todo if self.pool.item_ids[i] not in answered]
                if silent:  # a judge must answer for every item it is asked about (several answers are fine)
                    raise OracleError(f"oracle {getattr(oracle, 'name', oracle)!r} returned no judgment for "
                                      f"{len(silent)} of {len(todo)} items (first: {silent[0]!r})", item_id=silent[0])
            self.advance()
            if not self.done and not self.pending() and self.outstanding():
                break
        return self.decision()

    # ------------------------------------------------------------------ settings and resume
    def settings(self) -> dict[str, Any]:
        """Everything besides the pool and the judgments that determines this session (JSON-ready).
        A proxy is recorded by its spec: as given, or, for a Predictor, the spec that rebuilds it
        from the pool (a ``metric:NAME`` proxy made by :func:`~evalsift.proxy.make_proxy`); any
        other Predictor (a cheap judge's verdicts) is recorded as None."""
        sel = self.selector
        return {"a": self.a, "b": self.b, "risk": self.risk, "min_labels": self.min_labels,
                "max_labels": self.max_labels, "risk_rule": self.risk_rule,
                "proxy": (list(self.proxy_spec) if _spec_list(self.proxy_spec) else self.proxy_spec
                          if isinstance(self.proxy_spec, str) else getattr(self._proxy, "spec", None)),
                "sampling": self.sampling, "explore": self.explore, "budget": self.budget,
                "selector": {"name": sel.name or type(sel).__name__,
                             "params": {k: _jsonable(v) for k, v in sel.get_params(deep=False).items()}}}

    @classmethod
    def resume(cls, pool: Pool, settings: dict[str, Any], judgments: Iterable[Judgment]) -> "Session":
        """Rebuild a session from its :meth:`settings` and its judgments (in the order they were
        recorded). The same pool, settings and judgments give the same state and Decision.

        >>> from evalsift.io import make_demo_pool
        >>> from evalsift.oracle import MetricOracle
        >>> pool = make_demo_pool(n_items=120)
        >>> first = Session(pool, "random", a="A", b="C", risk=0.1)
        >>> d = first.run(MetricOracle("human"))
        >>> again = Session.resume(pool, first.settings(), first.judgments).decision()
        >>> (again.outcome, again.winner, again.labels_used) == (d.outcome, d.winner, d.labels_used)
        True
        """
        s = json.loads(json.dumps(settings))  # a copy, and a check that it is plain data
        spec = s.pop("selector")
        return cls(pool, spec["name"], judgments=judgments, **s, **spec.get("params", {}))

    # ------------------------------------------------------------------ result
    def decision(self) -> Decision:
        """The current Decision (outcome 'waiting' while the session is not done)."""
        wa, wb, t = self._counts()
        leader, r_risk = self._assess()
        n = wa + wb + t
        winner = None
        if self.outcome == "winner":
            winner = self.a if leader == "a" else self.b
        interval = None
        if self.budget is not None:
            interval = list(self._budget().interval)
        elif self.risk_rule == "anytime":
            lo, hi = self._anytime_test().assess(self.risk, interval=True).interval
            interval = [lo, hi]
        in_set = {int(i) for i in self._set.items}
        judged = []
        for i in self._requested:
            votes = self._votes.get(i)
            entry = {"item_id": self.pool.item_ids[i], "position": i, "in_decision_set": i in in_set,
                     "verdict": self.verdict_of(i), "state": self._state(i),
                     "votes": {} if votes is None else {ann: (j.verdict if j.status == "done" else j.status)
                                                        for ann, j in votes.latest.items()}}
            if votes is not None:
                tokens = [j.detail["usage"].get("total_tokens") or 0 for j in votes.latest.values()
                          if isinstance(j.detail.get("usage"), dict)]
                reasons = [j.detail.get("reason") for j in votes.latest.values() if j.status == "error"]
                if tokens:
                    entry["tokens"] = int(sum(tokens))
                if reasons:
                    entry["error"] = reasons[0]
            judged.append(entry)
        return Decision(
            a=self.a, b=self.b, outcome=self.outcome or "waiting", winner=winner, labels_used=self.labels_used,
            decision_set=len(self._set.items), wins_a=wa, wins_b=wb, ties=t, risk=r_risk, risk_threshold=self.risk,
            risk_rule="budget" if self.budget is not None else self.risk_rule, pool_size=self.pool.n_items, win_rate_a=(wa + 0.5 * t) / n if n else float("nan"),
            weighted_win_rate_a=self._weighted_win_rate(), bias_note=BIAS_NOTE, method=self._set.method,
            params=self._set.params, seed=self._set.seed,
            skipped=sum(self._state(i) == "skipped" for i in self._requested),
            errors=sum(self._state(i) == "error" for i in self._requested),
            outstanding=len(self.outstanding()), trace=list(self.trace), judged=judged, usage=self._usage(),
            data={} if self.restriction is None else self.restriction.to_dict(),
            guarantee=GUARANTEES["budget" if self.budget is not None else self.risk_rule], win_rate_interval=interval,
            proxy=self._proxy_name() if self._proxy is not None else None,
            assumptions=self.assumptions(winner, interval),
        )

    def _proxy_name(self) -> str | None:
        """The proxy as people read it: its spec, several specs joined by " + ", or the Predictor's name."""
        if isinstance(self.proxy_spec, str):
            return self.proxy_spec
        if _spec_list(self.proxy_spec):
            return " + ".join(self.proxy_spec)
        return getattr(self._proxy, "name", None)

    def assumptions(self, winner: str | None = None, interval: list[float] | None = None) -> list[str]:
        """What the stated risk rests on, for people (the Decision's ``assumptions``): the order of
        the items (drawn once, from the seed), the predictions (a proxy or strata must not look at
        the draw or the item being judged), and the missing data (which items the decision is about,
        and whether the ones left out could change ``winner``, given the win-rate ``interval``)."""
        out = []
        if self.risk_rule == "anytime":
            how = ("drawn one at a time with recorded probabilities" if self.sampling != "uniform"
                   else f"a uniformly random sample of {self.min_labels}, a budget fixed before any verdict and read "
                   "once at its end" if self.budget is not None else "judged in a uniformly random order")
            out.append(f"order: the items are {how}, drawn once (seed {self._set.seed}); {RERUN_NOTE}")
            control = self.control
            if control is not None:
                what = self._proxy_name() if self._proxy is not None else None
                what = what or ("DiffUse's clusters" if self._proxy is None else type(self._proxy).__name__)
                out.append(f"predictions: {what} predicts each item from the verdicts judged before it only; a custom "
                           "Predictor must not depend on the draw order or on the verdict of the item being judged")
            out.append("judgments: a skipped or failed judgment is missing independently of what its verdict "
                       "would have been")
        else:
            out.append("order: the paper's bound treats the decision set as a uniform random sample of a fixed size; "
                       "it is checked after every label and DiffUse's picks are not random: no guarantee")
        if self.restriction is not None:
            out.append(self.restriction.scope(self.pool.n_items))
            flip = self.restriction.flip_note(winner, interval, self.pool.n_items)
            if flip:
                out.append(f"missing data: {flip}")
        else:
            out.append(f"missing data: the decision is about the {self.pool.n_items} items of the pool it was given")
        return out

    def _usage(self) -> dict[str, int]:
        """Tokens of judges that report them (``detail["usage"]``), summed over every judgment, with
        ``cached_tokens``: the part of ``total_tokens`` served from the response cache (not paid now)."""
        keys = ("prompt_tokens", "completion_tokens", "total_tokens")
        rows = [j.detail for j in self.judgments if isinstance(j.detail.get("usage"), dict)]
        if not rows:
            return {}
        return {**{k: int(sum(d["usage"].get(k) or 0 for d in rows)) for k in keys},
                "cached_tokens": int(sum(d.get("cached_tokens") or 0 for d in rows)), "judgments": len(rows)}

    def _weighted_win_rate(self) -> float | None:
        """Cluster-size-weighted share of a's wins (ties half) over the judged set; with strata
        predictions (``diffuse_strata``), the verdicts seen plus each unjudged item's stratum
        prediction, over the pool; None without clusters."""
        if self.control is not None and self.risk_rule == "anytime":  # strata or a proxy: the pool estimate
            est = self._anytime_test().estimate()
            return None if math.isnan(est) else est
        sizes = self._set.cluster_sizes
        if sizes is None or self.outstanding() or self.pending():
            return None
        score = {"a": 1.0, "b": 0.0, "tie": 0.5}
        pairs = [(w, score[v]) for w, i in zip(sizes, self._set.items) if (v := self.verdict_of(int(i))) in VERDICTS]
        total = sum(w for w, _ in pairs)
        return float(sum(w * x for w, x in pairs) / total) if total > 0 else None


def _spec_list(spec: Any) -> bool:
    """True for several proxy specs (a non-empty list or tuple of strings)."""
    return isinstance(spec, (list, tuple)) and bool(spec) and all(isinstance(x, str) for x in spec)
