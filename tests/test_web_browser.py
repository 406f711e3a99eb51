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

from _web import (Server, browser_missing, chromium, league_key, league_pool, league_value, open_page,  # noqa: E402
                  pair_pool, wait_task_or_done)

_MISSING = browser_missing()
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""), pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


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
    the league chooses, check the two models named after the vote and go on (Enter, or the "Next battle"
    button); False when there is no battle. Checks that no system is named on the page before the vote."""
    if not wait_task_or_done(page):
        return False
    shown = "".join(page.locator(f"#{i}").text_content() for i in ("input", "out1", "out2"))
    assert not any(s in shown for s in systems)  # blind: no system is named on the page
    key = league_key(store, pid, aid)
    held = store.held(pid, aid)
    names = (held["a"], held["b"]) if held["shown_order"] == "ab" else (held["b"], held["a"])
    if mouse:  # the buttons, as a person with a mouse answers
        page.locator(f"#b{key}").click()
    else:
        page.keyboard.press(key)
    # after the vote the two models are named (the arena's default) until Enter or the button goes on -- or, when
    # the person may be shown these outputs again (the vote's stored ``revealed`` is false), the page says so
    page.wait_for_selector("#reveal", state="visible")
    vote = [j for j in store.judgments(pid) if j.kind == "human"][-1]
    if vote.detail["revealed"]:
        assert (page.locator("#name1").inner_text(), page.locator("#name2").inner_text()) == tuple(f"({n})" for n in names)
    else:
        assert page.locator("#name1").is_hidden() and "The models are not named for this battle: you may be shown " \
            "these outputs again" in page.locator("#reveal-text").inner_text()
        assert not any(f"({s})" in page.locator("body").inner_text() for s in systems)
    if mouse:
        page.locator("#bnext").click()
    else:
        page.keyboard.press("Enter")
    page.wait_for_function("(b) => document.getElementById('reveal').hidden && (document.getElementById('task')"
                           ".hidden || ['input', 'out1', 'out2'].map((i) => document.getElementById(i).textContent)"
                           ".join('') !== b)", arg=shown)
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
    work = Workspace(Store(db))
    used = [e["item_id"] for e in work.session(pid).decision().judged if e["verdict"]]
    assert used and all(sorted(judged[i]) == ["alice", "bob"] for i in used)  # each item used: by both, once each
    # the one who finished an item first went on to the next (issue 42: nobody waits), so when the decision
    # came at most one item ahead of it had one of its two people
    assert all(len(v) == len(set(v)) for v in judged.values()) and len(judged) - len(used) <= 1
    assert work.status(pid)["decision"]["winner"] == "A"


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


# ---------------------------------------------------------------------------------------------- issue 32 part 5
def progress_text(page):
    return page.locator("#progress").text_content()


def held_names(store, pid, aid):
    """The models of the battle the person holds, in the order the page shows their outputs."""
    held = store.held(pid, aid)
    return (held["a"], held["b"]) if held["shown_order"] == "ab" else (held["b"], held["a"])


def test_an_arena_reveals_the_models_after_each_vote_and_takes_both_bad(browser, tmp_path):
    """Chatbot Arena's flow by keyboard: a vote, then the two models named (which output was which, and what
    the person voted) until Enter; 'b' (both are bad) is stored as a tie with winner 'tie (bothbad)', read
    back through 'annotate export'; nothing names a model before the vote; a skip reveals nothing and is
    counted apart from the judged ones."""
    import json

    from evalsift.cli import main

    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pool = league_pool(n=30, k=4)
    pid, admin = work.create_arena("arena", pool, max_battles=40)
    aid, token = work.store.add_annotator(pid, "alice")
    systems = list(pool.systems)
    with Server(db) as srv:
        page, dialogs = open_page(browser, f"{srv.url}/a/{token}")
        page.set_viewport_size({"width": 1100, "height": 760})
        assert wait_task_or_done(page)
        body = page.locator("body").inner_text()
        assert not any(s in body for s in systems) and page.locator("#reveal").is_hidden()  # blind before the vote
        assert progress_text(page) == "0 of at most 40 judged \u00b7 0 skipped"
        assert "b if both are bad" in " ".join(page.locator("#answer-help").inner_text().split())
        assert page.locator("#bbothbad").inner_text() == "b: Both are bad"
        # a vote with the key of the better output: the models are named
        first, second = held_names(work.store, pid, aid)
        key = league_key(work.store, pid, aid)
        page.keyboard.press(key)
        page.wait_for_selector("#reveal", state="visible")
        assert page.locator("#name1").inner_text() == f"({first})" and page.locator("#name2").inner_text() == f"({second})"
        winner = first if key == "1" else second
        assert page.locator("#reveal-text").inner_text() == (
            f"Output 1 was {first}, Output 2 was {second}. You voted: Output {key} is better ({winner}).")
        assert progress_text(page) == "1 of at most 40 judged \u00b7 0 skipped"
        page.screenshot(path=str(tmp_path / "arena-reveal.png"))
        page.keyboard.press("2")  # the answer keys do nothing while the models are shown
        page.keyboard.press("u")  # nor undo: a revealed vote stays
        page.wait_for_timeout(300)
        assert len([j for j in Store(db).judgments(pid) if j.kind == "human"]) == 1
        assert page.locator("#bundo").is_hidden() and page.locator("#b1").is_disabled()
        before = page.locator("#out1").text_content() + page.locator("#input").text_content()
        page.keyboard.press("Enter")  # the next battle, blind again
        page.wait_for_function("(b) => !document.getElementById('task').hidden && document.getElementById('reveal')"
                               ".hidden && document.getElementById('out1').textContent + "
                               "document.getElementById('input').textContent !== b", arg=before)
        assert page.locator("#name1").is_hidden() and not any(s in page.locator("body").inner_text() for s in systems)
        # both are bad
        first, second = held_names(work.store, pid, aid)
        page.keyboard.press("b")
        page.wait_for_selector("#reveal", state="visible")
        assert page.locator("#reveal-text").inner_text() == (
            f"Output 1 was {first}, Output 2 was {second}. You voted: both are bad.")
        page.locator("#bnext").click()  # the button goes on too
        page.wait_for_selector("#reveal", state="hidden")
        assert wait_task_or_done(page)
        # a skip: no names, counted apart
        page.keyboard.press("s")
        page.wait_for_function("() => document.getElementById('progress').textContent === "
                               "'2 of at most 40 judged \u00b7 1 skipped' && !document.getElementById('task').hidden")
        assert page.locator("#reveal").is_hidden() and not any(s in page.locator("body").inner_text() for s in systems)
        assert dialogs == []
    out = tmp_path / "judgments.jsonl"
    assert main(["annotate", "export", "--db", str(db), "--project", "arena", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines() if json.loads(x)["kind"] == "human"]
    assert [(r["verdict"], r["status"]) for r in rows][1:] == [("tie", "done"), (None, "skipped")]
    assert rows[1]["detail"]["winner"] == "tie (bothbad)" and rows[1]["detail"]["answer"] == "bothbad"
    assert (rows[1]["a"], rows[1]["b"]) in ((first, second), (second, first))
    assert (tmp_path / "arena-reveal.png").stat().st_size > 10_000


def test_a_blind_after_vote_arena_never_names_the_models(browser, tmp_path):
    """annotate new --arena --blind-after-vote: a vote goes straight to the next battle; no model is named."""
    from evalsift.cli import main

    db = tmp_path / "w.db"
    assert main(["annotate", "new", "--db", str(db), "--arena", "--data", "demo", "--name", "blind",
                 "--blind-after-vote", "--max-labels", "30", "--json"]) == 0
    store = Store(db)
    pid = store.project("blind").id
    systems = store.project(pid).settings["systems"]
    token = store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        for k, key in enumerate(("1", "b", "0")):
            assert wait_task_or_done(page)
            page.wait_for_function("(n) => document.getElementById('progress').textContent === "
                                   "n + ' of at most 30 judged \u00b7 0 skipped'", arg=k)
            shown = page.locator("#input").text_content() + page.locator("#out1").text_content()
            page.keyboard.press(key)
            page.wait_for_function("(b) => !document.getElementById('task').hidden && "
                                   "document.getElementById('input').textContent + "
                                   "document.getElementById('out1').textContent !== b", arg=shown)
            assert page.locator("#reveal").is_hidden() and page.locator("#name1").is_hidden()
            assert not any(f"({s})" in page.locator("body").inner_text() for s in systems)
        page.wait_for_function("() => document.getElementById('progress').textContent === "
                               "'3 of at most 30 judged \u00b7 0 skipped'")
    js = [j for j in Store(db).judgments(pid) if j.kind == "human"]
    assert [j.verdict for j in js][1:] == ["tie", "tie"] and js[1].detail["winner"] == "tie (bothbad)"
    assert not any(j.detail.get("revealed") for j in js)


def test_pairwise_and_score_pages_count_skips_apart(browser, tmp_path):
    """'N of M judged · K skipped' on a fixed pairwise page (key s), a score page (the Skip button: s is a
    character in the score field) and a live pairwise page ('of at most' its cap). Before, a skip was counted
    as judged."""
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    ab, _ = work.create_fixed("ab", pair_pool(n=4), mode="pairwise", a="A", b="B")
    sc, _ = work.create_fixed("sc", pair_pool(n=3), mode="score", systems=["A"], scale=(1, 5))
    lv, _ = work.create_live_pairwise("lv", pair_pool(n=80), "A", "B", make_selector("random", seed=0), max_labels=60)
    tokens = [work.store.add_annotator(p, "alice")[1] for p in (ab, sc, lv)]

    def wait_progress(page, text):
        page.wait_for_function("(t) => document.getElementById('progress').textContent === t && "
                               "!document.getElementById('task').hidden", arg=text)

    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{tokens[0]}")
        wait_progress(page, "0 of 4 judged \u00b7 0 skipped")
        page.keyboard.press("s")
        wait_progress(page, "0 of 4 judged \u00b7 1 skipped")
        page.keyboard.press("1")
        wait_progress(page, "1 of 4 judged \u00b7 1 skipped")
        page.goto(f"{srv.url}/a/{tokens[1]}")
        wait_progress(page, "0 of 3 judged \u00b7 0 skipped")
        page.keyboard.type("4")
        page.keyboard.press("Enter")
        wait_progress(page, "1 of 3 judged \u00b7 0 skipped")
        page.locator("#bskip").click()
        wait_progress(page, "1 of 3 judged \u00b7 1 skipped")
        page.goto(f"{srv.url}/a/{tokens[2]}")
        wait_progress(page, "0 of at most 60 judged \u00b7 0 skipped")
        page.keyboard.press("s")
        wait_progress(page, "0 of at most 60 judged \u00b7 1 skipped")
    assert sorted((p, j.status) for p in (ab, sc, lv) for j in Store(db).judgments(p)) == [
        (ab, "done"), (ab, "skipped"), (sc, "done"), (sc, "skipped"), (lv, "skipped")]
