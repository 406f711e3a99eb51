"""Source-based selection on real data: an artificial crowd and a distilled estimator (Zouhar et al. 2025, Sec. 4).

Both answer "which items should I have judged before my systems have produced outputs?". Every
number below comes from ``evalsift.bench.subset_bench`` (80% item subsamples, one per seed; random's
targets from seeds disjoint from the evaluated ones; Kendall tau-b and cluster count;
"needed to match" by the first-crossing rule and the stays-above rule, 1.0 = random, lower = better).

**(a) Artificial crowd** (WMT23 en-de with MetricX-23-refA vs MQM; SummEval with chrF against the 11
references vs relevance, coherence, consistency and fluency). Per seed, a seeded half of the systems
is the *crowd*; the utility of ``metric_var``, ``metric_avg`` or ``diversity`` is computed from the
crowd's outputs only, and the ordering it gives is judged on the *other* half (its human means on the
prefix against those on the whole subsample). On the same split and seed, two references:

- ``own_<base>``: the same utility from the evaluated systems' own outputs (the output-based selector
  that the crowd stands in for: what you would do if the outputs already existed);
- ``crowd_random``: a random ordering judged on the same evaluated systems.

subset_bench normalises by ``random`` judged on *all* systems; the table re-normalises crowd and own
methods by ``crowd_random`` (ratio of means, same seeds, same systems), which is the fair baseline.
``utility_agreement`` is Spearman's rho between crowd and own utilities on the full pool, per seed.
The plain ``<base>`` rows (all systems, judged on all systems) are context, not comparable one to one.

**(b) Distilled** (WMT23 en-de). Documents (metadata ``doc``) are split in two seeded halves;
``Distilled(target=<base>)``, a ridge regression from input embeddings (MiniLM by default) to the
target's utility computed with MetricX on the training half, predicts utilities for the other half
from its sources alone. Reported, over splits x both directions:

- Spearman's rho between predicted and true (output-based) utilities on the held-out half, next to a
  trivial source-only predictor (input length in characters) and the ridge's training R^2
  (``--spearman-encoders tfidf`` adds the same table for other encoders);
- needed to match on the held-out half (subset_bench on it) for ``distilled_<base>``, the
  output-based ``<base>`` it imitates, random, and ``source_length`` (longest inputs first, the
  trivial source-only baseline); ``gap_closed`` = (1 - distilled) / (1 - base):
  the share of the output-based selector's gain over random that the distilled one keeps (left out,
  "-", where the output-based selector itself needs more than 0.9 of random).

Cross-dataset (domain shift, reported as found): train on all of SummEval (chrF-ref utilities; CNN/DM
articles of 600-3200 characters as inputs) and apply to WMT23 en-de (social, news, speech and review
paragraphs of 8-2000 characters, MetricX utilities), and the reverse.

Budgets count items, not words: an ordering that puts long inputs first (``source_length``, and
anything that learns length) judges more text per item than random does.

    EVALSIFT_CACHE=/tmp/es-cache python benchmarks/select/source_selection.py [--seeds 20] [--splits 5] \
        [--bench-seeds 10] [--encoder minilm] [--spearman-encoders tfidf] [--out bench-out/source_selection.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.io import load  # noqa: E402
from evalsift.metrics import reference_metrics  # noqa: E402
from evalsift.pool import Pool  # noqa: E402
from evalsift.select import build_selector, selector  # noqa: E402
from evalsift.select.source import ArtificialCrowd, Distilled  # noqa: E402
from evalsift.select.utility import UtilitySelector  # noqa: E402
from evalsift.bench.subset import subset_bench  # noqa: E402
from evalsift.stats import spearman, standard_error  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

WMT = "wmt23/mt-metrics-eval-v2/wmt23/en-de"
WMT_METRIC = "MetricX-23-refA"
WMT_HUMAN = ("mqm",)
SUMMEVAL = "summeval/summeval.json"
SUMMEVAL_METRIC = "chrF-ref"
SUMMEVAL_HUMAN = ("relevance", "coherence", "consistency", "fluency")
BASES = ("metric_var", "metric_avg", "diversity")
NTM_KEYS = ("needed_to_match", "needed_to_match_stays")
STATS = ("correlation", "clusters")
MIN_GAIN = 0.1  # gap_closed is reported only where the output-based selector needs <= 0.9 of random


# ------------------------------------------------------------------------------------------------
# Presets registered in this process only
# ------------------------------------------------------------------------------------------------


class CrowdSelector(ArtificialCrowd):
    """ArtificialCrowd that takes ``metric`` as its own parameter, so subset_bench's shared metric
    reaches it (``artificial_crowd`` itself takes it inside ``params``, which shared settings miss)."""

    def __init__(self, *, base: str = "metric_var", metric: str | None = None, fraction: float = 0.5,
                 seed: int = 0) -> None:
        super().__init__(base=base, fraction=fraction, seed=seed)
        self.metric = metric

    def _utilities(self, pool: Pool) -> np.ndarray:
        self.params = {"metric": self.metric} if self.metric else {}
        return super()._utilities(pool)


class OwnOutputs(CrowdSelector):
    """The same split as the crowd, but the utility from the evaluated systems' own outputs."""

    def _utilities(self, pool: Pool) -> np.ndarray:
        super()._utilities(pool)  # sets crowd_ and evaluated_systems_ exactly as the crowd does
        own = pool.with_systems(list(self.evaluated_systems_))
        return build_selector(self.base, self.seed, {"metric": self.metric}).fit(own).utilities_


