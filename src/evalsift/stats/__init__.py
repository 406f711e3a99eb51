"""Statistics shared by selection, sessions and benchmarks, one module per job.

- :mod:`~evalsift.stats.sequential`: the anytime-valid stop rule for a pairwise decision
  (:func:`anytime_risk`) and a confidence sequence for the win rate (:func:`win_rate_sequence`);
- :mod:`~evalsift.stats.risk`: the DiffUse paper's heuristic risk (:func:`hypergeometric_risk`,
  :func:`pairwise_risk`) and verdict counts.
- :mod:`~evalsift.stats.ranking`: ranking agreement between a subset and the full pool (rank
  correlations, statistical cluster count, soft pairwise accuracy, prefix curves, needed to match).
- :mod:`~evalsift.stats.wilcoxon`: the signed-rank test behind the cluster count, vectorised.
- :mod:`~evalsift.stats.intervals`: standard errors of repeated measurements; bootstrap intervals
  for system means and ranks (:func:`bootstrap_means`).
- :mod:`~evalsift.stats.agreement`: inter-annotator agreement (Cohen's and Fleiss' kappa,
  Krippendorff's alpha), also straight from a list of judgments.

Everything public is importable from ``evalsift.stats`` directly.

>>> from evalsift.stats import hypergeometric_risk, kendall_tau_b
>>> round(hypergeometric_risk(8, 10, 500), 4), kendall_tau_b([1, 2, 3], [1, 2, 3])
(0.0529, 1.0)
"""

from importlib import import_module
from typing import Any

_HOMES = {  # each public name and the submodule it lives in: imported when first asked for
    "AGREEMENT_KINDS": "agreement", "ALPHA_LEVELS": "agreement", "AlphaResult": "agreement",
    "FleissResult": "agreement", "JudgmentMatrix": "agreement", "KappaResult": "agreement",
    "agreement_from_judgments": "agreement", "cohen_kappa": "agreement", "fleiss_kappa": "agreement",
    "judgment_matrix": "agreement", "krippendorff_alpha": "agreement",
    "BOOTSTRAP_METHODS": "intervals", "AgreementInterval": "intervals", "MeanIntervals": "intervals",
    "bootstrap_agreement": "intervals", "bootstrap_means": "intervals", "standard_error": "intervals",
    "studentized_t": "intervals",
    "PPIEstimate": "ppi", "cross_ppi_mean": "ppi", "ppi_mean": "ppi", "regression_means": "ppi",
    "CLUSTER_CHAINS": "ranking", "CORRELATION_KINDS": "ranking", "MATCH_RULES": "ranking",
    "NeededToMatch": "ranking", "SystemClusters": "ranking", "cluster_count": "ranking", "kendall_tau_b": "ranking",
    "kendall_tau_b_rows": "ranking", "needed_to_match": "ranking", "paired_t_p_values": "ranking",
    "prefix_cluster_counts": "ranking", "prefix_correlation": "ranking", "prefix_means": "ranking",
    "prefix_sizes": "ranking", "soft_pairwise_accuracy": "ranking", "spearman": "ranking",
    "spearman_rows": "ranking", "system_clusters": "ranking",
    "RISK_RULES": "risk", "RiskAssessment": "risk", "count_verdicts": "risk", "hypergeometric_risk": "risk",
    "majority": "risk", "pairwise_risk": "risk",
    "SAMPLINGS": "active", "active_probabilities": "active",
    "GUARANTEES": "sequential", "STOP_RULES": "sequential", "AnytimeAssessment": "sequential",
    "AnytimeTest": "sequential", "Predictor": "sequential", "ResidualPredictor": "sequential",
    "StrataPredictor": "sequential", "anytime_risk": "sequential", "win_rate_interval": "sequential",
    "win_rate_sequence": "sequential", "BudgetAssessment": "sequential", "budget_assessment": "sequential",
    "EXACT_MAX_N": "wilcoxon", "WILCOXON_METHODS": "wilcoxon", "WILCOXON_TEST": "wilcoxon",
    "WILCOXON_TESTS": "wilcoxon", "signed_rank_p_values": "wilcoxon",
}


#: the package's own submodules: the only modules ``__getattr__`` imports (never a name from elsewhere)
_SUBMODULES = frozenset(_HOMES.values()) | {"crowd", "ranks"}


def __getattr__(name: str) -> Any:
    """A public name, from its submodule, imported on first use: a command that needs one job's statistics
    does not import the others' (scipy.special alone takes about 0.4 s). A submodule named as an attribute
    (``evalsift.stats.wilcoxon``) is imported too; nothing outside :data:`_SUBMODULES` ever is."""
    home = _HOMES.get(name)
    if home is None:
        if name in _SUBMODULES:
            return import_module(f".{name}", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "AGREEMENT_KINDS", "ALPHA_LEVELS", "AlphaResult", "FleissResult", "JudgmentMatrix", "KappaResult",
    "agreement_from_judgments", "cohen_kappa", "fleiss_kappa", "judgment_matrix", "krippendorff_alpha",
    "PPIEstimate", "cross_ppi_mean", "ppi_mean", "regression_means",
    "BOOTSTRAP_METHODS", "AgreementInterval", "MeanIntervals", "bootstrap_agreement", "bootstrap_means",
    "GUARANTEES", "STOP_RULES", "AnytimeAssessment", "AnytimeTest", "Predictor", "StrataPredictor", "anytime_risk",
    "win_rate_sequence", "win_rate_interval", "BudgetAssessment", "budget_assessment", "ResidualPredictor", "SAMPLINGS", "active_probabilities",
    "CLUSTER_CHAINS", "CORRELATION_KINDS", "EXACT_MAX_N", "WILCOXON_METHODS", "WILCOXON_TESTS", "MATCH_RULES", "NeededToMatch", "RISK_RULES", "RiskAssessment",
    "SystemClusters", "WILCOXON_TEST", "cluster_count", "count_verdicts", "hypergeometric_risk", "kendall_tau_b",
    "kendall_tau_b_rows", "majority", "needed_to_match", "paired_t_p_values", "pairwise_risk",
    "prefix_cluster_counts", "prefix_correlation", "prefix_means", "prefix_sizes", "signed_rank_p_values",
    "soft_pairwise_accuracy", "spearman", "spearman_rows", "standard_error", "studentized_t", "system_clusters",
]
