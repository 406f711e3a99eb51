"""Whose verdicts a result counts: people's or a judge's (an LLM or a metric).

Every recorded :class:`~evalsift.oracle.base.Judgment` has a ``kind``: ``human``, ``llm`` or ``metric``
(the readers set it from a ``kind`` column, FastChat's ``[judge model, prompt]`` judge cell, or the
annotator's name: :func:`evalsift.io.judge_files.judge_kind`). The *source* of a verdict is ``human``
for a person's and ``judge`` for the others. ``--verdicts-from human|judge`` on ``arena``, ``rank`` and
``winrate`` states it when the file cannot (:func:`with_source`), and every output of those commands
says whose verdicts it counts (:func:`verdicts_line`): a leaderboard of a judge's preferences is not a
leaderboard of people's.

>>> from evalsift.oracle import Judgment
>>> js = [Judgment(item_id="1", a="X", b="Y", verdict="a", annotator="gpt-4/pair-v2", kind="llm")]
>>> verdicts_line(describe_judgments(js))
'verdicts: judge gpt-4/pair-v2 (1 verdict)'
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace
from typing import Any, Iterable

SOURCES = ("human", "judge")


def source_of(kind: str | None) -> str:
    """``judge`` for an ``llm`` or ``metric`` kind, ``human`` otherwise.

    >>> source_of("llm"), source_of("metric"), source_of("human")
    ('judge', 'judge', 'human')
    """
    return "judge" if kind in ("llm", "metric", "judge") else "human"


def add_verdicts_from(p: argparse.ArgumentParser) -> None:
    """``--verdicts-from human|judge``."""
    p.add_argument("--verdicts-from", choices=SOURCES, metavar="human|judge",
                   help="whose verdicts the data holds, when its files cannot say: human (people's) or judge (an LLM "
                        "judge's or a metric's). Default: from the data (a kind column, FastChat's [judge, prompt] "
                        "cell, or an annotator named after a known LLM family)")


#: where a recorded judgment's kind came from (``detail["kind_from"]``, set by the judge-file readers): the file's
#: own fields, or -- ``name`` -- only the file's name, a guess
KIND_FROM = {"kind": "its kind column", "judge": "its judge/annotator field",
             "cell": "FastChat's [judge model, prompt] cell", "name": "the file name"}
_STATED = {k: v for k, v in KIND_FROM.items() if k != "name"}


def _whose(kind: str) -> str:
    return "a judge's" if source_of(kind) == "judge" else "people's"


def _listing(names: Iterable[str], limit: int = 3) -> str:
    names = list(names)
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


class Counted(tuple):
    """Judgments as ``(judgment, count)`` pairs: each stands for ``count`` equal ones (a reader that holds them as
    columns gives one per annotator and kind). :func:`source_notes` and :func:`describe_judgments` take it
    wherever they take judgments, and count as if each were repeated."""


def _counted(judgments: Iterable[Any]) -> Iterable[tuple[Any, int]]:
    return judgments if isinstance(judgments, Counted) else ((j, 1) for j in judgments)


def source_notes(data: Any, source: str | None) -> list[str]:
    """What to say about whose verdicts ``data`` holds before ``source`` (``--verdicts-from``) is applied: with no
    ``source``, the judgments whose kind only the file's name gave (no kind, judge or annotator field: a guess);
    with one, the judgments whose kind the file's own fields state otherwise (``--verdicts-from`` overrides
    them). Judgments without ``detail["kind_from"]`` (evalsift's own records, tables with a kind column) say
    nothing."""
    guessed: dict[tuple[str, str, str], int] = {}
    stated: dict[tuple[str, str, str], Counter] = {}
    for j, w in _counted(data.judgments):
        d = j.detail if isinstance(getattr(j, "detail", None), dict) else {}
        how = d.get("kind_from")
        if how is None or getattr(j, "status", "done") != "done":
            continue
        where = str(d.get("source") or getattr(data, "source", ""))
        if source is None and how == "name":
            key = (where, j.annotator, j.kind)
            guessed[key] = guessed.get(key, 0) + w
        elif source is not None and how in _STATED and source_of(j.kind) != source:
            stated.setdefault((where, _STATED[how], j.kind), Counter())[j.annotator] += w
    notes = []
    for (where, annotator, kind), n in guessed.items():
        notes.append(f"{where}: no field of the file says who judged (no kind, judge or annotator column), so its "
                     f"{n} verdict(s) are labelled {_whose(kind)} from the file name {annotator!r} alone; say "
                     "--verdicts-from human or --verdicts-from judge if that is wrong")
    for (where, how, kind), who in stated.items():
        notes.append(f"--verdicts-from {source} overrides {where}: {how} makes {sum(who.values())} verdict(s) "
                     f"{_whose(kind)} ({_listing(who)}); they are counted as "
                     f"{'people' if source == 'human' else 'a judge'}'s")
    return notes


def with_source(data: Any, source: str | None) -> Any:
    """``data`` (a :class:`~evalsift.io.pairwise_data.PairwiseData`) with every judgment's kind set to
    ``source``'s (``human`` -> ``human``; ``judge`` -> ``llm`` unless it is already ``metric``); unchanged for
    None. Either way, :func:`source_notes` are issued as data warnings (``note:`` lines on the command line): a
    label that only the file's name gave, or a ``--verdicts-from`` that contradicts the file's own fields."""
    if source is not None and source not in SOURCES:
        from .errors import ParameterError
        raise ParameterError(f"--verdicts-from {source!r}: use human or judge", field="verdicts_from")
    from .io._common import warn_data

    for text in source_notes(data, source):
        warn_data(text)
    if source is None:
        return data

    def kind(j):
        if source == "human":
            return "human"
        return j.kind if j.kind in ("llm", "metric") else "llm"

    return replace(data, judgments=tuple(replace(j, kind=kind(j)) if j.kind != kind(j) else j
                                         for j in data.judgments))


#: how repeated judgments (or grades) of the same thing count: every one (FastChat's show_result), or the later one
REPEATS = ("all", "last")


def add_repeats(p: argparse.ArgumentParser, what: str) -> None:
    """``--repeats all|last``: how a judgment (or grade) repeated in the data counts -- ``what`` says of what."""
    p.add_argument("--repeats", choices=REPEATS, default="all", metavar="all|last",
                   help=f"{what} recorded more than once (FastChat appends a rerun's rows): all counts every row, "
                        "as FastChat's show_result.py does; last counts the later row only. A note says "
                        "how many there were either way")


def describe_judgments(judgments: Iterable[Any]) -> dict[str, Any]:
    """Whose verdicts these judgments are: ``{"source": "human" | "judge" | "mixed", "annotators":
    {name: {"source", "verdicts"}}, "verdicts": n}`` over the judgments with a verdict (or a :class:`Counted`)."""
    counts: Counter = Counter()
    sources: dict[str, str] = {}
    for j, w in _counted(judgments):
        if getattr(j, "status", "done") != "done" or getattr(j, "verdict", None) is None:
            continue
        counts[j.annotator] += w
        sources.setdefault(j.annotator, source_of(j.kind))
    kinds = set(sources.values())
    source = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "human")
    return {"source": source, "verdicts": int(sum(counts.values())),
            "annotators": {a: {"source": sources[a], "verdicts": int(counts[a])} for a in counts}}


def describe_source(source: str, names: Iterable[str] = (), n: int | None = None, what: str = "verdict") -> dict[str, Any]:
    """The same description for verdicts not held as judgments (a score column): one ``source`` for all,
    given by ``names`` (a judge's name; none for people)."""
    names = [x for x in names if x]
    return {"source": source, "verdicts": n,
            "annotators": {x: {"source": source, "verdicts": None} for x in names}, "what": what}


def verdicts_line(desc: dict[str, Any]) -> str:
    """One line saying whose verdicts a result counts (what every output prints).

    >>> verdicts_line(describe_source("judge", ["gpt-4"], 320, "grade"))
    'verdicts: judge gpt-4 (320 grades)'
    >>> verdicts_line(describe_source("human", [], 80))
    'verdicts: human (80 verdicts)'
    """
    what = desc.get("what", "verdict")
    n = desc.get("verdicts")
    count = "" if n is None else f" ({n} {what}{'' if n == 1 else 's'})"
    ann = desc.get("annotators") or {}
    if desc["source"] == "mixed":
        parts = [f"{s} {a} ({v['verdicts']})" for a, v in ann.items() for s in [v["source"]]]
        return f"verdicts: mixed -- {', '.join(parts)}"
    names = [a for a, v in ann.items() if v["source"] == desc["source"] and a.lower() != "human"]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    if desc["source"] == "judge":
        return f"verdicts: judge {shown or '(unnamed)'}{count}"
    if len(names) > 4:  # a crowd: how many, not who
        return f"verdicts: human, {len(names)} annotators{count}"
    return f"verdicts: human{' ' + shown if shown else ''}{count}"
