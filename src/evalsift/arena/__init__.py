"""Many systems ranked from pairwise battles (issue 22): Bradley-Terry with intervals and
simultaneous rank-sets, LLM judges folded in by prediction-powered inference, human budgets drawn
from the battles at hand.

- :mod:`evalsift.arena.battles`: :class:`Battles`, the battles as arrays;
- :mod:`evalsift.arena.read`: :func:`read_battles` (Chatbot Arena battle files, FastChat / MT-Bench
  judgments, AlpacaEval annotations, pairwise tables; judges joined on the battle id; the answers'
  style counts);
- :mod:`evalsift.arena.bt`: the fit (:func:`fit_bt`), bootstrap (:func:`bootstrap_bt`), PPI++ with
  judges (:func:`fit_bt_ppi`), rank-sets (:func:`rank_sets`);
- :mod:`evalsift.arena.leaderboard`: :func:`leaderboard` (what ``evalsift arena`` computes) and its
  ``results.json``, ``leaderboard.csv`` and ``leaderboard.html``.
"""

from .battles import Battles
from .bt import BTFit, bootstrap_bt, bootstrap_bt_ppi, curvature_bias, fit_bt, fit_bt_ppi, rank_sets, ranks
from .read import judge_name, read_battles

__all__ = ["BTFit", "Battles", "bootstrap_bt", "bootstrap_bt_ppi", "curvature_bias", "fit_bt", "fit_bt_ppi", "judge_name",
           "rank_sets", "ranks", "read_battles"]
