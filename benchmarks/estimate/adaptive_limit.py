"""Issue 44: how narrow can a valid interval at 50 items get? ``aipw@active-cs``'s width taken apart,
and the limit a control variate cannot pass, measured on the real data.

Per data set (AlpacaEval; opencompass-irt per benchmark), for 12 held-out systems (each with the
other systems as the known ones) x 3 seeds, at ``--budget`` items (default 50), on the same uniform
draws:

- ``t``: the random design's fixed-sample interval (``mean@random``, Student-t with the finite-pool
  correction; valid at the planned size only, not when the stop is chosen by looking);
- ``cs``: the betting confidence sequence on the plain scores (no control), growth-optimal bets;
- ``cs@h``: the same with bets tuned for the budget (``horizon``);
- ``active``: ``active-cs`` as it was (the 2PL control, growth-optimal bets);
- ``active@h``: ``active-cs`` now (the 2PL control, bets tuned for the budget: the default).

and the **limit** of any control built from the known systems: the new system's residual spread
over all items when the control is fitted to *all* of its scores (an oracle no design has), as a
fraction of its raw spread: ``oracle 2PL`` (the 2PL's prediction at the ability fitted to every
item), ``oracle ridge`` (a ridge regression of its scores on the known systems' scores, fitted and
judged on every item: optimistic). A design-based interval with such a control is at least about
that fraction of the plain interval's width at the same size; the confidence sequence adds its own
price on top (``cs@h / t``).

    EVALSIFT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/estimate/adaptive_limit.py --out /tmp/adaptive_limit
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from evalsift.estimate import KnownSystems, estimate_score, select_anchors
from evalsift.estimate.adaptive import AdaptiveTest, item_parameters, map_ability
from evalsift.estimate.estimators import ridge_fit
from evalsift.stats.sequential import win_rate_sequence

from _estimate_data import datasets


def measure(R, budget: int, held: int = 12, seeds: int = 3) -> dict:
    """The widths (points) and oracle spread ratios of one data set (module doc)."""
    Y = R.Y
    S, M = Y.shape
    lo, hi = R.bounds
    sc = hi - lo
    rows = np.random.default_rng(0).choice(S, min(S, held), replace=False)
    w = {k: [] for k in ("t", "cs", "cs@h", "active", "active@h")}
    cov = {k: [] for k in w}
    oracle = {"2pl": [], "ridge": []}
    for s in rows:
        known = KnownSystems(np.delete(Y, s, 0), bounds=R.bounds)
        irt = item_parameters(known)
        a, b = irt["discrimination"], irt["difficulty"]
        truth = (Y[s].mean() - lo) / sc
        for seed in range(seeds):
            t = AdaptiveTest(None, "active-cs", budget=budget, seed=seed + 100 * int(s), irt=irt,
                             bounds=(lo, hi), item_ids=[str(i) for i in range(M)])
            while True:
                asked = t.ask()
                if not asked:
                    break
                t.tell(asked[0], float(Y[s, int(asked[0])]))
            vals = [(st.score - lo) / sc for st in t.steps]
            items = [st.item for st in t.steps]
            for key, kw in (("cs", {}), ("cs@h", {"horizon": budget}),
                            ("active", {"items": items, "control": t._predictor, "probs": t._probs}),
                            ("active@h", {"items": items, "control": t._predictor, "probs": t._probs,
                                          "horizon": budget})):
                low, high = win_rate_sequence(vals, M, 0.1, **kw)
                w[key].append((high - low) * 100)
                cov[key].append(low <= truth <= high)
            anchors = select_anchors(known.Yk, budget, "random", seed=seed)
            e = estimate_score(known, Y[s, anchors.items], anchors, "mean", alpha=0.1)
            w["t"].append((e.high - e.low) * 100 / sc)
            cov["t"].append(e.low <= Y[s].mean() <= e.high)
        u = known.unit(Y[s])
        if np.var(u) > 0:
            th, _ = map_ability(a, b, np.arange(M), u)
            f = 1 / (1 + np.exp(-a * (th - b)))
            oracle["2pl"].append(np.var(u - f) / np.var(u))
            X = known.unit(known.Yk).T
            oracle["ridge"].append(np.var(u - np.clip(ridge_fit(X, u).predict(X), 0, 1)) / np.var(u))
    width = {k: float(np.mean(v)) for k, v in w.items()}
    return {"items": M, "systems": S, "budget": budget, "width": width,
            "coverage": {k: float(np.mean(v)) for k, v in cov.items()},
            "ratio_active_h_vs_t": width["active@h"] / width["t"],
            "ratio_active_h_vs_cs": width["active@h"] / width["cs"],
            "cs_price": width["cs@h"] / width["t"],
            "oracle_sd_ratio": {k: float(np.sqrt(np.mean(v))) for k, v in oracle.items()}}


def main(argv=None):
    """Run the measurement and write ``limit.json`` and ``limit.md`` to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default="alpaca-eval,opencompass-irt")
    ap.add_argument("--budget", type=int, default=50)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res, lines = {}, ["| data | t | cs | cs@h | active | active@h (now) | active@h / t | active@h / cs | "
                      "cs@h / t | oracle 2PL sd | oracle ridge sd | coverage active@h |", "|" + "---|" * 12]
    t0 = time.perf_counter()
    for name, R in datasets(args.data.split(",")):
        r = measure(R, args.budget)
        res[name] = r
        wd = r["width"]
        lines.append(f"| {name} | {wd['t']:.2f} | {wd['cs']:.2f} | {wd['cs@h']:.2f} | {wd['active']:.2f} | "
                     f"{wd['active@h']:.2f} | {r['ratio_active_h_vs_t']:.2f} | {r['ratio_active_h_vs_cs']:.2f} | "
                     f"{r['cs_price']:.2f} | {r['oracle_sd_ratio']['2pl']:.2f} | {r['oracle_sd_ratio']['ridge']:.2f} | "
                     f"{r['coverage']['active@h']:.3f} |")
        print(lines[-1], flush=True)
    (out / "limit.json").write_text(json.dumps({"results": res, "seconds": round(time.perf_counter() - t0, 1)},
                                               indent=2))
    (out / "limit.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
