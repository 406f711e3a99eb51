"""Precomputed embeddings: vectors computed elsewhere (a GPU, another tool), served from a file.

Embed a million outputs wherever it is cheap, write one file, select here:
``evalsift select diffuse --embeddings vectors.npz ...`` or, in Python,
``DiffUse(encoder=PrecomputedEncoder.from_file("vectors.npz"))``. :class:`PrecomputedEncoder` looks
each text up by the sha256 of its UTF-8 bytes (:func:`evalsift.embed.text_hash`); a text the file
lacks is a :class:`~evalsift.errors.DataError`, never a silent zero vector.

File formats (the suffix decides; anything else is refused):

- **NumPy** ``.npz`` (``np.savez``): an array ``vectors`` of shape ``(n, d)`` (any float dtype,
  served as float32) and the keys, one per row:

  - ``text_hash`` ``(n,)`` strings: the 64 hex digits of sha256 of the UTF-8 output text, i.e.
    ``hashlib.sha256(text.encode("utf-8")).hexdigest()`` (= ``evalsift.embed.text_hash``); or
  - ``texts`` ``(n,)`` strings: the texts themselves (hashed on load, not kept); or
  - ``item_id`` ``(n,)`` and ``system`` ``(n,)`` strings: the output of ``system`` for item
    ``item_id`` in the dataset (``--data``), whose text is then looked up in the dataset.

  Save strings as a str array (``np.array(keys, dtype=str)``), not an object array.
- **Parquet** ``.parquet`` / ``.pq`` (needs ``pyarrow``: ``pip install 'evalsift[parquet]'``): a
  column ``vector`` (``list``, ``large_list`` or ``fixed_size_list`` of floats) and the key columns
  named as above.

When a file holds several kinds of keys, ``text_hash`` is used first, then ``texts``, then
``item_id`` + ``system``; other arrays or columns are ignored.

Rules checked on load, each failure a DataError naming the file, the row and the fix: at least one
row; every vector of one length ``d >= 1`` and finite; hashes of 64 hex digits; no key twice (one row
per text, or per item and system). For item + system keys: an item or a system the dataset lacks is
an error (with a suggestion); rows whose output is missing from the dataset are ignored, and rows
of different items or systems whose output texts are identical keep the vector of the first such
row (file order) -- both reported as a :class:`~evalsift.errors.DataWarning` with the count when
they happen (identical texts with vectors within float32 noise are not reported).

Memory: the vectors are one float32 matrix, loaded once (Parquet row batch by row batch into a
preallocated matrix); the keys are one sorted array of 32-byte sha256 digests with their 8-byte
prefixes as ``uint64`` for :func:`numpy.searchsorted` (a hit is confirmed on the full digest, so
there is no collision risk), and one row index per key -- about 100 bytes per row besides the
vectors; no Python object per row is kept. Store vectors as float32: a float64 file is converted,
which needs the float64 array and the float32 copy in memory at once.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, DataWarning, ParameterError, missing_dependency, suggest
from .encoders import Encoder

SUFFIXES = (".npz", ".parquet", ".pq")
KEY_FIELDS = ("text_hash", "texts", "item_id+system")
_CHUNK = 1 << 16  # rows per step when parsing keys, checking values, hashing or writing
_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate("0123456789abcdef"):
    _HEX[ord(_c)] = _HEX[ord(_c.upper())] = _i
_HEX_CHARS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


class PrecomputedEncoder(Encoder):
    """An encoder that serves vectors from a file instead of computing them.

    Build one with :meth:`from_file` (``.npz`` / ``.parquet``, formats in the module docstring) or
    :meth:`from_arrays`. ``encode(texts)`` returns the stored rows of ``texts`` (float32), looked up
    by sha256; texts the file lacks raise a :class:`~evalsift.errors.DataError` with their count and
    the first one.

    - ``name``: ``precomputed:<file name>``; ``dim``: the vectors' length; ``source``: the file.
    - ``cache_key``: ``precomputed:sha256=<hex>``, a digest of the text-to-vector mapping itself
      (sorted text hashes and their vectors), so the same vectors from an ``.npz`` or a ``.parquet``
      file get the same key and any change to them a new key. Computed on first use (it reads every
      vector once).
    - ``memoize = False``: :func:`~evalsift.embed.embed_texts` calls ``encode`` on the distinct texts
      directly, without its in-process memo or the SQLite cache (the vectors are on disk already).
      To put them into the cache under a model's key, use ``evalsift embed import``.

    >>> enc = PrecomputedEncoder.from_arrays(np.eye(2), texts=["a cat", "a dog"])
    >>> enc.encode(["a dog", "a cat", "a dog"]).tolist()
    [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    >>> enc.dim, len(enc)
    (2, 2)
    """

    memoize = False

    def __init__(self, vectors: np.ndarray, digests: np.ndarray, rows: np.ndarray, *, source: str = "arrays") -> None:
        """Low level: ``digests`` sorted sha256 digests (``S32``), ``rows`` their rows of ``vectors``.

        Use :meth:`from_file` or :meth:`from_arrays`, which validate and sort.
        """
        self._vectors = vectors
        self._digests = digests
        self._rows = rows
        self._prefix = _prefixes(digests)
        self.source = source
        self.name = f"precomputed:{Path(source).name}"
        self.dim = int(vectors.shape[1])
        self._key: str | None = None

    # -- construction --------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path, pool: Any = None) -> PrecomputedEncoder:
        """Load an ``.npz`` or ``.parquet`` file; ``pool`` (a :class:`~evalsift.pool.Pool`) resolves
        files keyed by ``item_id`` + ``system`` to output texts and is ignored for the other keys."""
        p = Path(path).expanduser()
        suffix = p.suffix.lower()
        if suffix not in SUFFIXES:
            raise DataError(f"{path}: embeddings must be a NumPy .npz or a Parquet .parquet/.pq file, got "
                            f"'{p.suffix or p.name}'; see docs/cli.md (precomputed embeddings) for the layout",
                            field="embeddings")
        if not p.is_file():
            raise DataError(f"{path}: no such embeddings file", field="embeddings")
        load = _load_npz if suffix == ".npz" else _load_parquet
        vectors, digests, valid, field = load(p, pool)
        return cls._build(vectors, digests, valid, field, str(path))

    @classmethod
    def from_arrays(cls, vectors: Any, *, text_hash: Sequence[str] | None = None, texts: Sequence[str] | None = None,
                    item_id: Sequence[Any] | None = None, system: Sequence[Any] | None = None, pool: Any = None,
                    source: str = "arrays") -> PrecomputedEncoder:
        """From in-memory arrays: ``vectors`` ``(n, d)`` and one kind of key (as in the file formats)."""
        given = {k: v for k, v in (("text_hash", text_hash), ("texts", texts), ("item_id", item_id),
                                   ("system", system)) if v is not None}
        arrays = {k: np.asarray(v) if k != "texts" else v for k, v in given.items()}
        vectors = _vector_matrix(np.asarray(vectors), source)
        digests, valid, field = _digests_from(arrays, len(vectors), pool, source, "keyword argument")
        return cls._build(vectors, digests, valid, field, source)

    @classmethod
    def _build(cls, vectors: np.ndarray, digests: np.ndarray, valid: np.ndarray | None, field: str,
               source: str) -> PrecomputedEncoder:
        """Check values, sort the keys, apply the duplicate rules."""
        _check_finite(vectors, source)
        rows = np.arange(len(digests)) if valid is None else np.flatnonzero(valid)
        order = np.argsort(digests[rows], kind="stable")  # stable: the first row of equal texts comes first
        rows = rows[order]
        digests = digests[rows]
        same = digests[1:] == digests[:-1]
        if same.any():
            if field != "item_id+system":
                j = int(np.flatnonzero(same)[0])
                a, b = sorted((int(rows[j]), int(rows[j + 1])))
                shown = _hex(digests[j:j + 1])[0][:12]
                raise DataError(f"{source}: rows {a} and {b} have the same {field} ({shown}...); keep "
                                "one row per text (e.g. drop repeats with np.unique(..., return_index=True))",
                                field=field)
            first = np.maximum.accumulate(np.where(np.r_[True, ~same], np.arange(len(rows)), 0))
            dup = np.flatnonzero(np.r_[False, same])
            conflicts = 0
            for s in range(0, len(dup), _CHUNK):  # identical texts whose vectors differ beyond float32 noise
                c = dup[s:s + _CHUNK]
                close = np.isclose(vectors[rows[first[c]]], vectors[rows[c]], rtol=1e-3, atol=1e-5)
                conflicts += int((~close.all(axis=1)).sum())
            if conflicts:
                warnings.warn(f"{source}: {conflicts} row(s) give a different vector to an output text that an earlier "
                              "row (another item or system with the identical text) already gave; the first row's "
                              "vector is used for that text", DataWarning, stacklevel=3)
            keep = np.r_[True, ~same]
            rows, digests = rows[keep], digests[keep]
        return cls(vectors, digests, rows, source=source)

    # -- the Encoder interface -----------------------------------------------------------------

    def __len__(self) -> int:
        """Number of distinct texts with a vector."""
        return len(self._digests)

    @property
    def cache_key(self) -> str:
        """``precomputed:sha256=<hex>`` of the sorted text hashes and their vectors (computed once)."""
        if self._key is None:
            h = hashlib.sha256(b"evalsift-precomputed-v1\0")
            h.update(self._digests.tobytes())
            for start in range(0, len(self), _CHUNK):
                h.update(np.ascontiguousarray(self.vector_rows[start:start + _CHUNK], dtype="<f4").tobytes())
            self._key = f"precomputed:sha256={h.hexdigest()}"
        return self._key

    def encode(self, texts: list[str]) -> np.ndarray:
        """The stored float32 vectors of ``texts``, shape ``(len(texts), dim)``."""
        return np.asarray(self._vectors[self._rows[self._positions(texts)]], dtype=np.float32)

    def subset(self, texts: Iterable[str]) -> PrecomputedEncoder:
        """A small encoder holding only the vectors of ``texts`` (e.g. to hand to worker processes:
        pickling this encoder copies all its vectors)."""
        pos = np.unique(self._positions(texts))
        return PrecomputedEncoder(self._vectors[self._rows[pos]], self._digests[pos], np.arange(len(pos)),
                                  source=self.source)

    def _positions(self, texts: Iterable[str]) -> np.ndarray:
        """Positions of ``texts`` among the sorted keys; texts without a vector are one DataError."""
        texts = list(texts)
        pos = self.lookup(_text_digests(texts))
        missing = np.flatnonzero(pos < 0)
        if missing.size:
            first = texts[int(missing[0])]
            raise DataError(
                f"{missing.size} of {len(texts)} text(s) have no vector in {self.source} (first: {_short(first)!r}); "
                "embed those texts too and add them to the file (keys: sha256 of the UTF-8 text, see docs/cli.md), "
                "or embed here with --encoder instead of --embeddings", field="embeddings")
        return pos

    def lookup(self, digests: np.ndarray) -> np.ndarray:
        """Positions (in :meth:`hex_hashes` order) of ``S32`` sha256 ``digests``; -1 where absent."""
        if len(digests) == 0 or len(self._digests) == 0:
            return np.full(len(digests), -1, dtype=np.intp)
        n, prefix = len(self._digests), _prefixes(digests)
        pos = np.minimum(np.searchsorted(self._prefix, prefix), n - 1)
        hit = self._digests[pos] == digests
        odd = np.flatnonzero(~hit & (self._prefix[pos] == prefix))  # an 8-byte prefix shared
        if odd.size:
            exact = np.minimum(np.searchsorted(self._digests, digests[odd]), n - 1)
            pos[odd], hit[odd] = exact, self._digests[exact] == digests[odd]
        return np.where(hit, pos, -1)

    # -- reading everything (bulk import, export) ----------------------------------------------

    def hex_hashes(self) -> Iterator[str]:
        """The text hashes (hex sha256), in the order of :attr:`vector_rows`."""
        for start in range(0, len(self), _CHUNK):
            yield from _hex(self._digests[start:start + _CHUNK])

    @property
    def vector_rows(self) -> _Rows:
        """The vectors in :meth:`hex_hashes` order, as a sliceable view (``len``, ``shape``, ``[a:b]``)."""
        return _Rows(self._vectors, self._rows)

    def __repr__(self) -> str:
        return f"PrecomputedEncoder({self.source!r}, {len(self)} texts x {self.dim})"


class _Rows:
    """Rows ``rows`` of ``matrix`` without copying them all: slicing gathers only the slice."""

    def __init__(self, matrix: np.ndarray, rows: np.ndarray) -> None:
        self.matrix, self.rows = matrix, rows
        self.shape = (len(rows), matrix.shape[1])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice) -> np.ndarray:
        return self.matrix[self.rows[index]]


def save_embeddings(path: str | Path, texts: Iterable[str], vectors: Any) -> Path:
    """Write ``texts``' ``vectors`` as ``text_hash`` + vectors to ``.npz`` or ``.parquet``.

    The file :meth:`PrecomputedEncoder.from_file` and ``evalsift embed import`` read.
    """
    p = Path(path)
    hashes = np.array(_hex(_text_digests(texts)), dtype="U64")
    vectors = _vector_matrix(np.asarray(vectors), str(path))
    if len(hashes) != len(vectors):
        raise ParameterError(f"{len(hashes)} texts but {len(vectors)} vectors")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        from ..io._common import atomic_file

        with atomic_file(p, "wb") as fh:  # whole or not at all
            np.savez(fh, text_hash=hashes, vectors=vectors)
    elif suffix in (".parquet", ".pq"):
        pa, pq, _ = _pyarrow("Writing Parquet embeddings")
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
        table = pa.table({"text_hash": pa.array(hashes.tolist(), pa.string()), "vector": column})
        from ..io._common import atomic_file

        with atomic_file(p, "wb") as fh:
            pq.write_table(table, fh, row_group_size=_CHUNK)
    else:
        raise DataError(f"{path}: write embeddings as .npz or .parquet, got '{p.suffix or p.name}'", field="out")
    return p


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------


def _load_npz(path: Path, pool: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str]:
    """``(vectors, digests, valid rows or None, key field)`` of an ``.npz`` file."""
    try:
        npz = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path}: not a readable NumPy .npz file ({exc}); write it with np.savez",
                        field="embeddings") from None
    with npz:
        names = list(npz.files)
        if "vectors" not in names:
            raise DataError(f"{path}: no array 'vectors' (it has: {', '.join(names) or 'nothing'}); expected "
                            f"vectors (n, d) and text_hash, texts or item_id + system", field="vectors")
        arrays = {k: _npz_array(npz, k, path) for k in ("vectors", "text_hash", "texts", "item_id", "system")
                  if k in names}
    vectors = _vector_matrix(arrays.pop("vectors"), str(path))
    return (vectors, *_digests_from(arrays, len(vectors), pool, str(path), "array"))


def _npz_array(npz: Any, key: str, path: Path) -> np.ndarray:
    try:
        return npz[key]
    except ValueError:  # an object array (needs pickle)
        raise DataError(f"{path}: array '{key}' is an object array, which evalsift does not unpickle; save strings "
                        "as a str array (np.array(values, dtype=str))", field=key) from None


def _pyarrow(purpose: str) -> tuple[Any, Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_dependency("pyarrow", "parquet", purpose) from None
    return pa, pq, pc


def _load_parquet(path: Path, pool: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str]:
    """``(vectors, digests, valid rows or None, key field)`` of a Parquet file, one row batch at a time."""
    pa, pq, pc = _pyarrow("Reading Parquet embeddings")
    try:
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)  # stream pages: memory ~ the matrix
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})", field="embeddings") from None
    names = pf.schema_arrow.names
    if "vector" not in names:
        raise DataError(f"{path}: no column 'vector' (it has: {', '.join(names)}); expected vector (a list of floats "
                        "per row) and text_hash, texts or item_id + system", field="vector")
    typ = pf.schema_arrow.field("vector").type
    if not (pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)) or not (
            pa.types.is_floating(typ.value_type) or pa.types.is_integer(typ.value_type)):
        raise DataError(f"{path}: column 'vector' is {typ}; expected a list of floats per row", field="vector")
    n = pf.metadata.num_rows
    if n == 0:
        raise DataError(f"{path}: the file holds no vectors", field="vector")
    vectors, start = None, 0
    width = typ.list_size if pa.types.is_fixed_size_list(typ) else 1024  # batches of ~16 MB: arrow's buffers stay small
    for batch in pf.iter_batches(batch_size=max(256, (1 << 22) // max(width, 1)), columns=["vector"]):
        col = batch.column(0)
        if col.null_count:
            bad = start + int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataError(f"{path}: row {bad} has no vector (null)", field="vector")
        lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        if vectors is None:
            d = int(lengths[0])
            if d == 0:
                raise DataError(f"{path}: row 0 has an empty vector", field="vector")
            vectors = np.empty((n, d), dtype=np.float32)
        wrong = np.flatnonzero(lengths != vectors.shape[1])
        if wrong.size:
            raise DataError(f"{path}: row {start + int(wrong[0])} has {int(lengths[wrong[0]])} values but row 0 has "
                            f"{vectors.shape[1]}; every vector must have the same length", field="vector")
        values = pc.list_flatten(col).to_numpy(zero_copy_only=False)  # nulls inside a vector become NaN
        vectors[start:start + len(col)] = values.reshape(len(col), -1)
        start += len(col)
    field = _key_field(set(names), str(path), "column")
    if field == "item_id+system":
        cols = {}
        for k in ("item_id", "system"):
            col = pc.cast(pf.read(columns=[k]).column(0), pa.string())
            _no_nulls(col, k, path, pc)
            uniques = pc.unique(col)
            cols[k] = (uniques.to_pylist(), pc.index_in(col, value_set=uniques).to_numpy())
        return (vectors, *_digests_from_items(cols["item_id"], cols["system"], pool, str(path)), field)
    digests = np.empty(n, dtype="S32")
    start = 0
    for batch in pf.iter_batches(batch_size=_CHUNK, columns=[field]):
        col = batch.column(0)
        _no_nulls(col, field, path, pc, start)
        values = col.to_pylist()
        digests[start:start + len(values)] = (_hex_digests(np.array(values, dtype=str), str(path), start)
                                              if field == "text_hash" else _text_digests(_as_str(values)))
        start += len(values)
    return vectors, digests, None, field


def _no_nulls(col: Any, field: str, path: Path, pc: Any, start: int = 0) -> None:
    if col.null_count:
        bad = start + int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
        raise DataError(f"{path}: row {bad} has no {field} (null)", field=field)


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------


def _key_field(names: set[str], source: str, what: str) -> str:
    """Which kind of key the file uses (``text_hash`` before ``texts`` before ``item_id`` + ``system``)."""
    for k in ("text_hash", "texts"):
        if k in names:
            return k
    if {"item_id", "system"} <= names:
        return "item_id+system"
    half = next((k for k in ("item_id", "system") if k in names), None)
    if half:
        other = "system" if half == "item_id" else "item_id"
        raise DataError(f"{source}: has {half} but no {other} {what}; item keys need both (or use text_hash)",
                        field=other)
    raise DataError(f"{source}: no key {what}: expected text_hash (hex sha256 of the UTF-8 text), texts, or item_id "
                    "+ system, one per vector", field="text_hash")


def _digests_from(arrays: dict[str, Any], n: int, pool: Any, source: str,
                  what: str) -> tuple[np.ndarray, np.ndarray | None, str]:
    """``(digests, valid rows or None, key field)`` from in-memory key arrays of ``n`` rows."""
    field = _key_field(set(arrays), source, what)
    used = ("item_id", "system") if field == "item_id+system" else (field,)
    for k in used:
        if len(arrays[k]) != n:
            raise DataError(f"{source}: {k} has {len(arrays[k])} rows but vectors has {n}; one key per vector",
                            field=k)
    if field == "text_hash":
        return _hex_digests(np.asarray(arrays[field]), source), None, field
    if field == "texts":
        texts = arrays[field]
        if isinstance(texts, np.ndarray) and texts.dtype.kind not in "US":
            raise DataError(f"{source}: texts must be strings, got dtype {texts.dtype}", field="texts")
        digests = np.empty(n, dtype="S32")
        for start in range(0, n, _CHUNK):
            digests[start:start + _CHUNK] = _text_digests(_as_str(texts[start:start + _CHUNK]))
        return digests, None, field
    cols = {}
    for k in used:
        uniques, codes = np.unique(np.asarray(arrays[k]).astype(str), return_inverse=True)
        cols[k] = (uniques.tolist(), codes.ravel())
    return (*_digests_from_items(cols["item_id"], cols["system"], pool, source), field)


def _as_str(values: Any) -> list[str]:
    return [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v) for v in list(values)]


def _digests_from_items(items: tuple[list[str], np.ndarray], systems: tuple[list[str], np.ndarray], pool: Any,
                        source: str) -> tuple[np.ndarray, np.ndarray]:
    """Digests of the pool's output texts for (item, system) rows given as ``(distinct values, codes)``."""
    if pool is None:
        raise DataError(f"{source}: vectors keyed by item_id + system need the dataset to find the output texts; "
                        "give --data SPEC (Python: from_file(path, pool=pool)), or key the file by text_hash",
                        field="item_id")
    (item_names, item_codes), (sys_names, sys_codes) = items, systems
    position = {iid: i for i, iid in enumerate(pool.item_ids)}
    unknown = [name for name in item_names if name not in position]
    if unknown:
        hint = suggest(unknown[0], position) if len(position) <= 50_000 else ""
        raise DataError(f"{source}: {len(unknown)} item_id(s) are not in the data {pool.name!r} (first: {unknown[0]!r})."
                        f"{hint} Were the vectors made for another dataset?", field="item_id", item_id=unknown[0])
    unknown = [name for name in sys_names if name not in pool.outputs]
    if unknown:
        raise DataError(f"{source}: system {unknown[0]!r} is not in the data {pool.name!r}."
                        f"{suggest(unknown[0], pool.systems)} Systems: {', '.join(pool.systems[:12])}",
                        field="system", system=unknown[0])
    _check_unique_pairs(item_codes, sys_codes, item_names, sys_names, source)
    table = np.zeros((len(sys_names), pool.n_items), dtype="S32")
    has = np.zeros((len(sys_names), pool.n_items), dtype=bool)
    for s, name in enumerate(sys_names):
        outs = pool.outputs[name]
        present = [i for i, o in enumerate(outs) if isinstance(o, str)]
        has[s, present] = True
        table[s, present] = _text_digests([outs[i] for i in present])
    item_pos = np.asarray([position[name] for name in item_names], dtype=np.intp)[item_codes]
    valid = has[sys_codes, item_pos]
    if not valid.all():
        warnings.warn(f"{source}: {int((~valid).sum())} row(s) name an item and system without an output in the data; "
                      "ignored", DataWarning, stacklevel=4)
    return table[sys_codes, item_pos], valid


def _check_unique_pairs(item_codes: np.ndarray, sys_codes: np.ndarray, item_names: list[str], sys_names: list[str],
                        source: str) -> None:
    pair = item_codes.astype(np.int64) * len(sys_names) + sys_codes
    order = np.argsort(pair, kind="stable")
    twice = np.flatnonzero(pair[order][1:] == pair[order][:-1])
    if twice.size:
        a, b = sorted((int(order[twice[0]]), int(order[twice[0] + 1])))
        item, system = item_names[item_codes[a]], sys_names[sys_codes[a]]
        raise DataError(f"{source}: rows {a} and {b} both give item {item!r}, system {system!r}; keep one row per "
                        "item and system", field="item_id", item_id=item, system=system)


def _text_digests(texts: Iterable[str]) -> np.ndarray:
    """sha256 digests (``S32``) of the UTF-8 texts (lone surrogates kept, as :func:`text_hash`)."""
    joined = b"".join(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts)
    return np.frombuffer(joined, dtype="S32").copy() if joined else np.zeros(0, dtype="S32")


def _hex_digests(hashes: np.ndarray, source: str, offset: int = 0) -> np.ndarray:
    """``S32`` digests of 64-hex-digit strings, chunk by chunk; the first malformed row is a DataError."""
    if hashes.ndim != 1 or hashes.dtype.kind not in "US":
        raise DataError(f"{source}: text_hash must be a 1-d array of strings (hex sha256), got "
                        f"{hashes.dtype} of shape {hashes.shape}", field="text_hash")
    unicode = hashes.dtype.kind == "U"
    width = hashes.dtype.itemsize // (4 if unicode else 1)  # characters per element
    out = np.empty(len(hashes), dtype="S32")
    for start in range(0, len(hashes), _CHUNK):
        chunk = np.ascontiguousarray(hashes[start:start + _CHUNK])
        ok = np.char.str_len(chunk) == 64
        if width >= 64:
            codes = chunk.view(np.uint32 if unicode else np.uint8).reshape(len(chunk), width)[:, :64]
            nibbles = _HEX[np.minimum(codes, 255)]  # code points above 255 -> 255, like any non-hex character
            ok &= (nibbles != 255).all(axis=1)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise DataError(f"{source}: text_hash of row {offset + start + i} is {_short(str(chunk[i]))!r}, not 64 hex "
                            "digits; it must be hashlib.sha256(text.encode('utf-8')).hexdigest() of the output text "
                            "(evalsift.embed.text_hash)", field="text_hash")
        raw = np.ascontiguousarray((nibbles[:, 0::2] << 4) | nibbles[:, 1::2])
        out[start:start + len(chunk)] = raw.view("S32").ravel()
    return out


def _hex(digests: np.ndarray) -> list[str]:
    """Hex strings of ``S32`` digests (vectorised; element access would drop trailing zero bytes)."""
    raw = np.ascontiguousarray(digests).view(np.uint8).reshape(-1, 32)
    out = np.empty((len(raw), 64), dtype=np.uint8)
    out[:, 0::2], out[:, 1::2] = _HEX_CHARS[raw >> 4], _HEX_CHARS[raw & 15]
    return out.view("S64").ravel().astype("U64").tolist()


def _prefixes(digests: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each ``S32`` digest as a big-endian ``uint64`` (sorts like the digests)."""
    raw = np.ascontiguousarray(digests).view(np.uint8).reshape(-1, 32)[:, :8]
    return np.ascontiguousarray(raw).view(">u8").ravel().astype(np.uint64)


# --------------------------------------------------------------------------------------------
# Vectors
# --------------------------------------------------------------------------------------------


def _vector_matrix(arr: np.ndarray, source: str) -> np.ndarray:
    """``arr`` as a float32 ``(n, d)`` matrix (no copy when it is one already)."""
    if arr.dtype.kind not in "fiu":
        raise DataError(f"{source}: vectors must be numbers, got dtype {arr.dtype}", field="vectors")
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise DataError(f"{source}: vectors has shape {arr.shape}; expected (n, d) with one row per text and d >= 1",
                        field="vectors")
    if arr.shape[0] == 0:
        raise DataError(f"{source}: the file holds no vectors", field="vectors")
    return np.asarray(arr, dtype=np.float32)


def _check_finite(vectors: np.ndarray, source: str) -> None:
    """The first row with a NaN or infinite value is a DataError (checked chunk by chunk)."""
    for start in range(0, len(vectors), _CHUNK):
        bad = ~np.isfinite(vectors[start:start + _CHUNK]).all(axis=1)
        if bad.any():
            raise DataError(f"{source}: the vector of row {start + int(np.flatnonzero(bad)[0])} has a NaN or infinite "
                            "value (a missing value in the file?); every vector must be finite", field="vectors")


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
