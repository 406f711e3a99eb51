"""``bench subset``'s protocols choose the cluster rule, the Diversity tokens and the knapsack values:
``--protocol paper`` takes subset2evaluate's (the code behind the paper's tables), the default takes
ours, and each can be named. Small pools built so that each choice changes a number we can work out
by hand."""

import json

import numpy as np

from evalsift.bench.subset import PROTOCOL_DEFAULTS, subset_bench
from evalsift.cli import main
from evalsift.pool import Pool

N = 40


def run(pool, methods, **kw):
    kw = {"seeds": 1, "interval_resamples": 0, "quiet": True, "props": [0.5], **kw}
    return subset_bench(pool, "human", methods, **kw)


def identical_pool():
    # A is 1-2 points above B on every item; C is B's copy (all paired differences zero)
    rng = np.random.default_rng(0)
    b = rng.integers(0, 2, size=N).astype(float)
    h = np.c_[b + 1 + rng.integers(0, 2, size=N), b, b]
    return Pool(item_ids=[f"i{i}" for i in range(N)], systems=["A", "B", "C"], scores={"human": h},
                human_metrics=["human"], name="identical")


def test_protocol_defaults_name_the_rules():
    assert {k: PROTOCOL_DEFAULTS["paper"][k] for k in ("cluster_rule", "diversity_tokenizer", "knapsack_utility")} \
        == {"cluster_rule": "package", "diversity_tokenizer": "package", "knapsack_utility": "package"}
    assert {k: PROTOCOL_DEFAULTS["evalsift"][k] for k in ("cluster_rule", "diversity_tokenizer", "knapsack_utility")} \
        == {"cluster_rule": "ours", "diversity_tokenizer": "ours", "knapsack_utility": "ours"}


def test_paper_protocol_counts_clusters_by_the_package_rule():
    # every prefix of 20 items: B - A < 0 on all 20 (p = 2^-20 or its approximation): A splits from B under
    # every rule. C - B = 0 on every item: the package opens a third cluster, the text and our rules do not.
    pool = identical_pool()
    paper = run(pool, ["random"], protocol="paper")
    assert (paper["cluster_rule"], paper["cluster_chain"]) == ("package", "previous")
    assert "scipy" in paper["cluster_test"]
    assert paper["mean_over_props"]["random"]["clusters"] == 3.0
    text = run(pool, ["random"], protocol="paper", cluster_rule="text")
    assert text["cluster_rule"] == "text" and text["mean_over_props"]["random"]["clusters"] == 2.0
    default = run(pool, ["random"], subsample=1.0)
    assert (default["cluster_rule"], default["cluster_chain"]) == ("ours", "top")
    assert default["mean_over_props"]["random"]["clusters"] == 2.0
    # the old option still works and replaces the rule's chain only
    top = run(pool, ["random"], protocol="paper", cluster_chain="top")
    assert (top["cluster_rule"], top["cluster_chain"], top["mean_over_props"]["random"]["clusters"]) == \
        ("package", "top", 3.0)


def tokens_pool():
    # items 0-19: the two outputs differ in one word of two (similarity 0.5 under both tokenisers) and the
    # human scores alternate (A +1 on even items, B +1 on odd); items 20-39: the outputs differ only in case
    # and punctuation (ours: identical, 1; the package's whitespace tokens: nothing shared, 0) and A is 1 above B
    outputs = {"A": ["x y"] * 20 + ["The cat."] * 20, "B": ["x z"] * 20 + ["the cat"] * 20}
    h = np.array([[1.0, 0.0] if i % 2 == 0 else [0.0, 1.0] for i in range(20)] + [[1.0, 0.0]] * 20)
    return Pool(item_ids=[f"i{i}" for i in range(N)], systems=["A", "B"], outputs=outputs, scores={"human": h},
                human_metrics=["human"], name="tokens")


