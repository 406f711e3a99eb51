"""Where the real evaluation data is, and what a test does when it is missing.

``DATA_ROOT`` is ``$EVALSIFT_DATA`` or ``../shared/data`` beside the checkout. :func:`need` skips a test
with a clear reason when a file it reads is absent -- or fails it when ``EVALSIFT_REQUIRE_DATA=1``
(CI sets this, so a missing data folder cannot pass as a green run of skipped tests).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA_ROOT = Path(os.environ.get("EVALSIFT_DATA", "").strip() or Path(__file__).resolve().parents[2] / "shared" / "data")
REQUIRE = os.environ.get("EVALSIFT_REQUIRE_DATA", "") not in ("", "0")


def need(*relative: str | Path) -> Path:
    """``DATA_ROOT / relative[0]`` after checking every path exists (skip, or fail under REQUIRE)."""
    paths = [DATA_ROOT / r for r in relative]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        reason = (f"real data not found: {', '.join(missing)} (set EVALSIFT_DATA to the shared data folder; "
                  "see its README)")
        if REQUIRE:
            pytest.fail(reason + " -- EVALSIFT_REQUIRE_DATA=1 makes this a failure", pytrace=False)
        pytest.skip(reason)
    return paths[0]
