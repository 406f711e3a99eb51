"""Issue 42, item 5 (arena): an arena project's export replayed with ``evalsift arena`` named another leader than the
live board on the same 9 battles. The live board weights each human battle by its draw's probability and folds in
the project's judges by PPI++ (with ``neyman``: post-stratified weights over the project's strata); a battle file
read as plain battles has neither. Now ``annotate export`` writes the project file beside every arena export and
``arena`` replays the live board from it; a form that cannot (a pairwise table: no probabilities) is refused,
naming the forms that can. A real store, the Workspace and the command line."""

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.cli import main  # noqa: E402
from evalsift.oracle import Judgment  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import league_pool, league_value  # noqa: E402


def noisy_judge(pool, right=0.7, seed=0):
    """A judge on every (prompt, pair) agreeing with the league's coin with probability ``right``."""
    rng = np.random.default_rng(seed)
    systems = list(pool.systems)
    return [Judgment(item_id=item, a=a, b=b, verdict="a" if (league_value(item, a, b) == 1.0) == (rng.random() < right)
                     else "b", annotator="j", kind="llm")
            for i, a in enumerate(systems) for b in systems[i + 1:] for item in pool.item_ids]


def live_project(tmp_path, allocation, votes, n=12, k=3):
    """An arena with a judge; one person votes ``votes`` times through the Workspace (ties and both-bad among
    them, every seventh vote against the league). Returns ``(db, the live board's models)``."""
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = league_pool(n=n, k=k)
    pid, _ = work.create_arena("league", pool, max_battles=60, allocation=allocation, alpha=0.1,
                               judges={"judge:noisy": noisy_judge(pool)})
    who = work.store.annotator_by_token(work.store.add_annotator(pid, "alice")[1])
    for t in range(votes):
        a = work.next_for(who)
        row = work.store.assignment(a["assignment_id"])
        first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
        win = "1" if league_value(row["item_id"], first, second) else "2"
        answer = {3: "0", 5: "bothbad"}.get(t, win if t % 7 else {"1": "2", "2": "1"}[win])
        work.submit(who, a["assignment_id"], answer=answer)
    return db, work.status(pid)["arena"]["models"]


def board_of(capsys, *argv):
    assert main(["arena", *argv, "--json"]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def same(models, replayed):
    """The live page's rows (name, score, interval, rank-set, battles) against a replay's, to 1e-9."""
    key = {m["name"]: m for m in replayed}
    assert [m["name"] for m in models] == [m["name"] for m in replayed]
    for m in models:
        r = key[m["name"]]
        assert r["score"] == pytest.approx(m["score"], abs=1e-9) and r["rank_set"] == m["rank_set"]
        assert r["interval"] == pytest.approx(m["interval"], abs=1e-9) and r["human_battles"] == m["human_battles"]


def test_every_replay_form_of_an_arena_export_gives_the_live_board_or_is_refused(tmp_path, capsys):
    """9 battles by the active rule with a judge: ``arena --data`` on the export as a battle file (.jsonl, .csv,
    .tsv) and as a judgments export prints the live board row for row; a pairwise table is refused naming those
    forms; an option the live board does not have is refused too. With the project file moved aside the same
    file is a plain battle file again -- unweighted, without the judge -- and its board is not the live one
    (what the issue met)."""
    db, models = live_project(tmp_path, "active", 9)
    for fmt, name in (("arena", "b.jsonl"), ("arena", "b.csv"), ("arena", "b.tsv"), ("judgments", "j.jsonl")):
        out = tmp_path / name
        assert main(["annotate", "export", "--db", str(db), "--project", "league", "--format", fmt,
                     "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert f"evalsift arena --data {out} --out DIR" in err and (tmp_path / f"{name}.project.json").is_file()
        board, err = board_of(capsys, "--data", str(out), "--out", str(tmp_path / f"board-{name}"))
        same(models, board["models"])
        assert any("the live board of arena project 'league', replayed from" in x for x in board["notes"])
    # a pairwise table keeps no draw probabilities: refused, naming the forms that replay
    out = tmp_path / "p.csv"
    assert main(["annotate", "export", "--db", str(db), "--project", "league", "--format", "pairwise",
                 "--out", str(out)]) == 0
    assert "export with --format arena or judgments" in capsys.readouterr().err
    assert main(["arena", "--data", str(out), "--out", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "carries no draw probability" in err and "--format arena (.jsonl, .csv or .tsv) or --format judgments" in err
    assert not (tmp_path / "nope").exists()
    # options the live board has not: refused before anything is written
    assert main(["arena", "--data", str(tmp_path / "b.jsonl"), "--human-budget", "5", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "replays the project's live board, which has no --human-budget" in err and not (tmp_path / "x").exists()
    # --alpha is the one knob: the same battles and weights, other intervals
    wide, _ = board_of(capsys, "--data", str(tmp_path / "b.jsonl"), "--alpha", "0.01", "--out", str(tmp_path / "a"))
    assert [m["score"] for m in wide["models"]] == pytest.approx([m["score"] for m in models], abs=1e-9)
    assert all(w["interval"][1] - w["interval"][0] > m["interval"][1] - m["interval"][0]
               for w, m in zip(wide["models"], models))
    # the project file moved aside: a plain battle file, fitted unweighted and without the judge -- not the board
    shutil.move(tmp_path / "b.jsonl.project.json", tmp_path / "aside.json")
    plain, _ = board_of(capsys, "--data", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "plain"))
    live = {m["name"]: m["score"] for m in models}
    assert max(abs(m["score"] - live[m["name"]]) for m in plain["models"]) > 1.0


def test_a_neyman_arena_export_replays_its_post_stratified_board(tmp_path, capsys):
    """--allocation neyman: the live board weights a stratum's battles by its units over its battles (the strata
    fixed from the judge's verdicts at creation), which the project file carries; the replay is exact."""
    db, models = live_project(tmp_path, "neyman", 30, n=20, k=4)
    out = tmp_path / "b.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "league", "--format", "arena",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    board, _ = board_of(capsys, "--data", str(out), "--out", str(tmp_path / "board"))
    same(models, board["models"])
    assert board["strata"] == Workspace(Store(db)).status(1)["arena"]["strata"]
