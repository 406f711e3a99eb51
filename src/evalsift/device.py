"""Where evalsift's neural models run: one device setting for the encoders, OmniInput and transparency.

A device spec is ``auto`` (CUDA when torch sees a GPU, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.
Every command that runs a neural model takes it as ``--device`` (default ``auto``); the library takes
it as a ``device=`` argument, and anything given none follows the process default
(:func:`set_default_device`, or the ``EVALSIFT_DEVICE`` environment variable, which worker processes
inherit).

Nothing here imports torch until a device has to be resolved, and ``auto`` without torch is the CPU,
so commands that run no neural model (TF-IDF, precomputed vectors) pay nothing for the option.

:func:`record_use` notes each model that ran and where (and in which precision); :func:`device_report`
is what commands print and write into ``results.json`` / ``omni.json``.

>>> check_device_spec("cuda:1")
'cuda:1'
>>> check_device_spec("gpu")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
evalsift.errors.ParameterError: --device gpu: expected auto, cpu, cuda or cuda:N (N a GPU index, e.g. cuda:0)
>>> resolve_device("cpu")
'cpu'
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from .errors import ParameterError

ENV = "EVALSIFT_DEVICE"
_SPEC = re.compile(r"auto|cpu|cuda(?::\d+)?")
_uses: list[dict[str, Any]] = []


def check_device_spec(spec: str) -> str:
    """``spec`` when it is a valid device spec, else a ParameterError naming ``--device`` and the forms."""
    text = str(spec).strip().lower()
    if not _SPEC.fullmatch(text):
        raise ParameterError(f"--device {spec}: expected auto, cpu, cuda or cuda:N (N a GPU index, e.g. cuda:0)",
                             field="device")
    return text


def default_device() -> str:
    """The process default spec: ``$EVALSIFT_DEVICE`` when set (checked), else ``auto``."""
    env = os.environ.get(ENV, "").strip()
    return check_device_spec(env) if env else "auto"


def set_default_device(spec: str | None) -> str:
    """Make ``spec`` the process default (and ``$EVALSIFT_DEVICE``, for worker processes); ``None`` keeps the
    current one. A CUDA spec is checked at once (one clear error without a GPU). Returns the spec."""
    if spec is None:
        return default_device()
    text = check_device_spec(spec)
    if text.startswith("cuda"):
        resolve_device(text)
    os.environ[ENV] = text
    return text


def _torch_or_none() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def resolve_device(spec: str | None = None) -> str:
    """The concrete device for ``spec`` (``None``: the process default): ``cpu`` or ``cuda:N``.

    ``auto`` is ``cuda:0`` when torch is installed and sees a GPU, else ``cpu``. ``cuda``/``cuda:N``
    without one is a ParameterError that says so and names the fix."""
    text = check_device_spec(spec) if spec is not None else default_device()
    if text == "cpu":
        return "cpu"
    torch = _torch_or_none()
    has_cuda = torch is not None and torch.cuda.is_available()
    if text == "auto":
        return "cuda:0" if has_cuda else "cpu"
    if not has_cuda:
        why = ("torch is not installed" if torch is None else
               f"torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False"
               + ("; this is a CPU-only build of torch)" if not torch.version.cuda else ")"))
        raise ParameterError(f"--device {text}: {why}; use --device cpu, or auto to take a GPU only when there is one",
                             field="device")
    index = int(text.split(":")[1]) if ":" in text else 0
    count = torch.cuda.device_count()
    if index >= count:
        raise ParameterError(f"--device {text}: torch sees {count} GPU{'s' if count != 1 else ''} "
                             f"(cuda:0{f'..cuda:{count - 1}' if count > 1 else ''})", field="device")
    return f"cuda:{index}"


def is_cuda(device: str) -> bool:
    """True for a ``cuda:N`` device."""
    return str(device).startswith("cuda")


def device_name(device: str) -> str:
    """``device`` with what it is: ``cuda:0 (NVIDIA H100 80GB HBM3)`` or ``cpu (2 threads)``."""
    if is_cuda(device):
        torch = _torch_or_none()
        try:
            return f"{device} ({torch.cuda.get_device_name(int(device.split(':')[1]))})"
        except Exception:  # noqa: BLE001 - the name is decoration
            return device
    torch = _torch_or_none()
    threads = torch.get_num_threads() if torch is not None else os.cpu_count()
    return f"cpu ({threads} threads)"


def record_use(what: str, device: str, precision: str = "fp32") -> None:
    """Note that ``what`` (a model) ran on ``device`` in ``precision``; :func:`device_report` lists these."""
    entry = {"model": str(what), "device": str(device), "precision": str(precision)}
    if entry not in _uses:
        _uses.append(entry)


def reset_uses() -> None:
    """Forget the recorded uses (a command starts with none)."""
    _uses.clear()


def device_report(spec: str | None = None) -> dict[str, Any]:
    """``{"requested": spec, "used": [...models and where they ran...], "summary": one line}``.

    ``used`` is empty when no neural model ran (everything ran on the CPU in numpy / scikit-learn)."""
    requested = check_device_spec(spec) if spec is not None else default_device()
    used = [dict(u) for u in _uses]
    if used:
        where = sorted({u["device"] for u in used})
        summary = "; ".join(f"{u['model']} on {device_name(u['device']) if len(where) == 1 else u['device']}"
                            f" ({u['precision']})" for u in used)
    else:
        summary = "no neural model ran in this process (numpy / scikit-learn on the CPU)"
    return {"requested": requested, "used": used, "summary": summary}


__all__ = ["ENV", "check_device_spec", "default_device", "device_name", "device_report", "is_cuda", "record_use",
           "reset_uses", "resolve_device", "set_default_device"]


def one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which BLAS runs single-threaded. For work made of many small matrix products
    (L-BFGS-B's steps, a bootstrap's resample means) threads gain nothing, and on a busy machine
    OpenBLAS's thread hand-offs cost more than the product: a 16 x 100 IRT fit took 0.45 s against
    0.044 s, and a (256 x 184) @ (184 x 12) product 321 us against 52 us. No-op without threadpoolctl
    (a scikit-learn dependency)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
