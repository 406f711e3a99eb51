"""The judge report's forecast: how many human labels the anytime rule needs before it decides a pair,
without and with the judge as its control variate (:func:`forecast_labels`), and the interval of their
ratio (:func:`_ratio_interval`). :mod:`evalsift.oracle.report` shows it beside the other figures.

**The forecast** (per pair, :func:`forecast_labels`): a parametric bootstrap of the joint
distribution of (human verdict, judge signal) over the pair's labelled items, in two levels. The
labelled items are resampled with replacement, n of n (a replicate of what they say); from that
replicate a pool of the pair's size is drawn with replacement (the items the judge covers: the pool
a ``compare --proxy`` run would decide on), put in a uniformly random order, and the anytime rule
(:class:`evalsift.stats.sequential.AnytimeTest`) takes the human verdicts one at a time until it
decides at ``risk`` (at most the whole pool) -- once alone and once with the judge's prediction as
the control, the :class:`~evalsift.stats.Predictor` that :func:`evalsift.proxy.make_proxy` builds on
the simulated pool as ``compare --proxy`` would (``metric:NAME``: the metric's difference,
calibrated; a verdict judge: its verdict values, calibrated), on the same order. ``draws`` runs
(default 200: 40 replicates x 5 pools, seeded) give the mean labels without and with and their ratio;
the interval is the percentile interval, over the replicates, of their ratio of mean labels, with
the runs' Monte Carlo noise (estimated within each replicate) taken out and the Monte Carlo error of
the mean added back (:func:`_ratio_interval`): it holds the uncertainty of what the labelled items
say -- ten labels give a wide one -- and narrows as they grow. (A single level, the labelled
items resampled straight to the pool's size, would repeat the labelled mix in every pool and show ten
labels as surely as two hundred.) **The forecast assumes the pair's real pool resembles its
labelled items** (the same mix of verdicts, the same agreement with the judge).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from ..pool import Pool
from ..proxy import make_proxy
from ..stats.sequential import AnytimeTest
from .report_data import ResolvedJudge, _PairData

NAN = float("nan")
FORECAST_ASSUMPTION = ("the forecast resamples each pair's labelled items to a pool of the pair's size: it assumes "
                       "the pair's real pool resembles its labelled items (the same mix of verdicts and the same "
                       "agreement between judge and people); few labels give a wide interval for that reason")
RUNS_PER_SAMPLE = 5  # the forecast's simulated pools per resample of the labelled items


# ---------------------------------------------------------------------------------------- the forecast
class _Replay:
    """A judge whose verdicts on a simulated pool are given by position (for :func:`make_proxy`)."""

    kind = "llm"

    def __init__(self, values: np.ndarray, name: str) -> None:
        self.values, self.name = values, name

    def covers(self, pool: Pool, a: str, b: str) -> np.ndarray:
        return np.ones(pool.n_items, dtype=bool)

    def verdicts(self, pool: Pool, items: Sequence[int], a: str, b: str) -> np.ndarray:
        v = self.values[np.asarray(items, dtype=int)]
        return np.where(v > 0.5, "a", np.where(v < 0.5, "b", "tie")).astype(object)

    def judge_pairs(self, pool, items, a, b):  # pragma: no cover - make_proxy uses covers/verdicts
        raise NotImplementedError


def _labels(test: AnytimeTest, y: np.ndarray, order: np.ndarray, risk: float, with_items: bool) -> tuple[int, bool]:
    """Labels the anytime rule takes on ``y`` in ``order`` until it decides at ``risk`` (the pool size
    if it never does), and whether it decided."""
    for t, i in enumerate(order.tolist()):
        test.update(float(y[i]), i if with_items else None)
        r = test.assess(risk)
        if r.leader is not None and r.risk <= risk:
            return t + 1, True
    return len(order), False


def forecast_labels(pair: _PairData, judge: ResolvedJudge, *, risk: float, draws: int, rng: np.random.Generator,
                    runs_per_sample: int = RUNS_PER_SAMPLE) -> dict[str, np.ndarray]:
    """The simulation behind the forecast (module doc), for one pair: ``samples x runs`` arrays of the
    labels without and with the judge as control, and whether each run decided. ``draws`` runs in
    all: ``samples = draws // runs_per_sample`` resamples of the labelled items (n of n: what they
    say, and how uncertain it is), and for each, ``runs_per_sample`` simulated pools of the pair's size
    drawn from it, each in a uniformly random order, judged by the anytime rule alone and with the
    judge's prediction (:func:`evalsift.proxy.make_proxy` on the simulated pool) as the control."""
    n, M = len(pair.h), pair.pool_size
    K = max(1, min(int(runs_per_sample), int(draws)))
    B = max(1, int(draws) // K)
    out = {k: np.zeros((B, K)) for k in ("without", "with", "decided_without", "decided_with")}
    blank = Pool(item_ids=range(M), systems=[pair.a, pair.b], name="simulated") if judge.metric is None else None
    with _one_thread():  # the proxy's many tiny logistic fits: BLAS threads only cost time here (3x measured)
        _simulate(pair, judge, risk, rng, B, K, M, n, blank, out)
    return out


def _one_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1)


