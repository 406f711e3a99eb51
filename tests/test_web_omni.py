"""OmniInput label projects in the annotation app: ``evalsift omni annotate`` on image and text samples, the
JSON API over real HTTP on 127.0.0.1 (the question, the image, yes/no only), the page in a real browser
(Debian's chromium driven by Playwright; never 'playwright install'), and the answers back into
``evalsift omni curve``.

The samples come from a function model on tiny spaces (no training): z = the sum of the input's values.
"""

import base64
import json
import urllib.request

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")
pytest.importorskip("uvicorn", reason="the annotation app needs evalsift[web]")

from evalsift.cli import main  # noqa: E402
from evalsift.errors import ParameterError  # noqa: E402
from evalsift.omninput import FunctionModel, InputSpace, OmniSamples, make_sampler, sample_id  # noqa: E402
from evalsift.omninput.judge import DEFAULT_QUESTIONS  # noqa: E402
from evalsift.pool import Pool  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import Server, browser_missing, call, chromium, open_page  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PER_BIN = 2

_MISSING = browser_missing()
needs_browser = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


# ---------------------------------------------------------------------------------------------- samples
def _sample(kind: str) -> OmniSamples:
    space = InputSpace(16, 5, kind="image", shape=(4, 4)) if kind == "image" else InputSpace(4, 10)
    model = FunctionModel(lambda x: x.sum(axis=1).astype(float), name="sum", output="logit")
    return make_sampler("pt", steps=200, bin_width=2.0, seed=0).run(model, space, quiet=True)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Saved samples folders: ``image`` (4x4, 5 grey levels) and ``text`` (4 digits), as the sampler left
    them (several replicas keep the same input; representatives show each once)."""
    root = tmp_path_factory.mktemp("omni")
    out = {}
    for kind in ("image", "text"):
        _sample(kind).save(root / kind)
        out[kind] = root / kind
    return out


def expected_items(folder, per_bin: int = PER_BIN) -> int:
    """per_bin per bin, fewer where a bin holds fewer distinct inputs."""
    s = OmniSamples.load(folder)
    c = s.candidates
    return sum(min(per_bin, len({sample_id(b, x) for x in c.x[c.bin == b]})) for b in s.bins.tolist())


def annotate(tmp_path, folder, *extra, capsys=None) -> dict:
    """``evalsift omni annotate --json`` into ``tmp_path/w.db``; returns the printed JSON."""
    if capsys is not None:
        capsys.readouterr()
    code = main(["omni", "annotate", "--db", str(tmp_path / "w.db"), "--samples", str(folder), "--per-bin",
                 str(PER_BIN), "--json", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out) if capsys is not None else {}


def label_project(tmp_path, folder, capsys, *extra):
    """A label project made by the CLI and one annotator: ``(db, project id, alice's token)``."""
    made = annotate(tmp_path, folder, *extra, capsys=capsys)
    db = tmp_path / "w.db"
    return db, made["project"], Store(db).add_annotator(made["project"], "alice")[1]


# ---------------------------------------------------------------------------------------------- the CLI
@pytest.mark.parametrize("kind", ["image", "text"])
def test_omni_annotate_makes_a_label_project(tmp_path, folders, capsys, kind):
    made = annotate(tmp_path, folders[kind], capsys=capsys)
    n = expected_items(folders[kind])
    samples = OmniSamples.load(folders[kind])
    assert n < PER_BIN * samples.bins.size  # an extreme bin holds a single input: fewer than per_bin x bins
    store = Store(tmp_path / "w.db")
    p = store.project(made["project"])
    question = DEFAULT_QUESTIONS["image" if kind == "image" else "tokens"]
    assert made["items"] == n and made["question"] == question and made["admin_token"]
    assert store.is_admin(p.id, made["admin_token"])
    assert (p.kind, p.mode) == ("score", "fixed")
    assert p.settings["question"] == question and p.settings["scale"] == [0.0, 1.0] and p.settings["systems"] == ["sum"]
    assert p.data["omni"]["fingerprint"] == samples.fingerprint() and p.data["omni"]["per_bin"] == PER_BIN
    items = store.items(p.id)
    assert len(items) == len({r["item_id"] for r in items}) == n
    per_bin = {}
    for r in items:
        per_bin[r["meta"]["bin"]] = per_bin.get(r["meta"]["bin"], 0) + 1
        assert r["item_id"].startswith(f"b{r['meta']['bin']}-")
        assert np.floor(r["meta"]["z"] / samples.bin_width) == r["meta"]["bin"]
        assert sum(json.loads(r["meta"]["x"])) == r["meta"]["z"]  # z is the sum of the input
        if kind == "image":
            assert r["meta"]["image"].startswith("data:image/png;base64,")
        else:
            assert "image" not in r["meta"]
            assert r["outputs"]["sum"] == " ".join(str(v) for v in json.loads(r["meta"]["x"]))
    assert set(per_bin) == set(samples.bins.tolist()) and max(per_bin.values()) == PER_BIN

    # --question overrides the default; a second project over the same samples needs its own --name
    assert main(["omni", "annotate", "--db", str(tmp_path / "w.db"), "--samples", str(folders[kind]),
                 "--per-bin", "1"]) == 2
    assert "--name" in capsys.readouterr().err
    other = annotate(tmp_path, folders[kind], "--question", "Is this a 4?", "--name", "second", capsys=capsys)
    assert other["question"] == "Is this a 4?" and other["project"] != made["project"]
    assert store.project("second").settings["question"] == "Is this a 4?"
    # without --json: what to do next, in words
    assert main(["omni", "annotate", "--db", str(tmp_path / "w.db"), "--samples", str(folders[kind]), "--per-bin",
                 "1", "--name", "third"]) == 0
    out = capsys.readouterr().out
    assert "admin token (shown once):" in out and f"question: {question}" in out and "omni curve" in out
    assert len(store.items(store.project("third").id)) == samples.bins.size


def test_representatives_show_each_input_once(folders):
    # several replicas keep the same input (the one input of an extreme bin most of all); it is shown once
    s = OmniSamples.load(folders["image"])
    c = s.candidates
    assert len({sample_id(b, x) for b, x in zip(c.bin, c.x)}) < len(c)
    reps = s.representatives(PER_BIN)
    assert len(set(reps.ids)) == len(reps.ids)


# ---------------------------------------------------------------------------------------------- the JSON API
@pytest.mark.parametrize("kind", ["image", "text"])
def test_api_gives_the_question_and_takes_yes_or_no_only(tmp_path, folders, capsys, kind):
    db, pid, token = label_project(tmp_path, folders[kind], capsys)
    store = Store(db)
    items = {r["item_id"]: r for r in store.items(pid)}
    question = store.project(pid).settings["question"]
    with Server(db) as srv:
        def next_one():
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            assert code == 200 and not a.get("done")
            assert a["question"] == question and a["kind"] == "score" and a["scale"] == [0.0, 1.0]
            assert a["output"] == items[a["item_id"]]["outputs"]["sum"]
            if kind == "image":
                assert a["image"] == items[a["item_id"]]["meta"]["image"]
                assert a["image"].startswith("data:image/png;base64,")
                assert base64.b64decode(a["image"].split(",", 1)[1]).startswith(PNG_SIGNATURE)
            else:
                assert "image" not in a
            return a

        def post(a, **body):
            return call("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"], **body})

        a1 = next_one()
        for bad in (0.5, 2, -1, True, "yes", "0.5", None, "NaN"):
            code, err = post(a1, score=bad)
            assert code == 422 and err["field"] == "score" and err["item_id"] == a1["item_id"], (bad, err)
            assert "yes (1) or no (0)" in err["error"]
        code, err = post(a1)  # no score at all
        assert code == 422 and err["field"] == "score"
        assert store.judgment_rows(pid) == []  # nothing stored for a refused answer
        assert store.assignment(a1["assignment_id"])["state"] == "leased"  # still the person's to answer
        assert post(a1, score=1, idempotency_key="k1") == post(a1, score=1, idempotency_key="k1")  # a double submit
        a2 = next_one()
        assert post(a2, score=0)[0] == 200
        a3 = next_one()
        code, err = post(a3, score="1")  # a score is a JSON number: the string "1" is refused, saying so
        assert code == 422 and err["field"] == "score" and "JSON number" in err["error"]
        assert post(a3, score=1)[0] == 200
        a4 = next_one()
        assert post(a4, score=0)[0] == 200
        a5 = next_one()
        code, res = post(a5, skip=True)
        assert code == 200 and res["stored"]
        assert len({a["item_id"] for a in (a1, a2, a3, a4, a5)}) == 5
    got = [(j.item_id, j.status, j.detail.get("score"), j.annotator, j.is_score) for j in Store(db).judgments(pid)]
    assert got == [(a1["item_id"], "done", 1.0, "alice", True), (a2["item_id"], "done", 0.0, "alice", True),
                   (a3["item_id"], "done", 1.0, "alice", True), (a4["item_id"], "done", 0.0, "alice", True),
                   (a5["item_id"], "skipped", None, "alice", True)]
    assert all(isinstance(s, float) for _, st, s, *_ in got if st == "done")


