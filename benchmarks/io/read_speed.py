"""How fast evalsift reads Chatbot Arena battles, next to pandas reading the same file (issue 46).

One run prints, for one JSONL file of battles (default: 179,540 battles made from the shared data's
``arena-ppr/human.jsonl``, cycled with fresh ``num`` ids, written to a temporary folder):

- ``pandas``: ``pandas.read_json(path, lines=True)`` (best of ``--repeat``);
- ``read``: ``evalsift.arena.read_battles(path)`` in this process (best of ``--repeat``, the file's cached
  read cleared each time) -- with the parser in use (pyarrow when installed) and, with ``--fallback``, with
  the standard library's json (``EVALSIFT_JSON_PARSER=json``, as an install without pyarrow reads) and the
  row-by-row readers (``rows``, the readers before issue 46);
- ``arena``: ``python -m evalsift arena --data FILE --out DIR --quiet`` end to end in a fresh process
  (interpreter start, imports, reading, the fit, writing the board; best of ``--repeat``);

and the ratios ``read / pandas`` and ``arena / pandas`` (targets: <= 1 and <= 2). Wall-clock seconds, and
CPU seconds beside them (threads and child processes included), since a loaded machine stretches wall time.
``--out FILE.json`` writes the figures. Run: ``python benchmarks/io/read_speed.py [--file F] [--out F.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

N_DEFAULT = 179_540


def data_root() -> Path:
    env = os.environ.get("EVALSIFT_DATA", "").strip()
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


def make_battles(n: int, folder: Path) -> Path:
    """``n`` battles from ``arena-ppr/human.jsonl`` cycled, each copy's ``num`` offset by 100,000."""
    src = data_root() / "arena-ppr" / "human.jsonl"
    if not src.is_file():
        sys.exit(f"no --file given and {src} is missing: set EVALSIFT_DATA to the shared data folder")
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = folder / f"battles-{n}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            r = dict(rows[k % len(rows)])
            r["num"] = int(r["num"]) + 100_000 * (k // len(rows))
            f.write(json.dumps(r) + "\n")
    return path


def timed(fn, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds (this process, all threads) of ``repeat`` calls of ``fn``."""
    wall, cpu = [], []
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def read_ours(path: Path, parser: str):
    from evalsift.arena import read_battles
    from evalsift.io import fast_read
    from evalsift.io.pairwise_table import _read_cached

    def run():
        fast_read.PARSER = parser
        _read_cached.cache_clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            battles = read_battles(str(path))
        assert battles.n > 0
    return run


def arena_once(path: Path, out: Path, env: dict) -> tuple[float, float]:
    """Wall and CPU seconds of one ``evalsift arena`` run in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalsift", "arena", "--data", str(path), "--out", str(out), "--quiet"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--file", type=Path, help="a JSONL battle file (default: 179,540 battles from arena-ppr)")
    p.add_argument("--n", type=int, default=N_DEFAULT, help="battles to make when --file is not given")
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the best is kept (default 3)")
    p.add_argument("--fallback", action="store_true", help="also time the json and row-by-row paths (slow)")
    p.add_argument("--out", type=Path, help="write the figures to this JSON file")
    args = p.parse_args(argv)

    import pandas as pd

    from evalsift.io import fast_read

    with tempfile.TemporaryDirectory(prefix="read-speed-") as tmp:
        path = args.file or make_battles(args.n, Path(tmp))
        size = path.stat().st_size
        pandas_wall, pandas_cpu = timed(lambda: pd.read_json(path, lines=True), args.repeat)
        parser = fast_read.parser()
        figures = {"file": str(path), "bytes": size, "parser": parser, "repeat": args.repeat,
                   "pandas": {"wall_s": pandas_wall, "cpu_s": pandas_cpu}}
        read_wall, read_cpu = timed(read_ours(path, parser), args.repeat)
        figures["read"] = {"wall_s": read_wall, "cpu_s": read_cpu, "ratio_to_pandas": read_wall / pandas_wall}
        if args.fallback:
            for other in ("json", "rows"):
                if other != parser:
                    w, c = timed(read_ours(path, other), 1)
                    figures[f"read_{other}"] = {"wall_s": w, "cpu_s": c, "ratio_to_pandas": w / pandas_wall}
        fast_read.PARSER = parser
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2] / "src")
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        runs = [arena_once(path, Path(tmp) / f"board{k}", env) for k in range(args.repeat)]
        arena_wall, arena_cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        figures["arena"] = {"wall_s": arena_wall, "cpu_s": arena_cpu, "ratio_to_pandas": arena_wall / pandas_wall}
        figures["load_average"] = os.getloadavg()
        figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"

    n_label = f"{args.n:,} battles" if args.file is None else str(path)
    print(f"file: {n_label} ({size / 1e6:.1f} MB); parser: {parser}; best of {args.repeat}; "
          f"load average {figures['load_average'][0]:.1f}")
    print(f"pandas.read_json(lines=True)   {pandas_wall:7.3f} s wall  {pandas_cpu:7.3f} s cpu")
    print(f"read_battles                   {read_wall:7.3f} s wall  {read_cpu:7.3f} s cpu  "
          f"ratio {read_wall / pandas_wall:.2f} (target <= 1)")
    for other in ("json", "rows"):
        f = figures.get(f"read_{other}")
        if f:
            print(f"read_battles ({other:>5} parser)   {f['wall_s']:7.3f} s wall  {f['cpu_s']:7.3f} s cpu  "
                  f"ratio {f['ratio_to_pandas']:.2f}")
    print(f"evalsift arena (end to end)    {arena_wall:7.3f} s wall  {arena_cpu:7.3f} s cpu  "
          f"ratio {arena_wall / pandas_wall:.2f} (target <= 2)")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
