"""The arena at every sample size (issue 30): few-battle models, small budgets, stop rules on dead heats.

Each part runs the library's :func:`evalsift.arena.leaderboard.leaderboard` exactly as ``evalsift arena``
does, once with the few-battle floor off (``few=0``, the rule before issue 30) and once with the
default (``few=FEW``, :func:`evalsift.arena.bt.few_battle_floor`), at ``--alpha`` (default 0.1).

``few``: one model kept to 1, 2, 3, 5, 7 or 10 battles (all others' battles kept). Synthetic leagues:
20 models with strengths drawn normal (sd 0.6 log-odds), 2,000 battles over random pairs with
Bradley-Terry outcomes, model 0 capped; the target is its true centred strength. Chatbot Arena
(``arena-ppr/human.jsonl``): every battle without the capped model plus that many of its battles, drawn
at random; the capped model cycles through the 20 models over the draws; the target is its score in
the fit of all 17,942 battles. ``won``: the capped model keeps only battles it won. Reported: that
model's interval coverage (nominal ``1 - alpha``), the joint rank-set coverage, and how often it is
printed as surely best (rank-set 1-1) when it is not the best. Targets are put on each board's scale
(1000 at the mean of the models it did not mark as having few battles) before they are compared.

``budgets``: 100, 200, 500 human battles drawn uniformly (20 models): joint rank-set coverage, mean and
lowest per-model interval coverage, mean rank-set size; synthetic leagues against the true strengths,
Chatbot Arena against the full fit.

``scores`` (issue 42): the printed scores at 100, 200, 500 human battles (``--budgets``), the plain fit
(``--estimator mle``, the default before) beside the default now (``auto``: below 400 human battles per
model on average, the empirical-Bayes shrunk scores, :func:`evalsift.arena.bt.shrinkage_prior`), on the
same draws. Synthetic: 20 models, strengths drawn normal (sd 0.6) for each draw, battles over random
pairs (no ties), against the true strengths; Chatbot Arena: ``n`` of its 17,942 human battles drawn
uniformly, against the fit of all of them; Chatbot Arena with GPT-4 (``gpt-4-0125-preview``) as a judge
on every battle (PPI++). Per cell: the *leader's* signed error (the model in the first row; its mean over
draws +- its standard error, and that ratio), the RMSE over all models, how often the first row is a
model marked few-battle or unresolved (``?``: rank-set wider than half the board), joint rank-set
coverage, mean and lowest per-model interval coverage, and draws that print a model surely best (rank-set
1-1) when it is not. Targets are put on each board's scale first, as above.

``heats``: ``--stop top-k:1`` on dead heats of 20 models (any stop names a wrong best), at alpha 0.01,
0.05, 0.1, 0.2, ``--draws`` leagues each, looks after 100, 200, 400, ... up to 6,400 human battles.
Synthetic: the 20 strengths drawn as above with the best duplicated (two models level at the top);
Chatbot Arena: gpt-4's battles split at random between two copies of it, llama-13b left out (20 models).
Reported: the share of leagues that stop (wrong stops), beside alpha + 2 standard errors.

    python benchmarks/arena/arena_small.py few [--draws 200]
    EVALSIFT_DATA=../shared/data python benchmarks/arena/arena_small.py budgets [--draws 200]
    python benchmarks/arena/arena_small.py heats [--draws 500] [--alphas 0.01,0.05,0.1,0.2] [--which synthetic,arena]
    EVALSIFT_DATA=../shared/data python benchmarks/arena/arena_small.py scores [--draws 200] [--budgets 100,200,500]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.arena import Battles, fit_bt, ranks, read_battles
from evalsift.arena.bt import ELO, FEW
from evalsift.arena.leaderboard import leaderboard
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import finish_text  # noqa: E402

CAPS = (1, 2, 3, 5, 7, 10)


def synthetic(seed: int, n: int, K: int = 20, heat: bool = False) -> tuple[Battles, np.ndarray]:
    """``n`` battles over random pairs of ``K`` models with normal strengths (sd 0.6); ``heat``: the best
    two level (the best strength given to the second best as well)."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 0.6, K)
    if heat:
        top = np.argsort(-beta)[:2]
        beta[top[1]] = beta[top[0]]
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
    return Battles.from_arrays([f"m{k:02d}" for k in range(K)], a, b, y, source="synthetic"), beta


