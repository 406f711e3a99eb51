"""Table 3 of Kovatchev & Lease (NAACL 2024) on our data: OOD prediction under both held-out protocols.

    EVALSIFT_DATA=/work/shared/data nice -n 10 python benchmarks/transparency/transparency_ood.py
    python benchmarks/transparency/transparency_ood.py --seeds 3 --cases alpaca-eval        # a quick look

A linear regression predicts every system's score on a target split from its score on a source
split and the similarity vector (SMD per dimension, target vs source)
(:func:`evalsift.transparency.ood.ood_regression`); MAD and R2 of the held-out predictions against
"no change" (target score = source score), as in the paper's Table 3. Protocols:

- ``ours``: leave-one-target-split-out (the default of ``profile``): each split is predicted by a
  regression that saw neither its scores nor its similarity to anything;
- ``paper both``: the paper's (Sec. 5): 5 random source-target pairs held out, 5 repeats, the pairs
  being full data -> each split *and* every ordered pair of splits (``--ood-protocol paper``);
- ``paper full``: the paper's SQuAD setting: only full data -> each split, 1 pair held out (4-5 pairs
  in all here; the paper had 34 and held out 5);
- ``paper topics``: the paper's MNLI setting: every ordered pair of splits, 5 held out.

The paper-protocol rows are the mean over ``--seeds`` seeds (each: the mean of 5 repeats), with the
range over seeds; seed 0 is what ``evalsift profile --ood-protocol paper`` prints.

Data: WMT23 en-de by ``domain`` (4 domains, MQM, 12 systems) and AlpacaEval by ``domain`` (the
instruction's source dataset; 5 sources; the GPT-4-Turbo judge's preference against the baseline, 9
systems). Dimensions as in ``benchmarks/transparency/transparency_tables.py``: all six (length, ngram_perplexity,
learned_difficulty, score_difficulty, irt_difficulty, discriminability) and the label-free three.
Writes ``bench-out/transparency/ood_protocols.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.io import data_root, load
from evalsift.io._common import json_default, plain_json
from evalsift.transparency import mean_score
from evalsift.transparency.ood import ood_regression, split_indices
from evalsift.transparency.report import (
    LABEL_FREE,
    MIN_SPLIT,
    _dimensions,
    _scored_systems,
)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

CASES = {"wmt23/en-de": "mqm", "alpaca-eval": "gpt4_turbo_pref"}
DIMS = ("length", "ngram_perplexity", "learned_difficulty", "score_difficulty", "irt_difficulty", "discriminability")
PROTOCOLS = {"ours": {}, "paper both": {"protocol": "paper", "pairs": "both", "test_pairs": 5},
             "paper full": {"protocol": "paper", "pairs": "full", "test_pairs": 1},
             "paper topics": {"protocol": "paper", "pairs": "topics", "test_pairs": 5}}
KEYS = ("mad", "mad_no_change", "r2", "r2_no_change")


def case(data: str, metric: str, seeds: int) -> dict:
    t0 = time.perf_counter()
    notes: list[str] = []
    pool = _scored_systems(load(data), metric, notes)
    groups = list(pool.metadata["domain"])
    values = _dimensions(pool, metric, DIMS, True, 0, groups)  # as `evalsift profile --topics domain`
    splits = {k: v for k, v in split_indices(groups, min_size=1).items() if v.size >= MIN_SPLIT}
    perf = mean_score(np.asarray(pool.scores[metric], dtype=float), pool.systems)
    out = {"data": data, "metric": metric, "n_items": pool.n_items, "systems": list(pool.systems),
           "splits": {k: int(v.size) for k, v in splits.items()}, "rows": []}
    for dims_name, names in (("all", DIMS), ("label-free", tuple(d for d in DIMS if d in LABEL_FREE))):
        dims = {k: values[k] for k in names}
        for label, opts in PROTOCOLS.items():
            runs = []
            for seed in range(seeds if opts else 1):
                kw = {**opts, "seed": seed, "full": np.arange(pool.n_items)} if opts else {}
                r = ood_regression(splits, perf, dims, **kw)
                runs.append({k: getattr(r, k) for k in KEYS} | {"n_rows": len(r.predictions),
                                                                "importance": r.importance})
            row = {"dimensions": dims_name, "protocol": label, "options": opts, "n_seeds": len(runs),
                   "per_seed": runs}
            for k in KEYS:
                v = np.array([x[k] for x in runs])
                row[k], row[k + "_range"] = float(v.mean()), [float(v.min()), float(v.max())]
            row["importance"] = runs[0]["importance"]  # fitted on all the pairs: the same for every seed
            out["rows"].append(row)
    out["seconds"] = time.perf_counter() - t0
    return out


def show(c: dict) -> None:
    splits = ", ".join(f"{k} {v}" for k, v in c["splits"].items())
    print(f"\n{c['data']} ({c['metric']}): {c['n_items']} items, {len(c['systems'])} systems; splits {splits}; "
          f"{c['seconds']:.0f}s")
    print(f"  {'dims':<11}{'protocol':<14}{'MAD':>8}{'no chg':>8}{'R2':>8}{'no chg':>8}   MAD range over seeds")
    for r in c["rows"]:
        rng = "" if r["n_seeds"] == 1 else f"   {r['mad_range'][0]:.4g}-{r['mad_range'][1]:.4g} ({r['n_seeds']} seeds)"
        print(f"  {r['dimensions']:<11}{r['protocol']:<14}{r['mad']:8.4g}{r['mad_no_change']:8.4g}{r['r2']:8.3f}"
              f"{r['r2_no_change']:8.3f}{rng}")
    for r in c["rows"]:
        if r["protocol"] in ("ours", "paper both"):
            imp = ", ".join(f"{d} {w:+.2f}" for d, w in r["importance"].items())
            print(f"  Table 4 form ({r['dimensions']}, {r['protocol']} pairs): {imp}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the paper's random draws (default 10)")
    ap.add_argument("--out", default="bench-out/transparency")
    args = ap.parse_args(argv)
    if data_root() is None:  # $EVALSIFT_DATA, or the shared/data folder beside the working folder or the checkout
        print("no data folder: set EVALSIFT_DATA to the shared data folder", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res = []
    for data in args.cases.split(","):
        res.append(case(data, CASES[data], args.seeds))
        show(res[-1])
    print()
    write_json(out / "ood_protocols.json", plain_json(res), indent=1, default=json_default)
    return 0


if __name__ == "__main__":
    sys.exit(main())
