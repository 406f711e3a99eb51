"""DiffUse at scale: exact Ward against the two-level tree, time and peak memory, 1k to 1M items.

Each run is a fresh process that does what a user with precomputed embeddings does
(``evalsift select --method diffuse --embeddings FILE``): load a two-system pool and a ``.npz`` of
384-d vectors keyed by text hash (:class:`evalsift.embed.PrecomputedEncoder`), fit DiffUse, select
the budgets. It reports the fit's wall time, the process's peak RSS, and the peak RSS minus the RSS
just before the fit (what the clustering itself needs; the loaded pool and the 2n vectors are the
same for both paths). "exact" is today's exact path forced at any size (``exact_max`` above n);
"two-level" is the default above 10,000 items. Exact Ward is not run where its condensed distance
matrix alone would not fit in memory (n(n-1)/2 doubles: 40 GB at 100,000 items).

Vectors are synthetic but shaped like output embeddings: unit vectors around 400 topics, system B's
output a perturbation of A's along one of 60 "kinds of difference", so the difference vectors have
cluster structure. Where exact and two-level both run, the script also reports how often they pick
the same items (the share of two-level's picks that exact Ward also picks) and the adjusted Rand
index of their cuts.

    python benchmarks/select/diffuse_scale.py [--sizes 1000,10000,40000,100000,1000000] [--exact-max-items 40000]
                                       [--dir /tmp/evalsift-diffuse-scale] [--out bench-out/diffuse_scale.json]
    python benchmarks/select/diffuse_scale.py --end-to-end 1000000   # the command line on a 1M-item JSONL

``--end-to-end N`` writes an N-item subset2evaluate JSONL (systems A and B, a human score) and runs
``evalsift select diffuse --data FILE --a A --b B --budget 200 --embeddings VECTORS --out picks.jsonl``
in a fresh process, reporting its wall time and peak RSS (reading, embedding lookup, fit, writing).

Targets (issue 12): at 40,000 items two-level is >= 10x faster and >= 10x smaller than exact; at
1,000,000 items the fit takes <= 5 min and the peak RSS is <= 8 GB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

BUDGETS = [10, 50, 100, 500]
DIM = 384


def texts(n: int) -> tuple[list[str], list[str]]:
    """The pool's output texts: distinct short strings per item and system."""
    return [f"output of A for item {i}" for i in range(n)], [f"output of B for item {i}" for i in range(n)]


