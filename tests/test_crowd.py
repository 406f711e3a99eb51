"""Competence models over several annotators (evalsift.stats.crowd) and ``--aggregate`` on the commands that
read recorded multi-annotator verdicts (evalsift.oracle.aggregate)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.errors import DataError, ParameterError
from evalsift.oracle.aggregate import aggregate_judgments
from evalsift.oracle.base import Judgment
from evalsift.oracle.votes import combine
from evalsift.stats.crowd import TIE, aggregate

from _data import need

crowdkit = pytest.importorskip("crowdkit", reason="the competence models need crowd-kit (the 'quality' extra)")

NAMES = ("lab_c", "lab_a", "lab_b")  # sorted order differs from code order


def crowd(n_items=240, seed=3, workers=None):
    """(rows, truth): 3 classes; named annotators of stated accuracy, spammers (None) answering mostly the
    last class. Rows come spammers-last-named-first: first-seen order is not the sorted order."""
    workers = workers or [("z_good", 0.9), ("y_good", 0.85), ("x_care", 0.6), ("w_care", 0.6),
                          ("c_spam", None), ("b_spam", None), ("a_spam", None)]
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for i in range(n_items):
        t = int(rng.integers(3))
        truth[i] = NAMES[t]
        for w, acc in workers:
            if acc is None:
                v = 2 if rng.random() < 0.9 else int(rng.integers(3))
            else:
                v = t if rng.random() < acc else int(rng.integers(3))
            rows.append((i, w, NAMES[v]))
    return rows, truth


@pytest.fixture(scope="module")
def synthetic():
    return crowd()


def accuracy(fit, truth):
    return float(np.mean([fit.verdict[i] == truth[i] for i in truth]))


def test_dawid_skene_beats_majority_with_spammers(synthetic):
    rows, truth = synthetic
    maj, ds = aggregate(rows, "majority", seed=0), aggregate(rows, "dawid-skene")
    assert accuracy(ds, truth) > accuracy(maj, truth) + 0.1
    c = {w: a.competence for w, a in ds.annotators.items()}
    assert min(c["z_good"], c["y_good"]) > max(c["x_care"], c["w_care"]) > max(c["a_spam"], c["b_spam"], c["c_spam"])
    cm = np.array(ds.annotators["a_spam"].confusion)  # rows: true class; a spammer answers lab_b whatever it is
    assert cm.shape == (3, 3) and np.allclose(cm.sum(axis=1), 1) and (cm[:, ds.label_space.index("lab_b")] > 0.7).all()
    for i in list(truth)[:20]:
        assert ds.proba[i].sum() == pytest.approx(1) and ds.verdict[i] == ds.label_space[int(np.argmax(ds.proba[i]))]


@pytest.mark.parametrize("seed", [0, 1])
def test_mace_finds_the_spammers_whatever_the_row_order(seed):
    """crowd-kit 1.4's MACE alone, on rows whose first-seen annotator order is not the sorted one, gives the
    spammers the good annotators' competence; the recoding before the fit keeps each theta with its annotator."""
    rows, truth = crowd(n_items=80)
    fit = aggregate(rows, "mace", seed=seed, mace_restarts=2, n_iter=25)
    theta = {w: a.competence for w, a in fit.annotators.items()}
    assert max(theta["a_spam"], theta["b_spam"], theta["c_spam"]) < 0.2
    assert min(theta["z_good"], theta["y_good"]) > 0.6
    assert accuracy(fit, truth) > 0.9
    again = aggregate(list(reversed(rows)), "mace", seed=seed, mace_restarts=2, n_iter=25)
    assert again.verdict == fit.verdict
    assert all(np.allclose(again.proba[i], fit.proba[i]) for i in fit.items)


