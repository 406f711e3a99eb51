"""The LLM judge's response cache: what a cache must offer (:class:`LLMCache`), one kept in memory
(:class:`DictCache`) and the key of a request (:func:`cache_key`: the sha256 of the canonical request,
never the API key). The store's SQLite cache (:class:`evalsift.store.store.LLMResponseCache`) offers
the same methods; how the judge uses a cache is in :mod:`evalsift.oracle.llm`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol, runtime_checkable

def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
