"""Issue 44, across benchmarks: one ability shared by several benchmarks (``evalsift.estimate.across``,
``bench estimate --by COLUMN --shared-ability``), on small synthetic 2PL matrices whose truth is known,
and once on opencompass-irt (skipped without the data)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize

from evalsift.bench.across import MACRO, MICRO, _run_case, run_across_bench
from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.estimate import ResponseMatrix, response_matrix
from evalsift.estimate.across import KnownAcross, draw_per_group, estimate_across, offset_map

from _data import need
from test_estimate import long_table


def panel(S=16, per=150, G=3, seed=0, spread=0.0):
    """S systems x G benchmarks of ``per`` binary items from a 2PL; a system's ability on benchmark g is
    ``theta_s + dev_sg`` with ``dev ~ N(0, spread^2)`` (spread 0: one ability drives every benchmark)."""
    rng = np.random.default_rng(seed)
    theta, dev = rng.normal(size=S), rng.normal(0, spread, (S, G))
    g = np.repeat(np.arange(G), per)
    b, a = rng.normal(size=per * G), np.exp(rng.normal(0, 0.3, per * G))
    Y = (rng.random((S, per * G)) < 1 / (1 + np.exp(-a * (theta[:, None] + dev[:, g] - b)))).astype(float)
    return ResponseMatrix(tuple(f"s{k}" for k in range(S)), tuple(f"q{j}" for j in range(per * G)), Y, "correct",
                          "toy", {"benchmark": np.array([f"b{k}" for k in g], dtype=object)}, bounds=(0.0, 1.0))


def per_benchmark_mae(res, method, budget, split="all"):
    rows = {(r["split"], r["target"], r["method"], r["budget"]): r for r in res["table"]}
    return float(np.mean([rows[(split, g, method, budget)]["mae"] for g in res["groups"]]))


@pytest.mark.parametrize("seed", [0, 1])
def test_one_ability_shared_beats_separate_per_benchmark_at_a_small_budget(seed):
    res = run_across_bench(panel(seed=seed), "benchmark", budgets=[5], seeds=4, splits=("all",), quiet=True)
    sep, sh, off = (per_benchmark_mae(res, m, 5) for m in ("separate", "shared", "shared-offset"))
    assert sh < 0.92 * sep  # measured 0.83-0.85 of separate's error
    assert off < 0.95 * sep  # the offsets' prior is narrow when the known systems share one ability
    assert res["groups"] == {"b0": 150, "b1": 150, "b2": 150} and res["budgets"] == [5]
    rec = [r for r in res["records"] if r["method"] == "shared"]
    assert len(rec) == 16 * 4 * (3 + 2)  # systems x seeds x (3 benchmarks + 2 totals)
    assert {r["n"] for r in rec if r["target"] == "b0"} == {5} and {r["n"] for r in rec if r["target"] == MACRO} == {15}


def test_benchmark_specific_abilities_bias_shared_and_the_offset_recovers():
    res = run_across_bench(panel(seed=0, spread=1.5), "benchmark", budgets=[50], seeds=3, splits=("all",), quiet=True)
    sep, sh, off = (per_benchmark_mae(res, m, 50) for m in ("separate", "shared", "shared-offset"))
    assert sh > 1.5 * sep  # measured 2.3x: one ability cannot follow a system's strengths by benchmark
    assert off < 0.7 * sh and off < 1.25 * sep  # measured 0.43x shared, 0.98x separate
    hurts = [c for c in res["comparison"] if c["method"] == "shared" and c["target"] in res["groups"]]
    assert hurts and all(c["verdict"] == "hurts" for c in hurts)


def test_offset_map_is_the_posterior_mode():
    rng = np.random.default_rng(3)
    n, G = 40, 3
    a, b = np.exp(rng.normal(0, 0.4, n)), rng.normal(size=n)
    group, tau = rng.integers(0, G, n), np.array([0.3, 0.8, 1.5])
    u = (rng.random(n) < 0.6).astype(float)

    def neg(x):
        z = a * (x[0] + x[1:][group] - b)
        return -(np.sum(u * z - np.logaddexp(0, z)) - 0.5 * x[0] ** 2 - 0.5 * np.sum(x[1:] ** 2 / tau ** 2))

    th, d = offset_map(a, b, group, u, tau)
    best = minimize(neg, np.zeros(G + 1), method="BFGS", options={"gtol": 1e-10})
    assert np.allclose([th, *d], best.x, atol=1e-5)
    th0, d0 = offset_map(a, b, group, u, np.full(G, 1e-4))  # a tiny prior spread: the shared ability, no offset
    assert np.abs(d0).max() < 1e-5


def test_draws_per_benchmark_and_every_item_judged_gives_the_truth():
    R = panel(per=30)
    known = KnownAcross(R.Y[1:], R.columns["benchmark"], bounds=R.bounds)
    items = draw_per_group(known, 7, seed=4)
    assert len(items) == 21 and len(set(items)) == 21
    assert [int(np.isin(ix, items).sum()) for ix in known.index] == [7, 7, 7]
    assert np.array_equal(items, draw_per_group(known, 7, seed=4))
    assert not np.array_equal(items, draw_per_group(known, 7, seed=5))
    assert len(draw_per_group(known, 99, seed=0)) == 90  # a benchmark smaller than the budget is judged whole
    per, macro, micro = known.truth(R.Y[0])
    everything = np.arange(90)
    for m in ("separate", "shared", "shared-offset", "mean"):
        e = estimate_across(known, everything, R.Y[0], m)
        assert np.allclose(e.values, per) and e.macro == pytest.approx(macro) and e.micro == pytest.approx(micro)
    e = estimate_across(known, items[items >= 30], R.Y[0, items[items >= 30]], "separate")  # b0 not judged
    assert e.judged == (0, 7, 7) and 0 < e.values[0] < 1


def test_bad_input_is_a_clear_error():
    R = panel(per=20)
    known = KnownAcross(R.Y[1:], R.columns["benchmark"])
    with pytest.raises(ParameterError, match="separate, shared, shared-offset"):
        estimate_across(known, [0, 1], R.Y[0, :2], "joint")
    with pytest.raises(DataError, match="one score per judged item"):
        estimate_across(known, [0, 1], R.Y[0, :3], "shared")
    with pytest.raises(DataError, match="one group label per item"):
        KnownAcross(R.Y[1:], R.columns["benchmark"][:-1])
    one = ResponseMatrix(R.systems, R.item_ids, R.Y, "correct", "toy", {"benchmark": np.full(60, "b", dtype=object)})
    with pytest.raises(ParameterError, match="one value") as err:
        run_across_bench(one, "benchmark", quiet=True)
    assert err.value.field == "shared_ability"


def test_the_command_compares_separate_and_shared_per_benchmark(tmp_path, capsys):
    R = panel(S=8, per=40, seed=2)
    data = long_table(tmp_path / "t.csv", R.Y, column=lambda i: f"b{i // 40}")
    out = tmp_path / "b"
    assert main(["--quiet", "bench", "estimate", "--data", str(data), "--by", "topic", "--shared-ability",
                 "--budgets", "3,10", "--seeds", "2", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["column"] == "topic" and res["groups"] == {"b0": 40, "b1": 40, "b2": 40}
    assert res["methods"] == ["separate", "shared", "shared-offset", "mean"] and res["budgets"] == [3, 10]
    assert len(res["splits"]["all"]) == 8 and len(res["splits"]["extrapolation"]) == 2
    targets = {r["target"] for r in res["table"]}
    assert targets == {"b0", "b1", "b2", MACRO, MICRO}
    assert len(res["records"]) == (8 + 2) * 2 * 2 * 4 * 5
    text = (out / "table.txt").read_text()
    assert "budget = items judged per topic" in text and "RMSE of the totals" in text
    assert text == capsys.readouterr().out


def test_shared_ability_without_by_or_with_methods_is_one_error_line(tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["bench", "estimate", "--data", "demo", "--shared-ability", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--shared-ability" in err and "--by COLUMN" in err and "internal error" not in err
    assert not out.exists()
    assert main(["bench", "estimate", "--data", "demo", "--by", "x", "--shared-ability", "--methods", "mean",
                 "--out", str(out)]) == 2
    assert "leave out --methods" in capsys.readouterr().err


def test_opencompass_two_held_out_systems():
    R = response_matrix(f"opencompass:{need('opencompass-irt/data/combine.csv')}")
    full = R.full_scores()
    shared = {"Y": R.Y, "labels": [str(v) for v in R.columns["benchmark"]], "systems": R.systems, "bounds": R.bounds,
              "scale": R.scale, "budgets": [10], "seeds": 2, "methods": ["separate", "shared", "shared-offset"]}
    records = []
    for case_no, s in enumerate(np.argsort(full)[[3, 8]]):  # two systems in the middle of the twelve
        known = [k for k in range(12) if k != s]
        out = _run_case(shared, (case_no, "all", int(s), known))
        records += out["records"]
    assert len(records) == 2 * 2 * 3 * (11 + 2)
    err = {m: np.array([r["error"] for r in records if r["method"] == m and r["target"] == MACRO])
           for m in shared["methods"]}
    assert all(np.abs(e).max() < 12 for e in err.values())  # 110 of 41,871 items: within 12 points
    per = {m: np.mean([abs(r["error"]) for r in records if r["method"] == m and r["target"] not in (MACRO, MICRO)])
           for m in shared["methods"]}
    assert per["shared"] < 15 and per["separate"] < 20


def test_estimate_by_benchmark_gives_each_value_and_the_totals(tmp_path, capsys):
    """``estimate --by COLUMN`` on a new system's judged items: one row per benchmark and the two totals, equal
    to estimate_across on the same anchors; every item judged gives the data's own means; other methods refused."""
    R = panel(S=10, per=40, seed=4)
    data = long_table(tmp_path / "t.csv", R.Y, column=lambda i: f"b{i // 40}")
    anchors = tmp_path / "a.jsonl"
    assert main(["--quiet", "select", "anchors", "--data", str(data), "--exclude", "sys0", "--budget", "24",
                 "--method", "random", "--seed", "3", "--out", str(anchors)]) == 0
    capsys.readouterr()
    out = tmp_path / "e"
    assert main(["estimate", "--data", str(data), "--system", "sys0", "--items", str(anchors), "--by", "topic",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mean over values" in text and "mean over items" in text and "assumes:" in text
    res = json.loads((out / "estimate.json").read_text())
    assert [e["method"] for e in res["estimates"]] == ["shared-offset", "separate"] and res["by"] == "topic"
    picked = [int(json.loads(ln)["item_id"][1:]) for ln in anchors.read_text().splitlines()]
    Y = np.round(R.Y, 6)
    known = KnownAcross(Y[1:], [f"b{i // 40}" for i in range(120)], bounds=(0.0, 1.0))
    direct = estimate_across(known, np.array(picked), Y[0, picked], "shared-offset")
    got = res["estimates"][0]
    assert got["mean_over_groups"] == pytest.approx(direct.macro, abs=1e-9)
    assert [got["groups"][g]["estimate"] for g in ("b0", "b1", "b2")] == pytest.approx(direct.values.tolist(), abs=1e-9)
    assert res["full_scores_in_data"]["mean_over_items"] == pytest.approx(Y[0].mean(), abs=1e-9)
    bad = tmp_path / "bad"
    assert main(["estimate", "--data", str(data), "--system", "sys0", "--items", str(anchors), "--by", "topic",
                 "--method", "aipw", "--out", str(bad)]) == 2
    assert "with --by, the estimators are" in capsys.readouterr().err and not bad.exists()
