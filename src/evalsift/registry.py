"""Name registries, filled by decorators: one per kind (selectors, oracles, encoders, datasets).

>>> reg = Registry("selector")
>>> @reg.register("metric_var")
... def make():
...     return 1
>>> reg.get("metric_var")()
1
>>> reg.get("metrc_var")
Traceback (most recent call last):
...
evalsift.errors.UnknownNameError: Unknown selector 'metrc_var'. Did you mean 'metric_var'? Available: metric_var
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, TypeVar

from .errors import ParameterError, UnknownNameError, unknown_name_message

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to factories of one kind, with helpful unknown-name errors."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._help: dict[str, str] = {}

    def register(self, name: str, help: str = "") -> Callable[[T], T]:
        """Decorator that records ``obj`` under ``name``; a name may be registered once."""

        def deco(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise ParameterError(f"{self.kind} '{name}' is registered twice; choose another name")
            self._entries[name] = obj
            doc = help or (getattr(obj, "__doc__", None) or "").strip().splitlines()[:1]
            self._help[name] = doc if isinstance(doc, str) else (doc[0] if doc else "")
            return obj

        return deco

    def add(self, name: str, obj: T, help: str = "") -> T:
        """Register ``obj`` under ``name`` without the decorator syntax."""
        return self.register(name, help)(obj)

    def get(self, name: str) -> T:
        """Return the entry for ``name`` or raise :class:`UnknownNameError` with a suggestion."""
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name), field=self.kind) from None

    def unknown_message(self, name: str) -> str:
        """The uniform 'Unknown <kind> ...' message for ``name``."""
        return unknown_name_message(self.kind, name, self._entries)

    def describe(self) -> dict[str, str]:
        """Name -> one-line description, sorted by name."""
        return {n: self._help.get(n, "") for n in sorted(self._entries)}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, Any]]:
        """Sorted (name, entry) pairs."""
        return sorted(self._entries.items())
