"""Competence models against majority vote on real multi-rater data (issue 45, part 2).

For each set: several annotators' categorical labels per item, combined by majority, Dawid-Skene and MACE
(:func:`evalsift.stats.crowd.aggregate`), each scored against a reference the annotators did not give.
Accuracy with a 95% item-bootstrap interval (percentile, the same resamples for every rule), and the paired
differences Dawid-Skene - majority and MACE - majority with theirs. The models are fitted once on all items;
the bootstrap resamples the items' correctness (the fit's own uncertainty is not in the interval).
Majority breaks a split top by a draw among the tied labels, seeded per item (``ties="draw"``).

1. ChaosNLI (``chaosnli/chaosNLI_v1.0``; SNLI, MNLI-m, alphaNLI): each item's 100 crowd labels are shuffled
   (seeded) and the first 5 are 5 "annotators" (``pos1`` .. ``pos5``); the reference is the plurality of the
   other 95 (items whose 95 tie at the top are left out, and counted). The labels are counts, not persons:
   ``pos3`` is a different worker on every item. A second row per NLI set uses the 5 original annotators
   (``old_labels``, SNLI/MNLI only) against the plurality of all 100 -- again positions, not persons.
2. SummEval (``summeval/annotators``, 12 systems x 100 documents = 1200 summaries), per dimension: the 5 crowd
   workers' 1-5 scores (positions ``turk1`` .. ``turk5``, no identities in the file) against the reference =
   the median of the 3 experts' scores (an integer 1-5: the label space is the five scores), and a binary
   version (score >= 4 "good" vs <= 3; reference: the experts' median >= 4). 542 of the 1200 summaries carry five
   identical crowd scores; every rule gives the same verdict there.
3. WMT23 en-de ESA (``wmt23/esa-campaign``): on the (segment, system) cells scored by all three ESA annotations
   (``ESA-1``, its repeat ``ESA-2``, ``ESA-IAA`` by other annotators) and by the official WMT23 MQM
   (``mt-metrics-eval-v2/.../en-de.mqm.seg.score``), every pair of systems on a segment where MQM names a winner
   is an item; each ESA annotation's verdict is a / b / tie by its score difference; the reference is MQM's
   winner (a tie verdict is a miss). The annotators are annotation rounds, not persons.

    python benchmarks/judge/competence_real.py [--sets chaosnli,summeval,wmt] [--resamples 1000] [--seed 0]
        [--out bench-out/competence_real.json]

Data: ``$EVALSIFT_DATA`` (default ``../shared/data``). Needs the ``quality`` extra (crowd-kit).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.stats.crowd import RULES, aggregate  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

DATA = Path(os.environ.get("EVALSIFT_DATA", "").strip() or REPO.parent / "shared" / "data")
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
NLI = {"snli": "chaosNLI_snli.jsonl", "mnli_m": "chaosNLI_mnli_m.jsonl", "alphanli": "chaosNLI_alphanli.jsonl"}
OLD = {"entailment": "e", "neutral": "n", "contradiction": "c"}
ESA = ("ESA-1", "ESA-2", "ESA-IAA")


def _plurality(counts: Counter) -> object | None:
    top = counts.most_common()
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def chaosnli_sets(folder: Path, seed: int):
    """(name, rows, reference, note) per ChaosNLI subset: 5 of 100 labels vs the other 95, and (SNLI/MNLI)
    the 5 original labels vs all 100."""
    for subset, file in NLI.items():
        path = folder / file
        if not path.is_file():
            print(f"skip chaosnli/{subset}: {path} not found", file=sys.stderr)
            continue
        rng = np.random.default_rng([seed, len(subset)])
        rows, ref, tied = [], {}, 0
        old_rows, old_ref, old_tied = [], {}, 0
        for line in path.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            labels = [str(k) for k, n in sorted(d["label_counter"].items()) for _ in range(int(n))]
            labels = [labels[i] for i in rng.permutation(len(labels))]
            five, rest = labels[:5], labels[5:]
            r = _plurality(Counter(rest))
            if r is None:
                tied += 1
            else:
                ref[d["uid"]] = r
                rows += [(d["uid"], f"pos{k + 1}", lab) for k, lab in enumerate(five)]
            old = d.get("old_labels")
            if isinstance(old, list) and len(old) >= 3:
                r100 = _plurality(Counter(labels))
                if r100 is None:
                    old_tied += 1
                else:
                    old_ref[d["uid"]] = r100
                    old_rows += [(d["uid"], f"orig{k + 1}", OLD.get(str(lab), str(lab))) for k, lab in enumerate(old)]
        yield (f"chaosnli/{subset} 5 of 100 vs other 95", rows, ref,
               f"{tied} items left out (the 95 tie at the top)")
        if old_rows:
            yield (f"chaosnli/{subset} original 5 vs 100", old_rows, old_ref,
                   f"{old_tied} items left out (the 100 tie at the top)")


def summeval_sets(folder: Path):
    """(name, rows, reference, note) per SummEval dimension, 5-point and binary."""
    files = sorted(folder.glob("M*_outputs_annotations.jsonl"))
    if not files:
        print(f"skip summeval: no annotator files in {folder}", file=sys.stderr)
        return
    recs = []
    for f in files:
        for k, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            d = json.loads(line)
            recs.append((f"{d['model_id']}/{d['id']}", d["expert_annotations"], d["turker_annotations"]))
    same = sum(1 for _, _, t in recs if all(x == t[0] for x in t))
    for dim in DIMENSIONS:
        for space in ("5-point", "binary >=4"):
            rows, ref = [], {}
            for iid, experts, turkers in recs:
                med = int(np.median([e[dim] for e in experts]))
                ref[iid] = med if space == "5-point" else int(med >= 4)
                for k, t in enumerate(turkers):
                    v = int(t[dim])
                    rows.append((iid, f"turk{k + 1}", v if space == "5-point" else int(v >= 4)))
            yield (f"summeval/{dim} {space}", rows, ref,
                   f"reference: median of 3 experts; {same} of {len(recs)} summaries have 5 identical crowd scores")


def _scores(path: Path, n_seg: int, systems: list[str]) -> np.ndarray:
    from evalsift.io import read_score_file

    return read_score_file(path, n_seg, systems)


def wmt_sets(root: Path):
    """(name, rows, reference, note): ESA's three annotations' pairwise verdicts vs MQM's winner."""
    esa_dir = root / "esa-campaign"
    mqm = root / "mt-metrics-eval-v2" / "wmt23" / "human-scores" / "en-de.mqm.seg.score"
    if not esa_dir.is_dir() or not mqm.is_file():
        print(f"skip wmt: {esa_dir} or {mqm} not found", file=sys.stderr)
        return
    systems = list(dict.fromkeys(line.split("\t")[0] for line in mqm.read_text(encoding="utf-8").splitlines()))
    n_seg = len(mqm.read_text(encoding="utf-8").splitlines()) // len(systems)
    M = _scores(mqm, n_seg, systems)
    E = {name: _scores(esa_dir / f"en-de.{name}.seg.score", n_seg, systems) for name in ESA}
    rows, ref = [], {}
    for s in range(n_seg):
        ok = [j for j in range(len(systems)) if np.isfinite(M[s, j]) and all(np.isfinite(E[n][s, j]) for n in ESA)]
        for a, b in combinations(ok, 2):
            if M[s, a] == M[s, b]:
                continue
            iid = f"{s}:{systems[a]}:{systems[b]}"
            ref[iid] = "a" if M[s, a] > M[s, b] else "b"
            for name in ESA:
                d = E[name][s, a] - E[name][s, b]
                rows.append((iid, name, "a" if d > 0 else "b" if d < 0 else "tie"))
    yield ("wmt23/en-de ESA x3 pairs vs MQM", rows, ref,
           f"{len({i.split(':')[0] for i in ref})} segments; pairs where MQM names a winner")


