"""Benchmark transparency (Kovatchev & Lease, NAACL 2024): how the data shapes an evaluation.

- :mod:`.dimensions`: per-item data dimensions (the paper's ``length``, ``perplexity``, ``noise``,
  ``difficulty`` (PVI), ``ambiguity``, ``discriminability``; ours ``ngram_perplexity``,
  ``learned_noise``, ``learned_difficulty``, ``score_difficulty``, ``irt_difficulty``,
  ``train_variability``; the ``random`` baseline) in the :data:`dimensions` registry.
- :mod:`.analysis`: MinMax scaling with 2% clipping, percentile strata, the expected random
  variance (Algorithm 1), ranking stability (Algorithm 2), per-dimension summaries (Tables 1-2),
  and the dataset similarity vector (SMD) with its random-sample band.
- :mod:`.ood`: similarity of splits (Fig. 5), OOD prediction by regression on held-out source-target
  pairs vs no-change (Tables 3-4), the two-model profile (Fig. 6), ``selection_report`` and
  ``predict_unjudged``.
- :mod:`.report`: ``profile_pool`` (everything for one Pool) and ``write_report`` (results.json and a
  self-contained report.html); the ``evalsift profile`` command.

>>> import numpy as np
>>> from evalsift.transparency import compute_dimensions, analyse_all, accuracy
>>> texts = [" ".join(["w"] * n) for n in range(1, 201)]
>>> gold = np.zeros(200, dtype=int)
>>> preds = {"A": (np.arange(200) >= 100).astype(int), "B": np.zeros(200, dtype=int)}  # A fails short items
>>> res = analyse_all(compute_dimensions(["length"], texts=texts), accuracy(preds, gold))
>>> res["length"].stratum_perf[:, 0].tolist()
[1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

from .analysis import (Performance, StratifiedResult, accuracy, analyse, analyse_all, cohens_d, correlations, distributions,
                       kendall_tau, macro_f1,
                       mean_score, metric_change, minmax_clip, random_band, sample_indices, similarity_vector, smd,
                       smd_band, strata)
from .dimensions import (CausalLMScorer, NgramScorer, ambiguity, compute_dimensions, difficulty, dimension, dimensions,
                         discriminability, fit_responses, irt_difficulty, learned_difficulty, learned_noise, length,
                         ngram_perplexity, noise, perplexity, pvi, random_dimension, score_difficulty,
                         train_variability, training_dynamics)
from .ood import (OODResult, leave_target_out, ood_regression, pair_similarity, predict_unjudged, random_pair_folds,
                  selection_report, split_indices, split_performance, split_similarity, two_model_profile)
from .report import profile_pool, write_report

__all__ = [
    "Performance", "StratifiedResult", "accuracy", "analyse", "analyse_all", "cohens_d", "correlations",
    "distributions", "kendall_tau", "macro_f1", "mean_score",
    "metric_change", "minmax_clip", "random_band", "sample_indices", "similarity_vector", "smd", "smd_band", "strata",
    "CausalLMScorer", "NgramScorer", "ambiguity", "compute_dimensions", "difficulty", "dimension", "dimensions",
    "discriminability", "fit_responses", "irt_difficulty", "learned_difficulty", "learned_noise", "length",
    "ngram_perplexity", "noise", "perplexity", "pvi", "random_dimension", "score_difficulty", "train_variability",
    "training_dynamics",
    "OODResult", "leave_target_out", "ood_regression", "pair_similarity", "predict_unjudged", "random_pair_folds",
    "selection_report",
    "split_indices", "split_performance", "split_similarity", "two_model_profile",
    "profile_pool", "write_report",
]
