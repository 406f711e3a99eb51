"""``bench pairwise --jobs 2`` against ``--jobs 1`` on WMT23 en-de: seconds, speed-up, equal results.

One run of this script measures, on the same pool and with the embeddings already computed (the
MiniLM vectors are embedded once first, timed apart, so that every run reads them from the
in-process memo): the serial run (``jobs=1``, in this process), the same protocol on ``--jobs``
worker processes, and with ``--ray`` on a local Ray runtime with ``--jobs`` CPUs (its start-up is
timed apart). It prints the seconds, the speed-up over the serial run and whether ``results.json``
is the same (everything but ``timing_s``), and writes them to ``--out``.

``--one-thread`` also times the serial run with BLAS/OpenMP limited to one thread (threadpoolctl; what
each worker gets), which separates the gain from processes from the cost of oversubscribed BLAS threads on a
busy machine.

    python benchmarks/suite/bench_jobs.py [--data wmt23/en-de] [--metric mqm] [--methods diffuse,random]
        [--encoder minilm] [--seeds 3] [--max-pairs 0 (all 66)] [--budgets 5..200] [--jobs 2] [--ray]
        [--one-thread] [--out bench-out/bench_jobs.json]

The machine's other load changes the numbers: the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("EVALSIFT_DATA", str(REPO.parent / "shared" / "data"))


def comparable(res: dict) -> str:
    """results.json without its timings, as canonical JSON text."""
    return json.dumps({k: v for k, v in res.items() if k != "timing_s"}, sort_keys=True)


def main() -> None:
    from evalsift.bench import pairwise_bench
    from evalsift.bench.pairwise import choose_pairs
    from evalsift.cli._common import int_list
    from evalsift.embed import embed_texts
    from evalsift.io import load

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="wmt23/en-de")
    ap.add_argument("--metric", default="mqm")
    ap.add_argument("--methods", default="diffuse,random")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=0, help="a seeded sample of pairs (0: every pair)")
    ap.add_argument("--budgets", default="5..200", help="10,20,50 or 5..200 (step 5)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ray", action="store_true", help="also on a local Ray runtime with --jobs CPUs")
    ap.add_argument("--one-thread", action="store_true", help="also the serial run with one BLAS thread")
    ap.add_argument("--out", default="bench-out/bench_jobs.json")
    args = ap.parse_args()
    methods, budgets = args.methods.split(","), int_list(args.budgets)
    max_pairs = args.max_pairs or None
    load_before = os.getloadavg()

    pool = load(args.data)
    kw = {"seeds": args.seeds, "max_pairs": max_pairs, "encoder": args.encoder, "quiet": True}
    t0 = time.perf_counter()
    systems = {s for p in choose_pairs(pool.systems, max_pairs) for s in p}
    embed_texts([o for s in systems for o in pool.outputs[s] if o is not None], args.encoder, progress=False)
    t_embed = time.perf_counter() - t0

    rows = []

    def timed(label: str, **extra) -> dict:
        t = time.perf_counter()
        res = pairwise_bench(pool, args.metric, methods, budgets, **kw, **extra)
        rows.append({"run": label, "seconds": round(time.perf_counter() - t, 2), "result": comparable(res)})
        print(f"  {label}: {rows[-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
        return res

    serial = timed("--jobs 1")
    if args.one_thread:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # the embeddings are in the memo: torch does not run in the timed part
            timed("--jobs 1, one BLAS thread")
    timed(f"--jobs {args.jobs}", jobs=args.jobs)
    ray_start = None
    if args.ray:
        import ray

        t = time.perf_counter()
        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
        ray_start = round(time.perf_counter() - t, 2)
        try:
            timed(f"--backend ray --jobs {args.jobs}", jobs=args.jobs, backend="ray")
        finally:
            ray.shutdown()

    base = rows[0]["seconds"]
    print(f"bench pairwise on {serial['data']} (oracle {args.metric}): {', '.join(methods)}; {serial['n_pairs']} pairs x "
          f"{args.seeds} seeds, budgets {args.budgets}, encoder {args.encoder}")
    print(f"embedding warm-up (once, before the runs): {t_embed:.1f} s" +
          (f"; Ray runtime start-up (before its run): {ray_start:.1f} s" if ray_start is not None else ""))
    print(f"{'run':<34}{'seconds':>9}{'speed-up':>10}  results equal to --jobs 1")
    for r in rows:
        same = "-" if r is rows[0] else ("yes" if r["result"] == rows[0]["result"] else "NO")
        print(f"{r['run']:<34}{r['seconds']:>9.1f}{base / r['seconds']:>9.2f}x  {same}")
    load_after = os.getloadavg()
    print(f"{os.cpu_count()} cores; load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    write_json(args.out, {"data": serial["data"], "methods": methods, "pairs": serial["n_pairs"],
                          "seeds": args.seeds, "budgets": budgets, "encoder": args.encoder,
                          "embed_s": round(t_embed, 2), "ray_start_s": ray_start, "cores": os.cpu_count(),
                          "load_before": load_before, "load_after": load_after,
                          "runs": [{"run": r["run"], "seconds": r["seconds"],
                                    "speedup": round(base / r["seconds"], 3),
                                    "equal": r["result"] == rows[0]["result"]} for r in rows]}, file=sys.stderr)


if __name__ == "__main__":  # the worker processes import this file: run only when started as a script
    main()
