"""Output diversity (Zouhar et al. 2025, §3.3, Eq. 6): items on which the systems' outputs differ most.

Utility = -(mean pairwise similarity of the systems' outputs on the item); see
:func:`evalsift.metrics.item_diversity` for the similarity kinds and the self-pair policy. Eq. 6
averages over all |M|^2 ordered pairs, self-pairs included; we average over the distinct pairs. On an
item where all k systems have an output the two are an increasing affine map of each other
(``eq6 = (k - 1) / k * ours + c / k``, ``c`` the self-similarity), so the selection is the same; they
can order items differently only when some outputs are missing (k varies): there Eq. 6's self-pairs
make an item with fewer outputs look more alike, ours does not (see ``docs/subset.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..pool import Pool
from .base import selector
from .utility import UtilitySelector

KINDS = ("unigram", "bleu", "chrf", "embedding")


@selector("diversity", help="outputs that differ most first (unigram, BLEU, chrF or embedding similarity)")
class Diversity(UtilitySelector):
    """Utility = negated mean pairwise similarity of the outputs (``kind``: unigram, bleu, chrf, embedding)."""

    def __init__(self, *, kind: str = "unigram", encoder: Any = "minilm", seed: int = 0) -> None:
        self.kind = self._choice("kind", kind, KINDS)
        self.encoder = encoder
        self.seed = seed

    def _utilities(self, pool: Pool) -> np.ndarray:
        from ..metrics import item_diversity

        kw = {"encoder": self.encoder} if self.kind == "embedding" else {}
        return -np.asarray(item_diversity(pool, self.kind, **kw), dtype=float)


def _preset(kind: str):
    def factory(**params):
        return Diversity(**{"kind": kind, **params})

    return factory


for _k in ("bleu", "chrf", "embedding"):
    selector(f"diversity_{_k}", help=f"diversity by {_k} similarity")(_preset(_k))
