"""Several annotators' categorical verdicts on the same items, combined into one verdict per item.

Three rules (:data:`RULES`), each giving per item a posterior verdict and its probabilities over the label
space, and per annotator a competence:

- ``majority`` (written here): each item's share of votes per label; the verdict is the label with the most
  votes. A shared top count is broken without looking at the order of the rows, by ``ties``:
  ``"tie"`` returns :data:`TIE` (for pairwise verdicts a split is a tie, evalsift's vote rule), ``"draw"``
  draws one of the tied labels from a generator seeded by ``seed`` and the item (the same on every run and
  in any row order). An annotator's competence is their agreement with the majority verdict of the *other*
  annotators on the items where those others have a strict majority (leave-one-out, so a lone annotator
  does not vouch for themselves).
- ``dawid-skene``: Dawid & Skene (1979)'s model, each annotator a full confusion matrix
  ``P(label | true class)`` and the classes a prior, fitted by EM from the majority start
  (crowd-kit's :class:`crowdkit.aggregation.DawidSkene`). Competence: the model's accuracy of the annotator,
  ``sum_k prior_k P(k | k)``.
- ``mace``: Hovy et al. (2013)'s MACE, each annotator knowing the answer with probability theta and otherwise
  answering from a spam distribution, fitted by variational Bayes with restarts (crowd-kit's
  :class:`crowdkit.aggregation.MACE`, ``random_state=seed``). Competence: theta.

crowd-kit is the ``quality`` extra (``pip install 'evalsift[quality]'``), imported only when a competence model
is asked for. Before fitting, items, annotators and labels are recoded to integer codes in sorted order and the
rows sorted, so the fit does not depend on the order the rows came in; this also guards crowd-kit 1.4's MACE,
which indexes its parameters by first-seen order but sums its strategy counts in sorted order (a mismatch that
silently permutes annotators whenever the two differ).

Each annotator's latest label of an item counts (a later row supersedes an earlier one, as evalsift's vote rule
does). Competence models need the same person across items: an annotator name that stands for a position
("annotator 3 of each item") is not a person, and the model's competence of it means little.

>>> rows = [("i1", "p", "x"), ("i1", "q", "x"), ("i1", "r", "y"), ("i2", "p", "y"), ("i2", "q", "x")]
>>> r = aggregate(rows, "majority", ties="tie")
>>> r.verdict["i1"], r.verdict["i2"]
('x', 'tie')
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from ..errors import DataError, ParameterError, missing_dependency

RULES = ("majority", "dawid-skene", "mace")
#: the verdict of a majority split under ``ties="tie"``
TIE = "tie"
TIE_RULES = ("tie", "draw")
EXTRA = "quality"


@dataclass(frozen=True)
class Annotator:
    """One annotator's standing: ``labels`` given, ``competence`` (see the module doc for each rule; NaN where
    it cannot be measured) and, for ``dawid-skene``, the ``confusion`` matrix (rows: the true class, columns:
    the label given, in the result's label order)."""

    name: str
    labels: int
    competence: float
    confusion: list[list[float]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "labels": self.labels, "competence": _num(self.competence),
                "confusion": self.confusion}


@dataclass(frozen=True)
class CrowdResult:
    """What :func:`aggregate` returns: the ``rule``, the sorted ``label_space``, per item (in sorted order of
    ``items``) the ``verdict`` and ``proba`` (over ``label_space``), and per annotator an :class:`Annotator`."""

    rule: str
    label_space: tuple
    items: tuple
    verdict: dict
    proba: dict
    annotators: dict
    ties: str = "tie"
    seed: int = 0
    notes: tuple = field(default_factory=tuple)

    def describe(self) -> str:
        """One line naming the rule and how it decides (what the commands print)."""
        if self.rule == "majority":
            how = ("a split top is a tie" if self.ties == "tie" else
                   f"a split top is drawn among the tied labels, seed {self.seed}")
            return f"aggregate: majority (plurality over annotators; {how})"
        name = "Dawid-Skene (crowd-kit DawidSkene, EM)" if self.rule == "dawid-skene" else \
            f"MACE (crowd-kit MACE, variational Bayes, seed {self.seed})"
        return f"aggregate: {name} over {len(self.annotators)} annotators, {len(self.items)} items"

    def competence_line(self, limit: int = 12) -> str:
        """``annotator competence (what it is): NAME C (n labels), ...``, most competent first."""
        rows = sorted(self.annotators.values(), key=lambda a: (-_key(a.competence), a.name))
        what = {"majority": "agreement with the other annotators' majority", "dawid-skene": "Dawid-Skene accuracy",
                "mace": "MACE theta, the chance of knowing the answer"}[self.rule]
        parts = [f"{a.name} {_fmt(a.competence)} ({a.labels} labels)" for a in rows[:limit]]
        more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
        return f"annotator competence ({what}): {', '.join(parts)}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "label_space": list(self.label_space), "ties": self.ties, "seed": self.seed,
                "annotators": [a.to_dict() for a in self.annotators.values()], "items": len(self.items),
                "notes": list(self.notes)}


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _key(x: float) -> float:
    return float(x) if np.isfinite(x) else -1.0


