"""Shared fixtures, and isolation: tests never touch the user's caches.

Before anything is imported, the embedding cache (``EVALSIFT_CACHE``), the Hugging Face home, the
matplotlib config and the XDG cache are pointed at a temporary folder removed at the end of the run.
``data_dir``: the real evaluation data (``$EVALSIFT_DATA`` or ``../shared/data``); see ``_data.py``.

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

_TMP = tempfile.mkdtemp(prefix="evalsift-tests-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
for _var, _sub in (("EVALSIFT_CACHE", "evalsift"), ("HF_HOME", "huggingface"), ("MPLCONFIGDIR", "matplotlib"),
                   ("XDG_CACHE_HOME", "xdg")):
    os.environ[_var] = os.path.join(_TMP, _sub)
os.environ.pop("EVALSIFT_QUIET", None)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # inherited from a background launch; see the module doc
    signal.signal(signal.SIGINT, signal.default_int_handler)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DATA_ROOT  # noqa: E402


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Path of the shared real-data folder; use ``_data.need(...)`` to skip (or fail) when a part is absent."""
    return DATA_ROOT


@pytest.fixture(scope="session")
def user_cache_untouched():
    """The temporary folder standing in for every user cache during the tests."""
    return Path(_TMP)
