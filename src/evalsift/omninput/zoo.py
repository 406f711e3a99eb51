"""Built-in models for OmniInput, trained here on the CPU from data on disk (nothing is downloaded).

Registry ``omni_models`` (decorator ``@omni_model``); :func:`load_model` builds one by name, or loads a
user's model from a file, and returns ``(model, space)``.

- ``toy-paper``: the paper's toy (Sec. 3.2): 6 layers, 4 heads, 8 digits (10^8 sequences), which
  enumeration decodes as a prefix tree (``TinyCausalLM.subtree``) in minutes.
- ``toy``: the same kind of model, small by default (2 layers, 6 digits). A small causal transformer
  language model (:class:`TinyCausalLM`) trained
  on digit sequences of ``length`` digits whose sum is divisible by ``modulus`` (30); its output is a
  sequence's NLL. The input space is every digit sequence (10^length inputs: enumerable for length
  <= 8), and the rule "sum divisible by 30" is the exact judge, so rho(z), r(z) and the PR curve are
  known exactly.
- ``digits-lr``, ``digits-mlp``: 0-vs-1 classifiers (logistic regression; a one-hidden-layer MLP) on
  scikit-learn's bundled 8x8 digits (pixel levels 0-16, so the space is 17^64 images); the output is
  the logit of "1".
- ``lm``: a small word-level causal transformer trained on English text under ``$EVALSIFT_DATA``
  (SummEval's articles and reference summaries, WMT23's English sources); the input space is every
  sequence of ``length`` words of its vocabulary (``<unk>`` excluded); the output is the NLL.

Trained weights are cached under ``$EVALSIFT_CACHE/omni`` (default ``~/.cache/evalsift/omni``), keyed by
the configuration and the training data's hash; training is seeded and deterministic on one machine.

User models (``load_model(PATH)``): a ``.py`` file defining ``build(**options) -> (model, space)``, or a
pickled (joblib) scikit-learn classifier with ``positions=``/``values=`` options for its space.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import DataError, ParameterError
from ..registry import Registry
from .models import SklearnModel, TorchModel, _torch
from .space import InputSpace

omni_models: Registry[Callable[..., tuple[Any, InputSpace]]] = Registry("omni model")


def omni_model(name: str, help: str = "") -> Callable:
    """Register a built-in model factory ``(**options) -> (model, space)`` under ``name``."""
    return omni_models.register(name, help)


def cache_dir() -> Path:
    """Where trained built-in models are kept: ``$EVALSIFT_CACHE/omni`` (default ``~/.cache/evalsift/omni``)."""
    from ..embed.cache import default_cache_dir

    return default_cache_dir() / "omni"


def load_model(spec: str, **options: Any) -> tuple[Any, InputSpace]:
    """``(model, space)`` for a built-in name (``toy``, ``digits-lr``, ``digits-mlp``, ``lm``), a local Hugging Face
    model (``hf-lm:PATH``, ``hf-cls:PATH``: :func:`~evalsift.omninput.hf.load_hf_model`) or a file path.

    Options go to the factory (e.g. ``length=6`` for the toy). ``device=`` (``auto``, ``cpu``, ``cuda``,
    ``cuda:N``; default: the process default of :mod:`evalsift.device`) is where a torch model runs; models
    that are not torch (scikit-learn, functions) run in numpy on the CPU whatever it says. An unknown name
    that is not a file suggests the closest built-in name.
    """
    device = options.pop("device", None)
    from .hf import is_hf_spec, load_hf_model

    if is_hf_spec(spec):
        return load_hf_model(spec, device=device, **options)
    if spec in omni_models:
        factory = omni_models.get(spec)
        if "device" in inspect.signature(factory).parameters:
            options["device"] = device
        model, space = factory(**options)
        model.spec = spec
        return model, space
    path = Path(spec)
    if path.suffix == ".py" and path.is_file():
        model, space = _from_python(path, options)
        if isinstance(model, TorchModel):
            model.to(device)
        return model, space
    if path.suffix in (".joblib", ".pkl", ".pickle") and path.is_file():
        return _from_pickle(path, options)
    if path.suffix and not path.exists():
        raise DataError(f"--model {spec}: no such file", field="model")
    if path.exists():
        raise DataError(f"--model {spec}: a model file must be a .py file with build(**options) -> (model, space), "
                        "or a .joblib/.pkl scikit-learn classifier (with --positions and --values)", field="model")
    omni_models.get(spec)  # the unknown-name message with a suggestion
    raise AssertionError("unreachable")


def files_fingerprint(spec: str) -> str | None:
    """The fingerprint of the files behind a model spec, computed without loading anything: for ``hf-lm:DIR`` /
    ``hf-cls:DIR`` the checked folder's (:meth:`evalsift.hf_folder.ModelFolder.fingerprint`: config, safetensors
    weights, tokenizer; a folder that could run code is refused here), for a model file the SHA-256 of its bytes,
    for a built-in name None (its code is evalsift's; its weights are checked by the model's own fingerprint)."""
    from .hf import is_hf_spec

    if is_hf_spec(spec):
        from ..hf_folder import read_model_folder

        return read_model_folder(str(spec).partition(":")[2], option=f"--model {spec}").fingerprint()
    if spec in omni_models:
        return None
    path = Path(spec)
    if not path.is_file():
        raise DataError(f"--model {spec}: no such file", field="model")
    return _file_sha256(path)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _from_python(path: Path, options: dict[str, Any]) -> tuple[Any, InputSpace]:
    from .models import as_model

    files = _file_sha256(path)  # the bytes that are run, hashed before they run

    mod_spec = importlib.util.spec_from_file_location(f"evalsift_user_model_{path.stem}", path)
    module = importlib.util.module_from_spec(mod_spec)
    try:
        mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as e:  # noqa: BLE001 - the user's file: say where it failed
        raise DataError(f"--model {path}: importing it failed ({type(e).__name__}: {e})", field="model") from None
    build = getattr(module, "build", None)
    if not callable(build):
        raise DataError(f"--model {path}: the file defines no build(**options) -> (model, space)", field="model")
    out = build(**options)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], InputSpace)):
        raise DataError(f"--model {path}: build() must return (model, InputSpace)", field="model")
    model = as_model(out[0], name=path.stem) if not hasattr(out[0], "positive") else out[0]
    if not hasattr(model, "fingerprint"):
        model.fingerprint = lambda: files  # type: ignore[attr-defined]
    model.spec = str(path)
    model.files_fingerprint = files
    return model, out[1]


def _from_pickle(path: Path, options: dict[str, Any]) -> tuple[Any, InputSpace]:
    import joblib

    files = _file_sha256(path)  # hashed before it is unpickled
    try:
        est = joblib.load(path)
    except Exception as e:  # noqa: BLE001
        raise DataError(f"--model {path}: cannot unpickle it ({type(e).__name__}: {e})", field="model") from None
    D, V = options.get("positions"), options.get("values")
    if not D or not V:
        raise ParameterError(f"--model {path}: a pickled classifier needs its input space: --positions D --values V "
                             "(pixel levels 0..V-1)", field="positions")
    shape = options.get("shape")
    space = InputSpace(int(D), int(V), kind="image" if shape else "tokens", shape=shape, name=path.stem)
    model = SklearnModel(est, name=path.stem)
    model.spec = str(path)
    model.files_fingerprint = files
    return model, space


# ---------------------------------------------------------------------------------------------- the transformer
def _tiny_lm_class():
    torch = _torch()
    nn = torch.nn

    class TinyCausalLM(nn.Module):
        """A small causal transformer language model over ``vocab`` tokens and sequences of ``length``.

        ``forward(tokens (B, L)) -> NLL (B,)`` of each sequence (a beginning-of-sequence token is
        prepended, every position is predicted); ``forward_onehot`` the same on one-hot inputs
        (differentiable, for gradient proposals); ``completions(prefixes (B, L-1)) -> (B, vocab)``
        the NLL of every one-token completion of each prefix at once; ``subtree(stems (B, k)) -> (B,
        vocab^(L-k))`` the NLL of every sequence that starts with each stem, decoded incrementally (each
        layer's keys and values cached, so each node of the prefix tree costs one position, not L).
        """

        def __init__(self, vocab: int, length: int, d_model: int = 64, heads: int = 4, layers: int = 2,
                     ff: int = 128) -> None:
            super().__init__()
            self.vocab, self.length = vocab, length
            self.tok = nn.Embedding(vocab + 1, d_model)  # the last index is <bos>
            self.pos = nn.Embedding(length, d_model)
            layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length), persistent=False)
            self.info = {"vocab": vocab, "length": length, "d_model": d_model, "heads": heads, "layers": layers,
                         "ff": ff}

        def _logp(self, emb: Any) -> Any:
            """Log-probabilities (B, L, vocab) of the next token at every position, from input embeddings
            of [<bos>, x_1, ..., x_{L-1}]."""
            L = emb.shape[1]
            h = emb + self.pos.weight[:L][None]
            h = self.blocks(h, mask=self.mask[:L, :L], is_causal=True)
            return torch.log_softmax(self.head(self.norm(h)), dim=-1)

        def _inputs(self, tokens: Any) -> Any:
            bos = torch.full((tokens.shape[0], 1), self.vocab, dtype=torch.long, device=tokens.device)
            return self.tok(torch.cat([bos, tokens[:, :-1]], dim=1))

        def forward(self, tokens: Any) -> Any:
            logp = self._logp(self._inputs(tokens))
            return -logp.gather(2, tokens[:, :, None]).squeeze(2).sum(dim=1)

        def forward_onehot(self, onehot: Any) -> Any:
            B = onehot.shape[0]
            bos = self.tok.weight[self.vocab][None, None, :].expand(B, 1, -1)
            emb = torch.cat([bos, onehot[:, :-1, :].to(self.tok.weight.dtype) @ self.tok.weight[:self.vocab]], dim=1)
            logp = self._logp(emb)
            return -(logp.to(onehot.dtype) * onehot).sum(dim=(1, 2))

        def _attend(self, blk: Any, x: Any) -> tuple[Any, Any]:
            """One layer's pre-norm causal self-attention of ``x`` (N, T, d) written out (the same
            arithmetic as the layer's own), returning its keys and values (N, H, T, dh) as well."""
            att = blk.self_attn
            N, T, d = x.shape
            H = att.num_heads
            q, k, v = torch.nn.functional.linear(blk.norm1(x), att.in_proj_weight, att.in_proj_bias).chunk(3, dim=-1)
            q, k, v = (t.reshape(N, T, H, d // H).transpose(1, 2) for t in (q, k, v))
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return x + att.out_proj(o.transpose(1, 2).reshape(N, T, d)), (k, v)

        def _decode(self, emb: Any) -> tuple[Any, list]:
            """Log-probabilities (N, T, vocab) of the next token after input embeddings ``emb`` (N, T, d), and
            each layer's keys and values."""
            h = emb + self.pos.weight[:emb.shape[1]][None]
            kvs = []
            for blk in self.blocks.layers:
                h, kv = self._attend(blk, h)
                h = h + blk.linear2(blk.activation(blk.linear1(blk.norm2(h))))
                kvs.append(kv)
            return torch.log_softmax(self.head(self.norm(h)), dim=-1), kvs

        def _tree_attend(self, blk: Any, x: Any, levels: list) -> Any:
            """Self-attention of one new position per node ``x`` (n, 1, d) over its ancestors' keys and
            values, kept once per level of the prefix tree (``levels``: (n_j, H, s_j, dh) pairs, node i's
            ancestor at level j being i // (n / n_j)), not copied to every descendant; appends its own."""
            att = blk.self_attn
            n, _, d = x.shape
            H = att.num_heads
            q, k, v = torch.nn.functional.linear(blk.norm1(x), att.in_proj_weight, att.in_proj_bias).chunk(3, dim=-1)
            q, k, v = (t.reshape(n, H, 1, d // H) for t in (q, k, v))
            levels.append((k, v))
            q = q.reshape(n, H, d // H) * (d // H) ** -0.5
            scores = [torch.einsum("nrhd,nhsd->nrhs", q.reshape(kj.shape[0], -1, H, d // H), kj).reshape(n, H, -1)
                      for kj, _ in levels]
            p = torch.softmax(torch.cat(scores, dim=2), dim=2).split([sc.shape[2] for sc in scores], dim=2)
            o = sum(torch.einsum("nrhs,nhsd->nrhd", pj.reshape(vj.shape[0], -1, H, vj.shape[2]), vj).reshape(n, d)
                    for pj, (_, vj) in zip(p, levels))
            return x + att.out_proj(o)[:, None, :]

        def subtree(self, stems: Any) -> Any:
            B, k = stems.shape
            V, L = self.vocab, self.length
            bos = torch.full((B, 1), V, dtype=torch.long, device=stems.device)
            logp, cache = self._decode(self.tok(torch.cat([bos, stems], dim=1)))  # (B, k+1, V)
            nll = -logp[:, :-1, :].gather(2, stems[:, :, None]).squeeze(2).sum(dim=1)
            nxt = logp[:, -1, :]
            levels = [[kv] for kv in cache]  # per layer: the stems' keys/values, then one level per position
            for t in range(k, L - 1):  # expand every node by every value of position t (0-based), then decode it
                n = nxt.shape[0]
                nll = (nll[:, None] - nxt).reshape(-1)
                h = self.tok(torch.arange(V, device=stems.device).repeat(n))[:, None, :] + self.pos.weight[t + 1]
                for blk, lev in zip(self.blocks.layers, levels):
                    h = self._tree_attend(blk, h, lev)
                    h = h + blk.linear2(blk.activation(blk.linear1(blk.norm2(h))))
                nxt = torch.log_softmax(self.head(self.norm(h[:, 0, :])), dim=-1)
            return (nll[:, None] - nxt).reshape(B, -1)

        def completions(self, prefixes: Any) -> Any:
            B = prefixes.shape[0]
            bos = torch.full((B, 1), self.vocab, dtype=torch.long, device=prefixes.device)
            logp = self._logp(self.tok(torch.cat([bos, prefixes], dim=1)))  # (B, L, V): L = len(prefix) + 1
            head = -logp[:, :-1, :].gather(2, prefixes[:, :, None]).squeeze(2).sum(dim=1)
            return head[:, None] - logp[:, -1, :]

    return TinyCausalLM


def _train_lm(model: Any, batches: Callable[[np.random.Generator, int], np.ndarray], *, steps: int, batch: int,
              lr: float, seed: int, quiet: bool | None = None, device: str | None = None) -> list[float]:
    """Adam on the mean NLL per token, on ``device`` (``None``: the process default; the batches are drawn by
    numpy, so the data do not depend on it); returns the loss every 50 steps. The model is left on the CPU."""
    from ..device import record_use, resolve_device
    from ..progress import progress_bar

    torch = _torch()
    device = resolve_device(device)
    model.to(device)
    record_use("training " + type(model).__name__, device, "fp32")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    with progress_bar(steps, "training the model", quiet) as advance:
        for step in range(steps):
            x = torch.as_tensor(batches(rng, batch), dtype=torch.long).to(device)
            loss = model(x).mean() / x.shape[1]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            if step % 50 == 0 or step == steps - 1:
                losses.append(loss.item())
            advance()
    model.eval()
    model.to("cpu")
    return losses


def _cached(key: dict[str, Any], build: Callable[[], Any], make: Callable[[], Any]) -> tuple[Any, dict]:
    """Load trained weights for ``key`` from the cache, or train (``build`` returns (module, info)) and store.

    Processes sharing a cache take turns (a lock file beside the weights): a second process asking for the
    same model while the first trains it waits, then loads the first's weights instead of training again."""
    torch = _torch()
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir()
    path = folder / f"{key['name']}-{digest}.pt"
    loaded = _load_weights(torch, path, make)
    if loaded is not None:
        return loaded
    folder.mkdir(parents=True, exist_ok=True)
    with _file_lock(path.with_name(path.name + ".lock")):
        loaded = _load_weights(torch, path, make)  # trained by another process while this one waited
        if loaded is not None:
            return loaded
        module, info = build()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        torch.save({"state": module.state_dict(), "info": json.dumps(info)}, tmp)
        os.replace(tmp, path)
    return module, info


def _load_weights(torch: Any, path: Path, make: Callable[[], Any]) -> tuple[Any, dict] | None:
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        module = make()
        module.load_state_dict(saved["state"])
        module.eval()
        return module, json.loads(saved["info"])
    except Exception:  # noqa: BLE001 - a damaged cache file: train again
        return None


def _file_lock(path: Path) -> Any:
    """An inter-process lock (the ``filelock`` package, which torch itself requires); none without it."""
    try:
        from filelock import FileLock
    except ImportError:  # pragma: no cover - torch depends on filelock
        import contextlib

        return contextlib.nullcontext()
    return FileLock(str(path))

# ---------------------------------------------------------------------------------------------- the toy
def toy_positives(rng: np.random.Generator, n: int, length: int, modulus: int) -> np.ndarray:
    """``n`` uniform draws from the digit sequences whose sum is divisible by ``modulus`` (rejection)."""
    out = []
    have = 0
    while have < n:
        x = rng.integers(0, 10, size=(max(4 * n, 1024), length))
        x = x[x.sum(axis=1) % modulus == 0]
        out.append(x)
        have += len(x)
    return np.concatenate(out)[:n]


def toy_rule(x: np.ndarray, modulus: int = 30) -> np.ndarray:
    """The toy's ground truth: True where the digits sum to a multiple of ``modulus``.

    >>> toy_rule(np.array([[9, 9, 9, 3, 0, 0], [1, 2, 3, 4, 5, 6]])).tolist()
    [True, False]
    """
    return np.asarray(x, dtype=np.int64).sum(axis=1) % modulus == 0


@omni_model("toy", help="a small toy (2 layers, length 6): a transformer LM on digit sequences whose sum is divisible "
                        "by 30 (NLL); toy-paper is the paper's architecture")
def toy(*, length: int = 6, modulus: int = 30, seed: int = 0, d_model: int = 64, layers: int = 2, steps: int = 1500,
        batch: int = 256, lr: float = 3e-3, quiet: bool | None = None, device: str | None = None
        ) -> tuple[Any, InputSpace]:
    """The toy model and its space (10^length digit sequences): a causal transformer with 4 heads and
    ``layers`` layers of width ``d_model``. ``steps``/``batch``/``lr``: training. The defaults are a
    small, quick toy; :func:`toy_paper` has the paper's 6 layers and length 8. ``device``: where it trains and
    runs (``None``: the process default, :mod:`evalsift.device`); the trained weights are cached whatever the
    device and load on either."""
    for name, v, lo in (("length", length, 2), ("modulus", modulus, 2), ("steps", steps, 1), ("d_model", d_model, 8),
                        ("layers", layers, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ParameterError(f"toy: {name} must be an integer >= {lo}, got {v!r}", field=name)
    if length > 12:
        raise ParameterError("toy: length above 12 is not supported (the exact check needs enumeration)", field="length")
    Cls = _tiny_lm_class()
    key = {"name": "toy", "length": length, "modulus": modulus, "seed": seed, "d_model": d_model, "layers": layers,
           "steps": steps, "batch": batch, "lr": lr, "version": 1}

    def make() -> Any:
        _torch().manual_seed(seed)
        return Cls(10, length, d_model=d_model, heads=4, layers=layers, ff=2 * d_model)

    def build() -> tuple[Any, dict]:
        m = make()
        losses = _train_lm(m, lambda rng, n: toy_positives(rng, n, length, modulus), steps=steps, batch=batch, lr=lr,
                           seed=seed, quiet=quiet, device=device)
        n_pos = _count_positives(length, modulus)
        return m, {"final_loss_per_token": losses[-1], "ideal_nll": math.log(n_pos), "positives": n_pos}

    module, info = _cached(key, build, make)
    model = TorchModel(module, name=f"toy-L{length}", output="nll", device=device)
    model.info.update(key, **info, rule=f"sum of digits % {modulus} == 0")
    space = InputSpace(length, 10, kind="tokens", name=f"digit sequences of length {length}")
    return model, space


@omni_model("toy-paper", help="the paper's toy (Sec. 3.2): 6 layers, 4 heads, 8 digits (10^8 sequences), trained on "
                              "the sequences whose sum is divisible by 30 (NLL)")
def toy_paper(*, length: int = 8, modulus: int = 30, seed: int = 0, d_model: int = 32, layers: int = 6,
              steps: int = 600, batch: int = 128, lr: float = 3e-3, quiet: bool | None = None,
              device: str | None = None) -> tuple[Any, InputSpace]:
    """The toy with the architecture of the paper's Sec. 3.2: a causal transformer with 6 layers and 4
    attention heads over sequences of 8 digits, trained to generate the sequences whose digits sum to a
    multiple of 30. The paper gives neither the width nor the training; ours: ``d_model=32`` (8 per
    head), 600 AdamW steps of 128 sequences (a few minutes on two CPU cores). The options are
    :func:`toy`'s (``length=4`` keeps the architecture on a smaller space)."""
    return toy(length=length, modulus=modulus, seed=seed, d_model=d_model, layers=layers, steps=steps, batch=batch,
               lr=lr, quiet=quiet, device=device)


def _count_positives(length: int, modulus: int) -> int:
    """How many digit sequences of ``length`` have a sum divisible by ``modulus`` (by convolution)."""
    dist = np.array([1], dtype=object)
    for _ in range(length):
        dist = np.convolve(dist, np.ones(10, dtype=object))
    return int(sum(dist[i] for i in range(0, len(dist), modulus)))


# ---------------------------------------------------------------------------------------------- digits
def digits_01(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits, classes 0 and 1 only: ``(X_train, y_train, X_test, y_test)``
    (a stratified 70/30 split), pixel levels 0-16 as integers."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    keep = d.target <= 1
    X, y = d.data[keep].astype(np.int64), d.target[keep]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    return Xtr, ytr, Xte, yte


def _digits_space(levels: int) -> InputSpace:
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 2 <= levels <= 17:
        raise ParameterError(f"digits: levels must be an integer in 2..17 (grey levels of a pixel: at least black and "
                             f"white, at most the data's 0-16), got {levels!r}", field="levels")
    return InputSpace(64, levels, kind="image", shape=(8, 8), name=f"8x8 images with {levels} grey levels")


def _digits_features(levels: int) -> Callable[[np.ndarray], np.ndarray]:
    """Inputs with ``levels`` grey levels mapped onto the data's 0-16 pixel scale."""
    scale = 16.0 / (levels - 1)
    return lambda x: np.asarray(x, dtype=np.float64) * scale


def _digits_model(kind: str, seed: int, levels: int) -> tuple[Any, InputSpace]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    space = _digits_space(levels)  # checked before anything is trained
    Xtr, ytr, Xte, yte = digits_01(seed)
    if kind == "lr":
        est = LogisticRegression(max_iter=5000, C=1.0)
    else:
        est = MLPClassifier(hidden_layer_sizes=(32,), max_iter=2000, random_state=seed)
    est.fit(Xtr.astype(np.float64), ytr)
    model = SklearnModel(est, designated=1, features=_digits_features(levels), name=f"digits-{kind}")
    model.info.update(test_accuracy=float(est.score(Xte, yte)), train_size=int(len(ytr)), test_size=int(len(yte)),
                      designated_class="1", levels=levels, seed=seed)
    return model, space


@omni_model("digits-lr", help="logistic regression, 0 vs 1 on sklearn's 8x8 digits (logit of '1')")
def digits_lr(*, seed: int = 0, levels: int = 17) -> tuple[Any, InputSpace]:
    """Logistic regression (C=1) on the 0/1 digits; ``levels``: grey levels of the input space (17: the data's)."""
    return _digits_model("lr", seed, levels)


@omni_model("digits-mlp", help="an MLP (32 ReLU units), 0 vs 1 on sklearn's 8x8 digits (logit of '1')")
def digits_mlp(*, seed: int = 0, levels: int = 17) -> tuple[Any, InputSpace]:
    """A one-hidden-layer MLP (32 ReLU units) on the 0/1 digits."""
    return _digits_model("mlp", seed, levels)


# ---------------------------------------------------------------------------------------------- english LM
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+|[.,;:!?]")


def english_text(data_root: str | os.PathLike[str] | None = None) -> tuple[list[str], list[str]]:
    """English text under the data folder: ``(texts, files read)``. SummEval's articles and reference
    summaries, and WMT23 en-de's English source segments."""
    from ..io.datasets import data_root as default_root

    root = Path(data_root) if data_root is not None else default_root()
    if root is None:
        raise DataError("the language model trains on English text from the shared data folder; set EVALSIFT_DATA "
                        "to it (see its README)", field="data")
    texts, files = [], []
    se = root / "summeval" / "summeval.json"
    if se.is_file():
        d = json.loads(se.read_text(encoding="utf-8"))
        for doc in d.values():
            texts.append(doc.get("src", ""))
            texts.extend(doc.get("ref_summs") or [doc.get("ref_summ", "")])
        files.append(str(se))
    src = root / "wmt23" / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt"
    if src.is_file():
        texts.extend(src.read_text(encoding="utf-8").splitlines())
        files.append(str(src))
    if not texts:
        raise DataError(f"the language model trains on English text from {se} or {src}; neither is there. Set "
                        "EVALSIFT_DATA to the shared data folder (see its README)", field="data")
    return texts, files


def tokenize(text: str) -> list[str]:
    """Lower-cased words, numbers and punctuation marks.

    >>> tokenize("The cat's mat, 2 days.")
    ['the', "cat's", 'mat', ',', '2', 'days', '.']
    """
    return _WORD.findall(text.lower().replace("-lrb-", " ").replace("-rrb-", " "))


@omni_model("lm", help="a small word-level transformer LM trained on English text under $EVALSIFT_DATA (NLL)")
def english_lm(*, length: int = 8, vocab: int = 1000, seed: int = 0, d_model: int = 96, layers: int = 2,
               steps: int = 2500, batch: int = 128, lr: float = 3e-3, data: str | None = None,
               quiet: bool | None = None, device: str | None = None) -> tuple[Any, InputSpace]:
    """The English LM and its space (``vocab - 1`` words at each of ``length`` positions; ``<unk>`` is
    in the model's vocabulary for training but not allowed in the space)."""
    from collections import Counter

    for name, v, lo in (("length", length, 1), ("vocab", vocab, 3), ("steps", steps, 1), ("d_model", d_model, 8),
                        ("layers", layers, 1), ("batch", batch, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            why = " (two words and <unk>: a space of one word per position holds one input)" if name == "vocab" else ""
            raise ParameterError(f"lm: {name} must be an integer >= {lo}{why}, got {v!r}", field=name)
    texts, files = english_text(data)
    sents = [tokenize(t) for t in texts]
    counts = Counter(w for s in sents for w in s)
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:vocab - 1]]
    itos = words + ["<unk>"]
    stoi = {w: i for i, w in enumerate(itos)}
    unk = len(itos) - 1
    stream = np.array([stoi.get(w, unk) for s in sents for w in s], dtype=np.int64)
    h = hashlib.sha256(stream.tobytes()).hexdigest()[:16]
    Cls = _tiny_lm_class()
    key = {"name": "lm", "length": length, "vocab": len(itos), "seed": seed, "d_model": d_model, "layers": layers,
           "steps": steps, "batch": batch, "lr": lr, "data": h, "version": 1}

    def make() -> Any:
        _torch().manual_seed(seed)
        return Cls(len(itos), length, d_model=d_model, heads=4, layers=layers, ff=2 * d_model)

    def windows(rng: np.random.Generator, n: int) -> np.ndarray:
        start = rng.integers(0, stream.size - length, size=n)
        return stream[start[:, None] + np.arange(length)[None, :]]

    def build() -> tuple[Any, dict]:
        m = make()
        losses = _train_lm(m, windows, steps=steps, batch=batch, lr=lr, seed=seed, quiet=quiet, device=device)
        return m, {"final_loss_per_token": losses[-1], "tokens": int(stream.size),
                   "unk_share": float((stream == unk).mean()), "files": files}

    module, info = _cached(key, build, make)
    model = TorchModel(module, name=f"lm-L{length}", output="nll", device=device)
    model.info.update(key, **info)
    allowed = np.ones((length, len(itos)), dtype=bool)
    allowed[:, unk] = False
    space = InputSpace(length, len(itos), allowed=allowed, kind="tokens", vocab=itos, joiner=" ",
                       name=f"sequences of {length} words from a {len(itos) - 1}-word vocabulary")
    return model, space


__all__ = ["cache_dir", "digits_01", "english_lm", "english_text", "load_model", "omni_model", "omni_models",
           "tokenize", "toy", "toy_paper", "toy_positives", "toy_rule"]
