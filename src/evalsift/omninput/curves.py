"""From rho(z) and judged representatives to precision, recall and their curves over the whole input space.

Notation (OmniInput, Sec. 2): rho(z) is the number of inputs whose output falls in the bin of z (Eq. 1
normalises it to a share of the input space); r(z) the mean score a judge gives the inputs of that bin
(scores in [0, 1]: yes/no answers are 1/0, graded answers anything between), estimated from the
representatives judged there. For a model whose *high* outputs are its positive predictions (a logit), at
threshold lambda:

    precision(lambda) = sum_{z >= lambda} r(z) rho(z) / sum_{z >= lambda} rho(z)          (Eq. 3)
    recall(lambda)   ~ sum_{z >= lambda} r(z) rho(z)                                      (Eq. 4, unnormalised)

and for a model whose *low* outputs are positive (an NLL) the sums run over z <= lambda. Thresholds are
bin edges, so every bin is wholly in or out. Everything is computed in log space: rho spans e^180 on
the digits.

**The paper's curves: inside an output range Z** (Sec. 3.3, :func:`output_range`, :func:`range_curve`).
Only the bins of Z count: Z starts at the most positive bin holding at least 30 distinct sampled inputs
and reaches as far as the annotation budget does. Recall is the *unnormalised* sum of Eq. 4 (its
divisor, the number of positive inputs in the space, is unknown); the normalised form is given only
when every bin of Z is judged. Models are compared by the area under precision over *log* recall on the
log-recall range both curves cover, as a ratio of the two areas (:func:`aupr_log_ratios`).

**Our whole-space curves** (:func:`omni_curve`): recall divided by the estimated total of positives
over *every* sampled bin, sum_z r rho -- a normalisation the paper does not use. It is given only when
every bin is judged (otherwise the total would rest on r interpolated into bins nobody judged, and the
recall, AUPR and ROC are None with the reason). ``aupr`` covers recall 0 to 1 (below the first point the
curve is held at the most positive bin's precision, what the binning assumes); ``aupr_common`` is the
area on the (linear) recall range every compared curve covers, also divided by its width.

**Limits.** As lambda passes the most positive bin, precision tends to that bin's r; at the other end
precision is the positive share of the whole space. For logit outputs we also report the model's own
decision (z > 0: the designated class wins), a single point on the curve.

**ROC** (the paper's Appendix A): TPR = recall and FPR(lambda) = sum (1 - r) rho / sum_z (1 - r) rho over
the same thresholds; with P = sum r rho and N = sum (1 - r) rho, precision = TPR P / (TPR P + FPR N),
so the PR curve and the ROC curve carry the same information given P / N (:func:`precision_from_roc`).

**Normalisations** for comparing models (Sec. 2.3): *entire distribution* -- rho divided by its sum,
the share of the input space per bin (:meth:`OmniSamples.mass`; our samplers estimate rho on the
absolute scale of the space, so this is always available); *cross-model* (Eq. 5-6,
:func:`cross_model_normalisation`) -- feed each model's sampled inputs in Z to the other model, count
those in X (inputs both models put in Z) and divide each model's histogram by its count. Our display
aid :func:`rescaled_axis` (outputs rescaled to [0, 1] over all models) is not a normalisation of the paper.

**Uncertainty from the judgments** comes in two forms, both assuming the representatives are uniform
draws within their bins and taking rho as exact (rho's own error is reported beside them, as the
spread of the independent chains' curves):

- *Bands on precision and recall at every threshold* (:func:`pr_bands`): each judged bin's r lies in
  its Clopper-Pearson interval at level 1 - alpha/B (Bonferroni over the B judged bins), an unjudged
  bin's r anywhere in [0, 1]; precision is a rho-weighted mean of the r's and recall a ratio monotone
  in them, so the extreme r's bound both at every threshold at once, with probability >= 95%. No prior.
- *AUPR and AUROC* (:func:`judgment_intervals`): the curves from r = positives / judged per bin (the
  plug-in), with a percentile bootstrap of the judged labels within each bin (each bin's share redrawn
  as Binomial(judged, share) / judged, the curves recomputed). It cannot see positives hidden in a bin
  where every judged input was a "no" -- the bands do. Measured on the toy with the exact rho: the 95%
  interval held the exact AUPR in 95% (10 judged per bin) and 98% (30) of 100 runs at length 8, 92% and
  96% at length 6 (``benchmarks/omni/omni_toy.py``). Two priors were tried and dropped: Jeffreys' Beta(1/2,
  1/2) gives a bin judged 0 of 10 a mean r of 4.5%, and over bins holding nearly all of a huge space it
  invents more positives than exist (the whole interval fell below the estimate); an empirical-Bayes
  Beta fitted to all bins still kept a small r in those bins and biased AUPR low (0.36 for an exact
  0.44), its interval holding the truth in only 81-87% of runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.special import logsumexp

from ..errors import DataError, ParameterError
from .samples import OmniSamples


@dataclass(frozen=True)
class Rates:
    """r per bin: ``judged`` (items judged), ``positives`` (sum of their labels), ``r`` (positives / judged;
    interpolated in z where ``interpolated``), ``lo``/``hi`` (each judged bin's own 95% Jeffreys interval,
    NaN where not judged), ``lo_sim``/``hi_sim`` (Clopper-Pearson bounds that hold for every bin at once
    with probability >= ``level``: Bonferroni over the judged bins; 0 and 1 where not judged)."""

    bins: np.ndarray
    judged: np.ndarray
    positives: np.ndarray
    r: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    interpolated: np.ndarray
    lo_sim: np.ndarray
    hi_sim: np.ndarray


def label_rates(samples: OmniSamples, z: Sequence[float], labels: Sequence[float], level: float = 0.95) -> Rates:
    """r per bin of ``samples`` from judged inputs (their outputs ``z`` and ``labels`` in [0, 1]; a label
    may be a share of annotators): positives / judged. Bins without a judged input get r interpolated
    linearly in z between the nearest judged bins (constant beyond the ends) and are flagged
    ``interpolated``.

    >>> import numpy as np
    >>> from evalsift.omninput.samples import OmniSamples, Candidates
    >>> from evalsift.omninput.space import InputSpace
    >>> c = Candidates(np.zeros((0, 2), dtype=np.int16), *(np.zeros(0),) * 4)
    >>> s = OmniSamples({}, InputSpace(2, 3), {}, 1.0, np.array([0, 1, 2]), np.log([5., 3., 1.]), np.zeros((0, 3)),
    ...                 np.zeros(3, int), c)
    >>> r = label_rates(s, [0.5, 0.2, 2.5], [0, 1, 1])        # bin 0: 1 of 2 positive, bin 2: 1 of 1
    >>> r.r.tolist(), r.interpolated.tolist()                  # bin 1 halfway between 0.5 and 1
    ([0.5, 0.75, 1.0], [False, True, False])
    """
    from scipy.stats import beta

    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if z.shape != y.shape:
        raise ParameterError("label_rates: one label per output", field="labels")
    if y.size and (np.nanmin(y) < 0 or np.nanmax(y) > 1):
        raise DataError("labels must be in [0, 1] (1: positive, the judge says yes)", field="labels")
    b = np.floor(z / samples.bin_width).astype(np.int64)
    pos = np.searchsorted(samples.bins, b)
    ok = (pos < samples.bins.size) & (samples.bins[np.minimum(pos, samples.bins.size - 1)] == b)
    n = np.bincount(pos[ok], minlength=samples.bins.size).astype(np.float64)
    k = np.bincount(pos[ok], weights=y[ok], minlength=samples.bins.size)
    judged = n > 0
    if not judged.any():
        raise DataError("no judged input falls in a bin of the samples; were the judgments made for these samples?",
                        field="judgments")
    raw = np.full(n.size, np.nan)
    raw[judged] = k[judged] / n[judged]
    centers = samples.centers
    r_all = np.interp(centers, centers[judged], raw[judged])
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(judged, np.where(k > 0, beta.ppf(a, k + 0.5, n - k + 0.5), 0.0), np.nan)
        hi = np.where(judged, np.where(k < n, beta.ppf(1 - a, k + 0.5, n - k + 0.5), 1.0), np.nan)
        s_a = a / max(1, int(judged.sum()))
        lo_sim = np.where(judged & (k > 0), beta.ppf(s_a, np.maximum(k, 1e-9), n - k + 1), 0.0)
        hi_sim = np.where(judged & (k < n), beta.ppf(1 - s_a, k + 1, np.maximum(n - k, 1e-9)), 1.0)
    lo_sim = np.where(judged, lo_sim, 0.0)
    hi_sim = np.where(judged, hi_sim, 1.0)
    return Rates(samples.bins, n.astype(np.int64), k, r_all, lo, hi, ~judged, lo_sim, hi_sim)


def _log(v: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(v)


def pr_curve(ln_rho: np.ndarray, r: np.ndarray, positive: str = "high") -> dict[str, np.ndarray]:
    """Precision, recall, TPR and FPR at every threshold (Eq. 3-4), most selective threshold first.

    ``ln_rho`` and ``r`` per bin in increasing z. Entry j predicts positive the j+1 most positive bins
    (for ``positive='high'`` the top j+1 bins; for ``'low'`` the bottom j+1).

    >>> c = pr_curve(np.log([4.0, 2.0, 2.0]), np.array([0.0, 0.5, 1.0]))
    >>> c["precision"].round(3).tolist(), c["recall"].round(3).tolist()   # 2/2, (2+1)/(2+2), 3/8
    ([1.0, 0.75, 0.375], [0.667, 1.0, 1.0])
    >>> c["fpr"].round(3).tolist()                                          # 0/5, 1/5, 5/5
    [0.0, 0.2, 1.0]
    """
    ln_rho = np.asarray(ln_rho, dtype=np.float64)
    r = np.clip(np.asarray(r, dtype=np.float64), 0.0, 1.0)
    order = slice(None, None, -1) if positive == "high" else slice(None)
    lr, rr = ln_rho[order], r[order]
    cum_all = np.logaddexp.accumulate(lr)
    cum_pos = np.logaddexp.accumulate(lr + _log(rr))
    cum_neg = np.logaddexp.accumulate(lr + _log(1.0 - rr))
    P, N = cum_pos[-1], cum_neg[-1]
    precision = np.exp(cum_pos - cum_all)
    recall = np.exp(cum_pos - P) if np.isfinite(P) else np.zeros(lr.size)
    fpr = np.exp(cum_neg - N) if np.isfinite(N) else np.zeros(lr.size)
    return {"precision": precision, "recall": recall, "tpr": recall, "fpr": fpr, "ln_P": np.float64(P),
            "ln_N": np.float64(N)}


def pr_bands(ln_rho: np.ndarray, lo: np.ndarray, hi: np.ndarray, positive: str = "high") -> dict[str, np.ndarray]:
    """Bounds on precision and recall at every threshold (the order of :func:`pr_curve`) that hold
    whenever every bin's r lies in [lo, hi]: precision between the rho-weighted means of lo and of hi over
    the bins taken in; recall between sel_lo / (sel_lo + rest_hi) and sel_hi / (sel_hi + rest_lo).

    >>> b = pr_bands(np.log([1.0, 1.0]), np.array([0.0, 0.5]), np.array([0.2, 1.0]))
    >>> b["precision_lo"].tolist(), b["precision_hi"].tolist()   # top bin: [0.5, 1]; both: [0.25, 0.6]
    ([0.5, 0.25], [1.0, 0.6])
    >>> b["recall_lo"].round(3).tolist(), b["recall_hi"].tolist()   # 0.5 / (0.5 + 0.2), 1 / (1 + 0)
    ([0.714, 1.0], [1.0, 1.0])
    """
    ln_rho = np.asarray(ln_rho, dtype=np.float64)
    order = slice(None, None, -1) if positive == "high" else slice(None)
    lr, l, h = ln_rho[order], np.clip(lo[order], 0, 1), np.clip(hi[order], 0, 1)
    cum = np.logaddexp.accumulate(lr)
    sel_lo = np.logaddexp.accumulate(lr + _log(l))
    sel_hi = np.logaddexp.accumulate(lr + _log(h))
    tot_lo, tot_hi = sel_lo[-1], sel_hi[-1]
    # the rest (bins not taken in) from the complements of the cumulative sums, in log space
    rest_lo = _log_minus(tot_lo, sel_lo)
    rest_hi = _log_minus(tot_hi, sel_hi)
    with np.errstate(invalid="ignore"):
        rec_lo = np.exp(sel_lo - np.logaddexp(sel_lo, rest_hi))
        rec_hi = np.exp(sel_hi - np.logaddexp(sel_hi, rest_lo))
    return {"precision_lo": np.exp(sel_lo - cum), "precision_hi": np.exp(sel_hi - cum),
            "recall_lo": np.nan_to_num(rec_lo, nan=0.0), "recall_hi": np.nan_to_num(rec_hi, nan=1.0)}


def _log_minus(total: float, part: np.ndarray) -> np.ndarray:
    """ln(exp(total) - exp(part)), -inf where they are equal."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 1.0 - np.exp(part - total)
        return np.where(d > 1e-15, total + np.log(np.maximum(d, 1e-300)), -np.inf)


