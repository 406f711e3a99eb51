import itertools
import math

import numpy as np
import pytest
import scipy.optimize

from evalsift.errors import DataError, ParameterError
from evalsift.pool import Pool
from evalsift.select.costaware import item_costs, knapsack_select, knapsack_values, time_model_cost


def _pool(inputs=None, **metadata):
    n = len(inputs) if inputs is not None else len(next(iter(metadata.values())))
    return Pool(item_ids=[f"i{k}" for k in range(n)], inputs=inputs, systems=["S"], metadata=metadata, name="toy")


# ---------------------------------------------------------------- item_costs
def test_time_model_for_ten_words():
    src = "one two three four five six seven eight nine ten"
    assert time_model_cost(src) == pytest.approx(0.15 * 10 + 33.7)  # = 35.2
    assert item_costs(_pool([src, "", "a  b\tc"])) == pytest.approx([35.2, 33.7, 0.15 * 3 + 33.7])
    assert item_costs(_pool([src]), cost_field=None) == pytest.approx([35.2])


def test_costs_from_metadata():
    assert item_costs(_pool(cost=[1, 2.5, "3"])).tolist() == [1.0, 2.5, 3.0]


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), "abc"])
def test_nonpositive_or_bad_cost_names_the_item(bad):
    with pytest.raises(DataError, match="item 'i1'"):
        item_costs(_pool(cost=[1.0, bad, 2.0]))


def test_missing_costs_name_the_first_items():
    with pytest.raises(DataError, match=r"no value for 2 of 3 items \('i0', 'i2'\)"):
        item_costs(_pool(cost=[None, 1.0, float("nan")]))


def test_unknown_cost_field_is_not_silently_modelled():
    with pytest.raises(DataError, match="Did you mean 'seconds'"):
        item_costs(_pool(seconds=[1.0]), cost_field="secnds")


# ---------------------------------------------------------------- knapsack_select
def _best_by_enumeration(value, costs, budget):
    best = 0.0
    for mask in itertools.product([False, True], repeat=len(value)):
        m = np.array(mask)
        if costs[m].sum() <= budget:
            best = max(best, value[m].sum())
    return best


@pytest.mark.parametrize("seed", range(6))
def test_knapsack_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=8)  # negative utilities too: the solver works on u - min(u)
    c = rng.uniform(1, 10, size=8)
    budget = float(rng.uniform(0.2, 0.7) * c.sum())
    res = knapsack_select(u, c, budget)
    value = u - u.min()
    best = _best_by_enumeration(value, c, budget)  # all 2^8 = 256 subsets
    assert res.total_cost <= budget
    assert value[res.items].sum() == pytest.approx(best, rel=1e-4)  # HiGHS' default MIP gap
    assert res.total_utility == pytest.approx(u[res.items].sum())
    assert res.total_cost == pytest.approx(c[res.items].sum())
    assert list(u[res.items]) == sorted(u[res.items], reverse=True)  # pick order: descending utility
    assert res.status == "optimal" and res.solver in ("milp", "milp+greedy")


def test_knapsack_by_hand():
    # shifted values [2.5, 0.5, 1.5, 0]; with budget 3, {0, 2} (cost 3) gives 4.0, the best of all
    res = knapsack_select([3.0, 1.0, 2.0, 0.5], [2.0, 1.0, 1.0, 1.0], 3.0)
    assert res.items.tolist() == [0, 2] and res.total_cost == 3.0 and res.total_utility == 5.0


def test_edge_budgets():
    assert len(knapsack_select([1.0, 2.0], [1.0, 1.0], 0.0)) == 0
    everything = knapsack_select([1.0, 2.0], [1.0, 1.0], 5.0)
    assert everything.items.tolist() == [1, 0] and everything.solver == "all"


def test_greedy_fill_spends_what_the_solver_leaves(monkeypatch):
    class TimeLimited:  # a feasible but poor answer at the time limit: only item 3
        status, message = 1, "Time limit reached"
        x = np.array([0.0, 0.0, 0.0, 1.0, 0.0])

    monkeypatch.setattr(scipy.optimize, "milp", lambda **kw: TimeLimited())
    u = [5.0, 4.0, 1.0, 2.0, 0.0]
    c = [4.0, 1.0, 1.0, 2.0, 1.0]
    # spent 2 of 6; value per cost (u - 0): item 1 4/1, item 0 5/4, item 2 1/1, item 4 0/1
    # item 1 fits (3), item 0 does not (7 > 6), item 2 fits (4), item 4 fits (5)
    res = knapsack_select(u, c, 6.0)
    assert sorted(res.items.tolist()) == [1, 2, 3, 4]
    assert res.items.tolist() == [1, 3, 2, 4]  # descending utility 4, 2, 1, 0
    assert res.total_cost == 5.0
    assert (res.solver, res.status) == ("milp+greedy", "time_limit")
    assert "greedy fill added 3" in res.message


@pytest.mark.parametrize("failure", ["raise", "status"])
def test_solver_failure_falls_back_to_greedy(monkeypatch, failure):
    class Failed:
        status, message, x = 4, "HiGHS crashed", None

    def fake(**kw):
        if failure == "raise":
            raise RuntimeError("no solver")
        return Failed()

    monkeypatch.setattr(scipy.optimize, "milp", fake)
    # value per cost: item 0 3/3 = 1, item 1 2/1 = 2, item 2 0; budget 3: item 1 (1), item 0 no (4 > 3), item 2 (2)
    res = knapsack_select([3.0, 2.0, 0.0], [3.0, 1.0, 1.0], 3.0)
    assert res.items.tolist() == [1, 2]
    assert (res.solver, res.status) == ("greedy", "failed")
    assert res.message.startswith("milp failed:") and ("no solver" in res.message or "HiGHS crashed" in res.message)


