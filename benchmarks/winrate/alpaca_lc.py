"""AlpacaEval 2.0 win rates and length-controlled win rates, ours against the published leaderboard.

For every model of AlpacaEval's recorded preferences of annotator config ``weighted_alpaca_eval_gpt4_turbo``
(baseline ``gpt4_1106_preview``; ``alpaca-eval/preferences`` under the data root) that the published
leaderboard lists, prints: the published win rate, ours (``evalsift.winrate.win_rate``), the difference;
the published length-controlled win rate, ours (``evalsift.winrate.winrate_board(...,
length_controlled=True)``, instruction difficulty estimated from these preferences), the difference.
Then the summary -- max |WR diff|, median and max |LC diff|, Spearman correlation of the LC rankings --
the correlation of our fitted per-model GLM coefficients with AlpacaEval's published ones
(``leaderboards/lc_weights__...csv``), and how much the difficulty estimate moves LC (difficulty
estimated vs difficulty 0). Last, the time of the command a user runs -- ``evalsift winrate --data
alpaca-eval/preferences --baseline gpt4_1106_preview --length-controlled`` (and with ``--by dataset``), each
in a fresh process -- in wall-clock seconds and CPU seconds, with its ratio to the 40 s target (58 models on
2 idle cores; on a loaded machine the wall time says more about the load than about the command).

The published leaderboard: ``leaderboards/src__alpaca_eval__leaderboards__data_AlpacaEval_2__
weighted_alpaca_eval_gpt4_turbo_leaderboard.csv`` when present (first column = AlpacaEval's results
folder name, which is the preference table's ``model_dir``), else ``leaderboards/docs__data_AlpacaEval_2__
weighted_alpaca_eval_gpt4_turbo_leaderboard.csv`` (display names; matched through the ``samples`` URL,
``.../results/<model_dir>/model_outputs.json``). Our models are the table's ``generator_2``; they are
matched to the leaderboard through their ``model_dir`` (equal to the generator for every model but
``example``, whose folder is ``NullModel``). The published weights are matched the same way.

    python benchmarks/winrate/alpaca_lc.py [--out bench-out/alpaca_lc.json] [--no-command]

Data: ``evalsift.io.datasets.data_root()`` (``$EVALSIFT_DATA``, default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
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
LB_SRC = "src__alpaca_eval__leaderboards__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
LB_DOCS = "docs__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
WEIGHTS = f"lc_weights__{CONFIG}__baseline_{BASELINE}.csv"
ADVERSARIAL = "gpt4_gamed"
COEFS = {"length": "np.tanh(std_delta_len)", "difficulty": "instruction_difficulty",
         "intercept": "not_gamed_baseline.astype(float)"}
#: the command's time target (docs/winrate.md; issue 42): 58 models on 2 idle cores
TARGET_S = 40.0


def time_command(extra: list[str]) -> dict:
    """Wall-clock and CPU seconds of ``evalsift winrate ... --length-controlled`` (plus ``extra``) in a fresh
    process, as a user runs it (progress off, output to a temporary folder)."""
    out = tempfile.mkdtemp(prefix="alpaca-lc-")
    argv = [sys.executable, "-m", "evalsift.cli", "--quiet", "winrate", "--data", "alpaca-eval/preferences",
            "--baseline", BASELINE, "--length-controlled", *extra, "--out", out]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "EVALSIFT_QUIET": "1"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": "evalsift winrate --data alpaca-eval/preferences --baseline " + BASELINE
                       + " --length-controlled" + "".join(" " + x for x in extra),
            "wall_s": wall, "cpu_s": cpu, "target_s": TARGET_S, "ratio_to_target": wall / TARGET_S,
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def _float(x: str) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def published(folder: Path) -> tuple[dict[str, dict], str]:
    """{model_dir: {win_rate, standard_error, lc, lc_se}} and the file read."""
    src, docs = folder / LB_SRC, folder / LB_DOCS
    out: dict[str, dict] = {}
    if src.is_file():
        with src.open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                out[r[""]] = {"win_rate": _float(r["win_rate"]), "standard_error": _float(r.get("standard_error")),
                              "lc": _float(r["length_controlled_winrate"]), "lc_se": _float(r.get("lc_standard_error"))}
        return out, src.name
    with docs.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            m = re.search(r"/results/([^/]+)/model_outputs\.json", r.get("samples") or "")
            if m:
                out[m.group(1)] = {"win_rate": _float(r["win_rate"]), "standard_error": None,
                                   "lc": _float(r["length_controlled_winrate"]), "lc_se": None}
    return out, docs.name


def docs_agreement(folder: Path, pub: dict[str, dict], wanted: set[str]) -> dict:
    """How many models the docs__ leaderboard lists (matched by its samples URL) and its largest difference
    from the leaderboard used."""
    docs = folder / LB_DOCS
    if not docs.is_file():
        return {}
    n, worst = 0, 0.0
    with docs.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            m = re.search(r"/results/([^/]+)/model_outputs\.json", r.get("samples") or "")
            if m and m.group(1) in pub and m.group(1) in wanted:
                n += 1
                worst = max(worst, abs(float(r["win_rate"]) - pub[m.group(1)]["win_rate"]),
                            abs(float(r["length_controlled_winrate"]) - pub[m.group(1)]["lc"]))
    return {"file": docs.name, "models_matched": n, "max_abs_difference": worst}


def weights(folder: Path) -> dict[str, dict[str, float]]:
    out = {}
    with (folder / WEIGHTS).open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            out[r[""]] = {k: float(r[v]) for k, v in COEFS.items()}
    return out


def spearman(a, b) -> float:
    from scipy.stats import spearmanr
    return float(spearmanr(a, b).statistic)


def pearson(a, b) -> float:
    from scipy.stats import pearsonr
    return float(pearsonr(a, b).statistic)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", metavar="FILE.json", help="also write the numbers as JSON")
    ap.add_argument("--no-command", action="store_true", help="skip timing the evalsift winrate command")
    args = ap.parse_args(argv)
    root = data_root()
    if root is None or not (root / "alpaca-eval" / "preferences_all_annotators.csv.gz").is_file():
        raise SystemExit(f"AlpacaEval preferences not found under {root} (set EVALSIFT_DATA; see its README)")
    lbdir = root / "alpaca-eval" / "leaderboards"
    t0 = time.time()
    data = read_judgments("alpaca-eval/preferences")
    model_dir = {}
    for j in data.judgments:
        model = j.b if j.a == BASELINE else j.a
        model_dir.setdefault(model, j.detail.get("model_dir", model))
    pub, lb_file = published(lbdir)
    comp = baseline_comparisons(data, BASELINE)
    diff = estimate_difficulty(comp)
    t_diff = time.time() - t0
    est = winrate_board(data, BASELINE, length_controlled=True, difficulty=diff)
    zero = winrate_board(data, BASELINE, length_controlled=True, difficulty="zero")
    ours = {m["model"]: m for m in est.boards[0]["models"]}
    ours0 = {m["model"]: m for m in zero.boards[0]["models"]}
    listed = [m for m in comp.models if model_dir.get(m, m) in pub]
    unlisted = [m for m in comp.models if m not in listed]

    rows = []
    for m in sorted(listed, key=lambda m: -pub[model_dir.get(m, m)]["lc"]):
        p = pub[model_dir.get(m, m)]
        o, z = ours[m], ours0[m]
        rows.append({"model": m, "model_dir": model_dir.get(m, m),
                     "wr_published": p["win_rate"], "wr_ours": o["win_rate"], "wr_diff": o["win_rate"] - p["win_rate"],
                     "se_published": p["standard_error"], "se_ours": o["standard_error"],
                     "lc_published": p["lc"], "lc_ours": o["length_controlled_winrate"],
                     "lc_diff": o["length_controlled_winrate"] - p["lc"],
                     "lc_ours_difficulty0": z["length_controlled_winrate"],
                     "lc_diff_difficulty0": z["length_controlled_winrate"] - p["lc"],
                     "lc_se_published": p["lc_se"], "lc_se_ours": o["lc_standard_error"],
                     "lc_prediction_sem_ours": o["lc_prediction_sem"]})
    print(f"AlpacaEval 2.0 ({CONFIG}, baseline {BASELINE}): {len(comp.models)} models in the preferences, "
          f"{len(listed)} listed in {lb_file}" + (f"; not listed: {', '.join(unlisted)}" if unlisted else ""))
    print(f"{est.verdicts}; GLM {est.difficulty['glm_variant']}; instruction difficulty: {est.difficulty['how']}")
    print()
    print(f"{'model':<38} {'pub WR':>7} {'ours':>7} {'diff':>6}  {'pub LC':>7} {'ours LC':>7} {'diff':>6}  "
          f"{'LC d=0':>7} {'diff':>6}")
    for r in rows:
        print(f"{r['model'][:38]:<38} {r['wr_published']:7.2f} {r['wr_ours']:7.2f} {r['wr_diff']:+6.2f}  "
              f"{r['lc_published']:7.2f} {r['lc_ours']:7.2f} {r['lc_diff']:+6.2f}  {r['lc_ours_difficulty0']:7.2f} "
              f"{r['lc_diff_difficulty0']:+6.2f}")

    wr_d = np.array([r["wr_diff"] for r in rows])
    lc_d = np.array([r["lc_diff"] for r in rows])
    lc0_d = np.array([r["lc_diff_difficulty0"] for r in rows])
    se_d = [abs(r["se_ours"] - r["se_published"]) for r in rows if r["se_published"] is not None]
    moved = np.array([r["lc_ours"] - r["lc_ours_difficulty0"] for r in rows])
    summary = {
        "models": len(rows),
        "max_abs_wr_diff": float(np.abs(wr_d).max()),
        "max_abs_se_diff": float(max(se_d)) if se_d else None,
        "lc_median_abs_diff": float(np.median(np.abs(lc_d))), "lc_max_abs_diff": float(np.abs(lc_d).max()),
        "lc_spearman": spearman([r["lc_published"] for r in rows], [r["lc_ours"] for r in rows]),
        "lc_difficulty0_median_abs_diff": float(np.median(np.abs(lc0_d))),
        "lc_difficulty0_max_abs_diff": float(np.abs(lc0_d).max()),
        "lc_difficulty0_spearman": spearman([r["lc_published"] for r in rows], [r["lc_ours_difficulty0"] for r in rows]),
        "difficulty_moves_lc_median_abs": float(np.median(np.abs(moved))),
        "difficulty_moves_lc_max_abs": float(np.abs(moved).max()),
        "wr_spearman_with_published_lc": spearman([r["lc_published"] for r in rows], [r["wr_ours"] for r in rows]),
    }
    targets = {"max_abs_wr_diff": ("<=", 0.1), "lc_median_abs_diff": ("<=", 1.0), "lc_max_abs_diff": ("<=", 3.0),
               "lc_spearman": (">=", 0.98)}
    print()
    print("summary (difficulty estimated):")
    for k, (op, t) in targets.items():
        v = summary[k]
        ok = v <= t if op == "<=" else v >= t
        print(f"  {k:<24} {v:8.3f}   target {op} {t}   {'met' if ok else 'MISSED'}")
    print(f"  max |SE diff| {summary['max_abs_se_diff']:.4f}; Spearman(published LC, our raw WR) "
          f"{summary['wr_spearman_with_published_lc']:.3f}")
    ratio = [r["lc_se_ours"] / r["lc_se_published"] for r in rows if r["lc_se_published"]]
    sem_ratio = [r["lc_prediction_sem_ours"] / r["lc_se_published"] for r in rows if r["lc_se_published"]]
    if ratio:
        summary["lc_se_ratio"] = {"models": len(ratio), "min": float(min(ratio)), "max": float(max(ratio))}
        summary["lc_prediction_sem_ratio"] = {"models": len(sem_ratio), "min": float(min(sem_ratio)),
                                              "max": float(max(sem_ratio))}
        print(f"  LC standard error / the published one, on the {len(ratio)} models the leaderboard gives it for: "
              f"ours (delta method on the fit) {min(ratio):.2f} to {max(ratio):.2f}; AlpacaEval's definition (the "
              f"predictions' sem) computed here {min(sem_ratio):.2f} to {max(sem_ratio):.2f}")
    adv = [r for r in rows if r["model"] != ADVERSARIAL]
    if len(adv) < len(rows):
        a_d = np.array([r["lc_diff"] for r in adv])
        summary["without_adversarial"] = {
            "model_left_out": ADVERSARIAL, "lc_median_abs_diff": float(np.median(np.abs(a_d))),
            "lc_max_abs_diff": float(np.abs(a_d).max()),
            "lc_spearman": spearman([r["lc_published"] for r in adv], [r["lc_ours"] for r in adv])}
        w = summary["without_adversarial"]
        print(f"  without {ADVERSARIAL} (the truncation attack AlpacaEval's regularisation to the baseline is there "
              f"for): LC median |diff| {w['lc_median_abs_diff']:.3f}, max {w['lc_max_abs_diff']:.3f}, Spearman "
              f"{w['lc_spearman']:.3f}")
    print(f"with difficulty 0: LC median |diff| {summary['lc_difficulty0_median_abs_diff']:.3f}, max "
          f"{summary['lc_difficulty0_max_abs_diff']:.3f}, Spearman {summary['lc_difficulty0_spearman']:.3f}")
    print(f"the difficulty estimate moves LC by median {summary['difficulty_moves_lc_median_abs']:.3f}, max "
          f"{summary['difficulty_moves_lc_max_abs']:.3f} points (estimated vs 0)")

    coef = {}
    if (lbdir / WEIGHTS).is_file():
        w = weights(lbdir)
        both = [m for m in listed if model_dir.get(m, m) in w and est.glms.get(m)]
        for k in COEFS:
            a = [w[model_dir.get(m, m)][k] for m in both]
            b = [est.glms[m][k] for m in both]
            b0 = [zero.glms[m][k] for m in both]
            coef[k] = {"models": len(both), "pearson": pearson(a, b), "spearman": spearman(a, b),
                       "median_published": float(np.median(a)), "median_ours": float(np.median(b))}
            if k != "difficulty":
                coef[k]["pearson_difficulty0"] = pearson(a, b0)
        # isolate the two differences: AlpacaEval's own fitted weights with OUR difficulties
        values = diff["difficulty"]
        mixed = []
        for m in both:
            mc, pw = comp.models[m], w[model_dir.get(m, m)]
            dv = np.array([values.get(i, 0.0) for i in mc.item_ids])
            lc = 100 * float(np.mean(1 / (1 + np.exp(-(pw["intercept"] + pw["difficulty"] * dv)))))
            mixed.append(lc - pub[model_dir.get(m, m)]["lc"])
        mixed = np.abs(np.array(mixed))
        coef["published_weights_with_our_difficulty"] = {"lc_median_abs_diff": float(np.median(mixed)),
                                                         "lc_max_abs_diff": float(mixed.max())}
        print()
        print(f"AlpacaEval's published GLM weights with our estimated difficulties: LC median |diff| "
              f"{np.median(mixed):.3f}, max {mixed.max():.3f} (what the difficulty estimate alone costs)")
        print(f"GLM coefficients vs AlpacaEval's published weights ({WEIGHTS}; {len(both)} models):")
        for k in COEFS:
            v = coef[k]
            extra = f", with difficulty 0: Pearson {v['pearson_difficulty0']:.3f}" if "pearson_difficulty0" in v else ""
            print(f"  {k:<10} ({COEFS[k]}): Pearson {v['pearson']:.3f}, Spearman {v['spearman']:.3f}; median published "
                  f"{v['median_published']:.2f}, ours {v['median_ours']:.2f}{extra}")
    agree = docs_agreement(lbdir, pub, {model_dir.get(m, m) for m in listed})
    if agree and agree["file"] != lb_file:
        print(f"\n{agree['file']} lists {agree['models_matched']} of these models (matched by its samples URL); its "
              f"values differ from {lb_file} by at most {agree['max_abs_difference']:.2g}")
    print(f"\n{time.time() - t0:.0f} s (difficulty estimate {t_diff:.0f} s)")
    if not args.no_command:
        timings = []
        print("\nthe command, in a fresh process each:")
        for extra in ([], ["--by", "dataset"]):
            t = time_command(extra)
            timings.append(t)
            print(f"  {t['command']}: {t['wall_s']:.1f} s wall ({t['cpu_s']:.1f} s CPU), ratio to the {TARGET_S:.0f} s "
                  f"target {t['ratio_to_target']:.2f} ({'met' if t['wall_s'] <= TARGET_S else 'MISSED'}); "
                  f"{t['cores']} cores, load average {t['load_average']:.1f}")
        summary["command_timings"] = timings
    if args.out:
        write_json(args.out, {"leaderboard": lb_file, "verdicts": est.verdicts, "difficulty": est.difficulty["how"],
                              "glm_variant": est.difficulty["glm_variant"],
                              "summary": summary, "targets": {k: list(v) for k, v in targets.items()},
                              "coefficients": coef, "docs_leaderboard": agree, "not_listed": unlisted,
                              "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