def thresholds(samples: OmniSamples) -> np.ndarray:
    """The threshold of each entry of :func:`pr_curve`: the lower edge of the last bin taken in for
    'high', the upper edge for 'low'."""
    e = samples.edges
    return e[:-1][::-1] if samples.positive == "high" else e[1:]


def aupr(recall: np.ndarray, precision: np.ndarray, lo: float | None = None, hi: float | None = None) -> float:
    """Area under precision over recall on ``[lo, hi]`` (default: the curve's own recall range),
    precision interpolated linearly between points (trapezoids).

    >>> aupr(np.array([0.5, 1.0]), np.array([1.0, 0.5]))           # (1 + 0.5) / 2 * 0.5
    0.375
    >>> round(aupr(np.array([0.0, 0.5, 1.0]), np.array([1.0, 1.0, 0.5]), 0.25, 0.75), 4)  # 0.25 + 0.25*0.875
    0.4688
    """
    rec = np.asarray(recall, dtype=np.float64)
    prec = np.asarray(precision, dtype=np.float64)
    order = np.argsort(rec, kind="stable")
    rec, prec = rec[order], prec[order]
    rec, keep = np.unique(rec, return_index=True)  # one precision per recall: the first (most selective)
    prec = prec[keep]
    lo = rec[0] if lo is None else float(lo)
    hi = rec[-1] if hi is None else float(hi)
    if hi <= lo or rec.size < 2:
        return 0.0
    inner = (rec > lo) & (rec < hi)
    xs = np.concatenate([[lo], rec[inner], [hi]])
    ys = np.interp(xs, rec, prec)
    return float(np.trapezoid(ys, xs))


