"""evalsift's length-controlled win rates beside AlpacaEval's own code on the same preferences, offline.

AlpacaEval's ``src/alpaca_eval/metrics/glm_winrate.py`` (``get_length_controlled_winrate``) downloads two files
at run time: the instruction difficulties and the baseline's gamed comparisons. Offline -- as evalsift always is
-- neither is there, so this runs AlpacaEval's GLM as its ``length_controlled_noreg`` variant (no
regularisation to the baseline, which needs the gamed comparisons) with the instruction difficulties evalsift
estimates (``evalsift.winrate.estimate_difficulty``) or with 0, and compares every model's length-controlled
win rate with evalsift's (``winrate_board``, the same difficulties) and with the published leaderboard.

AlpacaEval's file is executed unchanged except for its imports: ``huggingface_hub.hf_hub_download`` returns a
local CSV of the difficulties, and alpaca_eval's ``utils`` / ``constants`` / ``get_winrate`` are small
stand-ins. It needs pandas, patsy and scikit-learn in the Python given by ``--python`` (AlpacaEval's own
requirements; its last release ran with scikit-learn 1.7), and an AlpacaEval checkout
(``git clone https://github.com/tatsu-lab/alpaca_eval``).

    python benchmarks/winrate/alpaca_eval_code.py --alpaca-eval ~/alpaca_eval --python /tmp/ae/bin/python [--out FILE.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.io.datasets import data_root  # noqa: E402
from evalsift.io.pairwise import read_judgments  # noqa: E402
from evalsift.winrate import baseline_comparisons, estimate_difficulty, winrate_board  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

BASELINE = "gpt4_1106_preview"
CONFIG = "weighted_alpaca_eval_gpt4_turbo"
LB = "src__alpaca_eval__leaderboards__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"

# Runs in AlpacaEval's Python: argv = glm_winrate.py, preferences csv.gz, difficulties json, out json
RUNNER = r"""
import json, sys, tempfile, types
import pandas as pd
src = open(sys.argv[1]).read()
for line in ("from huggingface_hub import hf_hub_download", "from alpaca_eval import constants, types, utils",
             "from .winrate import get_winrate"):
    assert line in src, line
    src = src.replace(line, "")
diff = json.load(open(sys.argv[3]))
path = tempfile.mktemp(suffix=".csv")
n = 1 + max(int(k) for k in diff)
pd.DataFrame({"model": "x", "index": range(n), "instruction_difficulty": [diff.get(str(i), 0.0) for i in range(n)]}
             ).to_csv(path, index=False)
ns = {"__name__": "glm_winrate", "__file__": sys.argv[1], "hf_hub_download": lambda **k: path,
      "constants": types.SimpleNamespace(DATASETS_TOKEN=None, DATASETS_FORCE_DOWNLOAD=False, DEFAULT_CACHE_DIR=None),
      "types": types.SimpleNamespace(AnyLoadableDF=object),
      "utils": types.SimpleNamespace(convert_to_dataframe=lambda x: pd.DataFrame(x)),
      "get_winrate": lambda ann: {"win_rate": 100 * (pd.DataFrame(ann)["preference"].astype(float) - 1).mean()}}
exec(compile(src, sys.argv[1], "exec"), ns)
df = pd.read_csv(sys.argv[2])
df = df[(df["annotator_config"] == "%s") & (df["generator_2"] != df["generator_1"])]
out = {}
for m, d in df.groupby("generator_2"):
    ann = pd.DataFrame({"preference": d["preference"].values, "index": d["instruction_idx"].values,
                        "output_1": ["x" * int(v) for v in d["len_output_1"]],
                        "output_2": ["x" * int(v) for v in d["len_output_2"]],
                        "generator_1": d["generator_1"].values, "generator_2": m, "annotator": "a"})
    r = ns["get_length_controlled_winrate"](ann, glm_name="length_controlled_noreg", save_weights_dir=None,
                                            is_warn_extreme_changes=False)
    out[m] = {"lc": float(r["length_controlled_winrate"]), "lc_se": float(r["lc_standard_error"]),
              "model_dir": str(d["model_dir"].iloc[0])}
