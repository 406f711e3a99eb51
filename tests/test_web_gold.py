"""Gold items, the gold-accuracy rule and adjudication in the annotation app: a real uvicorn server on
127.0.0.1, a real SQLite store, the JSON API as the page uses it (the browser tests are in
tests/test_web_gold_browser.py).

The simulated people read the truth from the store (what the page cannot know): a careful one answers
right, a careless one presses 1, 2 or 0 at random.
"""

import json
import random
import sqlite3

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.cli import main  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import MIGRATIONS, Store  # noqa: E402
from evalsift.store.store import _statements  # noqa: E402
from evalsift.web import Workspace  # noqa: E402
from evalsift.web.quality import GOLD_RISK, gold_accuracy  # noqa: E402
from evalsift.web.replay import read_project_file, replay  # noqa: E402

from _web import Server, call, pair_pool  # noqa: E402

CAUGHT_WITHIN = 20
"""The careless person (random keys) is flagged after at most this many gold answers (min accuracy 0.8, 30 gold
items; benchmarks/app/gold_items.py measures how often over many runs)."""


def gold_rows(n=30, seed=0):
    """Gold items in the pool's style (pair_pool's outputs): the known answer A, B or a tie."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        ans = ("a", "b", "a", "b", "tie")[k % 5]
        out.append({"gold_id": f"g{k}", "input": f"Question {1000 + k}?",
                    "outputs": {"A": f"Answer A{1000 + k}: the cat sat on mat {k % 7}.",
                                "B": f"Answer B{1000 + k}: a dog ran by the park {k % 5}."}, "answer": ans})
    rng.shuffle(out)
    return out


def truth_key(store, pid, annotator_id, pool_truth):
    """The key a careful person presses for what they hold: the known answer of a gold item, else the pool's winner."""
    held = store.held(pid, annotator_id)
    first = held["a"] if held["shown_order"] == "ab" else held["b"]
    gold = store.gold_item(pid, held["item_id"])
    winner = ({"a": held["a"], "b": held["b"], "tie": None}[gold["answer"]] if gold is not None
              else pool_truth[held["item_id"]])
    return "0" if winner is None else ("1" if winner == first else "2")


DECISION_KEYS = ("winner", "wins_a", "wins_b", "ties", "labels_used")


