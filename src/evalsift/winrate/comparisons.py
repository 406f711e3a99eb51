"""Reading the comparisons with the baseline: :func:`baseline_comparisons` (a :class:`Comparisons`, one
:class:`ModelComparisons` per model: its preferences, length differences, instruction ids, groups), and which
annotator's verdicts to read (:func:`pick_annotators`, :func:`verdicts_text`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, ParameterError, suggest
from ..io.pairwise_data import group_of
from ..verdicts import describe_source, source_of, verdicts_line


@dataclass(frozen=True)
class ModelComparisons:
    """One model against the baseline: per comparison (an instruction; one repeated in the data appears again with
    ``repeats="all"``), the model's preference (probability of beating the baseline, in [0, 1]), the characters
    of both outputs (None when the data has no lengths) and the ``--by`` group (None without one)."""

    model: str
    item_ids: tuple[str, ...]
    preference: np.ndarray
    len_model: np.ndarray | None = None
    len_baseline: np.ndarray | None = None
    groups: tuple[str, ...] | None = None
    weight: np.ndarray | None = None  # per comparison (Arena-Hard's games weighted by strength); None: all 1

    @property
    def n(self) -> int:
        return len(self.item_ids)

    @property
    def delta_len(self) -> np.ndarray | None:
        """Baseline length - model length (characters), AlpacaEval's sign."""
        if self.len_model is None or self.len_baseline is None:
            return None
        return self.len_baseline - self.len_model


@dataclass(frozen=True)
class Comparisons:
    """Every model's comparisons with ``baseline`` by one annotator (see :func:`baseline_comparisons`)."""

    baseline: str
    annotator: str
    kind: str  # the judgments' kind: llm, metric or human
    source: str
    models: dict[str, ModelComparisons]
    by: str | None = None
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    verdicts: dict[str, Any] = field(default_factory=dict)
    annotators: tuple[str, ...] = ()  # the annotators counted (one judge's prompts: several); ``annotator`` joins them


def verdicts_text(annotator: str, kind: str) -> str:
    """Whose verdicts a board counts, in :func:`evalsift.verdicts.verdicts_line`'s words.

    >>> verdicts_text("weighted_alpaca_eval_gpt4_turbo (recorded)", "llm")
    'verdicts: judge weighted_alpaca_eval_gpt4_turbo (recorded)'
    """

    return verdicts_line(describe_source(source_of(kind), [annotator]))


def _judge_key(j: Any) -> tuple[str, str | None] | None:
    """The judge a judgment's annotator is one prompt of: ``(judge model, game)`` for FastChat's ``[judge model,
    prompt]`` cell (``gpt-4/pair-v2`` and ``gpt-4/pair-v2-multi-turn`` are both judge ``gpt-4``), else None."""
    d = j.detail if isinstance(getattr(j, "detail", None), Mapping) else {}
    model = d.get("judge_model")
    return None if model is None else (str(model), d.get("game"))


