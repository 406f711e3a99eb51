"""A data profile of a Pool and its self-contained report (Kovatchev & Lease 2024, Figures 3-6, Tables 1-4).

By default the profile uses only dimensions that do not come from the scores it stratifies
(:func:`default_dimensions`); score-derived ones are computed when named and marked circular.

:func:`profile_pool` computes everything (dimensions, the stratified re-evaluation, the similarity
of splits, OOD prediction) into one JSON-ready dict; :func:`write_report` writes it as
``results.json`` and ``report.html`` -- tables plus PNG plots embedded as base64 ``data:`` URIs, no
network, no external JavaScript or CSS, so the file can be mailed or archived as it is.

``results.json`` keys:

- ``data``, ``metric``, ``higher_is_better``, ``seed``, ``n_items``, ``systems``, ``dimensions``,
  ``label_free`` (the dimensions that need no judgment), ``circular`` ({dimension: why} for those
  computed from what is evaluated), ``performance`` ({system: mean}), ``notes``;
- ``correlation``: :func:`~.analysis.correlations` of the dimensions (Sec. 3.1), or null with fewer
  than two; ``distribution``: :func:`~.analysis.distributions` (Fig. 3);
- ``analysis``: {dimension: :meth:`StratifiedResult.to_dict`} (Fig. 4, Tables 1-2), with the
  ``random`` baseline row;
- ``summary``: one row per dimension and the ``random`` baseline: ``dimension``, ``pct_significant``,
  ``n_rank_significant``, ``rank_change_possible`` (False: the random band of Kendall tau spans
  [-1, 1], nothing can be flagged; shown as n/a), ``mean_sigma``, ``circular``, ``baseline``;
- ``profile``: :func:`~.ood.two_model_profile` (Fig. 6);
- ``similarity``: :func:`~.ood.split_similarity` with ``field`` (Fig. 5), or null without ``topics``;
- ``ood``: :meth:`~.ood.OODResult.to_dict` on every dimension (Tables 3-4), or null;
- ``ood_label_free``: the same on the label-free dimensions only -- how well a new, unjudged split's
  scores can be predicted (:func:`~.ood.predict_unjudged` is exactly one of its folds), or null;
- ``computed_by``: {dimension: how it was computed} for the model-based ``difficulty`` (``pvi``),
  ``ambiguity`` and ``perplexity`` among the dimensions (:func:`computed_by`): ``method`` (``tfidf``,
  ``classifier``, ``gold_probs``, ``spans``, ``causal_lm``, ``ngram``) and its settings;
- ``device`` (added by ``evalsift profile``): :func:`evalsift.device.device_report`, where the neural
  models ran.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError, UnknownNameError
from ..progress import progress_bar
from ..report.html import page, png_uri as _png, table as _table, warnings_box, write_json
from .analysis import analyse_all, correlations, distributions, mean_score
from .ood import ood_regression, split_indices, split_similarity, two_model_profile

__all__ = ["CORRELATED", "LABEL_FREE", "MAX_LINES", "circular_dimensions", "computed_by", "default_dimensions",
           "ood_warning", "plotted_systems", "profile_pool", "write_report"]

# computed from the inputs alone (the learned ones fitted on the other splits only): known for an unjudged split
LABEL_FREE = ("length", "perplexity", "ngram_perplexity", "learned_difficulty", "learned_noise")
CORRELATED = 0.5  # |Spearman rho| from which two dimensions are called correlated in the notes
MIN_SPLIT = 10  # a split with fewer items gives too noisy an SMD to learn from


# ---------------------------------------------------------------------------------------- compute
def _scored_systems(pool: Any, metric: str, notes: list[str]) -> Any:
    S = np.asarray(pool.scores[metric], dtype=float)
    ok = np.isfinite(S).any(axis=0)
    if ok.sum() < 2:
        raise DataError(f"metric {metric!r} scores fewer than 2 systems; a profile compares systems.", field="metric")
    if not ok.all():
        gone = [s for s, k in zip(pool.systems, ok) if not k]
        notes.append(f"{len(gone)} system(s) have no {metric} score and are left out: {', '.join(gone[:8])}")
        pool = pool.with_systems([s for s, k in zip(pool.systems, ok) if k])
        S = S[:, ok]
    scored = np.isfinite(S).any(axis=1)
    if not scored.all():
        notes.append(f"{int((~scored).sum())} of {pool.n_items} items have no {metric} score and are left out")
        pool = pool.subset(np.flatnonzero(scored))
    return pool


def _has_nltk() -> bool:
    import importlib.util

    return importlib.util.find_spec("nltk") is not None


def default_dimensions(pool: Any, *, lm_path: Any = None, classifier: Any = None) -> tuple[list[str], list[str]]:
    """``(names, notes)``: the dimensions ``profile`` computes when ``--dims`` is not given.

    Only dimensions that do not come from the scores being evaluated, each where the data allows:
    ``length`` and a perplexity (``perplexity`` with a local causal LM ``lm_path``, else
    ``ngram_perplexity``; needs nltk) for text inputs; ``difficulty`` (PVI) when the items have gold
    labels and texts; ``noise`` when they have several annotators' labels (``counts`` /
    ``label_count``, or QA ``answers``); ``ambiguity`` when there are per-epoch or per-run gold-label
    probabilities (``gold_probs`` / ``gold_prob``, or QA ``spans``), or a ``classifier`` (a local
    checkpoint to fine-tune) with texts and gold labels. The score-derived ones (:data:`~.dimensions.CIRCULAR`) are
    computed only when named in ``dims``.
    """
    from .dimensions import pool_input_source

    names: list[str] = []
    notes: list[str] = []
    has_text = pool.inputs_are_text or pool_input_source(pool, "texts") is not None
    if pool.inputs_are_text:
        names.append("length")
    if has_text:
        if lm_path is not None:
            names.append("perplexity")
        elif _has_nltk():
            names.append("ngram_perplexity")
            notes.append("perplexity: no local language model given (--lm DIR), so the profile uses "
                         "ngram_perplexity (a trigram model cross-fitted on the items), not the paper's GPT-2 "
                         "perplexity")
        else:
            notes.append("perplexity skipped: no local language model (--lm DIR) and no nltk for ngram_perplexity "
                         "(pip install 'evalsift[transparency]')")
    has_gold = has_text and pool_input_source(pool, "gold") is not None
    if has_gold:
        names.append("difficulty")
    # (answers / spans: the extractive-QA inputs, where compute_dimensions knows them)
    if any(pool_input_source(pool, k) is not None for k in ("counts", "answers")):
        names.append("noise")
    if (classifier is not None and has_gold) or any(pool_input_source(pool, k) is not None
                                                    for k in ("gold_probs", "spans")):
        names.append("ambiguity")
    return names, notes


def circular_dimensions(pool: Any, metric: str, names: Sequence[str], *, classifier: Any = None) -> dict[str, str]:
    """{dimension: why} for the dimensions of ``names`` that are computed from what is evaluated: stratifying
    the scores by them finds strata that differ by construction, not a property of the data. (``ambiguity``
    from a ``classifier`` fine-tuned here is not: its probabilities are a separate model's.)"""
    from .dimensions import CIRCULAR, pool_input_source

    out = {}
    for n in names:
        if n in CIRCULAR:
            out[n] = (f"computed from {metric}, the very scores being stratified: its strata differ by construction")
        elif n == "ambiguity" and classifier is None and pool_input_source(pool, "gold_probs") == "scores":
            out[n] = ("computed from the evaluated systems' own gold-label probabilities (a score matrix of the "
                      "data), not from a separate model's training dynamics as in the paper: partly circular")
    return out


def computed_by(pool: Any, names: Sequence[str], *, lm_path: Any = None, classifier: Any = None) -> dict[str, dict]:
    """{dimension: how it is computed} for the model-based dimensions among ``names`` (``difficulty`` /
    ``pvi``, ``ambiguity``, ``perplexity``): ``{"method": ...}`` and the model's settings, for results.json.

    ``tfidf``: the default scikit-learn models; ``classifier``: the local checkpoint fine-tuned
    (:func:`~.dimensions.finetune.finetune_dynamics`); ``gold_probs`` / ``spans``: probabilities the
    data supplies (``source``: a per-item column or a score matrix); ``causal_lm`` / ``ngram``: the
    perplexity's language model."""
    import inspect

    from .dimensions import ambiguity, difficulty, pool_input_source

    def default(fn: Any, name: str) -> Any:  # the dimension's own default, which the profile keeps
        return inspect.signature(fn).parameters[name].default

    folds = default(difficulty, "folds")
    clf = None
    if classifier is not None:
        from .dimensions.finetune import as_classifier

        c = as_classifier(classifier)
        clf = {"method": "classifier", "classifier": c.path, "batch_size": c.batch_size,
               "learning_rate": c.learning_rate, "max_length": c.max_length, "precision": "fp32", "folds": folds}
    out: dict[str, dict] = {}
    for n in names:
        if n in ("difficulty", "pvi"):
            out[n] = {**clf, "epochs": c.pvi_epochs} if clf else {
                "method": "tfidf", "model": "TF-IDF + logistic regression; null model: the class prior", "folds": folds}
        elif n == "ambiguity":
            if clf:
                out[n] = {**clf, "epochs": c.epochs}
            elif pool_input_source(pool, "gold_probs") is not None:
                out[n] = {"method": "gold_probs", "source": pool_input_source(pool, "gold_probs")}
            elif pool_input_source(pool, "spans") is not None:
                out[n] = {"method": "spans", "source": pool_input_source(pool, "spans")}
            else:
                out[n] = {"method": "tfidf", "model": "TF-IDF + SGD logistic regression",
                          "epochs": default(ambiguity, "epochs"), "folds": default(ambiguity, "folds")}
        elif n == "perplexity":
            out[n] = {"method": "causal_lm", "model": str(lm_path), "precision": "fp32"} if lm_path is not None \
                else {"method": "ngram"}
    return out


def _dimensions(pool: Any, metric: str, names: Sequence[str], higher_is_better: bool, seed: int,
                groups: Sequence[Any] | None = None, lm_path: Any = None, notes: list[str] | None = None,
                classifier: Any = None) -> dict:
    from .dimensions import compute_dimensions, dimensions

    for n in names:
        if n not in dimensions:
            try:
                dimensions.get(n)
            except UnknownNameError as e:  # the suggestion and the list, said about --dims
                raise UnknownNameError(f"--dims: {e}", field="dims") from None
    if "length" in names and not pool.inputs_are_text:
        raise ParameterError("dimension 'length' needs text inputs, which this data does not have; leave it out of "
                             "--dims.", field="dims")
    S = np.asarray(pool.scores[metric], dtype=float)
    signed = S if higher_is_better else -S
    extra: dict[str, Any] = {} if groups is None else {"groups": groups}  # learned: fitted on the other splits
    if lm_path is not None:
        extra["model_path"] = lm_path
    if classifier is not None:
        extra["classifier"] = classifier  # difficulty and ambiguity share one fine-tuning run
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FutureWarning)
            out = compute_dimensions(names, pool=pool, metric=metric, responses=signed.T,
                                     higher_is_better=higher_is_better, seed=seed, **extra)
    except ParameterError as e:
        raise ParameterError(f"--dims: {e} Dimensions every Pool provides: random and, from --metric (circular), "
                             "score_difficulty, irt_difficulty, discriminability; the others read per-item fields "
                             "of the pool (texts or premise/hypothesis, counts or label_count, gold, gold_probs or "
                             "gold_prob; see compute_dimensions), as the chaosnli/snli data has.",
                             field="dims") from None
    if notes is not None:
        for w in caught:
            if issubclass(w.category, FutureWarning) and str(w.message) not in notes:
                notes.append(str(w.message))
    return out


