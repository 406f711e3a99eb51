"""Chosen items handed back to the harness that made the data: ``evalsift select ... --export FORMAT``.

:data:`exporters` maps a format name to a function ``(pool, item_ids, out_path) -> list[Path]``: ``out_path`` is
the picks file the command writes (``--out``), and the exporter writes its own files beside it, named after its
stem, and returns their paths. :func:`export` runs one and gives, besides the paths, the next step to tell the user
(the exact command to run).

- ``lm-eval``: ``<out stem>.lm-eval.json``, the ``{task: [doc index, ...]}`` mapping that lm-eval's ``--samples``
  option takes (a JSON string or a file holding one: lm-eval 0.4.13's ``--samples``, parsed in
  ``config/evaluate_config.py``), and the ``lm_eval`` command that runs a new model on those documents only. The
  indices are sorted: lm-eval labels the documents it runs with ``indices[k]`` for the k-th selected document in
  the dataset's order, so an unsorted list would give the logged samples the wrong ``doc_id``. Needs the per-item
  ``task`` and ``doc_id`` columns that :func:`~evalsift.io.lm_eval.read_lm_eval` writes.
- ``inspect``: :func:`evalsift.io.inspect_logs.export_inspect`, one ``<out stem>.inspect.<task>.txt`` per task
  holding the sample ids for ``inspect eval --sample-id``, and the ``inspect eval`` commands.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..registry import Registry
from ._common import write_atomic
from .inspect_logs import export_inspect, inspect_next_step

Exporter = Callable[[Any, Sequence[str], Path], "list[Path]"]
exporters: Registry[Exporter] = Registry("export format")


@dataclass(frozen=True)
class Exported:
    """What an export wrote (``paths``) and the next step to tell the user (``next_step``: a command, or None)."""

    paths: list[Path]
    next_step: str | None = None


def _item_columns(pool: Any, item_ids: Sequence[str], columns: Sequence[str], tool: str) -> list[tuple[Any, ...]]:
    """The values of ``columns`` for each of ``item_ids``; DataError naming the first item that lacks one."""
    pos = {str(i): k for k, i in enumerate(pool.item_ids)}
    meta = pool.metadata
    out = []
    for iid in item_ids:
        k = pos.get(str(iid))
        if k is None:
            raise DataError(f"item {iid!r} is not in {pool.name}; export items of the data they were picked from.",
                            item_id=str(iid))
        vals = tuple(meta[c][k] if c in meta else None for c in columns)
        if any(v is None or v == "" for v in vals):
            missing = [c for c, v in zip(columns, vals) if v is None or v == ""]
            raise DataError(f"item {iid!r} has no {' or '.join(missing)}: the {tool} export needs the data to come "
                            f"from {tool}'s own logs (read with evalsift's {tool} reader, which keeps each item's "
                            f"{' and '.join(columns)}).", item_id=str(iid), field=missing[0])
        out.append(vals)
    return out


def lm_eval_samples(pool: Any, item_ids: Sequence[str]) -> dict[str, list[int]]:
    """``{task: sorted doc indices}`` of ``item_ids`` for lm-eval's ``--samples``; DataError for an item without
    ``task``/``doc_id`` or with a ``doc_id`` that is not a document index."""
    samples: dict[str, set[int]] = {}
    for iid, (task, doc_id) in zip(item_ids, _item_columns(pool, item_ids, ("task", "doc_id"), "lm-eval")):
        try:
            idx = int(doc_id)
            if str(idx) != str(doc_id).strip() or idx < 0:
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f"item {iid!r}: doc_id {doc_id!r} is not a document index, which lm-eval's --samples "
                            "needs.", item_id=str(iid), field="doc_id") from None
        samples.setdefault(str(task), set()).add(idx)
    return {t: sorted(v) for t, v in samples.items()}


def _few_shot(pool: Any, item_ids: Sequence[str]) -> tuple[str | None, str | None]:
    """(``--num_fewshot K`` when every exported task's runs used K shots, a note when the tasks differ)."""
    if "n_shot" not in pool.metadata:
        return None, None
    pos = {str(i): k for k, i in enumerate(pool.item_ids)}
    by_task: dict[str, set[str]] = {}
    for iid in item_ids:
        k = pos[str(iid)]
        shot = pool.metadata["n_shot"][k]
        if shot is not None:
            by_task.setdefault(str(pool.metadata["task"][k]), set()).add(str(shot))
    values = set().union(*by_task.values()) if by_task else set()
    if len(values) == 1:
        return f"--num_fewshot {next(iter(values))}", None
    if values:
        return None, ("the tasks' runs used different few-shot counts (" + ", ".join(
            f"{t}: {'/'.join(sorted(v))}" for t, v in by_task.items()) + "); run each task with its own --num_fewshot")
    return None, None


def lm_eval_path(out_path: Path) -> Path:
    """Where the ``lm-eval`` export of picks file ``out_path`` goes: ``<stem>.lm-eval.json`` beside it."""
    out_path = Path(out_path)
    return out_path.with_name(out_path.stem + ".lm-eval.json")


def export_lm_eval(pool: Any, item_ids: Sequence[str], out_path: Path) -> list[Path]:
    """Write ``<out stem>.lm-eval.json`` for lm-eval's ``--samples`` (module doc); its path, in a list."""
    samples = lm_eval_samples(pool, item_ids)
    path = lm_eval_path(out_path)
    write_atomic(path, json.dumps(samples) + "\n")
    return [path]


def lm_eval_command(pool: Any, item_ids: Sequence[str], samples_path: Path) -> str:
    """The ``lm_eval`` command that runs a new model on the exported documents (``NEW_MODEL`` and ``NEW_RUN_DIR``
    to fill in, and the options the known runs used besides these, such as ``--include_path``)."""
    tasks = ",".join(lm_eval_samples(pool, item_ids))
    shot, _ = _few_shot(pool, item_ids)
    cmd = (f"lm_eval --model hf --model_args pretrained=NEW_MODEL --tasks {shlex.quote(tasks)} "
           f"--samples {shlex.quote(str(samples_path))} --log_samples --output_path NEW_RUN_DIR")
    return cmd + (f" {shot}" if shot else "")


def _lm_eval_next(pool: Any, item_ids: Sequence[str], paths: list[Path]) -> str:
    samples = lm_eval_samples(pool, item_ids)
    n = sum(len(v) for v in samples.values())
    _, shot_note = _few_shot(pool, item_ids)
    text = (f"wrote {paths[0]} ({n} documents of {len(samples)} task{'s' if len(samples) != 1 else ''} for "
            f"lm-eval's --samples); run the new model on them (with the options the known runs used, e.g. "
            f"--include_path, --apply_chat_template):\n  {lm_eval_command(pool, item_ids, paths[0])}")
    return text + (f"\nnote: {shot_note}" if shot_note else "")


exporters.add("lm-eval", export_lm_eval, "lm-evaluation-harness: <out>.lm-eval.json for lm_eval --samples, and the "
                                         "command to run a new model on those documents")
exporters.add("inspect", export_inspect, "inspect_ai: <out>.inspect.<task>.txt per task, the sample ids for "
                                         "inspect eval --sample-id, and the command to run a new model on them")
_NEXT: dict[str, Callable[[Any, Sequence[str], list[Path]], str]] = {"lm-eval": _lm_eval_next,
                                                                     "inspect": inspect_next_step}


def export(fmt: str, pool: Any, item_ids: Sequence[str], out_path: str | Path) -> Exported:
    """Run exporter ``fmt`` on ``item_ids`` of ``pool`` beside the picks file ``out_path``; unknown names raise
    with a suggestion.

    >>> from evalsift.io import load
    >>> export("lm-eval", load("demo"), ["0"], "picks.jsonl")
    Traceback (most recent call last):
    ...
    evalsift.errors.DataError: item '0' has no task or doc_id: the lm-eval export needs the data to come from lm-eval's own logs (read with evalsift's lm-eval reader, which keeps each item's task and doc_id).
    """
    fn = exporters.get(fmt)
    item_ids = [str(i) for i in item_ids]
    paths = list(fn(pool, item_ids, Path(out_path)))
    nxt = _NEXT.get(fmt)
    return Exported(paths, nxt(pool, item_ids, paths) if nxt else "wrote " + ", ".join(map(str, paths)))
