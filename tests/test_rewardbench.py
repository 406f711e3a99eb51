"""RewardBench's per-prompt results (evalsift.io.rewardbench) on files in RewardBench's layout (tests/_harness_layouts.py,
after scripts/run_rm.py and rewardbench/utils.py save_to_hub): per-subset accuracies equal RewardBench's own
(num_correct / num_total, in eval-set/), section scores its weighting, and `evalsift rank --by subset` runs on them."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from _harness_layouts import write_rewardbench
from evalsift.cli import main
from evalsift.errors import DataError, DataWarning
from evalsift.io import detect_format, load
from evalsift.io.rewardbench import (describe_rewardbench, looks_rewardbench, read_rewardbench, section_scores,
                                     subset_scores)

SUBSETS = {"alpacaeval-easy": 12, "mt-bench-easy": 8, "llmbar-natural": 10, "donotanswer": 9, "math-prm": 14,
           "hep-python": 7}
CLASSIFIER, DPO, JUDGE = "openbmb/UltraRM-13b", "allenai/tulu-2-dpo-7b", "openai/gpt-4"


def _rows(model: str, seed: int, *, scores: bool = True) -> list[dict]:
    rng = random.Random(seed)
    rows, pid = [], 0
    for sub, n in SUBSETS.items():
        for _ in range(n):
            row = {"subset": sub, "id": pid, "text_chosen": f"prompt {pid} good", "text_rejected": f"prompt {pid} bad"}
            pid += 1
            if scores:
                c, r = rng.gauss(0.3, 1.0), rng.gauss(0.0, 1.0)
                row["chosen"], row["rejected"] = ([c] if pid % 5 == 0 else c), r  # run_rm.py may save [x]
                row["result"] = 1 if c > r else 0
            else:  # a generative judge: 1, 0, or 0.5 for an unparsable verdict
                row["result"] = rng.choice([1, 1, 0, 0.5])
            rows.append(row)
    return rows


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    root = tmp_path_factory.mktemp("results")
    rows = {CLASSIFIER: _rows(CLASSIFIER, 1), DPO: _rows(DPO, 2), JUDGE: _rows(JUDGE, 3, scores=False)}
    write_rewardbench(root, CLASSIFIER, rows[CLASSIFIER])
    write_rewardbench(root, DPO, rows[DPO], model_type="DPO")
    write_rewardbench(root, JUDGE, rows[JUDGE], model_type="Generative RM", scores=False)
    return root, rows


@pytest.fixture(scope="module")
def pool(results):
    return read_rewardbench(results[0] / "eval-set-scores")


def test_subset_accuracy_is_rewardbenchs(results, pool):
    root, rows = results
    assert set(pool.systems) == {CLASSIFIER, DPO, JUDGE} and pool.n_items == sum(SUBSETS.values())
    got = subset_scores(pool)
    for model, model_rows in rows.items():
        rb = json.loads((root / "eval-set" / f"{model}.json").read_text())  # RewardBench's own per-subset numbers
        for sub in SUBSETS:
            res = [r["result"] for r in model_rows if r["subset"] == sub]
            assert got[model][sub] == pytest.approx(sum(res) / len(res), abs=1e-12)
            assert got[model][sub] == pytest.approx(rb[sub], abs=1e-12)
            # the same through the Pool's own columns, as `--by subset` splits it
            mask = np.array(pool.column("subset")) == sub
            assert np.nanmean(pool.score("accuracy", model)[mask]) == pytest.approx(rb[sub], abs=1e-12)


def test_section_scores_use_rewardbenchs_weights(results, pool):
    _, rows = results
    # weights copied by hand from rewardbench/constants.py EXAMPLE_COUNTS (math-prm counts 984, not its 447)
    weights = {"alpacaeval-easy": 100, "mt-bench-easy": 28, "llmbar-natural": 100, "donotanswer": 136,
               "math-prm": 984, "hep-python": 164}
    sections = {"Chat": ["alpacaeval-easy", "mt-bench-easy"], "Chat Hard": ["llmbar-natural"],
                "Safety": ["donotanswer"], "Reasoning": ["math-prm", "hep-python"]}
    got = section_scores(pool)
    for model, model_rows in rows.items():
        acc = {s: np.mean([r["result"] for r in model_rows if r["subset"] == s]) for s in SUBSETS}
        for sec, subs in sections.items():
            expected = sum(acc[s] * weights[s] for s in subs) / sum(weights[s] for s in subs)
            assert got[model][sec] == pytest.approx(expected, abs=1e-12)
        # Reasoning is not the mean over its 21 prompts: math-prm weighs 984 / 1148 of it
        flat = np.mean([r["result"] for r in model_rows if r["subset"] in sections["Reasoning"]])
        assert got[model]["Reasoning"] != pytest.approx(flat, abs=1e-9) or acc["math-prm"] == acc["hep-python"]
    assert set(pool.column("section")) == set(sections)


def test_items_margin_and_columns(results, pool):
    _, rows = results
    i = pool.item_ids.index("math-prm/40")
    assert pool.column("subset")[i] == "math-prm" and pool.column("section")[i] == "Reasoning"
    assert pool.column("id")[i] == 40
    row = rows[CLASSIFIER][40]
    chosen = row["chosen"][0] if isinstance(row["chosen"], list) else row["chosen"]
    assert pool.score("margin", CLASSIFIER)[i] == pytest.approx(chosen - row["rejected"])
    # a generative judge's file has no scores: no margin for it; its 0.5 ties are kept
    assert np.isnan(pool.score("margin", JUDGE)).all()
    assert 0.5 in set(pool.score("accuracy", JUDGE).tolist())


def test_file_org_folder_and_results_root(results, pool):
    root, _ = results
    # the results folder (eval-set/ beside eval-set-scores/): only the per-prompt files are read
    assert read_rewardbench(root).item_ids == pool.item_ids
    org = read_rewardbench(root / "eval-set-scores" / "openbmb")
    assert org.systems == (CLASSIFIER,)
    one = read_rewardbench(root / "eval-set-scores" / "openai" / "gpt-4.json")
    assert one.systems == (JUDGE,) and one.metrics == ("accuracy",)
    assert detect_format(root / "eval-set-scores") == "rewardbench"
    assert detect_format(root / "eval-set-scores" / "openai" / "gpt-4.json") == "rewardbench"
    assert load(str(root / "eval-set-scores")).n_items == pool.n_items


def test_file_without_ids_numbers_rows(tmp_path):
    rows = _rows(DPO, 4)
    path = write_rewardbench(tmp_path, DPO, rows, model_type="DPO", ids=False, aggregate=False)
    with pytest.warns(DataWarning, match=r"no 'id' column.*numbered by row"):
        p = read_rewardbench(path)
    assert p.item_ids[:2] == ("alpacaeval-easy/#0", "alpacaeval-easy/#1") and "id" not in p.metadata


def test_bad_files(results, tmp_path):
    root, _ = results
    with pytest.raises(DataError, match=r"not RewardBench's per-prompt results.*eval-set-scores/ file"):
        read_rewardbench(root / "eval-set" / "openai" / "gpt-4.json")
    bad = tmp_path / "eval-set-scores" / "org" / "m.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"results": [1, 0], "subset": ["donotanswer"], "id": [0, 1], "model": "org/m"}))
    with pytest.raises(DataError, match=r"m\.json: column 'subset' has 1 entries but 'results' has 2"):
        read_rewardbench(bad)
    bad.write_text(json.dumps({"results": [1, 0], "subset": ["donotanswer", None], "id": [0, 1], "model": "org/m"}))
    with pytest.raises(DataError, match=r"m\.json: prompt 1: 'subset' is None"):
        read_rewardbench(bad)


def test_looks_and_describe(results, tmp_path):
    root, _ = results
    assert looks_rewardbench(root) and looks_rewardbench(root / "eval-set-scores")
    assert looks_rewardbench(root / "eval-set-scores" / "openbmb" / "UltraRM-13b.json")
    # a copied file outside eval-set-scores is known by its first keys (save_to_hub sorts them)
    copy = tmp_path / "UltraRM-13b.json"
    copy.write_text((root / "eval-set-scores" / "openbmb" / "UltraRM-13b.json").read_text())
    assert looks_rewardbench(copy)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"chat": 1, "results": [1]}))
    assert not looks_rewardbench(other) and not looks_rewardbench(tmp_path / "missing")
    info = describe_rewardbench(root)
    assert info == {"tool": "RewardBench", "version": None,
                    "found": "3 per-prompt result files (allenai/tulu-2-dpo-7b, openai/gpt-4, openbmb/UltraRM-13b)"}


def test_rank_by_subset(results, capsys):
    root, _ = results
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        code = main(["rank", "--data", str(root / "eval-set-scores"), "--by", "subset", "--human-metric", "accuracy",
                     "--resamples", "200", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["human_metric"] == "accuracy" and out["n_items"] == sum(SUBSETS.values())
    assert out["verdicts"]["source"] == "judge"  # a harness's scorer, not people's verdicts
    boards = {b["value"]: b for b in out["by"]["boards"]}
    assert set(boards) == set(SUBSETS)
    for sub, board in boards.items():
        assert board["n_items"] == SUBSETS[sub]
        for row in board["ranking"]:
            lo, hi = row["mean_interval"]
            assert lo <= row["mean"] <= hi and 1 <= row["rank_interval"][0] <= row["rank_interval"][1] <= 3


def test_rewardbench_cli_outputs_jsonl(tmp_path):
    # the `rewardbench` command's save_jsonl: one row per prompt (prompt, results, scores, texts, the dataset's columns)
    rows = [{"prompt": f"p{i}", "results": int(i % 3 != 0), "scores_chosen": 0.1 * i, "scores_rejected": 0.2,
             "text_chosen": "c", "text_rejected": "r", "subset": "hep-go" if i < 4 else "donotanswer", "id": 100 + i}
            for i in range(6)]
    path = tmp_path / "results" / "org" / "rm_outputs.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert looks_rewardbench(path) and detect_format(path) == "rewardbench"
    p = read_rewardbench(path)
    assert p.systems == ("org/rm",) and p.item_ids[0] == "hep-go/100" and p.inputs[0] == "p0"
    assert p.score("accuracy")[:, 0].tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    assert p.score("margin")[5, 0] == pytest.approx(0.5 - 0.2)
    assert subset_scores(p)["org/rm"] == {"hep-go": 0.5, "donotanswer": 1.0}
