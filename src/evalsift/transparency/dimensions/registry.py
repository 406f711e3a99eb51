"""The registry of dimensions (``dimensions``) and its decorator ``@dimension``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...registry import Registry


dimensions: Registry[Callable[..., np.ndarray]] = Registry("dimension")


def dimension(name: str, help: str = "") -> Callable:
    """Register a dimension function under ``name`` (its docstring's first line is its help)."""
    return dimensions.register(name, help)


__all__ = ["dimension", "dimensions"]
