"""FastChat pairwise judgment files through `evalsift arena`: battles = rows, and Bradley-Terry equal to FastChat's.

FastChat's judgment files are not in the data folder (FastChat downloads them), so this writes them in
their published layout (`data/mt_bench/model_judgment/gpt-4_pair.jsonl`: question_id, model_1, model_2,
g1_winner, g2_winner, judge, turn, ...), for several seeds: every pair of K models on every question's two
turns, each row's two games from a judge with a position bias, 2% `error` games. For each file it prints the
rows, the rows FastChat keeps (no `error` game), the battles `evalsift arena` counts, and the largest
difference between evalsift's Bradley-Terry scores and FastChat's `compute_mle_elo` on the same rows,
reimplemented here from its definition: FastChat's one-result-per-row rule (the same non-tie winner in
both games wins, anything else a tie), a logistic regression without penalty on the battles with each
tie counted as one win each way, 400 log10 scale, shifted to a mean of 1000 as evalsift centres its
scores.

    python benchmarks/arena/fastchat_elo.py [--seeds 5] [--models 6] [--questions 80]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_pairs(path: Path, seed: int, K: int, questions: int) -> list[dict]:
    """A FastChat pairwise judgment file (the layout above) and its rows."""
    rng = random.Random(seed)
    names = [f"model-{k}" for k in range(K)]
    strength = {m: rng.gauss(0, 0.8) for m in names}
    rows = []
    for q in range(81, 81 + questions):
        for turn in (1, 2):
            for i in range(K):
                for k in range(i + 1, K):
                    m1, m2 = names[i], names[k]
                    p = 1 / (1 + math.exp(-(strength[m1] - strength[m2])))
                    games = []
                    for bias in (0.12, -0.12):  # the judge leans to the answer shown first
                        u = rng.random()
                        games.append("error" if u < 0.02 else "tie" if u < 0.12 else
                                     "model_1" if rng.random() < min(max(p + bias, 0.0), 1.0) else "model_2")
                    rows.append({"question_id": q, "model_1": m1, "model_2": m2, "g1_winner": games[0],
                                 "g2_winner": games[1], "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...",
                                 "g1_judgment": "...", "g2_user_prompt": "...", "g2_judgment": "...", "turn": turn,
                                 "tstamp": 1687221890.0 + len(rows)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def fastchat_elo(rows: list[dict]) -> dict[str, float]:
    """FastChat's rule and compute_mle_elo, from their definitions (see the module doc)."""
    from sklearn.linear_model import LogisticRegression

    kept = [r for r in rows if "error" not in (r["g1_winner"], r["g2_winner"])]
    models = sorted({r["model_1"] for r in kept} | {r["model_2"] for r in kept})
    idx = {m: k for k, m in enumerate(models)}
    X, Y = [], []
    for r in kept:
        x = np.zeros(len(models))
        x[idx[r["model_1"]]], x[idx[r["model_2"]]] = math.log(10), -math.log(10)
        if r["g1_winner"] == "tie" or r["g1_winner"] != r["g2_winner"]:
            X += [x, x]
            Y += [1.0, 0.0]
        else:
            win = 1.0 if r["g1_winner"] == "model_1" else 0.0
            X += [x, x]
            Y += [win, win]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-10, max_iter=10_000).fit(np.array(X), Y)
    elo = 400 * lr.coef_[0]
    return {m: float(e - elo.mean() + 1000) for m, e in zip(models, elo)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--models", type=int, default=6)
    ap.add_argument("--questions", type=int, default=80)
    args = ap.parse_args(argv)
    import warnings

    from evalsift.arena import read_battles
    from evalsift.arena.leaderboard import leaderboard
    from evalsift.errors import DataWarning

    warnings.simplefilter("ignore", DataWarning)  # the 'error' games, counted in the table

    t0 = time.perf_counter()
    print(f"{'seed':>4} {'rows':>6} {'kept':>6} {'battles':>8} {'separate':>9} {'max |Elo diff|':>15}")
    worst, same = 0.0, True
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            path = Path(tmp) / f"s{seed}" / "data" / "mt_bench" / "model_judgment" / "gpt-4_pair.jsonl"
            rows = write_pairs(path, seed, args.models, args.questions)
            kept = sum("error" not in (r["g1_winner"], r["g2_winner"]) for r in rows)
            battles = read_battles(str(path))
            separate = read_battles(str(path), games="separate").n
            board = leaderboard(battles)
            ref = fastchat_elo(rows)
            diff = max(abs(float(board.fit.scores[k]) - ref[m]) for k, m in enumerate(board.models))
            worst, same = max(worst, diff), same and battles.n == kept
            print(f"{seed:>4} {len(rows):>6} {kept:>6} {battles.n:>8} {separate:>9} {diff:>15.4f}")
    print(f"battles = rows kept by FastChat's rule in every file: {same}; largest |Elo diff| {worst:.4f} "
          f"(target <= 0.1); {time.perf_counter() - t0:.1f} s")
    return 0 if same and worst <= 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
