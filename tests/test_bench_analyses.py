"""DiffUse's own analyses (bench pairwise --analyses): the quantities by hand, their known
properties on pools built to have them, and the command's output."""

import json

import numpy as np
import pytest

from evalsift.bench import pairwise_bench
from evalsift.bench.analyses import DiffUseAnalyses
from evalsift.bench.calibration import SyntheticEncoder, synthetic_pool
from evalsift.bench.pairwise import PairCase
from evalsift.cli import main
from evalsift.select.base import Selection


def test_deviation_by_hand():
    truth = np.array(["a"] * 6 + ["b"] * 3 + ["tie"])  # test set of 10: a wins 6-3, distance 0.3
    case = PairCase("A", "B", 0, None, truth, "a", 0.3)
    ana = DiffUseAnalyses()
    sel = Selection(items=np.array([0, 6, 9]), item_ids=("0", "6", "9"), method="m", params={}, seed=0, budget=3,
                    cluster_sizes=np.array([5, 3, 2]))
    ana.add_selection("m", sel, case)
    res = ana.result()
    # picks a, b, tie: estimated distance (1 - 1) / 3 = 0; deviation 0 - 0.3
    assert res["deviation"]["m"]["3"]["mean"] == pytest.approx(-0.3)
    # weighted: (5 * 1 + 3 * (-1) + 2 * 0) / 10 = 0.2; deviation 0.2 - 0.3
    assert res["weighted_deviation"]["m"]["3"]["mean"] == pytest.approx(-0.1)
    b_case = PairCase("A", "B", 0, None, np.array(["b"] * 6 + ["a"] * 3 + ["tie"]), "b", 0.3)
    ana.add_selection("m", Selection(items=np.array([0, 1]), item_ids=("0", "1"), method="m", params={}, seed=0,
                                     budget=2), b_case)
    # toward the test winner b: the picks are two b wins, distance 1; deviation 1 - 0.3
    assert ana.result()["deviation"]["m"]["2"]["mean"] == pytest.approx(0.7)


def test_analyses_on_pools_with_known_structure():
    """Synthetic pools whose difference vectors carry the verdict: tied items have the smallest
    differences, so the lowest norm bin holds the ties; a random sample's deviation is unbiased."""
    pool = synthetic_pool(300, gap=0.2, ties=0.3, seed=1)
    res = pairwise_bench(pool, "truth", ["diffuse", "random"], [10, 40], seeds=30, encoder=SyntheticEncoder(strength=4.0),
                         quiet=True, analyses={"clusters": 10, "bins": 4, "budget": 10})
    an = res["analyses"]
    assert an["params"] == {"clusters": 10, "bins": 4, "budget": 10}
    for m in ("diffuse", "random"):
        assert an["deviation"][m]["40"]["runs"] == 30
    rnd = an["deviation"]["random"]["40"]
    assert abs(rnd["mean"]) <= 3 * rnd["se"] + 0.01  # unbiased: the expected count difference of a random sample
    assert set(an["weighted_deviation"]) == {"diffuse"}  # only selectors with clusters
    nb = an["norm_bins"]
    assert nb["test_sets"] == 30 and len(nb["ties"]) == 4
    assert nb["ties"][0] > 0.8 and nb["ties"][-1] < 0.1, nb  # ties sit at the smallest differences
    assert nb["agreement"][-1] > 0.5  # the large differences are decisive and favour the winner more often than not
    cn = an["cluster_norm"]
    assert cn["n_clusters"] == 30 * 10 and -1 <= cn["spearman_size_norm"] <= 1
    assert sum(b["clusters"] for b in cn["by_size"]) == cn["n_clusters"]


def test_bench_pairwise_analyses_command(capsys, tmp_path):
    code = main(["--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "human", "--methods",
                 "diffuse,random", "--budgets", "5,10", "--seeds", "2", "--encoder", "tfidf", "--analyses",
                 "--norm-bins", "3", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "DiffUse's analyses" in out and "Spearman" in out
    res = json.loads((tmp_path / "results.json").read_text())
    assert len(res["analyses"]["norm_bins"]["success"]) == 3
    assert (tmp_path / "analyses.png").stat().st_size > 1000
