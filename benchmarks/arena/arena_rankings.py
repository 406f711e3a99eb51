"""Leaderboards from few human battles: coverage, rank-set size and width per budget and method (issue 22).

``arena``: on ``../shared/data/arena-ppr`` (or ``$EVALSIFT_DATA``), the reference is the leaderboard
from all 17,942 human battles (its scores and ranks). For each human budget (500 / 1,000 / 2,000 /
5,000 / 10,000) and method, ``--draws`` seeded draws of the human battles (uniform; Chatbot Arena's
active rule simulated on the recorded battles; our judge-aware stratified ``neyman`` draw), each
through :func:`evalsift.arena.leaderboard.leaderboard` exactly as ``evalsift arena`` runs it:

- coverage of the rank-sets: the share of draws in which *every* model's reference rank lies in its
  rank-set (they are simultaneous, nominal ``1 - alpha``); per-model coverage of the score intervals
  (nominal ``1 - alpha`` each) against the reference scores; mean rank-set size; mean interval width
  (Elo points);
- the battles human-only needs for the same mean rank-set size (interpolated on its curve in log
  budget), as a ratio: what the judges and the active rule save.

The reference is itself an estimate (all battles, not the models' true strengths): a finite-population
target the intervals, which are made for the superpopulation, cover conservatively as the budget
nears the file's size.

``bias``: on the same data, each model's mean signed error (the draw's score less the full-data fit, Elo)
with its standard error over the draws, for uniform and ``neyman`` draws, beside per-model coverage and
the battles-needed ratio: does an adaptive draw move the estimate (issue 29 reported the strongest model
3-4 s.e. too high under ``neyman``)?

``synthetic``: leagues of 20 models with known strengths (normal, sd 0.6 in log-odds), 20,000 battles
over uniformly random pairs with outcomes drawn from Bradley-Terry (no ties), and a judge that
repeats the human verdict with probability 0.6 and otherwise answers from its own, distorted
strengths (``--judge uneven``: right 90% of the time on a random half of the pairs, a coin on the
rest): coverage against the *true* strengths and ranks.

``stops``: ``--stop top-k:1`` on six-model leagues where the answer is known (a dead heat at the top, where
any stop is wrong; a clear best), ``--draws`` leagues each, and on Chatbot Arena with GPT-4 as the judge.

``speed``: a fit and 1,000 bootstrap replicates on 10^6 synthetic battles, beside FastChat's
``compute_elo_mle_with_tie`` (``pip install fschat``: timed on the same battles when it imports; its
bootstrap is one refit per replicate, timed on a few and scaled, said so in the table).

    EVALSIFT_DATA=../shared/data python benchmarks/arena/arena_rankings.py arena [--draws 100] [--alpha 0.1]
    python benchmarks/arena/arena_rankings.py bias [--draws 200] [--budgets 2000,5000] [--estimator mle|bias-corrected]
    python benchmarks/arena/arena_rankings.py synthetic [--draws 100] [--judge even|uneven] [--only neyman]
    python benchmarks/arena/arena_rankings.py stops [--draws 200]
    python benchmarks/arena/arena_rankings.py speed
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.arena import Battles, bootstrap_bt, fit_bt, ranks, read_battles
from evalsift.arena.bt import ELO
from evalsift.arena.leaderboard import leaderboard
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import finish_text  # noqa: E402

BUDGETS = (500, 1000, 2000, 5000, 10000)
JUDGES = ("gpt-4-0125-preview", "claude-3-opus-20240229", "gpt-3.5-turbo")


def methods_for(judges: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Each method: (allocation, judges). "all judges" rows only when there are several."""
    first = judges[:1]
    rows = {"human only, uniform": ("uniform", []), f"human + {first[0]}, uniform": ("uniform", first),
            "human + all judges, uniform": ("uniform", judges), "human only, active": ("active", []),
            f"human + {first[0]}, active": ("active", first), "human only, neyman": ("neyman", []),
            f"human + {first[0]}, neyman": ("neyman", first), "human + all judges, neyman": ("neyman", judges)}
    return {k: v for k, v in rows.items() if len(judges) > 1 or "all judges" not in k}


