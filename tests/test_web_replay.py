"""An annotation project's export replays to the decision its admin page shows.

Three live projects (a plain one answered with an undo and a skip, one with two people and overlap 2,
one with a proxy) are answered over HTTP on a real server; the admin page's decision is read from the
status API; the project is exported in both formats, and ``evalsift compare --data X --oracle
judgments:X`` on each export must print the same winner, labels used and risk.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evalsift.cli import main  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, call, pair_pool  # noqa: E402


def _answer(srv, token, truth, store, n, rng):
    """Answer up to ``n`` assignments as the truth says, flipping a fifth of them (a noisy person)."""
    done = 0
    while done < n:
        code, job = call("GET", f"{srv.url}/api/v1/next", token)
        if code != 200 or job.get("done"):
            break
        row = store.assignment(job["assignment_id"])
        winner = truth[job["item_id"]] if rng.random() > 0.2 else ("b" if truth[job["item_id"]] == "a" else "a")
        key = "1" if (winner == "a") == (row["shown_order"] == "ab") else "2"
        if rng.random() < 0.1:
            key = "0"
        assert call("POST", f"{srv.url}/api/v1/judgments", token,
                    {"assignment_id": job["assignment_id"], "verdict": key})[0] == 200
        done += 1
    return done


def _project(tmp_path, name, overlap=1, proxy=None, p_a=0.6, people=("alice",)):
    pool = pair_pool(n=150, p_a=p_a, seed=3)
    db = tmp_path / f"{name}.db"
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise(name, pool, "A", "B", make_selector("random", seed=0), risk=0.1,
                                           overlap=overlap, proxy=proxy)
    tokens = [work.store.add_annotator(pid, p)[1] for p in people]
    truth = {iid: ("a" if pool.scores["human"][k, 0] > 0 else "b") for k, iid in enumerate(pool.item_ids)}
    return db, pid, admin, tokens, truth, pool


def _replays(tmp_path, capsys, db, pid, name, admin_decision):
    for fmt, out in (("pairwise", tmp_path / f"{name}.csv"), ("judgments", tmp_path / f"{name}.jsonl")):
        assert main(["annotate", "export", "--db", str(db), "--project", name, "--format", fmt,
                     "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert f"{out}.project.json" in err and "evalsift compare --data" in err
        assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}",
                     "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        mine = {k: got[k] for k in ("winner", "labels_used", "risk", "wins_a", "wins_b", "ties", "pool_size")}
        theirs = {k: admin_decision[k] for k in mine}
        assert mine == theirs, (fmt, mine, theirs)
        assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}"]) == 0
        text = capsys.readouterr().out
        assert text.splitlines()[0].startswith(f"replay of annotation project {name!r}: its pool of 150 items")


def test_a_live_project_with_an_undo_and_a_skip_replays_exactly(tmp_path, capsys):
    db, pid, admin, (alice,), truth, _ = _project(tmp_path, "plain")
    rng = np.random.default_rng(0)
    store = Store(db)
    with Server(db) as srv:
        _answer(srv, alice, truth, store, 12, rng)
        assert call("POST", f"{srv.url}/api/v1/undo", alice)[0] == 200  # withdrawn: not in the decision
        job = call("GET", f"{srv.url}/api/v1/next", alice)[1]
        assert call("POST", f"{srv.url}/api/v1/judgments", alice,
                    {"assignment_id": job["assignment_id"], "skip": True})[0] == 200
        _answer(srv, alice, truth, store, 10, rng)
        status = call("GET", f"{srv.url}/api/v1/projects/plain/status", admin)[1]
    d = status["decision"]
    assert d["pool_size"] == 150 and d["labels_used"] >= 5  # a decision over the whole pool
    _replays(tmp_path, capsys, db, pid, "plain", d)


def test_two_people_with_overlap_two_replay_exactly(tmp_path, capsys):
    db, pid, admin, (alice, bob), truth, _ = _project(tmp_path, "overlap", overlap=2, people=("alice", "bob"))
    rng = np.random.default_rng(1)
    store = Store(db)
    with Server(db) as srv:
        for _ in range(8):  # interleaved, so verdicts arrive out of item order and some wait for the second person
            _answer(srv, alice, truth, store, 2, rng)
            _answer(srv, bob, truth, store, 1, rng)
        status = call("GET", f"{srv.url}/api/v1/projects/overlap/status", admin)[1]
    _replays(tmp_path, capsys, db, pid, "overlap", status["decision"])


def test_a_project_with_a_proxy_replays_exactly_until_it_decides(tmp_path, capsys):
    from evalsift.proxy import MetricProxy

    pool = pair_pool(n=150, p_a=0.8, seed=3)
    human = pool.scores["human"]
    diff = (human[:, 0] - human[:, 1]) + np.random.default_rng(1).normal(0, 0.7, pool.n_items)
    db, pid, admin, (alice,), truth, _ = _project(tmp_path, "px", proxy=MetricProxy(diff, name="auto"), p_a=0.8)
    store = Store(db)
    with Server(db) as srv:
        _answer(srv, alice, truth, store, 150, np.random.default_rng(2))
        status = call("GET", f"{srv.url}/api/v1/projects/px/status", admin)[1]
    assert status["decision"]["decided"]
    _replays(tmp_path, capsys, db, pid, "px", status["decision"])


def test_a_verdict_file_without_its_project_says_the_pool_is_the_exported_items(tmp_path, capsys):
    db, pid, admin, (alice,), truth, _ = _project(tmp_path, "bare")
    store = Store(db)
    with Server(db) as srv:
        _answer(srv, alice, truth, store, 10, np.random.default_rng(0))
    out = tmp_path / "v.csv"
    assert main(["annotate", "export", "--db", str(db), "--project", "bare", "--format", "pairwise",
                 "--out", str(out)]) == 0
    Path(f"{out}.project.json").unlink()  # only the verdicts travelled
    capsys.readouterr()
    main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("pool: the 10 items in") and "these items only" in first


def test_a_replay_with_another_pair_is_refused(tmp_path, capsys):
    db, pid, admin, (alice,), truth, _ = _project(tmp_path, "pair")
    out = tmp_path / "v.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "pair", "--format", "judgments",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "C", "--oracle", f"judgments:{out}"]) == 2
    assert "compares A and B" in capsys.readouterr().err


def test_another_replay_form_of_a_live_export_is_refused_naming_the_one_that_replays(tmp_path, capsys):
    """issue 42: for a ``--design neyman`` project, ``compare --data demo --oracle judgments:<export>`` printed
    "B wins ... risk 0.0000" where the admin page said 0.9461: a Session of compare's own over the demo data,
    finding verdicts on the exported items only. Now that form is refused, naming the replay that gives the
    admin page's decision; that one equals it (two people answering at once, so draws were made ahead)."""
    from evalsift.io import make_demo_pool

    db = tmp_path / "w.db"
    assert main(["annotate", "new", "--db", str(db), "--name", "ny", "--pairwise", "--data", "demo", "--a", "A",
                 "--b", "B", "--proxy", "metric:token_f1", "--design", "neyman", "--max-labels", "30", "--json"]) == 0
    pid = json.loads(capsys.readouterr().out)["project"]
    pool = make_demo_pool()
    human = {iid: pool.score("human", "A")[k] - pool.score("human", "B")[k] for k, iid in enumerate(pool.item_ids)}
    work = Workspace(Store(db))
    people = [{"id": work.store.add_annotator(pid, n)[0], "project_id": pid, "name": n} for n in ("alice", "bob")]
    for _ in range(12):  # both ask, then both answer
        held = [(p, work.next_for(p)) for p in people]
        for p, a in held:
            if not a.get("done"):
                d = human[a["item_id"]]
                first_is_a = work.store.assignment(a["assignment_id"])["shown_order"] == "ab"
                work.submit(p, a["assignment_id"], answer="0" if d == 0 else "1" if (d > 0) == first_is_a else "2")
    live = work.status(pid)["decision"]
    assert work.store.draws(pid)  # some draws were made ahead of the decision
    out = tmp_path / "ny.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "ny", "--out", str(out)]) == 0
    capsys.readouterr()
    for extra in ([], ["--proxy", "metric:token_f1", "--design", "neyman"]):
        assert main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", f"judgments:{out}", *extra]) == 2
        err = capsys.readouterr().err
        assert "is the export of live annotation project 'ny'" in err
        assert f"replays as: evalsift compare --data {out} --a A --b B --oracle judgments:{out}" in err
        assert "its neyman design and the draws it made" in err and f"move {out}.project.json aside" in err
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["winner"], got["labels_used"], got["risk"], got["wins_a"], got["wins_b"]) == \
        (live["winner"], live["labels_used"], live["risk"], live["wins_a"], live["wins_b"])
    Path(f"{out}.project.json").rename(tmp_path / "aside.json")  # the verdicts as plain recorded data: allowed
    assert main(["compare", "--data", "demo", "--a", "A", "--b", "B", "--oracle", f"judgments:{out}"]) == 0
