"""The L1-penalised logistic fit with soft labels behind the length-controlled GLM: liblinear called directly
(:func:`_solve_l1`, bit for bit sklearn's ``LogisticRegression``), its strength chosen by cross-validation
(:func:`_cv_fit`; the folds' fits on worker processes from :data:`_PARALLEL_ROWS` rows)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


#: the candidate L1 strengths (AlpacaEval's LogisticRegressionCV default grid)
CS = tuple(float(c) for c in np.logspace(-4, 4, 10))
N_SPLITS = 5
SEED = 123

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _l1_kwargs() -> dict[str, Any]:
    """An L1 penalty for sklearn's liblinear solver (``l1_ratio=1`` from sklearn 1.8, ``penalty`` before)."""
    import sklearn

    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}


#: liblinear's L1-regularised logistic regression (its solver 6, newGLMNET), as sklearn's ``LogisticRegression(
#: solver="liblinear", penalty="l1")`` runs it: tolerance, iteration cap
_LIBLINEAR_L1LR, _TOL, _MAX_ITER = 6, 1e-4, 100


def _soft_problem(X: Any, p: np.ndarray, weight: np.ndarray | None) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """The soft-label problem as liblinear takes it: every row twice, as a win with weight ``weight * p`` and as a
    loss with weight ``weight * (1 - p)``, rows of weight 0 dropped; ``(X, y, sample_weight)``, or None when every
    label left is on one side."""
    import scipy.sparse as sp

    w = np.ones(len(p)) if weight is None else np.asarray(weight, float)
    sw = np.concatenate([w * p, w * (1 - p)])
    y = np.concatenate([np.ones(len(p)), np.zeros(len(p))])
    keep = sw > 0
    if len(np.unique(y[keep])) < 2:
        return None
    Xd = sp.vstack([X, X], format="csr") if sp.issparse(X) else np.vstack([X, X])
    return Xd[keep], y[keep], sw[keep]


def _liblinear() -> Any:
    """sklearn's compiled liblinear wrapper when it is the one this code was checked against, else None."""
    try:
        from sklearn.svm import _liblinear as lib
    except ImportError:  # pragma: no cover - sklearn moved it
        return None
    if not hasattr(lib, "train_wrap"):  # pragma: no cover
        return None
    if hasattr(lib, "set_verbosity_wrap"):
        lib.set_verbosity_wrap(0)  # as sklearn sets it before each fit: liblinear prints nothing
    return lib


def _solve_l1(problem: tuple[Any, np.ndarray, np.ndarray], C: float, seed: int) -> np.ndarray:
    """Coefficients of liblinear's L1-penalised logistic regression (no intercept) on a :func:`_soft_problem`.

    The compiled solver is called as ``LogisticRegression(solver="liblinear", penalty="l1", C=C,
    fit_intercept=False, random_state=seed).fit(X, y, sample_weight=...)`` calls it -- the same arguments, so the
    same coefficients to the last bit (``tests/test_winrate_lc.py`` checks it) -- without sklearn's per-fit input
    validation, which took most of the time of the thousands of small fits a leaderboard needs. Where that
    wrapper is missing or refuses the call (another sklearn), the estimator itself is used."""
    import scipy.sparse as sp

    X, y, sw = problem
    lib = _liblinear()
    if lib is not None:
        sparse = sp.issparse(X)
        Xc = X if sparse else np.ascontiguousarray(X, dtype=np.float64)
        seed_int = np.random.RandomState(seed).randint(np.iinfo("i").max)  # what sklearn passes for an int seed
        try:
            raw, _ = lib.train_wrap(Xc, np.require(y.astype(np.float64), requirements="W"), sparse, _LIBLINEAR_L1LR,
                                    _TOL, -1.0, float(C), np.ones(2), _MAX_ITER, seed_int, 0.1,
                                    np.ascontiguousarray(sw, dtype=np.float64))
            return np.asarray(raw, float).reshape(-1)[: X.shape[1]]
        except (TypeError, ValueError):  # pragma: no cover - another sklearn's signature
            pass
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(solver="liblinear", C=C, fit_intercept=False, random_state=seed, tol=_TOL,
                               max_iter=_MAX_ITER, **_l1_kwargs())
    model.fit(X, y, sample_weight=sw)
    return model.coef_[0].astype(float)


def _fit_l1(X: Any, p: np.ndarray, C: float, weight: np.ndarray | None, seed: int) -> np.ndarray | None:
    """Coefficients of the L1-penalised logistic regression of soft labels ``p`` on ``X`` (no free intercept):
    minimise ||w||_1 + C * sum_i weight_i * CE(p_i, sigmoid(x_i w)). Each row enters twice, as a win with weight
    ``weight * p`` and as a loss with weight ``weight * (1 - p)``. None when every label is on one side."""
    problem = _soft_problem(X, p, weight)
    return None if problem is None else _solve_l1(problem, C, seed)


