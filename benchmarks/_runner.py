"""What the benchmark scripts share: where the checkout and the real data are, and the tail of their ``main()``
-- the closing timing line (seconds and the command that reproduces the run) and the results written to
``--out`` as JSON (the folder made first, then ``wrote PATH``).

The scripts live one folder down (``benchmarks/arena/arena_small.py``, ...) and reach this module with::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
    from _runner import data_root, finish_text, use_src, write_json  # noqa: E402

Not a package and not installed: scripts, not tests (``benchmarks/README.md``).

>>> rel = command(BENCH / "arena" / "arena_small.py", ["scores", "--draws", "50"])
>>> rel
'python benchmarks/arena/arena_small.py scores --draws 50'
>>> timing_line(12.4, BENCH / "arena" / "arena_small.py", [])
'(12 s; command: python benchmarks/arena/arena_small.py)'
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

#: the checkout (this file's folder's parent)
REPO = Path(__file__).resolve().parents[1]
#: the benchmark folder
BENCH = REPO / "benchmarks"


def use_src() -> Path:
    """Put this checkout's ``src`` first on ``sys.path`` (so the scripts time this tree's evalsift, installed or
    not); returns it."""
    src = REPO / "src"
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    return src


def data_root() -> Path:
    """The real data folder: ``$EVALSIFT_DATA``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("EVALSIFT_DATA", "").strip()
    return Path(env) if env else REPO.parent / "shared" / "data"


def command(script: str | Path, argv: Sequence[str] | None = None) -> str:
    """The command line that reruns ``script`` (a path inside the checkout; the running script's ``__file__``)
    with ``argv`` (default: this process's arguments), from the checkout's root."""
    path = Path(script).resolve()
    try:
        shown = path.relative_to(REPO).as_posix()
    except ValueError:
        shown = str(path)
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python", shown, *args])


def timing_line(seconds: float, script: str | Path, argv: Sequence[str] | None = None) -> str:
    """``(S s; command: python benchmarks/...)``: the closing line of a script's table."""
    return f"({seconds:.0f} s; command: {command(script, argv)})"


def finish_text(text: str, seconds: float, script: str | Path, out: str | Path | None = None,
                argv: Sequence[str] | None = None) -> int:
    """Print ``text`` with its :func:`timing_line` below it and, with ``out``, write the same to that file (its
    folder made first); 0, the script's exit status."""
    text += f"\n\n{timing_line(seconds, script, argv)}"
    print(text)
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return 0


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = None,
               seconds: float | None = None, file: TextIO | None = None, **dumps: Any) -> Path:
    """Write ``obj`` as JSON to ``path`` (its folder made first; a newline at the end) and print ``wrote PATH``
    (with `` (S s)`` when ``seconds`` is given) to ``file`` (default stdout). ``dumps``: more arguments of
    :func:`json.dumps` (``allow_nan=False``, ...). Returns the path.

    >>> import tempfile
    >>> p = write_json(Path(tempfile.mkdtemp()) / "sub" / "r.json", {"a": 1.5}, seconds=2.0)  # doctest: +ELLIPSIS
    wrote .../sub/r.json (2.0 s)
    >>> json.loads(p.read_text())
    {'a': 1.5}
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent, default=default, **dumps) + "\n", encoding="utf-8")
    print(f"wrote {path}" + (f" ({seconds} s)" if seconds is not None else ""), file=file or sys.stdout)
    return path
