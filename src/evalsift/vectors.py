"""Small vector helpers shared by encoders, selectors and similarity code."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import squareform


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each vector (last axis) scaled to length 1; zero vectors stay zero (cosine 0 with everything).

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    x = np.asarray(x, dtype=float)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)



def cosine_distances(X: np.ndarray) -> np.ndarray:
    """Condensed cosine distances; zero vectors are at distance 0 from each other and 1 from the rest.

    >>> cosine_distances(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])).round(6).tolist()
    [1.0, 0.0, 1.0]
    """
    U = unit_rows(X)
    D = 1.0 - U @ U.T
    zero = ~U.any(axis=1)
    D[np.ix_(zero, zero)] = 0.0
    np.fill_diagonal(D, 0.0)
    return squareform(np.clip(D, 0.0, 2.0), checks=False)
