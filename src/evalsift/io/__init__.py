"""Readers and writers: every reader returns an :class:`evalsift.pool.Pool`.

:func:`load` is the one entry point: give it a path (the format is detected), ``fmt:path`` to force a
reader, or a dataset name resolved under ``$EVALSIFT_DATA`` (``demo`` needs no data)::

    >>> from evalsift.io import load
    >>> load("demo").systems
    ('A', 'B', 'C')
    >>> load("wmt23/en-de").n_systems              # doctest: +SKIP
    12

Formats (registered in :data:`formats`, usable as ``fmt:`` prefixes): ``s2e`` (subset2evaluate
item JSONL), ``table`` (long CSV/TSV/JSONL/Parquet), ``mtme`` (mt-metrics-eval ``<testset>/<lp>``),
``summeval`` (``summeval.json``), ``alpaca`` (AlpacaEval results folder), ``pairwise`` (recorded
pairwise judgments: the Pool; :func:`read_pairwise` also gives the judgments), ``chaosnli``
(``chaosNLI_<subset>.jsonl`` with the model runs' predictions beside it; datasets ``chaosnli/snli``,
``chaosnli/mnli_m``), ``mtbench`` (MT-Bench single-answer grades, FastChat's ``gpt-4_single.jsonl``:
:mod:`evalsift.io.mtbench`), ``opencompass`` (a 0/1 response matrix without texts,
``opencompass-irt``'s ``data/combine.csv``).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import DataError, ParameterError
from ..pool import Pool
from ..registry import Registry
from ._common import data_suffix, empty_file_error, first_line
from .alpaca import read_alpaca
from .chaosnli import read_chaosnli
from .datasets import ENV_VAR, data_root, find_datasets, resolve_dataset
from .demo import make_demo_pool
from .harness import HARNESSES, detect_harness
from .mtbench import looks_mtbench_single, read_mtbench_single
from .mtme import read_mtme, read_score_file
from .opencompass import looks_opencompass, read_opencompass
from .pairwise import looks_pairwise, pairwise_layout, read_pairwise, read_pairwise_pool
from .s2e import read_s2e_jsonl, write_s2e_jsonl
from .summeval import read_summeval
from .table import read_table, write_table

formats: Registry[Callable[..., Pool]] = Registry("dataset format")
formats.add("s2e", read_s2e_jsonl, "subset2evaluate item JSONL ({src, tgt, scores} per line)")
formats.add("table", read_table, "long table: item_id, system, output + metric columns (CSV/TSV/JSONL/Parquet)")
formats.add("mtme", read_mtme, "mt-metrics-eval <testset>/<lp> (WMT)")
formats.add("summeval", read_summeval, "SummEval summeval.json")
formats.add("alpaca", read_alpaca, "AlpacaEval folder with model_outputs/")
formats.add("chaosnli", read_chaosnli, "ChaosNLI chaosNLI_<subset>.jsonl + predictions/ (items x model runs)")
formats.add("mtbench", read_mtbench_single, "MT-Bench single-answer grades (FastChat gpt-4_single.jsonl: question_id, "
            "model, judge, score, turn), with question.jsonl's categories")
formats.add("opencompass", read_opencompass, "binary response matrix without texts: opencompass-irt's data/combine.csv "
            "(one 0/1 line per model)")
formats.add("pairwise", read_pairwise_pool, "recorded pairwise judgments: item_id, system_a, system_b, verdict; Chatbot "
            "Arena battles, FastChat judgments, AlpacaEval annotations (CSV/TSV/JSONL/JSON)")
for _h in HARNESSES.values():  # the harnesses' own files (evalsift.io.harness); their readers load on first use
    formats.add(_h.name, _h.read, _h.doc)

__all__ = [
    "load", "resolve", "detect_format", "HARNESSES", "data_root", "find_datasets", "formats", "ENV_VAR",
    "read_s2e_jsonl", "write_s2e_jsonl", "read_mtme", "read_score_file", "read_summeval",
    "read_alpaca", "read_chaosnli", "read_table", "write_table", "make_demo_pool", "read_pairwise",
]

_PREFIX = re.compile(r"^([A-Za-z][\w-]+):(.+)$")
_TABLE_SUFFIXES = {".csv", ".tsv", ".tab", ".parquet", ".pq"}


def _jsonl_kind(path: Path) -> str:
    """``pairwise`` when the first record has the fields of recorded judgments (a pairwise table row, an Arena
    battle, a FastChat judgment, an AlpacaEval annotation: :func:`~evalsift.io.pairwise.pairwise_layout`),
    ``s2e`` when it has a ``tgt`` key, else ``table``; DataError for an empty or unreadable file."""
    line, state = first_line(path)  # streamed: a big file is not read whole to look at its first line
    if line is not None:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            return "table"  # the reader reports the line
        if isinstance(rec, dict) and pairwise_layout(rec) is not None:
            return "pairwise"
        if looks_mtbench_single(rec):
            return "mtbench"
        return "s2e" if isinstance(rec, dict) and "tgt" in rec else "table"
    raise empty_file_error(path, state, "items",
                           "one JSON object per line: subset2evaluate items ({src, tgt, scores}) or "
                           "long-table rows ({item_id, system, output, ...})")


def _dir_kind(path: Path) -> str:
    if (path / "model_outputs").is_dir() or path.name == "model_outputs":
        return "alpaca"
    if (path / "summeval.json").is_file():
        return "summeval"
    if (path / "sources").is_dir():
        return "mtme"
    if looks_opencompass(path):
        return "opencompass"
    harness = detect_harness(path)
    if harness is not None:
        return harness
    raise DataError(
        f"{path}: folder of unknown layout. Expected model_outputs/ (AlpacaEval), summeval.json (SummEval) or an "
        "mt-metrics-eval test set (sources/, system-outputs/; then name the pair as <folder>/<lp>), or an evaluation "
        "harness's results (" + ", ".join(h.tool for h in HARNESSES.values()) + "; docs/data.md, 'Harness results')."
    )


def detect_format(path: str | Path) -> str | None:
    """The format name for ``path``, or None when it is not a path at all (then it may be a dataset name).

    Directories: ``model_outputs/`` -> alpaca, ``summeval.json`` -> summeval, ``sources/`` -> mtme.
    Files: recorded pairwise judgments -> pairwise: a ``.csv``/``.tsv`` header, first ``.jsonl`` record or
    first element of a ``.json`` list with the fields of a pairwise table (``system_a``, ``system_b``,
    ``verdict``), Chatbot Arena battles (``model_a``, ``model_b``, ``winner``), FastChat judgments
    (``model_1``, ``model_2``, ``g1_winner``, ``g2_winner``) or AlpacaEval annotations (``generator_1``,
    ``generator_2``, ``preference``, ``instruction``); other ``.json`` -> summeval, ``.jsonl`` with ``tgt`` -> s2e,
    other ``.jsonl``/``.csv``/``.tsv``/``.parquet`` -> table. A missing ``<testset>/<lp>`` whose
    ``<testset>/sources/<lp>.txt`` exists -> mtme.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        return _dir_kind(path)
    if path.is_file():
        harness = detect_harness(path)  # a harness's own file (lm-eval samples, an inspect log, ...) by name or first record
        if harness is not None:
            return harness
        suffix = data_suffix(path)  # through a .gz: a gzipped CSV/TSV/JSONL reads as its plain self
        if suffix == ".json":
            return "pairwise" if looks_pairwise(path) else "summeval"
        if suffix in (".jsonl", ".ndjson"):
            return _jsonl_kind(path)
        if suffix in _TABLE_SUFFIXES:
            return "pairwise" if suffix in (".csv", ".tsv", ".tab") and looks_pairwise(path) else "table"
        raise DataError(f"{path}: cannot tell the format from suffix {suffix!r}. Use .jsonl (subset2evaluate or long "
                        "table), .csv/.tsv/.parquet (long table), summeval.json (each but Parquet may be gzipped: "
                        f".csv.gz, ...), or force one with 'fmt:path' (formats: {', '.join(formats)}).")
    if (path.parent / "sources" / f"{path.name}.txt").is_file():
        return "mtme"
    return None


