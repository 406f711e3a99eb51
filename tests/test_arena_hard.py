"""Arena-Hard-Auto's files (evalsift.io.arena_hard): the reader's mapping, the combination rule, the point
scores against an independent computation of Arena-Hard's show_result.py rule, style control from the answers'
metadata, and style control from a Chatbot-Arena-like battle file's conv_metadata without texts.

The files are written in Arena-Hard-Auto's layout as its gen_judgment.py / gen_answer.py write them (v2.0 by
tests/_harness_layouts.py, v0.1 lines here): ``data/<bench>/model_judgment/<judge>/<model>.jsonl``, v2.0 ``{uid,
category, judge, model, baseline, games: [{score, judgment, prompt}]}``, v0.1 ``{question_id, model, judge, games:
[{user_prompt, judgment, score}]}``; ``model_answer/<model>.jsonl`` with ``metadata`` (v2.0) or ``conv_metadata``
(v0.1).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from _harness_layouts import AH_BASELINE as BASE, AH_JUDGE as JUDGE, write_jsonl
from _harness_layouts import arena_hard_world as world, write_arena_hard_v2 as write_v2
from evalsift.cli import main
from evalsift.errors import DataError, DataWarning, ParameterError
from evalsift.io import load
from evalsift.io.arena_hard import (combine_arena_hard,
                                    describe_arena_hard, looks_arena_hard, model_score, parse_label, read_arena_hard)
from evalsift.io.pairwise import read_judgments, read_verdicts

LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    root = tmp_path_factory.mktemp("ah")
    models, uids, md, labels = world()
    bench = write_v2(root, models, uids, md, labels, nulls={("m1", uids[3], 2)})
    return {"bench": bench, "judge": bench / "model_judgment" / JUDGE, "models": models, "uids": uids, "md": md,
            "labels": labels, "null": ("m1", uids[3])}


# ---------------------------------------------------------------------------------------- labels and rule
def test_labels_map_to_the_winner_and_the_strength():
    assert [parse_label(s) for s in LABELS] == [("A", True), ("A", False), ("tie", False), ("B", False),
                                                 ("B", True)]
    assert parse_label("a<<b") == ("B", True) and parse_label("B<A") == ("A", False) and parse_label("A>A") is None
    # game 1 shows the baseline as A, game 2 the model as A: the same label means opposite things
    assert model_score("A>B", 1) == (0.0, False) and model_score("A>B", 2) == (1.0, False)
    assert model_score("B>>A", 1) == (1.0, True) and model_score("A=B", 2) == (0.5, False)


def _line(labels, line=1):
    from evalsift.oracle.base import Judgment

    out = []
    for g, lab in enumerate(labels, 1):
        s, strong = model_score(lab, g)
        out.append(Judgment(item_id="q", a="base", b="m", verdict={1.0: "b", 0.0: "a", 0.5: "tie"}[s],
                            annotator=f"J (g{g})", kind="llm", detail={"source": "f", "line": line, "ah_game": g,
                                                                       "label": lab, "strong": strong}))
    return out


@pytest.mark.parametrize("labels, weight, p, W", [
    (("A>>B", "A>B"), 3, 0.25, 4),     # game 1: baseline strongly (0 x 3); game 2: model (1 x 1) -> 1/4
    (("A>>B", "A>B"), 1, 0.5, 2),      # plain: 0 and 1 -> 1/2, a tie
    (("B>>A", "A>>B"), 3, 1.0, 6),     # the model strongly in both orders
    (("A=B", "B>>A"), 3, 0.125, 4),    # 1/2 and 0 x 3 -> 1/8
    (("B>A", "A=B"), 3, 0.75, 2),      # 1 and 1/2 -> 3/4
])
def test_the_two_games_combine_by_arena_hards_rule(labels, weight, p, W):
    from evalsift.io.pairwise_data import PairwiseData
    from evalsift.pool import Pool

    data = PairwiseData(Pool(item_ids=["q"], systems=["base", "m"]), tuple(_line(labels)), "f")
    (j,) = combine_arena_hard(data, strong_weight=weight).judgments
    assert j.detail["preference"] - 1 == pytest.approx(p) and j.detail["weight"] == W
    assert (j.a, j.b, j.annotator) == ("base", "m", "J")
    assert j.verdict == ("tie" if p == 0.5 else "b" if p > 0.5 else "a")
    sep = combine_arena_hard(data, games="separate", strong_weight=weight).judgments
    assert [x.detail["weight"] for x in sep] == [weight if ">>" in lab else 1 for lab in labels]


# ---------------------------------------------------------------------------------------- the reader
def test_the_reader_maps_each_game_to_a_judgment_of_the_model_against_the_baseline(v2):
    assert looks_arena_hard(v2["judge"]) and looks_arena_hard(v2["bench"]) and looks_arena_hard(v2["judge"] / "m0.jsonl")
    assert not looks_arena_hard(v2["bench"] / "model_answer") and not looks_arena_hard(v2["bench"] / "question.jsonl")
    battles = v2["bench"].parent / "battles.jsonl"
    write_jsonl(battles, [{"num": 1, "model_a": "x", "model_b": "y", "winner": "tie"}])
    assert not looks_arena_hard(battles) and not looks_arena_hard(v2["bench"] / "nonexistent")
    with pytest.warns(DataWarning, match="1 Arena-Hard game"):
        data = read_arena_hard(v2["judge"])
    assert data.pool.systems == (BASE, *v2["models"]) and data.pool.item_ids == tuple(v2["uids"])
    assert len(data.judgments) == 2 * len(v2["models"]) * len(v2["uids"])
    first = data.judgments[:2]
    lab1, lab2 = v2["labels"][("m0", v2["uids"][0])]
    assert [(j.a, j.b, j.annotator, j.kind, j.shown_order) for j in first] == [
        (BASE, "m0", f"{JUDGE} (g1)", "llm", "ab"), (BASE, "m0", f"{JUDGE} (g2)", "llm", "ba")]
    assert [j.detail["label"] for j in first] == [lab1, lab2]
    assert first[0].verdict == {"A": "a", "B": "b", "tie": "tie"}[parse_label(lab1)[0]]  # A = the baseline in game 1
    assert first[1].verdict == {"A": "b", "B": "a", "tie": "tie"}[parse_label(lab2)[0]]  # A = the model in game 2
    assert first[0].detail["strong"] == (">>" in lab1)
    nulls = [j for j in data.judgments if j.status == "error"]
    assert [(j.b, j.item_id, j.detail["ah_game"]) for j in nulls] == [(*v2["null"], 2)]
    assert data.pool.metadata["category"][0] == "hard_prompt"
    assert data.pool.outputs["m0"][0] == f"answer of m0 to {v2['uids'][0]}" and data.pool.inputs[0].startswith("Q ")
    assert data.pool.metadata["_style"][0]["m0"]["length"] == v2["md"][("m0", v2["uids"][0])]["token_len"]
    # the same judgments through the shared entry points: a folder, a file, and the judgments oracle
    assert len(read_judgments(str(v2["judge"])).judgments) == len(data.judgments)
    assert len(read_judgments(str(v2["judge"] / "m2.jsonl")).judgments) == 2 * len(v2["uids"])
    from evalsift.oracle import make_oracle

    oracle = make_oracle(f"judgments:{v2['judge']}")
    got = oracle.judge_pairs(data.pool, [0], BASE, "m0")
    assert {j.annotator for j in got} == {f"{JUDGE} (g1)", f"{JUDGE} (g2)"}


def test_a_line_with_a_null_game_is_left_out_whole(v2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        data = read_verdicts(str(v2["judge"]), baseline=BASE)
    m, u = v2["null"]
    (dropped,) = [j for j in data.judgments if j.status == "error"]
    assert (dropped.b, dropped.item_id) == (m, u) and "leaves the line out" in dropped.detail["reason"]
    assert sum(j.status == "done" for j in data.judgments) == len(v2["models"]) * len(v2["uids"]) - 1


def test_a_label_that_is_not_one_is_an_error_naming_file_line_and_game(tmp_path):
    f = tmp_path / "model_judgment" / JUDGE / "m.jsonl"
    write_jsonl(f, [{"uid": "1", "model": "m", "baseline": BASE, "games": [{"score": "A>B"}, {"score": "A>B"}]},
                    {"uid": "2", "model": "m", "baseline": BASE, "games": [{"score": "A>B"}, {"score": "A?B"}]}])
    with pytest.raises(DataError, match=r"m\.jsonl: line 2: game 2's score 'A\?B' is not an Arena-Hard label"):
        read_arena_hard(f.parent)


def test_v01_lines_without_a_baseline_take_arena_hards_default_or_the_one_given(tmp_path):
    d = tmp_path / "data" / "arena-hard-v0.1" / "model_judgment" / "gpt-4-1106-preview"
    write_jsonl(d / "m.jsonl", [{"question_id": "q1", "model": "m", "judge": "gpt-4-1106-preview", "games": [
        {"user_prompt": "", "judgment": "", "score": "B>A"}, {"user_prompt": "", "judgment": "", "score": "A>>B"}]}])
    with pytest.warns(DataWarning, match="record no baseline: taken as 'gpt-4-0314'"):
        assert read_arena_hard(d).pool.systems == ("gpt-4-0314", "m")
    with pytest.warns(DataWarning, match="taken as 'other-base' \\(given\\)"):
        data = read_verdicts(str(d), baseline="other-base", strong_weight=3)
    (j,) = data.judgments
    assert j.a == "other-base" and j.detail["preference"] - 1 == 1.0 and j.detail["weight"] == 4  # 1 + 3 x 1


# ---------------------------------------------------------------------------------------- the numbers
LABEL_TO_SCORE = {"A>B": [1], "A>>B": [1, 1, 1], "A=B": [0.5], "B>A": [0], "B>>A": [0, 0, 0]}


def show_result_scores(v2, weight: int = 3) -> dict[str, float]:
    """Arena-Hard's show_result.py rule, computed here from the labels the test wrote: per line game 2's scores
    plus one minus game 1's, a strong label repeated ``weight`` times, lines with a null game left out; a
    model's score is the mean of all its entries (x 100)."""
    out = {}
    for m in v2["models"]:
        entries = []
        for u in v2["uids"]:
            if (m, u) == v2["null"]:
                continue
            g1, g2 = v2["labels"][(m, u)]
            rep = lambda lab: [s for s in LABEL_TO_SCORE[lab] for _ in range(1)] if ">>" not in lab else \
                [LABEL_TO_SCORE[lab][0]] * weight
            entries += rep(g2) + [1 - s for s in rep(g1)]
        out[m] = 100 * float(np.mean(entries))
    return out


