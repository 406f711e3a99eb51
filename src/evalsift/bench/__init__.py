"""The benchmark harness over real data, with oracles simulated from score columns.

- :func:`pairwise_bench` (:mod:`evalsift.bench.pairwise`): DiffUse's protocol -- does a small judged
  sample pick the pool's winner? Success rate vs budget over every system pair, and the iterative table.
- :func:`subset_bench` (:mod:`evalsift.bench.subset`): subset2evaluate's protocol -- how well does the
  first part of an ordering rank many systems? Correlation and cluster-count curves, needed to match.
"""

from .pairwise import pairwise_bench
from .subset import subset_bench

__all__ = ["pairwise_bench", "subset_bench"]
