"""Anytime-valid stop rules for "which of two systems wins the pool?" (sampling without replacement).

The pool holds ``M`` items; on item ``i`` the judge says ``a``, ``b`` or ``tie``, coded
``y_i = 1, 0, 1/2``. System ``a`` *wins the pool* when ``sum_i y_i > M / 2`` (more items won than
lost; ties count half). Items are judged in a uniformly random order without replacement (the
``random`` selector's order), one at a time, and the user may look -- and stop -- after every verdict.

**The rule** (``anytime``): two tests by betting (Waudby-Smith and Ramdas, "Estimating means of bounded
random variables by betting", JRSS-B 2024, and their "Confidence sequences for sampling without
replacement", NeurIPS 2020), one per side. For "a wins", the null is ``sum_i y_i <= M / 2``; under
it, the ``t``-th item's value has conditional mean at most

    m_t = (M / 2 - sum_{s<t} y_s) / (M - t + 1)        (the without-replacement correction)

so the capital ``K_t = prod_{s<=t} (1 + lambda_s (y_s - m_s))`` with predictable ``lambda_s >= 0``
is a nonnegative supermartingale, and by Ville's inequality ``P(sup_t K_t >= 2 / risk) <= risk / 2``.
The rule names ``a`` once ``K_t >= 2 / risk`` (symmetrically for ``b``, betting on ``1 - y``). Hence

    P(ever naming the wrong winner) <= risk,   for every pool, whenever one looks,

including a dead heat (both nulls true: at most ``risk / 2`` each). The reported risk is the
anytime-valid p-value ``min(1, 2 / max_{s<=t} K_s)`` of the leader's side. When the verdicts seen
already settle the pool (``sum_{seen} y > M / 2`` can no longer be undone), the winner is certain:
risk 0; when they settle that a side cannot win (even if every unjudged item went its way it would
at best tie), that side's risk is 1 -- so a pool judged to the end is never called for a side that
did not win it, and a dead heat seen whole names nobody.

**Bets** (``lambda``): aGRAPA, the approximate growth-rate-optimal bet of Waudby-Smith and Ramdas (their
Sec. 5.3): ``lambda_t = max(0, (mu_{t-1} - m_t) / (v_{t-1} + (mu_{t-1} - m_t)^2))``, clipped to
``c / m_t`` with ``c = 1/2`` (a factor never falls below half the capital); ``mu``, ``v`` are the
running mean and variance with a prior pseudo-observation (mean 1/2, variance 1/4). Measured
against their predictable plug-in bet on dead heats and 55/45 pools of 800 items: the same error
(both valid), more decisions within 200 labels at risk 0.05. The interval (:func:`win_rate_sequence`)
runs the same two bettors for every candidate mean, so it excludes 1/2 exactly when the rule decides.

**Predictions as a control variate** (``control``): a :class:`Predictor` guesses every item's value
from the verdicts seen so far (say, the mean verdict of its DiffUse cluster, :class:`StrataPredictor`).
Before the ``t``-th item is judged it predicts ``f_t(j)`` for every item ``j``; the bettors then see

    z_t = y_t - f_t(j_t) + F_t,     F_t = the mean of f_t over the items not yet judged

in place of ``y_t``. The next item is a uniform draw from those, so ``E[f_t(j_t) | past] = F_t`` and
``z_t`` has the same conditional mean as ``y_t``: the null means ``m_t`` and the guarantee are
unchanged, whatever the predictions (a bad predictor costs width, never validity). What changes is
the spread: ``z_t`` varies as much as ``y`` varies *within* what the predictor knows, so when
similar items get similar verdicts the capital grows faster. ``z_t`` lies in
``[F_t - max f_t, 1 + F_t - min f_t]`` over the unseen items, wider than ``[0, 1]``, and a bet
capped at ``c / (m_t - lo)`` over that range would throw the gain away when the predictions are
good (the spread of ``z`` shrinks, the worst case does not). So the cap (:func:`_cap`) keeps two
promises instead of one: a value as bad as a plain verdict against (``z = 0``) costs at most half
the capital, as without predictions, and the worst value the predictions allow costs at most
``WORST_CAP`` = 0.9 of it. Any cap below ``1 / (m_t - lo)`` keeps the capital nonnegative, so the
guarantee is untouched; with no predictions, or useless ones (a narrow range), it is the plain
cap. Measured (``benchmarks/decide/proxy_decisions.py synthetic``, 4,000-item pools, risk 0.1): at proxy
correlation 0.9 the labels fell from 0.38 to 0.30 of the no-proxy rule's. This is
post-stratification made sequential: with the clusters as strata it keeps the stratified estimate's
variance reduction while the items are still drawn at random, which is what makes it valid.

**Assumption**: the order of the items is uniformly random, drawn once (re-running on new seeds until
one names a winner voids the guarantee), and independent of the verdicts; a :class:`Predictor` uses
only the verdicts judged before each item (never the draw order or the item being judged); and a
skipped or failed judgment is missing independently of what its verdict would have been. DiffUse's
cluster representatives are *not* a random sample: this guarantee does not cover them (the rule
refuses them in a Session).

>>> y = [1.0] * 12                                   # a wins the first 12 of a 500-item pool
>>> r = anytime_risk(y, 500, risk=0.05)
>>> r.leader, r.risk < 0.05
('a', True)
>>> anytime_risk([1.0, 0.0] * 10, 500, risk=0.05).risk   # 10-10: no evidence either way
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ParameterError

VALUES = {"a": 1.0, "b": 0.0, "tie": 0.5}
BET_CAP = 0.5
WORST_CAP = 0.9  # with predictions: the most of the capital one bet may risk on the worst value they allow
STOP_RULES = ("anytime", "paper", "tie_aware")
GUARANTEES = {
    "anytime": ("valid: P(ever naming the wrong winner) <= risk for every pool, whenever one looks; assumes the "
                "items are judged in a uniformly random order (method random or diffuse_strata), or drawn with recorded "
                "probabilities (sampling active or neyman), drawn once (re-running on new seeds until one names a winner voids "
                "it), predictions that use only earlier verdicts, and that skipped or failed judgments are missing at "
                "random; the risk is about the items both systems have an output for"),
    "budget": ("valid: P(the interval misses the pool's win rate) <= risk, so P(naming the wrong winner) <= risk, for "
               "every pool, for a budget fixed before any verdict is seen and read once at its end; assumes the budget's "
               "items are a uniformly random sample (method random) drawn once, predictions that use only earlier "
               "verdicts, and that skipped or failed judgments are missing at random; the risk is about the items both "
               "systems have an output for"),
    "paper": ("heuristic (DiffUse paper): the hypergeometric bound of a fixed-size random sample, checked after "
              "every label; not a guaranteed error rate (measured false winners far above the stated risk on "
              "close pairs)"),
    "tie_aware": ("heuristic (DiffUse paper, ties left out of n): not a guaranteed error rate (measured false "
                  "winners far above the stated risk on close pairs)"),
}


@dataclass(frozen=True)
class AnytimeAssessment:
    """The anytime rule's view of the verdicts so far (see the module doc)."""

    leader: str | None  # 'a', 'b', or None when neither side has any evidence
    risk: float  # anytime-valid p-value of the leader's side (<= risk threshold: stop)
    capital_a: float  # max over time of the capital betting that a wins
    capital_b: float
    certain: bool  # the verdicts seen settle the pool whatever the rest says
    n: int
    interval: tuple[float, float]  # confidence sequence for the pool's win rate of a, at the given level


