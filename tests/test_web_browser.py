"""The annotation app in a real browser (Debian's chromium driven by Playwright; never 'playwright install').

One annotator completes a live pairwise project by keyboard until the Session decides; two annotators
at once with overlap 2; a score project; model outputs with <script> and <img onerror> render inert.
"""

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, chromium, league_key, league_pool, league_value, open_page, pair_pool  # noqa: E402

_MISSING = browser_missing()
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""), pytest.mark.slow]


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


def sign_in_by_typing(browser, url, token, wait_for):
    """An admin page at ``url``, signed in as a person does: click the token field, type it, press Enter."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(url)
    page.locator("#token").click()
    page.keyboard.type(token)
    page.keyboard.press("Enter")
    page.wait_for_selector(wait_for)
    return page


def wait_for_decided(admin_page):
    """Wait for the admin page's own refresh (every 4 s while open) to show the decision, as a person watching it
    does. Reloading from the test instead races that refresh: a reload aborted by the page's own one fails with
    net::ERR_ABORTED (seen once in CI)."""
    from playwright.sync_api import expect

    expect(admin_page.locator("#decision")).to_contain_text("Decided", timeout=30_000)


def answer_battle(page, store, pid, aid, systems, mouse=False):
    """Answer the arena battle on the page with the key (or, ``mouse``, the button) the simulated person of
    the league chooses; False when there is none. Checks that no system is named on the page."""
    if not wait_task_or_done(page):
        return False
    shown = "".join(page.locator(f"#{i}").text_content() for i in ("input", "out1", "out2"))
    assert not any(s in shown for s in systems)  # blind: no system is named on the page
    key = league_key(store, pid, aid)
    if mouse:  # the buttons, as a person with a mouse answers
        page.locator(f"#b{key}").click()
    else:
        page.keyboard.press(key)
    page.wait_for_function("(b) => document.getElementById('task').hidden || ['input', 'out1', 'out2']"
                           ".map((i) => document.getElementById(i).textContent).join('') !== b", arg=shown)
    return True


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
        page.goto(f"{srv.url}/admin/{pid}#token={admin}")  # the link 'annotate new' prints
        page.wait_for_selector("#decision")
        assert "Decided: A wins." in " ".join(page.locator("#decision").text_content().split())
        assert admin not in page.url  # signed in; the token is gone from the address bar
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
    """Scores typed with the keyboard into the field the page focuses, then Enter: stored exactly as typed
    (before, the field never had focus and every keyboard score was stored as 0.0)."""
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
            page.keyboard.type("5" if before.startswith("Answer A") else "2.5")
            page.keyboard.press("Enter")
            page.wait_for_function("(b) => document.getElementById('task').hidden || "
                                   "document.getElementById('out1').textContent !== b", arg=before)
            n += 1
    scores = sorted((j.a, j.score) for j in Store(db).judgments(pid))
    assert n == 6 and scores == [("A", 5.0)] * 3 + [("B", 2.5)] * 3


def test_empty_or_out_of_range_scores_are_refused_on_the_page(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed("scores", pair_pool(n=2), mode="score", systems=["A"], scale=(0, 100))
    token = work.store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        assert wait_task_or_done(page)
        first = page.locator("#out1").text_content()
        page.keyboard.press("Enter")  # nothing typed
        assert page.locator("#score-error").text_content() == "Type a score from 0 to 100 first."
        page.keyboard.type("150")
        page.keyboard.press("Enter")
        assert page.locator("#score-error").text_content() == "The score must be from 0 to 100; you typed 150."
        for _ in range(3):
            page.keyboard.press("Backspace")
        page.keyboard.type("70")
        page.keyboard.press("Enter")
        page.wait_for_function("(b) => document.getElementById('out1').textContent !== b || "
                               "document.getElementById('task').hidden", arg=first)
    assert [j.score for j in Store(db).judgments(pid)] == [70.0]  # only the valid score was sent


def test_reload_undo_guidelines_and_the_admin_page_by_keyboard(browser, tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_fixed("ab", pair_pool(n=6), mode="pairwise", a="A", b="B",
                                   guidelines="Prefer the answer that names the score.\n<b>not bold</b>")
    token = work.store.add_annotator(pid, "alice")[1]
    work.store.add_annotator(pid, "bob")
    with Server(db) as srv:
        page, dialogs = open_page(browser, f"{srv.url}/a/{token}")
        assert page.locator("#guidelines pre").text_content() == "Prefer the answer that names the score.\n<b>not bold</b>"
        assert wait_task_or_done(page)
        first = page.locator("#input").text_content()
        page.reload()  # the item stays this person's: the page shows it again (before: "no more work" for 600 s)
        assert wait_task_or_done(page) and page.locator("#input").text_content() == first
        out1 = page.locator("#out1").text_content()
        page.keyboard.press("1")
        page.wait_for_function("(b) => document.getElementById('input').textContent !== b", arg=first)
        page.keyboard.press("u")  # undo: the first item comes back
        page.wait_for_function("(b) => document.getElementById('input').textContent === b", arg=first)
        assert "withdrawn" in page.locator("#status").text_content()
        page.keyboard.press("2")  # the corrected answer
        page.wait_for_function("(b) => document.getElementById('input').textContent !== b", arg=first)
        # the admin signs in by typing the token into the form
        admin_page = browser.new_page()
        admin_page.goto(f"{srv.url}/admin/ab")
        admin_page.locator("#token").click()
        admin_page.keyboard.type(admin)
        admin_page.keyboard.press("Enter")
        admin_page.wait_for_selector("#progress-table")
        rows = [r.locator("td").all_text_contents() for r in admin_page.locator("#progress-table tbody tr").all()]
        # name, judged, skipped, undone, open now, last asked: alice judged 1 (1 undone) and holds 1 item
        assert rows[0][:5] == ["alice", "1", "0", "1", "1"] and rows[1] == ["bob", "0", "0", "0", "0", "never"], rows
        assert admin not in admin_page.url and dialogs == []
    stored = Store(db).judgment_rows(pid)
    shown_a_first = out1.startswith("Answer A")
    assert [(r["verdict"], r["retracted_at"] is not None) for r in stored] == [
        ("a" if shown_a_first else "b", True), ("b" if shown_a_first else "a", False)]


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


@pytest.mark.parametrize("sampling", ["uniform", "neyman"])
def test_a_live_project_with_a_proxy_by_keyboard_and_its_admin_page(browser, tmp_path, sampling):
    """A live project sharpened by a proxy (stored with it): a person answers with the keys, the admin signs
    in by typing the token, sees the proxy named and no 'at least N more' count while the decision is open,
    then the decision -- the same one the Session reaches with the same proxy on the same verdicts. With
    ``--design neyman`` the items come from the design's draws and the page has a "design" row."""
    from evalsift.oracle import MetricOracle
    from evalsift.proxy import MetricProxy
    from evalsift.session import Session

    pool = pair_pool(n=120, p_a=0.8)
    human = pool.scores["human"]
    diff = (human[:, 0] - human[:, 1]) + np.random.default_rng(1).normal(0, 0.7, pool.n_items)  # a noisy proxy
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, admin = work.create_live_pairwise("px", pool, "A", "B", make_selector("random", seed=0),
                                           proxy=MetricProxy(diff, name="auto"), sampling=sampling)
    token = work.store.add_annotator(pid, "alice")[1]
    truth = {iid: human[k, 0] > 0 for k, iid in enumerate(pool.item_ids)}

    def answer(page, k):
        n = 0
        while n < k and wait_task_or_done(page):
            before = page.locator("#input").text_content()
            item = f"i{before.split()[1].rstrip('?')}"  # "Question 17?" -> i17
            a_first = page.locator("#out1").text_content().startswith("Answer A")
            page.keyboard.press("1" if truth[item] == a_first else "2")
            page.wait_for_function("(b) => document.getElementById('task').hidden || "
                                   "document.getElementById('input').textContent !== b", arg=before)
            n += 1
        return n

    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        n = answer(page, 3)
        admin_page = sign_in_by_typing(browser, f"{srv.url}/admin/px", admin, "#decision")
        open_text = " ".join(admin_page.locator("#decision").text_content().split())
        assert "with a proxy, how many depends on the items to come" in open_text and "at least" not in open_text
        assert admin_page.locator("#proxy").text_content().startswith("auto")
        assert (admin_page.locator("#design").count() == 1) == (sampling == "neyman")
        if sampling == "neyman":
            assert "where people disagree with it" in admin_page.locator("#design").text_content()
        n += answer(page, 200)
        assert "decision is made" in page.locator("#status").text_content()
        wait_for_decided(admin_page)
        assert "Decided: A wins." in " ".join(admin_page.locator("#decision").text_content().split())
        admin_page.screenshot(path=str(tmp_path / "admin-proxy.png"), full_page=True)
    d = Session(pool, make_selector("random", seed=0), a="A", b="B", risk=0.2,
                proxy=MetricProxy(diff, name="auto"), sampling=sampling).run(MetricOracle("human"))
    st = Workspace(Store(db)).status(pid)["decision"]
    assert st["winner"] == d.winner == "A" and st["labels_used"] == d.labels_used == n and st["proxy"] == "auto"
    assert st["method"] == d.method == ("random" if sampling == "uniform" else "random+neyman")
    assert (tmp_path / "admin-proxy.png").stat().st_size > 10_000


