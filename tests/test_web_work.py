"""Annotation projects without HTTP: who gets what, overlap, leases, the live decision, score export.
A real SQLite store; the real Session."""

import json
from pathlib import Path

import numpy as np
import pytest

from evalsift.errors import ParameterError
from evalsift.oracle import MetricOracle
from evalsift.select import make_selector
from evalsift.session import Session
from evalsift.store import Store
from evalsift.web import Workspace

from _web import pair_pool


def answer_for(work, person, a, truth):
    """Answer an assignment as the truth says, in the terms the person was shown (1 / 2 / 0)."""
    item = a["item_id"]
    row = work.store.assignment(a["assignment_id"])
    winner = truth[item]  # 'a' or 'b' in system terms
    first_is_a = row["shown_order"] == "ab"
    return "1" if (winner == "a") == first_is_a else "2"


def live(tmp_path, n=80, p_a=1.0, overlap=1, **kw):
    pool = pair_pool(n=n, p_a=p_a)
    work = Workspace(Store(tmp_path / "w.db"))
    pid, admin = work.create_live_pairwise("live", pool, "A", "B", make_selector("random", seed=0), risk=0.2,
                                           overlap=overlap, **kw)
    truth = {iid: ("a" if pool.scores["human"][k, 0] > 0 else "b") for k, iid in enumerate(pool.item_ids)}
    return work, pid, pool, truth


def test_live_project_decides_like_the_session(tmp_path):
    work, pid, pool, truth = live(tmp_path)
    aid, _ = work.store.add_annotator(pid, "alice")
    alice = {"id": aid, "project_id": pid, "name": "alice"}
    seen = []
    while True:
        a = work.next_for(alice)
        if a.get("done"):
            break
        assert a["item_id"] not in seen  # never the same item twice
        seen.append(a["item_id"])
        work.submit(alice, a["assignment_id"], answer=answer_for(work, alice, a, truth))
    st = work.status(pid)
    assert st["decision"]["decided"] and st["decision"]["winner"] == "A"
    # the same loop driven by a metric oracle on the same pool asks for the same items
    d = Session(pool, make_selector("random", seed=0), a="A", b="B", risk=0.2).run(MetricOracle("human"))
    assert d.labels_used == len(seen) == st["decision"]["labels_used"] and d.winner == "A"
    assert work.next_for(alice)["reason"] == "the decision is made"


def test_shown_order_is_recorded_and_mapped_back(tmp_path):
    work, pid, pool, truth = live(tmp_path)
    aid, _ = work.store.add_annotator(pid, "alice")
    alice = {"id": aid, "project_id": pid, "name": "alice"}
    orders = []
    for _ in range(5):
        a = work.next_for(alice)
        work.submit(alice, a["assignment_id"], answer="1")  # always the first output shown
        orders.append(work.store.assignment(a["assignment_id"])["shown_order"])
    js = work.store.judgments(pid)
    assert {"ab", "ba"} == set(orders)  # both orders occur
    # '1' means a where A was shown first, b where B was
    assert [j.verdict for j in js] == ["a" if o == "ab" else "b" for o in orders]
    assert [j.shown_order for j in js] == orders


