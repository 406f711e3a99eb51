"""Models as OmniInput sees them: a map from a batch of inputs (int array B x D) to one output value z each.

z is what the output distribution rho(z) is taken over: a class logit (higher = more the designated
class) or a sequence's negative log-likelihood (lower = the model finds it more likely). Every model
says which side of z it calls positive (``positive``: ``"high"`` for a logit, ``"low"`` for an NLL),
so precision and recall are read the right way round.

Adapters: :class:`FunctionModel` (any callable), :class:`SklearnModel` (a fitted scikit-learn
classifier over pixel grids or features), :class:`TorchModel` (a torch module over token ids; with a
``forward_onehot`` method it also gives gradients, which the samplers' gradient proposals use).
:func:`as_model` picks the adapter.

>>> m = FunctionModel(lambda x: x.sum(axis=1), name="sum")
>>> m(np.array([[1, 2], [3, 4]])).tolist(), m.positive
([3.0, 7.0], 'high')
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ..errors import DataError, ParameterError, check_choice, missing_dependency

OUTPUTS = ("logit", "nll", "score")
SIDES = ("high", "low")


@runtime_checkable
class OmniModel(Protocol):
    """What a sampler needs: ``name``, ``output`` ('logit' | 'nll' | 'score'), ``positive`` ('high' | 'low')
    and ``__call__(x) -> z`` for a (B, D) int array. Optional: ``grad(x) -> (z, dz/d onehot)`` with the
    gradient of shape (B, D, V); ``completions(prefixes) -> (B, V)`` the outputs of every value of the
    last position (exact enumeration uses it); ``fingerprint() -> str``; ``info`` (a dict for reports)."""

    name: str
    output: str
    positive: str

    def __call__(self, x: np.ndarray) -> np.ndarray: ...


class _Base:
    """Shared checks and bookkeeping of the adapters."""

    def __init__(self, name: str, output: str, positive: str | None, batch_size: int | None) -> None:
        self.name = str(name)
        self.output = check_choice("output", output, OUTPUTS, where=f"model {name!r}")
        self.positive = check_choice("positive", positive or ("low" if output == "nll" else "high"), SIDES,
                                     where=f"model {name!r}")
        if batch_size is not None and (isinstance(batch_size, bool) or int(batch_size) < 1):
            raise ParameterError(f"model {name!r}: batch_size must be a positive integer", field="batch_size")
        self.batch_size = None if batch_size is None else int(batch_size)
        self.info: dict[str, Any] = {}

    def _batched(self, fn: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if self.batch_size is None or len(x) <= self.batch_size:
            return self._check(fn(x), len(x))
        return np.concatenate([self._check(fn(x[i:i + self.batch_size]), len(x[i:i + self.batch_size]))
                               for i in range(0, len(x), self.batch_size)])

    def _check(self, z: Any, n: int) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64).reshape(-1)
        if z.shape != (n,):
            raise DataError(f"model {self.name!r} returned {z.size} values for a batch of {n} inputs; it must return "
                            "one output value per input", field="model")
        bad = np.flatnonzero(~np.isfinite(z))
        if bad.size:
            raise DataError(f"model {self.name!r} returned {z[bad[0]]} for input row {int(bad[0])}; outputs must be "
                            "finite (clip a log-probability, e.g. max(log p, -1e4))", field="model")
        return z

    def fingerprint(self) -> str:
        """A short identity of the model (parameters where known), for checkpoints and caches."""
        return hashlib.sha256(repr(self.info or self.name).encode()).hexdigest()[:16]


class FunctionModel(_Base):
    """Any callable ``fn(x: int array (B, D)) -> (B,)`` floats as a model.

    ``output``: 'logit', 'nll' or 'score'; ``positive``: which side of z is the positive prediction
    (default: 'low' for an NLL, else 'high'); ``batch_size``: at most this many rows per call.
    ``fingerprint``: a string naming the function's version (checkpoints refuse a different one).
    """

    def __init__(self, fn: Callable[[np.ndarray], Any], *, name: str = "function", output: str = "score",
                 positive: str | None = None, batch_size: int | None = None, fingerprint: str | None = None) -> None:
        if not callable(fn):
            raise ParameterError(f"FunctionModel needs a callable, got {type(fn).__name__}", field="model")
        super().__init__(name, output, positive, batch_size)
        self.fn = fn
        self._fp = fingerprint
        self.info = {"adapter": "function", "name": self.name, "output": self.output, "positive": self.positive}

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self._batched(self.fn, x)

    def fingerprint(self) -> str:
        return self._fp or super().fingerprint()


def _linear_decision(est: Any, X: np.ndarray) -> np.ndarray | None:
    """A fitted linear classifier's binary decision function, ``X @ coef_.T + intercept_`` (what its own
    ``decision_function`` computes), without scikit-learn's input validation on every call: the samplers call
    the model some 10^4 times per run on small batches, where the checks cost more than the product."""
    try:
        from sklearn.linear_model._base import LinearClassifierMixin
    except ImportError:  # a scikit-learn that moved it: its own decision_function, checks and all
        return None
    coef, intercept = getattr(est, "coef_", None), getattr(est, "intercept_", None)
    if not isinstance(est, LinearClassifierMixin) or not isinstance(coef, np.ndarray) or coef.shape[0] != 1:
        return None
    X = np.asarray(X, dtype=coef.dtype if coef.dtype == np.float32 else np.float64)
    if X.ndim != 2 or X.shape[1] != coef.shape[1] or not np.isfinite(X).all():
        return None  # scikit-learn's own call gives its error message
    return (X @ coef.T + intercept)[:, 0]


class SklearnModel(_Base):
    """A fitted scikit-learn classifier as a model over pixel grids (or any integer features).

    z is the designated class's logit: ``decision_function`` for a binary classifier with a linear
    score (logistic regression, linear SVM), the output layer's pre-activation for an
    ``MLPClassifier`` (so it never saturates as a probability would), else ``log p(c) - log(1 - p(c))``
    from ``predict_proba`` (clipped at 1e-12). ``designated``: the class label whose logit is z
    (default: the second of ``classes_``, the positive class of a binary classifier).
    ``features``: maps the (B, D) integer inputs to the classifier's features (default: as floats).
    """

    def __init__(self, estimator: Any, *, designated: Any = None, features: Callable[[np.ndarray], np.ndarray] | None = None,
                 name: str | None = None, batch_size: int | None = 65536) -> None:
        classes = getattr(estimator, "classes_", None)
        if classes is None:
            raise ParameterError("SklearnModel needs a fitted classifier (it has no classes_); call fit first",
                                 field="model")
        super().__init__(name or type(estimator).__name__, "logit", "high", batch_size)
        self.estimator = estimator
        self.classes = list(classes)
        self.designated = self.classes[-1] if designated is None else designated
        if self.designated not in self.classes:
            raise ParameterError(f"SklearnModel: designated class {self.designated!r} is not one of the classifier's "
                                 f"classes {self.classes}", field="designated")
        self.col = self.classes.index(self.designated)
        self.features = features or (lambda x: np.asarray(x, dtype=np.float64))
        self.info = {"adapter": "sklearn", "estimator": type(estimator).__name__, "designated": str(self.designated),
                     "params": {k: repr(v) for k, v in sorted(estimator.get_params().items())}
                     if hasattr(estimator, "get_params") else {}}

    def _logit(self, x: np.ndarray) -> np.ndarray:
        X = self.features(x)
        est = self.estimator
        if type(est).__name__ == "MLPClassifier":
            out = _mlp_output(est, X)
            if len(self.classes) == 2:  # one logistic output unit: the logit of classes_[1]
                return out[:, 0] if self.col == 1 else -out[:, 0]
            return out[:, self.col]  # softmax outputs: the class's pre-softmax score
        if hasattr(est, "decision_function") and len(self.classes) == 2:
            z = _linear_decision(est, X)
            z = np.asarray(est.decision_function(X) if z is None else z, dtype=np.float64)
            return z if self.col == 1 else -z
        p = np.clip(np.asarray(est.predict_proba(X), dtype=np.float64)[:, self.col], 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self._batched(self._logit, x)

    def fingerprint(self) -> str:
        parts = [repr(self.info)]
        for attr in ("coef_", "intercept_", "coefs_", "intercepts_"):
            v = getattr(self.estimator, attr, None)
            if v is not None:
                for a in (v if isinstance(v, list) else [v]):
                    parts.append(hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest())
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _mlp_output(est: Any, X: np.ndarray) -> np.ndarray:
    """The output layer's pre-activation of a fitted ``MLPClassifier`` (its public ``coefs_``,
    ``intercepts_`` and ``activation``), shape (B, n_outputs)."""
    acts = {"relu": lambda a: np.maximum(a, 0.0), "tanh": np.tanh, "logistic": lambda a: 1.0 / (1.0 + np.exp(-a)),
            "identity": lambda a: a}
    h = np.asarray(X, dtype=np.float64)
    n = len(est.coefs_)
    for i, (W, b) in enumerate(zip(est.coefs_, est.intercepts_)):
        h = h @ W + b
        if i < n - 1:
            h = acts[est.activation](h)
    return h


class TorchModel(_Base):
    """A torch module over token ids: ``module(LongTensor (B, D)) -> (B,)`` outputs.

    Runs under ``torch.no_grad()`` in batches of ``batch_size`` on ``device`` (``auto``, ``cpu``, ``cuda``,
    ``cuda:N``; ``None``: the process default of :mod:`evalsift.device`), in the module's own precision
    (fp32 for the built-in models: NLLs and logits are compared across bins to 1e-3, so no half precision);
    inputs go to the device and outputs come back as float64 numpy arrays, so the samplers are the same
    code on either device. When the module has
    ``forward_onehot(FloatTensor (B, D, V)) -> (B,)`` (the same function on one-hot inputs), the
    model also gives gradients (:meth:`grad`), which the samplers' ``proposal="gradient"`` uses. When
    it has ``completions(LongTensor (B, D-1)) -> (B, V)`` (every value of the last position at once,
    as a causal language model can), exact enumeration is V times cheaper; with ``subtree(LongTensor
    (B, k)) -> (B, V^(D-k))`` (every sequence that starts with each stem, in lexicographic order, as a
    causal LM decoding its prefix tree with cached keys and values), cheaper still.
    """

    def __init__(self, module: Any, *, name: str | None = None, output: str = "nll", positive: str | None = None,
                 batch_size: int | None = 4096, device: str | None = None) -> None:
        torch = _torch()
        if not isinstance(module, torch.nn.Module):
            raise ParameterError(f"TorchModel needs a torch.nn.Module, got {type(module).__name__}", field="model")
        super().__init__(name or type(module).__name__, output, positive, batch_size)
        self.module = module.eval()
        self.info = {"adapter": "torch", "module": type(module).__name__, "output": self.output,
                     "positive": self.positive, **(getattr(module, "info", None) or {})}
        self.to(device)

    def to(self, device: str | None) -> "TorchModel":
        """Move the module to ``device`` (``None``: the process default); returns the model."""
        from ..device import record_use, resolve_device

        self.device = resolve_device(device)
        self.module.to(self.device)
        param = next(self.module.parameters(), None)
        precision = {"torch.float16": "fp16", "torch.bfloat16": "bf16",
                     "torch.float64": "fp64"}.get(str(param.dtype) if param is not None else "", "fp32")
        record_use(f"omni model {self.name}", self.device, precision)
        return self

    def _tensor(self, a: np.ndarray) -> Any:
        """Token ids as a LongTensor on the model's device."""
        return _torch().as_tensor(np.asarray(a, dtype=np.int64)).to(self.device)

    @property
    def has_grad(self) -> bool:
        """True when the module has ``forward_onehot`` (gradient proposals are possible)."""
        return hasattr(self.module, "forward_onehot")

    @property
    def has_completions(self) -> bool:
        """True when the module scores every value of the last position at once."""
        return hasattr(self.module, "completions")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        torch = _torch()

        def run(a: np.ndarray) -> Any:
            with torch.no_grad():
                return self.module(self._tensor(a)).double().cpu().numpy()

        return self._batched(run, x)

    @property
    def has_subtree(self) -> bool:
        """True when the module scores every sequence under a stem at once (prefix-tree decoding)."""
        return hasattr(self.module, "subtree")

    def subtree(self, stems: np.ndarray) -> np.ndarray:
        """(B, V^(D-k)) outputs of every sequence that starts with each stem (B, k), in lexicographic order
        (needs the module's ``subtree``)."""
        torch = _torch()
        with torch.no_grad():
            out = self.module.subtree(self._tensor(stems)).double().cpu().numpy()
        return self._check(out.reshape(-1), out.size).reshape(out.shape)

    def completions(self, prefixes: np.ndarray) -> np.ndarray:
        """(B, V) outputs of every completion of each prefix (needs the module's ``completions``)."""
        torch = _torch()
        out = []
        step = self.batch_size or len(prefixes)
        for i in range(0, len(prefixes), step):
            with torch.no_grad():
                out.append(self.module.completions(self._tensor(prefixes[i:i + step])).double().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0))

    def grad(self, x: np.ndarray, n_values: int) -> tuple[np.ndarray, np.ndarray]:
        """``(z, dz/d onehot)``: outputs (B,) and their gradient with respect to the one-hot inputs (B, D, V)."""
        if not self.has_grad:
            raise ParameterError(f"model {self.name!r} has no forward_onehot, so it gives no gradients; use "
                                 "proposal='single' or 'block'", field="proposal")
        torch = _torch()
        dtype = next(self.module.parameters()).dtype
        t = torch.nn.functional.one_hot(self._tensor(x), n_values).to(dtype)
        t.requires_grad_(True)
        z = self.module.forward_onehot(t)
        (g,) = torch.autograd.grad(z.sum(), t)
        return self._check(z.detach().double().cpu().numpy(), len(x)), g.double().cpu().numpy()

    def fingerprint(self) -> str:
        h = hashlib.sha256(repr(self.info).encode())
        for k, v in sorted(self.module.state_dict().items()):
            h.update(k.encode())
            # the raw bytes, whatever the dtype (numpy has no bfloat16: .numpy() of a bf16 tensor fails)
            h.update(v.detach().cpu().contiguous().reshape(-1).view(_torch().uint8).numpy().tobytes())
        return h.hexdigest()[:16]


def _torch():
    try:
        import torch
    except ImportError:
        raise missing_dependency("torch", "omni", "a torch model (and the built-in toy and language models)") from None
    return torch


def as_model(obj: Any, **kwargs: Any) -> OmniModel:
    """The adapter for ``obj``: an OmniModel as it is, a torch module, a fitted scikit-learn classifier,
    or any callable (keyword arguments go to the adapter)."""
    if isinstance(obj, _Base):
        return obj
    try:
        import torch

        if isinstance(obj, torch.nn.Module):
            return TorchModel(obj, **kwargs)
    except ImportError:
        pass
    if hasattr(obj, "classes_") and (hasattr(obj, "predict_proba") or hasattr(obj, "decision_function")):
        return SklearnModel(obj, **kwargs)
    if callable(obj):
        return FunctionModel(obj, **kwargs)
    raise ParameterError(f"cannot use a {type(obj).__name__} as a model: give a callable (x -> z), a torch module or a "
                         "fitted scikit-learn classifier", field="model")


__all__ = ["FunctionModel", "OmniModel", "SklearnModel", "TorchModel", "as_model"]
