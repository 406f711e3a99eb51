"""What a judge is worth, measured on the human verdicts that exist (issue 21): ``evalsift judge-report``.

Before the human budget is spent, a cheap judge (an LLM, a recorded judge, an automatic metric) is
compared with whatever human verdicts exist for the same items -- ten or ten thousand -- and every
figure comes with an interval, so a handful of labels shows as a wide one. For each pair of systems
with both verdicts on some items (or one pair) and pooled over pairs:

- **agreement with people**: the share of items where the judge's verdict (a / b / tie) is the
  human's; Cohen's kappa (``sklearn.metrics.cohen_kappa_score`` through
  :func:`evalsift.stats.agreement.cohen_kappa`, labels a, tie, b, unweighted); the agreement on
  *decisive* items only (both the judge and the person chose a side);
- **per-item correlation** of the verdict values (a 1, tie 1/2, b 0), judge vs human: within pairs
  (each pair's Pearson correlation, averaged over pairs weighted by their items) and pooled (one
  correlation over all items of all pairs -- it mixes the between-pair differences in: a judge that
  only knows which system is better *overall* correlates pooled, not within pairs);
- **position bias**: the share of the judge's decisive answers that went to the system shown first,
  over every answer it gave in either order, next to the people's share of *their* decisive
  verdicts on the same items (the items whose order the judge's answers record; when the people's
  verdicts record the order too: a judgment's ``shown_order``, or ``system_a`` shown first as the
  pairwise table says); where the judge saw an item in both orders, the **flip rate** (its verdict
  changed with the order);
- **length bias** (where the data has the outputs): the correlation of the verdict value with
  ``log(len(output_a) / len(output_b))`` (characters), for the judge and for the people, pooled over
  items (both are oriented to ``a``, so pairs pool);
- **the labels a decision needs at risk R** without and with the judge as the anytime rule's control
  variate -- a forecast by simulation (:func:`forecast_labels`), next to the reference ``1 - rho^2``
  (``rho``: the correlation of the proxy's signal with the human verdict; a control variate removes
  at most the share ``rho^2`` of the variance, ``docs/proxy.md``).

**Intervals** (``level``, 95% by default): percentile bootstrap over items, resampled with
replacement within each pair (every pair keeps its number of items), ``resamples`` times; the same
resamples give the pooled and the per-pair intervals. The forecast has its own interval
(:mod:`evalsift.oracle.forecast`, which says how it is simulated).

The report's parts live by job: :mod:`evalsift.oracle.report_data` makes the judge and the people ready
and gathers each pair's labelled items, :mod:`evalsift.oracle.forecast` simulates the labels a decision
needs, and this module computes the figures with their bootstrap intervals (:class:`JudgeReport`).

>>> import numpy as np
>>> from evalsift.pool import Pool
>>> rng = np.random.default_rng(0)
>>> human = rng.normal(size=(60, 2)); judge = human + rng.normal(scale=0.3, size=(60, 2))
>>> pool = Pool(item_ids=range(60), systems=["A", "B"], scores={"h": human, "j": judge}, human_metrics=["h"])
>>> rep = judge_report(pool, "metric:j", "metric:h", draws=20, resamples=200)
>>> r = rep.pooled["agreement"]
>>> bool(0.7 < r["value"] <= 1 and r["low"] < r["value"] <= r["high"])
True
>>> rep.pooled["forecast"]["ratio"]["value"] < 1
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

from ..bench.parallel import run_tasks
from ..errors import DataError, ParameterError
from ..pool import Pool
from ..progress import progress_bar
from ..stats.agreement import cohen_kappa
from .forecast import FORECAST_ASSUMPTION, RUNS_PER_SAMPLE, _forecast_summary, _forecast_task, _pooled_forecast
from .forecast import forecast_labels  # noqa: F401 - public here too (__all__)
from .report_data import ResolvedJudge, _PairData, _pair_data, _resolve_human, resolve_judge

__all__ = ["FORECAST_ASSUMPTION", "INTERVAL_METHOD", "JudgeReport", "forecast_labels", "judge_report", "resolve_judge"]

LABELS = ("a", "tie", "b")
NAN = float("nan")
INTERVAL_METHOD = "percentile bootstrap over items, resampled with replacement within each pair"
_CHUNK = 100  # bootstrap resamples processed at once (memory: chunk x items)


# ---------------------------------------------------------------------------------------- statistics
def _weighted_ratio(W: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    top, bottom = W @ num, W @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def _weighted_corr(W: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of x and y with item weights (one row of W per resample); NaN where either is constant."""
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.all():
        W, x, y = W[:, ok], x[ok], y[ok]
    w = W.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = (W @ x) / w, (W @ y) / w
        vx = (W @ (x * x)) / w - mx * mx
        vy = (W @ (y * y)) / w - my * my
        c = (W @ (x * y)) / w - mx * my
        good = (vx > 1e-12) & (vy > 1e-12)
        return np.where(good, c / np.sqrt(np.where(good, vx * vy, 1.0)), np.nan)


