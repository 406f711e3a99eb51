"""Judge data as people keep it: Chatbot Arena battles, FastChat / MT-Bench judgments, AlpacaEval annotations.

Each layout is read into the same :class:`~evalsift.io.pairwise_data.PairwiseData` as the pairwise table (a
Pool plus recorded :class:`~evalsift.oracle.base.Judgment`\\ s), by the same entry points:
:func:`~evalsift.io.pairwise_table.read_pairwise` tells the layout from the file's header or first record
(:func:`~evalsift.io.pairwise_layout.pairwise_layout`) and calls the reader here, so ``load(path)``,
``--data FILE``, the ``judgments:FILE`` oracle and the ``judge:judgments:FILE`` proxy all take these
files. The files may be JSONL, a JSON list (``.json``), CSV or TSV (``.gz`` too); errors name the
file, the line (for a JSON list, the line where the object starts), the field and the fix.

Who judged, and which kind of judge (:func:`judge_kind`)
----------------------------------------------------------
The annotator is the row's judge column when there is one (``judge`` for battles and FastChat, a
list such as ``["gpt-4", "pair-v2"]`` joined with ``/``; ``annotator`` for AlpacaEval), else the
file's name without its suffixes (``gpt-4-0125-preview.jsonl`` -> ``gpt-4-0125-preview``). The kind is
``llm`` when that name contains the name of a known LLM family as a word start (:data:`LLM_FAMILIES`:
gpt, chatgpt, claude, llama, mistral, mixtral, gemini, gemma, palm, bard, qwen, deepseek, vicuna,
davinci), else ``human``: ``human.jsonl``, ``expert_0``, ``arena_user_973`` are human. A ``kind``
column (``human``, ``llm``, ``metric``) overrides the rule, and FastChat's ``[judge model, prompt]`` cell
makes the row an LLM judge's. Each judgment records where its kind came from (``detail["kind_from"]``,
:data:`evalsift.verdicts.KIND_FROM`): the file's own fields (a kind column, a judge or annotator field, FastChat's cell) or,
when it has none of them, only the file's name -- a guess, which :func:`evalsift.verdicts.with_source`
says in a note (``--verdicts-from human|judge`` states it instead; a ``--verdicts-from`` that contradicts
what the file's own fields say is noted too).

Chatbot Arena battles (:func:`read_arena`)
--------------------------------------------
Rows ``{model_a, model_b, winner, ...}``; ``winner`` is ``model_a``, ``model_b``, ``tie`` or ``tie (...)``
(``tie (bothbad)``; MT-Bench's ``tie (inconsistent)``): every tie is the verdict ``tie``, the
original value is kept in ``detail["winner"]``. ``model_a`` was shown first (left): ``shown_order``
``ab``. The item is the battle:

1. ``num`` when the file has it (the Prediction-Powered Ranking files: ``{num, question_id, model_a,
   model_b, winner}``), else ``battle_id`` or ``id``: each battle is its own item, and files judging
   the same battles (a human file and an LLM judge's) join on it;
2. else ``question_id`` with ``turn`` (item ``<question_id>-t<turn>``; ``<question_id>`` without a
   ``turn`` column): the MT-Bench human judgments layout, where an item is a question's turn that
   several pairs and judges share (and FastChat's judge files use the same ids). This needs the key
   to tell battles apart: the same item, pair and annotator twice is an error asking for a battle id
   column (``num`` or ``battle_id``) -- unless the rows have a ``judge`` column and are identical.

The same battle id twice is an error naming both lines when the content differs (other models,
another ``question_id``, another text, or another winner from the same annotator); an identical
repeat is left out with a note. With LMSYS's release fields ``conversation_a`` / ``conversation_b``
(lists of ``{role, content}``), the last assistant message of each is that model's output and the
first user message the item's input. ``question_id``, ``turn``, ``language``, ``anony`` go to
``detail``.

FastChat pairwise judgments (:func:`read_fastchat`)
-----------------------------------------------------
FastChat's ``data/mt_bench/model_judgment/gpt-4_pair.jsonl``: rows ``{question_id, model_1, model_2,
g1_winner, g2_winner, judge: [model, prompt_name], turn, g1_judgment, g2_judgment, ...}``. Game 1 showed
``model_1`` first, game 2 the order swapped; FastChat has already mapped both winners back to
``model_1`` / ``model_2`` / ``tie`` (or ``error``: the judge's answer had no verdict). Each row gives TWO
judgments of item ``<question_id>-t<turn>`` (turn 1 without a ``turn`` column), ``a = model_1``: game 1
with ``shown_order`` ``ab`` by annotator ``<judge> (g1)``, game 2 with ``ba`` by ``<judge> (g2)``.
Being two annotators, the vote rule makes agreeing games that verdict and disagreeing ones a tie
(FastChat's "inconsistent"). ``error`` is never a verdict: an ``error`` judgment, counted in a note. A
repeated row (FastChat appends when a judgment is rerun) is read as one more judgment: ``show_result.py``
counts every row, and so do ``arena`` and ``winrate`` (``winrate --repeats last`` keeps the later one). A
judge cell ``[model, prompt name]`` makes the judgments an LLM judge's (kind ``llm``) whatever the model is
called; ``detail`` keeps its parts as ``judge_model`` and ``judge_prompt`` (FastChat judges turn 1 with
``pair-v2``, turn 2 with ``pair-v2-multi-turn``, and math, reasoning and coding questions with
``pair-math-v1`` / ``pair-math-v1-multi-turn``: one judge under several prompts, which ``winrate`` counts
together as ``show_result.py`` does). ``arena`` and ``winrate`` count one battle per row by FastChat's rule
(:func:`combine_games`); ``--games separate`` keeps the two games.

FastChat review files (:func:`read_review`)
---------------------------------------------
The older ``fastchat/eval`` (Vicuna) reviews ``review_<model 1>_<model 2>.jsonl``: ``{review_id,
question_id, answer1_id, answer2_id, reviewer_id, text, score: [s1, s2]}``, one judgment per question
(item ``<question_id>``) from the score pair, and the two grades as the Pool's metric ``score``.

AlpacaEval annotations (:func:`read_alpaca_annotations`)
----------------------------------------------------------
``annotations.json`` as alpaca_eval writes it: a JSON list of ``{instruction, output_1, generator_1,
output_2, generator_2, annotator, preference, dataset?, ...}``. The verdict is
:func:`~evalsift.io.pairwise_data.alpaca_verdict` of ``preference`` (1 = output_1 better, 2 = output_2
better, 1.5 or 0 a draw, a weighted annotator's value in between by which side of 1.5 it falls; the
raw value is in ``detail``); a missing preference is an ``error`` judgment; a non-number or a number
outside [1, 2] that is not 0 is a DataError. ``a = generator_1``; the item is the ``index`` column
when there is one, else ``<dataset>/<sha1 of the instruction, 12 hex digits>`` (the same id in every
file with that instruction); the instruction is the item's input, ``output_1``/``output_2`` the outputs;
``shown_order`` is ``ab`` (``generator_1`` first, as the file records it; ``ba`` where a row says
``is_switched_outputs: true``; alpaca_eval randomises the order by default and maps the preference back).
Rows comparing a generator with itself are left out with a note.

>>> import json, os, tempfile
>>> folder = tempfile.TemporaryDirectory()
>>> path = os.path.join(folder.name, "gpt-4.jsonl")
>>> rows = [{"num": 1, "model_a": "X", "model_b": "Y", "winner": "model_b"},
...         {"num": 2, "model_a": "Y", "model_b": "X", "winner": "tie (bothbad)"}]
>>> _ = open(path, "w").write("".join(json.dumps(r) + "\\n" for r in rows))
>>> from evalsift.io import read_pairwise
>>> data = read_pairwise(path)
>>> [(j.item_id, j.a, j.b, j.verdict, j.annotator, j.kind) for j in data.judgments]
[('1', 'X', 'Y', 'b', 'gpt-4', 'llm'), ('2', 'Y', 'X', 'tie', 'gpt-4', 'llm')]
>>> folder.cleanup()
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..oracle.base import Judgment, _now
from ._common import MISSING_TOKENS, to_float, warn_data
from .arena_hard import read_arena_hard
from .pairwise_data import KINDS, PairwiseData, _Builder, _choice, _text, alpaca_verdict

#: name parts that make an annotator an LLM judge (matched at the start of a word, any case)
LLM_FAMILIES = ("gpt", "chatgpt", "claude", "llama", "mistral", "mixtral", "gemini", "gemma", "palm", "bard", "qwen",
                "deepseek", "vicuna", "davinci")
_LLM_NAME = re.compile(r"(?:^|[^a-z])(?:" + "|".join(LLM_FAMILIES) + r")(?![a-z])", re.IGNORECASE)

#: battle-id columns, in the order they are looked for
BATTLE_IDS = ("num", "battle_id", "id")
ARENA_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie"}
FASTCHAT_WINNERS = {"model_1": "a", "model_2": "b", "tie": "tie"}
_SUFFIXES = (".gz", ".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".tab")

Rows = list[tuple[int, dict[str, Any]]]


def judge_kind(name: str) -> str:
    """``llm`` when ``name`` names a known LLM family at the start of a word (:data:`LLM_FAMILIES`), else ``human``.

    Conservative: a name that does not say it is a model is taken as a person's.

    >>> [judge_kind(n) for n in ("gpt-4-0125-preview", "claude-3-opus-20240229", "gpt4_pair", "llama-3-70b",
    ...                          "weighted_alpaca_eval_gpt4_turbo", "human", "expert_0", "arena_user_973", "egpt")]
    ['llm', 'llm', 'llm', 'llm', 'llm', 'human', 'human', 'human', 'human']
    """
    return "llm" if _LLM_NAME.search(name) else "human"


def file_annotator(path: Path) -> str:
    """The annotator a file without a judge column stands for: its name without the known suffixes.

    >>> file_annotator(Path("data/gpt-4-0125-preview.jsonl.gz")), file_annotator(Path("human.json"))
    ('gpt-4-0125-preview', 'human')
    """
    name = path.name
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def _annotator(value: Any) -> str | None:
    """A judge cell as a name: a string, or a list such as FastChat's ``["gpt-4", "pair-v2"]`` joined with ``/``."""
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value if v is not None and str(v).strip()]
        return "/".join(parts) or None
    text = _text(value)
    return text.strip() if text is not None and text.strip() else None