def replayed(export, capsys):
    """The decision ``compare --data EXPORT --oracle judgments:EXPORT --json`` prints (the export's replay)."""
    capsys.readouterr()
    assert main(["compare", "--data", str(export), "--a", "A", "--b", "B", "--oracle", f"judgments:{export}",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    return {k: got[k] for k in DECISION_KEYS}


def _pool_truth(pool):
    return {iid: ("A" if pool.scores["human"][k, 0] > 0 else "B") for k, iid in enumerate(pool.item_ids)}


@pytest.fixture(scope="module")
def caught(tmp_path_factory):
    """A live project with 30 gold items at rate 0.25 and --min-gold-accuracy 0.8; carl answers at random,
    ann answers right, over HTTP, carl first each round, until the Session decides."""
    db = tmp_path_factory.mktemp("gold") / "w.db"
    pool = pair_pool(n=300, p_a=0.62, seed=3)
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise("gold", pool, "A", "B", make_selector("random", seed=0), risk=0.05,
                                           max_labels=300, gold=gold_rows(), gold_rate=0.25, min_gold_accuracy=0.8)
    tokens = {n: work.store.add_annotator(pid, n)[1] for n in ("carl", "ann")}
    ids = {n: work.store.annotator_by_token(t)["id"] for n, t in tokens.items()}
    truth = _pool_truth(pool)
    rng = random.Random(7)
    log = {"carl_verdicts_before_flag": 0, "paused_answer": None}
    with Server(db) as srv:
        for _ in range(1000):
            answered = False
            for name in ("carl", "ann"):
                code, a = call("GET", f"{srv.url}/api/v1/next", tokens[name])
                assert code == 200
                if a.get("done"):
                    if name == "carl" and log["paused_answer"] is None:
                        log["paused_answer"] = a
                    continue
                key = rng.choice("120") if name == "carl" else truth_key(work.store, pid, ids[name], truth)
                code, r = call("POST", f"{srv.url}/api/v1/judgments", tokens[name],
                               {"assignment_id": a["assignment_id"], "verdict": key})
                assert code == 200 and r["stored"]
                answered = True
            if not answered:
                break
        status_code, status = call("GET", f"{srv.url}/api/v1/projects/gold/status", admin)
        assert status_code == 200
        again = call("GET", f"{srv.url}/api/v1/next", tokens["carl"])[1]
    return {"db": db, "pid": pid, "work": Workspace(Store(db)), "status": status, "log": log, "again": again,
            "tokens": tokens, "ids": ids}


@pytest.mark.slow  # the module's shared project: about 10 s of HTTP answers
def test_a_careless_annotator_is_caught_by_gold_items_and_excluded(caught):
    gold = caught["status"]["gold"]
    people = {p["name"]: p for p in gold["annotators"]}
    carl, ann = people["carl"], people["ann"]
    assert carl["flagged"] and carl["excluded"] and carl["paused"]
    assert carl["answered"] <= CAUGHT_WITHIN  # flagged at the gold answer whose upper bound fell below 0.8
    assert carl["interval"][1] < 0.8 <= ann["interval"][1] and not ann["flagged"]
    # the bound is the one the rule states: the anytime sequence over the 30 gold items at 1 - GOLD_RISK per end
    record = caught["work"].store.gold_record(caught["pid"])[caught["ids"]["carl"]]
    assert gold_accuracy(record, 30)["interval"] == carl["interval"] and len(record) == carl["answered"]
    assert gold_accuracy(record[:-1], 30)["interval"][1] >= 0.8  # not one answer sooner
    assert gold["excluded"] == ["carl"] and gold["level"] == 1 - GOLD_RISK
    # the page is told the queue is paused, and stays so
    for answer in (caught["log"]["paused_answer"], caught["again"]):
        assert answer["done"] and answer["final"] and "queue is paused" in answer["reason"]


@pytest.mark.slow  # the module's shared project: about 10 s of HTTP answers
def test_the_decision_is_recomputed_without_the_excluded_person(caught, tmp_path, capsys):
    work, pid = caught["work"], caught["pid"]
    rows = work.store.judgment_rows(pid)
    carls = [r for r in rows if r["annotator"] == "carl"]
    assert carls and all(r["excluded"] and not r["counted"] for r in carls)  # kept in the store, marked
    d = caught["status"]["decision"]
    assert d["decided"] and d["winner"] == "A"
    # the export's replay (compare --data X --oracle judgments:X) leaves carl out as the server does: the same decision
    out = tmp_path / "j.jsonl"
    assert main(["annotate", "export", "--db", str(caught["db"]), "--project", "gold", "--out", str(out)]) == 0
    assert read_project_file(out)["excluded"] == ["carl"]
    assert replayed(out, capsys) == {k: d[k] for k in DECISION_KEYS}
    # what counts is ann's alone; an item carl finished was opened again and is judged by ann where the decision
    # asked for it
    assert all(r["annotator"] == "ann" for r in rows if r["counted"])
    asked = {r["item_id"] for r in rows if r["counted"]}
    assert any(r["item_id"] in asked for r in carls if r["status"] == "done")


@pytest.mark.slow  # the module's shared project: about 10 s of HTTP answers
def test_gold_answers_are_never_judgments_nor_exported(caught, tmp_path):
    work, pid = caught["work"], caught["pid"]
    gold_items = {g["item_id"] for g in work.store.gold_items(pid)}
    answers = work.store.gold_answers(pid)
    assert len(answers) == caught["status"]["gold"]["answers"] > 20
    assert not any(r["item_id"] in gold_items for r in work.store.judgment_rows(pid))
    assert not gold_items & {r["item_id"] for r in work.store.items(pid)}  # never in the pool
    for fmt, name in (("judgments", "j.jsonl"), ("pairwise", "p.csv")):
        out = tmp_path / name
        assert main(["annotate", "export", "--db", str(caught["db"]), "--project", "gold", "--out", str(out),
                     "--format", fmt]) == 0
        text = out.read_text()
        assert "gold:" not in text  # neither the gold items' ids ...
        assert not any(g["input"] in text for g in work.store.gold_items(pid))  # ... nor their inputs
    assert caught["status"]["decision"]["labels_used"] <= len(work.store.judgments(pid))


@pytest.mark.slow  # the module's shared project: about 10 s of HTTP answers
def test_the_status_prints_accuracy_interval_level_and_assumption(caught, capsys):
    assert main(["annotate", "status", "--db", str(caught["db"]), "--project", "gold"]) == 0
    out = capsys.readouterr().out
    assert "carl:" in out and "FLAGGED" in out and "anytime interval" in out and "confidence level 95%" in out
    assert "assumption: each person meets the gold items in a uniformly random order" in out
    assert main(["annotate", "unpause", "--db", str(caught["db"]), "--project", "gold", "--name", "carl"]) == 0
    st = Workspace(Store(caught["db"])).status(caught["pid"])
    carl = next(p for p in st["gold"]["annotators"] if p["name"] == "carl")
    assert carl["unpaused"] and not carl["excluded"] and st["gold"]["excluded"] == []


def test_a_gold_item_has_the_shape_of_a_real_one_and_an_undo_brings_it_back(tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = pair_pool(n=40)
    pid, _ = work.create_fixed("fx", pool, mode="pairwise", a="A", b="B", gold=gold_rows(10), gold_rate=0.5)
    token = work.store.add_annotator(pid, "ann")[1]
    me = work.store.annotator_by_token(token)
    seen = {"gold": [], "real": []}
    with Server(db) as srv:
        ids = []
        for _ in range(16):
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            held = work.store.held(pid, me["id"])
            seen["gold" if work.store.gold_item(pid, held["item_id"]) else "real"].append(a)
            ids.append(a["assignment_id"])
            code, r = call("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"],
                                                                          "verdict": "1", "idempotency_key": f"k{_}"})
            assert code == 200
            assert isinstance(r["id"], str) and len(r["id"]) == 16  # answer ids are opaque too
        assert ids == list(range(ids[0], ids[0] + 16))  # one sequence of assignment ids for both
        assert seen["gold"] and seen["real"]

        def shape(a):
            return {k: (type(v).__name__, len(v) if isinstance(v, (list, str)) and k in ("item_id", "outputs") else None)
                    for k, v in a.items() if k not in ("progress",)} | {"progress": sorted(a["progress"])}

        assert {json.dumps(shape(a), sort_keys=True) for a in seen["gold"] + seen["real"]} == \
            {json.dumps(shape(seen["real"][0]), sort_keys=True)}
        # the last answer was to ...; undo brings back the very item, gold or not
        code, undone = call("POST", f"{srv.url}/api/v1/undo", token)
        assert code == 200 and undone["assignment_id"] == ids[-1] and isinstance(undone["undone"], str)
        last = seen["gold"][-1] if seen["gold"][-1]["assignment_id"] == ids[-1] else seen["real"][-1]
        assert undone["input"] == last["input"] and undone["outputs"] == last["outputs"]
        code, r = call("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": ids[-1], "verdict": "2"})
        assert code == 200
    n_gold = len(seen["gold"])
    assert len(work.store.gold_answers(pid)) == n_gold + (1 if last in seen["gold"] else 0)
    assert len(work.store.judgment_rows(pid)) == len(seen["real"]) + (0 if last in seen["gold"] else 1)
    assert Workspace(Store(db)).progress(pid, me["id"])["judged"] == 16


