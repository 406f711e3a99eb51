"""Ctrl-C in the first milliseconds of ``evalsift COMMAND``: how many runs print a traceback (issue 42).

Each run starts the console script as pip writes it (``import re, sys; from ENTRY import main;
sys.exit(main())``, this checkout's package first on the path), sends SIGINT after OFFSET
milliseconds and reads what it printed. A run counts as a traceback when its stderr holds
``Traceback`` -- in evalsift's code (a file under ``evalsift/`` in it), or before evalsift's first line
ran (Python's own start-up, the console script's ``import re``), which no code of evalsift can
catch; one that Python's own handler had not been installed for yet dies of the signal
(exit -2) and prints nothing, which is not a traceback. The rest should say one ``interrupted`` line
and exit 130, or have finished (exit 0) before the signal came.

    python benchmarks/suite/ctrl_c_startup.py [--entry evalsift._entry] [--offsets 1,5,10,25,50,100,200,400]
        [--commands 4] [--repeat 1]

``--entry evalsift.cli`` measures the console script as it was before issue 42 (``evalsift.cli:main``).
The machine's load moves the offsets at which each part of the start-up runs: the script prints the
load average.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
COMMANDS = [
    ["data", "info", "demo"],
    ["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--method", "random"],
    ["select", "random", "--data", "demo", "--budget", "5"],
    ["rank", "--data", "demo", "--human-metric", "human"],
    ["methods"],
    ["arena", "--data", "demo", "--out", "/nonexistent/never-written"],
]


def console_script(entry: str) -> str:
    """What pip writes into ``bin/evalsift`` for ``evalsift = "ENTRY:main"``."""
    return (f"import re\nimport sys\nfrom {entry} import main\n"
            "sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\nsys.exit(main())\n")


def one_run(entry: str, argv: list[str], offset_ms: float) -> dict:
    """Start the console script, SIGINT after ``offset_ms``; what came of it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
           "EVALSIFT_QUIET": "1"}
    proc = subprocess.Popen([sys.executable, "-c", console_script(entry), *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(offset_ms / 1000)
    try:
        proc.send_signal(signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        err = proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        err = proc.communicate()[1] + "\n(still running 60 s after SIGINT: killed)"
    lines = [x for x in err.splitlines() if x.strip()]
    if "Traceback" in err:  # where: in evalsift's code, or before its first line ran (Python's start-up, `import re`)
        kind = "traceback in evalsift" if "/evalsift/" in err else "traceback before evalsift's first line"
    elif proc.returncode == -signal.SIGINT:
        kind = "killed before Python's handler"
    elif proc.returncode == 130 and len(lines) == 1 and lines[0].startswith("interrupted"):
        kind = "one line, exit 130"
    elif proc.returncode == 130:
        kind = f"exit 130, {len(lines)} lines"
    else:
        kind = f"exit {proc.returncode} (finished first)"
    return {"kind": kind, "stderr": err}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entry", default="evalsift._entry", help="the module whose main() the console script calls")
    ap.add_argument("--offsets", default="1,5,10,25,50,100,200,400", help="milliseconds after the start")
    ap.add_argument("--commands", type=int, default=4, help=f"how many of the {len(COMMANDS)} commands to try")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command and offset")
    args = ap.parse_args()
    offsets = [float(x) for x in args.offsets.split(",")]
    print(f"entry {args.entry}:main; load average before: {os.getloadavg()}")
    kinds: Counter = Counter()
    by_offset: dict[float, Counter] = {o: Counter() for o in offsets}
    example = None
    for argv in COMMANDS[:args.commands]:
        for o in offsets:
            for _ in range(args.repeat):
                r = one_run(args.entry, argv, o)
                kinds[r["kind"]] += 1
                by_offset[o][r["kind"]] += 1
                if r["kind"] == "traceback in evalsift" and example is None:
                    example = (argv, o, r["stderr"])
    total = sum(kinds.values())
    for o in offsets:
        print(f"  {o:6g} ms: " + ", ".join(f"{k} {n}" for k, n in sorted(by_offset[o].items())))
    tracebacks = sum(n for k, n in kinds.items() if k.startswith("traceback"))
    print(f"tracebacks: {tracebacks} of {total} runs, {kinds['traceback in evalsift']} in evalsift's code; "
          + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())))
    if example:
        print(f"first traceback in evalsift ({' '.join(example[0])}, SIGINT at {example[1]:g} ms):\n"
              f"{example[2][-1500:]}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
