"""mt-metrics-eval (WMT) directories: ``<dir>/<testset>/<lp>`` read into a Pool.

The layout of Google's mt-metrics-eval v2, for any test set and language pair::

    <testset>/sources/<lp>.txt                         line i = source segment i
    <testset>/references/<lp>.<ref>.txt                 e.g. en-de.refA.txt
    <testset>/documents/<lp>.docs                       lines "domain<TAB>doc-id"
    <testset>/system-outputs/<lp>/<system>.txt          line i = the system's segment i
    <testset>/human-scores/<lp>.<name>.seg.score        lines "system<TAB>score" (None = unscored)
    <testset>/metric-scores/<lp>/<name>.seg.score       same format, automatic metrics

Score lines are grouped by system in segment order; a system's block must have one line per segment.
Only ``.seg.score`` files are read (``.sys.score``, ``.domain.score``, ratings and others are ignored).
Human metrics are named by the stem without ``<lp>.`` (``mqm``, ``da-sqm``) and flagged human;
automatic ones keep their stem (``MetricX-23-refA``). Score lines for systems outside the pool are
ignored; a pool system absent from a score file gets NaN.

References: names of ``references/`` files, anything named ``ref*`` and ``synthetic*`` are not
systems by default; their texts go to ``Pool.references``. ``include_refs=True`` adds the *human*
references (``refA``, ...) that have outputs in ``system-outputs/`` back as systems, so they can be
compared against MT; machine-made ``synthetic*`` references stay out (pass an explicit list of names,
e.g. ``include_refs=["refA", "synthetic_ref"]``, to choose exactly). Optional parts (documents,
references, human or metric scores) may be missing. Files that cannot be read, are not UTF-8, or
(for the sources) are empty raise DataError naming the file (and the line for bad UTF-8).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import DataError
from ..pool import Pool
from ._common import MISSING_TOKENS, empty_file_error, nan_matrix, read_lines

SEG_SUFFIX = ".seg.score"


def language_pairs(testset_dir: str | Path) -> list[str]:
    """Language pairs of an mt-metrics-eval test set folder (stems of ``sources/*.txt``), sorted."""
    return sorted(p.name[:-4] for p in (Path(testset_dir) / "sources").glob("*.txt"))


def split_mtme_path(path: str | Path) -> tuple[Path, str]:
    """``(testset_dir, lp)`` for ``<testset>/<lp>``, or for a test set folder with a single pair.

    >>> split_mtme_path("/data/mt-metrics-eval-v2/wmt23/en-de")  # doctest: +SKIP
    (PosixPath('/data/mt-metrics-eval-v2/wmt23'), 'en-de')
    """
    path = Path(path)
    if (path / "sources").is_dir():
        lps = language_pairs(path)
        if len(lps) != 1:
            raise DataError(
                f"{path} is an mt-metrics-eval test set with language pairs {lps or '(none)'}; "
                f"name one as {path}/<lp>, e.g. {path}/{lps[0] if lps else 'en-de'}."
            )
        return path, lps[0]
    testset, lp = path.parent, path.name
    if not (testset / "sources" / f"{lp}.txt").is_file():
        lps = language_pairs(testset) if (testset / "sources").is_dir() else []
        raise DataError(
            f"{path}: not an mt-metrics-eval <testset>/<lp> path: expected the file "
            f"{testset / 'sources' / (lp + '.txt')}. "
            + (f"Language pairs in {testset}: {', '.join(lps)}." if lps else
               "The parent folder should hold sources/, system-outputs/, human-scores/, metric-scores/.")
        )
    return testset, lp


def _segment_file(path: Path, n: int, what: str) -> list[str]:
    lines = read_lines(path)
    if len(lines) != n:
        raise DataError(
            f"{path}: {what} has {len(lines)} lines, expected {n} (one per source segment). "
            "Check the file belongs to this language pair and has no extra or missing lines."
        )
    return lines


def _reference_texts(testset: Path, lp: str, n: int) -> dict[str, list[str]]:
    refs = {}
    for p in sorted((testset / "references").glob(f"{lp}.*.txt")):
        refs[p.name[len(lp) + 1:-4]] = _segment_file(p, n, "reference")
    return refs


def _is_ref_name(name: str, ref_files: Iterable[str]) -> bool:
    return name in set(ref_files) or name.startswith("ref") or name.startswith("synthetic")


def _choose_systems(outputs: list[str], ref_files: list[str], include_refs: bool | Iterable[str]) -> list[str]:
    refs = [s for s in outputs if _is_ref_name(s, ref_files)]
    if include_refs is True:
        keep = {r for r in refs if not r.startswith("synthetic")}
    elif include_refs is False or include_refs is None:
        keep = set()
    else:
        keep = set(include_refs)
        missing = sorted(keep - set(outputs))
        if missing:
            raise DataError(f"include_refs: {missing} have no file in system-outputs/; references with outputs: {refs}.")
    return [s for s in outputs if s not in refs or s in keep]


def _floats(values: list[str], path: Path, system: str) -> np.ndarray:
    cleaned = ["nan" if v.strip() in MISSING_TOKENS else v for v in values]
    try:
        return np.array(cleaned, dtype=float)
    except ValueError:
        bad = next(v for v in cleaned if not _is_float(v))
        raise DataError(
            f"{path}: system {system!r} has score {bad!r}, expected a number or None "
            "(lines are 'system<TAB>score')."
        ) from None


def _is_float(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def read_score_file(path: str | Path, n_segments: int, systems: list[str]) -> np.ndarray:
    """Read one ``.seg.score`` file into an (n_segments x len(systems)) array, NaN where unscored.

    Every system block must have exactly ``n_segments`` lines; systems not in ``systems`` are
    checked but ignored.
    """
    path = Path(path)
    blocks: dict[str, list[str]] = {}
    for lineno, line in enumerate(read_lines(path), 1):
        name, sep, value = line.partition("\t")
        if not sep:
            parts = line.split()
            if len(parts) != 2:
                raise DataError(f"{path}: line {lineno} is {line[:60]!r}, expected 'system<TAB>score'.")
            name, value = parts
        blocks.setdefault(name, []).append(value)
    out = nan_matrix(n_segments, len(systems))
    col = {s: j for j, s in enumerate(systems)}
    for name, values in blocks.items():
        if len(values) != n_segments:
            raise DataError(
                f"{path}: system {name!r} has {len(values)} score lines, expected {n_segments} "
                "(one per segment, grouped by system in segment order)."
            )
        if name in col:
            out[:, col[name]] = _floats(values, path, name)
    return out


def _score_files(testset: Path, lp: str) -> list[tuple[str, Path, bool]]:
    """``(metric, file, is_human)`` for every segment-level score file of ``lp``."""
    found = []
    for p in sorted((testset / "human-scores").glob(f"{lp}.*{SEG_SUFFIX}")):
        found.append((p.name[len(lp) + 1:-len(SEG_SUFFIX)], p, True))
    human_names = {m for m, _, _ in found}
    for p in sorted((testset / "metric-scores" / lp).glob(f"*{SEG_SUFFIX}")):
        m = p.name[:-len(SEG_SUFFIX)]
        found.append((m + "-metric" if m in human_names else m, p, False))
    return found


def _documents(testset: Path, lp: str, n: int) -> dict[str, list[str | None]]:
    path = testset / "documents" / f"{lp}.docs"
    if not path.is_file():
        return {}
    rows = [ln.split("\t", 1) for ln in _segment_file(path, n, "documents")]
    return {"domain": [r[0] if len(r) == 2 else None for r in rows],
            "doc": [r[-1] for r in rows]}


def read_mtme(path: str | Path, include_refs: bool | Iterable[str] = False, *, name: str | None = None) -> Pool:
    """Read an mt-metrics-eval ``<testset>/<lp>`` into a Pool (segments x systems).

    Item ids are segment indices ``"0".."n-1"``; metadata ``domain`` and ``doc`` come from
    ``documents/<lp>.docs`` when present. See the module docstring for references and scores.

    >>> pool = read_mtme("data/wmt23/mt-metrics-eval-v2/wmt23/en-de")   # doctest: +SKIP
    >>> pool.n_systems, pool.is_human("mqm"), pool.complete("mqm").n_items  # doctest: +SKIP
    (12, True, 460)
    """
    testset, lp = split_mtme_path(path)
    sources = read_lines(testset / "sources" / f"{lp}.txt")
    n = len(sources)
    if n == 0:
        raise empty_file_error(testset / "sources" / f"{lp}.txt", "is empty", "segments", "one source segment per line")
    out_dir = testset / "system-outputs" / lp
    output_names = sorted(p.name[:-4] for p in out_dir.glob("*.txt"))
    references = _reference_texts(testset, lp, n)
    systems = _choose_systems(output_names, list(references), include_refs)
    outputs = {s: _segment_file(out_dir / f"{s}.txt", n, f"output of system {s!r}") for s in systems}
    for s in output_names:
        if s not in systems and s not in references:
            references[s] = _segment_file(out_dir / f"{s}.txt", n, f"output of reference {s!r}")
    scores, human = {}, set()
    for metric, file, is_human in _score_files(testset, lp):
        scores[metric] = read_score_file(file, n, systems)
        if is_human:
            human.add(metric)
    return Pool(
        item_ids=[str(i) for i in range(n)], inputs=sources, systems=systems, outputs=outputs,
        scores=scores, human_metrics=human, references=references,
        metadata=_documents(testset, lp, n), name=name if name is not None else str(path),
    )