def test_a_graded_label_project_takes_grades_in_0_1(tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["text"], capsys, "--graded")
    store = Store(db)
    assert store.project(pid).settings["graded"] is True
    with Server(db) as srv:
        def post(a, **body):
            return call("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"], **body})

        code, a = call("GET", f"{srv.url}/api/v1/next", token)
        assert code == 200 and a["graded"] is True
        for bad in (1.5, -0.25, True, "yes", None, "NaN"):
            code, err = post(a, score=bad)
            assert code == 422 and err["field"] == "score" and "from 0 (no) to 1 (yes)" in err["error"], (bad, err)
        assert post(a, score=0.75)[0] == 200
        code, b = call("GET", f"{srv.url}/api/v1/next", token)
        assert post(b, score=1)[0] == 200  # yes still answers
    assert [j.detail["score"] for j in Store(db).judgments(pid)] == [0.75, 1.0]


def test_only_label_projects_are_held_to_yes_or_no(tmp_path):
    """The check is on projects with a question; a plain score project on 0-1 still takes 0.5."""
    pool = Pool(item_ids=["i0", "i1"], inputs=["x", "y"], systems=["m"], outputs={"m": ["out 0", "out 1"]}, name="p")
    work = Workspace(Store(tmp_path / "w.db"))
    plain, _ = work.create_fixed("plain", pool, mode="score", scale=(0, 1))
    label, _ = work.create_fixed("label", pool, mode="score", scale=(0, 100), question="Is it fine?")
    assert work.store.project(label).settings["scale"] == [0.0, 1.0]  # a label project's scale is 0-1
    for pid, ok in ((plain, True), (label, False)):
        aid, _ = work.store.add_annotator(pid, "alice")
        alice = {"id": aid, "project_id": pid, "name": "alice"}
        a = work.next_for(alice)
        if ok:
            work.submit(alice, a["assignment_id"], score=0.5)
        else:
            for bad in (0.5, np.float64(0.5), 1.5, float("nan"), np.bool_(True), [1]):
                with pytest.raises(ParameterError, match=r"yes \(1\) or no \(0\)"):
                    work.submit(alice, a["assignment_id"], score=bad)
            work.submit(alice, a["assignment_id"], score=np.int64(1))
    assert [j.score for j in work.store.judgments(plain)] == [0.5]
    assert [j.score for j in work.store.judgments(label)] == [1.0]