@pytest.mark.parametrize("weight", [1, 3])
def test_winrate_prints_arena_hards_score_with_the_weighting_it_used(v2, tmp_path, capsys, weight):
    want = show_result_scores(v2, weight)
    args = ["winrate", "--data", str(v2["judge"]), "--baseline", BASE, "--out", str(tmp_path / "o"), "--json"]
    assert main(args + (["--strong-weight", str(weight)] if weight != 1 else [])) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    got = {m["model"]: m["win_rate"] for m in d["boards"][0]["models"]}
    assert got == pytest.approx(want, abs=1e-9)
    assert any(f"counts {weight} times" in n or (weight == 1 and "--strong-weight 1, the default" in n)
               for n in d["notes"])
    # the standard error is clustered by question: the ratio estimator's, from the per-question preferences
    data = combine_arena_hard(read_arena_hard(v2["judge"]), strong_weight=weight)
    rows = [(j.detail["preference"] - 1, j.detail["weight"]) for j in data.judgments if j.b == "m0" and j.status == "done"]
    p, w = np.array(rows).T
    mean = (w * p).sum() / w.sum()
    se = math.sqrt(len(p) / (len(p) - 1) * ((w * w * (p - mean) ** 2).sum())) / w.sum()
    assert next(m for m in d["boards"][0]["models"] if m["model"] == "m0")["standard_error"] == pytest.approx(100 * se)


