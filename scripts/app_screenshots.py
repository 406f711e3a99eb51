"""Take the screenshots of the annotation app in docs/ (annotator page, admin page, omni label page).

    python scripts/app_screenshots.py             # all three; needs evalsift[web], playwright and Debian's chromium
    python scripts/app_screenshots.py omni        # only docs/omni-annotator.png (or: pairwise)

pairwise: a live pairwise project on the built-in demo data (systems A and B), two annotators; one
judges a few items by keyboard; then the annotator page and the admin page are captured
(docs/annotator.png, docs/admin.png).

omni: the built-in ``digits-lr`` model (logistic regression, 0 vs 1 on 8x8 digits) sampled with
parallel tempering; a label project over representatives of its highest-logit bin (the inputs the
model is surest are a 1), asked "Is this a handwritten 1?"; one annotator answers two by keyboard,
then the page is captured with the next image (docs/omni-annotator.png).
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


def pairwise(tmp: Path) -> None:
    """docs/annotator.png and docs/admin.png."""
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
        page.goto(f"{srv.url}/admin/{pid}#token={admin}")  # the link 'annotate new' prints
        page.wait_for_selector("#progress-table")
        page.set_viewport_size({"width": 800, "height": 760})
        page.screenshot(path=str(ROOT / "docs" / "admin.png"))
        browser.close()
    print("wrote docs/annotator.png and docs/admin.png")


def omni(tmp: Path) -> None:
    """docs/omni-annotator.png: the yes/no page of an omni label project over digits-lr's representatives."""
    from evalsift.omninput import load_model, make_sampler, sample_id, to_pool

    model, space = load_model("digits-lr")
    samples = make_sampler("pt", steps=600, seed=0).run(model, space, quiet=True)
    c = samples.candidates
    distinct = {b: len({sample_id(b, x) for x in c.x[c.bin == b]}) for b in samples.bins.tolist()}
    top = max(b for b, n in distinct.items() if n >= 4)  # the highest-logit bin holding a few different inputs
    reps = samples.representatives(4, seed=0, bins=[top])
    pool = to_pool(samples, reps)
    fp = samples.fingerprint()
    work = Workspace(Store(tmp / "omni.db"))
    pid, _ = work.create_fixed(f"omni-{model.name}-{fp[:6]}", pool, mode="score", systems=pool.systems,
                               question="Is this a handwritten 1?", meta_columns=["bin", "z", "x", "image"],
                               data={"omni": {"fingerprint": fp, "per_bin": 4, "seed": 0,
                                              "bin_width": samples.bin_width}})
    alice = work.store.add_annotator(pid, "alice")[1]
    with Server(tmp / "omni.db") as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1000, "height": 560})
        page.goto(f"{srv.url}/a/{alice}")
        for judged, key in enumerate("yn"):
            shown(page, judged)
            page.keyboard.press(key)
        shown(page, 2)
        page.screenshot(path=str(ROOT / "docs" / "omni-annotator.png"))
        browser.close()
    print(f"wrote docs/omni-annotator.png (digits-lr, bin z in [{top * samples.bin_width:g}, "
          f"{(top + 1) * samples.bin_width:g}))")


def shown(page, judged: int) -> None:
    """Wait until the label page shows an item, its image loaded, after ``judged`` answers."""
    page.wait_for_function("(n) => { const i = document.getElementById('image'); "
                           "return !document.getElementById('task').hidden && i.complete && i.naturalWidth > 0 && "
                           "document.getElementById('progress').textContent.startsWith(n + ' of '); }", arg=judged)


SHOTS = {"pairwise": pairwise, "omni": omni}


def main(argv: list[str]) -> None:
    wanted = argv or list(SHOTS)
    unknown = [w for w in wanted if w not in SHOTS]
    if unknown:
        raise SystemExit(f"unknown screenshot {unknown[0]!r}; choose from {', '.join(SHOTS)}")
    tmp = Path(tempfile.mkdtemp())
    try:
        for name in wanted:
            SHOTS[name](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
