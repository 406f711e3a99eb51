"""What the learned dimensions share: items as a model's inputs (texts or features), gold labels as
codes, seeded k-fold splits (so that no item is scored by a model fitted on it), and the default
scikit-learn models (TF-IDF + logistic regression or ridge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError
from .inputs import _check_len, _float_matrix, _is_missing, _item_parts, _nonempty


def _model_text(parts: tuple[str, ...]) -> str:
    """One string for a bag-of-words model. A pair's words are tagged with their part (``p0_dog``,
    ``p1_dog``) so the features keep which side a word came from (hypothesis-only cues in NLI)."""
    if len(parts) == 1:
        return parts[0]
    return " ".join(f"p{j}_{w}" for j, part in enumerate(parts) for w in part.lower().split())


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


__all__ = []
