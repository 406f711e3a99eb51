"""Ambiguity on ChaosNLI: the paper's definition (held-out items, include_ci) against the earlier form.

    EVALSIFT_DATA=/work/shared/data nice -n 10 python benchmarks/transparency/transparency_ambiguity.py

For ChaosNLI-SNLI (5 runs) and -MNLI-m (3 runs), performance = accuracy of the released runs, the
items stratified in 10 deciles of each variant and re-evaluated against the random band (Table 1's
sigma and % significant; Table 2's rank changes), as ``benchmarks/transparency/transparency_tables.py`` does.
Variants, each from a TF-IDF + SGD logistic classifier trained epoch by epoch on the premise /
hypothesis pairs and the original gold label (:func:`evalsift.transparency.training_dynamics`):

- ``ambiguity``: the paper's (Kovatchev & Lease, App. A): 10 epochs, each item recorded by a model
  that does not train on it (5-fold cross-fitting), ``sqrt(var + var^2 / (E - 1))``;
- ``train_variability``: Swayamdipta et al.'s training-item variability (5 epochs, the items the
  model trains on, plain std) -- evalsift's ``ambiguity`` before this change;
- ``ambiguity (runs)``: the same formula over the released runs' gold probabilities (our extension;
  what ``profile --dims ambiguity`` computes on these pools).

Also the Spearman correlation of each with the crowd's label entropy (100 annotators), a check that
the variant tracks what humans find ambiguous. Writes ``bench-out/transparency/ambiguity.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from evalsift.io import data_root, load
from evalsift.transparency import ambiguity, analyse_all, mean_score, train_variability
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


def run(subset: str, seed: int) -> dict:
    pool = load(f"chaosnli/{subset}")
    texts = list(zip(pool.metadata["premise"], pool.metadata["hypothesis"]))
    gold = list(pool.metadata["gold"])
    counts = np.asarray(pool.metadata["label_count"], dtype=float)
    q = counts / counts.sum(axis=1, keepdims=True)
    entropy = -(np.where(q > 0, q * np.log2(np.where(q > 0, q, 1)), 0)).sum(axis=1)
    variants, secs = {}, {}
    for name, fn in (("ambiguity", lambda: ambiguity(texts=texts, gold=gold, seed=seed)),
                     ("train_variability", lambda: train_variability(texts=texts, gold=gold, seed=seed)),
                     ("ambiguity (runs)", lambda: ambiguity(np.asarray(pool.scores["gold_prob"])))):
        t = time.perf_counter()
        variants[name] = fn()
        secs[name] = time.perf_counter() - t
    perf = mean_score(np.asarray(pool.scores["correct"]), pool.systems, name="accuracy")
    res = analyse_all(variants, perf, seed=seed)
    rows = []
    for name, r in res.items():
        m = r.stratum_perf.mean(axis=1)
        v = variants[name]
        ok = np.isfinite(v)
        rows.append({"variant": name, "sigma_points": 100 * float(np.nanmean(r.sigma)),
                     "pct_significant": float(r.pct_significant), "rank_significant": int(r.n_rank_significant),
                     "first_points": 100 * float(m[0]), "last_points": 100 * float(m[-1]),
                     "rho_entropy": float(spearmanr(v[ok], entropy[ok]).statistic), "seconds": secs[name]})
    return {"data": f"chaosnli/{subset}", "n_items": pool.n_items, "runs": list(pool.systems), "seed": seed,
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subsets", default="snli,mnli_m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench-out/transparency")
    args = ap.parse_args(argv)
    if data_root() is None:  # $EVALSIFT_DATA, or the shared/data folder beside the working folder or the checkout
        print("no data folder: set EVALSIFT_DATA to the shared data folder", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res = []
    for subset in args.subsets.split(","):
        r = run(subset, args.seed)
        res.append(r)
        print(f"\n{r['data']}: {r['n_items']} items, {len(r['runs'])} runs")
        print(f"  {'variant':<19}{'sigma':>7}{'% sig':>7}{'rank':>6}{'low->high':>14}{'rho(entropy)':>14}{'secs':>6}")
        for x in r["rows"]:
            print(f"  {x['variant']:<19}{x['sigma_points']:7.1f}{x['pct_significant']:7.0f}{x['rank_significant']:4d}/10"
                  f"{x['first_points']:7.1f}->{x['last_points']:<5.1f}{x['rho_entropy']:14.3f}{x['seconds']:6.1f}")
    print()
    write_json(out / "ambiguity.json", res, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
