"""AlpacaEval's win rate against a baseline: :func:`win_rate` (the mean preference, a draw counting half, and
its standard error)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np


def win_rate(preference: Sequence[float], weight: Sequence[float] | None = None) -> dict[str, Any]:
    """AlpacaEval's win rate of preferences in [0, 1] (the model's probability of beating the baseline; a draw
    is 0.5): ``win_rate`` = 100 x mean, ``standard_error`` = 100 x sample sd (ddof=1) / sqrt(n) (None below two
    instructions), and the counts of wins (> 0.5), baseline wins (< 0.5) and draws (= 0.5). Dubois et al. 2024,
    Sec. 2 (AlpacaEval's win rate against a baseline).

    ``weight`` (one per comparison; Arena-Hard's questions, each the sum of its games' weights): the weighted
    mean ``sum(w p) / sum(w)`` -- Arena-Hard-Auto's score -- and the standard error of that ratio,
    ``sqrt(n / (n - 1) * sum(w^2 (p - mean)^2)) / sum(w)`` (the plain one when the weights are equal).

    >>> r = win_rate([1.0, 0.0, 0.5, 1.0])
    >>> r["win_rate"], round(r["standard_error"], 2), r["n_wins"], r["n_draws"]
    (62.5, 23.94, 2, 1)
    >>> win_rate([1.0, 0.25], [2, 4])["win_rate"]   # (2 x 1 + 4 x 0.25) / 6
    50.0
    """
    p = np.asarray(preference, float)
    n = len(p)
    if weight is not None and n:
        w = np.asarray(weight, float)
        m = float((w * p).sum() / w.sum())
        se = math.sqrt(n / (n - 1) * float((w * w * (p - m) ** 2).sum())) / float(w.sum()) if n > 1 else None
        return {"win_rate": 100 * m, "standard_error": None if se is None else 100 * se,
                "n": n, "n_wins": int((p > 0.5).sum()), "n_wins_base": int((p < 0.5).sum()),
                "n_draws": int((p == 0.5).sum())}
    return {"win_rate": float(100 * p.mean()) if n else None,
            "standard_error": float(100 * p.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "n": n, "n_wins": int((p > 0.5).sum()), "n_wins_base": int((p < 0.5).sum()),
            "n_draws": int((p == 0.5).sum())}
