"""DiffUse's own analyses (Ashury-Tahan et al. 2024, Sec. 5.1, 6.1 and 7.2), run inside the pairwise
protocol (``bench pairwise --analyses``). They explain where DiffUse's gain and its bias come from.
Figure numbers are the first version's (v1); the ACL version numbers v1's Fig. 2 as Fig. 3, the others
alike:

- **winning distances** (Fig. 2): the test winning distance ``|wins_a - wins_b| / n`` of every
  system pair over all its comparable items (the paper's Sec. 3 definition, its Fig. 2 a histogram
  over HELM's pairs): how hard the pairs are to tell apart (:func:`winning_distances`).
- **2-D projection** (Fig. 7): a t-SNE (scikit-learn) of the difference vectors of one system pair
  drawn at random (seeded), with each point's difference norm; the paper's figure shows the many
  small differences packed near zero (:func:`tsne_projection`).

- **deviation** (their Fig. 5): by budget, how far the winning distance estimated on the selected
  items, ``(wins_w - wins_l) / budget`` toward the test set's winner ``w``, lies from the test set's
  own ``(wins_w - wins_l) / size`` (mean over test sets; standard error across seeds, as the success
  curves). Positive: the picks exaggerate the gap -- the reason the paper's
  hypergeometric rule, which reads the picks as a random sample, is over-confident. For selectors
  with clusters the cluster-size-weighted estimate's deviation is given too.
- **cluster size vs difference norm** (Fig. 8): for the ``clusters``-cut of DiffUse's tree of the
  difference vectors, each cluster's size and the mean norm of its members' difference vectors,
  pooled over test sets: Spearman's rho, the mean norm by size bin, and a seeded sample of points.
- **norms of the selected items** (Fig. 9): the difference norm of every item each method picked, over
  all its selection runs (all budgets and test sets), as a histogram beside the norms of all test-set
  items; the paper shows DiffUse's picks shifted to larger norms than random's.
- **success by norm bin** (Fig. 10): each test set's items split into ``bins`` equal-count bins of
  their difference norm (default 50, as the paper); per bin, whether the bin's own majority names the
  test winner (the paper's estimate from each whole bin; with ``budget`` set, from that many items
  drawn at random from the bin instead -- the default before issue 20, with 5 bins), the share of its
  decisive items whose verdict agrees with the test winner, and the share of ties. If large
  differences carry the verdict, success rises with the norm -- the premise of picking one
  representative per cluster.

The numbers are descriptive (no guarantee is claimed); they run on any pairwise data and oracle.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from ..stats import count_verdicts, majority, standard_error

POINTS_KEPT = 2000
NORM_HIST_BINS = 40  # bins of the selected items' norm histograms (Fig. 9)
DISTANCE_EDGES = np.linspace(0.0, 1.0, 21)  # winning-distance histogram (Fig. 2): steps of 0.05


def _quantise(x: np.ndarray) -> np.ndarray:
    """Norms to 3 significant digits: a histogram of them merges across workers and stays small."""
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    pos = x > 0
    digits = 2 - np.floor(np.log10(x[pos])).astype(int)
    out[pos] = [round(float(v), int(d)) for v, d in zip(x[pos], digits)]
    return out


class DiffUseAnalyses:
    """Collects the per-test-set analyses over the protocol's test sets (see the module doc):
    deviation, cluster size vs norm, norms of the selected items, norm bins.

    ``clusters``: the cut of DiffUse's tree for cluster size vs norm (Fig. 8; default 50, the paper's;
    it was 20). ``bins``: difference-norm bins per test set (Fig. 10; default 50). ``budget``: None (default)
    judges each bin by all its items, as the paper; a number draws that many items at random from the
    bin instead (the earlier default was ``bins=5, budget=10``).
    """

    def __init__(self, clusters: int = 50, bins: int = 50, budget: int | None = None, encoder: Any = "minilm") -> None:
        self.clusters, self.bins, self.budget, self.encoder = clusters, bins, budget, encoder
        self._dev: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._wdev: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._points: list[tuple[int, float]] = []
        self._bins: list[dict[str, np.ndarray]] = []
        self._picked: dict[str, dict[float, int]] = defaultdict(lambda: defaultdict(int))  # method -> norm -> count
        self._case_picks: list[tuple[str, np.ndarray]] = []  # this test set's picks, until add_case has its norms

    def add_selection(self, method: str, selection: Any, case: Any) -> None:
        """The deviation of one method's picks at one budget on one test set (their norms are added
        by :meth:`add_case`, which must follow for the same test set)."""
        self._case_picks.append((method, np.asarray(selection.items, dtype=int)))
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
        for method, items in self._case_picks:
            self._count(method, norms[items])
        self._case_picks = []
        self._count("all items", norms)
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
            draw = v if self.budget is None else v[rng.choice(len(v), size=min(self.budget, len(v)), replace=False)]
            sa, sb, _ = count_verdicts(draw)
            success[b] = float(majority(sa, sb) == win_label)
            mean_norm[b] = float(norms[part].mean())
        self._bins.append({"agreement": agree, "ties": ties, "success": success, "norm": mean_norm})

    def _count(self, method: str, norms: np.ndarray) -> None:
        values, counts = np.unique(_quantise(norms), return_counts=True)
        into = self._picked[method]
        for v, c in zip(values.tolist(), counts.tolist()):
            into[v] += c

    def state(self) -> dict[str, Any]:
        """What was collected so far, as plain containers (to send from a worker process)."""
        return {"dev": {m: dict(by) for m, by in self._dev.items()}, "wdev": {m: dict(by) for m, by in self._wdev.items()},
                "points": list(self._points), "bins": list(self._bins),
                "picked": {m: dict(c) for m, c in self._picked.items()}}

    def merge(self, state: dict[str, Any]) -> None:
        """Append another collector's :meth:`state` (merging test sets in the serial order gives the serial result)."""
        for mine, theirs in ((self._dev, state["dev"]), (self._wdev, state["wdev"])):
            for method, by_budget in theirs.items():
                for budget, rows in by_budget.items():
                    mine[method][budget].extend(rows)
        self._points.extend(state["points"])
        self._bins.extend(state["bins"])
        for method, counts in state.get("picked", {}).items():
            for v, c in counts.items():
                self._picked[method][v] += c

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
        if self._picked:
            out["selected_norms"] = self._selected_norms()
        return out

    def _selected_norms(self) -> dict[str, Any]:
        """Fig. 9: per method, a histogram (common edges) and the mean / median / quartiles of the
        difference norms of every item it picked; ``all items`` is every test-set item once."""
        top = max(max(c) for c in self._picked.values())
        edges = np.linspace(0.0, top if top > 0 else 1.0, NORM_HIST_BINS + 1)
        methods = {}
        for method, counts in self._picked.items():
            v = np.array(list(counts.keys()), dtype=float)
            c = np.array(list(counts.values()), dtype=float)
            order = np.argsort(v)
            v, c = v[order], c[order]
            cum = np.cumsum(c) / c.sum()
            hist, _ = np.histogram(v, bins=edges, weights=c)
            methods[method] = {"picks": int(c.sum()), "mean": float(v @ c / c.sum()),
                               "quartiles": [float(v[np.searchsorted(cum, q)]) for q in (0.25, 0.5, 0.75)],
                               "share": [round(float(h), 6) for h in hist / c.sum()]}
        return {"edges": [round(float(e), 6) for e in edges], "methods": methods,
                "note": "norms to 3 significant digits; picks of all budgets and test sets pooled"}