def auroc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area under the ROC curve (trapezoids from (0, 0) to (1, 1))."""
    f = np.concatenate([[0.0], np.asarray(fpr, dtype=np.float64), [1.0]])
    t = np.concatenate([[0.0], np.asarray(tpr, dtype=np.float64), [1.0]])
    return float(np.trapezoid(t, f))


def precision_from_roc(tpr: np.ndarray, fpr: np.ndarray, ln_P: float, ln_N: float) -> np.ndarray:
    """Appendix A: precision = TPR P / (TPR P + FPR N), from the ROC curve and the ratio P / N (in logs).

    >>> c = pr_curve(np.log([4.0, 2.0, 2.0]), np.array([0.0, 0.5, 1.0]))
    >>> bool(np.allclose(precision_from_roc(c["tpr"], c["fpr"], c["ln_P"], c["ln_N"]), c["precision"]))
    True
    """
    tpr, fpr = np.asarray(tpr, dtype=np.float64), np.asarray(fpr, dtype=np.float64)
    a, b = _log(tpr) + ln_P, _log(fpr) + ln_N
    return np.exp(a - np.logaddexp(a, b))


def common_recall_range(curves: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The recall range every curve covers: (largest of the smallest recalls, smallest of the largest)."""
    lo = max(float(np.min(c["recall"])) for c in curves)
    hi = min(float(np.max(c["recall"])) for c in curves)
    return lo, hi


def rescaled_axis(samples: Sequence[OmniSamples], n_bins: int = 50) -> dict[str, Any]:
    """Our display aid, not the paper's cross-model normalisation (that is :func:`cross_model_normalisation`):
    every model's entire-distribution-normalised rho on one [0, 1] axis, z rescaled by the smallest lower
    edge and largest upper edge over all models, mass re-binned into ``n_bins`` equal bins (each source
    bin's mass spread uniformly over its extent).

    >>> from evalsift.omninput.samples import OmniSamples, Candidates
    >>> from evalsift.omninput.space import InputSpace
    >>> c = Candidates(np.zeros((0, 2), dtype=np.int16), *(np.zeros(0),) * 4)
    >>> s = OmniSamples({}, InputSpace(2, 3), {}, 1.0, np.array([0, 1]), np.log([3., 1.]), np.zeros((0, 2)),
    ...                 np.zeros(2, int), c)
    >>> np.round(rescaled_axis([s], n_bins=2)["mass"], 6).tolist()   # z in [0, 2) -> halves of [0, 1]
    [[0.75, 0.25]]
    """
    lo = min(float(s.edges[0]) for s in samples)
    hi = max(float(s.edges[-1]) for s in samples)
    grid = np.linspace(0.0, 1.0, n_bins + 1)
    out = []
    for s in samples:
        m = s.mass()
        a, b = (s.edges[:-1] - lo) / (hi - lo), (s.edges[1:] - lo) / (hi - lo)
        # overlap of source bin [a, b) with each target bin, as a share of the source bin
        ov = np.clip(np.minimum(b[:, None], grid[None, 1:]) - np.maximum(a[:, None], grid[None, :-1]), 0, None)
        share = ov / (b - a)[:, None]
        out.append((m[:, None] * share).sum(axis=0))
    return {"method": "ours (display only): z rescaled to [0, 1] over all models, mass re-binned", "z_min": lo,
            "z_max": hi, "edges": grid.tolist(), "mass": [v.tolist() for v in out]}


