"""Does ``evalsift.estimate.estimators.fit_abilities`` (MAP ability under the 2PL, prior N(0, 1), plain
Newton steps clipped to [-8, 8], 30 iterations) find the MAP on steep items? A small case, checked
against the MAP found by bisection on the log-posterior's derivative (the log-posterior is concave,
so its derivative is decreasing and has one root: bisection cannot miss it).

    PYTHONPATH=src python benchmarks/estimate/fit_abilities_overshoot.py [--real] [--seeds 5]

``--real``: the same check on real data, for every held-out case of ``bench estimate``'s splits
(``all`` and ``extrapolation``) on AlpacaEval and on each opencompass-irt benchmark, at budgets 10, 25,
50, 100, 200 (below the benchmark's size), ``--seeds`` anchor draws, designs ``anchor-points`` (pirt's
default) and ``random``: how often ``fit_abilities`` returns an ability on its bound or one that is not
the MAP, and what p-IRT's error is with that ability and with the MAP (``pirt_values``' formula).
Data: ``$EVALSIFT_DATA``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.estimate.estimators import fit_abilities  # noqa: E402


def map_by_bisection(a, b, Yu, lo=-8.0, hi=8.0, iters=200):
    """The MAP ability (prior N(0, 1)) of each row of ``Yu`` on items ``(a, b)``: the root of
    ``sum_j a_j (y_j - P_j(theta)) - theta`` in ``[lo, hi]`` (an end when the root lies beyond it)."""
    Yu = np.atleast_2d(np.asarray(Yu, dtype=float))
    L, H = np.full(Yu.shape[0], lo), np.full(Yu.shape[0], hi)

    def grad(t):
        p = 1.0 / (1.0 + np.exp(-a * (t[:, None] - b)))
        return (a * (Yu - p)).sum(axis=1) - t

    for _ in range(iters):
        mid = 0.5 * (L + H)
        up = grad(mid) > 0
        L, H = np.where(up, mid, L), np.where(up, H, mid)
    return 0.5 * (L + H), grad


def real(seeds: int) -> None:
    from evalsift.bench.estimate import held_out_cases
    from evalsift.estimate import KnownSystems, response_matrix, select_anchors

    datasets = [("AlpacaEval", response_matrix("alpaca-eval"))]
    O = response_matrix("opencompass-irt")
    datasets += [(f"oc {b}", O.group("benchmark", b)) for b in O.groups("benchmark")]
    print(f"{'data':<22}{'design':<15}{'budget':>7}{'fits':>6}{'on bound':>9}{'not MAP':>8}"
          f"{'MAE pirt':>10}{'MAE at MAP':>11}{'worst |diff|':>13}")
    total = {"fits": 0, "bound": 0, "notmap": 0}
    for name, R in datasets:
        M = R.n_items
        cases = [c for sp in ("all", "extrapolation") for c in held_out_cases(R, sp)]
        rows = {}
        for case_no, (s, known_rows) in enumerate(cases):
            if len(known_rows) < 3:
                continue
            known = KnownSystems(R.Y[known_rows], bounds=R.bounds)
            irt = known.irt
            a_all, b_all = np.asarray(irt.discrimination), np.asarray(irt.difficulty)
            y = R.Y[s]
            truth = float(y.mean())
            for design in ("anchor-points", "random"):
                for n in (10, 25, 50, 100, 200):
                    if n >= M:
                        continue
                    for seed in range(seeds):
                        a = select_anchors(known.Yk, n, design, seed=seed + 1000 * case_no)
                        Yu = known.unit(y[a.items])[None, :]
                        th, _ = fit_abilities(irt, a.items, Yu)
                        ref, _ = map_by_bisection(a_all[a.items], b_all[a.items], Yu)
                        unseen = np.setdiff1d(np.arange(M), a.items)
                        judged = (y[a.items] - known.lo) / (known.hi - known.lo)

                        def pirt(t):
                            P = 1.0 / (1.0 + np.exp(-a_all[unseen] * (t - b_all[unseen])))
                            return known.lo + (known.hi - known.lo) * (judged.sum() + P.sum()) / M

                        r = rows.setdefault((design, n), [])
                        r.append((abs(th[0]) >= 8 - 1e-9, abs(th[0] - ref[0]) > 1e-3,
                                  100 * abs(pirt(th[0]) - truth), 100 * abs(pirt(ref[0]) - truth)))
        for (design, n), r in sorted(rows.items()):
            r = np.array(r, dtype=float)
            total["fits"] += len(r)
            total["bound"] += int(r[:, 0].sum())
            total["notmap"] += int(r[:, 1].sum())
            print(f"{name:<22}{design:<15}{n:>7}{len(r):>6}{int(r[:, 0].sum()):>9}{int(r[:, 1].sum()):>8}"
                  f"{r[:, 2].mean():>10.3f}{r[:, 3].mean():>11.3f}{np.abs(r[:, 2] - r[:, 3]).max():>13.3f}",
                  flush=True)
    print(f"all: {total['bound']} of {total['fits']} abilities on the bound, {total['notmap']} not the MAP")


def main() -> int:
    if "--real" in sys.argv:
        seeds = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 5
        real(seeds)
        return 0
    n = 50
    print("50 items of one discrimination a and difficulty b; 44 of 50 correct (the rest wrong)")
    print(f"  {'a':>5}{'b':>6}  {'fit_abilities':>14}{'grad there':>12}  {'MAP (bisection)':>16}{'grad there':>12}")
    y = np.r_[np.ones(44), np.zeros(n - 44)][None, :]
    for a_, b_ in ((1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0), (5.0, 0.0), (5.0, 1.0), (8.0, 0.5), (10.0, 0.0)):
        a, b = np.full(n, a_), np.full(n, b_)
        irt = SimpleNamespace(discrimination=a, difficulty=b)
        th, _ = fit_abilities(irt, np.arange(n), y)
        ref, grad = map_by_bisection(a, b, y)
        print(f"  {a_:>5.1f}{b_:>6.1f}  {th[0]:>14.4f}{grad(th)[0]:>12.3g}  {ref[0]:>16.4f}{grad(ref)[0]:>12.3g}")
    # the iterates of one bad case
    a, b = np.full(n, 5.0), np.ones(n)
    t = np.zeros(1)
    path = []
    for _ in range(12):
        p = 1.0 / (1.0 + np.exp(-a * (t[:, None] - b)))
        step = ((a * (y - p)).sum(axis=1) - t) / ((a * a * p * (1 - p)).sum(axis=1) + 1.0)
        t = np.clip(t + step, -8, 8)
        path.append(float(t[0]))
    print("  Newton iterates for a = 5, b = 1 (fit_abilities' update, from 0):", ", ".join(f"{v:.3f}" for v in path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