def _kappa(W: np.ndarray, h: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cohen's kappa (unweighted, categories a / tie / b) with item weights; NaN when chance agreement is 1.
    The same formula as ``sklearn.metrics.cohen_kappa_score`` (checked in the tests)."""
    hc, jc = (np.rint(h * 2)).astype(int), (np.rint(j * 2)).astype(int)  # b 0, tie 1, a 2
    cells = np.zeros((len(h), 9))
    cells[np.arange(len(h)), hc * 3 + jc] = 1.0
    C = (W @ cells).reshape(-1, 3, 3)
    n = C.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(C, axis1=1, axis2=2) / n
        pe = (C.sum(axis=2) * C.sum(axis=1)).sum(axis=1) / (n * n)
        return np.where(pe < 1 - 1e-12, (po - pe) / (1 - pe), np.nan)


def _within_corr(W: np.ndarray, x: np.ndarray, y: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each pair's weighted Pearson correlation, averaged over the pairs where it is defined, weighted
    by the pairs' item counts."""
    def seg(v):
        return np.add.reduceat(W * v, starts, axis=1)
    w = seg(np.ones_like(x))
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = seg(x) / w, seg(y) / w
        vx, vy = seg(x * x) / w - mx * mx, seg(y * y) / w - my * my
        c = seg(x * y) / w - mx * my
        good = (vx > 1e-12) & (vy > 1e-12)
        r = np.where(good, c / np.sqrt(np.where(good, vx * vy, 1.0)), 0.0)
        weight = np.where(good, sizes[None, :], 0.0)
        total = weight.sum(axis=1)
        return np.where(total > 0, (r * weight).sum(axis=1) / np.where(total > 0, total, 1.0), np.nan)


@dataclass
class _Items:
    """The labelled items of several pairs, concatenated (pairs contiguous)."""

    h: np.ndarray
    j: np.ndarray
    jf: np.ndarray
    jd: np.ndarray
    hf: np.ndarray
    hd: np.ndarray
    flip: np.ndarray
    loglen: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, pairs: Sequence[_PairData]) -> _Items:
        cat = lambda name: np.concatenate([getattr(p, name) for p in pairs])
        sizes = np.array([len(p.h) for p in pairs])
        return cls(h=cat("h"), j=cat("j"), jf=cat("judge_first"), jd=cat("judge_decisive"), hf=cat("human_first"),
                   hd=cat("human_decisive"), flip=cat("flip"), loglen=cat("log_len"),
                   starts=np.r_[0, np.cumsum(sizes)[:-1]].astype(int), sizes=sizes)


_STATS = ("agreement", "kappa", "decisive_agreement", "correlation_within", "correlation_pooled",
          "judge_first_share", "human_first_share", "flip_rate", "length_judge", "length_human")