def test_a_version_4_store_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for version, description, sql, *step in (m for m in MIGRATIONS if m[0] <= 4):
        for statement in _statements(sql):
            conn.execute(statement)
        for fn in step:
            fn(conn)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 't')", (version, description))
    conn.execute("INSERT INTO projects (id, name, kind, mode, settings, admin_token, created_at) VALUES "
                 "(1, 'old', 'pairwise', 'fixed', '{\"a\": \"A\", \"b\": \"B\", \"overlap\": 1}', 'x', 't')")
    conn.execute("INSERT INTO items (project_id, item_id, position, input) VALUES (1, 'i1', 0, 'q')")
    conn.execute("INSERT INTO annotators (id, project_id, name, token, created_at) VALUES (1, 1, 'alice', 'h', 't')")
    conn.execute("INSERT INTO judgments (project_id, item_id, a, b, verdict, annotator, kind, shown_order, status, "
                 "created_at, detail, stored_at) VALUES (1, 'i1', 'A', 'B', 'a', 'alice', 'human', 'ab', 'done', 't', "
                 "'{}', 't')")
    conn.commit()
    conn.close()
    before = sqlite3.connect(path).execute("SELECT * FROM judgments").fetchall()
    st = Store(path)
    assert st.schema_version == 5
    assert sqlite3.connect(path).execute("SELECT * FROM judgments").fetchall() == before
    assert st.annotators(1)[0]["role"] == "annotator" and st.excluded(1) == frozenset()
    assert [r["excluded"] for r in st.judgment_rows(1)] == [False]
    assert [i["item_id"] for i in st.items(1)] == ["i1"] and st.gold_items(1) == []
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        c = sqlite3.connect(path)
        c.execute("INSERT INTO assignments (id, project_id, item_id, annotator_id, a, b, leased_at, expires_at) VALUES "
                  "(1, 1, 'i1', 1, 'A', 'B', 't', 0)")
        c.execute("INSERT INTO gold_answers (project_id, annotator_id, annotator, gold_id, assignment_id, given, status, "
                  "correct, created_at) VALUES (1, 1, 'alice', 'g', 1, 'a', 'done', 1, 't')")
        c.execute("DELETE FROM gold_answers")