def test_arena_prints_arena_hards_scores_beside_the_board(v2, tmp_path, capsys):
    want = show_result_scores(v2, 3)
    assert main(["arena", "--data", str(v2["judge"]), "--strong-weight", "3", "--out", str(tmp_path / "o"),
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    got = {m["model"]: m["score"] for m in d["arena_hard"]["scores"]["models"] if not m["baseline"]}
    # Bradley-Terry against the baseline alone is the weighted mean, up to the shared fit's ridge (RIDGE = 0.01
    # battle: a few thousandths of a point here)
    assert got == pytest.approx(want, abs=0.02)
    assert {m["name"] for m in d["models"]} == {BASE, *v2["models"]} and all("rank_set" in m for m in d["models"])
    for m in d["arena_hard"]["scores"]["models"]:
        assert m["interval"][0] <= m["score"] <= m["interval"][1]
    on_disk = json.loads((tmp_path / "o" / "results.json").read_text())
    assert on_disk["arena_hard"]["scores"]["baseline"] == BASE
    with pytest.raises(ParameterError, match="records no verdict strength"):
        read_verdicts(str(tmp_path / "o" / "results.json"), strong_weight=3)


def arena_hard_style_fit(v2, weight: int = 3) -> dict[str, float]:
    """show_result.py v2.0's style control computed here: battles exploded as above, features model minus
    baseline (length (m - b) / (m + b); markdown densities count / (len + 1), (dm - db) / (dm + db + 1)),
    centred and scaled by the sd (ddof 1), one-hot +1 model / -1 baseline, soft-label logistic loss, fitted to
    convergence (scipy), score = sigmoid(beta_m - beta_base)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    names = sorted([BASE] + v2["models"])
    X, y, F = [], [], []
    for m in v2["models"]:
        for u in v2["uids"]:
            if (m, u) == v2["null"]:
                continue
            g1, g2 = v2["labels"][(m, u)]
            rep = lambda lab: [LABEL_TO_SCORE[lab][0]] * (weight if ">>" in lab else 1)
            a, b = v2["md"][(m, u)], v2["md"][(BASE, u)]
            c = lambda d: [d["token_len"], sum(d["header_count"].values()), sum(d["list_count"].values()),
                           sum(d["bold_count"].values())]
            ca, cb = np.array(c(a), float), np.array(c(b), float)
            f = [(ca[0] - cb[0]) / (ca[0] + cb[0])]
            da, db = ca[1:] / (ca[0] + 1), cb[1:] / (cb[0] + 1)
            f += list((da - db) / (da + db + 1))
            for s in rep(g2) + [1 - s for s in rep(g1)]:
                row = np.zeros(len(names))
                row[names.index(m)], row[names.index(BASE)] = 1, -1
                X.append(row)
                F.append(f)
                y.append(s)
    X, F, y = np.array(X), np.array(F), np.array(y)
    F = (F - F.mean(0)) / F.std(0, ddof=1)
    Z = np.hstack([X, F])

    def loss(t):
        eta = Z @ t
        return float(np.sum(np.logaddexp(0, eta) - y * eta)), Z.T @ (expit(eta) - y)

    t = minimize(loss, np.zeros(Z.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-10}).x
    return {m: 100 * float(expit(t[names.index(m)] - t[names.index(BASE)])) for m in v2["models"]}


def test_style_control_from_the_answers_metadata_is_arena_hards(v2, tmp_path, capsys):
    want = arena_hard_style_fit(v2, 3)
    assert main(["arena", "--data", str(v2["judge"]), "--strong-weight", "3", "--style-control", "length,markdown",
                 "--out", str(tmp_path / "o"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    got = {m["model"]: m["score"] for m in d["arena_hard"]["scores"]["models"] if not m["baseline"]}
    assert got == pytest.approx(want, abs=0.02)  # the ridge as above; the features are the same to 1e-12
    raw = {m["model"]: m["score"] for m in d["arena_hard"]["raw"]["models"] if not m["baseline"]}
    assert raw == pytest.approx(show_result_scores(v2, 3), abs=0.02)
    length = next(c for c in d["style_control"]["coefficients"] if c["name"] == "length")
    assert length["interval"][0] > 0  # the judge here prefers the longer answer
    assert "Arena-Hard-Auto's style features (show_result.py v2.0)" in d["style_control"]["note"]


def test_the_harness_pool_has_each_models_per_question_score(v2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        pool = load(str(v2["judge"]))
    info = describe_arena_hard(v2["judge"])
    assert info["tool"] == "Arena-Hard-Auto" and info["version"] is None and info["baseline"] == [BASE]
    assert "4 models" in info["found"] and JUDGE in info["found"]
    assert set(pool.systems) == {BASE, *v2["models"]} and pool.column("category")[0] == "hard_prompt"
    col = pool.score("score")[:, pool.system_index("m2")]
    u = v2["uids"][5]
    g1, g2 = v2["labels"][("m2", u)]
    assert col[pool.item_ids.index(u)] == pytest.approx((model_score(g1, 1)[0] + model_score(g2, 2)[0]) / 2)
    assert np.nanmean(col) * 100 == pytest.approx(show_result_scores(v2, 1)["m2"])  # weight 1: the mean of lines
    assert np.all(pool.score("score")[:, pool.system_index(BASE)] == 0.5)


# ---------------------------------------------------------------------------------------- Chatbot Arena
def test_style_control_reads_conv_metadata_when_a_battle_file_has_no_texts(tmp_path, capsys):
    """A Chatbot-Arena-like export without conversations: conv_metadata carries each answer's counts, and the
    judge prefers the longer answer, so the style-controlled fit finds a positive length coefficient; the
    counts in the battles are the recorded ones."""
    rng = np.random.default_rng(1)
    models = ["x", "y", "z", "w"]
    rows = []
    for n in range(1500):
        a, b = rng.choice(models, 2, replace=False)
        la, lb = int(rng.integers(20, 900)), int(rng.integers(20, 900))
        p = 1 / (1 + math.exp(-(1.2 * math.tanh((la - lb) / 300))))
        u = rng.random()
        winner = "model_a" if u < p - 0.05 else "model_b" if u > p + 0.05 else "tie"
        md = {"sum_assistant_a_tokens": la, "sum_assistant_b_tokens": lb, "context_a_tokens": 5, "turns": 1}
        for side in "ab":
            md[f"header_count_{side}"] = {f"h{i}": int(rng.poisson(0.3)) for i in range(1, 7)}
            md[f"list_count_{side}"] = {"ordered": int(rng.poisson(1)), "unordered": int(rng.poisson(1))}
            md[f"bold_count_{side}"] = {"**": int(rng.poisson(1)), "__": 0}
        rows.append({"battle_id": f"b{n}", "model_a": a, "model_b": b, "winner": winner, "judge": "arena_user",
                     "conv_metadata": md})
    f = tmp_path / "battles.jsonl"
    write_jsonl(f, rows)
    assert main(["arena", "--data", str(f), "--style-control", "length,markdown", "--estimator", "mle", "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    length = next(c for c in d["style_control"]["coefficients"] if c["name"] == "length")
    assert length["interval"][0] > 0.3
    assert any("from the battle file's conv_metadata" in n for n in d["notes"])
    # the counts the fit used are the recorded ones (sums of the dicts)
    from evalsift.arena import read_battles
    from evalsift.arena.style import with_recorded_counts

    battles, filled = with_recorded_counts(read_battles(str(f), texts=True), read_judgments(str(f)))
    assert filled == 2 * len(rows)
    k = battles.ids.index("b7")
    r = rows[7]["conv_metadata"]
    assert battles.style["length"][k].tolist() == [r["sum_assistant_a_tokens"], r["sum_assistant_b_tokens"]]
    assert battles.style["headers"][k, 1] == sum(r["header_count_b"].values())
    # without conv_metadata and without texts, style control still says what it needs
    plain = tmp_path / "plain.jsonl"
    write_jsonl(plain, [{k: v for k, v in r.items() if k != "conv_metadata"} for r in rows[:50]])
    assert main(["arena", "--data", str(plain), "--style-control", "length", "--out", str(tmp_path / "p")]) != 0
    assert "needs" in capsys.readouterr().err
