"""Gold items and adjudication in a real browser (Debian's chromium under Playwright, driven by keyboard).

Two people by keyboard on a project with gold items: a gold item's page (its DOM, and the JSON the page was
given) has the same shape as a real item's; the careless one (random keys) is paused by the gold rule and
their page says so; the admin page shows both people's accuracy and the exclusion. An adjudicator's page
shows a disputed item with its counts and their key press is the verdict that counts.
"""

import json
import random

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, chromium, pair_pool, wait_task_or_done  # noqa: E402
from test_web_gold import gold_rows, truth_key  # noqa: E402

_MISSING = browser_missing()
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""), pytest.mark.slow]

SHAPE = """() => {
  const walk = (e) => e.tagName + '[' + [...e.attributes].map((a) => a.name + '=' +
      (['hidden', 'disabled'].includes(a.name) ? '' : a.value)).sort().join(',') + ']{' +
      [...e.children].map(walk).join('') + '}';
  return walk(document.body);
}"""
"""The page's DOM without its text: every element, attribute and value (what is hidden or disabled aside)."""


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _truth(pool):
    return {iid: ("A" if pool.scores["human"][k, 0] > 0 else "B") for k, iid in enumerate(pool.item_ids)}


def test_two_people_by_keyboard_with_gold_items_indistinguishable(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = pair_pool(n=120, p_a=0.7, seed=1)
    pid, admin = work.create_fixed("gold-kb", pool, mode="pairwise", a="A", b="B", gold=gold_rows(30),
                                   gold_rate=0.3, min_gold_accuracy=0.8)
    tokens = {n: work.store.add_annotator(pid, n)[1] for n in ("alice", "bob")}
    ids = {n: work.store.annotator_by_token(t)["id"] for n, t in tokens.items()}
    truth, rng = _truth(pool), random.Random(3)
    shapes = {"gold": set(), "real": set()}
    payloads = {"gold": set(), "real": set()}
    counts = {n: {"gold": 0, "real": 0} for n in tokens}
    with Server(db) as srv:
        pages = {}
        for n, t in tokens.items():
            page = browser.new_context().new_page()
            got = []
            page.on("response", lambda r, got=got: got.append(r) if r.url.endswith("/api/v1/next") else None)
            page.goto(f"{srv.url}/a/{t}")
            pages[n] = (page, got)
        active = set(tokens)
        for _ in range(400):
            if not active:
                break
            for n in sorted(active):
                page, got = pages[n]
                if not wait_task_or_done(page):
                    active.discard(n)
                    continue
                held = work.store.held(pid, ids[n])
                which = "gold" if work.store.gold_item(pid, held["item_id"]) else "real"
                counts[n][which] += 1
                if sum(counts[n].values()) > 1:  # after the first answer (the undo button shows from then on)
                    shapes[which].add((n, page.evaluate(SHAPE)))  # per person: the page holds their own token
                body = got[-1].json()
                payloads[which].add(json.dumps({k: type(v).__name__ for k, v in body.items()}, sort_keys=True) +
                                    f"|{len(body['item_id'])}|{sorted(body['progress'])}")
                key = rng.choice("120") if n == "bob" else truth_key(work.store, pid, ids[n], truth)
                before = page.locator("#input").text_content() + page.locator("#out1").text_content()
                page.keyboard.press(key)
                page.wait_for_function("(b) => document.getElementById('task').hidden || document.getElementById("
                                       "'input').textContent + document.getElementById('out1').textContent !== b",
                                       arg=before)
        bob_status = pages["bob"][0].locator("#status").text_content()
        admin_page = browser.new_page(viewport={"width": 1200, "height": 1000})
        admin_page.goto(f"{srv.url}/admin/{pid}#token={admin}")
        admin_page.wait_for_selector("#gold-table")
        gold_table = admin_page.locator("#gold-table").inner_text()
    assert all(c["gold"] >= 3 and c["real"] >= 3 for c in counts.values()), counts
    assert shapes["gold"] == shapes["real"] and len(shapes["real"]) == 2  # one DOM shape per person for both kinds
    assert payloads["gold"] == payloads["real"] and len(payloads["real"]) == 1  # and one JSON shape
    assert "queue is paused" in bob_status  # bob pressed keys at random: the gold rule paused him
    st = work.status(pid)["gold"]
    bob = next(p for p in st["annotators"] if p["name"] == "bob")
    alice = next(p for p in st["annotators"] if p["name"] == "alice")
    assert bob["excluded"] and not alice["flagged"] and bob["answered"] <= 20
    assert "flagged: paused, verdicts excluded" in gold_table and "alice" in gold_table
    assert len(work.store.gold_answers(pid)) == counts["alice"]["gold"] + counts["bob"]["gold"]
    assert not any(r["item_id"].startswith("gold:") for r in work.store.judgment_rows(pid))


def test_the_adjudicator_judges_disputed_items_by_keyboard(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = pair_pool(n=12, p_a=1.0)
    pid, admin = work.create_fixed("adj-kb", pool, mode="pairwise", a="A", b="B", overlap=2, adjudicate="split")
    people = {n: work.store.annotator_by_token(work.store.add_annotator(pid, n)[1]) for n in ("alice", "bob")}
    for k in range(12):  # bob disagrees on every fourth item
        for n, who in people.items():
            a = work.next_for(who)
            first = "A" if a["outputs"][0].startswith("Answer A") else "B"
            right = "1" if first == "A" else "2"
            work.submit(who, a["assignment_id"], answer=right if (n == "alice" or k % 4) else {"1": "2", "2": "1"}[right])
    token = work.store.add_annotator(pid, "jude", role="adjudicator")[1]
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        n = 0
        while wait_task_or_done(page):
            text = page.locator("#dispute").inner_text()
            assert "1 said Output 1 is better, 1 said Output 2" in text
            first = page.locator("#out1").text_content()
            before = page.locator("#input").text_content()
            page.keyboard.press("1" if first.startswith("Answer A") else "2")
            page.wait_for_function("(b) => document.getElementById('task').hidden || "
                                   "document.getElementById('input').textContent !== b", arg=before)
            n += 1
            if n > 10:
                break
    assert n == 3
    rows = work.store.judgment_rows(pid)
    assert sum(r["adjudicated"] for r in rows) == 3 and all(r["verdict"] == "a" for r in rows if r["adjudicated"])
    assert work.status(pid)["adjudication"]["adjudicated"] == 3