def pick_annotators(annotators: Sequence[str], wanted: str | None,
                    judges: Mapping[str, tuple[str, str | None] | None] | None = None) -> list[str]:
    """The annotators to count: ``wanted`` (exactly; or the judge model of FastChat prompts, e.g. ``gpt-4``; or
    the annotators whose name contains it, any case, when they are one), else the data's only annotator -- where
    an annotator is one judge under several prompts (``judges``: annotator -> :func:`_judge_key`, the same key for
    all of them), all of them, as FastChat's ``show_result.py`` counts every prompt of its judge file (turn 1's
    ``pair-v2``, turn 2's ``pair-v2-multi-turn``, the math prompts). No annotator, an unknown one, or an ambiguous
    choice is a ParameterError listing the annotators.

    >>> pick_annotators(["weighted_alpaca_eval_gpt4_turbo (recorded)"], "weighted_alpaca_eval_gpt4_turbo")
    ['weighted_alpaca_eval_gpt4_turbo (recorded)']
    >>> key = ("gpt-4", None)
    >>> pick_annotators(["gpt-4/pair-v2", "gpt-4/pair-v2-multi-turn"], None,
    ...                 {"gpt-4/pair-v2": key, "gpt-4/pair-v2-multi-turn": key})
    ['gpt-4/pair-v2', 'gpt-4/pair-v2-multi-turn']
    """
    names = list(dict.fromkeys(annotators))
    judges = dict(judges or {})
    listing = ", ".join(names) or "(none)"

    def one_judge(group: list[str]) -> bool:
        keys = {judges.get(a) for a in group}
        return len(keys) == 1 and None not in keys

    if wanted is None:
        if len(names) == 1 or (names and one_judge(names)):
            return names
        if not names:
            raise DataError("the data holds no pairwise verdicts to count")
        raise ParameterError(f"the data holds the verdicts of {len(names)} annotators; pick one with --annotator NAME. "
                             f"Annotators: {listing}", field="annotator")
    if wanted in names:
        return [wanted]
    by_model = [a for a in names if judges.get(a) is not None and judges[a][0] == wanted]
    if by_model and one_judge(by_model):
        return by_model
    hits = [a for a in names if wanted.lower() in a.lower()]
    if len(hits) == 1 or (hits and one_judge(hits)):
        return hits
    if hits:
        raise ParameterError(f"--annotator {wanted!r} is ambiguous: it matches {', '.join(hits)}; give the full name",
                             field="annotator")
    raise ParameterError(f"Unknown annotator '{wanted}'.{suggest(wanted, names)} Annotators: {listing}",
                         field="annotator")


def pick_annotator(annotators: Sequence[str], wanted: str | None) -> str:
    """The one annotator to count (:func:`pick_annotators` without judges: exactly one name).

    >>> pick_annotator(["weighted_alpaca_eval_gpt4_turbo (recorded)"], "weighted_alpaca_eval_gpt4_turbo")
    'weighted_alpaca_eval_gpt4_turbo (recorded)'
    """
    return pick_annotators(annotators, wanted)[0]


def _lengths(pool: Any) -> Any:
    """``length(item_index, system)`` -> characters or None: the reader's ``_output_length`` column (AlpacaEval's
    preference table), else the length of the output text the Pool holds (annotations.json, battles)."""
    meta = pool.metadata.get("_output_length") if hasattr(pool, "metadata") else None
    if meta is not None:
        def from_meta(i: int, system: str) -> float | None:
            v = meta[i].get(system) if meta[i] is not None else None
            return None if v is None else float(v)
        return from_meta
    outputs = pool.outputs

    def from_text(i: int, system: str) -> float | None:
        col = outputs.get(system)
        text = None if col is None else col[i]
        return None if text is None else float(len(str(text)))
    return from_text


def _preference(j: Any, baseline: str) -> float | None:
    """The model's preference in [0, 1] of one judgment (see the module doc); None without a verdict."""
    if j.status != "done" or j.verdict is None:
        return None
    raw = j.detail.get("preference") if isinstance(j.detail, Mapping) else None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and not math.isnan(raw):
        p = 0.5 if raw == 0 else float(raw) - 1.0  # AlpacaEval's scale: 1 = generator_1 wins, 2 = generator_2
        b_wins = p
    else:
        b_wins = {"b": 1.0, "a": 0.0, "tie": 0.5}[j.verdict]
    return b_wins if j.a == baseline else 1.0 - b_wins


