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
marker makes the item's Judgment ``status="error"`` with ``detail["reason"]`` -- never a verdict,
not even from the other order alone.

**Pointwise** (:meth:`LLMJudge.judge_scores`, :meth:`LLMJudge.judge_score_judgments`): one call per
item asking for a rating ``[[N]]`` on ``scale`` (default 1-10, as MT-bench's single-answer grading),
read by :func:`parse_rating`; NaN (or an error Judgment) where there is none.

**The API key** is read from the environment variable ``key_env`` (default ``OPENAI_API_KEY``) at
each call and handed to the client only: it is not kept on the judge, nor written to a Judgment,
the cache, a log line or an error message. When the variable is unset the placeholder
:data:`PLACEHOLDER_KEY` is sent, which local servers without authentication accept; real providers
need the variable set.

**Cache**: any object with ``get(key) -> dict | None`` and ``put(key, value)`` (:class:`LLMCache`;
:class:`DictCache` keeps it in memory). The key is the sha256 of a canonical JSON of the model, the
messages, the sampling parameters and the server URL (:func:`cache_key`); a hit makes no request.
Only answers the server actually gave are stored (never a failed call). The cache is only touched
from the calling thread, so an SQLite-backed cache works as it is.

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
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ParameterError, missing_dependency
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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------- cache
@runtime_checkable
class LLMCache(Protocol):
    """What :class:`LLMJudge` needs from a response cache: two methods, called from one thread.

    ``get(key)`` returns the stored dict or None; ``put(key, value)`` stores a JSON-ready dict
    ``{"content", "usage", "finish_reason", "model"}``. ``key`` is a hex sha256 (:func:`cache_key`).
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

    def __len__(self) -> int:
        return len(self.data)


def cache_key(model: str, messages: list[dict[str, str]], parameters: dict[str, Any], base_url: str) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of the request; never includes the key.

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
    with every request. ``timeout`` (seconds per attempt) and ``max_retries``: handed to the
    ``openai`` client, whose retry machinery (exponential backoff, honouring ``Retry-After`` on 429
    and 5xx) is the only one used. ``concurrency``: requests in flight at once. ``cache``: an
    :class:`LLMCache` or None. ``both_orders``: ask every pair in both orders (default); False asks
    once, in an order drawn per item from ``seed`` and the item id.
    """

    kind = "llm"
    argument = "MODEL, the judge model's name on the server (e.g. llm:gpt-4o-mini)"

    def __init__(self, model: str, *, base_url: str | None = None, key_env: str = "OPENAI_API_KEY",
                 template: str | Path | None = None, score_template: str | Path | None = None,
                 criterion: str | None = None, scale: tuple[float, float] = (1, 10), temperature: float = 0.0,
                 seed: int = 0, max_tokens: int = 512, timeout: float = 60.0, max_retries: int = 3,
                 concurrency: int = 4, cache: LLMCache | None = None, both_orders: bool = True) -> None:
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
                                ("max_retries", max_retries, 0, 100), ("concurrency", concurrency, 1, 256)):
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
        self.base_url = base_url
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
        self.template, self.template_name = _load_template(template, "pairwise.txt", ("output_a", "output_b"), "template")
        self.score_template, self.score_template_name = _load_template(score_template, "score.txt", ("output",),
                                                                       "score_template")
        self.name = f"llm:{model}"

    def __repr__(self) -> str:
        return (f"LLMJudge(model={self.model!r}, base_url={self.base_url!r}, key_env={self.key_env!r}, "
                f"template={self.template_name!r}, score_template={self.score_template_name!r}, "
                f"temperature={self.temperature}, seed={self.seed}, max_tokens={self.max_tokens}, "
                f"timeout={self.timeout}, max_retries={self.max_retries}, concurrency={self.concurrency}, "
                f"cache={type(self.cache).__name__ if self.cache is not None else None}, both_orders={self.both_orders})")

    # ------------------------------------------------------------------ request parts
    def _base_url(self) -> str:
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    def _parameters(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}

    def request_record(self, kind: str = "pairwise") -> dict[str, Any]:
        """Everything that shaped the requests (for ``detail["request"]``); never the key itself."""
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
    def _run(self, calls: list[_Call]) -> None:
        """Fill every call: from the cache, else from the server (at most ``concurrency`` at once).

        The cache is read and written in this thread only; identical requests are sent once.
        """
        todo: dict[str, list[_Call]] = {}
        for c in calls:
            hit = self.cache.get(c.key) if self.cache is not None and c.key not in todo else None
            if hit is not None and isinstance(hit.get("content"), str):
                c.content, c.usage, c.finish_reason = hit["content"], _usage(hit.get("usage")), hit.get("finish_reason")
                c.ok, c.cached = True, True
            else:
                todo.setdefault(c.key, []).append(c)
        if not todo:
            return
        openai = _import_openai()
        key = os.environ.get(self.key_env) or PLACEHOLDER_KEY
        client = openai.OpenAI(base_url=self._base_url(), api_key=key, timeout=self.timeout,
                               max_retries=self.max_retries)
        try:
            firsts = [group[0] for group in todo.values()]
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(firsts)),
                                    thread_name_prefix="evalsift-llm") as pool:
                answers = list(pool.map(lambda c: self._send(client, openai, c.messages), firsts))
        finally:
            client.close()
        for group, answer in zip(todo.values(), answers):
            answer = {k: _scrub(v, key) for k, v in answer.items()}
            for n, c in enumerate(group):
                for k, v in answer.items():
                    setattr(c, k, dict(v) if isinstance(v, dict) else v)
                c.cached = n > 0  # the same request again in this batch: answered by the first, free
            if answer["ok"] and self.cache is not None:
                self.cache.put(group[0].key, {"content": answer["content"], "usage": answer["usage"],
                                              "finish_reason": answer["finish_reason"], "model": self.model})

    def _send(self, client: Any, openai: Any, messages: list[dict[str, str]]) -> dict[str, Any]:
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
                       reason=f"could not reach {self._base_url()} (max_retries={self.max_retries}): {_short(str(e))}")
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
            out.update(error_type="EmptyAnswer", reason=f"the answer has no text (content={content!r})")
            return out
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

    # ------------------------------------------------------------------ pairwise
    def judge_pairs(self, pool: Pool, items: Sequence[int], a: str, b: str) -> list[Judgment]:
        """One Judgment per item, in item order (see the module doc for how the orders combine)."""
        pool.system_index(a), pool.system_index(b)  # an unknown name is a DataError with a suggestion
        oa, ob = pool.outputs[a], pool.outputs[b]
        if a == b:
            raise ParameterError(f"LLMJudge: the two systems must differ, got {a!r} twice", system=str(a), field="b")
        idx = self._positions(pool, items)
        request = self.request_record("pairwise")
        plans: list[tuple[int, str | None, list[tuple[str, _Call]]]] = []
        calls: list[_Call] = []
        for i in idx:
            i = int(i)
            x, ya, yb = self._input(pool, i), oa[i], ob[i]
            if ya is None or yb is None:
                who = " and ".join(s for s, y in ((a, ya), (b, yb)) if y is None)
                plans.append((i, f"no output for {who}", []))
                continue
            mine = []
            for order in self._orders(pool.item_ids[i]):
                first, second = (ya, yb) if order == "ab" else (yb, ya)
                c = self._call(self._messages(self.template, {"input": x, "output_a": str(first),
                                                               "output_b": str(second)}))
                mine.append((order, c))
                calls.append(c)
            plans.append((i, None, mine))
        self._run(calls)
        return [self._pair_judgment(pool.item_ids[i], a, b, missing, mine, request) for i, missing, mine in plans]

    def _pair_judgment(self, item_id: str, a: str, b: str, missing: str | None, mine: list[tuple[str, _Call]],
                       request: dict[str, Any]) -> Judgment:
        common = dict(item_id=item_id, a=a, b=b, annotator=self.name, kind=self.kind)
        if missing is not None:
            return Judgment(verdict=None, status="error", detail={"reason": missing, "request": copy.deepcopy(request)},
                            **common)
        answers, problems = [], []
        for order, c in mine:
            marker = parse_verdict(c.content) if c.ok else None
            verdict = None if marker is None else {"C": "tie", "A": order[0], "B": order[1]}[marker]
            rec = {"shown_order": order, "raw": c.content, "marker": marker, "verdict": verdict, "usage": c.usage,
                   "finish_reason": c.finish_reason, "cached": c.cached}
            if not c.ok:
                rec.update(error=c.reason, error_type=c.error_type)
                problems.append(f"order {order}: {c.reason}")
            elif marker is None:
                why = _verdict_problem(c.content)
                if c.finish_reason == "length":
                    why += f" (the answer was cut at max_tokens={self.max_tokens})"
                rec["error"] = why
                problems.append(f"order {order}: {why}")
            answers.append(rec)
        detail: dict[str, Any] = {"answers": answers, "raw": [r["raw"] for r in answers],
                                  "shown_orders": [r["shown_order"] for r in answers],
                                  "usage": _sum_usage([r["usage"] for r in answers]), "request": copy.deepcopy(request)}
        shown = answers[0]["shown_order"]
        if problems:
            detail["reason"] = "; ".join(problems)
            return Judgment(verdict=None, status="error", shown_order=shown, detail=detail, **common)
        verdicts = [r["verdict"] for r in answers]
        agree = len(set(verdicts)) == 1
        detail["position_disagreement"] = not agree
        return Judgment(verdict=verdicts[0] if agree else "tie", shown_order=shown, detail=detail, **common)

    # ------------------------------------------------------------------ pointwise
    def judge_score_judgments(self, pool: Pool, items: Sequence[int], system: str) -> list[Judgment]:
        """One Judgment per item with ``detail["score"]`` (status 'done') or ``detail["reason"]`` (status 'error').

        These are score judgments in the sense of :class:`~evalsift.oracle.base.Judgment`: ``a`` is
        the system, ``b`` is ``""`` and ``verdict`` None, so they are stored like verdicts and a
        pairwise Session never takes them.
        """
        pool.system_index(system)
        out = pool.outputs[system]
        idx = self._positions(pool, items)
        request = self.request_record("score")
        plans: list[tuple[int, _Call | None]] = []
        calls = []
        for i in idx:
            i = int(i)
            x, y = self._input(pool, i), out[i]
            c = None if y is None else self._call(self._messages(self.score_template, {"input": x, "output": str(y)}))
            plans.append((i, c))
            if c is not None:
                calls.append(c)
        self._run(calls)
        result = []
        for i, c in plans:
            common = dict(item_id=pool.item_ids[i], a=system, b="", annotator=self.name, kind=self.kind)
            detail: dict[str, Any] = {"request": copy.deepcopy(request)}
            if c is None:
                detail["reason"] = f"no output for {system}"
                result.append(Judgment(verdict=None, status="error", detail=detail, **common))
                continue
            score = parse_rating(c.content, self.scale) if c.ok else None
            detail.update(raw=c.content, usage=_sum_usage([c.usage]), finish_reason=c.finish_reason, cached=c.cached)
            if score is None:
                detail["reason"] = c.reason if not c.ok else _rating_problem(c.content, self.scale)
                if not c.ok:
                    detail["error_type"] = c.error_type
                result.append(Judgment(verdict=None, status="error", detail=detail, **common))
            else:
                detail["score"] = score
                result.append(Judgment(verdict=None, detail=detail, **common))
        return result

    def judge_scores(self, pool: Pool, items: Sequence[int], system: str) -> np.ndarray:
        """The judge's rating of ``system`` on each item (floats on ``scale``; NaN where it gave none)."""
        return np.array([j.detail["score"] if j.status == "done" else np.nan
                         for j in self.judge_score_judgments(pool, items, system)], dtype=float)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _scrub(value: Any, key: str) -> Any:
    """``value`` with every occurrence of the API key masked (defence in depth: servers may echo it)."""
    if isinstance(value, str) and key and key != PLACEHOLDER_KEY and len(key) >= 4 and key in value:
        return value.replace(key, "***")
    return value
