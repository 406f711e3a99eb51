"""Per-item data dimensions (Kovatchev & Lease, NAACL 2024, "Benchmark Transparency", Sec. 3).

A *dimension* is a function that returns one float per item (a 1-D ``np.ndarray``), NaN where the
value is undefined for that item -- never an invented value. Dimensions live in the registry
:data:`dimensions` and are registered with ``@dimension("name")``; :func:`compute_dimensions` computes
several of them from the same inputs (fitting IRT once when both IRT dimensions are asked for).

Implemented: ``length``, ``noise``, ``difficulty``, ``irt_difficulty``, ``discriminability``. The
paper's other two (``ambiguity``, ``perplexity``) need a model's outputs and are not here yet.

>>> import numpy as np
>>> d = compute_dimensions(["length", "noise"], texts=["a b c", ("a b", "c d e")],
...                        counts=[[3, 0, 0], [2, 1, 1]])
>>> d["length"].tolist(), d["noise"].tolist()      # 3 tokens, 2 + 3; 1 - 3/3, 1 - 2/4
([3.0, 5.0], [0.0, 0.5])
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from ..irt import IRTResult, fit_irt
from ..registry import Registry

__all__ = [
    "compute_dimensions",
    "difficulty",
    "dimension",
    "dimensions",
    "discriminability",
    "fit_responses",
    "irt_difficulty",
    "length",
    "noise",
]

dimensions: Registry[Callable[..., np.ndarray]] = Registry("dimension")


def dimension(name: str, help: str = "") -> Callable:
    """Register a dimension function under ``name`` (its docstring's first line is its help)."""
    return dimensions.register(name, help)


# ------------------------------------------------------------------------------------------ helpers
def _float_matrix(values: Any, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{field}: expected a 2-D array of numbers (items x columns); it has values that are "
                        "not numbers or rows of different lengths. Pad ragged rows with NaN.", field=field) from None
    if arr.ndim != 2:
        raise DataError(f"{field}: expected a 2-D array (items x columns), got shape {arr.shape}.", field=field)
    if arr.shape[0] == 0:
        raise DataError(f"{field}: no items (empty array).", field=field)
    return arr


def _nonempty(values: Sequence[Any] | None, field: str) -> Sequence[Any]:
    if values is None:
        raise ParameterError(f"dimension needs {field}=..., which was not given.", field=field)
    if len(values) == 0:
        raise DataError(f"{field}: no items (empty).", field=field)
    return values


def _tokens(text: Any) -> float:
    if text is None:
        return np.nan
    if isinstance(text, str):
        return float(len(text.split()))
    if isinstance(text, (tuple, list)):  # a pair (premise, hypothesis): the sum of its parts
        parts = [_tokens(t) for t in text]
        return float(np.sum(parts)) if parts and not np.isnan(parts).any() else np.nan
    raise DataError(f"texts: expected a string, a tuple of strings or None per item, got {type(text).__name__}.",
                    field="texts")


# --------------------------------------------------------------------------------------- dimensions
@dimension("length")
def length(texts: Sequence[Any] | None = None, *, records: Sequence[Mapping[str, Any]] | None = None,
           field: str | Sequence[str] | None = None) -> np.ndarray:
    """Whitespace tokens per item (Kovatchev & Lease 2024, Sec. 3: "length of the input in tokens").

    ``texts``: one string per item, or a tuple/list of strings (a premise-hypothesis pair, a
    question and its context): the sum of their token counts, as the paper does for pairs. ``None``
    gives NaN. Alternatively ``records`` (one mapping per item) and ``field`` -- a key, or several
    keys whose token counts are summed.

    >>> length(["a b c", None, ("x y", "z")]).tolist()
    [3.0, nan, 3.0]
    >>> length(records=[{"p": "a b", "h": "c"}], field=("p", "h")).tolist()
    [3.0]
    """
    if records is not None:
        if field is None:
            raise ParameterError("length: records=... needs field=... (a key or a tuple of keys).", field="field")
        keys = (field,) if isinstance(field, str) else tuple(field)
        _nonempty(records, "records")
        missing = [k for k in keys if not all(k in r for r in records)]
        if missing:
            raise DataError(f"length: field {missing[0]!r} is missing from some records.", field=missing[0])
        texts = [tuple(r[k] for k in keys) for r in records]
    texts = _nonempty(texts, "texts")
    return np.array([_tokens(t) for t in texts], dtype=float)


@dimension("noise")
def noise(counts: Any = None, *, labels: Sequence[Sequence[Any]] | None = None,
          ratings: Any = None, scale: tuple[float, float] | None = None) -> np.ndarray:
    """Annotator disagreement per item: 1 - agreement (Kovatchev & Lease 2024, Sec. 3, "noise").

    Categorical labels (the paper's definition): ``1 - n_majority / n_annotators``, the share of
    annotators who did *not* choose the majority label. Give either ``counts`` (items x classes,
    the number of annotators choosing each class, e.g. ChaosNLI's ``label_count``) or ``labels``
    (one list of labels per item, e.g. ChaosNLI's ``old_labels``). An item with fewer than 2
    annotations gets NaN (agreement is undefined).

    Numeric scores (``ratings``: items x repeats, NaN where a repeat is missing, e.g. the three
    SummEval experts): our extension, not in the paper: the standard deviation of the repeats
    (``ddof=0``) divided by the scale range ``hi - lo`` (``scale=(lo, hi)``; default: the minimum and
    maximum over all ratings). It is 0 when the raters agree and at most 0.5 (half at each end).
    Items with fewer than 2 ratings get NaN.

    >>> noise([[3, 1, 0], [0, 0, 0], [2, 2, 0]]).tolist()          # 1 - 3/4, no labels, 1 - 2/4
    [0.25, nan, 0.5]
    >>> noise(labels=[["e", "e", "n"], ["c"]]).round(4).tolist()   # 1 - 2/3; one label: undefined
    [0.3333, nan]
    >>> noise(ratings=[[1, 5], [3, 3], [2, np.nan]], scale=(1, 5)).tolist()   # std 2 / 4; 0; one rating
    [0.5, 0.0, nan]
    """
    given = [n for n, v in (("counts", counts), ("labels", labels), ("ratings", ratings)) if v is not None]
    if len(given) != 1:
        raise ParameterError("noise: give exactly one of counts=, labels= or ratings=; got "
                             f"{', '.join(given) or 'none'}.", field="counts")
    if labels is not None:
        _nonempty(labels, "labels")
        out = np.full(len(labels), np.nan)
        for i, row in enumerate(labels):
            row = [x for x in (row or []) if x is not None]
            if len(row) >= 2:
                out[i] = 1.0 - Counter(row).most_common(1)[0][1] / len(row)
        return out
    if counts is not None:
        c = _float_matrix(counts, "counts")
        if np.any(c[np.isfinite(c)] < 0):
            raise DataError("noise: counts must be >= 0 (annotators per class).", field="counts")
        c = np.nan_to_num(c, nan=0.0)
        total = c.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total >= 2, 1.0 - c.max(axis=1) / total, np.nan)
    r = _float_matrix(ratings, "ratings")
    if scale is None:
        finite = r[np.isfinite(r)]
        if finite.size == 0:
            raise DataError("noise: ratings has no finite value.", field="ratings")
        scale = (float(finite.min()), float(finite.max()))
    lo, hi = float(scale[0]), float(scale[1])
    if not hi > lo:
        raise ParameterError(f"noise: scale=(lo, hi) needs hi > lo, got {scale}.", field="scale")
    n = np.isfinite(r).sum(axis=1)
    sd = np.full(r.shape[0], np.nan)
    ok = n >= 2
    sd[ok] = np.nanstd(r[ok], axis=1)
    return sd / (hi - lo)


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


