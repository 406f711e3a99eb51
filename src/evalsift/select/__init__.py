"""Selectors: which items an oracle should judge. One module per family, one registry.

>>> from evalsift.select import make_selector, selectors
>>> "diffuse" in selectors and "random" in selectors
True
"""

from .base import Selection, Selector, build_selector, clone, make_selector, selector, selectors
from . import random as _random  # noqa: F401  (registers 'random')
from . import diffuse as _diffuse  # noqa: F401  (registers DiffUse and its variants)
from . import metric as _metric  # noqa: F401  (metric_avg, metric_var, metric_cons)
from . import diversity as _diversity  # noqa: F401
from . import irt as _irt  # noqa: F401
from . import combinator as _combinator  # noqa: F401
from . import kmeans as _kmeans  # noqa: F401
from . import source as _source  # noqa: F401  (artificial_crowd, distilled)
from .costaware import item_costs, knapsack_select, time_model_cost
from .clustering import ClusterTree, bisecting_kmeans_tree, flat_kmeans_labels
from .diffuse import DiffUse, DiffUseStrata, MaxNorm, difference_vectors, pair_vectors
from .random import RandomSelector
from .utility import DocumentLevel, DomainBalanced, UtilitySelector, order_by_utility, utilities_of

__all__ = ["Selection", "Selector", "build_selector", "clone", "make_selector", "selector", "selectors", "ClusterTree", "DiffUse", "DiffUseStrata",
           "MaxNorm", "RandomSelector", "bisecting_kmeans_tree", "flat_kmeans_labels", "difference_vectors", "pair_vectors", "DocumentLevel", "DomainBalanced", "UtilitySelector",
           "order_by_utility", "utilities_of", "item_costs", "knapsack_select", "time_model_cost"]
