"""Local Hugging Face model folders, read without running anything from them.

Every option that takes a ``save_pretrained`` folder (``omni sample --model hf-lm:DIR | hf-cls:DIR``,
``profile --lm DIR``, ``profile --classifier DIR``) goes through :func:`read_model_folder` and
:meth:`ModelFolder.load`, which trust the folder's files as data only:

- ``config.json`` is read as JSON first (nothing is imported). A config (or ``tokenizer_config.json``) with
  an ``auto_map`` names Python code of its own: refused -- evalsift never passes ``trust_remote_code``.
- Weights are read from **safetensors** only (``model.safetensors``, or the shards a
  ``model.safetensors.index.json`` lists; ``use_safetensors=True``). A folder whose weights are a pickle
  (``pytorch_model.bin``, ``*.pt``, ``*.ckpt``, ...) is refused, saying how to convert it where the file is
  trusted: unpickling runs code, and evalsift does not unpickle what a user hands it.
- The config's padding id must lie inside its vocabulary (the adapters check the other ids they use).
- :meth:`ModelFolder.require` refuses a folder that is not what the option needs, saying what it is (the
  config's ``architectures`` and ``model_type``): a BERT classifier given as a causal LM, a GPT-2 given as a
  sequence classifier.
- ``load(..., complete=True)`` refuses a checkpoint that lacks weights the model needs (transformers would
  initialise them at random: a BERT's missing language-model head, a causal LM's missing classification
  head).

:meth:`ModelFolder.fingerprint` is the SHA-256 of the files that make the model (config, weights, tokenizer),
computed without loading anything: ``omni.json`` records it, and ``omni curve --normalise cross-model`` checks
it before it loads a model again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DataError

SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
"""The weight files read: safetensors (one file, or an index of shards)."""
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
"""Weight files that are pickles (``pytorch_model.bin`` and its kin): never loaded."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "vocab.txt", "merges.txt",
                   "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "special_tokens_map.json",
                   "added_tokens.json")
"""A tokenizer's files (any of them); their bytes are part of :meth:`ModelFolder.fingerprint`."""
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                    "tokenizer.model")
"""The files a tokenizer needs one of (its vocabulary: fast JSON, WordPiece, BPE or SentencePiece); without one
transformers would make up an empty tokenizer."""
TOKEN_ID_KEYS = ("pad_token_id",)
"""The config's token ids checked against its vocabulary when the folder is read: the padding id is the embedding's
padding index when the model is built (out of range, torch fails inside transformers). The ids an adapter uses
(hf-lm's beginning-of-sequence token) are checked where they are used; an unused out-of-range id (GPT-2's
default 50256 left in a small model's config) is harmless."""
KINDS = {
    "causal-lm": (("ForCausalLM", "LMHeadModel"), "a causal language model (an architecture such as GPT2LMHeadModel "
                                                 "or LlamaForCausalLM)"),
    "sequence-classifier": (("ForSequenceClassification",), "a sequence classifier (an architecture such as "
                                                            "BertForSequenceClassification)"),
    "encoder": ((), "an encoder to fine-tune (a BERT-style checkpoint: BertModel, BertForMaskedLM, "
                    "...ForSequenceClassification)"),
}
"""What an option needs: the endings of the architecture names that are one, and how a message names it."""
_GENERATIVE = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


