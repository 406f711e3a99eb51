"""A sampler's resumable state: the checkpoint on disk (arrays in ``checkpoint.npz``, settings and scalars in
``checkpoint.json``, written atomically) and Ctrl-C turned into a stop between steps."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError

CHECKPOINT = "checkpoint"


@contextlib.contextmanager
def deferred_interrupt(defer: bool = True):
    """Turn Ctrl-C (SIGINT) into a flag the sampling loop checks between steps (main thread only; elsewhere
    a KeyboardInterrupt stays immediate); a second Ctrl-C interrupts at once. Yields ``interrupted() -> bool``."""
    if not defer or threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    hit: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if hit:
            raise KeyboardInterrupt
        hit.append(signum)

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(hit)
    finally:
        signal.signal(signal.SIGINT, old)


def load_checkpoint(folder: Path, settings: dict) -> dict | None:
    """The state saved in ``folder`` (None when it holds none); a run with other ``settings`` is refused."""
    meta = folder / (CHECKPOINT + ".json")
    if not meta.is_file():
        return None
    try:
        saved = json.loads(meta.read_text(encoding="utf-8"))
        with np.load(folder / (CHECKPOINT + ".npz"), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise DataError(f"{folder}: the checkpoint cannot be read ({type(e).__name__}: {e}); delete "
                        f"{meta.name} and {CHECKPOINT}.npz to start over, or use another --out", field="out") from None
    if saved["settings"] != settings:
        diff = [k for k in ("sampler", "model", "space") if saved["settings"].get(k) != settings.get(k)]
        diff += [f"{k}={saved['settings']['params'].get(k)!r} (now {v!r})" for k, v in settings["params"].items()
                 if saved["settings"]["params"].get(k) != v]
        raise DataError(f"{folder} holds a sampling run with other settings ({', '.join(diff) or 'different'}); use "
                        "another --out folder, or the same settings to resume it", field="out")
    scalars = saved["scalars"]
    return {"arrays": arrays, "scalars": scalars}


def save_checkpoint(folder: Path, settings: dict, state: dict) -> None:
    """Write the state atomically: arrays first, then the JSON that points at them."""
    from ...io._common import json_default

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (CHECKPOINT + ".tmp.npz")
    np.savez(tmp, **state["arrays"])
    os.replace(tmp, folder / (CHECKPOINT + ".npz"))
    tmpj = folder / (CHECKPOINT + ".json.tmp")
    tmpj.write_text(json.dumps({"settings": settings, "scalars": state["scalars"]}, default=json_default),
                    encoding="utf-8")
    os.replace(tmpj, folder / (CHECKPOINT + ".json"))


__all__ = ["CHECKPOINT", "deferred_interrupt", "load_checkpoint", "save_checkpoint"]
