"""Which human battles to ask for: the draws behind ``--allocation`` (issue 22, part 3).

Every draw records how likely each battle was to be drawn, so the leaderboard can weight it by the
inverse and estimate sums over *all* battles, whatever the rule did:

- ``uniform`` (:func:`draw_uniform`): a simple random sample without replacement.
- ``active`` (:func:`draw_active`): Chatbot Arena's rule (Chiang et al. 2024, Sec. 5) as the paper
  defines it, with replacement, in rounds (:func:`pair_probabilities`).
- ``neyman`` (:func:`draw_neyman`; our rule): a stratified sample. The battles are cut into strata
  before anything is drawn -- a pair of models, split by what the judges said when judges are given
  (:func:`design_strata`) -- and each stratum's share of the budget is chosen, in rounds, by Neyman's
  rule for the quantity that decides the rank-sets: ``n_h`` proportional to ``N_h * sqrt(v_h g_h)``.
  ``N_h`` is the stratum's size, ``v_h`` the variance of what people say there beyond what the judges
  predict (the PPI residual ``y - lam f``), and ``g_h`` how much one battle of that stratum moves the
  pairwise differences whose separation is still in doubt. Battles go where people and judges
  disagree, and where a comparison is close to being settled. The rule is cross-fitted: every cell is
  cut in two halves, twin strata in two folds, and each fold's shares are read from the other fold's
  draws only, so no stratum's own verdicts steer how many of its battles are drawn. Within a stratum
  the battles are drawn
  uniformly without replacement, so each drawn battle of stratum ``h`` stands for ``N_h / n_h`` battles
  (post-stratified weights) and the variance is the stratified one (:func:`evalsift.arena.bt.fit_bt_ppi`
  with ``strata``).

>>> import numpy as np
>>> from evalsift.arena.battles import Battles
>>> b = Battles.from_arrays(["X", "Y", "Z"], [0] * 60 + [1] * 40, [1] * 60 + [2] * 40, [1.0] * 100)
>>> labels, sizes = design_strata(b, None, budget=20)    # two pairs, each large enough: two halves each
>>> sizes.tolist()
[30, 30, 20, 20]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import DataError
from .battles import Battles
from .bt import RIDGE, _fit_rows, _judge_matrix, _pinv, _rows, _xx, fit_bt_ppi

EXPLORE = 0.1  # the active rule's uniform share
ROUNDS = 20  # the active rule refits this many times over the budget
PER_STRATUM = 4  # a cell is its own stratum (two halves) when a proportional share of the budget gives it this many battles
PILOT = 0.25  # neyman: the share of the budget drawn proportionally before the strata's variances are known
NEYMAN_ROUNDS = 4  # neyman: the allocation is recomputed this many times after the pilot
PAIR_PRIOR = 100.0  # neyman: a pair's own residual variance counts as much as this many draws at the model's


def draw_uniform(n_total: int, budget: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``budget`` of ``n_total`` battles uniformly without replacement: (positions, inclusion probabilities)."""
    idx = np.sort(rng.choice(n_total, size=budget, replace=False))
    return idx, np.full(budget, budget / n_total)