def capped(battles: Battles, model: int, cap: int, rng, won: bool = False) -> Battles:
    """Every battle without ``model`` and ``cap`` of its battles at random (only ones it won, with ``won``)."""
    a, b, y = battles.a, battles.b, battles.y
    mine = (a == model) | (b == model)
    pool = mine & (((a == model) & (y == 1)) | ((b == model) & (y == 0))) if won else mine
    keep = np.concatenate([np.flatnonzero(~mine), rng.choice(np.flatnonzero(pool), cap, replace=False)])
    return battles.subset(np.sort(keep))


def arena_human(root: Path) -> Battles:
    return read_battles(str(root / "arena-ppr" / "human.jsonl"))


def centred(beta: np.ndarray) -> np.ndarray:
    return 1000 + ELO * (beta - beta.mean())


def on_scale(target: np.ndarray, board) -> np.ndarray:
    """Elo scores ``target`` moved to the board's scale: 1000 at the mean of the models it did not mark
    as having few battles (all of them when it marked none, or all)."""
    keep = ~board.few_mask()
    return target - target[keep].mean() + 1000 if keep.any() else target - target.mean() + 1000


def arena_reference(root: Path):
    """Chatbot Arena's human battles and their full fit's Elo scores, or (None, None) without the data."""
    if not (root / "arena-ppr").is_dir():
        return None, None
    arena = arena_human(root)
    return arena, centred(fit_bt(arena).coef)


def _check(L, target: np.ndarray, model: int) -> tuple[bool, bool, bool]:
    """(the model's interval covers, every rank-set covers, printed surely best while not the best)."""
    target = on_scale(target, L)
    r = ranks(target)
    rs = L.rank_set
    joint = bool(np.all((rs[:, 0] <= r) & (r <= rs[:, 1])))
    cover = bool(L.interval[model, 0] <= target[model] <= L.interval[model, 1])
    return cover, joint, bool(rs[model, 1] == 1 and r[model] != 1)


