"""Adaptive testing: the next item to judge depends on the answers so far (``evalsift estimate``, issue 44).

One ask/tell mechanism, :class:`AdaptiveTest`, with two rules (:data:`RULES`):

- ``fisher`` -- Fluid Benchmarking's rule (Hofmann et al., COLM 2025; code ``allenai/fluid-benchmarking``):
  the next item is the not-yet-judged one with the largest 2PL Fisher information ``a^2 P (1 - P)``
  at the current ability (``fluid_benchmarking/engine.py``, ``select_mfi``; ``irt_utils.py``,
  ``fisher_information`` with ``D = 1``); the first item is chosen at ability 0 (``start_ability``
  of the README's example). The ability is the MAP under the prior ``N(0, 1)``, kept inside
  ``[-4, 4]`` (``fluid_benchmarking/estimators.py``, ``ability_estimate``: Newton on the score,
  ``method="map"``, ``mu0=0``, ``sigma0=1``, ``theta_range=(-4, 4)``); the log-posterior is concave,
  so that constrained MAP is the root of the score in the range, or the end the score points to,
  which is how it is computed here (bracketed, by Brent's method: a plain Newton step overshoots on
  steep items and was measured to land at the wrong end). The 2PL is the one evalsift fits to
  the known systems (:func:`evalsift.estimate.anchors.fit_item_model`, ``P = sigmoid(a (theta - b))``,
  the repo's parameterisation with columns ``[a, b]``). The engine takes 0/1 responses only (``engine.py``
  raises on others) and the repo's loader makes scores 0/1 with ``>= 0.5`` (``datasets.py``,
  ``load_lm_eval_results``), so non-binary scores (AlpacaEval's preferences, MQM) enter the ability as
  ``score >= the middle of the 2PL's [0, 1] scale``; the judged scores enter the estimate as they are.
  Measured against the repo's own code on ``bench estimate``'s cases (``benchmarks/estimate/fluid_peer.py``):
  the same items in the same order in all 251 cases once the responses are the same; with soft
  targets instead, AlpacaEval's MAE at 50 items was 1.67 points (1.42 binarised). The repo's engine stops at ``n_max`` items
  only; the stop at a target standard error is ours: ``se = 1 / sqrt(sum of the judged items'
  information + 1)`` (the posterior's curvature at the MAP). The paper reports the ability; evalsift's
  target is the full-benchmark mean score, so the estimate is p-IRT's (tinyBenchmarks, Sec. 3.2): the
  judged scores plus the 2PL's predictions for the rest, over the pool size. Model-based: no interval.
- ``active-cs`` (ours) -- *active sampling with an anytime-valid confidence sequence*. Each next
  item is **drawn at random** from the not-yet-judged items with probabilities

      q_t(j) = (1 - floor) * s_j / sum_k s_k + floor / R_t,    s_j^2 = P_j (1 - P_j) + (a_j P_j (1 - P_j))^2 / I_t

  (``R_t`` items left; ``P_j`` the 2PL's prediction at the current MAP ability, ``I_t`` the
  posterior information: ``s_j`` is the predicted spread of the item's score around the prediction,
  the Bernoulli part plus the ability's uncertainty), the optimal shape of active inference (Zrnic &
  Candes, "Active statistical inference", ICML 2024: sample where the predictor is unsure), mixed
  with a uniform share ``floor`` so that no weight ``1 / (R_t q_t(j))`` exceeds ``1 / floor``.
  The judged score ``y`` (mapped to [0, 1] by the score's stated range) enters as the AIPW increment

      z_t = F_t + (y_t - f_t(j_t)) / (R_t q_t(j_t)),     F_t = the mean of f_t over the R_t items left,

  with ``f_t`` the 2PL's predictions from the answers before ``t``. Whatever the predictions,
  ``E[z_t | past] = `` the mean of ``y`` over the items left, which for a candidate pool mean ``m`` is
  ``(M m - sum_{s<t} y_s) / (M - t + 1)``: exactly the without-replacement null mean the betting
  confidence sequence of :func:`evalsift.stats.sequential.win_rate_sequence` tests (it already takes
  sampling probabilities and a control; this module adds no second one). ``z_t`` is bounded:
  ``z_t in [F_t - max_j f_j / w_j, F_t + max_j (1 - f_j) / w_j]`` with ``w_j = R_t q_t(j) >= floor``,
  so every ``z_t`` lies within ``1 / floor`` of ``F_t``; the bettors' stakes are capped inside that
  range, each capital is a nonnegative martingale at the true mean, and Ville's inequality makes the
  interval hold **uniformly over time**: at whatever step the user stops, including a step chosen by
  looking at the interval (e.g. the first one narrower than a target).

  *Bets tuned for the budget* (``horizon``, default the budget): the predictable plug-in bets
  of :func:`evalsift.stats.sequential.win_rate_sequence` tuned for the step the user plans to stop
  at, instead of growth-optimal ones; still valid at every step (the bets are fixed before each
  draw), narrower near the budget. Measured on AlpacaEval (12 held-out systems x 3 seeds, 50 items):
  width 16.88 -> 15.29 points, the random design's fixed-sample t interval 15.48.

  *Why without replacement*: with a known ``q_t`` over the items left, the increment's conditional
  mean is known exactly under every candidate (above), so nothing is lost against sampling with
  replacement, no item is judged twice, and a pool judged to the end gives its exact mean. The point
  estimate is the average over steps of the unbiased ``(sum_{s<t} y_s + R_t z_t) / M`` (kept inside
  the interval).

  *Measured* (``benchmarks/estimate/adaptive_coverage.py``, two synthetic 2PL pools of 40 x 400, 200 runs per
  new system): tilting the draws (``floor`` 0.5 or 0.3) made the interval wider, not narrower, than
  uniform draws with the same control (``floor`` 1): the stakes must stay inside the increment's
  worst case, which grows as ``1 / floor``, and the 2PL's spread varies too little across items to pay
  for it. So the default is ``floor = 1`` (uniform draws; what adapts is the control, refitted after
  every answer); a smaller floor stays valid.

Both rules run the same way: :meth:`AdaptiveTest.ask` names the next item(s), :meth:`AdaptiveTest.tell`
takes a score, :meth:`AdaptiveTest.estimate` gives an :class:`evalsift.estimate.Estimate`, and
:meth:`AdaptiveTest.state` / :meth:`AdaptiveTest.from_state` are plain JSON (the resumable step
protocol of ``estimate next/tell/show --state DIR``): the draws come from ``default_rng([seed, step])``,
so a resumed test draws what an uninterrupted one would.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=30), rng.normal(size=120)
>>> Yk = (rng.random((30, 120)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
>>> t = AdaptiveTest(Yk, "active-cs", budget=20, seed=1, bounds=(0.0, 1.0))
>>> while t.ask():
...     j = t.ask()[0]
...     t.tell(j, float(rng.random() < 0.6))
>>> e = t.estimate()
>>> e.n, e.low <= e.value <= e.high
(20, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from ..stats.sequential import Predictor, aipw_sequence, win_rate_sequence
from scipy.optimize import brentq

from .estimators import Estimate, KnownSystems

RULES = ("fisher", "active-cs")
STATE_FORMAT = "evalsift-adaptive-test"
STATE_VERSION = 1
DEFAULT_FLOOR = 1.0  # measured best (benchmarks/estimate/adaptive_coverage.py): see the module doc
THETA_RANGE = (-4.0, 4.0)  # fluid-benchmarking's estimators.ability_estimate default
ASSUMPTIONS = {
    "fisher": "model-based (Fluid Benchmarking): a one-dimensional 2PL fitted to the known systems describes the new "
              "system too; the items are chosen to be informative at its ability, not at random, so no interval "
              "is claimed and the estimate is only as good as the model",
    "active-cs": "design-based: the items were drawn at random with the recorded probabilities (each at least "
                 "floor / items left) and every drawn item was judged (a skipped or failed item is missing at random); "
                 "the scores lie in the stated range; the 2PL's predictions may be anything (a bad model only "
                 "widens the interval); the interval holds at every step, whenever one stops",
}


def map_ability(a: np.ndarray, b: np.ndarray, items: Sequence[int], v: Sequence[float]) -> tuple[float, float]:
    """(MAP ability under ``N(0, 1)`` clipped to ``[-4, 4]``, posterior information) of the scores
    ``v`` (on the 2PL's [0, 1] scale) on ``items``; (0, 1) with none (the prior).

    >>> th, info = map_ability(np.ones(3), np.zeros(3), [0, 1, 2], [1.0, 1.0, 0.0])
    >>> th > 0, round(info, 3) > 1
    (True, True)
    """
    items = np.asarray(items, dtype=int)
    if items.size == 0:
        return 0.0, 1.0
    ai, bi = a[items], b[items]
    v = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)

    def score(th: float) -> float:  # d/dtheta of the log-posterior: strictly decreasing
        return float((ai * (v - 1.0 / (1.0 + np.exp(-ai * (th - bi))))).sum()) - th

    lo, hi = THETA_RANGE
    if score(lo) <= 0:
        theta = lo
    elif score(hi) >= 0:
        theta = hi
    else:  # the root inside the range (Newton alone can overshoot on steep items; a bracket cannot)
        theta = float(brentq(score, lo, hi, xtol=1e-10))
    p = 1.0 / (1.0 + np.exp(-ai * (theta - bi)))
    return theta, float((ai ** 2 * p * (1 - p)).sum() + 1.0)


class IRTPredictor(Predictor):
    """The 2PL's prediction of every item's score (on the confidence sequence's [0, 1] scale) at the
    MAP ability of the scores seen so far: the control of ``active-cs``. Values in and out are on
    the stated range's [0, 1] scale (``bounds``); the 2PL works on its own ([``lo``, ``hi``])."""

    def __init__(self, a: np.ndarray, b: np.ndarray, scale: tuple[float, float],
                 bounds: tuple[float, float]) -> None:
        self.a, self.b = a, b
        self.size = len(a)
        self.lo, self.hi = scale
        self.blo, self.bhi = bounds
        self._cache: dict[int, tuple[tuple, float, float]] = {}

    def to_irt(self, u) -> np.ndarray:
        """Values on the range's [0, 1] scale -> the 2PL's [0, 1] scale."""
        y = self.blo + (self.bhi - self.blo) * np.asarray(u, dtype=float)
        return np.clip((y - self.lo) / (self.hi - self.lo), 0.0, 1.0)

    def ability(self, items, values) -> tuple[float, float]:
        """MAP ability and posterior information from (range-scale) ``values`` on ``items``."""
        key = (tuple(int(i) for i in items), tuple(float(v) for v in values))
        hit = self._cache.get(len(key[0]))
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        th, info = map_ability(self.a, self.b, key[0], self.to_irt(list(key[1])))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[len(key[0])] = (key, th, info)
        return th, info

    def probability(self, theta: float) -> np.ndarray:
        """P_j(theta) for every item (the 2PL's scale)."""
        return 1.0 / (1.0 + np.exp(-self.a * (theta - self.b)))

    def predict(self, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        th, _ = self.ability(items, values)
        y = self.lo + (self.hi - self.lo) * self.probability(th)
        return np.clip((y - self.blo) / (self.bhi - self.blo), 0.0, 1.0)


@dataclass
class _Step:
    item: int  # position in the pool
    info: int  # how many steps' scores (a prefix) were known when it was drawn
    q: float | None  # the probability it was drawn with (active-cs)
    score: float | None = None  # the judged score, in the data's unit


class AdaptiveTest:
    """An adaptive test of one new system over the pool of the known systems' items (module doc).

    ``known``: a :class:`evalsift.estimate.ResponseMatrix` (its complete rows are the known systems;
    its ``bounds`` and item ids are used) or a K x M array of the known systems' scores. ``rule``:
    ``fisher`` or ``active-cs``. ``budget``: the most items to judge (default: the pool).
    ``alpha``: ``1 - level`` of ``active-cs``'s interval. ``floor``: ``active-cs``'s uniform share
    (every weight at most ``1 / floor``). ``target_se``: ``fisher`` stops once the ability's standard
    error is at most this; ``target_width``: ``active-cs`` stops at the first step its interval is at
    most this wide (valid: the interval holds whenever one stops). ``horizon``: ``active-cs``'s bets
    are tuned for reading the interval after this many items (default: the budget); valid at every
    step, narrowest near it. ``bounds``: the score's stated
    range (``active-cs`` needs both ends; default the matrix's). ``irt``: item parameters
    ``{"discrimination", "difficulty", "scale"}`` instead of fitting a 2PL to ``known`` (then
    ``known`` may be None and ``item_ids`` names the items).
    """

    def __init__(self, known: Any, rule: str = "active-cs", *, budget: int | None = None, seed: int = 0,
                 alpha: float = 0.1, floor: float = DEFAULT_FLOOR, target_se: float | None = None,
                 target_width: float | None = None, bounds: tuple[float | None, float | None] | None = None,
                 irt: dict[str, Any] | None = None, item_ids: Sequence[str] | None = None, fit_seed: int = 0,
                 horizon: int | None = None) -> None:
        self.rule = check_choice("rule", rule, RULES, where="AdaptiveTest")
        if irt is None:
            Yk, ids, bnds = _known_matrix(known)
            irt = item_parameters(KnownSystems(Yk, seed=fit_seed))
            item_ids = ids if item_ids is None else item_ids
            bounds = bnds if bounds is None else bounds
        a = np.asarray(irt["discrimination"], dtype=float)
        b = np.asarray(irt["difficulty"], dtype=float)
        scale = tuple(float(x) for x in irt.get("scale", (0.0, 1.0)))
        if a.shape != b.shape or a.ndim != 1 or not len(a) or not np.isfinite(a).all() or not np.isfinite(b).all():
            raise DataError("AdaptiveTest: the item parameters need one finite discrimination and difficulty per item",
                            field="irt")
        self.a, self.b, self.scale = a, b, (float(scale[0]), float(scale[1]))
        self.M = len(a)
        self.item_ids = tuple(str(i) for i in (item_ids if item_ids is not None else range(self.M)))
        if len(self.item_ids) != self.M or len(set(self.item_ids)) != self.M:
            raise DataError(f"AdaptiveTest: need {self.M} distinct item ids, got {len(self.item_ids)}", field="item_ids")
        self._pos = {s: k for k, s in enumerate(self.item_ids)}
        self.bounds = None if bounds is None else (bounds[0], bounds[1])
        if self.rule == "active-cs" and (self.bounds is None or None in self.bounds
                                         or not self.bounds[0] < self.bounds[1]):
            raise ParameterError(f"rule active-cs needs the score's stated range at both ends (bounds), got "
                                 f"{self.bounds}: its interval is for scores in a known range", field="bounds")
        if not 0 < alpha < 1:
            raise ParameterError(f"alpha must be in (0, 1), got {alpha}", field="alpha")
        if not 0 < floor <= 1:
            raise ParameterError(f"floor must be in (0, 1], got {floor}", field="floor")
        if budget is not None and (isinstance(budget, bool) or int(budget) < 1):
            raise ParameterError(f"budget must be a positive number of items, got {budget!r}", field="budget")
        self.budget = self.M if budget is None else min(int(budget), self.M)
        self.seed, self.alpha, self.floor = int(seed), float(alpha), float(floor)
        self.target_se = None if target_se is None else float(target_se)
        self.target_width = None if target_width is None else float(target_width)
        if horizon is not None and (isinstance(horizon, bool) or int(horizon) < 1):
            raise ParameterError(f"horizon must be a positive number of items, got {horizon!r}", field="horizon")
        self.horizon = None if horizon is None else int(horizon)
        self.steps: list[_Step] = []
        self._probs: list[np.ndarray] = []  # per step, the full probability vector (active-cs), not in the state
        self._predictor = IRTPredictor(self.a, self.b, self.scale, self.bounds) if self.rule == "active-cs" else None
        self._stop: str | None = None

    # ask / tell ------------------------------------------------------------------------------ #

    def _told_prefix(self) -> int:
        n = 0
        while n < len(self.steps) and self.steps[n].score is not None:
            n += 1
        return n

    def _drawn(self) -> np.ndarray:
        mask = np.zeros(self.M, dtype=bool)
        mask[[s.item for s in self.steps]] = True
        return mask

    def _unit(self, y: float) -> float:
        lo, hi = self.bounds
        return (y - lo) / (hi - lo)

    def _probabilities(self, upto: int, info: int) -> np.ndarray:
        """q for the draw at step ``upto``: over the items not drawn before it, from the scores of the
        first ``info`` steps."""
        left = np.ones(self.M, dtype=bool)
        left[[s.item for s in self.steps[:upto]]] = False
        if self.floor >= 1.0:  # uniform over the items left: (1 - floor) * shape vanishes, no ability needed
            return left / float(left.sum())
        items = [s.item for s in self.steps[:info]]
        th, I = self._predictor.ability(items, [self._unit(s.score) for s in self.steps[:info]])
        p = self._predictor.probability(th)
        dp = self.a * p * (1 - p)
        spread = np.sqrt(p * (1 - p) + dp * dp / I)
        R = int(left.sum())
        s = np.where(left, spread, 0.0)
        total = float(s.sum())
        shape = s / total if total > 0 else left / R
        q = np.where(left, (1.0 - self.floor) * shape + self.floor / R, 0.0)
        return q / q.sum()

    def done(self) -> bool:
        """True once the test has stopped: the budget is judged, or the rule's target is reached."""
        return self._stop_reason() is not None

    def _stop_reason(self) -> str | None:
        n = self._told_prefix()
        if n >= self.budget:
            return f"budget of {self.budget} items"
        if self.target_se is not None and self.rule == "fisher" and n:
            _, info = self._ability()
            if 1.0 / math.sqrt(info) <= self.target_se:
                return f"ability standard error <= {self.target_se:g}"
        if self.target_width is not None and self.rule == "active-cs" and n:
            lo, hi = self._interval(n)
            if hi - lo <= self.target_width:
                return f"interval width <= {self.target_width:g}"
        return None

    def ask(self, k: int = 1) -> list[str]:
        """The next ``k`` item ids to judge (fewer near the budget, none once :meth:`done`). Asking again
        before telling returns the items already asked and not yet told (at most ``k``), so a harness
        that restarts asks for the same items."""
        if k < 1:
            raise ParameterError(f"ask: k must be at least 1, got {k}", field="k")
        pending = [self.item_ids[s.item] for s in self.steps if s.score is None]
        if pending:
            return pending[:k]
        if self.done():
            return []
        out = []
        for _ in range(min(k, self.budget - len(self.steps))):
            out.append(self.item_ids[self._draw()])
        return out

    def _draw(self) -> int:
        t = len(self.steps)
        info = self._told_prefix()
        if self.rule == "fisher":
            th, _ = self._ability()
            p = 1.0 / (1.0 + np.exp(-self.a * (th - self.b)))
            fi = np.where(self._drawn(), -np.inf, self.a ** 2 * p * (1 - p))
            j, q = int(np.argmax(fi)), None  # ties: the first, as np.argmax in select_mfi
        else:
            probs = self._probabilities(t, info)
            u = float(np.random.default_rng([self.seed, t]).random())
            j = int(min(np.searchsorted(np.cumsum(probs), u * float(probs.sum()), side="right"), self.M - 1))
            while probs[j] == 0:  # a rounding edge at the top of the cumulative sum
                j -= 1
            q = float(probs[j])
            self._probs.append(probs)
        self.steps.append(_Step(j, info, q))
        return j

    def tell(self, item_id: str | int, score: float) -> None:
        """The judged ``score`` (the data's unit) of an item :meth:`ask` named."""
        key = str(item_id)
        if key not in self._pos:
            raise DataError(f"tell: item {item_id!r} is not in the pool", field="item", item_id=key)
        j = self._pos[key]
        step = next((s for s in self.steps if s.item == j), None)
        if step is None:
            raise DataError(f"tell: item {key!r} was not asked; tell only the items ask names", field="item",
                            item_id=key)
        if step.score is not None:
            raise DataError(f"tell: item {key!r} was told already ({step.score:g})", field="item", item_id=key)
        y = float(score)
        if not math.isfinite(y):
            raise DataError(f"tell: item {key!r} needs a finite score, got {score!r}", field="score", item_id=key)
        if self.bounds is not None:
            lo, hi = self.bounds
            if (lo is not None and y < lo) or (hi is not None and y > hi):
                raise DataError(f"tell: item {key!r} scored {y:g}, outside the score's range {self.bounds}",
                                field="score", item_id=key)
        step.score = y

    # estimates ------------------------------------------------------------------------------- #

    def _ability(self) -> tuple[float, float]:
        """``fisher``'s ability: the MAP of the told scores, each made 0/1 at the middle of the 2PL's scale
        (Fluid Benchmarking's engine takes 0/1 responses only; its loader cuts at ``>= 0.5``)."""
        told = [s for s in self.steps if s.score is not None]
        lo, hi = self.scale
        v = [float((s.score - lo) / (hi - lo) >= 0.5) for s in told]
        return map_ability(self.a, self.b, [s.item for s in told], v)

    def _interval(self, n: int) -> tuple[float, float]:
        """active-cs: the confidence sequence after the first ``n`` steps, on the [0, 1] scale."""
        steps = self.steps[:n]
        return win_rate_sequence([self._unit(s.score) for s in steps], self.M, self.alpha,
                                 items=[s.item for s in steps], control=self._predictor, probs=self._probs[:n],
                                 horizon=self.horizon or self.budget)

    def _width(self, n: int) -> float:
        """The interval's width after ``n`` steps, in the data's unit (:func:`simulate`'s bisection)."""
        lo, hi = self._interval(n)
        return (hi - lo) * (self.bounds[1] - self.bounds[0])

    def steps_to_width(self, width: float) -> int:
        """``active-cs``: the fewest of the told steps after which the interval is at most ``width`` wide (the
        data's unit), or all of them when it never is -- the step a user who stops at the first narrow enough
        interval stops at. The interval is a running intersection, so its width never grows: a bisection."""
        if self.rule != "active-cs":
            raise ParameterError("steps_to_width: only active-cs has an interval", field="rule")
        n_lo, n_hi = 1, self._told_prefix()
        if n_hi == 0 or self._width(n_hi) > width:
            return n_hi
        while n_lo < n_hi:
            mid = (n_lo + n_hi) // 2
            if self._width(mid) <= width:
                n_hi = mid
            else:
                n_lo = mid + 1
        return n_lo

    def estimate(self) -> Estimate:
        """The new system's full-benchmark score from the scores told so far (the prefix of steps
        told in order, for ``active-cs``), with ``active-cs``'s interval at level ``1 - alpha``."""
        common = dict(method=self.rule, design=self.rule, alpha=self.alpha, assumption=ASSUMPTIONS[self.rule],
                      pool_size=self.M)
        stop = self._stop_reason()
        if self.rule == "fisher":
            told = [s for s in self.steps if s.score is not None]
            th, info = self._ability()
            lo, hi = self.scale
            seen = np.zeros(self.M, dtype=bool)
            seen[[s.item for s in told]] = True
            P = 1.0 / (1.0 + np.exp(-self.a * (th - self.b)))
            total = sum((s.score - lo) / (hi - lo) for s in told) + float(P[~seen].sum())
            value = lo + (hi - lo) * total / self.M
            return Estimate(value=float(value), low=None, high=None, kind="model-based", n=len(told),
                            details={"ability": th, "ability_se": 1.0 / math.sqrt(info), "stopped": stop}, **common)
        n = self._told_prefix()
        blo, bhi = self.bounds
        if n == 0:
            return Estimate(value=math.nan, low=float(blo), high=float(bhi), kind="design-based", n=0,
                            details={"stopped": stop}, **common)
        steps = self.steps[:n]
        low, high, point = aipw_sequence([self._unit(s.score) for s in steps], self.M, self.alpha,
                                         items=[s.item for s in steps], control=self._predictor,
                                         probs=self._probs[:n], horizon=self.horizon or self.budget)
        point = min(max(point, low), high)
        return Estimate(value=blo + (bhi - blo) * point, low=blo + (bhi - blo) * low, high=blo + (bhi - blo) * high,
                        kind="design-based", n=n,
                        details={"stopped": stop, "floor": self.floor, "max_weight": 1.0 / self.floor}, **common)

    # state ----------------------------------------------------------------------------------- #

    def state(self) -> dict[str, Any]:
        """The whole test as plain JSON data (no pickle): the item parameters, the settings and every
        step (item, how many scores its draw knew, its probability, its score)."""
        return {"format": STATE_FORMAT, "version": STATE_VERSION, "rule": self.rule, "budget": self.budget,
                "seed": self.seed, "alpha": self.alpha, "floor": self.floor, "target_se": self.target_se,
                "target_width": self.target_width, "horizon": self.horizon, "bounds": None if self.bounds is None else list(self.bounds),
                "irt": {"discrimination": self.a.tolist(), "difficulty": self.b.tolist(), "scale": list(self.scale)},
                "item_ids": list(self.item_ids),
                "steps": [{"item": self.item_ids[s.item], "info": s.info, "q": s.q, "score": s.score}
                          for s in self.steps]}

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> "AdaptiveTest":
        """Rebuild a test from :meth:`state`; the probabilities of ``active-cs``'s draws are recomputed
        and must match the recorded ones (a DataError names the first step that does not: the state
        was edited, or comes from other item parameters)."""
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise DataError(f"not an adaptive test's state (format {STATE_FORMAT!r} expected)", field="format")
        if data.get("version") != STATE_VERSION:
            raise DataError(f"adaptive test state version {data.get('version')!r}; this evalsift reads version "
                            f"{STATE_VERSION}", field="version")
        try:
            bounds = data["bounds"]
            t = cls(None, data["rule"], budget=data["budget"], seed=data["seed"], alpha=data["alpha"],
                    floor=data["floor"], target_se=data["target_se"], target_width=data["target_width"],
                    horizon=data.get("horizon"),
                    bounds=None if bounds is None else tuple(bounds), irt=data["irt"], item_ids=data["item_ids"])
            steps = data["steps"]
        except (KeyError, TypeError) as e:
            raise DataError(f"adaptive test state: missing or malformed field {e}", field=str(e)) from None
        for k, s in enumerate(steps):
            try:
                j = t._pos[str(s["item"])]
                info = int(s["info"])
            except (KeyError, TypeError, ValueError):
                raise DataError(f"adaptive test state: step {k} names no item of the pool", field="steps") from None
            if not 0 <= info <= k:
                raise DataError(f"adaptive test state: step {k} has info {info}", field="steps")
            if t.rule == "active-cs":
                probs = t._probabilities(k, info)
                q = s.get("q")
                if q is None or not math.isclose(float(probs[j]), float(q), rel_tol=1e-9, abs_tol=1e-15):
                    raise DataError(f"adaptive test state: step {k}'s probability {q!r} is not the one its draw "
                                    f"had ({probs[j]:.6g})", field="steps")
                t._probs.append(probs)
            t.steps.append(_Step(j, info, None if s.get("q") is None else float(s["q"]),
                                 None if s.get("score") is None else float(s["score"])))
        return t


def item_parameters(known) -> dict[str, Any]:
    """The 2PL fitted to a :class:`evalsift.estimate.KnownSystems` (its ``irt``, on its ``lo``-``hi`` scale) as
    :class:`AdaptiveTest`'s ``irt=`` takes it: ``{"discrimination", "difficulty", "scale"}``."""
    fit = known.irt
    return {"discrimination": np.asarray(fit.discrimination, dtype=float),
            "difficulty": np.asarray(fit.difficulty, dtype=float), "scale": (known.lo, known.hi)}


def _known_matrix(known) -> tuple[np.ndarray, tuple[str, ...] | None, tuple | None]:
    from .responses import ResponseMatrix

    if isinstance(known, ResponseMatrix):
        full = np.isfinite(known.Y).all(axis=1)
        return known.Y[full], known.item_ids, known.bounds
    if known is None:
        raise ParameterError("AdaptiveTest: give the known systems' scores or the item parameters (irt=)",
                             field="known")
    Yk = np.asarray(known, dtype=float)
    if Yk.ndim != 2 or Yk.shape[0] < 2 or not np.isfinite(Yk).all():
        raise DataError(f"AdaptiveTest: need at least 2 known systems with a score on every item, got {Yk.shape}",
                        field="systems")
    return Yk, None, None


def simulate(known: Any, y: np.ndarray, rule: str, budget: int, *, seed: int = 0, stop_width: float | None = None,
             **kwargs) -> tuple[Estimate, AdaptiveTest]:
    """Run a test on a new system whose every score ``y`` (one per pool item) is known, as
    ``bench estimate`` does: ask, tell the score, until ``budget`` items or the rule's stop. With
    ``stop_width`` (``active-cs``), the user stops at the first step whose interval is at most that wide
    (found by bisection: the interval is a running intersection, so its width never grows).
    ``known``: as :class:`AdaptiveTest`, or an :class:`AdaptiveTest` whose settings (item parameters)
    are reused for a fresh test with this ``seed``."""
    if isinstance(known, AdaptiveTest):
        base = known.state()
        base.update(steps=[], seed=int(seed), budget=int(budget), rule=rule)
        for k in ("alpha", "floor", "target_se", "target_width", "horizon"):
            if k in kwargs:
                base[k] = kwargs.pop(k)
        if kwargs:
            raise ParameterError(f"simulate: unknown settings {sorted(kwargs)}")
        t = AdaptiveTest.from_state(base)
    else:
        t = AdaptiveTest(known, rule, budget=budget, seed=seed, **kwargs)
    y = np.asarray(y, dtype=float)
    while True:
        asked = t.ask()
        if not asked:
            break
        t.tell(asked[0], float(y[t._pos[asked[0]]]))
    if stop_width is not None and rule == "active-cs":
        n = t.steps_to_width(stop_width)
        del t.steps[n:], t._probs[n:]
    return t.estimate(), t



def simulate_budgets(known: Any, y: np.ndarray, rule: str, budgets: Sequence[int], *, seed: int = 0,
                     **kwargs) -> list[Estimate]:
    """The estimates a test with each of ``budgets`` gives on a new system whose every score ``y`` is
    known (``bench estimate``'s adaptive designs): one test run to the largest budget, read after its
    first ``b`` steps for each ``b``. Exact: neither rule's draws depend on the budget (the items and
    probabilities of step ``t`` come from the answers before it and ``default_rng([seed, t])``), and
    ``active-cs``'s interval after ``b`` steps uses those steps only. ``kwargs``: as
    :class:`AdaptiveTest` (not ``budget``, ``target_se``, ``target_width``: a stop rule would cut the
    runs short).

    >>> rng = np.random.default_rng(0)
    >>> Yk = (rng.random((20, 60)) < 0.6).astype(float)
    >>> [e.n for e in simulate_budgets(Yk, Yk[0], "active-cs", [5, 10], seed=3, bounds=(0.0, 1.0))]
    [5, 10]
    """
    for k in ("budget", "target_se", "target_width"):
        if kwargs.get(k) is not None:
            raise ParameterError(f"simulate_budgets: {k} is not a setting here (the budgets are)", field=k)
        kwargs.pop(k, None)
    budgets = [int(b) for b in budgets]
    if not budgets or min(budgets) < 1:
        raise ParameterError(f"simulate_budgets: need positive budgets, got {budgets}", field="budgets")
    t = AdaptiveTest(known, rule, budget=max(budgets), seed=seed, **kwargs)
    y = np.asarray(y, dtype=float)
    while True:  # as simulate, without its final estimate
        asked = t.ask()
        if not asked:
            break
        t.tell(asked[0], float(y[t._pos[asked[0]]]))
    steps, probs, budget = t.steps, t._probs, t.budget
    out = []
    try:
        for b in budgets:
            n = min(b, len(steps))
            t.steps, t._probs, t.budget = steps[:n], probs[:n], min(b, t.M)
            out.append(t.estimate())
    finally:
        t.steps, t._probs, t.budget = steps, probs, budget
    return out
