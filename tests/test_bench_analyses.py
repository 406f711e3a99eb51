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


class _Fitted:
    """What add_case reads from a fitted DiffUse: its difference vectors and Ward tree."""

    space, clustering = "difference", "ward"

    def __init__(self, X):
        from scipy.cluster.hierarchy import linkage

        from evalsift.select.clustering import ClusterTree

        self.vectors_ = X
        self.tree_ = ClusterTree(linkage(X, "ward"), len(X))


def test_norm_bins_whole_bin_and_selected_norms_by_hand():
    X = np.array([[0.0], [0.0], [0.0], [1.0], [2.0], [3.0]])  # norms 0, 0, 0, 1, 2, 3
    truth = np.array(["b", "b", "a", "a", "a", "a"])  # test winner a (4-2)
    case = PairCase("A", "B", 0, None, truth, "a", 2 / 6)
    ana = DiffUseAnalyses(clusters=2, bins=2)  # the default: each bin judged by all its items
    assert ana.budget is None
    ana.add_selection("m", Selection(items=np.array([3, 4]), item_ids=("3", "4"), method="m", params={}, seed=0,
                                     budget=2), case)
    ana.add_case(case, {"diffuse": _Fitted(X)})
    res = ana.result()
    nb = res["norm_bins"]
    # low bin {0, 1, 2}: b, b, a -> majority b, a failure; agreement 1 of 3 decisive; high bin {3, 4, 5}: all a
    assert nb["success"] == [0.0, 1.0]
    assert nb["agreement"] == pytest.approx([1 / 3, 1.0]) and nb["ties"] == [0.0, 0.0]
    assert nb["mean_norm"] == pytest.approx([0.0, 2.0])
    sn = res["selected_norms"]["methods"]
    # picks: norms 1 and 2 -> mean 1.5; all items: (0 + 0 + 0 + 1 + 2 + 3) / 6 = 1
    assert sn["m"]["mean"] == pytest.approx(1.5) and sn["m"]["picks"] == 2
    assert sn["all items"]["mean"] == pytest.approx(1.0) and sn["all items"]["picks"] == 6
    assert sum(sn["m"]["share"]) == pytest.approx(1.0)


def test_winning_distances_by_hand():
    from evalsift.bench.analyses import winning_distances

    wd = winning_distances({"A vs B": np.array(["a"] * 6 + ["b"] * 4),  # |6 - 4| / 10 = 0.2
                            "A vs C": np.array(["a", "tie", "tie", "b"]),  # 0
                            "B vs C": np.array(["b"] * 3)})  # 1
    assert wd["pairs"] == {"A vs B": 0.2, "A vs C": 0.0, "B vs C": 1.0}
    assert sum(wd["counts"]) == 3 and wd["counts"][0] == 1 and wd["counts"][-1] == 1
    assert wd["share_below_0.1"] == pytest.approx(1 / 3)


def test_tsne_projection_keeps_groups_apart():
    from evalsift.bench.analyses import tsne_projection

    rng = np.random.default_rng(0)
    X = np.concatenate([np.zeros((10, 5)), rng.normal(0, 0.01, (20, 5)), rng.normal(3, 0.5, (20, 5))])
    ts = tsne_projection(X)
    assert len(ts["points"]) == 50 and ts["share_zero_vectors"] == pytest.approx(10 / 50)
    Y = np.array(ts["points"])
    # the 30 near-zero vectors and the 20 far ones form two separate groups in the projection
    near, far = Y[:30], Y[30:]
    gap = np.linalg.norm(near.mean(axis=0) - far.mean(axis=0))
    assert gap > 2 * max(near.std(axis=0).max(), far.std(axis=0).max())


def test_bench_pairwise_analyses_defaults_and_figures(capsys, tmp_path):
    code = main(["--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "human", "--methods",
                 "diffuse,random", "--budgets", "5,10", "--seeds", "2", "--encoder", "tfidf", "--analyses",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "the whole bin" in out and "t-SNE" in out
    an = json.loads((tmp_path / "results.json").read_text())["analyses"]
    assert an["params"] == {"clusters": 50, "bins": 50, "budget": None}
    assert len(an["norm_bins"]["success"]) == 50
    assert set(an["selected_norms"]["methods"]) == {"diffuse", "random", "all items"}
    assert len(an["winning_distance"]["pairs"]) == json.loads((tmp_path / "results.json").read_text())["n_pairs"]
    assert len(an["tsne"]["points"]) == len(an["tsne"]["norms"]) > 0
    assert (tmp_path / "analyses-figures.png").stat().st_size > 1000