def _soft_log_likelihood(p: np.ndarray, q: np.ndarray, weight: np.ndarray | None) -> float:
    q = np.clip(q, 1e-15, 1 - 1e-15)
    ll = p * np.log(q) + (1 - p) * np.log(1 - q)
    return float((ll if weight is None else ll * weight).mean())


#: from this many rows (the soft-label problem's, doubled) the cross-validation's fits run on worker processes
#: (the joint difficulty fit of a leaderboard is far above it; one model's fit far below)
_PARALLEL_ROWS = 20000


#: at most this many worker processes for one cross-validation (the folds' problems are copied to each)
MAX_JOBS = 4


def _workers(jobs: int | str | None) -> int:
    """Worker processes for the cross-validation's fits: ``jobs`` (1: none, in this process; 0, ``"auto"`` or None:
    the cores this process may use), at most :data:`MAX_JOBS`."""
    from ..bench.parallel import resolve_jobs

    return max(1, min(MAX_JOBS, resolve_jobs(jobs)))


def _fold_fit(shared: tuple[list[Any], Sequence[float], int], task: tuple[int, int]) -> np.ndarray:
    """One cross-validation fit, in a worker of :func:`evalsift.bench.parallel.run_tasks`: fold ``task[0]``'s
    problem at strength ``Cs[task[1]]``."""
    problems, Cs, seed = shared
    f, c = task
    return _solve_l1(problems[f], Cs[c], seed)


def _cv_fit(X: Any, p: np.ndarray, weight: np.ndarray | None = None, *, Cs: Sequence[float] = CS,
            n_splits: int = N_SPLITS, seed: int = SEED, jobs: int | str | None = 1,
            advance: Any = None) -> tuple[np.ndarray | None, float | None]:
    """(coefficients, chosen C): the C of ``Cs`` with the best soft-label log likelihood summed over ``n_splits``
    folds of the rows (sklearn's GroupKFold, one group per row), refitted on every row. The folds' fits are
    independent and each seeds liblinear itself, so with ``jobs`` other than 1 a large problem (from
    :data:`_PARALLEL_ROWS` rows) runs them on worker processes (:func:`evalsift.bench.parallel.run_tasks`; not
    threads -- liblinear's random state is one per process), with the same result as one after the other.
    Worker processes are started afresh (``spawn``): a script that asks for them needs the usual ``if __name__ ==
    "__main__":`` guard. ``advance(n)``: called as fits finish (a progress bar)."""
    from sklearn.model_selection import GroupKFold

    n = len(p)
    step = advance or (lambda k=1: None)
    if np.all(p >= 1) or np.all(p <= 0):  # every row a sure win, or every one a sure loss: nothing to fit
        return None, None
    k = min(n_splits, n)
    if k >= 2:
        folds = [(_soft_problem(X[train], p[train], None if weight is None else weight[train]), test)
                 for train, test in GroupKFold(n_splits=k).split(np.zeros(n), groups=np.arange(n))]
        tasks = [(f, c) for f in range(len(folds)) for c in range(len(Cs)) if folds[f][0] is not None]
        step(len(folds) * len(Cs) - len(tasks))  # folds with every label on one side: nothing to fit
        shared = ([f[0] for f in folds], tuple(Cs), seed)
        workers = 1 if jobs == 1 or 2 * n < _PARALLEL_ROWS or len(tasks) <= 1 else _workers(jobs)
        if workers > 1:
            from ..bench.parallel import run_tasks

            coefs = run_tasks(_fold_fit, tasks, shared=shared, jobs=min(workers, len(tasks)), advance=step)
        else:
            coefs = []
            for task in tasks:
                coefs.append(_fold_fit(shared, task))
                step(1)
        fitted = dict(zip(tasks, coefs))
        scores = np.zeros(len(Cs))
        for f, (problem, test) in enumerate(folds):  # summed fold by fold: the same floating-point sums as ever
            for c in range(len(Cs)):
                coef = fitted.get((f, c))
                if coef is None:
                    scores[c] = -np.inf
                    continue
                q = _sigmoid(np.asarray(X[test] @ coef).ravel())
                scores[c] += _soft_log_likelihood(p[test], q, None if weight is None else weight[test])
        best = float(Cs[int(np.argmax(scores))])
    else:
        best = float(Cs[-1])
    coef = _fit_l1(X, p, best, weight, seed)
    step(1)
    return coef, best


def cv_fits(n_rows: int, Cs: Sequence[float] = CS, n_splits: int = N_SPLITS) -> int:
    """How many fits :func:`_cv_fit` runs on ``n_rows`` rows (its progress steps)."""
    k = min(n_splits, n_rows)
    return (k * len(Cs) if k >= 2 else 0) + 1
