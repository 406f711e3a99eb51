"""Reference-based metrics: sentence BLEU, chrF and ROUGE, and score matrices for a whole Pool.

:func:`reference_metrics` scores every output of a :class:`~evalsift.pool.Pool` against all of the
item's references at once (through :mod:`evalsift.metrics.ngrams`) and returns new, automatic
score matrices named ``"<metric>-ref"``; :func:`ensure_metric` computes one on demand
(``--metric chrF-ref``).

>>> round(rouge("the cat sat on the mat", "the cat is on the mat", kind="rougeL"), 4)  # LCS 5 of 6
0.8333
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import DataError, ParameterError, UnknownNameError, check_choice, suggest
from ..pool import Pool
from ..progress import progress_bar
from ..registry import Registry
from .ngrams import (BLEU_PARAMS, CHRF_PARAMS, _ROUGE_KINDS, _as_refs, _check_text, _chunks, _Chunk, _sacrebleu,
                     _usable)

def sentence_bleu(hyp: str, refs: str | Sequence[str]) -> float:
    """Sentence BLEU (0-100) of ``hyp`` against one or more references, computed by sacreBLEU.

    Calls ``sacrebleu.sentence_bleu`` with its sentence-level defaults (:data:`BLEU_PARAMS`):
    ``13a`` tokenisation, case-sensitive, ``exp`` smoothing, effective n-gram order (orders longer
    than the hypothesis are not counted), max order 4. With several references, n-gram counts are
    clipped by the maximum count in any reference and the brevity penalty uses the closest
    reference length (ties: the shorter). ``None`` references are skipped.

    >>> round(sentence_bleu("the cat sat on the mat", ["the cat sat on the mat"]), 6)
    100.0
    """
    hyp = _check_text(hyp, "sentence_bleu(hyp)")
    return float(_sacrebleu("sentence_bleu").sentence_bleu(hyp, _as_refs(refs, "sentence_bleu"), **BLEU_PARAMS).score)


def sentence_chrf(hyp: str, refs: str | Sequence[str]) -> float:
    """Sentence chrF (0-100) of ``hyp`` against one or more references, computed by sacreBLEU.

    Calls ``sacrebleu.sentence_chrf`` with its defaults (:data:`CHRF_PARAMS`): character n-grams up
    to order 6, no word n-grams (chrF, not chrF++), beta = 2 (recall weighs more), whitespace
    removed, effective-order averaging (``eps_smoothing=False``). With several references the
    best-scoring one counts. ``None`` references are skipped.

    >>> round(sentence_chrf("the cat", ["the cat"]), 6)
    100.0
    """
    hyp = _check_text(hyp, "sentence_chrf(hyp)")
    return float(_sacrebleu("sentence_chrf").sentence_chrf(hyp, _as_refs(refs, "sentence_chrf"), **CHRF_PARAMS).score)


def rouge(hyp: str, refs: str | Sequence[str], kind: str = "rougeL") -> float:
    """ROUGE F1 (0-1) of ``hyp`` against one or more references; the maximum over references.

    ``kind``: ``"rouge1"`` / ``"rouge2"`` (clipped unigram / bigram overlap) or ``"rougeL"``
    (sentence-level longest common subsequence, not the summary-level ``rougeLsum``). Tokens come
    from :func:`tokenize` (rouge-score's default tokenizer without stemming, but keeping non-ASCII
    letters). P = matches / hypothesis length, R = matches / reference length, F1 = 2PR/(P+R), 0 if
    either side has no tokens; several references -> the highest F1, as rouge-score's
    ``score_multi`` does.

    >>> rouge("the cat sat on the mat", "the cat is on the mat", "rougeL")  # LCS 5: P = R = 5/6
    0.8333333333333334
    >>> round(rouge("the cat sat on the mat", "the cat is on the mat", "rouge2"), 12)  # 3 of 5 bigrams
    0.6
    """
    hyp = _check_text(hyp, "rouge(hyp)")
    ref_list = _as_refs(refs, "rouge")
    check_choice("kind", kind, _ROUGE_KINDS, where="rouge")
    chunk = _Chunk([[hyp]], [ref_list])
    scores = chunk.rouge_l() if kind == "rougeL" else chunk.rouge_n(int(kind[-1]))
    return float(chunk.best_over_refs(scores)[0, 0])


# --------------------------------------------------------------------------------------------
# Reference-based score matrices for a Pool
# --------------------------------------------------------------------------------------------

REFERENCE_METRICS: Registry[Callable[[_Chunk], np.ndarray]] = Registry("reference metric")
REFERENCE_METRICS.add("chrF", lambda c: c.best_over_refs(c.chrf()), "sacreBLEU chrF (0-100), best reference")
REFERENCE_METRICS.add("BLEU", lambda c: c.bleu_multi(), "sacreBLEU sentence BLEU (0-100), multi-reference")
REFERENCE_METRICS.add("ROUGE-1", lambda c: c.best_over_refs(c.rouge_n(1)), "ROUGE-1 F1 (0-1), max over references")
REFERENCE_METRICS.add("ROUGE-2", lambda c: c.best_over_refs(c.rouge_n(2)), "ROUGE-2 F1 (0-1), max over references")
REFERENCE_METRICS.add("ROUGE-L", lambda c: c.best_over_refs(c.rouge_l()), "ROUGE-L F1 (0-1), max over references")


def _metric_name(name: str) -> str:
    """Canonical metric name; case, ``-`` and ``_`` are forgiven (``rouge_l`` -> ``ROUGE-L``)."""
    if name in REFERENCE_METRICS:
        return name
    norm = {n.lower().replace("-", ""): n for n in REFERENCE_METRICS}
    key = str(name).lower().replace("-", "").replace("_", "")
    if key in norm:
        return norm[key]
    REFERENCE_METRICS.get(name)  # raises UnknownNameError with a suggestion
    return name


def _reference_names(pool: Pool, references: Iterable[str] | str | None) -> list[str]:
    if not pool.references:
        raise DataError(
            f"Pool {pool.name!r} has no references, so reference-based metrics cannot be computed. "
            "Load data that carries them (SummEval: ref_0..ref_10; WMT/mt-metrics-eval: refA) or build "
            "the Pool with references={'ref': [one text or None per item]}."
        )
    if references is None:
        return list(pool.references)
    names = [references] if isinstance(references, str) else list(references)
    if not names:
        raise ParameterError("references: give at least one reference name, or None for all of them")
    for r in names:
        if r not in pool.references:
            raise DataError(f"Pool {pool.name!r} has no reference {r!r}.{suggest(r, pool.references)} "
                            f"Available references: {', '.join(pool.references)}")
    return names


def reference_metrics(
    pool: Pool,
    metrics: Sequence[str] = ("chrF", "BLEU", "ROUGE-L"),
    references: Sequence[str] | str | None = None,
    progress: bool | None = None,
) -> Pool:
    """A new Pool with one automatic score matrix per metric, named ``"<metric>-ref"``.

    ``metrics``: any of ``chrF``, ``BLEU`` (sacreBLEU, 0-100), ``ROUGE-1``, ``ROUGE-2``, ``ROUGE-L``
    (F1, 0-1); case, ``-`` and ``_`` do not matter. ``references``: names in ``pool.references`` to
    use (default: all). Each item is scored against all of its usable references together (a
    reference that is None, not a string, or blank is skipped): BLEU with sacreBLEU's
    multi-reference statistics, chrF with its best reference, ROUGE with the maximum F1 over
    references. Values equal :func:`sentence_bleu`, :func:`sentence_chrf` and :func:`rouge` on the
    same texts; they are computed for many items at once. A cell is NaN where the system has no
    output (None) or the item has no usable reference; an empty output string is scored (usually
    0). The new matrices are not human judgments (an existing matrix of the same name is replaced).
    ``progress``: None follows ``EVALSIFT_QUIET``; False hides the bar. Raises
    :class:`~evalsift.errors.DataError` if the pool has no references.

    >>> p = Pool(item_ids=["i0"], systems=["A", "B"], outputs={"A": ["the cat sat"], "B": [None]},
    ...          references={"ref": ["the cat sat"]})
    >>> out = reference_metrics(p, metrics=["ROUGE-L"], progress=False)
    >>> out.score("ROUGE-L-ref").tolist(), out.is_human("ROUGE-L-ref")
    ([[1.0, nan]], False)
    """
    names = [_metric_name(m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
    if not names:
        raise ParameterError("reference_metrics: metrics is empty; choose from " + ", ".join(REFERENCE_METRICS))
    ref_names = _reference_names(pool, references)
    scorers = {m: REFERENCE_METRICS.get(m) for m in dict.fromkeys(names)}
    mats = {m: np.full((pool.n_items, pool.n_systems), np.nan) for m in scorers}
    todo = []  # (item, output columns, references) for items with something to score
    for i in range(pool.n_items):
        refs = [pool.references[r][i] for r in ref_names if _usable(pool.references[r][i])]
        cols = [j for j, s in enumerate(pool.systems) if isinstance(pool.outputs[s][i], str)]
        if refs and cols:
            todo.append((i, cols, refs))
    quiet = None if progress is None else not progress
    with progress_bar(pool.n_items, "reference metrics", quiet) as advance:
        advance(pool.n_items - len(todo))
        for part in _chunks(len(todo)):
            batch = [todo[k] for k in part]
            chunk = _Chunk([[pool.outputs[pool.systems[j]][i] for j in cols] for i, cols, _ in batch],
                           [refs for _, _, refs in batch])
            rows = np.concatenate([[i] * len(cols) for i, cols, _ in batch]).astype(int)
            cols = np.concatenate([cols for _, cols, _ in batch]).astype(int)
            for m, score in scorers.items():
                mats[m][rows, cols] = score(chunk)[chunk.hyp.item, chunk.hyp.local]
            advance(len(batch))
    out = pool
    for m, mat in mats.items():
        out = out.with_scores(f"{m}-ref", mat, human=False)
    return out


def ensure_metric(pool: Pool, metric: str | None) -> tuple[Pool, str | None]:
    """``(pool, name)`` with ``metric`` available under ``name``.

    A metric the pool has (or None) comes back unchanged. A reference-based name it lacks
    (``chrF-ref``, ``BLEU-ref``, ``ROUGE-L-ref``, ...; case, ``-`` and ``_`` forgiven) is computed
    against the pool's references and returned under its canonical name. Anything else comes back
    unchanged, for the caller's usual unknown-metric error.

    >>> p = Pool(item_ids=["i0"], systems=["A"], outputs={"A": ["a b"]}, references={"ref": ["a b"]})
    >>> q, name = ensure_metric(p, "rouge-l-ref")
    >>> name, q.metrics
    ('ROUGE-L-ref', ('ROUGE-L-ref',))
    """
    if metric is None or metric in pool.scores or not str(metric).lower().endswith("-ref"):
        return pool, metric
    try:
        name = f"{_metric_name(str(metric)[: -len('-ref')])}-ref"
    except UnknownNameError:
        return pool, metric
    return (pool if name in pool.scores else reference_metrics(pool, [name[: -len("-ref")]])), name



def ensure_oracle_metric(pool: Pool, oracle: Any) -> tuple[Pool, Any]:
    """``(pool, oracle)`` with a metric oracle's column made ready by :func:`ensure_metric`, so a
    judge simulated from a reference metric is computed on demand as ``--metric``, ``--proxy`` and
    the judge report have it: ``"metric:chrf-ref"`` (or the bare metric name the benchmarks take,
    ``"chrF-ref"``) that the pool lacks is computed against its references and comes back under its
    canonical name (``"metric:chrF-ref"``). Any other oracle -- another spec, an Oracle object -- and
    a name that is not a reference metric come back unchanged.

    >>> p = Pool(item_ids=["i0"], systems=["A"], outputs={"A": ["a b"]}, references={"ref": ["a b"]})
    >>> q, spec = ensure_oracle_metric(p, "metric:rouge-2-ref")
    >>> spec, q.metrics
    ('metric:ROUGE-2-ref', ('ROUGE-2-ref',))
    >>> ensure_oracle_metric(p, "judgments:pairs.csv")[1]
    'judgments:pairs.csv'
    """
    if not isinstance(oracle, str):
        return pool, oracle
    kind, sep, name = oracle.partition(":")
    if not sep:
        return ensure_metric(pool, oracle)
    if kind != "metric" or not name:
        return pool, oracle
    pool, name = ensure_metric(pool, name)
    return pool, f"metric:{name}"
