"""The examples in README.md and docs/*.md, as a user would type them: every fenced ``bash`` block's
commands (continuation lines joined, comments dropped) and every ``python`` block, per document, in
order. ``tests/test_docs_examples.py`` runs them; ``python tests/_docs.py`` lists them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Example:
    doc: str         # README.md or docs/NAME.md
    line: int        # where the command starts
    kind: str        # "bash" or "python"
    text: str        # the command (one line) or the python block

    @property
    def argv(self) -> list[str]:
        """The command's words (shell quoting and comments as bash reads them)."""
        return shlex.split(self.text, comments=True)

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text if self.kind == 'bash' else '<python block>'}"


def examples(path: Path) -> list[Example]:
    """The examples of one document, in order."""
    out: list[Example] = []
    lang, block, start = None, [], 0
    rel = str(path.relative_to(ROOT))
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, block, start = m.group(1) or "text", [], n + 1
            continue
        if m and lang is not None:
            if lang in ("bash", "sh"):
                out += _commands(rel, start, block)
            elif lang == "python" and "doctest" not in "".join(block):
                out.append(Example(rel, start, "python", "\n".join(block)))
            lang = None
            continue
        if lang is not None:
            block.append(line)
    return out


def _commands(doc: str, start: int, lines: list[str]) -> list[Example]:
    out, buf, first = [], "", start
    for k, line in enumerate(lines):
        if not buf:
            first = start + k
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        if buf.strip() and shlex.split(buf, comments=True):
            out.append(Example(doc, first, "bash", " ".join(buf.split())))
        buf = ""
    return out


def all_examples() -> list[Example]:
    """Every document's examples."""
    return [e for d in DOCS for e in examples(d)]


if __name__ == "__main__":
    for e in all_examples():
        print(e)


# ---------------------------------------------------------------------------------------------- running them
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Shell:
    """One document's examples run in order in one folder, as a user in a shell runs them: ``cd`` and
    ``mkdir`` and ``export`` apply to the commands after them; ``evalsift`` is the installed command."""

    def __init__(self, folder: Path, env: dict[str, str], judge_url: str | None = None,
                 answers_while_serving: int = 0) -> None:
        self.cwd, self.env, self.judge_url = folder, dict(env), judge_url
        self.answers = answers_while_serving  # each person whose link was printed answers this many items
        self.links: list[str] = []

    def run(self, e: Example, timeout: float = 900) -> tuple[int, str, float]:
        """``(exit status, output, seconds)`` of one example."""
        t0 = time.monotonic()
        if e.kind == "python":
            r = subprocess.run([sys.executable, "-c", e.text], cwd=self.cwd, env=self.env, capture_output=True,
                               text=True, timeout=timeout)
            return r.returncode, r.stdout + r.stderr, time.monotonic() - t0
        code, out = 0, ""
        for part in e.text.split("&&"):
            words = shlex.split(part, comments=True)
            if not words:
                continue
            if words[0] == "cd":
                self.cwd = (self.cwd / words[1]).resolve()
            elif words[:2] == ["mkdir", "-p"]:
                for w in words[2:]:
                    (self.cwd / w).mkdir(parents=True, exist_ok=True)
            elif words[0] == "export":
                k, _, v = words[1].partition("=")
                self.env[k] = v
            elif words[:2] == ["evalsift", "serve"]:
                code, out = self._serve(words)
            else:
                words = self._with_stub(words)
                r = subprocess.run(words, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout)
                code, out = r.returncode, r.stdout + r.stderr
                self.links += re.findall(r"https?://[^/\s]+/a/([A-Za-z0-9_-]+)", r.stdout)
            if code:
                break
        return code, out, time.monotonic() - t0

    def _with_stub(self, words: list[str]) -> list[str]:
        """An LLM judge example talks to the test's stub server instead of the address in the text."""
        if self.judge_url and "--judge-url" in words:
            words = list(words)
            words[words.index("--judge-url") + 1] = self.judge_url
        return words

    def _serve(self, words: list[str]) -> tuple[int, str]:
        """``evalsift serve``: started, answered, stopped with Ctrl+C (on a free port if none is given)."""
        if "--port" not in words:
            words = [*words, "--port", str(_free_port())]
        port = int(words[words.index("--port") + 1])
        p = subprocess.Popen(words, cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        try:
            for _ in range(300):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if p.poll() is not None:
                        return p.returncode or 1, p.stdout.read()
                    time.sleep(0.1)
            else:
                return 1, "the server did not start"
            for token in self.links:
                self._judge(port, token)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            out = p.communicate(timeout=30)[0]
        return 0, out


    def _judge(self, port: int, token: str) -> None:
        """A person answers up to ``self.answers`` items through the app's API (1: the first output shown;
        a score at the middle of the scale)."""
        import json
        import urllib.error
        import urllib.request

        def call(method: str, path: str, body: dict | None = None) -> dict:
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError:
                return {"done": True}

        for _ in range(self.answers):
            a = call("GET", "/api/v1/next")
            if a.get("done"):
                return
            body = {"assignment_id": a["assignment_id"]}
            if "outputs" in a:
                body["verdict"] = "1"
            else:
                low, high = a.get("scale", [0, 1])
                body["score"] = 1 if a.get("question") else (low + high) / 2
            call("POST", "/api/v1/judgments", body)


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--time":
    import json
    import tempfile

    data = os.environ.get("EVALSIFT_DATA") or str(ROOT.parent / "shared" / "data")
    base = Path(tempfile.mkdtemp(prefix="evalsift-docs-"))
    env = {**os.environ, "EVALSIFT_DATA": data, "EVALSIFT_CACHE": "/tmp/docs-cache", "EVALSIFT_QUIET": "1",
           "MPLBACKEND": "Agg"}
    results = []
    for d in DOCS:
        shell = Shell(base / d.stem, env)
        (base / d.stem).mkdir(parents=True, exist_ok=True)
        for e in examples(d):
            if e.kind == "bash" and e.argv and e.argv[0] in ("pip", "python"):
                continue
            if e.kind == "bash" and e.argv[:2] == ["evalsift", "bench"] and "--all" not in sys.argv:
                continue
            try:
                code, out, secs = shell.run(e, timeout=float(sys.argv[2]) if len(sys.argv) > 2 else 900)
            except subprocess.TimeoutExpired:
                code, out, secs = -1, "timed out", float(sys.argv[2])
            results.append({"example": str(e), "code": code, "seconds": round(secs, 1), "tail": out[-300:]})
            print(f"{secs:7.1f}s rc={code} {e}", flush=True)
    Path("/tmp/docs_times.json").write_text(json.dumps(results, indent=1))


def leaf_commands() -> list[str]:
    """Every command the parser knows, as typed: 'data info', 'select', 'bench estimate', 'annotate export', ..."""
    import argparse

    from evalsift.cli import build_parser

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield " ".join(words)
            return
        for name, sp in subs[0].choices.items():
            yield from walk(sp, [*words, name])

    return list(walk(build_parser(), []))
