"""Extractive QA inputs of the label dimensions (Kovatchev & Lease 2024, App. A, SQuAD).

- :func:`span_gold_probs`: a reader's probability of the gold answer span at each epoch -- the
  "class probability of the correct answer" that ``ambiguity(spans=...)`` takes the variability of.
- :func:`token_f1` and :func:`answer_agreement`: SQuAD's token-overlap F1 between two annotators'
  answers and its mean over every pair of annotators -- what ``noise(answers=...)`` is one minus.

**The span format** (one dict per item; a JSONL file with one such object per line reads into it):

- ``start_logits``, ``end_logits``: one list per epoch of the reader's logits over the item's token
  positions (every epoch of an item has the same number of positions; items may differ). Logits on
  any per-epoch scale: only differences matter, so ``log`` of softmax probabilities works as well.
- ``answers``: the gold spans, ``[[start, end], ...]`` as token positions, ``end`` inclusive (the
  tokenizer's mapping from the dataset's character offsets). An empty list is an unanswerable
  question (SQuAD 2.0) and needs ``null_index``.
- optional ``null_index``: the position whose ``(i, i)`` span means "no answer" (BERT's ``[CLS]``, 0)
  -- or give ``null_index=`` for every item.

>>> item = {"start_logits": [[0.0, 2.0, 0.0]], "end_logits": [[0.0, 0.0, 2.0]], "answers": [[1, 2]]}
>>> span_gold_probs([item]).round(4).tolist()   # e^4 / (1 + 1 + e^2 + e^2 + e^4 + e^2): the 6 spans s <= e
[[0.6932]]
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError

__all__ = ["answer_agreement", "span_gold_probs", "token_f1"]


# ------------------------------------------------------------------------------------- span probability
def _span_prob(ls: np.ndarray, le: np.ndarray, answers: Sequence[Sequence[int]], null: int | None,
               max_len: int | None) -> float:
    """P(gold span) = sum over gold spans of exp(ls[s] + le[e]) / the sum over every valid span.

    Valid: ``s <= e`` (and ``e - s < max_len``), neither at ``null``; plus ``(null, null)`` when given.
    O(T) with a cumulative sum: the sum over valid spans is sum_s a[s] * (b[s] + ... + b[s + L - 1])."""
    a, b = np.exp(ls - ls.max()), np.exp(le - le.max())
    t = a.size
    p_null = a[null] * b[null] if null is not None else 0.0
    if null is not None:
        a, b = a.copy(), b.copy()
        a[null] = b[null] = 0.0
    c = np.r_[0.0, np.cumsum(b)]
    hi = np.full(t, t) if max_len is None else np.minimum(np.arange(t) + max_len, t)  # e < hi[s]
    z = float(a @ (c[hi] - c[:t])) + p_null
    if not answers:
        return p_null / z
    return sum(float(a[s] * b[e]) for s, e in {(int(s), int(e)) for s, e in answers}) / z


def span_gold_probs(spans: Sequence[Mapping[str, Any]], *, null_index: int | None = None,
                    max_answer_len: int | None = None) -> np.ndarray:
    """Items x epochs: the probability of the gold answer span at each epoch (App. A, SQuAD).

    Kovatchev & Lease obtain the "class probability of the correct answer" of a reader as the
    probability of the correct start token times that of the correct end token, normalised by the
    same product summed over every valid (start, end) pair, and for SQuAD 2.0 they count the "no
    answer" option too. Here: ``exp(start[s] + end[e]) / sum over valid spans``, valid meaning
    ``s <= e`` (and ``e - s < max_answer_len`` if given; the paper names no limit) and, with a
    ``null_index``, the no-answer span ``(null, null)`` in place of any span touching ``null``. An
    unanswerable item (no ``answers``) gets the no-answer span's probability. An item with several
    distinct gold spans (SQuAD's several annotators) gets the sum over them -- our choice, the
    paper does not say; with one span it is exactly the paper's product.

    ``spans``: one dict per item (the format in the module docstring). Epochs an item lacks are NaN.
    """
    if isinstance(spans, Mapping) or not isinstance(spans, Sequence) or len(spans) == 0:
        raise DataError("spans: expected a non-empty list with one dict per item (start_logits, end_logits, "
                        "answers).", field="spans")
    if max_answer_len is not None and (not isinstance(max_answer_len, (int, np.integer)) or max_answer_len < 1):
        raise ParameterError(f"max_answer_len must be a positive integer or None, got {max_answer_len!r}.",
                             field="max_answer_len")
    rows = []
    for i, item in enumerate(spans):
        if not isinstance(item, Mapping) or not {"start_logits", "end_logits", "answers"} <= set(item):
            raise DataError(f"spans: item {i} needs the keys start_logits, end_logits, answers (epochs x positions, "
                            "epochs x positions, [[start, end], ...]).", field="spans", item_id=i)
        S = np.asarray(item["start_logits"], dtype=float)
        E = np.asarray(item["end_logits"], dtype=float)
        if S.ndim != 2 or S.shape != E.shape or S.shape[1] == 0:
            raise DataError(f"spans: item {i}: start_logits and end_logits must both be epochs x positions of one "
                            f"shape, got {S.shape} and {E.shape}.", field="spans", item_id=i)
        if not np.isfinite(S).all() or not np.isfinite(E).all():
            raise DataError(f"spans: item {i} has a non-finite logit.", field="spans", item_id=i)
        null = item.get("null_index", null_index)
        answers = [tuple(a) for a in item["answers"]]
        t = S.shape[1]
        if null is not None and not 0 <= int(null) < t:
            raise DataError(f"spans: item {i}: null_index {null} outside 0..{t - 1}.", field="null_index", item_id=i)
        for a in answers:
            if len(a) != 2 or not 0 <= a[0] <= a[1] < t or (null is not None and int(null) in a):
                raise DataError(f"spans: item {i}: answer {list(a)} is not a span [start, end] with 0 <= start <= "
                                f"end < {t}" + (f" avoiding null_index {null}" if null is not None else "") + ".",
                                field="spans", item_id=i)
        if not answers and null is None:
            raise DataError(f"spans: item {i} has no answer span; an unanswerable question needs null_index (the "
                            "no-answer position, e.g. 0 for [CLS]).", field="null_index", item_id=i)
        rows.append([_span_prob(S[e], E[e], answers, None if null is None else int(null), max_answer_len)
                     for e in range(S.shape[0])])
    out = np.full((len(rows), max(len(r) for r in rows)), np.nan)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


# ------------------------------------------------------------------------------------ token-F1 agreement
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def _normalize(text: str) -> list[str]:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCT)
    return _ARTICLES.sub(" ", text).split()


def token_f1(a: str, b: str) -> float:
    """SQuAD's token-overlap F1 of two answers (the official evaluation script's ``f1_score``).

    Both normalised (lower case, punctuation and articles removed); two empty answers (both "no
    answer") agree fully, one empty answer agrees with nothing.

    >>> token_f1("the Eiffel Tower", "Eiffel tower in Paris")    # 2 shared of 2 and 4: 2 * 1 * 0.5 / 1.5
    0.6666666666666666
    >>> token_f1("", ""), token_f1("Paris", "")
    (1.0, 0.0)
    """
    x, y = _normalize(a), _normalize(b)
    if not x or not y:
        return float(x == y)
    common = sum((Counter(x) & Counter(y)).values())
    if common == 0:
        return 0.0
    p, r = common / len(x), common / len(y)
    return 2 * p * r / (p + r)


def answer_agreement(answers: Sequence[Sequence[str]]) -> np.ndarray:
    """Per item, the mean token F1 (:func:`token_f1`) over every pair of its annotators' answers.

    NaN for an item with fewer than 2 answers (``None`` answers are dropped; ``""`` is "no answer").

    >>> answer_agreement([["in 1889", "1889", "1889"], ["Paris"]]).round(4).tolist()   # (2/3 + 2/3 + 1) / 3
    [0.7778, nan]
    """
    out = np.full(len(answers), np.nan)
    for i, row in enumerate(answers):
        if isinstance(row, str):
            raise DataError(f"answers: item {i} is one string; give the list of its annotators' answers.",
                            field="answers", item_id=i)
        row = [x for x in ([] if row is None else list(row)) if x is not None]
        if len(row) >= 2:
            out[i] = float(np.mean([token_f1(x, y) for x, y in combinations(row, 2)]))
    return out
