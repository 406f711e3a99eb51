"""A fine-tuned local sequence classifier (BERT-style) behind ``difficulty`` and ``ambiguity``: the paper's
model family instead of the default TF-IDF + logistic regression (``difficulty(..., classifier=PATH)``,
``ambiguity(..., classifier=PATH)``, ``evalsift profile --classifier DIR``).

Kovatchev & Lease (2024, Sec. 3 and App. A) fine-tune BERT models for two of their dimensions:

- **difficulty** is pointwise V-information (Ethayarajh, Choi & Swayamdipta, ICML 2022, Eq. 2, as the
  TF-IDF :func:`~.labels.pvi` cites it): a classifier ``g`` fine-tuned on (input, gold label) and a
  classifier ``g'`` fine-tuned with the same settings on (empty input, gold label);
  ``PVI(x -> y) = -log2 g'[null](y) + log2 g[x](y)`` (App. A fine-tunes both for 3 epochs:
  ``pvi_epochs``, default 3);
- **ambiguity** is the variability, over the epochs of one fine-tuning run, of the gold-label
  probability of items the model does not train on (App. A: "Finetune a BERT-large model for 10 epochs",
  predicting the held-out items after every epoch; Swayamdipta et al.'s dataset-cartography variability
  with ``include_ci``: ``epochs``, default 10).

:func:`finetune_dynamics` does both: the usable items are split in ``folds`` parts with the same seeded
(stratified) splits as the TF-IDF ``difficulty`` (:func:`~.crossfit._splits`); for each part, the models
are fine-tuned from the checkpoint on the *other* parts: ``g`` for ``epochs`` epochs, predicting the
held-out part after every epoch (the dynamics behind ``ambiguity``), and ``g`` and ``g'`` for
``pvi_epochs``, whose predictions (``g``'s for the input, ``g'``'s for the empty input) give the held-out
items' PVI. When ``pvi_epochs == epochs`` one ``g`` run serves both (its last epoch is the PVI's ``g``).
No item is scored by a model that trained on it.

The checkpoint is a folder written by ``save_pretrained`` (model and tokenizer), read through
:func:`evalsift.hf_folder.read_model_folder` (safetensors weights only, no ``auto_map``; a causal LM such
as GPT-2 is refused: PVI's null input is the empty string, which a GPT-2 tokenizer turns into no token at
all) and loaded with ``AutoModelForSequenceClassification`` / ``AutoTokenizer`` offline -- nothing is
downloaded. Its head is replaced by one with the task's number of classes when the sizes differ
(``ignore_mismatched_sizes=True``; a fresh head is initialised from ``seed``). Training and inference
run on :func:`evalsift.device.resolve_device` of ``device`` (``None``: the process default, which a
command's ``--device`` sets) in **fp32** throughout (no mixed precision, no half-precision weights).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError, missing_dependency
from .crossfit import _check_folds, _encode_labels, _splits
from .inputs import _item_parts, _nonempty

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
"""A checkpoint folder needs one of these (safetensors weights; pickled ``pytorch_model.bin`` is refused)."""
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model")
"""... and one of these (the tokenizer's vocabulary: fast JSON, WordPiece, BPE or SentencePiece)."""


@dataclass(frozen=True)
class FineTunedClassifier:
    """A local checkpoint folder and how to fine-tune it.

    ``path``: a folder written by ``save_pretrained`` (a BERT-style encoder and its tokenizer).
    ``epochs`` (default 10, App. A's for ambiguity): passes over the training parts of the run whose per-epoch
    predictions give ambiguity, an item's variability over these epochs (so at least 2).
    ``pvi_epochs`` (default 3, App. A's for PVI): the passes of ``g`` and ``g'`` behind PVI (at least 1; when
    equal to ``epochs`` one run serves both).
    ``batch_size`` (16), ``learning_rate`` (2e-5, AdamW without weight decay, decayed linearly to 0,
    gradients clipped to norm 1 -- the usual BERT fine-tuning recipe; the paper gives no values),
    ``max_length`` (128 tokens per input, at most the model's window; longer ones are truncated, a pair
    from its longer side).

    A path alone (``classifier="bert/"``) means these defaults.
    """

    path: str
    epochs: int = 10
    pvi_epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 2e-5
    max_length: int = 128

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", os.fspath(self.path))
        for name, low in (("epochs", 2), ("pvi_epochs", 1), ("batch_size", 1), ("max_length", 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                why = " (ambiguity is a variability over epochs)" if name == "epochs" else ""
                raise ParameterError(f"classifier: {name} must be an integer >= {low}{why}, got {v!r}.", field=name)
            object.__setattr__(self, name, int(v))
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating)) or not 0 < lr < 1:
            raise ParameterError(f"classifier: learning_rate must be a number in (0, 1), e.g. 2e-5, got {lr!r}.",
                                 field="learning_rate")
        object.__setattr__(self, "learning_rate", float(lr))

    def describe(self) -> str:
        """One line: what was fine-tuned and how (for results and notes)."""
        return (f"classifier {self.path} fine-tuned {self.epochs} epochs for ambiguity and {self.pvi_epochs} for "
                f"PVI (batch {self.batch_size}, lr {self.learning_rate:g}, max_length {self.max_length}, fp32)")


def as_classifier(value: Any) -> FineTunedClassifier:
    """``value`` as a :class:`FineTunedClassifier`: one already, or a folder path (the defaults)."""
    if isinstance(value, FineTunedClassifier):
        return value
    if isinstance(value, (str, os.PathLike)):
        return FineTunedClassifier(os.fspath(value))
    raise ParameterError(f"classifier: expected a local model folder (a path) or a FineTunedClassifier, got "
                         f"{type(value).__name__}.", field="classifier")


def check_classifier_folder(path: Any, name: str = "classifier") -> Path:
    """``path`` as a Path when it holds a sequence classifier's files (config.json, weights, tokenizer
    vocabulary); else a DataError naming the folder, what is missing and the fix. ``name``: how the
    message names the option (``--classifier`` on the command line). Nothing is downloaded."""
    p = Path(os.fspath(path))
    fix = ("give a folder written by save_pretrained (the model and its tokenizer, e.g. a BERT checkpoint); "
           "nothing is downloaded")
    if not p.is_dir():
        raise DataError(f"{name}: {str(p)!r} is not a folder; {fix}.", field="classifier")
    from ...hf_folder import PICKLE_SUFFIXES, read_model_folder

    missing = []
    if not (p / "config.json").is_file():
        missing.append("config.json")
    pickled = any(f.name.endswith(PICKLE_SUFFIXES) for f in p.iterdir() if f.is_file())
    if not any((p / f).is_file() for f in WEIGHT_FILES) and not pickled:  # a pickle: read_model_folder says why not
        missing.append("model weights (model.safetensors)")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        missing.append("tokenizer files (tokenizer.json, vocab.txt, vocab.json or a SentencePiece model)")
    if missing:
        raise DataError(f"{name}: the folder {str(p)!r} has no {' and no '.join(missing)}; {fix}.",
                        field="classifier")
    folder = read_model_folder(p, option=name, field="classifier")  # pickled weights, auto_map, bad token ids
    folder.require("encoder", instead="give an encoder checkpoint (BERT-style) to fine-tune as a classifier: PVI's "
                                      "null model reads the empty input, which a causal LM's tokenizer turns into no "
                                      "token at all")
    return p


@dataclass
class FineTuneRun:
    """What :func:`finetune_dynamics` recorded, one row per item (NaN where undefined).

    ``pvi``: PVI in bits, ``log2 g[x](y) - log2 g'[null](y)`` (high = easy, low or negative = hard);
    ``gold_probs``: items x epochs, the held-out gold-label probability after each epoch of ``g``;
    ``null_log2``: folds x classes, ``log2 g'[null](c)`` of each part's null model (NaN for a skipped part);
    ``classes``: the labels in class-index order; ``device``: where it ran; ``classifier``: the settings.
    """

    pvi: np.ndarray
    gold_probs: np.ndarray
    null_log2: np.ndarray
    classes: list[Any]
    device: str
    classifier: FineTunedClassifier
    folds: int
    skipped_folds: list[int] = field(default_factory=list)


_CACHE: dict[Any, FineTuneRun] = {}  # the last runs (numbers only, no model): difficulty and ambiguity share one
_CACHE_SIZE = 4


def _stamp(folder: Path) -> tuple:
    """The folder's files with size and modification time: a changed checkpoint is not served from cache."""
    return tuple(sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in folder.iterdir() if f.is_file()))


