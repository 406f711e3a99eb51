"""Input spaces: D discrete positions with N+1 values each (tokens, pixel levels), optionally constrained.

An :class:`InputSpace` is what OmniInput samples from: every point is an integer vector ``x`` of
length ``n_positions`` with ``x[d]`` in the values allowed at position ``d`` (by default
``0..n_values-1`` everywhere). A constraint is a mask of allowed values per position (a fixed first
token, a vocabulary without ``<unk>``), so the number of inputs stays exact: ``ln |X| = sum_d ln
(allowed values at d)``, which is what turns a sampled output distribution into counts of inputs.

It also knows how to show a point to a judge: as text (``kind="tokens"``, with ``vocab`` and
``joiner``) or as a grey-level PNG (``kind="image"``, with ``shape``).

>>> space = InputSpace(3, 10)                 # 3 digits: 1000 inputs
>>> round(float(np.exp(space.log_size)))
1000
>>> space.render_text(np.array([4, 0, 7]))
'4 0 7'
>>> fixed = InputSpace(3, 10, allowed={0: [1]})   # the first digit must be 1: 100 inputs
>>> round(float(np.exp(fixed.log_size))), fixed.uniform(2, np.random.default_rng(0))[:, 0].tolist()
(100, [1, 1])
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice

KINDS = ("tokens", "image")
MAX_ENUMERATE = 10**8  # inputs: above this, enumeration is refused (it would take hours)


class InputSpace:
    """D positions, ``n_values`` values each (0..n_values-1), optionally constrained per position.

    ``allowed``: a (D, n_values) boolean mask, or ``{position: allowed values}`` for the constrained
    positions only. ``kind``: ``"tokens"`` (shown as text: ``vocab[v]`` joined by ``joiner``) or
    ``"image"`` (shown as a grey-level image of ``shape``, value 0 white, ``n_values-1`` black).
    ``name``: shown in reports.
    """

    def __init__(self, n_positions: int, n_values: int, *, allowed: Any = None, kind: str = "tokens",
                 shape: Sequence[int] | None = None, vocab: Sequence[str] | None = None, joiner: str = " ",
                 name: str = "") -> None:
        for field, v, lo in (("n_positions", n_positions, 1), ("n_values", n_values, 2)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ParameterError(f"InputSpace: {field} must be an integer >= {lo}, got {v!r}", field=field)
        if n_values > 2**31 - 1:
            raise ParameterError(f"InputSpace: n_values={n_values} is too large", field="n_values")
        self.n_positions = int(n_positions)
        self.n_values = int(n_values)
        self.kind = check_choice("kind", kind, KINDS, where="InputSpace")
        self.name = str(name)
        self.joiner = str(joiner)
        self.mask = self._mask(allowed)
        if shape is not None:
            shape = tuple(int(s) for s in shape)
            if math.prod(shape) != self.n_positions:
                raise ParameterError(f"InputSpace: shape {shape} holds {math.prod(shape)} positions, not "
                                     f"n_positions={self.n_positions}", field="shape")
        elif self.kind == "image":
            side = int(round(math.sqrt(self.n_positions)))
            if side * side != self.n_positions:
                raise ParameterError("InputSpace: an image space needs shape=(height, width)", field="shape")
            shape = (side, side)
        self.shape = shape
        if vocab is not None:
            vocab = [str(t) for t in vocab]
            if len(vocab) != self.n_values:
                raise ParameterError(f"InputSpace: vocab has {len(vocab)} entries for n_values={self.n_values}",
                                     field="vocab")
        self.vocab = vocab
        # per position: the allowed values in order, and each value's index among them (-1: not allowed)
        self.n_allowed = self.mask.sum(axis=1).astype(np.int64)
        self.values = np.zeros((self.n_positions, int(self.n_allowed.max())), dtype=np.int64)
        self.index_of = np.full((self.n_positions, self.n_values), -1, dtype=np.int64)
        for d in range(self.n_positions):
            vals = np.flatnonzero(self.mask[d])
            self.values[d, :vals.size] = vals
            self.index_of[d, vals] = np.arange(vals.size)
        self.free = np.flatnonzero(self.n_allowed > 1)  # positions a move can change
        if self.free.size == 0:
            raise ParameterError("InputSpace: every position is fixed; the space holds one input", field="allowed")
        self.dtype = np.int16 if self.n_values <= np.iinfo(np.int16).max else np.int32

    def _mask(self, allowed: Any) -> np.ndarray:
        D, V = self.n_positions, self.n_values
        if allowed is None:
            return np.ones((D, V), dtype=bool)
        if isinstance(allowed, Mapping):
            mask = np.ones((D, V), dtype=bool)
            for d, vals in allowed.items():
                d = int(d)
                if not 0 <= d < D:
                    raise ParameterError(f"InputSpace: allowed names position {d}, outside 0..{D - 1}", field="allowed")
                vals = np.asarray(list(vals), dtype=np.int64)
                if vals.size == 0 or vals.min() < 0 or vals.max() >= V:
                    raise ParameterError(f"InputSpace: allowed values at position {d} must be a non-empty subset of "
                                         f"0..{V - 1}, got {vals.tolist()}", field="allowed")
                mask[d] = False
                mask[d, vals] = True
            return mask
        mask = np.asarray(allowed, dtype=bool)
        if mask.shape != (D, V):
            raise ParameterError(f"InputSpace: allowed must be a ({D}, {V}) boolean mask or {{position: values}}, "
                                 f"got shape {mask.shape}", field="allowed")
        empty = np.flatnonzero(~mask.any(axis=1))
        if empty.size:
            raise ParameterError(f"InputSpace: position {int(empty[0])} allows no value", field="allowed")
        return mask.copy()

    # ------------------------------------------------------------------ size
    @property
    def log_size(self) -> float:
        """ln of the number of inputs: sum over positions of ln(allowed values)."""
        return float(np.log(self.n_allowed).sum())

    @property
    def size(self) -> int:
        """The number of inputs (an exact Python integer)."""
        return math.prod(int(n) for n in self.n_allowed)

    # ------------------------------------------------------------------ points
    def uniform(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` inputs drawn uniformly from the space, shape (n, D)."""
        k = (rng.random((n, self.n_positions)) * self.n_allowed).astype(np.int64)
        return self.values[np.arange(self.n_positions), k].astype(self.dtype)

    def check(self, x: Any, what: str = "input") -> np.ndarray:
        """``x`` as a (B, D) integer array of this space; DataError naming the row and position otherwise."""
        a = np.asarray(x)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != self.n_positions:
            raise DataError(f"{what}: expected rows of {self.n_positions} positions, got shape {np.shape(x)}",
                            field=what)
        if not np.issubdtype(a.dtype, np.integer):
            if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
                raise DataError(f"{what}: values must be integers 0..{self.n_values - 1}", field=what)
        a = a.astype(np.int64)
        bad = (a < 0) | (a >= self.n_values)
        if not bad.any():
            bad = ~self.mask[np.arange(self.n_positions), a]
        if bad.any():
            r, d = (int(v[0]) for v in np.nonzero(bad))
            raise DataError(f"{what}: row {r} has value {int(a[r, d])} at position {d}, which the space does not "
                            f"allow there (allowed: {self.describe_position(d)})", field=what)
        return a.astype(self.dtype)

    def describe_position(self, d: int) -> str:
        """The allowed values at position ``d``, shortly."""
        vals = np.flatnonzero(self.mask[d])
        if vals.size == self.n_values:
            return f"0..{self.n_values - 1}"
        return ", ".join(map(str, vals[:8].tolist())) + (" ..." if vals.size > 8 else "")

    def enumerate(self, batch: int = 65536, *, last: bool = True) -> Iterator[np.ndarray]:
        """Every input in lexicographic order, in (B, D) batches; with ``last=False`` every *prefix*
        (the first D-1 positions; for models that score all values of the last position at once).

        Refused above :data:`MAX_ENUMERATE` inputs."""
        D = self.n_positions if last else self.n_positions - 1
        counts = self.n_allowed[:D]
        total = math.prod(int(c) for c in counts) if D else 1
        if total > MAX_ENUMERATE:
            raise ParameterError(f"the space holds {total:.3g} {'inputs' if last else 'prefixes'}; enumeration is "
                                 f"limited to {MAX_ENUMERATE:.0e} (sample it instead)", field="space")
        radices = counts[::-1]
        for start in range(0, total, batch):
            idx = np.arange(start, min(total, start + batch), dtype=np.int64)
            digits = np.empty((idx.size, D), dtype=np.int64)
            rest = idx
            for j, r in enumerate(radices):  # last position varies fastest
                digits[:, D - 1 - j] = rest % r
                rest = rest // r
            yield self.values[np.arange(D), digits].astype(self.dtype)

    # ------------------------------------------------------------------ showing points
    def render_text(self, x: Any) -> str:
        """One input as text: its tokens (``vocab`` or the numbers) joined by ``joiner``."""
        row = np.asarray(x).reshape(-1)
        toks = [self.vocab[int(v)] for v in row] if self.vocab is not None else [str(int(v)) for v in row]
        return self.joiner.join(toks)

    def render_png(self, x: Any, scale: int = 16) -> bytes:
        """One input of an image space as PNG bytes: grey levels (0 white, the top value black), each
        position a ``scale`` x ``scale`` square (nearest-neighbour, so nothing is smoothed away)."""
        from PIL import Image

        shape = self.shape or (1, self.n_positions)
        row = np.asarray(x, dtype=np.float64).reshape(shape)
        grey = (255 - np.round(row / (self.n_values - 1) * 255)).astype(np.uint8)
        img = Image.fromarray(np.kron(grey, np.ones((scale, scale), dtype=np.uint8)), mode="L")
        buf = io.BytesIO()
        img.save(buf, format="PNG", optimize=True)
        return buf.getvalue()

    def render_data_uri(self, x: Any, scale: int = 16) -> str:
        """:meth:`render_png` as a ``data:image/png;base64,...`` URI (for the web app and reports)."""
        return "data:image/png;base64," + base64.b64encode(self.render_png(x, scale)).decode("ascii")

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (enough to rebuild the space with :meth:`from_dict`)."""
        constrained = {str(d): np.flatnonzero(self.mask[d]).tolist() for d in range(self.n_positions)
                       if not self.mask[d].all()}
        return {"n_positions": self.n_positions, "n_values": self.n_values, "allowed": constrained,
                "kind": self.kind, "shape": list(self.shape) if self.shape else None, "vocab": self.vocab,
                "joiner": self.joiner, "name": self.name, "log_size": self.log_size}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "InputSpace":
        """The space :meth:`to_dict` described."""
        return cls(d["n_positions"], d["n_values"], allowed={int(k): v for k, v in (d.get("allowed") or {}).items()}
                   or None, kind=d.get("kind", "tokens"), shape=d.get("shape"), vocab=d.get("vocab"),
                   joiner=d.get("joiner", " "), name=d.get("name", ""))

    def fingerprint(self) -> str:
        """A short hash of the space (positions, values, constraints)."""
        d = self.to_dict()
        d.pop("name", None)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        c = " constrained" if not self.mask.all() else ""
        return (f"InputSpace({self.n_positions} positions x {self.n_values} values{c}, {self.kind}, "
                f"ln|X|={self.log_size:.4g})")