def test_majority_tie_rule_is_stated_and_order_free():
    rows = [("i1", "p", "x"), ("i1", "q", "y"), ("i2", "p", "x"), ("i2", "q", "x"), ("i2", "r", "y"),
            ("i3", "p", "y"), ("i3", "q", "z"), ("i3", "r", "x")]
    tie = aggregate(rows, "majority", ties="tie")
    assert tie.verdict == {"i1": TIE, "i2": "x", "i3": TIE}
    draws = {s: aggregate(rows, "majority", ties="draw", seed=s).verdict for s in range(12)}
    assert all(d["i2"] == "x" and d["i1"] in ("x", "y") and d["i3"] in ("x", "y", "z") for d in draws.values())
    assert len({d["i3"] for d in draws.values()}) > 1  # a draw, not the first label every time
    for s in range(4):
        shuffled = rows[:]
        random.Random(s).shuffle(shuffled)
        assert aggregate(shuffled, "majority", ties="draw", seed=7).verdict == draws[7]
    # the annotator's latest label counts: q's second label breaks i1's split
    assert aggregate(rows + [("i1", "q", "x")], "majority", ties="tie").verdict["i1"] == "x"


def test_dawid_skene_is_deterministic(synthetic):
    rows, _ = synthetic
    a, b = aggregate(rows, "dawid-skene"), aggregate(list(reversed(rows)), "dawid-skene")
    assert a.verdict == b.verdict and all(np.allclose(a.proba[i], b.proba[i]) for i in a.items)
    assert {w: x.competence for w, x in a.annotators.items()} == pytest.approx(
        {w: x.competence for w, x in b.annotators.items()})


def test_bad_rule_and_one_annotator_are_refused():
    with pytest.raises(ParameterError, match="dawid-skene"):
        aggregate([("i", "p", "x")], "wawa")
    with pytest.raises(DataError, match="one annotator"):
        aggregate([("i", "p", "x"), ("j", "p", "y")], "mace")


def pair_judgments(n=80, seed=0, annotators=("p1", "p2", "p3", "p4", "p5")):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rng.sample(["A", "B", "C"], 2)
        for w in annotators:
            flip = rng.random() < 0.5  # recorded either way round
            v = rng.choice(["a", "b", "tie"])
            out.append(Judgment(item_id=str(i), a=b if flip else a, b=a if flip else b, verdict=v, annotator=w,
                                kind="human"))
    return out


def test_aggregate_majority_is_the_vote_rule():
    """--aggregate majority gives every item and pair the verdict evalsift's vote rule gives it."""
    from evalsift.oracle.judgments import orient

    js = pair_judgments()
    out, fit = aggregate_judgments(js, "majority")
    assert fit.rule == "majority" and len(out) == 80
    for j in out:
        mine = [orient(x, j.a, j.b) for x in js if x.item_id == j.item_id]
        assert j.verdict == combine(mine) and j.annotator == "majority"
        assert sum(j.detail["posterior"].values()) == pytest.approx(1)


def test_competence_models_refuse_a_file_naming_nobody():
    js = pair_judgments(annotators=("file",))
    with pytest.raises(DataError, match="name no annotator"):
        aggregate_judgments(js, "dawid-skene", source="x.csv")
    assert len(aggregate_judgments(js, "majority")[0]) == 80