def _two_models(perf: np.ndarray, systems: Sequence[str], models: Sequence[str] | None, hib: bool) -> list[str]:
    if models:
        if len(models) != 2:
            raise ParameterError(f"--models: give exactly two systems, got {len(models)}.", field="models")
        for m in models:
            if m not in systems:
                raise DataError(f"--models: no system {m!r}; the systems are {', '.join(systems)}.", field="models")
        return list(models)
    order = np.argsort(-perf if hib else perf, kind="stable")
    return [systems[int(order[0])], systems[int(order[1])]]


def _ood(splits: dict, perf: Any, dims: dict, notes: list[str], what: str, options: dict) -> dict | None:
    if not dims:
        return None
    paper = options.get("protocol") == "paper"
    if len(splits) < (2 if paper else 3):
        notes.append(f"OOD prediction ({what}) skipped: it needs at least {2 if paper else 3} splits, the data has "
                     f"{len(splits)}")
        return None
    pairs = (len(splits) - 1) * (len(splits) - 2)  # ordered training pairs per held-out split
    if not paper and pairs < 2 * (len(dims) + 1):
        notes.append(f"OOD prediction ({what}): {pairs} training pairs of splits per held-out split for "
                     f"{len(dims)} similarity features; the SMD vector varies only between pairs, so the regression "
                     "is likely to over-fit -- prefer fewer dimensions or more splits")
    try:
        return ood_regression(splits, perf, dims, **options).to_dict()
    except DataError as e:
        notes.append(f"OOD prediction ({what}) skipped: {e}")
        return None


