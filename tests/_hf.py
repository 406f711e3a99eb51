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