def _stats(W: np.ndarray, it: _Items) -> dict[str, np.ndarray]:
    """Every bootstrapped figure for the item weights ``W`` (resamples x items); the observed figures with W = 1."""
    eq = (it.h == it.j).astype(float)
    dec = ((it.h != 0.5) & (it.j != 0.5)).astype(float)
    ones = np.ones_like(it.h)
    both = np.isfinite(it.flip).astype(float)
    return {
        "agreement": _weighted_ratio(W, eq, ones),
        "kappa": _kappa(W, it.h, it.j),
        "decisive_agreement": _weighted_ratio(W, eq * dec, dec),
        "correlation_within": _within_corr(W, it.j, it.h, it.starts, it.sizes),
        "correlation_pooled": _weighted_corr(W, it.j, it.h),
        "judge_first_share": _weighted_ratio(W, it.jf, it.jd),
        "human_first_share": _weighted_ratio(W, it.hf, it.hd),
        "flip_rate": _weighted_ratio(W, np.nan_to_num(it.flip), both),
        "length_judge": _weighted_corr(W, it.j, it.loglen),
        "length_human": _weighted_corr(W, it.h, it.loglen),
    }


def _bootstrap_weights(sizes: np.ndarray, reps: int, rng: np.random.Generator):
    """Chunks of resample weights (resamples x items): each pair's items drawn with replacement, as many as it has."""
    N = int(sizes.sum())
    starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(int)
    done = 0
    while done < reps:
        k = min(_CHUNK, reps - done)
        W = np.zeros((k, N))
        rows = np.arange(k)[:, None]
        for s, n in zip(starts, sizes):
            draw = s + rng.integers(0, n, size=(k, n))
            np.add.at(W, (np.broadcast_to(rows, draw.shape), draw), 1.0)
        yield W
        done += k


def _sk_kappa(h: np.ndarray, j: np.ndarray) -> float:
    """Cohen's kappa of the verdicts (labels a, tie, b) by :func:`evalsift.stats.agreement.cohen_kappa`
    (``sklearn.metrics.cohen_kappa_score``); NaN when both gave every item the same label."""
    def lab(v):
        return [LABELS[2 - round(x * 2)] for x in v]
    return float(cohen_kappa(lab(h), lab(j), labels=list(LABELS)).kappa)


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2 or np.std(x) < 1e-12 or np.std(y) < 1e-12:
        return NAN
    return float(np.corrcoef(x, y)[0, 1])


# ---------------------------------------------------------------------------------------- the report
def _fig(value: float, boot: np.ndarray | None, n: int, level: float) -> dict[str, Any]:
    lo = hi = NAN
    if boot is not None and math.isfinite(value):
        b = boot[np.isfinite(boot)]
        if b.size:
            lo, hi = (float(x) for x in np.percentile(b, [50 * (1 - level), 50 * (1 + level)]))
    return {"value": float(value), "low": lo, "high": hi, "n": int(n)}