def test_overlap_two_people_each_item_twice_never_twice_by_one(tmp_path, capsys):
    work, pid, pool, truth = live(tmp_path, overlap=2)
    people = []
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        people.append({"id": aid, "project_id": pid, "name": name})
    given = {p["name"]: [] for p in people}
    for _ in range(200):
        progressed = False
        for p in people:
            a = work.next_for(p)
            if a.get("done"):
                continue
            given[p["name"]].append(a["item_id"])
            work.submit(p, a["assignment_id"], answer=answer_for(work, p, a, truth))
            progressed = True
        if not progressed:
            break
    assert all(len(v) == len(set(v)) for v in given.values())  # nobody saw an item twice
    st = work.status(pid)
    assert st["decision"]["decided"]
    per_item = {}
    for j in work.store.judgments(pid):
        per_item.setdefault(j.item_id, set()).add(j.annotator)
    assert max(len(v) for v in per_item.values()) == 2  # every item the session asked about got both people
    ag = st["agreement"]
    # both people answered every item as the truth says: they agree completely (kappa is undefined when
    # every verdict is the same label; percent agreement is 100)
    assert ag["n_items_multi"] == len(per_item) and ag["percent_agreement"] == 100.0
    from evalsift.cli import main

    assert main(["annotate", "status", "--db", str(tmp_path / "w.db"), "--project", str(pid)]) == 0
    text = capsys.readouterr().out
    assert f"agreement over {len(per_item)} item(s) judged by 2+ people: 100.000% agree" in text
    assert "decided: A wins" in text


def test_expired_lease_goes_to_someone_else_and_a_late_answer_is_kept(tmp_path):
    work, pid, pool, truth = live(tmp_path, lease_seconds=0.001)
    ids = {}
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        ids[name] = {"id": aid, "project_id": pid, "name": name}
    first = work.next_for(ids["alice"])
    import time

    time.sleep(0.01)  # alice's lease runs out
    again = work.next_for(ids["bob"])
    assert again["item_id"] == first["item_id"]  # the item went back to the queue
    jid = work.submit(ids["alice"], first["assignment_id"], answer="0")  # alice answers late: stored, not lost
    assert any(j.annotator == "alice" for j in work.store.judgments(pid)) and jid > 0


def test_someone_elses_assignment_is_refused(tmp_path):
    work, pid, pool, truth = live(tmp_path)
    a1, _ = work.store.add_annotator(pid, "alice")
    a2, _ = work.store.add_annotator(pid, "bob")
    alice, bob = ({"id": a, "project_id": pid, "name": n} for a, n in ((a1, "alice"), (a2, "bob")))
    a = work.next_for(alice)
    with pytest.raises(PermissionError):
        work.submit(bob, a["assignment_id"], answer="1")
    with pytest.raises(ParameterError, match="verdict must be 1"):
        work.submit(alice, a["assignment_id"], answer="left")
    first = work.submit(alice, a["assignment_id"], answer="1", idempotency_key="k")
    assert work.submit(alice, a["assignment_id"], answer="1", idempotency_key="k") == first
    assert len(work.store.judgments(pid)) == 1


