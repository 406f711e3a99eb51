"""Per-item data dimensions (Kovatchev & Lease, NAACL 2024, "Benchmark Transparency", Sec. 3).

A *dimension* is a function that returns one float per item (a 1-D ``np.ndarray``), NaN where the
value is undefined for that item -- never an invented value. Dimensions live in the registry
:data:`dimensions` and are registered with ``@dimension("name")``; :func:`compute_dimensions` computes
several of them from the same inputs (fitting IRT once when both IRT dimensions are asked for).

Implemented: ``length``, ``noise``, ``difficulty``, ``irt_difficulty``, ``discriminability``;
``perplexity`` (an n-gram LM from ``nltk.lm`` or a local causal LM, plain or conditional),
``pvi`` (pointwise V-information, the classification form of difficulty), ``ambiguity``
(training-dynamics variability, from given probabilities or a cheap classifier trained epoch by
epoch) and ``learned_noise`` (noise predicted from the input). The model-based ones are
cross-fitted where they fit on the items themselves: no item is scored by a model trained on it
(except ``ambiguity``'s ``setting="train"``, which is the cartography paper's).

Modules: :mod:`.registry` (``dimensions``, ``@dimension``), :mod:`.compute`
(:func:`compute_dimensions`, :data:`POOL_FIELDS`), :mod:`.text` (``length``, ``perplexity``),
:mod:`.labels` (``noise``, ``pvi``, ``ambiguity``, ``learned_noise``, ``learned_difficulty``),
:mod:`.scores` (``difficulty``, ``irt_difficulty``, ``discriminability``), and what they share:
:mod:`.inputs` (input checks) and :mod:`.crossfit` (models fitted on the other items).
``from evalsift.transparency.dimensions import X`` works for every public name of them.

>>> import numpy as np
>>> d = compute_dimensions(["length", "noise"], texts=["a b c", ("a b", "c d e")],
...                        counts=[[3, 0, 0], [2, 1, 1]])
>>> d["length"].tolist(), d["noise"].tolist()      # 3 tokens, 2 + 3; 1 - 3/3, 1 - 2/4
([3.0, 5.0], [0.0, 0.5])
"""

from __future__ import annotations

# the registry first; importing each module of dimensions registers them
from .registry import dimension, dimensions
from .compute import POOL_FIELDS, compute_dimensions
from .labels import ambiguity, learned_difficulty, learned_noise, noise, pvi, training_dynamics
from .scores import difficulty, discriminability, fit_responses, irt_difficulty
from .text import CausalLMScorer, NgramScorer, length, perplexity

__all__ = [
    "POOL_FIELDS",
    "CausalLMScorer",
    "NgramScorer",
    "ambiguity",
    "compute_dimensions",
    "difficulty",
    "dimension",
    "dimensions",
    "discriminability",
    "fit_responses",
    "irt_difficulty",
    "learned_difficulty",
    "learned_noise",
    "length",
    "noise",
    "perplexity",
    "pvi",
    "training_dynamics",
]
