"""Issue 45, items 4-5: the selective judge with a guarantee on recorded Chatbot Arena verdicts, beside the peer's code.

    python benchmarks/judge/selective_arena.py [--splits 200] [--peer [--peer-splits 10]]   # 1 min; --peer: + ~7 min

Data: ``arena-ppr/`` under ``$EVALSIFT_DATA`` (or ../shared/data): 17,942 battles with one human vote each and the
verdicts of GPT-4 (0125), Claude 3 Opus and GPT-3.5 on every battle (one presentation order). Agreement is counted on
the battles people did not call a tie (Trust or Escalate's rule); a judge set's confidence on a battle is the weight
its judges' verdicts give the winner it names (:mod:`evalsift.oracle.selective`; both judges naming the same winner:
1.0; a split: 0.5; a tie: no weight).

1. The issue's stated figures, re-measured on all battles: GPT-4 and Claude naming the same winner (coverage of the
   non-tie battles, agreement there); counting ties, all three judges agreeing.
2. 200 random splits (500 battles to calibrate, the rest to test), agreement 0.8 and 0.9, risk 0.1, judge sets GPT-4,
   GPT-4+Claude, all three: per row the share of splits where the empirical agreement on the answered test battles
   reaches the level (target >= 90 %), the mean coverage (target > 0.4 at 0.8), the mean achieved agreement (over the
   splits that answer something), and how many splits answered nothing.
3. ``--peer``: the same confidences and splits through Trust or Escalate's own calibration code
   (``benchmarks/judge/_toe_driver.py``, run with the interpreter in ``$TOE_PYTHON``, default /tmp/toe-venv/bin/python, on
   the code in ``$TOE_SRC``, default /tmp/toe-src): its coverage and agreement side by side, and how many splits it
   answered where no threshold passed its own test (its fallback: the most confident group, without a guarantee).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from evalsift.io.pairwise import read_judgments  # noqa: E402
from evalsift.oracle import selective as S  # noqa: E402

JUDGES = {"GPT-4": "gpt-4-0125-preview", "Claude": "claude-3-opus-20240229", "GPT-3.5": "gpt-3.5-turbo"}
SETS = {"GPT-4": ["GPT-4"], "GPT-4+Claude": ["GPT-4", "Claude"], "all three": ["GPT-4", "Claude", "GPT-3.5"]}
LEVELS = (0.8, 0.9)
RISK = 0.1
CAL = 500


def data_folder() -> Path:
    root = os.environ.get("EVALSIFT_DATA") or str(ROOT.parent / "shared" / "data")
    folder = Path(root) / "arena-ppr"
    if not (folder / "human.jsonl").is_file():
        sys.exit(f"no arena-ppr data under {root}: set EVALSIFT_DATA to the data folder")
    return folder


def load(folder: Path):
    human, pairs = S.human_verdicts(read_judgments(folder / "human.jsonl").judgments)
    weights = {k: S.judge_weights(read_judgments(folder / f"{v}.jsonl").judgments, pairs) for k, v in JUDGES.items()}
    return human, pairs, weights


def stated_figures(human, weights) -> list[str]:
    lines = []
    for ties, names, what in (("exclude", ["GPT-4", "Claude"], "GPT-4 & Claude naming the same winner"),
                              ("count", ["GPT-4", "Claude", "GPT-3.5"], "counting ties, all three agreeing")):
        ids = [i for i in human if ties == "count" or human[i] != "tie"]
        v, c = S.combined_confidence([weights[n] for n in names], ids, ties)
        h = np.array([human[i] for i in ids], dtype=object)
        m = c >= 1 - 1e-9
        lines.append(f"  {what}: coverage {m.mean():.3f} of {len(ids)} battles"
                     f"{' people did not call a tie' if ties == 'exclude' else ''}, agreement {np.mean(v[m] == h[m]):.3f}")
    return lines


def splits(n_items: int, n: int) -> list[np.ndarray]:
    """The calibration positions of each split (seed k draws split k)."""
    return [np.random.default_rng(k).permutation(n_items)[:CAL] for k in range(n)]


def ours(conf, ok, cal_pos, level) -> dict:
    """One split through evalsift's fixed-sequence calibration: answered test mask and whether a threshold passed."""
    mask = np.zeros(len(conf), dtype=bool)
    mask[cal_pos] = True
    c = S.calibrate(conf[mask], ok[mask], agreement=level, risk=RISK)
    test = ~mask
    ans = c.answers(conf[test])
    return {"coverage": ans.mean(), "agree": ok[test][ans].mean() if ans.any() else None,
            "passed": c.threshold is not None, "threshold": c.threshold}


def summarise(rows: list[dict], level: float) -> dict:
    answered = [r for r in rows if r["agree"] is not None]
    held = [r["agree"] is None or r["agree"] >= level for r in rows]  # nothing answered: nothing claimed, holds
    held_ans = [r["agree"] >= level for r in answered]
    return {"held": np.mean(held), "held_answered": np.mean(held_ans) if held_ans else float("nan"), "coverage": np.mean([r["coverage"] for r in rows]),
            "agreement": np.mean([r["agree"] for r in answered]) if answered else float("nan"),
            "none": sum(not r["passed"] for r in rows)}


