"""Plots written by the benchmark commands (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plots_available() -> bool:
    """True when matplotlib (the ``plots`` extra) can be imported, so the figures can be drawn."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def require_plots(purpose: str = "the figures") -> None:
    """Raise the missing-dependency error naming ``evalsift[plots]`` unless matplotlib is installed; commands
    whose figures are their content (``evalsift profile``, ``omni curve``) call it before any work, so a run
    without the extra fails at once and writes nothing."""
    if not plots_available():
        raise _missing(purpose)


def _missing(purpose: str):
    from ..errors import missing_dependency

    return missing_dependency("matplotlib", "plots", purpose)


def _pyplot():
    """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise _missing("the figures") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    """Lay out, write (whole or not at all) and close a figure."""
    from ..io._common import atomic_file

    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_file(path, "wb") as fh:
            fig.savefig(fh, format=path.suffix.lstrip(".").lower() or "png")
    finally:
        _pyplot().close(fig)
    return path


def success_plot(results: dict[str, Any], path: str | Path) -> Path:
    """Success rate vs budget per method, with a +-1 standard error band; writes a PNG."""
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for method, curve in results["curves"].items():
        budgets = sorted(int(b) for b in curve)
        if not budgets:
            continue
        y = [curve[str(b)]["success"] for b in budgets]
        se = [curve[str(b)]["se"] for b in budgets]
        line, = ax.plot(budgets, y, label=method, lw=1.6)
        ax.fill_between(budgets, [a - s for a, s in zip(y, se)], [a + s for a, s in zip(y, se)],
                        color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xlabel("budget (items judged)")
    ax.set_ylabel("success rate (sample winner = test winner)")
    ax.set_title(f"{results.get('data', '')}: oracle {results.get('oracle_metric', '')}, "
                 f"{results.get('n_pairs', '?')} pairs x {results.get('seeds', '?')} seeds", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def subset_plot(results: dict[str, Any], path: str | Path) -> Path:
    """Two panels like the TACL 2025 paper's Figure 3: rank correlation and cluster count vs the
    proportion of items judged, one line per method (shaded +-1 standard error); writes a PNG."""
    plt = _pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    props = [f"{p:g}" for p in results["props"]]
    x = [float(p) for p in props]
    for stat, ax, label in (("correlation", axes[0], f"{results.get('correlation', 'rank')} correlation"),
                            ("clusters", axes[1], "cluster count")):
        for method, curve in results["curves"].items():
            y = [curve[p][stat] for p in props]
            se = [curve[p][f"{stat}_se"] for p in props]
            ntm = results["needed_to_match"][method][stat]
            line, = ax.plot(x, y, lw=1.6, label=f"{method} ({ntm:.2f})")
            ax.fill_between(x, [a - s for a, s in zip(y, se)], [a + s for a, s in zip(y, se)],
                            color=line.get_color(), alpha=0.15, lw=0)
        ax.set_xlabel("proportion of items judged")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, title="method (needed to match)", title_fontsize=7)
    fig.suptitle(f"{results.get('data', '')}: human {results.get('human_metric', '')}, metric "
                 f"{results.get('metric', '')}, {results.get('seeds', '?')} seeds", fontsize=9)
    return _save(fig, path)


def calibration_plot(results: dict[str, Any], path: str | Path) -> Path:
    """Stated risk vs observed wrong-winner share, one panel per case (synthetic gap/ties, real data
    all and close pairs), one line per (method, rule) with 95% intervals; the diagonal is the promise
    (a valid rule stays on or under it). Writes a PNG."""
    plt = _pyplot()

    panels: list[tuple[str, dict[str, Any]]] = []
    for case, cell in results.get("synthetic", {}).get("cells", {}).items():
        panels.append((f"synthetic {case}", cell))
    real = results.get("real")
    if real:
        for case, cell in real["cells"].items():
            panels.append((f"{real['data']} {case}", cell))
    cols = min(4, max(1, len(panels)))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.0 * rows), dpi=110, squeeze=False)
    risks = [float(r) for r in results["risks"]]
    top = max(risks) * 1.6
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (title, cell) in zip(axes.flat, panels):
        ax.plot([0, top], [0, top], color="0.3", lw=1.2, ls="--")
        lines = [(m, rule, by_risk) for m, by_rule in cell.items() for rule, by_risk in by_rule.items()]
        for k, (method, rule, by_risk) in enumerate(lines):
            pts = [(float(r), c) for r, c in by_risk.items() if c.get("runs")]
            if pts:
                shift = (k - (len(lines) - 1) / 2) * top * 0.008  # side by side, so the intervals stay apart
                x = [p[0] + shift for p in pts]
                y = [p[1]["wrong"] for p in pts]
                err = [[max(0.0, p[1]["wrong"] - p[1]["wrong_ci"][0]) for p in pts],
                       [max(0.0, p[1]["wrong_ci"][1] - p[1]["wrong"]) for p in pts]]
                ax.errorbar(x, y, yerr=err, lw=1.2, capsize=2, marker="o", ms=3,
                            ls="-" if rule == "anytime" else ":", label=f"{method}/{rule}")
        ax.set_xlim(0, top)
        ax.set_ylim(0, 1.02)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("stated risk", fontsize=7)
        ax.set_ylabel("wrong winner named (share)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    if panels:
        axes.flat[0].legend(fontsize=6)
    fig.suptitle("stop-rule calibration: observed wrong-winner share vs stated risk (dashed: the promise)", fontsize=9)
    return _save(fig, path)


def analyses_plot(results: dict[str, Any], path: str | Path) -> Path:
    """DiffUse's analyses (``bench pairwise --analyses``) in three panels: deviation of the estimated
    from the test winning distance by budget; cluster size vs mean difference norm; success, agreement
    and ties by difference-norm bin. Writes a PNG."""
    plt = _pyplot()

    an = results["analyses"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), dpi=110)
    ax = axes[0]
    for kind, style in (("deviation", "-"), ("weighted_deviation", "--")):
        for m, curve in an[kind].items():
            b = sorted(int(k) for k in curve)
            ax.plot(b, [curve[str(k)]["mean"] for k in b], style, lw=1.4,
                    label=m + (" (cluster-weighted)" if kind == "weighted_deviation" else ""))
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("budget")
    ax.set_ylabel("estimated - test winning distance")
    ax.set_title("deviation (DiffUse Fig. 5)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax = axes[1]
    if "cluster_norm" in an:
        pts = an["cluster_norm"]["points"]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=5, alpha=0.35)
        ax.set_xscale("log")
        ax.set_title(f"cluster size vs mean norm (Fig. 8); Spearman {an['cluster_norm']['spearman_size_norm']:+.2f}",
                     fontsize=9)
    ax.set_xlabel("cluster size (items)")
    ax.set_ylabel("mean difference norm")
    ax.grid(alpha=0.3)
    ax = axes[2]
    if "norm_bins" in an:
        nb = an["norm_bins"]
        x = list(range(1, nb["bins"] + 1))
        judged = "the whole bin" if nb.get("budget") is None else f"{nb['budget']} random items"
        for key, label in (("success", f"success of {judged}"),
                           ("agreement", "decisive items agreeing with the test winner"), ("ties", "tie share")):
            ax.plot(x, [float("nan") if v is None else v for v in nb[key]], marker="o", lw=1.4, label=label)
        ax.set_xticks(x if len(x) <= 12 else x[::max(1, len(x) // 10)])
        ax.legend(fontsize=7)
    ax.set_xlabel("difference-norm bin (low to high)")
    ax.set_title("by norm bin (Fig. 10)", fontsize=9)
    ax.grid(alpha=0.3)
    fig.suptitle(f"{results.get('data', '')}: oracle {results.get('oracle_metric', '')}", fontsize=10)
    return _save(fig, path)


def analyses_figures_plot(results: dict[str, Any], path: str | Path) -> Path:
    """More of DiffUse's analyses (``bench pairwise --analyses``), one panel each: the histogram of the
    pairs' test winning distances (the paper's Fig. 2 in v1, Fig. 3 in the ACL version), a t-SNE of one
    pair's difference vectors coloured by norm (Fig. 7), and the norms of the items each method
    selected beside all test-set items (Fig. 9). Writes a PNG."""
    import numpy as np

    plt = _pyplot()

    an = results["analyses"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), dpi=110)
    ax = axes[0]
    if "winning_distance" in an:
        wd = an["winning_distance"]
        edges = wd["edges"]
        ax.bar(edges[:-1], wd["counts"], width=np.diff(edges), align="edge",
               edgecolor="k", lw=0.5)
        ax.set_title(f"test winning distance, {len(wd['pairs'])} pairs (Fig. 2)", fontsize=9)
    ax.set_xlabel("|P(A wins) - P(B wins)| on all comparable items")
    ax.set_ylabel("system pairs")
    ax.grid(alpha=0.3)
    ax = axes[1]
    if "tsne" in an:
        ts = an["tsne"]
        pts = ts["points"]
        sc = ax.scatter([p[0] for p in pts], [p[1] for p in pts], c=ts["norms"], s=6, cmap="viridis")
        fig.colorbar(sc, ax=ax, label="difference norm")
        ax.set_title(f"t-SNE, {ts['pair'][0]} vs {ts['pair'][1]} (Fig. 7)", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax = axes[2]
    if "selected_norms" in an:
        sn = an["selected_norms"]
        edges = sn["edges"]
        for method, c in sn["methods"].items():
            ax.stairs(c["share"], edges, lw=1.4 if method != "all items" else 1.0,
                      ls="--" if method == "all items" else "-", label=f"{method} (mean {c['mean']:.2f})")
        ax.legend(fontsize=7)
        ax.set_title("difference norms of the selected items (Fig. 9)", fontsize=9)
    ax.set_xlabel("difference norm")
    ax.set_ylabel("share of picks")
    ax.grid(alpha=0.3)
    fig.suptitle(f"{results.get('data', '')}: oracle {results.get('oracle_metric', '')}", fontsize=10)
    return _save(fig, path)
