"""Battles read from files: :func:`read_battles` (a battle file, its judges joined on the battle id, the
answers' style counts), :func:`with_texts` and :func:`judge_name`.

They live apart from :class:`~evalsift.arena.battles.Battles` (which imports nothing else of
:mod:`evalsift.arena`) because they need :mod:`evalsift.arena.style`, which needs
:mod:`evalsift.arena.bt`, which needs :class:`Battles`: with them in ``battles.py`` the three modules
imported one another in a circle. ``evalsift.arena.battles`` still answers every one of these names
(a lazy module ``__getattr__``), so the old import paths work.

>>> judge_name("arena-ppr/gpt-4-0125-preview.jsonl")
'gpt-4-0125-preview'
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..errors import DataError
from .battles import Battles
from .style import battle_counts


def read_battles(spec: str, judges: Sequence[str] = (), *, texts: bool = False, outputs: str | None = None,
                 games: str = "combined", verdicts_from: str | None = None, by: str | None = None,
                 questions: str | None = None, aggregate: str | None = None, aggregate_seed: int = 0) -> Battles:
    """The battles of ``spec`` (a file or dataset name that :func:`~evalsift.io.pairwise.read_judgments`
    reads: a Chatbot Arena battle file, FastChat / MT-Bench judgments, AlpacaEval annotations, a pairwise
    table), with each of ``judges`` (files or names of the same kinds) joined on the battle id.

    ``texts``: also count each battle's two answers for style control (:mod:`evalsift.arena.style`):
    the answers the battle file carries (Chatbot Arena's ``conversation_a`` / ``conversation_b``: the
    last assistant message; AlpacaEval's ``output_1`` / ``output_2``), and those of ``outputs`` (anything
    :func:`evalsift.io.load` reads with outputs per item and system: a long table ``item_id, system,
    output``, an AlpacaEval folder such as ``alpaca-eval``), joined on the battle's item id and model
    name; where both have a text, the battle file's wins.

    ``games``: FastChat pairwise rows count once by FastChat's rule (``combined``,
    :func:`~evalsift.io.judge_files.combine_games`) or once per game (``separate``). ``verdicts_from``:
    ``human`` or ``judge`` when the files cannot say whose verdicts they are (:func:`evalsift.verdicts.with_source`).
    ``by``: tag each battle with its value of this column (``tags``), for one board per value; ``questions``:
    MT-Bench's ``question.jsonl``, giving ``category`` (found beside a FastChat file when there). ``aggregate``:
    several annotators' verdicts on a battle made one (:mod:`evalsift.oracle.aggregate`), one battle each."""
    from ..io.pairwise import read_judgments, read_verdicts

    data = read_verdicts(spec, games=games, verdicts_from=verdicts_from, by=by, questions=questions,
                         aggregate=aggregate, aggregate_seed=aggregate_seed)
    battles = Battles.from_pairwise(data, source=str(spec), by=(by,) if by else ())
    for j in judges:
        battles = battles.with_judge(judge_name(j), read_judgments(j))
    if texts or outputs is not None:
        battles = with_texts(battles, [data.pool] + ([_outputs_pool(outputs)] if outputs is not None else []))
    return battles


def _outputs_pool(spec: str):
    from ..io import load

    pool = load(spec)
    if not pool.outputs:
        raise DataError(f"--outputs {spec}: no outputs in it; give a table with item_id, system, output columns "
                        "(CSV, TSV, JSONL) or an AlpacaEval folder", field="outputs")
    return pool


def with_texts(battles: Battles, pools: Sequence) -> Battles:
    """``battles`` with the style counts of their answers (:func:`evalsift.arena.style.battle_counts`),
    each answer looked up by (battle id, model) in ``pools`` in order (the first text found wins)."""
    index = []
    for pool in pools:
        pos = {i: k for k, i in enumerate(pool.item_ids)}
        index.append((pos, pool.outputs))

    def text(k: int, side: int):
        model = battles.models[battles.a[k] if side == 0 else battles.b[k]]
        for pos, outs in index:
            i = pos.get(battles.ids[k])
            if i is not None and model in outs:
                t = outs[model][i]
                if t is not None:
                    return t
        return None

    return replace(battles, style=battle_counts(battles, text))


def judge_name(spec: str) -> str:
    """A judge's short name from its file or dataset name (``arena-ppr/gpt-4-0125-preview.jsonl`` ->
    ``gpt-4-0125-preview``)."""
    from pathlib import PurePath

    name = PurePath(str(spec)).name
    for suffix in (".jsonl", ".json", ".csv", ".tsv", ".gz"):
        name = name.removesuffix(suffix)
    return name or str(spec)


__all__ = ["judge_name", "read_battles", "with_texts"]
