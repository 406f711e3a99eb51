"""Item response theory: 1PL/2PL/3PL/4PL fitted by maximum a posteriori (MAP) with L-BFGS.

The model (``docs/irt.md``): system ``s`` with ability ``theta_s`` answers item ``j`` correctly with

    P_sj = c_j + (d_j - c_j) * sigmoid(a_j * (theta_s - b_j))

with difficulty ``b_j``, discrimination ``a_j > 0``, guessing (lower asymptote) ``c_j`` and
feasibility (upper asymptote) ``d_j``. 1PL: ``a = 1, c = 0, d = 1``; 2PL: ``c = 0, d = 1``; 3PL:
``d = 1``; 3PLu: ``c = 0`` (``P = d * sigmoid(a (theta - b))``, the model of Zouhar et al., TACL 2025,
Eq. 7, whose feasibility is our ``d``). Responses ``Y`` (systems x items) are 0/1 (Bernoulli
likelihood) or continuous in [0, 1] (the paper's Eq. 8 predicts the continuous score itself), which
enter the same log-likelihood ``y log P + (1 - y) log(1 - P)`` as soft targets (our choice of loss:
the paper fits by variational inference and does not state one); NaN marks a missing response and
is left out of the likelihood.

Priors (all weak; the defaults of :func:`fit_irt`):

- ``theta_s ~ N(0, 1)``, ``b_j ~ N(0, 2^2)``, ``log a_j ~ N(0, 1)`` (``a = exp(log a) > 0``);
- the asymptotes are a softmax of two logits: ``(c, d - c, 1 - d) = softmax(gamma, 0, eta)`` so
  that ``0 < c < d < 1`` always; the logits get the log-density ``sum_k alpha_k log pi_k`` with
  ``alpha = (1, 8, 1)``: the push-forward of a Dirichlet(1, 8, 1) on (c, d - c, 1 - d), whose mode
  in logit space is ``c = 0.1, d = 0.9``, worth 10 pseudo-responses per item (3PL: Beta(1, 9) on
  ``c``, mode 0.1).

Identification: the likelihood is unchanged when every ability and difficulty moves by the same
amount, so the fit constrains the mean ability to exactly 0 (the optimiser works on centred
abilities; difficulties are measured from the average system). The spread is pinned by the
``N(0, 1)`` ability prior and, for the 1PL, by ``a = 1``.

Speed: identical item columns are merged (weighted) before fitting, the problem is rescaled by the
diagonal of the Fisher information at the start, and everything is vectorised numpy: the
12 x 41,871 opencompass matrix fits in about a second (see ``benchmarks/estimate/irt_vs_pyirt.py``).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=40), rng.normal(size=60)
>>> Y = (rng.random((40, 60)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
>>> fit = fit_irt(Y, "1pl")
>>> fit.ability.shape, fit.difficulty.shape, abs(round(float(fit.ability.mean()), 9))
((40,), (60,), 0.0)
>>> bool(np.corrcoef(fit.ability, theta)[0, 1] > 0.8)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from .device import one_blas_thread
from .errors import DataError, ParameterError, check_choice

MODELS = ("1pl", "2pl", "3pl", "3plu", "4pl")
# the unconstrained item blocks of each model, after the abilities
_BLOCKS = {"1pl": ("b",), "2pl": ("b", "log_a"), "3pl": ("b", "log_a", "gamma"), "3plu": ("b", "log_a", "eta"),
           "4pl": ("b", "log_a", "gamma", "eta")}
_TINY = 1e-300  # floor for P and 1 - P inside log(); reached only by absurd parameters
_ONE = np.ones((1, 1))  # observation weight of a fully observed matrix without duplicate columns


# --------------------------------------------------------------------------------------------- #
# result


@dataclass(frozen=True, eq=False)  # arrays inside: identity equality, no hash of arrays
class IRTResult:
    """A fitted IRT model: item parameters, abilities, and how the fit went.

    Arrays are read-only. ``log_posterior`` and ``log_likelihood`` are evaluated at the returned
    parameters; the log posterior leaves out the priors' normalising constants. ``priors`` holds
    the prior settings of the fit, ``message`` the optimiser's stop reason.

    >>> import numpy as np
    >>> r = fit_irt(np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]]), "2pl")
    >>> r.model, r.ability.shape, r.guessing.tolist(), r.feasibility.tolist()
    ('2pl', (3,), [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    """

    model: str
    ability: np.ndarray  # (n_systems,)
    difficulty: np.ndarray  # (n_items,)
    discrimination: np.ndarray  # (n_items,)
    guessing: np.ndarray  # (n_items,)
    feasibility: np.ndarray  # (n_items,)
    log_posterior: float
    log_likelihood: float
    converged: bool
    n_iter: int
    seed: int
    priors: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def n_systems(self) -> int:
        """Number of systems the model was fitted on."""
        return int(self.ability.shape[0])

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.difficulty.shape[0])

    def probability(self, theta=None) -> np.ndarray:
        """P(correct) for each ability in ``theta`` (default: the fitted abilities) and each item.

        Shape ``(len(theta), n_items)``.

        >>> r = IRTResult.from_dict({"model": "2pl", "ability": [0.0], "difficulty": [0.0, 1.0],
        ...     "discrimination": [1.0, 2.0], "guessing": [0.0, 0.0], "feasibility": [1.0, 1.0]})
        >>> r.probability([1.0]).round(4).tolist()   # sigmoid(1 * (1 - 0)), sigmoid(2 * (1 - 1))
        [[0.7311, 0.5]]
        """
        th = self._theta(theta)
        sig = expit(self.discrimination * (th[:, None] - self.difficulty))
        return self.guessing + (self.feasibility - self.guessing) * sig

    def item_information(self, theta=None) -> np.ndarray:
        """Fisher information of each item, summed over the abilities ``theta`` (default: fitted).

        ``I_j(theta) = a^2 (P - c)^2 (d - P)^2 / ((d - c)^2 P (1 - P))``; for the 2PL this is
        ``a^2 P (1 - P)``, which is ``a^2 / 4`` at ``theta = b``. Shape ``(n_items,)``.

        >>> r = IRTResult.from_dict({"model": "2pl", "ability": [0.0], "difficulty": [0.5],
        ...     "discrimination": [2.0], "guessing": [0.0], "feasibility": [1.0]})
        >>> r.item_information(0.5).tolist()     # a^2 / 4 = 4 / 4
        [1.0]
        """
        th = self._theta(theta)
        a, c, d = self.discrimination, self.guessing, self.feasibility
        z = a * (th[:, None] - self.difficulty)
        sig, sig_neg = expit(z), expit(-z)
        m = d - c
        p = c + m * sig  # P
        q = (1.0 - d) + m * sig_neg  # 1 - P, without cancellation
        # a^2 m^2 sig^2 (1 - sig)^2 / (P (1 - P)) = a^2 [m sig / P] [m (1 - sig) / (1 - P)] sig (1 - sig)
        ratio_p = np.divide(m * sig, p, out=np.ones_like(p), where=p > 0)
        ratio_q = np.divide(m * sig_neg, q, out=np.ones_like(q), where=q > 0)
        return (a**2 * ratio_p * ratio_q * sig * sig_neg).sum(axis=0)

    def predict(self, responses, items=None) -> float:
        """MAP ability of a new system from its ``responses`` (item parameters held fixed).

        ``responses`` are 0/1 or in [0, 1] (NaN = not answered); ``items`` are their item indices
        (default: one response per item, in order). The ability prior is the fit's
        ``N(0, ability_sd^2)``, on the same centred scale as :attr:`ability`.

        >>> import numpy as np
        >>> r = IRTResult.from_dict({"model": "1pl", "ability": [0.0], "difficulty": [-1.0, 0.0, 1.0],
        ...     "discrimination": [1.0] * 3, "guessing": [0.0] * 3, "feasibility": [1.0] * 3})
        >>> r.predict([1, 1, 0]) > 0 > r.predict([1, 0, 0]) > r.predict([0, 0, 0])   # 2, 1, 0 of 3 right
        True
        >>> round(r.predict([1, 0], items=[0, 2]), 6) == round(r.predict([1, np.nan, 0]), 6)
        True
        """
        y, idx = self._new_responses(responses, items)
        a, b = self.discrimination[idx], self.difficulty[idx]
        c, d = self.guessing[idx], self.feasibility[idx]
        sd = float(self.priors.get("ability_sd", 1.0))

        def neg_log_post(th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            z = a * (th[:, None] - b)
            ll, dz, _, _ = _loglik_parts(z, c, d - c, 1.0 - d, y, 1.0 - y, _ONE, self.model)
            f = -ll.sum(axis=1) + 0.5 * th**2 / sd**2
            g = -(dz * a).sum(axis=1) + th / sd**2
            return f, g

        grid = np.linspace(-8.0, 8.0, 321) * max(sd, 1.0)  # the posterior may be multimodal (3/4PL)
        start = grid[int(np.argmin(neg_log_post(grid)[0]))]
        with one_blas_thread():
            res = minimize(lambda t: tuple(v[0] for v in neg_log_post(t)), np.array([start]), jac=True,
                           method="L-BFGS-B")
        return float(res.x[0])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of everything in the result (arrays as lists).

        >>> import numpy as np
        >>> d = fit_irt(np.array([[1, 0], [0, 1], [1, 1]]), "1pl").to_dict()
        >>> sorted(d)[:4], d["model"], d["seed"]
        (['ability', 'converged', 'difficulty', 'discrimination'], '1pl', 0)
        """
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            out[name] = v.tolist() if isinstance(v, np.ndarray) else v
        out["priors"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.priors.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IRTResult:
        """Rebuild a result from :meth:`to_dict` output (missing bookkeeping fields get defaults).

        >>> import numpy as np
        >>> r = fit_irt(np.array([[1, 0], [0, 1], [1, 1]]), "2pl")
        >>> bool(np.allclose(IRTResult.from_dict(r.to_dict()).probability(), r.probability()))
        True
        """
        arrays = ("ability", "difficulty", "discrimination", "guessing", "feasibility")
        kw = {k: _frozen(np.asarray(data[k], dtype=float)) for k in arrays}
        return cls(model=str(data["model"]), log_posterior=float(data.get("log_posterior", np.nan)),
                   log_likelihood=float(data.get("log_likelihood", np.nan)),
                   converged=bool(data.get("converged", True)), n_iter=int(data.get("n_iter", 0)),
                   seed=int(data.get("seed", 0)), priors=dict(data.get("priors", {})),
                   message=str(data.get("message", "")), **kw)

    # helpers ------------------------------------------------------------------------------- #

    def _theta(self, theta) -> np.ndarray:
        if theta is None:
            return self.ability
        th = np.atleast_1d(np.asarray(theta, dtype=float))
        if th.ndim != 1 or not np.all(np.isfinite(th)):
            raise ParameterError(f"theta must be a finite number or 1-D array of abilities, got shape {th.shape}")
        return th

    def _new_responses(self, responses, items) -> tuple[np.ndarray, np.ndarray]:
        y = np.atleast_1d(np.asarray(responses, dtype=float))
        if y.ndim != 1:
            raise DataError(f"predict: responses must be 1-D (one new system), got shape {y.shape}")
        if items is None:
            if y.size != self.n_items:
                raise DataError(f"predict: got {y.size} responses for {self.n_items} items; pass items= "
                                "with the item index of each response")
            idx = np.arange(self.n_items)
        else:
            idx = np.atleast_1d(np.asarray(items))
            if idx.ndim != 1 or idx.size != y.size or not np.issubdtype(idx.dtype, np.integer):
                raise DataError(f"predict: items must be {y.size} integer item indices (one per response), "
                                f"got {idx.tolist()!r}")
            if idx.size and (idx.min() < 0 or idx.max() >= self.n_items):
                raise DataError(f"predict: item indices must be in 0..{self.n_items - 1}, got {idx.tolist()!r}")
        _check_range(y, "predict: responses")
        keep = ~np.isnan(y)
        if not keep.any():
            raise DataError("predict: every response is NaN; give at least one answered item")
        return y[keep], idx[keep]


# --------------------------------------------------------------------------------------------- #
# fitting


def fit_irt(
    Y,
    model: str = "2pl",
    seed: int = 0,
    *,
    ability_sd: float = 1.0,
    difficulty_sd: float = 2.0,
    log_discrimination_sd: float = 1.0,
    asymptote_prior: tuple[float, float, float] = (1.0, 8.0, 1.0),
    max_iter: int = 2000,
    tol: float = 1e-12,
) -> IRTResult:
    """Fit an IRT model to ``Y`` (systems x items) by MAP with L-BFGS-B and analytic gradients.

    ``Y`` holds 0/1 or continuous responses in [0, 1]; NaN = missing (ignored). ``model`` is one of
    ``1pl, 2pl, 3pl, 3plu, 4pl`` (3PLu: feasibility without guessing, the paper's Eq. 7). ``seed``
    jitters the initialisation (abilities from the standardised
    mean score per system, difficulties from ``-logit`` of each item's mean score), so a fit is
    deterministic given its seed; the 3PL/4PL posterior can be multimodal, so seeds may differ
    slightly. Priors: ``theta ~ N(0, ability_sd^2)``, ``b ~ N(0, difficulty_sd^2)``,
    ``log a ~ N(0, log_discrimination_sd^2)``, ``(c, d - c, 1 - d)`` gets the Dirichlet push-forward
    ``sum(alpha * log pi)`` with ``alpha = asymptote_prior`` (3PL: ``(alpha_c, alpha_mid + alpha_slip)``;
    3PLu: ``(alpha_c + alpha_mid, alpha_slip)`` on ``(d, 1 - d)``).
    ``max_iter`` caps L-BFGS iterations (``converged`` is False when it is reached); ``tol`` is
    L-BFGS-B's relative objective tolerance (``ftol``). Abilities are constrained to mean 0.

    >>> import numpy as np
    >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=float)
    >>> r = fit_irt(Y, "1pl")
    >>> [int(i) for i in np.argsort(r.ability)]           # ranks follow the number correct
    [2, 1, 0, 3]
    >>> bool(np.all(np.diff(r.difficulty) > 0))         # item 0 easiest, item 3 hardest
    True
    """
    model = _check_model(model)
    Y = _check_matrix(Y)
    priors = _check_priors(ability_sd, difficulty_sd, log_discrimination_sd, asymptote_prior)
    if int(max_iter) < 1:
        raise ParameterError(f"fit_irt: max_iter must be >= 1, got {max_iter}")
    if not tol > 0:
        raise ParameterError(f"fit_irt: tol must be > 0, got {tol}")
    data = _Data(Y, merge_duplicates=True)
    lay = _Layout(model, Y.shape[0], data.n_columns)
    x0 = _initial(data, lay, priors, seed)
    h = _step_scale(x0, data, lay, priors)
    S = lay.S

    def unpack(xs: np.ndarray) -> np.ndarray:  # scaled free vector -> parameters with mean ability 0
        x = h * xs
        x[:S] -= x[:S].mean()
        return x

    def scaled(xs: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = _objective(unpack(xs), data, lay, priors)
        g[:S] -= g[:S].mean()  # chain rule through the centring (a symmetric projection)
        return f, h * g

    x0[:S] -= x0[:S].mean()
    with one_blas_thread():
        res = minimize(scaled, x0 / h, jac=True, method="L-BFGS-B",
                       options={"maxiter": int(max_iter), "ftol": float(tol), "gtol": 1e-6, "maxcor": 20})
    x = unpack(res.x)
    f, _ = _objective(x, data, lay, priors)
    ll = float(-f + _neg_log_prior(x, data, lay, priors)[0])
    theta, b, log_a, gamma, eta = lay.split(x)
    a, c, d = (v[data.column] for v in _item_arrays(lay, log_a, gamma, eta))
    return IRTResult(
        model=model, ability=_frozen(theta), difficulty=_frozen(b[data.column]),
        discrimination=_frozen(a), guessing=_frozen(c), feasibility=_frozen(d),
        log_posterior=float(-f), log_likelihood=ll, converged=bool(res.success), n_iter=int(res.nit),
        seed=int(seed), priors=priors, message=str(res.message),
    )


def negative_log_posterior(x, Y, model: str = "2pl", **priors) -> tuple[float, np.ndarray]:
    """The objective :func:`fit_irt` minimises and its gradient, at the packed parameters ``x``.

    ``x`` is ``[theta (n_systems), b (n_items), log a (2PL+), gamma (3PL, 4PL), eta (3PLu, 4PL)]``
    where ``gamma, eta`` are the guessing and slip logits of ``(c, d - c, 1 - d) = softmax(gamma, 0, eta)``.
    ``priors`` are :func:`fit_irt`'s prior keywords. Exposed for checking gradients.

    >>> import numpy as np
    >>> Y = np.array([[1.0, 0.0]])
    >>> f, g = negative_log_posterior(np.zeros(3), Y, "1pl")   # P = 1/2 everywhere
    >>> bool(np.isclose(f, 2 * np.log(2)))                    # priors are 0 at 0
    True
    """
    model = _check_model(model)
    Y = _check_matrix(Y)
    pri = _check_priors(**{**dict(ability_sd=1.0, difficulty_sd=2.0, log_discrimination_sd=1.0,
                                  asymptote_prior=(1.0, 8.0, 1.0)), **priors})
    lay = _Layout(model, *Y.shape)
    x = np.asarray(x, dtype=float)
    if x.shape != (lay.size,):
        raise ParameterError(f"x must have {lay.size} entries for a {model} on {Y.shape}, got {x.shape}")
    return _objective(x, _Data(Y, merge_duplicates=False), lay, pri)


# --------------------------------------------------------------------------------------------- #
# internals


class _Data:
    """The response matrix prepared once for the objective.

    Identical item columns (same responses, same NaN pattern) are merged into one column with a
    weight: given the abilities the posterior separates over items, so duplicates share their MAP
    parameters and the merged objective equals the full one (2,099 distinct columns of 41,871 in
    the opencompass matrix). ``w`` is the observation weight (0 where NaN, else the column's
    multiplicity), ``wy = w * y`` and ``w1y = w * (1 - y)``; ``column[j]`` is item j's merged column.
    """

    def __init__(self, Y: np.ndarray, merge_duplicates: bool) -> None:
        S, J = Y.shape
        observed = ~np.isnan(Y)
        if merge_duplicates:
            coded = np.where(observed, Y, -1.0)  # NaN never equals itself; -1 is no valid response
            _, first, column, counts = np.unique(coded, axis=1, return_index=True, return_inverse=True,
                                                 return_counts=True)
            Y, observed = Y[:, first], observed[:, first]
        else:
            column, counts = np.arange(J), np.ones(J)
        self.column = np.asarray(column).reshape(-1)
        self.counts = counts.astype(float)
        self.n_columns = Y.shape[1]
        y = np.where(observed, Y, 0.0)
        self.w = self.counts[None, :] if observed.all() else observed * self.counts
        self.wy = self.w * y
        self.w1y = self.w - self.wy
        w_full = np.broadcast_to(self.w, y.shape)
        self.per_item = w_full.sum(axis=0)  # responses behind each merged column
        self.per_system = w_full.sum(axis=1)
        self.item_mean = np.divide(self.wy.sum(axis=0), self.per_item, out=np.full(self.n_columns, 0.5),
                                   where=self.per_item > 0)
        self.system_mean = self.wy.sum(axis=1) / self.per_system


class _Layout:
    """Where each parameter block lives in the packed vector ``x`` (``_BLOCKS``: the model's item blocks)."""

    def __init__(self, model: str, n_systems: int, n_items: int) -> None:
        self.model, self.S, self.J = model, n_systems, n_items
        self.blocks = _BLOCKS[model]
        self.n_item_blocks = len(self.blocks)
        self.size = n_systems + self.n_item_blocks * n_items

    def start(self, name: str) -> int:
        """Offset of the item block ``name`` in ``x``."""
        return self.S + self.blocks.index(name) * self.J

    def split(self, x: np.ndarray):
        S, J = self.S, self.J
        got = {name: x[S + k * J:S + (k + 1) * J] for k, name in enumerate(self.blocks)}
        return (x[:S], *(got.get(name) for name in ("b", "log_a", "gamma", "eta")))

    def join(self, theta, b, log_a, gamma, eta) -> np.ndarray:
        given = {"b": b, "log_a": log_a, "gamma": gamma, "eta": eta}
        return np.concatenate([theta, *(given[name] for name in self.blocks)])


def _item_arrays(lay: _Layout, log_a, gamma, eta):
    """(a, c, d) of every item from the unconstrained blocks."""
    J = lay.J
    a = np.ones(J) if log_a is None else np.exp(log_a)
    c, _, slip = _asymptotes(gamma, eta, J)
    return a, c, 1.0 - slip  # exactly 1 without a slip logit (1PL-3PL)


def _asymptotes(gamma, eta, J: int):
    """(c, d - c, 1 - d) = softmax(gamma, 0, eta); zeros where the model has no such part."""
    if gamma is None and eta is None:
        return np.zeros(J), np.ones(J), np.zeros(J)
    g = np.full(J, -np.inf) if gamma is None else gamma
    e = np.full(J, -np.inf) if eta is None else eta
    top = np.maximum(np.maximum(g, e), 0.0)
    eg, e0, ee = np.exp(g - top), np.exp(-top), np.exp(e - top)
    total = eg + e0 + ee
    return eg / total, e0 / total, ee / total


def _loglik_parts(z, c, m, s, wy, w1y, w, model: str):
    """Entrywise weighted log-likelihood and its derivative with respect to ``z = a (theta - b)``.

    ``w`` is the observation weight (broadcastable to ``z``), ``wy = w y``, ``w1y = w (1 - y)``. For
    the 3PL/4PL also returns ``u = wy / P`` and ``v = w1y / (1 - P)`` (None for the 1PL/2PL).
    """
    if model in ("1pl", "2pl"):
        log_sig = np.minimum(z, 0.0) - np.log1p(np.exp(-np.abs(z)))  # log sigmoid(z), stable
        ll = w * log_sig - w1y * z  # wy log sig(z) + w1y log sig(-z), log sig(-z) = log sig(z) - z
        dz = wy - w * expit(z)
        return ll, dz, None, None
    sig, sig_neg = expit(z), expit(-z)
    p = np.maximum(c + m * sig, _TINY)
    q = np.maximum(s + m * sig_neg, _TINY)  # 1 - P as a sum of positives: no cancellation
    ll = wy * np.log(p) + w1y * np.log(q)
    u, v = wy / p, w1y / q
    dz = m * sig * sig_neg * (u - v)  # dLL/dP = y/P - (1-y)/(1-P); dP/dz = m sig (1 - sig)
    return ll, dz, u, v


def _objective(x: np.ndarray, data: _Data, lay: _Layout, priors: dict) -> tuple[float, np.ndarray]:
    """Negative log posterior (up to constants) and its gradient."""
    theta, b, log_a, gamma, eta = lay.split(x)
    a = np.ones(lay.J) if log_a is None else np.exp(log_a)
    c, m, s = _asymptotes(gamma, eta, lay.J)
    z = a * (theta[:, None] - b)
    ll, dz, u, v = _loglik_parts(z, c, m, s, data.wy, data.w1y, data.w, lay.model)
    f = -float(ll.sum())
    grad = np.empty_like(x)
    S, J = lay.S, lay.J
    grad[:S] = -(dz @ a)  # dz/dtheta = a
    grad[S:S + J] = a * dz.sum(axis=0)  # dz/db = -a
    if log_a is not None:
        grad[S + J:S + 2 * J] = -(dz * z).sum(axis=0)  # dz/dlog a = a (theta - b) = z
    # dP/dgamma = c (1 - P), dP/deta = -s P; with P + Q = 1: u Q = u - wy, v P = v - w1y
    if gamma is not None:
        k = lay.start("gamma")
        grad[k:k + J] = -c * (u.sum(axis=0) - data.per_item)
    if eta is not None:
        k = lay.start("eta")
        grad[k:k + J] = -s * (v.sum(axis=0) - data.per_item)
    fp, gp = _neg_log_prior(x, data, lay, priors)
    return f + fp, grad + gp


def _neg_log_prior(x: np.ndarray, data: _Data, lay: _Layout, priors: dict) -> tuple[float, np.ndarray]:
    """Negative log prior (up to constants) and its gradient; merged columns count ``counts`` times."""
    theta, b, log_a, gamma, eta = lay.split(x)
    S, J, n = lay.S, lay.J, data.counts
    g = np.zeros_like(x)
    vt, vb, va = priors["ability_sd"] ** 2, priors["difficulty_sd"] ** 2, priors["log_discrimination_sd"] ** 2
    f = 0.5 * theta @ theta / vt + 0.5 * (n * b) @ b / vb
    g[:S], g[S:S + J] = theta / vt, n * b / vb
    if log_a is not None:
        f += 0.5 * (n * log_a) @ log_a / va
        g[S + J:S + 2 * J] = n * log_a / va
    if gamma is not None or eta is not None:
        al_c, al_m, al_s = priors["asymptote_prior"]
        if eta is None:  # 3PL: Beta(alpha_c, alpha_mid + alpha_slip) on c
            al_m, al_s = al_m + al_s, 0.0
        if gamma is None:  # 3PLu: Beta(alpha_guess + alpha_mid, alpha_slip) on d
            al_c, al_m = 0.0, al_c + al_m
        c, m, s = _asymptotes(gamma, eta, J)
        total = al_c + al_m + al_s
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pi = al_m * np.log(m)
            if gamma is not None:
                log_pi = log_pi + al_c * np.log(c)
            if eta is not None:
                log_pi = log_pi + al_s * np.log(s)
        f -= float(n @ log_pi)
        if gamma is not None:  # d/dgamma of -sum alpha log pi
            k = lay.start("gamma")
            g[k:k + J] = n * (total * c - al_c)
        if eta is not None:
            k = lay.start("eta")
            g[k:k + J] = n * (total * s - al_s)
    return float(f), g


def _step_scale(x: np.ndarray, data: _Data, lay: _Layout, priors: dict) -> np.ndarray:
    """Diagonal preconditioner ``h = 1 / sqrt(diag Fisher information + prior curvature)`` at ``x``.

    L-BFGS then works on ``x / h``. An ability's curvature grows with the number of items it
    answered, an item's with the number of systems; on a 12 x 41,871 matrix the two differ
    3,500-fold, and the asymptote logits are flatter still. Rescaling changes the path, not the
    optimum. Uses the expected (Fisher) information ``sum w (dP/dparam)^2 / (P (1 - P))``.
    """
    theta, b, log_a, gamma, eta = lay.split(x)
    a = np.ones(lay.J) if log_a is None else np.exp(log_a)
    c, m, s = _asymptotes(gamma, eta, lay.J)
    z = a * (theta[:, None] - b)
    sig, sig_neg = expit(z), expit(-z)
    p = np.maximum(c + m * sig, _TINY)
    q = np.maximum(s + m * sig_neg, _TINY)
    w_pq = data.w / (p * q)
    dp_dz = m * sig * sig_neg
    n = data.counts
    info_z = w_pq * dp_dz**2
    parts = [info_z @ a**2 + 1.0 / priors["ability_sd"] ** 2,
             a**2 * info_z.sum(axis=0) + n / priors["difficulty_sd"] ** 2]
    if log_a is not None:
        parts.append((info_z * z**2).sum(axis=0) + n / priors["log_discrimination_sd"] ** 2)
    total = sum(priors["asymptote_prior"])
    if gamma is not None:
        parts.append((w_pq * (c * q) ** 2).sum(axis=0) + n * total * c * (1 - c))
    if eta is not None:
        parts.append((w_pq * (s * p) ** 2).sum(axis=0) + n * total * s * (1 - s))
    return 1.0 / np.sqrt(np.concatenate(parts))


def _initial(data: _Data, lay: _Layout, priors: dict, seed: int) -> np.ndarray:
    """Deterministic start: standardised mean scores, -logit item means, prior-mode asymptotes, jitter."""
    rng = np.random.default_rng(seed)
    score = data.system_mean
    sd = score.std()
    theta = (score - score.mean()) / sd if sd > 0 else np.zeros_like(score)
    p = np.clip(data.item_mean, 0.02, 0.98)
    b = -np.log(p / (1 - p))
    theta = theta + rng.normal(0.0, 0.1, lay.S)
    b = b + rng.normal(0.0, 0.1, lay.J)
    log_a = rng.normal(0.0, 0.1, lay.J) if lay.n_item_blocks >= 2 else None
    al_c, al_m, al_s = priors["asymptote_prior"]
    gamma = eta = None  # at the prior's mode
    if "gamma" in lay.blocks:
        gamma = np.full(lay.J, np.log(al_c / (al_m if "eta" in lay.blocks else al_m + al_s)))
    if "eta" in lay.blocks:
        eta = np.full(lay.J, np.log(al_s / (al_m if "gamma" in lay.blocks else al_c + al_m)))
    return lay.join(theta, b, log_a, gamma, eta)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def _check_model(model: str) -> str:
    return check_choice("model", str(model).lower(), MODELS, where="fit_irt")


def _check_range(Y: np.ndarray, what: str) -> None:
    bad = ~np.isnan(Y) & ((Y < 0) | (Y > 1) | ~np.isfinite(Y))
    if bad.any():
        where = np.argwhere(bad)[0]
        pos = f"system {where[0]}, item {where[1]}" if Y.ndim == 2 else f"position {where[0]}"
        raise DataError(f"{what}: responses must be in [0, 1] (NaN = missing); {int(bad.sum())} are not, "
                        f"first at {pos}: {Y[tuple(where)]!r}. Rescale scores to [0, 1], e.g. "
                        "(x - min) / (max - min), or set them to NaN")


def _check_matrix(Y) -> np.ndarray:
    try:
        Y = np.array(Y, dtype=float)  # a copy: the caller's data is never touched
    except (TypeError, ValueError) as exc:
        raise DataError(f"Y must be a numeric systems x items matrix of responses in [0, 1]; "
                        f"could not convert it to floats ({exc})") from None
    if Y.ndim != 2:
        raise DataError(f"Y must be 2-D (systems x items), got {Y.ndim}-D with shape {Y.shape}; "
                        "for one system use Y[None, :], or IRTResult.predict for a new system")
    if Y.shape[0] < 1 or Y.shape[1] < 1:
        raise DataError(f"Y must have at least one system and one item, got shape {Y.shape}")
    _check_range(Y, "Y")
    empty = np.flatnonzero(np.isnan(Y).all(axis=1))
    if empty.size:
        raise DataError(f"Y: system(s) {empty[:10].tolist()} have no responses (all NaN); drop those rows "
                        "(an ability needs at least one answered item)")
    return Y


def _check_priors(ability_sd, difficulty_sd, log_discrimination_sd, asymptote_prior) -> dict:
    sds = dict(ability_sd=ability_sd, difficulty_sd=difficulty_sd, log_discrimination_sd=log_discrimination_sd)
    for name, v in sds.items():
        if not (np.isscalar(v) and np.isfinite(v) and v > 0):
            raise ParameterError(f"fit_irt: {name} must be a positive number, got {v!r}")
    alpha = tuple(float(v) for v in asymptote_prior)
    if len(alpha) != 3 or not all(np.isfinite(alpha)) or min(alpha) <= 0:
        raise ParameterError("fit_irt: asymptote_prior must be three positive Dirichlet weights "
                             f"(guessing, middle, slip), e.g. (1, 8, 1); got {asymptote_prior!r}")
    return {**{k: float(v) for k, v in sds.items()}, "asymptote_prior": alpha}
