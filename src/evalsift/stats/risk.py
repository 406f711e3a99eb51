"""Statistics shared by selection, sessions and benchmarks: risk bounds and stop rules.

The risk of a pairwise decision (DiffUse, Ashury-Tahan et al. 2024: §6.2 and App. A.2 of
the first version, App. A.3 of the ACL version): if ``k`` of ``n``
judged items favour the leading system and the pool has ``M`` items, the chance of seeing at least
``k`` such votes when the leader in fact wins at most half of the pool is the hypergeometric
survival function ``sf(k - 1; M, M/2, n)``. The paper's example::

    >>> round(hypergeometric_risk(8, 10, 500), 4)   # 8 of 10 votes, pool of 500
    0.0529

It is a heuristic: DiffUse's items are not a random sample, and ties in the judged set count
against the leader (they stay in ``n``), which makes the paper's rule conservative. The
``tie_aware`` rule drops ties from ``n`` (only decisive votes count). See ``docs/diffuse.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError, check_choice

RISK_RULES = ("paper", "tie_aware")


def hypergeometric_risk(wins: int, labels: int, pool: int) -> float:
    """``sf(wins - 1; pool, floor(pool / 2), labels)``: the paper's risk for ``wins`` of ``labels``.

    ``pool`` is the number of items in the test pool (M). For odd M the "at most half" boundary is
    ``floor(M / 2)`` items, the largest count with which the leader does not win the pool.

    >>> round(hypergeometric_risk(8, 10, 500), 4)
    0.0529
    >>> hypergeometric_risk(0, 0, 10)   # nothing judged: no evidence at all
    1.0
    """
    wins, labels, pool = int(wins), int(labels), int(pool)
    if pool < 1:
        raise ParameterError(f"hypergeometric_risk: pool must be >= 1, got {pool}")
    if not 0 <= wins <= labels <= pool:
        raise ParameterError(
            f"hypergeometric_risk: need 0 <= wins <= labels <= pool, got wins={wins}, labels={labels}, pool={pool}"
        )
    if labels == 0:
        return 1.0
    from scipy.stats import hypergeom  # here: importing scipy.stats takes a second (the CLI's start-up)

    return float(hypergeom.sf(wins - 1, pool, pool // 2, labels))


@dataclass(frozen=True)
class RiskAssessment:
    """The leader among judged items and the risk that it does not win the pool."""

    leader: str | None  # 'a', 'b', or None when the votes are level
    wins: int
    labels: int
    risk: float
    rule: str


def pairwise_risk(wins_a: int, wins_b: int, ties: int, pool: int, rule: str = "paper") -> RiskAssessment:
    """Risk of declaring the current leader the winner, by ``rule``.

    - ``paper``: n counts every judged item, ties included (conservative).
    - ``tie_aware``: n counts only decisive items (wins_a + wins_b); ties leave n.

    With level votes there is no leader and the risk is 1.

    >>> r = pairwise_risk(8, 1, 1, 500)            # n = 10, k = 8
    >>> r.leader, round(r.risk, 4)
    ('a', 0.0529)
    >>> round(pairwise_risk(8, 1, 1, 500, "tie_aware").risk, 4)   # n = 9, k = 8
    0.0187
    """
    check_choice("rule", rule, RISK_RULES, where="pairwise_risk")
    if min(wins_a, wins_b, ties) < 0:
        raise ParameterError(f"pairwise_risk: counts must be >= 0, got {wins_a}, {wins_b}, {ties}")
    n = wins_a + wins_b + (ties if rule == "paper" else 0)
    if wins_a == wins_b:
        return RiskAssessment(None, wins_a, n, 1.0, rule)
    leader, k = ("a", wins_a) if wins_a > wins_b else ("b", wins_b)
    return RiskAssessment(leader, k, n, hypergeometric_risk(k, n, pool), rule)


def count_verdicts(verdicts) -> tuple[int, int, int]:
    """(wins of a, wins of b, ties) from an iterable of 'a' | 'b' | 'tie'.

    >>> count_verdicts(["a", "b", "a", "tie"])
    (2, 1, 1)
    """
    v = np.asarray(list(verdicts), dtype=object)
    return int((v == "a").sum()), int((v == "b").sum()), int((v == "tie").sum())


def majority(wins_a: int, wins_b: int) -> str:
    """'a', 'b' or 'tie': who won more items.

    >>> majority(3, 2), majority(2, 2)
    ('a', 'tie')
    """
    return "a" if wins_a > wins_b else "b" if wins_b > wins_a else "tie"