@dataclass(frozen=True)
class JudgeReport:
    """What :func:`judge_report` measured: ``pairs`` (one dict per pair), ``pooled`` (the same figures
    over all pairs), the settings and ``notes``. Each figure is ``{"value", "low", "high", "n"}``
    (``n``: the items, or answers, it rests on); NaN where it cannot be computed, with a note."""

    judge: str
    human: str
    data: str
    risk: float
    level: float
    resamples: int
    draws: int
    seed: int
    pairs: tuple[dict[str, Any], ...]
    pooled: dict[str, Any]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN stays NaN; ``print_json`` writes null)."""
        return {"judge": self.judge, "human": self.human, "data": self.data, "risk": self.risk,
                "interval": {"level": self.level, "method": INTERVAL_METHOD, "resamples": self.resamples},
                "forecast_settings": {"draws": self.draws, "seed": self.seed, "rule": "anytime",
                                      "assumption": FORECAST_ASSUMPTION},
                "pooled": self.pooled, "pairs": list(self.pairs), "notes": list(self.notes)}

    def summary(self, max_pairs: int = 15) -> str:
        """A readable report: the pooled figures with intervals, then a table of pairs."""
        P = self.pooled
        pct = f"{self.level:.0%}"
        lines = [f"judge {self.judge} against people ({self.human}) on {self.data}",
                 (f"{P['pairs']} pair(s), {P['items']} item(s) with both verdicts ({P['human_items']} with a human "
                  f"verdict); [intervals]: {pct} {INTERVAL_METHOD} ({self.resamples} resamples)"), ""]

        def f(x, nd=3):
            return "n/a" if x is None or not math.isfinite(x) else f"{x:.{nd}f}"

        def row(label, fig, extra=""):
            return (f"  {label:<24}{f(fig['value']):>7}  [{f(fig['low'])}, {f(fig['high'])}]  n={fig['n']}"
                    + (f"  {extra}" if extra else ""))

        lines.append("agreement with people (verdicts a / b / tie)")
        lines.append(row("raw agreement", P["agreement"]))
        lines.append(row("Cohen's kappa", P["kappa"]))
        lines.append(row("decisive items only", P["decisive_agreement"], "(items where both chose a side)"))
        lines.append("correlation of verdict values (a 1, tie 1/2, b 0), judge vs people")
        if P["pairs"] == 1:  # within the pair and pooled are the same number
            lines.append(row("per item", P["correlation_pooled"]))
        else:
            lines.append(row("within pairs", P["correlation_within"],
                             f"(mean of {P['correlation_pairs']} pairs' correlations, weighted by items)"))
            lines.append(row("pooled", P["correlation_pooled"], "(mixes the differences between pairs in)"))
        lines.append("position bias")
        if P["position"]["available"]:
            lines.append(row("judge: first shown wins", P["judge_first_share"],
                             f"(share of its decisive answers; {P['position']['answers_ab']} answers with a first, "
                             f"{P['position']['answers_ba']} with b first)"))
            if P["position"]["human_available"]:
                lines.append(row("people, same items", P["human_first_share"], "(share of their decisive verdicts)"))
            else:
                lines.append("  people: not available: the human verdicts record no presentation order")
            if P["flip_rate"]["n"]:
                lines.append(row("flip rate", P["flip_rate"], "(items judged in both orders whose verdict changed)"))
            else:
                lines.append("  flip rate: not available: the judge saw each item in one order only")
        else:
            lines.append(f"  not available: {P['position']['why']}")
        lines.append("length bias: correlation of the verdict with log(len(output_a) / len(output_b))")
        if P["length"]["available"]:
            lines.append(row("judge", P["length_judge"]))
            lines.append(row("people", P["length_human"]))
        else:
            lines.append("  not available: the data has no output texts")
        fc = P["forecast"]
        lines.append(f"labels until the anytime rule decides at risk {self.risk} (forecast by simulation, {self.draws} "
                     f"runs per pair in groups of {RUNS_PER_SAMPLE}; [interval]: percentiles over the resamples of "
                     "the labelled items)")
        if fc["pairs"]:
            lines.append(f"  without the judge {fc['without']:.1f}, with it as control {fc['with']:.1f} (summed over "
                         f"{fc['pairs']} pair(s)); ratio {f(fc['ratio']['value'], 2)} [{f(fc['ratio']['low'], 2)}, "
                         f"{f(fc['ratio']['high'], 2)}]; reference 1 - rho^2 = {f(fc['reference'], 2)} "
                         f"(rho {f(fc['rho'], 2)})")
            lines.append(f"  assumes {FORECAST_ASSUMPTION.split('it assumes ', 1)[-1]}")
        else:
            lines.append("  not available: no pair has 2 or more items with both verdicts")
        if len(self.pairs) > 1 or P["pairs"] != 1:
            shown = sorted(self.pairs, key=lambda p: -p["items"])[:max_pairs]
            lines += ["", f"per pair ({len(shown)} of {len(self.pairs)}, most items first; --json has all):",
                      (f"  {'a':<14}{'b':<14}{'items':>6}{'agree':>7}{'kappa':>7}{'corr':>7}{'first':>7}{'flip':>7}"
                       f"{'w/o':>7}{'with':>7}  ratio [interval]")]
            for p in shown:
                fcp = p["forecast"]
                ratio = ("n/a" if fcp is None else
                         f"{f(fcp['ratio']['value'], 2)} [{f(fcp['ratio']['low'], 2)}, {f(fcp['ratio']['high'], 2)}]")
                lines.append(f"  {p['a'][:13]:<14}{p['b'][:13]:<14}{p['items']:>6}{f(p['agreement']['value'], 2):>7}"
                             f"{f(p['kappa']['value'], 2):>7}{f(p['correlation']['value'], 2):>7}"
                             f"{f(p['judge_first_share']['value'], 2):>7}{f(p['flip_rate']['value'], 2):>7}"
                             f"{'n/a' if fcp is None else format(fcp['without'], '.1f'):>7}"
                             f"{'n/a' if fcp is None else format(fcp['with'], '.1f'):>7}  {ratio}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


def _candidate_pairs(pool: Pool, judge: ResolvedJudge, human: Any) -> tuple[list[tuple[str, str]], int]:
    """The pairs both could have verdicts for: the recorded pairs of a judgments oracle (both: those
    in both), else every pair of the pool's systems; and how many recorded pairs name a system the
    data lacks."""
    known = set(pool.systems)

    def recorded(o):
        js = getattr(o, "judgments", None)
        if js is None:
            return None
        seen: dict[frozenset, tuple[str, str]] = {}
        for j in js:
            if j.b and j.a != j.b:
                seen.setdefault(frozenset((j.a, j.b)), (j.a, j.b))
        return seen

    pj, ph = recorded(judge.oracle), recorded(human)
    if pj is not None and ph is not None:
        pairs = [p for k, p in pj.items() if k in ph]
    elif pj is not None or ph is not None:
        pairs = list((pj if pj is not None else ph).values())
    else:
        pairs = list(combinations(pool.systems, 2))
    unknown = sum(1 for a, b in pairs if a not in known or b not in known)
    return [(a, b) for a, b in pairs if a in known and b in known], unknown


def judge_report(pool: Pool, judge_oracle: Any, human_oracle: Any, pairs: Sequence[tuple[str, str]] | None = None,
                 risk: float = 0.1, draws: int = 200, seed: int = 0, *, resamples: int = 1000, level: float = 0.95,
                 judge: Any = None, jobs: int | str | None = 1, quiet: bool | None = None) -> JudgeReport:
    """How well ``judge_oracle`` agrees with ``human_oracle`` on ``pool``, and what it would save as a
    proxy (see the module doc for every figure).

    ``judge_oracle``: a judge spec (``metric:NAME``, ``judgments:SOURCE``, ``llm:MODEL``, each optionally
    after ``judge:``; :func:`resolve_judge`) or an oracle; ``judge``: the oracle already built for an
    ``llm:`` spec (with the command line's options). ``human_oracle``: ``judgments:FILE``,
    ``metric:HUMANMETRIC`` or an oracle. ``pairs``: ``[(a, b), ...]``; None: every pair with items
    judged by both. ``risk``: the forecast's decision risk; ``draws``: simulated pools per pair;
    ``resamples`` and ``level``: the bootstrap intervals; ``seed`` seeds both (each pair's draws by
    the seed and the pair's names, so a pair's forecast is the same alone or among others). ``jobs``:
    worker processes for the forecast (:func:`evalsift.bench.parallel.run_tasks`; the same result on
    any number); ``quiet``: no progress bar.

    Raises DataError when no item has both verdicts or fewer than 2 do, or a system is unknown;
    ParameterError for a judge that is a human metric or a setting out of range.
    """
    if not 0 < risk < 1:
        raise ParameterError(f"risk must be in (0, 1), got {risk}", field="risk")
    if not 0 < level < 1:
        raise ParameterError(f"level must be in (0, 1), got {level}", field="level")
    for name, v in (("draws", draws), ("resamples", resamples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ParameterError(f"{name} must be a positive integer, got {v!r}", field=name)
    jr, pool = resolve_judge(judge_oracle, pool, oracle=judge)
    human, human_name = _resolve_human(human_oracle, pool)
    notes: list[str] = []
    hm = getattr(human, "metric", None)
    if hm is not None and not pool.is_human(hm):
        notes.append(f"the human metric {hm!r} is not flagged human in the data: the report takes it as the people's "
                     "verdicts because --human names it")
    if pairs is None:
        candidates, unknown = _candidate_pairs(pool, jr, human)
        if unknown:
            notes.append(f"{unknown} recorded pair(s) name a system the data {pool.name!r} lacks; left out")
    else:
        candidates = []
        for a, b in pairs:
            pool.system_index(a)  # an unknown system: DataError with a suggestion
            pool.system_index(b)
            if a == b:
                raise ParameterError(f"a pair needs two different systems, got {a!r} twice", field="b", system=a)
            candidates.append((str(a), str(b)))
    data = [d for d in (_pair_data(pool, a, b, jr, human) for a, b in candidates) if d is not None]
    used = [d for d in data if len(d.h)]
    n_human = sum(d.n_human for d in data)
    n_both = sum(len(d.h) for d in used)
    where = (f"{candidates[0][0]} vs {candidates[0][1]}" if len(candidates) == 1 else f"{len(candidates)} pair(s)")
    if n_both == 0:
        if n_human == 0:
            raise DataError(f"no item of {where} has a human verdict from {human_name} (of {sum(d.n_pair for d in data)} "
                            "item(s)); check --human (the recorded file's item ids and system names must match the "
                            "data's)", field="human")
        raise DataError(f"no item of {where} has both a human verdict ({human_name}: {n_human} item(s)) and a verdict "
                        f"of the judge {jr.name}; check that the judge's item ids and system names match the data's",
                        field="judge")
    if n_both < 2:
        raise DataError(f"only {n_both} item of {where} has both a human and a judge verdict; the report needs at "
                        "least 2 human labels on items the judge judged (more for a useful interval)", field="human")
    skipped = len(data) - len(used)
    if skipped and pairs is None:
        notes.append(f"{skipped} pair(s) have no item with both verdicts; left out")
    small = [d for d in used if len(d.h) < 2]
    if small:
        notes.append(f"{len(small)} pair(s) have a single item with both verdicts: in the pooled figures, not "
                     "forecast")

    # the bootstrap over items, within pairs
    it = _Items.of(used)
    observed = _stats(np.ones((1, len(it.h))), it)
    boot_rng = np.random.default_rng([int(seed), 1])
    chunks: list[dict[str, np.ndarray]] = []
    per_pair_chunks: list[list[dict[str, np.ndarray]]] = [[] for _ in used]
    for W in _bootstrap_weights(it.sizes, resamples, boot_rng):
        chunks.append(_stats(W, it))
        for k, d in enumerate(used):
            s, e = it.starts[k], it.starts[k] + it.sizes[k]
            per_pair_chunks[k].append(_stats(W[:, s:e], _Items.of([d])))
    boot = {k: np.concatenate([c[k] for c in chunks]) for k in _STATS}

    kappa_sklearn = _sk_kappa(it.h, it.j)
    dec_n = int(((it.h != 0.5) & (it.j != 0.5)).sum())
    pos_available = any(d.judge_orders for d in used)
    pooled: dict[str, Any] = {
        "pairs": len(used), "items": len(it.h), "human_items": n_human,
        "agreement": _fig(float(observed["agreement"][0]), boot["agreement"], len(it.h), level),
        "kappa": _fig(kappa_sklearn, boot["kappa"], len(it.h), level),
        "decisive_agreement": _fig(float(observed["decisive_agreement"][0]), boot["decisive_agreement"], dec_n, level),
        "correlation_within": _fig(float(observed["correlation_within"][0]), boot["correlation_within"],
                                   len(it.h), level),
        "correlation_pairs": int(sum(1 for d in used if math.isfinite(_corr(d.j, d.h)))),
        "correlation_pooled": _fig(float(observed["correlation_pooled"][0]), boot["correlation_pooled"],
                                   len(it.h), level),
        "correlation_note": ("within pairs: each pair's correlation, averaged weighted by items; pooled: one "
                             "correlation over all items, which mixes the between-pair differences in"),
        "position": {"available": pos_available,
                     "human_available": any(d.human_orders for d in used) and pos_available,
                     "answers_ab": int(sum(d.judge_ab for d in used)), "answers_ba": int(sum(d.judge_ba for d in used)),
                     "why": None if pos_available else (
                         "the judge is a metric (no presentation order)" if getattr(jr.oracle, "kind", None) == "metric"
                         else "the judge's verdicts record no presentation order")},
        "judge_first_share": _fig(float(observed["judge_first_share"][0]), boot["judge_first_share"],
                                  int(it.jd.sum()), level),
        "human_first_share": _fig(float(observed["human_first_share"][0]), boot["human_first_share"],
                                  int(it.hd.sum()), level),
        "flip_rate": _fig(float(observed["flip_rate"][0]), boot["flip_rate"], int(np.isfinite(it.flip).sum()), level),
        "length": {"available": bool(np.isfinite(it.loglen).any()),
                   "items": int(np.isfinite(it.loglen).sum()),
                   "measure": "log(len(output_a) / len(output_b)), characters, pooled over items"},
        "length_judge": _fig(float(observed["length_judge"][0]), boot["length_judge"],
                             int(np.isfinite(it.loglen).sum()), level),
        "length_human": _fig(float(observed["length_human"][0]), boot["length_human"],
                             int(np.isfinite(it.loglen).sum()), level),
    }

    # the forecast: one task per pair (jobs > 1: worker processes; each pair's draws are seeded by its names)
    todo = [k for k, d in enumerate(used) if len(d.h) >= 2]
    slim = ResolvedJudge(name=jr.name, oracle=None, proxy_spec=jr.proxy_spec, metric=jr.metric)
    tasks = [replace(used[k], labelled=used[k].labelled if jr.metric is not None else None) for k in todo]
    shared = {"judge": slim, "risk": float(risk), "draws": int(draws), "seed": int(seed)}
    with progress_bar(len(tasks), f"forecast ({int(draws)} simulated pools per pair)", quiet) as advance:
        sims = dict(zip(todo, run_tasks(_forecast_task, tasks, shared=shared, jobs=jobs, advance=advance)))

    # per pair
    pair_out = []
    fc_all = []
    for k, d in enumerate(used):
        pb = {s: np.concatenate([c[s] for c in per_pair_chunks[k]]) for s in _STATS}
        pobs = _stats(np.ones((1, len(d.h))), _Items.of([d]))
        n = len(d.h)
        rec: dict[str, Any] = {
            "a": d.a, "b": d.b, "items": n, "human_items": d.n_human, "pair_items": d.n_pair, "pool_size": d.pool_size,
            "agreement": _fig(float(pobs["agreement"][0]), pb["agreement"], n, level),
            "kappa": _fig(_sk_kappa(d.h, d.j), pb["kappa"], n, level),
            "decisive_agreement": _fig(float(pobs["decisive_agreement"][0]), pb["decisive_agreement"],
                                       int(((d.h != 0.5) & (d.j != 0.5)).sum()), level),
            "correlation": _fig(float(pobs["correlation_pooled"][0]), pb["correlation_pooled"], n, level),
            "judge_first_share": _fig(float(pobs["judge_first_share"][0]), pb["judge_first_share"],
                                      int(d.judge_decisive.sum()), level),
            "human_first_share": _fig(float(pobs["human_first_share"][0]), pb["human_first_share"],
                                      int(d.human_decisive.sum()), level),
            "flip_rate": _fig(float(pobs["flip_rate"][0]), pb["flip_rate"], int(np.isfinite(d.flip).sum()), level),
            "length_judge": _fig(float(pobs["length_judge"][0]), pb["length_judge"],
                                 int(np.isfinite(d.log_len).sum()), level),
            "length_human": _fig(float(pobs["length_human"][0]), pb["length_human"],
                                 int(np.isfinite(d.log_len).sum()), level),
            "forecast": None,
        }
        if k in sims:
            rho = _corr(d.signal, d.h)
            rec["forecast"] = _forecast_summary(sims[k], level, rho, d.pool_size)
            fc_all.append((sims[k], rho, n))
        pair_out.append(rec)
    pooled["forecast"] = _pooled_forecast(fc_all, level)
    return JudgeReport(judge=jr.name, human=human_name, data=pool.name, risk=float(risk), level=float(level),
                       resamples=int(resamples), draws=int(draws), seed=int(seed), pairs=tuple(pair_out),
                       pooled=pooled, notes=tuple(notes))