class _Side:
    """The capital betting that the pool's mean of y exceeds 1/2, updated one value at a time; the
    bettor sees ``z`` (``y``, or ``y`` adjusted by predictions) lying in ``[lo, hi]``."""

    __slots__ = ("M", "t", "s", "mean", "var_sum", "log_k", "best", "certain", "impossible")

    def __init__(self, M: int) -> None:
        self.M, self.t, self.s, self.mean, self.var_sum = M, 0, 0.0, 0.5, 0.25
        self.log_k = self.best = 0.0
        self.certain = False  # the seen values alone exceed half the pool: this side wins whatever comes
        self.impossible = False  # even if every unseen value were 1 this side could not exceed half the pool

    def update(self, y: float, z: float | None = None, lo: float = 0.0, hi: float = 1.0) -> None:
        if self.certain:
            return
        z = y if z is None else z
        t = self.t + 1
        m_t = (self.M / 2.0 - self.s) / (self.M - t + 1)
        lam = _bet(self.mean - m_t, self.var_sum / t, m_t - lo, m_t) if m_t < hi else 0.0  # m_t >= hi: z cannot beat it
        self.log_k += math.log1p(lam * (z - m_t))
        self.best = max(self.best, self.log_k)
        self.s += y
        self.var_sum += (z - self.mean) ** 2
        self.mean = (self.mean * t + z) / (t + 1)  # the plug-in mean includes the 1/2 prior as a pseudo-observation
        self.t = t
        if self.s > self.M / 2.0:  # the seen verdicts alone exceed half the pool: settled whatever comes next
            self.certain = True
        elif self.s + (self.M - t) <= self.M / 2.0:  # settled the other way: at best a dead heat
            self.impossible = True

    @property
    def capital(self) -> float:
        return math.inf if self.certain else math.exp(self.best)


