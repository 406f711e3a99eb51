"""Style control for Bradley-Terry (issue 32 part 3): synthetic leagues with a known length effect, and a
real style-controlled board beside the raw one.

``synthetic``: leagues of K models (8, 10, 12) with known strengths (normal, sd 0.6 log-odds, centred),
each model with its own answer-length distribution (log-normal, model means sd 0.6 on the log scale)
and markdown habit (Poisson headers, bold, list items), drawn independently of the strengths; battles
over random pairs whose first side wins with probability ``sigma(beta_a - beta_b + z . gamma)``, ``z``
the scaled style features as :func:`evalsift.arena.style.style_covariates` makes them and ``gamma`` =
0.5 on length, 0.15 on bold, 0 on headers and lists. Every board is made by
:func:`evalsift.arena.leaderboard.leaderboard` with ``style=`` the ``length,markdown`` covariates
(exactly what ``evalsift arena --style-control length,markdown`` runs), at alpha 0.1 (nominal 90%):

- ``all``: every battle a human verdict (sandwich);
- ``ppi``: a uniform human budget of 15% of the battles plus a judge on all of them (repeats the
  verdict with probability 0.7, else a coin), PPI++;
- ``active``: the same budget drawn by Chatbot Arena's active rule (weighted by inverse probabilities);
- ``bootstrap``: every battle, bootstrap intervals and rank-sets (B = 400; the 10-model leagues only).

Reported per mode, controlled and raw (the same draws fitted without the covariates): the mean signed
error (Elo) of the verbose half of each league (the models with above-median mean length: the raw fit
overrates them) with its standard error over leagues, the RMSE, per-model 90% interval coverage, joint
rank-set coverage, and the length coefficient's coverage. Targets: |controlled mean signed error| <= 1
s.e.; controlled coverage >= 0.88.

``real``: AlpacaEval's judge preferences (each model against the baseline; a verdict by which side of
1.5 the weighted preference falls) for the models whose outputs are in ``alpaca-eval/model_outputs``,
read as ``evalsift arena --data alpaca-eval/preferences[/<config>] --outputs alpaca-eval --style-control
length,markdown --style-missing drop`` reads them: the board (controlled and raw), per model the mean
answer length, and AlpacaEval's published raw and length-controlled win rates beside it. The terminal
board of the default config is saved to ``--board`` (default bench-out/style_board.txt).

    python benchmarks/style_control.py synthetic [--leagues 40]
    EVALSIFT_DATA=../shared/data python benchmarks/style_control.py real
    python benchmarks/style_control.py all
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalsift.arena import Battles  # noqa: E402
from evalsift.arena.bt import ELO, ranks  # noqa: E402
from evalsift.arena.leaderboard import leaderboard  # noqa: E402
from evalsift.arena.style import parse_style, style_covariates  # noqa: E402

GAMMA = {"length": 0.5, "headers": 0.0, "bold": 0.15, "lists": 0.0}
ALPHA = 0.1


def league(seed: int, K: int, n: int):
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 0.6, K)
    beta -= beta.mean()
    mu = rng.normal(np.log(300), 0.6, K)
    md = rng.gamma(2.0, 1.5, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    side = np.column_stack([a, b])
    counts = {"length": rng.lognormal(mu[side], 0.4).round(), "headers": rng.poisson(md[side] / 3).astype(float),
              "bold": rng.poisson(md[side]).astype(float), "lists": rng.poisson(md[side] * 1.5).astype(float)}
    battles = replace(Battles.from_arrays([f"m{k}" for k in range(K)], a, b, np.zeros(n)), style=counts)
    cov = style_covariates(battles, parse_style("length,markdown"))
    eta = beta[a] - beta[b] + cov.z @ np.array([GAMMA[f] for f in cov.names])
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    judge = np.where(rng.random(n) < 0.7, y, rng.integers(2, size=n).astype(float))
    return replace(battles, y=y, judges={"judge": judge}), cov, beta, mu


def _measure(board, beta, verbose):
    """Errors (Elo) of a board against the true strengths, on the board's own scale."""
    truth = 1000 + ELO * beta
    anchor = ~board.few_mask() if not board.few_mask().all() else np.ones(len(beta), bool)
    truth = truth - truth[anchor].mean() + 1000
    scores = board.fit.scores
    err = scores - truth
    inside = (board.interval[:, 0] <= truth) & (truth <= board.interval[:, 1])
    r = ranks(beta)
    joint = bool(np.all((board.rank_set[:, 0] <= r) & (r <= board.rank_set[:, 1])))
    return {"verbose_err": float(err[verbose].mean()), "sq": list(err ** 2), "inside": list(inside), "joint": joint}


