"""LLMJudge: an LLM as the judge, through any OpenAI-compatible chat-completions server.

Registered as ``llm`` (spec ``llm:MODEL``). It talks to the server with the official ``openai``
client (``pip install 'evalsift[llm]'``), so the OpenAI API and every compatible server (vLLM,
llama.cpp's ``llama-server``, Ollama, a LiteLLM proxy) work the same way; ``docs/llm-judge.md`` shows
the ``base_url`` of each.

**Pairwise** (:meth:`LLMJudge.judge_pairs`): every item is asked in both orders (a's output shown
first, then b's), each answer must end in one of MT-bench's markers ``[[A]]``, ``[[B]]`` or ``[[C]]``
(tie), read by the strict :func:`parse_verdict`. Two orders that agree give that verdict; two that
disagree give a tie with ``detail["position_disagreement"] = True``. A call that fails (after the
client's own retries), times out, returns a malformed body or an answer without exactly one kind of
marker (a refusal or an empty completion included) makes the item's Judgment ``status="error"``
with ``detail["reason"]`` and ``detail["error_kind"]`` -- never a verdict, not even from the other
order alone.

**Pointwise** (:meth:`LLMJudge.judge_scores`, :meth:`LLMJudge.judge_score_judgments`): one call per
item asking for a rating ``[[N]]`` on ``scale`` (default 1-10, as MT-bench's single-answer grading),
read by :func:`parse_rating`; NaN (or an error Judgment) where there is none.

**The API key** is read from the environment variable ``key_env`` (default ``OPENAI_API_KEY``) at
each call and handed to the client only: it is not kept on the judge, nor written to a Judgment,
the cache, a log line or an error message. When the variable is unset the placeholder
:data:`PLACEHOLDER_KEY` is sent, which local servers without authentication accept; real providers
need the variable set.

**Credentials in the URL** (``http://user:pass@host/v1``, ``?api_key=...``) are used for the
requests (the user info as HTTP Basic auth, the query as the client's ``default_query``) and never
stored: ``base_url``, ``detail["request"]``, the cache key and every message show
:func:`redact_url`'s form, with the user info and every query value as ``***``.

**Cache**: any object with ``get(key) -> dict | None`` and ``put(key, value)`` (:class:`LLMCache`;
:class:`DictCache` keeps it in memory). The key is the sha256 of a canonical JSON of the model, the
messages, the sampling parameters and the redacted server URL (:func:`cache_key`); a hit makes no
request. Every answer the server gives is stored **the moment it arrives** (not when the batch ends),
so an interrupted run never pays for an answer twice; a failed call is never stored. An answer
without a usable verdict (no marker, conflicting markers, a refusal, a rating off the scale) is
stored with ``"final": False``: it is reused like any other (the item stays an error, at no cost)
unless the judge is built with ``retry_unusable=True``, which asks it again and replaces it (through
the cache's optional ``replace(key, value)``). The cache is only touched from the calling thread, so
an SQLite-backed cache works as it is. A Judgment's ``detail["usage"]`` sums the tokens of all its
answers, cached or not; ``detail["cached_tokens"]`` is the part that came from the cache (or from the
same request answered earlier in the batch) and was not paid again.

**Streaming results**: ``judge_pairs`` and ``judge_score_judgments`` take ``on_judgment``, called in
the calling thread with each item's Judgment as soon as all its answers are in (cached ones first).

**A dead server** stops the judge: after ``max_connection_failures`` (default
:data:`MAX_CONNECTION_FAILURES`) calls in a row -- counted over successive batches, as a Session or
``best`` asks a few items at a time -- that could not reach the server or got no answer within the
timeout, each after the client's own retries, it raises :class:`~evalsift.errors.OracleError`
instead of failing every remaining item. Answers received before that are in the cache.

**Injection risk**: an output that contains the judge's answer markers (``[[A]]``, a rating ``[[7]]``)
or the template's delimiters around the texts (``##### END OF RESPONSE A #####``) could steer the
verdict; the Judgment says so in ``detail["injection_risk"]`` (a heuristic flag, the verdict is kept).

>>> parse_verdict("Both are fine, but A is more precise. [[A]]")
'A'
>>> parse_verdict("[[A]] ... on reflection [[B]]") is None      # conflicting markers: no verdict
True
>>> parse_rating("Rating: [[7]]", (1, 10))
7.0
>>> judge = LLMJudge("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")
>>> judge.name, judge.kind
('llm:gpt-4o-mini', 'llm')
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import os
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import numpy as np

from ..errors import OracleError, ParameterError, missing_dependency
from ..pool import Pool
from .base import Judgment, oracle

#: the key sent when ``key_env`` is unset (what vLLM's documentation uses for servers without a key)
PLACEHOLDER_KEY = "EMPTY"
#: where the client goes when neither ``base_url`` nor ``$OPENAI_BASE_URL`` is given
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CRITERION = "overall quality: how well the response does what the task asks -- correct, relevant, complete and clear"
PLACEHOLDERS = ("input", "output_a", "output_b", "output", "criterion", "min_score", "max_score")
_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_VERDICT_RE = re.compile(r"\[\[([ABC])\]\]")
_RATING_RE = re.compile(r"\[\[\s*([+-]?\d+(?:\.\d+)?)\s*\]\]")
_RETRYABLE = {408, 409, 429}
#: calls in a row that cannot reach the server (refused, reset, no answer within the timeout; each after
#: the client's retries) before the judge gives up with an OracleError
MAX_CONNECTION_FAILURES = 5
_UNREACHABLE = ("APIConnectionError", "APITimeoutError")
#: the placeholders filled with the data's texts (the ones an injection would come through)
_TEXT_PLACEHOLDERS = ("input", "output", "output_a", "output_b")
#: what in an output looks like the judge's own answer: verdict markers (also in lower case or spaced)
_VERDICT_LIKE_RE = re.compile(r"\[\[\s*[ABCabc]\s*\]\]")


# ---------------------------------------------------------------------------------------------- parsing
def parse_verdict(text: str | None) -> str | None:
    """The verdict marker of an answer: 'A', 'B' or 'C' (tie), or None when it has none or several kinds.

    Strict, as MT-bench's judge parsing: only ``[[A]]``, ``[[B]]`` and ``[[C]]`` count; the same
    marker repeated is fine, two different ones are a conflict.

    >>> parse_verdict("[[C]]"), parse_verdict("[[B]] and again [[B]]"), parse_verdict("A is better")
    ('C', 'B', None)
    """
    kinds = set(_VERDICT_RE.findall(text or ""))
    return kinds.pop() if len(kinds) == 1 else None


def _verdict_problem(text: str | None) -> str:
    if not (text or "").strip():
        return "the answer is empty: no verdict marker ([[A]], [[B]] or [[C]])"
    kinds = sorted(set(_VERDICT_RE.findall(text or "")))
    if len(kinds) > 1:
        return "conflicting verdict markers " + ", ".join(f"[[{k}]]" for k in kinds) + " in the answer"
    return "no verdict marker ([[A]], [[B]] or [[C]]) in the answer"


def parse_rating(text: str | None, scale: tuple[float, float] = (1, 10)) -> float | None:
    """The rating ``[[N]]`` of an answer, or None when it has none, several different ones, or one
    outside ``scale`` (inclusive).

    >>> parse_rating("[[4.5]]", (1, 5)), parse_rating("[[11]]", (1, 10)), parse_rating("[[3]] [[4]]")
    (4.5, None, None)
    """
    values = {float(v) for v in _RATING_RE.findall(text or "")}
    if len(values) != 1:
        return None
    v = values.pop()
    return v if scale[0] <= v <= scale[1] else None


def _rating_problem(text: str | None, scale: tuple[float, float]) -> str:
    if not (text or "").strip():
        return "the answer is empty: no rating [[N]]"
    values = sorted({float(v) for v in _RATING_RE.findall(text or "")})
    if len(values) > 1:
        return f"several different ratings {values} in the answer"
    if values:
        return f"rating {values[0]:g} is outside the scale {scale[0]:g}-{scale[1]:g}"
    return "no rating [[N]] in the answer"


# ---------------------------------------------------------------------------------------------- templates
def fill_template(template: str, values: dict[str, str]) -> str:
    """Put ``values`` into the known ``{placeholders}`` of ``template`` in one pass.

    Only :data:`PLACEHOLDERS` are replaced, so other braces in a template (JSON, code) stay as they
    are, and text substituted in is never substituted again.

    >>> fill_template("{output_a} vs {output_b} {json}", {"output_a": "x {output_b}", "output_b": "y"})
    'x {output_b} vs y {json}'
    """
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _shipped(name: str) -> str:
    return resources.files("evalsift.oracle").joinpath("prompts", name).read_text(encoding="utf-8")


def _load_template(template: str | Path | None, default: str, needs: tuple[str, ...], param: str) -> tuple[str, str]:
    """(text, name) of the template: the shipped default, or the user's file."""
    if template is None:
        text, name = _shipped(default), default
    else:
        path = Path(template)
        if not path.is_file():
            raise ParameterError(f"LLMJudge: {param}={str(template)!r} is not a file; give the path of a UTF-8 text "
                                 f"template with the placeholders {', '.join('{' + n + '}' for n in needs)}",
                                 field=param)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ParameterError(f"LLMJudge: {param} file {str(path)!r} is not UTF-8 ({e})", field=param) from None
        name = str(path)
    missing = [n for n in needs if "{" + n + "}" not in text]
    if missing:
        raise ParameterError(f"LLMJudge: the {param} {name!r} lacks the placeholder(s) "
                             f"{', '.join('{' + n + '}' for n in missing)}", field=param)
    return text, name