def test_adjudication_queue_end_to_end(tmp_path, capsys):
    """Overlap 2 with --adjudicate split: items on which alice and bob differ go to the adjudicator, whose page
    has the counts; their verdict is the one the live decision is given, and the export marks it."""
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = pair_pool(n=60, p_a=1.0)
    pid, admin = work.create_live_pairwise("adj", pool, "A", "B", make_selector("random", seed=0), risk=0.2,
                                           overlap=2, adjudicate="split")
    tokens = {n: work.store.add_annotator(pid, n)[1] for n in ("alice", "bob")}
    judge = work.store.add_annotator(pid, "jude", role="adjudicator")[1]
    ids = {n: work.store.annotator_by_token(t)["id"] for n, t in tokens.items()}
    truth = _pool_truth(pool)
    with Server(db) as srv:
        code, a = call("GET", f"{srv.url}/api/v1/next", judge)
        assert a["done"] and not a["final"]  # nothing disputed yet
        disputed = 0
        for rnd in range(200):
            moved = False
            for name in ("alice", "bob"):
                code, a = call("GET", f"{srv.url}/api/v1/next", tokens[name])
                if a.get("done"):
                    continue
                key = truth_key(work.store, pid, ids[name], truth)
                if name == "bob" and rnd % 3 == 0:  # bob says B on every third item: split
                    key = "2" if key == "1" else "1"
                call("POST", f"{srv.url}/api/v1/judgments", tokens[name], {"assignment_id": a["assignment_id"],
                                                                           "verdict": key})
                moved = True
            code, d = call("GET", f"{srv.url}/api/v1/next", judge)
            while not d.get("done"):  # the adjudicator clears the queue: the counts are shown, the truth is given
                assert sorted(d["dispute"].values()) == [0, 1, 1]
                held = work.store.held(pid, work.store.annotator_by_token(judge)["id"])
                first = held["a"] if held["shown_order"] == "ab" else held["b"]
                code, r = call("POST", f"{srv.url}/api/v1/judgments", judge,
                               {"assignment_id": d["assignment_id"], "verdict": "1" if first == "A" else "2"})
                assert code == 200
                disputed += 1
                code, d = call("GET", f"{srv.url}/api/v1/next", judge)
            if not moved:
                break
        st = call("GET", f"{srv.url}/api/v1/projects/adj/status", admin)[1]
    assert disputed >= 2 and st["adjudication"]["disputed"] == st["adjudication"]["adjudicated"] == disputed
    d = st["decision"]
    assert d["decided"] and d["winner"] == "A"
    assert d["wins_b"] == 0 and d["ties"] == 0  # every split went to the adjudicator, who said A: no tie counted
    rows = work.store.judgment_rows(pid)
    adjudicated = [r for r in rows if r["adjudicated"]]
    assert len(adjudicated) == disputed and all(r["annotator"] == "jude" and r["counted"] for r in adjudicated)
    assert sum(r["annotator"] == "bob" and r["verdict"] == "b" for r in rows) >= disputed  # the others stay stored
    out = tmp_path / "p.csv"
    assert main(["annotate", "export", "--db", str(db), "--project", "adj", "--out", str(out), "--format",
                 "pairwise"]) == 0
    assert out.read_text().splitlines()[0].endswith("counted,excluded,adjudicated")
    # the export's replay gives each split item its adjudicator's verdict alone, as the live decision did
    assert replayed(out, capsys) == {k: d[k] for k in DECISION_KEYS}
    jl = tmp_path / "p.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "adj", "--out", str(jl)]) == 0
    assert replayed(jl, capsys) == {k: d[k] for k in DECISION_KEYS}