# ---------------------------------------------------------------------------------------------- output range Z
def bins_in_range(samples: OmniSamples, z_range: Sequence[float]) -> np.ndarray:
    """Which bins of ``samples`` lie wholly inside ``z_range = (lo, hi)`` (a bool per bin).

    >>> from evalsift.omninput.samples import OmniSamples, Candidates
    >>> from evalsift.omninput.space import InputSpace
    >>> c = Candidates(np.zeros((0, 2), dtype=np.int16), *(np.zeros(0),) * 4)
    >>> s = OmniSamples({}, InputSpace(2, 3), {}, 0.5, np.array([0, 1, 2, 3]), np.zeros(4), np.zeros((0, 4)),
    ...                 np.zeros(4, int), c)
    >>> bins_in_range(s, (0.5, 1.6)).tolist()               # [0.5, 1) and [1, 1.5) fit; [1.5, 2) does not
    [False, True, True, False]
    """
    lo, hi = float(z_range[0]), float(z_range[1])
    tol = 1e-9 * samples.bin_width
    lower, upper = _bin_edges(samples)
    return (lower >= lo - tol) & (upper <= hi + tol)


def _bin_edges(samples: OmniSamples) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's own lower and upper edge (bins need not be adjacent)."""
    return samples.bins * samples.bin_width, (samples.bins + 1) * samples.bin_width


def distinct_per_bin(samples: OmniSamples) -> np.ndarray:
    """The number of distinct sampled inputs kept per bin (a candidate kept by several replicas counts once)."""
    c = samples.candidates
    out = np.zeros(samples.bins.size, dtype=np.int64)
    if not len(c):
        return out
    pos = np.searchsorted(samples.bins, c.bin)
    ok = (pos < samples.bins.size) & (samples.bins[np.minimum(pos, samples.bins.size - 1)] == c.bin)
    rows = np.concatenate([pos[ok, None].astype(np.int64), np.asarray(c.x[ok], dtype=np.int64)], axis=1)
    uniq = np.unique(rows, axis=0)
    np.add.at(out, uniq[:, 0], 1)
    return out


