"""The best of many systems with as few pairwise judgments as possible (``evalsift best``).

Every pair of systems gets its own :class:`~evalsift.session.Session` -- items of the pair in a
uniformly random order (``random``, a seed per pair), the anytime rule at the pair level
``alpha = 2 * risk / K`` -- and :class:`BestOf` decides which pairs to judge next:

- ``strategy="leader"`` (default; successive elimination around a leader): each round, the
  *leader* -- the surviving system with the highest mean estimated win rate over its pairs
  (untested pairs count 1/2) -- is judged on one more item against every system it has not yet
  beaten. A system is *eliminated* once a pair's test says another system beats it. The leader is
  *named the best* once it has beaten every other system, each by a decided test. DiffUse's
  future work (choosing which pair to judge adaptively) in the form of the successive-elimination
  dueling bandits (cf. Mohankumar & Khapra, "Active evaluation", ACL 2022), with a valid rule.
- ``strategy="all_pairs"`` (the non-adaptive baseline): one more item for every undecided pair each
  round, the same rule for naming.

**Guarantee** (no assumption about the systems): P(naming a system that does not beat every other
system in its pairwise pool comparison) <= ``risk``. Why: a named system X beats every other one by a
decided test; if X does not truly beat some j, the test (X, j) named the wrong winner on X's side,
which has probability <= alpha / 2; such a j exists for every X that could be wrongly named, so the
union over the K systems gives K * alpha / 2 = risk. When nothing is named, the survivors contain
the Condorcet winner (the system that beats every other, if one exists) with probability >=
1 - risk: it is eliminated only by a wrong decision on one of its K - 1 pairs.

**A full ranking with ties** (``ranking=True``): every pair is judged until its test decides or its
pool is used up (the ``all_pairs`` schedule), each at ``alpha = risk / (K (K - 1) / 2)``, so by the
union bound P(any decided pairwise order is wrong) <= ``risk``. The systems are listed by Copeland
score (decided wins minus decided losses; ties broken by the estimated win rate), and a *line* is
drawn between two neighbours only where the one above beat the one below by a decided test;
neighbours without a line share a tier (their order is not established). The statement made is
about the decided pairs, each listed in ``pairs``.

**Pairs the judge cannot judge** (recorded verdicts that cover only some pairs, a pair without items
both systems have): reported in ``not_covered`` and skipped; the others are judged. Neither system
of such a pair can be shown to beat the other, so a system with a pair not covered is never named
the best (the leader strategy does not pick it as leader) and no line is drawn between the two in a
ranking; the guarantee is unchanged. A run fails only when no pair at all can be judged.

**Assumptions**: each pair's items are judged in a uniformly random order (the Session's ``random``
selector; the orders of different pairs are independent) and skipped or failed judgments are missing
at random. The judge must answer at once (an LLM or recorded judgments; people: use the annotation
app pair by pair).

>>> from evalsift.io import make_demo_pool
>>> from evalsift.oracle import MetricOracle
>>> res = BestOf(make_demo_pool(n_items=400), risk=0.1).run(MetricOracle("human"))
>>> res.outcome, res.best, res.labels_used < 3 * 400
('best', 'A', True)
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from .errors import DataError, OracleError, ParameterError, check_choice
from .oracle.base import Oracle
from .pool import Pool
from .proxy import resolve_proxy
from .restrict import restrict_pair
from .session import Session
from .stats import SAMPLINGS

STRATEGIES = ("leader", "all_pairs")
BEST_GUARANTEE = ("valid: P(naming a system that does not beat every other system in its pairwise pool comparison) "
                  "<= risk; each pair tested by the anytime rule at 2 * risk / K; when nothing is named, the "
                  "survivors contain the Condorcet winner (if one exists) with probability >= 1 - risk. Assumes "
                  "each pair's items are judged in a uniformly random order and that skipped or failed judgments "
                  "are missing at random")
RANKING_GUARANTEE = ("valid: P(any decided pairwise order is wrong) <= risk; each of the K (K - 1) / 2 pairs tested "
                     "by the anytime rule at risk / (K (K - 1) / 2); a line between neighbours in the ranking means "
                     "the one above beat the one below by a decided test. Assumes each pair's items are judged in a "
                     "uniformly random order and that skipped or failed judgments are missing at random")


@dataclass
class BestResult:
    """What :meth:`BestOf.run` found."""

    outcome: str  # 'best' (a system named) or 'inconclusive' (label cap reached, or a pair tied on its pool)
    best: str | None
    survivors: list[str]  # systems no decided test has beaten (contain the Condorcet winner w.p. >= 1 - risk)
    labels_used: int  # pairwise judgments with a verdict, over all pairs
    risk: float
    pair_risk: float  # alpha = 2 * risk / K, the level of each pair's test
    strategy: str
    systems: list[str]
    guarantee: str = BEST_GUARANTEE
    beaten_by: dict[str, list[str]] = field(default_factory=dict)  # system -> systems that beat it (decided)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # per pair: a, b, winner, labels, win rate, interval
    errors: int = 0
    ranking: list[dict[str, Any]] | None = None  # with ranking=True: system, wins, losses, score, tier, line_below
    not_covered: list[dict[str, str]] = field(default_factory=list)  # pairs the judge cannot judge: a, b, reason

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people."""
        head = f"{self.best} is the best" if self.outcome == "best" else "no single best"
        if self.ranking is not None:
            head = f"ranking in {self.ranking[-1]['tier']} tier(s); {head}"
        uncovered = f", {len(self.not_covered)} not covered by the judge" if self.not_covered else ""
        return (f"{head}: {self.labels_used} pairwise judgments over {len(self.systems)} systems "
                f"({sum(p['labels'] > 0 for p in self.pairs)} pairs judged{uncovered}); survivors: "
                f"{', '.join(self.survivors)}; risk {self.risk} (each pair at {self.pair_risk:.4g}; {self.strategy} "
                "strategy)")


