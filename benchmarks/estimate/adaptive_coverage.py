"""Coverage and width of ``active-cs`` and the error of ``fisher`` on synthetic 2PL pools (issue 44).

Two pools of 40 known systems x 400 items (abilities N(0, 1)); "mild": discriminations
LogNormal(0, 0.4), difficulties N(0, 1.2^2); "sharp": LogNormal(0.3, 0.5), N(0, 2^2). New systems:
ability 0 ("inside") and the strongest known ability + 0.7 ("beyond": the extrapolation split).
Per pool and new system, RUNS runs (fresh responses and draws): the 90% interval's coverage at a fixed
stop at 50 items and at the first step narrower than WIDTH (budget 120), its mean width at 50
against a uniform random design with the same betting sequence without predictions, for several
uniform shares (floor), and fisher's mean absolute error at 50 against the random sample's mean.

    PYTHONPATH=src python benchmarks/estimate/adaptive_coverage.py [RUNS]
"""

import sys
import time

import numpy as np

from evalsift.estimate.adaptive import AdaptiveTest, simulate
from evalsift.stats.sequential import win_rate_sequence

K, M, N, WIDTH = 40, 400, 50, 0.25
POOLS = {"mild": (0.0, 0.4, 1.2), "sharp": (0.3, 0.5, 2.0)}
FLOORS = (1.0, 0.5, 0.3)


def main(runs: int) -> None:
    for name, (a_mu, a_sd, b_sd) in POOLS.items():
        rng = np.random.default_rng(0)
        theta = rng.normal(size=K)
        a, b = np.exp(rng.normal(a_mu, a_sd, M)), rng.normal(0.0, b_sd, M)
        Yk = (rng.random((K, M)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
        base = AdaptiveTest(Yk, "active-cs", budget=N, bounds=(0.0, 1.0))
        for kind, th in (("inside", 0.0), ("beyond", float(theta.max()) + 0.7)):
            t0 = time.time()
            p = 1 / (1 + np.exp(-a * (th - b)))
            cov = {f: 0 for f in FLOORS}
            wid = {f: [] for f in FLOORS}
            looked, looked_n, rand_w, rand_cov, f_err, r_err = 0, [], [], 0, [], []
            for r in range(runs):
                y = (np.random.default_rng([r, 5]).random(M) < p).astype(float)
                mu = y.mean()
                for f in FLOORS:
                    e, _ = simulate(base, y, "active-cs", N, seed=r, floor=f)
                    cov[f] += e.low <= mu <= e.high
                    wid[f].append(e.width)
                e, _ = simulate(base, y, "active-cs", 120, seed=r, stop_width=WIDTH)
                looked += e.low <= mu <= e.high
                looked_n.append(e.n)
                perm = np.random.default_rng([r, 9]).permutation(M)[:N]
                lo, hi = win_rate_sequence(y[perm], M, 0.1)
                rand_w.append(hi - lo)
                rand_cov += lo <= mu <= hi
                e, _ = simulate(base, y, "fisher", N, seed=r)
                f_err.append(abs(e.value - mu))
                r_err.append(abs(y[perm].mean() - mu))
            rw = float(np.mean(rand_w))
            print(f"{name}/{kind} (true mean ~{p.mean():.3f}, {runs} runs, {time.time() - t0:.0f}s)")
            print(f"  random + betting CS, no predictions: width@50 {rw:.4f}  coverage {rand_cov / runs:.3f}")
            for f in FLOORS:
                w = float(np.mean(wid[f]))
                print(f"  active-cs floor {f}: width@50 {w:.4f} ({w / rw:.2f} x random)  coverage@50 {cov[f] / runs:.3f}")
            print(f"  active-cs, stop at first width <= {WIDTH}: coverage {looked / runs:.3f}, "
                  f"median stop {int(np.median(looked_n))} items")
            print(f"  fisher MAE@50 {np.mean(f_err):.4f}  random-mean MAE@50 {np.mean(r_err):.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