def _kind(path: Path, line: int, row: dict[str, Any], annotator: str, iid: str, named: bool) -> tuple[str, str]:
    """``(kind, where from)``: the row's ``kind`` column, else :func:`judge_kind` of the annotator -- named by the
    row's judge/annotator field, or (``named`` False) only by the file's name (the keys of
    :data:`evalsift.verdicts.KIND_FROM`)."""
    if _text(row.get("kind")) is not None:
        return _choice(path, line, "kind", row.get("kind"), KINDS, "human", iid), "kind"
    return judge_kind(annotator), ("judge" if named else "name")


def _name(path: Path, line: int, row: dict[str, Any], column: str, iid: str | None, what: str) -> str:
    """A model name cell, or a DataError saying the row must name it."""
    value = _text(row.get(column))
    if value is None or not value.strip():
        raise DataError(f"{path}: line {line}: {column} is {'missing' if column not in row else 'empty'}; {what}.",
                        field=column, item_id=iid, hint=f"give every row its {column}")
    return value


def _different(path: Path, line: int, a: str, b: str, iid: str) -> None:
    if a == b:
        raise DataError(f"{path}: line {line}: both sides are {a!r}; a judgment compares two different systems "
                        "(leave such rows out).", system=a, item_id=iid)


def _id(value: Any) -> str | None:
    """An id cell as text: whole numbers without a decimal point (``7.0`` from a CSV or JSON -> ``7``)."""
    if isinstance(value, float) and not math.isnan(value) and value.is_integer():
        return str(int(value))
    text = _text(value)
    return text.strip() if text is not None and text.strip() else None