def test_an_arena_by_keyboard_with_its_live_leaderboard(browser, tmp_path):
    """Blind battles among four systems, answered with the keys; the admin signs in by typing the token and
    sees the live leaderboard (a row per system with its interval and rank-set) while it is open, then the
    answer once the stop rule is met; the person is then told there is no more work."""
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = league_pool(n=150, k=4)
    pid, admin = work.create_arena("arena", pool, max_battles=800, first=30, stop="top-k:1")
    aid, token = work.store.add_annotator(pid, "alice")

    def battle(page, mouse=False):
        return answer_battle(page, work.store, pid, aid, pool.systems, mouse)

    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        n = sum(battle(page, mouse=k < 5) for k in range(40))  # the first five with the mouse, then the keys
        admin_page = sign_in_by_typing(browser, f"{srv.url}/admin/arena", admin, "#leaderboard")
        assert admin_page.locator("#leaderboard tbody tr").count() == 4
        assert " ".join(admin_page.locator("#decision").text_content().split()).startswith("Open: 40 of at most 800")
        while battle(page):
            n += 1
        assert "the question is answered" in page.locator("#status").text_content()
        wait_for_decided(admin_page)
        admin_page.wait_for_selector("#leaderboard")
        text = " ".join(admin_page.locator("#decision").text_content().split())
        admin_page.screenshot(path=str(tmp_path / "arena-admin.png"), full_page=True)
    ar = Workspace(Store(db)).status(pid)["arena"]
    assert ar["answered"] and ar["stop"]["at"] == n and ar["stop"]["top"] == ["S0"]
    assert text == f"Decided: answered after {n} human battles: top-k:1 holds; the top: S0."
    assert (tmp_path / "arena-admin.png").stat().st_size > 10_000


