"""evalsift: label-efficient, data-aware model evaluation.

Pick the few test items worth an oracle's judgment, collect the judgments, and return a decision
with stated confidence.

>>> import evalsift as es
>>> pool = es.load("demo")                                   # built-in synthetic data, offline
>>> session = es.Session(pool, "random", a="A", b="B", risk=0.2)   # the valid anytime rule (default)
>>> d = session.run(es.MetricOracle("human"))
>>> d.winner, d.risk <= 0.2          # A makes fewer errors than B in the demo data
('A', True)
>>> d.guarantee.split(":")[0], d.win_rate_interval[0] < 0.6 < d.win_rate_interval[1]
('valid', True)
>>> dd = es.Session(pool, "diffuse", a="A", b="B", encoder="tfidf", risk=0.2, risk_rule="paper")
>>> dd.run(es.MetricOracle("human")).winner                        # DiffUse: the paper's heuristic rule
'A'
"""

from importlib import import_module as _import_module

#: where each public name lives; imported on first use (PEP 562), so ``import evalsift`` imports
#: nothing until something is used -- the ``evalsift`` command's start-up, where a Ctrl-C must give one
#: line, not a traceback, reaches its ``main()`` in milliseconds instead of seconds of numpy/scipy imports
_LAZY = {
    **dict.fromkeys(["DataError", "DataWarning", "EvalsiftError", "MissingDependencyError", "NotFittedError",
                     "OracleError", "ParameterError", "UnknownNameError"], "errors"),
    "load": "io", "IRTResult": "irt", "fit_irt": "irt", "reference_metrics": "metrics",
    "Judgment": "oracle", "MetricOracle": "oracle", "Oracle": "oracle", "make_oracle": "oracle", "Pool": "pool",
    "restrict_pair": "restrict", "restrict_ranking": "restrict",
    **dict.fromkeys(["DiffUse", "Selection", "Selector", "clone", "make_selector", "selectors", "utilities_of"], "select"),
    "Decision": "session", "Session": "session",
    **dict.fromkeys(["cluster_count", "hypergeometric_risk", "kendall_tau_b", "needed_to_match", "pairwise_risk",
                     "system_clusters"], "stats"),
}


def __getattr__(name: str):
    """A public name (or a sub-module) of evalsift, imported the first time it is asked for."""
    if name in _LAZY:
        value = getattr(_import_module(f".{_LAZY[name]}", __name__), name)
    elif not name.startswith("__"):
        try:
            value = _import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "DataError", "Decision", "DiffUse", "EvalsiftError", "Judgment", "MetricOracle", "MissingDependencyError",
    "NotFittedError", "Oracle", "OracleError", "ParameterError", "Pool", "Selection", "Selector", "Session",
    "UnknownNameError", "hypergeometric_risk", "load", "make_oracle", "make_selector", "pairwise_risk", "selectors",
    "IRTResult", "fit_irt", "reference_metrics", "cluster_count", "kendall_tau_b", "needed_to_match", "system_clusters",
    "DataWarning", "clone", "restrict_pair", "restrict_ranking", "utilities_of",
]
