"""Win rates against a baseline, AlpacaEval's way, and AlpacaEval 2.0's length-controlled win rate.

Reference: Y. Dubois, B. Galambosi, P. Liang, T. B. Hashimoto, "Length-Controlled AlpacaEval: A Simple
Way to Debias Automatic Evaluators" (2024, arXiv:2404.04475; COLM 2024) -- "Dubois et al. 2024" below.

Every model is compared with one **baseline** on the same instructions. A comparison's *preference* is
the probability that the model's output beats the baseline's: AlpacaEval's recorded value minus one
(its scale is 1 = baseline wins, 2 = model wins; a weighted judge gives the values in between; 1.5 and 0
are draws), read from the model's side whichever side the baseline was on; a plain verdict counts 1 for
a win, 1/2 for a tie, 0 for a loss.

- :func:`win_rate`: AlpacaEval's win rate, 100 x the mean preference over the instructions (a draw counts
  half), and its standard error, 100 x the sample standard deviation (``ddof=1``) / sqrt(n) (what
  alpaca_eval's ``get_winrate`` computes; Dubois et al. 2024, Sec. 2, the win rate against a baseline).
- :func:`fit_length_glm` / :func:`length_controlled_win_rate`: the length-controlled win rate (Dubois et al.
  2024, Sec. 3: the GLM of the preference and its prediction with the length term switched off). Per
  model, a logistic GLM without a free intercept of the preference on three terms -- the model's own
  intercept, ``tanh(delta / sd(delta))`` with ``delta`` = baseline length - model length in characters
  and ``sd`` the sample standard deviation of ``delta`` over that model's instructions (no centring),
  and the instruction's difficulty (a fixed per-instruction number whose coefficient is fitted) -- is
  fitted to the continuous preferences (each instruction counts as a win with weight ``p`` and a loss
  with weight ``1 - p``: the cross-entropy with soft labels), L1-penalised, its strength ``C`` chosen
  among ``logspace(-4, 4, 10)`` by 5-fold cross-validated soft-label log loss. The length-controlled
  win rate is 100 x the mean over the instructions of the GLM's prediction with ``delta`` = 0. Its
  standard error (:func:`lc_standard_error`) is evalsift's own: the delta method on the fit (sandwich
  form, clustered by instruction), the uncertainty of the fitted coefficients plus the spread of the
  predictions over the instructions -- within 6 % of a bootstrap over instructions on AlpacaEval's
  models (``docs/winrate.md``). AlpacaEval's ``lc_standard_error`` is the standard error of the
  predictions alone (``lc_prediction_sem`` here): it leaves the fit out, so it is 0 whenever the
  predictions do not vary (one model's annotations, no difficulty term) and 3-10 times smaller than the
  bootstrap's spread on the leaderboard.
- :func:`estimate_difficulty`: the instruction difficulties. AlpacaEval downloads a fixed table of them
  (fitted once, by its authors, from the leaderboard models of early 2024); evalsift cannot, so it fits
  them from the comparisons at hand the way that table was made: one joint logistic GLM over every
  model, with a per-model intercept, a per-model slope on ``tanh(delta / sd_model(delta))``, one effect
  per instruction (the first instruction the reference, 0) and a shared intercept, the same L1 penalty
  and cross-validated ``C``; an instruction's difficulty is its effect. Comparisons with an empty model
  output are left out of this fit (as AlpacaEval's authors did).

One more AlpacaEval detail is not reproduced: its per-model fit adds, at weight 0.1 each, the
comparisons of the baseline with its own verbose and concise versions (the "gamed baselines"; the
fit's ``not_gamed_baseline`` term is their indicator), which pulls each model's length and difficulty
coefficients toward the baseline's. Those comparisons are a separate download too; without them this
is AlpacaEval's ``length_controlled_noreg`` variant of the GLM. ``docs/winrate.md`` measures both
differences against the published leaderboard (``benchmarks/winrate/alpaca_lc.py``).

AlpacaEval's published files, where you have them: :func:`read_alpaca_difficulty` reads its difficulty table
(``instruction_difficulty.csv``, which its code downloads from the Hugging Face hub), used instead of the
estimate; :func:`read_alpaca_weights` its saved per-model GLM weights (``metrics/weights/<annotator>/
length_controlled_v1/baseline_<baseline>.csv``), from which :func:`published_controlled` predicts a model's
length-controlled win rate as AlpacaEval does -- no fit, so with both files AlpacaEval's own number
(``evalsift winrate --difficulty FILE --weights FILE``; ``benchmarks/winrate/alpaca_published_lc.py``).

:func:`winrate_board` puts it together (a :class:`WinRateBoard`, written by :func:`write_board` as
``results.json``, ``leaderboard.csv`` and ``leaderboard.html``); ``evalsift winrate`` is its command.

The package splits it by job (issue 46; every name, private ones included, is still importable from
``evalsift.winrate``): :mod:`~evalsift.winrate.comparisons` (reading the comparisons with the baseline),
:mod:`~evalsift.winrate.rate` (:func:`win_rate`), :mod:`~evalsift.winrate.l1` (the L1-penalised soft-label
logistic fit and its cross-validation), :mod:`~evalsift.winrate.lc` (the length-controlled GLM, its standard
error, the instruction difficulties), :mod:`~evalsift.winrate.published` (AlpacaEval's published files),
:mod:`~evalsift.winrate.report` (:class:`WinRateBoard` and its files) and :mod:`~evalsift.winrate.board`
(:func:`winrate_board`).
"""

from __future__ import annotations

from .board import FEW_MODELS, GAMED_SUFFIXES, _from_weights, _resolve_difficulty, winrate_board
from .comparisons import (Comparisons, ModelComparisons, _judge_key, _lengths, _preference, baseline_comparisons,
                          pick_annotator, pick_annotators, verdicts_text)
from .l1 import (CS, MAX_JOBS, N_SPLITS, SEED, _PARALLEL_ROWS, _cv_fit, _fit_l1, _fold_fit, _l1_kwargs, _liblinear,
                 _sigmoid, _soft_log_likelihood, _soft_problem, _solve_l1, _workers, cv_fits)
from .lc import (LCInfluence, LengthGLM, REGULARIZE_TO_BASELINE, _lc_influence, _length_design, _standardised,
                 estimate_difficulty, fit_length_glm, lc_standard_error, length_controlled_win_rate)
from .published import (PublishedDifficulty, PublishedWeights, WEIGHT_COLUMNS, _WEIGHTS_NAME, _csv_table, _number,
                        _weights_keys, published_controlled, read_alpaca_difficulty, read_alpaca_weights)
from .rate import win_rate
from .report import WinRateBoard, _board_html, _fmt, write_board

__all__ = ["CS", "FEW_MODELS", "GAMED_SUFFIXES", "MAX_JOBS", "N_SPLITS", "REGULARIZE_TO_BASELINE", "SEED",
           "WEIGHT_COLUMNS", "Comparisons", "LCInfluence", "LengthGLM", "ModelComparisons", "PublishedDifficulty",
           "PublishedWeights", "WinRateBoard", "baseline_comparisons", "cv_fits", "estimate_difficulty",
           "fit_length_glm", "lc_standard_error", "length_controlled_win_rate", "pick_annotator", "pick_annotators",
           "published_controlled", "read_alpaca_difficulty", "read_alpaca_weights", "verdicts_text", "win_rate",
           "winrate_board", "write_board"]