def few(root: Path, draws: int, alpha: float) -> str:
    arena, ref = arena_reference(root)
    lines = [f"### One model kept to a few battles (alpha {alpha}; {draws} draws per cell): the capped model's interval "
             "coverage / joint rank-set coverage / share printed surely best while not the best", "",
             "| data | battles of the capped model | before (few=0) | after (few=" + str(FEW) + ") |", "|---|---|---|---|"]
    for data in ("synthetic", "synthetic, won all", "Chatbot Arena", "Chatbot Arena, won all"):
        if data.startswith("Chatbot") and arena is None:
            lines.append(f"| {data} | - | not run: no arena-ppr under {root} | - |")
            continue
        for cap in CAPS:
            cells = []
            for f in (0, FEW):
                got = []
                for s in range(draws):
                    rng = np.random.default_rng([s, cap])
                    if data.startswith("synthetic"):
                        full, beta = synthetic(s, 2000)
                        model, target = 0, centred(beta)
                    else:
                        full, model, target = arena, s % arena.K, ref
                    try:
                        bt = capped(full, model, cap, rng, won=data.endswith("won all"))
                    except ValueError:  # fewer such battles than the cap
                        continue
                    L = leaderboard(bt, judges=[], alpha=alpha, seed=s, few=f)
                    got.append(_check(L, target, model))
                g = np.array(got, float)
                cells.append(f"{g[:, 0].mean():.3f} / {g[:, 1].mean():.3f} / {g[:, 2].mean():.3f}" if len(g) else "-")
            lines.append(f"| {data} | {cap} | {cells[0]} | {cells[1]} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def budgets(root: Path, draws: int, alpha: float) -> str:
    arena, ref = arena_reference(root)
    lines = [f"### Small budgets, 20 models (alpha {alpha}; {draws} draws per cell): joint rank-set coverage / mean "
             "per-model interval coverage / lowest model's coverage / mean rank-set size", "",
             "| data | human battles | before (few=0) | after (few=" + str(FEW) + ") |", "|---|---|---|---|"]
    for data in ("synthetic", "Chatbot Arena"):
        if data == "Chatbot Arena" and arena is None:
            lines.append(f"| {data} | - | not run: no arena-ppr under {root} | - |")
            continue
        for n in (100, 200, 500):
            cells = []
            for f in (0, FEW):
                joint, per, size = [], [], []
                for s in range(draws):
                    if data == "synthetic":
                        bt, beta = synthetic(5000 + s, n)
                        target = centred(beta)
                        kw = {}
                    else:
                        bt, target, kw = arena, ref, {"human_budget": n}
                    try:
                        L = leaderboard(bt, judges=[], alpha=alpha, seed=s, few=f, **kw)
                    except Exception:  # noqa: BLE001 - a draw that leaves a model without battles
                        continue
                    target = on_scale(target, L)
                    r = ranks(target)
                    rs = L.rank_set
                    joint.append(bool(np.all((rs[:, 0] <= r) & (r <= rs[:, 1]))))
                    per.append((L.interval[:, 0] <= target) & (target <= L.interval[:, 1]))
                    size.append(float(np.mean(rs[:, 1] - rs[:, 0] + 1)))
                per_m = np.mean(per, axis=0)
                cells.append(f"{np.mean(joint):.3f} / {per_m.mean():.3f} / {per_m.min():.2f} / {np.mean(size):.1f} "
                             f"({len(joint)} draws)")
            lines.append(f"| {data} | {n} | {cells[0]} | {cells[1]} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def _score_cell(L, target) -> dict:
    """One draw's figures for one board (see ``scores``)."""
    t = on_scale(target, L)
    top = int(L.order()[0])
    r = ranks(t)
    rs = L.rank_set
    return {"lead": float(L.fit.scores[top] - t[top]), "sq": float(np.mean((L.fit.scores - t) ** 2)),
            "top_few": bool(L.few_mask()[top]), "top_unresolved": bool(not L.resolved()[top]),
            "top_under5": bool(L.human_battles()[top] < 5),
            "joint": bool(np.all((rs[:, 0] <= r) & (r <= rs[:, 1]))),
            "inside": (L.interval[:, 0] <= t) & (t <= L.interval[:, 1]),
            "wrong_best": bool(np.any((rs[:, 1] == 1) & (r != 1)))}


def scores(root: Path, draws: int, alpha: float, budgets=(100, 200, 500), which=("synthetic", "arena", "arena+judge"),
           estimators=("mle", "auto")) -> str:
    arena, ref = arena_reference(root)
    judged = None
    if arena is not None and "arena+judge" in which:
        judged = read_battles(str(root / "arena-ppr" / "human.jsonl"),
                              [str(root / "arena-ppr" / "gpt-4-0125-preview.jsonl")])
    names = {"mle": "before (--estimator mle)", "auto": "after (default: auto)"}
    lines = [f"### The printed scores at small budgets, 20 models (alpha {alpha}; {draws} draws per cell): the leader's "
             "(first row's) mean signed error in Elo +- its s.e. (and that ratio) / RMSE over all models / the share of "
             "draws whose first row is a few-battle model, one with under 5 battles, one marked unresolved (?) / joint rank-set coverage / mean / lowest interval coverage / "
             "draws printing a wrong model surely best", "",
             "| data | human battles | estimator | leader's signed error (Elo) | ratio | RMSE | first row few / < 5 battles / ? | "
             "joint | mean / lowest coverage | wrong surely-best |", "|---|---|---|---|---|---|---|---|---|---|"]
    titles = {"synthetic": "synthetic (normal strengths)", "arena": "Chatbot Arena", "arena+judge": "Chatbot Arena + GPT-4 judge"}
    for data in which:
        if data != "synthetic" and arena is None:
            lines.append(f"| {titles[data]} | - | - | not run: no arena-ppr under {root} | | | | | | |")
            continue
        for n in budgets:
            got = {e: [] for e in estimators}
            t0 = time.time()
            for s in range(draws):
                if data == "synthetic":
                    bt, beta = synthetic(5000 + s, n)
                    target, kw = centred(beta), {}
                else:
                    bt, target, kw = (arena if data == "arena" else judged), ref, {"human_budget": n}
                try:
                    boards = {e: leaderboard(bt, alpha=alpha, seed=s, estimator=e, **kw) for e in estimators}
                except Exception:  # noqa: BLE001 - a draw that leaves a model without battles (refused)
                    continue
                for e, L in boards.items():
                    got[e].append(_score_cell(L, target))
            for e in estimators:
                rows = got[e]
                lead = np.array([x["lead"] for x in rows])
                se = lead.std(ddof=1) / np.sqrt(len(lead))
                per = np.mean([x["inside"] for x in rows], axis=0)
                lines.append(f"| {titles[data]} | {n} | {names.get(e, e)} | {lead.mean():+.1f} +- {se:.1f} | "
                             f"{lead.mean() / se:+.2f} | {np.sqrt(np.mean([x['sq'] for x in rows])):.1f} | "
                             f"{np.mean([x['top_few'] for x in rows]):.2f} / {np.mean([x['top_under5'] for x in rows]):.2f} / "
                             f"{np.mean([x['top_unresolved'] for x in rows]):.2f} | "
                             f"{np.mean([x['joint'] for x in rows]):.3f} | {per.mean():.3f} / {per.min():.2f} | "
                             f"{sum(x['wrong_best'] for x in rows)} of {len(rows)} |")
                print(lines[-1], f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return "\n".join(lines)


def heat_arena(root: Path, seed: int) -> Battles:
    """Chatbot Arena with gpt-4's battles split at random between two copies ('gpt-4 (a)', 'gpt-4 (b)') and
    llama-13b left out: 20 models, a dead heat at the top."""
    full = arena_human(root)
    g, drop = full.models.index("gpt-4"), full.models.index("llama-13b")
    keep = (full.a != drop) & (full.b != drop)
    a, b, y = full.a[keep], full.b[keep], full.y[keep]
    rng = np.random.default_rng(seed)
    copy = rng.random(len(a)) < 0.5
    K = full.K  # the new model takes llama-13b's slot
    a = np.where((a == g) & copy, drop, a)
    b = np.where((b == g) & copy, drop, b)
    names = list(full.models)
    names[g], names[drop] = "gpt-4 (a)", "gpt-4 (b)"
    order = rng.permutation(len(a))
    assert K == len(names)
    return Battles.from_arrays(names, a[order], b[order], y[order], source="arena-heat")


def heats(root: Path, draws: int, alphas, which, budget: int = 6400, floors=(0, FEW)) -> str:
    names = {0: "before (few=0)", FEW: f"after (few={FEW})"}
    lines = [f"### Dead heats, 20 models, --stop top-k:1 (looks at 100, 200, ..., {budget:,} human battles; {draws} "
             "leagues per cell): wrong stops (every stop is wrong), beside alpha + 2 s.e.", "",
             "| data | alpha | " + " | ".join(names.get(f, f"few={f}") for f in floors)
             + " | alpha + 2 s.e. | battles at the wrong stops (last column) |",
             "|---|---|" + "---|" * len(floors) + "---|---|"]
    for data in which:
        if data == "arena" and not (root / "arena-ppr").is_dir():
            lines.append(f"| Chatbot Arena | - | not run: no arena-ppr under {root} |" + " - |" * (len(floors) + 1))
            continue
        leagues = [synthetic(7000 + s, budget, heat=True)[0] if data == "synthetic" else heat_arena(root, 7000 + s)
                   for s in range(draws)]
        for alpha in alphas:
            cells = []
            for f in floors:
                wrong, at = 0, []
                for s, bt in enumerate(leagues):
                    L = leaderboard(bt, judges=[], human_budget=min(budget, bt.n), stop="top-k:1", first=100,
                                    alpha=alpha, seed=s, few=f)
                    if L.stop["met"]:
                        wrong += 1
                        at.append(L.stop["looks"][-1]["battles"])
                cells.append(f"{wrong} ({wrong / draws:.3f})")
            bar = alpha + 2 * np.sqrt(alpha * (1 - alpha) / draws)
            where = ", ".join(f"{k}: {v}" for k, v in sorted(zip(*np.unique(at, return_counts=True)))) if at else "-"
            lines.append(f"| {'synthetic' if data == 'synthetic' else 'Chatbot Arena (gpt-4 twice)'} | {alpha} | "
                         + " | ".join(cells) + f" | {bar:.3f} | {where} |")
            print(lines[-1], file=sys.stderr, flush=True)  # progress: each row as it is done
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["few", "budgets", "heats", "scores"])
    ap.add_argument("--budgets", default="100,200,500", help="scores: the human battles")
    ap.add_argument("--data", default="synthetic,arena,arena+judge", help="scores: synthetic, arena, arena+judge")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--alphas", default="0.01,0.05,0.1,0.2", help="heats: the levels")
    ap.add_argument("--which", default="synthetic,arena", help="heats: synthetic, arena or both")
    ap.add_argument("--floors", default=f"0,{FEW}", help="heats: the few-battle floors to run (0: off, the rule before "
                                                          "issue 30)")
    ap.add_argument("--out", help="also write the table (markdown) here")
    args = ap.parse_args()
    root = Path(os.environ.get("EVALSIFT_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    t0 = time.time()
    text = (few(root, args.draws, args.alpha) if args.what == "few" else
            budgets(root, args.draws, args.alpha) if args.what == "budgets" else
            scores(root, args.draws, args.alpha, [int(b) for b in args.budgets.split(",")], args.data.split(","))
            if args.what == "scores" else
            heats(root, args.draws, [float(a) for a in args.alphas.split(",")], args.which.split(","),
                  floors=[int(f) for f in args.floors.split(",")]))
    return finish_text(text, time.time() - t0, __file__, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