def test_score_project_exports_what_rank_reads(tmp_path, capsys):
    pool = pair_pool(n=6)
    work = Workspace(Store(tmp_path / "w.db"))
    pid, _ = work.create_fixed("scores", pool, mode="score", systems=["A", "B"], scale=(1, 5), overlap=2)
    people = []
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        people.append({"id": aid, "project_id": pid, "name": name})
    n = 0
    for p, base in zip(people, (4, 5)):
        while not (a := work.next_for(p)).get("done"):
            row = work.store.assignment(a["assignment_id"])
            work.submit(p, a["assignment_id"], score=base if row["a"] == "A" else base - 3)
            n += 1
    assert n == 2 * 6 * 2  # 2 people x 6 items x 2 systems
    with pytest.raises(ParameterError, match="from 1 to 5"):
        work.submit(people[0], work.store.lease(pid, people[0]["id"], "i0", "A", None, "ab", 60), score=7)
    from evalsift.cli import main

    out = tmp_path / "scores.jsonl"
    assert main(["annotate", "export", "--db", str(tmp_path / "w.db"), "--project", str(pid), "--out", str(out),
                 "--format", "s2e"]) == 0
    assert main(["rank", "--data", str(out), "--human-metric", "human", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    means = {r["system"]: r["mean"] for r in res["ranking"]}
    assert means == {"A": 4.5, "B": 1.5}  # (4 + 5) / 2 and (1 + 2) / 2 on every item


def test_stored_sets_rebuild_the_session_without_the_data(tmp_path):
    work, pid, pool, truth = live(tmp_path, p_a=0.7)
    aid, _ = work.store.add_annotator(pid, "alice")
    alice = {"id": aid, "project_id": pid, "name": "alice"}
    for _ in range(7):
        a = work.next_for(alice)
        work.submit(alice, a["assignment_id"], answer=answer_for(work, alice, a, truth))
    before = work.status(pid)["decision"]
    fresh = Workspace(Store(tmp_path / "w.db"))  # a restarted server: rebuilt from the store alone
    assert fresh.status(pid)["decision"] == before
    assert np.isfinite(before["risk"])


def test_pairwise_export_replays_as_judgments(tmp_path, capsys):
    work, pid, pool, truth = live(tmp_path)
    aid, _ = work.store.add_annotator(pid, "alice")
    alice = {"id": aid, "project_id": pid, "name": "alice"}
    while not (a := work.next_for(alice)).get("done"):
        work.submit(alice, a["assignment_id"], answer=answer_for(work, alice, a, truth), comment="ok, \"quoted\"")
    from evalsift.cli import main
    from evalsift.io.pairwise import read_pairwise

    out = tmp_path / "verdicts.csv"
    assert main(["annotate", "export", "--db", str(tmp_path / "w.db"), "--project", str(pid), "--out", str(out),
                 "--format", "pairwise"]) == 0
    back = read_pairwise(out)
    stored = work.store.judgments(pid)
    assert [(j.item_id, j.a, j.b, j.verdict, j.annotator) for j in back.judgments] == \
        [(j.item_id, j.a, j.b, j.verdict, j.annotator) for j in stored]
    capsys.readouterr()
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}",
                 "--method", "random", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    live_d = work.status(pid)["decision"]  # the replay is the live project's decision, over its whole pool
    assert d["winner"] == "A" == live_d["winner"] and d["pool_size"] == pool.n_items == live_d["pool_size"]
    assert (d["labels_used"], d["risk"]) == (live_d["labels_used"], live_d["risk"])
    Path(f"{out}.project.json").unlink()  # the verdicts alone: the pool is the judged items, and it says so
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}",
                 "--method", "random", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["pool_size"] == len(stored) and "these items only" in d["pool_note"]


@pytest.mark.parametrize("p_a", [0.8, 0.55])
def test_two_people_on_a_live_project_both_work_and_the_decision_is_the_sessions(tmp_path, p_a):
    """Two annotators at once on a live pairwise project (overlap 1): both hold an item at the same time
    (before, the second waited: alice 10, bob 0), the verdicts reach the anytime rule in the random order
    it needs, so the Decision equals a plain Session's on the same pool, and at most
    ceil(2 / 1) - 1 = 1 item is judged beyond what the decision used."""
    work, pid, pool, truth = live(tmp_path, n=200, p_a=p_a, max_labels=150)
    people = []
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        people.append({"id": aid, "project_id": pid, "name": name})
    count = {"alice": 0, "bob": 0}
    both_held = 0
    for _ in range(400):
        held = [work.next_for(p) for p in people]  # both ask before either answers
        if all(h.get("done") and h.get("final") for h in held):
            break
        if not any(h.get("done") for h in held):
            assert held[0]["item_id"] != held[1]["item_id"]
            both_held += 1
        for p, h in zip(people, held):
            if not h.get("done"):
                work.submit(p, h["assignment_id"], answer=answer_for(work, p, h, truth))
                count[p["name"]] += 1
    st = work.status(pid)["decision"]
    ref = Session(pool, make_selector("random", seed=0), a="A", b="B", risk=0.2, max_labels=150).run(
        MetricOracle("human"))
    assert st["decided"] and (st["winner"], st["labels_used"]) == (ref.winner, ref.labels_used)
    assert count["alice"] > 0 and count["bob"] > 0 and both_held >= min(count.values()) - 1
    assert st["judged_ahead"] <= 1 and sum(count.values()) == st["labels_used"] + st["judged_ahead"]
