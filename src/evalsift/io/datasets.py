"""Dataset names resolved under the data root: ``$EVALSIFT_DATA``, or else a ``shared/data`` folder found
beside the working folder or one of its parents (or beside the evalsift checkout), as the tests find it.

Names found under the root (nothing is assumed to exist; each is discovered by its layout):

- ``<testset>/<lp>`` (e.g. ``wmt23/en-de``) for every ``<testset>/sources/<lp>.txt`` in
  ``<root>/mt-metrics-eval-v2/``, ``<root>/*/mt-metrics-eval-v2/`` or ``<root>/`` itself;
- ``<folder>`` for every ``<root>/<folder>/summeval.json`` (``summeval``) and
  ``<root>/<folder>/model_outputs/`` (``alpaca-eval``), ``<root>/<folder>/data/combine.csv``
  (``opencompass-irt``); ``summeval`` also for ``<root>/summeval.json``;
- ``<folder>/<subset>`` (``chaosnli/snli``, ``chaosnli/mnli_m``) for a ``<root>/<folder>/`` holding
  ``chaosNLI_v1.0/chaosNLI_<subset>.jsonl`` and ``predictions/<SNLI|MNLI>_*.json``;
- ``<folder>/<stem>`` (``arena-ppr/human``) for a file of recorded pairwise judgments directly in
  ``<root>/<folder>/`` (:func:`evalsift.io.pairwise_layout.find_judge_files`), read by the ``pairwise`` reader.

``demo`` is built in and needs no data root.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UnknownNameError, suggest
from .chaosnli import chaosnli_subsets
from .opencompass import looks_opencompass
from .pairwise_layout import find_judge_files

ENV_VAR = "EVALSIFT_DATA"
BUILTIN = ("demo",)


SHARED = Path("shared") / "data"


def data_root() -> Path | None:
    """The data folder: the one ``$EVALSIFT_DATA`` names (as given, ``~`` expanded, not checked), or when
    the variable is unset, the first ``shared/data`` folder beside the working folder or one of its
    parents, or beside the source checkout evalsift runs from (``../shared/data`` of a checkout, where
    the tests look too); None when there is none, or when the variable is set but empty (no data folder)."""
    if ENV_VAR not in os.environ:
        return found_shared_data()
    value = os.environ[ENV_VAR].strip()
    return Path(value).expanduser() if value else None


def found_shared_data() -> Path | None:
    """The ``shared/data`` folder :func:`data_root` falls back to, or None."""
    here = Path.cwd().resolve()
    checkout = Path(__file__).resolve().parents[3]  # src/evalsift/io/datasets.py -> the checkout's folder
    for folder in (here, *here.parents, checkout.parent):
        if (folder / SHARED).is_dir():
            return folder / SHARED
    return None


def _mtme_testsets(root: Path) -> list[Path]:
    patterns = ("mt-metrics-eval-v2/*/sources", "*/mt-metrics-eval-v2/*/sources", "*/sources")
    found = [p.parent for pat in patterns for p in sorted(root.glob(pat)) if p.is_dir()]
    return list(dict.fromkeys(found))


def find_datasets(root: Path | None = None) -> dict[str, tuple[str, Path | None]]:
    """Dataset name -> (format, path) for everything found under ``root`` (default :func:`data_root`).

    >>> sorted(find_datasets(Path("/nonexistent")))
    ['demo']
    """
    root = data_root() if root is None else Path(root)
    found: dict[str, tuple[str, Path | None]] = {"demo": ("demo", None)}
    if root is None or not root.is_dir():
        return found
    for testset in _mtme_testsets(root):
        for src in sorted((testset / "sources").glob("*.txt")):
            found.setdefault(f"{testset.name}/{src.name[:-4]}", ("mtme", testset / src.name[:-4]))
    if (root / "summeval.json").is_file():
        found.setdefault("summeval", ("summeval", root / "summeval.json"))
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / "summeval.json").is_file():
            found.setdefault(folder.name, ("summeval", folder / "summeval.json"))
        if (folder / "model_outputs").is_dir():
            found.setdefault(folder.name, ("alpaca", folder))
        if looks_opencompass(folder):
            found.setdefault(folder.name, ("opencompass", folder))
        for subset in chaosnli_subsets(folder):
            found.setdefault(f"{folder.name}/{subset}",
                             ("chaosnli", folder / "chaosNLI_v1.0" / f"chaosNLI_{subset}.jsonl"))
    for name, file in find_judge_files(root).items():
        found.setdefault(name, ("pairwise", file))
    return found


def _root_note(root: Path | None) -> str:
    if root is None:
        why = f"{ENV_VAR} is empty" if ENV_VAR in os.environ else \
            f"{ENV_VAR} is not set and no shared/data folder is beside this folder or its parents"
        return (f"{why}, so only the "
                f"built-in 'demo' dataset is available. Set {ENV_VAR} to the data folder (the one holding summeval/, "
                f"wmt23/, alpaca-eval/), e.g. `export {ENV_VAR}=/path/to/shared/data`, or pass a file or folder path.")
    if not root.is_dir():
        return f"{ENV_VAR}={root} is not an existing folder; point it at the data folder or pass a path."
    return (f"Names are looked up under {looked_up_under(root)}; pass a file or folder path instead, or force a "
            "format with 'fmt:path' (e.g. mtme:/data/wmt23/en-de).")


def looked_up_under(root: Path) -> str:
    """Where the data root that names were looked up under came from, for a message: ``EVALSIFT_DATA=ROOT``
    when the variable names it, else ROOT and where that ``shared/data`` folder was found (the variable is
    not set, and a message must not say it is)."""
    if os.environ.get(ENV_VAR, "").strip():
        return f"{ENV_VAR}={root}"
    here = Path.cwd().resolve()
    beside = "the working folder or one of its parents" if root.parent.parent in (here, *here.parents) else \
        "the evalsift checkout"
    return f"{root} ({ENV_VAR} is not set; that shared/data folder was found beside {beside})"


def resolve_dataset(name: str, root: Path | None = None) -> tuple[str, Path | None]:
    """(format, path) of dataset ``name``; UnknownNameError listing known names otherwise."""
    root = data_root() if root is None else Path(root)
    found = find_datasets(root) if root is not None else {"demo": ("demo", None)}
    if name in found:
        return found[name]
    hint = suggest(name, found)
    raise UnknownNameError(
        f"Unknown dataset '{name}': it is not an existing file or folder either.{hint} "
        f"Available datasets: {', '.join(sorted(found))}. {_root_note(root)}"
    )
