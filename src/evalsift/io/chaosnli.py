"""ChaosNLI (Nie, Zhou & Bansal, EMNLP 2020): NLI items with 100 crowd labels each, plus model runs' predictions.

A folder (``$EVALSIFT_DATA/chaosnli/``) with::

    chaosNLI_v1.0/chaosNLI_{snli,mnli_m}.jsonl   {uid, label_counter, majority_label, label_dist, label_count,
                                                  entropy, example{premise, hypothesis, source}, old_label,
                                                  old_labels} per line
    predictions/{SNLI,MNLI}_{dev,test}_{model}_{seed}.json
                                                 JSONL {index, true, pred, conf, logits, probs, uid}

One Pool per subset (dataset names ``chaosnli/snli`` and ``chaosnli/mnli_m``; or
``load("chaosnli:<folder>/chaosNLI_v1.0/chaosNLI_snli.jsonl")``):

- **items**: the ChaosNLI uids that every model run predicts, in the order of the ChaosNLI file (the
  dev and test prediction files of a run are merged; ChaosNLI-SNLI: 1514 items, ChaosNLI-MNLI-m:
  1569 of 1599);
- **systems**: the model runs, ``<model>_<seed>`` from the file names (SNLI: ``bert-base-uncased_0/1``,
  ``roberta-base_0/1/2``; MNLI: ``roberta-base_0/1/2``);
- **inputs**: ``premise + "\\n" + hypothesis`` (a text, so everything that needs text inputs works; its
  whitespace token count is the pair's); the parts are the metadata fields ``premise`` and ``hypothesis``;
- **outputs**: the run's predicted label (``entailment``, ``neutral``, ``contradiction``);
- **scores** (items x runs):

  - ``correct``: 1.0 when the run's ``pred`` equals the gold label ``true`` (the original SNLI/MNLI
    label, which is ChaosNLI's ``old_label``; checked on load), else 0.0. **Flagged human**: it is
    the agreement with a human gold label -- the ground truth an evaluation pays annotators for, and
    the performance column of the transparency analysis (its mean is accuracy).
  - ``gold_prob``: the run's softmax probability of the gold label (``probs[true]``). Not human (a
    model quantity, though it needs the gold label); across runs it gives the ``ambiguity``
    dimension (variability over runs instead of epochs).
  - ``confidence``: the run's top softmax probability (``max(probs)``). Not human; needs no label (a
    label-free proxy of correctness).

- **metadata**: ``premise``, ``hypothesis``, ``gold`` (``e``/``n``/``c``: the original label),
  ``label_count`` (an int array items x 3: the number of the 100 ChaosNLI annotators choosing
  entailment, neutral, contradiction, in that order), ``entropy`` (of those 100 labels, in bits),
  ``majority_label`` (of the 100), ``old_labels`` (the original 5 annotator labels), ``source`` (the
  example's source) and ``split`` (``dev``/``test``: the prediction file the item came from).

The names ``label_count``, ``gold`` and ``gold_prob`` and the ``premise``/``hypothesis`` pair are what
:func:`evalsift.transparency.compute_dimensions` reads from a pool (``counts``, ``gold``, ``gold_probs``,
``texts``), so ``evalsift profile --data chaosnli/snli --metric correct --dims length,noise,ambiguity``
needs no other input. Nothing is cached on disk; a subset loads in about a second.

Label ids of the prediction files: 0 = entailment, 1 = contradiction, 2 = neutral (checked against
``old_label`` for every item: a mismatch is a DataError, since correctness would be wrong).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import iter_jsonl

SUBSETS = {"snli": "SNLI", "mnli_m": "MNLI"}
"""ChaosNLI subset -> the prefix of its prediction files (alphaNLI has no predictions)."""
PRED_LABELS = ("e", "c", "n")
"""Label id of the prediction files (``true``, ``pred``, ``probs`` columns) -> ChaosNLI label."""
COUNT_ORDER = ("e", "n", "c")
"""The columns of ChaosNLI's ``label_count`` / ``label_dist``."""
LABEL_NAMES = {"e": "entailment", "n": "neutral", "c": "contradiction"}

_PRED_FILE = re.compile(r"^(?P<prefix>[A-Za-z]+)_(?P<split>[A-Za-z]+)_(?P<run>.+)$")
_ITEM_EXPECTED = ("one JSON object per line with uid, label_count (3 counts), old_label and "
                  "example {premise, hypothesis}")
_PRED_EXPECTED = "one JSON object per line with uid, true, pred and probs (3 probabilities)"


def chaosnli_subsets(folder: str | Path) -> list[str]:
    """The subsets of a ChaosNLI folder that can be loaded: an item file and at least one prediction file.

    >>> chaosnli_subsets("/nonexistent")
    []
    """
    folder = Path(folder)
    return [s for s, prefix in SUBSETS.items()
            if (folder / "chaosNLI_v1.0" / f"chaosNLI_{s}.jsonl").is_file()
            and any((folder / "predictions").glob(f"{prefix}_*.json"))]


