"""From rho(z) and judged representatives to precision, recall and their curves over the whole input space.

Notation (OmniInput, Liu et al.): rho(z) is the number of inputs whose output falls in the bin of z;
r(z) the share of them a judge calls positive, estimated from the representatives judged in that bin.
For a model whose *high* outputs are its positive predictions (a logit), at threshold lambda:

    precision(lambda) = sum_{z >= lambda} r(z) rho(z) / sum_{z >= lambda} rho(z)          (Eq. 3)
    recall(lambda)    = sum_{z >= lambda} r(z) rho(z) / sum_z r(z) rho(z)                  (Eq. 4)

and for a model whose *low* outputs are positive (an NLL) the sums run over z <= lambda. Thresholds are
bin edges, so every bin is wholly in or out. Everything is computed in log space: rho spans e^180 on
the digits.

**Limits.** As lambda passes the most positive bin, precision tends to that bin's r and recall to its
share of the positives; at the other end recall is 1 and precision is the positive share of the whole
space. For logit outputs we also report the model's own decision (z > 0: the designated class wins),
a single point on the curve.

**AUPR** is the area under precision as a function of recall, precision interpolated linearly between
the thresholds' points (as the paper does). ``aupr`` covers recall 0 to 1: below the first point the
curve is held at the most positive bin's precision, which is what the binning assumes (r is constant
within a bin, so moving the threshold through that bin lowers recall to 0 at constant precision).
``aupr_common`` is the paper's comparison: the area on the recall range every compared curve covers
(:func:`common_recall_range`), without that extension, also divided by the range's width.

**ROC** (the paper's Appendix A): TPR = recall and FPR(lambda) = sum (1 - r) rho / sum_z (1 - r) rho over
the same thresholds; with P = sum r rho and N = sum (1 - r) rho, precision = TPR P / (TPR P + FPR N),
so the PR curve and the ROC curve carry the same information given P / N (:func:`precision_from_roc`).

**Normalisations** for comparing models: *entire distribution* -- rho divided by its sum, the share of
the input space per bin (:meth:`OmniSamples.mass`); *cross-model* -- outputs rescaled to [0, 1] by
the smallest and largest output of all models compared, rho re-binned on that common axis
(:func:`cross_model`), so distributions of models with different output scales share both axes.

**Intervals** come from the judgments (:func:`judgment_intervals`): the bins' r are treated as draws
from one Beta(a, b) whose a and b are fitted to all bins' judgments by the beta-binomial marginal
likelihood (empirical Bayes, :func:`fit_beta_prior`); each bin's r is drawn from its posterior
Beta(a + positives, b + negatives) and the curves recomputed. A fixed prior such as Jeffreys' Beta(1/2,
1/2) would not do: it gives a bin judged 0 of 10 a mean r of 4.5%, and over bins holding nearly all of
a huge input space that invents more positives than there are (on the toy it put the whole interval
below the estimate). The intervals assume the representatives are uniform draws within their bins and
take rho as exact; rho's own error is reported beside them, as the spread of the independent chains'
curves. Their coverage is measured on the toy, where the truth is known (``benchmarks/omni_toy.py``).
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
    """r per bin: ``judged`` (items judged), ``positives`` (sum of their labels), ``raw`` (positives /
    judged), ``r`` (the estimate: the posterior mean under ``prior``, or ``raw`` without shrinkage;
    interpolated in z where ``interpolated``), ``lo``/``hi`` (95% posterior interval, NaN where not
    judged), ``prior`` ((a, b) of the Beta prior, or None)."""

    bins: np.ndarray
    judged: np.ndarray
    positives: np.ndarray
    raw: np.ndarray
    r: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    interpolated: np.ndarray
    prior: tuple[float, float] | None


def label_rates(samples: OmniSamples, z: Sequence[float], labels: Sequence[float], level: float = 0.95, *,
                shrink: bool = True) -> Rates:
    """r per bin of ``samples`` from judged inputs (their outputs ``z`` and ``labels`` in [0, 1]; a label
    may be a share of annotators). With ``shrink`` (default) each judged bin's r is its posterior mean
    under the Beta prior fitted to all bins (:func:`fit_beta_prior`: empirical Bayes, which pulls a bin
    with few judgments toward what the other bins show and tends to positives / judged as judgments
    grow); without, positives / judged. Bins without a judged input get r interpolated linearly in z
    between the nearest judged bins (constant beyond the ends) and are flagged ``interpolated``.

    >>> import numpy as np
    >>> from evalsift.omninput.samples import OmniSamples, Candidates
    >>> from evalsift.omninput.space import InputSpace
    >>> c = Candidates(np.zeros((0, 2), dtype=np.int16), *(np.zeros(0),) * 4)
    >>> s = OmniSamples({}, InputSpace(2, 3), {}, 1.0, np.array([0, 1, 2]), np.log([5., 3., 1.]), np.zeros((0, 3)),
    ...                 np.zeros(3, int), c)
    >>> r = label_rates(s, [0.5, 0.2, 2.5], [0, 1, 1], shrink=False)   # bin 0: 1 of 2 positive, bin 2: 1 of 1
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
    pa, pb = fit_beta_prior(k[judged], n[judged]) if shrink else (0.5, 0.5)
    est = (pa + k) / (pa + pb + n) if shrink else raw
    centers = samples.centers
    r_all = np.interp(centers, centers[judged], est[judged])
    a = (1 - level) / 2
    lo = np.where(judged, beta.ppf(a, pa + k, pb + n - k), np.nan)
    hi = np.where(judged, beta.ppf(1 - a, pa + k, pb + n - k), np.nan)
    return Rates(samples.bins, n.astype(np.int64), k, raw, r_all, lo, hi, ~judged, (pa, pb) if shrink else None)


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