def evaluate(name, rows, ref, note, *, resamples: int, seed: int, mace_restarts: int) -> dict:
    items = sorted(ref)
    correct, times = {}, {}
    for rule in RULES:
        t0 = time.perf_counter()
        fit = aggregate(rows, rule, seed=seed, ties="draw", mace_restarts=mace_restarts)
        times[rule] = time.perf_counter() - t0
        correct[rule] = np.array([fit.verdict.get(i) == ref[i] for i in items], dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(items), size=(resamples, len(items)))
    out = {"set": name, "items": len(items), "labels": len(rows), "note": note, "rules": {}, "diff": {}}
    for rule in RULES:
        boot = correct[rule][idx].mean(axis=1)
        out["rules"][rule] = {"accuracy": float(correct[rule].mean()),
                              "interval": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
                              "seconds": round(times[rule], 2)}
    for rule in ("dawid-skene", "mace"):
        d = correct[rule] - correct["majority"]
        boot = d[idx].mean(axis=1)
        out["diff"][rule] = {"mean": float(d.mean()),
                             "interval": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
                             "items_changed": int(np.sum(d != 0))}
    return out


def _cell(r: dict) -> str:
    lo, hi = r["interval"]
    return f"{r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}]"


def _diff(r: dict) -> str:
    lo, hi = r["interval"]
    return f"{r['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="chaosnli,summeval,wmt")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mace-restarts", type=int, default=10, help="MACE's random restarts (crowd-kit's default 10)")
    ap.add_argument("--out", help="also write the table as JSON here")
    args = ap.parse_args(argv)
    want = set(args.sets.split(","))
    sources = []
    if "chaosnli" in want:
        sources += list(chaosnli_sets(DATA / "chaosnli" / "chaosNLI_v1.0", args.seed))
    if "summeval" in want:
        sources += list(summeval_sets(DATA / "summeval" / "annotators"))
    if "wmt" in want:
        sources += list(wmt_sets(DATA / "wmt23"))
    if not sources:
        raise SystemExit(f"no data found under {DATA} (set EVALSIFT_DATA)")
    print(f"accuracy against the reference, 95% item bootstrap ({args.resamples} resamples, seed {args.seed}); "
          "majority's splits drawn (seeded)")
    print(f"{'set':<40} {'items':>6}  {'majority':<22} {'dawid-skene':<22} {'mace':<22} "
          f"{'DS - majority':<24} {'MACE - majority':<24}")
    results = []
    for name, rows, ref, note in sources:
        r = evaluate(name, rows, ref, note, resamples=args.resamples, seed=args.seed,
                     mace_restarts=args.mace_restarts)
        results.append(r)
        R = r["rules"]
        print(f"{name:<40} {r['items']:>6}  {_cell(R['majority']):<22} {_cell(R['dawid-skene']):<22} "
              f"{_cell(R['mace']):<22} {_diff(r['diff']['dawid-skene']):<24} {_diff(r['diff']['mace']):<24}",
              flush=True)
    print()
    for r in results:
        print(f"{r['set']}: {r['note']}; DS changed {r['diff']['dawid-skene']['items_changed']} items' correctness, "
              f"MACE {r['diff']['mace']['items_changed']}; fit seconds "
              + ", ".join(f"{k} {v['seconds']}" for k, v in r["rules"].items()))
    if args.out:
        write_json(args.out, results, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