def _fmt(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:.3f}"


def _sort_key(x: Any) -> tuple:
    return (type(x).__name__, x) if not isinstance(x, tuple) else ("tuple", tuple(map(str, x)))


def _latest(rows: Iterable[Sequence]) -> dict[tuple, Any]:
    """(item, annotator) -> the last label given."""
    out: dict[tuple, Any] = {}
    for row in rows:
        if len(row) != 3:
            raise ParameterError(f"aggregate: each row is (item, annotator, label), got {tuple(row)!r}", field="rows")
        item, who, label = row
        if label is None:
            continue
        out.pop((item, who), None)  # a later label supersedes (and moves to the end)
        out[(item, who)] = label
    return out


def _item_rng(seed: int, code: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(code)])


def _crowdkit(name: str):
    try:
        from crowdkit import aggregation
    except ImportError:
        raise missing_dependency("crowdkit", "quality", f"--aggregate {name}") from None
    return aggregation


def aggregate(rows: Iterable[Sequence[Hashable]], rule: str = "majority", *, seed: int = 0, ties: str = "draw",
              n_iter: int = 100, mace_restarts: int = 10) -> CrowdResult:
    """Combine ``(item, annotator, label)`` rows by ``rule`` (``majority``, ``dawid-skene`` or ``mace``; see the
    module doc). ``ties``: how a majority split (and an exactly tied posterior) is decided, ``"tie"`` (the
    verdict :data:`TIE`) or ``"draw"`` (seeded by ``seed`` and the item's sorted position). Items, annotators
    and labels may be any sortable values; the result does not depend on the order of the rows.

    >>> rows = [(i, w, "x" if (w != "spam" and i % 4) or (w == "spam" and i % 2) else "y")
    ...         for i in range(40) for w in ("p", "q", "spam")]
    >>> r = aggregate(rows, "majority")
    >>> r.annotators["p"].competence > r.annotators["spam"].competence
    True
    """
    if rule not in RULES:
        raise ParameterError(f"--aggregate {rule!r}: use one of {', '.join(RULES)}", field="aggregate")
    if ties not in TIE_RULES:
        raise ParameterError(f"ties {ties!r}: use tie or draw", field="ties")
    latest = _latest(rows)
    if not latest:
        raise DataError("aggregate: no labels to combine", field="label")
    items = tuple(sorted({k[0] for k in latest}, key=_sort_key))
    workers = tuple(sorted({k[1] for k in latest}, key=_sort_key))
    labels = tuple(sorted(set(latest.values()), key=_sort_key))
    ic = {x: i for i, x in enumerate(items)}
    wc = {x: i for i, x in enumerate(workers)}
    lc = {x: i for i, x in enumerate(labels)}
    coded = np.array(sorted((ic[i], wc[w], lc[v]) for (i, w), v in latest.items()), dtype=np.int64).reshape(-1, 3)
    n_items, n_workers, n_labels = len(items), len(workers), len(labels)
    counts = np.zeros((n_items, n_labels))
    np.add.at(counts, (coded[:, 0], coded[:, 2]), 1.0)
    notes: list[str] = []
    if rule == "majority":
        proba = counts / counts.sum(axis=1, keepdims=True)
        comp = _leave_one_out(coded, counts, n_workers)
        confusion = [None] * n_workers
    else:
        if n_workers < 2:
            raise DataError(f"--aggregate {rule}: the verdicts name one annotator ({workers[0]!r}); a competence "
                            "model weighs several annotators against each other", field="annotator")
        if rule == "dawid-skene":
            proba, comp, confusion = _dawid_skene(coded, n_items, n_workers, n_labels, n_iter)
        else:
            proba, comp = _mace(coded, n_items, n_workers, n_labels, seed, mace_restarts, n_iter)
            confusion = [None] * n_workers
    verdict, prob = {}, {}
    for i, item in enumerate(items):
        p = proba[i]
        top = np.flatnonzero(np.isclose(p, p.max(), rtol=0, atol=1e-12))
        if len(top) == 1:
            v = labels[int(top[0])]
        elif ties == "tie":
            v = TIE
        else:
            v = labels[int(top[_item_rng(seed, i).integers(len(top))])]
        verdict[item] = v
        prob[item] = p.copy()
    per_worker = np.bincount(coded[:, 1], minlength=n_workers)
    annotators = {w: Annotator(name=str(w), labels=int(per_worker[k]), competence=float(comp[k]),
                               confusion=confusion[k]) for k, w in enumerate(workers)}
    return CrowdResult(rule=rule, label_space=labels, items=items, verdict=verdict, proba=prob,
                       annotators=annotators, ties=ties, seed=int(seed), notes=tuple(notes))


