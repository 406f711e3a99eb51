"""A sampler's resumable state: the checkpoint on disk and Ctrl-C turned into a stop between steps.

A checkpoint is one generation in one file, ``checkpoint.npz``: the arrays, and the settings and scalars as
JSON in its ``__meta__`` entry. It is written to a temporary file, flushed to disk, and put in place by one
rename, so a kill at any moment leaves the previous generation or the new one, never a mix. (Before, arrays
and scalars were two files replaced one after the other: a kill between the two renames paired new arrays
with old scalars.) A folder written by the two-file layout is still read.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError

CHECKPOINT = "checkpoint"
META = "__meta__"


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


def checkpoint_exists(folder: Path) -> bool:
    """Whether ``folder`` holds a sampler checkpoint (either layout)."""
    return (folder / (CHECKPOINT + ".npz")).is_file() or (folder / (CHECKPOINT + ".json")).is_file()


def load_checkpoint(folder: Path, settings: dict, model_info: dict | None = None) -> dict | None:
    """The state saved in ``folder`` (None when it holds none); a run with other ``settings`` is refused. When the
    model differs, ``model_info`` (the model's ``info`` now) is compared with the one the run recorded (in the
    checkpoint, or the folder's omni.json) and the message names what changed."""
    arrays_path, meta = folder / (CHECKPOINT + ".npz"), folder / (CHECKPOINT + ".json")
    if not checkpoint_exists(folder):
        return None
    try:
        with np.load(arrays_path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        saved = json.loads(str(arrays.pop(META))) if META in arrays else json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # torn (a full disk, a copy cut short)
        raise DataError(f"{arrays_path}: the checkpoint is torn or damaged and cannot be read ({type(e).__name__}: "
                        f"{e}). To recover: delete {arrays_path} and run the same 'evalsift omni sample' command "
                        "again (it starts that run over), or give another --out folder", field="out") from None
    if saved["settings"] != settings:
        diff = [k for k in ("sampler", "model", "space") if saved["settings"].get(k) != settings.get(k)]
        if "model" in diff:
            diff[diff.index("model")] = _model_change(folder, saved["scalars"].get("model_info"), model_info)
        diff += [f"{k}={saved['settings']['params'].get(k)!r} (now {v!r})" for k, v in settings["params"].items()
                 if saved["settings"]["params"].get(k) != v]
        raise DataError(f"{folder} holds a sampling run with other settings ({', '.join(diff) or 'different'}); use "
                        "another --out folder, or the same settings to resume it", field="out")
    scalars = saved["scalars"]
    return {"arrays": arrays, "scalars": scalars}


def _model_change(folder: Path, before: dict | None, now: dict | None) -> str:
    """What differs between the model a run recorded and the one given now, for the refusal to resume."""
    if before is None:
        try:  # a checkpoint written before it recorded the model: the folder's omni.json, when the run finished
            before = json.loads((folder / "omni.json").read_text(encoding="utf-8"))["model"]["info"]
        except (OSError, ValueError, KeyError, TypeError):
            before = None
    if not isinstance(before, dict) or not isinstance(now, dict):
        return "model (another model, its weights, or how it is loaded)"
    if before.get("adapter") == "hf-lm" and bool(before.get("per_token", False)) != bool(now.get("per_token")):
        return ("model: the run scored " + ("the per-token NLL" if before.get("per_token") else "the total NLL")
                + " and this command " + ("the per-token NLL (hf-lm's default): add --total to resume it"
                                          if now.get("per_token") else "the total NLL (--total): leave --total out"))
    keys = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k) and k != "token_ids"]
    shown = ", ".join(f"{k}={before.get(k)!r} (now {now.get(k)!r})" for k in keys[:4])
    return f"model ({shown})" if shown else "model (its weights differ)"


def save_checkpoint(folder: Path, settings: dict, state: dict) -> None:
    """Write the state as one generation: a temporary file with the arrays and the JSON, flushed to disk, then
    one rename (and the folder's entry flushed), so a kill leaves the old checkpoint or the new one."""
    from ...io._common import json_default

    folder.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"settings": settings, "scalars": state["scalars"]}, default=json_default)
    tmp = folder / (CHECKPOINT + ".tmp.npz")
    with open(tmp, "wb") as f:
        np.savez(f, **state["arrays"], **{META: np.array(meta)})
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / (CHECKPOINT + ".npz"))
    (folder / (CHECKPOINT + ".json")).unlink(missing_ok=True)  # the two-file layout's half, now stale
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


__all__ = ["CHECKPOINT", "checkpoint_exists", "deferred_interrupt", "load_checkpoint", "save_checkpoint"]
