"""A binary response matrix without texts: the ``opencompass-irt`` layout (PSN-IRT, Joe-Hall-Lee/PSN-IRT).

A folder with ``data/combine.csv`` (no header; one row per model, one 0/1 column per item) or the CSV
itself. The Pool:

- **systems**: ``model_0``, ``model_1``, ... (the rows are anonymous);
- **items**: ``<benchmark>/<k>`` (the k-th item of its benchmark) when the matrix has the 41,871 columns
  of the published release, whose benchmarks start at the columns of :data:`OPENCOMPASS_BENCHMARKS`
  (the release's own table: ARC-C at 0, BBH at 295, ... TheoremQA at 41,071); otherwise ``<k>``;
- **scores**: ``correct`` (0/1; flagged human: it is agreement with the benchmark's gold answer);
- **metadata**: ``benchmark`` (the benchmark's name; ``all`` for a matrix of another width);
- **inputs** and **outputs**: empty (the release has no texts).

>>> import tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "combine.csv"
>>> _ = f.write_text("1,0,1\\n0,0,1\\n")
>>> pool = read_opencompass(f)
>>> pool.systems, pool.item_ids, pool.scores["correct"][0].tolist()   # item 0, each model
(('model_0', 'model_1'), ('0', '1', '2'), [1.0, 0.0])
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import check_file, read_text

MATRIX_FILE = Path("data") / "combine.csv"
# (benchmark, first column) of the published 12 x 41,871 release (its README's table), in column order
OPENCOMPASS_BENCHMARKS = (("ARC-C", 0), ("BBH", 295), ("Chinese SimpleQA", 6806), ("GPQA Diamond", 9806),
                          ("GSM8K", 10004), ("HellaSwag", 11323), ("HumanEval", 21365), ("MATH", 21529),
                          ("MBPP", 26529), ("MMLU", 27029), ("TheoremQA", 41071))
OPENCOMPASS_COLUMNS = 41871


def looks_opencompass(folder: Path) -> bool:
    """True for a folder holding ``data/combine.csv``."""
    return (Path(folder) / MATRIX_FILE).is_file()


def _benchmarks(width: int) -> list[str]:
    if width != OPENCOMPASS_COLUMNS:
        return ["all"] * width
    names: list[str] = []
    starts = [s for _, s in OPENCOMPASS_BENCHMARKS] + [width]
    for (name, start), end in zip(OPENCOMPASS_BENCHMARKS, starts[1:]):
        names += [name] * (end - start)
    return names


def read_opencompass(path: str | Path, *, name: str | None = None) -> Pool:
    """Read a 0/1 response matrix (rows: models, columns: items; no header) into a Pool (module doc)."""
    path = Path(path)
    file = check_file(path / MATRIX_FILE if path.is_dir() else path, "response matrix")
    rows = [ln for ln in read_text(file).splitlines() if ln.strip()]
    if not rows:
        raise DataError(f"{file}: empty; expected one line of comma-separated 0/1 values per model.", field="rows")
    cells = [ln.split(",") for ln in rows]
    widths = [len(c) for c in cells]
    if len(set(widths)) != 1:
        k = next(i for i, w in enumerate(widths) if w != widths[0])
        raise DataError(f"{file}: the lines have different numbers of values (line 1: {widths[0]}, line {k + 1}: "
                        f"{widths[k]}); every model's line must have one value per item.", field="rows")
    try:
        Y = np.array([[float(v) for v in c] for c in cells])
    except ValueError as e:
        raise DataError(f"{file}: a value is not a number ({e}); expected 0/1 values, one model per line.",
                        field="rows") from None
    bad = ~np.isin(Y, (0.0, 1.0))
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataError(f"{file}: line {r + 1}, column {c + 1} is {float(Y[r, c]):g}; expected 0 or 1 (correct or not).",
                        field="rows")
    bench = _benchmarks(Y.shape[1])
    counter: dict[str, int] = {}
    ids = []
    for b in bench:
        k = counter.get(b, 0)
        counter[b] = k + 1
        ids.append(f"{b}/{k}" if b != "all" else str(k))
    systems = [f"model_{i}" for i in range(Y.shape[0])]
    return Pool(item_ids=ids, systems=systems, scores={"correct": Y.T}, human_metrics=["correct"],
                metadata={"benchmark": bench}, name=name if name is not None else str(path))