def test_invalid_inputs():
    with pytest.raises(ParameterError, match=r"utilities\[1\] = nan"):
        knapsack_select([1.0, math.nan], [1.0, 1.0], 1.0)
    with pytest.raises(ParameterError, match=r"costs\[0\] = 0"):
        knapsack_select([1.0, 2.0], [0.0, 1.0], 1.0)
    with pytest.raises(ParameterError, match="cost_budget"):
        knapsack_select([1.0], [1.0], -1.0)
    with pytest.raises(ParameterError, match="equal length"):
        knapsack_select([1.0, 2.0], [1.0], 1.0)


def test_real_size_is_feasible_and_filled():
    # 1000 items with time-model-like costs: whatever the solver had time for (a busy machine may stop
    # it at the limit), the answer fits and the greedy fill leaves no unpicked item that still fits
    rng = np.random.default_rng(0)
    u, c = rng.normal(size=1000), rng.uniform(30, 120, size=1000)
    res = knapsack_select(u, c, 20_000.0, time_limit=5.0)
    unpicked = np.setdiff1d(np.arange(1000), res.items)
    assert res.total_cost <= 20_000.0 and 20_000.0 - res.total_cost < c[unpicked].min()
    assert res.status in ("optimal", "time_limit") and res.solver in ("milp", "milp+greedy")


def _dp_best(value, costs, budget):
    """Exact 0-1 knapsack by dynamic programming over integer costs: the best total value."""
    best = np.zeros(budget + 1)
    for v, w in zip(value, costs):
        best[w:] = np.maximum(best[w:], best[:-w or None][: budget + 1 - w] + v)
    return best[budget]


def test_small_instances_are_solved_exactly():
    # against an exact dynamic program: the solver's answer reaches the optimum (no time pressure here)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        u, c = rng.uniform(0, 10, size=30), rng.integers(1, 20, size=30)
        budget = int(c.sum() // 3)
        res = knapsack_select(u, c.astype(float), float(budget), time_limit=60.0)
        shifted = u - u.min()  # the objective knapsack_select maximises (documented)
        assert shifted[res.items].sum() == pytest.approx(_dp_best(shifted, c, budget), rel=1e-4)
        assert res.total_cost <= budget


def test_time_model_counts_characters_for_scripts_without_spaces():
    from evalsift.select.costaware import source_length

    zh = "警方在英国难民酒店外的暴力抗议后逮捕了15人"  # 23 characters, no space: one whitespace "word"
    ja = "警察は暴力的な抗議の後、15人を逮捕した。"
    ko = "경찰은 폭력 시위 후 15명을 체포했다"  # Hangul has spaces, but its units are longer than a word
    th = "ตำรวจจับกุมผู้ประท้วง"
    for text in (zh, ja, ko, th):
        assert source_length(text) == len(text) and source_length(text, "words") == len(text.split())
    assert source_length("Police arrest 15 after violent protest") == 6
    # a pool mixing sources: each item by its own script; 0.15 * length + 33.7
    p = Pool(item_ids=["zh", "en"], inputs=[zh, "Police arrest 15"], systems=["S"])
    np.testing.assert_allclose(item_costs(p), [0.15 * len(zh) + 33.7, 0.15 * 3 + 33.7])
    np.testing.assert_allclose(item_costs(p, length_unit="words"), [0.15 * 1 + 33.7, 0.15 * 3 + 33.7])
    with pytest.raises(ParameterError, match="length_unit='letters' is not one of: auto, words, characters"):
        item_costs(p, length_unit="letters")


# ---------------------------------------------------------------- the package's rescaling
def test_package_rescaling_by_hand():
    # u = [0, 9, 10]: (u - 0) / (10 - 0) / 2 + 0.1 = [0.1, 0.55, 0.6]; ours: u - 0 = [0, 9, 10]
    assert knapsack_values([0.0, 9.0, 10.0], "package").tolist() == pytest.approx([0.1, 0.55, 0.6])
    assert knapsack_values([0.0, 9.0, 10.0]).tolist() == [0.0, 9.0, 10.0]
    # costs 1, 1, 2 and budget 2: {0, 1} or {2}. Ours: 0 + 9 = 9 < 10, so item 2.
    # The package's: 0.1 + 0.55 = 0.65 > 0.6 (each item's 0.1 favours more items), so items 1 and 0.
    ours = knapsack_select([0.0, 9.0, 10.0], [1.0, 1.0, 2.0], 2.0)
    theirs = knapsack_select([0.0, 9.0, 10.0], [1.0, 1.0, 2.0], 2.0, rescale="package")
    assert ours.items.tolist() == [2] and theirs.items.tolist() == [1, 0]
    assert theirs.total_utility == 9.0 and theirs.params["rescale"] == "package"  # given utilities, not values
    # equal utilities: the package divides by zero; every value is 0.1 here
    assert knapsack_values([3.0, 3.0], "package").tolist() == [0.1, 0.1]
    with pytest.raises(ParameterError, match="rescale"):
        knapsack_select([1.0, 2.0], [1.0, 1.0], 1.0, rescale="minmax")
