"""Issue 44: ``benchmarks/estimate/fluid_peer.py`` (Fluid Benchmarking's own code beside ``bench estimate``'s
``pirt@fisher``). Without the peer: its cases and its ``pirt@fisher`` column are ``bench estimate``'s.
With the peer's venv (``/tmp/fluid-venv``, a benchmark-side setup CI does not have; skipped otherwise):
their engine picks the same items as ours on 0/1 responses, and binarises nothing it is given as 0/1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evalsift.bench.estimate import held_out_cases, run_estimate_bench
from evalsift.estimate import KnownSystems, ResponseMatrix

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "estimate"))
import fluid_peer

BUDGETS = [10, 30]


def panel(S=8, M=120, seed=0, continuous=False):
    """S systems x M items from a 2PL: 0/1 draws, or the probabilities themselves (continuous)."""
    rng = np.random.default_rng(seed)
    th, b, a = rng.normal(size=S), rng.normal(size=M), rng.uniform(0.5, 2.0, M)
    P = 1 / (1 + np.exp(-a * (th[:, None] - b)))
    Y = P if continuous else (rng.random((S, M)) < P).astype(float)
    return ResponseMatrix(tuple(f"s{k}" for k in range(S)), tuple(f"q{j}" for j in range(M)), Y, "correct", "toy",
                          bounds=(0.0, 1.0))


def test_cases_and_our_column_are_bench_estimates():
    R = panel()
    for sp in ("all", "extrapolation"):
        cases, skipped = fluid_peer.peer_cases(R, sp)
        expect = [(s, k) for s, k in held_out_cases(R, sp) if len(k) >= 3]
        assert [(c["row"], c["known"]) for c in cases] == [(int(s), [int(x) for x in k]) for s, k in expect]
        assert len(skipped) == len(held_out_cases(R, sp)) - len(expect)
        c = cases[0]
        fit = KnownSystems(R.Y[np.array(c["known"])], bounds=R.bounds).irt
        np.testing.assert_allclose(c["a"], fit.discrimination)
        np.testing.assert_allclose(c["b"], fit.difficulty)
    bench = run_estimate_bench(R, budgets=BUDGETS, methods=[fluid_peer.OURS], seeds=1, quiet=True)
    want = {(r["split"], r["system"], r["budget"]): r["error"] for r in bench["records"]}
    got = {}
    for sp in ("all", "extrapolation"):
        for c in fluid_peer.peer_cases(R, sp)[0]:
            for b, v in zip(BUDGETS, fluid_peer.ours(c, BUDGETS, R.bounds)["values"]):
                got[(sp, c["system"], b)] = (v - c["truth"]) * R.scale
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], atol=1e-9)


def _peer_python() -> str:
    py = fluid_peer.DEFAULT_PYTHON
    if not Path(py).exists():
        pytest.skip(f"Fluid Benchmarking's venv {py} is absent (benchmark-side setup: see benchmarks/estimate/fluid_peer.py)")
    if subprocess.run([py, "-c", "import fluid_benchmarking.engine"], capture_output=True, check=False).returncode:
        pytest.skip(f"{py} has no fluid_benchmarking installed (see benchmarks/estimate/fluid_peer.py)")
    return py


@pytest.mark.parametrize("continuous", [False, True])
def test_their_engine_picks_our_items_on_01_responses(continuous):
    py = _peer_python()
    R = panel(continuous=continuous)
    cases, _ = fluid_peer.peer_cases(R, "all")
    cases = cases[:3]
    peer = fluid_peer.run_peer(cases, BUDGETS, py)
    for c, p in zip(cases, peer):
        mine = fluid_peer.ours(c, BUDGETS, R.bounds)
        assert p["binary"] is (not continuous)
        # fed the 0/1 responses theirs sees, our fisher rule picks their items, in their order
        assert fluid_peer.first_difference(c, mine, p["runs"][0], binarised=True) is None
        assert len(p["runs"][0]["items"]) == max(BUDGETS)
        if not continuous:  # same responses: same items and (up to their tolerance) the same ability
            assert mine["items"][:max(BUDGETS)] == p["runs"][0]["items"]
            their = [(r["pirt"] * (c["hi"] - c["lo"]) + c["lo"]) for r in p["runs"][0]["budgets"]]
            np.testing.assert_allclose(their, mine["values"], atol=1e-5)