json.dump(out, open(sys.argv[4], "w"))
""" % CONFIG


def published(path: Path) -> dict[str, float]:
    import csv

    with path.open(newline="", encoding="utf-8") as f:
        return {r[""]: float(r["length_controlled_winrate"]) for r in csv.DictReader(f)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alpaca-eval", required=True, type=Path, help="an AlpacaEval checkout")
    ap.add_argument("--python", required=True, help="a Python with pandas, patsy and scikit-learn")
    ap.add_argument("--out", metavar="FILE.json", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    glm = args.alpaca_eval / "src" / "alpaca_eval" / "metrics" / "glm_winrate.py"
    if not glm.is_file():
        raise SystemExit(f"{glm} not found: --alpaca-eval must be an AlpacaEval checkout")
    root = data_root()
    prefs = None if root is None else root / "alpaca-eval" / "preferences_all_annotators.csv.gz"
    if prefs is None or not prefs.is_file():
        raise SystemExit(f"AlpacaEval preferences not found under {root} (set EVALSIFT_DATA)")
    data = read_judgments("alpaca-eval/preferences")
    est = estimate_difficulty(baseline_comparisons(data, BASELINE), quiet=True)
    pub = published(root / "alpaca-eval" / "leaderboards" / LB)
    work = Path(tempfile.mkdtemp(prefix="alpaca-eval-code-"))
    report = {}
    for name, values in (("estimated", est["difficulty"]), ("zero", {k: 0.0 for k in est["difficulty"]})):
        (work / f"{name}.json").write_text(json.dumps(values), encoding="utf-8")
        subprocess.run([args.python, "-c", RUNNER, str(glm), str(prefs), str(work / f"{name}.json"),
                        str(work / f"ae_{name}.json")], check=True)
        theirs = json.loads((work / f"ae_{name}.json").read_text())
        board = winrate_board(data, BASELINE, length_controlled=True, quiet=True,
                              difficulty=est if name == "estimated" else "zero")
        ours = {m["model"]: m for m in board.boards[0]["models"]}
        rows = {m: {"alpacaeval_code": t["lc"], "evalsift": ours[m]["length_controlled_winrate"],
                    "published": pub.get(t["model_dir"]), "alpacaeval_lc_se": t["lc_se"],
                    "evalsift_lc_prediction_sem": ours[m]["lc_prediction_sem"],
                    "evalsift_lc_standard_error": ours[m]["lc_standard_error"]} for m, t in theirs.items() if m in ours}
        gap = {m: abs(r["alpacaeval_code"] - r["evalsift"]) for m, r in rows.items()}
        miss = {m: r["alpacaeval_code"] - r["published"] for m, r in rows.items() if r["published"] is not None}
        worst = max(gap, key=gap.get)
        far = max(miss, key=lambda m: abs(miss[m]))
        report[name] = {"models": len(rows), "max_abs_code_vs_evalsift": gap[worst], "at": worst,
                        "code_vs_published_median_abs": float(np.median(np.abs(list(miss.values())))),
                        "code_vs_published_max": miss[far], "code_vs_published_max_at": far, "rows": rows}
        print(f"difficulty {name}: {len(rows)} models; |AlpacaEval's code - evalsift| at most {gap[worst]:.4f} "
              f"({worst}); AlpacaEval's code vs the published LC: median |diff| "
              f"{report[name]['code_vs_published_median_abs']:.3f}, largest {miss[far]:+.2f} ({far})")
        g = rows.get("gpt4_gamed")
        if g:
            print(f"  gpt4_gamed: AlpacaEval's code {g['alpacaeval_code']:.2f}, evalsift {g['evalsift']:.2f}, "
                  f"published {g['published']:.2f}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