def _load(folder: Path, n_classes: int, seed: int) -> tuple[Any, Any]:
    """(tokenizer, fp32 model on the CPU with an ``n_classes`` head), from the local folder only (read through
    :func:`evalsift.hf_folder.read_model_folder`: safetensors, no remote code; the new head is expected, so the
    load does not insist on every weight)."""
    try:
        import torch
        from transformers import AutoModelForSequenceClassification
    except ImportError as e:
        raise missing_dependency(e.name or "transformers", "embed", "Fine-tuning a classifier") from None
    from ...hf_folder import read_model_folder

    checked = read_model_folder(folder, option="classifier", field="classifier")
    tokenizer = checked.tokenizer(required=True)
    torch.manual_seed(seed)  # the new head's initialisation
    model = checked.load(AutoModelForSequenceClassification, complete=False, num_labels=n_classes,
                         ignore_mismatched_sizes=True)
    if not tokenizer("", truncation=True, max_length=8).get("input_ids"):
        raise DataError(f"classifier: the tokenizer in {str(folder)!r} turns the empty input into no token at all "
                        f"({checked.what()}), so PVI's null model has nothing to read; give an encoder checkpoint "
                        "(BERT-style) whose tokenizer marks an input with special tokens ([CLS] ... [SEP]).",
                        field="classifier")
    model = model.float()
    if tokenizer.pad_token_id is None:  # GPT-style checkpoints: pad with end-of-text (masked anyway)
        if tokenizer.eos_token is None:
            raise DataError(f"classifier: the tokenizer in {str(folder)!r} has neither a padding nor an end token; "
                            "give a checkpoint whose tokenizer pads (BERT's [PAD]).", field="classifier")
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, model


