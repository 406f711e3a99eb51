"""Arena-Hard-Auto's files: an LLM judge's verdicts of each model against one baseline, as recorded judgments.

Arena-Hard-Auto (``lmarena/arena-hard-auto``) asks a judge to compare every model's answer with a baseline's
answer on each question, twice: game 1 shows the baseline as assistant A and the model as B, game 2 the other
way round. Its ``gen_judgment.py`` writes one line per (model, question) to
``data/<bench>/model_judgment/<judge>/<model>.jsonl``:

- v2.0: ``{uid, category, judge, model, baseline, games: [{score, judgment, prompt}, {...}]}``;
- v0.1: ``{question_id, model, judge, games: [{user_prompt, judgment, score}, {...}]}`` (no baseline field:
  its ``show_result.py`` takes ``--baseline``, by default ``gpt-4-0314``).

``score`` is the label the judge's answer ended with: ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A`` (and the
mirrored spellings ``A<B``, ``A<<B``, ``B<A``, ``B<<A``, ``B=A``), or null when none was found. The answers lie in
``data/<bench>/model_answer/<model>.jsonl``: ``{uid, model, messages: [..., {role: assistant, content:
{answer}}], metadata: {token_len, header_count: {h1..h6}, list_count: {ordered, unordered}, bold_count: {**,
__}}}`` (v2.0; v0.1: ``{question_id, model_id, choices: [{turns: [{content, token_len}]}], conv_metadata}``).

What evalsift reads (:func:`read_arena_hard`), into the shared recorded-judgments mechanism
(:class:`~evalsift.io.pairwise_data.PairwiseData`):

- one :class:`~evalsift.oracle.base.Judgment` per game, of item ``<question id>`` (the raw ``uid`` /
  ``question_id``, so the judgments join the answers and other judges' files), ``a`` = the baseline, ``b`` =
  the model, by annotator ``<judge> (g1)`` / ``<judge> (g2)`` (kind ``llm``; the judge is the row's ``judge``,
  else the ``model_judgment/<judge>/`` folder), ``shown_order`` ``ab`` for game 1 and ``ba`` for game 2; the
  verdict is the label's winner mapped back to the baseline or the model (``tie`` for ``A=B``) and
  ``detail`` keeps the raw ``label``, ``strong`` (``>>`` / ``<<``), ``ah_game`` (1 or 2), ``category``;
- a null game (or a missing second game) is an ``error`` judgment, never a verdict; as Arena-Hard's
  ``show_result.py`` (v2.0) drops the whole line when either game is null, so does the combination rule;
- a label that is none of the above is a DataError naming the file, line and game.

**The combination rule** (:func:`combine_arena_hard`: what ``winrate`` and ``arena`` count). Arena-Hard's
``show_result.py`` turns a line into the model's scores ``game 2's score`` + ``1 - game 1's score`` (1 = the model
won, 0 = the baseline won, 1/2 a tie), a strong verdict (``>>``) repeated ``weight`` times (3 in
``show_result.py``), and a model's score is the mean over all those entries: the ratio
``sum(w_g s_g) / sum(w_g)`` over its games. evalsift keeps that rule, with the strong weight an option
(``--strong-weight``, default 1: every game counts once; 3 is Arena-Hard's): ``winrate`` counts one comparison per
question, the model's preference ``p_q = sum_g w_g s_g / sum_g w_g`` with weight ``W_q = sum_g w_g``, so its
weighted mean is Arena-Hard's score to the last digit and its standard error is clustered by question;
``arena`` counts every game as a battle (a strong one ``weight`` times, as Arena-Hard does).

:func:`read_arena_hard_pool` (the harness format ``arena-hard``: ``load``, ``data info``): items are the
questions, systems the models and the baseline, one metric per judge (``score``, or ``score:<judge>`` with
several): per question the model's ``p_q`` above (the baseline 0.5), ``category`` as the group column, the
answers as outputs and the question's prompt as input when the files lie beside (``model_answer/``,
``question.jsonl``).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import DataError, ParameterError
from ..oracle.base import Judgment, _now
from ..pool import Pool
from ._common import first_line, iter_jsonl, natural_key, warn_data
from .harness import Record, pool_from_records
from .pairwise_data import PairwiseData, _Builder

TOOL = "Arena-Hard-Auto"
#: the baseline Arena-Hard-Auto's own settings give a category (``utils/judge_utils.py``'s JUDGE_SETTINGS), for
#: lines that do not record theirs; v0.1's lines have no category: ``show_result.py``'s default ``--baseline``
DEFAULT_BASELINES = {"hard_prompt": "o3-mini-2025-01-31", "coding": "o3-mini-2025-01-31",
                     "math": "o3-mini-2025-01-31", "creative_writing": "gemini-2.0-flash-001",
                     "arena-hard-v0.1": "gpt-4-0314"}
V01_BASELINE = "gpt-4-0314"
#: how many times Arena-Hard's ``show_result.py`` counts a strong verdict (``>>``)
ARENA_HARD_WEIGHT = 3
#: the metadata counts of an answer, as evalsift's style counts name them (:data:`evalsift.arena.style.COUNTS`)
METADATA_COUNTS = {"token_len": "length", "header_count": "headers", "bold_count": "bold", "list_count": "lists"}
_LABEL = re.compile(r"^\s*([AB])\s*(>>|<<|>|<|=)\s*([AB])\s*$")
_GAME_SUFFIX = re.compile(r" \(g[12]\)$")
_EXPECTED = ("one JSON object per line: Arena-Hard-Auto judgments {uid (or question_id), model, judge, games: "
             "[{score: 'A>B', ...}, {...}]}")


# ---------------------------------------------------------------------------------------- labels
def parse_label(label: Any) -> tuple[str, bool] | None:
    """``(winner, strong)`` of an Arena-Hard label: winner ``A``, ``B`` or ``tie``; strong for ``>>`` / ``<<``.
    None when ``label`` is not a label.

    >>> [parse_label(s) for s in ("A>>B", "A>B", "A=B", "B>A", "B>>A", "A<<B", "B<A", "x")]
    [('A', True), ('A', False), ('tie', False), ('B', False), ('B', True), ('B', True), ('A', False), None]
    """
    if not isinstance(label, str):
        return None
    m = _LABEL.match(label.upper())
    if m is None or m.group(1) == m.group(3):
        return None
    left, op, right = m.groups()
    if op == "=":
        return "tie", False
    winner = left if op in (">", ">>") else right
    return winner, len(op) == 2


def model_score(label: str, game: int) -> tuple[float, bool]:
    """The model's score in one game (1 = the model won, 0 = the baseline, 1/2 a tie) and whether the verdict
    was strong. Game 1 shows the baseline as A, game 2 the model as A.

    >>> model_score("A>>B", 1), model_score("A>>B", 2), model_score("B=A", 1)
    ((0.0, True), (1.0, True), (0.5, False))
    """
    parsed = parse_label(label)
    if parsed is None:
        raise ValueError(f"not an Arena-Hard label: {label!r}")
    winner, strong = parsed
    if winner == "tie":
        return 0.5, False
    model_side = "B" if game == 1 else "A"
    return (1.0 if winner == model_side else 0.0), strong


# ---------------------------------------------------------------------------------------- where the files are
def _jsonl(folder: Path) -> list[Path]:
    try:
        return sorted((f for f in folder.iterdir() if f.is_file() and f.name.lower().endswith(".jsonl")),
                      key=lambda f: natural_key(f.name))
    except OSError:
        return []


def judgment_files(path: str | Path) -> list[tuple[str, Path]]:
    """``(judge folder name, file)`` for every judgment file under ``path``: a file, a ``model_judgment/<judge>/``
    folder, a ``model_judgment/`` folder of judges, or the benchmark folder holding ``model_judgment/``."""
    path = Path(path).expanduser()
    if path.is_file():
        return [(path.parent.name, path)]
    if not path.is_dir():
        raise DataError(f"{path}: no such file or folder; give an Arena-Hard-Auto judgment file or its "
                        "model_judgment/<judge>/ folder.")
    if (path / "model_judgment").is_dir():
        path = path / "model_judgment"
    files = _jsonl(path)
    if files:
        return [(path.name, f) for f in files]
    out = []
    for sub in sorted((p for p in path.iterdir() if p.is_dir()), key=lambda p: natural_key(p.name)):
        out.extend((sub.name, f) for f in _jsonl(sub))
    if not out:
        raise DataError(f"{path}: no Arena-Hard-Auto judgment files (*.jsonl) in it or in its subfolders; expected "
                        "model_judgment/<judge>/<model>.jsonl.")
    return out


def bench_folder(path: str | Path) -> Path | None:
    """The ``data/<bench>/`` folder of an Arena-Hard judgment file or folder (the one holding ``model_judgment/``),
    or None when the files do not lie in Arena-Hard's layout."""
    path = Path(path).expanduser().resolve()
    for p in (path, *path.parents):
        if p.name == "model_judgment":
            return p.parent
        if (p / "model_judgment").is_dir() and p == path:
            return p
    return None


