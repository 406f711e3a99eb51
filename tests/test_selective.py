"""The selective judge with a guarantee (:mod:`evalsift.oracle.selective`, ``evalsift judge --selective``):
fixed-sequence calibration checked empirically over many splits, the nothing-passes case, ties counted, the
recorded CLI writing its three files whole (and nothing on failure), the live path over the stub
OpenAI-compatible server on 127.0.0.1, ``--escalate-to`` into a real SQLite store, a selective folder read by
a decision command (arena, compare), and the real Arena data when present."""

import json
import random
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.oracle import Judgment
from evalsift.oracle import selective as S

from _data import need


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------------------------- the test itself
def synthetic(n, rng):
    """Confidences in [0, 1] and whether the judge agrees: P(agree | c) = 0.55 + 0.45 c."""
    conf = rng.uniform(size=n).round(2)
    return conf, rng.uniform(size=n) < 0.55 + 0.45 * conf


def true_agreement(t):
    """P(agree | conf >= t) for the synthetic judge, confidences uniform on the 0.01 grid."""
    grid = np.round(np.arange(0, 1.001, 0.01), 2)
    grid = grid[grid >= t - 1e-12]
    return float(np.mean(0.55 + 0.45 * grid))


def test_the_guarantee_holds_over_many_splits():
    """Over 400 calibration draws, the true agreement above the chosen threshold falls below the level in at
    most about ``risk`` of them (binomial slack), and the test is not vacuous (it answers most of the time)."""
    rng = np.random.default_rng(0)
    level, risk, fails, answered = 0.85, 0.1, 0, 0
    for _ in range(400):
        conf, ok = synthetic(300, rng)
        cal = S.calibrate(conf, ok, agreement=level, risk=risk)
        if cal.threshold is None:
            continue
        answered += 1
        fails += true_agreement(cal.threshold) < level
        assert all(s.passed for s in cal.steps if not s.skipped and s.threshold > cal.threshold + 1e-12)
    assert answered >= 300
    assert fails / 400 <= risk + 0.04, fails  # observed failure rate vs risk


def test_fixed_sequence_stops_at_the_first_failure_and_skips_thin_thresholds():
    conf = np.array([1.0] * 10 + [0.9] * 60 + [0.5] * 60 + [0.2] * 100)
    ok = np.array([True] * 10 + [True] * 58 + [False] * 2 + [True] * 30 + [False] * 30 + [True] * 100)
    cal = S.calibrate(conf, ok, agreement=0.8, risk=0.1)
    assert [s.skipped for s in cal.steps][:1] == [True]  # 10 items at 1.0: fewer than 30, not tested
    assert cal.threshold == pytest.approx(0.9)  # 0.5 fails (60 of 130 wrong) although 0.2 would pass overall
    assert cal.steps[-1].threshold == pytest.approx(0.5) and not cal.steps[-1].passed
    assert cal.answers([0.95, 0.9, 0.89]).tolist() == [True, True, False]
    assert cal.steps[1].p_value == pytest.approx(S.p_value(2, 70, 0.8))


def test_nothing_passes_answers_nothing():
    rng = np.random.default_rng(1)
    conf = rng.uniform(size=500)
    cal = S.calibrate(conf, rng.uniform(size=500) < 0.6, agreement=0.9, risk=0.1)
    assert cal.threshold is None and not cal.answers(conf).any()
    assert S.calibrate(conf[:20], np.ones(20, bool), agreement=0.9, risk=0.1).threshold is None  # too few items


def test_p_value_is_the_exact_binomial_tail():
    from math import comb

    n, k, eps = 40, 3, 0.2
    assert S.p_value(k, n, 1 - eps) == pytest.approx(sum(comb(n, i) * eps ** i * (1 - eps) ** (n - i)
                                                         for i in range(k + 1)))