def baseline_comparisons(data: Any, baseline: str, *, annotator: str | None = None,
                         by: str | None = None, repeats: str = "all") -> Comparisons:
    """Every model's comparisons with ``baseline`` in ``data`` (a :class:`~evalsift.io.pairwise_data.PairwiseData`)
    by one annotator (:func:`pick_annotators`: one name, or one judge under several prompts), oriented from the
    model's side whichever side the baseline was judged on. A judgment repeated for the same model, instruction
    and annotator (FastChat appends a rerun's rows) counts as one more comparison with ``repeats="all"`` (what
    ``show_result.py`` counts), or replaces the earlier one with ``"last"``; a note says how many either way.
    Models without a verdict against the baseline are left out (named in ``left_out`` and a note). An unknown
    baseline is a ParameterError naming it and listing the models.
    """
    from ..verdicts import REPEATS, describe_judgments

    if repeats not in REPEATS:
        raise ParameterError(f"repeats {repeats!r}: use all or last", field="repeats")
    judgments = [j for j in data.judgments if not getattr(j, "is_score", False)]
    systems = list(data.pool.systems)
    if baseline not in systems:
        raise ParameterError(f"Unknown baseline '{baseline}'.{suggest(baseline, systems)} Models: "
                             f"{', '.join(systems) or '(none)'}", field="baseline")
    with_baseline = [j for j in judgments if baseline in (j.a, j.b)]
    # which annotator: among those who judged the baseline (any, when one is named: a wrong name is then unknown)
    pool_of = with_baseline if annotator is None else judgments
    judges = {j.annotator: _judge_key(j) for j in pool_of}
    who = pick_annotators([j.annotator for j in pool_of], annotator, judges)
    chosen = set(who)
    mine = [j for j in with_baseline if j.annotator in chosen]
    shown = ", ".join(who)
    if not mine:
        raise DataError(f"annotator {shown!r} judged no comparison with the baseline {baseline!r}; judged against it "
                        f"by: {', '.join(dict.fromkeys(j.annotator for j in with_baseline)) or '(nobody)'}",
                        field="baseline")
    group = group_of(data, by, mine) if by else None
    length = _lengths(data.pool)
    index = {iid: k for k, iid in enumerate(data.pool.item_ids)}
    rows: dict[str, list[tuple[str, float, str | None]]] = {}
    last: dict[tuple[str, str, str], int] = {}
    repeated = 0
    no_verdict = 0
    for j in mine:
        model = j.b if j.a == baseline else j.a
        if model == baseline:
            continue
        p = _preference(j, baseline)
        if p is None:
            no_verdict += 1
            continue
        per = rows.setdefault(model, [])
        wj = j.detail.get("weight") if isinstance(j.detail, Mapping) else None  # Arena-Hard: sum of its games' weights
        entry = (j.item_id, p, group(j) if group else None, 1.0 if wj is None else float(wj))
        key = (model, j.item_id, j.annotator)
        if key in last:
            repeated += 1
            if repeats == "last":
                per[last[key]] = entry
                continue
        last[key] = len(per)
        per.append(entry)
    notes: list[str] = []
    if len(who) > 1:
        notes.append(f"counting the verdicts of one judge under its {len(who)} prompts together ({shown}), as "
                     "FastChat's show_result.py does (both turns of MT-Bench); --annotator NAME counts one prompt, "
                     "--by turn gives a board per turn")
    if repeated:
        notes.append(f"{repeated} repeated judgment(s) of the same model, instruction and annotator (a rerun's rows): "
                     + ("each counts, as FastChat's show_result.py counts every row; --repeats last keeps the later "
                        "one only" if repeats == "all" else "the later one counts (--repeats last); FastChat's "
                        "show_result.py counts every row (--repeats all)"))
    if no_verdict:
        notes.append(f"{no_verdict} judgment(s) without a verdict (errors, skips) are not counted")
    models: dict[str, ModelComparisons] = {}
    for model in [s for s in systems if s in rows]:
        per = rows[model]
        ids = tuple(e[0] for e in per)
        pref = np.array([e[1] for e in per], float)
        lm = [length(index[i], model) if i in index else None for i in ids]
        lb = [length(index[i], baseline) if i in index else None for i in ids]
        have = all(v is not None for v in lm) and all(v is not None for v in lb)
        wts = np.array([e[3] for e in per], float)
        models[model] = ModelComparisons(
            model=model, item_ids=ids, preference=pref,
            len_model=np.array(lm, float) if have else None, len_baseline=np.array(lb, float) if have else None,
            groups=tuple(e[2] for e in per) if group else None, weight=None if (wts == 1).all() else wts)
    left = tuple(s for s in systems if s != baseline and s not in models)
    if left:
        notes.append(f"left out, with no verdict of {shown} against {baseline}: {', '.join(left)}")
    kinds = {j.kind for j in mine}
    kind = "human" if kinds == {"human"} else ("metric" if kinds == {"metric"} else "llm")
    return Comparisons(baseline=baseline, annotator=shown, kind=kind, source=str(getattr(data, "source", "")),
                       models=models, by=by, left_out=left, notes=tuple(notes), verdicts=describe_judgments(mine),
                       annotators=tuple(who))
