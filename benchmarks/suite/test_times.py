"""How long the test suite takes: the quick first check (``python -m pytest -m quick``, README) and, with
``--full``, the whole suite (and with ``--not-slow`` the run without the ``slow`` end-to-end tests), each in a
fresh process as a user runs it from the checkout, with pytest's own options (two worker processes). Prints,
per run, the wall-clock seconds, the CPU seconds of the run and its children, the load average before and
after (on a busy machine the wall time says more about the load than about the suite), pytest's summary line,
and the ratio to the target: the quick check <= 180 s and the full suite <= 1200 s on 2 idle cores (issue 42).
Writes the figures to ``bench-out/test_times.json``.

    python benchmarks/suite/test_times.py                # the quick check
    python benchmarks/suite/test_times.py --full         # and the whole suite (16-20 minutes with the data)
    python benchmarks/suite/test_times.py --not-slow     # and the suite without the slow tests
    python benchmarks/suite/test_times.py -- -n 0        # extra arguments after -- go to pytest

The real data is found as the tests find it (``$EVALSIFT_DATA`` or ``../shared/data``); without it the
data's tests skip, and the full suite is much shorter than CI's run.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {"quick": 180.0, "full": 1200.0, "not slow": None}


def run(name: str, marker: list[str], extra: list[str]) -> dict:
    """One pytest run in a fresh process: its seconds, CPU seconds, load and summary."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *marker, *extra]
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln for ln in p.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    target = TARGETS[name]
    res = {"run": name, "command": " ".join(cmd[1:]), "exit": p.returncode, "wall_s": round(wall, 1),
           "cpu_s": round(cpu, 1), "load_before": [round(x, 2) for x in load0],
           "load_after": [round(x, 2) for x in os.getloadavg()], "summary": lines[-1].strip("= ") if lines else "",
           "target_s": target, "ratio_to_target": round(wall / target, 3) if target else None}
    print(f"{name:>9}: {wall:7.1f} s wall, {cpu:7.1f} s CPU (load {load0[0]:.1f} -> {res['load_after'][0]:.1f}); "
          f"{res['summary'] or 'no summary: exit ' + str(p.returncode)}"
          + (f"; {wall / target:.2f} x the {target:.0f} s target" if target else ""), flush=True)
    if p.returncode not in (0, 5):
        print(p.stdout[-3000:], p.stderr[-2000:], sep="\n")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="also the whole suite")
    ap.add_argument("--not-slow", action="store_true", help="also the suite without the slow tests")
    ap.add_argument("--no-quick", action="store_true", help="leave the quick check out")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "test_times.json"))
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; data: "
          f"{os.environ.get('EVALSIFT_DATA') or ROOT.parent / 'shared' / 'data'}", flush=True)
    runs = []
    if not args.no_quick:
        runs.append(run("quick", ["-m", "quick"], args.pytest_args))
    if args.not_slow:
        runs.append(run("not slow", ["-m", "not slow"], args.pytest_args))
    if args.full:
        runs.append(run("full", [], args.pytest_args))
    write_json(args.out, runs, indent=1)
    return max((r["exit"] for r in runs if r["exit"] != 5), default=0)


if __name__ == "__main__":
    sys.exit(main())
