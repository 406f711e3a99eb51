"""Text metrics, one module per job:

- :mod:`evalsift.metrics.reference`: reference-based metrics -- :func:`sentence_bleu`,
  :func:`sentence_chrf`, :func:`rouge` for one text, and :func:`reference_metrics` /
  :func:`ensure_metric` for a whole Pool (new automatic score matrices ``"<metric>-ref"``);
- :mod:`evalsift.metrics.similarity`: how alike the systems' outputs are per item --
  :func:`unigram_overlap`, :func:`pairwise_similarity`, :func:`item_diversity`;
- :mod:`evalsift.metrics.ngrams`: the shared engine (tokenisation, sparse n-gram match counts,
  sacreBLEU's BLEU and chrF formulas vectorised, a bit-parallel LCS).

>>> round(rouge("the cat sat on the mat", "the cat is on the mat", kind="rougeL"), 4)  # LCS 5 of 6
0.8333
"""

from .ngrams import tokenize
from .reference import (REFERENCE_METRICS, ensure_metric, ensure_oracle_metric, reference_metrics, rouge, sentence_bleu,
                        sentence_chrf)
from .similarity import SIMILARITY_KINDS, item_diversity, pairwise_similarity, unigram_overlap

__all__ = [
    "REFERENCE_METRICS",
    "SIMILARITY_KINDS",
    "ensure_metric",
    "ensure_oracle_metric",
    "item_diversity",
    "pairwise_similarity",
    "reference_metrics",
    "rouge",
    "sentence_bleu",
    "sentence_chrf",
    "tokenize",
    "unigram_overlap",
]
