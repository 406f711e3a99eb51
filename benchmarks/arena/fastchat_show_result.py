"""evalsift's MT-Bench numbers beside FastChat's own ``show_result.py`` on the same files.

Writes MT-Bench judgment files in FastChat's layout (``tests/_judge_files.py``: ``gpt-4_single.jsonl`` with
``-1`` grades and a rerun row appended; ``gpt-4_pair.jsonl`` with both turns judged under FastChat's four
prompts -- ``pair-v2``, ``pair-v2-multi-turn``, ``pair-math-v1``, ``pair-math-v1-multi-turn`` --, ``error``
games and rerun rows appended), then runs

- FastChat's ``fastchat/llm_judge/show_result.py`` (its own code, unchanged: imported in its own Python, which
  needs pandas only, with ``print`` caught so the tables it prints come back as numbers), ``--mode single``
  and ``--mode pairwise-baseline --baseline-model gpt-3.5-turbo``;
- ``evalsift rank --data gpt-4_single.jsonl`` (its MT-Bench table) and ``evalsift winrate --data
  gpt-4_pair.jsonl --baseline gpt-3.5-turbo``, each with ``--repeats all`` (the default) and ``--repeats last``,

and prints every number side by side with the largest difference. FastChat is not a dependency: point
``--fastchat`` at a checkout (``git clone https://github.com/lm-sys/FastChat``) and ``--python`` at a Python
that has pandas.

    python benchmarks/arena/fastchat_show_result.py --fastchat ~/FastChat --python /tmp/fc/bin/python [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from _judge_files import mt_bench, mt_bench_pairs  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

# Runs in FastChat's Python: show_result's own functions, its prints caught as tables.
RUNNER = r"""
import json, sys, types
sys.path.insert(0, sys.argv[1])
import pandas as pd
import show_result as fc
tables = []
def caught(*a, **k):
    for x in a:
        if isinstance(x, pd.DataFrame):
            tables.append(x.reset_index().to_dict(orient="records"))
fc.print = caught
args = types.SimpleNamespace(bench_name="mt_bench", input_file=sys.argv[3], judge_model="gpt-4",
                             baseline_model="gpt-3.5-turbo", model_list=None, mode=sys.argv[2])
