"""The registry of dimensions (``dimensions``) and its decorator ``@dimension``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...registry import Registry


dimensions: Registry[Callable[..., np.ndarray]] = Registry("dimension")


def dimension(name: str, help: str = "") -> Callable:
    """Register a dimension function under ``name`` (its docstring's first line is its help)."""
    return dimensions.register(name, help)


DEPRECATED_NAMES: dict[str, str] = {
    "pvi": "'pvi' is a deprecated alias of 'difficulty' (the paper's difficulty is PVI); name it difficulty",
}
"""Registered names kept only for old commands: name -> the note to show when it is used. (The n-gram
form of ``perplexity`` -- without a language model -- is deprecated too; :func:`~.text.perplexity`
says so itself.)"""


__all__ = ["DEPRECATED_NAMES", "dimension", "dimensions"]
