"""Recorded pairwise judgments: a table of verdicts, judge files, SummEval's LLM choices, AlpacaEval's preferences.

Every reader of them returns a :class:`PairwiseData`: a :class:`~evalsift.pool.Pool` (the items and
systems the judgments are about) plus the recorded :class:`~evalsift.oracle.base.Judgment`\\ s, in
the order they were recorded. The replay oracle ``judgments:SOURCE``
(:class:`evalsift.oracle.judgments.JudgmentsOracle`) answers from them.

The pieces live by job:

- :mod:`evalsift.io.pairwise_data`: :class:`PairwiseData`, the verdict codes, the builder every reader fills;
- :mod:`evalsift.io.pairwise_layout`: which layout a file has (:func:`pairwise_layout`,
  :func:`looks_pairwise`, :func:`find_judge_files`) and its rows;
- :mod:`evalsift.io.pairwise_table`: :func:`read_pairwise`, the pairwise table itself and the dispatch to
  the judge files as people keep them (:mod:`evalsift.io.judge_files`: Chatbot Arena battles, FastChat /
  MT-Bench judgments, AlpacaEval annotations);
- :mod:`evalsift.io.pairwise_recorded`: the recorded SummEval and AlpacaEval datasets;
- here: their names under the data root (:func:`find_judgment_sources`) and :func:`read_judgments`, which
  takes a name or a path. Every name above can still be imported from here.

Recorded datasets (names resolved under ``$EVALSIFT_DATA``; see :func:`read_judgments`)
-------------------------------------------------------------------------------------
- ``summeval/llm-pairwise/<dimension>``: GPT-3.5's choices between two SummEval summaries, each
  pair asked in both presentation orders (:func:`read_summeval_pairwise`);
- ``alpaca-eval/preferences`` (or ``alpaca-eval/preferences/<annotator_config>``): AlpacaEval's judge
  preferences of each model against the baseline (:func:`read_alpaca_preferences`);
- ``<folder>/<stem>`` (``arena-ppr/human``): a judge file directly in a folder (:func:`find_judge_files`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import DataError, ParameterError, UnknownNameError, suggest
from ..verdicts import Counted, source_notes, with_source
from .datasets import ENV_VAR, data_root, looked_up_under
from ._common import warn_data
from .arena_hard import check_strong_weight, combine_arena_hard, looks_arena_hard, read_arena_hard, weighting_note
from .judge_files import GAMES, combine_games
from .mtbench import with_questions
# re-exported: this module was the home of all of them (``from evalsift.io.pairwise import ...`` keeps working)
from .pairwise_data import (KINDS, ORDERS, VERDICT_CODES, PairwiseData, _Builder, _choice,  # noqa: F401
                            _set_once, _text, alpaca_verdict, parse_verdict)
from .pairwise_layout import (_EXPECTED, _JSON_SPACE, _JUDGE_FILE_SUFFIXES, _KINDS_BY_SUFFIX,  # noqa: F401
                              _LAYOUT_NAMES, ALPACA_ITEM_FIELDS, LAYOUTS, _csv_rows, _first_json_element, _head,
                              _json_list_rows, _rows, _table_kind, find_judge_files, looks_pairwise, pairwise_layout)
from .pairwise_recorded import (_ANSWER, _LETTER, _SUMMEVAL_FILE, ALPACA_CONFIG, ALPACA_FILE,  # noqa: F401
                                SUMMEVAL_ANNOTATOR, SUMMEVAL_DIR, _summeval_answers, _summeval_judgment,
                                read_alpaca_preferences, read_summeval_pairwise, summeval_answer,
                                summeval_pairwise_files)
from .pairwise_table import (OPTIONAL, REQUIRED, _fingerprint, _read_cached, _read_file,  # noqa: F401
                             _read_table, read_pairwise, read_pairwise_pool)


# ---------------------------------------------------------------------------------------- names
def find_judgment_sources(root: Path | None = None) -> dict[str, tuple[str, Path, str]]:
    """Recorded-judgment dataset names under ``root`` (default ``$EVALSIFT_DATA``): name -> (reader, path, argument).

    ``<folder>/llm-pairwise/<dimension>`` for every ``<root>/<folder>/llm-pairwise/*_<dimension>.result``
    (SummEval), ``<folder>/preferences`` for every ``<root>/<folder>/preferences_all_annotators.csv.gz``
    (AlpacaEval; ``<folder>/preferences/<annotator_config>`` picks another config), and ``<folder>/<stem>``
    for every file of recorded judgments directly in a folder (:func:`find_judge_files`, e.g.
    ``arena-ppr/human`` for ``arena-ppr/human.jsonl``).

    >>> find_judgment_sources(Path("/nonexistent"))
    {}
    """
    root = data_root() if root is None else Path(root)
    found: dict[str, tuple[str, Path, str]] = {}
    if root is None or not root.is_dir():
        return found
    for name, file in find_judge_files(root).items():
        found[name] = ("file", file, "")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        llm = folder / SUMMEVAL_DIR
        if llm.is_dir():
            for dim in sorted(summeval_pairwise_files(llm)):
                found[f"{folder.name}/{SUMMEVAL_DIR}/{dim}"] = ("summeval", llm, dim)
        if (folder / ALPACA_FILE).is_file():
            found[f"{folder.name}/preferences"] = ("alpaca", folder / ALPACA_FILE, ALPACA_CONFIG)
    return found


def _sources_note(root: Path | None) -> str:
    if root is None:
        why = f"{ENV_VAR} is empty" if ENV_VAR in os.environ else f"{ENV_VAR} is not set and no shared/data folder was found"
        return (f"{why}, so no recorded dataset can be found: set it to the data folder (the one "
                "holding summeval/ and alpaca-eval/), or give the path of a pairwise table (.csv/.tsv/.jsonl).")
    if not root.is_dir():
        return f"{ENV_VAR}={root} is not an existing folder; point it at the data folder or give a pairwise table path."
    return f"Names are looked up under {looked_up_under(root)}; or give the path of a pairwise table (.csv/.tsv/.jsonl)."


@lru_cache(maxsize=8)
def _read_dataset(reader: str, path: str, arg: str, name: str, stamp: tuple[int, int]) -> PairwiseData:
    """Read a recorded dataset once per (file, modification time): replays ask for it repeatedly."""
    if reader == "summeval":
        return read_summeval_pairwise(path, arg, name=name)
    if reader == "file":
        return read_pairwise(path, name=name)
    return read_alpaca_preferences(path, arg, name=name)


def read_judgments(source: str | Path) -> PairwiseData:
    """Recorded judgments from a pairwise table path or a dataset name under ``$EVALSIFT_DATA``.

    Names: ``summeval/llm-pairwise/<dimension>`` (:func:`read_summeval_pairwise`),
    ``alpaca-eval/preferences`` and ``alpaca-eval/preferences/<annotator_config>``
    (:func:`read_alpaca_preferences`), ``<folder>/<stem>`` for a file of recorded judgments in a folder
    of the data root (``arena-ppr/human``; :func:`find_judge_files`). A path is read by
    :func:`read_pairwise` (any layout it knows). An unknown name raises UnknownNameError with the closest
    name and every available one.

    >>> read_judgments("summeval/llm-pairwise/coherence").pool.n_items   # doctest: +SKIP
    100
    >>> read_judgments("no/such/judgments")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalsift.errors.UnknownNameError: Unknown judgments source 'no/such/judgments': it is not an existing file either. ...
    """
    text = str(source)
    path = Path(text).expanduser()
    if looks_arena_hard(path):  # a judgment file, model_judgment/<judge>/ or model_judgment/ (Arena-Hard-Auto)
        return read_arena_hard(path)
    if path.is_file():
        return read_pairwise(path)
    if path.is_dir():
        from ..oracle.selective import is_selective_dir, read_dir

        if is_selective_dir(path):  # a selective judge's output: its kept verdicts, people's elsewhere
            return read_dir(path)
        raise DataError(f"{path} is a folder; judgments:SOURCE takes a pairwise table file (.csv/.tsv/.jsonl) or a "
                        "dataset name such as summeval/llm-pairwise/coherence or alpaca-eval/preferences.")
    root = data_root()
    found = find_judgment_sources(root)
    hit = found.get(text)
    if hit is None:  # <folder>/preferences/<config>
        head, _, config = text.rpartition("/")
        base = found.get(head)
        if base is not None and base[0] == "alpaca" and config:
            hit = (base[0], base[1], config)
    if hit is None:
        names = sorted(found) + sorted(f"{n}/<annotator_config>" for n, v in found.items() if v[0] == "alpaca")
        raise UnknownNameError(
            f"Unknown judgments source '{text}': it is not an existing file either"
            f"{f' (looked for {path.absolute()})' if path.suffix else ''}.{suggest(text, found)} "
            f"Available: {', '.join(names) or '(none found)'}. {_sources_note(root)}", field="oracle")
    reader, where, arg = hit
    st = where.stat()
    return _read_dataset(reader, str(where), arg, text, (st.st_mtime_ns, st.st_size))


@dataclass(frozen=True)
class _Judged:
    """What :func:`evalsift.verdicts.with_source` reads of a PairwiseData: its judgments and source."""

    judgments: Any
    source: str


def _with_source(data: PairwiseData, source: str | None) -> PairwiseData:
    """:func:`evalsift.verdicts.with_source` of ``data``, from its columns when a fast reader read it: the same
    notes and kinds without building a Judgment per row (one per annotator and kind, counted as often as it
    occurs)."""
    cols = data.columns
    detail = dict(cols.detail) if cols is not None else {}
    if cols is None or cols.n == 0 or not all(isinstance(detail.get(k), str) for k in ("kind_from", "source")):
        return with_source(data, source)
    with_source(_Judged((), data.source), source)  # a bad --verdicts-from: its error
    groups = Counted((cols.judgment(k), count) for k, count in cols.groups("annotator", "kind", "status"))
    for text in source_notes(_Judged(groups, data.source), source):
        warn_data(text)
    if source is None:
        return data
    kinds = cols.fields["kind"]
    found = [kinds] if isinstance(kinds, str) else list(dict.fromkeys(kinds))
    probe = with_source(_Judged(tuple(replace(groups[0][0], kind=k, detail={}) for k in found), ""), source)
    new = {k: j.kind for k, j in zip(found, probe.judgments)}
    if all(new[k] == k for k in found):
        return data
    return PairwiseData.from_columns(cols.replaced(kind=new[kinds] if isinstance(kinds, str)
                                                   else list(map(new.__getitem__, kinds))))


def read_verdicts(source: str | Path, *, games: str = "combined", verdicts_from: str | None = None,
                  by: str | None = None, questions: str | Path | None = None, strong_weight: int = 1,
                  baseline: str | None = None, aggregate: str | None = None, aggregate_seed: int = 0) -> PairwiseData:
    """Recorded judgments as ``arena`` and ``winrate`` count them: :func:`read_judgments` of ``source``, with
    FastChat's two games per row combined by FastChat's rule unless ``games="separate"``
    (:func:`~evalsift.io.judge_files.combine_games`), Arena-Hard-Auto's two games per line by Arena-Hard's rule,
    a strong verdict counting ``strong_weight`` times (:func:`~evalsift.io.arena_hard.combine_arena_hard`;
    ``baseline``: the baseline of Arena-Hard lines that record none), every judgment's kind set by
    ``verdicts_from`` when given (:func:`evalsift.verdicts.with_source`), and MT-Bench's categories from
    ``questions`` -- or, for ``by="category"``, from the ``question.jsonl`` beside the file
    (:func:`~evalsift.io.mtbench.with_questions`). ``aggregate``: one verdict per item and pair by that rule
    (``majority``, ``dawid-skene``, ``mace``; :mod:`evalsift.oracle.aggregate`), after the games are combined."""
    if games not in GAMES:
        raise ParameterError(f"games {games!r}: use combined or separate", field="games")
    check_strong_weight(strong_weight)
    path = Path(str(source)).expanduser()
    if looks_arena_hard(path):
        data = combine_arena_hard(read_arena_hard(path, baseline=baseline), games=games, strong_weight=strong_weight)
        warn_data(weighting_note(strong_weight))
        return with_source(data, verdicts_from)
    if strong_weight != 1:
        raise ParameterError(f"--strong-weight {strong_weight}: {source} records no verdict strength (only "
                             "Arena-Hard-Auto's judgments do: A>>B vs A>B); leave --strong-weight out",
                             field="strong_weight")
    data = read_judgments(source)
    data = _with_source(data if games == "separate" else combine_games(data), verdicts_from)
    if aggregate is not None:
        from ..oracle.aggregate import aggregated

        data = replace(data, judgments=aggregated(data.judgments, aggregate, seed=aggregate_seed,
                                                  source=str(source))[0])
    return with_questions(data, str(source), by, None if questions is None else str(questions))