def test_confidence_from_orders_preferences_and_several_judges():
    pairs = {"1": ("X", "Y")}
    both = Judgment(item_id="1", a="X", b="Y", verdict="tie", annotator="llm:m", kind="llm",
                    detail={"answers": [{"verdict": "a"}, {"verdict": "tie"}]})
    assert S.judge_weights([both], pairs)["1"].tolist() == [0.5, 0.0, 0.5]
    swapped = Judgment(item_id="1", a="Y", b="X", verdict="a", annotator="j", kind="llm", detail={"preference": 1.25})
    assert S.judge_weights([swapped], pairs)["1"].tolist() == [0.25, 0.75, 0.0]  # oriented to X vs Y
    v, c = S.combined_confidence([S.judge_weights([both], pairs), S.judge_weights([swapped], pairs)], ["1"])
    assert v[0] is None and c[0] == 0  # [0.375, 0.375, 0.25]: a and b weigh the same, no winner named
    firm = Judgment(item_id="1", a="Y", b="X", verdict="a", annotator="j", kind="llm", detail={"preference": 1.1})
    v, c = S.combined_confidence([S.judge_weights([both], pairs), S.judge_weights([firm], pairs)], ["1"])
    assert (v[0], c[0]) == ("b", pytest.approx(0.45))  # mean of [0.5, 0, 0.5] and [0.1, 0.9, 0]
    v, c = S.combined_confidence([S.judge_weights([both], pairs)], ["1"], "count")
    assert v[0] is None and c[0] == 0  # a and tie weigh the same: a split top names nothing


# ---------------------------------------------------------------------------------------------- recorded CLI
SYSTEMS = ["m1", "m2", "m3", "m4"]


@pytest.fixture(scope="module")
def battles(tmp_path_factory):
    """800 battles: people's votes (a quarter ties) and two judges, one right 90 % of the time, one 75 %."""
    d = tmp_path_factory.mktemp("battles")
    rnd = random.Random(3)
    human, j1, j2 = [], [], []
    for num in range(1, 801):
        a, b = rnd.sample(SYSTEMS, 2)
        w = rnd.choice(["model_a", "model_b", "model_a", "model_b", "model_a", "model_b", "tie", "tie (bothbad)"])
        other = {"model_a": "model_b", "model_b": "model_a"}
        truth = w if w in other else rnd.choice(list(other))
        rec = {"num": num, "model_a": a, "model_b": b}
        human.append({**rec, "winner": w})
        j1.append({**rec, "winner": truth if rnd.random() < 0.9 else other[truth]})
        j2.append({**rec, "winner": truth if rnd.random() < 0.75 else rnd.choice([other[truth], "tie"])})
    for name, rows in (("human", human), ("judge1", j1), ("judge2", j2)):
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def recorded(battles, out, *more):
    return ["judge", "--selective", "--data", battles / "human.jsonl", "--judge", f"judgments:{battles / 'judge1.jsonl'}",
            "--judge", f"judgments:{battles / 'judge2.jsonl'}", "--agreement", "0.8", "--risk", "0.1",
            "--calibration-size", "300", "--seed", "5", "--out", out, *more]


def jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_recorded_cli_writes_kept_escalated_and_results(battles, tmp_path, capsys):
    out = tmp_path / "sel"
    code, text, err = run(capsys, *recorded(battles, out))
    assert code == 0, err
    assert "guarantee: P(the judge agrees with people | it answers) >= 0.8 with probability >= 0.9" in text
    assert "exchangeable" in text and "human ties left out" in text
    kept, esc = jsonl(out / "kept.jsonl"), jsonl(out / "escalated.jsonl")
    res = json.loads((out / "results.json").read_text())
    assert set(kept[0]) >= {"item_id", "verdict", "confidence"} and set(esc[0]) >= {"item_id"}
    assert len(res["calibration_items"]) == 300 and res["ties"] == "exclude" and "human ties" in res["agreement_rule"]
    assert res["agreement"] == 0.8 and res["risk"] == 0.1 and res["method"] == "fixed-sequence"
    cal = set(res["calibration_items"])
    ids = [r["item_id"] for r in kept + esc]
    assert len(ids) == len(set(ids)) == 800 - 300 and not cal & set(ids)  # every other battle, once
    assert all(r["confidence"] >= res["threshold"] for r in kept)
    lo, hi = res["coverage"]["interval"]
    assert lo <= res["coverage"]["value"] <= hi and 0 < res["coverage"]["value"] < 1
    human = {str(r["num"]): r["winner"] for r in jsonl(battles / "human.jsonl")}
    named = [r for r in kept if human[r["item_id"]] in ("model_a", "model_b")]
    agree = np.mean([human[r["item_id"]] == f"model_{r['verdict']}" for r in named])
    assert agree == pytest.approx(res["empirical_agreement"]["value"]) and agree >= 0.8
    code, text2, _ = run(capsys, *recorded(battles, out))  # the same seed: the same split, the folder replaced
    assert code == 0 and json.loads((out / "results.json").read_text())["calibration_items"] == res["calibration_items"]