def _subset_of(file: Path) -> str:
    m = re.fullmatch(r"chaosNLI_(.+)\.jsonl", file.name)
    if not m or m.group(1) not in SUBSETS:
        raise DataError(f"{file}: not a ChaosNLI item file with predictions; expected chaosNLI_snli.jsonl or "
                        "chaosNLI_mnli_m.jsonl (alphaNLI has no model predictions), or a ChaosNLI folder with "
                        "subset='snli' / 'mnli_m'.")
    return m.group(1)


def _items(file: Path) -> dict[str, dict[str, Any]]:
    items: dict[str, dict[str, Any]] = {}
    for lineno, r in iter_jsonl(file, expected=_ITEM_EXPECTED):
        where = f"{file}: line {lineno}"
        if not isinstance(r, dict):
            raise DataError(f"{where} holds a {type(r).__name__}; expected {_ITEM_EXPECTED}.")
        missing = [k for k in ("uid", "label_count", "old_label", "example") if k not in r]
        if missing:
            raise DataError(f"{where}: the record has no {', '.join(map(repr, missing))}; expected {_ITEM_EXPECTED}. "
                            "Re-download the file if it was cut.")
        uid = str(r["uid"])
        ex = r["example"]
        if not isinstance(ex, dict) or not all(isinstance(ex.get(k), str) for k in ("premise", "hypothesis")):
            raise DataError(f"{where} (uid {uid!r}): 'example' must be an object with string 'premise' and "
                            "'hypothesis'.", item_id=uid)
        counts = r["label_count"]
        if (not isinstance(counts, list) or len(counts) != 3
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
            raise DataError(f"{where} (uid {uid!r}): 'label_count' is {counts!r}; expected 3 counts >= 0 "
                            "(entailment, neutral, contradiction).", item_id=uid)
        if r["old_label"] not in LABEL_NAMES:
            raise DataError(f"{where} (uid {uid!r}): 'old_label' is {r['old_label']!r}; expected one of "
                            f"{sorted(LABEL_NAMES)}.", item_id=uid)
        if uid in items:
            raise DataError(f"{where}: uid {uid!r} appears a second time; uids must be unique.", item_id=uid)
        items[uid] = r
    return items


def _probs(p: Any) -> list[float] | None:
    if not isinstance(p, list) or len(p) != 3:
        return None
    try:
        v = [float(x) for x in p]
    except (TypeError, ValueError):
        return None
    return v if all(math.isfinite(x) and -1e-6 <= x <= 1 + 1e-6 for x in v) else None


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _run(files: list[Path], items: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int, list[float], str]]:
    """uid -> (true, pred, probs, split) of one run, over its prediction files (ChaosNLI uids only)."""
    out: dict[str, tuple[int, int, list[float], str]] = {}
    where_seen: dict[str, str] = {}
    for file in files:
        split = _PRED_FILE.match(file.stem).group("split")  # type: ignore[union-attr]
        for lineno, p in iter_jsonl(file, what="predictions", expected=_PRED_EXPECTED):
            where = f"{file}: line {lineno}"
            if not isinstance(p, dict) or not {"uid", "true", "pred", "probs"} <= set(p):
                raise DataError(f"{where}: expected {_PRED_EXPECTED}. Re-download the file if it was cut.")
            uid = str(p["uid"])
            if uid not in items:
                continue  # the prediction files cover the whole dev/test set; ChaosNLI is a part of it
            true, pred, probs = p["true"], p["pred"], _probs(p["probs"])
            if true not in (0, 1, 2) or pred not in (0, 1, 2) or isinstance(true, bool) or isinstance(pred, bool):
                raise DataError(f"{where} (uid {uid!r}): 'true' and 'pred' must be label ids 0, 1, 2 "
                                f"(entailment, contradiction, neutral); got {true!r}, {pred!r}.", item_id=uid)
            if probs is None:
                raise DataError(f"{where} (uid {uid!r}): 'probs' is {p['probs']!r}; expected 3 probabilities "
                                "(a softmax over entailment, contradiction, neutral).", item_id=uid)
            if PRED_LABELS[true] != items[uid]["old_label"]:
                raise DataError(f"{where} (uid {uid!r}): gold label {true} ({LABEL_NAMES[PRED_LABELS[true]]}) differs "
                                f"from ChaosNLI's old_label {items[uid]['old_label']!r}; the label ids must be 0 = "
                                "entailment, 1 = contradiction, 2 = neutral.", item_id=uid)
            if uid in out:
                raise DataError(f"{where}: uid {uid!r} is predicted a second time (first in {where_seen[uid]}); "
                                "a run must predict each item once.", item_id=uid)
            out[uid] = (true, pred, probs, split)
            where_seen[uid] = where
    return out


