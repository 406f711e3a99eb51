"""Former name of :mod:`evalsift.bench` (the benchmark harness); kept so old imports keep working."""

from ..bench import pairwise_bench
from ..bench.subset import subset_bench

__all__ = ["pairwise_bench", "subset_bench"]