def _simulate(pair: _PairData, judge: ResolvedJudge, risk: float, rng: np.random.Generator, B: int, K: int, M: int,
              n: int, blank: Pool | None, out: dict[str, np.ndarray]) -> None:
    for s in range(B):
        sample = rng.integers(0, n, size=n)  # a bootstrap replicate of the labelled items
        for k in range(K):
            idx = sample[rng.integers(0, n, size=M)]  # a pool of the pair's size drawn from it
            y = pair.h[idx]
            order = rng.permutation(M)
            out["without"][s, k], out["decided_without"][s, k] = _labels(AnytimeTest(M), y, order, risk, False)
            if judge.metric is not None:  # the metric's scores of the drawn items: make_proxy as compare builds it
                proxy = make_proxy(judge.proxy_spec, pair.labelled.resample(idx), pair.a, pair.b)
            else:
                proxy = make_proxy(judge.proxy_spec, blank, pair.a, pair.b, oracle=_Replay(pair.j[idx], judge.name))
            out["with"][s, k], out["decided_with"][s, k] = _labels(AnytimeTest(M, control=proxy), y, order, risk,
                                                                   True)


def _forecast_task(shared: dict[str, Any], pair: _PairData) -> dict[str, np.ndarray]:
    """One pair's forecast (a task of :func:`~evalsift.bench.parallel.run_tasks`)."""
    return forecast_labels(pair, shared["judge"], risk=shared["risk"], draws=shared["draws"],
                           rng=_pair_seed(shared["seed"], pair.a, pair.b))


def _pair_seed(seed: int, a: str, b: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(f"{a}\x00{b}".encode())])


def _ratio_interval(w0: np.ndarray, w1: np.ndarray, level: float) -> dict[str, Any]:
    """The forecast's ratio of mean labels (with / without) and its interval, from runs shaped
    ``pairs x replicates x runs`` (summed over pairs). Each replicate of the labelled items gives
    a ratio from its runs; their spread over replicates holds what the labelled items leave
    uncertain plus the runs' Monte Carlo noise. The noise is estimated within each replicate (the
    ratio estimator's variance, ``sum_k (y_k - r x_k)^2 / (K (K - 1) xbar^2)``) and taken out: the
    replicates' ratios are shrunk toward their mean to the spread that is left, their percentile
    interval is widened (in quadrature) by the Monte Carlo error of the mean ratio, and centred on
    the ratio of all runs' mean labels. With one run per replicate nothing can be taken out."""
    _, B, K = w0.shape
    x, y = w0.mean(axis=2).sum(axis=0), w1.mean(axis=2).sum(axis=0)  # per replicate, summed over pairs
    r = y / x
    value = float(w1.mean(axis=(1, 2)).sum() / w0.mean(axis=(1, 2)).sum())
    q = [50 * (1 - level), 50 * (1 + level)]
    total = float(r.var(ddof=1)) if B > 1 else 0.0
    if K > 1 and B > 1:
        resid = w1 - r[None, :, None] * w0  # pairs x replicates x runs
        mc = (resid - resid.mean(axis=2, keepdims=True)) ** 2
        noise = mc.sum(axis=2).sum(axis=0) / (K * (K - 1)) / x ** 2  # per replicate
        left = max(0.0, total - float(noise.mean()))
        shrink = math.sqrt(left / total) if total > 0 else 0.0
    else:
        left, shrink = total, 1.0
    centre = float(r.mean())
    lo_s, hi_s = (float(v) for v in np.percentile(centre + shrink * (r - centre), q))
    z = float(norm.ppf(0.5 + level / 2))
    err = z * math.sqrt(total / B) if B > 1 else 0.0
    return {"value": value, "low": value - math.hypot(centre - lo_s, err), "high": value + math.hypot(hi_s - centre, err),
            "n": int(B), "spread_replicates": math.sqrt(total), "spread_labels": math.sqrt(left)}


def _forecast_summary(sim: dict[str, np.ndarray], level: float, rho: float, pool_size: int) -> dict[str, Any]:
    w0, w1 = sim["without"], sim["with"]
    q = [50 * (1 - level), 50 * (1 + level)]
    return {"pool_size": int(pool_size), "without": float(w0.mean()), "with": float(w1.mean()),
            "without_runs": [float(x) for x in np.percentile(w0, q)],
            "with_runs": [float(x) for x in np.percentile(w1, q)],
            "ratio": _ratio_interval(w0[None], w1[None], level),
            "runs": int(w0.size), "replicates": int(w0.shape[0]), "runs_per_replicate": int(w0.shape[1]),
            "decided_without": float(sim["decided_without"].mean()), "decided_with": float(sim["decided_with"].mean()),
            "rho": rho, "reference": (1 - rho * rho) if math.isfinite(rho) else NAN}


def _pooled_forecast(fc: list[tuple[dict[str, np.ndarray], float, int]], level: float) -> dict[str, Any]:
    if not fc:
        return {"pairs": 0, "without": NAN, "with": NAN, "ratio": {"value": NAN, "low": NAN, "high": NAN, "n": 0},
                "rho": NAN, "reference": NAN}
    w0 = np.stack([s["without"] for s, _, _ in fc])
    w1 = np.stack([s["with"] for s, _, _ in fc])
    defined = [(r, n) for _, r, n in fc if math.isfinite(r)]
    r2 = sum(r * r * n for r, n in defined) / sum(n for _, n in defined) if defined else NAN
    return {"pairs": len(fc), "without": float(w0.mean(axis=(1, 2)).sum()), "with": float(w1.mean(axis=(1, 2)).sum()),
            "ratio": _ratio_interval(w0, w1, level),
            "rho": math.sqrt(r2) if math.isfinite(r2) else NAN, "reference": 1 - r2 if math.isfinite(r2) else NAN,
            "reference_note": "1 - rho^2 with rho^2 the pairs' squared correlations of the proxy's signal with the "
                              "human verdict, averaged weighted by items"}