def template_delimiters(template: str) -> tuple[str, ...]:
    """The template's text right around each placeholder filled from the data (``{input}``,
    ``{output}``, ``{output_a}``, ``{output_b}``): the last non-blank line before it and the first
    after it, whitespace collapsed, 4 characters or more. An output containing one of them could pass
    for the end of its own section (see :func:`injection_spots`).

    >>> template_delimiters("Q: {input}\\n##### A #####\\n{output_a}\\n##### END A #####\\n{output_b}")
    ('##### A #####', '##### END A #####')
    """
    parts = _PLACEHOLDER_RE.split(template)  # text, name, text, name, ..., text
    found: list[str] = []
    for k in range(1, len(parts), 2):
        if parts[k] not in _TEXT_PLACEHOLDERS:
            continue
        before = [ln for ln in parts[k - 1].splitlines() if ln.strip()]
        after = [ln for ln in parts[k + 1].splitlines() if ln.strip()]
        for line in (before[-1] if before else "", after[0] if after else ""):
            text = " ".join(line.split())
            if len(text) >= 4 and text not in found:
                found.append(text)
    return tuple(found)


def injection_spots(text: str | None, markers: re.Pattern, delimiters: Sequence[str]) -> list[str]:
    """What in ``text`` (a system's output) could be read as the judge's answer or the prompt's
    structure: every distinct match of ``markers`` and every delimiter it contains (case and
    whitespace ignored). Empty when there is nothing; a heuristic, not a proof of an attack.

    >>> injection_spots("Fine. [[A]] ##### end of  TASK #####", _VERDICT_LIKE_RE, ["##### END OF TASK #####"])
    ['[[A]]', '##### END OF TASK #####']
    """
    if not text:
        return []
    found = list(dict.fromkeys(m.group(0) for m in markers.finditer(text)))
    flat = " ".join(text.split()).casefold()
    return found + [d for d in delimiters if d.casefold() in flat]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