def _leave_one_out(coded: np.ndarray, counts: np.ndarray, n_workers: int) -> np.ndarray:
    """Per annotator: the share of their labels equal to the others' strict majority (NaN without any)."""
    hit = np.zeros(n_workers)
    seen = np.zeros(n_workers)
    for i, w, v in coded:
        others = counts[i].copy()
        others[v] -= 1
        if others.sum() == 0:
            continue
        top = np.flatnonzero(others == others.max())
        if len(top) != 1:
            continue
        seen[w] += 1
        hit[w] += float(top[0] == v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(seen > 0, hit / np.maximum(seen, 1), np.nan)


@contextmanager
def _quiet_pandas():
    """crowd-kit 1.4 calls pandas with keywords pandas 3 deprecates (inplace=, copy=): those warnings are
    crowd-kit's, not the data's, so they are not shown."""
    with warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
            warnings.simplefilter("ignore", category)
        yield


def _frame(coded: np.ndarray):
    import pandas as pd

    return pd.DataFrame({"task": coded[:, 0], "worker": coded[:, 1], "label": coded[:, 2]})


def _dawid_skene(coded, n_items, n_workers, n_labels, n_iter):
    agg = _crowdkit("dawid-skene")
    with _quiet_pandas():
        ds = agg.DawidSkene(n_iter=n_iter).fit(_frame(coded))
    probas = ds.probas_.reindex(index=range(n_items), columns=range(n_labels)).fillna(0.0).to_numpy(dtype=float)
    prior = ds.priors_.reindex(range(n_labels)).fillna(0.0).to_numpy(dtype=float)
    errors = ds.errors_  # index (worker, label given), columns: true class
    comp = np.full(n_workers, np.nan)
    confusion: list = [None] * n_workers
    for w in range(n_workers):
        try:
            m = errors.xs(w, level="worker").reindex(index=range(n_labels), columns=range(n_labels)).fillna(0.0)
        except KeyError:
            continue
        cm = m.to_numpy(dtype=float).T  # rows: true class, columns: label given
        confusion[w] = [[float(x) for x in row] for row in cm]
        comp[w] = float(np.sum(prior * np.diag(cm)))
    return probas, comp, confusion


def _mace(coded, n_items, n_workers, n_labels, seed, restarts, n_iter):
    agg = _crowdkit("mace")
    frame = _frame(coded)  # rows sorted by (item, annotator) in sorted-name codes: the same for any input order
    # crowd-kit 1.4's MACE indexes theta by first-seen worker/label order but sums its strategy counts grouped
    # (sorted) by worker and label: recode both so that first-seen order is the sorted order of the codes
    w_first = _first_seen(frame["worker"].to_numpy())  # old codes in first-seen order
    l_first = _first_seen(frame["label"].to_numpy())
    w_new = np.empty(n_workers, dtype=np.int64)
    w_new[w_first] = np.arange(n_workers)
    l_new = np.empty(n_labels, dtype=np.int64)
    l_new[l_first] = np.arange(n_labels)
    frame["worker"] = w_new[frame["worker"].to_numpy()]
    frame["label"] = l_new[frame["label"].to_numpy()]
    with _quiet_pandas():
        m = agg.MACE(n_restarts=restarts, n_iter=n_iter, random_state=int(seed)).fit(frame)
    probas_new = m.probas_.reindex(index=range(n_items), columns=range(n_labels)).fillna(0.0).to_numpy(dtype=float)
    probas = probas_new[:, l_new]  # column of old label k is new column l_new[k]
    theta = np.asarray(m.spamming_, dtype=float)[w_new, 1]  # crowd-kit: column 1 = P(knows the answer)
    return probas, theta


def _first_seen(values: np.ndarray) -> list:
    """The distinct values in the order they are first seen."""
    _, idx = np.unique(values, return_index=True)
    return [int(values[i]) for i in sorted(idx)]
