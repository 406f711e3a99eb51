"""Progress output: a long run is never silent when stderr is not a terminal (a log, CI, a pipe)."""

import os
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

SLOW = """
import sys, time
sys.path.insert(0, {src!r})
from evalsift.progress import progress_bar
with progress_bar(3, "slow steps") as advance:
    for _ in range(3):
        time.sleep(0.5)   # each step far longer than the line interval below
        advance()
"""


def test_plain_lines_at_least_every_interval_when_stderr_is_a_pipe():
    env = {**os.environ, "EVALSIFT_PROGRESS_EVERY": "0.2"}
    env.pop("EVALSIFT_QUIET", None)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", SLOW.format(src=SRC)], capture_output=True, text=True, env=env,
                       timeout=60)
    wall = time.monotonic() - t0
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("slow steps: ")]
    assert r.returncode == 0, r.stderr
    # 1.5 s of work at one line per 0.2 s: at least 1.5 / 0.2 - 2 = 5 lines (slack for start-up), and the last
    # one says all 3 steps are done
    assert len(lines) >= 5 and lines[-1].startswith("slow steps: 3/3"), r.stderr
    assert any("/3 (" in ln and "left)" in ln for ln in lines[:-1]) and wall < 30


def test_quiet_and_short_runs_print_nothing():
    env = {**os.environ, "EVALSIFT_QUIET": "1", "EVALSIFT_PROGRESS_EVERY": "0.2"}
    r = subprocess.run([sys.executable, "-c", SLOW.format(src=SRC)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    env = {**os.environ, "EVALSIFT_PROGRESS_EVERY": "60"}
    env.pop("EVALSIFT_QUIET", None)
    r = subprocess.run([sys.executable, "-c", SLOW.format(src=SRC)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""  # 1.5 s of work: under one interval, no line
