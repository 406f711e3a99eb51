"""The evalsift command on the built-in demo data (offline, TF-IDF encoder unless stated)."""

import json

import pytest

from evalsift.cli import main

from _docs import leaf_commands


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_data_info(capsys):
    code, out, _ = run(capsys, "data", "info", "demo")
    assert code == 0
    assert "300 items x 3 systems" in out and "human  human" in out and "auto   token_f1" in out


def test_data_info_json(capsys):
    code, out, _ = run(capsys, "data", "info", "demo", "--json")
    info = json.loads(out)
    assert info["systems"] == ["A", "B", "C"] and info["metrics"]["human"]["human"] is True


def test_select_diffuse_writes_items_in_order(capsys, tmp_path):
    out = tmp_path / "picks.jsonl"
    code, _, err = run(capsys, "select", "diffuse", "--data", "demo", "--a", "A", "--b", "B", "--budget", "12",
                       "--encoder", "tfidf", "--out", str(out))
    assert code == 0 and "wrote 12 items" in err
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["rank"] for r in rows] == list(range(1, 13))
    assert len({r["item_id"] for r in rows}) == 12
    assert all(r["a"] == "A" and r["b"] == "B" and r["output_a"] and r["output_b"] for r in rows)
    # DiffUse has no utilities: each pick says how many items its cluster holds, largest first
    sizes = [r["cluster_size"] for r in rows]
    assert "utility" not in rows[0] and sizes == sorted(sizes, reverse=True) and min(sizes) >= 1


def test_select_pairwise_needs_two_systems(capsys, tmp_path):
    code, _, err = run(capsys, "select", "diffuse", "--data", "demo", "--budget", "5", "--out", str(tmp_path / "x"))
    assert code == 2 and "--a SYS --b SYS" in err


def test_compare_json(capsys):
    code, out, _ = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                       "--encoder", "tfidf", "--json")
    d = json.loads(out)
    # the demo's A beats B on about 60% of the untied items (io/demo.py): with 300 items DiffUse finds it
    assert code == 0 and d["outcome"] == "winner" and d["winner"] == "A" and d["risk"] <= 0.2
    assert d["labels_used"] <= 200 and d["trace"][0]["decision_set"] == 5
    # the decision can be audited: every item asked about, its verdict and who gave it
    assert len(d["judged"]) == d["labels_used"] and all(r["votes"] == {"metric:human": r["verdict"]} for r in d["judged"])
    in_set = [r["verdict"] for r in d["judged"] if r["in_decision_set"]]
    assert (in_set.count("a"), in_set.count("b"), in_set.count("tie")) == (d["wins_a"], d["wins_b"], d["ties"])


def test_compare_human_readable_default_encoder(capsys):
    pytest.importorskip("sentence_transformers", reason="the default encoder needs evalsift[embed]")
    code, out, _ = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human")
    assert code == 0 and "judgments used" in out and "trace" in out


def test_compare_unknown_system_and_metric(capsys):
    code, _, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "D", "--oracle", "metric:human")
    assert code == 2 and "Unknown system 'D'" in err and "Available systems: A, B, C" in err
    code, _, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:humn",
                       "--encoder", "tfidf")
    assert code == 2 and "Did you mean 'human'" in err


def test_unknown_method(capsys, tmp_path):
    code, _, err = run(capsys, "select", "difuse", "--data", "demo", "--budget", "3", "--out", str(tmp_path / "x"))
    assert code == 2 and "Unknown selector 'difuse'. Did you mean 'diffuse'?" in err


def test_bench_pairwise_writes_results_and_plot(capsys, tmp_path):
    code, out, _ = run(capsys, "--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "human",
                       "--methods", "diffuse,random", "--budgets", "5,10,240", "--seeds", "3", "--encoder", "tfidf",
                       "--iterative", "--max-labels", "40", "--out", str(tmp_path))
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    for key in ("data", "oracle_metric", "n_items", "n_pairs", "seeds", "curves", "iterative", "timing_s"):
        assert key in res
    assert res["n_pairs"] == 3 and res["seeds"] == 3 and set(res["curves"]) == {"diffuse", "random"}
    # budget 240 = the whole 80% test set: the sample *is* the test set, so every run succeeds
    assert res["curves"]["random"]["240"]["success"] == 1.0 == res["curves"]["diffuse"]["240"]["success"]
    for row in res["iterative"].values():
        assert row["runs"] == 3 * 3 - res["skipped_tied_runs"]  # every untied (pair, seed) ran the loop once
        assert row["annotations"] <= 40
    assert (tmp_path / "success.png").stat().st_size > 1000
    assert "success rate by budget" in out


