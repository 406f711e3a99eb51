"""Fill the on-disk encoder cache, in this process or with Ray Data batch inference on a Ray cluster.

:func:`fill_cache` embeds the distinct texts that are not in the cache yet (:class:`~evalsift.embed.EmbeddingCache`,
the SQLite file every command reads) and stores their vectors there; nothing else is written.

- ``backend="local"``: in this process, in :func:`~evalsift.embed.embed_texts`' batches -- today's behaviour.
- ``backend="ray"``: a Ray Data pipeline, ``ray.data.from_items`` -> ``map_batches`` with a callable
  class (:class:`_EncodeBatch`) whose actors each load the encoder once. One actor per CPU of the
  cluster -- or per GPU, with ``num_gpus=1`` each, when the cluster has GPUs and ``device`` allows
  them --, unless ``workers`` says how many. Ray is started, joined or reused exactly as ``bench ...
  --backend ray`` does (:func:`evalsift.bench.parallel.ray_session`).

The driver alone writes the cache: it reads each batch's vectors as the pipeline yields them and
stores them in one transaction per batch (``INSERT OR IGNORE``), so the file never sees two writers
from one run, and a run that fails or is interrupted keeps the batches that finished and leaves the
rest of the cache as it was. Each dataset row is one encoder call's texts (the local run's batches:
texts sorted by length, 64 per call on the CPU, 1024 on a GPU), so a text is encoded in the same
batch as :func:`~evalsift.embed.embed_texts` would encode it on an empty cache.

Encoders whose vectors depend on the whole corpus (``tfidf``: ``cacheable = False``) and encoders
that serve stored vectors (``memoize = False``) are refused: there is nothing to cache.

>>> fill_cache(["a"], "tfidf")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
evalsift.errors.ParameterError: encoder 'tfidf' is never cached (a text's TF-IDF vector depends on ...
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from typing import Any, Iterable, Iterator

import numpy as np

from ..errors import DataError, EvalsiftError, ParameterError, check_choice
from ..progress import progress_bar
from .cache import _MEMO, EmbeddingCache, _clean_texts, _dedupe, _encode_missing, text_hash
from .encoders import EncoderLike, get_encoder

BACKENDS = ("local", "ray")
CPU_BATCH = 64  # texts per encoder call on a CPU worker (the sentence-transformers encoders' call_batch)
GPU_BATCH = 1024  # ... and on a GPU worker


def fill_cache(texts: Iterable[str | None], encoder: str | EncoderLike = "minilm", *, backend: str = "local",
               ray_address: str | None = None, device: str | None = None, workers: int | None = None,
               batch_size: int | None = None, cache_dir: str | os.PathLike[str] | None = None,
               progress: bool = True) -> dict[str, Any]:
    """Embed those of ``texts`` (distinct ones, ``None`` as ``""``) missing from the encoder cache, and store them.

    ``backend``: ``local`` (this process, :func:`~evalsift.embed.embed_texts`) or ``ray`` (Ray Data on the
    cluster at ``ray_address`` / ``$RAY_ADDRESS``, a runtime already started, else a local runtime; see the
    module doc). ``device``: where each worker's model runs (``auto``, ``cpu``, ``cuda``; ``None``: the process
    default); on Ray a GPU worker runs on the one GPU Ray gives it, whatever ``cuda:N`` says. ``workers``: Ray
    actors (default: every CPU, or every GPU, of the cluster). ``batch_size``: texts per encoder call (default
    64 on a CPU, 1024 on a GPU). ``cache_dir``: the cache folder (default: :func:`~evalsift.embed.default_cache_dir`).

    Returns ``{"texts", "cached_before", "embedded", "backend", "workers", "device", "seconds",
    "texts_per_s", "cache", "key"}`` (``texts_per_s``: embedded texts per second of wall time,
    start-up included; ``workers`` and ``device`` are those of the Ray actors, or ``1`` and the
    process device locally). Raises :class:`~evalsift.errors.DataError` when the cache cannot be written.
    """
    check_choice("backend", backend, BACKENDS, where="embed cache")
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise ParameterError(f"workers must be a positive integer (or None: every CPU/GPU of the cluster), "
                             f"got {workers!r}", field="workers")
    if batch_size is not None and (isinstance(batch_size, bool) or int(batch_size) < 1):
        raise ParameterError(f"batch_size must be >= 1, got {batch_size!r}", field="batch_size")
    if ray_address and backend != "ray":
        raise ParameterError("--ray-address needs --backend ray", field="ray_address")
    if backend == "ray":
        import_ray_data()
    enc = get_encoder(encoder)
    name = getattr(enc, "name", str(encoder))
    if not getattr(enc, "cacheable", True):
        raise ParameterError(f"encoder '{name}' is never cached (a text's TF-IDF vector depends on every other text "
                             "of the run), so there is nothing to fill; use a model encoder such as minilm or "
                             "st:<model>, or let each command compute TF-IDF itself", field="encoder")
    if not getattr(enc, "memoize", True):
        raise ParameterError(f"encoder '{name}' serves vectors stored in a file already; import them into the cache "
                             "with 'evalsift embed import FILE --encoder NAME' instead", field="encoder")
    start = time.perf_counter()
    unique, _ = _dedupe(_clean_texts(texts))
    cache = EmbeddingCache(cache_dir)
    cache.require_writable()
    key = enc.cache_key
    hashes = [text_hash(t) for t in unique]
    stored = cache.get_many(key, hashes)
    missing = [(t, h) for t, h in zip(unique, hashes) if h not in stored]
    info: dict[str, Any] = {"texts": len(unique), "cached_before": len(unique) - len(missing), "embedded": 0,
                            "backend": backend, "workers": 1, "device": None, "cache": str(cache.path), "key": key}
    if missing and backend == "local":
        _fill_here(enc, missing, cache, key, batch_size=batch_size, progress=progress)
        info.update(embedded=len(missing), device=getattr(enc, "_device", None) or "cpu")
    elif missing:
        info.update(_fill_on_ray(enc, encoder, missing, cache, key, ray_address=ray_address, device=device,
                                 workers=workers, batch_size=batch_size, progress=progress))
    if not cache.available:
        raise DataError(f"the embedding cache {cache.path} could not be written ({cache.disabled_reason}); set "
                        "EVALSIFT_CACHE to a writable folder and run again: the texts cached so far are kept",
                        field="cache")
    info["seconds"] = round(time.perf_counter() - start, 3)
    info["texts_per_s"] = round(info["embedded"] / info["seconds"], 2) if info["embedded"] and info["seconds"] else None
    return info


def _fill_here(enc: Any, missing: list[tuple[str, str]], cache: EmbeddingCache, key: str, *,
               batch_size: int | None, progress: bool) -> None:
    """Encode ``missing`` (text, hash) pairs in this process as :func:`~evalsift.embed.embed_texts` does (its
    batches), storing each batch on disk at once. The in-process memo is updated, never read: a vector computed
    earlier in this process under another cache folder is computed again for this one."""
    memo = _MEMO.setdefault(key, {})
    hashes = dict(missing)

    def store(batch: list[str], vecs: np.ndarray) -> None:
        memo.update(zip(batch, vecs))
        cache.put_many(key, [(hashes[t], v) for t, v in zip(batch, vecs)])

    _encode_missing(enc, list(hashes), batch_size, progress, on_batch=store)


# ------------------------------------------------------------------------------------------ Ray
def import_ray_data() -> Any:
    """The ``ray`` module with Ray Data importable, or the uniform error saying how to install them (the
    ``ray`` extra: ``ray[data]``, which brings pandas and pyarrow)."""
    from ..bench.parallel import import_ray
    from ..errors import missing_dependency

    ray = import_ray()
    try:
        import ray.data  # noqa: F401
    except ImportError as e:
        raise missing_dependency(e.name or "ray.data", "ray", "--backend ray (Ray Data batch inference)") from None
    return ray


class _EncodeBatch:
    """A Ray Data actor: loads the encoder once, then encodes one dataset row (one encoder call's texts) per call.

    Built by :func:`_actor_class` with the settings as class attributes (so nothing goes through the object
    store as constructor arguments)."""

    spec: Any = None
    device: str = "cpu"
    version: str = ""

    def __init__(self) -> None:
        # an error here would reach the driver as Ray's ActorDiedError, with the exception lost (and Ray Data
        # would start the actor again and again): keep it, and raise it on the first call, where it travels
        self.error: EvalsiftError | None = None
        try:
            self._start()
        except EvalsiftError as e:
            self.error = e

    def _start(self) -> None:
        from .. import __version__
        from ..bench.parallel import _limit_threads
        from ..device import set_default_device

        if self.version != __version__:
            raise ParameterError(f"a Ray worker runs evalsift {__version__}, this process {self.version}: install the "
                                 "same evalsift version on every node of the cluster")
        _limit_threads()
        set_default_device(self.device)  # checked here: a worker without the GPU it was promised says so
        self.encoder = get_encoder(self.spec)
        if hasattr(self.encoder, "load"):
            self.encoder.load()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            if self.error is not None:
                raise self.error
            return self._encode(batch)
        except EvalsiftError as e:  # Ray Data appends its retry notes to the message: keep the original with it
            e.evalsift_message = getattr(e, "evalsift_message", None) or str(e)
            raise

    def _encode(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, pos, vecs = [], [], []
        for row, texts in zip(batch["row"], batch["texts"]):
            texts = [bytes(t).decode("utf-8", "surrogatepass") for t in texts]
            out = np.asarray(self.encoder.encode(texts), dtype=np.float32)
            if out.ndim != 2 or out.shape[0] != len(texts):
                raise DataError(f"encoder '{getattr(self.encoder, 'name', self.spec)}' returned shape {out.shape} "
                                f"for {len(texts)} texts; expected ({len(texts)}, dim)")
            rows.append(np.full(len(texts), row, dtype=np.int64))
            pos.append(np.arange(len(texts), dtype=np.int64))
            vecs.append(out)
        return {"row": np.concatenate(rows), "pos": np.concatenate(pos), "vector": np.concatenate(vecs)}


def _actor_class(spec: Any, device: str) -> type:
    """A subclass of :class:`_EncodeBatch` carrying ``spec``, ``device`` and this evalsift's version."""
    from .. import __version__

    return type("EncodeBatch", (_EncodeBatch,), {"spec": spec, "device": device, "version": __version__,
                                                 "__module__": __name__})


def _fill_on_ray(enc: Any, encoder: Any, missing: list[tuple[str, str]], cache: EmbeddingCache, key: str, *,
                 ray_address: str | None, device: str | None, workers: int | None, batch_size: int | None,
                 progress: bool) -> dict[str, Any]:
    """Encode ``missing`` (text, hash) pairs with Ray Data; the driver stores each batch as it arrives."""
    from ..bench.parallel import _without_model, ray_session
    from ..device import check_device_spec, default_device

    spec = encoder if isinstance(encoder, str) else _without_model(enc)
    asked = check_device_spec(device) if device is not None else default_device()
    with ray_session(workers, ray_address) as (ray, _), _quiet_ray_data():
        import ray.data

        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
        if asked.startswith("cuda") and not gpus:
            raise ParameterError(f"--device {asked}: the Ray cluster has no GPU (resources: {cpus} CPUs); use "
                                 "--device cpu or auto", field="device")
        on_gpu = gpus > 0 and asked != "cpu"
        size = batch_size or (GPU_BATCH if on_gpu else CPU_BATCH)
        order = sorted(range(len(missing)), key=lambda i: len(missing[i][0]))  # as embed_texts: less padding
        batches = [order[s:s + size] for s in range(0, len(order), size)]
        n = min(workers or (gpus if on_gpu else cpus), len(batches))
        rows = [{"row": r, "texts": [missing[i][0].encode("utf-8", "surrogatepass") for i in idx]}
                for r, idx in enumerate(batches)]
        ds = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            _actor_class(spec, "cuda" if on_gpu else "cpu"), batch_size=1, batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=n), num_cpus=1, num_gpus=1 if on_gpu else 0)
        with progress_bar(len(missing), f"Embedding with {getattr(enc, 'name', 'encoder')} on Ray ({n} workers)",
                          quiet=None if progress else True) as advance:
            for out in _unwrapped(ray, ds.iter_batches(batch_size=None, batch_format="numpy")):
                pairs = [(missing[batches[r][p]][1], v) for r, p, v in zip(out["row"], out["pos"], out["vector"])]
                cache.put_many(key, pairs)
                advance(len(pairs))
    return {"embedded": len(missing), "workers": n, "device": "cuda" if on_gpu else "cpu"}