(fc.display_result_single if sys.argv[2] == "single" else fc.display_result_pairwise)(args)
json.dump(tables, sys.stdout, default=float)
"""


def fastchat(python: str, checkout: Path, mode: str, path: Path) -> list:
    folder = checkout / "fastchat" / "llm_judge"
    if not (folder / "show_result.py").is_file():
        raise SystemExit(f"{folder}/show_result.py not found: --fastchat must be a FastChat checkout")
    out = subprocess.run([python, "-c", RUNNER, str(folder), mode, str(path)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def evalsift(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "evalsift.cli", *argv, "--json", "--quiet"], capture_output=True,
                         text=True, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"evalsift {' '.join(argv)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fastchat", required=True, type=Path, help="a FastChat checkout")
    ap.add_argument("--python", required=True, help="a Python with pandas, to run FastChat's show_result.py")
    ap.add_argument("--out", metavar="FILE.json", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fastchat-vs-evalsift-"))
    single, _, _ = mt_bench(work, n_questions=24)
    pair, rows = mt_bench_pairs(work / "data" / "mt_bench", n_questions=16, reruns=3)
    report: dict = {"files": {"single": str(single), "pair": str(pair)}}

    # --mode single: FastChat prints turn 1, turn 2, the average
    fc = fastchat(args.python, args.fastchat, "single", single)
    fc_turn = [{r["model"]: r["score"] for r in t} for t in fc[:2]]
    fc_avg = {r["model"]: r["score"] for r in fc[2]}
    print(f"show_result.py --mode single on {single.name} (-1 grades and one rerun row in the file)")
    print(f"  {'model':<20} {'FastChat':>9} {'all':>9} {'last':>9}   turn 1 FastChat/all   turn 2 FastChat/all")
    single_rep = {}
    ours = {mode: {r["system"]: r for r in evalsift("rank", "--data", str(single), "--resamples", "20",
                                                    "--repeats", mode)["means"]} for mode in ("all", "last")}
    worst = 0.0
    for m in sorted(fc_avg, key=lambda m: -fc_avg[m]):
        a, last = ours["all"][m], ours["last"][m]
        t1, t2 = a["groups"]["turn 1"], a["groups"]["turn 2"]
        worst = max(worst, abs(a["score"] - fc_avg[m]), abs(t1 - fc_turn[0][m]), abs(t2 - fc_turn[1][m]))
        single_rep[m] = {"fastchat": fc_avg[m], "all": a["score"], "last": last["score"],
                         "turn1": [fc_turn[0][m], t1], "turn2": [fc_turn[1][m], t2]}
        print(f"  {m:<20} {fc_avg[m]:9.4f} {a['score']:9.4f} {last['score']:9.4f}   {fc_turn[0][m]:.4f}/{t1:.4f}"
              f"      {fc_turn[1][m]:.4f}/{t2:.4f}")
    print(f"  largest |FastChat - evalsift (--repeats all)|: {worst:.2e}")
    report["single"] = {"models": single_rep, "max_abs_diff_all": worst}

    # --mode pairwise-baseline: win, loss, tie, win_rate_adjusted per model
    fc = fastchat(args.python, args.fastchat, "pairwise-baseline", pair)[0]
    fcp = {r["model"]: r for r in fc}
    prompts = sorted({"/".join(r["judge"]) for r in rows})
    print(f"\nshow_result.py --mode pairwise-baseline --baseline-model gpt-3.5-turbo on {pair.name} ({len(rows)} rows; "
          f"prompts {', '.join(prompts)}; 3 rerun rows appended)")
    win = {}
    for mode in ("all", "last"):
        board = evalsift("winrate", "--data", str(pair), "--baseline", "gpt-3.5-turbo", "--out", str(work / f"w-{mode}"),
                         "--repeats", mode)["boards"][0]
        win[mode] = {m["model"]: m for m in board["models"]}
    turns = evalsift("winrate", "--data", str(pair), "--baseline", "gpt-3.5-turbo", "--by", "turn", "--out",
                     str(work / "w-turn"))
    print(f"  {'model':<20} {'W/L/T':>10} {'FastChat':>9} {'all':>9} {'n':>4} {'last':>9} {'n':>4}")
    worst, pair_rep = 0.0, {}
    for m in sorted(fcp, key=lambda m: -fcp[m]["win_rate_adjusted"]):
        f, a, last = fcp[m], win["all"][m], win["last"][m]
        n = f["win"] + f["loss"] + f["tie"]
        worst = max(worst, abs(a["win_rate"] - 100 * f["win_rate_adjusted"]), abs(a["n"] - n))
        pair_rep[m] = {"fastchat": 100 * f["win_rate_adjusted"], "fastchat_n": int(n), "all": a["win_rate"],
                       "all_n": a["n"], "last": last["win_rate"], "last_n": last["n"]}
        wlt = f"{f['win']}/{f['loss']}/{f['tie']}"
        print(f"  {m:<20} {wlt:>10} {100 * f['win_rate_adjusted']:9.4f} {a['win_rate']:9.4f} {a['n']:4d} "
              f"{last['win_rate']:9.4f} {last['n']:4d}")
    print(f"  largest |FastChat - evalsift (--repeats all)|: {worst:.2e} (win rate in points, or rows)")
    by_turn = {b["group"]: {m["model"]: m["win_rate"] for m in b["models"]} for b in turns["boards"]}
    print("  evalsift --by turn (FastChat prints no per-turn table): " + "; ".join(
        f"turn {g}: " + ", ".join(f"{m} {v:.2f}" for m, v in sorted(b.items())) for g, b in by_turn.items()
        if g != "all"))
    report["pairwise_baseline"] = {"models": pair_rep, "max_abs_diff_all": worst, "by_turn": by_turn}
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
