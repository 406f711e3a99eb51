"""The user's own Hugging Face models in OmniInput: ``hf-lm:PATH`` (a causal LM) and ``hf-cls:PATH`` (a sequence
classifier), loaded from a local folder (``save_pretrained`` format; nothing is downloaded).

- ``hf-lm:PATH``: the input space is every sequence of ``length`` tokens over the model's vocabulary (special
  tokens left out) or a subset of it (``vocab``: a file of tokens, or ``top:N``); the output is the sequence's
  negative log-likelihood in nats (``per_token=True``: its mean per scored token). With a beginning-of-sequence
  token (GPT-2's ``<|endoftext|>``) it is prepended and every position is scored; without one the first token is
  the context and positions 2..L are scored. Exact enumeration scores every last token at once
  (``completions``).
- ``hf-cls:PATH``: the same kind of space; the output is the logit of the label ``positive`` (a name of the
  config's ``id2label`` or an index) for ``[CLS] tokens [SEP]`` (whatever special tokens the tokenizer adds).

Both give gradients with respect to the one-hot inputs (the one-hot matrix times the rows of the input
embedding matrix that the space allows, fed as ``inputs_embeds``), so the gradient and Langevin proposals work.
They run on the chosen device (:mod:`evalsift.device`) in fp32 by default; ``precision="bf16"`` is there for GPUs
(``benchmarks/device_speed.py`` measures how far its NLLs move).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError
from .models import TorchModel, _torch
from .space import InputSpace

KINDS = ("hf-lm", "hf-cls")
_PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "vocab.txt", "tokenizer.model",
                    "spiece.model", "sentencepiece.bpe.model")
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


def _folder(spec: str) -> tuple[str, Path]:
    kind, _, path = str(spec).partition(":")
    p = Path(path).expanduser()
    if not path:
        raise ParameterError(f"--model {spec}: give the model's folder after '{kind}:', e.g. {kind}:/models/gpt2",
                             field="model")
    if not p.is_dir():
        raise DataError(f"--model {spec}: {p} is not a folder; give a local folder written by save_pretrained "
                        "(config.json and the weights; evalsift never downloads models)", field="model")
    if not (p / "config.json").is_file():
        raise DataError(f"--model {spec}: {p} has no config.json; give a folder written by save_pretrained",
                        field="model")
    return kind, p


def _load(kind: str, folder: Path, spec: str) -> tuple[Any, Any]:
    """``(model, tokenizer or None)`` from ``folder``, offline."""
    from ..embed.encoders import _offline_hub, _quiet_transformers_progress

    tf = _transformers(f"--model {spec}")
    cls = tf.AutoModelForCausalLM if kind == "hf-lm" else tf.AutoModelForSequenceClassification
    with _offline_hub(), _quiet_transformers_progress():
        try:
            model = cls.from_pretrained(str(folder), local_files_only=True)
        except (OSError, ValueError) as e:
            what = "a causal language model" if kind == "hf-lm" else "a sequence classifier"
            raise DataError(f"--model {spec}: cannot load {what} from {folder} ({str(e).splitlines()[0]})",
                            field="model") from None
        tok = None
        if any((folder / f).is_file() for f in _TOKENIZER_FILES):  # else transformers makes up an empty one
            try:
                tok = tf.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            except (OSError, ValueError, TypeError):
                tok = None
    return model.eval(), tok


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
                head = -logp[:, :-2].gather(2, tok[:, 1:, None]).squeeze(2).sum(dim=1)
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
            return self.clf(inputs_embeds=emb, attention_mask=mask).logits[:, self.label].to(onehot.dtype)

    return HFClassifier


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


def load_hf_model(spec: str, *, length: int | None = None, vocab: Any = None, per_token: bool = False,
                  positive: Any = None, precision: str = "fp32", device: str | None = None,
                  batch_size: int | None = None) -> tuple[TorchModel, InputSpace]:
    """``(model, space)`` for ``hf-lm:PATH`` or ``hf-cls:PATH`` (see the module doc).

    ``length``: tokens per input (required). ``vocab``: ``None`` (every token but the special ones), ``top:N``
    or an int N (hf-lm: the N tokens most likely at the start of a sequence, see :func:`_top_ids`; hf-cls: the
    first N ids that are not special), or a file of tokens. ``per_token`` (hf-lm): the mean NLL per scored token.
    ``positive`` (hf-cls): the label whose logit is the output. ``precision``: fp32 (default), bf16 or fp16.
    ``device``: where it runs (:mod:`evalsift.device`).
    """
    from ..device import resolve_device

    kind, folder = _folder(spec)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ParameterError(f"--model {spec}: give --length L, the tokens per input (an integer >= 1)",
                             field="length")
    if precision not in _PRECISIONS:
        raise ParameterError(f"--precision {precision}: expected one of {', '.join(_PRECISIONS)}", field="precision")
    if kind == "hf-cls" and per_token:
        raise ParameterError("--per-token applies to hf-lm models (an NLL), not to a classifier's logit",
                             field="per_token")
    if kind == "hf-lm" and positive is not None:
        raise ParameterError("--positive applies to hf-cls models; an hf-lm's output is an NLL (lower: more "
                             "likely)", field="positive")
    torch = _torch()
    dev = resolve_device(device)
    hf, tok = _load(kind, folder, spec)
    config = hf.config
    n_vocab = int(hf.get_input_embeddings().weight.shape[0])
    special = _special_ids(tok, config)
    allowed = np.array([i for i in range(n_vocab) if i not in special], dtype=np.int64)
    if kind == "hf-lm":
        bos = _bos(tok, config)
        if bos is None and length < 2:
            raise ParameterError(f"--model {spec}: the model has no beginning-of-sequence token, so the first token "
                                 "is only context: give --length 2 or more", field="length")
        module = _causal_lm_class()(hf, allowed, length, bos, per_token)
    else:
        label, label_name = _positive_label(config, positive, spec)
        prefix, suffix = _wrapping(tok, allowed)
        module = _classifier_class()(hf, allowed, prefix, suffix, label)
    module.to(dev)
    ids, vocab_note = _choose_ids(vocab, kind, module, allowed, tok, n_vocab, dev, spec)
    module.ids = torch.as_tensor(ids, dtype=torch.long, device=dev)
    module.to(getattr(torch, _PRECISIONS[precision]))
    name = f"{kind}:{folder.name}"
    info = {"adapter": kind, "path": str(folder.resolve()), "architecture": type(hf).__name__,
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
    space = InputSpace(int(length), int(ids.size), kind="tokens", vocab=_names(tok, ids), joiner=" ",
                       name=f"sequences of {length} tokens from {ids.size:,} of {name}'s {n_vocab:,}")
    return model, space


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
        n = min(n, allowed.size)
        if kind == "hf-lm":
            return _top_ids(module, allowed, n, device), (f"top:{n} (the {n} tokens most likely at the start of a "
                                                          "sequence)")
        return allowed[:n], f"top:{n} (the first {n} ids that are not special tokens)"
    path = Path(text).expanduser()
    if not path.is_file():
        raise DataError(f"--vocab {text}: no such file; give a file of tokens (one per line) or top:N", field="vocab")
    return _vocab_file(path, tok, n_vocab, spec), f"{path.name} ({path.resolve()})"


__all__ = ["KINDS", "is_hf_spec", "load_hf_model"]
