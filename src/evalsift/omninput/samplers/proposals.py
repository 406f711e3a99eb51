"""Proposals of the samplers' Metropolis moves (``proposal=``), each symmetric or corrected for its reverse move.

- ``single``: one free position moved to another allowed value;
- ``block``: ``block`` consecutive positions (or a ``block`` x ``block`` patch of an image) redrawn;
- ``mixed`` (the default): each walker makes a single or a block move, by a fair coin (a mixture of
  symmetric moves is symmetric);
- ``gradient``: a single-position move drawn from the first-order change of the target
  (:func:`gradient_logits`; the Metropolis-Hastings correction is in :meth:`Sampler._mh`).
"""

from __future__ import annotations

import numpy as np

from ..space import InputSpace

PROPOSALS = ("mixed", "single", "block", "gradient")


def propose_single(space: InputSpace, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each row with one free position moved to another allowed value (uniformly; symmetric)."""
    W = x.shape[0]
    d = space.free[rng.integers(0, space.free.size, size=W)]
    cur = space.index_of[d, x[np.arange(W), d].astype(np.int64)]
    j = (rng.random(W) * (space.n_allowed[d] - 1)).astype(np.int64)
    j = j + (j >= cur)
    out = x.copy()
    out[np.arange(W), d] = space.values[d, j]
    return out


def propose_block(space: InputSpace, x: np.ndarray, rng: np.random.Generator, block: int) -> np.ndarray:
    """Each row with a block of positions redrawn uniformly: ``block`` consecutive positions, or a
    ``block`` x ``block`` patch of an image space (symmetric)."""
    W, D = x.shape
    if space.shape is not None and len(space.shape) == 2:
        h, w = space.shape
        bh, bw = min(block, h), min(block, w)
        r0 = rng.integers(0, h - bh + 1, size=W)
        c0 = rng.integers(0, w - bw + 1, size=W)
        rr, cc = np.meshgrid(np.arange(bh), np.arange(bw), indexing="ij")
        pos = ((r0[:, None] + rr.reshape(1, -1)) * w + c0[:, None] + cc.reshape(1, -1))
    else:
        b = min(block, D)
        start = rng.integers(0, D - b + 1, size=W)
        pos = start[:, None] + np.arange(b)[None, :]
    k = (rng.random(pos.shape) * space.n_allowed[pos]).astype(np.int64)
    out = x.copy()
    out[np.arange(W)[:, None], pos] = space.values[pos, k]
    return out


def gradient_logits(space: InputSpace, x: np.ndarray, g: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Proposal logits (W, D, V) of single-position moves: coef/2 * (first-order change of z); -inf where
    the value is not allowed or is the current one."""
    W = x.shape[0]
    cur = np.take_along_axis(g, x.astype(np.int64)[:, :, None], axis=2)
    logits = 0.5 * coef[:, None, None] * (g - cur)
    mask = np.broadcast_to(space.mask, logits.shape).copy()
    mask[np.arange(W)[:, None], np.arange(space.n_positions)[None, :], x.astype(np.int64)] = False
    return np.where(mask, logits, -np.inf)


__all__ = ["PROPOSALS", "gradient_logits", "propose_block", "propose_single"]