def _first_record(path: Path) -> Any:
    try:
        line, _ = first_line(path)
        return None if line is None else json.loads(line)
    except (DataError, OSError, ValueError, UnicodeDecodeError):
        return None


def _is_judgment(rec: Any) -> bool:
    return (isinstance(rec, dict) and isinstance(rec.get("games"), list) and "model" in rec
            and ("uid" in rec or "question_id" in rec))


def looks_arena_hard(path: str | Path) -> bool:
    """True when ``path`` is an Arena-Hard-Auto judgment file (its first line has ``games``, ``model`` and
    ``uid`` or ``question_id``) or a folder of them in Arena-Hard's layout (``model_judgment/<judge>/``,
    ``model_judgment/``, or the benchmark folder holding it). Reads the first line of one file at most; never
    raises."""
    try:
        path = Path(path).expanduser()
        if path.is_file():
            return path.name.lower().endswith(".jsonl") and _is_judgment(_first_record(path))
        if not path.is_dir():
            return False
        if (path / "model_judgment").is_dir():
            path = path / "model_judgment"
        files = _jsonl(path)
        if not files and path.name == "model_judgment":
            for sub in sorted(p for p in path.iterdir() if p.is_dir()):
                files = _jsonl(sub)
                if files:
                    break
        elif not files:
            return False
        return bool(files) and _is_judgment(_first_record(files[0]))
    except OSError:
        return False


