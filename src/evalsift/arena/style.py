"""Style control: Bradley-Terry with the answers' style as covariates (``evalsift arena --style-control``).

Chatbot Arena's style control (LMSYS, "Does style matter? Disentangling style and substance in Chatbot
Arena", blog post, August 2024) adds to the Bradley-Terry logistic regression, beside the model
indicators, a few features of each battle's two answers, so that a model's score is what it wins with
the style held fixed and the style's own pull is a coefficient. We follow the same model, fitted by the
shared Bradley-Terry machinery (:mod:`evalsift.arena.bt`: the same Newton fit, sandwich covariance,
bootstrap, PPI++ with judges, weighted human draws) with the features as an extra block of the design.

**Counts per answer** (:func:`style_counts`):

- ``length``: tokens, counted as the runs of word characters plus each other non-space character
  (``re.findall(r"\\w+|[^\\w\\s]", text)``): words and punctuation marks, no tokenizer needed, the
  same count on every machine. (Chatbot Arena counts GPT-3.5's tokenizer tokens; the count differs by a
  roughly constant factor, which the normalised difference below takes out.)
- without a text, the counts a Chatbot Arena export records in its ``conv_metadata`` (``sum_assistant_a_tokens``,
  ``header_count_a``, ``bold_count_a``, ``list_count_a`` and the ``_b`` ones; :func:`with_recorded_counts`): its
  length is its tokenizer's tokens, which the normalised difference below makes comparable;
- ``headers``: lines that start with 1-6 ``#`` and a space; ``bold``: ``**...**`` and ``__...__`` spans
  within a line; ``lists``: lines that start (after indentation) with ``-``, ``*`` or ``+`` or with a
  number and a dot, then a space. Fenced code blocks (between triple backticks) are left out of the
  markdown counts, not of the length.

**Features per battle** (:func:`style_covariates`): for each count, the normalised difference
``(c_a - c_b) / (c_a + c_b + 1)`` (the ``+ 1`` keeps it defined when neither answer has the element;
Chatbot Arena does the same), then divided by its root mean square over the battles, so each
coefficient is the log-odds per typical difference. We do not centre the features: a battle recorded
the other way round flips the sign of its features as it flips the strength difference, so the fit is
the same whichever side is written first (centring would add a fixed first-side advantage). ``length``
is the length feature; ``markdown`` is the three markdown features (``headers``, ``bold``, ``lists``,
also accepted one by one).

The scores are the model coefficients (Elo scale as everywhere); each feature's coefficient is
reported with its interval. Ties count half (``--ties davidson`` is refused with style control).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from .bt import Covariates

#: the counts kept per answer, in this order
COUNTS = ("length", "headers", "bold", "lists")
#: the names ``--style-control`` takes, and the counts each stands for
GROUPS = {"length": ("length",), "markdown": ("headers", "bold", "lists"), "headers": ("headers",),
          "bold": ("bold",), "lists": ("lists",)}

_TOKEN = re.compile(r"\w+|[^\w\s]")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_LIST = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]", re.MULTILINE)


def style_counts(text: str) -> tuple[int, int, int, int]:
    """``(length, headers, bold, lists)`` of one answer (module doc).

    >>> style_counts("# Title\\n\\nSome **bold** words.\\n\\n- one\\n- two\\n```\\n# not a header\\n```")
    (24, 1, 1, 2)
    """
    text = text or ""
    plain = _FENCE.sub("", text)
    return (len(_TOKEN.findall(text)), len(_HEADER.findall(plain)), len(_BOLD.findall(plain)),
            len(_LIST.findall(plain)))


def parse_style(spec: str | Sequence[str]) -> tuple[str, ...]:
    """The counts that ``--style-control`` asks for, in :data:`COUNTS` order: ``length``, ``markdown``
    (headers, bold, lists) or the markdown features one by one, comma-separated.

    >>> parse_style("length,markdown")
    ('length', 'headers', 'bold', 'lists')
    >>> parse_style("markdown")
    ('headers', 'bold', 'lists')
    """
    names = [s.strip().lower() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [s for s in names if s]
    if not names:
        raise ParameterError("--style-control needs at least one feature: length, markdown (or headers, bold, "
                             "lists)", field="style_control")
    want: set[str] = set()
    for s in names:
        if s not in GROUPS:
            raise ParameterError(f"--style-control: unknown feature {s!r}; the features are length, markdown (and "
                                 "markdown's parts headers, bold, lists), comma-separated, e.g. --style-control "
                                 "length,markdown", field="style_control")
        want.update(GROUPS[s])
    return tuple(c for c in COUNTS if c in want)


def battle_counts(battles, texts) -> dict[str, np.ndarray]:
    """Per count of :data:`COUNTS`, an ``n x 2`` array: the count of each battle's first and second
    answer (NaN where there is no text). ``texts(k, side)`` gives battle ``k``'s text of side 0 (``a``)
    or 1 (``b``), or None. Each distinct text is counted once."""
    cache: dict[str, tuple[int, int, int, int]] = {}
    out = np.full((len(COUNTS), battles.n, 2), np.nan)
    for k in range(battles.n):
        for side in (0, 1):
            t = texts(k, side)
            if t is None:
                continue
            c = cache.get(t)
            if c is None:
                c = cache[t] = style_counts(t)
            out[:, k, side] = c
    return {name: out[i] for i, name in enumerate(COUNTS)}


def missing_text(battles) -> np.ndarray:
    """Which battles lack the text of either side (no style counts)."""
    if not battles.style:
        return np.ones(battles.n, bool)
    return np.isnan(battles.style["length"]).any(axis=1)


def style_covariates(battles, features: Iterable[str]):
    """The style covariates of ``battles`` (a :class:`~evalsift.arena.bt.Covariates`, n x p): per feature
    the normalised difference of the two answers' counts, divided by its root mean square over the
    battles (module doc). A battle without both texts is a DataError naming it and the fix. A feature
    with no difference in any battle (no answer has a header, say) is left out, with a note; when every
    asked-for feature is so, a DataError."""
    features = tuple(features)
    if not battles.style:
        raise DataError(f"--style-control needs the answers' texts, and {battles.source or 'the battles'} has none: "
                        "give battles with conversation_a / conversation_b (or output_1 / output_2), or the outputs "
                        "with --outputs FILE (item_id, system, output per row)", field="style_control")
    miss = missing_text(battles)
    if miss.any():
        k = int(np.flatnonzero(miss)[0])
        sides = [battles.models[m] for m, c in ((battles.a[k], battles.style["length"][k, 0]),
                                                 (battles.b[k], battles.style["length"][k, 1])) if np.isnan(c)]
        raise DataError(f"battle {battles.ids[k]!r} has no text for {' and '.join(map(repr, sides))} "
                        f"({int(miss.sum())} of {battles.n} battles lack a text): --style-control needs both answers "
                        "of every battle; give them (conversation_a / conversation_b in the battle file, or "
                        "--outputs FILE with item_id, system, output), or leave such battles out with "
                        "--style-missing drop", item_id=battles.ids[k], field="style_control")
    cols, kept, flat = [], [], []
    for f in features:
        c = battles.style[f]
        d = (c[:, 0] - c[:, 1]) / (c[:, 0] + c[:, 1] + 1.0)
        rms = float(np.sqrt(np.mean(d * d))) if len(d) else 0.0
        if rms == 0.0:
            flat.append(f)
            continue
        cols.append(d / rms)
        kept.append(f)
    if not kept:
        raise DataError(f"--style-control: {', '.join(flat)} is the same for both answers in every battle (no "
                        "difference to control for); ask for another feature (length, markdown) or leave "
                        "--style-control out", field="style_control")
    note = NOTE + (f"; left out: {', '.join(flat)} (the same for both answers in every battle)" if flat else "")
    return Covariates(tuple(kept), np.column_stack(cols), note=note)


#: Chatbot Arena's ``conv_metadata`` keys of each count, for side ``a`` (``_b`` for side ``b``)
CONV_METADATA = {"length": "sum_assistant_{}_tokens", "headers": "header_count_{}", "bold": "bold_count_{}",
                 "lists": "list_count_{}"}


def conv_metadata_counts(meta, side: str) -> tuple[float, ...] | None:
    """One answer's counts (:data:`COUNTS` order) from a Chatbot Arena battle's ``conv_metadata`` (``side`` ``a``
    or ``b``): ``sum_assistant_<side>_tokens``, and ``header_count_<side>``, ``bold_count_<side>``,
    ``list_count_<side>`` (numbers, or dicts of numbers that are summed: ``{h1: .., h2: ..}``). None when the
    length is missing.

    >>> conv_metadata_counts({"sum_assistant_a_tokens": 40, "header_count_a": {"h1": 1, "h2": 1},
    ...                       "bold_count_a": {"**": 2, "__": 0}, "list_count_a": {"ordered": 0, "unordered": 3}}, "a")
    (40.0, 2.0, 2.0, 3.0)
    """
    if not isinstance(meta, dict) or meta.get(CONV_METADATA["length"].format(side)) is None:
        return None
    out = []
    for name in COUNTS:
        v = meta.get(CONV_METADATA[name].format(side), 0)
        try:
            out.append(float(sum(v.values())) if isinstance(v, dict) else float(v or 0))
        except (TypeError, ValueError):
            return None
    return tuple(out)


def with_recorded_counts(battles, data):
    """``battles`` with the style counts of answers that have no text filled from the counts the battle file
    records (Chatbot Arena's ``conv_metadata``, kept in each judgment's ``detail``), looked up by (battle id,
    model). Unchanged when the file records none; ``(battles, filled)``: how many answers were filled."""
    from dataclasses import replace

    found: dict[tuple[str, str], tuple[float, ...]] = {}
    for j in data.judgments:
        meta = (j.detail or {}).get("conv_metadata")
        if not isinstance(meta, dict):
            continue
        for side, model in (("a", j.a), ("b", j.b)):
            c = conv_metadata_counts(meta, side)
            if c is not None:
                found.setdefault((j.item_id, model), c)
    if not found:
        return battles, 0
    counts = (np.stack([battles.style[n] for n in COUNTS]) if battles.style
              else np.full((len(COUNTS), battles.n, 2), np.nan))
    filled = 0
    for k in range(battles.n):
        for side, m in ((0, battles.a[k]), (1, battles.b[k])):
            if np.isnan(counts[0, k, side]):
                c = found.get((battles.ids[k], battles.models[m]))
                if c is not None:
                    counts[:, k, side] = c
                    filled += 1
    if not filled:
        return battles, 0
    return replace(battles, style={n: counts[i] for i, n in enumerate(COUNTS)}), filled


NOTE = ("features per battle: (count_a - count_b) / (count_a + count_b + 1), divided by its root mean square over the "
        "battles; length = words and punctuation marks; headers, bold, lists = markdown elements outside code blocks")


__all__ = ["CONV_METADATA", "COUNTS", "GROUPS", "NOTE", "battle_counts", "conv_metadata_counts", "missing_text",
           "parse_style", "style_counts", "style_covariates", "with_recorded_counts"]