# ------------------------------------------------------------------------------------------ the commands
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A pairwise table: 5 named people on 80 battles -- 2 careful (90 % right), 3 who always click the first
    answer -- with outputs for every system; and an LLM judge's file (80 % right, else a tie) on the same battles."""
    d = tmp_path_factory.mktemp("crowd")
    rng = random.Random(1)
    people, judge = [], []
    for i in range(80):
        a, b = rng.sample(["A", "B", "C", "D"], 2)
        truth = "ab"[i % 2]
        base = {"item_id": str(i), "system_a": a, "system_b": b, "input": f"question {i}",
                "output_a": f"{a} answers {i}", "output_b": f"{b} answers {i}"}
        for w in ("ann", "bea", "cy", "dov", "eli"):
            if w in ("ann", "bea"):
                v = truth if rng.random() < 0.9 else {"a": "b", "b": "a"}[truth]
            else:
                v = "a"
            people.append({**base, "verdict": v, "annotator": w, "kind": "human"})
        judge.append({**base, "verdict": truth if rng.random() < 0.8 else "tie", "annotator": "gpt-4", "kind": "llm"})
    for name, rows in (("people.jsonl", people), ("judge.jsonl", judge)):
        (d / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return d


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_arena_aggregate_counts_one_battle_per_item(capsys, files, tmp_path):
    code, out, err = run(capsys, "arena", "--data", files / "people.jsonl", "--out", tmp_path / "plain")
    assert code == 0 and "400 human battles" in out and "aggregate:" not in err
    code, out, err = run(capsys, "arena", "--data", files / "people.jsonl", "--out", tmp_path / "ds",
                         "--aggregate", "dawid-skene")
    assert code == 0, err
    assert "80 human battles" in out and "verdicts: human dawid-skene (80 verdicts)" in out
    assert "aggregate: Dawid-Skene" in err
    line = next(x for x in err.splitlines() if "annotator competence" in x)
    assert all(f" {w} " in line for w in ("ann", "bea", "cy", "dov", "eli"))
    assert max(line.index(" ann "), line.index(" bea ")) < min(line.index(f" {w} ") for w in ("cy", "dov", "eli"))


def test_compare_oracle_judgments_aggregate(capsys, files):
    args = ("compare", "--data", files / "people.jsonl", "--oracle", f"judgments:{files / 'people.jsonl'}",
            "--a", "A", "--b", "B", "--json")
    code, plain, _ = run(capsys, *args)
    code2, out, err = run(capsys, *args, "--aggregate", "dawid-skene")
    assert code == code2 == 0, err
    assert "aggregate: Dawid-Skene" in err and "annotator competence (Dawid-Skene accuracy)" in err
    before, after = json.loads(plain)["judged"], json.loads(out)["judged"]
    assert before and all(len(j["votes"]) == 5 for j in before)
    assert after and all(list(j["votes"]) == ["dawid-skene"] for j in after)


def test_judge_report_human_aggregate(capsys, files):
    base = ("judge-report", "--data", files / "people.jsonl", "--judge", f"judgments:{files / 'judge.jsonl'}",
            "--human", f"judgments:{files / 'people.jsonl'}", "--draws", "10", "--resamples", "50", "--json")
    code, plain, _ = run(capsys, *base)
    code2, out, err = run(capsys, *base, "--aggregate", "dawid-skene")
    assert code == code2 == 0, err
    assert "aggregate: Dawid-Skene" in err
    p, a = (json.loads(x)["pooled"] for x in (plain, out))
    assert p["human_items"] == a["human_items"] == 80
    # the three first-answer clickers carry the plurality; Dawid-Skene follows the careful two, as the judge does
    assert a["agreement"]["value"] > p["agreement"]["value"]
    code, _, err = run(capsys, *base[:-1], "--human", "metric:human", "--aggregate", "mace")
    assert code != 0 and "judgments:FILE" in err


def test_rank_aggregate_says_where_it_applies(capsys, files):
    code, _, err = run(capsys, "rank", "--data", files / "people.jsonl", "--aggregate", "majority")
    assert code != 0 and "evalsift arena" in err


def test_summeval_identical_crowd_scores_keep_their_score():
    """Real data: on the SummEval summaries whose 5 crowd workers gave the same coherence, every rule's
    verdict is that score."""
    folder = need("summeval/annotators/M11_outputs_annotations.jsonl").parent
    rows, same = [], {}
    for line in (folder / "M11_outputs_annotations.jsonl").read_text(encoding="utf-8").splitlines()[:60]:
        d = json.loads(line)
        scores = [t["coherence"] for t in d["turker_annotations"]]
        rows += [(d["id"], f"turk{k}", s) for k, s in enumerate(scores)]
        if len(set(scores)) == 1:
            same[d["id"]] = scores[0]
    assert same
    for rule in ("majority", "dawid-skene"):
        fit = aggregate(rows, rule)
        assert all(fit.verdict[i] == s for i, s in same.items()), rule
