"""Dimensions of the items' texts: ``length`` (whitespace tokens), ``perplexity`` (the paper's: a local
causal LM, :class:`CausalLMScorer`; plain or conditional) and ``ngram_perplexity`` (ours: an n-gram
model, :class:`NgramScorer`, cross-fitted on the items when no corpus is given)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError, check_choice, missing_dependency
from .crossfit import _check_folds, _splits
from .inputs import _item_parts, _nonempty
from .registry import dimension


def _tokens(text: Any) -> float:
    if text is None:
        return np.nan
    if isinstance(text, str):
        return float(len(text.split()))
    if isinstance(text, (tuple, list)):  # a pair (premise, hypothesis): the sum of its parts
        parts = [_tokens(t) for t in text]
        return float(np.sum(parts)) if parts and not np.isnan(parts).any() else np.nan
    raise DataError(f"texts: expected a string, a tuple of strings or None per item, got {type(text).__name__}.",
                    field="texts")


@dimension("length")
def length(texts: Sequence[Any] | None = None, *, records: Sequence[Mapping[str, Any]] | None = None,
           field: str | Sequence[str] | None = None) -> np.ndarray:
    """Whitespace tokens per item (Kovatchev & Lease 2024, Sec. 3: "length of the input in tokens").

    ``texts``: one string per item, or a tuple/list of strings (a premise-hypothesis pair, a
    question and its context): the sum of their token counts, as the paper does for pairs. ``None``
    gives NaN. Alternatively ``records`` (one mapping per item) and ``field`` -- a key, or several
    keys whose token counts are summed.

    >>> length(["a b c", None, ("x y", "z")]).tolist()
    [3.0, nan, 3.0]
    >>> length(records=[{"p": "a b", "h": "c"}], field=("p", "h")).tolist()
    [3.0]
    """
    if records is not None:
        if field is None:
            raise ParameterError("length: records=... needs field=... (a key or a tuple of keys).", field="field")
        keys = (field,) if isinstance(field, str) else tuple(field)
        _nonempty(records, "records")
        missing = [k for k in keys if not all(k in r for r in records)]
        if missing:
            raise DataError(f"length: field {missing[0]!r} is missing from some records.", field=missing[0])
        texts = [tuple(r[k] for k in keys) for r in records]
    texts = _nonempty(texts, "texts")
    return np.array([_tokens(t) for t in texts], dtype=float)


_WORD = re.compile(r"\w+|[^\w\s]")


def _words(text: str) -> list[str]:
    """The n-gram scorer's tokens: lower-cased words and single punctuation marks."""
    return _WORD.findall(text.lower())


_WB = None


def _witten_bell_uniform() -> type:
    """nltk's Witten-Bell smoothing with its recursion ending in the uniform distribution.

    nltk's ``WittenBell`` ends the interpolation at the unigram MLE, so a word without counts (an
    unseen word, when no training word was rare enough to become ``<UNK>``) gets probability 0 and
    the perplexity is infinite. Here the unigram level is itself Witten-Bell-interpolated with the
    uniform distribution over the vocabulary, ``p(w) = (c(w) + T / |V|) / (N + T)`` with ``T``
    distinct types among ``N`` tokens -- the recursion's usual end (Chen & Goodman 1998, Sec. 2.5).
    """
    global _WB
    if _WB is None:
        from nltk.lm.smoothing import WittenBell

        class WittenBellUniform(WittenBell):
            def unigram_score(self, word: str) -> float:
                uni = self.counts.unigrams
                n, t = uni.N(), uni.B()
                return (uni[word] + t / len(self.vocab)) / (n + t)

        _WB = WittenBellUniform
    return _WB


