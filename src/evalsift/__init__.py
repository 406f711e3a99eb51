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

from .errors import (DataError, DataWarning, EvalsiftError, MissingDependencyError, NotFittedError, OracleError,
                     ParameterError, UnknownNameError)
from .io import load
from .irt import IRTResult, fit_irt
from .metrics import reference_metrics
from .oracle import Judgment, MetricOracle, Oracle, make_oracle
from .pool import Pool
from .restrict import restrict_pair, restrict_ranking
from .select import DiffUse, Selection, Selector, clone, make_selector, selectors, utilities_of
from .session import Decision, Session
from .stats import cluster_count, hypergeometric_risk, kendall_tau_b, needed_to_match, pairwise_risk, system_clusters

__version__ = "0.1.0"

__all__ = [
    "DataError", "Decision", "DiffUse", "EvalsiftError", "Judgment", "MetricOracle", "MissingDependencyError",
    "NotFittedError", "Oracle", "OracleError", "ParameterError", "Pool", "Selection", "Selector", "Session",
    "UnknownNameError", "hypergeometric_risk", "load", "make_oracle", "make_selector", "pairwise_risk", "selectors",
    "IRTResult", "fit_irt", "reference_metrics", "cluster_count", "kendall_tau_b", "needed_to_match", "system_clusters",
    "DataWarning", "clone", "restrict_pair", "restrict_ranking", "utilities_of",
]
