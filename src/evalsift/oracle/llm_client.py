"""Talking to an OpenAI-compatible server for the LLM judge.

The server's URL with its credentials kept out of sight (:func:`redact_url`), the official ``openai``
client with a hard deadline per attempt (:func:`_deadline_http_client`), secrets masked in httpx's log
and in whatever a server echoes, and :class:`_CallRunner`, which fills a batch of calls: from the cache
first, then at most ``concurrency`` requests at once, each answer stored the moment it arrives; Ctrl-C
waits for the answers in flight; a dead server stops the judge after ``max_connection_failures`` calls
in a row. What the judge promises is in :mod:`evalsift.oracle.llm`.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from .. import interrupt
from ..errors import OracleError, missing_dependency

#: the key sent when ``key_env`` is unset (what vLLM's documentation uses for servers without a key)
PLACEHOLDER_KEY = "EMPTY"
#: where the client goes when neither ``base_url`` nor ``$OPENAI_BASE_URL`` is given
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRYABLE = {408, 409, 429}
#: calls in a row that cannot reach the server (refused, reset, no answer within the timeout; each after
#: the client's retries) before the judge gives up with an OracleError
MAX_CONNECTION_FAILURES = 5
_UNREACHABLE = ("APIConnectionError", "APITimeoutError")


# ---------------------------------------------------------------------------------------------- the URL
@dataclass(frozen=True)
class _Target:
    """A server URL split into what the client needs and what may be shown and stored."""

    url: str                      # scheme, host, port and path: no user info, no query
    shown: str                    # ``url`` with ``***@`` for the user info and ``***`` for every query value
    query: dict[str, str]         # the query, sent with every request (the client's default_query)
    auth: tuple[str, str] | None  # the user info, sent as HTTP Basic auth (as httpx does with a URL's user info)
    secrets: tuple[str, ...]      # the texts masked wherever a server's words are kept


def _target_of(url: str) -> _Target:
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    query = parse_qsl(parts.query, keep_blank_values=True)
    path = parts.path.rstrip("/")
    clean = urlunsplit((parts.scheme, host, path, "", ""))
    if not at and not query:
        return _Target(url=clean, shown=clean, query={}, auth=None, secrets=())
    auth, secrets = None, []
    if at:
        user, colon, password = userinfo.partition(":")
        auth = (unquote(user), unquote(password))
        secrets += [auth[1] if colon and auth[1] else auth[0]]  # a password, or a token given as the user name
    secrets += [v for _, v in query]
    shown = urlunsplit((parts.scheme, ("***@" if at else "") + host, path,
                        "&".join(f"{quote(k, safe='')}=***" for k, _ in query), ""))
    return _Target(url=clean, shown=shown, query=dict(query), auth=auth,
                   secrets=tuple(dict.fromkeys(x for x in secrets if len(x) >= 4)))


def redact_url(url: str) -> str:
    """``url`` as evalsift shows and stores it: the user info and every query value masked as ``***``
    (evalsift cannot tell a key from a setting), trailing slashes of the path removed.

    >>> redact_url("http://alice:s3cret@example.org:8000/v1/?api_key=k-123&api-version=2024")
    'http://***@example.org:8000/v1?api_key=***&api-version=***'
    >>> redact_url("http://localhost:8000/v1/")
    'http://localhost:8000/v1'
    """
    return _target_of(url).shown


# ---------------------------------------------------------------------------------------------- one call
@dataclass
class _Call:
    """One chat completion to make (or read from the cache), and what came of it."""

    key: str
    messages: list[dict[str, str]]
    content: str | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    cached: bool = False
    ok: bool = False
    reason: str = ""
    error_type: str | None = None


_CLIENT_CLASSES: dict[type, type] = {}


def _httpx_of(client_class: type):
    """The httpx package the openai client is built on (``httpx2`` or ``httpx``, by version)."""
    for cls in client_class.__mro__:
        mod = sys.modules.get(cls.__module__.split(".")[0])
        if cls.__name__ == "Client" and mod is not None and hasattr(mod, "ReadTimeout"):
            return mod
    raise RuntimeError(f"cannot find the httpx package under {client_class!r}")  # pragma: no cover


def _deadline_http_client(openai: Any, seconds: float, auth: tuple[str, str] | None):
    """The openai client's own default httpx client, with a hard deadline per attempt.

    httpx's timeouts bound each connect, write and read separately, so a server that sends a byte
    now and then keeps one attempt alive for ever. Here every request the openai client sends (one
    attempt: its retries are new requests) runs in a helper thread and is given up after ``seconds``
    with httpx's ``ReadTimeout``, which the openai client treats as any timeout (retried, then
    ``APITimeoutError``). A given-up attempt's thread is a daemon and ends with its socket's timeout.
    """
    base = openai.DefaultHttpxClient
    cls = _CLIENT_CLASSES.get(base)
    if cls is None:
        httpx = _httpx_of(base)

        def send(self: Any, request: Any, **kwargs: Any) -> Any:
            if kwargs.get("stream"):  # a stream has no end to wait for (the judge never streams)
                return base.send(self, request, **kwargs)
            box: dict[str, Any] = {}
            done = threading.Event()

            def attempt() -> None:
                try:
                    box["response"] = base.send(self, request, **kwargs)
                except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                    box["error"] = e
                finally:
                    done.set()

            threading.Thread(target=attempt, name="evalsift-llm-attempt", daemon=True).start()
            if not done.wait(self.attempt_timeout):
                raise httpx.ReadTimeout(f"no complete response within {self.attempt_timeout:g} s", request=request)
            if "error" in box:
                raise box["error"]
            return box["response"]

        cls = _CLIENT_CLASSES[base] = type("DeadlineHttpxClient", (base,), {"send": send, "attempt_timeout": 60.0})
    client = cls(auth=auth) if auth is not None else cls()
    client.attempt_timeout = seconds
    return client


class _MaskLogs(logging.Filter):
    """Masks secrets in the records of httpx's logger (it logs every request's URL, query included, at INFO)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        masked = _scrub(text, self.secrets)
        if masked != text:
            record.msg, record.args = masked, None
        return True


