"""DiffUse's own analyses (Ashury-Tahan et al. 2024, Sec. 6.1 and 7.2), run inside the pairwise
protocol (``bench pairwise --analyses``). They explain where DiffUse's gain and its bias come from:

- **deviation** (their Fig. 5): by budget, how far the winning distance estimated on the selected
  items, ``(wins_w - wins_l) / budget`` toward the test set's winner ``w``, lies from the test set's
  own ``(wins_w - wins_l) / size`` (mean over test sets; standard error across seeds, as the success
  curves). Positive: the picks exaggerate the gap -- the reason the paper's
  hypergeometric rule, which reads the picks as a random sample, is over-confident. For selectors
  with clusters the cluster-size-weighted estimate's deviation is given too.
- **cluster size vs difference norm** (Fig. 8): for the ``clusters``-cut of DiffUse's tree of the
  difference vectors, each cluster's size and the mean norm of its members' difference vectors,
  pooled over test sets: Spearman's rho, the mean norm by size bin, and a seeded sample of points.
- **success by norm bin** (Fig. 10): each test set's items split into ``bins`` equal-count bins of
  their difference norm; per bin, the share of its decisive items whose verdict agrees with the test
  winner, the share of ties, and the success of ``budget`` items drawn at random from the bin
  (their majority names the test winner). If large differences carry the verdict, success rises
  with the norm -- the premise of picking one representative per cluster.

The numbers are descriptive (no guarantee is claimed); they run on any pairwise data and oracle.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from ..stats import count_verdicts, majority, standard_error

POINTS_KEPT = 2000


class DiffUseAnalyses:
    """Collects the three analyses over the protocol's test sets (see the module doc)."""

    def __init__(self, clusters: int = 20, bins: int = 5, budget: int = 10, encoder: Any = "minilm") -> None:
        self.clusters, self.bins, self.budget, self.encoder = clusters, bins, budget, encoder
        self._dev: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._wdev: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._points: list[tuple[int, float]] = []
        self._bins: list[dict[str, np.ndarray]] = []

    def add_selection(self, method: str, selection: Any, case: Any) -> None:
        """The deviation of one method's picks at one budget on one test set."""
        sign = 1.0 if case.true_winner == "a" else -1.0
        wa, wb, _ = count_verdicts(case.truth)
        test = sign * (wa - wb) / len(case.truth)
        picked = case.truth[selection.items]
        sa, sb, _ = count_verdicts(picked)
        self._dev[method][len(selection.items)].append((case.seed, sign * (sa - sb) / len(picked) - test))
        if selection.cluster_sizes is not None:
            w = np.asarray(selection.cluster_sizes, dtype=float)
            score = np.select([picked == "a", picked == "b"], [1.0, -1.0], 0.0)
            self._wdev[method][len(selection.items)].append((case.seed, sign * float(w @ score / w.sum()) - test))

    def add_case(self, case: Any, fitted: dict[str, Any]) -> None:
        """Cluster sizes vs norms and the norm bins of one test set; reuses a fitted DiffUse's
        difference vectors and tree when there is one."""
        from ..select.diffuse import cluster_tree, difference_vectors

        tree = X = None
        for sel in fitted.values():
            if getattr(sel, "tree_", None) is not None and getattr(sel, "space", None) == "difference" and \
                    getattr(sel, "clustering", None) == "ward":
                tree, X = sel.tree_, sel.vectors_
                break
        if X is None:
            X = difference_vectors(case.pool, self.encoder)
            tree = cluster_tree(X, "ward")
        norms = np.linalg.norm(X, axis=1)
        labels = tree.labels(min(self.clusters, len(norms)))
        for lab in np.unique(labels):
            members = labels == lab
            self._points.append((int(members.sum()), float(norms[members].mean())))
        order = np.argsort(norms, kind="stable")
        rng = np.random.default_rng([case.seed, 7])
        agree, ties, success, mean_norm = (np.full(self.bins, np.nan) for _ in range(4))
        for b, part in enumerate(np.array_split(order, self.bins)):
            if not len(part):
                continue
            v = case.truth[part]
            wins, losses, t = count_verdicts(v)
            win_label = case.true_winner
            hits = wins if win_label == "a" else losses
            decisive = wins + losses
            agree[b] = hits / decisive if decisive else np.nan
            ties[b] = t / len(v)
            draw = v[rng.choice(len(v), size=min(self.budget, len(v)), replace=False)]
            sa, sb, _ = count_verdicts(draw)
            success[b] = float(majority(sa, sb) == win_label)
            mean_norm[b] = float(norms[part].mean())
        self._bins.append({"agreement": agree, "ties": ties, "success": success, "norm": mean_norm})

    def state(self) -> dict[str, Any]:
        """What was collected so far, as plain containers (to send from a worker process)."""
        return {"dev": {m: dict(by) for m, by in self._dev.items()}, "wdev": {m: dict(by) for m, by in self._wdev.items()},
                "points": list(self._points), "bins": list(self._bins)}

    def merge(self, state: dict[str, Any]) -> None:
        """Append another collector's :meth:`state` (merging test sets in the serial order gives the serial result)."""
        for mine, theirs in ((self._dev, state["dev"]), (self._wdev, state["wdev"])):
            for method, by_budget in theirs.items():
                for budget, rows in by_budget.items():
                    mine[method][budget].extend(rows)
        self._points.extend(state["points"])
        self._bins.extend(state["bins"])

    def result(self) -> dict[str, Any]:
        """The ``analyses`` part of ``results.json``."""
        def cell(rows):  # se across seeds: one seed's test sets share their items across pairs
            by_seed = defaultdict(list)
            for seed, v in rows:
                by_seed[seed].append(v)
            return {"mean": float(np.mean([v for _, v in rows])),
                    "se": standard_error([np.mean(v) for v in by_seed.values()]), "runs": len(rows)}

        def curve(d):
            return {m: {str(b): cell(v) for b, v in sorted(by.items())} for m, by in d.items()}

        out: dict[str, Any] = {"deviation": curve(self._dev), "weighted_deviation": curve(self._wdev)}
        if self._points:
            pts = np.array(self._points, dtype=float)
            rho = spearmanr(pts[:, 0], pts[:, 1]).statistic if len(pts) > 2 else float("nan")
            edges = np.unique(np.quantile(pts[:, 0], np.linspace(0, 1, 6)))
            by_size = []
            for lo, hi in zip(edges[:-1], edges[1:]):
                keep = (pts[:, 0] >= lo) & ((pts[:, 0] < hi) | (hi == edges[-1]))
                if keep.any():
                    by_size.append({"sizes": [int(lo), int(hi)], "clusters": int(keep.sum()),
                                    "mean_norm": float(pts[keep, 1].mean())})
            keep = np.random.default_rng(0).permutation(len(pts))[:POINTS_KEPT]
            out["cluster_norm"] = {"clusters_per_test_set": self.clusters, "n_clusters": len(pts),
                                   "spearman_size_norm": float(rho), "by_size": by_size,
                                   "points": [[int(pts[i, 0]), round(float(pts[i, 1]), 5)] for i in sorted(keep)]}
        if self._bins:
            def mean_of(key):
                arr = np.array([b[key] for b in self._bins])
                return [float(np.nanmean(arr[:, j])) if np.isfinite(arr[:, j]).any() else None
                        for j in range(self.bins)]

            out["norm_bins"] = {"bins": self.bins, "budget": self.budget, "test_sets": len(self._bins),
                                "mean_norm": mean_of("norm"), "agreement": mean_of("agreement"),
                                "ties": mean_of("ties"), "success": mean_of("success")}
        return out