def output_range(samples: OmniSamples, *, min_distinct: int = 30, budget: int | None = None,
                 per_bin: int | None = None, z_range: Sequence[float] | None = None) -> dict[str, Any]:
    """The output range Z over which precision and recall are reported (Sec. 3.3).

    The paper's bounds: Z starts at the most positive bin (the low end of an NLL, the high end of a
    logit) that holds at least ``min_distinct`` distinct sampled inputs (30 in the paper) -- more extreme
    bins are too thin to judge -- and extends toward the other side as far as the annotation budget
    reaches: ``budget // per_bin`` bins (``budget``: judgments one can afford; None: to the end of the
    sampled range). ``z_range = (lo, hi)`` overrides both ends. Returns ``z`` (the range, on bin edges),
    ``mask`` (the bins inside, per bin), ``n_bins`` and how each end was set.
    """
    if z_range is not None:
        lo, hi = float(z_range[0]), float(z_range[1])
        if not hi > lo:
            raise ParameterError(f"--z-range: the upper end must exceed the lower end, got {lo:g},{hi:g}",
                                 field="z_range")
        mask = bins_in_range(samples, (lo, hi))
        if not mask.any():
            raise ParameterError(f"--z-range {lo:g},{hi:g} holds no whole bin of {samples.model.get('name')} (its bins "
                                 f"cover [{samples.edges[0]:.4g}, {samples.edges[-1]:.4g}) in steps of "
                                 f"{samples.bin_width:g})", field="z_range")
        return {"z": [lo, hi], "mask": mask, "n_bins": int(mask.sum()), "start": "given (--z-range)",
                "end": "given (--z-range)", "min_distinct": None, "budget": None}
    if budget is not None and (per_bin is None or per_bin < 1):
        raise ParameterError("output_range: a budget needs per_bin (judgments per bin)", field="per_bin")
    order = np.arange(samples.bins.size)
    if samples.positive == "high":
        order = order[::-1]  # walk from the most positive bin
    distinct = distinct_per_bin(samples)
    thick = np.flatnonzero(distinct[order] >= min_distinct)
    if not thick.size:
        raise DataError(f"{samples.model.get('name')}: no bin holds {min_distinct} distinct sampled inputs (the most: "
                        f"{int(distinct.max(initial=0))}); sample longer (--steps, --keep) or give --min-distinct or "
                        "--z-range", field="min_distinct")
    first = int(thick[0])
    n = order.size - first if budget is None else max(1, min(order.size - first, int(budget) // int(per_bin)))
    chosen = order[first:first + n]
    mask = np.zeros(samples.bins.size, dtype=bool)
    mask[chosen] = True
    lower, upper = _bin_edges(samples)
    lo, hi = float(lower[mask].min()), float(upper[mask].max())
    start = f"the most positive bin with >= {min_distinct} distinct sampled inputs"
    end = ("the end of the sampled range" if budget is None else
           f"the annotation budget: {int(budget)} judgments / {int(per_bin)} per bin = {n} bin(s)")
    return {"z": [lo, hi], "mask": mask, "n_bins": int(n), "start": start, "end": end, "min_distinct": min_distinct,
            "budget": budget}


def common_output_range(ranges: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The part of Z every model shares (the intersection of their ranges), or None if they do not overlap."""
    lo = max(float(r[0]) for r in ranges)
    hi = min(float(r[1]) for r in ranges)
    return (lo, hi) if hi > lo else None


def range_curve(samples: OmniSamples, r: np.ndarray, mask: np.ndarray, ln_rho: np.ndarray | None = None,
                interpolated: np.ndarray | None = None) -> dict[str, Any]:
    """Precision (Eq. 3) and *unnormalised* recall (Eq. 4's numerator) over the bins of Z only (``mask``),
    thresholds walked from Z's most positive bin. ``ln_rho``: the normalised output distribution per bin
    (default: the share of the input space, Eq. 1); with Eq. 5-6 the cross-model normalised one.
    ``recall_normalised`` (divided by Z's total of r rho, the share of Z's positives) is given only when
    every bin of Z is judged (``interpolated`` all False): otherwise its denominator would rest on r guessed
    in bins nobody judged, and it is None with the reason in ``recall_normalised_note``.

    >>> from evalsift.omninput.samples import OmniSamples, Candidates
    >>> from evalsift.omninput.space import InputSpace
    >>> c = Candidates(np.zeros((0, 2), dtype=np.int16), *(np.zeros(0),) * 4)
    >>> s = OmniSamples({"positive": "low"}, InputSpace(2, 3), {}, 1.0, np.arange(3), np.log([1., 2., 5.]),
    ...                 np.zeros((0, 3)), np.zeros(3, int), c)
    >>> k = range_curve(s, np.array([1.0, 0.5, 0.0]), np.array([True, True, False]))
    >>> [round(v, 4) for v in k["recall"]], [round(v, 4) for v in k["precision"]]   # 1/8, (1 + 1)/8; 1/1, 2/3
    ([0.125, 0.25], [1.0, 0.6667])
    """
    ln = samples.ln_rho - logsumexp(samples.ln_rho) if ln_rho is None else np.asarray(ln_rho, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    idx = np.flatnonzero(mask)
    if samples.positive == "high":
        idx = idx[::-1]
    c = pr_curve(ln[mask], np.asarray(r, dtype=np.float64)[mask], samples.positive)
    rr = np.clip(np.asarray(r, dtype=np.float64)[idx], 0, 1)
    cum_pos = np.logaddexp.accumulate(ln[idx] + _log(rr))
    recall = np.exp(cum_pos)
    unjudged = int(np.asarray(interpolated, dtype=bool)[mask].sum()) if interpolated is not None else 0
    lower, upper = _bin_edges(samples)
    th = lower[idx] if samples.positive == "high" else upper[idx]
    out: dict[str, Any] = {"threshold": th.tolist(), "precision": c["precision"].tolist(), "recall": recall.tolist(),
                           "ln_recall": cum_pos.tolist(), "unjudged_bins": unjudged}
    if unjudged:
        out["recall_normalised"] = None
        out["recall_normalised_note"] = (f"{unjudged} of {idx.size} bins of Z have no judged input: the total of "
                                         "positives in Z would rest on r interpolated there, so only the unnormalised "
                                         "recall is given")
    else:
        out["recall_normalised"] = c["recall"].tolist()
    return out


def aupr_log(recall: np.ndarray, precision: np.ndarray, lo: float | None = None, hi: float | None = None) -> float:
    """Area under precision over log10(recall) on ``[lo, hi]`` (in log10 recall; default the curve's own
    range), precision interpolated linearly in log10 recall (Sec. 3.3; points with recall 0 have no log
    and are left out). Ratios of these areas do not depend on the base of the logarithm.

    >>> aupr_log(np.array([1.0, 10.0, 100.0]), np.array([1.0, 0.5, 0.5]))   # (1 + 0.5)/2 + 0.5
    1.25
    >>> aupr_log(np.array([1.0, 10.0, 100.0]), np.array([1.0, 0.5, 0.5]), 0.5, 1.0)   # (0.75 + 0.5)/2 * 0.5
    0.3125
    """
    rec = np.asarray(recall, dtype=np.float64)
    ok = rec > 0
    if ok.sum() < 2:  # no area without two points of positive recall
        return 0.0
    with np.errstate(divide="ignore"):
        return aupr(np.log10(rec[ok]), np.asarray(precision, dtype=np.float64)[ok], lo, hi)


def aupr_log_ratios(curves: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any] | None:
    """The paper's comparison of PR curves (Sec. 3.3): on the log10-recall range every curve covers, the
    area under precision of each model divided by the first model's, and that ratio of the areas
    accumulated from the common minimum recall up to each log-recall (the last value is the ratio).
    ``curves``: :func:`range_curve` dicts (their unnormalised ``recall``). None when the ranges do not
    overlap or the first model's area is 0."""
    logs = []
    for c in curves:
        rec = np.asarray(c["recall"], dtype=np.float64)
        ok = rec > 0
        if not ok.any():
            return None
        logs.append(np.log10(rec[ok]))
    lo = max(float(v.min()) for v in logs)
    hi = min(float(v.max()) for v in logs)
    if not hi > lo:
        return None
    areas = [aupr_log(c["recall"], c["precision"], lo, hi) for c in curves]
    if areas[0] <= 0:
        return None
    grid = np.unique(np.concatenate([v[(v > lo) & (v <= hi)] for v in logs] + [[hi]]))
    cumulative = {}
    for name, c in zip(names[1:], curves[1:]):
        num = np.array([aupr_log(c["recall"], c["precision"], lo, g) for g in grid])
        den = np.array([aupr_log(curves[0]["recall"], curves[0]["precision"], lo, g) for g in grid])
        with np.errstate(divide="ignore", invalid="ignore"):
            cumulative[name] = np.where(den > 0, num / den, np.nan).tolist()
    return {"reference": names[0], "log10_recall_range": [lo, hi], "aupr_log": dict(zip(names, areas)),
            "ratio": {n: a / areas[0] for n, a in zip(names[1:], areas[1:])},
            "cumulative": {"log10_recall": grid.tolist(), "ratio": cumulative}}


# ---------------------------------------------------------------------------------------------- Eq. 5-6
def normalise_by_shared(ln_h: np.ndarray, shared_share: np.ndarray) -> tuple[np.ndarray, float]:
    """Eq. 5-6 for one model: its histogram over Z divided by the number of its sampled inputs that fall
    in the shared subset X. ``ln_h``: ln H(z) per bin of Z (counts of sampled inputs, or any estimate
    proportional to the number of inputs per bin); ``shared_share``: per bin, the share of its sampled
    inputs that lie in X. |X_M| = sum_z H(z) x share(z) -- with H the raw counts, exactly the number of
    sampled inputs found in X. Returns (ln of the normalised H per bin, ln |X_M|).

    The paper's worked example: 50 inputs sampled in Z by M1, 10 of them in X -> 50 / 10 = 5.

    >>> ln, ln_x = normalise_by_shared(np.log([30.0, 20.0]), np.array([0.2, 0.2]))
    >>> round(float(np.exp(logsumexp(ln))), 6), round(float(np.exp(ln_x)), 6)
    (5.0, 10.0)
    """
    ln_h = np.asarray(ln_h, dtype=np.float64)
    ln_x = float(logsumexp(ln_h + _log(np.clip(np.asarray(shared_share, dtype=np.float64), 0, 1))))
    return ln_h - ln_x, ln_x


def cross_model_normalisation(samples: Sequence[OmniSamples], models: Sequence[Any],
                              z_range: Sequence[float], *, batch: int = 8192) -> dict[str, Any]:
    """Cross-model normalisation, Eq. 5-6 (Sec. 2.3): X is the set of inputs that every model puts in
    ``z_range`` (Z); each model's sampled inputs in Z are fed to the other model(s), and the share of
    them in X, per bin, gives |X_M| (:func:`normalise_by_shared`); each model's rho over Z divided by its
    |X_M| is then on one scale -- its sum over Z estimates (inputs the model puts in Z) / |X| -- so the
    models' distributions can be compared although each was sampled on its own.

    Within a bin the sampled inputs are weighted by their importance weights (uniform within the bin), so
    the share estimates the bin's true share in X. The paper defines it for two models; with more, X is
    the set all of them put in Z (our extension). Each model's part of Z is its bins wholly inside Z,
    and "in Z" for every model means in those bins. The models must read the same input space.

    Returns per model ``bins``, ``z_center``, ``ln_rho_hat`` (ln of Eq. 5-6 per bin of Z), ``ln_total``
    (ln of its sum), ``ln_shared`` (ln |X| as estimated from this model's rho: the models' estimates
    should agree), ``checked`` and ``in_shared`` (sampled inputs fed to the other models, and how many
    fell in X).
    """
    if len(samples) < 2 or len(samples) != len(models):
        raise ParameterError("cross-model normalisation compares two (or more) models: one sample set and one model "
                             "each", field="samples")
    fps = {s.space.fingerprint() for s in samples}
    if len(fps) > 1:
        raise ParameterError("cross-model normalisation feeds each model's inputs to the others: the models must read "
                             "the same input space (these differ: "
                             + "; ".join(f"{s.model.get('name')}: {s.space!r}" for s in samples) + ")", field="samples")
    masks = [bins_in_range(s, z_range) for s in samples]
    for s, m in zip(samples, masks):
        if not m.any():
            raise ParameterError(f"Z = [{z_range[0]:g}, {z_range[1]:g}] holds no whole bin of {s.model.get('name')}",
                                 field="z_range")
    ranges = [(float(_bin_edges(s)[0][m].min()), float(_bin_edges(s)[1][m].max())) for s, m in zip(samples, masks)]
    out = []
    for i, (s, m) in enumerate(zip(samples, masks)):
        c = s.candidates
        lo_i, hi_i = ranges[i]
        sel = np.flatnonzero((c.z >= lo_i) & (c.z < hi_i))
        x = c.x[sel]
        inside = np.ones(sel.size, dtype=bool)
        for j, other in enumerate(models):
            if j == i or not sel.size:
                continue
            zj = np.concatenate([np.asarray(other(x[k:k + batch]), dtype=np.float64) for k in range(0, sel.size, batch)])
            inside &= (zj >= ranges[j][0]) & (zj < ranges[j][1])
        bins_z = s.bins[m]
        pos = np.searchsorted(bins_z, c.bin[sel])
        lw = c.log_weight[sel]
        share = np.zeros(bins_z.size)
        for k in range(bins_z.size):  # weighted share of the bin's sampled inputs that are in X
            here = pos == k
            if here.any():
                w = np.exp(lw[here] - lw[here].max())
                share[k] = float(w[inside[here]].sum() / w.sum())
        n_in = int(inside.sum())
        entry: dict[str, Any] = {"model": s.model.get("name"), "bins": bins_z.tolist(),
                                 "z_center": s.centers[m].tolist(), "checked": int(sel.size), "in_shared": n_in,
                                 "z_range": list(ranges[i])}
        if n_in == 0:
            entry.update(ln_rho_hat=None, ln_total=None, ln_shared=None,
                         note=f"none of the {sel.size} sampled inputs of {s.model.get('name')} in Z is in X (every "
                              "model in Z): Eq. 5-6 has no denominator; widen Z or sample more")
        else:
            ln_hat, ln_x = normalise_by_shared(s.ln_rho[m], share)
            entry.update(ln_rho_hat=ln_hat.tolist(), ln_total=float(logsumexp(ln_hat)), ln_shared=ln_x)
        out.append(entry)
    return {"method": "Eq. 5-6 (cross-model normalisation): rho over Z / |X_M|, X = inputs every model puts in Z",
            "z_range": [float(z_range[0]), float(z_range[1])], "models": out}


def aupr_full(recall: np.ndarray, precision: np.ndarray) -> float:
    """AUPR over recall 0..1, the curve held at its first (most selective) precision down to recall 0.

    >>> aupr_full(np.array([0.5, 1.0]), np.array([1.0, 0.5]))      # 0.5 * 1 + (1 + 0.5) / 2 * 0.5
    0.875
    """
    rec, prec = np.asarray(recall, dtype=np.float64), np.asarray(precision, dtype=np.float64)
    if rec.size == 0 or not np.isfinite(rec).all() or rec.max() <= 0:
        return 0.0
    return float(prec[0] * rec[0]) + aupr(rec, prec, float(rec[0]), 1.0)


def _curve_dict(samples: OmniSamples, ln_rho: np.ndarray, r: np.ndarray) -> dict[str, Any]:
    c = pr_curve(ln_rho, r, samples.positive)
    return {**c, "aupr": aupr_full(c["recall"], c["precision"]), "aupr_own_range": aupr(c["recall"], c["precision"]),
            "auroc": auroc(c["fpr"], c["tpr"])}


def judgment_intervals(samples: OmniSamples, rates: Rates, *, n_boot: int = 1000, seed: int = 0,
                       common: tuple[float, float] | None = None, level: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap of the judged labels: each judged bin's share redrawn as Binomial(n, k/n) / n
    (exactly resampling its 0/1 labels with replacement; for labels averaged over annotators, a slightly
    wider draw), unjudged bins re-interpolated, the curves recomputed ``n_boot`` times. Returns
    percentile intervals of AUPR (on ``common`` too, when given), AUROC and precision / recall per
    threshold."""
    rng = np.random.default_rng(seed)
    judged = ~rates.interpolated
    k, n = rates.positives[judged], rates.judged[judged]
    centers = samples.centers
    draws = rng.binomial(n[None, :], np.clip(k / n, 0, 1)[None, :], size=(n_boot, k.size)) / n
    a = (1 - level) / 2
    au, au_c, roc, prec, rec = [], [], [], [], []
    for d in draws:
        r = np.interp(centers, centers[judged], d)
        c = pr_curve(samples.ln_rho, r, samples.positive)
        au.append(aupr_full(c["recall"], c["precision"]))
        if common is not None:
            au_c.append(aupr(c["recall"], c["precision"], *common))
        roc.append(auroc(c["fpr"], c["tpr"]))
        prec.append(c["precision"])
        rec.append(c["recall"])
    q = lambda v: [float(np.quantile(v, a)), float(np.quantile(v, 1 - a))]  # noqa: E731
    out = {"level": level, "n_boot": n_boot, "seed": seed, "method": "percentile bootstrap of the judged labels "
           "within each bin", "aupr": q(au), "auroc": q(roc),
           "precision": np.quantile(np.array(prec), [a, 1 - a], axis=0).tolist(),
           "recall": np.quantile(np.array(rec), [a, 1 - a], axis=0).tolist(),
           "assumption": "the judged inputs are uniform draws within their bins; rho is taken as exact (its own "
                         "error is the chains' spread, reported beside); positives hidden in bins where every judged "
                         "input was a no are not seen (the bands allow for them)"}
    if common is not None:
        out["aupr_common"] = q(au_c)
    share = np.clip(k / n, 0, 1) if k.size else k
    if not np.any((share > 0) & (share < 1)):
        # every judged bin all yes or all no (one label per bin always is): every redraw equals the judgments, so
        # the "interval" would have zero width -- no interval, and why, instead of a false certainty
        for key in ("aupr", "auroc", "aupr_common", "precision", "recall"):
            out.pop(key, None)
        out["none"] = ("one label per bin" if n.size and float(n.max()) <= 1 else
                       "every judged bin's labels agree (all yes or all no)")
        out["none_note"] = (f"no interval ({out['none']}): the bootstrap redraws the labels within each bin, and "
                            "with no bin holding both a yes and a no every redraw repeats the judgments; judge more "
                            "per bin for an interval (the simultaneous precision bands still hold)")
    return out


def chain_spread(samples: OmniSamples, rates: Rates, common: tuple[float, float] | None = None) -> dict[str, Any]:
    """AUPR with each independent chain's rho (the sampler's own error on the curve), r fixed."""
    vals, vals_c = [], []
    for ln in samples.ln_rho_chains:
        ok = np.isfinite(ln)
        if not ok.any():
            continue
        c = pr_curve(ln[ok], rates.r[ok], samples.positive)  # the bins this chain reached
        vals.append(aupr_full(c["recall"], c["precision"]))
        if common is not None:
            vals_c.append(aupr(c["recall"], c["precision"], *common))
    out: dict[str, Any] = {"aupr_per_chain": vals}
    if common is not None:
        out["aupr_common_per_chain"] = vals_c
    return out


def omni_curve(samples: OmniSamples, z: Sequence[float], labels: Sequence[float], *, n_boot: int = 1000,
               seed: int = 0, common: tuple[float, float] | None = None) -> dict[str, Any]:
    """Everything about one model's curves, JSON-ready: r per bin, precision / recall / FPR per threshold,
    AUPR (own range and ``common``), AUROC, the limits, the model's own decision point (logits), the
    intervals from the judgments and the chains' spread."""
    rates = label_rates(samples, z, labels)
    c = _curve_dict(samples, samples.ln_rho, rates.r)
    th = thresholds(samples)
    mass = samples.mass()
    out: dict[str, Any] = {
        "model": samples.model.get("name"), "positive": samples.positive, "bin_width": samples.bin_width,
        "bins": samples.bins.tolist(), "z_center": samples.centers.tolist(), "ln_rho": samples.ln_rho.tolist(),
        "mass": mass.tolist(), "r": rates.r.tolist(), "r_lo": rates.lo.tolist(), "r_hi": rates.hi.tolist(),
        "judged": rates.judged.tolist(), "positives": rates.positives.tolist(),
        "interpolated": rates.interpolated.tolist(),
        "interpolated_mass": float(mass[rates.interpolated].sum()),
        "threshold": th.tolist(), "precision": c["precision"].tolist(), "recall": c["recall"].tolist(),
        "tpr": c["tpr"].tolist(), "fpr": c["fpr"].tolist(), "aupr": c["aupr"],
        "aupr_own_range": c["aupr_own_range"], "recall_range": [float(np.min(c["recall"])), float(np.max(c["recall"]))],
        "auroc": c["auroc"],
        "ln_positives": float(c["ln_P"]), "ln_negatives": float(c["ln_N"]),
        "positive_share": float(np.exp(c["ln_P"] - np.logaddexp(c["ln_P"], c["ln_N"]))),
        "limits": {"most_selective": {"threshold": float(th[0]), "precision": float(c["precision"][0]),
                                      "recall": float(c["recall"][0])},
                   "everything": {"threshold": float(th[-1]), "precision": float(c["precision"][-1]),
                                  "recall": float(c["recall"][-1])}},
        "n_judgments": int(len(labels)),
    }
    if samples.model.get("output") == "logit":
        out["decision"] = decision_point(samples, rates.r)
    band = pr_bands(samples.ln_rho, rates.lo_sim, rates.hi_sim, samples.positive)
    out["bands"] = {k: v.tolist() for k, v in band.items()}
    out["bands"]["method"] = ("simultaneous over every threshold, >= 95%: Clopper-Pearson per judged bin at 5%/"
                              f"{int((~rates.interpolated).sum())} (Bonferroni), unjudged bins anywhere in [0, 1]")
    out["intervals"] = judgment_intervals(samples, rates, n_boot=n_boot, seed=seed, common=common)
    out["positive_share_band"] = [band["precision_lo"][-1], band["precision_hi"][-1]]
    if rates.positives.sum() == 0 or (rates.judged - rates.positives).sum() == 0:
        # every judged input was negative (or every one positive): recall, ROC and the share of positives are
        # not identified by the judgments; the bands still bound precision and the positive share
        out["auroc"] = out["positive_share"] = None
    if common is not None:
        out["common_recall"] = list(common)
        out["aupr_common"] = aupr(c["recall"], c["precision"], *common)
        out["aupr_common_normalised"] = out["aupr_common"] / (common[1] - common[0]) if common[1] > common[0] else None
    out["chains"] = chain_spread(samples, rates, common)
    if rates.positives.sum() == 0:
        # no judged positive: recall divides by a total of positives of 0, so no area under precision over recall
        # exists (0 would read as a model that finds none of many positives)
        for k in ("aupr", "aupr_own_range", "recall_range", "aupr_common", "aupr_common_normalised"):
            if k in out:
                out[k] = None
        out["intervals"] = {k: v for k, v in out["intervals"].items() if k not in ("aupr", "aupr_common")}
        out["aupr_note"] = "no judged input is positive: recall, and the AUPR over it, are undefined"
    unjudged = int(rates.interpolated.sum())
    out["normalised"] = unjudged == 0
    if unjudged:
        # recall over the whole space divides by sum_z r rho over every bin: with bins nobody judged, that total
        # rests on interpolated r, so no normalised recall (nor what is built on it) is given
        out["normalised_note"] = (f"{unjudged} of {rates.r.size} bins (holding {out['interpolated_mass']:.3g} of the "
                                  "space) have no judged input: recall normalised by the total of positives, AUPR and "
                                  "AUROC over the whole space are not given; see the curve within Z (unnormalised "
                                  "recall)")
        for k in ("recall", "tpr", "fpr", "aupr", "aupr_own_range", "recall_range", "auroc", "aupr_common",
                  "aupr_common_normalised", "positive_share"):
            if k in out:
                out[k] = None
        out["intervals"] = {k: v for k, v in out["intervals"].items() if k not in ("aupr", "auroc", "recall",
                                                                                    "aupr_common")}
        out["chains"] = {}
        out["limits"]["most_selective"]["recall"] = out["limits"]["everything"]["recall"] = None
        if out.get("decision"):
            out["decision"]["recall"] = None
    return out


def decision_point(samples: OmniSamples, r: np.ndarray) -> dict[str, Any]:
    """Precision and recall of the model's own decision for a logit: z > 0 (the bins at or above 0).
    When 0 falls inside a bin, that bin counts as predicted positive (the bin width bounds the error)."""
    pos = samples.edges[1:] > 0 if samples.positive == "high" else samples.edges[:-1] < 0
    lr = samples.ln_rho
    tp = logsumexp(lr[pos] + _log(r[pos])) if pos.any() else -np.inf
    pred = logsumexp(lr[pos]) if pos.any() else -np.inf
    P = logsumexp(lr + _log(r))
    return {"threshold": 0.0, "precision": float(np.exp(tp - pred)) if np.isfinite(pred) else None,
            "recall": float(np.exp(tp - P)) if np.isfinite(P) else None,
            "predicted_positive_share": float(np.exp(pred - logsumexp(lr)))}


__all__ = ["Rates", "aupr", "aupr_full", "aupr_log", "aupr_log_ratios", "auroc", "bins_in_range", "chain_spread",
           "common_output_range", "common_recall_range", "cross_model_normalisation", "decision_point",
           "distinct_per_bin", "judgment_intervals", "label_rates", "normalise_by_shared", "omni_curve",
           "output_range", "pr_bands", "pr_curve", "precision_from_roc", "range_curve", "rescaled_axis",
           "thresholds"]