def _usage(u: Any) -> dict[str, int] | None:
    if u is None:
        return None
    get = u.get if isinstance(u, dict) else (lambda k, d=None: getattr(u, k, d))
    out = {}
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = get(k, None)
        out[k] = int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
    return out


def _import_openai():
    try:
        import openai
    except ImportError:
        raise missing_dependency("openai", "llm", "the LLM judge (oracle 'llm')") from None
    return openai


# ---------------------------------------------------------------------------------------------- running calls
class _CallRunner:
    """Fills a batch of chat-completion calls for :class:`~evalsift.oracle.llm.LLMJudge`, which inherits it.

    It works with the judge's settings: ``model``, ``key_env``, ``_url`` (the server as given,
    credentials included), ``timeout``, ``max_retries``, ``concurrency``, ``cache``, ``retry_unusable``,
    ``max_connection_failures``, ``_unreachable`` (the failures in a row so far) and ``_parameters()``
    (the sampling parameters sent with every request).
    """

    def _target(self) -> _Target:
        return _target_of(self._url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)

    def _run(self, calls: list[_Call], usable: Callable[[str], bool],
             on_filled: Callable[[_Call], None] | None = None) -> None:
        """Fill every call: from the cache, else from the server (at most ``concurrency`` at once).

        ``usable(text)`` says whether an answer carries a verdict; ``on_filled(call)`` is called for
        each call as soon as it is filled (cache hits first, then answers in the order they arrive).
        The cache is read and written in this thread only, each answer the moment it arrives;
        identical requests are sent once. Ctrl-C stops sending at once; the answers already received
        are stored and handed over, and the requests in flight are waited for up to one per-attempt
        deadline (``timeout``; a second Ctrl-C abandons them) before the KeyboardInterrupt goes on
        (:meth:`_wind_down`).
        """
        done = on_filled or (lambda c: None)
        interrupt.check()  # Ctrl-C, also one swallowed on the way: no new batch of requests
        with interrupt.deferred():  # cache hits are handed on whole (a press stops the run right after)
            todo, stale = self._from_cache(calls, usable, done)
        interrupt.check()
        if not todo:
            return
        openai = _import_openai()
        key = os.environ.get(self.key_env) or PLACEHOLDER_KEY
        target = self._target()
        secrets = (key, *target.secrets)
        client = openai.OpenAI(base_url=target.url, api_key=key, timeout=self.timeout, max_retries=self.max_retries,
                               default_query=target.query or None,
                               http_client=_deadline_http_client(openai, self.timeout, target.auth))
        httpx_log = logging.getLogger(_httpx_of(openai.DefaultHttpxClient).__name__)  # it logs each URL, query included
        mask = _MaskLogs(secrets)
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        for k in todo:
            jobs.put(k)
        answers: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()
        lock = threading.Lock()  # taking a job and stopping are one step each, so "in flight" is exact
        count = {"taken": 0, "taken_in": 0}

        def work() -> None:
            while True:
                with lock:
                    if stop.is_set() or interrupt.requested():  # Ctrl-C: no new request, whatever the main thread does
                        return
                    try:
                        k = jobs.get_nowait()
                    except queue.Empty:
                        return
                    count["taken"] += 1
                answers.put((k, self._send(client, openai, todo[k][0].messages, target.shown)))

        current: list = []  # the answer being taken in, until it is in the cache

        def take(item: tuple[str, dict[str, Any]], *, count_unreachable: bool = True) -> None:
            """Fill the calls of one answer, store it, hand the calls over."""
            count["taken_in"] += 1
            current[:] = [item]
            k, answer = item
            answer = {f: _scrub(v, secrets) for f, v in answer.items()}
            for n, c in enumerate(todo[k]):
                for f, v in answer.items():
                    setattr(c, f, dict(v) if isinstance(v, dict) else v)
                c.cached = n > 0  # the same request again in this batch: answered by the first, free
            self._keep(k, answer, k in stale, usable)
            current.clear()
            for c in todo[k]:
                done(c)
            if count_unreachable:
                self._count_unreachable(answer, target.shown)

        try:
            httpx_log.addFilter(mask)
            for n in range(min(self.concurrency, len(todo))):  # daemons: a request in flight never holds the process
                threading.Thread(target=work, name=f"evalsift-llm-{n}", daemon=True).start()
            for _ in range(len(todo)):
                with interrupt.deferred():  # a press lands in _next's check, before an answer is taken or after
                    take(_next(answers))    # it is stored and handed on, never in between
            interrupt.check()
        except KeyboardInterrupt:
            with lock:
                stop.set()
            self._wind_down(answers, current, count, take, lambda item: self._keep(
                item[0], {f: _scrub(v, secrets) for f, v in item[1].items()}, item[0] in stale, usable))
            raise
        finally:
            stop.set()
            client.close()
            httpx_log.removeFilter(mask)

    def _wind_down(self, answers: queue.SimpleQueue, current: list, count: dict[str, int],
                   take: Callable[..., None], keep: Callable[[tuple[str, dict[str, Any]]], None]) -> None:
        """After a first Ctrl-C (no new request is sent any more): keep what has arrived, and wait up to
        one per-attempt deadline (``timeout``) for the answers still in flight, so they are stored and
        handed over too; a second Ctrl-C abandons them at once (what arrived is stored all the same)."""
        pressed = interrupt.presses()
        for item in current:  # interrupted while taking it in: into the cache at least
            keep(item)
        current.clear()
        try:
            while True:  # what has arrived is taken in: an answer received is never paid for twice
                try:
                    item = answers.get_nowait()
                except queue.Empty:
                    break
                take(item, count_unreachable=False)
            flying = count["taken"] - count["taken_in"]
            if not flying:
                return
            print(f"Ctrl-C: waiting up to {self.timeout:g} s for {flying} answer(s) in flight, to keep them; "
                  "Ctrl-C again to abandon them", file=sys.stderr, flush=True)
            end = time.monotonic() + self.timeout
            while count["taken"] > count["taken_in"] and time.monotonic() < end:
                if interrupt.presses() > pressed:  # a second Ctrl-C whose KeyboardInterrupt was swallowed
                    raise KeyboardInterrupt
                try:
                    item = answers.get(timeout=min(0.25, max(0.01, end - time.monotonic())))
                except queue.Empty:
                    continue
                take(item, count_unreachable=False)
            left = count["taken"] - count["taken_in"]
            if left:
                print(f"abandoned {left} answer(s) still in flight after {self.timeout:g} s", file=sys.stderr,
                      flush=True)
        except KeyboardInterrupt:
            for item in current:
                keep(item)
            print(f"abandoned {count['taken'] - count['taken_in']} answer(s) in flight", file=sys.stderr, flush=True)

    def _from_cache(self, calls: list[_Call], usable: Callable[[str], bool],
                    done: Callable[[_Call], None]) -> tuple[dict[str, list[_Call]], set[str]]:
        """Fill the calls the cache answers (``done`` each); the rest grouped by request, and the keys whose
        cached answer is unusable and asked again (``retry_unusable``: the new answer replaces it)."""
        todo: dict[str, list[_Call]] = {}
        stale: set[str] = set()
        for c in calls:
            if c.key in todo:
                todo[c.key].append(c)
                continue
            hit = self.cache.get(c.key) if self.cache is not None else None
            if hit is None or not isinstance(hit.get("content"), str):
                todo[c.key] = [c]
            elif self.retry_unusable and not usable(hit["content"]):
                stale.add(c.key)
                todo[c.key] = [c]
            else:
                c.content, c.usage, c.finish_reason = hit["content"], _usage(hit.get("usage")), hit.get("finish_reason")
                c.ok, c.cached = True, True
                done(c)
        return todo, stale

    def _count_unreachable(self, answer: dict[str, Any], shown_url: str) -> None:
        """Count calls in a row that could not reach the server (over batches); raise OracleError at the limit."""
        self._unreachable = self._unreachable + 1 if answer["error_type"] in _UNREACHABLE else 0
        if self._unreachable < self.max_connection_failures:
            return
        n, self._unreachable = self._unreachable, 0
        raise OracleError(f"the judge server {shown_url} did not answer {n} requests in a row (last: {answer['reason']}); "
                          "stopped instead of failing every item. Check that the server is running and that base_url "
                          "(--judge-url) points at it, or raise the timeout (--judge-timeout) if it is only slow; the "
                          "answers received so far are cached, so a rerun continues", field="base_url")

    def _keep(self, key: str, answer: dict[str, Any], stale: bool, usable: Callable[[str], bool]) -> None:
        """Put one answer the server gave into the cache (``final`` False when it has no usable verdict)."""
        if self.cache is None or not answer["ok"]:
            return
        value = {"content": answer["content"], "usage": answer["usage"], "finish_reason": answer["finish_reason"],
                 "model": self.model, "final": bool(usable(answer["content"]))}
        store = getattr(self.cache, "replace", None) if stale else None
        (store or self.cache.put)(key, value)

    def _send(self, client: Any, openai: Any, messages: list[dict[str, str]], shown_url: str) -> dict[str, Any]:
        """One chat completion through the client (its retries included); never raises."""
        out: dict[str, Any] = {"content": None, "usage": None, "finish_reason": None, "ok": False, "reason": "",
                               "error_type": None}
        try:
            resp = client.chat.completions.create(model=self.model, messages=messages, **self._parameters())
        except openai.APITimeoutError:
            out.update(error_type="APITimeoutError",
                       reason=f"no answer within the timeout of {self.timeout:g} s (max_retries={self.max_retries})")
            return out
        except openai.APIStatusError as e:
            code = e.status_code
            again = code in _RETRYABLE or code >= 500
            out.update(error_type=type(e).__name__,
                       reason=f"HTTP {code} from the server: {_short(e.message)}"
                              + (f" (still failing after the client's max_retries={self.max_retries} retries)" if again else "")
                              + (f"; the server refused the key: set ${self.key_env}" if code in (401, 403) else ""))
            return out
        except openai.APIConnectionError as e:
            out.update(error_type=type(e).__name__,
                       reason=f"could not reach {shown_url} (max_retries={self.max_retries}): {_short(str(e))}")
            return out
        except json.JSONDecodeError as e:
            out.update(error_type="JSONDecodeError", reason=f"malformed JSON in the server's response: {_short(str(e))}")
            return out
        except Exception as e:  # anything else the client raises: the item fails, the run goes on
            out.update(error_type=type(e).__name__, reason=f"malformed response or client failure: "
                                                           f"{type(e).__name__}: {_short(str(e))}")
            return out
        try:
            choice = resp.choices[0]
            content = choice.message.content
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError, KeyError) as e:
            out.update(error_type=type(e).__name__, reason=f"malformed response: no choices[0].message.content ({e})")
            return out
        if not isinstance(content, str):
            # a completion without text is still an answer (paid for): a refusal (``message.refusal``), or
            # nothing, e.g. a reasoning model that spent max_tokens on its reasoning -- unusable, not a failure
            refusal = getattr(choice.message, "refusal", None)
            content = refusal if isinstance(refusal, str) else ""
        out.update(content=content, usage=_usage(getattr(resp, "usage", None)),
                   finish_reason=finish if isinstance(finish, str) else None, ok=True)
        return out


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` with every occurrence of a secret (the API key, a credential of the URL) masked as
    ``***`` (defence in depth: servers may echo them)."""
    if isinstance(value, str):
        for secret in secrets:
            if secret and secret != PLACEHOLDER_KEY and len(secret) >= 4 and secret in value:
                value = value.replace(secret, "***")
    return value


def _next(answers: queue.SimpleQueue) -> Any:
    """The next item of ``answers``, waiting in short steps (so Ctrl-C is noticed at once, also one whose
    KeyboardInterrupt was swallowed: :func:`evalsift.interrupt.check`)."""
    while True:
        interrupt.check()
        try:
            return answers.get(timeout=0.25)
        except queue.Empty:
            continue
