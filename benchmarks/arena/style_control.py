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

``fastchat`` (issue 42): evalsift's style control beside FastChat's, both on the same battles written two
ways -- with fixed sides (the lower-numbered model always first, as a file sorted by model writes them; or
AlpacaEval's baseline always first) and with random sides (a battle written the other way round swaps the
sides, the verdict and the counts: the same battle). FastChat's ``compute_style_control``
(``fastchat/serve/monitor/rating_systems.py``) is reimplemented here from its definition: the features
``(c_a - c_b) / (c_a + c_b + 1)`` *centred* by their mean over the battles and divided by their standard
deviation, a logistic regression on ``ln 10 (r_a - r_b) + z . gamma`` with an L2 penalty of 0.5 on every
parameter, fitted by L-BFGS (its 100-iteration cap raised to 2,000 so both fits converge), ratings
``400 r + 1000``, here centred on 1000 as evalsift centres its scores. Printed per league: the largest move
of any model's score between the two writings (evalsift's features are not centred, so a swapped battle
flips its features with its strength difference and nothing moves; FastChat's mean moves with the sides,
and its centring acts as a fixed first-side advantage), the largest difference between the two methods'
scores with the fixed sides, and the mean of the length feature there before centring. Synthetic leagues as
``synthetic`` (10 models, 6,000 battles); real: AlpacaEval's weighted GPT-4 Turbo preferences with the
outputs of ``alpaca-eval/model_outputs`` (9 models), the baseline first in every battle as AlpacaEval
writes it, so the length feature's mean is far from 0 and FastChat's centring moves the baseline against
the others.

    python benchmarks/arena/style_control.py synthetic [--leagues 40]
    EVALSIFT_DATA=../shared/data python benchmarks/arena/style_control.py real
    EVALSIFT_DATA=../shared/data python benchmarks/arena/style_control.py fastchat [--leagues 20]
    python benchmarks/arena/style_control.py all
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from evalsift.arena import Battles  # noqa: E402
from evalsift.arena.bt import ELO, ranks  # noqa: E402
from evalsift.arena.leaderboard import leaderboard  # noqa: E402
from evalsift.arena.style import parse_style, style_covariates  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

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

    root = Path(os.environ.get("EVALSIFT_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
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


FASTCHAT_ORDER = ("length", "headers", "lists", "bold")  # STYLE_CONTROL_ELEMENTS_V1's order (tokens, header, list, bold)


def fastchat_style_scores(battles) -> np.ndarray:
    """FastChat's ``compute_style_control`` on ``battles`` (with style counts), from its definition (module doc):
    the scores, centred on 1000."""
    from scipy.optimize import minimize
    from scipy.special import expit

    K = battles.K
    cols = []
    for f in FASTCHAT_ORDER:
        c = battles.style[f]
        d = (c[:, 0] - c[:, 1]) / (c[:, 0] + c[:, 1] + 1.0)
        sd = d.std()
        cols.append((d - d.mean()) / sd if sd > 0 else np.zeros_like(d))
    z = np.column_stack(cols)
    a, b, y = battles.a, battles.b, battles.y
    alpha, reg = np.log(10.0), 0.5

    def loss(theta):
        r, g = theta[:K], theta[K:]
        eta = alpha * (r[a] - r[b]) + z @ g
        p = expit(eta)
        value = float(np.sum(np.logaddexp(0, eta) - y * eta)) + reg / 2 * float(theta @ theta)
        err = y - p
        grad = reg * theta
        np.add.at(grad, a, -alpha * err)
        np.add.at(grad, b, alpha * err)
        grad[K:] -= z.T @ err
        return value, grad

    res = minimize(loss, np.zeros(K + z.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-8})
    scores = 400.0 * res.x[:K] + 1000.0
    return scores - scores.mean() + 1000.0


def evalsift_style_scores(battles) -> np.ndarray:
    """``evalsift arena --style-control length,markdown --estimator mle``'s scores on ``battles``."""
    from evalsift.arena.bt import fit_bt, independent_covariates

    cov, _ = independent_covariates(style_covariates(battles, parse_style("length,markdown")), battles.a, battles.b,
                                    battles.K)
    return fit_bt(battles, covariates=cov).scores


def swapped(battles, which: np.ndarray):
    """The same battles with those at ``which`` written the other way round (sides, verdict and counts)."""
    a, b, y = battles.a.copy(), battles.b.copy(), battles.y.copy()
    a[which], b[which], y[which] = battles.b[which], battles.a[which], 1.0 - battles.y[which]
    style = {k: v.copy() for k, v in battles.style.items()}
    for v in style.values():
        v[which] = v[which][:, ::-1]
    return replace(battles, a=a, b=b, y=y, style=style)


def fastchat(leagues: int) -> dict:
    print("fastchat: the same battles written two ways; Elo, scores centred on 1000")
    print(f"{'data':<34} {'evalsift moves':>14} {'FastChat moves':>14} {'evalsift vs FastChat':>20} {'mean length feat.':>17}")
    out = {"synthetic": []}

    def row(name, battles, other):
        e0, e1 = evalsift_style_scores(battles), evalsift_style_scores(other)
        f0, f1 = fastchat_style_scores(battles), fastchat_style_scores(other)
        c = battles.style["length"]
        mean_len = float(np.mean((c[:, 0] - c[:, 1]) / (c[:, 0] + c[:, 1] + 1.0)))
        r = {"evalsift_moves": float(np.abs(e1 - e0).max()), "fastchat_moves": float(np.abs(f1 - f0).max()),
             "methods_differ": float(np.abs(e0 - f0).max()), "mean_length_feature": mean_len}
        print(f"{name:<34} {r['evalsift_moves']:>14.2f} {r['fastchat_moves']:>14.2f} {r['methods_differ']:>20.2f} "
              f"{mean_len:>+17.3f}", flush=True)
        return r

    for s in range(leagues):
        battles, _, _, _ = league(5000 + s, 10, 6000)
        # the same battles with the lower-numbered model always written first (a file sorted by model name)
        out["synthetic"].append(row(f"synthetic {s}: sorted vs random sides", swapped(battles, battles.a > battles.b),
                                    battles))
    root = Path(os.environ.get("EVALSIFT_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    if (root / "alpaca-eval").is_dir():
        from evalsift.arena.battles import read_battles
        from evalsift.arena.style import missing_text

        os.environ.setdefault("EVALSIFT_DATA", str(root))
        battles = read_battles("alpaca-eval/preferences", texts=True, outputs="alpaca-eval")
        battles = battles.keep(~missing_text(battles))
        out["alpaca"] = row("AlpacaEval: baseline first vs random", battles,
                            swapped(battles, np.random.default_rng(0).random(battles.n) < 0.5))
    for key in ("evalsift_moves", "fastchat_moves", "methods_differ"):
        v = [r[key] for r in out["synthetic"]]
        print(f"synthetic, {key}: median {np.median(v):.2f}, largest {np.max(v):.2f} Elo")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=["synthetic", "real", "fastchat", "all"])
    ap.add_argument("--leagues", type=int, default=40)
    ap.add_argument("--board", default="bench-out/style_board.txt")
    ap.add_argument("--out", default="bench-out/style_control.json")
    args = ap.parse_args()
    result = {}
    if args.part in ("synthetic", "all"):
        result["synthetic"] = synthetic(args.leagues)
    if args.part in ("real", "all"):
        result["real"] = real(Path(args.board))
    if args.part in ("fastchat", "all"):
        result["fastchat"] = fastchat(min(args.leagues, 20))
    write_json(args.out, result, indent=1, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
