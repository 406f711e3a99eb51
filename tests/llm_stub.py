"""A scripted OpenAI-compatible chat-completions server for tests (no network: 127.0.0.1, a free port).

``StubServer(behaviour)`` serves ``POST /v1/chat/completions`` from a
:class:`http.server.ThreadingHTTPServer` in a daemon thread. ``behaviour(body, stub)`` gets the
request's JSON and returns a :class:`Reply` (status, answer text or raw body, headers, delay). The
server records every request (``stub.requests``: body, headers with lower-case names, arrival time) and
every prompt it answered with a 200 (``stub.answered``: what a provider bills), counts how many are
in flight at once (``stub.max_in_flight``) and answers with the OpenAI response JSON, ``usage``
included (whitespace tokens).

Behaviours: :func:`answer` (a fixed text or a function of the prompt), :func:`position_biased`
(always ``[[A]]``), :func:`prefer_longer` (a content-based judge that gives the same verdict in
both orders), :func:`rate_limited` (429 with ``Retry-After`` a number of times per prompt, then
another behaviour), :func:`server_error` (500 always), :func:`malformed_json`, :func:`slow`,
:func:`gate` (the first n requests answered, the later ones held open without an answer until
``stub.release`` is set: a server that stops answering mid-run), :func:`dies_after` (the server stops
listening after n answers: connections are refused from then on), :func:`trickle` (the answer sent
one byte at a time), and :class:`Replay` (recorded GPT-3.5 answers on SummEval).

>>> with StubServer(answer("[[B]]")) as stub:          # doctest: +SKIP
...     judge = LLMJudge("m", base_url=stub.base_url)
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable


@dataclass
class Reply:
    """What the stub sends: ``text`` as the assistant's answer (status 200), or a raw ``body``."""

    text: str | None = None
    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: hold the request until this event is set (``stub.release`` at the latest: stop() sets it)
    wait: threading.Event | None = None
    #: close the connection without sending anything (after ``wait``/``delay``)
    drop: bool = False
    #: seconds between the bytes of the body (0: all at once)
    trickle: float = 0.0


Behaviour = Callable[[dict, "StubServer"], Reply]


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released): a dead server's address."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prompt_of(body: dict) -> str:
    """The text of the last message of a chat request."""
    return str(body["messages"][-1]["content"])