def test_bench_max_pairs_is_seeded(capsys, tmp_path):
    args = ["--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "human", "--methods", "random",
            "--budgets", "5", "--seeds", "1", "--max-pairs", "2"]
    run(capsys, *args, "--out", str(tmp_path / "1"))
    run(capsys, *args, "--out", str(tmp_path / "2"))
    p1 = json.loads((tmp_path / "1" / "results.json").read_text())["pairs"]
    p2 = json.loads((tmp_path / "2" / "results.json").read_text())["pairs"]
    assert p1 == p2 and len(p1) == 2


def test_methods_lists_registries(capsys):
    code, out, _ = run(capsys, "methods")
    assert code == 0 and "diffuse" in out and "metric" in out and "minilm" in out


# ------------------------------------------------------------------ ranking many systems (issue 3)
def test_select_metric_method_by_proportion(capsys, tmp_path):
    out = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "select", "metric_var", "--data", "demo", "--metric", "token_f1", "--proportion", "0.1",
                       "--out", str(out))
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert code == 0 and len(rows) == 30 and "30 of 300 items" in err
    utils = [r["utility"] for r in rows]
    assert utils == sorted(utils, reverse=True)  # most useful first
    assert {"domain", "doc", "cost"} <= set(rows[0])


def test_select_balanced_and_documents(capsys, tmp_path):
    out = tmp_path / "b.jsonl"
    run(capsys, "select", "metric_avg", "--data", "demo", "--metric", "token_f1", "--budget", "9", "--balance", "domain",
        "--out", str(out))
    domains = [json.loads(l)["domain"] for l in out.read_text().splitlines()]
    assert len(domains) == 9 and len(set(domains)) == 3 and all(domains.count(d) == 3 for d in set(domains))
    run(capsys, "select", "metric_avg", "--data", "demo", "--metric", "token_f1", "--budget", "20", "--documents",
        "--out", str(out))
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert len(rows) <= 20
    from evalsift.io import load

    pool = load("demo")
    docs = {r["doc"] for r in rows}
    assert sum(d in docs for d in pool.metadata["doc"]) == len(rows)  # every chosen document is whole


def test_select_keeps_subset2evaluate_format(capsys, tmp_path):
    src = tmp_path / "in.jsonl"
    items = [{"i": k, "src": f"source {k}", "tgt": {"A": f"a {k}", "B": f"b {k}"}, "extra_field": k * 10,
              "scores": {"A": {"human": k, "chrF": k % 3}, "B": {"human": 1, "chrF": 2 - k % 3}}} for k in range(6)]
    src.write_text("".join(json.dumps(r) + "\n" for r in items))
    out = tmp_path / "out.jsonl"
    code, _, _ = run(capsys, "select", "metric_var", "--data", str(src), "--metric", "chrF", "--budget", "3", "--out", str(out))
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert code == 0 and len(rows) == 3
    for r in rows:
        assert {"i", "src", "tgt", "scores", "extra_field", "subset2evaluate_utility"} <= set(r)
        assert r["extra_field"] == r["i"] * 10
    # chrF per item k: A = k % 3, B = 2 - k % 3: var = (k%3 - 1)^2 -> 1 for k % 3 in (0, 2), 0 for k % 3 == 1
    assert all(r["i"] % 3 != 1 for r in rows) and all(r["subset2evaluate_utility"] == 1.0 for r in rows)