def _pair_index(battles: Battles) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each battle's unordered pair: ``(pair code per battle, the pairs' first model, second model)``, codes
    into the sorted distinct pairs."""
    K = battles.K
    key = np.minimum(battles.a, battles.b) * K + np.maximum(battles.a, battles.b)
    pairs, inverse = np.unique(key, return_inverse=True)
    return inverse, pairs // K, pairs % K


def pair_probabilities(battles: Battles, pa: np.ndarray, pb: np.ndarray, used: np.ndarray, *,
                       explore: float = EXPLORE, beta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Chatbot Arena's active rule (Chiang et al. 2024, Sec. 5) for the next battle: over the pairs
    ``(pa[p], pb[p])``, probabilities ``(1 - explore) * gain / sum(gain) + explore / P`` with ``gain =
    sqrt(v / n) - sqrt(v / (n + 1))`` -- how much one more battle would shrink the pair's interval --
    where ``n = used[p]`` battles of the pair were drawn so far and ``v / n`` is the variance of the
    pair's difference in the weighted human-only fit of ``battles`` (the draws so far, weighted by
    their ``prob``). A pair never drawn gains ``sqrt(v)``; with no battles yet every pair is equal.
    Returns ``(probabilities, the fit's strengths)``."""
    from scipy.special import expit

    K, P = battles.K, len(pa)
    used = np.asarray(used, float)
    beta = np.zeros(K) if beta0 is None else beta0
    if battles.n:
        rows = _rows(battles.a, battles.b, battles.y[:, None], 1.0 / battles.prob)
        beta = _fit_rows(rows, K, beta0)
        p = expit(beta[rows.a] - beta[rows.b])
        cov = np.linalg.inv(_xx(rows.a, rows.b, rows.count * p * (1 - p), K) + RIDGE * np.eye(K))
        v = np.maximum(cov[pa, pa] + cov[pb, pb] - 2 * cov[pa, pb], 1e-12) * np.maximum(used, 1)
    else:
        v = np.ones(P)
    gain = np.sqrt(v / np.maximum(used, 1)) - np.sqrt(v / (used + 1))
    gain = np.where(used == 0, np.sqrt(v), gain)  # an unseen pair: as much as a first battle can give
    return (1 - explore) * gain / gain.sum() + explore / P, beta


def draw_active(battles: Battles, budget: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Chatbot Arena's active rule (:func:`pair_probabilities`), simulated on the recorded battles: in
    ``ROUNDS`` rounds, pairs drawn by the rule refitted on the draws so far, then a battle drawn
    uniformly within the pair (with replacement: the same recorded vote may be drawn twice). Each
    draw's weight is the inverse of its probability ``T * P(battle)``, so the weighted sum of any
    battle quantity is unbiased for its sum over all battles."""
    K = battles.K
    inverse, pa, pb = _pair_index(battles)
    sizes = np.bincount(inverse)
    members = np.split(np.argsort(inverse, kind="stable"), np.cumsum(sizes)[:-1])
    P = len(pa)
    chosen, probs = [], []
    used = np.zeros(P)
    per_round = [budget // ROUNDS + (1 if r < budget % ROUNDS else 0) for r in range(ROUNDS)]
    beta = np.zeros(K)
    for m in per_round:
        if m == 0:
            continue
        q, beta = pair_probabilities(battles.subset(chosen, prob=probs), pa, pb, used, beta0=beta)
        for d in rng.choice(P, size=m, p=q):
            chosen.append(int(members[d][rng.integers(sizes[d])]))
            probs.append(float(budget * q[d] / sizes[d]))  # T * P(this battle at this draw)
            used[d] += 1
    return np.asarray(chosen, dtype=int), np.asarray(probs)


# ---------------------------------------------------------------------------------------------- neyman
def judge_class(battles: Battles, judges: Sequence[str]) -> np.ndarray:
    """What the judges said of each battle, as a class for the strata, oriented to the pair's
    lower-numbered model: the mean of the judges' verdicts rounded to 0 (the other side won), 1 (a tie)
    or 2 (the lower-numbered model won); 3 where no judge gave a verdict; 0 for every battle without judges."""
    if not judges:
        return np.zeros(battles.n, dtype=int)
    F = np.column_stack([battles.judges[j] for j in judges])
    first = (battles.a < battles.b)[:, None]
    F = np.where(first, F, 1.0 - F)
    seen = ~np.isnan(F)
    mean = np.where(seen, F, 0.0).sum(axis=1) / np.maximum(seen.sum(axis=1), 1)
    return np.where(seen.any(axis=1), np.rint(2 * mean).astype(int), 3)


def design_strata(battles: Battles, judges: Sequence[str] | None, budget: int, *,
                  per_stratum: int = PER_STRATUM) -> tuple[np.ndarray, np.ndarray]:
    """The strata of a ``neyman`` draw, fixed from the battles alone before anything is drawn: a cell is a
    pair of models and the judges' class (:func:`judge_class`); a cell that a proportional share of
    ``budget`` would give fewer than ``per_stratum`` battles joins the rest of its pair, and a pair's rest
    that small joins one stratum of all such rests. Each of these is then cut in two halves, its battles
    taken alternately in file order: twin strata, numbered side by side, so that each half's share can be
    read from the other half's draws (:func:`crossfit_folds`). Returns ``(stratum per battle, stratum
    sizes)``, so at most ``2 * (budget / per_stratum + 1)`` strata."""
    inverse, _, _ = _pair_index(battles)
    cls = judge_class(battles, list(judges or ()))
    least = per_stratum * battles.n / budget
    cell = inverse * 4 + cls
    cell_size = np.bincount(cell)[cell]
    rest = -1 - inverse  # a pair's rest: negative codes, apart from the cells
    label = np.where(cell_size >= least, cell, rest)
    small = label < 0
    if small.any():
        rest_size = np.bincount(inverse[small], minlength=inverse.max() + 1)[inverse]
        label = np.where(small & (rest_size < least), -(inverse.max() + 2), label)  # the one stratum of small rests
    _, label = np.unique(label, return_inverse=True)
    # each stratum cut in two halves, its battles alternately in file order: twins, side by side in the order
    sizes = np.bincount(label)
    order = np.argsort(label, kind="stable")
    rank = np.empty(battles.n, dtype=int)
    rank[order] = np.arange(battles.n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    _, label = np.unique(2 * label + rank % 2, return_inverse=True)
    return label.astype(int), np.bincount(label)


def stratum_probabilities(strata: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Each draw's inclusion probability in a stratified draw: ``n_h / N_h`` for its stratum ``h``, ``n_h``
    the draws of that stratum (its weight, ``N_h / n_h``, is the post-stratified one)."""
    strata = np.asarray(strata, dtype=int)
    return (np.bincount(strata, minlength=len(N)) / N)[strata]


