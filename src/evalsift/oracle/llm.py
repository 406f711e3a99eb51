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
import math
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..pool import Pool
from .base import Judgment, oracle
# the judge's parts, by job; re-exported: this module was the home of all of them
from .llm_cache import DictCache, LLMCache, _sha, cache_key  # noqa: F401
from .llm_client import (_CLIENT_CLASSES, _RETRYABLE, _UNREACHABLE, DEFAULT_BASE_URL,  # noqa: F401
                         MAX_CONNECTION_FAILURES, PLACEHOLDER_KEY, _Call, _CallRunner, _deadline_http_client,
                         _httpx_of, _import_openai, _MaskLogs, _next, _scrub, _short, _Target, _target_of, _usage,
                         redact_url)
from .llm_prompts import (_PLACEHOLDER_RE, _RATING_RE, _TEXT_PLACEHOLDERS, _VERDICT_LIKE_RE,  # noqa: F401
                          _VERDICT_RE, DEFAULT_CRITERION, PLACEHOLDERS, _load_template, _rating_problem, _shipped,
                          _verdict_problem, fill_template, injection_spots, parse_rating, parse_verdict,
                          template_delimiters)


def _sum_usage(usages: list[dict[str, int] | None]) -> dict[str, int]:
    return {k: sum((u or {}).get(k, 0) for u in usages) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


# ---------------------------------------------------------------------------------------------- the judge
@oracle("llm", help="an LLM judge on any OpenAI-compatible server; 'llm:MODEL'")
class LLMJudge(_CallRunner):
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
