"""Per-item data dimensions (Kovatchev & Lease, NAACL 2024, "Benchmark Transparency", Sec. 3).

A *dimension* is a function that returns one float per item (a 1-D ``np.ndarray``), NaN where the
value is undefined for that item -- never an invented value. Dimensions live in the registry
:data:`dimensions` and are registered with ``@dimension("name")``; :func:`compute_dimensions` computes
several of them from the same inputs (fitting IRT once when both IRT dimensions are asked for).

Implemented, as the paper (Sec. 3, App. A): ``length``, ``noise``, ``difficulty`` (pointwise
V-information, PVI; ``pvi`` is a deprecated alias), ``perplexity`` (a local causal LM, plain or
conditional), ``ambiguity`` (the paper's: held-out items' gold-label probability over training
epochs, ``include_ci`` formula; from given probabilities, QA span logits or a cheap classifier
trained epoch by epoch) and ``discriminability`` (2PL IRT). Ours: ``ngram_perplexity`` (an n-gram
LM from ``nltk.lm``: the label-free stand-in when no pretrained LM is available offline),
``learned_noise`` (noise predicted from the input), ``train_variability`` (the cartography paper's:
training items, plain std), ``score_difficulty`` (1 - the mean score) and ``irt_difficulty`` (IRT b)
-- these two and ``discriminability`` are computed from the evaluated scores
(:data:`~.scores.CIRCULAR`) -- and ``random``, the baseline row of Tables 1-2. The model-based ones
are cross-fitted where they fit on the items themselves: no item is scored by a model trained on it
(except ``train_variability``, whose point is the items the model trains on).

Modules: :mod:`.registry` (``dimensions``, ``@dimension``), :mod:`.compute`
(:func:`compute_dimensions`, :data:`POOL_FIELDS`), :mod:`.text` (``length``, ``perplexity``, ``ngram_perplexity``),
:mod:`.labels` (``noise``, ``difficulty``/``pvi``, ``ambiguity``, ``train_variability``, ``learned_noise``,
``learned_difficulty``), :mod:`.qa` (extractive QA: span probabilities, token-F1 agreement),
:mod:`.scores` (``score_difficulty``, ``irt_difficulty``, ``discriminability``), :mod:`.baseline`
(``random``), and what they share:
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
from .registry import DEPRECATED_NAMES, dimension, dimensions
from .baseline import random_dimension
from .compute import POOL_FIELDS, compute_dimensions, pool_input_source
from .labels import (ambiguity, difficulty, learned_difficulty, learned_noise, noise, pvi, train_variability,
                     training_dynamics)
from .qa import answer_agreement, span_gold_probs, token_f1
from .scores import CIRCULAR, discriminability, fit_responses, irt_difficulty, score_difficulty
from .text import CausalLMScorer, NgramScorer, length, ngram_perplexity, perplexity

__all__ = [
    "CIRCULAR",
    "DEPRECATED_NAMES",
    "POOL_FIELDS",
    "CausalLMScorer",
    "NgramScorer",
    "ambiguity",
    "answer_agreement",
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
    "ngram_perplexity",
    "noise",
    "perplexity",
    "pool_input_source",
    "pvi",
    "random_dimension",
    "score_difficulty",
    "span_gold_probs",
    "token_f1",
    "train_variability",
    "training_dynamics",
]