def _item_key(path: Path, line: int, row: dict[str, Any], default_turn: Any = None) -> str:
    """``<question_id>-t<turn>`` (or ``<question_id>`` without a turn and no default)."""
    qid = _id(row.get("question_id"))
    if qid is None:
        raise DataError(f"{path}: line {line}: question_id is {'missing' if 'question_id' not in row else 'empty'}; "
                        "every row names its question.", field="question_id", hint="give every row its question_id")
    turn = _id(row.get("turn"))
    turn = turn if turn is not None else (None if default_turn is None else str(default_turn))
    return qid if turn is None else f"{qid}-t{turn}"


def _conversation(value: Any) -> tuple[str | None, str | None]:
    """(first user message, last assistant message) of an LMSYS conversation (a list of ``{role, content}``)."""
    if not isinstance(value, list):
        return None, None
    user = next((_text(m.get("content")) for m in value if isinstance(m, dict) and m.get("role") == "user"), None)
    answer = next((_text(m.get("content")) for m in reversed(value)
                   if isinstance(m, dict) and m.get("role") == "assistant"), None)
    return user, answer


def _dropped_note(path: Path, count: int, what: str) -> None:
    if count:
        warn_data(f"{path}: {count} {what}.")


# ---------------------------------------------------------------------------------------- arena
def read_arena(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """Chatbot Arena battles (or MT-Bench human judgments) from a file's rows (see the module doc).

    ``rows``: ``(line, record)`` pairs as :func:`~evalsift.io.pairwise_table.read_pairwise` reads them; ``cols``:
    every field seen. Use ``read_pairwise(path)`` rather than calling this directly.
    """
    id_col = next((c for c in BATTLE_IDS if c in cols), None)
    if id_col is None and "question_id" not in cols:
        raise DataError(f"{path}: the battles have no id: found fields {cols}. Add a per-battle id column -- num "
                        "(as in the Prediction-Powered Ranking files) or battle_id -- so judgments of the same battle "
                        "in other files join on it, or question_id (with turn) when each question is one item.",
                        field="num", hint="add a num or battle_id column")
    by_judge = "judge" in cols
    stem = file_annotator(path)
    out = _Builder(path)
    seen: dict[tuple[str, frozenset, str], tuple[int, tuple]] = {}
    battles: dict[str, tuple[int, tuple]] = {}  # battle id -> (line, content shared by every judge)
    repeats, stamp, kinds = 0, _now(), {}
    for line, r in rows:
        if id_col is not None:
            iid = _id(r.get(id_col))
            if iid is None:
                raise DataError(f"{path}: line {line}: {id_col} is {'missing' if id_col not in r else 'empty'}; "
                                f"every battle needs its id (the file's battles are identified by {id_col}).",
                                field=id_col, hint=f"give every row its {id_col}")
        else:
            iid = _item_key(path, line, r)
        a = _name(path, line, r, "model_a", iid, "every battle names the model shown first")
        b = _name(path, line, r, "model_b", iid, "every battle names the model shown second")
        _different(path, line, a, b, iid)
        raw = r.get("winner")
        text = _text(raw)
        key = text.strip().lower() if text is not None else ""
        verdict = ARENA_WINNERS.get(key) or ("tie" if key.startswith("tie (") and key.endswith(")") else None)
        if verdict is None:
            shown = "is empty" if text is None or not text.strip() else f"{raw!r} is not a battle outcome"
            raise DataError(f"{path}: line {line}: winner {shown}; write model_a, model_b, tie or tie (bothbad).",
                            field="winner", item_id=iid, hint="use model_a, model_b, tie or tie (bothbad)")
        named = _annotator(r.get("judge"))
        annotator = named or stem
        user_a, answer_a = _conversation(r.get("conversation_a"))
        user_b, answer_b = _conversation(r.get("conversation_b"))
        if id_col is not None:  # one battle: the same models and question whoever judged it (texts: out.output)
            content = (a, b, _id(r.get("question_id")), _id(r.get("turn")))
            first = battles.setdefault(iid, (line, content))
            if first[1] != content and not _same_battle(first[1], content):
                raise DataError(f"{path}: line {line} uses battle {id_col} {iid!r} of line {first[0]} for another "
                                f"battle ({_describe(content)} vs {_describe(first[1])}); each battle needs its own "
                                f"{id_col}: renumber one of them or remove the stray line.", field=id_col, item_id=iid)
        pair_key = (iid, frozenset((a, b)), annotator)
        signature = (a, b, verdict, key, answer_a, answer_b)
        if pair_key in seen:
            first_line, first_sig = seen[pair_key]
            if first_sig == signature and (id_col is not None or by_judge):
                repeats += 1
                continue
            if id_col is not None:
                raise DataError(f"{path}: line {line} repeats battle {id_col} {iid!r} of line {first_line} for "
                                f"annotator {annotator!r} with another outcome ({key!r} vs {first_sig[3]!r}); one "
                                "annotator judges a battle once: remove one of the lines, or give the later one its "
                                "own judge.", field="winner", item_id=iid)
            raise DataError(f"{path}: line {line} and line {first_line} both judge {a} vs {b} on question_id/turn "
                            f"{iid!r} for annotator {annotator!r}, so question_id (and turn) does not identify a "
                            "battle here; add a per-battle id column (num or battle_id) to tell the battles apart.",
                            field="num", item_id=iid, hint="add a num or battle_id column")
        seen[pair_key] = (line, signature)
        out.see(iid, a, b)
        if id_col is not None:
            out.battle(iid, a, b)
        out.output(iid, a, answer_a, line, "conversation_a")
        out.output(iid, b, answer_b, line, "conversation_b")
        out.input(iid, user_a or user_b, line, "conversation_a")
        detail: dict[str, Any] = {"source": str(path), "line": line, "winner": text}
        for f in ("question_id", "turn", "language", "anony", "prob",  # prob: an evalsift arena export's draw
                  "conv_metadata"):  # Chatbot Arena's per-answer counts (tokens, markdown): --style-control without texts
            if f in r and r[f] is not None and f != id_col:
                detail[f] = r[f]
        found = kinds.get((annotator, named is not None)) if "kind" not in r else None
        if found is None:
            found = _kind(path, line, r, annotator, iid, named is not None)
            if "kind" not in r:
                kinds[(annotator, named is not None)] = found
        kind, detail["kind_from"] = found
        out.judgments.append(Judgment(item_id=iid, a=a, b=b, verdict=verdict, annotator=annotator, kind=kind,
                                      shown_order="ab", created_at=stamp, detail=detail))
    _dropped_note(path, repeats, "repeated line(s) identical to an earlier one (same battle, models, annotator and "
                                 "outcome) were left out")
    return out.build(name)


def _same_battle(first: tuple, other: tuple) -> bool:
    """The same models in the same order, and the same question_id and turn where both rows give them."""
    return first[:2] == other[:2] and all(x is None or y is None or x == y for x, y in zip(first[2:], other[2:]))


def _describe(content: tuple) -> str:
    a, b, qid, turn = content
    return (f"{a} vs {b}" + (f", question_id {qid}" if qid is not None else "")
            + (f", turn {turn}" if turn is not None else ""))


# ---------------------------------------------------------------------------------------- FastChat
def read_fastchat(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """FastChat / MT-Bench pairwise judge files from a file's rows (see the module doc): two judgments per row."""
    stem = file_annotator(path)
    out = _Builder(path)
    errors, stamp = 0, _now()
    for line, r in rows:
        iid = _item_key(path, line, r, default_turn=1)
        a = _name(path, line, r, "model_1", iid, "every judgment names the model of game 1's first answer")
        b = _name(path, line, r, "model_2", iid, "every judgment names the model of game 1's second answer")
        _different(path, line, a, b, iid)
        named = _annotator(r.get("judge"))
        judge = named or stem
        # FastChat's [judge model, prompt name] cell is an LLM judge's, whatever the model is called
        cell = r.get("judge") if isinstance(r.get("judge"), (list, tuple)) else None
        prompted = cell is not None and len(cell) >= 2 and "kind" not in r
        kind, kind_from = ("llm", "cell") if prompted else _kind(path, line, r, judge, iid, named is not None)
        games = []
        for game, order in (("g1", "ab"), ("g2", "ba")):
            raw = r.get(f"{game}_winner")
            text = _text(raw)
            key = text.strip().lower() if text is not None else ""
            if key not in FASTCHAT_WINNERS and key != "error":
                shown = "is missing" if text is None or not text.strip() else f"{raw!r} is not a FastChat winner"
                raise DataError(f"{path}: line {line}: {game}_winner {shown}; FastChat writes model_1, model_2, tie "
                                "or error.", field=f"{game}_winner", item_id=iid,
                                hint="use model_1, model_2, tie or error")
            games.append((game, order, key, text))
        out.see(iid, a, b)
        for game, order, key, text in games:
            detail: dict[str, Any] = {"source": str(path), "line": line, "game": game, "winner": text,
                                      "kind_from": kind_from}
            if "turn" in r:
                detail["turn"] = r["turn"]
            if cell:  # the judge model and its prompt: one judge's prompts count together (winrate)
                detail["judge_model"] = str(cell[0])
                if len(cell) >= 2:
                    detail["judge_prompt"] = str(cell[1])
            common = {"item_id": iid, "a": a, "b": b, "annotator": f"{judge} ({game})", "kind": kind,
                      "shown_order": order, "created_at": stamp}
            if key == "error":
                errors += 1
                detail["reason"] = f"FastChat recorded no verdict for game {game[1]} ({game}_winner 'error')"
                out.judgments.append(Judgment(verdict=None, status="error", detail=detail, **common))
            else:
                out.judgments.append(Judgment(verdict=FASTCHAT_WINNERS[key], detail=detail, **common))
    _dropped_note(path, errors, "game(s) have winner 'error' (the judge gave no verdict): recorded as errors, never "
                                "as verdicts")
    return out.build(name)


GAMES = ("combined", "separate")


def combine_games(data: PairwiseData) -> PairwiseData:
    """FastChat pairwise judgments one per row, by FastChat's rule (``show_result.py``'s pairwise mode): a
    row whose two games name the same non-tie winner is that winner's; any other row (a tie in game 1, or
    games that disagree: "inconsistent") is a tie; a row with an ``error`` game is left out (an ``error``
    judgment, counted in a note). Rows of other layouts pass through unchanged.

    The combined judgment keeps the row's item, pair (``a = model_1``), judge (without `` (g1)``) and kind,
    ``shown_order`` ``ab``; ``detail`` has ``g1_winner``, ``g2_winner`` and ``winner`` (``model_1``,
    ``model_2``, ``tie``, or ``tie (inconsistent)``). This is what ``evalsift arena`` and ``winrate`` count
    by default (one battle per row); ``--games separate`` keeps both games (two per row, as read).
    """
    cols = getattr(data, "columns", None)
    if cols is not None and cols.detail_column("game") is None:  # read as columns, no FastChat game among them
        return data
    rows: dict[tuple[str, int], list[Judgment]] = {}
    out: list[Judgment | tuple[str, int]] = []
    for j in data.judgments:
        d = j.detail or {}
        if d.get("game") not in ("g1", "g2"):
            out.append(j)
            continue
        key = (str(d.get("source")), int(d.get("line", 0)))
        if key not in rows:
            rows[key] = []
            out.append(key)
        rows[key].append(j)
    combined: list[Judgment] = []
    dropped = 0
    for entry in out:
        if isinstance(entry, Judgment):
            combined.append(entry)
            continue
        games = {(g.detail or {}).get("game"): g for g in rows[entry]}
        g1, g2 = games.get("g1"), games.get("g2")
        first = g1 or g2
        detail = {k: v for k, v in (first.detail or {}).items() if k not in ("game", "winner", "reason")}
        detail.update({"g1_winner": (g1.detail or {}).get("winner") if g1 else None,
                       "g2_winner": (g2.detail or {}).get("winner") if g2 else None})
        annotator = re.sub(r" \(g[12]\)$", "", first.annotator)
        common = {"item_id": first.item_id, "a": first.a, "b": first.b, "annotator": annotator, "kind": first.kind,
                  "shown_order": "ab", "created_at": first.created_at}
        if g1 is None or g2 is None or g1.status != "done" or g2.status != "done":
            dropped += 1
            detail["reason"] = "a game has winner 'error' (or is missing): FastChat leaves the row out"
            combined.append(Judgment(verdict=None, status="error", detail=detail, **common))
            continue
        if g1.verdict == g2.verdict and g1.verdict != "tie":
            verdict, winner = g1.verdict, "model_1" if g1.verdict == "a" else "model_2"
        else:
            verdict, winner = "tie", "tie" if g1.verdict == g2.verdict else "tie (inconsistent)"
        detail["winner"] = winner
        combined.append(Judgment(verdict=verdict, detail=detail, **common))
    if not rows:
        return data
    _dropped_note(Path(data.source), dropped, "FastChat row(s) have a game with winner 'error': left out, as "
                                               "FastChat's show_result does")
    return PairwiseData(pool=data.pool, judgments=tuple(combined), source=data.source)


# ---------------------------------------------------------------------------------------- AlpacaEval
def alpaca_item_id(instruction: str, dataset: str | None = None) -> str:
    """The item id of an AlpacaEval instruction: ``<dataset>/`` and the first 12 hex digits of the
    instruction's SHA-1 (the same in every file holding that instruction).

    >>> alpaca_item_id("What is 2+2?", "helpful_base")
    'helpful_base/59b26167b681'
    """
    digest = hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:12]
    return f"{dataset}/{digest}" if dataset else digest


def read_alpaca_annotations(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """AlpacaEval ``annotations.json`` rows (see the module doc): one judgment per row, ``a = generator_1``."""
    stem = file_annotator(path)
    out = _Builder(path)
    seen: dict[tuple[str, frozenset, str], tuple[int, tuple]] = {}
    same, repeats, missing, stamp = 0, 0, 0, _now()
    for line, r in rows:
        if "index" in cols:
            iid = _id(r.get("index"))
            if iid is None:
                raise DataError(f"{path}: line {line}: index is {'missing' if 'index' not in r else 'empty'}; the "
                                "file's items are identified by index, so every row needs one.", field="index")
        else:
            instruction = _text(r.get("instruction"))
            if instruction is None:
                raise DataError(f"{path}: line {line}: instruction is {'missing' if 'instruction' not in r else 'empty'}; "
                                "every annotation names its instruction (or add an index column).",
                                field="instruction", hint="give every row its instruction")
            iid = alpaca_item_id(instruction, _text(r.get("dataset")))
        a = _name(path, line, r, "generator_1", iid, "every annotation names the model of output_1")
        b = _name(path, line, r, "generator_2", iid, "every annotation names the model of output_2")
        if a == b:
            same += 1
            continue
        named = _annotator(r.get("annotator"))
        annotator = named or stem
        raw = r.get("preference")
        text = _text(raw)
        detail: dict[str, Any] = {"source": str(path), "line": line, "preference": None}
        if text is None or (isinstance(raw, str) and raw.strip() in MISSING_TOKENS) or (
                isinstance(raw, float) and math.isnan(raw)):
            verdict, value = None, None
        else:
            try:
                value = to_float(raw)
            except (TypeError, ValueError):
                raise DataError(f"{path}: line {line}: preference {raw!r} is not a number; expected a value in [1, 2] "
                                "(1 = output_1 better, 2 = output_2 better, 1.5 or 0 = a draw).", field="preference",
                                item_id=iid) from None
            verdict = alpaca_verdict(value)
            if verdict is None:
                raise DataError(f"{path}: line {line}: preference {value!r} is outside [1, 2] (1 = output_1 better, "
                                "2 = output_2 better, 1.5 or 0 = a draw).", field="preference", item_id=iid)
            detail["preference"] = value
        out1, out2 = _text(r.get("output_1")), _text(r.get("output_2"))
        pair_key = (iid, frozenset((a, b)), annotator)
        signature = (a, b, value, out1, out2)
        if pair_key in seen:
            first_line, first_sig = seen[pair_key]
            if first_sig == signature:
                repeats += 1
                continue
            raise DataError(f"{path}: line {line} annotates item {iid!r} ({a} vs {b}) again for annotator {annotator!r}, "
                            f"differently from line {first_line} (preference {value!r} vs {first_sig[2]!r}); keep one "
                            "annotation per instruction, pair and annotator.", field="preference", item_id=iid)
        seen[pair_key] = (line, signature)
        switched = r.get("is_switched_outputs")
        order = "ba" if switched is True or _text(switched) in ("True", "true", "1") else "ab"
        out.see(iid, a, b)
        out.output(iid, a, out1, line, "output_1")
        out.output(iid, b, out2, line, "output_2")
        out.input(iid, _text(r.get("instruction")), line, "instruction")
        for f in ("dataset", "index"):
            if r.get(f) is not None:
                detail[f] = r[f]
        kind, detail["kind_from"] = _kind(path, line, r, annotator, iid, named is not None)
        common = {"item_id": iid, "a": a, "b": b, "annotator": annotator, "kind": kind, "shown_order": order,
                  "created_at": stamp}
        if verdict is None:
            missing += 1
            detail["reason"] = "no recorded preference"
            out.judgments.append(Judgment(verdict=None, status="error", detail=detail, **common))
        else:
            out.judgments.append(Judgment(verdict=verdict, detail=detail, **common))
    _dropped_note(path, same, "row(s) compare a generator with itself and were left out")
    _dropped_note(path, repeats, "repeated row(s) identical to an earlier one were left out")
    _dropped_note(path, missing, "row(s) have no preference: recorded as errors, never as verdicts")
    if not out.judgments and same:
        raise DataError(f"{path}: every row compares a generator with itself; there is nothing to replay.",
                        field="generator_2")
    return out.build(name)


# ---------------------------------------------------------------------------------------- FastChat review files
_REVIEW_NAME = re.compile(r"^review_(?P<m1>[^_]+)_(?P<m2>[^_]+)$")


def review_models(path: Path) -> tuple[str, str]:
    """The two models a FastChat review file compares, from its name ``review_<model 1>_<model 2>.jsonl``.

    >>> review_models(Path("table/review/review_alpaca-13b_vicuna-13b.jsonl"))
    ('alpaca-13b', 'vicuna-13b')
    """
    m = _REVIEW_NAME.match(file_annotator(path))
    if m is None:
        raise DataError(f"{path}: a FastChat review file names its two models in its file name, "
                        "review_<model 1>_<model 2>.jsonl (each without '_'); this name does not. Rename the file, "
                        "or give every row model_1 and model_2 fields.", field="model_1",
                        hint="rename to review_<model 1>_<model 2>.jsonl or add model_1/model_2")
    return m.group("m1"), m.group("m2")


def read_review(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """FastChat's older review files (``fastchat/eval``, the Vicuna evaluation): one row per question,
    ``{review_id, question_id, answer1_id, answer2_id, reviewer_id, text, score: [s1, s2]}``, the two models
    named by the file (:func:`review_models`) or by ``model_1`` / ``model_2`` fields.

    Each row is one judgment of item ``<question_id>`` (``a`` = model 1, shown first): ``a`` when
    ``s1 > s2``, ``b`` when ``s1 < s2``, ``tie`` when equal; the two grades are also the Pool's metric
    ``score`` (so ``evalsift rank`` ranks by them). A pair with a ``-1`` (FastChat's mark for a review it
    could not parse) is an ``error`` judgment. The annotator is ``reviewer_id`` when it is a name, else
    ``gpt-4`` (these files are GPT-4's reviews); the kind is ``llm`` unless a ``kind`` column says otherwise.
    """
    by_name = None if {"model_1", "model_2"} <= set(cols) else review_models(path)
    out = _Builder(path)
    errors, stamp = 0, _now()
    seen: dict[tuple[str, str, str], int] = {}
    for line, r in rows:
        iid = _item_key(path, line, r)
        if by_name is None:
            a = _name(path, line, r, "model_1", iid, "every review names its first model")
            b = _name(path, line, r, "model_2", iid, "every review names its second model")
        else:
            a, b = by_name
        _different(path, line, a, b, iid)
        pair = r.get("score")
        try:
            s1, s2 = (to_float(v) for v in pair)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise DataError(f"{path}: line {line}: score {pair!r} is not a pair of numbers; a review's score is "
                            "[score of answer 1, score of answer 2] (-1, -1 where the review could not be parsed).",
                            field="score", item_id=iid, hint="write score as [s1, s2]") from None
        reviewer = r.get("reviewer_id")
        annotator = (_annotator(reviewer) if isinstance(reviewer, str) and not reviewer.strip().isdigit() else None) \
            or "gpt-4"
        key = (iid, a, b)
        if key in seen:
            raise DataError(f"{path}: line {line} reviews question {iid!r} ({a} vs {b}) again (first on line "
                            f"{seen[key]}); keep one review per question.", field="question_id", item_id=iid)
        seen[key] = line
        kind = _choice(path, line, "kind", r.get("kind"), KINDS, "llm", iid)
        out.see(iid, a, b)
        detail: dict[str, Any] = {"source": str(path), "line": line, "score": [s1, s2]}
        for f in ("review_id", "answer1_id", "answer2_id"):
            if r.get(f) is not None:
                detail[f] = r[f]
        common = {"item_id": iid, "a": a, "b": b, "annotator": annotator, "kind": kind, "shown_order": "ab",
                  "created_at": stamp}
        if s1 < 0 or s2 < 0:
            errors += 1
            detail["reason"] = "the review has no score pair (-1)"
            out.judgments.append(Judgment(verdict=None, status="error", detail=detail, **common))
            continue
        out.score("score", iid, a, s1)
        out.score("score", iid, b, s2)
        out.judgments.append(Judgment(verdict="a" if s1 > s2 else "b" if s1 < s2 else "tie", detail=detail, **common))
    _dropped_note(path, errors, "review(s) have score -1 (FastChat could not parse them): recorded as errors, never "
                                "as verdicts")
    return out.build(name)


# ---------------------------------------------------------------------------------------- evalsift's own records
def read_evalsift_judgments(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """evalsift's own judgment records (``annotate export --format judgments``): one row per stored judgment,
    undone ones included (``retracted_at`` set). Judgments that stand are kept in the order they were stored
    (``id``): finished ones as verdicts, skips as skips; undone ones are left out (a note says how many).
    Score judgments (``b`` empty) are refused: they are not pairwise verdicts."""
    out = _Builder(path)
    undone = 0
    ordered = sorted(rows, key=lambda lr: (lr[1].get("id") is None, lr[1].get("id") or 0, lr[0]))
    for line, r in ordered:
        iid = _id(r.get("item_id"))
        if iid is None:
            raise DataError(f"{path}: line {line}: item_id is missing; every judgment record names its item",
                            field="item_id")
        a = _name(path, line, r, "a", iid, "every judgment record names its first system")
        if _text(r.get("b")) is None or not str(r.get("b")).strip():
            raise DataError(f"{path}: line {line}: b is empty: this is a score judgment (a score project's export), "
                            "not a pairwise verdict; rank scores with 'annotate export --format table' and "
                            "'evalsift rank'", field="b", item_id=iid)
        b = _name(path, line, r, "b", iid, "every judgment record names its second system")
        _different(path, line, a, b, iid)
        if r.get("retracted_at"):
            undone += 1
            continue
        status = _text(r.get("status")) or "done"
        verdict = _text(r.get("verdict"))
        if status == "done" and verdict not in ("a", "b", "tie"):
            raise DataError(f"{path}: line {line}: verdict {r.get('verdict')!r} is not a, b or tie", field="verdict",
                            item_id=iid)
        out.see(iid, a, b)
        detail = dict(r.get("detail") or {}) if isinstance(r.get("detail"), dict) else {}
        detail.update({"source": str(path), "line": line, "id": r.get("id")})
        out.judgments.append(Judgment(
            item_id=iid, a=a, b=b, verdict=verdict if status == "done" else None,
            annotator=_annotator(r.get("annotator")) or file_annotator(path), kind=_text(r.get("kind")) or "human",
            shown_order=_text(r.get("shown_order")) or "ab", status=status,
            created_at=_text(r.get("created_at")) or _now(), detail=detail))
    _dropped_note(path, undone, "judgment(s) were undone in the annotation app and are left out")
    return out.build(name)


def read_arena_hard_file(path: Path, rows: Rows, cols: list[str], name: str | None = None) -> PairwiseData:
    """Arena-Hard-Auto judgments (``model_judgment/<judge>/<model>.jsonl``): one judgment per game, read by
    :func:`evalsift.io.arena_hard.read_arena_hard` (which reads the file itself, and the answers beside it)."""
    return read_arena_hard(path, name=name)


#: layout name (:func:`~evalsift.io.pairwise_layout.pairwise_layout`) -> reader
READERS: dict[str, Callable[..., PairwiseData]] = {
    "arena": read_arena,
    "fastchat": read_fastchat,
    "alpaca": read_alpaca_annotations,
    "evalsift": read_evalsift_judgments,
    "review": read_review,
    "arena-hard": read_arena_hard_file,
}