def test_a_neyman_arena_by_keyboard_names_its_strata(browser, tmp_path):
    """--allocation neyman with a judge: a person answers 20 blind battles with the keys; the admin, signed
    in by typing, sees the live board and how the battles are drawn (the rule and its strata)."""
    from evalsift.oracle import Judgment

    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = league_pool(n=40, k=4)
    systems = list(pool.systems)
    judge = [Judgment(item_id=item, a=a, b=b, verdict="a" if league_value(item, a, b) else "b", annotator="j",
                      kind="llm") for i, a in enumerate(systems) for b in systems[i + 1:] for item in pool.item_ids]
    pid, admin = work.create_arena("ney", pool, max_battles=100, allocation="neyman", stop="rank-set:1",
                                   judges={"judge:exact": judge})
    aid, token = work.store.add_annotator(pid, "alice")
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        assert sum(answer_battle(page, work.store, pid, aid, systems) for _ in range(20)) == 20
        admin_page = sign_in_by_typing(browser, f"{srv.url}/admin/ney", admin, "#leaderboard")
        drawn = " ".join(admin_page.locator("#battles").text_content().split())
        assert admin_page.locator("#leaderboard tbody tr").count() == 4
    strata = Workspace(Store(db)).status(pid)["arena"]["strata"]
    assert drawn.startswith("20 (drawn by the neyman rule: ") and strata in drawn and "strata" in strata
