"""The user's own Hugging Face models in OmniInput: ``hf-lm:PATH`` (a causal LM) and ``hf-cls:PATH`` (a sequence
classifier), loaded from a local folder (``save_pretrained`` format; nothing is downloaded).

- ``hf-lm:PATH``: the input space is every sequence of ``length`` tokens over the model's vocabulary (special
  tokens left out) or a subset of it (``vocab``: a file of tokens, or ``top:N``); the output is the sequence's
  negative log-likelihood in nats per scored token -- the log-perplexity the paper samples (footnote 1 and
  Sec. 2.1; its GPT-2 bins of 0.1 over 2.0-4.0 in Sec. 3.3 are per-token values) -- or, with
  ``per_token=False`` (``omni sample --total``), the sum over the scored tokens. With a beginning-of-sequence
  token (GPT-2's ``<|endoftext|>``) it is prepended and every position is scored; without one the first token
  is the context and positions 2..L are scored. Exact enumeration scores every last token at once
  (``completions``).
- ``hf-cls:PATH``: the same kind of space; the output is the logit of the label ``positive`` (a name of the
  config's ``id2label`` or an index) for ``[CLS] tokens [SEP]`` (whatever special tokens the tokenizer adds).

The folder is read through :mod:`evalsift.hf_folder` (safetensors only, no ``auto_map``, what the adapter needs
or a refusal saying what the folder is). Both give gradients with respect to the one-hot inputs (the one-hot
matrix times the rows of the input embedding matrix that the space allows, fed as ``inputs_embeds``), so the
gradient and Langevin proposals work. They run on the chosen device (:mod:`evalsift.device`) in fp32 by default;
``precision="bf16"`` is mainly for GPUs (``benchmarks/embed/device_speed.py`` measures how far its NLLs move); torch
runs it on the CPU too, slowly.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, DataWarning, ParameterError
from .models import TorchModel, _torch
from .space import InputSpace

KINDS = ("hf-lm", "hf-cls")
_PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
TOP_CONTEXTS = 256  # single-token contexts behind top:N for a model without a beginning-of-sequence token


def is_hf_spec(spec: str) -> bool:
    """True for ``hf-lm:PATH`` and ``hf-cls:PATH``."""
    return str(spec).split(":", 1)[0] in KINDS and ":" in str(spec)


def _transformers(purpose: str) -> Any:
    try:
        import transformers
    except ImportError:
        from ..errors import missing_dependency

        raise missing_dependency("transformers", "embed", purpose) from None
    return transformers


def _folder(spec: str, kind: str) -> Any:
    """The checked model folder of ``spec`` (:func:`evalsift.hf_folder.read_model_folder`): JSON read, pickled
    weights and ``auto_map`` refused, and a folder that is not what ``kind`` needs refused saying what it is."""
    from ..hf_folder import read_model_folder

    _, _, path = str(spec).partition(":")
    if not path:
        raise ParameterError(f"--model {spec}: give the model's folder after '{kind}:', e.g. {kind}:/models/gpt2",
                             field="model")
    folder = read_model_folder(path, option=f"--model {spec}")
    if kind == "hf-lm":
        folder.require("causal-lm", instead=f"for a sequence classifier's logit use --model hf-cls:{path}")
    else:
        folder.require("sequence-classifier", instead=f"for a language model's NLL use --model hf-lm:{path}")
    return folder


def _load(kind: str, folder: Any, spec: str) -> tuple[Any, Any]:
    """``(model, tokenizer or None)`` from the checked ``folder``, offline; a checkpoint without the weights of
    the head the option needs (a BERT's language-model head, a causal LM's classifier) is refused."""
    tf = _transformers(f"--model {spec}")
    if kind == "hf-lm":
        model = folder.load(tf.AutoModelForCausalLM, purpose="the language-model head hf-lm scores with")
    else:
        model = folder.load(tf.AutoModelForSequenceClassification, purpose="the classification head hf-cls reads")
    return model.eval(), folder.tokenizer()


def _special_ids(tok: Any, config: Any) -> set[int]:
    ids = set(getattr(tok, "all_special_ids", []) or []) if tok is not None else set()
    for name in ("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "cls_token_id", "mask_token_id"):
        v = getattr(config, name, None)
        if isinstance(v, int):
            ids.add(v)
    return ids


def _bos(tok: Any, config: Any) -> int | None:
    v = getattr(tok, "bos_token_id", None) if tok is not None else None
    if v is None:
        v = getattr(config, "bos_token_id", None)
    return v if isinstance(v, int) else None


def _names(tok: Any, ids: np.ndarray) -> list[str]:
    if tok is None:
        return [f"#{i}" for i in ids.tolist()]
    return [str(t) for t in tok.convert_ids_to_tokens([int(i) for i in ids])]


def _vocab_file(path: Path, tok: Any, n_vocab: int, spec: str) -> np.ndarray:
    """Token ids from a file: one token per line, as the tokenizer spells it (e.g. GPT-2's ``Ġthe``) or as
    ``#ID``; a line that names no token is an error naming the line."""
    ids: list[int] = []
    seen: dict[int, int] = {}
    unk = getattr(tok, "unk_token_id", None) if tok is not None else None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if text.startswith("#") and text[1:].isdigit():
            i = int(text[1:])
        elif tok is not None:
            i = tok.convert_tokens_to_ids(text)
            if i is None or (unk is not None and i == unk and text != getattr(tok, "unk_token", None)):
                raise DataError(f"--vocab {path}, line {n}: {text!r} is not a token of the model's tokenizer (write "
                                "tokens as the tokenizer spells them, e.g. 'Ġthe' for GPT-2, or as #ID)",
                                field="vocab")
        else:
            raise DataError(f"--vocab {path}, line {n}: the model folder has no tokenizer, so write token ids as #ID",
                            field="vocab")
        if not 0 <= int(i) < n_vocab:
            raise DataError(f"--vocab {path}, line {n}: token id {i} is outside the model's vocabulary "
                            f"(0..{n_vocab - 1})", field="vocab")
        if int(i) in seen:
            raise DataError(f"--vocab {path}, line {n}: {text!r} repeats line {seen[int(i)]}", field="vocab")
        seen[int(i)] = n
        ids.append(int(i))
    if len(ids) < 2:
        raise DataError(f"--vocab {path}: needs at least two tokens, found {len(ids)}", field="vocab")
    return np.array(ids, dtype=np.int64)


def _top_ids(module: Any, allowed: np.ndarray, n: int, device: str) -> np.ndarray:
    """The ``n`` allowed tokens the LM finds most likely at the start: after its beginning-of-sequence token, or
    (without one) on average after each of :data:`TOP_CONTEXTS` single tokens drawn with seed 0."""
    torch = _torch()
    with torch.no_grad():
        if module.bos is not None:
            ctx = torch.tensor([[module.bos]], device=device)
        else:
            pick = np.random.default_rng(0).choice(allowed, size=min(TOP_CONTEXTS, allowed.size), replace=False)
            ctx = torch.as_tensor(pick[:, None], device=device)
        p = torch.softmax(module.lm(input_ids=ctx).logits[:, -1, :].float(), dim=-1).mean(dim=0).cpu().numpy()
    order = allowed[np.argsort(-p[allowed], kind="stable")]
    return np.sort(order[:n])


def _causal_lm_class():
    torch = _torch()
    nn = torch.nn

    class HFCausalLM(nn.Module):
        """A Hugging Face causal LM as an OmniInput model: ``forward(values (B, L)) -> NLL (B,)``, with
        ``forward_onehot`` and ``completions`` (see the module doc)."""

        def __init__(self, lm: Any, ids: np.ndarray, length: int, bos: int | None, per_token: bool) -> None:
            super().__init__()
            self.lm, self.length, self.bos, self.per_token = lm, int(length), bos, bool(per_token)
            self.register_buffer("ids", torch.as_tensor(ids, dtype=torch.long), persistent=True)
            self.scored = self.length if bos is not None else self.length - 1

        def _logp(self, **inputs: Any) -> Any:
            return torch.log_softmax(self.lm(**inputs).logits.float(), dim=-1)

        def _bos_ids(self, B: int, device: Any) -> Any:
            return torch.full((B, 1), self.bos, dtype=torch.long, device=device)

        def forward(self, values: Any) -> Any:
            tok = self.ids[values]
            if self.bos is not None:
                logp = self._logp(input_ids=torch.cat([self._bos_ids(len(tok), tok.device), tok[:, :-1]], dim=1))
                nll = -logp.gather(2, tok[:, :, None]).squeeze(2).sum(dim=1)
            else:
                logp = self._logp(input_ids=tok)[:, :-1]
                nll = -logp.gather(2, tok[:, 1:, None]).squeeze(2).sum(dim=1)
            return nll / self.scored if self.per_token else nll

        def forward_onehot(self, onehot: Any) -> Any:
            E = self.lm.get_input_embeddings().weight
            emb = onehot.to(E.dtype) @ E[self.ids]
            if self.bos is not None:
                first = E[self.bos][None, None, :].expand(len(onehot), 1, -1)
                logp = self._logp(inputs_embeds=torch.cat([first, emb[:, :-1]], dim=1))[..., self.ids]
                nll = -(logp.to(onehot.dtype) * onehot).sum(dim=(1, 2))
            else:
                logp = self._logp(inputs_embeds=emb)[:, :-1][..., self.ids]
                nll = -(logp.to(onehot.dtype) * onehot[:, 1:]).sum(dim=(1, 2))
            return nll / self.scored if self.per_token else nll

        def completions(self, prefixes: Any) -> Any:
            tok = self.ids[prefixes]
            if self.bos is not None:
                logp = self._logp(input_ids=torch.cat([self._bos_ids(len(tok), tok.device), tok], dim=1))
                head = -logp[:, :-1].gather(2, tok[:, :, None]).squeeze(2).sum(dim=1)
            else:
                logp = self._logp(input_ids=tok)
                head = -logp[:, :-1].gather(2, tok[:, 1:, None]).squeeze(2).sum(dim=1)  # positions 2..L-1
            out = head[:, None] - logp[:, -1, :][:, self.ids]
            return out / self.scored if self.per_token else out

    return HFCausalLM


def _classifier_class():
    torch = _torch()
    nn = torch.nn

    class HFClassifier(nn.Module):
        """A Hugging Face sequence classifier as an OmniInput model: ``forward(values (B, L)) -> logit (B,)`` of
        the label ``label``, the tokens wrapped in the tokenizer's special tokens; ``forward_onehot`` the same
        on one-hot inputs."""

        def __init__(self, clf: Any, ids: np.ndarray, prefix: list[int], suffix: list[int], label: int) -> None:
            super().__init__()
            self.clf, self.label = clf, int(label)
            self.register_buffer("ids", torch.as_tensor(ids, dtype=torch.long), persistent=True)
            self.register_buffer("prefix", torch.as_tensor(prefix, dtype=torch.long), persistent=False)
            self.register_buffer("suffix", torch.as_tensor(suffix, dtype=torch.long), persistent=False)

        def forward(self, values: Any) -> Any:
            tok = self.ids[values]
            B = len(tok)
            full = torch.cat([self.prefix.expand(B, -1), tok, self.suffix.expand(B, -1)], dim=1)
            return self.clf(input_ids=full, attention_mask=torch.ones_like(full)).logits[:, self.label].float()

        def forward_onehot(self, onehot: Any) -> Any:
            E = self.clf.get_input_embeddings().weight
            B = len(onehot)
            emb = torch.cat([E[self.prefix].expand(B, -1, -1), onehot.to(E.dtype) @ E[self.ids],
                             E[self.suffix].expand(B, -1, -1)], dim=1)
            mask = torch.ones(emb.shape[:2], dtype=torch.long, device=emb.device)
            with _errors_only():  # a GPT-style classifier warns that it cannot see padding in inputs_embeds: none
                return self.clf(inputs_embeds=emb, attention_mask=mask).logits[:, self.label].to(onehot.dtype)

    return HFClassifier


@contextlib.contextmanager
def _errors_only():
    """transformers' logging at errors only for the block (restored after)."""
    from transformers.utils import logging as tlog  # optional dependency

    before = tlog.get_verbosity()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        tlog.set_verbosity(before)


def _positive_label(config: Any, positive: Any, spec: str) -> tuple[int, str]:
    labels = {int(k): str(v) for k, v in (getattr(config, "id2label", None) or {}).items()}
    n = int(getattr(config, "num_labels", len(labels) or 1))
    names = ", ".join(f"{i}={labels.get(i, i)}" for i in range(n))
    if positive is None:
        if n == 1:
            return 0, labels.get(0, "0")
        raise ParameterError(f"--model {spec}: give --positive LABEL, the label whose logit is the output "
                             f"(the model's labels: {names})", field="positive")
    text = str(positive)
    for i, name in labels.items():
        if name == text or name.lower() == text.lower():
            return i, name
    if text.isdigit() and int(text) < n:
        return int(text), labels.get(int(text), text)
    raise ParameterError(f"--positive {text}: the model has no such label (its labels: {names})", field="positive")


def _batch(length: int, n_vocab: int, device: str) -> int:
    """Sequences per forward pass: the float32 logits (B x L x vocab) kept under 8 GiB on a GPU, 256 MiB on the
    CPU, and at most 4096."""
    budget = (8 << 30) if device.startswith("cuda") else (256 << 20)
    return int(max(1, min(4096, budget // (4 * max(1, length + 2) * max(1, n_vocab)))))


def load_hf_model(spec: str, *, length: int | None = None, vocab: Any = None, per_token: bool | None = None,
                  positive: Any = None, precision: str = "fp32", device: str | None = None,
                  batch_size: int | None = None) -> tuple[TorchModel, InputSpace]:
    """``(model, space)`` for ``hf-lm:PATH`` or ``hf-cls:PATH`` (see the module doc).

    ``length``: tokens per input (required). ``vocab``: ``None`` (every token but the special ones), ``top:N``
    or an int N (hf-lm: the N tokens most likely at the start of a sequence, see :func:`_top_ids`; hf-cls: the
    first N ids that are not special), or a file of tokens. ``per_token`` (hf-lm): the output is the mean NLL per
    scored token (``None`` or ``True``: the default, the paper's log-perplexity) or the sequence's total NLL
    (``False``, ``omni sample --total``). ``positive`` (hf-cls): the label whose logit is the output.
    ``precision``: fp32 (default), bf16 or fp16 (on a GPU or the CPU; torch runs bf16 on the CPU, slowly).
    ``device``: where it runs (:mod:`evalsift.device`).

    The folder is checked before anything loads (:func:`evalsift.hf_folder.read_model_folder`): safetensors
    weights only, no ``auto_map``, special-token ids inside the vocabulary, the architecture the adapter needs
    and the weights of its head; ``length`` must fit the model's positions.
    """
    from ..device import resolve_device

    kind = str(spec).split(":", 1)[0]
    if kind == "hf-cls" and per_token is not None:
        raise ParameterError(f"--{'per-token' if per_token else 'total'} applies to hf-lm models (an NLL), not to "
                             "a classifier's logit", field="per_token")
    folder = _folder(spec, kind)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ParameterError(f"--model {spec}: give --length L, the tokens per input (an integer >= 1)",
                             field="length")
    if precision not in _PRECISIONS:
        raise ParameterError(f"--precision {precision}: expected one of {', '.join(_PRECISIONS)}", field="precision")
    if kind == "hf-lm" and positive is not None:
        raise ParameterError("--positive applies to hf-cls models; an hf-lm's output is an NLL (lower: more "
                             "likely)", field="positive")
    per_token = kind == "hf-lm" and per_token is not False
    torch = _torch()
    dev = resolve_device(device)
    hf, tok = _load(kind, folder, spec)
    config = hf.config
    n_vocab = int(hf.get_input_embeddings().weight.shape[0])
    special = _special_ids(tok, config)
    allowed = np.array([i for i in range(n_vocab) if i not in special], dtype=np.int64)
    if kind == "hf-lm":
        bos = _bos(tok, config)
        if bos is not None and not 0 <= bos < n_vocab:  # once: IndexError inside the embedding
            where = ("the tokenizer's" if getattr(tok, "bos_token_id", None) is not None
                     else "config.json's bos_token_id")
            raise DataError(f"--model {spec}: the beginning-of-sequence token id {bos} ({where}) is outside the "
                            f"model's vocabulary (0..{n_vocab - 1}); correct it (or set it to null: the first token "
                            "is then context)", field="model")
        if bos is None and length < 2:
            raise ParameterError(f"--model {spec}: the model has no beginning-of-sequence token, so the first token "
                                 "is only context: give --length 2 or more", field="length")
        _check_positions(folder, spec, int(length) + (1 if bos is not None else 0), length,
                         "with the beginning-of-sequence token" if bos is not None else "")
        module = _causal_lm_class()(hf, allowed, length, bos, per_token)
    else:
        label, label_name = _positive_label(config, positive, spec)
        prefix, suffix = _wrapping(tok, allowed)
        _check_positions(folder, spec, len(prefix) + int(length) + len(suffix), length,
                         f"with the {len(prefix) + len(suffix)} special tokens the tokenizer adds"
                         if prefix or suffix else "")
        _set_padding(hf)
        module = _classifier_class()(hf, allowed, prefix, suffix, label)
    module.to(dev)
    ids, vocab_note = _choose_ids(vocab, kind, module, allowed, tok, n_vocab, dev, spec)
    module.ids = torch.as_tensor(ids, dtype=torch.long, device=dev)
    module.to(getattr(torch, _PRECISIONS[precision]))
    name = f"{kind}:{folder.path.name}"
    info = {"adapter": kind, "path": str(folder.path.resolve()), "architecture": type(hf).__name__,
            "model_vocab": n_vocab, "space_vocab": int(ids.size), "vocab": vocab_note, "length": int(length),
            "precision": precision}
    if vocab is not None:
        info["token_ids"] = ids.tolist()
    if kind == "hf-lm":
        info.update(bos=module.bos, per_token=bool(per_token),
                    scored="every position (after the beginning-of-sequence token)" if module.bos is not None
                    else "positions 2..L (the first token is context: the model has no beginning-of-sequence token)")
        output, pos = "nll", "low"
    else:
        info.update(label=label_name, label_index=label)
        output, pos = "logit", "high"
    module.info = info
    model = TorchModel(module, name=name, output=output, positive=pos, device=dev,
                       batch_size=batch_size or _batch(length, n_vocab, dev))
    model.spec = str(spec)
    model.files_fingerprint = folder.fingerprint()  # omni.json records it; omni curve checks it before a reload
    space = InputSpace(int(length), int(ids.size), kind="tokens", vocab=_names(tok, ids), joiner=" ",
                       name=f"sequences of {length} tokens from {ids.size:,} of {name}'s {n_vocab:,}")
    return model, space


def _check_positions(folder: Any, spec: str, needed: int, length: int, how: str) -> None:
    """Refuse a ``--length`` whose inputs need more positions than the model has (it would index past its
    position embeddings)."""
    n = folder.positions
    if n is not None and needed > n:
        most = int(length) - (needed - n)
        fix = f"give --length {most} or less" if most >= 1 else "the model has too few positions for any input"
        raise ParameterError(f"--model {spec}: --length {length} needs {needed} positions{' ' + how if how else ''}, "
                             f"and {folder.what()} has {n}: {fix}", field="length")


def _set_padding(clf: Any) -> None:
    """A classifier that finds its last token by the padding id (GPT-2-style ``...ForSequenceClassification``)
    refuses batches without one; the inputs here are never padded, so the id is set to -1, which no input
    holds (the last position is then the last token)."""
    if getattr(clf.config, "pad_token_id", None) is None:
        clf.config.pad_token_id = -1


def _wrapping(tok: Any, allowed: np.ndarray) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a single sequence (BERT: [CLS] ... [SEP])."""
    if tok is None or allowed.size == 0:
        return [], []
    text = tok.convert_tokens_to_string([tok.convert_ids_to_tokens(int(allowed[0]))])
    plain = list(tok(text, add_special_tokens=False)["input_ids"])
    full = list(tok(text, add_special_tokens=True)["input_ids"])
    for at in range(len(full) - len(plain) + 1):
        if plain and full[at:at + len(plain)] == plain:
            return full[:at], full[at + len(plain):]
    return [], []


def _choose_ids(vocab: Any, kind: str, module: Any, allowed: np.ndarray, tok: Any, n_vocab: int, device: str,
                spec: str) -> tuple[np.ndarray, str]:
    if vocab is None:
        return allowed, f"every token but the {n_vocab - allowed.size} special ones"
    if isinstance(vocab, (list, tuple, np.ndarray)):  # token ids (a run's record, to rebuild its model)
        ids = np.asarray(vocab, dtype=np.int64)
        if ids.ndim != 1 or ids.size < 2 or ids.min() < 0 or ids.max() >= n_vocab or np.unique(ids).size < ids.size:
            raise ParameterError(f"vocab: expected two or more distinct token ids in 0..{n_vocab - 1}", field="vocab")
        return ids, f"{ids.size} given token ids"
    text = str(vocab)
    n = None
    if isinstance(vocab, (int, np.integer)) and not isinstance(vocab, bool):
        n = int(vocab)
    elif text.startswith("top:"):
        try:
            n = int(text[4:])
        except ValueError:
            n = -1
        if n < 2:
            raise ParameterError(f"--vocab {text}: expected top:N with N >= 2", field="vocab")
    if n is not None:
        if n < 2:
            raise ParameterError(f"--vocab {n}: expected at least 2 tokens", field="vocab")
        asked = ""
        if n > allowed.size:
            warnings.warn(DataWarning(f"--vocab {text}: the model has only {allowed.size:,} tokens that are not "
                                      f"special tokens; the space uses all {allowed.size:,}"), stacklevel=2)
            asked = f"; top:{n} was asked, the model has {allowed.size}"
            n = allowed.size
        if kind == "hf-lm":
            return _top_ids(module, allowed, n, device), (f"top:{n} (the {n} tokens most likely at the start of a "
                                                          f"sequence{asked})")
        return allowed[:n], f"top:{n} (the first {n} ids that are not special tokens{asked})"
    path = Path(text).expanduser()
    if not path.is_file():
        raise DataError(f"--vocab {text}: no such file; give a file of tokens (one per line) or top:N", field="vocab")
    return _vocab_file(path, tok, n_vocab, spec), f"{path.name} ({path.resolve()})"


__all__ = ["KINDS", "is_hf_spec", "load_hf_model"]
