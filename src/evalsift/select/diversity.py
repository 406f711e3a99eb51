"""Output diversity (Zouhar et al. 2025, §3.3, Eq. 6): items on which the systems' outputs differ most.

Utility = -(mean pairwise similarity of the systems' outputs on the item); see
:func:`evalsift.metrics.item_diversity` for the similarity kinds and the self-pair policy. Eq. 6
averages over all |M|^2 ordered pairs, self-pairs included; we average over the distinct pairs. On an
item where all k systems have an output the two are an increasing affine map of each other
(``eq6 = (k - 1) / k * ours + c / k``, ``c`` the self-similarity), so the selection is the same; they
can order items differently only when some outputs are missing (k varies): there Eq. 6's self-pairs
make an item with fewer outputs look more alike, ours does not (see ``docs/subset.md``).

``tokenizer`` (unigram only): ``"ours"`` (default) is :func:`evalsift.metrics.tokenize`, lower-cased
letter and digit runs without punctuation; ``"package"`` is subset2evaluate's
``methods.diversity_unigram``: tokens split on whitespace, case and punctuation kept, and a pair in
which either output has no token scores 1 (:func:`package_unigram_similarity`). BLEU and chrF
tokenise inside sacreBLEU as the package does (13a; characters), so ``tokenizer`` changes nothing
for them; the embedding kind has no tokens.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from ..pool import Pool
from .base import selector
from .utility import UtilitySelector

KINDS = ("unigram", "bleu", "chrf", "embedding")
TOKENIZERS = ("ours", "package")


def package_unigram_similarity(texts: Sequence[str | None]) -> float:
    """Mean unigram overlap of one item's outputs as subset2evaluate's ``diversity_unigram`` computes it.

    Our own reading of ``subset2evaluate/methods.py::diversity_unigram`` (not its code): over the
    unordered pairs of outputs, tokens are ``text.split()`` (whitespace; case and punctuation kept),
    a pair scores ``2 |A & B| / (|A| + |B|)`` over token multisets, and 1 when either text has no
    token. Missing outputs (None) are skipped (the package's items have every output); fewer than
    two outputs give NaN (the package: 0, an item it never meets).

    >>> package_unigram_similarity(["The cat sat.", "the cat ran"])   # only 'cat' is shared: 2*1/(3+3)
    0.3333333333333333
    >>> package_unigram_similarity(["a b", "", "a c"])   # pairs (a b, ''), (a b, a c), ('', a c): (1 + 0.5 + 1) / 3
    0.8333333333333334
    """
    bags = [Counter(t.split()) for t in texts if isinstance(t, str)]
    if len(bags) < 2:
        return float("nan")
    sims = []
    for a, b in combinations(bags, 2):
        na, nb = sum(a.values()), sum(b.values())
        sims.append(1.0 if na == 0 or nb == 0 else 2 * sum((a & b).values()) / (na + nb))
    return float(np.mean(sims))


@selector("diversity", help="outputs that differ most first (unigram, BLEU, chrF or embedding similarity)")
class Diversity(UtilitySelector):
    """Utility = negated mean pairwise similarity of the outputs (``kind``: unigram, bleu, chrf, embedding;
    ``tokenizer``: ours or package, for unigram; see the module doc)."""

    def __init__(self, *, kind: str = "unigram", encoder: Any = "minilm", seed: int = 0,
                 tokenizer: str = "ours") -> None:
        self.kind = self._choice("kind", kind, KINDS)
        self.encoder = encoder
        self.seed = seed
        self.tokenizer = self._choice("tokenizer", tokenizer, TOKENIZERS)

    def _utilities(self, pool: Pool) -> np.ndarray:
        from ..metrics import item_diversity

        if self.kind == "unigram" and self.tokenizer == "package":
            return -np.array([package_unigram_similarity([pool.outputs[s][i] for s in pool.systems])
                              for i in range(pool.n_items)], dtype=float)
        kw = {"encoder": self.encoder} if self.kind == "embedding" else {}
        return -np.asarray(item_diversity(pool, self.kind, **kw), dtype=float)


def _preset(kind: str):
    def factory(**params):
        return Diversity(**{"kind": kind, **params})

    return factory


for _k in ("bleu", "chrf", "embedding"):
    selector(f"diversity_{_k}", help=f"diversity by {_k} similarity")(_preset(_k))
