"""Embed each distinct text once: an in-process memo and an on-disk SQLite cache.

:func:`embed_texts` deduplicates texts, looks them up in an in-process memo and in an on-disk
SQLite cache (:class:`EmbeddingCache`), encodes only what is missing, and returns rows in input order.

>>> embed_texts(["a cat", "a dog", "a cat"], "tfidf", progress=False).shape[0]
3
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
import sqlite3
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import DataError, ParameterError
from ..progress import progress_bar
from .encoders import DEFAULT_ENCODER, EncoderLike, get_encoder

CACHE_FILENAME = "embeddings.sqlite"
_SQL_CHUNK = 900  # hashes per IN (...) query: under SQLite's oldest variable limit (999)


class CacheWarning(UserWarning):
    """The on-disk embedding cache could not be used; embedding continues without it."""


# --------------------------------------------------------------------------------------------
# The on-disk cache
# --------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$EVALSIFT_CACHE`` if set, else ``~/.cache/evalsift``."""
    env = os.environ.get("EVALSIFT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "evalsift"


def text_hash(text: str) -> str:
    """Hex sha256 of the UTF-8 text (lone surrogates kept): the per-text cache key."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """SQLite store of vectors keyed by ``(encoder cache_key, sha256 of text)``.

    File ``<cache_dir>/embeddings.sqlite``; table ``embeddings(key, hash, dim, vec)`` with vectors
    as little-endian float32 blobs. WAL mode, one short connection per call, ``INSERT OR IGNORE``
    in one transaction per :meth:`put_many`, so several processes can share a file. If the file
    cannot be used (corrupt, unwritable, locked too long) a :class:`CacheWarning` is issued once and
    the cache behaves as empty and read-only from then on; embedding never fails because of it.

    >>> import tempfile
    >>> cache = EmbeddingCache(tempfile.mkdtemp())
    >>> cache.put_many("k", {"h1": np.ones(2)})
    1
    >>> cache.get_many("k", ["h1", "h2"])["h1"].tolist()
    [1.0, 1.0]
    """

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.path = self.dir / CACHE_FILENAME
        self.disabled_reason: str | None = None
        self._ready = False

    @property
    def available(self) -> bool:
        """``False`` once the file turned out unusable."""
        return self.disabled_reason is None

    def get_many(self, key: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors stored under ``key`` for those of ``hashes`` present: ``{hash: float32 vector}``."""
        wanted = list(dict.fromkeys(hashes))
        if not wanted or not self._usable(create=False):
            return {}
        return self._guard(lambda: self._select(key, wanted), {})

    def put_many(self, key: str, items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> int:
        """Store ``(hash, vector)`` pairs under ``key`` in one transaction; returns rows offered."""
        rows = [(key, h, *_vector_blob(v)) for h, v in _pairs(items)]
        if not rows or not self._usable(create=True):
            return 0
        return self._guard(lambda: self._insert(rows), 0)

    def import_vectors(self, key: str, hashes: Iterable[str], matrix: Any, *, chunk: int = 10_000,
                       progress: bool = False) -> int:
        """Bulk-store ``matrix`` row ``i`` under ``(key, hashes[i])``; returns the rows newly written.

        For millions of vectors: ``hashes`` (hex sha256 of each text, :func:`text_hash`) is consumed
        lazily and ``matrix`` (``(n, d)``, anything with ``len`` and slicing ``matrix[a:b]``) is read
        ``chunk`` rows at a time, each chunk one ``executemany`` in its own transaction, so memory
        stays at one chunk and an interrupted import keeps its finished chunks. ``INSERT OR IGNORE``:
        vectors already stored under ``key`` are kept. Vectors of another length than those already
        stored under ``key`` are a :class:`~evalsift.errors.DataError`. Returns 0 when the cache file
        is unusable (a :class:`CacheWarning` says why; :attr:`available` turns false).
        """
        if chunk < 1:
            raise ParameterError(f"chunk must be >= 1, got {chunk}")
        n = len(matrix)
        if n == 0 or not self._usable(create=True):
            return 0
        it = iter(hashes)
        written = 0
        with _progress_bar(None, n, progress, "Importing vectors") as advance:
            for start in range(0, n, chunk):
                vecs = np.ascontiguousarray(matrix[start:start + chunk], dtype="<f4")
                batch = list(itertools.islice(it, len(vecs)))
                if len(batch) != len(vecs) or vecs.ndim != 2:
                    raise DataError(f"import_vectors: {len(batch) + start} hashes for {n} vectors of shape "
                                    f"{vecs.shape[1:]}; give one hash per row of a 2-d matrix")
                if start == 0:
                    self._check_dim(key, vecs.shape[1])
                dim = vecs.shape[1]
                rows = [(key, h, dim, v.tobytes()) for h, v in zip(batch, vecs)]
                done = self._guard(lambda rows=rows: self._insert_new(rows), None)
                if done is None:
                    break
                written += done
                advance(len(rows))
        return written

    def require_writable(self) -> None:
        """Create the file if absent and check it can be used; else a :class:`~evalsift.errors.DataError`
        naming it and the fix (for commands whose whole job is to fill the cache)."""
        if not self._usable(create=True):
            raise DataError(f"the embedding cache {self.path} cannot be used ({self.disabled_reason}); set "
                            "EVALSIFT_CACHE to a writable folder (or delete the file to rebuild it)", field="cache")

    def clear(self, key: str | None = None) -> int:
        """Delete the vectors of one encoder ``key`` (or all); returns rows deleted."""
        if not self._usable(create=False):
            return 0
        sql, args = ("DELETE FROM embeddings", ()) if key is None else (
            "DELETE FROM embeddings WHERE key=?", (key,))
        return self._guard(lambda: self._execute(sql, args), 0)

    def stats(self) -> dict[str, Any]:
        """Path, availability, file size in bytes, total rows and rows per encoder key."""
        out: dict[str, Any] = {"path": str(self.path), "available": self.available,
                               "bytes": _file_bytes(self.path), "rows": 0, "keys": {}}
        if self._usable(create=False):
            per_key = self._guard(self._rows_per_key, {})
            out.update(rows=sum(per_key.values()), keys=per_key, available=self.available)
        return out

    # -- internals ---------------------------------------------------------------------------

    def _usable(self, create: bool) -> bool:
        """Open (creating when asked) and initialise the file once; ``False`` if disabled/absent."""
        if self.disabled_reason is not None:
            return False
        if self._ready:
            return True
        if not create and not self.path.exists():
            return False
        return self._guard(self._init_db, False)

    def _init_db(self) -> bool:
        """Create the directory, table and WAL mode."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(self._connect()) as conn:
            with contextlib.suppress(sqlite3.OperationalError):  # e.g. a filesystem without WAL
                conn.execute("PRAGMA journal_mode=WAL")
            with conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings (key TEXT NOT NULL, hash TEXT NOT NULL, "
                    "dim INT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (key, hash))"
                )
            conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchall()
        self._ready = True
        return True

    def _connect(self) -> sqlite3.Connection:
        """A fresh connection that waits up to 30 s for other writers."""
        return sqlite3.connect(self.path, timeout=30.0)

    def _guard(self, fn: Any, fallback: Any) -> Any:
        """Run ``fn``; on a database/file error warn once, disable the cache, return ``fallback``."""
        try:
            return fn()
        except (sqlite3.Error, OSError) as exc:
            self.disabled_reason = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                f"embedding cache {self.path} is unusable ({self.disabled_reason}); continuing "
                "without the disk cache. Delete the file (or set EVALSIFT_CACHE / cache_dir to "
                "another folder) to rebuild it.",
                CacheWarning,
                stacklevel=4,
            )
            return fallback

    def _select(self, key: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Read in chunks of ``_SQL_CHUNK`` hashes; skip rows whose blob size is wrong."""
        found: dict[str, np.ndarray] = {}
        with contextlib.closing(self._connect()) as conn:
            for start in range(0, len(hashes), _SQL_CHUNK):
                chunk = hashes[start:start + _SQL_CHUNK]
                sql = ("SELECT hash, dim, vec FROM embeddings WHERE key=? AND hash IN "
                       f"({','.join('?' * len(chunk))})")
                for h, dim, blob in conn.execute(sql, (key, *chunk)):
                    if len(blob) == 4 * dim:
                        found[h] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    def _insert(self, rows: list[tuple[str, str, int, bytes]]) -> int:
        """``INSERT OR IGNORE`` all rows in one transaction (another process may have added them)."""
        with contextlib.closing(self._connect()) as conn, conn:
            conn.executemany("INSERT OR IGNORE INTO embeddings (key, hash, dim, vec) VALUES (?,?,?,?)", rows)
        return len(rows)

    def _insert_new(self, rows: list[tuple[str, str, int, bytes]]) -> int:
        """``INSERT OR IGNORE`` in one transaction; returns the rows actually inserted."""
        with contextlib.closing(self._connect()) as conn, conn:
            before = conn.total_changes
            conn.executemany("INSERT OR IGNORE INTO embeddings (key, hash, dim, vec) VALUES (?,?,?,?)", rows)
            return conn.total_changes - before

    def _check_dim(self, key: str, dim: int) -> None:
        """Vectors already stored under ``key`` must have length ``dim``."""
        def stored() -> Any:
            with contextlib.closing(self._connect()) as conn:
                return conn.execute("SELECT dim FROM embeddings WHERE key=? LIMIT 1", (key,)).fetchone()

        row = self._guard(stored, None)
        if row is not None and row[0] != dim:
            raise DataError(f"the cache {self.path} holds {row[0]}-d vectors under {key!r}; these are {dim}-d. Vectors "
                            "from another model? Import them under that model's encoder", field="vectors")

    def _execute(self, sql: str, args: tuple[Any, ...]) -> int:
        """Run one write statement in a transaction; returns the affected row count."""
        with contextlib.closing(self._connect()) as conn, conn:
            return conn.execute(sql, args).rowcount

    def _rows_per_key(self) -> dict[str, int]:
        """``{key: rows}``."""
        with contextlib.closing(self._connect()) as conn:
            return dict(conn.execute("SELECT key, COUNT(*) FROM embeddings GROUP BY key ORDER BY key"))


def _pairs(items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> Iterable[tuple[str, Any]]:
    """``(hash, vector)`` pairs from a mapping or an iterable of pairs."""
    return items.items() if isinstance(items, Mapping) else items


def _vector_blob(vec: Any) -> tuple[int, bytes]:
    """``(dim, little-endian float32 bytes)`` of a 1-d vector."""
    arr = np.asarray(vec, dtype="<f4").ravel()
    return arr.size, arr.tobytes()


def _file_bytes(path: Path) -> int:
    """Size of the database plus its WAL file, 0 if absent."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


# --------------------------------------------------------------------------------------------
# embed_texts
# --------------------------------------------------------------------------------------------

_MEMO: dict[str, dict[str, np.ndarray]] = {}


def clear_memo(encoder: str | EncoderLike | None = None) -> None:
    """Forget the in-process vectors of one encoder (name, instance or cache_key) or of all."""
    if encoder is None:
        _MEMO.clear()
        return
    key = encoder if isinstance(encoder, str) and encoder in _MEMO else get_encoder(encoder).cache_key
    _MEMO.pop(key, None)


def embed_texts(
    texts: Iterable[str | None],
    encoder: str | EncoderLike = DEFAULT_ENCODER,
    *,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    batch_size: int | None = None,
) -> np.ndarray:
    """Embed ``texts`` (rows in input order, float32), encoding each distinct text once.

    With ``cache=True`` a text is looked up first in an in-process memo, then in the SQLite file
    ``<cache_dir>/embeddings.sqlite`` (default :func:`default_cache_dir`), keyed by
    ``(encoder.cache_key, sha256(text))``; only texts found in neither are encoded, in batches of
    ``batch_size`` (default: the encoder's own, else 64; shortest first, to limit padding), and each batch is stored at once, so an
    interrupted run keeps its finished batches. ``cache=False`` uses neither memo nor disk.
    Encoders with ``cacheable = False`` (TF-IDF) are called once on all distinct texts and never
    cached; so are encoders with ``memoize = False`` (:class:`~evalsift.embed.PrecomputedEncoder`,
    whose vectors are stored already: neither memo nor disk would save work, only copy them).
    ``None`` and float NaN (missing values from a table) are embedded as the empty string ``""``. A rich progress bar shows when ``progress`` is true and more than one batch is encoded.

    >>> embed_texts(["b a", None, "b a"], "tfidf", progress=False).shape
    (3, 2)
    """
    if batch_size is not None and batch_size < 1:
        raise ParameterError(f"batch_size must be >= 1, got {batch_size}")
    enc = get_encoder(encoder)
    unique, inverse = _dedupe(_clean_texts(texts))
    if not unique:
        return np.zeros((0, enc.dim or 0), dtype=np.float32)
    if not getattr(enc, "cacheable", True) or not getattr(enc, "memoize", True):
        # corpus-dependent (tfidf), or vectors at hand already (precomputed): one call on the distinct texts
        return _checked(enc, enc.encode(unique), len(unique))[inverse]
    if not cache:
        return _encode_missing(enc, unique, batch_size, progress, on_batch=None)[inverse]
    vectors = _cached_unique(enc, unique, EmbeddingCache(cache_dir), batch_size, progress)
    return vectors[inverse]


def _clean_texts(texts: Iterable[str | None]) -> list[str]:
    """Texts as a list of str: ``None``/NaN become ``""``; anything else non-str is an error."""
    if isinstance(texts, (str, bytes)):
        raise ParameterError("texts must be a list of strings, not a single string; wrap it: [text]")
    out = []
    for i, t in enumerate(texts):
        if isinstance(t, str):
            out.append(t)
        elif t is None or (isinstance(t, float) and math.isnan(t)):
            out.append("")
        else:
            raise DataError(f"texts[{i}] is {type(t).__name__} {t!r}; expected a string (or None for a missing text)")
    return out


def _dedupe(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts in first-seen order and, per input, the index of its distinct text."""
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.intp, count=len(texts))
    return list(index), inverse


def _cached_unique(enc: Any, unique: list[str], disk: EmbeddingCache, batch_size: int,
                   progress: bool) -> np.ndarray:
    """Vectors of ``unique`` from memo, then disk, then the encoder; updates memo and disk."""
    key = enc.cache_key
    memo = _MEMO.setdefault(key, {})
    missing = [t for t in unique if t not in memo]
    if missing:
        hashes = {t: text_hash(t) for t in missing}
        stored = disk.get_many(key, hashes.values())
        for t in missing:
            if hashes[t] in stored:
                memo[t] = stored[hashes[t]]
        to_encode = [t for t in missing if t not in memo]

        def store(batch: list[str], vecs: np.ndarray) -> None:
            memo.update(zip(batch, vecs))
            disk.put_many(key, [(hashes[t], v) for t, v in zip(batch, vecs)])

        if to_encode:
            _encode_missing(enc, to_encode, batch_size, progress, on_batch=store)
    return np.stack([memo[t] for t in unique]).astype(np.float32, copy=False)


def _encode_missing(enc: Any, texts: list[str], batch_size: int | None, progress: bool,
                    on_batch: Any) -> np.ndarray:
    """Encode ``texts`` in length-sorted batches; call ``on_batch(batch, vecs)``; rows in input order.
    ``batch_size`` None: the encoder's ``call_batch`` (a neural encoder loads first: on a GPU it takes more texts
    per call), else 64."""
    if batch_size is None:
        if hasattr(enc, "call_batch") and hasattr(enc, "load"):
            enc.load()
        size = getattr(enc, "call_batch", None)
        batch_size = size if isinstance(size, int) and size >= 1 else 64
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: np.ndarray | None = None
    with _progress_bar(enc, len(texts), progress and len(texts) > batch_size) as advance:
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            batch = [texts[i] for i in idx]
            vecs = _checked(enc, enc.encode(batch), len(batch))
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            if on_batch is not None:
                on_batch(batch, vecs)
            advance(len(batch))
    assert out is not None
    return out


def _checked(enc: Any, vecs: Any, n: int) -> np.ndarray:
    """``vecs`` as float32 ``(n, d)``, or a clear error naming the encoder."""
    arr = np.asarray(vecs, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise DataError(
            f"encoder '{getattr(enc, 'name', enc)}' returned shape {arr.shape} for {n} texts; "
            f"expected ({n}, dim)"
        )
    return arr


def _progress_bar(enc: Any, total: int, show: bool, description: str | None = None
                  ) -> contextlib.AbstractContextManager[Any]:
    """The shared rich bar (:mod:`evalsift.progress`): off unless ``show``; ``EVALSIFT_QUIET`` also hides it."""
    description = description or f"Embedding with {getattr(enc, 'name', 'encoder')}"
    return progress_bar(total, description, quiet=None if show else True)