def _topics(pool: Any, topics: str, scaled_dims: dict, perf: Any, label_free: list[str], seed: int, n_samples: int,
            notes: list[str], ood_options: dict) -> tuple[dict | None, dict | None, dict | None]:
    if topics not in pool.metadata:
        raise DataError(f"--topics: the data has no metadata field {topics!r}; its fields are "
                        f"{', '.join(pool.metadata) or '(none)'}. Name one of them, or leave --topics out.",
                        field="topics")
    groups = list(pool.metadata[topics])
    all_splits = split_indices(groups, min_size=1)
    splits = {k: v for k, v in all_splits.items() if v.size >= MIN_SPLIT}
    if len(splits) < len(all_splits):
        small = [k for k in all_splits if k not in splits]
        notes.append(f"{len(small)} {topics} value(s) with fewer than {MIN_SPLIT} items left out: {', '.join(small[:8])}")
    if len(splits) < 2:
        notes.append(f"--topics {topics}: fewer than 2 splits of {MIN_SPLIT}+ items; similarity and OOD skipped")
        return None, None, None
    sim = split_similarity(scaled_dims, groups, n_samples=n_samples, seed=seed, min_size=MIN_SPLIT)
    sim["field"] = topics
    if ood_options.get("protocol") == "paper":  # the full data (a source of the paper's pairs) is every item
        ood_options = {"seed": seed, **ood_options, "full": np.arange(pool.n_items)}
    ood = _ood(splits, perf, scaled_dims, notes, "all dimensions", ood_options)
    free = {k: v for k, v in scaled_dims.items() if k in label_free}
    ood_free = _ood(splits, perf, free, notes, "label-free dimensions", ood_options) if free else None
    for o, what in ((ood, "all dimensions"), (ood_free, "label-free dimensions")):
        if o and not o.get("beats_no_change", True):
            notes.append(ood_warning(topics, what))
    return sim, ood, ood_free


