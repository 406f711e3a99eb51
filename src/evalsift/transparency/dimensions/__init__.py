"""Per-item data dimensions (Kovatchev & Lease, NAACL 2024, "Benchmark Transparency", Sec. 3).

A *dimension* is a function that returns one float per item (a 1-D ``np.ndarray``), NaN where the
value is undefined for that item -- never an invented value. Dimensions live in the registry
:data:`dimensions` and are registered with ``@dimension("name")``; :func:`compute_dimensions` computes
several of them from the same inputs (fitting IRT once when both IRT dimensions are asked for).

Implemented: ``length``, ``noise``, ``difficulty``, ``irt_difficulty``, ``discriminability``;
``perplexity`` (an n-gram LM from ``nltk.lm`` or a local causal LM, plain or conditional),
``pvi`` (pointwise V-information, the classification form of difficulty), ``ambiguity``
(training-dynamics variability, from given probabilities or a cheap classifier trained epoch by
epoch) and ``learned_noise`` (noise predicted from the input). The model-based ones are
cross-fitted where they fit on the items themselves: no item is scored by a model trained on it
(except ``ambiguity``'s ``setting="train"``, which is the cartography paper's).

>>> import numpy as np
>>> d = compute_dimensions(["length", "noise"], texts=["a b c", ("a b", "c d e")],
...                        counts=[[3, 0, 0], [2, 1, 1]])
>>> d["length"].tolist(), d["noise"].tolist()      # 3 tokens, 2 + 3; 1 - 3/3, 1 - 2/4
([3.0, 5.0], [0.0, 0.5])
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError, check_choice, missing_dependency
from ...irt import IRTResult, fit_irt
from ...registry import Registry

__all__ = [
    "POOL_FIELDS",
    "CausalLMScorer",
    "NgramScorer",
    "ambiguity",
    "compute_dimensions",
    "difficulty",
    "dimension",
    "dimensions",
    "discriminability",
    "fit_responses",
    "irt_difficulty",
    "learned_difficulty",
    "learned_noise",
    "length",
    "noise",
    "perplexity",
    "pvi",
    "training_dynamics",
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


# ------------------------------------------------------------------ shared: items, labels, cross-fits
def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _item_parts(item: Any, i: int, field: str = "texts") -> tuple[str, ...] | None:
    """An item as a tuple of its texts (one for a plain text, two or more for a pair); None if missing."""
    if item is None:
        return None
    if isinstance(item, str):
        return (item,)
    if isinstance(item, (tuple, list)) and item and all(isinstance(t, str) for t in item):
        return tuple(item)
    if isinstance(item, (tuple, list)) and any(t is None for t in item):
        return None
    raise DataError(f"{field}: item {i} is a {type(item).__name__}; expected a string, a tuple of strings "
                    "(premise, hypothesis) or None.", field=field, item_id=i)


def _model_text(parts: tuple[str, ...]) -> str:
    """One string for a bag-of-words model. A pair's words are tagged with their part (``p0_dog``,
    ``p1_dog``) so the features keep which side a word came from (hypothesis-only cues in NLI)."""
    if len(parts) == 1:
        return parts[0]
    return " ".join(f"p{j}_{w}" for j, part in enumerate(parts) for w in part.lower().split())


def _check_len(values: Sequence[Any] | np.ndarray, n: int, field: str, other: str) -> None:
    if len(values) != n:
        raise DataError(f"{field}: {len(values)} items but {other} has {n}; give one per item, in the same order.",
                        field=field)


def _model_inputs(texts: Any, features: Any, who: str) -> tuple[list[str] | np.ndarray, np.ndarray, bool]:
    """(X, usable, is_text): the model's inputs per item and which items have one."""
    if features is not None:
        X = _float_matrix(features, "features")
        return X, np.isfinite(X).all(axis=1), False
    if texts is None:
        raise ParameterError(f"{who} needs texts=... (one string or (premise, hypothesis) per item) or "
                             "features=... (items x columns).", field="texts")
    _nonempty(texts, "texts")
    parts = [_item_parts(t, i) for i, t in enumerate(texts)]
    usable = np.array([p is not None for p in parts])
    return [_model_text(p) if p is not None else "" for p in parts], usable, True


def _take(X: list[str] | np.ndarray, idx: np.ndarray) -> list[str] | np.ndarray:
    return X[idx] if isinstance(X, np.ndarray) else [X[i] for i in idx]


def _encode_labels(gold: Any, n: int, field: str = "gold") -> tuple[np.ndarray, list[Any]]:
    """Integer codes (-1 = missing) and the sorted distinct labels."""
    if gold is None:
        raise ParameterError(f"needs {field}=... (one gold label per item).", field=field)
    gold = list(gold)
    _check_len(gold, n, field, "texts")
    for i, g in enumerate(gold):
        if not _is_missing(g) and isinstance(g, (list, tuple, dict, set, np.ndarray)):
            raise DataError(f"{field}: item {i} is a {type(g).__name__}; expected one label per item "
                            "(annotators' label lists go to noise(labels=...)).", field=field, item_id=i)
    classes = sorted({g for g in gold if not _is_missing(g)}, key=lambda v: (str(type(v)), v))
    index = {c: k for k, c in enumerate(classes)}
    return np.array([-1 if _is_missing(g) else index[g] for g in gold], dtype=int), classes