def measure(battles: Battles, ref_scores: np.ndarray, ref_ranks: np.ndarray, judges: list[str], budgets, draws: int,
            alpha: float, methods: dict | None = None) -> dict:
    """Per (method, budget): coverage, rank-set size, width, seconds per draw, and ``err`` (draws x models: each
    draw's scores less ``ref_scores``). ``methods``: default :func:`methods_for` ``judges``; a method is
    ``(allocation, judges)`` or ``(allocation, judges, estimator)`` (default ``mle``)."""
    res = {}
    for name, (alloc, js, *est) in (methods or methods_for(judges)).items():
        for n in budgets:
            if n > battles.n:
                continue
            cov_rank, cov_int, size, width, err, t0 = [], [], [], [], [], time.perf_counter()
            for s in range(draws):
                L = leaderboard(battles, judges=js, human_budget=n, allocation=alloc, alpha=alpha, seed=1000 + s,
                                estimator=est[0] if est else "mle")
                err.append(L.fit.scores - ref_scores)
                rs = L.rank_set
                cov_rank.append(bool(np.all((rs[:, 0] <= ref_ranks) & (ref_ranks <= rs[:, 1]))))
                cov_int.append(np.mean((L.interval[:, 0] <= ref_scores) & (ref_scores <= L.interval[:, 1])))
                size.append(np.mean(rs[:, 1] - rs[:, 0] + 1))
                width.append(np.mean(L.interval[:, 1] - L.interval[:, 0]))
            res[(name, n)] = {"rank": np.mean(cov_rank), "int": np.mean(cov_int), "size": np.mean(size),
                              "width": np.mean(width), "s": (time.perf_counter() - t0) / draws, "err": np.array(err)}
    return res


def equivalent(res: dict, base: str, n: int, size: float, budgets) -> float | None:
    """Human-only battles giving mean rank-set ``size`` (log-linear interpolation on its curve)."""
    pts = [(b, res[(base, b)]["size"]) for b in budgets if (base, b) in res]
    for (b0, s0), (b1, s1) in zip(pts, pts[1:]):
        if s1 <= size <= s0 and s0 > s1:
            f = (s0 - size) / (s0 - s1)
            return float(np.exp(np.log(b0) + f * (np.log(b1) - np.log(b0))))
    return None


