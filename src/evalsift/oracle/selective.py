"""A selective judge with a guarantee: answer only where the judge's confidence is high enough that its
agreement with people is guaranteed, hand the rest on (to the next judge, or to people).

This is the fixed-sequence calibration of **Trust or Escalate** (Jung, Brahman & Choi, ICLR 2025, Sec. 3:
"selective evaluation" with a provable guarantee of human agreement; Sec. 3.2 the cascade), method name
``fixed-sequence``. Given human-labelled calibration items, each with the judge's verdict and a
confidence in [0, 1]:

1. the candidate thresholds are the distinct confidences seen on the calibration items, from the highest
   down (between two of them the set of answered items does not change, so this grid tests exactly what
   the paper's fine grid of 5,000 values tests);
2. a threshold whose answered calibration items number fewer than ``min_items`` (default
   :data:`MIN_ITEMS`, 30, the floor the authors' code puts on its grid) is skipped: too few to test;
3. at each remaining threshold ``t``, with ``n`` calibration items answered (confidence >= ``t``) and ``k``
   of them where the judge disagrees with people, the exact binomial p-value of
   H0: "the judge's disagreement rate on the items it answers exceeds ``1 - agreement``" is
   ``P(Binomial(n, 1 - agreement) <= k)``;
4. thresholds are lowered while ``p <= risk``; the test stops at the first one that fails
   (fixed-sequence testing: no multiplicity correction is needed because the order is fixed in advance).
   The lowest threshold that passed is the judge's; when none passes, the judge answers **nothing**.

The guarantee (Sec. 3.1, Theorem 1): with probability at least ``1 - risk`` over the draw of the
calibration items, P(judge agrees with people | the judge answers) >= ``agreement`` -- on any further items
**exchangeable** with the calibration items (drawn from the same distribution; not chosen after looking).

Differences from the authors' code (``cascaded_evaluation/util.py``), which ``benchmarks/judge/_toe_driver.py``
runs side by side: when the very first threshold fails, their code still answers the items at it (its
most confident group) with no guarantee; here nothing is answered. Their grid steps by 1/5000 below a
passing value; ours steps to the next distinct confidence (the same decisions up to values closer than
that). The p-value is the same test: their Clopper-Pearson upper bound <= ``1 - agreement`` exactly when
``P(Binomial(n, 1 - agreement) <= k) <= risk``.

**Agreement** is counted on the items where people named a winner (the paper leaves human ties out,
``ties="exclude"``): the judge's verdict there is the winner it gives more weight to, and a judge that
calls a tie or splits evenly names no winner (confidence 0, so it never answers). ``ties="count"``
counts every item, a tie being a third verdict (three-way agreement).

**Confidence** comes from what the judges give (:func:`verdict_distribution`): each judgment gives a
distribution over ``a``, ``b``, ``tie`` -- recorded probabilities (``detail["probs"]``), AlpacaEval's
weighted preference (``detail["preference"]``), the two presentation orders of an LLM judge
(``detail["answers"]``) or of SummEval's recorded choices (``detail["order_verdicts"]``) averaged, else
the verdict itself. Several judges on the same items are averaged (the analogue of the paper's
"simulated annotators", Sec. 4.1), a judge without a verdict on an item counting as no weight; the
confidence is the weight of the verdict chosen.

**Cascade** (Sec. 3.2): judges tried in order, each calibrated at the same ``agreement`` and ``risk`` on the
calibration items the judges before it did not answer. Each stage's guarantee is as above; for the cascade
as a whole, agreement >= ``agreement`` holds with probability at least ``1 - stages * risk`` (union bound).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from .base import Judgment
from .votes import combine, orient

#: the method names: the paper's test (the only one so far)
METHODS = ("fixed-sequence",)
#: how human ties count: left out (the paper) or counted as a third verdict
TIES = ("exclude", "count")
#: the fewest answered calibration items a threshold is tested with (the authors' code uses 30)
MIN_ITEMS = 30
#: the level of the coverage interval (Clopper-Pearson)
COVERAGE_LEVEL = 0.95
VERDICTS = ("a", "b", "tie")
_FLIP = {"a": "b", "b": "a", "tie": "tie"}
#: what marks a folder as a selective judge's output (``results.json``'s ``format``)
FORMAT = "evalsift-selective-1"
PAPER = "Trust or Escalate (Jung, Brahman & Choi, ICLR 2025)"


# ---------------------------------------------------------------------------------------- the test
def p_value(disagreements: int, answered: int, agreement: float) -> float:
    """The exact binomial p-value of H0: disagreement rate > ``1 - agreement``, having seen ``disagreements``
    among ``answered`` items: ``P(Binomial(answered, 1 - agreement) <= disagreements)``.

    >>> round(p_value(3, 50, 0.8), 4)    # 3 of 50 wrong is strong evidence of >= 80 % agreement
    0.0057
    >>> p_value(10, 50, 0.8) > 0.5       # 10 of 50 wrong is exactly 80 %: no evidence
    True
    """
    from scipy.stats import binom

    return float(binom.cdf(int(disagreements), int(answered), 1.0 - float(agreement)))


def clopper_pearson(k: int, n: int, level: float = COVERAGE_LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval for a proportion ``k / n`` at ``level``.

    >>> [round(x, 3) for x in clopper_pearson(5, 10)]
    [0.187, 0.813]
    >>> clopper_pearson(0, 0)
    (0.0, 1.0)
    """
    from scipy.stats import binomtest

    if n <= 0:
        return 0.0, 1.0
    ci = binomtest(int(k), int(n)).proportion_ci(level, method="exact")  # scipy's Clopper-Pearson
    return float(ci.low), float(ci.high)