def _cap(room, plain):
    """The largest bet allowed: ``BET_CAP / room`` -- a value at the bottom of its range, ``room``
    below the null mean, costs at most half the capital -- or, when predictions widened the range
    beyond a plain verdict's (``room > plain``, ``plain`` being how far a plain verdict against lies
    below the null mean), ``min(BET_CAP / plain, WORST_CAP / room)``: a value as bad as a plain
    verdict against still costs at most half the capital, and the worst value the predictions allow
    (rare when they are good) at most ``WORST_CAP`` of it. Without predictions ``room == plain`` and
    this is ``BET_CAP / room``. Scalars or arrays; no cap where ``room <= 0``."""
    if isinstance(room, float) and isinstance(plain, float):
        if room <= 0:
            return math.inf
        base = BET_CAP / room
        return max(base, min(BET_CAP / plain, WORST_CAP / room)) if room > plain > 0 else base
    room, plain = np.asarray(room, dtype=float), np.asarray(plain, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(room > 0, room, 1.0)
        base = BET_CAP / safe
        wide = (room > plain) & (plain > 0)
        widened = np.maximum(base, np.minimum(BET_CAP / np.where(plain > 0, plain, 1.0), WORST_CAP / safe))
        return np.where(room > 0, np.where(wide, widened, base), np.inf)


def _bet(edge, var, room, plain=None):
    """aGRAPA's bet ``edge / (var + edge^2)``, at least 0, capped by :func:`_cap` (``room`` (> 0): how far
    below the null mean the value can fall; ``plain``: how far a plain verdict against lies, default
    ``room``). Scalars (plain Python: the rule's hot path, one call per verdict and side) or arrays
    (the interval's candidates)."""
    plain = room if plain is None else plain
    if isinstance(edge, float) and isinstance(room, float):
        lam = max(0.0, edge / (var + edge * edge))
        return min(lam, _cap(room, float(plain)))
    lam = np.maximum(0.0, edge / (var + edge * edge))
    lam = np.minimum(lam, _cap(room, plain))
    return float(lam) if np.ndim(lam) == 0 else lam


class Predictor:
    """Guesses every pool item's verdict value (in [0, 1]) from the verdicts seen so far; used as a
    control variate by the anytime rule (module doc). It may use anything known before the labels
    (clusters, metric scores, a cheap judge) and the verdicts already seen, never the unseen ones:
    in particular not the draw order (which item comes next) nor the verdict of the item being
    judged -- the guarantee rests on the predictions being fixed before each uniform draw."""

    def predict(self, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Predictions for all items (length = pool size), given the judged ``items`` (positions)
        and their verdict ``values``."""
        raise NotImplementedError


class StrataPredictor(Predictor):
    """Each item's prediction is the mean verdict of its stratum, shrunk toward the prediction of
    the coarser stratum that contains it (``shrink`` pseudo-verdicts), from the coarsest level
    (the whole pool, shrunk toward ``prior``: 1/2, or 0 for residuals) to the finest. ``levels``: one label array per level
    (length = pool size), coarse to fine, each nested in the one before (as the cuts of one cluster
    tree are). A stratum with no verdict yet takes its parent's prediction.

    >>> p = StrataPredictor([np.array([0, 0, 1, 1])], shrink=1.0)
    >>> p.predict(np.array([0, 2]), np.array([1.0, 0.0])).round(3).tolist()
    [0.75, 0.75, 0.25, 0.25]
    """

    def __init__(self, levels: Sequence[np.ndarray], shrink: float = 4.0, prior: float = 0.5) -> None:
        if shrink <= 0:
            raise ParameterError(f"StrataPredictor: shrink must be > 0, got {shrink}", field="shrink")
        self.levels = [np.asarray(lab, dtype=int) for lab in levels]
        if len({len(lab) for lab in self.levels}) > 1:
            raise ParameterError("StrataPredictor: every level needs one label per pool item", field="levels")
        self.shrink, self.prior = float(shrink), float(prior)
        self.size = len(self.levels[0]) if self.levels else 0
        # per level, the items whose stratum is smaller than the one above it (a stratum that did not
        # split keeps its parent's prediction: its verdicts are not counted twice)
        parent = np.full(self.size, self.size)
        self._split = []
        for lab in self.levels:
            own = np.bincount(lab)[lab]
            self._split.append(own < parent)
            parent = own

    def predict(self, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        items = np.asarray(items, dtype=int)
        values = np.asarray(values, dtype=float)
        f = np.full(self.size, (self.prior + values.sum()) / (1.0 + len(values)))
        for lab, split in zip(self.levels, self._split):
            k = int(lab.max()) + 1
            sums = np.bincount(lab[items], weights=values, minlength=k)
            counts = np.bincount(lab[items], minlength=k)
            f = np.where(split, (sums[lab] + self.shrink * f) / (counts[lab] + self.shrink), f)
        return f


class ResidualPredictor(Predictor):
    """A proxy's predictions corrected by strata: ``f = clip(base + r, 0, 1)`` where ``r`` is each
    item's stratum mean of the residuals ``y - base`` over the verdicts seen (shrunk toward 0 and
    toward the coarser stratum, as :class:`StrataPredictor`). This is how a proxy (a metric, a
    cheap judge) and DiffUse's clusters combine: the proxy says what it knows about every item, the
    clusters learn where it is wrong.

    >>> class Half(Predictor):
    ...     size = 4
    ...     def predict(self, items, values): return np.full(4, 0.5)
    >>> p = ResidualPredictor(Half(), StrataPredictor([np.array([0, 0, 1, 1])], shrink=1.0))
    >>> p.predict(np.array([0, 2]), np.array([1.0, 0.0])).round(3).tolist()
    [0.75, 0.75, 0.25, 0.25]
    """

    def __init__(self, base: Predictor, strata: StrataPredictor) -> None:
        if base.size != strata.size:
            raise ParameterError(f"ResidualPredictor: the proxy covers {base.size} items, the strata {strata.size}",
                                 field="control")
        self.base, self.size = base, base.size
        self.strata = StrataPredictor(strata.levels, strata.shrink, prior=0.0)

    def predict(self, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        items = np.asarray(items, dtype=int)
        values = np.asarray(values, dtype=float)
        base = self.base.predict(items, values)
        return np.clip(base + self.strata.predict(items, values - base[items]), 0.0, 1.0)


def _weighted(y: float, item: int, f: np.ndarray, probs: np.ndarray, unseen: np.ndarray) -> tuple[float, float, float]:
    """The adjusted value of an item drawn with probability ``probs[item]`` from the candidates
    (``probs > 0``, summing to 1): ``z = F + (y - f_j) / (R p_j)`` with ``F`` the mean of ``f`` over
    the ``R`` candidates -- inverse-probability weighting, so ``E[z | past]`` is the candidates' mean
    of ``y`` whatever the probabilities -- and the range ``z`` could have taken over the candidates
    and both extreme verdicts."""
    if probs.shape != f.shape:
        raise ParameterError(f"sampling probabilities: need one per pool item ({len(f)}), got {probs.shape}",
                             field="probs")
    cand = probs > 0
    if not cand[item]:
        raise ParameterError(f"item {item} was drawn with probability 0", field="probs")
    if np.any(cand & ~unseen) or abs(float(probs.sum()) - 1.0) > 1e-6:
        raise ParameterError("sampling probabilities must sum to 1 over items not judged yet", field="probs")
    R = int(cand.sum())
    w = R * probs[cand]  # 1 for a uniform draw
    fc = f[cand]
    F = float(fc.mean())
    z = F + (y - float(f[item])) / (R * float(probs[item]))
    return z, F + float(np.min(-fc / w)), F + float(np.max((1.0 - fc) / w))


class _Adjusted:
    """The values the bettors see: ``y`` as is, or adjusted by a Predictor (module doc), with the
    range ``[lo, hi]`` each one could have taken. Fed one (item, value) at a time."""

    __slots__ = ("control", "unseen", "items", "y", "z", "lo", "hi")

    def __init__(self, pool: int, control: Predictor | None) -> None:
        self.control = control
        if control is not None and control.size != pool:
            raise ParameterError(f"the predictions cover {control.size} items, the pool has {pool}", field="control")
        self.unseen = np.ones(pool, dtype=bool) if control is not None else None
        self.items: list[int] = []
        self.y: list[float] = []
        self.z: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, y: float, item: int | None, probs: np.ndarray | None = None) -> tuple[float, float, float]:
        if self.control is None:
            if probs is not None:
                raise ParameterError("sampling probabilities need predictions (a control) to weight", field="probs")
            z, lo, hi = y, 0.0, 1.0
        else:
            if item is None:
                raise ParameterError("with predictions, every verdict needs its item (position in the pool)",
                                     field="items")
            item = int(item)
            if not 0 <= item < len(self.unseen) or not self.unseen[item]:
                raise ParameterError(f"item {item} is outside the pool or was judged already", field="items")
            f = self.control.predict(np.array(self.items, dtype=int), np.array(self.y, dtype=float))
            if probs is None:  # a uniform draw from the unseen items
                left = f[self.unseen]
                F = float(left.mean())
                z, lo, hi = y - float(f[item]) + F, F - float(left.max()), 1.0 + F - float(left.min())
            else:
                z, lo, hi = _weighted(y, item, f, np.asarray(probs, dtype=float), self.unseen)
            self.unseen[item] = False
            self.items.append(item)
        self.y.append(y)
        self.z.append(z)
        self.lo.append(lo)
        self.hi.append(hi)
        return z, lo, hi

    def estimate(self) -> float:
        """The pool's mean: the verdicts seen plus the predictions for the rest (NaN without both)."""
        if self.control is None or not self.y:
            return math.nan
        f = self.control.predict(np.array(self.items, dtype=int), np.array(self.y, dtype=float))
        return float((sum(self.y) + f[self.unseen].sum()) / len(self.unseen))


class AnytimeTest:
    """The anytime rule's state for one pool, fed one verdict value at a time (``update``); what
    :func:`anytime_risk` computes from scratch, in O(1) per verdict (O(pool) with a ``control``
    :class:`Predictor`, whose predictions adjust the values; module doc).

    >>> test = AnytimeTest(500)
    >>> for y in [1.0] * 12:
    ...     test.update(y)
    >>> test.assess(0.05).leader
    'a'
    """

    def __init__(self, pool: int, control: Predictor | None = None) -> None:
        self.pool = int(pool)
        self.control = control
        self._seen = _Adjusted(self.pool, control)
        self._a, self._b = _Side(self.pool), _Side(self.pool)

    @property
    def values(self) -> list[float]:
        """The verdict values fed so far, in order."""
        return self._seen.y

    @property
    def items(self) -> list[int]:
        """Their items (positions in the pool); recorded only with a ``control``."""
        return self._seen.items

    def update(self, y: float, item: int | None = None, probs: np.ndarray | None = None) -> None:
        """Take the next verdict value (1 a, 0 b, 1/2 tie) of ``item`` (needed with a ``control``).
        ``probs``: the probability with which every pool item could have been drawn in its place
        (active sampling; module doc); None for a uniform draw from the unjudged items."""
        if not 0 <= y <= 1:
            raise ParameterError(f"AnytimeTest: values must be in [0, 1] (1 = a wins, 0 = b wins, 1/2 = tie), got {y}")
        if len(self.values) >= self.pool:
            raise ParameterError(f"AnytimeTest: the pool has {self.pool} items; no more values can come")
        y = float(y)
        z, lo, hi = self._seen.add(y, item, probs)
        self._a.update(y, z, lo, hi)
        self._b.update(1.0 - y, 1.0 - z, 1.0 - hi, 1.0 - lo)

    def estimate(self) -> float:
        """The pool's win rate of a estimated with the predictions (the verdicts seen plus the
        predictions for the unseen items); NaN without a ``control``."""
        return self._seen.estimate()

    def assess(self, risk: float, *, interval: bool = False) -> "AnytimeAssessment":
        """Leader, anytime-valid risk and (optionally) the confidence sequence, as :func:`anytime_risk`."""
        pa = 0.0 if self._a.certain else 1.0 if self._a.impossible else min(1.0, 2.0 / self._a.capital)
        pb = 0.0 if self._b.certain else 1.0 if self._b.impossible else min(1.0, 2.0 / self._b.capital)
        if pa < pb:
            leader, r = "a", pa
        elif pb < pa:
            leader, r = "b", pb
        else:
            leader, r = None, 1.0
        return AnytimeAssessment(leader=leader, risk=float(r), capital_a=self._a.capital, capital_b=self._b.capital,
                                 certain=self._a.certain or self._b.certain, n=len(self.values),
                                 interval=_sequence(self._seen, self.pool, risk) if interval
                                 else (math.nan, math.nan))


def _capital(y: np.ndarray, M: int) -> tuple[float, bool]:
    """max_t K_t betting that mean(y) over the pool exceeds 1/2; and whether that is already certain."""
    side = _Side(M)
    for x in y:
        side.update(float(x))
    return side.capital, side.certain


def anytime_risk(values: Sequence[float], pool: int, risk: float, *, interval: bool = True,
                 items: Sequence[int] | None = None, control: Predictor | None = None) -> AnytimeAssessment:
    """The anytime rule on verdict values ``values`` (1 a, 0 b, 1/2 tie) in the order they were drawn.

    ``pool``: M, the number of items the order is drawn from; ``risk``: the level the user will stop
    at (it sizes the interval's bets). Returns the leader, its anytime-valid risk and (with
    ``interval``) a confidence sequence for the pool's win rate of ``a`` (ties half) at level ``risk``.
    With a ``control`` :class:`Predictor`, ``items`` gives each value's item (position in the pool)
    and the predictions adjust the values (module doc).
    """
    M = int(pool)
    y = np.asarray(values, dtype=float)
    if not 0 < risk < 1:
        raise ParameterError(f"anytime_risk: risk must be in (0, 1), got {risk}", field="risk")
    if y.ndim != 1 or len(y) > M:
        raise ParameterError(f"anytime_risk: need at most pool={M} values, got {y.shape}", field="values")
    if np.any((y < 0) | (y > 1)):
        raise ParameterError("anytime_risk: values must be in [0, 1] (1 = a wins, 0 = b wins, 1/2 = tie)")
    its = _items_for(y, items, control)
    test = AnytimeTest(M, control)
    for x, i in zip(y, its):
        test.update(float(x), i)
    return test.assess(risk, interval=interval)


def _items_for(y: np.ndarray, items: Sequence[int] | None, control: Predictor | None) -> list:
    if control is None:
        return [None] * len(y)
    if items is None or len(items) != len(y):
        raise ParameterError(f"with predictions (control), give the item of every value: {len(y)} values, "
                             f"{'no' if items is None else len(items)} items", field="items")
    return [int(i) for i in items]


EXACT_GRID_MAX_POOL = 50_000


def _candidates(M: int, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The candidate pool *sums* (``M`` times the pool mean) and how far the truth can lie from the
    nearest one, as a mean. With verdict values (0, 1/2, 1) the pool sum is a multiple of 1/2:
    every one is a candidate, held exactly in floating point, so the truth is always among them and
    never refuted by rounding (a coarser grid, or sums off by a rounding error, let the bettors
    refute the candidates around the truth once most of the pool is seen)."""
    if M <= EXACT_GRID_MAX_POOL:
        totals = np.arange(2 * M + 1) / 2.0
    else:
        totals = np.linspace(0.0, 1.0, 2 * EXACT_GRID_MAX_POOL + 1) * M
    halves = bool(np.all(np.isin(y, (0.0, 0.5, 1.0))))
    return totals, (0.0 if halves and M <= EXACT_GRID_MAX_POOL else 1.0 / (2 * EXACT_GRID_MAX_POOL))


def win_rate_sequence(values: Sequence[float], pool: int, level: float, *, items: Sequence[int] | None = None,
                      control: Predictor | None = None, probs: Sequence[np.ndarray | None] | None = None,
                      horizon: int | None = None) -> tuple[float, float]:
    """A confidence sequence for the pool's mean of ``values`` (the win rate of a, ties half), valid
    uniformly over time at ``level``: the candidate means m that neither bettor has refuted. For each
    candidate m, two bettors as in the anytime rule (aGRAPA bets, the without-replacement means
    ``m_t = (M m - sum_{s<t} y_s) / (M - t + 1)``), one betting the mean is above m, one below; m is
    out once either capital reaches ``2 / level`` (Ville, ``level / 2`` per side). At m = 1/2 these are
    exactly the anytime rule's two bettors, so the interval excludes 1/2 exactly when the rule's risk
    is at or below ``level``: the decision and the interval never disagree. The candidates are every
    pool mean the verdicts can give (multiples of 1 / (2M)); other values widen the interval by one
    grid step. With a ``control`` :class:`Predictor` (and ``items``), the bettors see the adjusted
    values, as the rule does; ``probs`` gives, per value, the sampling probabilities it was drawn
    with (active sampling; None entries: uniform).

    ``horizon``: bets tuned for reading the interval after ``horizon`` values (the predictable
    plug-in bets ``sqrt(2 log(2 / level) / (horizon var))`` of Waudby-Smith & Ramdas, their Sec. 3
    and Remark 1, instead of aGRAPA's growth-optimal ones): still valid at every time, narrower
    near ``horizon``, wider elsewhere. :func:`win_rate_interval` reads it at its horizon: a
    fixed-sample interval that holds its level on small, lopsided pools where the normal
    interval does not.

    Returns (low, high), the running intersection up to the last value; (0, 1) with no values.

    >>> lo, hi = win_rate_sequence([1, 1, 1, 0, 1, 1, 1, 1, 0, 1] * 4, 200, 0.1)
    >>> 0.5 < lo < 0.8 < hi < 1.0
    True
    """
    seen = _adjusted(values, pool, items, control, probs, horizon)
    return _sequence(seen, int(pool), level, horizon)


def aipw_sequence(values: Sequence[float], pool: int, level: float, *, items: Sequence[int], control: Predictor,
                  probs: Sequence[np.ndarray | None] | None = None,
                  horizon: int | None = None) -> tuple[float, float, float]:
    """:func:`win_rate_sequence` with a ``control`` and, from the same adjusted values (one pass over the
    predictions), the point estimate: the mean over steps ``t`` of ``(sum_{s<t} y_s + (M - t + 1) z_t) / M``,
    each unbiased for the pool's mean. Returns (low, high, estimate); NaN for the estimate with no values.

    >>> p = StrataPredictor([np.array([0, 0, 1, 1])], shrink=1.0)
    >>> lo, hi, est = aipw_sequence([1.0, 0.0], 4, 0.1, items=[0, 2], control=p)
    >>> lo <= est <= hi
    True
    """
    seen = _adjusted(values, pool, items, control, probs, horizon)
    low, high = _sequence(seen, int(pool), level, horizon)
    M = int(pool)
    before = np.concatenate([[0.0], np.cumsum(seen.y)[:-1]])
    steps = np.arange(len(seen.z))
    estimate = float(np.mean((before + (M - steps) * np.asarray(seen.z)) / M)) if seen.z else math.nan
    return low, high, estimate


def _adjusted(values, pool, items, control, probs, horizon) -> "_Adjusted":
    """The values as the bettors see them (checked), for :func:`win_rate_sequence` and :func:`aipw_sequence`."""
    y = np.asarray(values, dtype=float)
    seen = _Adjusted(int(pool), control)
    if probs is not None and len(probs) != len(y):
        raise ParameterError(f"probs: need one entry per value ({len(y)}), got {len(probs)}", field="probs")
    for k, (x, i) in enumerate(zip(y, _items_for(y, items, control))):
        seen.add(float(x), i, None if probs is None else probs[k])
    if horizon is not None and (isinstance(horizon, bool) or int(horizon) < 1):
        raise ParameterError(f"horizon must be a positive number of values, got {horizon!r}", field="horizon")
    return seen


def win_rate_interval(values: Sequence[float], pool: int, level: float, **kwargs) -> tuple[float, float]:
    """A fixed-sample interval for the pool's win rate after exactly these values (drawn as the
    anytime rule assumes): :func:`win_rate_sequence` with bets tuned for ``horizon = len(values)``.
    Valid at level ``1 - level`` for every pool (it is a confidence sequence, read at the horizon it
    was tuned for); use it instead of a normal interval on small or lopsided pools.
    ``kwargs``: ``items``, ``control``, ``probs`` as in :func:`win_rate_sequence`.

    >>> lo, hi = win_rate_interval([1.0] * 18 + [0.0] * 2, 80, 0.05)   # 18 of 20 for a, pool of 80
    >>> 0.6 < lo < 0.9 < hi <= 1.0
    True
    """
    return win_rate_sequence(values, pool, level, horizon=max(1, len(values)), **kwargs)


@dataclass(frozen=True)
class BudgetAssessment:
    """A fixed budget's result (:func:`budget_assessment`)."""

    leader: str | None  # 'a' or 'b' when the interval excludes 1/2 on that side, else the side it leans to, or None
    risk: float  # the p-value of "the leader does not win the pool" (<= the level: decided)
    interval: tuple[float, float]  # the fixed-sample interval for the pool's win rate of a at the level
    estimate: float  # the pool's win rate of a: verdicts seen plus the predictions (with a control), else their mean
    n: int


def budget_assessment(values: Sequence[float], pool: int, level: float, *, items: Sequence[int] | None = None,
                      control: Predictor | None = None) -> BudgetAssessment:
    """The decision a fixed budget supports: after exactly these values (a uniformly random sample of
    the pool, its size fixed in advance), :func:`win_rate_interval` at ``level`` (bets tuned for this
    sample size, with the ``control``'s predictions when given: Waudby-Smith & Ramdas 2024, Sec. 3),
    the side of 1/2 it lies on, and the p-value of that side's test -- ``min(1, 2 / K)`` with ``K``
    the largest capital its bettor reached at 1/2. ``risk <= level`` exactly when the interval
    excludes 1/2 on the leader's side: the interval and the decision never disagree.

    >>> r = budget_assessment([1.0] * 30 + [0.0] * 10 + [0.5] * 10, 500, 0.1)
    >>> r.leader, r.risk <= 0.1, r.interval[0] > 0.5
    ('a', True, True)
    """
    y = np.asarray(values, dtype=float)
    if not 0 < level < 1:
        raise ParameterError(f"budget_assessment: level must be in (0, 1), got {level}", field="risk")
    seen = _Adjusted(int(pool), control)
    for x, i in zip(y, _items_for(y, items, control)):
        seen.add(float(x), i)
    caps: list = []
    lo, hi = _sequence(seen, int(pool), level, max(1, len(y)), half=caps)
    pa, pb = (min(1.0, 2.0 * math.exp(-c)) for c in caps)
    if lo > 0.5:
        leader, r = "a", min(pa, level)
    elif hi < 0.5:
        leader, r = "b", min(pb, level)
    else:
        leader = None if pa == pb else "a" if pa < pb else "b"
        r = max(min(pa, pb), math.nextafter(level, 1.0)) if leader is not None else 1.0
    est = seen.estimate() if control is not None else (float(y.mean()) if len(y) else math.nan)
    return BudgetAssessment(leader=leader, risk=float(r), interval=(lo, hi), estimate=float(est), n=len(y))


def _sequence(seen: _Adjusted, M: int, level: float, horizon: int | None = None, *,
              half: list | None = None) -> tuple[float, float]:
    """:func:`win_rate_sequence` on values already adjusted. ``half``: a list that receives the
    largest log-capitals reached at the candidate 1/2, betting above and below (the test of the
    decision), as ``[up, down]``."""
    y = np.asarray(seen.y, dtype=float)
    if half is not None:
        half[:] = [0.0, 0.0]
    if len(y) == 0:
        return (0.0, 1.0)
    z, lows, highs = (np.asarray(a, dtype=float) for a in (seen.z, seen.lo, seen.hi))
    all_totals, slack = _candidates(M, y)
    totals = all_totals
    m = totals / M
    mid = int(np.argmin(np.abs(m - 0.5)))
    log_up = np.zeros(len(m))
    log_dn = np.zeros(len(m))
    alive = np.ones(len(m), dtype=bool)
    s, mean, var_sum = 0.0, 0.5, 0.25
    bar = math.log(2.0 / level)
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(1, len(y) + 1):
            left = totals - s  # what the unseen items must add up to, for each candidate (exact with halves)
            alive &= (left >= -slack * M) & (left <= (M - t + 1) + slack * M)  # ruled out by the seen values
            mt = np.clip(left / (M - t + 1), 0.0, 1.0)  # each candidate's conditional mean of the next value
            var = var_sum / t
            edge = mean - mt
            lo, hi, x = lows[t - 1], highs[t - 1], z[t - 1]
            if horizon is None:
                lam_up = np.where(mt >= hi, 0.0, _bet(edge, var, mt - lo, mt))  # the same bets as the rule's _Side
                lam_dn = np.where(mt <= lo, 0.0, _bet(-edge, var, hi - mt, 1.0 - mt))
            else:  # predictable plug-in bets tuned for the horizon, capped as the others
                plug = math.sqrt(2.0 * bar / (horizon * var))
                lam_up = np.where(mt >= hi, 0.0, np.minimum(plug, _cap(np.maximum(mt - lo, 1e-12), mt)))
                lam_dn = np.where(mt <= lo, 0.0, np.minimum(plug, _cap(np.maximum(hi - mt, 1e-12), 1.0 - mt)))
            log_up += np.where(alive, np.log1p(lam_up * (x - mt)), 0.0)
            log_dn += np.where(alive, np.log1p(lam_dn * (mt - x)), 0.0)
            if half is not None:
                half[0], half[1] = max(half[0], float(log_up[mid])), max(half[1], float(log_dn[mid]))
            alive &= (log_up < bar) & (log_dn < bar)
            if half is None and t % 8 == 0 and 2 * alive.sum() < len(alive):  # drop the refuted candidates:
                totals, log_up, log_dn, alive = totals[alive], log_up[alive], log_dn[alive], alive[alive]  # faster
            s += y[t - 1]
            var_sum += (x - mean) ** 2
            mean = (mean * t + x) / (t + 1)
    n = len(y)
    if n == M and slack == 0.0:  # the whole pool is judged: its win rate is known
        return (float(s) / M, float(s) / M)
    # what the last value settles too: the unseen items can add between 0 and M - n
    left = totals - s
    alive &= (left >= -slack * M) & (left <= (M - n) + slack * M)
    keep = totals[alive] / M
    if not alive.any():  # every candidate refuted (a miss, probability <= level): what is still possible
        left = all_totals - s
        keep = all_totals[(left >= -slack * M) & (left <= (M - n) + slack * M)] / M
    # rounded outward to 6 decimals, so rounding never moves the truth out
    return (math.floor(max(0.0, float(keep.min()) - slack) * 1e6) / 1e6,
            math.ceil(min(1.0, float(keep.max()) + slack) * 1e6) / 1e6)
