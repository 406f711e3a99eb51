"""Gold items and the gold-accuracy rule, simulated through the real store path (Store, Workspace.next_for,
Workspace.submit: the leases, the seeded gold draws, the stored gold answers and the rule), no HTTP.

Part 1 (flag rates): a fixed pairwise project of ``--items`` items with ``--gold`` gold items served at rate R,
rule ``--min-gold-accuracy A``. Four people share the work: a careless one gives 20% of the project's answers
(random keys: 1, 2 or 0 uniformly, so right a third of the time on gold items -- or, with ``--coin``, 1 or 2, right
half the time), three careful ones the rest (right 90% of the time, else one of the two other keys). Each run goes
until the queue is empty. Reported: how often the careless person is flagged after <= 20 gold answers, the median
gold answers when flagged, and how often a careful person is flagged at all.

Part 2 (the live decision): a live pairwise project (``--live-items`` items, A better on 60%, risk 0.1) judged by the
same crowd, run twice with the same seeds: with the careless person (flagged, excluded, the decision recomputed)
and without them at all. Reported: how often the two decisions are the same (winner, or inconclusive).

    python benchmarks/app/gold_items.py --runs 200 --live-runs 40
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from evalsift.pool import Pool  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402


def pool_of(n: int, p_a: float, seed: int) -> Pool:
    rng = np.random.default_rng(seed)
    a_wins = rng.random(n) < p_a
    return Pool(item_ids=[f"i{k}" for k in range(n)], inputs=[f"Question {k}?" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"Answer A{k}." for k in range(n)], "B": [f"Answer B{k}." for k in range(n)]},
                scores={"human": np.column_stack([a_wins, ~a_wins]).astype(float)}, human_metrics=["human"], name="p")


def gold_rows(n: int) -> list[dict]:
    return [{"gold_id": f"g{k}", "input": f"Gold question {k}?", "outputs": {"A": f"Gold A{k}.", "B": f"Gold B{k}."},
             "answer": ("a", "b", "tie")[k % 3] if k % 7 == 6 else ("a", "b")[k % 2]} for k in range(n)]


def key_for(store, pid, who, truth, p_right, rng, careless, coin):
    """The key a simulated person presses for what they hold."""
    held = store.held(pid, who["id"])
    if careless:
        return rng.choice("12" if coin else "120")
    first = held["a"] if held["shown_order"] == "ab" else held["b"]
    gold = store.gold_item(pid, held["item_id"])
    winner = {"a": held["a"], "b": held["b"], "tie": None}[gold["answer"]] if gold else truth[held["item_id"]]
    right = "0" if winner is None else ("1" if winner == first else "2")
    if rng.random() < p_right:
        return right
    return rng.choice([k for k in "120" if k != right])


def crowd(work, pid, seed, with_careless=True, careless_share=0.2, p_right=0.9, coin=False, truth=None, max_steps=5000):
    """Run the project to its end with 3 careful people (and the careless one): returns the careless person's gold
    answers when flagged (None if never), and how many careful people were flagged."""
    names = (["carl"] if with_careless else []) + ["ann", "ben", "cat"]
    people = {n: work.store.annotator_by_token(work.store.add_annotator(pid, n)[1]) for n in names}
    weights = [careless_share] + [(1 - careless_share) / 3] * 3 if with_careless else [1 / 3] * 3
    rng = random.Random(seed)
    active = set(names)
    for _ in range(max_steps):
        if not active:
            break
        name = rng.choices(names, weights)[0]
        if name not in active:
            continue
        a = work.next_for(people[name])
        if a.get("done"):
            if a.get("final"):
                active.discard(name)
            elif all(work.next_for(people[n]).get("done") for n in active):
                break
            continue
        work.submit(people[name], a["assignment_id"], answer=key_for(work.store, pid, people[name], truth, p_right, rng,
                                                                     name == "carl", coin))
    flagged = {a["name"]: a["flagged_at"] is not None for a in work.store.annotators(pid)}
    record = work.store.gold_record(pid)
    carl_at = None
    if with_careless and flagged["carl"]:
        carl_at = len(record.get(people["carl"]["id"], []))
    return carl_at, sum(flagged[n] for n in ("ann", "ben", "cat")), record


def part1(args) -> None:
    caught, within, at, careful_flagged, careful_runs, gold_seen = 0, 0, [], 0, 0, []
    t0 = time.time()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(dir=args.tmp) as d:
            work = Workspace(Store(os.path.join(d, "w.db")))
            pool = pool_of(args.items, 0.6, run)
            truth = {iid: ("A" if pool.scores["human"][k, 0] > 0 else "B") for k, iid in enumerate(pool.item_ids)}
            pid, _ = work.create_fixed("p", pool, mode="pairwise", a="A", b="B", gold=gold_rows(args.gold),
                                       gold_rate=args.rate, min_gold_accuracy=args.min_accuracy)
            carl_at, n_careful, record = crowd(work, pid, 1000 + run, coin=args.coin, truth=truth)
            caught += carl_at is not None
            within += carl_at is not None and carl_at <= 20
            if carl_at is not None:
                at.append(carl_at)
            careful_flagged += n_careful
            careful_runs += 3
            gold_seen.append(statistics.mean(len(v) for v in record.values()))
    print(f"part 1: {args.runs} runs, {args.items} items, {args.gold} gold items at rate R = {args.rate}, "
          f"--min-gold-accuracy A = {args.min_accuracy}, level 95% per end (anytime); careless keys: "
          f"{'1 or 2' if args.coin else '1, 2 or 0'}; {time.time() - t0:.0f} s")
    print("| who | runs | flagged | flagged after <= 20 gold answers | median gold answers to flag |")
    print("|---|---|---|---|---|")
    print(f"| careless (20% of answers, random) | {args.runs} | {caught / args.runs:.3f} | {within / args.runs:.3f} | "
          f"{statistics.median(at) if at else '-'} |")
    print(f"| careful (90% right), per person | {careful_runs} | {careful_flagged / careful_runs:.3f} | - | - |")
    print(f"mean gold answers per person per run: {statistics.mean(gold_seen):.1f}")


def part2(args) -> None:
    same, rows, t0 = 0, [], time.time()
    for run in range(args.live_runs):
        out = []
        for with_careless in (True, False):
            with tempfile.TemporaryDirectory(dir=args.tmp) as d:
                work = Workspace(Store(os.path.join(d, "w.db")))
                pool = pool_of(args.live_items, 0.6, run)
                truth = {iid: ("A" if pool.scores["human"][k, 0] > 0 else "B") for k, iid in enumerate(pool.item_ids)}
                pid, _ = work.create_live_pairwise("p", pool, "A", "B", make_selector("random", seed=run), risk=0.1,
                                                   max_labels=args.live_items, gold=gold_rows(args.gold),
                                                   gold_rate=args.rate, min_gold_accuracy=args.min_accuracy)
                carl_at, _, _ = crowd(work, pid, 5000 + run, with_careless=with_careless, coin=args.coin, truth=truth)
                d_ = work.status(pid)["decision"]
                out.append((d_["winner"] if d_["decided"] else "open", d_["labels_used"], carl_at))
        rows.append(out)
        same += out[0][0] == out[1][0]
    print(f"\npart 2: {args.live_runs} live projects of {args.live_items} items (A better on 60%), risk 0.1, each run "
          f"with and without the careless person; {time.time() - t0:.0f} s")
    print("| runs | same decision | careless flagged | winner A (with / without) | median labels (with / without) |")
    print("|---|---|---|---|---|")
    flagged = sum(r[0][2] is not None for r in rows)
    print(f"| {args.live_runs} | {same / args.live_runs:.3f} | {flagged / args.live_runs:.3f} | "
          f"{sum(r[0][0] == 'A' for r in rows)} / {sum(r[1][0] == 'A' for r in rows)} | "
          f"{statistics.median(r[0][1] for r in rows)} / {statistics.median(r[1][1] for r in rows)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--live-runs", type=int, default=40)
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--live-items", type=int, default=300)
    ap.add_argument("--gold", type=int, default=30)
    ap.add_argument("--rate", type=float, default=0.2)
    ap.add_argument("--min-accuracy", type=float, default=0.8)
    ap.add_argument("--coin", action="store_true", help="the careless person presses 1 or 2 (never 0)")
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ap.parse_args()
    if args.runs:
        part1(args)
    if args.live_runs:
        part2(args)


if __name__ == "__main__":
    main()