def test_rank_with_clusters(capsys, tmp_path):
    code, out, _ = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--json")
    res = json.loads(out)
    assert code == 0 and [r["rank"] for r in res["ranking"]] == [1, 2, 3]
    means = [r["mean"] for r in res["ranking"]]
    assert means == sorted(means, reverse=True) and 1 <= res["n_clusters"] <= 3
    picks = tmp_path / "picks.jsonl"
    run(capsys, "select", "random", "--data", "demo", "--budget", "40", "--out", str(picks))
    code, out, _ = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--items", str(picks), "--json")
    small = json.loads(out)
    assert code == 0 and small["n_items"] == 40
    # intervals: each mean inside its own interval; 40 items give wider intervals than 300
    assert res["interval"]["level"] == 0.95 and "studentized" in res["interval"]["method"]
    for row in (*res["ranking"], *small["ranking"]):
        lo, hi = row["mean_interval"]
        assert lo <= row["mean"] <= hi and row["rank_interval"][0] <= row["rank_interval"][1]
    width = {r["system"]: r["mean_interval"][1] - r["mean_interval"][0] for r in res["ranking"]}
    assert all(r["mean_interval"][1] - r["mean_interval"][0] > width[r["system"]] for r in small["ranking"])
    # agreement with the full ranking: the 40 picks of 300 are a sample of a known pool (finite-population
    # correction); all 300 items are a sample of an unknown population
    assert small["agreement"]["population"] == 300 and res["agreement"]["population"] is None
    lo, hi = small["agreement"]["interval"]
    assert -1 <= lo <= hi <= 1 and small["agreement"]["kind"] == "kendall"
    code, out, _ = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--level", "0.8")
    assert code == 0 and "80% intervals: studentized bootstrap over items" in out and "ranks" in out
    assert "agreement to expect with the ranking on all the items these were drawn from" in out


def test_rank_rejects_unknown_items(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "nope"}\n')
    code, _, err = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--items", str(bad))
    assert code == 2 and "nope" in err


def test_bench_subset_writes_results(capsys, tmp_path):
    code, out, _ = run(capsys, "--quiet", "bench", "subset", "--data", "demo", "--human-metric", "human", "--metric",
                       "token_f1", "--methods", "random,metric_var,metric_avg", "--seeds", "3", "--out", str(tmp_path))
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["curves"]) == {"random", "metric_var", "metric_avg"}
    assert set(res["curves"]["random"]) == {f"{0.05 * k:.2f}".rstrip("0").rstrip(".") for k in range(1, 11)}
    # random is normalised by itself (1.0 by construction); the raw value is a real measurement
    assert 0.0 < res["needed_to_match_raw"]["random"]["correlation"] <= 1.0
    for m in res["methods"]:
        for prop in res["curves"][m].values():
            assert -1.0 <= prop["correlation"] <= 1.0 and 1.0 <= prop["clusters"] <= 3.0
            lo, hi = prop["correlation_interval"]  # what the prefix alone says about its agreement
            assert -1.0 <= lo <= hi <= 1.0 and 0.0 <= prop["interval_coverage"] <= 1.0
            assert -1.0 <= prop["correlation_expected"] <= 1.0  # a mean: can sit above a percentile interval's low
            assert 0.0 <= prop["mean_interval_coverage"] <= 1.0 and prop["mean_interval_width"] > 0
    assert res["correlation_intervals"]["level"] == 0.95
    assert (tmp_path / "subset.png").stat().st_size > 1000 and "needed to match" in out and "cov " in out


def test_naming_the_human_metric_makes_it_human(capsys, tmp_path):
    # subset2evaluate's summarisation files flag no metric as human; naming one on the command line does
    src = tmp_path / "summ.jsonl"
    rng = __import__("numpy").random.default_rng(0)
    src.write_text("".join(json.dumps({"i": k, "src": f"doc {k}", "tgt": {s: f"{s} {k}" for s in "ABCD"},
                                       "scores": {s: {"relevance": float(rng.normal(j)), "rouge": float(rng.normal(j))}
                                                  for j, s in enumerate("ABCD")}}) + "\n" for k in range(30)))
    code, out, _ = run(capsys, "data", "info", str(src), "--json")
    assert code == 0 and json.loads(out)["human_metrics"] == []  # nothing is flagged human in the file
    code, out, err = run(capsys, "--quiet", "bench", "subset", "--data", str(src), "--human-metric", "relevance",
                         "--metric", "rouge", "--methods", "random,metric_var", "--seeds", "2", "--out", str(tmp_path / "o"))
    assert code == 0, err
    code, out, err = run(capsys, "rank", "--data", str(src), "--human-metric", "relevance", "--json")
    assert code == 0 and json.loads(out)["ranking"][0]["system"] == "D"  # scores drawn around 0, 1, 2, 3


def test_select_within_a_cost_budget(capsys, tmp_path):
    out = tmp_path / "c.jsonl"
    code, _, err = run(capsys, "select", "metric_var", "--data", "demo", "--metric", "token_f1", "--cost-budget", "60",
                       "--out", str(out))
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert code == 0 and 0 < len(rows) < 300 and sum(r["cost"] for r in rows) <= 60  # demo costs total 323
    assert "milp" in err or "greedy" in err