def _window(max_length: int, tokenizer: Any, model: Any) -> int:
    """``max_length``, but no longer than the model's position embeddings and the tokenizer's own limit."""
    limit = int(max_length)
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limit = min(limit, positions)
    own = getattr(tokenizer, "model_max_length", None)
    if isinstance(own, int) and 0 < own < 1_000_000:  # "no limit" is a huge sentinel
        limit = min(limit, own)
    return limit


def _encode(tokenizer: Any, parts: tuple[str, ...], max_length: int) -> dict[str, list[int]]:
    """One item's token ids: a text alone, or its last text as the second segment after the others (a
    premise-hypothesis pair is BERT's sentence pair)."""
    if len(parts) == 1:
        enc = tokenizer(parts[0], truncation=True, max_length=max_length)
    else:
        enc = tokenizer(" ".join(parts[:-1]), parts[-1], truncation="longest_first", max_length=max_length)
    return {k: list(v) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


def _collate(encs: Sequence[dict[str, list[int]]], pad_id: int, device: str) -> dict[str, Any]:
    """Right-padded tensors (ids, attention mask, token types) of a batch, on ``device``."""
    import torch

    width = max(len(e["input_ids"]) for e in encs)
    ids = torch.full((len(encs), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(encs), width), dtype=torch.long)
    types = torch.zeros((len(encs), width), dtype=torch.long) if "token_type_ids" in encs[0] else None
    for r, e in enumerate(encs):
        k = len(e["input_ids"])
        ids[r, :k] = torch.tensor(e["input_ids"], dtype=torch.long)
        mask[r, :k] = 1
        if types is not None:
            types[r, :k] = torch.tensor(e["token_type_ids"], dtype=torch.long)
    out = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if types is not None:
        out["token_type_ids"] = types.to(device)
    return out


def _log_probs(model: Any, encs: Sequence[dict[str, list[int]]], pad_id: int, device: str,
               batch_size: int) -> np.ndarray:
    """Natural-log class probabilities (items x classes) in eval mode (no dropout), fp32."""
    import torch

    model.eval()
    out = []
    with torch.inference_mode():
        for b in range(0, len(encs), batch_size):
            logits = model(**_collate(encs[b:b + batch_size], pad_id, device)).logits.float()
            out.append(torch.log_softmax(logits, dim=-1).cpu().numpy().astype(float))
    return np.concatenate(out, axis=0)


def _fine_tune(base: Any, encs: Sequence[dict[str, list[int]]], labels: np.ndarray, spec: FineTunedClassifier,
               pad_id: int, device: str, seed: int, after_epoch: Any = None, epochs: int | None = None) -> Any:
    """A copy of ``base`` fine-tuned on (``encs``, ``labels``) for ``epochs`` epochs (default ``spec.epochs``;
    seeded shuffles and dropout, the learning rate decayed to 0 over them); ``after_epoch(epoch, model)`` runs
    after each epoch."""
    import torch

    torch.manual_seed(seed)
    model = copy.deepcopy(base).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.0)
    epochs = spec.epochs if epochs is None else int(epochs)
    steps = math.ceil(len(encs) / spec.batch_size) * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / steps))
    gen = torch.Generator().manual_seed(seed)
    y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(encs), generator=gen).tolist()
        for b in range(0, len(order), spec.batch_size):
            idx = order[b:b + spec.batch_size]
            logits = model(**_collate([encs[i] for i in idx], pad_id, device)).logits.float()
            loss = torch.nn.functional.cross_entropy(logits, y[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
        if after_epoch is not None:
            after_epoch(epoch, model)
    return model


def finetune_dynamics(texts: Sequence[Any], gold: Sequence[Any], classifier: Any, *, folds: int = 5,
                      seed: int = 0, device: str | None = None, cache: bool = True) -> FineTuneRun:
    """Cross-fitted fine-tuning of a local sequence classifier: held-out PVI and per-epoch gold-label
    probabilities (see the module docstring for the definitions and the paper's sections).

    ``texts``: one string or (premise, hypothesis) tuple per item (None = no input); ``gold``: one label
    per item (None = unlabelled); ``classifier``: a checkpoint folder or a :class:`FineTunedClassifier`.
    ``folds``/``seed``: the splits of the TF-IDF ``difficulty`` (stratified by label when every class
    has ``folds`` items); ``seed`` also seeds initialisation, shuffling and dropout, so on the CPU a
    seed gives the same numbers every time (on a GPU up to its non-deterministic kernels).
    ``device``: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or None (the process default); fp32 throughout.

    NaN: items without input or gold label, items whose gold class is absent from their training parts
    (PVI only: ``g'`` never saw the class), and the items of a part whose training parts hold a single
    class (nothing to fine-tune a classifier on; listed in ``skipped_folds``), as the TF-IDF path.
    ``cache``: keep the last few runs' numbers (not the models), so that ``difficulty`` and ``ambiguity`` of
    the same items, checkpoint (and its files' sizes and times), settings, seed and device share one run
    instead of fine-tuning twice.
    """
    from ...device import record_use, resolve_device

    spec = as_classifier(classifier)
    folder = check_classifier_folder(spec.path)
    _nonempty(texts, "texts")
    parts = [_item_parts(t, i) for i, t in enumerate(texts)]
    n = len(parts)
    codes, classes = _encode_labels(gold, n)
    if len(classes) < 2:
        raise DataError(f"classifier: gold has {len(classes)} distinct label(s); fine-tuning a classifier needs at "
                        "least 2 classes.", field="gold")
    usable = np.array([p is not None for p in parts])
    ok = np.flatnonzero(usable & (codes >= 0))
    folds = _check_folds(folds, ok.size, "classifier")
    dev = resolve_device(device)
    key = (str(folder.resolve()), _stamp(folder), spec, dev, int(seed), folds, tuple(parts), tuple(codes.tolist()))
    if cache and key in _CACHE:
        _CACHE[key] = _CACHE.pop(key)  # most recently used last
        return _CACHE[key]

    tokenizer, base = _load(folder, len(classes), int(seed))
    record_use(f"classifier {spec.path}", dev, "fp32")
    pad_id = int(tokenizer.pad_token_id)
    width = _window(spec.max_length, tokenizer, base)
    encs = [_encode(tokenizer, p, width) if p is not None else None for p in parts]
    null = _encode(tokenizer, ("",), width)  # the empty string through the tokenizer: [CLS] [SEP]
    k = len(classes)
    pvi = np.full(n, np.nan)
    probs = np.full((n, spec.epochs), np.nan)
    splits = _splits(ok, folds, seed, codes[ok])
    null_log2 = np.full((len(splits), k), np.nan)
    skipped = []
    rng = np.random.default_rng(seed)
    for f, (train, test) in enumerate(splits):
        fold_seed = int(rng.integers(2**31))
        ytr = codes[train]
        present = np.bincount(ytr, minlength=k) > 0
        if present.sum() < 2:
            skipped.append(f)
            continue
        held = [encs[i] for i in test]
        last: dict[str, np.ndarray] = {}

        shared = spec.pvi_epochs == spec.epochs

        def record(epoch: int, model: Any, held=held, test=test, last=last) -> None:
            logp = _log_probs(model, held, pad_id, dev, spec.batch_size)
            probs[test, epoch] = np.exp(logp[np.arange(len(test)), codes[test]])
            last["logp"] = logp  # after the last epoch: g's prediction, for PVI when one run serves both

        train_encs = [encs[i] for i in train]
        g = _fine_tune(base, train_encs, ytr, spec, pad_id, dev, fold_seed, after_epoch=record)
        del g
        if not shared:  # PVI's g: its own (shorter) run, as App. A fine-tunes it for 3 epochs
            g = _fine_tune(base, train_encs, ytr, spec, pad_id, dev, fold_seed, epochs=spec.pvi_epochs)
            last["logp"] = _log_probs(g, held, pad_id, dev, spec.batch_size)
            del g
        g_null = _fine_tune(base, [null] * len(train), ytr, spec, pad_id, dev, fold_seed, epochs=spec.pvi_epochs)
        null_logp = _log_probs(g_null, [null], pad_id, dev, 1)[0]
        del g_null
        null_log2[f] = null_logp / np.log(2.0)
        for row, i in enumerate(test):
            c = int(codes[i])
            if present[c]:
                pvi[i] = (last["logp"][row, c] - null_logp[c]) / np.log(2.0)
    _empty_device_cache(dev)
    run = FineTuneRun(pvi=pvi, gold_probs=probs, null_log2=null_log2, classes=list(classes), device=dev,
                      classifier=spec, folds=folds, skipped_folds=skipped)
    if cache:
        _CACHE[key] = run
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return run


def _empty_device_cache(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def clear_cache() -> None:
    """Forget the kept runs (:func:`finetune_dynamics` fine-tunes afresh next time)."""
    _CACHE.clear()


__all__ = ["FineTuneRun", "FineTunedClassifier", "as_classifier", "check_classifier_folder", "clear_cache",
           "finetune_dynamics"]
