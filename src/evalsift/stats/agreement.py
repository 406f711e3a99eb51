"""Inter-annotator agreement: Cohen's kappa, Fleiss' kappa, Krippendorff's alpha, and all three
from a list of :class:`~evalsift.oracle.Judgment` records.

Which code computes what (formulas and citations in ``docs/agreement.md``):

- :func:`cohen_kappa` -- two annotators, same items (Cohen 1960; weighted: Cohen 1968). Wraps
  ``sklearn.metrics.cohen_kappa_score``; items where either label is missing are dropped and counted.
- :func:`fleiss_kappa` -- many annotators, nominal labels, the same number of ratings on every item
  (Fleiss 1971). Written here (a few lines of numpy): statsmodels is not a dependency. When the
  number of ratings varies it returns NaN with a note instead of switching to one of the several
  generalisations; Krippendorff's alpha is the statistic made for that case.
- :func:`krippendorff_alpha` -- any number of annotators, missing values, nominal / ordinal /
  interval / ratio data (Krippendorff 2011). Wraps the PyPI package ``krippendorff``.
- :func:`agreement_from_judgments` -- builds the items x annotators matrix from judgments
  (:func:`judgment_matrix`) and reports all of the above as a JSON-ready dict.

Degenerate data (no overlap, a single label used by everyone) gives NaN with a ``note`` saying
why, never an exception; malformed input (wrong shapes, unknown options) raises
:class:`~evalsift.errors.ParameterError` or :class:`~evalsift.errors.DataError` with ``field``.

>>> round(cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]).kappa, 4)   # p_o 3/4, p_e 1/2
0.5
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice

__all__ = [
    "AGREEMENT_KINDS", "ALPHA_LEVELS", "AlphaResult", "FleissResult", "JudgmentMatrix", "KappaResult",
    "RATING_SCALE_POINTS", "agreement_from_judgments", "cohen_kappa", "fleiss_kappa", "judgment_matrix",
    "krippendorff_alpha", "scores_are_categorical",
]

ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")
AGREEMENT_KINDS = ("pairwise", "score")
KAPPA_WEIGHTS = (None, "linear", "quadratic")
FLEISS_FORMS = ("auto", "counts", "labels")
NAN = float("nan")


# ---------------------------------------------------------------------------------------- helpers
def _is_missing(v: Any) -> bool:
    """True for None and float NaN (the two spellings of "not rated")."""
    if v is None:
        return True
    try:
        return isinstance(v, (float, np.floating)) and math.isnan(v)
    except TypeError:  # pragma: no cover - exotic float subclasses
        return False


def _sorted_labels(values: Iterable[Any]) -> list[Any]:
    """Distinct labels in their natural order (numbers ascending, strings alphabetically); mixed
    types fall back to (type name, str) so the order is still deterministic."""
    distinct = list(dict.fromkeys(values))
    try:
        return sorted(distinct)
    except TypeError:
        return sorted(distinct, key=lambda v: (type(v).__name__, str(v)))


def _plain(v: Any) -> Any:
    """A numpy scalar as the plain Python value (hashable and JSON-ready)."""
    return v.item() if isinstance(v, np.generic) else v


def _as_1d(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ParameterError(f"{name} must be a sequence of labels, one per item; got {type(values).__name__}",
                             field=name)
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional (one label per item); got shape {arr.shape}",
                             field=name)
    return [_plain(v) for v in arr.tolist()]


def _as_2d(data: Any, name: str) -> np.ndarray:
    arr = np.asarray(data, dtype=object)
    if arr.ndim != 2:
        raise ParameterError(f"{name} must be two-dimensional; got shape {arr.shape}", field=name)
    return arr


def _round(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else (x if not math.isfinite(x) else round(float(x), nd))


# ---------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class KappaResult:
    """Cohen's kappa of two annotators.

    ``kappa`` (NaN when undefined, ``note`` says why); ``n_items`` items used; ``n_dropped`` items
    left out because either label was missing; ``observed_agreement`` the share of used items with
    the same label (unweighted, in [0, 1]); ``weights`` None, 'linear' or 'quadratic'.

    >>> KappaResult(1.0, 4, 0, 1.0, None).to_dict()["kappa"]
    1.0
    """

    kappa: float
    n_items: int
    n_dropped: int
    observed_agreement: float
    weights: str | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN stays NaN)."""
        return asdict(self)