def test_bench_calibration_synthetic_dead_heats(capsys, tmp_path):
    """On dead heats every named winner is wrong: the anytime rule keeps its stated risk, the DiffUse
    paper's rules do not (they name a winner in most runs; with 30% ties the paper rule, which counts
    ties against the leader, is held back -- the tie-aware one is not). The claims could fail."""
    code, out, _ = run(capsys, "--quiet", "bench", "calibration", "--runs", "60", "--gaps", "0", "--ties", "0,0.3",
                       "--methods", "random", "--risks", "0.2", "--synthetic-items", "400", "--max-labels", "120",
                       "--out", str(tmp_path))
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["provenance"]["command"].startswith("evalsift --quiet bench calibration")
    for case, heuristic in (("gap=0,ties=0", "paper"), ("gap=0,ties=0.3", "tie_aware")):
        anytime = res["synthetic"]["cells"][case]["random"]["anytime"]["0.2"]
        paper = res["synthetic"]["cells"][case]["random"][heuristic]["0.2"]
        assert anytime["runs"] == paper["runs"] == 60
        assert not anytime["exceeds"] and anytime["wrong_ci"][0] <= 0.2
        assert paper["wrong"] > 0.5 and paper["exceeds"]
        assert anytime["mean_labels"] <= 120 and paper["mean_labels"] < anytime["mean_labels"]
        # the win-rate interval at the stop covers the pool's true win rate (1/2) at its level, up to 2 se
        assert anytime["interval_coverage"] >= 0.8 - 2 * (0.8 * 0.2 / 60) ** 0.5 and paper["interval_coverage"] is None
    assert res["synthetic"]["summary"]["anytime"]["exceeds"] == 0
    assert "valid: P(ever naming the wrong winner) <= risk" in out and "EXCEEDS" in out
    assert (tmp_path / "calibration.png").stat().st_size > 1000


def test_bench_calibration_with_a_proxy(capsys, tmp_path):
    """--proxy adds random+proxy (anytime) on the synthetic pools (their own metric 'proxy') and on the
    real data: on a clear gap it decides more often than without, and on dead heats it keeps the risk."""
    code, out, _ = run(capsys, "--quiet", "bench", "calibration", "--data", "demo", "--oracle-metric", "human",
                       "--rules", "anytime", "--methods", "random", "--seeds", "2", "--runs", "40", "--gaps", "0,0.2",
                       "--ties", "0.3", "--synthetic-items", "300", "--risks", "0.2", "--proxy", "metric:token_f1",
                       "--out", str(tmp_path))
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["proxy"] == "metric:token_f1" and "random+proxy/anytime" in out
    cells = res["synthetic"]["cells"]
    heat = cells["gap=0,ties=0.3"]["random+proxy"]["anytime"]["0.2"]
    assert heat["runs"] == 40 and not heat["exceeds"]
    clear = cells["gap=0.2,ties=0.3"]
    assert clear["random+proxy"]["anytime"]["0.2"]["declared"] > clear["random"]["anytime"]["0.2"]["declared"]
    assert res["real"]["cells"]["all"]["random+proxy"]["anytime"]["0.2"]["runs"] == res["real"]["cases"]


def test_bench_calibration_real_data_counts_every_test_set(capsys, tmp_path):
    code, out, _ = run(capsys, "--quiet", "bench", "calibration", "--data", "demo", "--oracle-metric", "human",
                       "--no-synthetic", "--seeds", "4", "--methods", "random,diffuse", "--encoder", "tfidf",
                       "--max-labels", "60", "--out", str(tmp_path))
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    real = res["real"]
    assert "synthetic" not in res and real["pairs"] == 3
    assert real["cases"] + real["skipped_tied"] == 3 * 4
    cells = real["cells"]["all"]
    assert set(cells["random"]) == {"anytime", "paper", "tie_aware"}
    assert set(cells["diffuse"]) == {"paper", "tie_aware"}  # anytime needs a random order: not run with DiffUse
    for by_rule in cells.values():
        for by_risk in by_rule.values():
            for c in by_risk.values():
                assert c["runs"] == real["cases"]
                assert abs(c["declared"] + c["inconclusive"] - 1) < 1e-9 and c["wrong"] <= c["declared"]
    assert "demo, oracle metric:human" in out


