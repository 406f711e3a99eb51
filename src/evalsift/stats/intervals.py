"""Summaries of repeated measurements: standard errors (bootstrap intervals join them later)."""

from __future__ import annotations

import numpy as np


def standard_error(values) -> float:
    """Standard error of the mean (sample std with ddof=1 over sqrt(n)); 0 for fewer than 2 values.

    >>> round(standard_error([0.0, 1.0, 1.0, 0.0]), 4)   # std 0.5774 / 2
    0.2887
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size < 2:
        return 0.0
    return float(v.std(ddof=1) / np.sqrt(v.size))

