"""Former name of :mod:`evalsift.bench.subset`; kept so old imports keep working."""

from ..bench.subset import PROPS, subset_bench

__all__ = ["PROPS", "subset_bench"]
