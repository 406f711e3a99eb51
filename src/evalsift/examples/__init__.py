"""Tiny examples in the layouts other tools publish, shipped with evalsift, for the README's tour and for a first
try before your own files are at hand: ``evalsift data example NAME --out DIR`` copies one into ``DIR``.

Written by evalsift (``scripts/make_examples.py``, deterministic): the verdicts are synthetic and the model names
fictional -- the files show the layouts, not anyone's results.

- ``mt-bench``: FastChat llm_judge's ``data/mt_bench/`` folder: ``question.jsonl`` (24 questions, 3 per category,
  two turns), ``model_judgment/gpt-4_single.jsonl`` (1-10 grades, as ``gen_judgment.py --mode single`` writes them)
  and ``model_judgment/gpt-4_pair.jsonl`` (every pair of 4 models, both turns, two games per row, as ``--mode
  pairwise-all`` writes them). Run the commands in that folder as in a FastChat checkout's ``data/mt_bench``.
- ``arena``: ``battles.jsonl``, 300 Chatbot Arena battle records among 5 models with both answers'
  ``conversation_a`` / ``conversation_b`` (lengths and markdown that differ, for ``arena --style-control``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import DataError, check_choice

#: example name -> its folder in the package, and the files it holds (as paths inside the copy)
EXAMPLES = {
    "mt-bench": ("mt_bench", ("question.jsonl", "model_judgment/gpt-4_single.jsonl", "model_judgment/gpt-4_pair.jsonl",
                              "README.md")),
    "arena": ("arena", ("battles.jsonl", "README.md")),
}


def example_files(name: str) -> list[tuple[str, bytes]]:
    """``(path inside the example, content)`` for each file of example ``name`` (:data:`EXAMPLES`).

    >>> [p for p, _ in example_files("arena")]
    ['battles.jsonl', 'README.md']
    """
    folder, files = EXAMPLES[check_choice("example", name, EXAMPLES)]
    base = resources.files(__name__).joinpath(folder)
    return [(f, base.joinpath(*f.split("/")).read_bytes()) for f in files]


def copy_example(name: str, out: str | Path) -> list[Path]:
    """Write example ``name``'s files into folder ``out`` (made if needed), each whole; the paths written. A file
    already there with other content is never overwritten (a DataError names it: your own files stay yours); one
    with the same content is left as it is."""
    from ..io._common import write_atomic

    out = Path(out)
    files = example_files(name)
    for rel, data in files:
        target = out / rel
        if target.exists() and (not target.is_file() or target.read_bytes() != data):
            raise DataError(f"{target} exists and is not evalsift's example {name!r}; it is left as it is: give "
                            "--out a new folder", field="out")
    written = []
    for rel, data in files:
        target = out / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)
        written.append(target)
    return written


__all__ = ["EXAMPLES", "copy_example", "example_files"]
