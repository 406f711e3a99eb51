"""Re-running a dead heat on new seeds until one "decides": how often does some seed name a winner?

The anytime rule's guarantee (docs/confidence.md) is for one uniformly random order, drawn once. A
user who re-runs `compare` on seed after seed and keeps the run that names a winner is testing many
times: in a dead heat every named winner is wrong, and with 20 seeds some seed names one far more
often than the stated risk. This measures it with `compare`'s defaults (min 5, max 200 labels) on
synthetic dead heats of 800 items (no ties, and 30% ties): ``pools`` dead heats per cell, 20 orders
(seeds) each.

    python benchmarks/decide/dead_heat_reruns.py [--pools 200] [--seeds 20]
"""

from __future__ import annotations

import argparse

import numpy as np

from evalsift.stats import AnytimeTest


def first_winner(y: np.ndarray, M: int, risk: float, min_labels: int = 5, max_labels: int = 200) -> str | None:
    """The side the anytime rule names on the order ``y`` (None: inconclusive at the cap), as a Session does."""
    test = AnytimeTest(M)
    for n, v in enumerate(y[:max_labels], 1):
        test.update(float(v))
        if n >= min_labels:
            r = test.assess(risk)
            if r.leader is not None and r.risk <= risk:
                return r.leader
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    M = 800
    for risk in (0.05, 0.1, 0.2):
        for ties in (0.0, 0.3):
            k = int(round(M * (1 - ties) / 2))
            base = np.array([1.0] * k + [0.0] * k + [0.5] * (M - 2 * k))
            rng = np.random.default_rng(1)
            some = named = 0
            for _ in range(args.pools):
                hits = sum(first_winner(rng.permutation(base), M, risk) is not None for _ in range(args.seeds))
                named += hits
                some += hits > 0
            print(f"dead heat, {M} items, {ties:.0%} ties, risk {risk}: one seed names a winner in "
                  f"{named / (args.pools * args.seeds):.3f} of runs; some of {args.seeds} seeds names one in "
                  f"{some}/{args.pools} = {some / args.pools:.2f} of pools", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