@dataclass(frozen=True)
class ModelFolder:
    """A local model folder whose files were checked (see the module doc). ``option``: how messages name where
    it came from (``--model hf-lm:DIR``, ``--classifier``); ``field``: the errors' field."""

    path: Path
    option: str
    config: dict
    weights: tuple[str, ...]
    field: str = "model"

    @property
    def architectures(self) -> list[str]:
        """The config's ``architectures`` (may be empty)."""
        a = self.config.get("architectures") or []
        return [str(x) for x in a] if isinstance(a, list) else [str(a)]

    @property
    def model_type(self) -> str | None:
        v = self.config.get("model_type")
        return str(v) if v else None

    def what(self) -> str:
        """What the folder holds, from its config: 'a GPT2LMHeadModel (model_type gpt2)'."""
        kind = f"model_type {self.model_type}" if self.model_type else "no model_type"
        if self.architectures:
            return f"a {', '.join(self.architectures)} ({kind})"
        return f"a model with {kind} (its config names no architecture)"

    @property
    def vocab_size(self) -> int | None:
        v = self.config.get("vocab_size")
        if v is None and isinstance(self.config.get("text_config"), dict):
            v = self.config["text_config"].get("vocab_size")
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def positions(self) -> int | None:
        """How many positions the model has (``n_positions`` / ``max_position_embeddings`` / ``n_ctx``), or None."""
        for k in ("n_positions", "max_position_embeddings", "n_ctx", "max_seq_len", "seq_length"):
            v = self.config.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return None

    def require(self, kind: str, *, instead: str = "") -> None:
        """Refuse the folder when its config's architectures say it is not ``kind`` (a key of :data:`KINDS`),
        naming what it is; ``instead``: what to use for what it is (e.g. "for a classifier use hf-cls:DIR").
        A config that names no architecture passes (the load's completeness check is the guard then)."""
        endings, name = KINDS[kind]
        arch = self.architectures
        if not arch:
            return
        if kind == "encoder":
            ok = not all(a.endswith(_GENERATIVE) for a in arch)
        else:
            ok = any(a.endswith(endings) for a in arch)
        if not ok:
            raise DataError(f"{self.option}: {self.path} holds {self.what()}, not {name}" +
                            (f"; {instead}" if instead else ""), field=self.field)

    def fingerprint(self) -> str:
        """SHA-256 (16 hex digits) of the names and bytes of the files that make the model: config.json, the
        safetensors weights and the tokenizer's files. Nothing is loaded."""
        h = hashlib.sha256()
        names = ["config.json", *self.weights, *sorted(f for f in TOKENIZER_FILES if (self.path / f).is_file())]
        for name in names:
            h.update(name.encode() + b"\0")
            with open(self.path / name, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
        return h.hexdigest()[:16]

    def has_tokenizer(self) -> bool:
        """Whether the folder holds a tokenizer's vocabulary (else transformers would make up an empty one)."""
        return any((self.path / f).is_file() for f in VOCABULARY_FILES)

    def load(self, auto_class: Any, *, complete: bool = True, purpose: str = "", **kwargs: Any) -> Any:
        """The model, loaded by ``auto_class.from_pretrained`` (e.g. ``AutoModelForCausalLM``) from this folder
        only: offline, safetensors only, no remote code, transformers' messages hidden. ``complete``: refuse a
        checkpoint that lacks weights the model needs (they would be random); ``purpose``: what they are for,
        in that message (e.g. 'the language-model head'). ``kwargs`` go to ``from_pretrained``."""
        with _quiet_load():
            try:
                model, info = auto_class.from_pretrained(str(self.path), local_files_only=True, use_safetensors=True,
                                                         trust_remote_code=False, output_loading_info=True, **kwargs)
            except (OSError, ValueError, KeyError, TypeError, RuntimeError, AssertionError, IndexError) as e:
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise DataError(f"{self.option}: cannot load {self.what()} from {self.path} with "
                                f"{getattr(auto_class, '__name__', auto_class)} ({why})", field=self.field) from None
        missing = sorted(info.get("missing_keys") or [])
        if complete and missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            raise DataError(f"{self.option}: {self.path} holds {self.what()}; its checkpoint has no weights for "
                            f"{shown}{' (' + purpose + ')' if purpose else ''}, which would run with random values. "
                            "Give a folder whose checkpoint has them (the model saved with save_pretrained after "
                            "training it for this)", field=self.field)
        return model

    def tokenizer(self, *, required: bool = False) -> Any:
        """The folder's tokenizer (``AutoTokenizer``, offline, no remote code), or None when the folder has no
        vocabulary file (``required``: a DataError then)."""
        if not self.has_tokenizer():
            if required:
                raise DataError(f"{self.option}: {self.path} has no tokenizer files (tokenizer.json, vocab.txt, "
                                "vocab.json or a SentencePiece model); give a folder written by save_pretrained with "
                                "the model's tokenizer", field=self.field)
            return None
        from transformers import AutoTokenizer  # optional dependency

        with _quiet_load():
            try:
                return AutoTokenizer.from_pretrained(str(self.path), local_files_only=True, trust_remote_code=False)
            except (OSError, ValueError, KeyError, TypeError) as e:
                if not required:
                    return None
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise DataError(f"{self.option}: cannot load the tokenizer in {self.path} ({why})",
                                field=self.field) from None


def read_model_folder(path: Any, *, option: str, field: str = "model") -> ModelFolder:
    """The checked :class:`ModelFolder` at ``path`` (see the module doc for what is refused); ``option``: how
    messages name it, ``field``: the errors' field. Reads JSON only."""
    p = Path(str(path)).expanduser()
    saved = "give a local folder written by save_pretrained (config.json and safetensors weights; evalsift never " \
            "downloads models)"
    if not p.is_dir():
        raise DataError(f"{option}: {p} is not a folder; {saved}", field=field)
    if not (p / "config.json").is_file():
        raise DataError(f"{option}: {p} has no config.json; {saved}", field=field)
    config = _json(p / "config.json", option, field)
    if not isinstance(config, dict):
        raise DataError(f"{option}: {p / 'config.json'} is not a JSON object; {saved}", field=field)
    tok_config = p / "tokenizer_config.json"
    for name, cfg in (("config.json", config),
                      ("tokenizer_config.json", _json(tok_config, option, field) if tok_config.is_file() else {})):
        if isinstance(cfg, dict) and cfg.get("auto_map"):
            where = ", ".join(f"{k} -> {v}" for k, v in dict(cfg["auto_map"]).items()) \
                if isinstance(cfg["auto_map"], dict) else str(cfg["auto_map"])
            raise DataError(f"{option}: {p / name} names code of its own (auto_map: {where}); evalsift never runs "
                            "code from a model folder (no trust_remote_code). Give a model of an architecture "
                            "transformers itself ships", field=field)
    weights = _safe_weights(p, option, field)
    folder = ModelFolder(p, option, config, weights, field)
    _check_token_ids(folder)
    return folder


def _json(path: Path, option: str, field: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{option}: {path} is not valid JSON ({e})", field=field) from None


def _safe_weights(p: Path, option: str, field: str) -> tuple[str, ...]:
    """The safetensors files the model's weights are in (relative names); refuses pickled or missing weights."""
    index = p / "model.safetensors.index.json"
    if (p / "model.safetensors").is_file():
        return ("model.safetensors",)
    if index.is_file():
        d = _json(index, option, field)
        shards = sorted({str(v) for v in (d.get("weight_map") or {}).values()}) if isinstance(d, dict) else []
        bad = [s for s in shards if not s.endswith(".safetensors") or "/" in s or "\\" in s or s.startswith(".")]
        absent = [s for s in shards if s not in bad and not (p / s).is_file()]
        if not shards or bad or absent:
            what = "no shards" if not shards else "shards that are not safetensors files beside it: " + \
                ", ".join(bad or absent)
            raise DataError(f"{option}: {index} lists {what}", field=field)
        return ("model.safetensors.index.json", *shards)
    pickled = sorted(f.name for f in p.iterdir() if f.is_file() and f.name.endswith(PICKLE_SUFFIXES))
    if pickled:
        raise DataError(f"{option}: {p} holds its weights as a pickle ({', '.join(pickled)}), which evalsift does "
                        "not load: unpickling a file can run any code. Convert it once, where you trust the file: "
                        "load it with transformers and save_pretrained it again (safetensors is the default), then "
                        "give that folder", field=field)
    raise DataError(f"{option}: {p} has no model weights (model.safetensors, or model.safetensors.index.json and "
                    "its shards); give a folder written by save_pretrained", field=field)


def _check_token_ids(folder: ModelFolder) -> None:
    n = folder.vocab_size
    if n is None:
        return
    for key in TOKEN_ID_KEYS:
        v = folder.config.get(key)
        for i in (v if isinstance(v, list) else [v]):
            if isinstance(i, int) and not isinstance(i, bool) and not 0 <= i < n:
                raise DataError(f"{folder.option}: {folder.path / 'config.json'} gives {key} {i}, outside the "
                                f"model's vocabulary (0..{n - 1}); correct the config (or set it to null)",
                                field=folder.field)


OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@contextlib.contextmanager
def offline_hub() -> Iterator[None]:
    """Force Hugging Face offline mode during a model load, then restore the caller's settings.

    Sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` and, because ``huggingface_hub``
    reads those once at import, also its ``constants.HF_HUB_OFFLINE`` flag.
    """
    hub = _hub_constants()  # imported before the variables change, so it keeps the caller's view
    saved_flag = getattr(hub, "HF_HUB_OFFLINE", None)
    saved_env = {k: os.environ.get(k) for k in OFFLINE_VARS}
    os.environ.update({k: "1" for k in OFFLINE_VARS})
    if hub is not None:
        hub.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for k, v in saved_env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        if hub is not None:
            hub.HF_HUB_OFFLINE = saved_flag


def _hub_constants() -> Any:
    """``huggingface_hub.constants`` if installed, else ``None``."""
    try:
        import huggingface_hub.constants as constants  # optional dependency
    except ImportError:
        return None
    return constants


@contextlib.contextmanager
def quiet_transformers_progress() -> Iterator[None]:
    """Hide transformers' 'Loading weights' bar during a load (restored afterwards)."""
    try:
        from transformers.utils import logging as tlog  # optional dependency
    except ImportError:
        yield
        return
    was_enabled = tlog.is_progress_bar_enabled()
    tlog.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            tlog.enable_progress_bar()


@contextlib.contextmanager
def _quiet_load() -> Iterator[None]:
    """Offline (``HF_HUB_OFFLINE``), without transformers' progress bars and load reports (restored after)."""
    try:
        from transformers.utils import logging as tlog  # optional dependency
    except ImportError:  # pragma: no cover - callers import transformers first
        tlog = None
    verbosity = tlog.get_verbosity() if tlog is not None else None
    if tlog is not None:
        tlog.set_verbosity_error()
    try:
        with offline_hub(), quiet_transformers_progress():
            yield
    finally:
        if tlog is not None:
            tlog.set_verbosity(verbosity)


__all__ = ["KINDS", "ModelFolder", "offline_hub", "quiet_transformers_progress", "SAFE_WEIGHTS", "TOKENIZER_FILES", "VOCABULARY_FILES", "read_model_folder"]
