"""The house keeps its shape: the modules of ``evalsift.io`` (and of ``evalsift.oracle``, ``evalsift.arena``,
``evalsift.pool``, ``evalsift.winrate``) import each other without a circle, and the old import paths of moved
code keep working (issues 29 and 46).

The import graph is read from the source with :mod:`ast`: an edge ``x -> y`` for every ``from .y import``
(``from . import y``, ``from ..io.y import``) in module ``x`` of the same package, at module level or
inside a function -- a function-level import used to dodge a circle is still a circle. An import
marked with the comment ``# optional dependency`` on its line is left out (a lazy import of a heavy
optional package, not of a sibling). The package's ``__init__`` is a node too: a module that imports
from its own package imports everything ``__init__`` imports. The body of a module-level ``__getattr__``
is left out: there a module keeps the names that moved out of it answering for outside callers, imported
on the first such request (``from evalsift.arena.battles import read_battles``); the package's own modules
never go through it (:func:`test_the_package_does_not_use_the_lazy_old_paths`).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "evalsift"
OPTIONAL = "# optional dependency"


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Module name (``__init__`` for the package) -> the modules of the same package it imports."""
    package = folder.name
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        edges: set[str] = set()
        tree = ast.parse(text, filename=str(path))
        shim = {id(n) for top in tree.body if isinstance(top, ast.FunctionDef) and top.name == "__getattr__"
                for n in ast.walk(top)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level == 0 or id(node) in shim:
                continue
            if any(OPTIONAL in lines[n - 1] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                continue
            parts = (node.module or "").split(".") if node.module else []
            if node.level == 2 and parts and parts[0] == package:  # from ..io.x import / from ..io import
                parts = parts[1:]
            elif node.level != 1:
                continue  # another package
            if parts:
                edges.add(parts[0] if parts[0] in names else "__init__")
            else:  # from . import x, y
                edges.update(a.name if a.name in names else "__init__" for a in node.names)
        edges.discard(path.stem)
        graph[path.stem] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as ``[m1, m2, ..., m1]``, or None when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def write_package(root: Path, files: dict[str, str]) -> Path:
    folder = root / "io"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


def test_the_checker_finds_a_circle_hidden_in_a_function(tmp_path):
    # a -> b at module level, b -> a inside a function (the dodge issue 29 found in io/): a circle
    folder = write_package(tmp_path, {
        "__init__": "from .a import f\n",
        "a": "from .b import g\n\ndef f():\n    return g()\n",
        "b": "def g():\n    from .a import f  # a imports this module\n    return f\n",
    })
    graph = import_graph(folder)
    assert graph == {"__init__": {"a"}, "a": {"b"}, "b": {"a"}}
    assert find_cycle(graph) == ["a", "b", "a"]


def test_the_checker_sees_package_imports_and_skips_optional_dependencies(tmp_path):
    folder = write_package(tmp_path, {
        "__init__": "from .a import f\n",
        "a": "from ..io import load\nfrom . import b\n",     # the package itself: a circle through __init__
        "b": "def g():\n    from .c import h  # optional dependency\n",
        "c": "import os\nfrom .. import errors\n",          # another package: no edge
    })
    graph = import_graph(folder)
    assert graph == {"__init__": {"a"}, "a": {"__init__", "b"}, "b": set(), "c": set()}
    assert find_cycle(graph) == ["__init__", "a", "__init__"]
    assert find_cycle({"x": {"y"}, "y": {"z"}, "z": set()}) is None


def test_the_checker_leaves_out_only_the_lazy_old_path_shim(tmp_path):
    # a's module __getattr__ answers a name that moved to b (which imports a): no edge; any other function's is one
    folder = write_package(tmp_path, {
        "a": "def __getattr__(name):\n    from . import b\n    return getattr(b, name)\n",
        "b": "from .a import A\n",
        "c": "def f():\n    from . import b\n",
    })
    assert import_graph(folder) == {"a": set(), "b": {"a"}, "c": {"b"}}


@pytest.mark.parametrize("package", ["io", "oracle", "arena", "pool", "winrate"])
def test_no_import_circle_in_the_package(package):
    graph = import_graph(SRC / package)
    assert len(graph) > 3, graph  # the package was read
    assert find_cycle(graph) is None, f"import circle in evalsift.{package}: {' -> '.join(find_cycle(graph))}"


def test_only_optional_dependencies_are_imported_inside_functions():
    # a function-level import of a sibling module is only ever a dodge; heavy optional packages are marked
    found = []
    for package in ("io", "oracle", "arena", "pool", "winrate"):
        for path in sorted((SRC / package).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            top = {id(n) for n in tree.body}
            top |= {id(n) for t in tree.body if isinstance(t, ast.FunctionDef) and t.name == "__getattr__"
                    for n in ast.walk(t)}  # the lazy old-path shim (module doc)
            lines = path.read_text(encoding="utf-8").splitlines()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 1 and id(node) not in top \
                        and OPTIONAL not in lines[node.lineno - 1]:
                    found.append(f"{package}/{path.name}:{node.lineno}")
    assert found == []


# the old import paths of what issue 29 moved: module -> names (public, and private ones tests or modules use)
OLD_PATHS = {
    "evalsift.io.pairwise": [
        "PairwiseData", "parse_verdict", "alpaca_verdict", "pairwise_layout", "looks_pairwise", "LAYOUTS", "KINDS",
        "ORDERS", "VERDICT_CODES", "REQUIRED", "OPTIONAL", "ALPACA_ITEM_FIELDS", "read_pairwise", "read_pairwise_pool",
        "read_summeval_pairwise", "summeval_answer", "summeval_pairwise_files", "read_alpaca_preferences",
        "find_judgment_sources", "find_judge_files", "read_judgments", "SUMMEVAL_ANNOTATOR", "SUMMEVAL_DIR",
        "ALPACA_FILE", "ALPACA_CONFIG", "_Builder", "_choice", "_text", "_read_cached", "_rows", "ENV_VAR",
        "data_root",
    ],
    "evalsift.io.datasets": ["ENV_VAR", "data_root", "found_shared_data", "find_datasets", "resolve_dataset"],
    "evalsift.io.judge_files": ["READERS", "read_arena", "read_fastchat", "read_alpaca_annotations",
                                "read_evalsift_judgments", "judge_kind", "file_annotator", "alpaca_item_id",
                                "LLM_FAMILIES"],
    "evalsift.oracle.llm": [
        "LLMJudge", "LLMCache", "DictCache", "cache_key", "parse_verdict", "parse_rating", "fill_template",
        "template_delimiters", "injection_spots", "redact_url", "PLACEHOLDER_KEY", "DEFAULT_BASE_URL",
        "DEFAULT_CRITERION", "PLACEHOLDERS", "MAX_CONNECTION_FAILURES", "_VERDICT_LIKE_RE", "_RATING_RE",
        "_deadline_http_client", "_scrub", "_sha",
    ],
    "evalsift.judge_report": [
        "judge_report", "JudgeReport", "ResolvedJudge", "resolve_judge", "forecast_labels", "FORECAST_ASSUMPTION",
        "INTERVAL_METHOD", "RUNS_PER_SAMPLE", "LABELS", "_kappa", "_pair_data", "_ratio_interval",
    ],
    # issue 46: read_battles & co. moved to arena/read.py; pool.py and winrate.py became packages
    "evalsift.arena.battles": ["Battles", "read_battles", "with_texts", "judge_name", "_outputs_pool"],
    "evalsift.arena": ["Battles", "read_battles", "judge_name", "fit_bt", "bootstrap_bt", "bootstrap_bt_ppi",
                       "fit_bt_ppi", "rank_sets", "ranks", "curvature_bias", "BTFit"],
    "evalsift.pool": [
        "Pool", "ReadOnlyDict", "ReadOnlyList", "freeze", "SOURCE_ITEM", "_restore", "_Columns", "_Gather",
        "_Pending", "_column", "_score_matrix", "_meta_column", "_inputs_column", "_frozen_tuple", "_lock",
        "_BadValue", "_length_error", "_is_number", "_describe", "_refuse", "_ATOMIC",
    ],
    "evalsift.winrate": [
        "baseline_comparisons", "estimate_difficulty", "fit_length_glm", "length_controlled_win_rate", "win_rate",
        "winrate_board", "write_board", "PublishedDifficulty", "PublishedWeights", "read_alpaca_difficulty",
        "read_alpaca_weights", "published_controlled", "lc_standard_error", "WinRateBoard", "Comparisons",
        "ModelComparisons", "LengthGLM", "LCInfluence", "CS", "SEED", "N_SPLITS", "REGULARIZE_TO_BASELINE",
        "GAMED_SUFFIXES", "FEW_MODELS", "MAX_JOBS", "WEIGHT_COLUMNS", "cv_fits", "pick_annotator", "pick_annotators",
        "verdicts_text", "_soft_problem", "_solve_l1", "_l1_kwargs", "_cv_fit", "_fit_l1", "_length_design",
        "_PARALLEL_ROWS", "_board_html", "_fmt", "_lengths", "_preference", "_sigmoid",
    ],
}


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_old_import_paths_keep_working(module):
    mod = importlib.import_module(module)
    missing = [n for n in OLD_PATHS[module] if not hasattr(mod, n)]
    assert missing == []


def test_moved_names_are_the_same_objects_at_both_addresses():
    import evalsift
    from evalsift.io import pairwise, pairwise_data, pairwise_table
    from evalsift.oracle import llm, report

    assert pairwise.PairwiseData is pairwise_data.PairwiseData
    assert pairwise._read_cached is pairwise_table._read_cached  # one cache, whichever name clears it
    assert evalsift.judge_report.judge_report is report.judge_report
    assert llm.LLMJudge.__module__ == "evalsift.oracle.llm"  # the oracle class stayed where it was registered
    from evalsift.oracle.base import oracles

    assert oracles.get("llm") is llm.LLMJudge


def test_the_package_does_not_use_the_lazy_old_paths():
    # inside evalsift, read_battles & co. come from arena.read: battles.py's __getattr__ is for outside callers
    moved = importlib.import_module("evalsift.arena.battles")._MOVED
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("battles") \
                    and any(a.name in moved for a in node.names):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []


def test_battles_imports_nothing_else_of_arena():
    # the class every arena module needs stands alone (the circle battles -> style -> bt -> battles is gone)
    assert import_graph(SRC / "arena")["battles"] == set()
    from evalsift.arena import battles, read

    assert battles.read_battles is read.read_battles and battles.judge_name("arena-ppr/x.jsonl") == "x"
    assert {"read_battles", "with_texts"} <= set(dir(battles))
    with pytest.raises(AttributeError, match="no_such_name"):
        battles.no_such_name  # noqa: B018 - the shim answers only the moved names