def ood_warning(field: str, what: str) -> str:
    """The warning for an OOD regression that loses to "no change" on held-out ``field`` splits (``what``: the
    dimensions it used); in the notes, so the terminal and the report's Warnings box both say it."""
    return (f"on held-out {field} splits the regression ({what}) is worse than assuming no change; do not use its "
            "predictions for a new split of this data")


def profile_pool(pool: Any, metric: str, *, dims: Sequence[str] | None = None, topics: str | None = None,
                 models: Sequence[str] | None = None, higher_is_better: bool = True, seed: int = 0,
                 n_samples: int = 200, quiet: bool | None = None, lm_path: Any = None,
                 ood_options: dict[str, Any] | None = None, notes: list[str] | None = None,
                 classifier: Any = None) -> dict[str, Any]:
    """The data profile of ``pool`` on ``metric`` (see the module docstring for the keys), JSON-ready.

    ``dims``: dimension names (default: :func:`default_dimensions`, the ones the data allows that do
    not come from the evaluated scores); ``topics``: a metadata field whose values are the splits
    (similarity and OOD prediction); ``models``: the two systems of the profile (default: the two
    best); performance is the mean of ``metric`` per system (``higher_is_better`` orders them and
    orients the score-derived dimensions); ``lm_path``: a local causal LM directory for
    ``perplexity``; ``classifier``: a local sequence-classifier checkpoint (a folder, or a
    :class:`~.dimensions.finetune.FineTunedClassifier`) fine-tuned for ``difficulty`` (PVI) and
    ``ambiguity`` instead of the TF-IDF models (and ``ambiguity`` is then a default wherever the data
    has texts and gold labels). The ``random`` baseline row (Tables 1-2) is always added to the analysis.
    ``ood_options``: keyword arguments of :func:`~.ood.ood_regression` (``protocol="paper"`` and its
    ``pairs``, ``test_pairs``, ``repeats``; the full data is every item, ``seed`` is this ``seed``).
    ``notes``: the list that receives the notes (it is ``results["notes"]``; default: a new one) -- pass one to
    add what is said while the profile is computed and its report written, e.g. Python warnings.
    """
    from .dimensions import random_dimension

    pool.check_metric(metric)
    notes = [] if notes is None else notes
    pool = _scored_systems(pool, metric, notes)
    if dims:
        names = list(dict.fromkeys(dims))
    else:
        names, default_notes = default_dimensions(pool, lm_path=lm_path, classifier=classifier)
        notes += default_notes
        if not names:
            raise ParameterError("--dims: this data has nothing a label-free dimension can be computed from (no text "
                                 "inputs, gold labels, annotators' labels or runs' probabilities); name the dimensions, "
                                 "e.g. --dims score_difficulty,irt_difficulty,discriminability (computed from --metric "
                                 "itself, so circular: read them as a check, not a finding).", field="dims")
    circular = circular_dimensions(pool, metric, names, classifier=classifier)
    for n, why in circular.items():
        notes.append(f"{n} is circular: {why}")
    with progress_bar(len(names) + 3, "profile", quiet) as advance:
        groups = list(pool.metadata[topics]) if topics and topics in pool.metadata else None
        values = _dimensions(pool, metric, names, higher_is_better, seed, groups, lm_path, notes, classifier)
        advance()
        perf = mean_score(np.asarray(pool.scores[metric], dtype=float), pool.systems, name=f"mean {metric}")
        analysis = {}
        for n in names:
            analysis.update(analyse_all({n: values[n]}, perf, seed=seed, n_samples=n_samples))
            advance()
        if "random" not in analysis:  # the baseline row: strata that carry no property of the data
            analysis.update(analyse_all({"random": random_dimension(pool.n_items, seed=seed)}, perf, seed=seed,
                                        n_samples=n_samples))
        advance()
        full = perf.full()
        pair = _two_models(full, list(pool.systems), models, higher_is_better)
        sim = ood = ood_free = None
        if topics:
            sim, ood, ood_free = _topics(pool, topics, values, perf, [n for n in names if n in LABEL_FREE], seed,
                                         n_samples, notes, dict(ood_options or {}))
        else:
            notes.append("no --topics: the similarity of splits and OOD prediction are skipped")
        advance()
    summary = [{"dimension": n, "pct_significant": r.pct_significant, "n_rank_significant": r.n_rank_significant,
                "rank_change_possible": r.rank_change_possible, "mean_sigma": _nanmean(r.sigma),
                "circular": n in circular, "baseline": n == "random"} for n, r in analysis.items()]
    real = {n: values[n] for n in names if n != "random"}
    corr = correlations(real) if len(real) >= 2 else None
    if corr:
        k = len(corr["dimensions"])
        for i in range(k):
            for j in range(i + 1, k):
                r_ij = corr["rho"][i][j]
                if np.isfinite(r_ij) and abs(r_ij) >= CORRELATED:
                    notes.append(f"{corr['dimensions'][i]} and {corr['dimensions'][j]} are correlated (Spearman rho "
                                 f"{r_ij:.2f}): their strata overlap, so they are not independent evidence (the "
                                 "paper's six dimensions were uncorrelated, Sec. 3.1)")
    blind = [n for n, r in analysis.items() if not r.rank_change_possible]
    if blind:
        notes.append(f"rank changes cannot be detected for {', '.join(blind)}: with {pool.n_systems} systems the random "
                     "samples' Kendall tau already spans [-1, 1] (2.5th-97.5th percentiles), so no stratum's ranking can "
                     "fall outside it; their 0 rank changes say nothing")
    shown, left_out = plotted_systems(list(pool.systems))
    if left_out:
        notes.append(f"the per-stratum plot of the report shows {len(shown)} of the {pool.n_systems} systems (the "
                     f"first {len(shown)} in the data's order); left out of it: {', '.join(left_out)} (every system's "
                     "numbers are in results.json)")
    return {"data": pool.name, "metric": metric, "higher_is_better": higher_is_better, "seed": seed,
            "n_items": pool.n_items, "systems": list(pool.systems), "dimensions": names,
            "label_free": [n for n in names if n in LABEL_FREE], "circular": circular,
            "correlation": corr, "distribution": distributions(real) if real else None,
            "performance": dict(zip(pool.systems, full.tolist())),
            "analysis": {n: r.to_dict() for n, r in analysis.items()}, "summary": summary,
            "profile": two_model_profile(analysis, *pair), "similarity": sim, "ood": ood,
            "ood_label_free": ood_free, "computed_by": computed_by(pool, names, lm_path=lm_path, classifier=classifier),
            "notes": notes}