# ---------------------------------------------------------------------------------------- reading
def _qid(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def _answer_text(rec: Mapping[str, Any]) -> str | None:
    msgs = rec.get("messages")
    if isinstance(msgs, list):
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role") == "assistant":
                c = m.get("content")
                if isinstance(c, dict):
                    c = c.get("answer")
                return c if isinstance(c, str) else None
    choices = rec.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        turns = choices[0].get("turns")
        if isinstance(turns, list) and turns and isinstance(turns[-1], dict):
            c = turns[-1].get("content")
            return c if isinstance(c, str) else None
    return None


def metadata_counts(meta: Any) -> dict[str, float] | None:
    """An answer's style counts from Arena-Hard's ``metadata`` / ``conv_metadata``: ``length`` (``token_len``),
    ``headers``, ``lists``, ``bold`` (each a number or a dict of numbers, summed, as ``show_result.py`` sums
    them). None when ``meta`` has no ``token_len``.

    >>> metadata_counts({"token_len": 120, "header_count": {"h1": 1, "h2": 2}, "list_count": {"ordered": 3},
    ...                  "bold_count": {"**": 1, "__": 0}})
    {'length': 120.0, 'headers': 3.0, 'bold': 1.0, 'lists': 3.0}
    """
    if not isinstance(meta, Mapping) or "token_len" not in meta:
        return None
    out = {}
    for key, name in METADATA_COUNTS.items():
        v = meta.get(key, 0)
        try:
            out[name] = float(sum(v.values())) if isinstance(v, Mapping) else float(v or 0)
        except (TypeError, ValueError):
            return None
    return out


def _answers(bench: Path | None, systems: Iterable[str], items: set[str]) -> tuple[dict, dict]:
    """``(texts, counts)``: (item, system) -> answer text / style counts, from ``<bench>/model_answer/*.jsonl``
    for the systems and items judged (a later line for the same answer wins, as Arena-Hard's loader keeps it)."""
    texts: dict[tuple[str, str], str] = {}
    counts: dict[tuple[str, str], dict[str, float]] = {}
    folder = None if bench is None else bench / "model_answer"
    if folder is None or not folder.is_dir():
        return texts, counts
    want = set(systems)
    for f in _jsonl(folder):
        stem = f.name[:-len(".jsonl")]
        for _, rec in iter_jsonl(f, what="answers"):
            if not isinstance(rec, dict):
                continue
            model = rec.get("model") or rec.get("model_id") or stem
            qid = _qid(rec.get("uid", rec.get("question_id")))
            if model not in want or qid not in items:
                continue
            text = _answer_text(rec)
            if text is not None:
                texts[(qid, model)] = text
            c = metadata_counts(rec.get("metadata", rec.get("conv_metadata")))
            if c is not None:
                counts[(qid, model)] = c
    return texts, counts


def _questions(bench: Path | None, items: set[str]) -> dict[str, str]:
    path = None if bench is None else bench / "question.jsonl"
    out: dict[str, str] = {}
    if path is None or not path.is_file():
        return out
    for _, rec in iter_jsonl(path, what="questions"):
        if isinstance(rec, dict):
            qid = _qid(rec.get("uid", rec.get("question_id")))
            if qid in items:
                prompt = rec.get("prompt")
                if not isinstance(prompt, str):
                    turns = rec.get("turns")
                    prompt = (turns[0].get("content") if isinstance(turns, list) and turns
                              and isinstance(turns[0], dict) else None)
                if isinstance(prompt, str):
                    out[qid] = prompt
    return out


def _stamp(path: Path) -> tuple:
    files = judgment_files(path)
    parts = []
    for _, f in files:
        st = f.stat()
        parts.append((str(f.resolve()), st.st_size, st.st_mtime_ns))
    bench = bench_folder(path)
    if bench is not None:
        for sub in ("model_answer", "question.jsonl"):
            p = bench / sub
            for f in (_jsonl(p) if p.is_dir() else [p] if p.is_file() else []):
                st = f.stat()
                parts.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(parts)


def read_arena_hard(path: str | Path, *, baseline: str | None = None, name: str | None = None) -> PairwiseData:
    """Arena-Hard-Auto judgments (a file, ``model_judgment/<judge>/``, ``model_judgment/`` or the benchmark
    folder) as recorded judgments, one per game (the module doc). ``baseline``: the baseline of lines that do
    not record one (v0.1's); by default the one Arena-Hard's settings give the line's category, else v0.1's
    ``gpt-4-0314``, with a note. Read once per content of the files (replays ask again)."""
    path = Path(path).expanduser()
    data = _read_cached(str(path.resolve()), baseline, _stamp(path))
    if name is None:
        return data
    return PairwiseData(pool=data.pool.with_name(name), judgments=data.judgments, source=data.source)


@lru_cache(maxsize=8)
def _read_cached(path: str, baseline: str | None, stamp: tuple) -> PairwiseData:
    return _read(Path(path), baseline)


def _read(path: Path, baseline: str | None) -> PairwiseData:
    out = _Builder(path)
    stamp = _now()
    nulls = 0
    defaulted: Counter = Counter()
    categories: dict[str, str] = {}
    for folder_judge, f in judgment_files(path):
        for line, r in iter_jsonl(f, what="judgments", expected=_EXPECTED):
            where = f"{f}: line {line}"
            if not isinstance(r, dict):
                raise DataError(f"{where}: expected a JSON object ({_EXPECTED}), got {type(r).__name__}.")
            qid = _qid(r.get("uid", r.get("question_id")))
            if qid is None:
                raise DataError(f"{where}: uid (v0.1: question_id) is missing; every Arena-Hard judgment names its "
                                "question.", field="uid", hint="give every line its uid")
            model = r.get("model")
            if not isinstance(model, str) or not model.strip():
                raise DataError(f"{where}: model is missing or empty; every Arena-Hard judgment names the model "
                                "judged.", field="model", item_id=qid)
            judge = r.get("judge") if isinstance(r.get("judge"), str) and r.get("judge").strip() else folder_judge
            category = r.get("category") if isinstance(r.get("category"), str) else None
            base = r.get("baseline") if isinstance(r.get("baseline"), str) and r.get("baseline").strip() else None
            if base is None:
                base = baseline or DEFAULT_BASELINES.get(category or "", V01_BASELINE)
                defaulted[base] += 1
            if base == model:
                raise DataError(f"{where}: the model judged is the baseline {base!r} itself; leave such lines out.",
                                field="model", item_id=qid, system=model)
            games = r.get("games")
            if not isinstance(games, list):
                raise DataError(f"{where}: games is {'missing' if 'games' not in r else type(games).__name__}; "
                                "Arena-Hard writes a list of the two games [{score, ...}, {score, ...}].",
                                field="games", item_id=qid)
            if category is not None:
                categories.setdefault(qid, category)
            out.see(qid, base, model)
            for g in (1, 2):
                game = games[g - 1] if len(games) >= g else None
                label = game.get("score") if isinstance(game, dict) else None
                detail: dict[str, Any] = {"source": str(f), "line": line, "ah_game": g, "label": label,
                                          "judge_model": judge, "kind_from": "judge", "model": model,
                                          "layout": "v2.0" if "uid" in r else "v0.1"}
                if category is not None:
                    detail["category"] = category
                common = {"item_id": qid, "a": base, "b": model, "annotator": f"{judge} (g{g})", "kind": "llm",
                          "shown_order": "ab" if g == 1 else "ba", "created_at": stamp}
                if label is None:
                    nulls += 1
                    detail["reason"] = (f"game {g} has no verdict (null)" if isinstance(game, dict) else
                                        f"game {g} is {'missing' if game is None else 'not an object'}")
                    out.judgments.append(Judgment(verdict=None, status="error", detail=detail, **common))
                    continue
                try:
                    s, strong = model_score(label, g)
                except ValueError:
                    raise DataError(f"{where}: game {g}'s score {label!r} is not an Arena-Hard label; expected one of "
                                    "A>>B, A>B, A=B, B>A, B>>A (or null where the judge gave none).",
                                    field="score", item_id=qid, system=model) from None
                detail["strong"] = strong
                verdict = "tie" if s == 0.5 else ("b" if s == 1.0 else "a")
                out.judgments.append(Judgment(verdict=verdict, detail=detail, **common))
    if nulls:
        warn_data(f"{path}: {nulls} Arena-Hard game(s) have no verdict (null score): recorded as errors; Arena-Hard's "
                  "show_result.py (v2.0) leaves out the whole line, and so does the combination rule")
    for base, n in defaulted.items():
        warn_data(f"{path}: {n} Arena-Hard line(s) record no baseline: taken as {base!r} "
                  + ("(given)" if baseline else "(Arena-Hard's own default for them; give --baseline when it was "
                                                "another)"))
    data = out.build(None)
    pool = data.pool
    items = set(pool.item_ids)
    bench = bench_folder(path)
    texts, counts = _answers(bench, pool.systems, items)
    prompts = _questions(bench, items)
    ids = list(pool.item_ids)
    outputs = {s: [texts.get((i, s)) for i in ids] for s in pool.systems if any((i, s) in texts for i in ids)}
    metadata: dict[str, list] = dict(pool.metadata)
    if categories:
        metadata["category"] = [categories.get(i) for i in ids]
    if counts:
        metadata["_style"] = [{s: counts[(i, s)] for s in pool.systems if (i, s) in counts} or None for i in ids]
    pool = Pool(item_ids=ids, inputs=[prompts.get(i) for i in ids] if prompts else None, systems=list(pool.systems),
                outputs=outputs, metadata=metadata or None, name=str(path))
    return PairwiseData(pool=pool, judgments=data.judgments, source=str(path))


def is_arena_hard(data: PairwiseData) -> bool:
    """Whether ``data``'s judgments are Arena-Hard games (:func:`read_arena_hard`)."""
    return any("ah_game" in (j.detail or {}) for j in data.judgments[:1]) or any(
        "ah_game" in (j.detail or {}) for j in data.judgments)


# ---------------------------------------------------------------------------------------- the combination rule
def check_strong_weight(weight: Any) -> int:
    """``--strong-weight``: a whole number >= 1 (Arena-Hard's ``show_result.py`` repeats a strong verdict)."""
    if isinstance(weight, bool) or not isinstance(weight, (int, np.integer)) or weight < 1:
        raise ParameterError(f"--strong-weight must be a whole number >= 1 (how many times a strong verdict, A>>B or "
                             f"B>>A, counts; Arena-Hard's show_result.py uses 3), got {weight!r}",
                             field="strong_weight")
    return int(weight)


def weighting_note(weight: int) -> str:
    """The line every output of Arena-Hard data carries: how the games were counted."""
    how = ("each game counts once, a strong verdict (>>) as a plain one (--strong-weight 1, the default; Arena-Hard's "
           "show_result.py counts it 3 times: --strong-weight 3)" if weight == 1 else
           f"a strong verdict (>>) counts {weight} times, a plain one or a tie once (--strong-weight {weight}"
           + ("; Arena-Hard's show_result.py weighting)" if weight == ARENA_HARD_WEIGHT else ")"))
    return ("Arena-Hard-Auto games: both games of each question count, game 1 with the baseline shown first and game 2 "
            "with the model first, each from the model's side; " + how)


def _rows(data: PairwiseData) -> dict[tuple[str, int], list[Judgment]]:
    rows: dict[tuple[str, int], list[Judgment]] = {}
    for j in data.judgments:
        d = j.detail or {}
        if "ah_game" in d:
            rows.setdefault((str(d.get("source")), int(d.get("line", 0))), []).append(j)
    return rows


def combine_arena_hard(data: PairwiseData, *, games: str = "combined", strong_weight: int = 1) -> PairwiseData:
    """Arena-Hard games counted by Arena-Hard's rule (the module doc): ``combined`` gives one judgment per line
    (question and model), ``a`` = the baseline, ``b`` = the model, annotator the judge, with the model's
    preference ``p = sum_g w_g s_g / sum_g w_g`` (``detail["preference"] = 1 + p``, AlpacaEval's scale that
    ``winrate`` reads) and weight ``W = sum_g w_g`` (``detail["weight"]``), verdict ``b`` above 1/2, ``a`` below,
    ``tie`` at it; ``separate`` keeps the games, each with its weight. A line with a game without a verdict is
    left out whole (an ``error`` judgment), as ``show_result.py`` (v2.0) does. Other judgments pass through.

    >>> from evalsift.pool import Pool
    >>> g = lambda n, label, v: Judgment(item_id="q", a="base", b="m", verdict=v, annotator=f"J (g{n})", kind="llm",
    ...     detail={"source": "f", "line": 1, "ah_game": n, "label": label, "strong": ">>" in label})
    >>> data = PairwiseData(Pool(item_ids=["q"], systems=["base", "m"]), (g(1, "A>>B", "a"), g(2, "A>B", "b")), "f")
    >>> j = combine_arena_hard(data, strong_weight=3).judgments[0]
    >>> j.detail["preference"] - 1, j.detail["weight"], j.verdict, j.annotator   # (3 x 0 + 1 x 1) / 4
    (0.25, 4, 'a', 'J')
    """
    if games not in ("combined", "separate"):
        raise ParameterError(f"games {games!r}: use combined or separate", field="games")
    w = check_strong_weight(strong_weight)
    rows = _rows(data)
    if not rows:
        return data
    done: set[tuple[str, int]] = set()
    out: list[Judgment] = []
    dropped = 0
    for j in data.judgments:
        d = j.detail or {}
        if "ah_game" not in d:
            out.append(j)
            continue
        key = (str(d.get("source")), int(d.get("line", 0)))
        if key in done:
            continue
        done.add(key)
        pair = sorted(rows[key], key=lambda x: x.detail["ah_game"])
        ok = len(pair) == 2 and all(x.status == "done" for x in pair)
        if not ok:
            dropped += 1
        if games == "separate":
            for x in pair:
                if ok:
                    out.append(Judgment(**{**x.to_dict(), "detail": {**x.detail, "weight": w if x.detail.get("strong")
                                                                     else 1, "strong_weight": w}}))
                else:
                    out.append(Judgment(**{**x.to_dict(), "verdict": None, "status": "error", "detail": {
                        **x.detail, "reason": x.detail.get("reason") or "the other game of its line has no verdict: "
                                                                          "Arena-Hard leaves the line out"}}))
            continue
        first = pair[0]
        detail = {k: v for k, v in first.detail.items() if k not in ("ah_game", "label", "strong", "reason")}
        detail["labels"] = [x.detail.get("label") for x in pair]
        common = {"item_id": first.item_id, "a": first.a, "b": first.b, "kind": first.kind, "shown_order": "ab",
                  "annotator": _GAME_SUFFIX.sub("", first.annotator), "created_at": first.created_at}
        if not ok:
            detail["reason"] = "a game has no verdict: Arena-Hard's show_result.py leaves the line out"
            out.append(Judgment(verdict=None, status="error", detail=detail, **common))
            continue
        num, den = 0.0, 0
        for x in pair:
            s = {"b": 1.0, "a": 0.0, "tie": 0.5}[x.verdict]
            wg = w if x.detail.get("strong") else 1
            num += wg * s
            den += wg
        p = num / den
        detail.update(preference=1.0 + p, weight=den, strong_weight=w, arena_hard=True)
        out.append(Judgment(verdict="tie" if p == 0.5 else ("b" if p > 0.5 else "a"), detail=detail, **common))
    if dropped:
        warn_data(f"{data.source}: {dropped} Arena-Hard line(s) with a game without a verdict are left out whole, as "
                  "Arena-Hard's show_result.py (v2.0) leaves them out")
    return PairwiseData(pool=data.pool, judgments=tuple(out), source=data.source)


# ---------------------------------------------------------------------------------------- the harness Pool
def read_arena_hard_pool(path: str | Path, *, name: str | None = None, system: str | None = None,
                         baseline: str | None = None, strong_weight: int = 1) -> Pool:
    """Arena-Hard-Auto judgments as a Pool (the harness format ``arena-hard``): items are the questions (their
    raw ``uid`` / ``question_id``), systems the models and the baseline; per judge a metric (``score``, or
    ``score:<judge>`` with several judges): the model's score against the baseline on the question by
    Arena-Hard's rule, ``sum_g w_g s_g / sum_g w_g`` over its two games (``strong_weight`` w for a ``>>``
    verdict, 1 otherwise; a line with a null game has none), 0.5 for the baseline; ``category`` as the group
    column; the answers and prompts when ``model_answer/`` and ``question.jsonl`` lie beside. A model's mean of
    the metric is Arena-Hard's score when ``strong_weight`` is 1 (with weights Arena-Hard's score is the ratio of
    the weighted sums, which ``evalsift winrate`` prints). ``system`` is not used: Arena-Hard records every
    model's name."""

    data = combine_arena_hard(read_arena_hard(path, baseline=baseline), strong_weight=strong_weight)
    judges = list(dict.fromkeys(j.annotator for j in data.judgments))
    metric = {jd: ("score" if len(judges) == 1 else f"score:{jd}") for jd in judges}
    sums: dict[tuple[str, str], dict[str, list[float]]] = {}
    where: dict[tuple[str, str], str] = {}
    for j in data.judgments:
        d = j.detail or {}
        cell = sums.setdefault((j.b, j.item_id), {})
        where.setdefault((j.b, j.item_id), f"{d.get('source')}: line {d.get('line')}")
        base = sums.setdefault((j.a, j.item_id), {})
        m = metric[j.annotator]
        if j.status != "done":
            cell.setdefault(m, [0.0, 0.0])
            continue
        acc = cell.setdefault(m, [0.0, 0.0])
        acc[0] += (d["preference"] - 1.0) * d["weight"]
        acc[1] += d["weight"]
        base.setdefault(m, [0.5, 1.0])
    pool = data.pool
    index = {iid: k for k, iid in enumerate(pool.item_ids)}
    cats = pool.metadata.get("category")
    records = []
    for (s, iid), cell in sums.items():
        k = index[iid]
        metrics = {m: (acc[0] / acc[1] if acc[1] else None) for m, acc in cell.items()}
        outs = pool.outputs.get(s)
        records.append(Record(system=s, item=iid, metrics=metrics, input=pool.inputs[k] if pool.inputs else None,
                              output=outs[k] if outs is not None else None,
                              group={"category": cats[k]} if cats is not None and cats[k] else {},
                              meta={"uid": iid}, where=where.get((s, iid), str(path))))
    return pool_from_records(records, name=name or str(path), tool=TOOL)


def describe_arena_hard(path: str | Path) -> dict[str, Any]:
    """``data info``: the tool, no version (Arena-Hard's files record none; the benchmark's name, e.g.
    ``arena-hard-v2.0``, is the folder's) and what was found: judges, models, baseline -- from the first line
    of each judgment file."""
    files = judgment_files(path)
    judges: dict[str, None] = {}
    models: dict[str, None] = {}
    bases: dict[str, None] = {}
    for folder_judge, f in files:
        rec = _first_record(f)
        if not _is_judgment(rec):
            continue
        judges.setdefault(str(rec.get("judge") or folder_judge), None)
        models.setdefault(str(rec.get("model")), None)
        base = rec.get("baseline") or DEFAULT_BASELINES.get(str(rec.get("category")), V01_BASELINE)
        bases.setdefault(str(base), None)

    def listing(names: Iterable[str], limit: int = 4) -> str:
        names = list(names)
        return ", ".join(names[:limit]) + (f", ... {len(names) - limit} more" if len(names) > limit else "")

    bench = bench_folder(path)
    found = (f"{len(judges)} judge{'s' if len(judges) != 1 else ''} ({listing(judges)}) of {len(models)} "
             f"model{'s' if len(models) != 1 else ''} ({listing(models)}) against the baseline "
             f"{listing(bases)}" + (f" ({bench.name})" if bench is not None else ""))
    return {"tool": TOOL, "version": None, "found": found, "judges": list(judges), "models": list(models),
            "baseline": list(bases)}


__all__ = ["ARENA_HARD_WEIGHT", "DEFAULT_BASELINES", "TOOL", "bench_folder", "check_strong_weight",
           "combine_arena_hard", "describe_arena_hard", "is_arena_hard", "judgment_files", "looks_arena_hard",
           "metadata_counts", "model_score", "parse_label", "read_arena_hard", "read_arena_hard_pool",
           "weighting_note"]
