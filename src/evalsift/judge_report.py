"""The old home of the judge report (``evalsift judge-report``): it lives beside the oracles it reports on,
in :mod:`evalsift.oracle.report` (the figures and :class:`JudgeReport`), :mod:`evalsift.oracle.report_data`
(the judge and the people made ready, each pair's labelled items) and :mod:`evalsift.oracle.forecast` (the
labels a decision needs, simulated). Every name is still importable from here
(``from evalsift.judge_report import judge_report``).
"""

from __future__ import annotations

from .oracle.forecast import (FORECAST_ASSUMPTION, RUNS_PER_SAMPLE, _forecast_summary,  # noqa: F401
                              _forecast_task, _labels, _one_thread, _pair_seed, _pooled_forecast, _ratio_interval,
                              _Replay, _simulate, forecast_labels)
from .oracle.report import (_CHUNK, _STATS, INTERVAL_METHOD, LABELS, NAN, JudgeReport,  # noqa: F401
                            _bootstrap_weights, _candidate_pairs, _corr, _fig, _Items, _kappa, _sk_kappa, _stats,
                            _weighted_corr, _weighted_ratio, _within_corr, judge_report)
from .oracle.report_data import (ResolvedJudge, _answers, _ask, _empty, _log_lengths, _order_stats,  # noqa: F401
                                 _pair_data, _PairData, _plurality, _refuse_human, _resolve_human, resolve_judge)

__all__ = ["FORECAST_ASSUMPTION", "INTERVAL_METHOD", "JudgeReport", "forecast_labels", "judge_report", "resolve_judge"]
