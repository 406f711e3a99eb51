"""Two people by keyboard in chromium on a live ``--design neyman`` project (issue 42).

Before: past the first set one item was open at a time; tried by keyboard, one person answered 41 items
and the other 2, waiting on "more may come" the whole time. Now a person with nothing open gets a draw
made ahead of the decision: both work, neither gives under a third of the answers, and the decision is the
one ``evalsift compare`` replays from the export. The waiting page (only when every draw the project may
make is out) says why and until when; its screenshot is ``docs/waiting.png``.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.cli import main  # noqa: E402
from evalsift.proxy import MetricProxy  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, chromium, pair_pool  # noqa: E402

_MISSING = browser_missing()
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""), pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def neyman_project(db, **kw):
    pool = pair_pool(n=150, p_a=0.62)  # A ahead by a margin that takes a few dozen verdicts at risk 0.1
    human = pool.scores["human"]
    diff = (human[:, 0] - human[:, 1]) + np.random.default_rng(1).normal(0, 0.7, pool.n_items)  # a noisy proxy
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise("ny", pool, "A", "B", make_selector("random", seed=0),
                                           proxy=MetricProxy(diff, name="auto"), sampling="neyman", risk=0.1,
                                           **kw)
    tokens = [work.store.add_annotator(pid, name)[1] for name in ("alice", "bob")]
    truth = {iid: human[k, 0] > 0 for k, iid in enumerate(pool.item_ids)}
    return work, pid, tokens, truth


def state(page) -> str:
    """'task' (an item is shown), 'wait' (told to wait) or 'done' (no more work), once the page shows one."""
    page.wait_for_function("() => !document.getElementById('task').hidden || "
                           "/^(Waiting|No more work)/.test(document.getElementById('status').textContent)")
    if not page.locator("#task").is_hidden():
        return "task"
    return "wait" if page.locator("#status").text_content().startswith("Waiting") else "done"


def press_answer(page, truth) -> None:
    """Press the key of the output that wins (A wins where ``truth``), and wait for the page to move on."""
    before = page.locator("#input").text_content()
    item = f"i{before.split()[1].rstrip('?')}"  # "Question 17?" -> i17
    a_first = page.locator("#out1").text_content().startswith("Answer A")
    page.keyboard.press("1" if truth[item] == a_first else "2")
    page.wait_for_function("(b) => document.getElementById('task').hidden || "
                           "document.getElementById('input').textContent !== b", arg=before)


def test_two_people_by_keyboard_both_work_and_the_decision_replays(browser, tmp_path, capsys):
    db = tmp_path / "w.db"
    work, pid, tokens, truth = neyman_project(db)
    with Server(db) as srv:
        pages = []
        for token in tokens:
            page = browser.new_page()
            page.goto(f"{srv.url}/a/{token}")
            pages.append(page)
        answered, waited = [0, 0], 0
        while True:  # the two take turns at the keyboard, as fast as the pages let them
            states = [state(p) for p in pages]
            if all(s == "done" for s in states):
                break
            for k, (page, s) in enumerate(zip(pages, states)):
                if s == "task":
                    press_answer(page, truth)
                    answered[k] += 1
                waited += s == "wait"
        assert all("decision is made" in p.locator("#status").text_content() for p in pages)
    d = Workspace(Store(db)).status(pid)["decision"]
    total = sum(answered)
    assert d["decided"] and d["winner"] == "A" and d["method"] == "random+neyman"
    assert min(answered) >= total / 3 and waited == 0 and total >= 20, (answered, waited)
    assert total == d["labels_used"] + d["judged_ahead"]
    out = tmp_path / "ny.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "ny", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["compare", "--data", str(out), "--a", "A", "--b", "B", "--oracle", f"judgments:{out}", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["winner"], got["labels_used"], got["risk"]) == (d["winner"], d["labels_used"], d["risk"])


def test_the_waiting_page_says_why_and_until_when(browser, tmp_path):
    """Every draw the project may make is out (``max_labels`` 6) and alice holds the last open one: bob's
    page says why he waits and until when at the latest (her lease), and looks again by itself."""
    db = tmp_path / "w.db"
    work, pid, (alice, bob), truth = neyman_project(db, min_labels=5, max_labels=6)
    with Server(db) as srv:
        page_a = browser.new_page(viewport={"width": 1000, "height": 560})
        page_a.goto(f"{srv.url}/a/{alice}")
        assert state(page_a) == "task"  # alice takes an item and leaves it open
        page_b = browser.new_page(viewport={"width": 1000, "height": 560})
        page_b.goto(f"{srv.url}/a/{bob}")
        n = 0
        while state(page_b) == "task":
            press_answer(page_b, truth)
            n += 1
        assert n == 5 and state(page_b) == "wait"
        text = " ".join(page_b.locator("#status").text_content().split())
        assert text.startswith("Waiting: the decision needs the verdict on 1 item another annotator holds"), text
        assert re.search(r"At the latest in (9 min \d+ s|10 min) it goes back to the queue", text), text
        page_b.screenshot(path=str(tmp_path / "waiting.png"))
        press_answer(page_a, truth)  # alice answers: the decision is made, and bob's page sees it by itself
        page_b.wait_for_function("() => document.getElementById('status').textContent.startsWith('No more work')",
                                 timeout=15_000)
    assert (tmp_path / "waiting.png").stat().st_size > 5_000
