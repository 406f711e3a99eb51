"""Benchmark transparency (Kovatchev & Lease, NAACL 2024): how the data shapes an evaluation.

- :mod:`.dimensions`: per-item data dimensions (``length``, ``noise``, ``difficulty``,
  ``irt_difficulty``, ``discriminability``) in the :data:`dimensions` registry.
- :mod:`.analysis`: MinMax scaling with 2% clipping, percentile strata, the expected random
  variance (Algorithm 1), ranking stability (Algorithm 2), per-dimension summaries (Tables 1-2),
  and the dataset similarity vector (SMD) with its random-sample band.

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

from .analysis import (
                       Performance,
                       StratifiedResult,
                       accuracy,
                       analyse,
                       analyse_all,
                       kendall_tau,
                       macro_f1,
                       mean_score,
                       minmax_clip,
                       random_band,
                       sample_indices,
                       similarity_vector,
                       smd,
                       smd_band,
                       strata,
)
from .dimensions import (
                       compute_dimensions,
                       difficulty,
                       dimension,
                       dimensions,
                       discriminability,
                       fit_responses,
                       irt_difficulty,
                       length,
                       noise,
)

__all__ = [
                       "Performance",
                       "StratifiedResult",
                       "accuracy",
                       "analyse",
                       "analyse_all",
                       "compute_dimensions",
                       "difficulty",
                       "dimension",
                       "dimensions",
                       "discriminability",
                       "fit_responses",
                       "irt_difficulty",
                       "kendall_tau",
                       "length",
                       "macro_f1",
                       "mean_score",
                       "minmax_clip",
                       "noise",
                       "random_band",
                       "sample_indices",
                       "similarity_vector",
                       "smd",
                       "smd_band",
                       "strata",
]