def test_compare_method_diffuse_keeps_its_old_form(capsys):
    """`compare --method diffuse` without --risk-rule ran DiffUse with the paper's rule before the anytime
    rule existed; it still does, with a note that the rule is a heuristic. The default is the valid rule."""
    code, out, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                         "--method", "diffuse", "--encoder", "tfidf", "--json")
    d = json.loads(out)
    assert code == 0 and d["risk_rule"] == "paper" and d["method"] == "diffuse" and d["guarantee"].startswith("heuristic")
    assert "using the DiffUse paper's rule, a heuristic" in err
    code, out, _ = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--json")
    assert code == 0 and json.loads(out)["risk_rule"] == "anytime"


def test_rank_cluster_chain_is_the_reference_of_each_test(capsys):
    from evalsift.io import load
    from evalsift.stats import system_clusters

    scores = load("demo").score("human")
    for chain in ("top", "previous"):
        code, out, _ = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--cluster-chain", chain,
                           "--json")
        res = json.loads(out)
        expected = system_clusters(scores, chain=chain)
        assert code == 0 and res["chain"] == chain and res["n_clusters"] == expected.n_clusters
        assert [r["cluster"] for r in res["ranking"]] == [int(expected.labels[j]) + 1 for j in expected.order]
    code, _, err = run(capsys, "rank", "--data", "demo", "--human-metric", "human", "--cluster-chain", "best")
    assert code == 2 and "invalid choice" in err


def test_bench_subset_paper_protocol(capsys, tmp_path):
    code, out, err = run(capsys, "--quiet", "bench", "subset", "--data", "demo", "--human-metric", "human", "--metric",
                         "token_f1", "--methods", "random,metric_var", "--seeds", "3", "--protocol", "paper",
                         "--interval-resamples", "0", "--out", str(tmp_path))
    assert code == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert (res["protocol"], res["correlation"], res["cluster_chain"], res["subsample"]) == \
        ("paper", "spearman", "previous", 1.0)
    # ten geometric proportions 0.05 * 10^(k/9): 0.05, 0.0646, ..., 0.5
    assert len(res["props"]) == 10 and res["props"][0] == pytest.approx(0.05) and res["props"][-1] == pytest.approx(0.5)
    assert res["props"][1] == pytest.approx(0.05 * 10 ** (1 / 9))
    # the whole pool; random repeated on every seed, a seed-independent method scored once
    assert res["n_items_subsample"] == res["n_items"] == 300 and res["repetitions"] == {"random": 3, "metric_var": 1}
    assert res["curves"]["metric_var"]["0.5"]["correlation_se"] == 0.0
    cell = res["mean_over_props"]["metric_var"]  # the Table 10 cell: the curve's mean over the proportions
    assert cell["correlation"] == pytest.approx(sum(c["correlation"] for c in res["curves"]["metric_var"].values()) / 10)
    assert "clusters vs previous, protocol paper" in out
    # an explicit option still wins over the protocol's default
    code, _, err = run(capsys, "--quiet", "bench", "subset", "--data", "demo", "--human-metric", "human", "--methods",
                       "random", "--seeds", "1", "--protocol", "paper", "--cluster-chain", "top", "--interval-resamples",
                       "0", "--out", str(tmp_path / "top"))
    assert code == 0 and json.loads((tmp_path / "top" / "results.json").read_text())["cluster_chain"] == "top"
    # with a subsample each seed sees other items: then every method is scored on every seed
    code, _, err = run(capsys, "--quiet", "bench", "subset", "--data", "demo", "--human-metric", "human", "--metric",
                       "token_f1", "--methods", "random,metric_var", "--seeds", "2", "--protocol", "paper",
                       "--subsample", "0.8", "--interval-resamples", "0", "--out", str(tmp_path / "sub"))
    res = json.loads((tmp_path / "sub" / "results.json").read_text())
    assert code == 0 and res["repetitions"] == {"random": 2, "metric_var": 2} and res["n_items_subsample"] == 240