def test_annotator_page_allows_data_images_and_escapes_the_question(tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["image"], capsys, "--question", "Is <b>this</b> a 1?")
    with Server(db) as srv:
        with urllib.request.urlopen(f"{srv.url}/a/{token}", timeout=30) as r:
            csp = r.headers["Content-Security-Policy"]
            html = r.read().decode()
    assert "img-src 'self' data:" in csp and "default-src 'self'" in csp and "object-src 'none'" in csp
    assert 'data-label="1"' in html and 'id="image"' in html and 'id="byes"' in html and 'id="bno"' in html
    assert "Is &lt;b&gt;this&lt;/b&gt; a 1?" in html and "<b>this</b>" not in html


# ---------------------------------------------------------------------------------------------- the browser
@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def wait_for_item(page, judged: int, skipped: int = 0) -> None:
    """Wait until the page shows an item after ``judged`` answers and ``skipped`` skips ("N of M judged · K
    skipped": a skip is not a judgment)."""
    page.wait_for_function("([n, k]) => !document.getElementById('task').hidden && "
                           "document.getElementById('progress').textContent.startsWith(n + ' of ') && "
                           "document.getElementById('progress').textContent.endsWith(' judged \u00b7 ' + k + ' skipped')",
                           arg=[judged, skipped])