def _check_options(what: str, fn: Callable[..., Any], kw: dict[str, Any]) -> None:
    params = inspect.signature(fn).parameters
    unknown = sorted(set(kw) - set(params))
    if unknown:
        allowed = [p for p in params if p not in ("path", "name", "include_refs")]
        raise ParameterError(f"load: {what} does not take {unknown}; it accepts {allowed or 'no options'}.")


def _read(fmt: str, path: Path, name: str, include_refs: bool | Iterable[str], kw: dict[str, Any]) -> Pool:
    reader = HARNESSES[fmt].function("reader") if fmt in HARNESSES else formats.get(fmt)
    _check_options(f"the {fmt} reader", reader, kw)
    if "include_refs" in inspect.signature(reader).parameters:
        kw = {**kw, "include_refs": include_refs}
    return reader(path, name=name, **kw)


def load(spec: str | Path, *, include_refs: bool | Iterable[str] = False, **kw: Any) -> Pool:
    """Load a Pool from a path, a ``fmt:path`` spec or a dataset name; ``Pool.name`` is ``spec``.

    ``include_refs`` applies to mt-metrics-eval data (human references as systems); other keyword
    arguments go to the reader (e.g. ``human_metrics=[...]``, ``models=[...]``, ``n_items=`` and
    ``seed=`` for ``demo``). Unknown names raise UnknownNameError listing what exists.

    >>> load("demo", n_items=50, seed=2).n_items
    50
    >>> load("mtme:/data/mt-metrics-eval-v2/wmt23/en-de", include_refs=True)  # doctest: +SKIP
    """
    name = str(spec)
    fmt, path = resolve(name)
    if fmt == "demo":
        _check_options("the demo dataset", make_demo_pool, kw)
        return make_demo_pool(**kw).with_name(name)
    return _read(fmt, path, name, include_refs, kw)


def resolve(spec: str | Path) -> tuple[str, Path | None]:
    """``(format, path)`` that :func:`load` reads ``spec`` with: a ``fmt:path`` spec, a path (format
    detected) or a dataset name under ``$EVALSIFT_DATA`` (``("demo", None)`` for the built-in data).
    Reads nothing but what format detection needs; unknown names raise as :func:`load` does.

    >>> resolve("demo")
    ('demo', None)
    """
    name = str(spec)
    m = _PREFIX.match(name)
    if m and (m.group(1) in formats or not Path(name).expanduser().exists()):
        formats.get(m.group(1))  # an unknown format raises with a suggestion
        return m.group(1), Path(m.group(2)).expanduser()
    fmt = detect_format(name)
    if fmt is not None:
        return fmt, Path(name).expanduser()
    return resolve_dataset(name)