def synthetic(leagues: int) -> dict:
    configs = [(8, 3000), (10, 6000), (12, 10000)]
    modes = {"all": {}, "ppi": {"human_budget": 0.15}, "active": {"human_budget": 0.15, "allocation": "active"},
             "bootstrap": {"intervals": "bootstrap", "B": 400}}
    out = {}
    print(f"synthetic: alpha {ALPHA} (nominal {1 - ALPHA:.0%}), true gamma {GAMMA}; Elo units")
    head = (f"{'mode':<10} {'K':>3} {'n':>6} {'lg':>3}  {'fit':<10} {'verbose err':>12} {'s.e.':>6} {'|e|/se':>6} "
            f"{'rmse':>6} {'cover':>6} {'joint':>6} {'len cover':>9}")
    print(head)
    for mode, kw in modes.items():
        for K, n in configs:
            L = leagues
            if mode == "bootstrap" and K != 10:
                continue
            res = {"controlled": [], "raw": []}
            gcover = []
            t = time.time()
            for s in range(L):
                battles, cov, beta, mu = league(1000 * K + s, K, n)
                verbose = mu > np.median(mu)
                args = dict(kw)
                if "human_budget" in args:
                    args["human_budget"] = int(args["human_budget"] * n)
                board = leaderboard(battles, style=cov, alpha=ALPHA, seed=s, **args)
                res["controlled"].append(_measure(board, beta, verbose))
                res["raw"].append(_measure(board.raw, beta, verbose))
                c = board.style["coefficients"][0]
                gcover.append(c["interval"][0] <= GAMMA["length"] <= c["interval"][1])
            secs = time.time() - t
            for fit, rows in res.items():
                e = np.array([r["verbose_err"] for r in rows])
                se = float(e.std(ddof=1) / np.sqrt(len(e)))
                row = {"mode": mode, "K": K, "n": n, "leagues": L, "fit": fit, "verbose_mean_signed_error": float(e.mean()),
                       "se": se, "rmse": float(np.sqrt(np.mean([x for r in rows for x in r["sq"]]))),
                       "coverage": float(np.mean([x for r in rows for x in r["inside"]])),
                       "joint_rank_set_coverage": float(np.mean([r["joint"] for r in rows])),
                       "length_coef_coverage": float(np.mean(gcover)) if fit == "controlled" else None,
                       "seconds": secs}
                out[f"{mode}/{K}/{fit}"] = row
                print(f"{mode:<10} {K:>3} {n:>6} {L:>3}  {fit:<10} {row['verbose_mean_signed_error']:>+12.2f} {se:>6.2f} "
                      f"{abs(row['verbose_mean_signed_error']) / se:>6.2f} {row['rmse']:>6.1f} {row['coverage']:>6.3f} "
                      f"{row['joint_rank_set_coverage']:>6.3f} "
                      + (f"{row['length_coef_coverage']:>9.3f}" if fit == "controlled" else f"{'':>9}"), flush=True)
    return out


def _published(root: Path) -> dict:
    """AlpacaEval 2.0's published raw and length-controlled win rates (weighted GPT-4 Turbo judge)."""
    f = root / "alpaca-eval/leaderboards/src__alpaca_eval__leaderboards__data_AlpacaEval_2__weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
    if not f.is_file():
        return {}
    with open(f, newline="") as fh:
        rows = list(csv.DictReader(fh))
    name = next(k for k in rows[0] if k.strip() in ("", "Unnamed: 0", "name", "model"))
    return {r[name]: (float(r["win_rate"]), float(r["length_controlled_winrate"])) for r in rows
            if r.get("win_rate") and r.get("length_controlled_winrate")}


def real(board_path: Path) -> dict:
    from evalsift.arena.battles import read_battles
    from evalsift.arena.style import missing_text

    root = Path(os.environ.get("EVALSIFT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    os.environ.setdefault("EVALSIFT_DATA", str(root))
    published = _published(root)
    out = {}
    for config in ("", "/alpaca_eval_gpt4"):
        spec = "alpaca-eval/preferences" + config
        t = time.time()
        battles = read_battles(spec, texts=True, outputs="alpaca-eval")
        miss = missing_text(battles)
        n0 = battles.n
        battles = battles.keep(~miss)
        cov = style_covariates(battles, parse_style("length,markdown"))
        board = leaderboard(battles, style=cov, alpha=0.05)
        board.notes.append(f"{int(miss.sum())} of {n0} battles without both texts left out (models without outputs)")
        text = board.summary()
        L = battles.style["length"]
        mean_len = {m: float(np.mean(np.concatenate([L[battles.a == k, 0], L[battles.b == k, 1]])))
                    for k, m in enumerate(battles.models)}
        lines = [f"== {spec} (texts: alpaca-eval/model_outputs; {time.time() - t:.1f} s)", text, "",
                 f"{'model':<24} {'mean tokens':>11}  {'controlled':>10}  {'raw':>7}"
                 + ("  AlpacaEval 2.0 win rate / length-controlled" if not config else "")]
        for m in board.to_dict()["models"]:
            pub = published.get(m["name"]) if not config else None
            lines.append(f"{m['name']:<24} {mean_len[m['name']]:>11.0f}  {m['score']:>10.1f}  {m['raw']['score']:>7.1f}"
                         + (f"  {pub[0]:5.1f} / {pub[1]:5.1f}" if pub else ""))
        block = "\n".join(lines)
        print(block, flush=True)
        if not config:
            board_path.parent.mkdir(parents=True, exist_ok=True)
            board_path.write_text(block + "\n", encoding="utf-8")
        out[spec] = board.to_dict()
    print(f"saved the board to {board_path}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=["synthetic", "real", "all"])
    ap.add_argument("--leagues", type=int, default=40)
    ap.add_argument("--board", default="bench-out/style_board.txt")
    ap.add_argument("--out", default="bench-out/style_control.json")
    args = ap.parse_args()
    result = {}
    if args.part in ("synthetic", "all"):
        result["synthetic"] = synthetic(args.leagues)
    if args.part in ("real", "all"):
        result["real"] = real(Path(args.board))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