def test_ties_count_and_cascade(battles, tmp_path, capsys):
    code, text, _ = run(capsys, *recorded(battles, tmp_path / "count", "--ties", "count"))
    res = json.loads((tmp_path / "count" / "results.json").read_text())
    assert code == 0 and res["ties"] == "count" and "three-way" in text and "three-way" in res["agreement_rule"]
    assert res["calibration_counted"] == 300  # ties are calibration items too
    code, text, _ = run(capsys, *recorded(battles, tmp_path / "cas", "--cascade"))
    res = json.loads((tmp_path / "cas" / "results.json").read_text())
    assert code == 0 and [s["judge"] for s in res["stages"]] == ["judge1", "judge2"]
    assert "union bound" in res["guarantee"] and res["stages"][1]["calibration_items"] <= 300


def test_nothing_passes_keeps_nothing_on_the_command_line(battles, tmp_path, capsys):
    out = tmp_path / "none"
    code, text, _ = run(capsys, *recorded(battles, out)[:-4], "--agreement", "0.99", "--out", out)
    res = json.loads((out / "results.json").read_text())
    assert code == 0 and res["threshold"] is None and res["kept"] == 0 and "answers nothing" in text
    assert len(jsonl(out / "escalated.jsonl")) == 500 and (out / "kept.jsonl").read_text() == ""


def test_a_failed_run_leaves_nothing_behind(battles, tmp_path, capsys):
    out = tmp_path / "new" / "sel"
    code, _, err = run(capsys, *recorded(battles, out)[:-2], "--calibration-size", "5000", "--out", out)
    assert code == 2 and "calibration-size" in err and not (tmp_path / "new").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = run(capsys, *recorded(battles, foreign))
    assert code == 2 and "did not write" in err and [p.name for p in foreign.iterdir()] == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_the_old_judge_form_still_needs_items_and_oracle(tmp_path, capsys):
    code, _, err = run(capsys, "judge", "--data", "demo", "--out", tmp_path / "j.jsonl", "--a", "A", "--b", "B")
    assert code == 2 and "--items" in err


def test_a_selective_folder_is_a_verdict_source_for_arena(battles, tmp_path, capsys):
    out = tmp_path / "sel"
    assert run(capsys, *recorded(battles, out))[0] == 0
    code, text, err = run(capsys, "arena", "--data", out, "--out", tmp_path / "board")
    assert code == 0, err
    assert "guarantee: P(the judge agrees" in err and "people's on" in err
    assert "verdicts: mixed" in text and "selective:" in text
    res = json.loads((out / "results.json").read_text())
    assert f"judge selective:judge1+judge2 ({res['kept']})" in text


# ---------------------------------------------------------------------------------------------- live judge
openai = pytest.importorskip("openai", reason="the LLM judge needs evalsift[llm]")

