"""Candidate inputs kept while sampling: a uniform subsample of the distinct inputs seen per (replica slot, bin)."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np


class Reservoirs:
    """Up to ``keep`` distinct inputs per (replica slot, bin), a uniform subsample of what was seen there
    (random priority keys), with the number of samples seen per (slot, bin)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.heaps: dict[tuple[int, int], list] = {}
        self.members: dict[tuple[int, int], set] = {}
        self.seen: dict[tuple[int, int], int] = {}

    def add(self, slots: np.ndarray, bins: np.ndarray, x: np.ndarray, z: np.ndarray, keys: np.ndarray) -> None:
        """Offer each row (its slot, bin, input, output and random key)."""
        for s, b, row, zz, k in zip(slots.tolist(), bins.tolist(), x, z.tolist(), keys.tolist()):
            kb = (s, b)
            self.seen[kb] = self.seen.get(kb, 0) + 1
            heap = self.heaps.setdefault(kb, [])
            if len(heap) >= self.keep and k <= heap[0][0]:
                continue
            raw = row.tobytes()
            members = self.members.setdefault(kb, set())
            if raw in members:
                continue
            if len(heap) < self.keep:
                heapq.heappush(heap, (k, raw, zz))
            else:
                _, old, _ = heapq.heappushpop(heap, (k, raw, zz))
                members.discard(old)
            members.add(raw)

    def arrays(self, D: int, dtype: Any) -> dict[str, np.ndarray]:
        """Flat arrays (for checkpoints and the result)."""
        slots, bins, keys, zs, xs = [], [], [], [], []
        for (s, b), heap in sorted(self.heaps.items()):
            for k, raw, zz in sorted(heap):
                slots.append(s), bins.append(b), keys.append(k), zs.append(zz), xs.append(raw)
        x = np.frombuffer(b"".join(xs), dtype=dtype).reshape(-1, D) if xs else np.zeros((0, D), dtype=dtype)
        seen = sorted(self.seen.items())
        return {"r_slot": np.array(slots, dtype=np.int64), "r_bin": np.array(bins, dtype=np.int64),
                "r_key": np.array(keys, dtype=np.float64), "r_z": np.array(zs, dtype=np.float64), "r_x": x.copy(),
                "r_seen_slot": np.array([k[0] for k, _ in seen], dtype=np.int64),
                "r_seen_bin": np.array([k[1] for k, _ in seen], dtype=np.int64),
                "r_seen_n": np.array([n for _, n in seen], dtype=np.int64)}

    @classmethod
    def from_arrays(cls, keep: int, a: dict[str, np.ndarray]) -> "Reservoirs":
        """The reservoirs :meth:`arrays` flattened."""
        r = cls(keep)
        for s, b, k, zz, row in zip(a["r_slot"].tolist(), a["r_bin"].tolist(), a["r_key"].tolist(), a["r_z"].tolist(),
                                    a["r_x"]):
            raw = row.tobytes()
            r.heaps.setdefault((s, b), []).append((k, raw, zz))
            r.members.setdefault((s, b), set()).add(raw)
        for heap in r.heaps.values():
            heapq.heapify(heap)
        r.seen = {(int(s), int(b)): int(n) for s, b, n in zip(a["r_seen_slot"], a["r_seen_bin"], a["r_seen_n"])}
        return r


__all__ = ["Reservoirs"]