@dimension("difficulty")
def difficulty(scores: Any = None, *, scale: tuple[float, float] | None = None,
               higher_is_better: bool = True) -> np.ndarray:
    """1 - mean over systems of the min-max normalised score, per item (Kovatchev & Lease 2024, Sec. 3).

    ``scores``: items x systems (a Pool's ``scores[metric]``; 0/1 correctness for classification,
    where this is the share of systems that get the item wrong). Scores are min-max normalised over
    the whole matrix (``scale=(lo, hi)`` overrides the observed range; values outside are clipped),
    so items stay comparable; NaN scores are left out of the mean; an item with no score is NaN.
    ``higher_is_better=False`` for error-like metrics (e.g. MQM penalties as positive numbers).

    >>> difficulty([[1, 0], [0, 0], [1, 1], [np.nan, np.nan]]).tolist()   # 1 - 1/2, 1 - 0, 1 - 1, none
    [0.5, 1.0, 0.0, nan]
    >>> difficulty([[1.0, 5.0], [3.0, 3.0]], scale=(1, 5)).tolist()       # 1 - (0 + 1)/2, 1 - 0.5
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


@dimension("irt_difficulty")
def irt_difficulty(responses: Any = None, *, fit: IRTResult | None = None, seed: int = 0) -> np.ndarray:
    """Item difficulty ``b_j`` of a 2PL IRT model (Kovatchev & Lease 2024, Sec. 3, after Rodriguez et al. 2021).

    ``responses``: systems x items (see :func:`fit_responses`), or an already fitted ``fit``.

    >>> Y = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=float)
    >>> bool(np.all(np.diff(irt_difficulty(Y)) > 0))      # item 0 easiest, item 3 hardest
    True
    """
    return np.array(_fit(responses, fit, seed).difficulty, dtype=float)


@dimension("discriminability")
def discriminability(responses: Any = None, *, fit: IRTResult | None = None, seed: int = 0) -> np.ndarray:
    """Item discrimination ``a_j > 0`` of a 2PL IRT model (Kovatchev & Lease 2024, Sec. 3, after Rodriguez et al. 2021).

    ``responses``: systems x items (see :func:`fit_responses`), or an already fitted ``fit``.

    >>> Y = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=float)
    >>> a = discriminability(Y); a.shape, bool(np.all(np.isfinite(a) & (a > 0)))
    ((3,), True)
    """
    return np.array(_fit(responses, fit, seed).discrimination, dtype=float)


# ------------------------------------------------------------------------------------------ the API
def compute_dimensions(names: Iterable[str], *, pool: Any = None, metric: str | None = None,
                       **inputs: Any) -> dict[str, np.ndarray]:
    """Compute the dimensions ``names`` from ``inputs``; one array per name, all of the same length.

    Each dimension takes the keyword inputs it declares (``texts``, ``records``/``field``,
    ``counts``/``labels``/``ratings``, ``scores``, ``responses``, ``seed``, ...); inputs a dimension
    does not declare are ignored. With ``pool`` (an :class:`evalsift.pool.Pool`) the defaults are
    ``texts=pool.inputs`` (text pools), ``scores=pool.scores[metric]`` and
    ``responses=pool.scores[metric].T``. Both IRT dimensions share one 2PL fit.

    >>> Y = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 0]], dtype=float)   # systems x items
    >>> d = compute_dimensions(["difficulty", "discriminability"], scores=Y.T, responses=Y)
    >>> d["difficulty"].round(4).tolist(), d["discriminability"].shape   # 1 - 3/3, 1 - 1/3, 1 - 1/3
    ([0.0, 0.6667, 0.6667], (3,))
    """
    names = list(names)
    if not names:
        raise ParameterError("compute_dimensions: names is empty; give at least one of "
                             f"{', '.join(dimensions)}.", field="names")
    fns = {n: dimensions.get(n) for n in names}
    if pool is not None:
        if metric is not None:
            if metric not in pool.scores:
                raise DataError(f"compute_dimensions: pool has no metric {metric!r}; it has {list(pool.metrics)}.",
                                field="metric")
            inputs.setdefault("scores", np.asarray(pool.scores[metric]))
            inputs.setdefault("responses", np.asarray(pool.scores[metric]).T)
        if pool.inputs_are_text:
            inputs.setdefault("texts", list(pool.inputs))
    if {"irt_difficulty", "discriminability"} & set(names) and "fit" not in inputs and "responses" in inputs:
        inputs["fit"] = fit_responses(inputs["responses"], seed=int(inputs.get("seed", 0)))
    out: dict[str, np.ndarray] = {}
    for n, fn in fns.items():
        params = inspect.signature(fn).parameters
        out[n] = np.asarray(fn(**{k: v for k, v in inputs.items() if k in params}), dtype=float)
    sizes = {n: len(v) for n, v in out.items()}
    if len(set(sizes.values())) > 1:
        raise DataError(f"compute_dimensions: the dimensions have different numbers of items: {sizes}; give "
                        "every input for the same items in the same order.", field=max(sizes, key=sizes.get))
    if pool is not None and next(iter(sizes.values())) != pool.n_items:
        raise DataError(f"compute_dimensions: {sizes} items but the pool has {pool.n_items}.", field=names[0])
    return out
