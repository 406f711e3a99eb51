"""Dimensions from the evaluated systems' scores on each item: ``score_difficulty`` (1 - the mean
normalised score) and the 2PL IRT ``irt_difficulty`` and ``discriminability`` (one shared fit:
:func:`fit_responses`).

All three are computed from the scores a profile then stratifies: used on the metric being evaluated
they are **circular** (strata differ by construction), so ``profile`` computes them only when asked
and marks them (:data:`CIRCULAR`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from ...irt import IRTResult, fit_irt
from .inputs import _float_matrix, _nonempty
from .registry import dimension


def _minmax_matrix(scores: Any, field: str, scale: tuple[float, float] | None) -> np.ndarray:
    s = _float_matrix(scores, field)
    finite = s[np.isfinite(s)]
    if finite.size == 0:
        raise DataError(f"{field}: no finite score.", field=field)
    lo, hi = (float(finite.min()), float(finite.max())) if scale is None else (float(scale[0]), float(scale[1]))
    if not hi > lo:
        if scale is not None:
            raise ParameterError(f"scale=(lo, hi) needs hi > lo, got {scale}.", field="scale")
        return np.where(np.isfinite(s), 0.0, np.nan)  # one value everywhere: nothing to tell items apart
    return np.clip((s - lo) / (hi - lo), 0.0, 1.0)


CIRCULAR = ("score_difficulty", "irt_difficulty", "discriminability")
"""The dimensions computed from the evaluated scores themselves (circular when stratifying those scores)."""


@dimension("score_difficulty", "1 - the mean normalised score over systems (ours; circular on --metric)")
def score_difficulty(scores: Any = None, *, scale: tuple[float, float] | None = None,
                     higher_is_better: bool = True) -> np.ndarray:
    """1 - mean over systems of the min-max normalised score, per item (ours; NOT the paper's difficulty).

    Kovatchev & Lease's difficulty is PVI (:func:`~.labels.difficulty`); this is the simplest
    score-based proxy, for scored (NLG) data without gold labels. Computed from the evaluated
    scores, so circular when used to stratify those same scores.

    ``scores``: items x systems (a Pool's ``scores[metric]``; 0/1 correctness for classification,
    where this is the share of systems that get the item wrong). Scores are min-max normalised over
    the whole matrix (``scale=(lo, hi)`` overrides the observed range; values outside are clipped),
    so items stay comparable; NaN scores are left out of the mean; an item with no score is NaN.
    ``higher_is_better=False`` for error-like metrics (e.g. MQM penalties as positive numbers).

    >>> score_difficulty([[1, 0], [0, 0], [1, 1], [np.nan, np.nan]]).tolist()   # 1 - 1/2, 1 - 0, 1 - 1, none
    [0.5, 1.0, 0.0, nan]
    >>> score_difficulty([[1.0, 5.0], [3.0, 3.0]], scale=(1, 5)).tolist()       # 1 - (0 + 1)/2, 1 - 0.5
    [0.5, 0.5]
    """
    s = _minmax_matrix(scores if scores is not None else _nonempty(None, "scores"), "scores", scale)
    if not higher_is_better:
        s = 1.0 - s
    n = np.isfinite(s).sum(axis=1)
    mean = np.divide(np.nansum(s, axis=1), n, out=np.full(s.shape[0], np.nan), where=n > 0)
    return 1.0 - mean


def fit_responses(responses: Any, *, seed: int = 0, scale: tuple[float, float] | None = None) -> IRTResult:
    """The 2PL IRT fit behind ``irt_difficulty`` and ``discriminability`` (:func:`evalsift.irt.fit_irt`).

    ``responses``: systems x items (the convention of ``fit_irt``; a Pool's score matrix is items x
    systems, so pass ``pool.scores[m].T``), 0/1 or continuous. Continuous responses outside [0, 1]
    are min-max scaled over the whole matrix first (``scale=(lo, hi)`` to give the range). NaN =
    missing.
    """
    Y = _float_matrix(responses, "responses")
    finite = Y[np.isfinite(Y)]
    if scale is not None or (finite.size and (finite.min() < 0 or finite.max() > 1)):
        Y = _minmax_matrix(Y, "responses", scale)
    if Y.shape[0] < 2:
        raise DataError(f"responses: IRT needs at least 2 systems (rows), got {Y.shape[0]}; the matrix is "
                        "systems x items.", field="responses")
    return fit_irt(Y, "2pl", seed=seed)


def _fit(responses: Any, fit: IRTResult | None, seed: int) -> IRTResult:
    if fit is not None:
        return fit
    if responses is None:
        raise ParameterError("IRT dimension needs responses=... (systems x items) or fit=... (an IRTResult).",
                             field="responses")
    return fit_responses(responses, seed=seed)


@dimension("irt_difficulty", "2PL IRT item difficulty b (ours as a dimension; circular on --metric)")
def irt_difficulty(responses: Any = None, *, fit: IRTResult | None = None, seed: int = 0) -> np.ndarray:
    """Item difficulty ``b_j`` of a 2PL IRT model (Rodriguez et al. 2021; ours as a dimension: the paper's
    difficulty is PVI, its IRT dimension is discriminability).

    ``responses``: systems x items (see :func:`fit_responses`), or an already fitted ``fit``.

    >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=float)
    >>> bool(np.all(np.diff(irt_difficulty(Y)) > 0))      # item 0 easiest, item 3 hardest
    True
    """
    return np.array(_fit(responses, fit, seed).difficulty, dtype=float)


@dimension("discriminability", "2PL IRT item discrimination a (the paper's; circular on --metric)")
def discriminability(responses: Any = None, *, fit: IRTResult | None = None, seed: int = 0) -> np.ndarray:
    """Item discrimination ``a_j > 0`` of a 2PL IRT model (Kovatchev & Lease 2024, Sec. 3, after Rodriguez et al. 2021).

    ``responses``: systems x items (see :func:`fit_responses`), or an already fitted ``fit``.

    >>> Y = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=float)
    >>> a = discriminability(Y); a.shape, bool(np.all(np.isfinite(a) & (a > 0)))
    ((3,), True)
    """
    return np.array(_fit(responses, fit, seed).discrimination, dtype=float)


__all__ = ["CIRCULAR", "discriminability", "fit_responses", "irt_difficulty", "score_difficulty"]
