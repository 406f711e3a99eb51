"""The text-overlap engine behind evalsift's metrics: tokenisation, n-gram match counts, BLEU / chrF /
ROUGE statistics, vectorised over many texts at once.

Scales follow the tool each metric comes from: BLEU and chrF are on sacreBLEU's 0-100 scale; ROUGE,
unigram overlap and cosine similarity are on 0-1 (cosine on -1..1), as in rouge-score.

**Tokenisation** (:func:`tokenize`, used by ROUGE and unigram overlap): lower-case, then words are
the maximal runs of Unicode letters and digits (regex ``[^\\W_]+``); whitespace, punctuation and
``_`` separate words and are dropped. On ASCII text this is exactly rouge-score's default tokenizer
(``use_stemmer=False``); unlike rouge-score, non-ASCII letters are kept (rouge-score drops them, so
it scores e.g. Czech or Chinese text on the ASCII residue only). BLEU and chrF do their own
tokenisation inside sacreBLEU (``13a`` for BLEU; characters without whitespace for chrF).

**Bulk computation.** The many-pair paths (:func:`reference_metrics`, :func:`item_diversity`) do not
call sacreBLEU once per pair. Each text is tokenised once (sacreBLEU's 13a tokenizer for BLEU);
the n-grams of many items' texts become sparse "occurrence" matrices (:class:`_Ngrams`), whose
products give the clipped match counts of all pairs at once; the scores then follow sacreBLEU's
formulas (``BLEU.compute_bleu``, chrF's effective-order F-beta), vectorised. The tests check the
results against ``sacrebleu.sentence_bleu`` / ``sentence_chrf`` on real data (equal to 1e-9).
ROUGE-L uses a bit-parallel LCS (:class:`_PackedLCS`). sacreBLEU is needed for BLEU and for
the sentence-level wrappers; chrF, ROUGE and unigram overlap in bulk need only numpy and scipy.

>>> tokenize("The cat's mat -- 2 x_y!")
['the', 'cat', 's', 'mat', '2', 'x', 'y']
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import ParameterError, missing_dependency

BLEU_PARAMS = dict(smooth_method="exp", smooth_value=None, lowercase=False, tokenize="13a", use_effective_order=True)
CHRF_PARAMS = dict(char_order=6, word_order=0, beta=2, remove_whitespace=True, eps_smoothing=False)
_BLEU_ORDER = 4
_CHRF_ORDER = CHRF_PARAMS["char_order"]
_CHRF_FACTOR = CHRF_PARAMS["beta"] ** 2

_WORD_RE = re.compile(r"[^\W_]+")
_ROUGE_KINDS = ("rouge1", "rouge2", "rougeL")


# --------------------------------------------------------------------------------------------
# Tokenisation and small helpers
# --------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Lower-cased words: maximal runs of Unicode letters/digits; punctuation, ``_`` and spaces split.

    >>> tokenize("The cat's mat -- 2 x_y!")
    ['the', 'cat', 's', 'mat', '2', 'x', 'y']
    """
    return _WORD_RE.findall(text.lower())


def _as_refs(refs: str | Sequence[str | None], where: str) -> list[str]:
    """References as a list of usable strings (a single string is one reference; None is skipped)."""
    if isinstance(refs, str):
        refs = [refs]
    out = [r for r in refs if isinstance(r, str)]
    if not out:
        raise ParameterError(f"{where}: needs at least one reference string, got {list(refs)!r}")
    return out


def _sacrebleu(purpose: str = "BLEU") -> Any:
    try:
        import sacrebleu
    except ImportError:
        raise missing_dependency("sacrebleu", "metrics", f"{purpose} (through sacreBLEU)",
                                 instead="or score a pool with chrF, ROUGE-1, ROUGE-2 or ROUGE-L, which need no extra"
                                 ) from None
    return sacrebleu


def _check_text(text: Any, where: str) -> str:
    if not isinstance(text, str):
        raise ParameterError(f"{where}: expected a string, got {type(text).__name__} ({text!r})")
    return text


def _usable(text: Any) -> bool:
    """A reference counts when it is a string with some non-space content (None/NaN/blank do not)."""
    return isinstance(text, str) and bool(text.strip())


