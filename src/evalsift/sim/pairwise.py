"""Former name of :mod:`evalsift.bench.pairwise`; kept so old imports keep working."""

from ..bench.pairwise import pairwise_bench

__all__ = ["pairwise_bench"]
