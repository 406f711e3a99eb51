"""A new system's full-benchmark score from a few judged items: anchor designs, estimators with
intervals, and the leave-one-system-out benchmark (``docs/estimate.md``)."""

from .anchors import DESIGNS, PROBABILITY_DESIGNS, Anchors, read_anchors, select_anchors, write_anchors
from .estimators import DEFAULT_DESIGN, DESIGN_BASED, METHODS, Estimate, KnownSystems, estimate_score
from .responses import ResponseMatrix, response_matrix

__all__ = ["DESIGNS", "PROBABILITY_DESIGNS", "Anchors", "read_anchors", "select_anchors", "write_anchors",
           "DEFAULT_DESIGN", "DESIGN_BASED", "METHODS", "Estimate", "KnownSystems", "estimate_score",
           "ResponseMatrix", "response_matrix"]
