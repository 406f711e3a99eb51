"""Live projects with a design (``--design neyman`` / ``active``) that serve several people (issue 42).

Before: past the first set one item was open at a time, so a second person waited ("more may come") and a
person who walked away holding the open item stopped everyone for the whole lease; a late answer past the
overlap was stored *and* counted (2 verdicts on an item at overlap 1; an arena counted 4 battles for 3).
Now a person with nothing open gets a draw made ahead of the decision (recorded with its point and its
probability, replayed by every server and by the export's replay), late answers are stored as extras
(``counted: false``) and never counted, and the waiting answer says why and until when. A real SQLite
store, the real Session; the replays run the real ``evalsift compare``.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from evalsift.cli import main
from evalsift.pool import Pool
from evalsift.proxy import make_proxy
from evalsift.select import make_selector
from evalsift.store import Store
from evalsift.web import Workspace

from _web import league_pool

SCORE = {"a": (1.0, 0.0), "b": (0.0, 1.0), "tie": (0.5, 0.5)}


def judged_pool(n: int = 240, seed: int = 5) -> Pool:
    """A leads B (45% / 20% ties / 35%); ``judge`` is a recorded judge right on 80% of the items and a coin
    elsewhere (three values: the design's strata)."""
    rng = np.random.default_rng(seed)
    truth = rng.permutation(np.array(["a"] * int(0.45 * n) + ["tie"] * int(0.2 * n) + ["b"] * (n - int(0.65 * n))))
    judge = np.where(rng.random(n) < 0.8, truth, rng.choice(["a", "b", "tie"], n))
    return Pool(item_ids=[f"i{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"a{k}" for k in range(n)], "B": [f"b{k}" for k in range(n)]},
                inputs=[f"q{k}" for k in range(n)],
                scores={"truth": np.array([SCORE[v] for v in truth]), "judge": np.array([SCORE[v] for v in judge])},
                human_metrics=["truth"], name="judged")


def design_project(tmp_path, sampling="neyman", **kw):
    pool = judged_pool()
    work = Workspace(Store(tmp_path / "w.db"))
    pid, admin = work.create_live_pairwise("ny", pool, "A", "B", make_selector("random", seed=0), risk=0.1,
                                           proxy=make_proxy("metric:judge", pool, "A", "B"), sampling=sampling, **kw)
    people = []
    for name in ("alice", "bob"):
        aid, _ = work.store.add_annotator(pid, name)
        people.append({"id": aid, "project_id": pid, "name": name})
    truth = {iid: pool.score("truth", "A")[k] - pool.score("truth", "B")[k] for k, iid in enumerate(pool.item_ids)}
    return work, pid, admin, people, truth


def answer(work, person, a, truth, flip=False):
    """Submit what the truth says about the held item, in the terms the person was shown (1 / 2 / 0)."""
    d = truth[a["item_id"]] * (-1 if flip else 1)
    first_is_a = work.store.assignment(a["assignment_id"])["shown_order"] == "ab"
    return work.submit(person, a["assignment_id"], answer="0" if d == 0 else "1" if (d > 0) == first_is_a else "2")


@pytest.mark.parametrize("sampling", ["neyman", "active"])
def test_two_people_both_work_a_walk_away_blocks_nobody_and_a_late_answer_counts_once(tmp_path, capsys, sampling):
    """The issue's target: two people alternating on a live design project each give at least a third of
    the answers, and with overlap 1 no item is counted twice. Both ask before either answers (the case
    where the second used to wait); then alice walks away holding an item: bob goes on (draws made ahead
    for him), her lease lapses, bob is given her item and answers it, and her late answer arrives -- stored,
    exported with ``counted: false``, left out of the decision. The decision is the one a restarted server
    and ``compare``'s replay of either export reach."""
    work, pid, _, (alice, bob), truth = design_project(tmp_path, sampling)
    count, waits = {"alice": 0, "bob": 0}, 0

    def both_ask_then_answer(rounds):
        nonlocal waits
        for _ in range(rounds):
            held = [(p, work.next_for(p)) for p in (alice, bob)]
            if any(a.get("done") and a.get("final") for _, a in held):
                return True
            waits += sum(bool(a.get("done")) for _, a in held)
            items = [a["item_id"] for _, a in held if not a.get("done")]
            assert len(items) == len(set(items))  # overlap 1: never the same item to both
            for p, a in held:
                if not a.get("done"):
                    answer(work, p, a, truth)
                    count[p["name"]] += 1
        return False

    assert not both_ask_then_answer(6)  # the first set and beyond: both hold an item every round
    left = work.next_for(alice)  # alice takes an item and walks away
    for _ in range(8):  # bob is never told to wait: he gets draws made ahead of the held item
        a = work.next_for(bob)
        assert not a.get("done"), a
        answer(work, bob, a, truth)
        count["bob"] += 1
    seconds = work.store.project(pid).settings["lease_seconds"]
    assert work.store.expire_leases(pid, now=time.time() + seconds + 1) == 1  # her lease lapses
    again = work.next_for(bob)
    assert again["item_id"] == left["item_id"]  # the decision needs it first: it goes to bob
    answer(work, bob, again, truth)
    count["bob"] += 1
    late = answer(work, alice, left, truth, flip=True)  # alice comes back and answers anyway (the other way)
    count["alice"] += 1
    while not both_ask_then_answer(1):
        pass
    assert waits == 0
    st = work.status(pid)
    d = st["decision"]
    total = sum(count.values())
    assert d["decided"] and min(count.values()) >= total / 3, count
    # 0 items counted twice: one counted verdict per item, and the decision holds one vote per item
    rows = [r for r in work.store.judgment_rows(pid) if r["status"] == "done"]
    counted = [r["item_id"] for r in rows if r["counted"]]
    assert len(counted) == len(set(counted)) == total - 1
    assert [r["id"] for r in rows if not r["counted"]] == [late] and st["judgments"]["extra"] == 1
    judged = work.session(pid).decision().judged
    assert all(len(e["votes"]) <= 1 for e in judged)
    assert next(e for e in judged if e["item_id"] == left["item_id"])["votes"] == {"bob": d_verdict(truth, left)}
    assert total - 1 == d["labels_used"] + d["judged_ahead"]  # every counted verdict used, or judged ahead
    # the weighting uses each draw's probability as it was made: recorded with the assignment and the draw
    session = work.session(pid)
    index = {iid: k for k, iid in enumerate(session.pool.item_ids)}
    for r in work.store.assignments(pid):
        assert r["prob"] == pytest.approx(session.draw_probability(index[r["item_id"]]), rel=1e-12)
    draws = work.store.draws(pid)
    assert draws and all(r["prob"] == pytest.approx(session.draw_probability(index[r["item_id"]]), rel=1e-12)
                         for r in draws)
    fresh = Workspace(Store(tmp_path / "w.db")).status(pid)["decision"]  # a restarted server: the same decision
    assert (fresh["winner"], fresh["labels_used"], fresh["risk"]) == (d["winner"], d["labels_used"], d["risk"])
    for fmt, out in (("judgments", tmp_path / "v.jsonl"), ("pairwise", tmp_path / "v.csv")):
        assert main(["annotate", "export", "--db", str(tmp_path / "w.db"), "--project", "ny", "--format", fmt,
                     "--out", str(out)]) == 0
        capsys.readouterr()
        assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}",
                     "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert (got["winner"], got["labels_used"], got["risk"]) == (d["winner"], d["labels_used"], d["risk"]), fmt
    exported = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert [r["id"] for r in exported if r["status"] == "done" and not r["counted"]] == [late]


def d_verdict(truth, a):
    """The verdict the truth gives an assignment's item, in system terms."""
    d = truth[a["item_id"]]
    return "tie" if d == 0 else "a" if d > 0 else "b"


def test_the_waiting_answer_says_why_and_until_when(tmp_path):
    """With every draw the project may make handed out (``--max-labels 6``) and the last open item held by
    alice, bob is told why he waits and how long at most: until her lease (600 s) ends."""
    work, pid, _, (alice, bob), truth = design_project(tmp_path, min_labels=5, max_labels=6)
    held = work.next_for(alice)
    n = 0
    while not (a := work.next_for(bob)).get("done"):
        answer(work, bob, a, truth)
        n += 1
    assert n == 5  # 6 draws at most, one of them with alice
    assert not a["final"] and a["retry_after"] == 3
    # why: the one item alice holds; how long: her lease, 600 s from when she took it (a second or so ago)
    assert a["reason"].startswith("the decision needs the verdict on 1 item another annotator holds before it can "
                                  "ask for more (all the items it may draw are out)"), a["reason"]
    assert re.search(r"At the latest in (9 min \d+ s|10 min) it goes back to the queue \(when its lease ends",
                     a["reason"]), a["reason"]
    answer(work, alice, held, truth)
    after = work.next_for(bob)
    assert after["done"] and after["final"] and "decision is made" in after["reason"]


def test_an_arena_counts_a_lapsed_lease_once(tmp_path):
    """An arena of 3 systems on one prompt (3 battles, overlap 1): alice's lease on a battle lapses, bob is
    given all three and votes, then alice's late vote arrives. The board counts 3 battles, not 4; the late
    vote is stored (``counted: false``) and left out of the arena export."""
    pool = league_pool(n=1, k=3)
    work = Workspace(Store(tmp_path / "w.db"))
    pid, _ = work.create_arena("arena", pool, max_battles=10, first=2, blind_after_vote=True)
    people = [{"id": work.store.add_annotator(pid, n)[0], "project_id": pid, "name": n} for n in ("alice", "bob")]
    alice, bob = people
    left = work.next_for(alice)
    assert work.store.expire_leases(pid, now=time.time() + 601) == 1
    got = []
    while not (a := work.next_for(bob)).get("done"):
        got.append(a["item_id"])
        work.submit(bob, a["assignment_id"], answer="1")
    assert len(got) == 3
    work.submit(alice, left["assignment_id"], answer="2")  # late, and the other way
    state = work.arena(pid)
    assert state.n == 3 and work.status(pid)["judgments"]["extra"] == 1
    out = tmp_path / "battles.jsonl"
    assert main(["annotate", "export", "--db", str(tmp_path / "w.db"), "--project", "arena", "--format", "arena",
                 "--out", str(out)]) == 0
    battles = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(battles) == 3 and {b["judge"] for b in battles} == {"bob"}
    rows = work.store.judgment_rows(pid)
    assert [r["annotator"] for r in rows if r["kind"] == "human" and not r["counted"]] == ["alice"]


def test_two_servers_on_one_file_make_and_replay_each_others_draws(tmp_path):
    """Two workspaces on one store file (two ``evalsift serve``, each with its own connection and its own
    Session): alice is served by one, bob by the other, both asking before either answers. Each server's
    draws made ahead are replayed by the other at the point they were made, so the two -- and a third one
    started afterwards -- show the same decision, and no item was given to both (overlap 1)."""
    work, pid, _, (alice, bob), truth = design_project(tmp_path)
    other = Workspace(Store(tmp_path / "w.db"))
    served = ((work, alice), (other, bob))
    while True:
        held = [(w, p, w.next_for(p)) for w, p in served]
        if any(a.get("done") and a.get("final") for _, _, a in held):
            break
        assert not any(a.get("done") for _, _, a in held)  # nobody waits
        assert held[0][2]["item_id"] != held[1][2]["item_id"]
        for w, p, a in held:
            answer(w, p, a, truth)
    one, two = work.status(pid)["decision"], other.status(pid)["decision"]
    third = Workspace(Store(tmp_path / "w.db")).status(pid)["decision"]
    keys = ("decided", "winner", "labels_used", "risk", "judged_ahead", "wins_a", "wins_b", "ties")
    assert {k: one[k] for k in keys} == {k: two[k] for k in keys} == {k: third[k] for k in keys}
    assert one["decided"] and len(work.store.draws(pid)) > 0
    items = [r["item_id"] for r in work.store.assignments(pid)]
    assert len(items) == len(set(items))
