"""Issue 44: ``bench estimate``'s adaptive designs (``pirt-1d@fisher``, ``aipw@active-cs``) beside the static
ones, simulated from the full response matrix (small synthetic 2PL matrices; fast)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsift.bench.estimate import parse_method, run_estimate_bench, table_text
from evalsift.cli import main
from evalsift.errors import ParameterError
from evalsift.estimate import ResponseMatrix
from evalsift.estimate.adaptive import simulate, simulate_budgets

METHODS = ["mean", "pirt-1d@fisher", "aipw@active-cs"]


def panel(S=8, M=150, seed=0, bounds=(0.0, 1.0)):
    """S systems x M binary items drawn from a 2PL."""
    rng = np.random.default_rng(seed)
    th, b, a = rng.normal(size=S), rng.normal(size=M), rng.uniform(0.5, 2.0, M)
    Y = (rng.random((S, M)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(float)
    return ResponseMatrix(tuple(f"s{k}" for k in range(S)), tuple(f"q{j}" for j in range(M)), Y, "correct", "toy",
                          bounds=bounds)


@pytest.fixture(scope="module")
def bench():
    return run_estimate_bench(panel(), budgets=[10, 30], methods=METHODS, seeds=3, quiet=True)


def test_method_names_fit_the_estimator_at_design_grammar():
    assert parse_method("pirt-1d@fisher") == ("pirt-1d", "fisher")
    assert parse_method("aipw@active-cs") == ("aipw", "active-cs")
    assert parse_method("fisher") == ("pirt-1d", "fisher") and parse_method("active-cs") == ("aipw", "active-cs")
    with pytest.raises(ParameterError, match="scored with pirt-1d only"):
        parse_method("mean@fisher")
    with pytest.raises(ParameterError, match="design"):
        parse_method("mean@fluid")


def test_adaptive_rows_exist_beside_the_static_ones_and_coverage_is_counted(bench):
    labels = ["mean@random", "pirt-1d@fisher", "aipw@active-cs"]
    assert bench["methods"] == labels and bench["adaptive"] == ["pirt-1d@fisher", "aipw@active-cs"]
    cells = {(r["split"], r["method"], r["budget"]) for r in bench["table"]}
    assert cells == {(sp, m, b) for sp in ("all", "extrapolation") for m in labels for b in (10, 30)}
    rows = {(r["split"], r["method"], r["budget"]): r for r in bench["table"]}
    for (sp, m, b), r in rows.items():
        assert r["estimates"] == (8 if sp == "all" else 2) * 3
        assert r["adaptive"] == (m != "mean@random")
        if m == "pirt-1d@fisher":  # model-based, no interval, as pirt: not a 'none'
            assert r["coverage"] is None and r["width"] is None and r["none"] == 0
        else:
            assert 0.0 <= r["coverage"] <= 1.0 and r["width"] > 0 and r["none"] == 0
    recs = [r for r in bench["records"] if r["method"] == "aipw@active-cs"]
    assert all(r["n"] == r["budget"] and "covered" in r for r in recs)
    for sp in ("all", "extrapolation"):  # the coverage is the share of records whose interval held the truth
        for b in (10, 30):
            held = [r["covered"] for r in recs if r["split"] == sp and r["budget"] == b]
            assert rows[(sp, "aipw@active-cs", b)]["coverage"] == pytest.approx(np.mean(held))
    # the interval narrows with the budget
    assert rows[("all", "aipw@active-cs", 30)]["width"] < rows[("all", "aipw@active-cs", 10)]["width"]
    text = table_text(bench)
    assert sum(ln.endswith("(adaptive)") for ln in text.splitlines()) == 8
    assert not any("(adaptive)" in ln for ln in text.splitlines() if ln.split()[:1] == ["mean@random"])


def test_seeds_reproduce_and_differ(bench):
    again = run_estimate_bench(panel(), budgets=[10, 30], methods=METHODS, seeds=3, quiet=True)
    assert again["records"] == bench["records"] and again["table"] == bench["table"]
    errs = {}
    for r in bench["records"]:
        errs.setdefault((r["method"], r["split"], r["system"], r["budget"]), []).append(r["error"])
    # active-cs draws afresh per seed; fisher draws nothing: its seeds repeat one run
    assert any(len(set(v)) > 1 for k, v in errs.items() if k[0] == "aipw@active-cs")
    assert all(len(set(v)) == 1 for k, v in errs.items() if k[0] == "pirt-1d@fisher")


def test_one_run_read_at_each_budget_is_a_run_with_that_budget():
    R = panel(S=10, M=80, seed=3)
    Yk, y = R.Y[1:], R.Y[0]
    for rule in ("active-cs", "fisher"):
        read = simulate_budgets(Yk, y, rule, [7, 20], seed=5, bounds=(0.0, 1.0))
        for e, b in zip(read, (7, 20)):
            alone, _ = simulate(Yk, y, rule, b, seed=5, bounds=(0.0, 1.0))
            assert e.n == b and e.value == pytest.approx(alone.value, abs=1e-12)
            assert (e.low, e.high) == ((alone.low, alone.high) if rule == "active-cs" else (None, None))


def test_active_cs_is_refused_without_both_ends_of_the_range():
    R0 = panel()
    R = ResponseMatrix(R0.systems, R0.item_ids, R0.Y - 1.0, "loss", "toy", bounds=(None, 0.0))  # as MQM: <= 0
    with pytest.raises(ParameterError, match="stated range at both ends"):
        run_estimate_bench(R, budgets=[10], methods=METHODS, seeds=1, quiet=True)
    res = run_estimate_bench(R, budgets=[10], methods=["pirt-1d@fisher"], seeds=1, splits=("extrapolation",),
                             quiet=True)  # fisher needs no range
    assert [r["method"] for r in res["table"]] == ["pirt-1d@fisher"]


def test_the_command_runs_the_adaptive_designs(tmp_path):
    R = panel(S=6, M=60, seed=2)
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps({"item_id": i, "system": s, "output": "o", "score": float(R.Y[k, j])}) + "\n"
                            for k, s in enumerate(R.systems) for j, i in enumerate(R.item_ids)))
    out = tmp_path / "b"
    assert main(["--quiet", "bench", "estimate", "--data", str(data), "--budgets", "10", "--seeds", "2",
                 "--methods", "mean,fisher", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["methods"] == ["mean@random", "pirt-1d@fisher"] and "adaptive" in res["timing_s"]
    assert "(adaptive)" in (out / "table.txt").read_text()
