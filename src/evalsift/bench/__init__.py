"""The benchmark harness over real data, with oracles simulated from score columns.

- :func:`pairwise_bench` (:mod:`evalsift.bench.pairwise`): DiffUse's protocol -- does a small judged
  sample pick the pool's winner? Success rate vs budget over every system pair, and the iterative table.
- :func:`subset_bench` (:mod:`evalsift.bench.subset`): subset2evaluate's protocol -- how well does the
  first part of an ordering rank many systems? Correlation and cluster-count curves, needed to match.
"""

from importlib import import_module
from typing import Any

__all__ = ["pairwise_bench", "subset_bench"]
_HOMES = {"pairwise_bench": ".pairwise", "subset_bench": ".subset"}


def __getattr__(name: str) -> Any:
    """Each protocol's module is imported when first asked for: a command that runs one protocol does
    not pay for the others' imports (the pairwise protocol's embedders and oracles, about 0.5 s)."""
    if name in _HOMES:
        return getattr(import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