def cross_model(samples: Sequence[OmniSamples], n_bins: int = 50) -> dict[str, Any]:
    """Every model's entire-distribution-normalised rho on one [0, 1] axis: z rescaled by the smallest
    lower edge and largest upper edge over all models, mass re-binned into ``n_bins`` equal bins
    (each source bin's mass spread uniformly over its extent)."""
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
    return {"z_min": lo, "z_max": hi, "edges": grid.tolist(), "mass": [v.tolist() for v in out]}


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


def fit_beta_prior(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """(a, b) of the Beta distribution of r across bins that best explains ``k`` positives of ``n``
    judged per bin (beta-binomial marginal likelihood, a and b in [1e-3, 1e3]; k may be fractional).

    >>> a, b = fit_beta_prior(np.array([0, 0, 0, 0, 10.0]), np.array([10, 10, 10, 10, 10.0]))
    >>> bool(a < 0.5 and b < 2)                       # a U-shaped prior: bins are all-no or all-yes
    True
    """
    from scipy.optimize import minimize
    from scipy.special import betaln

    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)

    def nll(t: np.ndarray) -> float:
        a, b = np.exp(t)
        return -float(np.sum(betaln(a + k, b + n - k) - betaln(a, b)))

    best = min((minimize(nll, np.log([a0, b0]), method="L-BFGS-B", bounds=[(np.log(1e-3), np.log(1e3))] * 2)
                for a0, b0 in ((0.5, 0.5), (0.1, 1.0), (1.0, 1.0))), key=lambda r: r.fun)
    a, b = np.exp(best.x)
    return float(a), float(b)


def judgment_intervals(samples: OmniSamples, rates: Rates, *, n_boot: int = 1000, seed: int = 0,
                       common: tuple[float, float] | None = None, level: float = 0.95) -> dict[str, Any]:
    """Intervals from the judgments alone: r per judged bin drawn from its posterior under the fitted
    prior, Beta(a + k, b + n - k) (:func:`fit_beta_prior`; unjudged bins re-interpolated), the curves
    recomputed ``n_boot`` times. Returns percentile intervals of AUPR (on ``common`` too, when given),
    AUROC and precision / recall per threshold, and the prior."""
    rng = np.random.default_rng(seed)
    judged = ~rates.interpolated
    k, n = rates.positives[judged], rates.judged[judged].astype(np.float64)
    centers = samples.centers
    pa, pb = rates.prior or fit_beta_prior(k, n)
    draws = rng.beta(pa + k, pb + n - k, size=(n_boot, k.size))
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
    out = {"level": level, "n_boot": n_boot, "seed": seed, "prior": [pa, pb], "aupr": q(au),
           "aupr_posterior_mean": float(np.mean(au)), "auroc": q(roc),
           "precision": np.quantile(np.array(prec), [a, 1 - a], axis=0).tolist(),
           "recall": np.quantile(np.array(rec), [a, 1 - a], axis=0).tolist(),
           "assumption": "the bins' r are draws from one Beta distribution fitted to all bins' judgments "
                         "(empirical Bayes); representatives are uniform draws within their bins; rho is taken as "
                         "exact (its own error is the chains' spread, reported beside)"}
    if common is not None:
        out["aupr_common"] = q(au_c)
    return out


def chain_spread(samples: OmniSamples, rates: Rates, common: tuple[float, float] | None = None) -> dict[str, Any]:
    """AUPR with each independent chain's rho (the sampler's own error on the curve), r fixed."""
    vals, vals_c = [], []
    for ln in samples.ln_rho_chains:
        ok = np.isfinite(ln)
        if not ok.any():
            continue
        c = pr_curve(np.where(ok, ln, -np.inf), rates.r, samples.positive)
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
        "mass": mass.tolist(), "r": rates.r.tolist(), "r_raw": rates.raw.tolist(), "r_lo": rates.lo.tolist(),
        "r_hi": rates.hi.tolist(), "prior": list(rates.prior) if rates.prior else None,
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
    if common is not None:
        out["common_recall"] = list(common)
        out["aupr_common"] = aupr(c["recall"], c["precision"], *common)
        out["aupr_common_normalised"] = out["aupr_common"] / (common[1] - common[0]) if common[1] > common[0] else None
    out["intervals"] = judgment_intervals(samples, rates, n_boot=n_boot, seed=seed, common=common)
    out["chains"] = chain_spread(samples, rates, common)
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


__all__ = ["Rates", "aupr", "aupr_full", "auroc", "chain_spread", "common_recall_range", "cross_model", "decision_point",
           "fit_beta_prior",
           "judgment_intervals", "label_rates", "omni_curve", "pr_curve", "precision_from_roc", "thresholds"]