def _unwrapped(ray: Any, it: Iterator[Any]) -> Iterator[Any]:
    """``it``, with an evalsift error raised in a worker re-raised as itself rather than inside Ray's wrappers."""
    try:
        yield from it
    except Exception as e:  # noqa: BLE001 - unwrap what the worker raised; anything else goes on as it is
        cause = _evalsift_cause(e, ray.exceptions.RayError)
        if cause is not None:
            message = getattr(cause, "evalsift_message", None)
            if isinstance(message, str):
                cause.args = (message, *cause.args[1:])
            raise cause from None
        raise


def _evalsift_cause(exc: BaseException, wrapper: type | tuple[type, ...] = ()) -> BaseException | None:
    """The first :class:`~evalsift.errors.EvalsiftError` in ``exc``'s chain (causes, Ray's ``cause``) that is not
    also a ``wrapper`` (Ray's ``RayTaskError(DataError)`` is both), or None."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, EvalsiftError) and not isinstance(e, wrapper):
            return e
        for attr in ("cause", "__cause__", "__context__", "creation_task_error"):
            nxt = getattr(e, attr, None)
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return None


@contextlib.contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data without its progress bars, its INFO and ERROR lines on the terminal (its log file keeps them) and the
    deprecation notes it raises about its own settings: this command shows its own bar and one line. A worker's
    exception travels as itself (``raise_original_map_exception``, where this Ray has it; else Ray wraps it in a
    ``UserCodeException`` that loses it), and Ray Data's own report of it stays in its log file: the command
    reports it once. The settings are restored afterwards."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray(\.|$)")
        import ray.data  # configures the 'ray.data' logger: adjust it afterwards

        consoles = [h for h in logging.getLogger("ray.data").handlers if "File" not in type(h).__name__]
        levels = [h.level for h in consoles]
        ctx = ray.data.DataContext.get_current()  # the first call warns about its own deprecated settings
        settings = {k: v for k, v in (("enable_progress_bars", False), ("raise_original_map_exception", True))
                    if hasattr(ctx, k)}
        before = {k: getattr(ctx, k) for k in settings}
        try:
            for h in consoles:
                h.setLevel(logging.CRITICAL)
            for k, v in settings.items():
                setattr(ctx, k, v)
            yield
        finally:
            for h, level in zip(consoles, levels):
                h.setLevel(level)
            for k, v in before.items():
                setattr(ctx, k, v)


__all__ = ["BACKENDS", "fill_cache"]
