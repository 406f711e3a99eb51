"""Issue 42, item 11: the arena's pages in Debian's chromium, by keyboard. ``u`` after a vote whose models were named
says on the page why nothing is undone; a withheld reveal says why the models are not named, and that vote can
be undone with ``u``; the admin page shows the both-bad count and the scales of its bars; no request of any
page (annotator, sign-in, admin) is answered 404 -- the favicon included. The screenshots are written to the
test's folder (``arena-reveal.png``, ``arena-withheld.png``, ``arena-admin.png``; docs/ holds copies)."""

import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, chromium, league_key, league_pool, open_page  # noqa: E402

_MISSING = browser_missing()
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""), pytest.mark.slow]

NO_UNDO = ("Your last vote cannot be undone: its models were shown to you after the vote, and it would be answered "
           "again knowing them.")


def watch(page, missing):
    """Record every response of ``page`` answered 404 (its URL) in ``missing``."""
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)


def wait_task(page):
    page.wait_for_function("() => !document.getElementById('task').hidden")


def test_the_arena_pages_by_keyboard_say_what_u_does_and_the_admin_page_has_its_counts_and_scales(tmp_path):
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = league_pool(n=150, k=4)
    pid, admin = work.create_arena("arena", pool, max_battles=120, first=60, stop="rank-set:1")
    aid, token = work.store.add_annotator(pid, "alice")
    # 3 models x 4 prompts, 11 battles wanted of 12: a reveal would leave too few blind ones, so it is withheld
    tight, _ = work.create_arena("tight", league_pool(n=4, k=3), max_battles=11)
    _, ttoken = work.store.add_annotator(tight, "bob")
    missing: list[str] = []
    with Server(db) as srv, chromium() as browser:
        page, dialogs = open_page(browser, "about:blank")
        watch(page, missing)
        page.set_viewport_size({"width": 1100, "height": 720})
        page.goto(f"{srv.url}/a/{token}")
        wait_task(page)
        help_text = " ".join(page.locator("#answer-help").inner_text().split())
        assert "After your vote the page names the two models, unless you may be shown these outputs again; a vote " \
               "whose models were named cannot be undone." in help_text
        # a vote by key: 900 battles, 120 wanted -- the models are named (895 left blind >= 2 x 119)
        held = work.store.held(pid, aid)
        first, second = (held["a"], held["b"]) if held["shown_order"] == "ab" else (held["b"], held["a"])
        key = league_key(work.store, pid, aid)
        page.keyboard.press(key)
        page.wait_for_selector("#reveal", state="visible")
        assert page.locator("#name1").inner_text() == f"({first})" and page.locator("#name2").inner_text() == f"({second})"
        assert page.locator("#reveal-note").inner_text() == "This vote cannot be undone now that you have seen the models."
        page.screenshot(path=str(tmp_path / "arena-reveal.png"))
        page.keyboard.press("u")  # before: nothing visible happened; now the page says why
        page.wait_for_function("(t) => document.getElementById('reveal-note').textContent === t", arg=NO_UNDO)
        page.keyboard.press("Enter")
        wait_task(page)
        page.keyboard.press("u")  # on the next battle, too
        page.wait_for_function("(t) => document.getElementById('status').textContent === t && "
                               "!document.getElementById('status').hidden", arg=NO_UNDO)
        assert len([j for j in work.store.judgments(pid) if j.kind == "human"]) == 1  # nothing was undone
        for answer in ("b", "b", "1", "2", "0"):  # two both-bad votes among five more
            wait_task(page)
            page.keyboard.press(answer)
            page.wait_for_selector("#reveal", state="visible")
            page.keyboard.press("Enter")
        wait_task(page)
        # the tight arena: the reveal is withheld and the page says why; that vote can be undone with u
        page.goto(f"{srv.url}/a/{ttoken}")
        wait_task(page)
        page.keyboard.press("1")
        page.wait_for_selector("#reveal", state="visible")
        text = page.locator("#reveal-text").inner_text()
        assert text == ("Stored. You voted: Output 1 is better. The models are not named for this battle: you may be "
                        "shown these outputs again in a later battle, and knowing who wrote them would unblind it.")
        assert page.locator("#name1").is_hidden() and not any(f"({s})" in page.locator("body").inner_text()
                                                               for s in ("S0", "S1", "S2"))
        assert page.locator("#reveal-note").inner_text() == "You can still undo this vote (u)."
        page.screenshot(path=str(tmp_path / "arena-withheld.png"))
        page.keyboard.press("u")
        page.wait_for_function("() => document.getElementById('status').textContent === "
                               "'Your last answer was withdrawn: answer this item again.'")
        assert [j for j in Store(db).judgments(tight) if j.kind == "human"] == []
        for _ in range(114):  # 114 more votes through the store's API, so the board has something to show
            a = work.next_for(work.store.annotator_by_token(token))
            work.submit(work.store.annotator_by_token(token), a["assignment_id"],
                        answer=league_key(work.store, pid, aid))
        # the admin page, signed in by typing the token
        admin_page = browser.new_page(viewport={"width": 1200, "height": 900})
        watch(admin_page, missing)
        admin_page.goto(f"{srv.url}/admin/arena")
        admin_page.locator("#token").click()
        admin_page.keyboard.type(admin)
        admin_page.keyboard.press("Enter")
        admin_page.wait_for_selector("#leaderboard")
        bothbad = admin_page.locator("#bothbad").inner_text()
        reveal = " ".join(admin_page.locator("#reveal").inner_text().split())
        score_ticks = admin_page.locator("#score-scale text").all_text_contents()
        rank_ticks = admin_page.locator("#rank-scale text").all_text_contents()
        look_ticks = admin_page.locator("#look-rank-scale text").all_text_contents()
        admin_page.screenshot(path=str(tmp_path / "arena-admin.png"), full_page=True)
        favicon = page.evaluate("() => document.querySelector('link[rel=icon]').href")
        assert dialogs == []
    assert missing == []  # every page's requests answered: the favicon is served, nothing 404s
    assert favicon.endswith("/static/favicon.svg")
    ar = Workspace(Store(db)).status(pid)["arena"]
    # 6 human battles by keyboard, 2 of them 'b', and 114 more
    assert ar["human_battles"] == 120 and ar["bothbad"] == 2
    assert bothbad == "2 of 120 human battles (each counted as a tie)"
    assert reveal.startswith(f"the person sees the two models, unless they may be shown those outputs again "
                             f"({ar['votes_revealed']} votes named, {ar['votes_withheld']} withheld)")
    # the score scale: the lowest and highest end of the drawn intervals and the middle; ranks 1-4 for 4 systems
    lo, mid, hi = (float(x) for x in score_ticks)
    assert lo < mid < hi and mid == pytest.approx((lo + hi) / 2, abs=1)
    assert rank_ticks == look_ticks == ["1", "2", "3", "4"]
    assert all((tmp_path / f).stat().st_size > 10_000 for f in ("arena-reveal.png", "arena-withheld.png",
                                                                 "arena-admin.png"))
