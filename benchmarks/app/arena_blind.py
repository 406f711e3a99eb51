"""Issue 42, item 2: arena battles stay blind -- the measurements behind docs/annotation.md ("Blind, battle after battle").

    python benchmarks/app/arena_blind.py            # about 2-4 minutes on 2 cores

1. Leaks: simulated people vote through the real Workspace on a real SQLite store (as tests/test_web_arena_blind.py);
   a leak is a battle handed to a person that shows a text whose model an earlier answer named to that person.
   Printed per arena: votes, leaks, votes named, votes withheld.
2. Weights: the live board weights each battle by 1 / (T q). Per pair, the sum of its battles' weights over the
   pair's prompts, with reveals (the blind draw) and without (``--blind-after-vote``: nothing held back), on the
   same 8-model arena: the held-back prompts are counted in q, so each pair keeps about the weight it has without.
3. A judge that lies in one model's favour, folded in by PPI++: the board's error on that model, mean over seeds,
   with reveals and without -- the rectifier's scale (the weights' sum) is what keeps the judge's bias out.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from _web import league_pool, league_value, play_blind as play  # noqa: E402 - the tests' simulated people
from evalsift.oracle import Judgment  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

EIGHT = (1.4, 1.0, 0.6, 0.2, -0.2, -0.6, -1.0, -1.4)
TEN = tuple(np.linspace(1.5, -1.5, 10))


def arena(k, n, votes, *, allocation="active", blind_after_vote=False, seed=0, judges=None):
    work = Workspace(Store(Path(tempfile.mkdtemp()) / "w.db"))
    pid, _ = work.create_arena("a", league_pool(n=n, k=k), max_battles=votes, allocation=allocation, seed=seed,
                               first=max(2, votes // 4), stop="rank-set:1", blind_after_vote=blind_after_vote,
                               judges=judges)
    return work, pid


def leaks() -> None:
    print("1. leaks: votes with a model known before the vote")
    print(f"{'models x prompts x people':>26}  {'votes':>5}  {'leaks':>5}  {'named':>5}  {'withheld':>8}  seconds")
    for k, n, people, votes, strengths in ((3, 4, 1, 11, EIGHT), (5, 10, 1, 60, EIGHT), (5, 30, 1, 214, EIGHT),
                                           (8, 50, 3, 600, EIGHT), (10, 100, 5, 1000, TEN)):
        t0 = time.time()
        work, pid = arena(k, n, votes, allocation="uniform" if people == 1 else "active")
        got = play(work, pid, people, votes, strengths)
        print(f"{f'{k} x {n} x {people}':>26}  {got[0]:>5}  {got[1]:>5}  {got[2]:>5}  {got[3]:>8}  {time.time() - t0:.1f}",
              flush=True)


def weights() -> None:
    print("\n2. per pair: the sum of its battles' weights 1 / (T q) over its prompts (8 models x 50 prompts, "
          "3 people, 600 battles, active)")
    for bav in (True, False):
        work, pid = arena(8, 50, 600, blind_after_vote=bav)
        play(work, pid, 3, 600, EIGHT)
        st = work.arena(pid)
        P = len(st.pairs)
        w = np.bincount(np.asarray(st.unit) % P, 1.0 / (st.n * np.asarray(st.q)), P) / 50
        print(f"  {'without reveals (--blind-after-vote)' if bav else 'with reveals (the blind draw)':<38} mean "
              f"{w.mean():.3f}  min {w.min():.3f}  max {w.max():.3f}  spread (sd / mean) {w.std() / w.mean():.3f}",
              flush=True)


def biased_judge(seeds=range(6)) -> None:
    print("\n3. a judge that says S4 wins 80% of its battles (truth: S4 the weakest), PPI++; 5 models x 40 prompts, "
          "1 person, 200 battles, uniform; S4's score less its full-data score, mean over seeds")
    pool = league_pool(n=40, k=5)
    systems = list(pool.systems)
    for bav in (True, False):
        errs = []
        for seed in seeds:
            rng = np.random.default_rng(seed)
            judge = []
            for i, a in enumerate(systems):
                for b in systems[i + 1:]:
                    for item in pool.item_ids:
                        if "S4" in (a, b):
                            says_a = (a == "S4") == (rng.random() < 0.8)
                        else:
                            says_a = league_value(item, a, b) == 1.0
                        judge.append(Judgment(item_id=item, a=a, b=b, verdict="a" if says_a else "b", annotator="j",
                                              kind="llm"))
            work, pid = arena(5, 40, 200, allocation="uniform", blind_after_vote=bav, seed=seed,
                              judges={"judge:biased": judge})
            play(work, pid, 1, 200, (1.2, 0.4, 0.0, -0.4, -1.2))
            st = work.arena(pid)
            # the full data: every (prompt, pair) judged by the league's coin, fitted alone
            from evalsift.arena.battles import Battles
            from evalsift.arena.bt import fit_bt_ppi

            ys = np.array([league_value(pool.item_ids[u // 10], systems[st.units.a[u]], systems[st.units.b[u]])
                           for u in range(st.units.n)])
            full = fit_bt_ppi(Battles.from_arrays(systems, st.units.a, st.units.b, ys), np.arange(st.units.n), [])
            board = {m["name"]: m["score"] for m in work.status(pid)["arena"]["models"]}
            errs.append(board["S4"] - full.scores[4])
        label = "without reveals (--blind-after-vote)" if bav else "with reveals (the blind draw)"
        print(f"  {label:<38} mean {np.mean(errs):+.1f} Elo  (s.e. {np.std(errs, ddof=1) / np.sqrt(len(errs)):.1f}; "
              f"{len(errs)} seeds)", flush=True)


if __name__ == "__main__":
    t0 = time.time()
    leaks()
    weights()
    biased_judge()
    print(f"\n{time.time() - t0:.0f} s in all")
