"""The paper-scale DiffUse sweep on WMT23 en-de: all pairs x 10 seeds x 40 budgets (5..200).

Target: <= 120 s on 2 cores once embeddings are cached. The script first warms the embedding cache
(timed separately), then runs ``evalsift.bench.pairwise_bench`` with ``diffuse`` and ``random`` over
every pair, and prints the sweep time and its ratio to the 120 s target.

For a ratio against a baseline on the same data, it also runs a re-clustering DiffUse (one
``AgglomerativeClustering(n_clusters=N)`` per budget, registered here only) and our fit-once DiffUse
on a seeded sample of pairs, through the same harness, and prints the per-method selection times.

    python benchmarks/select/paper_sweep.py [--data wmt23/en-de] [--metric mqm] [--sample-pairs 6] [--out bench-out/paper_sweep.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("EVALSIFT_DATA", str(REPO.parent / "shared" / "data"))

from evalsift.embed import embed_texts  # noqa: E402
from evalsift.io import load  # noqa: E402
from evalsift.select import DiffUse, selector  # noqa: E402
from evalsift.select.diffuse import pick_representative  # noqa: E402
from evalsift.bench import pairwise_bench  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

BUDGETS = list(range(5, 201, 5))
TARGET_S = 120.0


@selector("diffuse_recluster", help="benchmark baseline: DiffUse re-clustered from scratch for every budget")
class ReclusterDiffUse(DiffUse):
    """DiffUse as a direct implementation would run it: a new Ward clustering per budget."""

    def _select(self, budget: int):
        from sklearn.cluster import AgglomerativeClustering

        labels = AgglomerativeClustering(n_clusters=budget, linkage="ward").fit_predict(self.vectors_)
        items = [pick_representative(self.vectors_, np.flatnonzero(labels == c), "cosine") for c in range(budget)]
        return np.asarray(items), None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="wmt23/en-de")
    ap.add_argument("--metric", default="mqm")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sample-pairs", type=int, default=6)
    ap.add_argument("--out", default="bench-out/paper_sweep.json")
    args = ap.parse_args()

    pool = load(args.data)
    t = time.perf_counter()
    embed_texts([o for s in pool.systems for o in pool.outputs[s] if o is not None])
    warm_s = time.perf_counter() - t

    t = time.perf_counter()
    full = pairwise_bench(pool, args.metric, ["diffuse", "random"], BUDGETS, seeds=args.seeds, quiet=True)
    sweep_s = time.perf_counter() - t

    same = pairwise_bench(pool, args.metric, ["diffuse", "diffuse_recluster"], BUDGETS, seeds=args.seeds,
                          max_pairs=args.sample_pairs, quiet=True)
    sel = same["timing_s"]["select"]
    agree = all(abs(same["curves"]["diffuse"][b]["success"] - same["curves"]["diffuse_recluster"][b]["success"]) < 1e-12
                for b in same["curves"]["diffuse"])
    res = {
        "data": args.data, "oracle_metric": args.metric, "pairs": full["n_pairs"], "seeds": args.seeds,
        "budgets": len(BUDGETS), "embedding_warmup_s": round(warm_s, 2),
        "sweep_s": round(sweep_s, 2), "sweep_select_s": full["timing_s"]["select"],
        "target_s": TARGET_S, "sweep_over_target": round(sweep_s / TARGET_S, 3),
        "baseline_sample": {"pairs": same["n_pairs"], "fit_once_s": sel["diffuse"],
                            "recluster_s": sel["diffuse_recluster"],
                            "speedup": round(sel["diffuse_recluster"] / sel["diffuse"], 1),
                            "same_success_curve": agree},
    }
    print(json.dumps(res, indent=2))
    write_json(args.out, res)


if __name__ == "__main__":
    main()
