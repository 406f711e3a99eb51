"""Run a benchmark's independent tasks on several processes or a Ray cluster, with the same results.

Every benchmark sweep is a list of independent tasks -- a (pair, seed) test set in ``bench
pairwise`` and on real data in ``bench calibration``, a seed in ``bench subset``, a (gap, ties, run)
synthetic pool in ``bench calibration`` -- whose randomness comes only from the task's own seed.
:func:`run_tasks` maps a top-level function over them and returns the results **in task order**,
whoever ran them and whenever they finished; the caller then folds them in that order, exactly as
its serial loop did, so a run on N workers writes the same ``results.json`` as a run on one
(timings apart).

- ``jobs=1`` (``backend="local"``): in this process, one task after the other -- the serial run.
- ``jobs=N > 1``: ``N`` worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, ``spawn``
  start method: no fork of a process that may hold torch or BLAS threads). The inputs every task
  shares (``shared``: the pool, the oracle, the settings) reach each worker once, through the
  executor's initializer, never once per task.
- ``backend="ray"``: Ray tasks; ``shared`` goes to the object store once (``ray.put``) and each worker
  process deserializes it once. Ray connects to ``ray_address`` (or ``$RAY_ADDRESS``) when given --
  an existing cluster, ``ray://head:10001`` --, else starts a local runtime with ``jobs`` CPUs and
  stops it at the end; a runtime this process already started (``ray.init``) is used as it is.

With more than one worker, each worker's BLAS/OpenMP/torch pools are limited to one thread
(``OMP_NUM_THREADS`` etc., unless you set them yourself), so N workers use N cores, not N x cores.
The progress bar advances once per finished task, from any worker. Warnings raised in a task are
raised again here, in task order. An exception in a task stops the run and is raised here.

Finished tasks are not lost:

- a worker process that dies (killed, out of memory) breaks the executor; the tasks that had not
  finished run again on a fresh one, up to ``retries`` times (Ray retries its crashed workers'
  tasks itself);
- with a :class:`TaskJournal` (``bench ... --out DIR`` keeps ``DIR/tasks.jsonl``) every finished
  task's result is appended to a file as it arrives, so running the same command again -- after a
  crash, Ctrl-C or a machine that went down -- runs only the tasks that are not in it.

>>> def square(shared, x):
...     return shared["k"] * x * x
>>> run_tasks(square, [1, 2, 3], shared={"k": 2}, jobs=1)
[2, 8, 18]
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import logging
import multiprocessing
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import DataError, ParameterError, WorkerError, check_choice, missing_dependency
from . import codec

BACKENDS = ("local", "ray")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")

_SHARED: Any = None  # a worker process's copy of the shared inputs (set by _init_worker)
_RAY_SHARED: dict[str, Any] = {}  # a Ray worker's deserialized shared inputs, by object id (the latest only)
_LIMITED = False


def resolve_jobs(jobs: int | str | None) -> int:
    """``jobs`` as a number of workers: an integer >= 1, or 0 / ``"auto"`` / None for every core of
    this machine (the CPUs this process may run on)."""
    if jobs is None or jobs == "auto" or jobs == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 0:
        raise ParameterError(f"jobs must be a positive integer, 0 or 'auto' (every core), got {jobs!r}", field="jobs")
    return int(jobs)


def is_parallel(jobs: int | str | None, backend: str = "local") -> bool:
    """Whether :func:`run_tasks` would leave this process (so the shared inputs get pickled)."""
    return backend == "ray" or resolve_jobs(jobs) > 1


def workers_timing(jobs: int | str | None, backend: str, journal: "TaskJournal | None" = None) -> dict[str, Any]:
    """The ``timing_s`` entries that say how a run was spread: ``jobs`` (workers; ``"auto"`` for every
    CPU of a Ray cluster), ``backend`` and, with a journal, ``resumed_tasks`` (taken from it, not run).
    With more than one worker the per-part times of ``timing_s`` are sums over the workers
    (CPU-seconds); ``total`` stays the wall-clock time."""
    auto = backend == "ray" and (jobs is None or jobs == 0 or jobs == "auto")
    out: dict[str, Any] = {"jobs": "auto" if auto else resolve_jobs(jobs), "backend": backend}
    if journal is not None:
        out["resumed_tasks"] = journal.reused
    return out


def import_ray() -> Any:
    """The ``ray`` module, or the uniform error saying how to install it (``evalsift[ray]``)."""
    try:
        import ray
    except ImportError:
        raise missing_dependency("ray", "ray", "--backend ray") from None
    return ray


def run_tasks(fn: Callable[[Any, Any], Any], tasks: Sequence[Any], *, shared: Any = None, jobs: int | str | None = 1,
              backend: str = "local", ray_address: str | None = None,
              advance: Callable[[int], None] | None = None, journal: "TaskJournal | None" = None,
              retries: int = 2) -> list[Any]:
    """``[fn(shared, task) for task in tasks]``, computed by ``jobs`` workers (see the module doc).

    ``fn`` must be a module-level function (workers import it by name) and, with more than one
    worker, ``shared``, the tasks and the results must pickle. ``advance(1)`` is called once per
    finished task (a progress bar's). Results come back in the order of ``tasks``. ``journal``: the
    tasks it holds are not run again (their results and warnings come from it) and every task that
    finishes is added to it. ``retries``: how often the unfinished tasks run again on a fresh
    executor after a worker process died (local backend; then :class:`~evalsift.errors.WorkerError`).
    """
    check_choice("backend", backend, BACKENDS, where="parallel run")
    n = resolve_jobs(jobs)
    tasks = list(tasks)
    step = advance or (lambda k=1: None)
    results: list[Any] = [None] * len(tasks)
    caught: list[list] = [[] for _ in tasks]
    keys = [journal.key(fn, task) for task in tasks] if journal is not None else []
    todo: dict[int, Any] = {}
    for i, task in enumerate(tasks):
        kept = journal.get(keys[i]) if journal is not None else None
        if kept is None:
            todo[i] = task
        else:
            results[i], caught[i] = kept
            step(1)

    def finished(i: int, out: tuple[Any, list]) -> None:
        results[i], caught[i] = out
        if journal is not None:
            journal.add(keys[i], tasks[i], out)
        step(1)

    if not todo:
        pass
    elif backend == "ray":
        _run_ray(fn, todo, shared, n if jobs not in (None, 0, "auto") else None, ray_address, finished)
    elif n == 1 or len(todo) <= 1:
        for i, task in todo.items():
            finished(i, _with_warnings(fn, shared, task))
    else:
        _run_processes(fn, todo, shared, min(n, len(todo)), finished, retries)
    for c in caught:
        _reraise_warnings(c)
    return results


JOURNAL_FORMAT = 2  # 2: results in tagged JSON (evalsift.bench.codec); 1 (no "format" field): pickled, refused


class TaskJournal:
    """The finished tasks of a sweep, kept in an append-only JSONL file: one line per task,
    ``{"settings", "key", "task", "result"}``, written and fsynced as the task's result arrives.

    ``key`` is a SHA-256 of the task function's name, the task, ``settings`` (anything JSON-able
    that decides the results: the command's options and a digest of its data, :func:`pool_digest`)
    and the source of the evalsift package that runs (:func:`code_digest`), so a run with other
    settings or changed code never takes a result from a different one (``settings``: a digest of
    those; other settings' lines are kept, unused). ``result`` is the task's ``(result, warnings)`` in
    tagged JSON (:mod:`evalsift.bench.codec`: plain values, tuples, numpy arrays, warning categories
    from a fixed list), so reading the file never runs code, whoever wrote it -- a line edited by
    someone else can at worst change a number, as an edit of ``results.json`` could. A line of the
    journal's first format (a pickle, which could run code when read) is refused, never read: the
    error says to delete the file. A last line cut short by a crash is dropped. ``reused``: how many
    tasks :meth:`get` answered.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tasks.jsonl"
    >>> square = lambda shared, x: x * x
    >>> run_tasks(square, [1, 2], journal=TaskJournal(path, {"k": 1}))
    [1, 4]
    >>> len(TaskJournal(path, {"k": 1})), len(TaskJournal(path, {"k": 2}))   # other settings: nothing kept
    (2, 0)
    """

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        self.path = Path(path)
        self._salt = json.dumps({"settings": settings, "code": code_digest()}, sort_keys=True, default=repr)
        self._settings = hashlib.sha256(self._salt.encode("utf-8")).hexdigest()
        self._done: dict[str, tuple[Any, list]] = {}
        self.reused = 0
        if self.path.is_file():
            self._read()

    def _read(self) -> None:
        raw = self.path.read_bytes()
        end = raw.rfind(b"\n") + 1
        if end < len(raw):  # a line cut short by a crash: drop it, so the next line starts clean
            with open(self.path, "r+b") as f:
                f.truncate(end)
        for lineno, line in enumerate(raw[:end].splitlines(), 1):
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict) or rec.get("format") != JOURNAL_FORMAT:
                    raise DataError(
                        f"{self.path}: line {lineno} was written by an older evalsift, which stored each task's "
                        "result as a pickle (reading one back can run code, so it is never read); delete the file "
                        "(or the --out folder) and run the command again: every task runs anew", field="out")
                if rec["settings"] == self._settings:
                    out = codec.decode(rec["result"])
                    if type(out) is not tuple or len(out) != 2 or type(out[1]) is not list or not all(
                            type(w) in (tuple, list) and len(w) == 2 and type(w[0]) is str and isinstance(w[1], type)
                            for w in out[1]):
                        raise codec.CodecError("not a (result, [(message, warning class), ...]) pair")
                    self._done[rec["key"]] = out
            except DataError:
                raise
            except Exception as e:  # noqa: BLE001 - any unreadable line: say which, and how to start over
                raise DataError(f"{self.path}: line {lineno} is not a finished task ({type(e).__name__}: {e}); delete "
                                f"the file to run every task again", field="out") from None

    def key(self, fn: Callable, task: Any) -> str:
        """The task's key: its function, the task and the journal's settings."""
        text = json.dumps([f"{fn.__module__}.{fn.__qualname__}", task], default=repr) + self._salt
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, key: str) -> tuple[Any, list] | None:
        """``(result, warnings)`` of a finished task, or None."""
        out = self._done.get(key)
        self.reused += out is not None
        return out

    def add(self, key: str, task: Any, out: tuple[Any, list]) -> None:
        """Append a finished task (flushed and fsynced before returning)."""
        line = json.dumps({"format": JOURNAL_FORMAT, "settings": self._settings, "key": key,
                           "task": json.loads(json.dumps(task, default=repr)), "result": codec.encode(out)},
                          allow_nan=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._done[key] = out

    def __len__(self) -> int:
        return len(self._done)


_CODE_DIGEST: str | None = None


def code_digest() -> str:
    """A SHA-256 of every ``.py`` file of the evalsift package that runs (names and contents)."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
        _CODE_DIGEST = h.hexdigest()
    return _CODE_DIGEST


def pool_digest(pool: Any) -> str | None:
    """A SHA-256 of what a benchmark reads from a Pool (ids, systems, inputs, outputs, every score
    matrix and which metrics are human), for :class:`TaskJournal` settings; None for no pool."""
    if pool is None:
        return None
    h = hashlib.sha256()

    def text(values: Any) -> None:
        h.update(json.dumps([v if isinstance(v, (str, int, float, type(None))) else repr(v) for v in values]).encode())

    text([pool.name, *pool.item_ids, *pool.systems])
    text(pool.inputs)
    for s in pool.systems:
        text(pool.outputs[s])
    for m in sorted(pool.metrics):
        text([m, pool.is_human(m)])
        h.update(np.ascontiguousarray(pool.scores[m], dtype=np.float64).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------------- processes
@contextlib.contextmanager
def _thread_env() -> Iterator[None]:
    """One BLAS/OpenMP thread in the worker processes started meanwhile (they copy this environment
    at start, before they import numpy or torch); values the user set are kept."""
    saved = {k: os.environ.get(k) for k in THREAD_VARS}
    for k in THREAD_VARS:
        os.environ.setdefault(k, "1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _limit_threads() -> None:
    """In a worker: thread pools already loaded (numpy's BLAS by an import of the main module), and
    torch when imported, down to ``OMP_NUM_THREADS`` (1 unless the user set it)."""
    global _LIMITED
    if _LIMITED:
        return
    _LIMITED = True
    threads = int(os.environ.get("OMP_NUM_THREADS") or 1)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except Exception:  # noqa: BLE001 - threadpoolctl comes with scikit-learn; without it the env vars do the job
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def _init_worker(shared: Any) -> None:
    global _SHARED
    for k in THREAD_VARS:  # for what the worker imports later (torch reads OMP_NUM_THREADS then)
        os.environ.setdefault(k, "1")
    _limit_threads()
    _SHARED = shared


def _call(fn: Callable[[Any, Any], Any], task: Any) -> tuple[Any, list]:
    return _with_warnings(fn, _SHARED, task)


def _with_warnings(fn: Callable[[Any, Any], Any], shared: Any, task: Any) -> tuple[Any, list]:
    """``fn(shared, task)`` and the warnings it raised (message, category), to raise again in the caller."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(shared, task)
    return result, [(str(w.message), w.category) for w in caught]


def _reraise_warnings(caught: list) -> None:
    for message, category in caught:
        warnings.warn(message, category if isinstance(category, type) and issubclass(category, Warning)
                      else UserWarning, stacklevel=3)


def _run_processes(fn, todo: dict[int, Any], shared, n, finished, retries: int) -> None:
    """Run ``todo`` (task index -> task) on ``n`` spawned workers, ``finished(i, (result, warnings))``
    as each arrives. A worker that dies breaks the executor: the tasks still unfinished run again on a
    fresh one, at most ``retries`` times."""
    pending = dict(todo)
    for attempt in range(retries + 1):
        lost = False
        # the workers start when tasks are submitted: the environment they copy is set until the end
        with _thread_env(), cf.ProcessPoolExecutor(max_workers=min(n, len(pending)),
                                                   mp_context=multiprocessing.get_context("spawn"),
                                                   initializer=_init_worker, initargs=(shared,)) as ex:
            futures = {ex.submit(_call, fn, task): i for i, task in pending.items()}
            try:
                for fut in cf.as_completed(futures):
                    i = futures[fut]
                    try:
                        out = fut.result()
                    except cf.process.BrokenProcessPool:  # a worker died: the others' results still arrive
                        lost = True
                        continue
                    del pending[i]
                    finished(i, out)
            except BaseException:
                ex.shutdown(wait=True, cancel_futures=True)
                raise
        if not lost:
            return
    raise WorkerError(f"a worker process died (killed, or out of memory) {retries + 1} times; {len(pending)} of "
                      f"{len(todo)} tasks did not finish. Use fewer --jobs (less memory at once); with --out the "
                      "finished tasks are kept in its tasks.jsonl and the same command resumes from them",
                      field="jobs")


# ------------------------------------------------------------------------------------------ ray
def _ray_call(fn: Callable[[Any, Any], Any], ref: list, task: Any, version: str) -> tuple[Any, list]:
    """A Ray task: ``fn(shared, task)`` with the shared inputs taken from the object store once per
    worker process. ``ref`` is a one-element list so that Ray hands over the reference, not the object."""
    import ray

    from .. import __version__

    if version != __version__:
        raise ParameterError(f"a Ray worker runs evalsift {__version__}, this process {version}: install the same "
                             "evalsift version on every node of the cluster")
    _limit_threads()
    key = ref[0].hex()
    if key not in _RAY_SHARED:
        _RAY_SHARED.clear()
        _RAY_SHARED[key] = ray.get(ref[0])
    return _with_warnings(fn, _RAY_SHARED[key], task)


@contextlib.contextmanager
def ray_session(cpus: int | None = None, address: str | None = None) -> Iterator[tuple[Any, bool]]:
    """Ray, ready to take work, and whether this call started a local runtime: ``(ray, local)``.

    A runtime this process already started (``ray.init``) is used as it is; else Ray connects to
    ``address`` (or ``$RAY_ADDRESS``) -- an existing cluster, ``ray://head:10001``, ``auto`` --; else
    a local runtime with ``cpus`` CPUs (every core when None) starts. What this call started is
    stopped at the end. The workers' BLAS/OpenMP pools get one thread (``THREAD_VARS``, unless set).
    Without Ray installed: the uniform error saying how to install it (:func:`import_ray`).
    """
    ray = import_ray()
    started = local = False
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        opts = {"runtime_env": {"env_vars": {k: os.environ.get(k, "1") for k in THREAD_VARS}}, "log_to_driver": False}
        if address:  # an existing cluster
            ray.init(address=address, logging_level=logging.WARNING, **opts)
        else:  # a local runtime with ``cpus`` CPUs; its own notes (start-up, the token it generates for
            # itself) concern nobody once it is stopped
            ray.init(num_cpus=cpus or resolve_jobs(None), include_dashboard=False, logging_level=logging.ERROR, **opts)
            local = True
        started = True
    try:
        yield ray, local
    finally:
        if started:
            ray.shutdown()


def _run_ray(fn, todo: dict[int, Any], shared, cap, address, finished) -> None:
    from .. import __version__

    with ray_session(cap, address) as (ray, local):
        if local:  # Ray's scheduler keeps the runtime's ``cap`` CPUs busy
            cap = None
        _run_ray_tasks(ray, fn, todo, shared, cap, finished, __version__)


def _run_ray_tasks(ray, fn, todo: dict[int, Any], shared, cap, finished, version: str) -> None:
    """Submit ``todo`` as Ray tasks, at most ``cap`` at once (None: 4 per CPU of the cluster)."""
    if cap is None:  # keep every CPU of the runtime busy, with a few tasks queued behind each
        cap = 4 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    remote = ray.remote(num_cpus=1)(_ray_call)
    ref = ray.put(shared)
    waiting = list(todo.items())[::-1]
    running: dict[Any, int] = {}
    while waiting or running:
        while waiting and (cap is None or len(running) < cap):
            i, task = waiting.pop()
            running[remote.remote(fn, [ref], task, version)] = i
        done, _ = ray.wait(list(running), num_returns=1)
        for obj in done:
            i = running.pop(obj)
            try:
                out = ray.get(obj)
            except ray.exceptions.RayTaskError as e:  # the task's own exception, not Ray's wrapper
                for other in running:
                    ray.cancel(other)
                raise (e.cause if isinstance(getattr(e, "cause", None), BaseException) else e) from None
            finished(i, out)


# ------------------------------------------------------------------------------- shipped vectors
class ShippedEncoder:
    """An encoder that answers from vectors computed in the main process (under the wrapped
    encoder's ``cache_key``), so that workers -- on this machine or a Ray cluster -- use exactly the
    main process's vectors (a neural encoder's output changes in its last bits with the batch a text
    was encoded in) without loading the model. Texts it was not given are encoded by ``base``.

    Only for encoders whose vector of a text does not depend on the other texts (``cacheable``):
    see :func:`shippable_encoder`.
    """

    cacheable = True
    takes_argument = False

    def __init__(self, base: Any, texts: Sequence[str], vectors: np.ndarray) -> None:
        from ..embed import get_encoder

        enc = get_encoder(base)
        self.base = base if isinstance(base, str) else _without_model(base)
        self.name = getattr(enc, "name", str(base))
        self.cache_key = enc.cache_key
        self.dim = vectors.shape[1] if len(vectors) else getattr(enc, "dim", None)
        self.vectors = {t: v for t, v in zip(texts, np.asarray(vectors, dtype=np.float32))}

    def encode(self, texts: list[str]) -> np.ndarray:
        from ..embed import get_encoder

        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, np.asarray(get_encoder(self.base).encode(missing), dtype=np.float32)))
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return f"ShippedEncoder({self.name!r}, {len(self.vectors)} texts)"


def _without_model(encoder: Any) -> Any:
    """A shallow copy of an encoder object without a loaded model (``_model``), so that pickling it
    for the workers does not carry the weights; it loads again where it is needed."""
    if getattr(encoder, "_model", None) is None:
        return encoder
    import copy

    light = copy.copy(encoder)
    light._model = None
    return light


def shippable_encoder(encoder: Any, texts: Sequence[str] | None = None, vectors: np.ndarray | None = None) -> Any:
    """The encoder to hand to workers: for a cacheable encoder whose vectors of ``texts`` were computed
    here, a :class:`ShippedEncoder` carrying them; otherwise the encoder itself (a name, or an
    object without its loaded model). Corpus-dependent encoders (``tfidf``: ``cacheable = False``)
    are passed as they are -- they re-fit on each call's texts, deterministically --, and so are
    encoders that serve stored vectors (``memoize = False``: ``--embeddings FILE``)."""
    from ..embed import get_encoder

    enc = get_encoder(encoder)
    ship = getattr(enc, "cacheable", True) and getattr(enc, "memoize", True)
    if ship and texts is not None and vectors is not None and len(texts):
        return ShippedEncoder(encoder, texts, vectors)
    return encoder if isinstance(encoder, str) else _without_model(encoder)
