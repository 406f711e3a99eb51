"""``evalsift bench subset`` (the README's command) run from several source trees back to back: wall
seconds, the ratio to the first tree, and whether the results are equal.

    python benchmarks/suite/subset_speed.py --src old=/tmp/old/src [--src new=src] [--reps 2] [-- EXTRA OPTIONS]

Each tree's ``src`` folder goes first on ``PYTHONPATH`` of a fresh ``python -m evalsift.cli`` process
(get an older commit's tree with ``git archive COMMIT | tar -x -C /tmp/old``); the runs alternate
between the trees ``--reps`` times, so they share the machine's load, and the fastest run of each
tree is reported (each run writes into a folder of its own, so none resumes another's tasks).
``results.json`` of each tree is compared with the first tree's without its
``timing_s`` and ``provenance``: "identical", or the largest absolute difference of a number (a tree
from before the correlation intervals lacks them: the keys that only one side has are listed).
Default command: ``bench subset --data wmt23/en-de --human-metric mqm --metric MetricX-23-refA``
(six methods, 10 seeds, 1,000 interval resamples); options after ``--`` are added to it. Writes
``bench-out/subset_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ["bench", "subset", "--data", "wmt23/en-de", "--human-metric", "mqm", "--metric", "MetricX-23-refA"]


def compare(a, b, path: str = "") -> tuple[float, list[str]]:
    """(largest absolute difference of a number, paths present on one side only) between two JSON values;
    anything else that differs raises AssertionError naming its path."""
    if isinstance(a, dict) and isinstance(b, dict):
        worst, only = 0.0, [f"{path}/{k}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            d, o = compare(a[k], b[k], f"{path}/{k}")
            worst, only = max(worst, d), only + o
        return worst, only
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: lengths {len(a)} and {len(b)}"
        parts = [compare(x, y, path) for x, y in zip(a, b)]
        return max([d for d, _ in parts], default=0.0), [p for _, o in parts for p in o]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)), []
    assert a == b, f"{path}: {a!r} != {b!r}"
    return 0.0, []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", metavar="NAME=DIR", help="a source tree (its src folder); repeat")
    ap.add_argument("--reps", type=int, default=1, help="runs per tree, alternating")
    ap.add_argument("extra", nargs="*", help="options added to the command (after --)")
    args = ap.parse_args()
    trees = dict(s.split("=", 1) for s in (args.src or [])) or {}
    trees.setdefault("new", str(ROOT / "src"))
    env0 = {**os.environ, "EVALSIFT_DATA": os.environ.get("EVALSIFT_DATA") or str(ROOT.parent / "shared" / "data")}
    out = Path(tempfile.mkdtemp(prefix="subset-speed-"))
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {n: [] for n in trees}
    for _ in range(args.reps):
        for name, src in trees.items():
            env = {**env0, "PYTHONPATH": str(Path(src).resolve())}
            t0 = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "evalsift.cli", "--quiet", *COMMAND, *args.extra, "--out",
                                  str(out / f"{name}-{len(times[name])}")], env=env, capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"{name}: the command failed:\n{run.stderr}")
            times[name].append(time.perf_counter() - t0)
    results = {}
    for name in trees:
        r = json.loads((out / f"{name}-0" / "results.json").read_text())
        r.pop("timing_s"), r.pop("provenance")
        results[name] = r
    first = next(iter(trees))
    rows = {}
    for name in trees:
        diff, only = compare(results[first], results[name])
        rows[name] = {"seconds": [round(t, 2) for t in times[name]], "best": round(min(times[name]), 2),
                      f"{first}_over_this": round(min(times[first]) / min(times[name]), 2),
                      "identical": results[name] == results[first], "max_abs_difference": diff,
                      "keys_on_one_side": only}
        same = "identical" if rows[name]["identical"] else f"differ by at most {diff:.3g}"
        print(f"{name:>8}: {rows[name]['best']:7.1f} s (runs {rows[name]['seconds']}); {first} / {name} = "
              f"{rows[name][f'{first}_over_this']:.2f}; results {same}"
              + (f"; keys on one side: {', '.join(only[:4])}{' ...' if len(only) > 4 else ''}" if only else ""))
    res = {"command": ["evalsift", *COMMAND, *args.extra], "trees": trees, "runs": rows,
           "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(f"load average before {load_before[0]:.2f}, after {res['load_average_after'][0]:.2f}")
    dest = ROOT / "bench-out"
    dest.mkdir(exist_ok=True)
    (dest / "subset_speed.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
