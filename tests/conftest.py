"""Shared fixtures, and isolation: tests never touch the user's caches.

Before anything is imported, the embedding cache (``EVALSIFT_CACHE``), the Hugging Face home, the
matplotlib config and the XDG cache are pointed at a temporary folder removed at the end of the run.
The run is spread over two processes (pytest-xdist, ``-n 2`` in pyproject's addopts; ``-n 0`` runs it in
one): the controller makes that folder and every worker uses it, so an embedding or a trained model built
by one is there for the other. ``data_dir``: the real evaluation data (``$EVALSIFT_DATA`` or ``../shared/data``); see ``_data.py``.

Ctrl-C as at a terminal: a suite started in the background by a non-interactive shell (``cmd &`` in a
script) inherits SIGINT *ignored*, and every process it starts would too -- Python leaves an ignored
SIGINT ignored, so a command under test would never see the Ctrl-C a test sends it. The tests model a
person pressing Ctrl-C at a terminal, where SIGINT is not ignored: the run restores that.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

# One folder for the whole run. Under pytest-xdist (the ``-n`` in pyproject's addopts) the controller makes it
# before it starts the workers, which inherit its path and share it: one embedding cache, one model cache.
if os.environ.get("PYTEST_XDIST_WORKER") and os.path.isdir(os.environ.get("EVALSIFT_TEST_RUN_DIR", "")):
    _TMP = os.environ["EVALSIFT_TEST_RUN_DIR"]  # a worker: the controller removes the folder at the end
else:
    _TMP = tempfile.mkdtemp(prefix="evalsift-tests-")
    os.environ["EVALSIFT_TEST_RUN_DIR"] = _TMP
    atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
for _var, _sub in (("EVALSIFT_CACHE", "evalsift"), ("HF_HOME", "huggingface"), ("MPLCONFIGDIR", "matplotlib"),
                   ("XDG_CACHE_HOME", "xdg")):
    os.environ[_var] = os.path.join(_TMP, _sub)
os.environ.pop("EVALSIFT_QUIET", None)
if os.environ.get("PYTEST_XDIST_WORKER"):  # workers share the cores: torch's and BLAS's threads split among them,
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # not each asking for all of them
        os.environ.setdefault(_var, _threads)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # inherited from a background launch; see the module doc
    signal.signal(signal.SIGINT, signal.default_int_handler)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DATA_ROOT  # noqa: E402


#: the quick first check (``python -m pytest -m quick``, README): every command once on tiny offline data
#: (test_quick_commands.py), every command fed bad input (one error line), a failing command's outputs, the
#: errors, the package's shape, and every docstring example -- under 3 minutes on 2 idle cores
#: (``benchmarks/suite/test_times.py`` measures it)
QUICK_MODULES = ("test_quick_commands.py", "test_cli_bad_input.py", "test_cli_outputs.py", "test_errors.py",
                 "test_house.py", "test_harness.py")


def pytest_collection_modifyitems(config, items):
    """The end-to-end runs (marker ``slow``) first, in their modules' order: the workers take the first tests
    in turn (pytest-xdist's ``load`` schedule), so the longest runs start at once on different workers and the
    short tests fill the gaps, instead of one long run starting last and running alone. The quick first check's
    tests (:data:`QUICK_MODULES` and the doctests) get the marker ``quick``."""
    from _pytest.doctest import DoctestItem

    for item in items:
        if isinstance(item, DoctestItem) or item.path.name in QUICK_MODULES:
            item.add_marker(pytest.mark.quick)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # a stable sort: order kept otherwise


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Path of the shared real-data folder; use ``_data.need(...)`` to skip (or fail) when a part is absent."""
    return DATA_ROOT


@pytest.fixture(scope="session")
def user_cache_untouched():
    """The temporary folder standing in for every user cache during the tests."""
    return Path(_TMP)