class SourceLength(UtilitySelector):
    """A trivial source-only baseline: longest inputs first (characters)."""

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed

    def _utilities(self, pool: Pool) -> np.ndarray:
        return _input_length(pool)


class CrowdRandom(CrowdSelector):
    """A random ordering judged on the crowd split's evaluated systems."""

    def _utilities(self, pool: Pool) -> np.ndarray:
        super()._utilities(pool)
        return np.random.default_rng([self.seed, 7]).random(pool.n_items)


_FRACTION = {"value": 0.5}
_DISTILL = {"train": None, "metric": None}  # the training pool of the distilled presets, set per run


def _preset(cls, **fixed):
    return lambda **kw: cls(**{**fixed, "fraction": _FRACTION["value"], **kw})


def _distilled(target: str):
    return lambda **kw: Distilled(**{"target": target, "train": _DISTILL["train"],
                                     "params": {"metric": _DISTILL["metric"]}, **kw})


def register_presets() -> None:
    selector("source_length", help="longest inputs first (source-only baseline)")(SourceLength)
    selector("crowd_random", help="random order judged on the crowd split's other systems")(
        _preset(CrowdRandom, base="metric_avg"))
    for b in BASES:
        selector(f"crowd_{b}", help=f"{b} from a crowd, judged on the others")(_preset(CrowdSelector, base=b))
        selector(f"own_{b}", help=f"{b} from the judged systems' own outputs")(_preset(OwnOutputs, base=b))
        selector(f"distilled_{b}", help=f"{b} predicted from inputs")(_distilled(b))


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def _ntm(res: dict, methods) -> dict:
    return {k: {m: res[k][m] for m in methods} for k in NTM_KEYS}


def _renormalised(res: dict, methods, base: str) -> dict:
    """Needed to match divided by ``base``'s (ratio of means over the same seeds)."""
    out = {}
    for k in NTM_KEYS:
        out[k] = {}
        for m in methods:
            row = {}
            for s in STATS:
                d = res[k][base][s]
                row[s] = res[k][m][s] / d
                row[f"{s}_se"] = res[k][m][f"{s}_se"] / d
            out[k][m] = row
    return out


def _mean_se(values) -> dict:
    v = np.asarray(values, float)
    return {"mean": float(np.nanmean(v)), "se": standard_error(v), "n": int(np.count_nonzero(~np.isnan(v)))}


def _true_utilities(pool: Pool, target: str, metric: str) -> np.ndarray:
    return build_selector(target, 0, {"metric": metric}).fit(pool).utilities_


def _input_length(pool: Pool) -> np.ndarray:
    return np.array([len(t or "") for t in pool.inputs], float)