def _nanmean(v: np.ndarray) -> float:
    v = np.asarray(v, dtype=float)
    return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")


# ------------------------------------------------------------------------------------------ plots
def _grid(n: int, width: float = 3.6, height: float = 2.8):
    from ..report.plots import _pyplot

    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = _pyplot().subplots(rows, cols, figsize=(width * cols, height * rows), dpi=100, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


MAX_LINES = 8  # systems drawn in the per-stratum plot (more lines and bands are unreadable)


def plotted_systems(systems: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(shown, left out)``: the systems :func:`strata_figure` draws -- the first :data:`MAX_LINES` in
    the data's order -- and the rest, which the report names."""
    return list(systems[:MAX_LINES]), list(systems[MAX_LINES:])


def distribution_figure(results: dict) -> str:
    """Fig. 3: the normalised distribution of every dimension (2%-clipped min-max, then a histogram)."""
    dist = results["distribution"]
    names = list(dist["counts"])
    fig, axes = _grid(len(names), height=2.4)
    edges = np.array(dist["edges"])
    for ax, name in zip(axes, names):
        c = np.array(dist["counts"][name], dtype=float)
        ax.bar(edges[:-1], c / max(c.sum(), 1), width=np.diff(edges), align="edge", color="C0", alpha=0.7)
        ax.set_title(name + (" (circular)" if name in results.get("circular", {}) else ""), fontsize=9)
        ax.set_xlabel("scaled value (0-1)", fontsize=8)
        ax.set_ylabel("share of items", fontsize=8)
        ax.tick_params(labelsize=7)
    return _png(fig)


def strata_figure(results: dict) -> str:
    """Fig. 4: per dimension, each model's performance per stratum, its random band shaded (the
    systems of :func:`plotted_systems`; the legend says how many of all)."""
    fig, axes = _grid(len(results["analysis"]))
    for ax, (name, r) in zip(axes, results["analysis"].items()):
        perf, band = np.array(r["stratum_perf"], dtype=float), np.array(r["band"], dtype=float)
        x = np.arange(perf.shape[0])
        shown, _ = plotted_systems(r["models"])
        for j, m in enumerate(shown):
            line, = ax.plot(x, perf[:, j], marker="o", ms=3, lw=1.2, label=m)
            ax.axhspan(band[0, j], band[1, j], color=line.get_color(), alpha=0.12, lw=0)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("stratum (low -> high)", fontsize=8)
        ax.set_ylabel(results["metric"], fontsize=8)
        ax.tick_params(labelsize=7)
    shown, left_out = plotted_systems(results["systems"])
    axes[0].legend(fontsize=6, title=f"{len(shown)} of {len(shown) + len(left_out)} systems" if left_out else None,
                   title_fontsize=6)
    return _png(fig)


def similarity_figure(sim: dict) -> str:
    """Fig. 5: SMD of each split against the pool per dimension, beside the random 5/10/20% bands."""
    dims = sim["dimensions"]
    fig, axes = _grid(len(dims))
    splits = list(sim["splits"])
    for ax, d in zip(axes, dims):
        rows = [(f"random {float(f):.0%}", sim["random_band"][f][d]) for f in sim["random_band"]]
        for k, (label, (lo, hi)) in enumerate(rows):
            ax.plot([lo, hi], [k, k], color="grey", lw=5, alpha=0.5, solid_capstyle="butt")
        for k, s in enumerate(splits, start=len(rows)):
            lo, hi = sim["split_band"][s][d]
            ax.plot([lo, hi], [k, k], color="grey", lw=5, alpha=0.25, solid_capstyle="butt")
            ax.plot(sim["vs_pool"][s][d], k, "o", color="C3")
        ax.set_yticks(range(len(rows) + len(splits)), [r[0] for r in rows] + splits, fontsize=7)
        ax.axvline(0, color="black", lw=0.6)
        ax.set_title(f"{d}: SMD vs the pool", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    return _png(fig)


def profile_figure(results: dict) -> str:
    """Fig. 6: two models' performance per stratum of every dimension, each with its random band."""
    prof = results["profile"]
    a, b = prof["models"]
    fig, axes = _grid(len(prof["dimensions"]))
    for ax, (name, d) in zip(axes, prof["dimensions"].items()):
        for m, c in ((a, "C0"), (b, "C1")):
            y = np.array(d["perf"][m], dtype=float)
            ax.plot(np.arange(y.size), y, marker="o", ms=3, color=c, label=m)
            ax.axhspan(*d["band"][m], color=c, alpha=0.15, lw=0)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("stratum (low -> high)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7)
    return _png(fig)


def ood_figure(ood: dict, metric: str) -> str:
    """Held-out predictions: regression and no-change against the actual target scores."""
    from ..report.plots import _pyplot

    fig, ax = _pyplot().subplots(figsize=(4.5, 4.2), dpi=100)
    y = np.array([r["actual"] for r in ood["predictions"]])
    for key, label, c in (("no_change", "no change", "grey"), ("predicted", "regression", "C3")):
        ax.scatter(y, [r[key] for r in ood["predictions"]], s=10, color=c, alpha=0.7, label=label)
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.6)
    ax.set_xlabel(f"actual {metric} on the target split", fontsize=8)
    ax.set_ylabel("predicted", fontsize=8)
    ax.legend(fontsize=7)
    return _png(fig)


# ------------------------------------------------------------------------------------------ html
def _ood_html(ood: dict | None, title: str) -> str:
    if not ood:
        return ""
    rows = [["regression", ood["mad"], ood["r2"], ood["r2_change"]],
            ["no change", ood["mad_no_change"], ood["r2_no_change"], ood["r2_change_no_change"]]]
    weights = [[k, v] for k, v in ood["weights"].items()]
    return (f"<h3>{html.escape(title)}</h3><p>{html.escape(ood['scheme'])}; {len(ood['predictions'])} held-out "
            "(source, target, model) rows.</p>"
            + _table(["predictor", "MAD", "R2", "R2 of the shift"], rows,
                     absent={"R2": "not defined: the held-out scores do not vary (R2 has no denominator)",
                             "R2 of the shift": "not defined: the held-out shifts do not vary (R2 has no "
                                                "denominator)"})
            + "<p>Standardised weights (fitted on all pairs):</p>"
            + _table(["feature", "weight"], weights,
                     absent={"weight": "not defined: the scores the regression fits do not vary"}))


def _label(row: dict) -> str:
    return row["dimension"] + (" (circular)" if row.get("circular") else "") + (" (baseline)" if row.get("baseline")
                                                                                 else "")


def _html(results: dict) -> str:
    """The report's body. Its figures are drawn before the Warnings box is written, so a warning raised while
    drawing that reaches ``results["notes"]`` is in the box too."""
    r = results
    parts = ["<h2>Stratified re-evaluation (Tables 1-2)</h2>"]
    parts.append(_table(["dimension", "% significant strata", "strata ranking differently", "mean sigma"],
                        [[_label(s), s["pct_significant"],
                          s["n_rank_significant"] if s.get("rank_change_possible", True) else "n/a", s["mean_sigma"]]
                         for s in r["summary"]],
                        absent={"mean sigma": "not defined: no model's performance per stratum has a finite spread "
                                              "(a stratum without a scored item)",
                                "% significant strata": "not defined: no stratum could be tested"}))
    parts.append("<p>random: the baseline row (strata that carry no property of the data; about 5% significant "
                 "strata and 0.5 of 10 rank changes by chance). circular: computed from what is evaluated, so its "
                 "strata differ by construction.</p>")
    if r.get("distribution"):
        parts.append(f"<h2>Distribution of the dimensions (Fig. 3)</h2>"
                     f"<img alt='distribution' src='{distribution_figure(r)}'>")
    if r.get("correlation"):
        c = r["correlation"]
        parts.append("<h2>Correlation between the dimensions (Sec. 3.1; Spearman rho)</h2>")
        parts.append(_table(["", *c["dimensions"]], [[d, *row] for d, row in zip(c["dimensions"], c["rho"])],
                            absent={d: "not defined: a dimension is constant on the items both have (Spearman rho "
                                       "needs variation)" for d in c["dimensions"]}))
    parts.append(f"<h2>Performance per stratum (Fig. 4)</h2><img alt='strata' src='{strata_figure(r)}'>")
    shown, left_out = plotted_systems(r["systems"])
    if left_out:
        parts.append(f"<p>The plot shows {len(shown)} of the {len(r['systems'])} systems (the first {len(shown)} in "
                     f"the data's order); left out of it: {html.escape(', '.join(left_out))}. Every system's numbers "
                     "per stratum are in results.json.</p>")
    a, b = r["profile"]["models"]
    parts.append(f"<h2>Two-model profile: {html.escape(a)} vs {html.escape(b)} (Fig. 6)</h2>"
                 f"<img alt='profile' src='{profile_figure(r)}'>")
    if r["similarity"]:
        sim = r["similarity"]
        parts.append(f"<h2>Similarity of the {html.escape(sim['field'])} splits (Fig. 5)</h2>"
                     f"<img alt='similarity' src='{similarity_figure(sim)}'>")
        parts.append(_table(["split", "items", *sim["dimensions"]],
                            [[s, n, *[sim["vs_pool"][s][d] for d in sim["dimensions"]]]
                             for s, n in sim["splits"].items()],
                            absent={d: "no SMD: the split has no finite value of this dimension"
                                    for d in sim["dimensions"]}))
    if r["ood"] or r["ood_label_free"]:
        parts.append("<h2>Out-of-distribution prediction (Tables 3-4)</h2>")
        parts.append(_ood_html(r["ood"], "all dimensions"))
        parts.append(_ood_html(r["ood_label_free"], "label-free dimensions only (a new, unjudged split)"))
        if r["ood"]:
            parts.append(f"<img alt='ood' src='{ood_figure(r['ood'], r['metric'])}'>")
    head = [f"<h1>Data profile: {html.escape(str(r['data']))}, {html.escape(r['metric'])}</h1>",
            warnings_box(r["notes"], "evalsift profile"),
            (f"<p>{r['n_items']} items, {len(r['systems'])} systems; "
             f"{'higher' if r['higher_is_better'] else 'lower'} is better; seed {r['seed']}.</p>"),
            _computed_by_html(r.get("computed_by") or {})]
    return page("evalsift profile", "".join(head + parts))


def _computed_by_html(computed: dict) -> str:
    """The models behind the model-based dimensions (results.json's ``computed_by``), as a table: which were
    fine-tuned (``--classifier``), which came from TF-IDF models, the data's probabilities or a language model."""
    if not computed:
        return ""

    def how(c: dict) -> str:
        m = c.get("method")
        if m == "classifier":
            return (f"the classifier {c['classifier']} fine-tuned here (--classifier): {c['epochs']} epochs, batch "
                    f"{c['batch_size']}, learning rate {c['learning_rate']:g}, max_length {c['max_length']}, "
                    f"{c['precision']}, cross-fitted in {c['folds']} folds")
        if m == "tfidf":
            extra = f", {c['epochs']} epochs" if c.get("epochs") else ""
            return f"{c['model']} (scikit-learn, cross-fitted in {c['folds']} folds{extra})"
        if m in ("gold_probs", "spans"):
            return f"the probabilities the data supplies ({m}, from its {c.get('source')})"
        if m == "causal_lm":
            return f"the local causal language model {c['model']} (--lm, {c.get('precision', 'fp32')})"
        if m == "ngram":
            return "a trigram model cross-fitted on the items (no --lm given)"
        return str(c)

    return ("<h2>How the model-based dimensions were computed</h2>"
            + _table(["dimension", "computed by"], [[d, how(c)] for d, c in computed.items()]))


def write_report(results: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json`` (strict JSON, NaN as null) and the self-contained ``report.html`` into ``out_dir``;
    the report opens with a Warnings box holding ``results["notes"]``, what ``evalsift profile`` prints as
    ``note:`` lines (a value it has none of is a dash with a footnote saying why)."""
    from ..io._common import write_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "html": out / "report.html"}
    write_atomic(paths["html"], _html(results))  # each file whole or not at all
    write_json(results, paths["json"])  # after the report: its figures may have added to the notes
    return paths
