"""The ``random`` pseudo-dimension: the baseline row of Kovatchev & Lease's Tables 1-2."""

from __future__ import annotations

import numpy as np

from ...errors import ParameterError
from .registry import dimension


@dimension("random")
def random_dimension(n_items: int | None = None, *, seed: int = 0) -> np.ndarray:
    """A uniform random value per item (seeded): strata of it are random 10% splits of the items.

    The paper's "Random" row of Tables 1-2 (Kovatchev & Lease 2024, Sec. 4): what re-sampling the
    test set does when the strata carry no property at all. A 95% random band flags about 5% of the
    (stratum, model) cells and, with the two-sided rank test, at most about 0.5 of 10 strata -- by chance
(fewer with few systems: Kendall tau is then discrete and Algorithm 2's comparison strict; 0.34 of
10 measured on ChaosNLI SNLI and WMT23, ``docs/transparency.md``).
    A dimension whose numbers are not clearly above this row's says nothing about the data.
    Independent of the bootstrap run with the same ``seed``.

    >>> v = random_dimension(5, seed=1); v.shape, bool(((v >= 0) & (v < 1)).all())
    ((5,), True)
    >>> bool((random_dimension(5, seed=1) == v).all())
    True
    """
    if n_items is None:
        raise ParameterError("random: needs n_items=... (the number of items).", field="n_items")
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 1:
        raise ParameterError(f"random: n_items must be an integer >= 1, got {n_items!r}.", field="n_items")
    # a stream of its own: with default_rng(seed) the values would equal the first random sample's
    # keys of the bootstrap run with the same seed (sample_indices), tying stratum 0 to that sample
    return np.random.default_rng([int(seed), 1]).random(int(n_items))


__all__ = ["random_dimension"]
