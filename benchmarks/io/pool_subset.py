"""Cost of ``Pool.subset`` against the floor: ``numpy.take`` of the same rows of every score matrix.

A subset has to gather the rows of every score matrix, so ``np.take(a, idx, axis=0)`` over all
metrics is the least any implementation can do; the ratio ``subset / take`` says how much the rest
(ids, inputs, outputs, references, metadata, building the new Pool) adds on top. Both are timed in
the same run on the same positions (random, without repetition), best of several repeats.

Pools: ``alpaca-eval`` and ``wmt23/en-de`` when the real data is present (``$EVALSIFT_DATA``,
default ``../shared/data``), and a synthetic pool of 20,000 items x 20 systems with 5 metrics, long
texts (inputs ~1,000 characters, outputs ~400), two references and three metadata columns.
``+read all``: the subset and then reading every output, reference and metadata column once (views
gather their Python-object columns lazily, on first read, so this is where that cost shows). When
the pool has :meth:`Pool.resample`, its time on as many positions drawn with replacement is
reported too.

    python benchmarks/io/pool_subset.py [--out bench-out/pool_subset.json] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.pool import Pool  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


def best_of(fn, budget_s: float = 0.6, max_repeats: int = 200) -> float:
    """Best wall time in seconds of ``fn()`` over repeats that fit in ~``budget_s`` (at least 3)."""
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget_s and len(times) < max_repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def synthetic_pool(n_items: int = 20_000, n_systems: int = 20, n_metrics: int = 5, seed: int = 0) -> Pool:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"])
    base_in = " ".join(rng.choice(words, 170))  # ~1,000 characters
    base_out = " ".join(rng.choice(words, 70))  # ~400 characters
    systems = [f"sys{j:02d}" for j in range(n_systems)]
    scores = {f"m{k}": rng.normal(size=(n_items, n_systems)) for k in range(n_metrics)}
    scores["m0"][rng.random((n_items, n_systems)) < 0.05] = np.nan
    return Pool(
        item_ids=[f"item{i}" for i in range(n_items)],
        inputs=[f"{i} {base_in}" for i in range(n_items)],
        systems=systems,
        outputs={s: [f"{s} {i} {base_out}" for i in range(n_items)] for s in systems},
        scores=scores,
        human_metrics=["m0"],
        references={"ref": [f"r{i} {base_out}" for i in range(n_items)],
                    "ref2": [None if i % 3 else f"q{i} {base_out}" for i in range(n_items)]},
        metadata={"domain": [f"d{i % 7}" for i in range(n_items)], "doc": [f"doc{i // 10}" for i in range(n_items)],
                  "cost": [float(i % 5) for i in range(n_items)]},
        name=f"synthetic-{n_items}x{n_systems}",
    )


def pools(quick: bool) -> list[tuple[Pool, float]]:
    """(pool, seconds to build it) for every pool measured."""
    out = []
    root = Path(os.environ.get("EVALSIFT_DATA") or REPO.parent / "shared" / "data")
    os.environ.setdefault("EVALSIFT_DATA", str(root))
    from evalsift.io import load
    for name in ("alpaca-eval", "wmt23/en-de"):
        try:
            t0 = time.perf_counter()
            p = load(name)
            out.append((p, time.perf_counter() - t0))
        except Exception as e:  # noqa: BLE001 - the data is optional
            print(f"skipping {name}: {type(e).__name__}: {e}")
    t0 = time.perf_counter()
    p = synthetic_pool(2_000 if quick else 20_000)
    out.append((p, time.perf_counter() - t0))
    return out


def read_everything(pool: Pool) -> None:
    """Read every output, reference and column (a lazy view gathers them here)."""
    for part in (pool.outputs, pool.references, pool.metadata):
        for col in part.values():
            len(col)


def measure(pool: Pool, sizes: list[int], seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    mats = list(pool.scores.values())
    rows = []
    for k in sizes:
        idx = rng.choice(pool.n_items, size=k, replace=False)
        t_take = best_of(lambda idx=idx: [np.take(a, idx, axis=0) for a in mats])
        t_ours = best_of(lambda idx=idx: pool.subset(idx))
        t_all = best_of(lambda idx=idx: read_everything(pool.subset(idx)))
        row = {"k": int(k), "subset_ms": t_ours * 1e3, "take_ms": t_take * 1e3, "ratio": t_ours / t_take,
               "subset_read_all_ms": t_all * 1e3}
        if hasattr(pool, "resample"):
            boot = rng.integers(0, pool.n_items, size=k)
            row["resample_ms"] = best_of(lambda boot=boot: pool.resample(boot)) * 1e3
        rows.append(row)
    return rows


def code_version() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "src/evalsift/pool"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+modified pool/" if dirty else "")
    except Exception:  # noqa: BLE001
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "bench-out" / "pool_subset.json"))
    ap.add_argument("--quick", action="store_true", help="a 2,000-item synthetic pool instead of 20,000")
    args = ap.parse_args(argv)

    results = {"code": code_version(), "python": platform.python_version(), "numpy": np.__version__,
               "fast_path": hasattr(Pool, "resample"), "pools": []}
    print(f"evalsift pool/ at {results['code']}; numpy {np.__version__}; times are best-of, in ms")
    for pool, build_s in pools(args.quick):
        n = pool.n_items
        sizes = sorted({min(100, n), n // 10, n // 2, n})
        res = measure(pool, sizes)
        entry = {"name": pool.name, "n_items": n, "n_systems": pool.n_systems, "n_metrics": len(pool.scores),
                 "build_ms": build_s * 1e3, "rows": res}
        results["pools"].append(entry)
        print(f"\n{pool.name}: {n} items x {pool.n_systems} systems, {len(pool.scores)} metrics "
              f"(built in {build_s * 1e3:.0f} ms)")
        head = f"{'k':>7} {'subset ms':>10} {'np.take ms':>11} {'ratio':>7} {'+read all ms':>13}"
        print(head + (f" {'resample ms':>12}" if "resample_ms" in res[0] else ""))
        for r in res:
            line = (f"{r['k']:>7} {r['subset_ms']:>10.3f} {r['take_ms']:>11.3f} {r['ratio']:>7.1f} "
                    f"{r['subset_read_all_ms']:>13.3f}")
            print(line + (f" {r['resample_ms']:>12.3f}" if "resample_ms" in r else ""))
    print()
    write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
