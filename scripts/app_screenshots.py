"""Take the screenshots of the annotation app in docs/ (annotator page, admin page), from the demo data.

    python scripts/app_screenshots.py      # needs evalsift[web], playwright and Debian's chromium

A live pairwise project on the built-in demo data (systems A and B), two annotators; one judges a
few items by keyboard; then the annotator page and the admin page are captured (small PNGs).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from playwright.sync_api import sync_playwright  # noqa: E402

from _web import Server  # noqa: E402
from evalsift.io import load  # noqa: E402
from evalsift.restrict import restrict_pair  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    work = Workspace(Store(tmp / "demo.db"))
    pool = restrict_pair(load("demo"), "A", "B").pool
    pid, admin = work.create_live_pairwise("demo: A vs B", pool, "A", "B", make_selector("random", seed=3),
                                           risk=0.05, overlap=1)
    alice = work.store.add_annotator(pid, "alice")[1]
    work.store.add_annotator(pid, "bob")
    with Server(tmp / "demo.db") as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1000, "height": 560})
        page.goto(f"{srv.url}/a/{alice}")
        for _ in range(4):
            page.wait_for_selector("#task:not([hidden])")
            before = page.locator("#input").text_content()
            page.keyboard.press("1")
            page.wait_for_function("(b) => document.getElementById('input').textContent !== b", arg=before)
        page.wait_for_selector("#task:not([hidden])")
        page.screenshot(path=str(ROOT / "docs" / "annotator.png"))
        page.goto(f"{srv.url}/admin/{pid}?token={admin}")
        page.set_viewport_size({"width": 800, "height": 620})
        page.screenshot(path=str(ROOT / "docs" / "admin.png"))
        browser.close()
    print("wrote docs/annotator.png and docs/admin.png")


if __name__ == "__main__":
    main()
