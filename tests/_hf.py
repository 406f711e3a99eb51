"""Tiny random-weight Hugging Face models built from a config (nothing downloaded), saved with save_pretrained."""

from __future__ import annotations

import json
from pathlib import Path


def tiny_gpt2(folder: Path, *, words: int = 40, seed: int = 0, tokenizer: bool = True, bos: bool = True) -> Path:
    """A 2-layer GPT-2 (width 32) over ``<|endoftext|>`` + ``words`` word tokens 'Ġw0'.. in ``folder``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<|endoftext|>": 0, **{f"Ġw{i}": i + 1 for i in range(words)}}
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=0 if bos else None, eos_token_id=0 if bos else None)
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    if tokenizer:
        (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
        GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    return folder


def tiny_bert(folder: Path, *, words: int = 40, seed: int = 0) -> Path:
    """A 2-layer BERT sequence classifier (labels negative / positive) with a word-piece tokenizer."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(words)]
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tokens), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, num_labels=2,
                     id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
    BertForSequenceClassification(cfg).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def tiny_gpt2_classifier(folder: Path, *, words: int = 40, seed: int = 0) -> Path:
    """A 2-layer GPT-2 sequence classifier (labels negative / positive; a causal model type, no padding token)
    with the GPT-2 word tokenizer of :func:`tiny_gpt2`: its checkpoint has the classification head."""
    import torch
    from transformers import GPT2Config, GPT2ForSequenceClassification, GPT2Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<|endoftext|>": 0, **{f"Ġw{i}": i + 1 for i in range(words)}}
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
                     eos_token_id=0, num_labels=2, id2label={0: "negative", 1: "positive"},
                     label2id={"negative": 0, "positive": 1})
    GPT2ForSequenceClassification(cfg).save_pretrained(folder)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    return folder


def edited_copy(src: Path, dst: Path, **config: object) -> Path:
    """A copy of the model folder ``src`` with keys of its config.json replaced (a value None removes the key)."""
    import shutil

    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text(encoding="utf-8"))
    for k, v in config.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (dst / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return dst


class _Payload:
    """Unpickling it calls ``open(marker, "w")``: the marker file appears when anything unpickles it."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def pickled_copy(src: Path, dst: Path, marker: Path) -> Path:
    """A copy of ``src`` whose weights are a pickled ``pytorch_model.bin`` (no safetensors) that also holds a
    payload creating ``marker`` when unpickled."""
    import shutil

    import torch
    from safetensors.torch import load_file

    shutil.copytree(src, dst)
    state = load_file(str(dst / "model.safetensors"))
    (dst / "model.safetensors").unlink()
    torch.save({**state, "payload": _Payload(marker)}, dst / "pytorch_model.bin")
    return dst
