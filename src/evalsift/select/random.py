"""Uniform random selection: the baseline every method must beat."""

from __future__ import annotations

import numpy as np

from ..pool import Pool
from .base import Selector, selector


@selector("random", help="uniform random items (seeded); budgets are nested prefixes")
class RandomSelector(Selector):
    """A seeded random permutation; ``select(k)`` is its first ``k`` items, so budgets nest.

    >>> from evalsift.io import make_demo_pool
    >>> s = RandomSelector(seed=1).fit(make_demo_pool(n_items=20))
    >>> list(s.select(3).items) == list(s.select(5).items[:3])
    True
    """

    nested = True
    random_order = True  # what the anytime stop rule's guarantee needs
    randomised = True

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed

    def _fit(self, pool: Pool) -> None:
        self.order_ = np.random.default_rng(self.seed).permutation(pool.n_items)

    def _select(self, budget: int):
        return self.order_[:budget], None
