"""Output similarity between systems: how alike the systems' outputs for one item are.

The quantity behind the "diversity" selectors (Zouhar et al. 2025, §3.3, Eq. 6):
:func:`pairwise_similarity` for one item, :func:`item_diversity` for every item of a Pool at once
(sparse n-gram products from :mod:`evalsift.metrics.ngrams`, or embeddings).

>>> unigram_overlap("The cat sat.", "the cat ran")  # 2 shared of 3 + 3 tokens: 2*2/6
0.6666666666666666
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError, check_choice
from ..pool import Pool
from ..progress import is_quiet, progress_bar
from .ngrams import _check_text, _chunks, _Chunk, tokenize

def unigram_overlap(a: str, b: str) -> float:
    """Unigram F1 between two texts: ``2 * |A & B| / (|A| + |B|)`` over token multisets.

    Tokens come from :func:`tokenize` (lower-cased letter/digit runs; punctuation and whitespace
    dropped); a repeated word counts as often as it occurs in both (clipped counts, as in ROUGE-1
    and SQuAD token F1). Symmetric. Two texts without tokens score 1.0 (they are equal); one empty
    and one non-empty score 0.0. (subset2evaluate's ``diversity_unigram`` splits on whitespace
    without lower-casing and scores 1 when *either* side is empty.)

    >>> unigram_overlap("The cat sat.", "the cat ran")  # 2 shared of 3 + 3 tokens: 2*2/6
    0.6666666666666666
    """
    ta = tokenize(_check_text(a, "unigram_overlap(a)"))
    tb = tokenize(_check_text(b, "unigram_overlap(b)"))
    if not ta and not tb:
        return 1.0
    return 2 * sum((Counter(ta) & Counter(tb)).values()) / (len(ta) + len(tb))


# --------------------------------------------------------------------------------------------
# Output similarity between systems: pairwise_similarity and item_diversity
# --------------------------------------------------------------------------------------------

SIMILARITY_KINDS = ("unigram", "bleu", "chrf", "embedding")
_PAIR_SCORES: dict[str, Callable[[_Chunk], np.ndarray]] = {
    "unigram": lambda c: c.unigram(),
    "bleu": lambda c: c.bleu_pairs(),
    "chrf": lambda c: c.chrf(),
}


def _check_kind(kind: str, encoder: Any) -> None:
    check_choice("kind", kind, SIMILARITY_KINDS, where="similarity")
    if encoder is not None and kind != "embedding":
        raise ParameterError(f"encoder={encoder!r} is only used with kind='embedding', not kind={kind!r}")


def pairwise_similarity(texts: Sequence[str | None], kind: str = "unigram", *, encoder: Any = None) -> float:
    """Mean similarity over ordered pairs of distinct systems' outputs for ONE item.

    ``texts``: one output per system (``None`` = missing, skipped). ``kind``: ``"unigram"``
    (:func:`unigram_overlap`, 0-1), ``"bleu"`` / ``"chrf"`` (:func:`sentence_bleu` /
    :func:`sentence_chrf`, 0-100, output i as hypothesis and output j as its only reference), or
    ``"embedding"`` (cosine similarity of ``encoder``'s vectors; default encoder ``minilm``).

    **Self-pair policy:** the mean runs over the k(k-1) ordered pairs (i, j) with i != j. BLEU and
    chrF are asymmetric, so both directions count; a system is never compared with itself (a
    self-pair would add a constant 100, or 1, with a weight 1/k that changes with the number of
    outputs an item has). Two distinct systems with identical text do count (similarity 100 / 1).
    subset2evaluate's ``diversity_bleu``/``diversity_chrf`` average over all k^2 pairs including
    self-pairs; its ``diversity_unigram`` uses unordered distinct pairs (the same mean for a
    symmetric score). Fewer than two present outputs -> NaN.

    >>> pairwise_similarity(["a b", "a c", None])  # one pair, both directions: 2*1/(2+2) = 0.5
    0.5
    """
    _check_kind(kind, encoder)
    present = [_check_text(t, "pairwise_similarity(texts)") for t in texts if t is not None]
    if len(present) < 2:
        return math.nan
    if kind == "embedding":
        from ..embed import DEFAULT_ENCODER, embed_texts
        from ..vectors import unit_rows

        x = unit_rows(np.asarray(embed_texts(present, encoder or DEFAULT_ENCODER, progress=False), dtype=float))
        off = ~np.eye(len(present), dtype=bool)
        return float((x @ x.T)[off].mean())
    chunk = _Chunk([present])
    return float(chunk.mean_over_pairs(_PAIR_SCORES[kind](chunk))[0])


def item_diversity(pool: Pool, kind: str = "unigram", *, encoder: Any = None,
                   progress: bool | None = None) -> np.ndarray:
    """Per item, the mean pairwise similarity of the systems' outputs (higher = more alike).

    Shape ``(n_items,)``; NaN for items with fewer than two outputs. Same kinds, scales and
    self-pair policy as :func:`pairwise_similarity`, whose value each entry equals. Each output is
    tokenised once, and all pairs of many items are scored together with sparse n-gram products.
    ``kind="embedding"`` embeds every output of the pool once via
    :func:`evalsift.embed.embed_texts` (cached on disk; ``encoder`` defaults to ``minilm``),
    unit-normalises the vectors and takes every item's Gram matrix with one einsum.
    Diversity selectors want *dissimilar* outputs first: use ``-item_diversity(...)`` as utility.

    >>> p = Pool(item_ids=["i0", "i1"], systems=["A", "B"],
    ...          outputs={"A": ["a b", "x"], "B": ["a c", None]})
    >>> item_diversity(p, "unigram", progress=False).tolist()
    [0.5, nan]
    """
    _check_kind(kind, encoder)
    quiet = None if progress is None else not progress
    if kind == "embedding":
        return _embedding_diversity(pool, encoder, quiet)
    out = np.full(pool.n_items, np.nan)
    todo = []
    for i in range(pool.n_items):
        present = [t for t in (pool.outputs[s][i] for s in pool.systems) if isinstance(t, str)]
        if len(present) >= 2:
            key = _memo_key(kind, present)
            kept = _SIMILARITY_MEMO.get(key)
            if kept is None:
                todo.append((i, present, key))
            else:
                out[i] = kept
    with progress_bar(pool.n_items, f"output similarity ({kind})", quiet) as advance:
        advance(pool.n_items - len(todo))
        for part in _chunks(len(todo)):
            chunk = _Chunk([todo[k][1] for k in part])
            values = chunk.mean_over_pairs(_PAIR_SCORES[kind](chunk))
            out[[todo[k][0] for k in part]] = values
            for k, v in zip(part, values.tolist()):
                _remember(todo[k][2], v)
            advance(len(part))
    return out


# An item's similarity depends on its outputs alone, so a pool's subsets (the seeds of ``bench subset``
# draw items from one pool) need not score an item again: the values are kept per process, keyed by a
# 128-bit digest of the kind and the item's outputs in system order (no text is kept), the last
# _SIMILARITY_MEMO_ITEMS of them.
_SIMILARITY_MEMO: "OrderedDict[bytes, float]" = OrderedDict()
_SIMILARITY_MEMO_ITEMS = 1 << 16


def _memo_key(kind: str, texts: Sequence[str]) -> bytes:
    h = hashlib.blake2b(kind.encode(), digest_size=16)
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def _remember(key: bytes, value: float) -> None:
    _SIMILARITY_MEMO[key] = value
    if len(_SIMILARITY_MEMO) > _SIMILARITY_MEMO_ITEMS:
        _SIMILARITY_MEMO.popitem(last=False)


def _embedding_diversity(pool: Pool, encoder: Any, quiet: bool | None) -> np.ndarray:
    from ..embed import DEFAULT_ENCODER, embed_texts
    from ..vectors import unit_rows

    valid = np.array([[isinstance(pool.outputs[s][i], str) for s in pool.systems] for i in range(pool.n_items)],
                     dtype=bool).reshape(pool.n_items, pool.n_systems)
    rows, cols = np.nonzero(valid)
    texts = [pool.outputs[pool.systems[j]][i] for i, j in zip(rows, cols)]
    if not texts:
        return np.full(pool.n_items, np.nan)
    vecs = np.asarray(embed_texts(texts, encoder or DEFAULT_ENCODER, progress=not is_quiet(quiet)), dtype=float)
    x = np.zeros((pool.n_items, pool.n_systems, vecs.shape[1]))
    x[rows, cols] = unit_rows(vecs)
    gram = np.einsum("isd,itd->ist", x, x)
    pairs = valid[:, :, None] & valid[:, None, :] & ~np.eye(pool.n_systems, dtype=bool)[None]
    n_pairs = pairs.sum(axis=(1, 2))
    total = np.where(pairs, gram, 0.0).sum(axis=(1, 2))
    return np.where(n_pairs > 0, total / np.maximum(n_pairs, 1), np.nan)