@needs_browser
def test_image_label_project_in_the_browser(browser, tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["image"], capsys, "--question", "Is this mostly dark?")
    by_image = {r["meta"]["image"]: r["item_id"] for r in Store(db).items(pid)}
    with Server(db) as srv:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(f"{srv.url}/a/{token}")
        shown = []
        for key, judged in (("y", 0), ("n", 1)):
            wait_for_item(page, judged)
            assert page.locator("#question").text_content() == "Is this mostly dark?"
            assert page.locator("#image").is_visible() and page.locator("#out1").is_hidden()
            page.wait_for_function("() => { const i = document.getElementById('image'); "
                                   "return i.complete && i.naturalWidth > 0; }")
            assert page.evaluate("() => document.getElementById('image').naturalWidth") == 4 * 16  # 4 px x 16
            assert page.locator("#byes").is_visible() and page.locator("#bno").is_visible()
            shown.append(by_image[page.locator("#image").get_attribute("src")])
            page.keyboard.press(key)
        wait_for_item(page, 2)
        page.close()
    assert errors == []
    got = [(j.item_id, j.score) for j in Store(db).judgments(pid)]
    assert len(set(shown)) == 2 and got == [(shown[0], 1.0), (shown[1], 0.0)]


@needs_browser
def test_text_label_project_in_the_browser(browser, tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["text"], capsys)
    texts = {r["outputs"]["sum"]: r["item_id"] for r in Store(db).items(pid)}
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        shown = []
        for key, judged, skipped in (("y", 0, 0), ("s", 1, 0), ("n", 1, 1)):  # before: the skip counted as judged
            wait_for_item(page, judged, skipped)
            assert page.locator("#question").text_content() == DEFAULT_QUESTIONS["tokens"]
            assert page.locator("#out1").is_visible() and page.locator("#image").is_hidden()
            assert page.locator("#input").count() == 0  # the text is shown once
            shown.append(texts[page.locator("#out1").text_content()])
            page.keyboard.press(key)
        wait_for_item(page, 2, 1)
        assert page.locator("#progress").text_content() == f"2 of {expected_items(folders['text'])} judged \u00b7 1 skipped"
        page.locator("#byes").click()  # the buttons answer too
        wait_for_item(page, 3, 1)
        page.close()
    got = [(j.item_id, j.status, j.score) for j in Store(db).judgments(pid)]
    assert got[:3] == [(shown[0], "done", 1.0), (shown[1], "skipped", None), (shown[2], "done", 0.0)]
    assert got[3][1:] == ("done", 1.0) and len(got) == 4


@needs_browser
def test_graded_label_project_by_keyboard_and_buttons_in_the_browser(browser, tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["text"], capsys, "--graded")
    texts = {r["outputs"]["sum"]: r["item_id"] for r in Store(db).items(pid)}
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        shown = []
        for key, judged in (("3", 0), ("y", 1), ("0", 2)):  # a grade, yes, a grade: typed as a person would
            wait_for_item(page, judged)
            assert page.locator("#g0").is_visible() and page.locator("#g4").is_visible()
            shown.append(texts[page.locator("#out1").text_content()])
            page.keyboard.press(key)
        wait_for_item(page, 3)
        shown.append(texts[page.locator("#out1").text_content()])
        for _ in range(30):  # the grade buttons take the keyboard too: Tab to "2", then Enter
            if page.evaluate("document.activeElement && document.activeElement.id") == "g2":
                break
            page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "g2", "Tab never reached the grade button 2"
        page.keyboard.press("Enter")
        wait_for_item(page, 4)
        page.close()
    got = [(j.item_id, j.score) for j in Store(db).judgments(pid)]
    assert got == [(shown[0], 0.75), (shown[1], 1.0), (shown[2], 0.0), (shown[3], 0.5)]