@dataclass
class Step:
    """One threshold tested: how many calibration items it answers, how many of them disagree with
    people, the p-value, and whether it passed (``skipped``: fewer than ``min_items`` answered)."""

    threshold: float
    answered: int
    disagreements: int
    p_value: float | None
    passed: bool
    skipped: bool = False


@dataclass
class Calibration:
    """A calibrated threshold: the judge answers an item when its confidence is >= ``threshold``;
    ``threshold`` None means it answers nothing (no threshold passed the test)."""

    threshold: float | None
    agreement: float
    risk: float
    method: str
    min_items: int
    calibration_items: int
    answered: int  # calibration items answered at the threshold
    disagreements: int
    steps: list[Step] = field(default_factory=list)

    def answers(self, confidence: Sequence[float]) -> np.ndarray:
        """Which of these confidences the judge answers."""
        c = np.asarray(confidence, dtype=float)
        if self.threshold is None:
            return np.zeros(c.shape, dtype=bool)
        return c >= self.threshold - 1e-12

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able record (the steps included)."""
        d = asdict(self)
        d["steps"] = [asdict(s) for s in self.steps]
        return d


def _check_levels(agreement: float, risk: float, min_items: int) -> None:
    if not 0.0 < float(agreement) < 1.0:
        raise ParameterError(f"--agreement {agreement}: give the guaranteed agreement as a share in (0, 1), e.g. 0.8",
                             field="agreement")
    if not 0.0 < float(risk) < 1.0:
        raise ParameterError(f"--risk {risk}: give the chance the guarantee may fail, in (0, 1), e.g. 0.1",
                             field="risk")
    if isinstance(min_items, bool) or int(min_items) < 1:
        raise ParameterError(f"--min-items {min_items}: give a positive number of calibration items",
                             field="min_items")


def calibrate(confidence: Sequence[float], agrees: Sequence[bool], *, agreement: float, risk: float,
              min_items: int = MIN_ITEMS, method: str = "fixed-sequence") -> Calibration:
    """The threshold by fixed-sequence testing (module doc) on calibration items: ``confidence[i]`` the
    judge's confidence on item i, ``agrees[i]`` whether its verdict equals people's.

    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(size=2000)
    >>> agrees = rng.uniform(size=2000) < 0.5 + 0.5 * conf     # more confident, more often right
    >>> cal = calibrate(conf, agrees, agreement=0.85, risk=0.1)
    >>> 0.4 < cal.threshold < 0.9 and cal.disagreements / cal.answered < 0.15
    True
    >>> calibrate(conf, np.zeros(2000, bool), agreement=0.85, risk=0.1).threshold is None
    True
    """
    if method not in METHODS:
        raise ParameterError(f"--method {method!r}: use {', '.join(METHODS)}", field="method")
    _check_levels(agreement, risk, min_items)
    conf = np.asarray(confidence, dtype=float)
    ok = np.asarray(agrees, dtype=bool)
    if conf.shape != ok.shape:
        raise ParameterError("calibrate: confidence and agrees need the same length", field="confidence")
    steps: list[Step] = []
    best: tuple[float, int, int] | None = None
    order = np.argsort(-conf, kind="stable")
    c_sorted, wrong_sorted = conf[order], ~ok[order]
    wrong_cum = np.cumsum(wrong_sorted)
    values = np.unique(np.round(c_sorted, 12))[::-1]
    for t in values:
        n = int(np.searchsorted(-c_sorted, -t + 1e-12, side="right"))  # items with confidence >= t
        k = int(wrong_cum[n - 1]) if n else 0
        if n < min_items:
            steps.append(Step(float(t), n, k, None, False, skipped=True))
            continue
        p = p_value(k, n, agreement)
        passed = p <= risk
        steps.append(Step(float(t), n, k, p, passed))
        if not passed:
            break
        best = (float(t), n, k)
    if best is None:
        return Calibration(None, float(agreement), float(risk), method, int(min_items), int(conf.size), 0, 0, steps)
    return Calibration(best[0], float(agreement), float(risk), method, int(min_items), int(conf.size), best[1],
                       best[2], steps)


def calibrate_cascade(confidences: Sequence[Sequence[float]], agrees: Sequence[Sequence[bool]], *, agreement: float,
                      risk: float, min_items: int = MIN_ITEMS, method: str = "fixed-sequence") -> list[Calibration]:
    """One :class:`Calibration` per judge of a cascade (in order), each on the calibration items the judges
    before it left unanswered (module doc)."""
    left = np.ones(len(confidences[0]), dtype=bool)
    out = []
    for conf, ok in zip(confidences, agrees):
        conf, ok = np.asarray(conf, float), np.asarray(ok, bool)
        cal = calibrate(conf[left], ok[left], agreement=agreement, risk=risk, min_items=min_items, method=method)
        out.append(cal)
        left &= ~cal.answers(conf)
    return out


def cascade_stage(confidences: Sequence[Sequence[float]], calibrations: Sequence[Calibration]) -> np.ndarray:
    """Per item, the index of the first judge of the cascade that answers it, -1 where none does."""
    stage = np.full(len(confidences[0]), -1, dtype=int)
    for s, (conf, cal) in enumerate(zip(confidences, calibrations)):
        stage[(stage < 0) & cal.answers(conf)] = s
    return stage


# ---------------------------------------------------------------------------------------- confidence
def _one_hot(v: str | None) -> np.ndarray:
    out = np.zeros(3)
    if v in VERDICTS:
        out[VERDICTS.index(v)] = 1.0
    return out


def verdict_distribution(j: Any) -> np.ndarray | None:
    """The weights ``[a, b, tie]`` one judgment gives (module doc, in the judgment's own orientation): its
    recorded probabilities, AlpacaEval's preference, the mean over its presentation orders, or its verdict;
    None for a judgment without a verdict."""
    if getattr(j, "status", "done") != "done" or j.verdict is None:
        return None
    d = j.detail if isinstance(getattr(j, "detail", None), dict) else {}
    probs = d.get("probs")
    if isinstance(probs, dict):
        w = np.array([float(probs.get(v) or 0.0) for v in VERDICTS])
        if w.sum() > 0 and np.all(w >= 0):
            return w / w.sum()
    pref = d.get("preference")
    if isinstance(pref, (int, float)) and not isinstance(pref, bool):
        if 1.0 <= pref <= 2.0:  # 1: a (the baseline) wins, 2: b wins
            return np.array([2.0 - pref, pref - 1.0, 0.0])
        return _one_hot("tie")
    per_order = None
    if isinstance(d.get("answers"), list):  # an LLM judge: one answer per presentation order
        per_order = [a.get("verdict") for a in d["answers"] if isinstance(a, dict)]
    elif isinstance(d.get("order_verdicts"), dict):  # SummEval's recorded choices, both orders
        per_order = list(d["order_verdicts"].values())
    if per_order:
        hots = [_one_hot(v) for v in per_order if v in VERDICTS]
        if hots:
            return np.mean(hots, axis=0)
    return _one_hot(j.verdict)


def judge_weights(judgments: Iterable[Any], pairs: dict[str, tuple[str, str]]) -> dict[str, np.ndarray]:
    """One judge's weights ``[a, b, tie]`` per item (oriented to ``pairs[item_id]``), the mean over its
    judgments of that item (several samples or orders); items of ``pairs`` only."""
    sums: dict[str, np.ndarray] = {}
    counts: Counter = Counter()
    for j in judgments:
        pair = pairs.get(str(j.item_id))
        if pair is None:
            continue
        w = verdict_distribution(j)
        if w is None:
            continue
        if (j.a, j.b) == (pair[1], pair[0]):
            w = w[[1, 0, 2]]
        elif (j.a, j.b) != pair:
            continue
        iid = str(j.item_id)
        sums[iid] = sums.get(iid, 0) + w
        counts[iid] += 1
    return {iid: s / counts[iid] for iid, s in sums.items()}


def verdict_and_confidence(weights: np.ndarray, ties: str = "exclude") -> tuple[str | None, float]:
    """The verdict the weights give and its confidence (module doc): with ``ties="exclude"`` the winner with
    more weight (none, confidence 0, when a and b weigh the same); with ``"count"`` the heaviest of a / b /
    tie (none when the top is split).

    >>> verdict_and_confidence(np.array([0.5, 0.25, 0.25]))
    ('a', 0.5)
    >>> verdict_and_confidence(np.array([0.0, 0.0, 1.0]))
    (None, 0.0)
    >>> verdict_and_confidence(np.array([0.0, 0.0, 1.0]), "count")
    ('tie', 1.0)
    """
    w = np.asarray(weights, dtype=float)
    cand = w[:2] if ties == "exclude" else w
    top = float(cand.max())
    if top <= 0 or np.sum(np.isclose(cand, top)) > 1:
        return None, 0.0
    return VERDICTS[int(np.argmax(cand))], top


def combined_confidence(judges: Sequence[dict[str, np.ndarray]], ids: Sequence[str],
                        ties: str = "exclude") -> tuple[np.ndarray, np.ndarray]:
    """``(verdicts, confidences)`` over ``ids`` from several judges' weights (:func:`judge_weights`),
    averaged with a judge that has no verdict on an item weighing nothing there."""
    verdicts = np.empty(len(ids), dtype=object)
    conf = np.zeros(len(ids))
    zero = np.zeros(3)
    for k, iid in enumerate(ids):
        w = np.mean([jw.get(iid, zero) for jw in judges], axis=0)
        verdicts[k], conf[k] = verdict_and_confidence(w, ties)
    return verdicts, conf


def human_verdicts(judgments: Iterable[Any]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """People's verdict per item (the vote rule of :mod:`evalsift.oracle.votes` over several people) and
    each item's pair ``(a, b)`` as first recorded."""

    by_item: dict[str, list] = {}
    pairs: dict[str, tuple[str, str]] = {}
    for j in judgments:
        if j.is_score:
            continue
        iid = str(j.item_id)
        pairs.setdefault(iid, (j.a, j.b))
        if {j.a, j.b} == set(pairs[iid]):
            by_item.setdefault(iid, []).append(j)
    out = {}
    for iid, js in by_item.items():
        v = combine(orient(j, *pairs[iid]) for j in js)
        if v is not None:
            out[iid] = v
    return out, pairs


# ---------------------------------------------------------------------------------------- a whole run
def rule_text(ties: str) -> str:
    """How agreement is counted, in words (every output says it)."""
    return ("agreement counted on the items where people named a winner (human ties left out, as Trust or "
            "Escalate does)" if ties == "exclude" else
            "agreement counted on every item, a tie being a third verdict (three-way agreement)")


def guarantee_text(results: dict[str, Any]) -> str:
    """The guarantee a selective run gives, and the assumption it rests on, in one paragraph."""
    stages = results.get("stages") or []
    n = max(1, len(stages))
    prob = 1 - n * results["risk"]
    who = " -> ".join(s["judge"] for s in stages) if stages else "the judge"
    if all(s.get("threshold") is None for s in stages):
        head = (f"guarantee: no threshold passed the test for {who}, so the judge answers nothing and every item "
                "goes to people")
    else:
        head = (f"guarantee: P({'the cascade' if n > 1 else 'the judge'} agrees with people | it answers) >= "
                f"{results['agreement']:g} with probability >= {max(prob, 0):.4g}"
                + (f" (each of the {n} stages at risk {results['risk']:g}, union bound)" if n > 1 else ""))
    return (f"{head}; {rule_text(results['ties'])}; {results['method']} test ({PAPER}) on "
            f"{len(results['calibration_items'])} calibration items. It assumes the calibration items are "
            "exchangeable with the rest (drawn from the same distribution, not picked after looking)")


def split(ids: Sequence[str], calibration_size: int, seed: int) -> tuple[list[str], list[str]]:
    """A random split of ``ids`` into ``calibration_size`` calibration items and the rest (by ``seed``)."""
    ids = list(ids)
    if isinstance(calibration_size, bool) or int(calibration_size) < 1:
        raise ParameterError(f"--calibration-size {calibration_size}: give a positive number of items",
                             field="calibration_size")
    if int(calibration_size) >= len(ids):
        raise DataError(f"--calibration-size {calibration_size}: only {len(ids)} item(s) have a human verdict the "
                        "agreement rule counts; give fewer calibration items so some are left to judge",
                        field="calibration_size")
    perm = np.random.default_rng(int(seed)).permutation(len(ids))
    cal = sorted((ids[k] for k in perm[:int(calibration_size)]), key=_natural)
    rest = sorted((ids[k] for k in perm[int(calibration_size):]), key=_natural)
    return cal, rest


def _natural(iid: str):
    return (0, int(iid), "") if str(iid).isdigit() else (1, 0, str(iid))


def selective_run(human: dict[str, str], pairs: dict[str, tuple[str, str]],
                  stages: Sequence[tuple[str, Sequence[dict[str, np.ndarray]]]], *, calibration: Sequence[str],
                  judged: Sequence[str], agreement: float, risk: float, ties: str = "exclude",
                  min_items: int = MIN_ITEMS, method: str = "fixed-sequence") -> dict[str, Any]:
    """Calibrate a judge (or a cascade: ``stages`` of ``(name, [judge weights, ...])``, in order) on the
    ``calibration`` items (people's verdicts in ``human``) and apply it to the ``judged`` items.

    Returns ``{"kept": [{item_id, a, b, verdict, confidence, judge}], "escalated": [{item_id, a, b}],
    "results": {...}}`` -- ``results`` as ``results.json`` holds it (threshold per stage, coverage with its
    interval on the judged items the rule counts, agreement there where people's verdicts are known)."""
    if ties not in TIES:
        raise ParameterError(f"--ties {ties!r}: use exclude (the paper's) or count", field="ties")
    _check_levels(agreement, risk, min_items)
    counted = (lambda iid: iid in human and (ties == "count" or human[iid] != "tie"))
    cal_ids = [i for i in calibration if counted(i)]
    if not cal_ids:
        raise DataError("no calibration item has a human verdict the agreement rule counts"
                        + (" (every one is a human tie; --ties count counts ties)" if ties == "exclude" else ""),
                        field="calibration")
    cal_h = np.array([human[i] for i in cal_ids], dtype=object)
    judged = list(judged)
    cal_conf, cal_ok, rest_verdict, rest_conf = [], [], [], []
    for _, judges in stages:
        v, c = combined_confidence(judges, cal_ids, ties)
        cal_conf.append(c)
        cal_ok.append(v == cal_h)
        rv, rc = combined_confidence(judges, judged, ties)
        rest_verdict.append(rv)
        rest_conf.append(rc)
    cals = calibrate_cascade(cal_conf, cal_ok, agreement=agreement, risk=risk, min_items=min_items, method=method)
    stage = cascade_stage(rest_conf, cals) if judged else np.zeros(0, int)
    kept, escalated = [], []
    for k, iid in enumerate(judged):
        a, b = pairs[iid]
        s = int(stage[k])
        if s >= 0:
            kept.append({"item_id": iid, "a": a, "b": b, "verdict": rest_verdict[s][k],
                         "confidence": round(float(rest_conf[s][k]), 6), "judge": stages[s][0]})
        else:
            escalated.append({"item_id": iid, "a": a, "b": b})
    answered = {r["item_id"]: r["verdict"] for r in kept}
    rule_ids = [i for i in judged if counted(i)]
    n_rule = len(rule_ids)
    n_ans = sum(i in answered for i in rule_ids)
    n_agree = sum(answered[i] == human[i] for i in rule_ids if i in answered)
    lo, hi = clopper_pearson(n_ans, n_rule)
    results = {
        "format": FORMAT, "method": method, "paper": PAPER, "agreement": float(agreement), "risk": float(risk),
        "ties": ties, "agreement_rule": rule_text(ties), "min_items": int(min_items),
        "threshold": cals[0].threshold if len(cals) == 1 else [c.threshold for c in cals],
        "stages": [{"judge": name, "threshold": c.threshold, "calibration_items": c.calibration_items,
                    "calibration_answered": c.answered, "calibration_disagreements": c.disagreements,
                    "kept": sum(r["judge"] == name for r in kept), "steps": [asdict(x) for x in c.steps]}
                   for (name, _), c in zip(stages, cals)],
        "coverage": {"value": n_ans / n_rule if n_rule else 0.0, "answered": n_ans, "items": n_rule,
                     "interval": [lo, hi], "level": COVERAGE_LEVEL, "interval_method": "Clopper-Pearson",
                     "of": "the judged items the agreement rule counts"},
        "kept": len(kept), "escalated": len(escalated), "judged": len(judged),
        "empirical_agreement": ({"value": n_agree / n_ans, "agree": n_agree, "answered": n_ans,
                                 "note": "on the judged items people also labelled (a check, not the guarantee)"}
                                if n_ans else None),
        "calibration_items": list(calibration),
        "calibration_counted": len(cal_ids),
    }
    results["guarantee"] = guarantee_text(results)
    return {"kept": kept, "escalated": escalated, "results": results}


# ---------------------------------------------------------------------------------------- the output folder
def is_selective_dir(path: str | Path) -> bool:
    """Whether ``path`` is a folder a selective run wrote (its ``results.json`` says so)."""
    p = Path(path)
    f = p / "results.json"
    if not (p.is_dir() and f.is_file()):
        return False
    try:
        return json.loads(f.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def write_dir(out: str | Path, run: dict[str, Any], extra: dict[str, list[dict]] | None = None) -> Path:
    """Write ``kept.jsonl``, ``escalated.jsonl``, ``results.json`` (and ``extra`` JSONL files) into ``out``,
    whole or not at all: into a hidden folder beside it, renamed to ``out`` at the end. An ``out`` that exists
    must be empty or an earlier selective output (replaced); anything else is refused, untouched."""
    import os
    import shutil
    import tempfile

    target = Path(out)
    if target.exists() and not target.is_dir():
        raise DataError(f"--out {out} is a file; give a folder for kept.jsonl, escalated.jsonl and results.json",
                        field="out")
    if target.is_dir() and any(target.iterdir()) and not is_selective_dir(target):
        raise DataError(f"--out {out} holds files that a selective judge did not write; give a new or empty folder",
                        field="out")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        files = {"kept.jsonl": run["kept"], "escalated.jsonl": run["escalated"], **(extra or {})}
        for name, rows in files.items():
            with open(tmp / name, "w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        with open(tmp / "results.json", "w", encoding="utf-8") as fh:
            json.dump(run["results"], fh, indent=2)
            fh.write("\n")
        old = None
        if target.is_dir():
            old = target.with_name(f".{target.name}.{os.getpid()}.old")
            os.rename(target, old)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's folder is private; the output is an ordinary folder
        os.rename(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def read_dir(path: str | Path):
    """A selective output folder as recorded judgments (a :class:`~evalsift.io.pairwise_data.PairwiseData`):
    the judge's verdict on each kept item, people's (from the run's ``people`` source, when it can be read)
    on every other item they judged; the guarantee is issued as a data note. Decision commands read a
    folder through this (``judgments:DIR``, ``arena --data DIR``)."""
    from ..io._common import iter_jsonl, warn_data
    from ..io.pairwise import read_judgments
    from ..io.pairwise_data import PairwiseData
    from ..pool import Pool

    p = Path(path)
    results = json.loads((p / "results.json").read_text(encoding="utf-8"))
    kept = [r for _, r in iter_jsonl(p / "kept.jsonl", what="kept verdicts") if isinstance(r, dict)]
    judged_by = {str(r["item_id"]): r for r in kept}
    people: list[Judgment] = []
    src = results.get("people")
    human_pool = None
    if src:
        try:
            data = read_judgments(src)
        except DataError as e:
            warn_data(f"{p}: people's verdicts ({src}) cannot be read ({e}); only the judge's kept verdicts count")
        else:
            human_pool = data.pool
            people = [j for j in data.judgments if str(j.item_id) not in judged_by and j.kind == "human"]
    judge = [Judgment(item_id=str(r["item_id"]), a=r["a"], b=r["b"], verdict=r["verdict"],
                      annotator=f"selective:{r.get('judge', 'judge')}", kind="llm",
                      detail={"confidence": r.get("confidence"), "source": str(p)}) for r in kept]
    judgments = tuple(judge + people)
    if human_pool is not None:
        pool = human_pool
    else:
        ids = list(dict.fromkeys(j.item_id for j in judgments))
        systems = list(dict.fromkeys(s for j in judgments for s in (j.a, j.b)))
        pool = Pool(item_ids=ids, systems=systems)
    warn_data(f"{p}: the judge's verdicts on {len(judge)} item(s) it answered, people's on "
              f"{len({j.item_id for j in people})} other item(s); {results.get('guarantee', '')}")
    return PairwiseData(pool=pool, judgments=judgments, source=str(p))
