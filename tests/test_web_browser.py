"""The annotation app in a real browser (Debian's chromium driven by Playwright; never 'playwright install').

One annotator completes a live pairwise project by keyboard until the Session decides; two annotators
at once with overlap 2; a score project; model outputs with <script> and <img onerror> render inert.
"""

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, chromium, open_page, pair_pool  # noqa: E402

_MISSING = browser_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def wait_task_or_done(page):
    page.wait_for_function("() => !document.getElementById('task').hidden || "
                           "document.getElementById('status').textContent.startsWith('No more work')")
    return not page.locator("#task").is_hidden()


def judge_by_keyboard(page, max_items=100):
    """A always wins: press the key of the output that is A's ('Answer A...'). Returns items judged."""
    n = 0
    while n < max_items and wait_task_or_done(page):
        first = page.locator("#out1").text_content()
        before = page.locator("#input").text_content()
        page.keyboard.press("1" if first.startswith("Answer A") else "2")
        page.wait_for_function("(b) => document.getElementById('task').hidden || "
                               "document.getElementById('input').textContent !== b", arg=before)
        n += 1
    return n


def test_one_annotator_by_keyboard_until_decided(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise("live", pair_pool(n=80), "A", "B", make_selector("random", seed=0))
    token = work.store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        n = judge_by_keyboard(page)
        assert "decision is made" in page.locator("#status").text_content()
        page.goto(f"{srv.url}/admin/{pid}?token={admin}")
        assert "Decided: A wins." in " ".join(page.locator("#decision").text_content().split())
        page.close()
    st = Workspace(Store(db)).status(pid)["decision"]
    from evalsift.stats import anytime_risk

    # A wins every item: the anytime rule stops at the first n whose risk reaches 0.2
    needed = next(k for k in range(1, 81) if anytime_risk([1.0] * k, 80, 0.2, interval=False).risk <= 0.2)
    assert st["winner"] == "A" and st["labels_used"] == n == needed


def test_two_annotators_at_once_with_overlap_two(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise("live2", pair_pool(n=80), "A", "B", make_selector("random", seed=0),
                                           overlap=2)
    tokens = [work.store.add_annotator(pid, n)[1] for n in ("alice", "bob")]
    with Server(db) as srv:
        pages = [browser.new_context().new_page() for _ in tokens]
        for page, t in zip(pages, tokens):
            page.goto(f"{srv.url}/a/{t}")
        active = list(pages)
        for _ in range(400):  # take turns, both pages open at the same time
            if not active:
                break
            for page in list(active):
                status = page.locator("#status").text_content()
                if status.startswith("No more work"):
                    active.remove(page)
                elif not page.locator("#task").is_hidden():
                    judge_by_keyboard(page, max_items=1)
                else:  # waiting for the other person (the page looks again by itself)
                    page.wait_for_timeout(200)
    judged = {}
    for j in Store(db).judgments(pid):
        judged.setdefault(j.item_id, []).append(j.annotator)
    assert all(sorted(v) == ["alice", "bob"] for v in judged.values())  # each item by both, once each
    assert Workspace(Store(db)).status(pid)["decision"]["winner"] == "A"


def test_score_project_in_the_browser(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed("scores", pair_pool(n=3), mode="score", systems=["A", "B"], scale=(1, 5))
    token = work.store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        n = 0
        while wait_task_or_done(page):
            before = page.locator("#out1").text_content()
            page.fill("#score", "5" if before.startswith("Answer A") else "2")
            page.keyboard.press("Enter")
            page.wait_for_function("(b) => document.getElementById('task').hidden || "
                                   "document.getElementById('out1').textContent !== b", arg=before)
            n += 1
    scores = sorted((j.a, j.score) for j in Store(db).judgments(pid))
    assert n == 6 and scores == [("A", 5.0)] * 3 + [("B", 2.0)] * 3


def test_hostile_outputs_render_inert(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = pair_pool(n=5, evil=True)
    pid, admin = work.create_fixed("evil", pool.subset([0]), mode="pairwise", a="A", b="B")
    token = work.store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page, dialogs = open_page(browser, f"{srv.url}/a/{token}")
        assert wait_task_or_done(page)
        shown = page.locator("#out1").text_content() + page.locator("#out2").text_content()
        assert "<script>window.__pwned = 1</script>" in shown  # shown as text
        page.wait_for_timeout(300)
        assert page.evaluate("() => window.__pwned") is None and dialogs == []
        assert page.locator("#work img").count() == 0 and page.locator("#work script").count() == 0