def test_gold_options_are_checked_with_clear_errors(tmp_path, capsys):
    picks = tmp_path / "picks.jsonl"
    picks.write_text("".join(json.dumps({"item_id": f"i{k}", "input": f"q{k}", "a": "A", "b": "B",
                                         "output_a": f"x{k}", "output_b": f"y{k}"}) + "\n" for k in range(6)))
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"item_id": "g1", "input": "q", "outputs": {"A": "x", "B": "y"}, "answer": "A"}) + "\n"
                    + json.dumps({"item_id": "g2", "input": "q", "outputs": {"A": "x", "B": "y"}}) + "\n")
    base = ["annotate", "new", "--db", str(tmp_path / "w.db"), "--from", str(picks)]
    assert main(base + ["--name", "p", "--mode", "pairwise", "--gold", str(gold)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "'g2'" in err and "answer must be 'A', 'B' or 'tie'" in err
    assert main(base + ["--name", "p", "--mode", "score", "--gold", str(gold)]) == 2
    assert "pairwise projects" in capsys.readouterr().err
    assert main(base + ["--name", "p", "--mode", "pairwise", "--min-gold-accuracy", "0.8"]) == 2
    assert "needs --gold FILE" in capsys.readouterr().err
    assert main(base + ["--name", "p", "--mode", "pairwise", "--adjudicate", "split"]) == 2
    assert "--overlap 2 or more" in capsys.readouterr().err
    gold.write_text(gold.read_text().splitlines()[0] + "\n")
    assert main(base + ["--name", "p", "--mode", "pairwise", "--gold", str(gold), "--gold-rate", "0.3",
                        "--min-gold-accuracy", "0.7", "--json"]) == 0
    st = Store(tmp_path / "w.db")
    assert st.project("p").settings["gold"] == {"rate": 0.3, "items": 1, "risk": GOLD_RISK, "min_accuracy": 0.7}
    assert st.item_count(st.project("p").id) == 6 and len(st.gold_items(st.project("p").id)) == 1
