"""Ctrl-C in the first milliseconds of a command (issue 42): one ``interrupted`` line, exit 130, no traceback,
from the console script entry's first line on (``evalsift._entry``, which installs the handler before the
command's modules are imported).

Each command runs as the console script pip writes (``import re, sys; from evalsift._entry import main``) under
``-X importtime``, whose line for ``evalsift._entry`` says the script is about to call ``main()``, whose first
step installs the handler; SIGINT is sent 2-100 ms after it, while ``evalsift.cli``, numpy and the command's
modules are still importing. What comes before that
line (the interpreter's own start-up, the script's ``import re``) is outside evalsift's reach:
``benchmarks/suite/ctrl_c_startup.py`` counts it from the process start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import evalsift

SRC = Path(evalsift.__file__).resolve().parents[1]
SCRIPT = ("import re\nimport sys\nfrom evalsift._entry import main\n"
          "sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\nsys.exit(main())\n")


def start(argv: list[str]) -> tuple[subprocess.Popen, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
           "EVALSIFT_QUIET": "1"}
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-c", SCRIPT, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(x.rstrip("\n") for x in proc.stderr), daemon=True).start()
    return proc, lines


@pytest.mark.parametrize("argv", [
    ["data", "info", "demo"],
    ["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--method", "random"],
    ["rank", "--data", "demo", "--human-metric", "human"],
], ids=lambda a: a[0])
def test_ctrl_c_right_after_the_entry_ran_is_one_line(argv):
    said_by_offset = {}
    for offset_ms in (2, 10, 100):
        proc, lines = start(argv)
        try:
            end = time.monotonic() + 60
            while not any(x.endswith(" evalsift._entry") for x in list(lines)) and time.monotonic() < end:
                time.sleep(0.001)
            time.sleep(offset_ms / 1000)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        time.sleep(0.05)  # the reader thread takes the last lines
        said = [x for x in lines if not x.startswith("import time:")]
        said_by_offset[offset_ms] = said
        assert code == 130 and len(said) == 1 and said[0].startswith("interrupted"), (offset_ms, code, said)
    print(f"\n{argv[0]}: {said_by_offset}")