def _doc_split(pool: Pool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    docs = np.asarray([str(d) for d in pool.metadata["doc"]])
    uniq = np.unique(docs)
    half = set(np.random.default_rng(seed).permutation(uniq)[: len(uniq) // 2])
    in_a = np.array([d in half for d in docs])
    return np.flatnonzero(in_a), np.flatnonzero(~in_a)


# ------------------------------------------------------------------------------------------------
# (a) artificial crowd
# ------------------------------------------------------------------------------------------------


def crowd_agreement(pool: Pool, metric: str, seeds: int, fraction: float) -> dict:
    """Spearman between crowd utilities and the evaluated systems' own, on the full pool, per seed."""
    out = {}
    for b in BASES:
        rhos = []
        for seed in range(seeds):
            crowd = CrowdSelector(base=b, metric=metric, fraction=fraction, seed=seed).fit(pool)
            own = OwnOutputs(base=b, metric=metric, fraction=fraction, seed=seed).fit(pool)
            rhos.append(spearman(crowd.utilities_, own.utilities_))
        out[b] = _mean_se(rhos)
    return out


def run_crowd(pool: Pool, human: str, metric: str, args) -> dict:
    methods = ["random", "crowd_random", *[f"{p}_{b}" for b in BASES for p in ("crowd", "own")], *BASES]
    res = subset_bench(pool, human, methods, metric=metric, seeds=args.seeds, correlation=args.correlation,
                       encoder=args.encoder, quiet=args.quiet)
    crowd_side = ["crowd_random", *[f"{p}_{b}" for b in BASES for p in ("crowd", "own")]]
    return {"n_items": res["n_items"], "n_systems": res["n_systems"], "seeds": res["seeds"],
            "crowd_size": int(round(args.fraction * res["n_systems"])),
            "vs_random_all_systems": _ntm(res, methods),
            "vs_crowd_random": _renormalised(res, crowd_side, "crowd_random"),
            "censored_targets": res["censored_targets"], "timing_s": res["timing_s"]}


# ------------------------------------------------------------------------------------------------
# (b) distilled
# ------------------------------------------------------------------------------------------------


def distilled_fit(train: Pool, test: Pool, train_metric: str, test_metrics, encoder) -> dict:
    """Per target: Spearman(pred, true) on ``test`` for each test metric, and the training R^2."""
    out = {}
    length = _input_length(test)
    for t in BASES:
        d = Distilled(target=t, train=train, params={"metric": train_metric}, encoder=encoder).fit(test)
        row = {"train_r2": d.train_fit_}
        for m in test_metrics:
            true = _true_utilities(test, t, m)
            row[f"rho_{m}"] = spearman(d.utilities_, true)
            row[f"rho_length_{m}"] = spearman(length, true)
        out[t] = row
    return out


def distilled_bench(train: Pool, train_metric: str, test: Pool, human: str, test_metric: str, args) -> dict:
    _DISTILL.update(train=train, metric=train_metric)
    methods = ["random", *BASES, *[f"distilled_{b}" for b in BASES], "source_length"]
    res = subset_bench(test, human, methods, metric=test_metric, seeds=args.bench_seeds,
                       correlation=args.correlation, encoder=args.encoder, quiet=args.quiet)
    return {"n_items": res["n_items"], **_ntm(res, methods), "timing_s": res["timing_s"]["total"]}


def _aggregate_bench(runs: list[dict]) -> dict:
    out = {}
    for k in NTM_KEYS:
        out[k] = {}
        for m in runs[0][k]:
            out[k][m] = {s: _mean_se([r[k][m][s] for r in runs]) for s in STATS}
        for b in BASES:
            out[k][f"gap_closed_{b}"] = {s: _gap(out[k][f"distilled_{b}"][s]["mean"], out[k][b][s]["mean"])
                                         for s in STATS}
    return out


def _gap(distilled: float, base: float) -> float | None:
    """Share of the output-based selector's gain over random that the distilled one keeps; None when
    the output-based selector gains less than ``MIN_GAIN`` itself (the ratio would be noise)."""
    return None if 1.0 - base < MIN_GAIN else float((1.0 - distilled) / (1.0 - base))


def run_distilled_within(wmt: Pool, args) -> dict:
    fits, benches = [], []
    for split in range(args.splits):
        a, b = _doc_split(wmt, split)
        for direction, (tr, te) in (("A->B", (a, b)), ("B->A", (b, a))):
            train, test = wmt.subset(tr), wmt.subset(te)
            fits.append({"split": split, "direction": direction, "n_train": len(tr), "n_test": len(te),
                         **distilled_fit(train, test, WMT_METRIC, [WMT_METRIC], args.encoder)})
            bench = distilled_bench(train, WMT_METRIC, test, "mqm", WMT_METRIC, args)
            benches.append({"split": split, "direction": direction, **bench})
    extra = {enc: _aggregate_fits(_extra_fits(wmt, args, enc)) for enc in args.spearman_encoders}
    return {"spearman": _aggregate_fits(fits), "spearman_other_encoders": extra,
            "needed_to_match": _aggregate_bench(benches), "fits": fits, "runs": benches}


def _extra_fits(wmt: Pool, args, encoder: str) -> list[dict]:
    fits = []
    for split in range(args.splits):
        a, b = _doc_split(wmt, split)
        for tr, te in ((a, b), (b, a)):
            fits.append(distilled_fit(wmt.subset(tr), wmt.subset(te), WMT_METRIC, [WMT_METRIC], encoder))
    return fits


def _aggregate_fits(fits: list[dict]) -> dict:
    return {t: {k: _mean_se([f[t][k] for f in fits]) for k in fits[0][t]} for t in BASES}


def run_distilled_cross(wmt: Pool, summeval: Pool, args) -> dict:
    out = {}
    cases = (("summeval->wmt23", summeval, SUMMEVAL_METRIC, wmt, "mqm", WMT_METRIC, [WMT_METRIC, "chrF-refA"]),
             ("wmt23->summeval", wmt, WMT_METRIC, summeval, "relevance", SUMMEVAL_METRIC, [SUMMEVAL_METRIC]))
    for name, train, tm, test, human, metric, test_metrics in cases:
        fit = distilled_fit(train, test, tm, test_metrics, args.encoder)
        out[name] = {"train_metric": tm, "test_metric": metric, "human": human, "spearman": fit,
                     **distilled_bench(train, tm, test, human, metric, args)}
    return out


# ------------------------------------------------------------------------------------------------
# Printing
# ------------------------------------------------------------------------------------------------


def _cell(row: dict, s: str) -> str:
    v, se = row[s], row[f"{s}_se"]
    return f"{v:5.2f}±{se:4.2f}"


def print_crowd(name: str, r: dict) -> None:
    print(f"\n(a) {name}: {r['n_items']} items, {r['n_systems']} systems, crowd {r['crowd_size']}, {r['seeds']} seeds;"
          " needed to match / crowd_random (lower = better)")
    print(f"  {'method':18} {'corr first':>11} {'clus first':>11} {'corr stays':>11} {'clus stays':>11}")
    ren = r["vs_crowd_random"]
    for m in ren["needed_to_match"]:
        cells = [_cell(ren[k][m], s) for k in NTM_KEYS for s in STATS]
        print(f"  {m:18} " + " ".join(f"{c:>11}" for c in cells))
    allsys = r["vs_random_all_systems"]
    for m in BASES:
        cells = [_cell(allsys[k][m], s) for k in NTM_KEYS for s in STATS]
        print(f"  {m + ' (all sys)':18} " + " ".join(f"{c:>11}" for c in cells))
    agree = ", ".join(f"{b} {v['mean']:.2f}±{v['se']:.2f}" for b, v in r["utility_agreement"].items())
    print(f"  crowd vs own utilities, Spearman: {agree}")


def _agg_cell(d: dict) -> str:
    return f"{d['mean']:5.2f}±{d['se']:4.2f}"


def print_distilled(r: dict) -> None:
    print("\n(b) distilled, WMT23 en-de, document halves (splits x 2 directions):")
    print(f"  {'target':11} {'rho(pred,true)':>15} {'rho(length,true)':>17} {'train R2':>10}")
    for t, row in r["spearman"].items():
        print(f"  {t:11} {_agg_cell(row['rho_' + WMT_METRIC]):>15} {_agg_cell(row['rho_length_' + WMT_METRIC]):>17}"
              f" {row['train_r2']['mean']:10.2f}")
    for enc, sp in r["spearman_other_encoders"].items():
        print(f"  encoder {enc}: rho(pred,true) " + ", ".join(
            f"{t} {_agg_cell(row['rho_' + WMT_METRIC])} (R2 {row['train_r2']['mean']:.2f})" for t, row in sp.items()))
    print("  needed to match on the held-out half (/ random; mean±se over runs):")
    print(f"  {'method':20} {'corr first':>11} {'clus first':>11} {'corr stays':>11} {'clus stays':>11}")
    ntm = r["needed_to_match"]
    for m in ["random", *BASES, *[f"distilled_{b}" for b in BASES], "source_length"]:
        cells = [_agg_cell(ntm[k][m][s]) for k in NTM_KEYS for s in STATS]
        print(f"  {m:20} " + " ".join(f"{c:>11}" for c in cells))
    for b in BASES:
        g = [ntm[k][f"gap_closed_{b}"][s] for k in NTM_KEYS for s in STATS]
        print(f"  {'gap closed ' + b:20} " + " ".join(f"{'-' if x is None else f'{x:.2f}':>11}" for x in g))


def print_cross(r: dict) -> None:
    for name, c in r.items():
        print(f"\n(b') cross-dataset {name} (train {c['train_metric']}; test {c['test_metric']} vs {c['human']}):")
        for t, row in c["spearman"].items():
            rhos = ", ".join(f"{k[4:]} {v:.2f}" for k, v in row.items() if k.startswith("rho_"))
            print(f"  {t:11} train R2 {row['train_r2']:.2f}; Spearman {rhos}")
        for m in ["random", *BASES, *[f"distilled_{b}" for b in BASES], "source_length"]:
            cells = [_cell(c[k][m], s) for k in NTM_KEYS for s in STATS]
            print(f"  {m:20} " + " ".join(f"{x:>11}" for x in cells))


# ------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=os.environ.get("EVALSIFT_DATA") or str(REPO.parent / "shared" / "data"))
    ap.add_argument("--seeds", type=int, default=20, help="subsample (and crowd) seeds for (a)")
    ap.add_argument("--fraction", type=float, default=0.5, help="share of systems in the crowd")
    ap.add_argument("--splits", type=int, default=5, help="document splits for (b); each used in both directions")
    ap.add_argument("--bench-seeds", type=int, default=10, help="subsample seeds per held-out subset_bench run")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--spearman-encoders", nargs="*", default=[],
                    help="more encoders for the (b) Spearman table only (e.g. tfidf; not cached, slower)")
    ap.add_argument("--correlation", default="kendall", choices=("kendall", "spearman"))
    ap.add_argument("--skip-cross", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--out", default="bench-out/source_selection.json")
    args = ap.parse_args()
    _FRACTION["value"] = args.fraction
    register_presets()

    t0 = time.perf_counter()
    root = Path(args.data_root)
    wmt = load(str(root / WMT)).with_name("wmt23-en-de")
    summeval = reference_metrics(load(str(root / SUMMEVAL)), ["chrF"], progress=False).with_name("summeval")

    crowd = {}
    for pool, humans, metric in ((wmt, WMT_HUMAN, WMT_METRIC), (summeval, SUMMEVAL_HUMAN, SUMMEVAL_METRIC)):
        agreement = crowd_agreement(pool, metric, args.seeds, args.fraction)
        for h in humans:
            key = f"{pool.name}/{h} ({metric})"
            crowd[key] = {**run_crowd(pool, h, metric, args), "utility_agreement": agreement}
            print_crowd(key, crowd[key])

    within = run_distilled_within(wmt, args)
    print_distilled(within)
    cross = {} if args.skip_cross else run_distilled_cross(wmt, summeval, args)
    if cross:
        print_cross(cross)

    res = {"settings": {k: v for k, v in vars(args).items() if k != "quiet"},
           "protocol": "evalsift.bench.subset_bench: 80% subsamples, Kendall tau-b / cluster count, needed to match "
                       "(first crossing and stays-above rules; 1.0 = random)",
           "artificial_crowd": crowd, "distilled_within_wmt23": within, "distilled_cross": cross,
           "total_s": round(time.perf_counter() - t0, 1)}
    print()
    write_json(args.out, res, seconds=res["total_s"])


if __name__ == "__main__":
    main()
