"""The ChaosNLI loader (evalsift.io.chaosnli) and ``evalsift profile`` on it (Kovatchev & Lease 2024's data)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _data import need

from evalsift.cli import main
from evalsift.errors import DataError
from evalsift.io import find_datasets, load, read_chaosnli
from evalsift.transparency import compute_dimensions

LABEL = ("e", "c", "n")  # the prediction files' label ids


def _root():
    return need("chaosnli/chaosNLI_v1.0", "chaosnli/predictions").parent


@pytest.mark.parametrize("subset,runs", [("snli", 5), ("mnli_m", 3)])
def test_shape_and_fields(subset, runs):
    root = _root()
    pool = read_chaosnli(root, subset=subset)
    assert pool.n_items > 1000 and pool.n_systems == runs
    assert pool.human_metrics == {"correct"}
    assert set(pool.metrics) == {"correct", "gold_prob", "confidence"}
    counts = pool.metadata["label_count"]
    assert counts.shape == (pool.n_items, 3) and np.all(counts.sum(axis=1) == 100)
    assert set(pool.metadata["gold"]) == {"e", "n", "c"}
    assert pool.inputs_are_text and pool.inputs[0] == f"{pool.metadata['premise'][0]}\n{pool.metadata['hypothesis'][0]}"
    assert np.all((pool.scores["gold_prob"] >= 0) & (pool.scores["gold_prob"] <= 1))
    # the gold probability is the largest exactly when the run is right (ties aside)
    right = pool.scores["gold_prob"] == pool.scores["confidence"]
    assert np.mean(right == (pool.scores["correct"] == 1)) > 0.999
    # the named dataset is the same pool
    assert f"chaosnli/{subset}" in find_datasets(root.parent)


def test_correctness_matches_the_prediction_files():
    root = _root()
    pool = read_chaosnli(root / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl")
    items = {r["uid"]: r for r in map(json.loads, (root / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl").read_text().splitlines())}
    row = {u: i for i, u in enumerate(pool.item_ids)}
    for run in ("roberta-base_1", "bert-base-uncased_0"):
        j = pool.system_index(run)
        seen = 0
        for split in ("dev", "test"):
            for line in (root / "predictions" / f"SNLI_{split}_{run}.json").read_text().splitlines():
                p = json.loads(line)
                if p["uid"] in row:
                    i = row[p["uid"]]
                    assert pool.scores["correct"][i, j] == float(p["pred"] == p["true"])
                    assert pool.scores["gold_prob"][i, j] == pytest.approx(p["probs"][p["true"]])
                    assert LABEL[p["true"]] == items[p["uid"]]["old_label"] == pool.metadata["gold"][i]
                    seen += 1
        assert seen == pool.n_items


def test_pool_fields_feed_the_dimensions():
    pool = read_chaosnli(_root(), subset="snli")
    d = compute_dimensions(["length", "noise", "ambiguity"], pool=pool, metric="correct")
    counts = np.asarray(pool.metadata["label_count"], dtype=float)
    np.testing.assert_allclose(d["noise"], 1 - counts.max(axis=1) / 100)
    g = np.asarray(pool.scores["gold_prob"])  # 5 runs: the include_ci formula sqrt(var + var^2 / 4), var ddof=0
    np.testing.assert_allclose(d["ambiguity"], np.sqrt(g.var(axis=1) + g.var(axis=1) ** 2 / 4))
    pairs = list(zip(pool.metadata["premise"], pool.metadata["hypothesis"]))
    np.testing.assert_array_equal(d["length"], [len(p.split()) + len(h.split()) for p, h in pairs])
    # an explicit input still wins over the pool's field
    assert compute_dimensions(["noise"], pool=pool, counts=np.ones((pool.n_items, 3)))["noise"][0] == pytest.approx(2 / 3)


def test_profile_cli_noisy_items_are_harder(tmp_path, monkeypatch, capsys):
    root = _root()
    monkeypatch.setenv("EVALSIFT_DATA", str(root.parent))
    out = tmp_path / "prof"
    assert main(["profile", "--data", "chaosnli/snli", "--metric", "correct", "--dims", "length,noise,ambiguity",
                 "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["n_items"] > 1000 and len(res["systems"]) == 5 and res["dimensions"] == ["length", "noise", "ambiguity"]
    perf = np.array(res["analysis"]["noise"]["stratum_perf"])  # strata (least -> most noisy) x runs
    assert perf.shape == (10, 5)
    # the paper's finding (Kovatchev & Lease 2024, Sec. 5): the noisiest stratum is the hardest, for every run
    assert np.all(perf[-1] < perf[0]), perf
    assert (out / "report.html").is_file()


# ------------------------------------------------------------------------------------------ bad input
def _tiny_tree(tmp_path, n=60):
    """A copy of the first ``n`` SNLI items and their predictions of two runs (in tmp_path only)."""
    src = _root()
    dst = tmp_path / "chaosnli"
    (dst / "chaosNLI_v1.0").mkdir(parents=True)
    (dst / "predictions").mkdir()
    lines = (src / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl").read_text().splitlines(keepends=True)[:n]
    (dst / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl").write_text("".join(lines))
    uids = {json.loads(line)["uid"] for line in lines}
    for run in ("roberta-base_0", "roberta-base_1"):
        for split in ("dev", "test"):
            name = f"SNLI_{split}_{run}.json"
            text = (src / "predictions" / name).read_text().splitlines(keepends=True)
            keep = [line for line in text if json.loads(line)["uid"] in uids]
            (dst / "predictions" / name).write_text("".join(keep))
    return dst


def test_tiny_tree_loads_by_name(tmp_path, monkeypatch):
    dst = _tiny_tree(tmp_path)
    monkeypatch.setenv("EVALSIFT_DATA", str(tmp_path))
    pool = load("chaosnli/snli")
    assert pool.n_items == 60 and pool.systems == ("roberta-base_0", "roberta-base_1")
    assert load(f"chaosnli:{dst / 'chaosNLI_v1.0' / 'chaosNLI_snli.jsonl'}").item_ids == pool.item_ids


def test_corrupt_lines_name_the_file_and_line(tmp_path):
    dst = _tiny_tree(tmp_path)
    items = dst / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl"
    good = items.read_text()
    lines = good.splitlines(keepends=True)
    items.write_text("".join(lines[:6]) + lines[6][: len(lines[6]) // 2] + "\n" + "".join(lines[7:]))
    with pytest.raises(DataError, match=r"chaosNLI_snli\.jsonl: line 7 is not valid JSON"):
        read_chaosnli(items)
    rec = json.loads(lines[3])
    rec["label_count"] = [50, 50]
    items.write_text("".join(lines[:3]) + json.dumps(rec) + "\n" + "".join(lines[4:]))
    with pytest.raises(DataError, match=r"chaosNLI_snli\.jsonl: line 4 .*'label_count'"):
        read_chaosnli(items)
    items.write_text(good)
    pred = dst / "predictions" / "SNLI_test_roberta-base_1.json"
    plines = pred.read_text().splitlines(keepends=True)
    pred.write_text(plines[0] + '{"uid": "x", "true": 0,\n' + "".join(plines[1:]))
    with pytest.raises(DataError, match=r"SNLI_test_roberta-base_1\.json: line 2 is not valid JSON"):
        read_chaosnli(items)
    p = json.loads(plines[0])
    p["true"] = (p["true"] + 1) % 3  # a gold label that is not ChaosNLI's old_label: a wrong label map
    pred.write_text(json.dumps(p) + "\n" + "".join(plines[1:]))
    with pytest.raises(DataError, match=r"SNLI_test_roberta-base_1\.json: line 1 .*differs from ChaosNLI's old_label"):
        read_chaosnli(items)
    for f in (dst / "predictions").iterdir():
        f.unlink()
    with pytest.raises(DataError, match="no prediction files"):
        read_chaosnli(items)