def test_bench_subset_needs_a_human_metric_unless_paper(capsys, tmp_path):
    code, _, err = run(capsys, "bench", "subset", "--data", "demo", "--methods", "random", "--out", str(tmp_path))
    assert code == 2 and "--human-metric" in err
    code, _, err = run(capsys, "bench", "subset", "--data", "demo", "--methods", "random", "--protocol", "paper",
                       "--out", str(tmp_path))
    assert code == 2 and "none of the human scores" in err and "--human-metric" in err


def test_bench_calibration_proxy_given_once_or_twice_the_same_is_the_old_form(capsys, tmp_path):
    """--proxy took one value before it could be repeated: one --proxy, or the same spec twice, still runs that
    one proxy and records it as the plain spec in results.json."""
    base = ["--quiet", "bench", "calibration", "--data", "demo", "--oracle-metric", "human", "--rules", "anytime",
            "--methods", "random", "--seeds", "1", "--no-synthetic", "--risks", "0.2"]
    results = []
    for extra in (["--proxy", "metric:token_f1"], ["--proxy", "metric:token_f1", "--proxy", "metric:token_f1"]):
        out = tmp_path / str(len(extra))
        code, _, _ = run(capsys, *base, *extra, "--out", str(out))
        assert code == 0
        results.append(json.loads((out / "results.json").read_text()))
    assert results[0]["proxy"] == results[1]["proxy"] == "metric:token_f1"
    assert results[0]["real"]["cells"] == results[1]["real"]["cells"]


# ------------------------------------------------------------------ issue 29: small things a user trips on
def test_budget_above_the_pool_is_capped_with_a_note(capsys, tmp_path):
    out = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "select", "random", "--data", "demo", "--budget", "1000", "--out", str(out))
    assert code == 0 and len(out.read_text().splitlines()) == 300  # the demo has 300 items
    assert "note: --budget 1000 is more than the 300 items in the pool; using all 300" in err
    code, out_, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human",
                          "--budget", "1000", "--json")
    d = json.loads(out_)
    assert code == 0 and d["labels_used"] == d["decision_set"] == 300
    assert "note: --budget 1000 is more than the 300 items in the pool (A vs B" in err
    code, _, err = run(capsys, "select", "random", "--data", "demo", "--budget", "300", "--out", str(out))
    assert code == 0 and "note:" not in err  # the whole pool, asked for exactly: nothing to say


def test_out_into_a_missing_folder_says_it_created_it(capsys, tmp_path):
    picks = tmp_path / "new" / "sub" / "picks.jsonl"
    code, _, err = run(capsys, "select", "random", "--data", "demo", "--budget", "5", "--out", str(picks))
    assert code == 0 and picks.is_file() and f"note: created folder {picks.parent}" in err
    code, _, err = run(capsys, "select", "random", "--data", "demo", "--budget", "5", "--out", str(picks))
    assert code == 0 and "created folder" not in err  # it exists now
    bench = ["--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "human", "--methods", "random",
             "--budgets", "5", "--seeds", "1", "--max-pairs", "1"]
    code, _, err = run(capsys, *bench, "--out", str(tmp_path / "runs" / "first"))
    assert code == 0 and f"note: created folder {tmp_path / 'runs'}" in err  # the folder --out DIR goes into
    code, _, err = run(capsys, *bench, "--out", str(tmp_path / "runs" / "second"))
    assert code == 0 and "created folder" not in err  # --out DIR itself is made silently, as asked


