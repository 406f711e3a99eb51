"""Dimensions from annotators' labels and gold labels: ``noise`` (annotator disagreement), ``difficulty``
(pointwise V-information, PVI; ``pvi`` is its deprecated alias), ``ambiguity`` (the variability of
held-out items' gold-label probability over training epochs, :func:`training_dynamics`;
``train_variability``: of the training items) -- both ``difficulty`` and ``ambiguity`` from a TF-IDF
model by default, or from a fine-tuned local encoder with ``classifier=`` (:mod:`.finetune`) --
and the cross-fitted predictions ``learned_noise`` and ``learned_difficulty`` (defined for unjudged
items too)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError, check_choice
from .crossfit import (_check_folds, _default_classifier, _default_regressor, _encode_labels, _estimator, _log_proba,
                       _model_inputs, _splits, _take, _tfidf)
from .inputs import _check_len, _float_matrix, _nonempty
from .qa import answer_agreement, span_gold_probs
from .registry import dimension
from .scores import score_difficulty


@dimension("noise")
def noise(counts: Any = None, *, labels: Sequence[Sequence[Any]] | None = None,
          ratings: Any = None, scale: tuple[float, float] | None = None,
          answers: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """Annotator disagreement per item: 1 - agreement (Kovatchev & Lease 2024, Sec. 3, "noise").

    Categorical labels (the paper's definition): ``1 - n_majority / n_annotators``, the share of
    annotators who did *not* choose the majority label. Give either ``counts`` (items x classes,
    the number of annotators choosing each class, e.g. ChaosNLI's ``label_count``) or ``labels``
    (one list of labels per item, e.g. ChaosNLI's ``old_labels``). An item with fewer than 2
    annotations gets NaN (agreement is undefined).

    Extractive QA (``answers``: one list of the annotators' answer strings per item, e.g. SQuAD's
    ``answers["text"]``): the paper's SQuAD form (App. A), ``1 - `` the mean over every pair of
    annotators of SQuAD's token-overlap F1 (:func:`~.qa.answer_agreement`). NaN with fewer than 2
    answers.

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
    >>> noise(answers=[["Paris", "Paris"], ["in 1889", "1889"]]).round(4).tolist()   # 1 - F1: 0; 1 - 2/3
    [0.0, 0.3333]
    """
    given = [n for n, v in (("counts", counts), ("labels", labels), ("ratings", ratings), ("answers", answers))
             if v is not None]
    if len(given) != 1:
        raise ParameterError("noise: give exactly one of counts=, labels=, ratings= or answers=; got "
                             f"{', '.join(given) or 'none'}.", field="counts")
    if answers is not None:
        _nonempty(answers, "answers")
        return 1.0 - answer_agreement(answers)
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


@dimension("difficulty", "the paper's difficulty: pointwise V-information (PVI), cross-fitted; needs texts and gold "
           "(classifier=: a fine-tuned local encoder, profile --classifier)")
@dimension("pvi", "deprecated alias of difficulty")  # DEPRECATED_NAMES: kept for --dims pvi
def pvi(texts: Sequence[Any] | None = None, *, gold: Sequence[Any] | None = None, features: Any = None,
        model: Any = None, folds: int = 5, seed: int = 0, classifier: Any = None,
        device: str | None = None) -> np.ndarray:
    """Pointwise V-information in bits (Ethayarajh, Choi & Swayamdipta, ICML 2022, Eq. 2), cross-fitted.

    ``PVI(x -> y) = -log2 p_null(y) + log2 p_input(y | x)``: how much the input tells a model family
    about the gold label beyond the label's base rate. ``p_input`` is a model fitted on (input, label)
    pairs; ``p_null`` the same family fitted with an empty input, whose best fit is the class prior --
    so it *is* the class prior of the training folds (Ethayarajh et al. fine-tune on empty input,
    which approximates this). Cross-fitted: the usable items are split in ``folds`` parts (stratified
    by label when every class has ``folds`` items) and each item is scored by the models fitted on the
    other parts, so no item is scored by a model that saw it.

    Ethayarajh et al. use PVI as instance difficulty: **low PVI = hard** (negative: the model does
    worse with the input than without it). It is Kovatchev & Lease's *difficulty* (2024, Sec. 3 and
    App. A: PVI from a model with the input vs one with an empty input), registered as the dimension
    ``difficulty`` (``pvi`` is a deprecated alias), returned as is -- not negated, not rescaled. The
    paper's models are fine-tuned BERT-large; the default here is a bag-of-words classifier, which
    cannot do NLI, so its PVI is near 0 there (pass ``model=`` for a stronger family).
    :func:`~.scores.score_difficulty` is the score-based proxy for scored data without gold labels.

    ``texts``: one string per item or a (premise, hypothesis) tuple (the words of a pair are tagged
    with their side, see the default model); or ``features`` (items x columns). ``gold``: one label
    per item (any hashable; None = unlabelled). ``model``: a scikit-learn classifier with
    ``predict_proba`` or a function returning one (it is fitted on the list of strings, or on
    ``features``); default TF-IDF (unigrams + bigrams, sublinear tf) + ``LogisticRegression``.
    NaN: items without input or gold label, and items whose gold class is absent from their
    training folds (its probability is undefined).

    ``classifier``: the paper's model family instead -- a local checkpoint folder (``save_pretrained``,
    e.g. BERT; nothing is downloaded) or a :class:`~.finetune.FineTunedClassifier` (``pvi_epochs``, default
    3 as App. A; batch size, learning rate, max_length). Then ``p_input`` is that encoder fine-tuned on
    (text, label) and
    ``p_null`` the same encoder fine-tuned with the same settings on (the empty string, label), as
    Ethayarajh et al. do (not the class prior), on the same ``folds``/``seed`` splits; the value is
    still PVI in bits, high = easy, not negated (:func:`~.finetune.finetune_dynamics`). ``device``:
    where it runs (``None``: the process default, ``--device``); fp32. It reads ``texts`` (a pair is
    the encoder's sentence pair), so ``features=`` and ``model=`` do not go with it.

    >>> t = ["good great fine"] * 10 + ["bad awful poor"] * 10 + ["meh so so"] * 10
    >>> y = ["pos"] * 10 + ["neg"] * 10 + ["pos", "neg"] * 5
    >>> v = pvi(t, gold=y, folds=5)
    >>> bool(v[:20].mean() > 0.5 > v[20:].mean())       # predictable labels carry information
    True
    """
    if texts is not None and features is None and isinstance(texts, np.ndarray) and texts.dtype.kind in "fiub":
        raise DataError("difficulty (PVI): texts is a numeric array; PVI needs the items' texts and gold= labels. "
                        "For 1 - the mean score per item use score_difficulty(scores).", field="texts")
    if classifier is not None:
        return _classifier_run(classifier, texts, gold, features, folds, seed, device, "difficulty (PVI)",
                               model=model).pvi
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
def _classifier_run(classifier: Any, texts: Any, gold: Any, features: Any, folds: int, seed: int,
                    device: str | None, who: str, model: Any = None) -> Any:
    """The fine-tuned classifier's cross-fitted run (:func:`~.finetune.finetune_dynamics`), shared by
    ``difficulty`` and ``ambiguity`` through its cache."""
    from .finetune import finetune_dynamics

    if model is not None:
        raise ParameterError(f"{who}: give classifier= (a fine-tuned local encoder) or model= (a scikit-learn "
                             "classifier), not both.", field="model")
    if features is not None:
        raise ParameterError(f"{who}: classifier= fine-tunes an encoder on the items' texts; give texts=..., not "
                             "features=... (features go with the default model).", field="features")
    if texts is None:
        raise ParameterError(f"{who}: classifier= needs texts=... (one string or (premise, hypothesis) per item) "
                             "and gold=... (one label per item).", field="texts")
    return finetune_dynamics(texts, gold, classifier, folds=folds, seed=seed, device=device)


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
              spans: Sequence[Any] | None = None, null_index: int | None = None,
              texts: Sequence[Any] | None = None, features: Any = None, include_ci: bool = True,
              epochs: int = 10, setting: str = "heldout", folds: int = 5, seed: int = 0, classifier: Any = None,
              device: str | None = None) -> np.ndarray:
    """Ambiguity as Kovatchev & Lease define it (2024, Sec. 3 and App. A): the variability over
    training epochs of the model's probability of the gold label, for items the model is *not*
    trained on, with the ``include_ci`` formula of the Dataset Cartography code.

    App. A: a model is fine-tuned for 10 epochs; after each epoch it predicts the *validation* items
    and their gold-label probabilities form a vector ``conf``; the ambiguity of an item is
    ``sqrt(var(conf) + var(conf)**2 / (len(conf) - 1))`` (``var`` with ddof=0) -- the ``--include_ci``
    option of Swayamdipta et al.'s ``cartography/selection/train_dy_filtering.py`` (after Chang et
    al. 2017). High = the model wavers on the item. The defaults are the paper's: ``include_ci=True``,
    ``epochs=10``, ``setting="heldout"``.

    ``train_variability`` is the earlier form (Swayamdipta et al.'s own: the dynamics of the
    *training* items, plain std); ``include_ci=False`` here gives the plain std
    ``sqrt(sum_e (p_e - mean)^2 / E)`` on held-out items.

    Five ways in, in this order:

    - ``classifier`` with ``texts`` and ``gold``: the paper's model family -- a local checkpoint folder
      (``save_pretrained``, e.g. BERT; nothing downloaded) or a :class:`~.finetune.FineTunedClassifier`,
      fine-tuned cross-fitted in ``folds`` parts (seeded by ``seed``), each item's gold-label
      probability recorded after every epoch by the model training on the other parts
      (:func:`~.finetune.finetune_dynamics`; the run is shared with ``difficulty(classifier=...)``).
      The number of epochs is the classifier's ``epochs`` (default 10, App. A's), not this function's
      ``epochs``, which is the TF-IDF path's; ``setting`` must be ``"heldout"``. ``device``: where it
      runs (``None``: the process default); fp32. Asking for the classifier is asking for its dynamics, so ``gold_probs``,
      ``probs`` or ``spans`` passed along with it (a Pool's, by :func:`~.compute.compute_dimensions`)
      are not read.
    - ``gold_probs``: items x epochs (or items x runs) gold-label probabilities, NaN where missing,
      recorded elsewhere (for held-out items, to be the paper's quantity). Per-run probabilities
      (several seeds or models, e.g. ChaosNLI's five runs) give the variability across runs -- our
      extension: the same formula over runs instead of epochs.
    - ``probs`` (items x epochs x classes) with ``gold`` (an integer class index per item).
    - ``spans``: extractive QA, per item and epoch a reader's start/end logits and the gold spans
      (format: :mod:`.qa`); the gold probability of each epoch is :func:`~.qa.span_gold_probs` (App.
      A's span probability; ``null_index``: the no-answer position for SQuAD 2.0).
    - ``texts`` (or ``features``) with ``gold``: :func:`training_dynamics` trains a cheap classifier
      for ``epochs`` epochs and records the dynamics; ``setting="heldout"`` (default): cross-fitted in
      ``folds`` parts, each item recorded by the models training on the other parts -- the paper's
      validation items, for every item of one set; ``"train"``: the items the model trains on.

    Items with fewer than 2 finite probabilities are NaN.

    >>> ambiguity([[0.9, 0.7, 0.8], [0.5, 0.5, 0.5], [0.2, np.nan, np.nan]]).round(4).tolist()  # sqrt(v + v^2/2)
    [0.0818, 0.0, nan]
    >>> ambiguity([[0.9, 0.7, 0.8]], include_ci=False).round(4).tolist()   # plain std: v = 0.02/3
    [0.0816]
    """
    if classifier is not None:
        check_choice("setting", setting, ("heldout",), where="ambiguity with classifier=")
        p = _classifier_run(classifier, texts, gold, features, folds, seed, device, "ambiguity").gold_probs
    else:
        p = _gold_prob_matrix(gold_probs, probs, gold, texts, features, epochs, setting, folds, seed,
                              spans=spans, who="ambiguity", null_index=null_index)
    return _variability(p, bool(include_ci))


@dimension("train_variability")
def train_variability(gold_probs: Any = None, *, probs: Any = None, gold: Sequence[Any] | None = None,
                      texts: Sequence[Any] | None = None, features: Any = None, epochs: int = 5,
                      seed: int = 0) -> np.ndarray:
    """Training-dynamics variability of the *training* items (Swayamdipta et al., EMNLP 2020, Sec. 2).

    The standard deviation over epochs of the gold-label probability of the items the model trains
    on, ``sqrt(sum_e (p_e - mean)^2 / E)`` (ddof=0, as ``np.std`` in their code; no ``include_ci``).
    It was evalsift's ``ambiguity`` before ``ambiguity`` took the benchmark-transparency definition
    (held-out items, ``include_ci``); kept under its own name for results computed that way. From
    ``gold_probs`` / ``probs`` + ``gold`` it is the plain std of whatever was recorded; from
    ``texts`` / ``features`` + ``gold``, :func:`training_dynamics` with ``setting="train"``.

    >>> train_variability([[0.9, 0.7, 0.8], [0.5, 0.5, 0.5]]).round(4).tolist()   # sqrt(0.02 / 3)
    [0.0816, 0.0]
    """
    p = _gold_prob_matrix(gold_probs, probs, gold, texts, features, epochs, "train", 5, seed, spans=None,
                          who="train_variability")
    return _variability(p, False)


def _gold_prob_matrix(gold_probs: Any, probs: Any, gold: Any, texts: Any, features: Any, epochs: int, setting: str,
                      folds: int, seed: int, *, spans: Any, who: str, null_index: int | None = None) -> np.ndarray:
    """Items x epochs gold-label probabilities from the first input given (see :func:`ambiguity`)."""
    if gold_probs is not None:
        p = _float_matrix(gold_probs, "gold_probs")
        field = "gold_probs"
    elif probs is not None:
        P = np.asarray(probs, dtype=float)
        if P.ndim != 3 or P.shape[0] == 0:
            raise DataError(f"probs: expected items x epochs x classes, got shape {P.shape}; for gold-label "
                            "probabilities (items x epochs) use gold_probs=.", field="probs")
        if gold is None:
            raise ParameterError(f"{who}: probs=... needs gold=... (a class index per item).", field="gold")
        g = np.asarray(gold)
        _check_len(g, P.shape[0], "gold", "probs")
        if g.dtype.kind not in "iu" or np.any((g < 0) | (g >= P.shape[2])):
            raise DataError(f"gold: with probs=, each gold label must be a class index 0..{P.shape[2] - 1}.",
                            field="gold")
        p = P[np.arange(P.shape[0]), :, g]
        field = "probs"
    elif spans is not None:
        p, field = span_gold_probs(spans, null_index=null_index), "spans"
    elif texts is not None or features is not None:
        p = training_dynamics(texts, gold, features=features, epochs=epochs, setting=setting, folds=folds,
                              seed=seed)
        field = "texts"
    else:
        raise ParameterError(f"{who} needs gold_probs=... (items x epochs), probs=... with gold=..., "
                             f"{'spans=... (QA logits), ' if who == 'ambiguity' else ''}or texts=... with gold=... "
                             "to record training dynamics.", field="gold_probs")
    finite = p[np.isfinite(p)]
    if finite.size and (finite.min() < 0 or finite.max() > 1):
        raise DataError(f"{field}: probabilities must lie in [0, 1]; found {finite.min():.4g}..{finite.max():.4g}. "
                        "Apply a softmax to logits first.", field=field)
    return p


# ------------------------------------------------------------------------------------ learned noise
@dimension("learned_noise")
def learned_noise(texts: Sequence[Any] | None = None, *, counts: Any = None,
                  labels: Sequence[Sequence[Any]] | None = None, ratings: Any = None,
                  scale: tuple[float, float] | None = None, observed: Any = None, features: Any = None,
                  model: Any = None, folds: int = 5, seed: int = 0,
                  groups: Sequence[Any] | None = None, answers: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """Annotator disagreement *predicted* from the input alone; defined for unjudged items too.

    Our extension of Kovatchev & Lease's "noise" (2024, Sec. 3), which needs several annotations per
    item: a regression from the input to the observed :func:`noise`, so that items without
    annotations get an estimate. **It is a prediction, not a measurement**: it says how contested
    items *like this one* were, not how contested this one is.

    The target is :func:`noise` of ``counts`` / ``labels`` / ``ratings`` (+ ``scale``) / ``answers``, or
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
        if counts is None and labels is None and ratings is None and answers is None:
            raise ParameterError("learned_noise needs the annotations to learn from: counts=, labels=, ratings=, "
                                 "answers= (as for noise) or observed= (the noise per item, NaN where not judged).",
                                 field="counts")
        y = noise(counts, labels=labels, ratings=ratings, scale=scale, answers=answers)
        field = next(f for f, v in (("counts", counts), ("labels", labels), ("ratings", ratings),
                                    ("answers", answers)) if v is not None)
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


@dimension("learned_difficulty", "score_difficulty predicted from the input alone, cross-fitted (ours)")
def learned_difficulty(texts: Sequence[Any] | None = None, *, scores: Any = None,
                       scale: tuple[float, float] | None = None, higher_is_better: bool = True,
                       observed: Any = None, groups: Sequence[Any] | None = None, features: Any = None,
                       model: Any = None, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Difficulty *predicted* from the input alone; defined for unjudged items too (our extension:
    the "predicted difficulty" of a new, unjudged split).

    The target is :func:`~.scores.score_difficulty` of ``scores`` (items x systems; NaN rows = not judged) or
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
        y, field = score_difficulty(scores, scale=scale, higher_is_better=higher_is_better), "scores"
    else:
        raise ParameterError("learned_difficulty needs what to learn: scores= (items x systems) or observed= (the "
                             "difficulty per item, NaN where not judged).", field="scores")
    _check_len(y, len(usable), field, "texts" if features is None else "features")
    return _learned(X, usable, is_text, y, model, folds, seed, groups, "learned_difficulty")


difficulty = pvi
"""The paper's difficulty is PVI: :func:`pvi` under the name of the dimension."""

__all__ = ["ambiguity", "difficulty", "learned_difficulty", "learned_noise", "noise", "pvi", "train_variability",
           "training_dynamics"]