def completion(text: str, body: dict, n: int) -> dict:
    """The OpenAI chat.completion JSON for ``text``."""
    pt, ct = len(prompt_of(body).split()), len(text.split())
    return {"id": f"chatcmpl-stub-{n}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}}


class StubServer:
    """The server; use as a context manager, or ``start()``/``stop()``. ``base_url`` ends in ``/v1``."""

    def __init__(self, behaviour: Behaviour, *, delay: float = 0.0) -> None:
        self.behaviour = behaviour
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.answered: list[str] = []  # the prompt of every request answered with a 200, in order
        self.release = threading.Event()  # set by stop(): held requests (Reply.wait) give up
        self.dead = False
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.counters: dict[Any, int] = {}
        self.local = threading.local()  # .headers: the headers of the request this thread is serving
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                with stub.lock:
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                self.counted = True
                try:
                    stub._serve(self)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass
                finally:
                    stub._answered_one(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def count(self, key: Any) -> int:
        """Increment and return a named counter (thread-safe); behaviours use it per prompt."""
        with self.lock:
            self.counters[key] = self.counters.get(key, 0) + 1
            return self.counters[key]

    def prompts(self) -> list[str]:
        return [prompt_of(r["body"]) for r in self.requests if r["body"] is not None]

    def _answered_one(self, h: BaseHTTPRequestHandler) -> None:
        """A request stops counting as in flight once its answer starts to go out: before the client can
        read it and send its next request (counting until the handler returns would overlap the next
        request of a client that waits for each answer, under load)."""
        if getattr(h, "counted", False):
            h.counted = False
            with self.lock:
                self.in_flight -= 1

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in h.headers.items()}  # names in lower case
        self.local.headers = headers
        with self.lock:
            n = len(self.requests)
            self.requests.append({"path": h.path, "body": body, "headers": headers, "t": time.time()})
        if h.path.partition("?")[0].rstrip("/") != "/v1/chat/completions" or body is None:
            reply = Reply(status=404, body=b'{"error": {"message": "not found", "type": "invalid_request_error"}}')
        else:
            reply = self.behaviour(body, self)
        if reply.wait is not None:
            while not (reply.wait.is_set() or self.release.is_set()):
                reply.wait.wait(0.05)
        if reply.delay or self.delay:
            time.sleep(reply.delay or self.delay)
        if reply.drop:
            h.close_connection = True
            return
        if reply.body is not None:
            payload = reply.body
        elif reply.status == 200:
            payload = json.dumps(completion(reply.text or "", body, n)).encode()
        else:
            payload = json.dumps({"error": {"message": reply.text or f"stub error {reply.status}",
                                            "type": "stub_error", "code": reply.status}}).encode()
        self._answered_one(h)
        h.send_response(reply.status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        for k, v in reply.headers.items():
            h.send_header(k, v)
        h.end_headers()
        if reply.trickle:
            for k in range(len(payload)):
                h.wfile.write(payload[k:k + 1])
                time.sleep(reply.trickle)
        else:
            h.wfile.write(payload)
        if reply.status == 200 and reply.body is None:
            with self.lock:
                self.answered.append(prompt_of(body))

    def start(self) -> "StubServer":
        self._thread = threading.Thread(target=self._server.serve_forever, name="llm-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        if not self.dead:
            self._server.shutdown()
            self._server.server_close()

    def die(self) -> None:
        """Stop listening (from any thread, also a handler's): new connections are refused from now on."""
        with self.lock:
            if self.dead:
                return
            self.dead = True

        def close() -> None:
            self._server.shutdown()
            self._server.server_close()

        threading.Thread(target=close, name="llm-stub-die", daemon=True).start()

    def __enter__(self) -> "StubServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------- behaviours
def answer(text: str | Callable[[str], str]) -> Behaviour:
    """Always answer ``text`` (or ``text(prompt)``)."""
    return lambda body, stub: Reply(text=text(prompt_of(body)) if callable(text) else text)


def position_biased() -> Behaviour:
    """A judge that always prefers the first response shown."""
    return answer("The first response is better. [[A]]")


SECTION = r"##### {name} #####\n(.*?)\n##### END OF {name} #####"


def section(prompt: str, name: str) -> str | None:
    """The text between the default templates' ``##### NAME #####`` and ``##### END OF NAME #####``."""
    m = re.search(SECTION.format(name=re.escape(name)), prompt, re.S)
    return m.group(1) if m else None


def prefer_longer() -> Behaviour:
    """A content-based judge for the default templates: the longer response wins (equal length: tie);
    a single response is rated 1 + its length mod 10. Its verdict does not depend on the order."""

    def reply(body: dict, stub: StubServer) -> Reply:
        p = prompt_of(body)
        ra, rb = section(p, "RESPONSE A"), section(p, "RESPONSE B")
        if ra is None or rb is None:
            one = section(p, "RESPONSE") or ""
            return Reply(text=f"Rating: [[{1 + len(one) % 10}]]")
        marker = "A" if len(ra) > len(rb) else "B" if len(rb) > len(ra) else "C"
        return Reply(text=f"Judging by length. [[{marker}]]")

    return reply


def rate_limited(times: int, then: Behaviour, *, retry_after: str = "0", retry_after_ms: str | None = None) -> Behaviour:
    """429 with ``Retry-After`` the first ``times`` times each distinct prompt is asked, then ``then``."""

    def reply(body: dict, stub: StubServer) -> Reply:
        if stub.count(("429", prompt_of(body))) <= times:
            headers = {"Retry-After": retry_after}
            if retry_after_ms is not None:
                headers["retry-after-ms"] = retry_after_ms
            return Reply(status=429, text="rate limited (stub)", headers=headers)
        return then(body, stub)

    return reply


def server_error() -> Behaviour:
    return lambda body, stub: Reply(status=500, text="internal error (stub)")


def malformed_json() -> Behaviour:
    return lambda body, stub: Reply(body=b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "[[A]]"')


def slow(seconds: float, then: Behaviour) -> Behaviour:
    def reply(body: dict, stub: StubServer) -> Reply:
        r = then(body, stub)
        r.delay = seconds
        return r

    return reply


def gate(n: int, then: Behaviour, *, hold: threading.Event | None = None) -> Behaviour:
    """The first ``n`` requests (in arrival order) answered by ``then``; every later one is held open
    without an answer until ``hold`` (or ``stub.release``) is set, then dropped -- a server that
    hangs mid-run, so a test can interrupt the client while it waits."""

    def reply(body: dict, stub: StubServer) -> Reply:
        if stub.count("gate") <= n:
            return then(body, stub)
        return Reply(wait=hold or stub.release, drop=True)

    return reply


def dies_after(n: int, then: Behaviour) -> Behaviour:
    """The first ``n`` requests answered by ``then``; the next one makes the server stop listening
    (its own connection is closed without an answer), so every later connection is refused."""

    def reply(body: dict, stub: StubServer) -> Reply:
        if stub.count("dies_after") <= n:
            return then(body, stub)
        stub.die()
        return Reply(drop=True)

    return reply


def trickle(seconds_per_byte: float, then: Behaviour) -> Behaviour:
    """``then``'s answer sent one byte every ``seconds_per_byte`` (a server that is slow but never silent
    for long: a per-read timeout never fires)."""

    def reply(body: dict, stub: StubServer) -> Reply:
        r = then(body, stub)
        r.trickle = seconds_per_byte
        return r

    return reply


# ---------------------------------------------------------------------------------------------- replay
class Replay:
    """Serve the recorded GPT-3.5 answers of ``summeval/llm-pairwise/`` to requests built by ``LLMJudge``.

    ``<Mi>-<Mj>_<dim>.result`` showed Mi's summary first (Summary #1 / "A") and Mj's second;
    ``<Mi>-<Mj>_<dim>_toggle.result`` swapped the presentation: there "A" is **Mj**. The evidence,
    over all 11 pairs x 4 dimensions (4,400 items per kind of file; ``human_score_1`` is Mi's expert
    score and ``human_score_2`` Mj's in *both* files, checked against ``summeval.json``):

    - on the 2,675 items with unequal expert scores and a letter in both files, the plain files'
      "A" agrees with "Mi is better by the experts" on 1,698 (63.5%); in the toggle files, reading
      "A" as Mj agrees with the experts on 1,679 (62.8%), reading it as Mi on only 996 (37.2%,
      worse than a coin);
    - on the 4,177 items with a letter (A or B) in both files, the letters are opposite on 2,769
      (66%) and equal on 1,408 -- a judge that mostly keeps its choice of summary while the order
      changes, with a position bias on the rest.

    ``resp`` is "A", "B", "C" or a sentence starting with the letter and a colon (e.g. "C: Both
    Summary #1 and Summary #2 are equally consistent."). C means "equally good" (307 of 8,800), so it
    is replayed as the tie marker ``[[C]]``; "A" -> ``[[A]]``, "B" -> ``[[B]]``; anything else is
    passed through unchanged and so becomes an error of the judge.

    A request is recognised from its text: the document by the article between the default
    template's ``TASK`` markers, the two systems and their order by matching the two responses against
    the pool's outputs, the dimension by the ``{criterion}`` line (``criterion=<dimension>``). Where two
    systems wrote the same summary the two orders are the same request; the plain file's answer is
    served for both. ``served`` records (doc, first system, second system, dimension, file, resp) per
    request.
    """

    def __init__(self, root: Path, pool: Any, systems: tuple[str, str], dimension: str) -> None:
        self.mi, self.mj = systems
        self.dimension = dimension
        base = Path(root) / f"{self.mi}-{self.mj}_{dimension}"
        self.files = {"plain": base.with_suffix(".result"), "toggle": Path(str(base) + "_toggle.result")}
        self.answers = {kind: {(r := json.loads(line))["id"]: r["resp"] for line in f.read_text().splitlines() if line.strip()}
                        for kind, f in self.files.items()}
        self.doc_of_input = {x: iid for iid, x in zip(pool.item_ids, pool.inputs)}
        self.outputs = {s: dict(zip(pool.item_ids, pool.outputs[s])) for s in systems}
        self.served: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @staticmethod
    def to_marker(resp: str) -> str:
        """``A`` / ``A: ...`` -> ``[[A]]`` (likewise B, C); anything else unchanged."""
        m = re.fullmatch(r"\s*([ABC])(?::.*)?\s*", resp, re.S)
        return f"[[{m.group(1)}]]" if m else resp

    def __call__(self, body: dict, stub: StubServer) -> Reply:
        p = prompt_of(body)
        doc = self.doc_of_input.get(section(p, "TASK"))
        crit = re.search(r"respect to this criterion: (\w+)\.", p)
        first, second = section(p, "RESPONSE A"), section(p, "RESPONSE B")
        if doc is None or crit is None or crit.group(1) != self.dimension:
            return Reply(status=400, text="replay: unknown document or dimension")
        oi, oj = self.outputs[self.mi][doc], self.outputs[self.mj][doc]
        if (first, second) == (oi, oj):
            kind, shown = "plain", (self.mi, self.mj)
        elif (first, second) == (oj, oi):
            kind, shown = "toggle", (self.mj, self.mi)
        else:
            return Reply(status=400, text="replay: the responses are not this pair's outputs")
        resp = self.answers[kind][doc]
        with self.lock:
            self.served.append({"doc": doc, "first": shown[0], "second": shown[1], "dimension": self.dimension,
                                "file": self.files[kind].name, "resp": resp})
        return Reply(text=self.to_marker(resp))