@dataclass(frozen=True)
class FleissResult:
    """Fleiss' kappa of many annotators on nominal labels.

    ``kappa`` (NaN when undefined, ``note`` says why); ``n_items`` items used; ``n_raters`` ratings
    per item (0 when undefined); ``n_categories``; ``n_dropped`` items of a label matrix left out for
    having fewer than 2 ratings; ``observed_agreement`` P-bar and ``expected_agreement`` P-bar_e of
    Fleiss (1971); ``form`` how the input was read ('counts' or 'labels').

    >>> FleissResult(0.21, 10, 14, 5, 0, 0.378, 0.213, "counts").form
    'counts'
    """

    kappa: float
    n_items: int
    n_raters: int
    n_categories: int
    n_dropped: int
    observed_agreement: float
    expected_agreement: float
    form: str
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN stays NaN)."""
        return asdict(self)


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha.

    ``alpha`` (NaN when undefined, ``note`` says why); ``level`` of measurement; ``n_raters`` rows
    of the data; ``n_items`` pairable items (at least 2 values); ``n_values`` values in those items;
    ``n_dropped`` items with fewer than 2 values (they carry no agreement information).

    >>> AlphaResult(0.743, "nominal", 4, 11, 40, 1).n_values
    40
    """

    alpha: float
    level: str
    n_raters: int
    n_items: int
    n_values: int
    n_dropped: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN stays NaN)."""
        return asdict(self)


# ---------------------------------------------------------------------------------------- Cohen
def cohen_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None,
                weights: str | None = None) -> KappaResult:
    """Cohen's kappa of two annotators' labels on the same items, ``(p_o - p_e) / (1 - p_e)``.

    ``a[i]`` and ``b[i]`` are the two labels of item ``i``; an item where either is missing (None
    or NaN) is dropped and counted in ``n_dropped``. ``labels`` fixes the categories and their order
    (the order matters for ``weights='linear'|'quadratic'``, where the disagreement of categories i
    and j is ``|i - j|`` or ``(i - j)**2``); by default the observed labels, sorted. A label outside
    ``labels`` is a DataError. Computed by ``sklearn.metrics.cohen_kappa_score``. When both
    annotators used one and the same label, chance agreement is 1 and kappa is NaN with a note.

    >>> cohen_kappa([1, 2, 3, 4], [1, 2, 3, 4]).kappa                  # perfect agreement
    1.0
    >>> cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]).kappa                  # p_o 0, p_e 1/2
    -1.0
    >>> r = cohen_kappa(["x", None, "y", "x"], ["x", "y", "y", float("nan")])
    >>> r.kappa, r.n_items, r.n_dropped
    (1.0, 2, 2)
    """
    x_all, y_all = _as_1d(a, "a"), _as_1d(b, "b")
    if len(x_all) != len(y_all):
        raise ParameterError(f"cohen_kappa: a has {len(x_all)} labels and b has {len(y_all)}; give one label "
                             "per item to both (None where an annotator did not rate the item)", field="b")
    check_choice("weights", weights, KAPPA_WEIGHTS, where="cohen_kappa")
    keep = [i for i in range(len(x_all)) if not (_is_missing(x_all[i]) or _is_missing(y_all[i]))]
    x, y = [x_all[i] for i in keep], [y_all[i] for i in keep]
    n, dropped = len(keep), len(x_all) - len(keep)
    if labels is None:
        cats = _sorted_labels(x + y)
    else:
        cats = list(dict.fromkeys(_as_1d(labels, "labels")))
        unknown = _sorted_labels(v for v in x + y if v not in cats)
        if unknown:
            raise DataError(f"cohen_kappa: labels {unknown[:5]} occur in the data but not in labels={cats}; add them "
                            "to labels or leave labels out", field="labels")
    if n == 0:
        return KappaResult(NAN, 0, dropped, NAN, weights, "no item has a label from both annotators")
    p_o = float(np.mean([u == v for u, v in zip(x, y)]))
    if len(set(x) | set(y)) < 2:
        return KappaResult(NAN, n, dropped, p_o, weights,
                           f"both annotators gave every item the same label ({x[0]!r}): chance agreement is 1, "
                           "so kappa is undefined")
    from sklearn.metrics import cohen_kappa_score

    code = {c: i for i, c in enumerate(cats)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score([code[v] for v in x], [code[v] for v in y], labels=list(range(len(cats))),
                                    weights=weights))
    note = None if math.isfinite(k) else "kappa is undefined for these labels"
    return KappaResult(k, n, dropped, p_o, weights, note)


# ---------------------------------------------------------------------------------------- Fleiss
def _numeric_complete(arr: np.ndarray) -> np.ndarray | None:
    """The array as floats if every cell is a finite number (no None/NaN, no strings), else None."""
    try:
        f = arr.astype(float)
    except (TypeError, ValueError):
        return None
    if any(isinstance(v, (str, bytes, bool, np.bool_)) for v in arr.ravel()):
        return None
    return f if np.isfinite(f).all() else None


def _labels_to_counts(arr: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """items x raters labels (None/NaN missing) -> items x categories counts, and the categories."""
    cats = _sorted_labels(_plain(v) for v in arr.ravel() if not _is_missing(v))
    code = {c: j for j, c in enumerate(cats)}
    counts = np.zeros((arr.shape[0], len(cats)), dtype=float)
    for i, row in enumerate(arr):
        for v in row:
            if not _is_missing(v):
                counts[i, code[_plain(v)]] += 1
    return counts, cats


def fleiss_kappa(table_or_labels: Any, *, form: str = "auto") -> FleissResult:
    """Fleiss' kappa (Fleiss 1971) for nominal labels and a fixed number ``n`` of ratings per item.

    With ``n_ij`` the number of ratings of item ``i`` (of ``N``) in category ``j``::

        p_j   = sum_i n_ij / (N n)                  P_i = (sum_j n_ij**2 - n) / (n (n - 1))
        P_bar = mean_i P_i        P_e = sum_j p_j**2        kappa = (P_bar - P_e) / (1 - P_e)

    ``table_or_labels`` is either an items x categories **count table** or an items x raters
    **label matrix** (None/NaN where a rater did not rate the item). ``form='auto'`` reads a matrix
    of finite numbers as a count table and anything with a missing value or a non-numeric label as
    labels; pass ``form='labels'`` for a complete numeric label matrix (e.g. 1-5 ratings).
    Items of a label matrix with fewer than 2 ratings are dropped (``n_dropped``).

    If the remaining items have **different numbers of ratings**, the result is NaN with a note:
    Fleiss (1971) is defined for a fixed ``n``, and the generalisations to varying ``n`` disagree on
    how to weigh items, so a number under this name would be ambiguous. Use
    :func:`krippendorff_alpha` (level 'nominal'), made for missing and unequal ratings.

    >>> wiki = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    ...         [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> round(fleiss_kappa(wiki).kappa, 3)       # Wikipedia's worked example: 10 items, 14 raters
    0.21
    >>> r = fleiss_kappa([["x", "x", None], ["x", "y", "y"]])   # item 1 has 2 ratings, item 2 has 3
    >>> r.kappa, r.note.split(":")[0]
    (nan, 'the number of ratings per item varies (2 to 3)')
    """
    check_choice("form", form, FLEISS_FORMS, where="fleiss_kappa")
    arr = _as_2d(table_or_labels, "table_or_labels")
    numeric = _numeric_complete(arr)
    if form == "auto":
        form = "counts" if numeric is not None else "labels"
    dropped = 0
    if form == "counts":
        if numeric is None:
            raise DataError("fleiss_kappa: a count table must hold finite numbers only; for an items x raters "
                            "label matrix with missing values pass form='labels'", field="table_or_labels")
        if (numeric < 0).any() or (numeric != np.round(numeric)).any():
            raise DataError("fleiss_kappa: a count table holds non-negative whole numbers (ratings per item and "
                            "category); for a label matrix pass form='labels'", field="table_or_labels")
        counts = numeric
        n_cats = counts.shape[1]
    else:
        counts, cats = _labels_to_counts(arr)
        n_cats = len(cats)
        rated = counts.sum(axis=1)
        dropped = int((rated < 2).sum())
        counts = counts[rated >= 2]
    per_item = counts.sum(axis=1)
    n_items = int(counts.shape[0])

    def undefined(note: str, n_raters: int = 0) -> FleissResult:
        return FleissResult(NAN, n_items, n_raters, n_cats, dropped, NAN, NAN, form, note)

    if n_items == 0:
        return undefined("no item has at least 2 ratings")
    if per_item.min() != per_item.max():
        return undefined(f"the number of ratings per item varies ({int(per_item.min())} to {int(per_item.max())}): "
                         "Fleiss' kappa needs a fixed number; see Krippendorff's alpha (nominal)")
    n = int(per_item[0])
    if n < 2:
        return undefined(f"every item has {n} rating; Fleiss' kappa needs at least 2 per item", n)
    p_j = counts.sum(axis=0) / (n_items * n)
    p_i = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = float(p_i.mean()), float((p_j ** 2).sum())
    if p_e >= 1.0 - 1e-12:
        return FleissResult(NAN, n_items, n, n_cats, dropped, p_bar, p_e, form,
                            "every rating is in the same category: chance agreement is 1, so kappa is undefined")
    return FleissResult((p_bar - p_e) / (1.0 - p_e), n_items, n, n_cats, dropped, p_bar, p_e, form)


# ---------------------------------------------------------------------------------------- Krippendorff
def krippendorff_alpha(data: Any, level: str = "nominal") -> AlphaResult:
    """Krippendorff's alpha ``1 - D_o / D_e`` of a raters x items matrix (None/NaN = not rated).

    ``level``: 'nominal' (any labels; strings allowed), 'ordinal', 'interval' or 'ratio' (numbers).
    Items with fewer than 2 values carry no information and are counted in ``n_dropped``.
    Computed by the PyPI package ``krippendorff`` (Castro 2017) after mapping labels to codes.
    NaN with a note when no item has 2 values or all paired values are the same (D_e = 0).

    Krippendorff (2011)'s worked example, 4 coders x 12 units:

    >>> d = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    ...      [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    ...      [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    ...      [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    >>> round(krippendorff_alpha(d, "nominal").alpha, 3), round(krippendorff_alpha(d, "interval").alpha, 3)
    (0.743, 0.849)
    """
    check_choice("level", level, ALPHA_LEVELS, where="krippendorff_alpha")
    arr = _as_2d(data, "data")
    n_raters = int(arr.shape[0])
    missing = np.vectorize(_is_missing, otypes=[bool])(arr) if arr.size else np.zeros(arr.shape, bool)
    if level == "nominal":
        cats = _sorted_labels(_plain(v) for v, m in zip(arr.ravel(), missing.ravel()) if not m)
        code = {c: float(j) for j, c in enumerate(cats)}
        values = np.full(arr.shape, np.nan)
        for idx in zip(*np.nonzero(~missing)):
            values[idx] = code[_plain(arr[idx])]
    else:
        bad = [v for v in arr.ravel() if isinstance(v, (str, bytes))]
        try:
            if bad:
                raise ValueError
            values = np.where(missing, np.nan, arr).astype(float)
        except (TypeError, ValueError):
            raise ParameterError(f"krippendorff_alpha: level={level!r} needs numbers (None/NaN for missing); "
                                 "use level='nominal' for labels, or map ordered labels to ranks first",
                                 field="level") from None
    per_item = np.isfinite(values).sum(axis=0) if values.size else np.zeros(arr.shape[1], int)
    pairable = per_item >= 2
    n_items, n_values, dropped = int(pairable.sum()), int(per_item[pairable].sum()), int((~pairable).sum())

    def undefined(note: str) -> AlphaResult:
        return AlphaResult(NAN, level, n_raters, n_items, n_values, dropped, note)

    if n_items == 0:
        return undefined("no item has values from at least 2 raters")
    paired = values[:, pairable]
    if np.unique(paired[np.isfinite(paired)]).size < 2:
        return undefined("every paired value is the same: expected disagreement is 0, so alpha is undefined")
    import krippendorff

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = float(krippendorff.alpha(reliability_data=paired, level_of_measurement=level))
    return AlphaResult(a, level, n_raters, n_items, n_values, dropped,
                       None if math.isfinite(a) else "alpha is undefined for these values")


# ---------------------------------------------------------------------------------------- judgments
@dataclass(frozen=True)
class JudgmentMatrix:
    """Judgments as an annotators x items matrix (None where an annotator did not judge the item).

    ``kind`` 'pairwise' or 'score'; ``annotators`` sorted names (the rows); ``items`` the item keys
    (the columns): ``(item_id, (A, B))`` with ``A < B`` for pairwise, ``(item_id, system)`` for
    scores; ``values`` verdicts in the canonical order ('a' = A better) or float scores;
    ``n_used`` judgments in the matrix, ``n_superseded`` earlier judgments replaced by a later one of
    the same annotator on the same item, ``n_ignored`` judgments whose status is not 'done' (by
    status), ``n_unscored`` done score judgments without a numeric ``detail['score']``.

    >>> from evalsift.oracle import Judgment
    >>> m = judgment_matrix([Judgment("i1", "A", "B", "a", "ann1", "human")])
    >>> m.items, m.values
    ((('i1', ('A', 'B')),), (('a',),))
    """

    kind: str
    annotators: tuple[str, ...]
    items: tuple[Any, ...]
    values: tuple[tuple[Any, ...], ...]
    n_used: int
    n_superseded: int
    n_ignored: dict[str, int]
    n_unscored: int

    def array(self) -> np.ndarray:
        """The values as an (annotators x items) object array (None = not judged).

        >>> judgment_matrix([]).array().shape
        (0, 0)
        """
        return np.array(self.values, dtype=object).reshape(len(self.annotators), len(self.items))


_FLIP = {"a": "b", "b": "a", "tie": "tie"}


def _score_of(detail: dict[str, Any]) -> float | None:
    v = detail.get("score") if isinstance(detail, dict) else None
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def judgment_matrix(judgments: Iterable[Any], kind: str = "pairwise") -> JudgmentMatrix:
    """Arrange judgments into an annotators x items matrix, the input of every agreement statistic.

    Only judgments with ``status == 'done'`` count (the others are tallied in ``n_ignored``).

    - ``kind='pairwise'``: an item is ``(item_id, {a, b})`` -- the unordered pair of systems --
      written ``(item_id, (A, B))`` with ``A < B``. A verdict recorded for ``(B, A)`` is mapped to
      that canonical order: 'a' (B better) becomes 'b', 'b' becomes 'a', 'tie' stays.
    - ``kind='score'``: a score judgment rates one system (the Judgment convention: ``a`` is the
      system, ``b = ''``, verdict None), the score is ``detail['score']``, and an item is
      ``(item_id, a)``. A done judgment without a finite numeric score is counted in ``n_unscored``.
      A score judgment in a ``kind='pairwise'`` list is a DataError (``field='kind'``).

    Judgments are append-only, so when an annotator judged the same item more than once the **last
    one in the list** (the latest correction) is kept; the others are counted in ``n_superseded``.

    >>> from evalsift.oracle import Judgment
    >>> js = [Judgment("i1", "A", "B", "a", "ann1", "human"), Judgment("i1", "B", "A", "a", "ann2", "human")]
    >>> m = judgment_matrix(js)
    >>> m.annotators, m.values          # ann2 saw (B, A) and preferred B: 'b' in the order (A, B)
    (('ann1', 'ann2'), (('a',), ('b',)))
    """
    check_choice("kind", kind, AGREEMENT_KINDS, where="judgment_matrix")
    cells: dict[tuple[str, Any], Any] = {}
    superseded = unscored = used = 0
    ignored: dict[str, int] = {}
    for j in judgments:
        for attr in ("item_id", "a", "b", "annotator", "status", "verdict"):
            if not hasattr(j, attr):
                raise ParameterError(f"judgment_matrix takes Judgment records; got {type(j).__name__} without "
                                     f"{attr!r}", field="judgments")
        if j.status != "done":
            ignored[j.status] = ignored.get(j.status, 0) + 1
            continue
        if kind == "pairwise":
            if j.b == "":
                raise DataError(f"judgment of item {j.item_id!r} by {j.annotator!r} is a score judgment (b=''); "
                                "measure the agreement of scores with kind='score'", field="kind", item_id=j.item_id)
            if j.a == j.b:
                raise DataError(f"judgment of item {j.item_id!r} by {j.annotator!r} compares system {j.a!r} with "
                                "itself; a pairwise judgment needs two different systems", field="b",
                                item_id=j.item_id, system=j.a)
            if j.verdict not in _FLIP:
                raise DataError(f"judgment of item {j.item_id!r} by {j.annotator!r} is done but its verdict is "
                                f"{j.verdict!r}, not one of: a, b, tie", field="verdict", item_id=j.item_id)
            first, second = sorted((str(j.a), str(j.b)))
            key: Any = (str(j.item_id), (first, second))
            value: Any = j.verdict if str(j.a) == first else _FLIP[j.verdict]
        else:
            value = _score_of(getattr(j, "detail", {}))
            if value is None:
                unscored += 1
                continue
            key = (str(j.item_id), str(j.a))
        cell = (str(j.annotator), key)
        if cell in cells:
            superseded += 1
            del cells[cell]       # re-insert so the kept judgment keeps its place in the record order
        cells[cell] = value
        used += 1
    annotators = tuple(sorted({c[0] for c in cells}))
    items = tuple(sorted({c[1] for c in cells}))
    row = {a: i for i, a in enumerate(annotators)}
    col = {k: i for i, k in enumerate(items)}
    grid: list[list[Any]] = [[None] * len(items) for _ in annotators]
    for (ann, key), value in cells.items():
        grid[row[ann]][col[key]] = value
    return JudgmentMatrix(kind, annotators, items, tuple(tuple(r) for r in grid), used - superseded, superseded,
                          dict(sorted(ignored.items())), unscored)


def _percent_agreement(columns: list[list[Any]]) -> float:
    """Mean over items of the share of rater pairs on the item giving the same value, in percent."""
    shares = []
    for vals in columns:
        pairs = list(combinations(vals, 2))
        shares.append(sum(u == v for u, v in pairs) / len(pairs))
    return 100.0 * float(np.mean(shares)) if shares else NAN


def _integer_scale(values: Iterable[float]) -> list[int] | None:
    """``range(min, max + 1)`` when every score is a whole number (a rating scale), else None."""
    vals = list(values)
    if not vals or any(v != round(v) for v in vals):
        return None
    lo, hi = int(min(vals)), int(max(vals))
    return list(range(lo, hi + 1))


#: a scale of at most this many whole-number points (1-5, 1-7, 0-10) is a rating scale whose points are also
#: categories; scores on a finer scale (0-100) or with fractions are continuous
RATING_SCALE_POINTS = 11


def scores_are_categorical(values: Iterable[float], scale: Sequence[float] | None = None) -> bool:
    """True when scores can also be read as categories: every score a whole number on a scale of at most
    :data:`RATING_SCALE_POINTS` points -- ``scale`` (low, high) when given (a project's), else the span of the
    scores themselves. Then exact matches and nominal statistics (percent agreement, Fleiss' kappa) mean
    something; on a continuous scale two people seldom give the same number, however close they are.

    >>> scores_are_categorical([1, 2, 5], (1, 5)), scores_are_categorical([70, 71], (0, 100))
    (True, False)
    >>> scores_are_categorical([70, 71]), scores_are_categorical([2.5, 3])     # no scale: the scores' own span
    (True, False)
    """
    vals = list(values)
    if not vals or any(v != round(v) for v in vals):
        return False
    lo, hi = (min(vals), max(vals)) if scale is None else (min(float(scale[0]), min(vals)),
                                                           max(float(scale[1]), max(vals)))
    return lo == round(lo) and hi == round(hi) and hi - lo + 1 <= RATING_SCALE_POINTS


def _mean_abs_difference(columns: list[list[float]]) -> float:
    """Mean over items of the mean ``|u - v|`` over the pairs of scores given to the item (each item weighs
    the same, as in percent agreement), in the scores' unit."""
    diffs = [float(np.mean([abs(u - v) for u, v in combinations(vals, 2)])) for vals in columns]
    return float(np.mean(diffs)) if diffs else NAN


def agreement_from_judgments(judgments: Iterable[Any], kind: str = "pairwise",
                             scale: Sequence[float] | None = None) -> dict[str, Any]:
    """Agreement among the annotators of a list of judgments, as a JSON-ready dict.

    Each statistic is reported at the level of measurement the data has, and ``levels`` names it
    (statistic -> 'nominal' or 'interval ...'). Verdicts are nominal. Scores are interval data; on a
    rating scale (``scale`` -- the project's (low, high), else the scores' own span -- of at most
    :data:`RATING_SCALE_POINTS` whole-number points, :func:`scores_are_categorical`: ``scores`` is
    'categorical') their points are also categories, so the nominal statistics are reported too. On a
    continuous scale (0-100, fractions: ``scores`` is 'continuous') exact matches mean nothing: percent
    agreement and Fleiss' kappa are NaN (with a note), left out of ``levels``, and ``mean_abs_diff`` says
    how far apart people are.

    The judgments become an annotators x items matrix by :func:`judgment_matrix` (status 'done'
    only; pairwise verdicts in the canonical system order; the latest judgment of an annotator on an
    item wins). Reported:

    - ``n_annotators``, ``n_items`` (judged by anyone), ``n_items_multi`` (judged by >= 2
      annotators), ``percent_agreement``: over the items with >= 2 annotators, the share of
      annotator pairs that gave the same value, averaged over items, in percent (for scores: the
      same number; NaN for continuous scores).
    - ``cohen``: Cohen's kappa for every pair of annotators sharing at least 2 items (``pairs``) and
      their ``mean`` over the pairs where it is defined. Pairwise verdicts are nominal ('a', 'b',
      'tie'). Scores use quadratic weights over the integer scale ``min..max`` (so the weight is the
      squared score difference), and only when every score is a whole number; per pair also ``pearson``.
    - ``fleiss``: Fleiss' kappa over the items with >= 2 annotators when they all have the same
      number of annotators (NaN with a note otherwise). Scores are nominal categories here, so only
      categorical scores get one (NaN with a note for continuous scores).
    - ``krippendorff``: alpha over all items, 'nominal' for verdicts and 'interval' for scores.
    - scores only: ``mean_abs_diff`` (``value``: over the items with >= 2 annotators, the mean absolute
      difference of the scores given to an item, over its pairs of annotators, averaged over items, in
      score units; ``scale_width`` high - low when ``scale`` is given), ``scores`` ('categorical' or
      'continuous') and ``scale``.

    Too little overlap gives NaN with a ``note`` (on the statistic and a summary in ``note``), never
    an exception.

    >>> from evalsift.oracle import Judgment
    >>> js = [Judgment(f"i{k}", "A", "B", v, ann, "human")
    ...       for ann, verdicts in {"x": "aabb", "y": "aabb"}.items() for k, v in enumerate(verdicts)]
    >>> r = agreement_from_judgments(js)
    >>> r["cohen"]["mean"], r["fleiss"]["kappa"], r["n_items_multi"], r["percent_agreement"]
    (1.0, 1.0, 4, 100.0)
    """
    check_choice("kind", kind, AGREEMENT_KINDS, where="agreement_from_judgments")
    if scale is not None:
        try:
            ok = len(scale) == 2 and math.isfinite(float(scale[0])) and float(scale[0]) < float(scale[1]) < math.inf
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ParameterError(f"agreement_from_judgments: scale must be (low, high) with low < high, got {scale!r}",
                                 field="scale")
    m = judgment_matrix(judgments, kind)
    arr = m.array()
    n_ann, n_items = arr.shape
    rated = np.array([[v is not None for v in r] for r in arr], dtype=bool).reshape(arr.shape)
    multi = rated.sum(axis=0) >= 2
    notes: list[str] = []
    scored = [v for v in arr.ravel() if v is not None] if kind == "score" else []
    categorical = kind == "pairwise" or scores_are_categorical(scored, scale)
    points = _integer_scale(scored) if kind == "score" else None  # Cohen's quadratic weights need whole numbers

    # Cohen, every pair of annotators with >= 2 shared items
    pairs = []
    for i, j in combinations(range(n_ann), 2):
        shared = rated[i] & rated[j]
        if shared.sum() < 2:
            continue
        x, y = list(arr[i, shared]), list(arr[j, shared])
        entry: dict[str, Any] = {"annotators": [m.annotators[i], m.annotators[j]], "n_items": int(shared.sum())}
        if kind == "pairwise":
            k = cohen_kappa(x, y, labels=["a", "tie", "b"])
            entry.update(kappa=_round(k.kappa), agreement=_round(k.observed_agreement), note=k.note)
        else:
            xs, ys = np.array(x, dtype=float), np.array(y, dtype=float)
            if points is None:
                entry.update(kappa=NAN, note="scores are not whole numbers: Cohen's kappa needs a rating scale")
            else:
                k = cohen_kappa([int(v) for v in xs], [int(v) for v in ys], labels=points, weights="quadratic")
                entry.update(kappa=_round(k.kappa), note=k.note)
            entry["agreement"] = _round(float(np.mean(xs == ys)))
            entry["pearson"] = (_round(float(np.corrcoef(xs, ys)[0, 1]))
                                if xs.std() > 0 and ys.std() > 0 else NAN)
        pairs.append(entry)
    finite = [p["kappa"] for p in pairs if math.isfinite(p["kappa"])]
    cohen: dict[str, Any] = {"mean": _round(float(np.mean(finite))) if finite else NAN, "n_pairs": len(pairs),
                             "n_pairs_defined": len(finite), "weights": "quadratic" if kind == "score" else None,
                             "pairs": pairs, "note": None}
    if not pairs:
        cohen["note"] = "no two annotators share 2 or more items"
    elif not finite:
        cohen["note"] = "kappa is undefined for every pair of annotators (see the pairs' notes)"

    # Fleiss over the items with >= 2 annotators
    if not multi.any():
        fleiss: dict[str, Any] = {"kappa": NAN, "n_items": 0, "n_raters": 0, "note": "no item has 2 or more annotators"}
    elif not categorical:
        fleiss = {"kappa": NAN, "n_items": int(multi.sum()), "n_raters": 0,
                  "note": "not computed: Fleiss' kappa is nominal (each score a category), and these scores are on a "
                          "continuous scale, where two people seldom give the same number; see Krippendorff's alpha "
                          "(interval) and the mean absolute difference"}
    else:
        fr = fleiss_kappa(arr[:, multi].T, form="labels")
        fleiss = {"kappa": _round(fr.kappa), "n_items": fr.n_items, "n_raters": fr.n_raters, "note": fr.note}

    # Krippendorff over everything
    level = "nominal" if kind == "pairwise" else "interval"
    if n_items == 0:
        alpha = AlphaResult(NAN, level, 0, 0, 0, 0, "no judgments with status 'done'")
    else:
        alpha = krippendorff_alpha(arr, level)
    kripp = {"alpha": _round(alpha.alpha), "level": level, "n_items": alpha.n_items, "n_values": alpha.n_values,
             "note": alpha.note}

    cols = [[v for v in arr[:, c] if v is not None] for c in np.nonzero(multi)[0]]
    percent = _round(_percent_agreement(cols)) if categorical else NAN
    levels = {"percent_agreement": "nominal: exact match", "cohen": "nominal", "fleiss": "nominal",
              "krippendorff": level}
    extra: dict[str, Any] = {}
    if kind == "score":
        width = None if scale is None else float(scale[1]) - float(scale[0])
        extra = {"scores": "categorical" if categorical else "continuous",
                 "scale": None if scale is None else [float(scale[0]), float(scale[1])],
                 "mean_abs_diff": {"value": _round(_mean_abs_difference(cols)), "n_items": len(cols),
                                   "scale_width": width, "level": "interval",
                                   "note": None if cols else "no item has 2 or more annotators"}}
        levels.update(cohen="interval: quadratic weights", mean_abs_diff="interval")
        if not categorical:
            del levels["percent_agreement"], levels["fleiss"]
    if n_items == 0:
        notes.append("no judgments with status 'done'")
    elif not multi.any():
        notes.append("no item was judged by 2 or more annotators, so there is no agreement to measure")
    else:
        if not categorical:
            notes.append("continuous scores: exact-match statistics (percent agreement, Fleiss' kappa) are not shown; "
                         "the interval-level ones are")
        notes += [f"{name}: {part['note']}" for name, part in (("Cohen", cohen), ("Fleiss", fleiss),
                                                               ("Krippendorff", kripp))
                  if part["note"] and (categorical or name != "Fleiss")]
    return {
        "kind": kind,
        "n_judgments_used": m.n_used,
        "n_superseded": m.n_superseded,
        "n_ignored": m.n_ignored,
        "n_unscored": m.n_unscored,
        "n_annotators": n_ann,
        "annotators": list(m.annotators),
        "n_items": n_items,
        "n_items_multi": int(multi.sum()),
        "percent_agreement": percent,
        "cohen": cohen,
        "fleiss": fleiss,
        "krippendorff": kripp,
        **extra,
        "levels": levels,
        "note": "; ".join(notes) or None,
    }