def test_data_info_on_a_judge_file_counts_its_verdicts(capsys, tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("item_id,system_a,system_b,verdict,annotator,kind\n"
                    "1,X,Y,a,ann,human\n1,Y,X,tie,bob,human\n2,X,Z,2,ann,human\n3,Y,Z,b,gpt-4,llm\n3,Z,Y,1,gpt-4,llm\n")
    code, out, _ = run(capsys, "data", "info", str(path))
    # verdicts: a = rows 1 and 5 ('1' is a), b = rows 3 ('2') and 4, tie = row 2; judges ann 2, gpt-4 2, bob 1;
    # pairs {X,Y}, {X,Z}, {Y,Z}; items 1, 2, 3
    assert code == 0 and "3 items x 3 systems" in out
    assert ("judgments: 5 (verdicts: a 2, b 2, tie 1; a = system_a did better) on 3 items and 3 pairs of systems"
            in out)
    assert "judges: 3: ann (2), gpt-4 (2), bob (1); by kind: 3 human, 2 llm" in out
    code, out, _ = run(capsys, "data", "info", str(path), "--json")
    d = json.loads(out)["judgments"]
    assert d["verdicts"] == {"a": 2, "b": 2, "tie": 1} and d["pairs"] == 3 and d["items"] == 3
    assert d["judges"] == {"ann": 2, "gpt-4": 2, "bob": 1} and d["judge_kinds"] == {"human": 3, "llm": 2}
    code, out, _ = run(capsys, "data", "info", "demo")
    assert code == 0 and "judgments:" not in out  # a dataset of outputs and scores has no verdicts to count


def test_annotate_json_has_the_admin_url_and_add_annotator_names_the_project(capsys, tmp_path):
    db = str(tmp_path / "w.db")
    code, out, _ = run(capsys, "annotate", "new", "--db", db, "--name", "px", "--pairwise", "--data", "demo",
                       "--a", "A", "--b", "B", "--json")
    made = json.loads(out)
    assert code == 0 and made["admin_url"] == f"http://127.0.0.1:8000/admin/px#token={made['admin_token']}"
    code, out, _ = run(capsys, "annotate", "new", "--db", str(tmp_path / "v.db"), "--name", "px", "--pairwise",
                       "--data", "demo", "--a", "A", "--b", "B")
    plain_url = out.split("admin page: ")[1].split()[0]  # the plain output prints the same link
    assert plain_url.startswith("http://127.0.0.1:8000/admin/px#token=")
    code, out, _ = run(capsys, "annotate", "add-annotator", "--db", db, "--project", "px", "--name", "alice")
    assert code == 0 and out.startswith(f"alice in project {made['project']} (px): http://127.0.0.1:8000/a/")
    code, out, _ = run(capsys, "annotate", "add-annotator", "--db", db, "--project", "px", "--name", "bob", "--json")
    d = json.loads(out)
    assert code == 0 and d["project"] == made["project"] and d["project_name"] == "px"
    assert d["url"] == f"http://127.0.0.1:8000/a/{d['token']}"


def test_methods_name_the_alias_plainly(capsys):
    code, out, _ = run(capsys, "methods")
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["diffuse_random_rep"])
    assert code == 0 and "issue" not in out and "another name for diffuse_strata" in line


def test_compare_trace_says_what_k_is(capsys):
    base = ["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:human", "--encoder", "tfidf"]
    code, out, _ = run(capsys, *base)
    assert code == 0 and "trace (k = the first k items of the random order; decision set, judged" in out
    assert "clusters" not in out.split("trace (")[1].splitlines()[0]
    code, out, _ = run(capsys, *base, "--method", "diffuse", "--risk-rule", "paper")
    assert code == 0 and "trace (k = clusters, one judged representative each; decision set" in out


def test_a_judge_simulated_from_a_reference_metric_is_computed_as_for_metric(capsys, tmp_path):
    from evalsift import MetricOracle, Session, load
    from evalsift.metrics import reference_metrics

    # compare: --oracle metric:chrf-ref (any case) is computed against the references, as --metric chrF-ref is
    code, out, _ = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "metric:chrf-ref",
                       "--budget", "40", "--json")
    d = json.loads(out)
    pool = reference_metrics(load("demo"), ["chrF"])
    want = Session(pool, "random", a="A", b="B", budget=40).run(MetricOracle("chrF-ref"))
    assert code == 0 and (d["wins_a"], d["wins_b"], d["ties"]) == (want.wins_a, want.wins_b, want.ties)
    # bench pairwise said "Unknown metric 'ROUGE-2-ref'"
    code, out, err = run(capsys, "--quiet", "bench", "pairwise", "--data", "demo", "--oracle-metric", "rouge-2-ref",
                         "--methods", "random", "--budgets", "10", "--seeds", "1", "--max-pairs", "1",
                         "--out", str(tmp_path / "bp"))
    res = json.loads((tmp_path / "bp" / "results.json").read_text())
    assert code == 0, err
    assert res["oracle_metric"] == "ROUGE-2-ref" and "oracle metric:ROUGE-2-ref" in out


