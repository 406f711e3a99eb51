"""Run Fluid Benchmarking's own code (``allenai/fluid-benchmarking``) on cases written by ``fluid_peer.py``.

Runs under the peer's own venv (``/tmp/fluid-venv/bin/python``), not evalsift's: it imports only
``fluid_benchmarking``, numpy and the standard library, never evalsift. Usage::

    /tmp/fluid-venv/bin/python benchmarks/estimate/_fluid_driver.py IN.json OUT.json

``IN.json``: ``{"budgets": [...], "cases": [{"id", "a", "b", "y", "starts"}, ...]}`` with the 2PL's
item parameters (``P = sigmoid(a (theta - b))``, the peer's columns ``[a, b]``), the held-out system's
score on every item on the 2PL's [0, 1] scale (``y``), and the start abilities to run.

Per case and start ability it calls the peer's entry point ``evaluation.fluid_benchmarking`` (MFI
selection by ``engine.select_mfi``, MAP ability by ``estimators.ability_estimate``, their defaults:
``D = 1``, prior ``N(0, 1)``, ``theta_range = (-4, 4)``, ``tol = 1e-6``) to the largest budget, and
their ``evaluation.full_ability`` on every item. Their engine takes 0/1 responses only (it raises
otherwise); non-binary scores are binarised at 0.5, as their loader ``datasets.load_lm_eval_results``
does (``ge(0.5)``). Their code reports an ability, not a score: per budget this writes the ability,
the expected score over every item at it (``mean_j P_j(theta)``), and the p-IRT score (the judged
items' true ``y`` plus ``P_j(theta)`` for the rest, over the pool), on the 2PL's [0, 1] scale.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from fluid_benchmarking import evaluation


def _p(theta: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-a * (theta - b)))


def run_case(case: dict, budgets: list[int]) -> dict:
    """One held-out case: the peer's test from each start ability, read at every budget."""
    a = np.asarray(case["a"], dtype=float)
    b = np.asarray(case["b"], dtype=float)
    y = np.asarray(case["y"], dtype=float)
    M = len(a)
    binary = bool(np.isin(y, (0.0, 1.0)).all())
    r = y.copy() if binary else (y >= 0.5).astype(float)
    irt_model = np.column_stack([a, b])
    n_max = min(max(budgets), M)
    out = {"id": case["id"], "binary": binary, "runs": []}
    t0 = time.perf_counter()
    theta_full = float(evaluation.full_ability(r, irt_model, "map"))
    out["full"] = {"ability": theta_full, "expected": float(_p(theta_full, a, b).mean())}
    for start in case["starts"]:
        t1 = time.perf_counter()
        abilities, items = evaluation.fluid_benchmarking(r, irt_model, float(start), n_max, "map")
        secs = time.perf_counter() - t1
        per = []
        for bud in budgets:
            n = min(bud, len(items))
            th = float(abilities[n - 1])
            P = _p(th, a, b)
            seen = np.zeros(M, dtype=bool)
            seen[items[:n]] = True
            per.append({"budget": bud, "n": n, "ability": th, "expected": float(P.mean()),
                        "pirt": float((y[seen].sum() + P[~seen].sum()) / M)})
        out["runs"].append({"start": float(start), "items": [int(i) for i in items],
                            "abilities": [float(t) for t in abilities], "budgets": per, "seconds": secs})
    out["seconds"] = time.perf_counter() - t0
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: _fluid_driver.py IN.json OUT.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        spec = json.load(f)
    budgets = [int(x) for x in spec["budgets"]]
    res = {"budgets": budgets, "cases": [run_case(c, budgets) for c in spec["cases"]]}
    with open(argv[1], "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