def _f1(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Elementwise 2PR/(P+R), 0 where P+R = 0 (rouge-score's ``fmeasure``)."""
    s = p + r
    return np.where(s > 0, 2 * p * r / np.where(s > 0, s, 1.0), 0.0)


class _Ngrams:
    """N-gram occurrences of many integer sequences, for clipped match counts between any two.

    ``groups[d]`` is the item of sequence d: n-grams of different items never match, so the
    sequences of many items are processed together and every product below is block-diagonal.

    For order n, ``occ[n]`` is a sparse 0/1 matrix (sequences x occurrence slots): sequence d has a
    1 in slot (g, k) when n-gram g occurs at least k times in d. Hence
    ``(occ[a] @ occ[b].T)[i, j] = sum_g min(count_i(g), count_j(g))``, the clipped match count of
    BLEU, chrF and ROUGE, for all pairs with one sparse product. Everything is numpy: the code of the
    n-gram starting at position p is the dense rank of ``(code of the (n-1)-gram at p, symbol at
    p+n-1)``, so codes stay below the total length for any alphabet, and equal codes mean equal
    symbol sequences. Only n-grams inside one sequence count. ``totals[d, o]``: the number of
    n-grams of order ``min_order + o`` in sequence d.
    """

    def __init__(self, seqs: Sequence[np.ndarray], groups: np.ndarray, max_order: int, min_order: int = 1) -> None:
        from scipy.sparse import csr_matrix

        n_seq = len(seqs)
        lens = np.array([len(q) for q in seqs], dtype=np.int64)
        ids = np.concatenate([np.asarray(q, dtype=np.int64) for q in seqs]) if n_seq else np.zeros(0, np.int64)
        if len(ids):  # symbols of different items become different symbols; ids become dense
            item_of = np.repeat(np.asarray(groups, dtype=np.int64), lens)
            ids = np.unique(item_of * (int(ids.max()) + 1) + ids, return_inverse=True)[1].ravel()
        seq_of = np.repeat(np.arange(n_seq), lens)
        end_of = np.repeat(np.cumsum(lens), lens)  # exclusive end of the sequence holding each position
        pos = np.arange(len(ids))
        alphabet = int(ids.max()) + 1 if len(ids) else 1
        self.occ: list[Any] = []
        self.totals = np.zeros((n_seq, max_order - min_order + 1))
        prev = ids
        for n in range(1, max_order + 1):
            start = np.flatnonzero(pos + n <= end_of)
            raw = ids[start] if n == 1 else prev[start] * alphabet + ids[start + n - 1]
            seq = seq_of[start]
            if len(raw) and int(raw.max()) < (2**62) // max(n_seq, 1):
                order = np.argsort(raw * n_seq + seq)  # by n-gram, then by sequence
            else:
                order = np.lexsort((seq, raw))
            raw, seq = raw[order], seq[order]
            idx = np.arange(len(order))
            new_gram = np.ones(len(order), dtype=bool)
            new_gram[1:] = raw[1:] != raw[:-1]
            new_run = new_gram.copy()
            new_run[1:] |= seq[1:] != seq[:-1]
            gram_start = np.maximum.accumulate(np.where(new_gram, idx, 0))
            run_start = np.maximum.accumulate(np.where(new_run, idx, 0))
            slot = gram_start + (idx - run_start)  # (n-gram, k-th occurrence in its sequence): one column
            prev = np.full(len(ids), -1, dtype=np.int64)
            prev[start[order]] = np.cumsum(new_gram) - 1
            if n >= min_order:
                self.occ.append(csr_matrix((np.ones(len(order)), (seq, slot)), shape=(n_seq, max(len(order), 1))))
                self.totals[:, n - min_order] = np.bincount(seq, minlength=n_seq)

    def cross(self, a: "_Side", b: "_Side", n_items: int) -> np.ndarray:
        """``out[item, i, j, o]``: clipped matches of order o between text i and text j of an item."""
        out = np.zeros((n_items, a.width, b.width, len(self.occ)))
        for o, m in enumerate(self.occ):
            prod = (m[a.rows] @ m[b.rows].T).tocoo()
            out[a.item[prod.row], a.local[prod.row], b.local[prod.col], o] = prod.data
        return out

    def against_union(self, a: "_Side", b: "_Side") -> np.ndarray:
        """``out[r, o]``: matches of text ``a.rows[r]`` with counts clipped by the maximum count of the
        same n-gram in any ``b`` text of its item (slots are per item, so one union serves all)."""
        cols = []
        for m in self.occ:
            union = (np.asarray(m[b.rows].sum(axis=0)).ravel() > 0).astype(float)
            cols.append(m[a.rows] @ union)
        return np.stack(cols, axis=-1)


class _Side:
    """One side (hypotheses or references) of a chunk of items: row numbers in the flat text list,
    the item (0..n-1 within the chunk) and the position within the item of each row."""

    def __init__(self, per_item: Sequence[Sequence[Any]], first_row: int = 0) -> None:
        sizes = np.array([len(g) for g in per_item], dtype=np.int64)
        self.flat = [x for g in per_item for x in g]
        self.rows = first_row + np.arange(len(self.flat))
        self.item = np.repeat(np.arange(len(per_item)), sizes)
        self.local = self.rows - first_row - np.repeat(np.cumsum(sizes) - sizes, sizes)
        self.sizes = sizes
        self.width = int(sizes.max()) if len(sizes) else 0

    def pad(self, values: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """Per-row values -> (items, width, ...) array."""
        out = np.full((len(self.sizes), self.width) + values.shape[1:], fill, dtype=float)
        out[self.item, self.local] = values
        return out

    def valid(self) -> np.ndarray:
        """(items, width) mask of real entries."""
        return np.arange(self.width)[None, :] < self.sizes[:, None]


def _word_ids(token_lists: Iterable[Sequence[str]]) -> list[np.ndarray]:
    """Token lists as integer sequences (one vocabulary shared by all lists)."""
    vocab: dict[str, int] = {}
    return [np.array([vocab.setdefault(t, len(vocab)) for t in toks], dtype=np.int64) for toks in token_lists]


def _char_ids(texts: Sequence[str]) -> list[np.ndarray]:
    """Texts as integer sequences of code points (exact for any Unicode text)."""
    return [np.frombuffer(t.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64) for t in texts]


@lru_cache(maxsize=1)
def _bleu_tokenizer() -> Callable[[str], str]:
    return _sacrebleu().metrics.BLEU(tokenize=BLEU_PARAMS["tokenize"]).tokenizer


def _bleu_from_stats(correct: np.ndarray, total: np.ndarray, sys_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """sacreBLEU 2.x ``BLEU.compute_bleu`` (exp smoothing, effective order), vectorised; last axis =
    n-gram order 1..4 for ``correct`` / ``total``.

    Brevity penalty ``exp(1 - ref/sys)`` when the hypothesis is shorter (0 if empty). Orders are used
    up to the last one the hypothesis has n-grams of; a zero match count at order n gets precision
    ``100 / (2^z * total_n)``, z = number of zero-match orders so far (NIST "exp" smoothing). Score
    = BP * geometric mean of the precisions; 0 when nothing matches at all.
    """
    shape = np.broadcast_shapes(correct.shape[:-1], total.shape[:-1], np.shape(sys_len), np.shape(ref_len))
    sys_len = np.broadcast_to(np.asarray(sys_len, dtype=float), shape)
    ref_len = np.broadcast_to(np.asarray(ref_len, dtype=float), shape)
    correct = np.broadcast_to(correct, shape + correct.shape[-1:])
    total = np.broadcast_to(total, shape + total.shape[-1:])
    shorter = sys_len < ref_len
    bp = np.ones(shape)
    bp[shorter] = np.where(sys_len[shorter] > 0, np.exp(1 - ref_len[shorter] / np.maximum(sys_len[shorter], 1)), 0.0)
    log_sum, eff = np.zeros(shape), np.zeros(shape)
    smooth, active = np.ones(shape), np.ones(shape, dtype=bool)
    for n in range(correct.shape[-1]):
        c, t = correct[..., n], total[..., n]
        active = active & (t > 0)  # sacreBLEU stops at the first order without hypothesis n-grams
        t_safe = np.where(active, t, 1.0)
        smooth = np.where(active & (c == 0), smooth * 2, smooth)
        prec = np.where(c > 0, 100.0 * c / t_safe, 100.0 / (smooth * t_safe))
        log_sum = log_sum + np.where(active, np.log(prec), 0.0)
        eff = eff + active
    score = bp * np.exp(log_sum / np.maximum(eff, 1))
    return np.where((correct.sum(axis=-1) > 0) & (eff > 0), score, 0.0)


def _chrf_from_stats(n_hyp: np.ndarray, n_ref: np.ndarray, n_match: np.ndarray) -> np.ndarray:
    """sacreBLEU 2.x chrF (``eps_smoothing=False``) from per-order counts; last axis = order.

    Mirrors ``CHRF._compute_f_score`` operation by operation: per order, precision and recall count
    only when both sides have n-grams of that order; they are averaged over those orders (the
    "effective order") and combined into F-beta, times 100.
    """
    shape = np.broadcast_shapes(n_hyp.shape, n_ref.shape, n_match.shape)[:-1]
    avg_p, avg_r, eff = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for o in range(n_match.shape[-1]):
        nh, nr, nm = n_hyp[..., o], n_ref[..., o], n_match[..., o]
        ok = (nh > 0) & (nr > 0)
        avg_p = avg_p + np.where(ok, nm / np.where(nh > 0, nh, 1.0), 0.0)
        avg_r = avg_r + np.where(ok, nm / np.where(nr > 0, nr, 1.0), 0.0)
        eff = eff + ok
    safe_eff = np.where(eff > 0, eff, 1.0)
    avg_p = np.where(eff > 0, avg_p / safe_eff, 0.0)
    avg_r = np.where(eff > 0, avg_r / safe_eff, 0.0)
    num = (1 + _CHRF_FACTOR) * avg_p * avg_r
    den = _CHRF_FACTOR * avg_p + avg_r
    return np.where(avg_p + avg_r > 0, 100 * (num / np.where(den > 0, den, 1.0)), 0.0)


class _PackedLCS:
    """Bit-parallel LCS lengths of one hypothesis against several references at once.

    Each reference gets a segment of bits in one Python integer (one zero guard bit between
    segments absorbs the carry). For every hypothesis token ``t`` with match mask ``M[t]``:
    ``U = V & M[t]; V = (V + U) | (V - U)`` (Hyyroe 2004); afterwards the LCS with a reference is
    the number of zero bits in its segment. Cost: one big-integer step per hypothesis token for
    all references together, instead of a |hyp| x |ref| table per pair.
    """

    def __init__(self, refs: Sequence[Sequence[str]]) -> None:
        self.masks: dict[str, int] = {}
        self.offsets: list[int] = []
        self.lengths: list[int] = []
        full, pos = 0, 0
        for toks in refs:
            for k, t in enumerate(toks):
                self.masks[t] = self.masks.get(t, 0) | (1 << (pos + k))
            full |= ((1 << len(toks)) - 1) << pos
            self.offsets.append(pos)
            self.lengths.append(len(toks))
            pos += len(toks) + 1
        self.full = full

    def lcs(self, hyp: Sequence[str]) -> list[int]:
        v, full, masks = self.full, self.full, self.masks
        for t in hyp:
            m = masks.get(t)
            if m:
                u = v & m
                v = ((v + u) | (v - u)) & full
        return [n - ((v >> off) & ((1 << n) - 1)).bit_count() for off, n in zip(self.offsets, self.lengths)]


class _Chunk:
    """Several items' hypotheses and references (or, with ``refs=None``, their outputs compared with
    each other), scored together. Every method returns a padded array: ``(items, H, R)`` for pair
    scores (hypothesis i of an item vs its reference j) or ``(items, H)``; only cells where
    :attr:`mask` (or ``hyp.valid()``) is true are meaningful. Text is tokenised once per chunk."""

    def __init__(self, hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]] | None = None) -> None:
        self.n = len(hyps)
        self.hyp = _Side(hyps)
        self.self_pairs = refs is None
        self.ref = self.hyp if refs is None else _Side(refs, first_row=len(self.hyp.flat))
        self.texts = self.hyp.flat if refs is None else self.hyp.flat + self.ref.flat
        self.groups = self.hyp.item if refs is None else np.concatenate([self.hyp.item, self.ref.item])
        mask = self.hyp.valid()[:, :, None] & self.ref.valid()[:, None, :]
        if self.self_pairs:
            mask &= ~np.eye(self.hyp.width, dtype=bool)[None]
        self.mask = mask

    @cached_property
    def words(self) -> list[list[str]]:
        return [tokenize(t) for t in self.texts]

    def _word_ngrams(self, max_order: int, min_order: int = 1) -> _Ngrams:
        return _Ngrams(_word_ids(self.words), self.groups, max_order, min_order)

    def chrf(self) -> np.ndarray:
        texts = ["".join(t.split()) for t in self.texts] if CHRF_PARAMS["remove_whitespace"] else self.texts
        grams = _Ngrams(_char_ids(texts), self.groups, _CHRF_ORDER)
        match = grams.cross(self.hyp, self.ref, self.n)
        n_hyp = self.hyp.pad(grams.totals[self.hyp.rows])[:, :, None, :]
        n_ref = self.ref.pad(grams.totals[self.ref.rows])[:, None, :, :]
        return _chrf_from_stats(n_hyp, n_ref, match)

    @cached_property
    def _bleu(self) -> tuple[_Ngrams, np.ndarray]:
        tok = _bleu_tokenizer()
        token_lists = [tok(t.rstrip()).split() for t in self.texts]
        lens = np.array([len(t) for t in token_lists], dtype=float)
        return _Ngrams(_word_ids(token_lists), self.groups, _BLEU_ORDER), lens

    def bleu_pairs(self) -> np.ndarray:
        """Sentence BLEU with one reference at a time."""
        grams, lens = self._bleu
        correct = grams.cross(self.hyp, self.ref, self.n)
        total = self.hyp.pad(grams.totals[self.hyp.rows])[:, :, None, :]
        sys_len = self.hyp.pad(lens[self.hyp.rows])[:, :, None]
        ref_len = self.ref.pad(lens[self.ref.rows])[:, None, :]
        return _bleu_from_stats(correct, total, sys_len, ref_len)

    def bleu_multi(self) -> np.ndarray:
        """Sentence BLEU against all of the item's references (sacreBLEU's multi-reference rules:
        counts clipped by the maximum count in any reference; the closest reference length, ties
        to the shorter, for the brevity penalty)."""
        grams, lens = self._bleu
        correct = grams.against_union(self.hyp, self.ref)
        sys_len = lens[self.hyp.rows]
        ref_lens = self.ref.pad(lens[self.ref.rows])[self.hyp.item]  # (hyp rows, R)
        ok = self.ref.valid()[self.hyp.item]
        dist = np.where(ok, np.abs(ref_lens - sys_len[:, None]), np.inf)
        key = np.where(ok, dist * (ref_lens.max(initial=0) + 1) + ref_lens, np.inf)
        closest = ref_lens[np.arange(len(sys_len)), np.argmin(key, axis=1)] if len(sys_len) else sys_len
        scores = _bleu_from_stats(correct, grams.totals[self.hyp.rows], sys_len, closest)
        return self.hyp.pad(scores)

    def rouge_n(self, n: int) -> np.ndarray:
        grams = self._word_ngrams(n, min_order=n)
        overlap = grams.cross(self.hyp, self.ref, self.n)[..., 0]
        n_hyp = self.hyp.pad(grams.totals[self.hyp.rows, 0])[:, :, None]
        n_ref = self.ref.pad(grams.totals[self.ref.rows, 0])[:, None, :]
        return _f1(overlap / np.maximum(n_hyp, 1), overlap / np.maximum(n_ref, 1))  # rouge-score: /max(n, 1)

    def rouge_l(self) -> np.ndarray:
        lcs = np.zeros(self.mask.shape)
        for b in range(self.n):
            hyp_rows = self.hyp.rows[self.hyp.item == b]
            ref_rows = self.ref.rows[self.ref.item == b]
            packed = _PackedLCS([self.words[r] for r in ref_rows])
            for i, r in enumerate(hyp_rows):
                lcs[b, i, : len(ref_rows)] = packed.lcs(self.words[r])
        lens = np.array([len(w) for w in self.words], dtype=float)
        n_hyp = self.hyp.pad(lens[self.hyp.rows])[:, :, None]
        n_ref = self.ref.pad(lens[self.ref.rows])[:, None, :]
        return _f1(lcs / np.maximum(n_hyp, 1), lcs / np.maximum(n_ref, 1))  # 0 if either side is empty

    def unigram(self) -> np.ndarray:
        grams = self._word_ngrams(1)
        overlap = grams.cross(self.hyp, self.ref, self.n)[..., 0]
        denom = (self.hyp.pad(grams.totals[self.hyp.rows, 0])[:, :, None]
                 + self.ref.pad(grams.totals[self.ref.rows, 0])[:, None, :])
        return np.where(denom > 0, 2 * overlap / np.where(denom > 0, denom, 1.0), 1.0)

    def best_over_refs(self, scores: np.ndarray) -> np.ndarray:
        """(items, H, R) -> (items, H): the maximum over each item's references."""
        return np.where(self.mask, scores, -np.inf).max(axis=2, initial=-np.inf)

    def mean_over_pairs(self, scores: np.ndarray) -> np.ndarray:
        """(items, H, R) -> (items,): the mean over valid pairs (NaN for an item without any)."""
        n = self.mask.sum(axis=(1, 2))
        total = np.where(self.mask, scores, 0.0).sum(axis=(1, 2))
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _chunks(n: int, size: int = 64) -> Iterable[range]:
    for start in range(0, n, size):
        yield range(start, min(start + size, n))