def make_vectors(n: int, path: Path, seed: int = 0) -> None:
    """Write ``path`` (.npz: ``text_hash``, ``vectors``) for an n-item pool, in blocks (bounded memory)."""
    from evalsift.embed import save_embeddings

    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(400, DIM)).astype(np.float32)
    kinds = rng.normal(size=(60, DIM)).astype(np.float32)
    out = np.empty((2 * n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        k = min(n, start + 100_000) - start
        a = topics[rng.integers(0, 400, k)] + 0.7 * rng.normal(size=(k, DIM)).astype(np.float32)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        b = a + 0.08 * kinds[rng.integers(0, 60, k)] * rng.gamma(2.0, 1.0, (k, 1)).astype(np.float32) \
            + 0.03 * rng.normal(size=(k, DIM)).astype(np.float32)
        b /= np.linalg.norm(b, axis=1, keepdims=True)
        out[start:start + k], out[n + start:n + start + k] = a, b
    ta, tb = texts(n)
    save_embeddings(path, ta + tb, out)


def rss_mb() -> float:
    """Current resident set size in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def child(n: int, method: str, vectors: Path, picks_out: Path) -> dict:
    """One measured run in this process."""
    from evalsift.embed import PrecomputedEncoder
    from evalsift.pool import Pool
    from evalsift.select import DiffUse

    ta, tb = texts(n)
    pool = Pool(item_ids=[str(i) for i in range(n)], systems=["A", "B"], outputs={"A": ta, "B": tb})
    del ta, tb
    enc = PrecomputedEncoder.from_file(vectors)
    before = rss_mb()
    sel = DiffUse(encoder=enc, exact_max=n + 1 if method == "exact" else 10_000)
    t0 = time.perf_counter()
    sel.fit(pool)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    picks = {b: sel.select(b).items.tolist() for b in BUDGETS if b <= n}
    select_s = time.perf_counter() - t0
    labels = {b: sel.clusters(b).tolist() for b in (10, 100) if b <= n} if n <= 100_000 else {}
    picks_out.write_text(json.dumps({"picks": picks, "labels": labels}))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"items": n, "method": method, "fit_s": round(fit_s, 2), "select_s": round(select_s, 2),
            "peak_rss_mb": round(peak), "rss_before_fit_mb": round(before), "fit_peak_mb": round(peak - before)}


def run(n: int, method: str, vectors: Path, work: Path) -> dict:
    """``child`` in a fresh interpreter (its own peak RSS)."""
    picks = work / f"picks-{method}-{n}.json"
    res = subprocess.run([sys.executable, __file__, "--child", str(n), method, str(vectors), str(picks)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return {"items": n, "method": method, "error": res.stderr.strip().splitlines()[-1:]}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["_picks"] = json.loads(picks.read_text())
    return out


def agreement(exact: dict, two: dict) -> dict:
    """Same-picks share per budget and adjusted Rand index of the cuts."""
    from sklearn.metrics import adjusted_rand_score

    share = {b: round(len(set(exact["picks"][b]) & set(two["picks"][b])) / len(two["picks"][b]), 3)
             for b in two["picks"]}
    ari = {b: round(adjusted_rand_score(exact["labels"][b], two["labels"][b]), 3) for b in two["labels"]}
    return {"same_picks_share": share, "ari": ari}


def end_to_end(n: int, work: Path) -> dict:
    """The command line on an n-item JSONL with precomputed vectors: wall time and peak RSS."""
    vectors = work / f"vectors-{n}.npz"
    if not vectors.exists():
        make_vectors(n, vectors)
    data = work / f"pool-{n}.jsonl"
    if not data.exists():
        rng = np.random.default_rng(1)
        ta, tb = texts(n)
        with open(data, "w") as f:
            for i in range(n):
                ha, hb = rng.random(2).round(3)
                f.write(json.dumps({"i": i, "src": f"source sentence {i}", "tgt": {"A": ta[i], "B": tb[i]},
                                    "scores": {"A": {"human": ha}, "B": {"human": hb}}}) + "\n")
    out = work / f"picks-cli-{n}.jsonl"
    code = ("import resource, sys; from evalsift.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    cmd = ["--quiet", "select", "diffuse", "--data", str(data), "--a", "A", "--b", "B", "--budget", "200",
           "--embeddings", str(vectors), "--out", str(out)]
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        return {"items": n, "command": "evalsift " + " ".join(cmd), "error": res.stderr.strip().splitlines()[-3:]}
    peak = float(next(line.split()[1] for line in res.stdout.splitlines() if line.startswith("PEAK")))
    picked = sum(1 for _ in open(out))
    return {"items": n, "command": "evalsift " + " ".join(cmd), "wall_s": round(wall, 1), "peak_rss_mb": round(peak),
            "picked": picked}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,40000,100000,1000000")
    ap.add_argument("--exact-max-items", type=int, default=40_000,
                    help="largest pool the exact path is run on (its memory grows as n^2)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/evalsift-diffuse-scale"))
    ap.add_argument("--out", type=Path, default=REPO / "bench-out" / "diffuse_scale.json")
    ap.add_argument("--end-to-end", type=int, metavar="N", help="run the command line on an N-item JSONL instead")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, method, vectors, picks = args.child
        print(json.dumps(child(int(n), method, Path(vectors), Path(picks))))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.end_to_end:
        print(json.dumps(end_to_end(args.end_to_end, args.dir), indent=1))
        return
    rows = []
    print(f"{'items':>9} {'path':>9} {'fit s':>8} {'peak RSS MB':>12} {'fit MB':>8}", flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        vectors = args.dir / f"vectors-{n}.npz"
        if not vectors.exists():
            make_vectors(n, vectors)
        per = {}
        for method in ("two-level", "exact"):
            if method == "exact" and n > args.exact_max_items:
                need = n * (n - 1) / 2 * 8 / 1e9
                rows.append({"items": n, "method": "exact", "not_run": f"needs >= {need:.0f} GB for the distances"})
                print(f"{n:>9} {'exact':>9}  not run: its distance matrix alone needs {need:.0f} GB", flush=True)
                continue
            r = run(n, method, vectors, args.dir)
            per[method] = r.pop("_picks", None)
            rows.append(r)
            if "error" in r:
                print(f"{n:>9} {method:>9}  failed: {r['error']}", flush=True)
                continue
            print(f"{n:>9} {method:>9} {r['fit_s']:>8} {r['peak_rss_mb']:>12} {r['fit_peak_mb']:>8}", flush=True)
        if per.get("exact") and per.get("two-level"):
            ex = next(r for r in rows if r["items"] == n and r["method"] == "exact")
            tw = next(r for r in rows if r["items"] == n and r["method"] == "two-level")
            agree = agreement(per["exact"], per["two-level"])
            tw.update(agreement=agree, speedup=round(ex["fit_s"] / tw["fit_s"], 1),
                      peak_ratio=round(ex["peak_rss_mb"] / tw["peak_rss_mb"], 1),
                      fit_memory_ratio=round(ex["fit_peak_mb"] / max(tw["fit_peak_mb"], 1), 1))
            print(f"{'':>9} two-level vs exact: {tw['speedup']}x faster, peak RSS {tw['peak_ratio']}x smaller "
                  f"(the fit's own memory {tw['fit_memory_ratio']}x); same picks {agree['same_picks_share']}, "
                  f"ARI of the cuts {agree['ari']}", flush=True)
    write_json(args.out, rows, indent=1)


if __name__ == "__main__":
    main()