def run_peer(conf_sets: dict, ok_sets: dict, verdict_sets: dict, human_ids, human, cal_sets, levels) -> dict | None:
    py = os.environ.get("TOE_PYTHON", "/tmp/toe-venv/bin/python")
    src = os.environ.get("TOE_SRC", "/tmp/toe-src")
    if not Path(py).exists() or not Path(src, "cascaded_evaluation", "util.py").is_file():
        print(f"peer: skipped (no interpreter at {py} or no Trust or Escalate code at {src})")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        job = {"levels": list(levels), "risk": RISK, "splits": [c.tolist() for c in cal_sets],
               "sets": {}}
        for name in conf_sets:
            job["sets"][name] = {"probs": verdict_sets[name], "labels": [0 if human[i] == "a" else 1 for i in human_ids]}
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        t = time.time()
        p = subprocess.run([py, str(ROOT / "benchmarks" / "judge" / "_toe_driver.py"), src, str(Path(tmp) / "job.json"),
                            str(Path(tmp) / "out.json")], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"peer: its run failed ({p.returncode}): {p.stderr[-2000:]}")
            return None
        print(f"peer: Trust or Escalate's code ran in {time.time() - t:.0f} s")
        return json.loads((Path(tmp) / "out.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--peer", action="store_true", help="also run Trust or Escalate's code on the same splits")
    ap.add_argument("--peer-splits", type=int, default=10,
                    help="the first N splits for the peer (its grid search takes about 7 s per calibration here)")
    args = ap.parse_args()
    t0 = time.time()
    human, pairs, weights = load(data_folder())
    print("1. the issue's stated figures, re-measured on all battles")
    for line in stated_figures(human, weights):
        print(line)
    ids = [i for i in human if human[i] != "tie"]
    h = np.array([human[i] for i in ids], dtype=object)
    conf_sets, ok_sets, probs_sets = {}, {}, {}
    for name, members in SETS.items():
        v, c = S.combined_confidence([weights[m] for m in members], ids, "exclude")
        conf_sets[name], ok_sets[name] = c, v == h
        zero = np.zeros(3)
        # their format is two probabilities (A, B) summing to 1: a judge's tie is half to each
        probs_sets[name] = [(lambda w: (w[:2] + w[2] / 2).round(6).tolist())(
            np.mean([weights[m].get(i, zero) for m in members], axis=0)) for i in ids]
    cal_sets = splits(len(ids), args.splits)
    print(f"\n2. {args.splits} splits: {CAL} battles to calibrate, {len(ids) - CAL} to test (non-tie battles of "
          f"{len(human)}); risk {RISK}; agreement on the battles people did not call a tie; fixed-sequence, "
          f"at least {S.MIN_ITEMS} calibration items per threshold")
    ours_rows = {}
    print(f"{'judges':<14}{'level':>6}{'held':>8}{'held|ans':>10}{'coverage':>10}{'agreement':>11}{'none passed':>13}")
    for name in SETS:
        for level in LEVELS:
            rows = [ours(conf_sets[name], ok_sets[name], cal, level) for cal in cal_sets]
            s = summarise(rows, level)
            ours_rows[(name, level)] = s
            print(f"{name:<14}{level:>6}{s['held']:>8.1%}{s['held_answered']:>10.1%}{s['coverage']:>10.3f}{s['agreement']:>11.3f}"
                  f"{s['none']:>13}")
    print("held: splits where the agreement on the answered test battles reached the level (a split that answers "
          "nothing claims nothing and counts as held); held|ans: the same among the splits that answered; agreement: "
          "mean over the splits that answered")
    if args.peer:
        print("\n3. the same confidences and splits through Trust or Escalate's own code (their "
              "SelectiveClassificationUtil / CascadedClassifier.calibrate, unmodified)")
        peer_cal = cal_sets[:args.peer_splits]
        print(f"(the first {len(peer_cal)} of the {len(cal_sets)} splits; ours recomputed on the same ones)")
        peer = run_peer(conf_sets, ok_sets, probs_sets, ids, human, peer_cal, LEVELS)
        if peer is not None:
            print(f"{'judges':<14}{'level':>6}{'held':>8}{'coverage':>10}{'agreement':>11}{'fallback':>10}"
                  f"{'same items':>12}   (ours: held / coverage)")
            for name in SETS:
                for level in LEVELS:
                    rows = peer[name][str(level)]
                    ok, conf = ok_sets[name], conf_sets[name]
                    held, covs, agr, fallback, same = [], [], [], 0, 0
                    mine_rows = [ours(conf, ok, cal, level) for cal in peer_cal]
                    for cal, r in zip(peer_cal, rows):
                        test = np.ones(len(ids), bool)
                        test[cal] = False
                        ans = np.asarray(r["answered_test"], bool)
                        a = ok[test][ans].mean() if ans.any() else None
                        held.append(a is None or a >= level)
                        covs.append(ans.mean())
                        if a is not None:
                            agr.append(a)
                        fallback += bool(r["fallback"])
                        mine = ours(conf, ok, cal, level)
                        th = mine["threshold"]
                        same += bool(np.array_equal(ans, conf[test] >= th - 1e-12) if th is not None
                                     else not ans.any())
                    o = summarise(mine_rows, level)
                    print(f"{name:<14}{level:>6}{np.mean(held):>8.1%}{np.mean(covs):>10.3f}"
                          f"{np.mean(agr) if agr else float('nan'):>11.3f}{fallback:>10}{same:>12}   "
                          f"({o['held']:.1%} / {o['coverage']:.3f})")
            print("fallback: splits where no threshold passed its test and it answered its top group anyway; "
                  "same items: splits where it answered exactly the test battles ours did")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