def _check_folds(folds: int, n: int, who: str) -> int:
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ParameterError(f"{who}: folds must be an integer >= 2 (cross-fitting), got {folds!r}.", field="folds")
    if n < folds:
        raise DataError(f"{who}: {n} usable items, fewer than folds={folds}; give more items or lower folds.",
                        field="folds")
    return int(folds)


def _splits(idx: np.ndarray, folds: int, seed: int, y: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """K-fold splits of ``idx`` (stratified by ``y`` when every class has at least ``folds`` items)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    if y is not None and np.bincount(y).min(initial=folds) >= folds:
        cv = StratifiedKFold(folds, shuffle=True, random_state=seed).split(idx, y)
    else:
        cv = KFold(folds, shuffle=True, random_state=seed).split(idx)
    return [(idx[a], idx[b]) for a, b in cv]


def _estimator(model: Any, default: Callable[[], Any]) -> Any:
    """A fresh estimator: ``model`` may be None (the default), an estimator (cloned) or a factory."""
    if model is None:
        return default()
    if hasattr(model, "fit"):
        from sklearn.base import clone

        return clone(model)
    if callable(model):
        est = model()
        if not hasattr(est, "fit"):
            raise ParameterError(f"model: the factory returned {type(est).__name__}, which has no fit(); give a "
                                 "scikit-learn estimator or a function returning one.", field="model")
        return est
    raise ParameterError(f"model: expected a scikit-learn estimator or a function returning one, got "
                         f"{type(model).__name__}.", field="model")


def _tfidf() -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2))


def _default_classifier(is_text: bool) -> Callable[[], Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return lambda: make_pipeline(_tfidf() if is_text else StandardScaler(), LogisticRegression(max_iter=1000))


def _default_regressor(is_text: bool) -> Callable[[], Any]:
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return lambda: make_pipeline(_tfidf() if is_text else StandardScaler(), Ridge(alpha=1.0))


def _log_proba(est: Any, X: Any) -> np.ndarray:
    if hasattr(est, "predict_log_proba"):
        with np.errstate(divide="ignore"):
            return np.asarray(est.predict_log_proba(X), dtype=float)
    if not hasattr(est, "predict_proba"):
        raise ParameterError(f"model: {type(est).__name__} has no predict_proba; PVI needs a probabilistic "
                             "classifier (e.g. LogisticRegression).", field="model")
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(est.predict_proba(X), dtype=float))


# ---------------------------------------------------------------------------------------------- PVI
@dimension("pvi")
def pvi(texts: Sequence[Any] | None = None, *, gold: Sequence[Any] | None = None, features: Any = None,
        model: Any = None, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Pointwise V-information in bits (Ethayarajh, Choi & Swayamdipta, ICML 2022, Eq. 2), cross-fitted.

    ``PVI(x -> y) = -log2 p_null(y) + log2 p_input(y | x)``: how much the input tells a model family
    about the gold label beyond the label's base rate. ``p_input`` is a model fitted on (input, label)
    pairs; ``p_null`` the same family fitted with an empty input, whose best fit is the class prior --
    so it *is* the class prior of the training folds (Ethayarajh et al. fine-tune on empty input,
    which approximates this). Cross-fitted: the usable items are split in ``folds`` parts (stratified
    by label when every class has ``folds`` items) and each item is scored by the models fitted on the
    other parts, so no item is scored by a model that saw it.

    Ethayarajh et al. use PVI as instance difficulty: **low PVI = hard** (negative: the model does
    worse with the input than without it). It is the classification counterpart of ``difficulty``
    here and is returned as is -- not negated, not rescaled; ``difficulty`` (scores x systems) stays
    the form for scored (NLG) data.

    ``texts``: one string per item or a (premise, hypothesis) tuple (the words of a pair are tagged
    with their side, see the default model); or ``features`` (items x columns). ``gold``: one label
    per item (any hashable; None = unlabelled). ``model``: a scikit-learn classifier with
    ``predict_proba`` or a function returning one (it is fitted on the list of strings, or on
    ``features``); default TF-IDF (unigrams + bigrams, sublinear tf) + ``LogisticRegression``.
    NaN: items without input or gold label, and items whose gold class is absent from their
    training folds (its probability is undefined).

    >>> t = ["good great fine"] * 10 + ["bad awful poor"] * 10 + ["meh so so"] * 10
    >>> y = ["pos"] * 10 + ["neg"] * 10 + ["pos", "neg"] * 5
    >>> v = pvi(t, gold=y, folds=5)
    >>> bool(v[:20].mean() > 0.5 > v[20:].mean())       # predictable labels carry information
    True
    """
    X, usable, is_text = _model_inputs(texts, features, "pvi")
    n = len(usable)
    codes, classes = _encode_labels(gold, n)
    if len(classes) < 2:
        raise DataError(f"pvi: gold has {len(classes)} distinct label(s); PVI needs at least 2 classes.", field="gold")
    ok = np.flatnonzero(usable & (codes >= 0))
    folds = _check_folds(folds, ok.size, "pvi")
    out = np.full(n, np.nan)
    default = _default_classifier(is_text)
    for train, test in _splits(ok, folds, seed, codes[ok]):
        ytr = codes[train]
        prior = np.bincount(ytr, minlength=len(classes)) / ytr.size
        if np.count_nonzero(prior) < 2:  # one class in the training folds: no classifier to fit
            continue
        est = _estimator(model, default).fit(_take(X, train), ytr)
        col = {int(c): k for k, c in enumerate(getattr(est, "classes_", np.unique(ytr)))}
        logp = _log_proba(est, _take(X, test))
        for row, i in enumerate(test):
            c = int(codes[i])
            if c in col and prior[c] > 0:
                out[i] = (logp[row, col[c]] - np.log(prior[c])) / np.log(2.0)
    return out


# ---------------------------------------------------------------------------------------- ambiguity
def _variability(p: np.ndarray, include_ci: bool) -> np.ndarray:
    n = np.isfinite(p).sum(axis=1)
    out = np.full(p.shape[0], np.nan)
    ok = n >= 2
    var = np.nanvar(p[ok], axis=1)  # ddof=0, as np.std in the cartography code
    if include_ci:
        var = var + var * var / (n[ok] - 1)
    out[ok] = np.sqrt(var)
    return out


def training_dynamics(texts: Sequence[Any] | None = None, gold: Sequence[Any] | None = None, *,
                      features: Any = None, epochs: int = 5, setting: str = "train", folds: int = 5,
                      seed: int = 0, alpha: float = 1e-4) -> np.ndarray:
    """Per-epoch gold-label probabilities (items x epochs) of a cheap classifier: the input of ``ambiguity``.

    A linear classifier (``SGDClassifier(loss="log_loss", alpha=alpha)``, logistic regression by
    SGD) on TF-IDF features (or ``features``) is trained one epoch at a time with ``partial_fit``
    over a seeded shuffle; after each epoch every item's probability of its gold label is recorded.

    ``setting``:

    - ``"train"`` (default; Swayamdipta et al. 2020's setting): one model trained on all usable
      items, recording the dynamics of the items it trains on. Cartography characterises *training*
      items by how the model learns them; this is that measurement.
    - ``"heldout"``: cross-fitted; the items are split in ``folds`` parts and an item's dynamics are
      recorded from the model training on the other parts (it never trains on the item). This
      measures how stable the prediction for an unseen item is over training -- not the paper's
      quantity, but free of memorisation.

    NaN rows: items without input or gold label. Reproducible for a given ``seed``.
    """
    from sklearn.linear_model import SGDClassifier

    check_choice("setting", setting, ("train", "heldout"), where="training_dynamics")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 2:
        raise ParameterError(f"training_dynamics: epochs must be an integer >= 2 (variability needs two), "
                             f"got {epochs!r}.", field="epochs")
    X, usable, is_text = _model_inputs(texts, features, "training_dynamics")
    n = len(usable)
    codes, classes = _encode_labels(gold, n)
    if len(classes) < 2:
        raise DataError(f"training_dynamics: gold has {len(classes)} distinct label(s); need at least 2.",
                        field="gold")
    ok = np.flatnonzero(usable & (codes >= 0))
    if setting == "train":
        if ok.size < 2:
            raise DataError("training_dynamics: fewer than 2 items with an input and a gold label.", field="gold")
        plan = [(ok, ok)]
    else:
        plan = _splits(ok, _check_folds(folds, ok.size, "training_dynamics"), seed, codes[ok])
    out = np.full((n, int(epochs)), np.nan)
    rng = np.random.default_rng(seed)
    all_classes = np.arange(len(classes))
    for train, record in plan:
        if is_text:
            vec = _tfidf().fit(_take(X, train))
            Xtr, Xrec = vec.transform(_take(X, train)), vec.transform(_take(X, record))
        else:
            from sklearn.preprocessing import StandardScaler

            sc = StandardScaler().fit(X[train])
            Xtr, Xrec = sc.transform(X[train]), sc.transform(X[record])
        clf = SGDClassifier(loss="log_loss", alpha=alpha, random_state=int(rng.integers(2**31)))
        for e in range(int(epochs)):
            order = rng.permutation(len(train))
            clf.partial_fit(Xtr[order], codes[train][order], classes=all_classes)
            proba = clf.predict_proba(Xrec)
            out[record, e] = proba[np.arange(len(record)), codes[record]]
    return out


@dimension("ambiguity")
def ambiguity(gold_probs: Any = None, *, probs: Any = None, gold: Sequence[Any] | None = None,
              texts: Sequence[Any] | None = None, features: Any = None, include_ci: bool = False,
              epochs: int = 5, setting: str = "train", folds: int = 5, seed: int = 0) -> np.ndarray:
    """Training-dynamics variability (Swayamdipta et al., EMNLP 2020, "Dataset Cartography", Sec. 2).

    The standard deviation over epochs of the model's probability of the gold label,
    ``sqrt(sum_e (p_e - mean)^2 / E)`` (ddof=0, as ``np.std`` in their code). Swayamdipta et al. call
    high-variability items *ambiguous*; it is the ambiguity dimension of the benchmark-transparency
    analysis. High = the model wavers on the item.

    ``include_ci=True`` is their code's ``--include_ci`` option
    (``cartography/selection/train_dy_filtering.py``, after Chang et al. 2017, "Active Bias"): the
    variance plus the variance of that variance estimate, ``sqrt(var + var**2 / (E - 1))`` with the
    same ddof=0 ``var`` -- slightly larger than the plain std when there are few epochs.

    Three ways in, in this order:

    - ``gold_probs``: items x epochs (or items x runs) gold-label probabilities, NaN where missing.
      Per-run probabilities (several seeds or models, e.g. ChaosNLI's five runs) give the
      variability across runs -- our extension: the same formula over runs instead of epochs.
    - ``probs`` (items x epochs x classes) with ``gold`` (an integer class index per item).
    - ``texts`` (or ``features``) with ``gold``: :func:`training_dynamics` trains a cheap classifier
      for ``epochs`` epochs (``setting="train"``, the paper's, or ``"heldout"``, cross-fitted in
      ``folds``; seeded by ``seed``).

    Items with fewer than 2 finite probabilities are NaN.

    >>> ambiguity([[0.9, 0.7, 0.8], [0.5, 0.5, 0.5], [0.2, np.nan, np.nan]]).round(4).tolist()
    [0.0816, 0.0, nan]
    >>> ambiguity([[0.9, 0.7, 0.8]], include_ci=True).round(4).tolist()   # sqrt(v + v^2/2), v = 0.02/3
    [0.0818]
    """
    if gold_probs is not None:
        p = _float_matrix(gold_probs, "gold_probs")
        field = "gold_probs"
    elif probs is not None:
        P = np.asarray(probs, dtype=float)
        if P.ndim != 3 or P.shape[0] == 0:
            raise DataError(f"probs: expected items x epochs x classes, got shape {P.shape}; for gold-label "
                            "probabilities (items x epochs) use gold_probs=.", field="probs")
        if gold is None:
            raise ParameterError("ambiguity: probs=... needs gold=... (a class index per item).", field="gold")
        g = np.asarray(gold)
        _check_len(g, P.shape[0], "gold", "probs")
        if g.dtype.kind not in "iu" or np.any((g < 0) | (g >= P.shape[2])):
            raise DataError(f"gold: with probs=, each gold label must be a class index 0..{P.shape[2] - 1}.",
                            field="gold")
        p = P[np.arange(P.shape[0]), :, g]
        field = "probs"
    elif texts is not None or features is not None:
        p = training_dynamics(texts, gold, features=features, epochs=epochs, setting=setting, folds=folds,
                              seed=seed)
        field = "texts"
    else:
        raise ParameterError("ambiguity needs gold_probs=... (items x epochs), probs=... with gold=..., or "
                             "texts=... with gold=... to record training dynamics.", field="gold_probs")
    finite = p[np.isfinite(p)]
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        raise DataError(f"{field}: probabilities must lie in [0, 1]; found {finite.min():.4g}..{finite.max():.4g}. "
                        "Apply a softmax to logits first.", field=field)
    return _variability(p, bool(include_ci))


# ------------------------------------------------------------------------------------ learned noise
@dimension("learned_noise")
def learned_noise(texts: Sequence[Any] | None = None, *, counts: Any = None,
                  labels: Sequence[Sequence[Any]] | None = None, ratings: Any = None,
                  scale: tuple[float, float] | None = None, observed: Any = None, features: Any = None,
                  model: Any = None, folds: int = 5, seed: int = 0,
                  groups: Sequence[Any] | None = None) -> np.ndarray:
    """Annotator disagreement *predicted* from the input alone; defined for unjudged items too.

    Our extension of Kovatchev & Lease's "noise" (2024, Sec. 3), which needs several annotations per
    item: a regression from the input to the observed :func:`noise`, so that items without
    annotations get an estimate. **It is a prediction, not a measurement**: it says how contested
    items *like this one* were, not how contested this one is.

    The target is :func:`noise` of ``counts`` / ``labels`` / ``ratings`` (+ ``scale``), or
    ``observed`` (one float per item, NaN = not judged). The judged items are cross-fitted (``folds``
    parts; each is predicted by a model fitted on the others); the unjudged items are predicted by a
    model fitted on all judged items. ``model``: a scikit-learn regressor or a function returning
    one; default TF-IDF (unigrams + bigrams) + ``Ridge(alpha=1)``. Predictions are not clipped, so
    they may fall slightly outside the range of noise. NaN: items without input. ``groups`` (one
    split label per item): each split is predicted by a model fitted on the other splits only.

    >>> t = ["plain clear sentence"] * 10 + ["vague unclear sentence"] * 10 + ["vague new words"]
    >>> obs = [0.0] * 10 + [0.5] * 10 + [np.nan]                       # the last item is unjudged
    >>> v = learned_noise(t, observed=obs)
    >>> bool(v[10:20].mean() > v[:10].mean()), bool(np.isfinite(v[-1]))
    (True, True)
    """
    X, usable, is_text = _model_inputs(texts, features, "learned_noise")
    n = len(usable)
    if observed is not None:
        y = np.asarray(observed, dtype=float)
        if y.ndim != 1:
            raise DataError(f"observed: expected one number per item, got shape {y.shape}.", field="observed")
        field = "observed"
    else:
        if counts is None and labels is None and ratings is None:
            raise ParameterError("learned_noise needs the annotations to learn from: counts=, labels=, ratings= "
                                 "(as for noise) or observed= (the noise per item, NaN where not judged).",
                                 field="counts")
        y = noise(counts, labels=labels, ratings=ratings, scale=scale)
        field = next(f for f, v in (("counts", counts), ("labels", labels), ("ratings", ratings)) if v is not None)
    _check_len(y, n, field, "texts" if features is None else "features")
    return _learned(X, usable, is_text, y, model, folds, seed, groups, "learned_noise")


def _learned(X: Any, usable: np.ndarray, is_text: bool, y: np.ndarray, model: Any, folds: int, seed: int,
             groups: Sequence[Any] | None, name: str) -> np.ndarray:
    """Cross-fitted predictions of ``y`` (NaN = not judged) from the inputs ``X``: judged items by
    ``folds``-fold cross-fitting -- or, with ``groups``, each group's items by a model fitted on the
    other groups only (so a split's values never use its own labels) -- and unjudged items by a
    model fitted on every judged item (of the other groups, with ``groups``)."""
    n = len(usable)
    out = np.full(n, np.nan)
    default = _default_regressor(is_text)
    judged = np.flatnonzero(usable & np.isfinite(y))
    if groups is not None:
        g = np.asarray([str(v) for v in groups])
        _check_len(g, n, "groups", "texts")
        for value in np.unique(g):
            train = judged[g[judged] != value]
            test = np.flatnonzero(usable & (g == value))
            if train.size < 2 or test.size == 0:
                continue  # nothing to learn from outside this group: its items stay NaN
            est = _estimator(model, default).fit(_take(X, train), y[train])
            out[test] = np.asarray(est.predict(_take(X, test)), dtype=float).ravel()
        return out
    folds = _check_folds(folds, judged.size, name)
    for train, test in _splits(judged, folds, seed):
        est = _estimator(model, default).fit(_take(X, train), y[train])
        out[test] = np.asarray(est.predict(_take(X, test)), dtype=float).ravel()
    rest = np.flatnonzero(usable & ~np.isfinite(y))
    if rest.size:
        est = _estimator(model, default).fit(_take(X, judged), y[judged])
        out[rest] = np.asarray(est.predict(_take(X, rest)), dtype=float).ravel()
    return out


@dimension("learned_difficulty")
def learned_difficulty(texts: Sequence[Any] | None = None, *, scores: Any = None,
                       scale: tuple[float, float] | None = None, higher_is_better: bool = True,
                       observed: Any = None, groups: Sequence[Any] | None = None, features: Any = None,
                       model: Any = None, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Difficulty *predicted* from the input alone; defined for unjudged items too (our extension:
    the "predicted difficulty" of a new, unjudged split).

    The target is :func:`difficulty` of ``scores`` (items x systems; NaN rows = not judged) or
    ``observed`` (one float per item). Fitted as :func:`learned_noise` (TF-IDF + ridge by default,
    cross-fitted). ``groups`` (one split label per item, e.g. the domain): each split's items are
    predicted by a model fitted on the *other* splits only, so a split's value never uses its own
    labels -- what a prediction for an unjudged split must be. **A prediction, not a measurement.**

    >>> t = ["short easy"] * 10 + ["long hard tricky sentence"] * 10
    >>> s = np.r_[np.ones(10), np.zeros(10)][:, None] * np.ones((1, 2))     # 2 systems: easy right, hard wrong
    >>> v = learned_difficulty(t, scores=s)
    >>> bool(v[10:].mean() > v[:10].mean())
    True
    """
    X, usable, is_text = _model_inputs(texts, features, "learned_difficulty")
    if observed is not None:
        y = np.asarray(observed, dtype=float)
        if y.ndim != 1:
            raise DataError(f"observed: expected one number per item, got shape {y.shape}.", field="observed")
        field = "observed"
    elif scores is not None:
        y, field = difficulty(scores, scale=scale, higher_is_better=higher_is_better), "scores"
    else:
        raise ParameterError("learned_difficulty needs what to learn: scores= (items x systems) or observed= (the "
                             "difficulty per item, NaN where not judged).", field="scores")
    _check_len(y, len(usable), field, "texts" if features is None else "features")
    return _learned(X, usable, is_text, y, model, folds, seed, groups, "learned_difficulty")


# --------------------------------------------------------------------------------------- perplexity
_WORD = re.compile(r"\w+|[^\w\s]")


def _words(text: str) -> list[str]:
    """The n-gram scorer's tokens: lower-cased words and single punctuation marks."""
    return _WORD.findall(text.lower())


_WB = None


def _witten_bell_uniform() -> type:
    """nltk's Witten-Bell smoothing with its recursion ending in the uniform distribution.

    nltk's ``WittenBell`` ends the interpolation at the unigram MLE, so a word without counts (an
    unseen word, when no training word was rare enough to become ``<UNK>``) gets probability 0 and
    the perplexity is infinite. Here the unigram level is itself Witten-Bell-interpolated with the
    uniform distribution over the vocabulary, ``p(w) = (c(w) + T / |V|) / (N + T)`` with ``T``
    distinct types among ``N`` tokens -- the recursion's usual end (Chen & Goodman 1998, Sec. 2.5).
    """
    global _WB
    if _WB is None:
        from nltk.lm.smoothing import WittenBell

        class WittenBellUniform(WittenBell):
            def unigram_score(self, word: str) -> float:
                uni = self.counts.unigrams
                n, t = uni.N(), uni.B()
                return (uni[word] + t / len(self.vocab)) / (n + t)

        _WB = WittenBellUniform
    return _WB


class NgramScorer:
    """An n-gram language model from ``nltk.lm``, trained on a reference corpus (no weights needed).

    ``corpus``: texts (strings, or tuples whose parts are joined with a space so that n-grams cross
    from the premise into the hypothesis, as conditional scoring needs). Tokens: lower-cased words
    and punctuation marks; sentences are padded with ``<s>`` / ``</s>`` and ``</s>`` is scored (as
    in SRILM). Words seen fewer than ``unk_cutoff`` times become ``<UNK>``, so unseen words get the
    probability of rare words instead of 0.

    ``smoothing``: ``"witten_bell"`` (default: nltk's interpolated Witten-Bell, its recursion ending
    in the uniform distribution -- see :func:`_witten_bell_uniform` -- so that no word has
    probability 0), ``"kneser_ney"`` (``KneserNeyInterpolated``; an unseen word without ``<UNK>``
    counts gets probability 0, i.e. infinite perplexity), ``"lidstone"`` (add-``gamma``, no
    interpolation) or ``"laplace"``.
    Witten-Bell is the default because nltk's Kneser-Ney is far too slow to score a benchmark:
    measured on ChaosNLI sentences (trigram, 5,000 training sentences, 2 shared CPU cores) Witten-Bell
    scores about 3,400 sentences/s and Kneser-Ney about 6/s (~30 min for 10k items), while
    Witten-Bell is still an interpolated model that backs off to lower orders (Lidstone, at ~10k/s,
    does not back off: an unseen context gets a uniform distribution).

    A conditional score uses the last ``order - 1`` words of the context: an n-gram model conditions
    on no more than that.
    """

    SMOOTHINGS = ("witten_bell", "kneser_ney", "lidstone", "laplace")

    def __init__(self, corpus: Iterable[Any], *, order: int = 3, smoothing: str = "witten_bell",
                 unk_cutoff: int = 2, gamma: float = 0.1) -> None:
        try:
            from nltk.lm import KneserNeyInterpolated, Laplace, Lidstone, Vocabulary
            from nltk.lm.models import InterpolatedLanguageModel
            from nltk.lm.preprocessing import padded_everygram_pipeline
        except ImportError:
            raise missing_dependency("nltk", "transparency", "The n-gram perplexity scorer") from None
        check_choice("smoothing", smoothing, self.SMOOTHINGS, where="NgramScorer")
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise ParameterError(f"NgramScorer: order must be an integer >= 1, got {order!r}.", field="order")
        sents = []
        for i, t in enumerate(corpus):
            parts = _item_parts(t, i, "corpus")
            if parts is not None:
                sents.append(_words(" ".join(parts)))
        if not any(sents):
            raise DataError("corpus: no text to train the n-gram model on (empty, or only missing items).",
                            field="corpus")
        self.order = int(order)
        vocab = Vocabulary(unk_cutoff=unk_cutoff)
        if smoothing == "witten_bell":
            self.lm = InterpolatedLanguageModel(_witten_bell_uniform(), self.order, vocabulary=vocab)
        elif smoothing == "kneser_ney":
            self.lm = KneserNeyInterpolated(self.order, vocabulary=vocab)
        elif smoothing == "lidstone":
            self.lm = Lidstone(gamma, self.order, vocabulary=vocab)
        else:
            self.lm = Laplace(self.order, vocabulary=vocab)
        train, words = padded_everygram_pipeline(self.order, sents)
        self.lm.fit(train, words)

    def score(self, targets: Sequence[str], contexts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(summed negative log-likelihood in nats, number of scored tokens) per target text."""
        nll = np.zeros(len(targets))
        ntok = np.zeros(len(targets))
        k = self.order - 1
        for i, (t, c) in enumerate(zip(targets, contexts)):
            hist = ["<s>"] * k + (_words(c) if c else [])
            words = _words(t) + ["</s>"]
            seq = hist + words
            s = 0.0
            for j in range(len(hist), len(seq)):
                p = self.lm.score(seq[j], seq[j - k:j] if k else None)
                s -= np.log(p) if p > 0 else -np.inf
            nll[i], ntok[i] = s, len(words)
        return nll, ntok


class CausalLMScorer:
    """A causal language model from a LOCAL directory (``transformers``; nothing is downloaded).

    ``path``: a directory written by ``save_pretrained`` (model and tokenizer), loaded with
    ``AutoModelForCausalLM`` / ``AutoTokenizer`` and ``local_files_only=True``, run on ``device``
    (default CPU) in ``eval`` mode, ``batch_size`` texts at a time (right padding with an attention
    mask, sorted by length, so batched and unbatched scores agree up to float rounding).

    A text is scored after the tokenizer's BOS token when it has one (GPT-2: ``<|endoftext|>``), so
    its first token counts; without one the first token of a plain text is not scored. A conditional
    score tokenizes ``context + " " + target`` and scores the tokens after the context's own
    tokenization. Sequences longer than the model's window lose context tokens from the left first,
    then target tokens from the right (counted in :attr:`truncated`).
    """

    def __init__(self, path: Any, *, batch_size: int = 16, device: str = "cpu", max_length: int | None = None) -> None:
        from pathlib import Path

        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise missing_dependency(e.name or "transformers", "embed", "The causal-LM perplexity scorer") from None
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ParameterError(f"CausalLMScorer: batch_size must be an integer >= 1, got {batch_size!r}.",
                                 field="batch_size")
        p = Path(path)
        if not (p.is_dir() and (p / "config.json").exists()):
            raise DataError(f"model_path: {str(p)!r} is not a local model directory (no config.json); give a folder "
                            "written by save_pretrained. Nothing is downloaded.", field="model_path")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(str(p), local_files_only=True).to(device).eval()
        except (OSError, ValueError) as e:
            raise DataError(f"model_path: could not load a causal LM and its tokenizer from {str(p)!r}: {e}",
                            field="model_path") from None
        cfg = self.model.config
        window = max_length or getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)
        self.max_length = int(window or 1024)
        self.batch_size = int(batch_size)
        self.device = device
        self.truncated = 0

    def _encode(self, target: str, context: str | None) -> tuple[list[int], int]:
        """(token ids, index of the first target token)."""
        tok = self.tokenizer
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
        if not context:
            ids = tok(target, add_special_tokens=False)["input_ids"]
            return bos + ids, len(bos) if bos else 1
        ctx = tok(context, add_special_tokens=False)["input_ids"]
        whole = tok(context + " " + target, add_special_tokens=False)["input_ids"]
        if whole[:len(ctx)] != ctx:  # the join changed the context's tokens: encode the parts apart
            whole = ctx + tok(" " + target, add_special_tokens=False)["input_ids"]
        return bos + whole, len(bos) + len(ctx)

    def _fit_window(self, ids: list[int], start: int) -> tuple[list[int], int]:
        if len(ids) <= self.max_length:
            return ids, start
        self.truncated += 1
        drop = min(len(ids) - self.max_length, max(start - 1, 0))   # context first, keep one token before
        ids, start = ids[drop:], start - drop
        return ids[:self.max_length], start

    def score(self, targets: Sequence[str], contexts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(summed negative log-likelihood in nats, number of scored tokens) per target text."""
        import torch

        enc = [self._fit_window(*self._encode(t, c)) for t, c in zip(targets, contexts)]
        nll = np.zeros(len(enc))
        ntok = np.zeros(len(enc))
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else int(pad)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]))
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                idx = order[b:b + self.batch_size]
                width = max(len(enc[i][0]) for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                mask = torch.zeros((len(idx), width), dtype=torch.long)
                scored = torch.zeros((len(idx), width - 1), dtype=torch.bool)
                for r, i in enumerate(idx):
                    seq, start = enc[i]
                    ids[r, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                    mask[r, :len(seq)] = 1
                    scored[r, max(start, 1) - 1:len(seq) - 1] = True  # position j predicts token j + 1
                if width < 2:
                    continue
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                tok_lp = logp.gather(-1, ids[:, 1:].to(self.device).unsqueeze(-1)).squeeze(-1).cpu()
                tok_lp = torch.where(scored, tok_lp, torch.zeros_like(tok_lp))
                for r, i in enumerate(idx):
                    nll[i] = -float(tok_lp[r].sum())
                    ntok[i] = float(scored[r].sum())
        return nll, ntok


def _scorer_for(scorer: Any, corpus: Any, model_path: Any, order: int, smoothing: str, batch_size: int) -> Any:
    if hasattr(scorer, "score") and not isinstance(scorer, str):
        return scorer
    check_choice("scorer", scorer, ("ngram", "causal_lm"), where="perplexity")
    if scorer == "causal_lm":
        if model_path is None:
            raise ParameterError("perplexity: scorer='causal_lm' needs model_path=... (a local directory written by "
                                 "save_pretrained).", field="model_path")
        return CausalLMScorer(model_path, batch_size=batch_size)
    return NgramScorer(corpus, order=order, smoothing=smoothing)


@dimension("perplexity")
def perplexity(texts: Sequence[Any] | None = None, *, scorer: Any = "ngram", corpus: Sequence[Any] | None = None,
               model_path: Any = None, conditional: bool = True, order: int = 3, smoothing: str = "witten_bell",
               batch_size: int = 16, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Per-item perplexity under a language model (Kovatchev & Lease 2024, Sec. 3, "perplexity").

    ``exp(mean over the scored tokens of -log p(token | preceding tokens))``. With
    ``conditional=True`` (default) a pair item ``(premise, hypothesis)`` or ``(context, question)``
    is scored as the perplexity of its **last** text given the others as a prefix: only the last
    text's tokens are averaged. A single string, or any item with ``conditional=False`` (the parts
    joined with a space), is scored plainly.

    ``scorer``:

    - ``"ngram"`` (default): :class:`NgramScorer` (``nltk.lm``; ``order``, ``smoothing``; needs
      ``pip install 'evalsift[transparency]'``) trained on ``corpus``. Without ``corpus`` it is
      cross-fitted on the items' own texts: split in ``folds`` parts (seeded), each scored by a model
      trained on the other parts.
    - ``"causal_lm"``: :class:`CausalLMScorer` from the local directory ``model_path`` (CPU,
      ``batch_size`` texts per forward pass).
    - any object with ``score(targets, contexts) -> (nll_sum_nats, n_tokens)`` arrays.

    NaN: missing items, targets without a token, and items with no scored token.

    >>> corpus = ["the cat sat on the mat", "the dog sat on the rug"] * 20
    >>> ppl = perplexity(["the cat sat on the mat", "mat the on cat the sat"], corpus=corpus)
    >>> bool(ppl[0] < ppl[1])
    True
    """
    texts = _nonempty(texts, "texts")
    parts = [_item_parts(t, i) for i, t in enumerate(texts)]
    targets: list[str | None] = []
    contexts: list[str | None] = []
    for p in parts:
        if p is None or not (p[-1] if conditional else " ".join(p)).strip():
            targets.append(None)
            contexts.append(None)
        elif conditional and len(p) > 1:
            targets.append(p[-1])
            contexts.append(" ".join(p[:-1]))
        else:
            targets.append(" ".join(p))
            contexts.append(None)
    ok = np.array([t is not None for t in targets])
    if not ok.any():
        raise DataError("texts: no item has text to score.", field="texts")
    nll = np.full(len(texts), np.nan)
    ntok = np.zeros(len(texts))

    def run(sc: Any, idx: np.ndarray) -> None:
        if idx.size == 0:
            return
        a, b = sc.score([targets[i] for i in idx], [contexts[i] for i in idx])
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != (idx.size,) or b.shape != (idx.size,):
            raise ParameterError(f"perplexity: scorer.score returned shapes {a.shape}, {b.shape}; expected "
                                 f"({idx.size},) each (nll sums, token counts).", field="scorer")
        nll[idx], ntok[idx] = a, b

    idx = np.flatnonzero(ok)
    if isinstance(scorer, str) and scorer == "ngram" and corpus is None:
        own = [parts[i] for i in range(len(parts))]
        for train, test in _splits(idx, _check_folds(folds, idx.size, "perplexity"), seed):
            run(NgramScorer([own[i] for i in train], order=order, smoothing=smoothing), test)
    else:
        if isinstance(scorer, str) and scorer == "ngram" and len(corpus) == 0:
            raise DataError("corpus: empty; give reference texts or leave corpus=None to cross-fit on the items.",
                            field="corpus")
        run(_scorer_for(scorer, corpus, model_path, order, smoothing, batch_size), idx)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.where(ntok > 0, np.exp(nll / np.where(ntok > 0, ntok, 1)), np.nan)


# ------------------------------------------------------------------------------------------ the API
POOL_FIELDS: dict[str, tuple[str | tuple[str, ...], ...]] = {
    "texts": ("texts", ("premise", "hypothesis")),
    "counts": ("counts", "label_count"),
    "gold": ("gold",),
    "gold_probs": ("gold_probs", "gold_prob"),
}
"""Dimension input -> the pool fields it is read from, in order: a per-item column (``pool.metadata``)
of that name, or a score matrix (``pool.scores``, items x systems) of that name; a tuple of names
zips those per-item columns into one tuple per item (a premise-hypothesis pair)."""
_ONE_OF = ("counts", "labels", "ratings", "observed")  # noise / learned_noise take exactly one of these


def _pool_inputs(pool: Any, declared: set[str], given: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs of :data:`POOL_FIELDS` that ``pool`` provides, for the ``declared`` ones not ``given``."""
    out: dict[str, Any] = {}
    for key, fields in POOL_FIELDS.items():
        if key not in declared or key in given:
            continue
        if key in _ONE_OF and any(k in given or k in out for k in _ONE_OF):
            continue
        for f in fields:
            if isinstance(f, tuple):
                if all(c in pool.metadata for c in f):
                    out[key] = list(zip(*(pool.metadata[c] for c in f)))
                    break
            elif f in pool.metadata:
                col = pool.metadata[f]
                out[key] = np.asarray(col) if isinstance(col, np.ndarray) else list(col)
                break
            elif f in pool.scores:
                out[key] = np.asarray(pool.scores[f])
                break
    return out


def compute_dimensions(names: Iterable[str], *, pool: Any = None, metric: str | None = None,
                       **inputs: Any) -> dict[str, np.ndarray]:
    """Compute the dimensions ``names`` from ``inputs``; one array per name, all of the same length.

    Each dimension takes the keyword inputs it declares (``texts``, ``records``/``field``,
    ``counts``/``labels``/``ratings``, ``scores``, ``responses``, ``seed``, ...); inputs a dimension
    does not declare are ignored. Both IRT dimensions share one 2PL fit.

    With ``pool`` (an :class:`evalsift.pool.Pool`), an input that is not given and that some requested
    dimension declares is taken from the pool, first match wins (see :data:`POOL_FIELDS`):

    - the data inputs ``texts``, ``counts``, ``gold`` and ``gold_probs`` from the pool's per-item
      column (``pool.metadata``) of that name, else of an alias -- ``counts`` from ``label_count``,
      ``gold_probs`` from ``gold_prob``, ``texts`` from the ``premise`` and ``hypothesis`` columns
      zipped into pairs -- else from a score matrix (items x systems) of that name or alias
      (``gold_probs`` = ``pool.scores["gold_prob"]``: one run per column). Only one of the
      alternatives ``counts``/``labels``/``ratings``/``observed`` is filled, and none if one is given;
    - otherwise ``texts=pool.inputs`` (text pools), ``scores=pool.scores[metric]`` and
      ``responses=pool.scores[metric].T``.

    So a ChaosNLI pool (:func:`evalsift.io.chaosnli.read_chaosnli`) provides the pairs, the 100 crowd
    labels per item, the gold labels and the runs' gold-label probabilities: ``length``, ``perplexity``,
    ``noise``, ``learned_noise``, ``pvi`` and ``ambiguity`` need no other input. A pool without such
    fields behaves as before.

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
        declared = {k for fn in fns.values() for k in inspect.signature(fn).parameters}
        inputs.update(_pool_inputs(pool, declared, inputs))
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
