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

from .agreement import (AGREEMENT_KINDS, ALPHA_LEVELS, AlphaResult, FleissResult, JudgmentMatrix, KappaResult,
                        agreement_from_judgments, cohen_kappa, fleiss_kappa, judgment_matrix, krippendorff_alpha)
from .intervals import (BOOTSTRAP_METHODS, AgreementInterval, MeanIntervals, bootstrap_agreement, bootstrap_means,
                        standard_error, studentized_t)
from .ppi import PPIEstimate, cross_ppi_mean, ppi_mean, regression_means
from .ranking import (CLUSTER_CHAINS, CORRELATION_KINDS, MATCH_RULES, NeededToMatch, SystemClusters, cluster_count,
                      kendall_tau_b, kendall_tau_b_rows, needed_to_match, paired_t_p_values, prefix_cluster_counts,
                      prefix_correlation, prefix_means, prefix_sizes, soft_pairwise_accuracy, spearman, spearman_rows,
                      system_clusters)
from .risk import RISK_RULES, RiskAssessment, count_verdicts, hypergeometric_risk, majority, pairwise_risk
from .active import SAMPLINGS, active_probabilities
from .sequential import (GUARANTEES, STOP_RULES, AnytimeAssessment, AnytimeTest, Predictor, ResidualPredictor,
                         StrataPredictor, anytime_risk, win_rate_interval, win_rate_sequence, BudgetAssessment,
                         budget_assessment)
from .wilcoxon import EXACT_MAX_N, WILCOXON_METHODS, WILCOXON_TEST, WILCOXON_TESTS, signed_rank_p_values

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
