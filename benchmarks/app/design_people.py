"""A live ``--design neyman`` decision served to several people at once (issue 42): the error on dead heats
and the labels it takes, with 1, 2, 3 or 4 people answering out of draw order.

    python benchmarks/app/design_people.py                  # 120 dead heats, 60 pools where A leads; about 3 minutes
    python benchmarks/app/design_people.py --runs 40 --leads 20

The harness is the annotation app's rule without HTTP or a store (``tests/test_web_designs.py`` checks the
app does the same): K people each hold one item; a person with nothing open takes the decision set's next
open item, else an item drawn ahead of it, else a new draw made now (``Session.draw_ahead``: from the
verdicts in so far); whoever is quickest -- a random one of the K -- answers next, so verdicts arrive out
of draw order and draws are made with fewer verdicts than one person alone would have given them. The
anytime rule weights every verdict by the probabilities its own draw was made with, so the stated risk
must hold for every K; the price of stale draws is more labels.

Pools (``tests/test_neyman_design.py``'s): dead heats of 120 items (35% A, 30% ties, 35% B; a judge right on
70%, a coin elsewhere) at risk 0.2 -- every winner named is wrong --, and 400-item pools where A leads
(50% A, 20% ties, 30% B; the judge right on 80%) at risk 0.1. Prints, per K: wrong winners on the dead heats
with a 95% exact interval, and the mean labels used and the share naming A on the leads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from evalsift.oracle import MetricOracle
from evalsift.pool import Pool
from evalsift.session import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_neyman_design import judged_pool  # noqa: E402 - the tests' two-system pools with a recorded judge


def decide(pool: Pool, seed: int, people: int, risk: float) -> Session:
    """The Session after ``people`` people judged until it decided, answering in a random order."""
    s = Session(pool, "random", a="A", b="B", risk=risk, max_labels=pool.n_items, seed=seed, proxy="metric:judge",
                sampling="neyman")
    oracle = MetricOracle("truth")
    rng = np.random.default_rng(1000 + seed)
    held: list[int] = []
    judged: set[int] = set()
    while not s.done:
        while len(held) < people:  # everyone with nothing open takes the next item, or a new draw
            free = [i for i in [*s.pending(), *s.ahead()] if i not in held and i not in judged]
            if free:
                held.append(free[0])
                continue
            before = len(s.requested()) + len(s.ahead())
            if s.draw_ahead(before + 1) == before:
                break
        if not held:
            break
        i = held.pop(int(rng.integers(len(held))))  # whoever is quickest answers: out of draw order
        judged.add(i)
        for j in oracle.judge_pairs(s.pool, [i], "A", "B"):
            s.record(j)
        s.advance()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=120, help="dead heats per number of people")
    ap.add_argument("--leads", type=int, default=60, help="pools where A leads, per number of people")
    ap.add_argument("--people", default="1,2,3,4")
    args = ap.parse_args()
    t0 = time.time()
    print("people  dead heats: wrong (95% interval)   A leads: labels used, A named")
    for k in (int(x) for x in args.people.split(",")):
        wrong = sum(decide(judged_pool(120, 0.35, 0.3, 0.7, seed=r), r, k, 0.2).decision().winner is not None
                    for r in range(args.runs))
        ci = binomtest(wrong, args.runs).proportion_ci(0.95, method="exact")
        decisions = [decide(judged_pool(400, 0.5, 0.2, 0.8, seed=900 + r), r, k, 0.1).decision()
                     for r in range(args.leads)]
        labels = np.mean([d.labels_used for d in decisions])
        named = np.mean([d.winner == "A" for d in decisions])
        print(f"{k:>6}  {wrong:>4} of {args.runs} ({ci.low:.3f}-{ci.high:.3f}; stated risk 0.2)   "
              f"{labels:6.1f}, {named:.0%}")
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