def table(res: dict, budgets, alpha: float, title: str, base: str = "human only, uniform") -> str:
    names = list(dict.fromkeys(k[0] for k in res))
    lines = [f"### {title}", "", f"Per budget: rank-set coverage (all models at once; nominal {1 - alpha:.2f}) / score "
             f"interval coverage (per model) / mean rank-set size / mean interval width (Elo) / battles human-only needs "
             "for that rank-set size, as a ratio (budget / that)", "", *header(budgets)]
    for name in names:
        cells = []
        for b in budgets:
            r = res.get((name, b))
            if r is None:
                cells.append("-")
                continue
            eq = equivalent(res, base, b, r["size"], budgets)
            ratio = f"{b / eq:.2f}" if eq else "-"
            cells.append(f"{r['rank']:.2f} / {r['int']:.3f} / {r['size']:.2f} / {r['width']:.0f} / {ratio}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def arena_battles(root: Path):
    """Chatbot Arena's human battles with the three judges' verdicts, and the fit of all of them (the reference)."""
    folder = root / "arena-ppr"
    battles = read_battles(str(folder / "human.jsonl"), [str(folder / f"{j}.jsonl") for j in JUDGES])
    return battles, fit_bt(battles)


def header(budgets) -> list[str]:
    """A results table's column header, one column per budget."""
    return ["| method | " + " | ".join(f"{b} battles" for b in budgets) + " |", "|---|" + "---|" * len(budgets)]


def arena(root: Path, draws: int, alpha: float) -> str:
    battles, ref = arena_battles(root)
    res = measure(battles, ref.scores, ranks(ref.coef), list(JUDGES), BUDGETS, draws, alpha)
    return table(res, BUDGETS, alpha, f"Chatbot Arena (arena-ppr): 20 models, {battles.n} human battles; reference = all of "
                                      f"them; {draws} draws per cell, alpha {alpha}")


def bias(root: Path, draws: int, alpha: float, budgets, estimator: str = "mle") -> str:
    """The signed error of each model's score (the draw's estimate less the full-data fit, Elo) averaged over
    ``draws`` seeded draws, with its standard error over the draws, for uniform and neyman draws at each budget;
    beside it per-model interval coverage and the battles human-only uniform draws need for the same mean
    rank-set size (its curve measured at the neighbouring budgets of ``BUDGETS`` as well, always with the
    plain fit). ``estimator="bias-corrected"``: every row but that reference with the corrected scores,
    human-only uniform among them."""
    battles, ref = arena_battles(root)
    base = "human only, uniform"
    methods = {k: v for k, v in methods_for(list(JUDGES)).items() if v[0] != "active" and k != base}
    if estimator != "mle":
        methods = {f"{k}, {estimator}": (*v, estimator) for k, v in {base: ("uniform", []), **methods}.items()}
    lo = max([b for b in BUDGETS if b < min(budgets)] or [min(budgets)])
    hi = min([b for b in BUDGETS if b > max(budgets)] or [max(budgets)])
    curve = sorted({b for b in BUDGETS if lo <= b <= hi} | set(budgets))
    res = measure(battles, ref.scores, ranks(ref.coef), list(JUDGES), curve, draws, alpha, {base: ("uniform", [])})
    res.update(measure(battles, ref.scores, ranks(ref.coef), list(JUDGES), budgets, draws, alpha, methods))
    order = np.argsort(-ref.coef, kind="stable")
    top = int(order[0])
    names = [base] + list(methods)

    def stat(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return e.mean(axis=0), e.std(axis=0, ddof=1) / np.sqrt(len(e))

    lines = [f"### Signed error of the scores (estimate - the fit of all {battles.n} Chatbot Arena human battles, Elo), "
             f"{draws} draws per cell (seeds 1000-{999 + draws}), alpha {alpha}, estimator {estimator}", "",
             f"Per budget: the strongest model's ({battles.models[top]}) mean signed error +- its standard error over "
             "the draws (mean / s.e.) / models whose mean error is over 2 s.e. from 0 (of "
             f"{battles.K}) / per-model interval coverage / battles human-only uniform needs for the same mean "
             "rank-set size, as a ratio", "", *header(budgets)]
    for name in names:
        cells = []
        for b in budgets:
            r = res[(name, b)]
            m, se = stat(r["err"])
            eq = equivalent(res, base, b, r["size"], curve)
            cells.append(f"{m[top]:+.1f} +- {se[top]:.1f} ({m[top] / se[top]:+.1f}) / {int(np.sum(np.abs(m / se) > 2))} / "
                         f"{r['int']:.3f} / " + (f"{b / eq:.2f}" if eq else "-"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cols = [(name, b) for b in budgets for name in names]
    lines += ["", "Every model: mean signed error (Elo) and, in brackets, that mean in standard errors over the draws; "
              "models strongest first", "",
              "| model (full-data score) | " + " | ".join(f"{n}, {b}" for n, b in cols) + " |",
              "|---|" + "---|" * len(cols)]
    per = {c: stat(res[c]["err"]) for c in cols}
    for k in order:
        lines.append(f"| {battles.models[k]} ({ref.scores[k]:.0f}) | "
                     + " | ".join(f"{per[c][0][k]:+.1f} ({per[c][0][k] / per[c][1][k]:+.1f})" for c in cols) + " |")
    lines.append("")
    lines.append("Seconds per draw: " + ", ".join(f"{n} at {b}: {res[(n, b)]['s']:.2f}" for n, b in cols))
    return "\n".join(lines)


def synthetic_league(seed: int, n: int = 20000, K: int = 20, judge: str = "even") -> tuple[Battles, np.ndarray]:
    """A league with known strengths and one judge: ``even`` repeats the human verdict with probability 0.6
    and otherwise answers from its own, distorted strengths; ``uneven`` repeats it with probability 0.9 on a
    random half of the pairs and tosses a coin on the other half (a judge that knows some matchups only)."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 0.6, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
    if judge == "even":
        judged = beta + rng.normal(0, 0.4, K)  # the judge's own, distorted strengths
        own = (rng.random(n) < 1 / (1 + np.exp(-(judged[a] - judged[b])))).astype(float)
        f = np.where(rng.random(n) < 0.6, y, own)
    else:
        knows = rng.random((K, K)) < 0.5
        knows = np.triu(knows, 1) | np.triu(knows, 1).T
        coin = rng.integers(2, size=n).astype(float)
        f = np.where(knows[a, b], np.where(rng.random(n) < 0.9, y, 1 - y), coin)
    return Battles.from_arrays([f"m{k:02d}" for k in range(K)], a, b, y, judges={"judge": f}, source="synthetic"), beta


def synthetic(draws: int, alpha: float, judge: str = "even", only: str | None = None) -> str:
    """Coverage of the true strengths on synthetic leagues; ``only``: keep the rows whose name contains it
    (and the human-only uniform reference the ratio needs)."""
    budgets = BUDGETS
    out = {}
    methods = {k: v for k, v in methods_for(["judge"]).items()
               if only is None or only in k or k == "human only, uniform"}
    for s in range(draws):
        battles, beta = synthetic_league(s, judge=judge)
        true_scores = 1000 + ELO * (beta - beta.mean())
        r = measure(battles, true_scores, ranks(beta), ["judge"], budgets, 1, alpha, methods)
        for k, v in r.items():
            out.setdefault(k, []).append(v)
    res = {k: {m: float(np.mean([x[m] for x in v])) for m in v[0] if m != "err"} for k, v in out.items()}
    which = ("a judge right 60% of the time, else its own strengths" if judge == "even" else
             "a judge right 90% of the time on half the pairs, a coin on the rest")
    return table(res, budgets, alpha, f"Synthetic leagues (20 models, 20,000 battles, known strengths, {which}; {draws} "
                                      f"leagues, one draw each; alpha {alpha}): coverage of the TRUE ranks and scores")


def six_model_league(seed: int, strengths, n: int = 20000) -> Battles:
    rng = np.random.default_rng(seed)
    beta = np.asarray(strengths, float)
    a = rng.integers(len(beta), size=n)
    b = (a + rng.integers(1, len(beta), size=n)) % len(beta)
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
    return Battles.from_arrays([f"m{k}" for k in range(len(beta))], a, b, y, source="league")


def stops(root: Path, leagues: int) -> str:
    """``--stop top-k:1`` where the answer is known: six models, 20,000 battles each league, looks after
    100, 200, 400, ... and at 20,000. A dead heat at the top (the two best exactly level): any stop names a
    wrong best, so the share of leagues that stop is the observed risk. A clear best (0.6 log-odds ahead):
    how often it stops, names the right model, and after how many battles. Then Chatbot Arena with GPT-4
    as the judge."""
    heat = [0.8, 0.8, 0.0, -0.3, -0.6, -0.9]
    clear = [1.4, 0.8, 0.0, -0.3, -0.6, -0.9]
    lines = ["### Stop rule top-k:1 on six-model leagues (20,000 battles each, looks from 100 doubling)", "",
             "| league | alpha | leagues | stopped | stopped and right | median battles at the stop |",
             "|---|---|---|---|---|---|"]
    for name, strengths in (("dead heat at the top", heat), ("clear best, 0.6 ahead", clear)):
        for alpha in (0.1, 0.2):
            met, right, at = 0, 0, []
            for s in range(leagues):
                L = leaderboard(six_model_league(3000 + s, strengths), judges=[], human_budget=20000, stop="top-k:1",
                                first=100, alpha=alpha, seed=s)
                if L.stop["met"]:
                    met += 1
                    right += L.to_dict()["models"][0]["name"] == "m0" and strengths[0] > strengths[1]
                    at.append(L.stop["looks"][-1]["battles"])
            med = f"{int(np.median(at)):,}" if at else "-"
            lines.append(f"| {name} | {alpha} | {leagues} | {met} ({met / leagues:.3f}) | {right} | {med} |")
    folder = root / "arena-ppr"
    battles = read_battles(str(folder / "human.jsonl"), [str(folder / "gpt-4-0125-preview.jsonl")])
    lines += ["", "Chatbot Arena, human + gpt-4-0125-preview, alpha 0.1, --first 100, at most all 17,942 human battles:", ""]
    for rule in ("top-k:1", "top-k:4", "rank-set:3"):
        L = leaderboard(battles, human_budget=battles.n, stop=rule, first=100, alpha=0.1, seed=0)
        d = L.to_dict()
        got = (f"met after {L.stop['looks'][-1]['battles']:,} human battles"
               + (f"; the top: {', '.join(m['name'] for m in d['models'][:int(rule.split(':')[1])])}"
                  if rule.startswith("top") else "") if L.stop["met"] else
               f"not met within {L.stop['looks'][-1]['battles']:,}")
        lines.append(f"- `{rule}`: {got}")
    return "\n".join(lines)


def speed() -> str:
    n, K = 1_000_000, 20
    rng = np.random.default_rng(0)
    beta = rng.normal(0, 0.6, K)
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    u = rng.random(n)
    p = 1 / (1 + np.exp(-(beta[a] - beta[b])))
    y = np.where(u < 0.1, 0.5, (u < 0.1 + 0.9 * p).astype(float))
    models = [f"m{k:02d}" for k in range(K)]
    battles = Battles.from_arrays(models, a, b, y)
    t = time.perf_counter()
    fit_bt(battles)
    t_fit = time.perf_counter() - t
    t = time.perf_counter()
    bootstrap_bt(battles, 1000)
    t_boot = time.perf_counter() - t
    lines = ["### Speed: 10^6 battles, 20 models (10% ties), one run on this machine", "",
             "| code | fit | 1,000 bootstrap replicates |", "|---|---|---|",
             f"| evalsift (`fit_bt`, `bootstrap_bt`) | {t_fit:.2f} s | {t_boot:.1f} s |"]
    try:
        import pandas as pd
        from fastchat.serve.monitor.elo_analysis import compute_elo_mle_with_tie
    except Exception as e:  # noqa: BLE001 - the baseline is optional
        lines.append(f"| FastChat `compute_elo_mle_with_tie` | not run: {type(e).__name__}: {e} | - |")
    else:
        names = np.array(models)
        win = np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie"))
        df = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": win})
        t = time.perf_counter()
        compute_elo_mle_with_tie(df)
        t_fc = time.perf_counter() - t
        reps = 3
        t = time.perf_counter()
        for _ in range(reps):  # FastChat's get_bootstrap_result: resample with replacement, refit
            compute_elo_mle_with_tie(df.sample(frac=1.0, replace=True))
        t_fcb = (time.perf_counter() - t) / reps * 1000
        lines.append(f"| FastChat `compute_elo_mle_with_tie` (sklearn) | {t_fc:.2f} s | {t_fcb:.0f} s (timed on {reps}, "
                     f"x 1000/{reps}) |")
        lines.append("")
        lines.append(f"Ratios (FastChat / evalsift): fit {t_fc / t_fit:.0f}x, bootstrap {t_fcb / t_boot:.0f}x.")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["arena", "bias", "synthetic", "stops", "speed"])
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--judge", choices=["even", "uneven"], default="even",
                    help="synthetic: the judge's quality, the same on every pair (even) or good on half of them (uneven)")
    ap.add_argument("--budgets", default="2000,5000", help="bias: the human budgets, comma-separated")
    ap.add_argument("--estimator", choices=["mle", "bias-corrected"], default="mle",
                    help="bias: the scores' estimator in every row but the human-only uniform reference curve")
    ap.add_argument("--only", help="synthetic: only the rows whose name contains this (e.g. neyman), beside the "
                                   "human-only uniform reference")
    ap.add_argument("--out", help="also write the table (markdown) here")
    args = ap.parse_args()
    root = Path(os.environ.get("EVALSIFT_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    t0 = time.time()
    text = (arena(root, args.draws, args.alpha) if args.what == "arena" else
            bias(root, args.draws, args.alpha, [int(b) for b in args.budgets.split(",")], args.estimator)
            if args.what == "bias" else
            synthetic(args.draws, args.alpha, args.judge, args.only) if args.what == "synthetic" else
            stops(root, args.draws) if args.what == "stops" else speed())
    return finish_text(text, time.time() - t0, __file__, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