class BestOf:
    """Successive elimination over system pairs with the anytime rule (see the module doc).

    ``pool``: the data; ``systems``: which of its systems (all when None, at least 2); ``risk``: the
    chance of naming a wrong best; ``max_labels``: the cap on pairwise judgments over all pairs
    (None: no cap but the pools); ``proxy``: a proxy spec every pair's anytime rule uses as a
    control variate (``metric:NAME``, ``judge:SPEC``, or a list of them stacked; :mod:`evalsift.proxy`),
    same guarantee; ``proxy_oracle``: the cheap judge of ``judge:SPEC`` already built (else built from
    the spec; a list aligned with several specs); ``covariates``/``recorded``: stacked columns and where
    ``position`` reads the shown orders (:func:`~evalsift.proxy.make_proxy`);
    ``sampling``/``explore``: how each pair draws its items with the proxy (:class:`~evalsift.session.Session`).
    Each pair uses the items where both systems have an output the
    oracle can judge (:func:`~evalsift.restrict.restrict_pair`).
    """

    def __init__(self, pool: Pool, systems: Sequence[str] | None = None, *, risk: float = 0.1,
                 max_labels: int | None = None, strategy: str = "leader", seed: int = 0,
                 ranking: bool = False, proxy: Any = None, proxy_oracle: Any = None,
                 covariates: Sequence[str] = (), recorded: Sequence[Any] = (),
                 sampling: str = "uniform", explore: float = 0.5) -> None:
        if isinstance(risk, bool) or not isinstance(risk, (int, float)) or not 0 < risk < 1:
            raise ParameterError(f"BestOf: risk must be in (0, 1), got {risk!r}", field="risk")
        check_choice("strategy", strategy, STRATEGIES, where="BestOf")
        if max_labels is not None and (isinstance(max_labels, bool) or not isinstance(max_labels, (int, np.integer))
                                       or max_labels < 1):
            raise ParameterError(f"BestOf: max_labels must be a positive integer, got {max_labels!r}",
                                 field="max_labels")
        self.systems = list(pool.systems if systems is None else systems)
        for s in self.systems:
            pool.system_index(s)
        twice = next((s for s in self.systems if self.systems.count(s) > 1), None)
        if twice is not None:
            times = "twice" if self.systems.count(twice) == 2 else f"{self.systems.count(twice)} times"
            raise ParameterError(f"BestOf: systems names {twice!r} {times}; name each system once", field="systems",
                                 system=twice)
        if len(self.systems) < 2:
            raise ParameterError(f"BestOf: need at least 2 distinct systems, got {self.systems}", field="systems")
        self.pool, self.risk, self.max_labels, self.strategy, self.seed = pool, float(risk), max_labels, strategy, seed
        self.ranking = bool(ranking)
        self.proxy, self.proxy_oracle = proxy, proxy_oracle
        self.covariates, self.recorded = tuple(covariates), tuple(recorded)
        check_choice("sampling", sampling, SAMPLINGS, where="BestOf")
        if sampling != "uniform" and proxy is None:
            raise ParameterError(f"BestOf: {sampling} sampling draws where a proxy is unsure; give a proxy or sampling "
                                 "'uniform'", field="sampling")
        self.sampling, self.explore = sampling, float(explore)
        K = len(self.systems)
        if self.ranking:  # every pair is decided: the all_pairs schedule, Bonferroni over the pairs
            self.strategy = "all_pairs"
            self.pair_risk = self.risk / (K * (K - 1) / 2)
        else:
            self.pair_risk = 2.0 * self.risk / K

    def _sessions(self, oracle: Oracle) -> tuple[dict[tuple[str, str], Session], list[dict[str, str]]]:
        """A Session per pair the judge can judge, and the pairs it cannot (``a``, ``b``, ``reason``:
        e.g. recorded verdicts that cover only some pairs). DataError when no pair can be judged."""
        out, empty = {}, []
        # what every pair shares (a reference metric computed, a cheap judge built) is done once
        source = None if self.proxy is None else resolve_proxy(self.pool, self.proxy, oracle=self.proxy_oracle,
                                                                  covariates=self.covariates, recorded=self.recorded)
        pool = self.pool if source is None else source.pool
        for k, (a, b) in enumerate(itertools.combinations(self.systems, 2)):
            try:
                pp = restrict_pair(pool, a, b, oracle=oracle).pool
                proxy = None
                if source is not None:  # the proxy covers every item of the pair
                    restriction, proxy = source.for_pair(a, b, pp)
                    pp = restriction.pool
            except DataError as e:
                empty.append({"a": a, "b": b, "reason": str(e)})
                continue
            out[(a, b)] = Session(pp, "random", a=a, b=b, risk=self.pair_risk, min_labels=1,
                                  max_labels=pp.n_items, seed=self.seed * 100_003 + k, proxy=proxy,
                                  sampling=self.sampling if proxy is not None else "uniform", explore=self.explore)
        if not out:
            first = empty[0]
            raise DataError(f"best: no pair of the {len(self.systems)} systems has items both systems have and the "
                            f"judge can judge (e.g. {first['reason']}). Check the judge (--oracle) and the systems "
                            "(--systems)", field="systems")
        return out, empty

    def run(self, oracle: Oracle) -> BestResult:
        """Judge pairs until a best is named, the cap is reached or nothing more can be learned."""
        sessions, not_covered = self._sessions(oracle)
        beaten_by: dict[str, set[str]] = {s: set() for s in self.systems}
        ties: set[frozenset] = set()  # pairs whose whole pool is a dead heat: neither beats the other
        # pairs the judge cannot judge: neither system can be shown to beat the other
        blocked: set[frozenset] = {frozenset((p["a"], p["b"])) for p in not_covered}
        labels = 0
        best = None

        def pair(x: str, y: str) -> Session | None:
            return sessions[(x, y)] if (x, y) in sessions else sessions.get((y, x))

        def winner(s: Session) -> str | None:
            if s.outcome != "winner":
                return None
            return s.a if s.trace[-1]["leader"] == "a" else s.b

        def beats(x: str, y: str) -> bool:
            s = pair(x, y)
            return s is not None and winner(s) == x

        def estimate(x: str) -> float:
            rates = []
            for y in self.systems:
                if y == x:
                    continue
                s = pair(x, y)
                values = [] if s is None else s.verdict_values()
                rate = float(np.mean(values)) if values else 0.5  # untested or not covered: no information
                rates.append(rate if s is None or s.a == x else 1.0 - rate)
            return float(np.mean(rates))

        def step(s: Session) -> int:
            """Judge the session's next item; returns the verdicts gained."""
            todo = s.pending()
            if not todo:
                s.advance()
                return 0
            before = s.labels_used
            for j in oracle.judge_pairs(s.pool, todo, s.a, s.b):
                s.record(j)
            if s.outstanding():
                raise OracleError(f"best needs a judge that answers at once; {getattr(oracle, 'name', oracle)!r} "
                                  "left items pending (people: use the annotation app, one pair at a time)")
            s.advance()
            return s.labels_used - before

        while True:
            for (a, b), s in sessions.items():
                w = winner(s)
                if w is not None:
                    beaten_by[b if w == a else a].add(w)
                elif s.outcome == "inconclusive":
                    ties.add(frozenset((a, b)))  # the pair's whole pool was judged without a winner
            survivors = [x for x in self.systems if not beaten_by[x]]
            named = [x for x in survivors if all(beats(x, y) for y in self.systems if y != x)]
            if named:
                best = named[0]
                if not self.ranking:
                    break
            if self.strategy == "leader":
                cand = [x for x in survivors
                        if not any(frozenset((x, y)) in ties | blocked for y in self.systems if y != x)]
                if not cand:
                    break  # every survivor ties some system on its whole pool or has a pair the judge cannot judge
                leader = max(cand, key=lambda x: (estimate(x), -self.systems.index(x)))
                todo = [pair(leader, y) for y in self.systems if y != leader and not beats(leader, y)]
            else:
                todo = [s for s in sessions.values() if not s.done]
            todo = [s for s in todo if not s.done]
            if not todo:
                break
            if self.max_labels is not None and labels + len(todo) > self.max_labels:
                break
            for s in todo:
                labels += step(s)
        pairs = []
        for (a, b), s in sessions.items():
            d = s.decision()
            pairs.append({"a": a, "b": b, "winner": d.winner if s.outcome == "winner" else None,
                          "labels": d.labels_used, "pool_size": d.pool_size, "wins_a": d.wins_a, "wins_b": d.wins_b,
                          "ties": d.ties, "win_rate_a": d.win_rate_a, "win_rate_interval": d.win_rate_interval,
                          "risk": d.risk, "errors": d.errors})
        survivors = [x for x in self.systems if not beaten_by[x]]
        return BestResult(outcome="best" if best else "inconclusive", best=best, survivors=survivors,
                          labels_used=sum(p["labels"] for p in pairs), risk=self.risk, pair_risk=self.pair_risk,
                          strategy=self.strategy, systems=list(self.systems),
                          guarantee=RANKING_GUARANTEE if self.ranking else BEST_GUARANTEE,
                          beaten_by={k: sorted(v) for k, v in beaten_by.items()}, pairs=pairs,
                          errors=sum(p["errors"] for p in pairs),
                          ranking=self._ranking(beats, estimate) if self.ranking else None, not_covered=not_covered)

    def _ranking(self, beats, estimate) -> list[dict[str, Any]]:
        """Copeland order with tiers: a line below a system only where it beat the next one (decided)."""
        rows = []
        for x in self.systems:
            wins = sum(beats(x, y) for y in self.systems if y != x)
            losses = sum(beats(y, x) for y in self.systems if y != x)
            rows.append({"system": x, "wins": wins, "losses": losses, "score": wins - losses,
                         "win_rate": estimate(x)})
        rows.sort(key=lambda r: (-r["score"], -r["win_rate"], self.systems.index(r["system"])))
        tier = 1
        for i, r in enumerate(rows):
            r["tier"] = tier
            r["line_below"] = i + 1 < len(rows) and beats(r["system"], rows[i + 1]["system"])
            tier += r["line_below"]
        return rows
