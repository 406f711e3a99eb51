"""Inter-annotator agreement measured on real data with ``evalsift.stats.agreement``.

1. SummEval (``summeval/annotators/M*_outputs_annotations.jsonl``, 12 systems x 100 documents =
   1200 summaries): per dimension (coherence, consistency, fluency, relevance; 1-5 scale) among the
   3 experts and among the 5 crowd workers: Krippendorff's alpha (interval and ordinal), Fleiss'
   kappa (nominal over the five labels) and, for the experts only, the mean pairwise Cohen's kappa
   (unweighted and quadratic). The crowd workers are listed per summary without a stable identity
   (position k is not the same person across summaries), so no pairwise kappa for them; alpha and
   Fleiss' kappa do not need identities. 542 of the 1200 summaries carry five identical crowd
   annotations (the same four scores from all five workers), so the crowd and expert rows are
   repeated on the other 658 ("crowd-varied", "expert-varied").
2. WMT23 en-de ESA re-annotations (``wmt23/esa-campaign/en-de.<name>.seg.score``, 13 systems x 557
   segments, read with ``evalsift.io.read_score_file``): for each pair of annotation rounds, on the
   (segment, system) cells both scored: Krippendorff's alpha (interval), Pearson r, Kendall's tau-b
   and tau-c (the ESA authors' analysis code reports tau-c), exact agreement, and the pairwise
   accuracy of the 13 systems' orderings by their mean score on those cells.

    python benchmarks/judge/agreement_real.py [--out bench-out/agreement_real.json]

Data: ``$EVALSIFT_DATA`` (default ``../shared/data``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

from evalsift.io import read_score_file  # noqa: E402
from evalsift.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

DATA = Path(os.environ.get("EVALSIFT_DATA", "").strip() or REPO.parent / "shared" / "data")
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
GROUPS = {"expert": ("expert_annotations", 3), "crowd": ("turker_annotations", 5)}
ESA_PAIRS = [  # (first round, repeat), labelled as in the ESA authors' analysis code
    ("ESA-1", "ESA-IAA"), ("ESA-1", "ESA-2"), ("ESAAI-1", "ESAAI-IAA"), ("ESAAI-1", "ESAAI-2"),
    ("MQM-1", "MQM-IAA"),
]


def summeval_ratings(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """{group: {dimension: raters x summaries float array}} over every annotator file."""
    rows: dict[str, dict[str, list[list[float]]]] = {g: {d: [] for d in DIMENSIONS} for g in GROUPS}
    files = sorted(folder.glob("M*_outputs_annotations.jsonl"))
    if not files:
        raise SystemExit(f"no SummEval annotator files in {folder} (set EVALSIFT_DATA)")
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            for g, (key, n) in GROUPS.items():
                anns = rec[key]
                assert len(anns) == n, (f, key, len(anns))
                for d in DIMENSIONS:
                    rows[g][d].append([float(a[d]) for a in anns])
    return {g: {d: np.array(v).T for d, v in dims.items()} for g, dims in rows.items()}


def identical_crowd(ratings: dict[str, dict[str, np.ndarray]]) -> np.ndarray:
    """Summaries whose five crowd annotations are identical on all four dimensions (a bool per summary)."""
    stack = np.stack([ratings["crowd"][d] for d in DIMENSIONS])     # dims x raters x summaries
    return (stack == stack[:, :1, :]).all(axis=(0, 1))


def summeval_part(folder: Path) -> dict:
    ratings = summeval_ratings(folder)
    same = identical_crowd(ratings)
    out: dict = {"n_summaries": int(same.size), "n_crowd_identical": int(same.sum())}
    groups = [(g, g, None) for g in GROUPS] + [("crowd-varied", "crowd", ~same), ("expert-varied", "expert", ~same)]
    for label, g, keep in groups:
        for d in DIMENSIONS:
            m = ratings[g][d] if keep is None else ratings[g][d][:, keep]
            row = {
                "n_raters": m.shape[0], "n_items": m.shape[1],
                "alpha_interval": krippendorff_alpha(m, "interval").alpha,
                "alpha_ordinal": krippendorff_alpha(m, "ordinal").alpha,
                "alpha_nominal": krippendorff_alpha(m, "nominal").alpha,
                "fleiss_nominal": fleiss_kappa(m.T, form="labels").kappa,
                "exact_agreement_pct": 100 * float(np.mean([np.mean([u == v for u, v in combinations(col, 2)])
                                                            for col in m.T])),
            }
            if g == "expert":
                for w, name in ((None, "cohen_mean"), ("quadratic", "cohen_quadratic_mean")):
                    row[name] = float(np.mean([cohen_kappa(m[i], m[j], labels=[1, 2, 3, 4, 5], weights=w).kappa
                                               for i, j in combinations(range(m.shape[0]), 2)]))
            out[f"{label}/{d}"] = row
    return out


def _systems(path: Path) -> list[str]:
    names: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.split("\t", 1)[0]
        if s and s not in names:
            names.append(s)
    return names


def _pairwise_accuracy(x: np.ndarray, y: np.ndarray) -> float:
    """Share of system pairs ordered the same way by x and y (a tie agrees only with a tie)."""
    agree = [np.sign(x[i] - x[j]) == np.sign(y[i] - y[j]) for i, j in combinations(range(len(x)), 2)]
    return float(np.mean(agree))


def esa_part(folder: Path, n_segments: int = 557) -> dict:
    from scipy.stats import kendalltau, pearsonr

    systems = _systems(folder / "en-de.ESA-1.seg.score")
    read = {}
    for name in {n for p in ESA_PAIRS for n in p}:
        read[name] = read_score_file(folder / f"en-de.{name}.seg.score", n_segments, systems)
    out: dict = {"systems": len(systems)}
    for first, second in ESA_PAIRS:
        A, B = read[first], read[second]
        both = np.isfinite(A) & np.isfinite(B)
        x, y = A[both], B[both]
        sys_ok = both.any(axis=0)
        mx = np.array([A[both[:, j], j].mean() for j in np.nonzero(sys_ok)[0]])
        my = np.array([B[both[:, j], j].mean() for j in np.nonzero(sys_ok)[0]])
        out[f"{first} vs {second}"] = {
            "n_cells": int(both.sum()), "n_segments": int(both.any(axis=1).sum()),
            "alpha_interval": krippendorff_alpha(np.vstack([x, y]), "interval").alpha,
            "pearson": float(pearsonr(x, y)[0]),
            "kendall_tau_b": float(kendalltau(x, y)[0]),
            "kendall_tau_c": float(kendalltau(x, y, variant="c")[0]),
            "exact_agreement_pct": 100 * float(np.mean(x == y)),
            "systems": int(sys_ok.sum()),
            "system_pairwise_accuracy": _pairwise_accuracy(mx, my),
        }
    return out


def fmt(v) -> str:
    return "nan" if isinstance(v, float) and math.isnan(v) else (f"{v:.3f}" if isinstance(v, float) else str(v))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "bench-out" / "agreement_real.json"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    summ = summeval_part(DATA / "summeval" / "annotators")
    esa = esa_part(DATA / "wmt23" / "esa-campaign")
    seconds = time.perf_counter() - t0

    print("SummEval, 1200 summaries (12 systems x 100 docs), 1-5 scale")
    print("| group | dimension | raters | alpha interval | alpha ordinal | alpha nominal | Fleiss kappa | exact % "
          "| Cohen mean | Cohen quadratic mean |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key, r in summ.items():
        if "/" not in key:
            continue
        g, d = key.split("/")
        print(f"| {g} | {d} | {r['n_raters']} | {fmt(r['alpha_interval'])} | {fmt(r['alpha_ordinal'])} | "
              f"{fmt(r['alpha_nominal'])} | {fmt(r['fleiss_nominal'])} | {r['exact_agreement_pct']:.1f} | "
              f"{fmt(r.get('cohen_mean', '-'))} | {fmt(r.get('cohen_quadratic_mean', '-'))} |")
    print(f"{summ['n_crowd_identical']} of {summ['n_summaries']} summaries have five identical crowd annotations "
          "(all four dimensions); '*-varied' rows leave them out")
    print()
    print(f"WMT23 en-de ESA campaign, {esa['systems']} systems x 557 segments, cells scored in both rounds")
    print("| rounds | cells | segments | alpha interval | Pearson | Kendall tau-b | Kendall tau-c | exact % "
          "| system pairwise acc. |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, r in esa.items():
        if key == "systems":
            continue
        print(f"| {key} | {r['n_cells']} | {r['n_segments']} | {fmt(r['alpha_interval'])} | {fmt(r['pearson'])} | "
              f"{fmt(r['kendall_tau_b'])} | {fmt(r['kendall_tau_c'])} | {r['exact_agreement_pct']:.1f} | "
              f"{fmt(r['system_pairwise_accuracy'])} ({r['systems']} systems) |")
    print(f"\n{seconds:.1f} s")
    write_json(args.out, {"summeval": summ, "esa": esa, "seconds": seconds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