def winning_distances(verdicts: dict[str, np.ndarray]) -> dict[str, Any]:
    """Fig. 2 (v1; Fig. 3 of the ACL version): the test winning distance ``|wins_a - wins_b| / n``
    (the paper's Sec. 3) of each pair, given every pair's verdicts (``'a'``, ``'b'``, ``'tie'``) on all
    its comparable items; a histogram in steps of 0.05 and the quartiles.

    >>> winning_distances({"A vs B": np.array(["a", "a", "b", "tie"])})["pairs"]
    {'A vs B': 0.25}
    """
    dist = {}
    for pair, v in verdicts.items():
        wa, wb, _ = count_verdicts(v)
        dist[pair] = abs(wa - wb) / len(v)
    values = np.array(list(dist.values()), dtype=float)
    hist, _ = np.histogram(np.clip(values, 0, 1), bins=DISTANCE_EDGES)
    return {"pairs": {k: round(v, 6) for k, v in dist.items()}, "edges": [round(float(e), 2) for e in DISTANCE_EDGES],
            "counts": hist.tolist(), "quartiles": [float(q) for q in np.quantile(values, [0.25, 0.5, 0.75])],
            "share_below_0.1": float(np.mean(values < 0.1))}


def tsne_projection(X: np.ndarray, seed: int = 0, perplexity: float = 30.0) -> dict[str, Any]:
    """Fig. 7: a 2-D t-SNE (scikit-learn, PCA initialisation, ``random_state=seed``) of one pair's
    difference vectors ``X``, each point with its difference norm. Perplexity is capped below the
    number of points, as t-SNE needs. Descriptive companions (ours, not the paper's): the share of
    zero vectors (identical outputs) and Spearman's rho between a point's norm and its distance from
    the projection's median point (positive: small differences sit in the middle).
    """
    import warnings

    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    norms = np.linalg.norm(X, axis=1)
    if n < 3:
        raise ValueError(f"t-SNE needs at least 3 points, got {n}")
    perp = float(min(perplexity, (n - 1) / 3))
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", FutureWarning)
        Y = TSNE(n_components=2, perplexity=perp, init="pca", random_state=seed).fit_transform(X)
    centre = np.median(Y, axis=0)
    far = np.linalg.norm(Y - centre, axis=1)
    rho = spearmanr(norms, far).statistic if np.ptp(norms) > 0 else float("nan")
    return {"points": [[round(float(a), 3), round(float(b), 3)] for a, b in Y],
            "norms": [round(float(v), 5) for v in norms], "perplexity": perp, "seed": seed,
            "share_zero_vectors": float(np.mean(norms == 0)),
            "spearman_norm_vs_distance_from_median": float(rho)}
