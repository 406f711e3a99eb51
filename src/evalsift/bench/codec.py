"""Tagged JSON: the values a benchmark task returns, written as JSON and read back exactly, with no code run.

:class:`~evalsift.bench.parallel.TaskJournal` keeps each finished task's ``(result, warnings)`` in
``--out/tasks.jsonl`` with :func:`dumps` and reads it back on a rerun with :func:`loads`. That file
sits in an output folder that may be shared, copied or edited by someone else, so reading it must
never run code (as ``pickle.loads`` does: a crafted line could, before this module). What it can hold
is a fixed set of plain values, each read back as the same type and value:

- ``None``, ``bool``, ``int``, ``str``, ``float`` (NaN and the infinities included, tagged as
  ``{"$": "f", "v": "nan"}``, since strict JSON has no word for them) -- as JSON;
- ``list`` as a JSON array; ``tuple`` as ``{"$": "t", "v": [...]}``;
- ``dict``: a JSON object when every key is a string other than ``"$"``, else ``{"$": "d", "v":
  [[key, value], ...]}`` (int, float, tuple ... keys), in the dict's order;
- a numpy array of numbers, booleans or fixed-width text (``{"$": "a", "dtype": "<f8", "shape": [2,
  3], "b64": ...}``: its bytes in base64, so every bit comes back) and a numpy scalar (``"$": "s"``),
  never one of dtype ``object`` (which is what pickles);
- a warning's category (``"$": "w"``): the names of the class and its bases; read back as the first of
  them that is a builtin warning class or one of evalsift's (:data:`WARNING_CLASSES`), so the name in
  the file only ever picks one of the classes listed there -- it is never imported.

Anything else is refused when written (a ``TypeError`` naming the type: a task that returns it is a
bug to fix here) and any other tag, or a malformed one, when read (:class:`CodecError`).

>>> import numpy as np
>>> value = {(1, "a"): [np.float64(0.5), float("nan")], "x": (None, True, np.arange(3))}
>>> back = loads(dumps(value))
>>> list(back), back[(1, "a")][0].dtype, back["x"][2].tolist()
([(1, 'a'), 'x'], dtype('float64'), [0, 1, 2])
"""

from __future__ import annotations

import base64
import builtins
import json
import math
from typing import Any

import numpy as np

from ..errors import DataWarning

TAG = "$"
# dtype kinds an array or scalar may have: booleans, integers, unsigned, floats, complex, text, bytes
DTYPE_KINDS = "biufcUS"


def _builtin_warnings() -> dict[str, type]:
    return {f"builtins.{name}": obj for name, obj in vars(builtins).items()
            if isinstance(obj, type) and issubclass(obj, Warning)}


def _evalsift_warnings() -> dict[str, type]:
    """evalsift's own warning classes (imported here, so that each is known on any read)."""
    from ..embed.cache import CacheWarning
    from ..embed.onnx import OnnxCacheWarning

    return {f"{c.__module__}.{c.__qualname__}": c for c in (DataWarning, CacheWarning, OnnxCacheWarning)}


_WARNINGS: dict[str, type] | None = None


def warning_classes() -> dict[str, type]:
    """The warning categories a journal line may name, by ``module.qualname``: Python's builtin ones
    and evalsift's (:class:`~evalsift.errors.DataWarning` and the embedding caches' warnings)."""
    global _WARNINGS
    if _WARNINGS is None:
        _WARNINGS = {**_builtin_warnings(), **_evalsift_warnings()}
    return _WARNINGS