@needs_browser
def test_a_yes_no_project_shows_no_grades(browser, tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["text"], capsys)
    with Server(db) as srv:
        page = browser.new_page()
        page.goto(f"{srv.url}/a/{token}")
        wait_for_item(page, 0)
        assert page.locator("#g0").count() == 0
        page.keyboard.press("2")  # no grade on a yes/no project: nothing is sent
        page.wait_for_timeout(300)
        page.keyboard.press("n")
        wait_for_item(page, 1)
        page.close()
    assert [j.score for j in Store(db).judgments(pid)] == [0.0]


@needs_browser
def test_hostile_text_on_a_label_page_is_shown_not_run(browser, tmp_path):
    evil = "<script>alert(1)</script><img src=x onerror=\"window.__pwned = 1\">"
    pool = Pool(item_ids=["e0"], inputs=[evil], systems=["m"], outputs={"m": [evil]}, name="evil")
    db = tmp_path / "w.db"
    work = Workspace(Store(db))
    pid, _ = work.create_fixed("evil", pool, mode="score", question="<script>alert(2)</script> Is this harmful?")
    token = work.store.add_annotator(pid, "alice")[1]
    with Server(db) as srv:
        page, dialogs = open_page(browser, f"{srv.url}/a/{token}")
        wait_for_item(page, 0)
        assert page.locator("#out1").text_content() == evil  # shown as text
        assert page.locator("#question").text_content() == "<script>alert(2)</script> Is this harmful?"
        page.wait_for_timeout(300)
        assert dialogs == [] and page.evaluate("() => window.__pwned") is None
        assert page.locator("#work script").count() == 0 and page.locator("#work img:not(#image)").count() == 0
        assert page.locator("#image").is_hidden()
        page.keyboard.press("n")
        page.wait_for_function("() => document.getElementById('status').textContent.startsWith('No more work')")
        page.close()
    assert [(j.item_id, j.score) for j in Store(db).judgments(pid)] == [("e0", 0.0)]


# ---------------------------------------------------------------------------------------------- end to end
def test_answers_through_the_api_feed_omni_curve(tmp_path, folders, capsys):
    db, pid, token = label_project(tmp_path, folders["image"], capsys)
    bins = {r["item_id"]: r["meta"]["bin"] for r in Store(db).items(pid)}
    cut = int(np.median(list(bins.values())))
    answered = 0
    with Server(db) as srv:
        while True:
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            assert code == 200
            if a.get("done"):
                assert a["final"] and a["progress"]["judged"] == answered
                break
            code, _ = call("POST", f"{srv.url}/api/v1/judgments", token,
                           {"assignment_id": a["assignment_id"], "score": int(bins[a["item_id"]] >= cut)})
            assert code == 200
            answered += 1
    assert answered == len(bins) == expected_items(folders["image"])
    out = tmp_path / "curve"
    assert main(["omni", "curve", "--samples", str(folders["image"]), "--judgments", f"db:{db}", "--out", str(out),
                 "--boot", "50"]) == 0
    res = json.loads((out / "results.json").read_text())
    m = res["models"][0]
    assert m["n_judgments"] == answered and res["judge"]["project"] == pid and res["judge"]["kind"] == "db"
    assert sum(m["positives"]) == sum(b >= cut for b in bins.values()) and sum(m["judged"]) == answered
    lines = (out / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == answered and {json.loads(x)["annotator"] for x in lines} == {"alice"}