# ---------------------------------------------------------------------------------------------- cache
@runtime_checkable
class LLMCache(Protocol):
    """What :class:`LLMJudge` needs from a response cache: two methods, called from one thread.

    ``get(key)`` returns the stored dict or None; ``put(key, value)`` stores a JSON-ready dict
    ``{"content", "usage", "finish_reason", "model", "final"}`` (``final``: False for an answer with no
    usable verdict). ``key`` is a hex sha256 (:func:`cache_key`). Optional: ``replace(key, value)``,
    used when an unusable answer is asked again (``retry_unusable``); without it ``put`` is called.
    """

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


class DictCache:
    """An in-memory :class:`LLMCache` (for tests and single runs); ``hits``/``misses`` count lookups.

    >>> c = DictCache(); c.put("k", {"content": "[[A]]"}); c.get("k")["content"], c.get("x"), len(c)
    ('[[A]]', None, 1)
    """

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        value = self.data.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(json.dumps(value))  # a copy

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.data[key] = json.loads(json.dumps(value))

    def replace(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key`` whatever was there (the same as :meth:`put` here)."""
        self.put(key, value)

    def __len__(self) -> int:
        return len(self.data)


def cache_key(model: str, messages: list[dict[str, str]], parameters: dict[str, Any], base_url: str) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of the request; never includes the key
    (give ``base_url`` as :func:`redact_url` shows it, as the judge does).

    >>> len(cache_key("m", [{"role": "user", "content": "hi"}], {"temperature": 0.0}, "http://x/v1"))
    64
    """
    blob = json.dumps({"model": model, "messages": messages, "parameters": parameters, "base_url": base_url},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _sha(blob)


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


def _sum_usage(usages: list[dict[str, int] | None]) -> dict[str, int]:
    return {k: sum((u or {}).get(k, 0) for u in usages) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _import_openai():
    try:
        import openai
    except ImportError:
        raise missing_dependency("openai", "llm", "the LLM judge (oracle 'llm')") from None
    return openai


# ---------------------------------------------------------------------------------------------- the judge
@oracle("llm", help="an LLM judge on any OpenAI-compatible server; 'llm:MODEL'")
class LLMJudge:
    """An LLM judge behind an OpenAI-compatible chat-completions endpoint (see the module doc).

    ``model``: the model's name on the server. ``base_url``: the server's ``/v1`` URL (None: the
    client's default, ``$OPENAI_BASE_URL`` or the OpenAI API). ``key_env``: the environment variable
    holding the API key, read at each call. ``template`` / ``score_template``: paths of the user's
    own prompt files (None: the shipped ``prompts/pairwise.txt`` / ``prompts/score.txt``), filled
    through :func:`fill_template`. ``criterion``: what to judge on (fills ``{criterion}``).
    ``scale``: the rating range of the score template. ``temperature``, ``seed``, ``max_tokens``: sent
    with every request. ``timeout``: a hard deadline in seconds for each attempt (connecting,
    sending and the whole answer), and ``max_retries``: handed to the ``openai`` client, whose retry
    machinery (exponential backoff 0.5 s, 1 s, 2 s, ... up to 8 s, or the server's ``Retry-After`` on
    429 and 5xx) is the only one used -- so one call takes at most ``(1 + max_retries) * timeout``
    plus the waits between attempts. ``concurrency``: requests in flight at once. ``cache``: an
    :class:`LLMCache` or None. ``retry_unusable``: ask again the cached answers that carry no usable
    verdict (otherwise they are reused and the item stays an error). ``max_connection_failures``:
    calls in a row that cannot reach the server before the judge raises OracleError.
    ``both_orders``: ask every pair in both orders (default); False asks once, in an order drawn
    per item from ``seed`` and the item id.
    """

    kind = "llm"
    argument = "MODEL, the judge model's name on the server (e.g. llm:gpt-4o-mini)"

    def __init__(self, model: str, *, base_url: str | None = None, key_env: str = "OPENAI_API_KEY",
                 template: str | Path | None = None, score_template: str | Path | None = None,
                 criterion: str | None = None, scale: tuple[float, float] = (1, 10), temperature: float = 0.0,
                 seed: int = 0, max_tokens: int = 512, timeout: float = 60.0, max_retries: int = 3,
                 concurrency: int = 4, cache: LLMCache | None = None, both_orders: bool = True,
                 retry_unusable: bool = False, max_connection_failures: int = MAX_CONNECTION_FAILURES) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ParameterError("LLMJudge needs the judge model's name, e.g. 'llm:gpt-4o-mini'", field="model")
        if base_url is not None and (not isinstance(base_url, str) or not re.match(r"https?://", base_url)):
            raise ParameterError(f"LLMJudge: base_url must be an http(s) URL such as 'http://localhost:8000/v1', "
                                 f"got {base_url!r}", field="base_url")
        if not isinstance(key_env, str) or not key_env:
            raise ParameterError("LLMJudge: key_env must name an environment variable", field="key_env")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise ParameterError(f"LLMJudge: temperature must be in [0, 2], got {temperature!r}", field="temperature")
        for name, v, lo, hi in (("seed", seed, 0, 2**63 - 1), ("max_tokens", max_tokens, 1, 65536),
                                ("max_retries", max_retries, 0, 100), ("concurrency", concurrency, 1, 256),
                                ("max_connection_failures", max_connection_failures, 1, 10**6)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ParameterError(f"LLMJudge: {name} must be an integer in [{lo}, {hi}], got {v!r}", field=name)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ParameterError(f"LLMJudge: timeout must be a positive number of seconds, got {timeout!r}",
                                 field="timeout")
        if (not isinstance(scale, (tuple, list)) or len(scale) != 2
                or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in scale) or not scale[0] < scale[1]):
            raise ParameterError(f"LLMJudge: scale must be (low, high) with low < high, got {scale!r}", field="scale")
        if cache is not None and not isinstance(cache, LLMCache):
            raise ParameterError("LLMJudge: cache must have get(key) and put(key, value) (see LLMCache)", field="cache")
        if criterion is not None and (not isinstance(criterion, str) or not criterion.strip()):
            raise ParameterError(f"LLMJudge: criterion must be a non-empty text, got {criterion!r}", field="criterion")
        _import_openai()  # a clear message now rather than at the first call
        self.model = model
        self._url = base_url  # as given, credentials included: only ever handed to the client
        self.base_url = None if base_url is None else redact_url(base_url)
        self.key_env = key_env
        self.criterion = criterion or DEFAULT_CRITERION
        self.scale = (float(scale[0]), float(scale[1]))
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.cache = cache
        self.both_orders = bool(both_orders)
        self.retry_unusable = bool(retry_unusable)
        self.max_connection_failures = int(max_connection_failures)
        self._unreachable = 0  # calls in a row, over every batch so far, that could not reach the server
        self.template, self.template_name = _load_template(template, "pairwise.txt", ("output_a", "output_b"), "template")
        self.score_template, self.score_template_name = _load_template(score_template, "score.txt", ("output",),
                                                                       "score_template")
        self.name = f"llm:{model}"
        self._delimiters = {"pairwise": template_delimiters(self.template),
                            "score": template_delimiters(self.score_template)}

    def __repr__(self) -> str:
        return (f"LLMJudge(model={self.model!r}, base_url={self.base_url!r}, key_env={self.key_env!r}, "
                f"template={self.template_name!r}, score_template={self.score_template_name!r}, "
                f"temperature={self.temperature}, seed={self.seed}, max_tokens={self.max_tokens}, "
                f"timeout={self.timeout}, max_retries={self.max_retries}, concurrency={self.concurrency}, "
                f"cache={type(self.cache).__name__ if self.cache is not None else None}, both_orders={self.both_orders}, "
                f"retry_unusable={self.retry_unusable})")

    # ------------------------------------------------------------------ request parts
    def _target(self) -> _Target:
        return _target_of(self._url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)

    def _base_url(self) -> str:
        """The server's URL as it is shown and stored (:func:`redact_url`)."""
        return self._target().shown

    def _parameters(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}

    def request_record(self, kind: str = "pairwise") -> dict[str, Any]:
        """Everything that shaped the requests (for ``detail["request"]``); never the key itself, nor a
        credential in the URL."""
        text, name = ((self.template, self.template_name) if kind == "pairwise"
                      else (self.score_template, self.score_template_name))
        rec = {"model": self.model, "base_url": self._base_url(), **self._parameters(),
               "template": {"name": name, "sha256": _sha(text)}, "criterion": self.criterion,
               "key_env": self.key_env, "timeout": self.timeout, "max_retries": self.max_retries}
        if kind == "pairwise":
            rec["both_orders"] = self.both_orders
        else:
            rec["scale"] = list(self.scale)
        return rec

    def _messages(self, template: str, values: dict[str, str]) -> list[dict[str, str]]:
        values = {"criterion": self.criterion, "min_score": f"{self.scale[0]:g}", "max_score": f"{self.scale[1]:g}",
                  **values}
        return [{"role": "user", "content": fill_template(template, values)}]

    def _call(self, messages: list[dict[str, str]]) -> _Call:
        return _Call(key=cache_key(self.model, messages, self._parameters(), self._base_url()), messages=messages)

    # ------------------------------------------------------------------ running calls
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
        todo, stale = self._from_cache(calls, usable, done)
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
                    if stop.is_set():
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
                take(_next(answers))
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
            print(f"interrupted: waiting up to {self.timeout:g} s for {flying} answer(s) in flight, to keep them; "
                  "Ctrl-C again to abandon them", file=sys.stderr, flush=True)
            end = time.monotonic() + self.timeout
            while count["taken"] > count["taken_in"] and time.monotonic() < end:
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

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _positions(pool: Pool, items: Sequence[int]) -> np.ndarray:
        idx = np.asarray(items, dtype=int).reshape(-1)
        bad = idx[(idx < 0) | (idx >= pool.n_items)]
        if bad.size:
            raise ParameterError(f"LLMJudge: item position {int(bad[0])} is out of range for pool {pool.name!r} "
                                 f"({pool.n_items} items)", field="items")
        return idx

    @staticmethod
    def _input(pool: Pool, i: int) -> str:
        x = pool.inputs[i]
        if x is None:
            return ""
        if not isinstance(x, str):
            raise ParameterError(f"LLMJudge needs text inputs; item {pool.item_ids[i]!r} of pool {pool.name!r} has a "
                                 f"{type(x).__name__}", field="inputs", item_id=pool.item_ids[i])
        return x

    def covers(self, pool: Pool, a: str, b: str) -> np.ndarray:
        """Per item of ``pool``: True where both systems have an output (the items this judge can judge)."""
        pool.system_index(a), pool.system_index(b)  # an unknown name is a DataError with a suggestion
        oa, ob = pool.outputs[a], pool.outputs[b]
        return np.array([x is not None and y is not None for x, y in zip(oa, ob)], dtype=bool)

    def _orders(self, item_id: str) -> tuple[str, ...]:
        if self.both_orders:
            return ("ab", "ba")
        h = int(_sha(f"{self.seed}\0{item_id}")[:8], 16)
        return ("ab",) if h % 2 == 0 else ("ba",)

    # ------------------------------------------------------------------ streaming results
    def _stream(self, plans: list[tuple[list[_Call], Callable[[], Judgment]]], usable: Callable[[str], bool],
                on_judgment: Callable[[Judgment], None] | None) -> list[Judgment]:
        """Run the calls of every plan and build each plan's Judgment as soon as its calls are filled
        (handing it to ``on_judgment`` at once); the Judgments in plan order."""
        out: list[Judgment | None] = [None] * len(plans)
        left = [len(calls) for calls, _ in plans]
        owner = {id(c): k for k, (calls, _) in enumerate(plans) for c in calls}

        def finish(k: int) -> None:
            out[k] = plans[k][1]()
            if on_judgment is not None:
                on_judgment(out[k])

        def filled(c: _Call) -> None:
            k = owner[id(c)]
            left[k] -= 1
            if left[k] == 0:
                finish(k)

        for k, (calls, _) in enumerate(plans):
            if not calls:
                finish(k)
        self._run([c for calls, _ in plans for c in calls], usable, filled)
        return out  # type: ignore[return-value]

    def _verdict_usable(self, text: str) -> bool:
        return parse_verdict(text) is not None

    def _rating_usable(self, text: str) -> bool:
        return parse_rating(text, self.scale) is not None

    def _injection(self, kind: str, outputs: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        markers = _VERDICT_LIKE_RE if kind == "pairwise" else _RATING_RE
        flagged = [{"system": s, "found": injection_spots(str(y), markers, self._delimiters[kind])} for s, y in outputs]
        return [f for f in flagged if f["found"]]

    # ------------------------------------------------------------------ pairwise
    def judge_pairs(self, pool: Pool, items: Sequence[int], a: str, b: str, *,
                    on_judgment: Callable[[Judgment], None] | None = None) -> list[Judgment]:
        """One Judgment per item, in item order (see the module doc for how the orders combine).

        ``on_judgment``: called with each item's Judgment the moment all its answers are in (in the
        order they complete), e.g. to write it out before the rest of the batch is back.
        """
        pool.system_index(a), pool.system_index(b)  # an unknown name is a DataError with a suggestion
        oa, ob = pool.outputs[a], pool.outputs[b]
        if a == b:
            raise ParameterError(f"LLMJudge: the two systems must differ, got {a!r} twice", system=str(a), field="b")
        idx = self._positions(pool, items)
        request = self.request_record("pairwise")
        plans: list[tuple[list[_Call], Callable[[], Judgment]]] = []
        for i in idx:
            i = int(i)
            x, ya, yb = self._input(pool, i), oa[i], ob[i]
            if ya is None or yb is None:
                who = " and ".join(s for s, y in ((a, ya), (b, yb)) if y is None)
                plans.append(([], lambda i=i, who=who: self._pair_judgment(pool.item_ids[i], a, b, f"no output for {who}",
                                                                          [], request, [])))
                continue
            mine = []
            for order in self._orders(pool.item_ids[i]):
                first, second = (ya, yb) if order == "ab" else (yb, ya)
                mine.append((order, self._call(self._messages(self.template, {"input": x, "output_a": str(first),
                                                                              "output_b": str(second)}))))
            risk = self._injection("pairwise", [(a, ya), (b, yb)])
            plans.append(([c for _, c in mine], lambda i=i, mine=mine, risk=risk: self._pair_judgment(
                pool.item_ids[i], a, b, None, mine, request, risk)))
        return self._stream(plans, self._verdict_usable, on_judgment)

    def _pair_judgment(self, item_id: str, a: str, b: str, missing: str | None, mine: list[tuple[str, _Call]],
                       request: dict[str, Any], risk: list[dict[str, Any]]) -> Judgment:
        common = dict(item_id=item_id, a=a, b=b, annotator=self.name, kind=self.kind)
        if missing is not None:
            return Judgment(verdict=None, status="error", detail={"reason": missing, "error_kind": "no_output",
                                                                  "request": copy.deepcopy(request)}, **common)
        answers, problems, failed = [], [], False
        for order, c in mine:
            marker = parse_verdict(c.content) if c.ok else None
            verdict = None if marker is None else {"C": "tie", "A": order[0], "B": order[1]}[marker]
            rec = {"shown_order": order, "raw": c.content, "marker": marker, "verdict": verdict, "usage": c.usage,
                   "finish_reason": c.finish_reason, "cached": c.cached}
            if not c.ok:
                rec.update(error=c.reason, error_type=c.error_type)
                problems.append(f"order {order}: {c.reason}")
                failed = True
            elif marker is None:
                why = _verdict_problem(c.content)
                if c.finish_reason == "length":
                    why += f" (the answer was cut at max_tokens={self.max_tokens})"
                rec["error"] = why
                problems.append(f"order {order}: {why}")
            answers.append(rec)
        detail: dict[str, Any] = {"answers": answers, "raw": [r["raw"] for r in answers],
                                  "shown_orders": [r["shown_order"] for r in answers],
                                  "usage": _sum_usage([r["usage"] for r in answers]),
                                  "cached_tokens": _sum_usage([r["usage"] for r in answers if r["cached"]])["total_tokens"],
                                  "request": copy.deepcopy(request)}
        if risk:
            detail["injection_risk"] = risk
        shown = answers[0]["shown_order"]
        if problems:
            detail["reason"] = "; ".join(problems)
            detail["error_kind"] = "call_failed" if failed else "unusable_answer"
            return Judgment(verdict=None, status="error", shown_order=shown, detail=detail, **common)
        verdicts = [r["verdict"] for r in answers]
        agree = len(set(verdicts)) == 1
        detail["position_disagreement"] = not agree
        return Judgment(verdict=verdicts[0] if agree else "tie", shown_order=shown, detail=detail, **common)

    # ------------------------------------------------------------------ pointwise
    def judge_score_judgments(self, pool: Pool, items: Sequence[int], system: str, *,
                              on_judgment: Callable[[Judgment], None] | None = None) -> list[Judgment]:
        """One Judgment per item with ``detail["score"]`` (status 'done') or ``detail["reason"]`` (status 'error').

        These are score judgments in the sense of :class:`~evalsift.oracle.base.Judgment`: ``a`` is
        the system, ``b`` is ``""`` and ``verdict`` None, so they are stored like verdicts and a
        pairwise Session never takes them. ``on_judgment``: as in :meth:`judge_pairs`.
        """
        pool.system_index(system)
        out = pool.outputs[system]
        idx = self._positions(pool, items)
        request = self.request_record("score")
        plans: list[tuple[list[_Call], Callable[[], Judgment]]] = []
        for i in idx:
            i = int(i)
            x, y = self._input(pool, i), out[i]
            c = None if y is None else self._call(self._messages(self.score_template, {"input": x, "output": str(y)}))
            risk = [] if y is None else self._injection("score", [(system, y)])
            plans.append(([] if c is None else [c],
                          lambda i=i, c=c, risk=risk: self._score_judgment(pool.item_ids[i], system, c, request, risk)))
        return self._stream(plans, self._rating_usable, on_judgment)

    def _score_judgment(self, item_id: str, system: str, c: _Call | None, request: dict[str, Any],
                        risk: list[dict[str, Any]]) -> Judgment:
        common = dict(item_id=item_id, a=system, b="", annotator=self.name, kind=self.kind)
        detail: dict[str, Any] = {"request": copy.deepcopy(request)}
        if c is None:
            detail.update(reason=f"no output for {system}", error_kind="no_output")
            return Judgment(verdict=None, status="error", detail=detail, **common)
        score = parse_rating(c.content, self.scale) if c.ok else None
        usage = _sum_usage([c.usage])
        detail.update(raw=c.content, usage=usage, cached_tokens=usage["total_tokens"] if c.cached else 0,
                      finish_reason=c.finish_reason, cached=c.cached)
        if risk:
            detail["injection_risk"] = risk
        if score is None:
            detail["reason"] = c.reason if not c.ok else _rating_problem(c.content, self.scale)
            detail["error_kind"] = "unusable_answer" if c.ok else "call_failed"
            if not c.ok:
                detail["error_type"] = c.error_type
            return Judgment(verdict=None, status="error", detail=detail, **common)
        detail["score"] = score
        return Judgment(verdict=None, detail=detail, **common)

    def judge_scores(self, pool: Pool, items: Sequence[int], system: str) -> np.ndarray:
        """The judge's rating of ``system`` on each item (floats on ``scale``; NaN where it gave none)."""
        return np.array([j.detail["score"] if j.status == "done" else np.nan
                         for j in self.judge_score_judgments(pool, items, system)], dtype=float)


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
    """The next item of ``answers``, waiting in short steps (so Ctrl-C is noticed at once)."""
    while True:
        try:
            return answers.get(timeout=0.25)
        except queue.Empty:
            continue
