"""Proposals of the samplers' Metropolis moves (``proposal=``), each symmetric or corrected for its reverse move.

- ``single``: one free position moved to another allowed value;
- ``block``: ``block`` consecutive positions (or a ``block`` x ``block`` patch of an image) redrawn;
- ``mixed`` (the default): each walker makes a single or a block move, by a fair coin (a mixture of
  symmetric moves is symmetric);
- ``gradient``: Gibbs-with-gradients (Grathwohl et al. 2021): a single-position move drawn from the
  first-order change of the target (:func:`gradient_logits`);
- ``langevin``: the discrete Langevin proposal (DLP; Zhang, Liu & Liu 2022, the Metropolis-adjusted
  form): every position redrawn at once and independently, each from a softmax of half the first-order
  change of the target minus the squared distance of the move over ``2 * step_size``
  (:func:`langevin_logits`).

The Metropolis-Hastings correction of both gradient proposals is in :meth:`Sampler._mh`.
"""

from __future__ import annotations

import numpy as np

from ..space import InputSpace

PROPOSALS = ("mixed", "single", "block", "gradient", "langevin")
GRADIENT_PROPOSALS = ("gradient", "langevin")  # need the model's gradient with respect to its one-hot input


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


def _half_change(x: np.ndarray, g: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """coef/2 * (g[d, v] - g[d, x_d]), shape (W, D, V): half the first-order change of ln pi = coef * z
    when position d moves to value v (g: dz / d onehot)."""
    cur = np.take_along_axis(g, x.astype(np.int64)[:, :, None], axis=2)
    return 0.5 * coef[:, None, None] * (g - cur)


def gradient_logits(space: InputSpace, x: np.ndarray, g: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Proposal logits (W, D, V) of single-position moves (Gibbs-with-gradients): coef/2 * (first-order
    change of z); -inf where the value is not allowed or is the current one. One softmax over all
    (position, value) pairs of a walker picks its move."""
    W = x.shape[0]
    logits = _half_change(x, g, coef)
    mask = np.broadcast_to(space.mask, logits.shape).copy()
    mask[np.arange(W)[:, None], np.arange(space.n_positions)[None, :], x.astype(np.int64)] = False
    return np.where(mask, logits, -np.inf)


def langevin_logits(space: InputSpace, x: np.ndarray, g: np.ndarray, coef: np.ndarray, step_size: float
                    ) -> np.ndarray:
    """Proposal logits (W, D, V) of the discrete Langevin proposal: per position, coef/2 * (first-order
    change of z) - |onehot(v) - onehot(x_d)|^2 / (2 step_size), i.e. minus 1/step_size for every value
    other than the current one (0 for the current one); -inf where the value is not allowed. A softmax
    over V at each position, independently, draws the new value of every position at once."""
    W = x.shape[0]
    logits = _half_change(x, g, coef) - 1.0 / step_size
    logits[np.arange(W)[:, None], np.arange(space.n_positions)[None, :], x.astype(np.int64)] = 0.0
    return np.where(space.mask[None, :, :], logits, -np.inf)


__all__ = ["GRADIENT_PROPOSALS", "PROPOSALS", "gradient_logits", "langevin_logits", "propose_block", "propose_single"]