# ------------------------------------------------------------------ the command table and the shipped examples
def test_the_docs_command_table_names_every_command():
    """docs/cli.md's table at the top lists every command of `evalsift --help` (it lacked winrate, estimate,
    select anchors and bench estimate)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text.split("| command | what it does |", 1)[1].split("\n\n", 1)[0]
    cells = [re.sub(r"\\\|", "|", m) for m in re.findall(r"^\| `(.+?)` \|", table, flags=re.M)]
    # a cell names its command's words before the first option; 'a / b' and 'omni sample | annotate | curve' name several
    named = set()
    for cell in cells:
        for part in re.split(r"` / `", cell):
            words = [w for w in part.split() if re.fullmatch(r"[a-z][a-z-]*", w) and w.upper() != w]
            head, rest = words[0], words[1:]
            named.add(head)
            for w in rest:
                named.add(f"{head} {w}")
    missing = [c for c in leaf_commands() if c not in named]
    assert not missing, f"docs/cli.md's command table lacks {missing}"
    assert {"select", "select anchors", "estimate", "winrate", "bench estimate", "data example"} <= named


def test_the_shipped_examples_are_read_as_their_tools_write_them(capsys, tmp_path):
    """`data example mt-bench` is FastChat's data/mt_bench layout (rank finds question.jsonl beside the judgment
    file); `data example arena` has both conversations, enough for --style-control length,markdown."""
    code, _, err = run(capsys, "data", "example", "mt-bench", "--out", str(tmp_path / "mt_bench"))
    single = tmp_path / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl"
    assert code == 0 and "synthetic verdicts, fictional models" in err
    assert (tmp_path / "mt_bench" / "question.jsonl").is_file() and single.with_name("gpt-4_pair.jsonl").is_file()
    rows = [json.loads(line) for line in single.read_text().splitlines()]
    # the MT-Bench score: FastChat's mean grade over every graded question and turn, -1 grades left out
    want = {}
    for r in rows:
        if r["score"] != -1:
            want.setdefault(r["model"], []).append(r["score"])
    code, out, err = run(capsys, "rank", "--data", str(single), "--by", "category", "--json")
    d = json.loads(out)
    assert code == 0 and "-1 (FastChat could not parse" in err
    assert {m["system"]: round(m["score"], 6) for m in d["means"]} == {k: round(sum(v) / len(v), 6)
                                                                         for k, v in want.items()}
    assert sorted(b["value"] for b in d["by"]["boards"]) == sorted({"writing", "roleplay", "reasoning", "math",
                                                                    "coding", "extraction", "stem", "humanities"})
    code, out, err = run(capsys, "data", "example", "arena", "--out", str(tmp_path / "arena"))
    assert code == 0
    code, out, err = run(capsys, "arena", "--data", str(tmp_path / "arena" / "battles.jsonl"), "--style-control",
                         "length,markdown", "--out", str(tmp_path / "styled"), "--json")
    d = json.loads(out)
    assert code == 0, err
    assert len(d["models"]) == 5 and [c["name"] for c in d["style_control"]["coefficients"]] == [
        "length", "headers", "bold", "lists"]
    # the voters of the example like longer answers: length's coefficient is positive and its interval clear of 0
    length = d["style_control"]["coefficients"][0]
    assert length["coef"] > 0 and length["interval"][0] > 0
    # a second copy into the same folder is a no-op; a file of the user's there is never overwritten
    (tmp_path / "arena" / "battles.jsonl").write_text("mine\n")
    code, _, err = run(capsys, "data", "example", "arena", "--out", str(tmp_path / "arena"))
    assert code == 2 and "is not evalsift's example 'arena'" in err
    assert (tmp_path / "arena" / "battles.jsonl").read_text() == "mine\n"


def test_a_missing_battle_file_says_where_it_looked(capsys, tmp_path, monkeypatch):
    """The README tour's old style-control line: `battles.jsonl` did not exist, and the error said names were looked
    up under EVALSIFT_DATA=... when the variable was not set (the data folder had been found beside the folder)."""
    tmp_path = tmp_path.resolve()  # as the working folder is seen
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("EVALSIFT_DATA", raising=False)
    code, _, err = run(capsys, "arena", "--data", "battles.jsonl", "--style-control", "length,markdown",
                       "--out", "styled/")
    assert code == 2 and "EVALSIFT_DATA=" not in err
    assert f"it is not an existing file either (looked for {tmp_path / 'work' / 'battles.jsonl'})" in err
    assert (f"Names are looked up under {tmp_path / 'shared' / 'data'} (EVALSIFT_DATA is not set; that shared/data "
            "folder was found beside the working folder or one of its parents)") in err
    assert not (tmp_path / "work" / "styled").exists()  # and the failed command left no --out folder