class NgramScorer:
    """An n-gram language model from ``nltk.lm``, trained on a reference corpus (no weights needed).

    ``corpus``: texts (strings, or tuples whose parts are joined with a space so that n-grams cross
    from the premise into the hypothesis, as conditional scoring needs). Tokens: lower-cased words
    and punctuation marks; sentences are padded with ``<s>`` / ``</s>`` and ``</s>`` is scored (as
    in SRILM). Words seen fewer than ``unk_cutoff`` times become ``<UNK>``, so unseen words get the
    probability of rare words instead of 0.

    ``smoothing``: ``"witten_bell"`` (default: nltk's interpolated Witten-Bell, its recursion ending
    in the uniform distribution -- see :func:`_witten_bell_uniform` -- so that no word has
    probability 0), ``"kneser_ney"`` (``KneserNeyInterpolated``; an unseen word without ``<UNK>``
    counts gets probability 0, i.e. infinite perplexity), ``"lidstone"`` (add-``gamma``, no
    interpolation) or ``"laplace"``.
    Witten-Bell is the default because nltk's Kneser-Ney is far too slow to score a benchmark:
    measured on ChaosNLI sentences (trigram, 5,000 training sentences, 2 shared CPU cores) Witten-Bell
    scores about 3,400 sentences/s and Kneser-Ney about 6/s (~30 min for 10k items), while
    Witten-Bell is still an interpolated model that backs off to lower orders (Lidstone, at ~10k/s,
    does not back off: an unseen context gets a uniform distribution).

    A conditional score uses the last ``order - 1`` words of the context: an n-gram model conditions
    on no more than that.
    """

    SMOOTHINGS = ("witten_bell", "kneser_ney", "lidstone", "laplace")

    def __init__(self, corpus: Iterable[Any], *, order: int = 3, smoothing: str = "witten_bell",
                 unk_cutoff: int = 2, gamma: float = 0.1) -> None:
        try:
            from nltk.lm import KneserNeyInterpolated, Laplace, Lidstone, Vocabulary
            from nltk.lm.models import InterpolatedLanguageModel
            from nltk.lm.preprocessing import padded_everygram_pipeline
        except ImportError:
            raise missing_dependency("nltk", "transparency", "The n-gram perplexity scorer") from None
        check_choice("smoothing", smoothing, self.SMOOTHINGS, where="NgramScorer")
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise ParameterError(f"NgramScorer: order must be an integer >= 1, got {order!r}.", field="order")
        sents = []
        for i, t in enumerate(corpus):
            parts = _item_parts(t, i, "corpus")
            if parts is not None:
                sents.append(_words(" ".join(parts)))
        if not any(sents):
            raise DataError("corpus: no text to train the n-gram model on (empty, or only missing items).",
                            field="corpus")
        self.order = int(order)
        vocab = Vocabulary(unk_cutoff=unk_cutoff)
        if smoothing == "witten_bell":
            self.lm = InterpolatedLanguageModel(_witten_bell_uniform(), self.order, vocabulary=vocab)
        elif smoothing == "kneser_ney":
            self.lm = KneserNeyInterpolated(self.order, vocabulary=vocab)
        elif smoothing == "lidstone":
            self.lm = Lidstone(gamma, self.order, vocabulary=vocab)
        else:
            self.lm = Laplace(self.order, vocabulary=vocab)
        train, words = padded_everygram_pipeline(self.order, sents)
        self.lm.fit(train, words)

    def score(self, targets: Sequence[str], contexts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(summed negative log-likelihood in nats, number of scored tokens) per target text."""
        nll = np.zeros(len(targets))
        ntok = np.zeros(len(targets))
        k = self.order - 1
        for i, (t, c) in enumerate(zip(targets, contexts)):
            hist = ["<s>"] * k + (_words(c) if c else [])
            words = _words(t) + ["</s>"]
            seq = hist + words
            s = 0.0
            for j in range(len(hist), len(seq)):
                p = self.lm.score(seq[j], seq[j - k:j] if k else None)
                s -= np.log(p) if p > 0 else -np.inf
            nll[i], ntok[i] = s, len(words)
        return nll, ntok


class CausalLMScorer:
    """A causal language model from a LOCAL directory (``transformers``; nothing is downloaded).

    ``path``: a directory written by ``save_pretrained`` (model and tokenizer), loaded with
    ``AutoModelForCausalLM`` / ``AutoTokenizer`` and ``local_files_only=True``, run on ``device``
    (``auto``, ``cpu``, ``cuda``, ``cuda:N``; default ``None``: the process default of
    :func:`evalsift.device.resolve_device`, which a command's ``--device`` sets) in fp32 and ``eval``
    mode, ``batch_size`` texts at a time (right padding with an attention mask, sorted by length, so
    batched and unbatched scores agree up to float rounding). The device it ran on is recorded
    (:func:`evalsift.device.record_use`) and is :attr:`device`.

    A text is scored after the tokenizer's BOS token when it has one (GPT-2: ``<|endoftext|>``), so
    its first token counts; without one the first token of a plain text is not scored. A conditional
    score tokenizes ``context + " " + target`` and scores the tokens after the context's own
    tokenization. Sequences longer than the model's window lose context tokens from the left first,
    then target tokens from the right (counted in :attr:`truncated`).
    """

    def __init__(self, path: Any, *, batch_size: int = 16, device: str | None = None,
                 max_length: int | None = None) -> None:
        from pathlib import Path

        from ...device import record_use, resolve_device

        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM
        except ImportError as e:
            raise missing_dependency(e.name or "transformers", "embed", "The causal-LM perplexity scorer") from None
        from ...hf_folder import read_model_folder

        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ParameterError(f"CausalLMScorer: batch_size must be an integer >= 1, got {batch_size!r}.",
                                 field="batch_size")
        p = Path(path)
        if not (p.is_dir() and (p / "config.json").exists()):
            raise DataError(f"model_path: {str(p)!r} is not a local model directory (no config.json); give a folder "
                            "written by save_pretrained. Nothing is downloaded.", field="model_path")
        device = resolve_device(device)
        # safetensors only, no auto_map, a causal LM with its language-model head (else: what the folder is)
        folder = read_model_folder(p, option="model_path", field="model_path")
        folder.require("causal-lm", instead="perplexity needs a language model's next-token probabilities")
        self.tokenizer = folder.tokenizer(required=True)
        self.model = folder.load(AutoModelForCausalLM, purpose="the language-model head").float().to(device).eval()
        cfg = self.model.config
        window = max_length or getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)
        self.max_length = int(window or 1024)
        self.batch_size = int(batch_size)
        self.device = device
        self.truncated = 0
        record_use(f"causal LM {path}", device, "fp32")

    def _encode(self, target: str, context: str | None) -> tuple[list[int], int]:
        """(token ids, index of the first target token)."""
        tok = self.tokenizer
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
        if not context:
            ids = tok(target, add_special_tokens=False)["input_ids"]
            return bos + ids, len(bos) if bos else 1
        ctx = tok(context, add_special_tokens=False)["input_ids"]
        whole = tok(context + " " + target, add_special_tokens=False)["input_ids"]
        if whole[:len(ctx)] != ctx:  # the join changed the context's tokens: encode the parts apart
            whole = ctx + tok(" " + target, add_special_tokens=False)["input_ids"]
        return bos + whole, len(bos) + len(ctx)

    def _fit_window(self, ids: list[int], start: int) -> tuple[list[int], int]:
        if len(ids) <= self.max_length:
            return ids, start
        self.truncated += 1
        drop = min(len(ids) - self.max_length, max(start - 1, 0))   # context first, keep one token before
        ids, start = ids[drop:], start - drop
        return ids[:self.max_length], start

    def score(self, targets: Sequence[str], contexts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(summed negative log-likelihood in nats, number of scored tokens) per target text."""
        import torch

        enc = [self._fit_window(*self._encode(t, c)) for t, c in zip(targets, contexts)]
        nll = np.zeros(len(enc))
        ntok = np.zeros(len(enc))
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else int(pad)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]))
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                idx = order[b:b + self.batch_size]
                width = max(len(enc[i][0]) for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                mask = torch.zeros((len(idx), width), dtype=torch.long)
                scored = torch.zeros((len(idx), width - 1), dtype=torch.bool)
                for r, i in enumerate(idx):
                    seq, start = enc[i]
                    ids[r, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                    mask[r, :len(seq)] = 1
                    scored[r, max(start, 1) - 1:len(seq) - 1] = True  # position j predicts token j + 1
                if width < 2:
                    continue
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                tok_lp = logp.gather(-1, ids[:, 1:].to(self.device).unsqueeze(-1)).squeeze(-1).cpu()
                tok_lp = torch.where(scored, tok_lp, torch.zeros_like(tok_lp))
                for r, i in enumerate(idx):
                    nll[i] = -float(tok_lp[r].sum())
                    ntok[i] = float(scored[r].sum())
        return nll, ntok


def _scorer_for(scorer: Any, corpus: Any, model_path: Any, order: int, smoothing: str, batch_size: int,
                device: str | None = None) -> Any:
    if hasattr(scorer, "score") and not isinstance(scorer, str):
        return scorer
    check_choice("scorer", scorer, ("ngram", "causal_lm"), where="perplexity")
    if scorer == "causal_lm":
        if model_path is None:
            raise ParameterError("perplexity: scorer='causal_lm' needs model_path=... (a local directory written by "
                                 "save_pretrained).", field="model_path")
        return CausalLMScorer(model_path, batch_size=batch_size, device=device)
    return NgramScorer(corpus, order=order, smoothing=smoothing)


NGRAM_FALLBACK = ("perplexity: no language model given (model_path=... or scorer=...), so this is the n-gram "
                  "measure, not the paper's perplexity under a pretrained neural LM; name it ngram_perplexity (the "
                  "n-gram form of 'perplexity' is deprecated)")


@dimension("perplexity", "the paper's: perplexity under a local causal LM (model_path, profile --lm); "
           "without one, the deprecated n-gram form")
def perplexity(texts: Sequence[Any] | None = None, *, scorer: Any = None, corpus: Sequence[Any] | None = None,
               model_path: Any = None, conditional: bool = True, order: int = 3, smoothing: str = "witten_bell",
               batch_size: int = 16, folds: int = 5, seed: int = 0, device: str | None = None) -> np.ndarray:
    """Per-item perplexity under a language model (Kovatchev & Lease 2024, Sec. 3 and App. A, "perplexity").

    The paper's quantity is the perplexity under a pretrained causal LM (GPT2-large), conditional:
    give ``model_path`` (a local directory; nothing is downloaded) or a ``scorer`` object. Without
    either, it falls back to :func:`ngram_perplexity` with a ``FutureWarning`` -- that deprecated
    form is kept because documented commands use ``--dims ...,perplexity``; name the n-gram measure
    ``ngram_perplexity``.

    ``exp(mean over the scored tokens of -log p(token | preceding tokens))``. With
    ``conditional=True`` (default) a pair item ``(premise, hypothesis)`` or ``(context, question)``
    is scored as the perplexity of its **last** text given the others as a prefix: only the last
    text's tokens are averaged. A single string, or any item with ``conditional=False`` (the parts
    joined with a space), is scored plainly.

    ``scorer``:

    - ``None`` (default): ``"causal_lm"`` when ``model_path`` is given, else the deprecated n-gram fallback;
    - ``"ngram"``: :class:`NgramScorer` (``nltk.lm``; ``order``, ``smoothing``; needs
      ``pip install 'evalsift[transparency]'``) trained on ``corpus``. Without ``corpus`` it is
      cross-fitted on the items' own texts: split in ``folds`` parts (seeded), each scored by a model
      trained on the other parts.
    - ``"causal_lm"``: :class:`CausalLMScorer` from the local directory ``model_path`` (on ``device``:
      ``None`` is the process default, ``--device``; fp32; ``batch_size`` texts per forward pass).
    - any object with ``score(targets, contexts) -> (nll_sum_nats, n_tokens)`` arrays.

    NaN: missing items, targets without a token, and items with no scored token.

    >>> corpus = ["the cat sat on the mat", "the dog sat on the rug"] * 20
    >>> ppl = perplexity(["the cat sat on the mat", "mat the on cat the sat"], scorer="ngram", corpus=corpus)
    >>> bool(ppl[0] < ppl[1])
    True
    """
    if scorer is None:
        if model_path is None:
            import warnings

            warnings.warn(NGRAM_FALLBACK, FutureWarning, stacklevel=2)
            scorer = "ngram"
        else:
            scorer = "causal_lm"
    texts = _nonempty(texts, "texts")
    parts = [_item_parts(t, i) for i, t in enumerate(texts)]
    targets: list[str | None] = []
    contexts: list[str | None] = []
    for p in parts:
        if p is None or not (p[-1] if conditional else " ".join(p)).strip():
            targets.append(None)
            contexts.append(None)
        elif conditional and len(p) > 1:
            targets.append(p[-1])
            contexts.append(" ".join(p[:-1]))
        else:
            targets.append(" ".join(p))
            contexts.append(None)
    ok = np.array([t is not None for t in targets])
    if not ok.any():
        raise DataError("texts: no item has text to score.", field="texts")
    nll = np.full(len(texts), np.nan)
    ntok = np.zeros(len(texts))

    def run(sc: Any, idx: np.ndarray) -> None:
        if idx.size == 0:
            return
        a, b = sc.score([targets[i] for i in idx], [contexts[i] for i in idx])
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != (idx.size,) or b.shape != (idx.size,):
            raise ParameterError(f"perplexity: scorer.score returned shapes {a.shape}, {b.shape}; expected "
                                 f"({idx.size},) each (nll sums, token counts).", field="scorer")
        nll[idx], ntok[idx] = a, b

    idx = np.flatnonzero(ok)
    if isinstance(scorer, str) and scorer == "ngram" and corpus is None:
        own = [parts[i] for i in range(len(parts))]
        for train, test in _splits(idx, _check_folds(folds, idx.size, "perplexity"), seed):
            run(NgramScorer([own[i] for i in train], order=order, smoothing=smoothing), test)
    else:
        if isinstance(scorer, str) and scorer == "ngram" and len(corpus) == 0:
            raise DataError("corpus: empty; give reference texts or leave corpus=None to cross-fit on the items.",
                            field="corpus")
        run(_scorer_for(scorer, corpus, model_path, order, smoothing, batch_size, device), idx)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.where(ntok > 0, np.exp(nll / np.where(ntok > 0, ntok, 1)), np.nan)


@dimension("ngram_perplexity", "perplexity under an n-gram LM cross-fitted on the items (ours; no pretrained LM)")
def ngram_perplexity(texts: Sequence[Any] | None = None, *, corpus: Sequence[Any] | None = None,
                     conditional: bool = True, order: int = 3, smoothing: str = "witten_bell", folds: int = 5,
                     seed: int = 0) -> np.ndarray:
    """Per-item perplexity under an n-gram LM (ours: the label-free stand-in for the paper's perplexity when no
    pretrained LM is available offline).

    :func:`perplexity` with ``scorer="ngram"`` (:class:`NgramScorer`, ``nltk.lm``): a trigram
    Witten-Bell model, trained on ``corpus`` or, without one, cross-fitted on the items' own texts in
    ``folds`` seeded parts (no item is scored by a model trained on it). Conditional for pairs (the
    last text given the others), as the paper's. It measures how typical an item's word sequences
    are *within this data set*, not how likely the text is under a general language model: the
    paper's GPT2-large perplexity is a different quantity. Needs no judgment.

    >>> corpus = ["the cat sat on the mat", "the dog sat on the rug"] * 20
    >>> ppl = ngram_perplexity(["the cat sat on the mat", "mat the on cat the sat"], corpus=corpus)
    >>> bool(ppl[0] < ppl[1])
    True
    """
    return perplexity(texts, scorer="ngram", corpus=corpus, conditional=conditional, order=order,
                      smoothing=smoothing, folds=folds, seed=seed)


__all__ = ["CausalLMScorer", "NgramScorer", "length", "ngram_perplexity", "perplexity"]