def test_paper_protocol_tokenises_diversity_as_the_package():
    # Diversity's first 20 items: ours the word items (utility -0.5 > -1): B - A = -1, +1, ... (10 each),
    # one cluster. The package's: the case items (utility 0 > -0.5): B - A = -1 on all 20, two clusters.
    pool = tokens_pool()
    paper = run(pool, ["diversity"], protocol="paper")
    assert paper["diversity_tokenizer"] == "package" and paper["curves"]["diversity"]["0.5"]["clusters"] == 2.0
    ours = run(pool, ["diversity"], protocol="paper", diversity_tokenizer="ours")
    assert ours["curves"]["diversity"]["0.5"]["clusters"] == 1.0
    default = run(pool, ["diversity"], subsample=1.0)
    assert default["diversity_tokenizer"] == "ours" and default["curves"]["diversity"]["0.5"]["clusters"] == 1.0


def knapsack_pool():
    # X: items 0-13, cost 1, metric_avg utility 4.5 (metric -4.5), A 1 above B.
    # Y: items 14-33, cost 2, utility 10, A and B equal. Z: items 34-39, cost 3, utility 0, equal.
    # Mean cost (14 + 40 + 18) / 40 = 1.8: at p = 0.5 the budget is 20 items x 1.8 = 36.
    u = np.r_[np.full(14, 4.5), np.full(20, 10.0), np.zeros(6)]
    h = np.r_[np.tile([1.0, 0.0], (14, 1)), np.full((26, 2), 0.5)]
    m = -u[:, None] * np.ones((1, 2))
    return Pool(item_ids=[f"i{i}" for i in range(N)], systems=["A", "B"], scores={"human": h, "m": m},
                human_metrics=["human"], metadata={"cost": [1.0] * 14 + [2.0] * 20 + [3.0] * 6}, name="costs")


def test_cost_aware_paper_protocol_uses_the_package_knapsack_values():
    # ours: values u - 0 = 4.5 (X, 4.5 per cost), 10 (Y, 5 per cost): 18 Y (cost 36, value 180) beat
    #   14 X + 11 Y (63 + 110 = 173): only Y, where A = B: one cluster.
    # the package's: X 4.5 / 10 / 2 + 0.1 = 0.325 per cost, Y 0.6 / 2 = 0.3, Z 0.1 / 3: 14 X + 11 Y
    #   (4.55 + 6.6 = 11.15) beat 18 Y (10.8): B - A = -1 on the 14 X items (exact p = 2^-14): two clusters.
    # (Our cluster rule: the package's would split A and B on all-zero differences too.)
    pool = knapsack_pool()
    kw = {"protocol": "paper", "metric": "m", "cluster_rule": "ours"}
    paper = run(pool, ["metric_avg"], cost_aware=True, **kw)
    assert paper["cost_aware"]["knapsack_utility"] == "package"
    assert paper["curves"]["metric_avg"]["0.5"]["clusters"] == 2.0
    ours = run(pool, ["metric_avg"], cost_aware=True, knapsack_utility="ours", **kw)
    assert ours["curves"]["metric_avg"]["0.5"]["clusters"] == 1.0
    # without cost_aware the first 20 items by utility are Y items: one cluster, no knapsack
    plain = run(pool, ["metric_avg"], **kw)
    assert "cost_aware" not in plain and plain["curves"]["metric_avg"]["0.5"]["clusters"] == 1.0


def test_cli_options(capsys, tmp_path):
    args = ["--quiet", "bench", "subset", "--data", "demo", "--human-metric", "human", "--methods", "random",
            "--seeds", "1", "--interval-resamples", "0"]
    assert main([*args, "--protocol", "paper", "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "package cluster rule, diversity tokens package, clusters vs previous, protocol paper" in out
    res = json.loads((tmp_path / "p" / "results.json").read_text())
    assert (res["cluster_rule"], res["diversity_tokenizer"]) == ("package", "package")
    assert main([*args, "--cluster-rule", "text", "--diversity-tokenizer", "package", "--cost-aware",
                 "--knapsack-utility", "package", "--out", str(tmp_path / "o")]) == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert (res["protocol"], res["cluster_rule"], res["cluster_chain"], res["diversity_tokenizer"]) == \
        ("evalsift", "text", "previous", "package")
    assert res["cost_aware"]["knapsack_utility"] == "package"
    assert main([*args, "--cluster-rule", "paper", "--out", str(tmp_path / "x")]) == 2
    assert "invalid choice" in capsys.readouterr().err