def _triu_pairs(a: np.ndarray, b: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Each battle's pair as its position in ``np.triu_indices(K, 1)`` order, and +1 where ``a`` is the
    pair's lower-numbered model (-1 where it is the higher)."""
    code = np.zeros((K, K), dtype=int)
    i, j = np.triu_indices(K, 1)
    code[i, j] = np.arange(len(i))
    return code[np.minimum(a, b), np.maximum(a, b)], np.where(a < b, 1.0, -1.0)


def integer_allocation(z: np.ndarray, total: int, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Integers ``n_h`` with ``lower <= n <= upper`` summing to ``total``, as close as the bounds allow to
    ``kappa * z`` (Neyman's allocation with bounds: the continuous solution by bisection on ``kappa``,
    then floors and the largest remainders).

    >>> integer_allocation(np.array([1.0, 1.0, 2.0]), 8, np.zeros(3, int), np.array([10, 1, 10])).tolist()
    [2, 1, 5]
    """
    z, lower, upper = np.asarray(z, float), np.asarray(lower, int), np.asarray(upper, int)
    total = int(min(max(total, lower.sum()), upper.sum()))
    if upper.sum() == total:
        return upper.copy()
    lo, hi = 0.0, 1.0
    while np.clip(hi * z, lower, upper).sum() < total:
        hi *= 2.0
        if hi > 1e300:  # zero z everywhere the bounds leave room: fill by the upper bounds
            z = z + (upper > lower)
            hi = 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.clip(mid * z, lower, upper).sum() < total:
            lo = mid
        else:
            hi = mid
    x = np.clip(hi * z, lower, upper)
    n = np.minimum(np.floor(x + 1e-9).astype(int), upper)
    n = np.maximum(n, lower)
    short = total - int(n.sum())
    if short > 0:
        room = np.flatnonzero(n < upper)
        order = room[np.argsort(-(x[room] - n[room]), kind="stable")]
        n[order[:short]] += 1
    elif short < 0:
        room = np.flatnonzero(n > lower)
        order = room[np.argsort(x[room] - n[room], kind="stable")]
        n[order[:-short]] -= 1
    return n


def _contrast_weights(diff: np.ndarray, cov: np.ndarray, shrink: float, alpha: float) -> np.ndarray:
    """``A``: how much the variance of each pairwise difference matters for the rank-sets at the end of the
    budget (variances ``shrink`` times today's): ``sum_ij w_ij c_ij c_ij^T`` with ``w_ij = phi(t - c) *
    max(t, 1/2) / var_ij``, ``t = |diff_ij|`` in standard errors then (``diff``: per pair ``i < j`` in
    ``np.triu_indices`` order) and ``c`` Bonferroni's critical value over the ordered pairs (a stand-in for
    the rank-sets' own, good enough to weigh by). This is the rate at which lowering ``var_ij`` raises the
    chance that the pair ends up separated."""
    from scipy.stats import norm

    K = len(cov)
    i, j = np.triu_indices(K, 1)
    var = np.maximum(cov[i, i] + cov[j, j] - 2 * cov[i, j], 1e-12) * shrink
    t = np.abs(diff) / np.sqrt(var)
    c = float(norm.ppf(1 - alpha / (K * (K - 1))))
    w = norm.pdf(t - c) * np.maximum(t, 0.5) / var + 1e-6 / var.mean()
    A = np.zeros((K, K))
    np.add.at(A, (i, i), w)
    np.add.at(A, (j, j), w)
    np.add.at(A, (i, j), -w)
    np.add.at(A, (j, i), -w)
    return A


def _residual_variance(battles: Battles, idx: np.ndarray, strata: np.ndarray, resid: np.ndarray, p: np.ndarray,
                       cls: np.ndarray, label: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Per stratum, the variance of people's verdicts beyond what the fit and the judges predict (``resid``,
    the PPI residual of each draw). A model fitted to the draws ``idx`` (in :func:`neyman_allocation`, the
    other fold's) gives the within-stratum variance ``theta_c + phi_c p (1 - p)`` for the judges' class
    ``c`` and the win probability ``p`` of each battle (the left-out one, :func:`_left_out_differences`);
    each pair then gets its own level against that model, from the pair's draws among ``idx`` (a twin
    half's and the pair's other cells') shrunk toward 1 as if ``PAIR_PRIOR`` more draws had matched the
    model. Averaged over the stratum's battles."""
    H = len(N)
    e = np.where(battles.a[idx] < battles.b[idx], resid, -resid)  # oriented to the pair, as the strata are
    k = np.bincount(strata, minlength=H)
    mean = np.bincount(strata, e, H) / np.maximum(k, 1)
    keep = k[strata] >= 2
    r2 = (e - mean[strata]) ** 2 / np.where(keep, 1.0 - 1.0 / np.maximum(k[strata], 2), 1.0)  # unbiased, per draw
    X = np.zeros((len(e), 8))
    X[np.arange(len(e)), cls[idx]] = 1.0
    X[np.arange(len(e)), 4 + cls[idx]] = (p * (1 - p))[idx]
    if keep.sum() < 8:
        return np.ones(H)
    theta = np.linalg.lstsq(X[keep], r2[keep], rcond=None)[0]
    floor = max(0.05 * float(r2[keep].mean()), 1e-4)
    per_battle = np.maximum(theta[cls] + theta[4 + cls] * p * (1 - p), floor)
    pair, _, _ = _pair_index(battles)
    P = int(pair.max()) + 1
    got = np.bincount(pair[idx][keep], r2[keep], P)
    expected = np.bincount(pair[idx][keep], per_battle[idx][keep], P)
    count = np.bincount(pair[idx][keep], minlength=P)
    mean_v = expected / np.maximum(count, 1)
    level = (got + PAIR_PRIOR * mean_v) / np.maximum(expected + PAIR_PRIOR * mean_v, 1e-12)
    per_battle = per_battle * np.where(count > 0, level, 1.0)[pair]
    return np.maximum(np.bincount(label, per_battle, H) / N, floor)


def _left_out_differences(battles: Battles, idx: np.ndarray, resid: np.ndarray, weight: np.ndarray, share: float,
                          coef: np.ndarray, Hi: np.ndarray) -> np.ndarray:
    """Per pair ``i < j`` (``np.triu_indices`` order), the difference ``beta_i - beta_j`` with that pair's own
    human draws left out: one Newton step from the fit, ``d - S a / (1 - h a)``, where ``S`` is the pair's
    weighted residual sum (oriented to ``i``), ``h`` its weighted information ``(1 - share) p (1 - p)`` and
    ``a = x^T H^+ x``. Pairs with no draws, or whose draws are the only link between their models, keep
    the fit's difference. A pair's own verdicts so steer neither its share of the battles nor its weight
    in the estimate: steering by them sends more battles where a pair happened to look close and fewer
    where it happened to look settled, and the settled-looking ones stay too far apart."""
    from scipy.special import expit

    K = len(coef)
    i, j = np.triu_indices(K, 1)
    a, b = battles.a[idx], battles.b[idx]
    pair, sign = _triu_pairs(a, b, K)
    p = expit(coef[a] - coef[b])
    S = np.bincount(pair, weight * resid * sign, len(i))
    h = np.bincount(pair, weight * (1.0 - share) * p * (1 - p), len(i))
    ax = Hi[i, i] + Hi[j, j] - 2 * Hi[i, j]
    room = 1.0 - h * ax
    d = coef[i] - coef[j]
    return np.where((h > 0) & (room > 0.05), d - S * ax / np.maximum(room, 0.05), d)


def _relevance(battles: Battles, Hi: np.ndarray, diff: np.ndarray, cov: np.ndarray, shrink: float, alpha: float,
               label: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Per stratum, the mean over its battles (drawn or not) of ``x^T H^+ A H^+ x``: how much one battle
    there lowers the variances that decide the rank-sets (``A``: :func:`_contrast_weights` at the pairs'
    differences ``diff``; ``Hi``: ``H^+``, ``H`` the Hessian over every battle at the fit; ``x = e_a - e_b``)."""
    G = Hi @ _contrast_weights(diff, cov, shrink, alpha) @ Hi
    gx = G[battles.a, battles.a] + G[battles.b, battles.b] - 2 * G[battles.a, battles.b]
    return np.bincount(label, gx, len(N)) / N


def _neyman_weights(battles: Battles, idx: np.ndarray, y: np.ndarray, label: np.ndarray, N: np.ndarray,
                    judges: Sequence[str], budget: int, alpha: float) -> np.ndarray | None:
    """Neyman's weights ``N_h sqrt(v_h g_h)`` for every stratum (:func:`_residual_variance`, :func:`_relevance`),
    read from the human draws at positions ``idx`` (verdicts ``y``) through a refit of the leaderboard (with the
    judges, by PPI++); None while those draws cannot be fitted (some model without a battle)."""
    from scipy.special import expit

    strata = label[idx]
    n = np.bincount(strata, minlength=len(N))
    try:
        fit = fit_bt_ppi(battles, idx, judges, prob=stratum_probabilities(strata, N), strata=strata, verdicts=y)
    except DataError:
        return None
    F = _judge_matrix(battles, judges)
    lam = np.array([fit.lam.get(j, 0.0) for j in judges])
    p = expit(fit.coef[battles.a[idx]] - fit.coef[battles.b[idx]])
    resid = y - p - ((F[idx] - p[:, None]) @ lam if len(judges) else 0.0)
    p_all = expit(fit.coef[battles.a] - fit.coef[battles.b])
    Hi = _pinv(_xx(battles.a, battles.b, p_all * (1 - p_all), battles.K))
    diff = _left_out_differences(battles, idx, resid, (N / np.maximum(n, 1))[strata], float(lam.sum()), fit.coef, Hi)
    pair, sign = _triu_pairs(battles.a, battles.b, battles.K)
    v = _residual_variance(battles, idx, strata, resid, expit(sign * diff[pair]), judge_class(battles, judges), label,
                           N)
    g = _relevance(battles, Hi, diff, fit.cov, min(n.sum() / budget, 1.0), alpha, label, N)
    return N * np.sqrt(np.maximum(v * g, 0.0))


def crossfit_folds(N: np.ndarray) -> np.ndarray:
    """The two folds of a ``neyman`` draw's strata (0 or 1 per stratum), fixed before anything is drawn:
    alternate strata in :func:`design_strata`'s order, so the two halves of every cell fall on both sides
    and each fold is a stratified half of all the battles."""
    return np.arange(len(N)) % 2


def neyman_allocation(battles: Battles, idx: np.ndarray, y: np.ndarray, label: np.ndarray, N: np.ndarray,
                      judges: Sequence[str], total: int, budget: int, alpha: float) -> np.ndarray:
    """The next allocation of a ``neyman`` draw: given the human draws so far (positions ``idx`` with
    verdicts ``y``) in the strata ``label`` (sizes ``N``), integers ``n_h`` summing to ``total``,
    proportional to ``N_h sqrt(v_h g_h)`` (:func:`_neyman_weights`) within the bounds: never fewer than
    drawn so far, never more than the stratum holds. ``budget``: the draw's whole budget.

    Cross-fitted: the strata fall into two folds (:func:`crossfit_folds`; the twin halves of a cell on
    both sides); each fold gets its share of ``total`` in proportion to its battles, and within a fold the
    weights are read from the *other* fold's draws only. So no stratum's own verdicts steer its share: were
    they to, a stratum whose first draws happened to look settled (for binary verdicts, a low sample
    variance goes with an extreme sample mean) would get fewer battles and keep those draws at the weight
    ``N_h / n_h``, and the strongest and weakest models would come out too far apart (issue 29). While the
    other fold's draws cannot be fitted, a fold is allocated in proportion to ``N_h``."""
    strata = label[idx]
    n = np.bincount(strata, minlength=len(N))
    total = int(min(max(total, n.sum()), N.sum()))
    first = crossfit_folds(N) == 0
    lo0, hi0, lo1, hi1 = n[first].sum(), N[first].sum(), n[~first].sum(), N[~first].sum()
    share = int(np.clip(round(total * hi0 / N.sum()), max(lo0, total - hi1), min(hi0, total - lo1)))
    out = n.copy()
    for mine, k in ((first, share), (~first, total - share)):
        other = ~mine[strata]
        z = _neyman_weights(battles, idx[other], np.asarray(y)[other], label, N, judges, budget, alpha)
        out[mine] = integer_allocation((N.astype(float) if z is None else z)[mine], k, n[mine], N[mine])
    return out


def pilot_allocation(N: np.ndarray, budget: int, pilot: float = PILOT) -> np.ndarray:
    """A ``neyman`` draw's pilot: ``pilot * budget`` battles (at least 2 per stratum, or the whole stratum
    when smaller) in proportion to the strata's sizes ``N``."""
    floor = np.minimum(N, 2)
    first = min(int(max(floor.sum(), round(pilot * budget))), budget)
    return integer_allocation(N.astype(float), first, floor, N)


def draw_neyman(battles: Battles, budget: int, rng, judges: Sequence[str] = (), *, alpha: float = 0.05,
                pilot: float = PILOT, rounds: int = NEYMAN_ROUNDS,
                per_stratum: int = PER_STRATUM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``neyman`` draw (module doc), simulated on recorded battles: ``budget`` battles without
    replacement, stratified by :func:`design_strata`. The pilot (:func:`pilot_allocation`) first; then, in
    ``rounds`` rounds, the allocation recomputed on the draws so far (:func:`neyman_allocation`: each fold
    of the strata from the other fold's draws), never taking back a battle already drawn. Returns
    ``(positions, inclusion probabilities n_h / N_h, stratum per draw)``; each stratum's draws are a simple
    random sample of it."""
    judges = list(judges)
    label, N = design_strata(battles, judges, budget, per_stratum=per_stratum)
    members = [rng.permutation(m) for m in np.split(np.argsort(label, kind="stable"), np.cumsum(N)[:-1])]
    n = pilot_allocation(N, budget, pilot)
    first = int(n.sum())
    for r in range(rounds):
        total = first + int(round((budget - first) * (r + 1) / rounds))
        if total > n.sum():
            idx = np.concatenate([m[:k] for m, k in zip(members, n)])
            n = neyman_allocation(battles, idx, battles.y[idx], label, N, judges, total, budget, alpha)
    idx = np.sort(np.concatenate([m[:k] for m, k in zip(members, n)]))
    return idx, stratum_probabilities(label[idx], N), label[idx]


def strata_note(strata: np.ndarray) -> str:
    """A short description of a stratified draw's strata (for the leaderboard's summary)."""
    k = np.bincount(strata)
    k = k[k > 0]
    return f"{len(k)} strata, {int(k.min())}-{int(k.max())} human battles each" if len(k) else "no strata"


__all__ = ["EXPLORE", "NEYMAN_ROUNDS", "PAIR_PRIOR", "PER_STRATUM", "PILOT", "ROUNDS", "crossfit_folds", "design_strata",
           "draw_active", "draw_neyman", "draw_uniform", "integer_allocation", "judge_class", "neyman_allocation",
           "pair_probabilities", "pilot_allocation", "strata_note", "stratum_probabilities"]
