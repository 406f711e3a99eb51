"""Helpers for the annotation-app tests: a real uvicorn server on 127.0.0.1, an HTTP client, pools."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

from evalsift.pool import Pool
from evalsift.web.arena import WITHHELD


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``evalsift.web.create_app(db)`` served by uvicorn in a thread on 127.0.0.1."""

    def __init__(self, db) -> None:
        import uvicorn

        from evalsift.web import create_app
        from evalsift.web.app import server_config

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(server_config(create_app(db), "127.0.0.1", self.port))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        t0 = time.time()
        while not self.server.started:
            if time.time() - t0 > 20:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


SERVE = """
import sys
sys.path.insert(0, {src!r})
from evalsift.web import serve
serve({db!r}, "127.0.0.1", {port})
"""
SRC = str(Path(__file__).resolve().parents[1] / "src")


def start_server_process(db, port: int, stderr=None):
    """``evalsift.web.serve`` in its own process on 127.0.0.1:``port``, once it answers (kill it yourself)."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", SERVE.format(src=SRC, db=str(db), port=port)],
                         stdout=subprocess.DEVNULL, stderr=stderr or subprocess.DEVNULL, text=True)
    t0 = time.time()
    while time.time() - t0 < 30:
        try:
            if call("GET", f"http://127.0.0.1:{port}/api/v1/next")[0] == 401:
                return p
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("server did not start" + (": " + p.stderr.read() if p.stderr else ""))


def call(method: str, url: str, token: str | None = None, body=None) -> tuple[int, dict]:
    """One HTTP request; ``(status, JSON body)``."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def get_text(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class AdminClient:
    """A browser-like HTTP client for the admin pages: keeps the sign-in cookie, follows redirects."""

    def __init__(self, base: str) -> None:
        import http.cookiejar

        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str, str]:
        """``(status, text, final URL)`` of a GET."""
        try:
            with self.opener.open(self.base + path, timeout=30) as r:
                return r.status, r.read().decode(), r.geturl()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.geturl()

    def sign_in(self, ref, token: str) -> tuple[int, str, str]:
        """POST the admin token as the page's form does."""
        data = urllib.parse.urlencode({"token": token}).encode()
        req = urllib.request.Request(f"{self.base}/admin/{ref}/login", data=data, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with self.opener.open(req, timeout=30) as r:
                return r.status, r.read().decode(), r.geturl()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.geturl()


def pair_pool(n: int = 60, p_a: float = 1.0, seed: int = 0, evil: bool = False) -> Pool:
    """Two systems whose outputs differ; a human score under which A wins a share ``p_a`` of items."""
    rng = np.random.default_rng(seed)
    a_wins = rng.random(n) < p_a
    out_a = [f"Answer A{k}: the cat sat on mat {k % 7}." for k in range(n)]
    out_b = [f"Answer B{k}: a dog ran by the park {k % 5}." for k in range(n)]
    if evil:
        out_a[0] = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    return Pool(item_ids=[f"i{k}" for k in range(n)], inputs=[f"Question {k}?" for k in range(n)],
                systems=["A", "B"], outputs={"A": out_a, "B": out_b},
                scores={"human": np.column_stack([a_wins, ~a_wins]).astype(float)}, human_metrics=["human"],
                name="pairs")


LEAGUE = (1.2, 0.4, 0.0, -0.4, -1.2)
"""Strengths (log-odds) of the synthetic league's systems S0 (best) ... S4."""
_STYLES = ("Plainly put, {i} is a number.", "Well, {i} sits between {p} and {n}.", "Think of {i} pebbles on a path.",
           "{i}: one more than {p}, one less than {n}.", "Numbers like {i} hum quietly.")


def league_pool(n: int = 40, k: int = 4) -> Pool:
    """``k`` systems S0..S{k-1} answering ``n`` prompts, each in its own style (the page never says which
    system wrote an output; a test's simulated person reads the truth from the store: :func:`league_key`)."""
    systems = [f"S{j}" for j in range(k)]
    return Pool(item_ids=[f"p{i}" for i in range(n)],
                inputs=[f"Prompt {i}: say something about the number {i}." for i in range(n)], systems=systems,
                outputs={s: [_STYLES[j % len(_STYLES)].format(i=i, p=i - 1, n=i + 1) for i in range(n)]
                         for j, s in enumerate(systems)}, name="league")


def league_value(item: str, first: str, second: str, strengths=LEAGUE) -> float:
    """Whether ``first`` beats ``second`` on ``item`` (1.0 or 0.0): a seeded coin per prompt and pair that
    comes up with probability ``sigmoid(strength_first - strength_second)``, the same in either order."""
    import hashlib

    s1, s2 = int(first[1:]), int(second[1:])
    lo, hi = sorted((s1, s2))
    u = int.from_bytes(hashlib.sha256(f"{item}|{lo}|{hi}".encode()).digest()[:8], "big") / 2 ** 64
    lo_wins = u < 1.0 / (1.0 + np.exp(-(strengths[lo] - strengths[hi])))
    return float(lo_wins == (s1 == lo))


def league_key(store, project_id: int, annotator_id: int) -> str:
    """The key a simulated person of the league presses for the battle they hold: '1' if the output shown
    first wins (:func:`league_value`), else '2'."""
    held = store.held(project_id, annotator_id)
    first, second = (held["a"], held["b"]) if held["shown_order"] == "ab" else (held["b"], held["a"])
    return "1" if league_value(held["item_id"], first, second) else "2"


# ---------------------------------------------------------------------------------------------- the browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Debian's chromium, headless, with nothing reaching for the network (never 'playwright install')
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (no chromium, no playwright), or None. Under
    EVALSIFT_REQUIRE_BROWSER=1 (CI) a missing browser fails the tests instead of skipping them."""
    import pytest

    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why = "browser tests need the playwright package"
    else:
        why = None if CHROMIUM else "needs Debian's chromium: apt-get install -y chromium"
    if why and os.environ.get("EVALSIFT_REQUIRE_BROWSER", "") not in ("", "0"):
        pytest.fail(f"EVALSIFT_REQUIRE_BROWSER=1 but {why}", pytrace=False)
    return why


@contextlib.contextmanager
def chromium():
    """A headless Debian chromium under Playwright, closed on exit."""
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def wait_task_or_done(page) -> bool:
    """Wait until the annotator page shows a task or says there is no more work; True when a task shows."""
    page.wait_for_function("() => !document.getElementById('task').hidden || "
                           "document.getElementById('status').textContent.startsWith('No more work')")
    return not page.locator("#task").is_hidden()


def open_page(browser, url: str):
    """A new page at ``url`` and the list that every JavaScript dialog's message lands in (each dismissed),
    so a test can assert that nothing on the page ran a script."""
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    return page, dialogs


def play_blind(work, pid, people, votes, strengths):
    """``people`` take turns asking for a battle and voting for the league's winner until ``votes`` votes are in
    or nobody gets more. Returns ``(votes, leaks, named, withheld)``: ``leaks`` counts battles handed to a person
    showing a text whose model an earlier answer had named to that same person."""
    pool_texts = {(r["item_id"], s): t for r in work.store.items(pid) for s, t in r["outputs"].items()}
    who = [work.store.annotator_by_token(work.store.add_annotator(pid, f"person{i}")[1]) for i in range(people)]
    told: list[set[str]] = [set() for _ in who]  # per person: the texts whose model they were told
    live, n, leaks, named, withheld = list(range(people)), 0, 0, 0, 0
    while live and n < votes:
        for i in list(live):
            a = work.next_for(who[i])
            if a.get("done"):
                live.remove(i)
                continue
            if set(a["outputs"]) & told[i]:
                leaks += 1
            row = work.store.assignment(a["assignment_id"])
            first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
            key = "1" if league_value(row["item_id"], first, second, strengths) else "2"
            work.submit(who[i], a["assignment_id"], answer=key)
            n += 1
            r = work.reveal(who[i], a["assignment_id"], key)
            if r is None:  # --blind-after-vote: nothing is named, nothing withheld
                continue
            if "withheld" in r:
                withheld += 1
                assert r == {"withheld": WITHHELD, "voted": "first" if key == "1" else "second"}
            else:
                named += 1
                told[i] |= {pool_texts[(row["item_id"], r["first"])], pool_texts[(row["item_id"], r["second"])]}
    return n, leaks, named, withheld