def read_chaosnli(path: str | Path, *, subset: str | None = None, predictions: str | Path | None = None,
                  name: str | None = None) -> Pool:
    """Read one ChaosNLI subset with its model runs into an items x runs Pool (see the module docstring).

    ``path``: the item file ``chaosNLI_<subset>.jsonl`` (the subset is taken from its name), or the
    ChaosNLI folder (holding ``chaosNLI_v1.0/`` and ``predictions/``) with ``subset=`` (``snli`` or
    ``mnli_m``). ``predictions``: the folder of prediction files (default: ``predictions/`` beside
    ``chaosNLI_v1.0/``). Malformed files raise DataError naming the file, line and fix.

    >>> pool = read_chaosnli("data/chaosnli", subset="snli")        # doctest: +SKIP
    >>> pool.n_items, pool.systems[:2], pool.metadata["label_count"].shape   # doctest: +SKIP
    (1514, ('bert-base-uncased_0', 'bert-base-uncased_1'), (1514, 3))
    """
    path = Path(path)
    if path.is_dir():
        if subset is None:
            raise DataError(f"{path}: a ChaosNLI folder; say which subset with subset='snli' or 'mnli_m' "
                            "(or give the chaosNLI_<subset>.jsonl file).")
        if subset not in SUBSETS:
            raise DataError(f"{path}: unknown ChaosNLI subset {subset!r}; the subsets with predictions are "
                            f"{', '.join(SUBSETS)}.")
        base = path / "chaosNLI_v1.0" if (path / "chaosNLI_v1.0").is_dir() else path
        file = base / f"chaosNLI_{subset}.jsonl"
    else:
        file = path
        found = _subset_of(file)
        if subset is not None and subset != found:
            raise DataError(f"{file}: the file is subset {found!r}, but subset={subset!r} was given.")
        subset = found
    pred_dir = Path(predictions) if predictions is not None else file.parent.parent / "predictions"
    prefix = SUBSETS[subset]
    files = sorted(pred_dir.glob(f"{prefix}_*.json")) if pred_dir.is_dir() else []
    if not files:
        raise DataError(f"{pred_dir}: no prediction files {prefix}_<split>_<model>_<seed>.json for ChaosNLI-{subset}; "
                        "put them in predictions/ beside chaosNLI_v1.0/ or pass predictions=<folder>.")
    items = _items(file)
    by_run: dict[str, list[Path]] = {}
    for f in files:
        m = _PRED_FILE.match(f.stem)
        if not m or m.group("prefix") != prefix:
            raise DataError(f"{f}: cannot read the run from the file name; expected "
                            f"{prefix}_<split>_<model>_<seed>.json (e.g. {prefix}_dev_roberta-base_0.json).")
        by_run.setdefault(m.group("run"), []).append(f)
    runs = {r: _run(fs, items) for r, fs in sorted(by_run.items())}
    uids = [u for u in items if all(u in got for got in runs.values())]
    if not uids:
        raise DataError(f"{pred_dir}: no ChaosNLI-{subset} item is predicted by every run "
                        f"({', '.join(runs)}); check that the prediction files belong to {file.name}.")
    systems = list(runs)
    n, k = len(uids), len(systems)
    correct, gold_prob, confidence = np.empty((n, k)), np.empty((n, k)), np.empty((n, k))
    outputs: dict[str, list[str]] = {}
    for j, s in enumerate(systems):
        got = runs[s]
        rows = [got[u] for u in uids]
        P = np.array([r[2] for r in rows])
        true = np.array([r[0] for r in rows])
        pred = np.array([r[1] for r in rows])
        correct[:, j] = pred == true
        gold_prob[:, j] = P[np.arange(n), true]
        confidence[:, j] = P.max(axis=1)
        outputs[s] = [LABEL_NAMES[PRED_LABELS[r[1]]] for r in rows]
    recs = [items[u] for u in uids]
    first = runs[systems[0]]
    metadata = {
        "premise": [r["example"]["premise"] for r in recs],
        "hypothesis": [r["example"]["hypothesis"] for r in recs],
        "gold": [r["old_label"] for r in recs],
        "label_count": np.array([r["label_count"] for r in recs], dtype=np.int64),
        "entropy": np.array([_number(r.get("entropy")) for r in recs], dtype=float),
        "majority_label": [r.get("majority_label") for r in recs],
        "old_labels": [r.get("old_labels") for r in recs],
        "source": [r["example"].get("source") for r in recs],
        "split": [first[u][3] for u in uids],
    }
    return Pool(
        item_ids=uids, inputs=[f"{r['example']['premise']}\n{r['example']['hypothesis']}" for r in recs],
        systems=systems, outputs=outputs,
        scores={"correct": correct, "gold_prob": gold_prob, "confidence": confidence},
        human_metrics=["correct"], metadata=metadata,
        name=name if name is not None else f"chaosnli/{subset}",
    )