class CodecError(ValueError):
    """A tagged-JSON value that is not one :func:`dumps` writes (the caller says which file and line)."""


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def encode(obj: Any) -> Any:
    """``obj`` as a value of plain JSON (see the module doc); ``TypeError`` for a type it does not hold."""
    t = type(obj)
    if obj is None or t is bool or t is int or t is str:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else {TAG: "f", "v": repr(obj)}
    if t is list:
        return [encode(v) for v in obj]
    if t is tuple:
        return {TAG: "t", "v": [encode(v) for v in obj]}
    if t is dict:
        if all(type(k) is str and k != TAG for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {TAG: "d", "v": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, (np.ndarray, np.generic)):
        dtype = obj.dtype
        if dtype.kind not in DTYPE_KINDS or dtype.hasobject:
            raise TypeError(f"a numpy value of dtype {dtype} cannot be written as tagged JSON")
        raw = base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")
        if isinstance(obj, np.generic):
            return {TAG: "s", "dtype": dtype.str, "b64": raw}
        return {TAG: "a", "dtype": dtype.str, "shape": list(obj.shape), "b64": raw}
    if isinstance(obj, type) and issubclass(obj, Warning):
        return {TAG: "w", "mro": [_name(c) for c in obj.__mro__ if issubclass(c, Warning)]}
    raise TypeError(f"a value of type {t.__module__}.{t.__qualname__} cannot be written as tagged JSON "
                    "(evalsift.bench.codec holds plain values, numpy arrays and warning categories)")


def _fail(what: str, value: Any) -> CodecError:
    text = json.dumps(value)
    return CodecError(f"{what}: {text[:80]}{'...' if len(text) > 80 else ''}")


def _dtype(value: dict) -> np.dtype:
    name = value.get("dtype")
    if not isinstance(name, str):
        raise _fail("a numpy value without a dtype name", value)
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise _fail("an unknown numpy dtype", value) from None
    if dtype.kind not in DTYPE_KINDS or dtype.hasobject:
        raise _fail(f"a numpy dtype that is not numbers or text ({dtype})", value)
    return dtype


def _bytes(value: dict) -> bytes:
    raw = value.get("b64")
    if not isinstance(raw, str):
        raise _fail("a numpy value without its bytes", value)
    try:
        return base64.b64decode(raw.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise _fail("a numpy value whose bytes are not base64", value) from None


def decode(value: Any) -> Any:
    """The value :func:`encode` was given; :class:`CodecError` for anything it does not write."""
    t = type(value)
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        return value
    if t is list:
        return [decode(v) for v in value]
    if t is not dict:
        raise _fail("not a JSON value", repr(value))
    if TAG not in value:
        return {k: decode(v) for k, v in value.items()}
    tag = value[TAG]
    if tag == "f":
        if set(value) != {TAG, "v"} or value["v"] not in ("nan", "inf", "-inf"):
            raise _fail("a float tag that is not nan, inf or -inf", value)
        return float(value["v"])
    if tag in ("t", "d"):
        if set(value) != {TAG, "v"} or type(value["v"]) is not list:
            raise _fail(f"a {'tuple' if tag == 't' else 'dict'} tag without its list", value)
        if tag == "t":
            return tuple(decode(v) for v in value["v"])
        out = {}
        for pair in value["v"]:
            if type(pair) is not list or len(pair) != 2:
                raise _fail("a dict entry that is not [key, value]", pair)
            key = decode(pair[0])
            try:
                out[key] = decode(pair[1])
            except TypeError:  # an unhashable key (a list, a dict)
                raise _fail("a dict key that cannot be a key", pair[0]) from None
        return out
    if tag in ("a", "s"):
        keys = {TAG, "dtype", "b64"} | ({"shape"} if tag == "a" else set())
        if set(value) != keys:
            raise _fail("a numpy tag with other fields than " + ", ".join(sorted(keys)), value)
        dtype, raw = _dtype(value), _bytes(value)
        shape = value.get("shape", [])
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise _fail("a numpy shape that is not a list of sizes", value)
        if len(raw) != math.prod(shape) * dtype.itemsize:
            raise _fail(f"a numpy value whose {len(raw)} bytes do not fill shape {shape} of {dtype}", value)
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return arr if tag == "a" else arr[()]
    if tag == "w":
        mro = value.get("mro")
        if set(value) != {TAG, "mro"} or type(mro) is not list or not all(type(n) is str for n in mro):
            raise _fail("a warning tag without its class names", value)
        known = warning_classes()
        for name in mro:
            if name in known:
                return known[name]
        return UserWarning
    raise _fail("an unknown tag", value)


def dumps(obj: Any) -> str:
    """``obj`` as one line of strict JSON (no NaN words; see :func:`encode`)."""
    return json.dumps(encode(obj), allow_nan=False, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The value of a :func:`dumps` line. Strict JSON: a ``NaN`` word is refused (:class:`CodecError`)."""
    def no_constant(word: str) -> Any:
        raise CodecError(f"{word} is not strict JSON")

    return decode(json.loads(text, parse_constant=no_constant))