from llm_stub import StubServer, prefer_longer  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The demo pool's A vs B, people's verdicts on 120 items: the longer output wins (what the stub judges by),
    except on every 10th item (so the judge's agreement with people is 90 % there)."""
    from evalsift.io import make_demo_pool

    d = tmp_path_factory.mktemp("live")
    pool = make_demo_pool(n_items=300)
    rows = []
    for k in range(120):
        la, lb = len(pool.outputs["A"][k]), len(pool.outputs["B"][k])
        v = "a" if la > lb else "b" if lb > la else "tie"
        if k % 10 == 0:
            v = {"a": "b", "b": "a"}.get(v, v)
        rows.append({"item_id": pool.item_ids[k], "system_a": "A", "system_b": "B", "verdict": v})
    (d / "people.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


@pytest.mark.slow  # 180 items asked of the stub judge, both orders: 6-9 s
def test_live_selective_judge_over_the_stub_server(live, tmp_path, capsys):
    from evalsift.store import Store

    out, db = tmp_path / "sel", tmp_path / "w.db"
    picks = tmp_path / "picks.jsonl"  # 60 items to judge besides the 120 people labelled
    picks.write_text("".join(json.dumps({"item_id": str(k)}) + "\n" for k in range(120, 180)))
    with StubServer(prefer_longer()) as stub:
        code, text, err = run(capsys, "judge", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "llm:judge",
                              "--judge-url", stub.base_url, "--db", db, "--judge-concurrency", "8", "--selective",
                              "--agreement", "0.75", "--risk", "0.1", "--calibration", live / "people.jsonl",
                              "--items", picks, "--out", out, "--escalate-to", f"{db}:people")
        asked = len(stub.requests)
    assert code == 0, err
    assert 0 < asked <= 2 * 180  # both orders, each item once
    res = json.loads((out / "results.json").read_text())
    assert res["form"] == "live" and len(res["calibration_items"]) == 120 and res["threshold"] == 1.0
    kept, esc = jsonl(out / "kept.jsonl"), jsonl(out / "escalated.jsonl")
    assert len(kept) + len(esc) == 60 and kept and all(r["confidence"] == 1.0 for r in kept)
    assert "guarantee: P(the judge agrees with people | it answers) >= 0.75" in text
    recs = jsonl(out / "judgments.jsonl")
    assert len(recs) == 180 and all(len(r["detail"]["answers"]) == 2 for r in recs if r["status"] == "done")
    # the escalated items are a real annotation project in the SQLite store, queued for people
    store = Store(db)
    p = store.project("people")
    items = store.items(p.id)
    assert p.kind == "pairwise" and {i["item_id"] for i in items} == {r["item_id"] for r in esc}
    assert all(set(i["outputs"]) == {"A", "B"} for i in items) and res["escalated_to"]["items"] == len(esc)
    # the folder is a verdict source: the judge's verdicts where it answered, people's on the calibration items
    code, text, err = run(capsys, "compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle",
                          f"judgments:{out}", "--db", tmp_path / "c.db", "--method", "random", "--encoder", "tfidf")
    assert code == 0, err
    assert "guarantee: P(the judge agrees" in err and "people's on 120 other item(s)" in err


def test_escalate_to_refuses_an_existing_project_and_writes_nothing(live, tmp_path, capsys):
    from evalsift.store import Store
    from evalsift.web import Workspace
    from evalsift.io import make_demo_pool

    db = tmp_path / "w.db"
    Workspace(Store(db)).create_fixed("taken", make_demo_pool(n_items=5), mode="pairwise", a="A", b="B")
    with StubServer(prefer_longer()) as stub:
        code, _, err = run(capsys, "judge", "--data", "demo", "--a", "A", "--b", "B", "--oracle", "llm:judge",
                           "--judge-url", stub.base_url, "--db", tmp_path / "c.db", "--selective", "--agreement",
                           "0.75", "--calibration", live / "people.jsonl", "--out", tmp_path / "sel",
                           "--escalate-to", f"{db}:taken")
    assert code == 2 and "already exists" in err and not (tmp_path / "sel").exists()


# ---------------------------------------------------------------------------------------------- real data
def test_real_arena_gpt4_and_claude(tmp_path, capsys):
    folder = need("arena-ppr/human.jsonl", "arena-ppr/gpt-4-0125-preview.jsonl", "arena-ppr/claude-3-opus-20240229.jsonl").parent
    out = tmp_path / "sel"
    code, text, err = run(capsys, "judge", "--selective", "--data", folder / "human.jsonl",
                          "--judge", f"judgments:{folder / 'gpt-4-0125-preview.jsonl'}",
                          "--judge", f"judgments:{folder / 'claude-3-opus-20240229.jsonl'}",
                          "--agreement", "0.8", "--risk", "0.1", "--calibration-size", "500", "--seed", "0",
                          "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    assert res["coverage"]["items"] == 12613 - 500 and res["threshold"] is not None
    assert res["empirical_agreement"]["value"] >= 0.8
