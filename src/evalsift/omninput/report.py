"""The OmniInput report: ``results.json``, ``pr.png``, ``density.png``, ``grid-<model>.png`` and a
self-contained ``report.html`` (figures embedded, representative inputs shown per bin with their labels).

``results.json`` keys: ``models`` (one :func:`~.curves.omni_curve` dict per model, plus ``samples``: the
sampler, its diagnostics and the model's description, and ``in_range``: the paper's curve within the
output range Z), ``common_recall`` (the recall range every whole-space curve covers, or null),
``aupr_log_comparison`` (:func:`~.curves.aupr_log_ratios`, several models), ``normalise`` and
``cross_model`` (Eq. 5-6, :func:`~.curves.cross_model_normalisation`, when asked), ``rescaled_axis``
(:func:`~.curves.rescaled_axis`, a display aid), ``judge`` (who judged and how: ``kind`` rule | proxy |
llm | human | file, with its note), ``per_bin`` and ``seed``, ``notes``.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..report.html import Absent, page, png_uri, table, warnings_box, write_json
from .samples import OmniSamples, Representatives

GRID_BINS = 12
GRID_PER_BIN = 8


def _plt():
    from ..report.plots import _pyplot

    return _pyplot()


def sampler_warnings(diagnostics: dict[str, Any]) -> list[str]:
    """The warnings a sampler's diagnostics call for (it may not have converged), in words: what ``omni sample``
    prints when it ends and ``omni curve`` repeats, with the model's name, in its report's Warnings box.

    >>> sampler_warnings({"round_trips": 3, "swap_acceptance_min": 0.2})
    []
    >>> [w[:40] for w in sampler_warnings({"round_trips": 0, "chain_sd_max": 1.5})]
    ['no replica made a round trip between the', 'the independent chains disagree on ln rh']
    """
    d = diagnostics or {}
    out = []
    if d.get("round_trips") == 0:
        out.append("no replica made a round trip between the hottest and the coldest temperature: the estimate of the "
                   "rare bins may not have converged; raise --steps (or --replicas)")
    dr = d.get("drift_bins_max")
    if dr is not None and dr > 0.5:
        out.append(f"a replica's mean output moved by {dr:.2f} bins between the first and second half of the recorded "
                   "steps: it was still drifting toward equilibrium, which biases the rare bins (by a factor up to "
                   "e^(beta x drift)); raise --steps or --burn-in")
    sw = d.get("swap_acceptance_min")
    if sw is not None and sw < 0.05:
        out.append(f"some neighbouring temperatures swap rarely (acceptance {sw:.3f}): raise --replicas")
    sd = d.get("chain_sd_max")
    if sd is not None and sd > 1.0:
        out.append(f"the independent chains disagree on ln rho by up to {sd:.2f} (standard deviation) in a bin holding "
                   ">= 1e-6 of the space: raise --steps")
    if d.get("one_over_t") is not None and not all(d["one_over_t"]):
        out.append("Wang-Landau has not reached its 1/t stage in every chain (its histogram never got flat enough "
                   "often); the estimate is rough: raise --steps")
    return out


def _legend(ax: Any, **kw: Any) -> None:
    """A legend where the panel has labelled lines (matplotlib warns about an empty one)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def density_figure(samples: Sequence[OmniSamples], cross: dict[str, Any] | None = None) -> Any:
    """ln of the share of the input space per bin (entire-distribution normalisation) against z, with the
    chains' range; beside it, our display aid ``cross`` (:func:`~.curves.rescaled_axis`: outputs rescaled
    to [0, 1] over all models)."""
    plt = _plt()
    n = 2 if cross and len(samples) > 1 else 1
    fig, axes = plt.subplots(1, n, figsize=(6.2 * n, 4.0), dpi=100, squeeze=False)
    ax = axes[0, 0]
    for k, s in enumerate(samples):
        share = (s.ln_rho - np.logaddexp.reduce(s.ln_rho)) / np.log(10)
        ax.step(s.centers, share, where="mid", color=f"C{k}", label=str(s.model.get("name")))
        ch = s.ln_rho_chains
        if ch.size and ch.shape[0] > 1:
            with np.errstate(invalid="ignore"):
                norm = (ch - np.logaddexp.reduce(np.nan_to_num(ch, nan=-np.inf), axis=1, keepdims=True)) / np.log(10)
            ax.fill_between(s.centers, np.nanmin(norm, axis=0), np.nanmax(norm, axis=0), step="mid", color=f"C{k}",
                            alpha=0.2, lw=0)
    ax.set_xlabel("model output z")
    ax.set_ylabel("log10 share of the input space")
    ax.set_title("output distribution (band: independent chains)", fontsize=9)
    _legend(ax, fontsize=7)
    if n == 2:
        ax2 = axes[0, 1]
        e = np.asarray(cross["edges"])
        for k, (s, m) in enumerate(zip(samples, cross["mass"])):
            with np.errstate(divide="ignore"):
                ax2.step((e[:-1] + e[1:]) / 2, np.log10(np.asarray(m)), where="mid", color=f"C{k}",
                         label=str(s.model.get("name")))
        ax2.set_xlabel(f"z rescaled to [0, 1] over all models ({cross['z_min']:.3g} .. {cross['z_max']:.3g})")
        ax2.set_ylabel("log10 share")
        ax2.set_title("outputs rescaled to [0, 1] over the models (display only)", fontsize=9)
    return fig


def _has_positive(c: dict[str, Any]) -> bool:
    return float(np.sum(c.get("positives") or [])) > 0


def pr_panels(curves: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What :func:`pr_figure` draws: ``within`` and ``whole`` (the models on the PR panel within Z and on the
    whole-space PR panel), ``bound`` (the models with no judged positive, on the upper-bound panel) and
    ``left_out`` ({panel title: why}) for a PR panel no model has a curve on, so the figure never holds an
    empty panel and the report says why it is missing.

    Recall needs a judged positive: without one, recall within Z is 0 at every threshold (its log undefined) and
    the normalised recall undefined; the whole-space curve also needs every bin judged."""
    within, whole, bound, why_whole = [], [], [], []
    for k, c in enumerate(curves):
        name = str(c["model"])
        if not _has_positive(c):
            bound.append(k)
            why_whole.append(f"{name}: no judged input was a yes, so recall is undefined")
            continue
        zr = c.get("in_range") or {}
        if np.any(np.asarray(zr.get("recall") or [], dtype=float) > 0):
            within.append(k)
        if c.get("recall") is not None:
            whole.append(k)
        else:
            why_whole.append(f"{name}: some bins have no judged input, so recall over the whole space is not "
                             "normalised (see the curve within Z)")
    left_out = {}
    if not within:
        left_out["PR within the output range Z"] = (
            "not drawn: " + ("no model has a judged yes within Z, so recall within Z is 0 at every threshold and its "
                             "log is undefined" if not any(_has_positive(c) for c in curves) else
                             "no model has a positive recall within Z") + " (judge more inputs per bin, or widen Z)")
    if not whole:
        left_out["whole-space PR (ours)"] = "not drawn: " + "; ".join(why_whole)
    return {"within": within, "whole": whole, "bound": bound, "left_out": left_out}


def pr_figure(curves: Sequence[dict[str, Any]], common: Sequence[float] | None = None,
              comparison: dict[str, Any] | None = None) -> Any:
    """The paper's PR curve within Z (precision over log10 of the unnormalised recall, the common log-recall
    range shaded); our whole-space curve (recall normalised, where every bin is judged) with the judgments'
    95% band; r(z). With no judged positive, an upper bound on precision. A PR panel that no model has a
    curve on is left out (:func:`pr_panels` says why)."""
    plt = _plt()
    plan = pr_panels(curves)
    kinds = ([] if not plan["within"] else ["within"]) + ([] if not plan["whole"] else ["whole"]) + ["r"] + \
        ([] if not plan["bound"] else ["bound"])
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4.0), dpi=100, squeeze=False)
    ax_of = dict(zip(kinds, axes[0]))
    if "bound" in ax_of:  # recall is undefined without a judged positive: what the judgments do say is a bound
        ax3 = ax_of["bound"]
        for k in plan["bound"]:
            c = curves[k]
            ax3.step(c["threshold"], c["bands"]["precision_hi"], where="post", color=f"C{k}", label=c["model"])
        ax3.set_xlabel("threshold on z (the bins at or beyond it are called positive)")
        ax3.set_ylabel("precision at most (simultaneous 95%)")
        ax3.set_ylim(-0.02, 1.02)
        ax3.set_title("upper bound on precision (no judged positive for: "
                      + ", ".join(str(curves[k]["model"]) for k in plan["bound"]) + ")", fontsize=9)
        _legend(ax3, fontsize=7)
    if "within" in ax_of:
        axz = ax_of["within"]
        for k in plan["within"]:
            c = curves[k]
            zr = c["in_range"]
            rec, prec = np.asarray(zr["recall"], dtype=float), np.asarray(zr["precision"], dtype=float)
            ok = rec > 0
            axz.plot(np.log10(rec[ok]), prec[ok], marker=".", ms=3, color=f"C{k}",
                     label=f"{c['model']} Z=[{zr['z_range'][0]:.3g}, {zr['z_range'][1]:.3g}]")
        if comparison:
            lo, hi = comparison["log10_recall_range"]
            axz.axvspan(lo, hi, color="grey", alpha=0.1, lw=0, label="common log-recall range")
        axz.set_xlabel("log10 recall (unnormalised: sum of r rho within Z)")
        axz.set_ylabel("precision within Z")
        axz.set_ylim(-0.02, 1.02)
        _legend(axz, fontsize=7)
        axz.set_title("PR within the output range Z (Eq. 3-4, Sec. 3.3)", fontsize=9)
    if "whole" in ax_of:
        ax = ax_of["whole"]
        for k in plan["whole"]:
            c = curves[k]
            rec, prec = np.asarray(c["recall"]), np.asarray(c["precision"])
            ax.plot(rec, prec, marker=".", ms=3, color=f"C{k}", label=f"{c['model']} (AUPR {c['aupr']:.3g})")
            if rec.size and rec[0] > 0:  # below the first point: the most positive bin's precision (binning)
                ax.plot([0, rec[0]], [prec[0], prec[0]], ls="--", lw=1, color=f"C{k}")
            band = c.get("bands") or {}
            if band.get("precision_lo"):
                ax.fill_between(rec, band["precision_lo"], band["precision_hi"], color=f"C{k}", alpha=0.15, lw=0)
        if common is not None and common[1] > common[0]:
            ax.axvspan(common[0], common[1], color="grey", alpha=0.1, lw=0, label="common recall range")
        ax.set_xlabel("recall / estimated total of positives (whole sampled range)")
        ax.set_ylabel("precision")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        _legend(ax, fontsize=7)
        ax.set_title("whole-space PR (ours; band: precision bounds, simultaneous 95%)", fontsize=9)
    ax2 = ax_of["r"]
    for k, c in enumerate(curves):
        ax2.plot(c["z_center"], c["r"], marker="o", ms=3, color=f"C{k}", label=c["model"])
        lo, hi = np.asarray(c["r_lo"], dtype=float), np.asarray(c["r_hi"], dtype=float)
        ok = np.isfinite(lo)
        ax2.vlines(np.asarray(c["z_center"])[ok], lo[ok], hi[ok], color=f"C{k}", alpha=0.4)
    ax2.set_xlabel("model output z (bin centre)")
    ax2.set_ylabel("r(z): mean score")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_title("r(z): mean score per bin, 95% interval per judged bin", fontsize=9)
    _legend(ax2, fontsize=7)
    return fig


def grid_figure(samples: OmniSamples, reps: Representatives, labels: dict[str, float],
                bins: int = GRID_BINS, per_bin: int = GRID_PER_BIN) -> Any:
    """Representative images per bin (rows: the most positive bins first), each framed by its label
    (green: judged yes, red: no, grey: not judged)."""
    plt = _plt()
    chosen = sorted(set(reps.bin.tolist()), reverse=samples.positive == "high")
    if len(chosen) > bins:
        chosen = [chosen[int(round(i))] for i in np.linspace(0, len(chosen) - 1, bins)]
    shape = samples.space.shape or (1, samples.space.n_positions)
    fig, axes = plt.subplots(len(chosen), per_bin, figsize=(per_bin * 0.9 + 1.2, len(chosen) * 0.95 + 0.3), dpi=100,
                             squeeze=False)
    top = samples.space.n_values - 1
    for row, b in zip(axes, chosen):
        idx = np.flatnonzero(reps.bin == b)[:per_bin]
        for j, ax in enumerate(row):
            ax.set_xticks([])
            ax.set_yticks([])
            if j >= idx.size:
                ax.axis("off")
                continue
            i = idx[j]
            ax.imshow(reps.x[i].reshape(shape), cmap="gray_r", vmin=0, vmax=top, interpolation="nearest")
            lab = labels.get(reps.ids[i])
            color = "grey" if lab is None else ("tab:green" if lab >= 0.5 else "tab:red")
            for sp in ax.spines.values():
                sp.set_color(color)
                sp.set_linewidth(2.5)
        row[0].set_ylabel(f"z={b * samples.bin_width:.3g}", rotation=0, ha="right", va="center", fontsize=7)
    fig.suptitle(f"{samples.model.get('name')}: representative inputs per output bin (frame: green yes, red no)",
                 fontsize=8)
    return fig


def _grid_text(samples: OmniSamples, reps: Representatives, labels: dict[str, float]) -> str:
    chosen = sorted(set(reps.bin.tolist()), reverse=samples.positive == "high")
    if len(chosen) > GRID_BINS:
        chosen = [chosen[int(round(i))] for i in np.linspace(0, len(chosen) - 1, GRID_BINS)]
    rows = []
    for b in chosen:
        idx = np.flatnonzero(reps.bin == b)[:GRID_PER_BIN]
        for i in idx:
            lab = labels.get(reps.ids[i])
            rows.append([f"{b * samples.bin_width:.3g}", samples.space.render_text(reps.x[i]),
                         "" if lab is None else ("yes" if lab >= 0.5 else "no")])
    return table(["bin (z)", "input", "judged"], rows)


def _summary_rows(curves: Sequence[dict[str, Any]], results: dict[str, Any] | None = None) -> list[list[Any]]:
    """One row per model; a value the run does not give is an :class:`Absent` saying why (a dash and a
    footnote in the table)."""
    results = results or {}
    rows = []
    for c in curves:
        iv = c.get("intervals", {})
        au = iv.get("aupr")
        dec = c.get("decision")
        zr = c.get("in_range") or {}
        positives = float(np.sum(c.get("positives") or []))
        negatives = float(np.sum(c.get("judged") or [])) - positives
        unjudged = None if c.get("normalised", True) else Absent(c.get("normalised_note") or
                                                                  "bins nobody judged: no normalised recall")
        if positives == 0:
            unidentified = Absent("no judged input was a yes: the share of positives, recall and ROC are not "
                                  "identified by the judgments ('precision at most' bounds them)")
        elif negatives == 0:
            unidentified = Absent("every judged input was a yes: the share of positives and ROC are not identified "
                                  "by the judgments")
        else:
            unidentified = unjudged
        if unjudged is not None:
            no_common = unjudged
        elif len(curves) < 2:
            no_common = Absent("one model: the common recall range is for comparing several")
        elif results.get("common_recall") is None:
            no_common = Absent("no common recall range: fewer than two models have a whole-space curve (a judged yes "
                               "and every bin judged)")
        else:
            no_common = Absent("the models' recall ranges do not overlap")
        common = c.get("aupr_common")
        common = no_common if common is None else common
        common_n = c.get("aupr_common_normalised")
        if common_n is None:
            common_n = common if isinstance(common, Absent) else Absent("the common recall range has no width")
        if dec is None:
            prec = rec = Absent("the model's output is not a logit: no decision point at z > 0")
        else:
            prec = dec.get("precision") if dec.get("precision") is not None else Absent(
                "no bin lies at z > 0: the model calls nothing positive")
            rec = dec.get("recall") if dec.get("recall") is not None else (unidentified or unjudged or Absent(
                "recall is undefined here"))
        rows.append([c["model"], "[" + ", ".join(f"{v:.4g}" for v in zr.get("z_range", [])) + "]",
                     zr.get("aupr_log") if zr.get("aupr_log") is not None else Absent(
                         "fewer than two thresholds within Z with a positive recall: no area"),
                     c["aupr"] if c.get("aupr") is not None else (unjudged or unidentified),
                     f"[{au[0]:.3g}, {au[1]:.3g}]" if au is not None else (unjudged or unidentified or (
                         f"no interval ({iv['none']})" if iv.get("none") else None)),
                     common, common_n, c["auroc"] if c.get("auroc") is not None else unidentified,
                     max(c["bands"]["precision_hi"]),
                     c["positive_share"] if c.get("positive_share") is not None else unidentified, prec, rec,
                     c["n_judgments"], c["interpolated_mass"]])
    return rows


def _diagnostic_rows(d: dict[str, Any]) -> list[list[Any]]:
    return [[k, Absent("not measured in this run (the sampler does not report it, or it had nothing to measure)")
             if v is None else v if not isinstance(v, (list, dict)) else str(v)[:120]] for k, v in d.items()]


def curve_warnings(results: dict[str, Any]) -> list[str]:
    """What ``omni curve`` warns about, in the order it prints them: each model's sampler warnings
    (:func:`sampler_warnings`, the ones ``omni sample`` printed), then ``results["notes"]``."""
    out = []
    for m in results.get("models", []):
        for w in sampler_warnings((m.get("samples") or {}).get("diagnostics") or {}):
            out.append(f"{m['model']} (omni sample): {w}")
    return out + [n for n in results.get("notes", []) if n not in out]


def write_curve_report(results: dict[str, Any], out_dir: str | Path, samples: Sequence[OmniSamples],
                       reps: Sequence[Representatives], labels: Sequence[dict[str, float]]) -> dict[str, Path]:
    """Write results.json, pr.png, density.png, grid-<model>.png (image spaces) and report.html, whose Warnings
    box at the top holds :func:`curve_warnings` (what the command prints as ``note:`` lines). The figures are
    drawn first, so a warning raised while drawing that a caller routes into ``results["notes"]`` is in
    both files."""
    from ..io._common import atomic_file, write_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    curves = results["models"]
    common = results.get("common_recall")
    figs = {"pr": pr_figure(curves, common, results.get("aupr_log_comparison")),
            "density": density_figure(samples, results.get("rescaled_axis"))}
    uris = {}
    for name, fig in figs.items():
        fig.tight_layout()
        with atomic_file(out / f"{name}.png", "wb") as fh:  # each file whole or not at all
            fig.savefig(fh, format="png")
        uris[name] = png_uri(fig)
        paths[name] = out / f"{name}.png"
    grids = []
    for s, r, lab in zip(samples, reps, labels):
        name = str(s.model.get("name"))
        if s.space.kind == "image":
            fig = grid_figure(s, r, lab)
            p = out / f"grid-{_safe(name)}.png"
            fig.tight_layout()
            with atomic_file(p, "wb") as fh:
                fig.savefig(fh, format="png")
            paths[f"grid-{name}"] = p
            grids.append(f"<h3>{html.escape(name)}</h3><img alt='representatives of {html.escape(name)}' "
                         f"src='{png_uri(fig)}'>")
        else:
            grids.append(f"<h3>{html.escape(name)}</h3>" + _grid_text(s, r, lab))
    paths["json"] = write_json(results, out / "results.json")  # after the figures: results["notes"] is complete
    paths["html"] = out / "report.html"
    write_atomic(paths["html"], _html(results, uris, grids))
    return paths


def _judged_per_bin(results: dict[str, Any]) -> str:
    """How many inputs were judged per bin, from the judgments themselves (a project or a file may hold fewer, or
    more, than --per-bin), per model when they differ; what --per-bin asked is said where it was not what came."""
    counts = []
    for m in results.get("models", []):
        j = m.get("judged_per_bin")
        if j is None:
            j = {"min": 0, "max": 0, "bins": 0}
        counts.append((str(m.get("model")), j))
    if not counts:
        return f"{results.get('per_bin')} representative(s) asked per bin"

    def one(j: dict) -> str:
        n = str(j["min"]) if j["min"] == j["max"] else f"{j['min']}-{j['max']}"
        return f"{n} judged per bin ({j['bins']} bins judged)"

    if len({(j["min"], j["max"], j["bins"]) for _, j in counts}) == 1:
        text = one(counts[0][1]).capitalize()
    else:
        text = "; ".join(f"{name}: {one(j)}" for name, j in counts)
    asked = results.get("per_bin")
    if (results.get("judge") or {}).get("kind") in ("rule", "proxy", "llm") and \
            any(j["max"] != asked for _, j in counts):
        text += f" (--per-bin {asked} asked; a bin with fewer distinct sampled inputs gives fewer)"
    return text


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _html(results: dict[str, Any], uris: dict[str, str], grids: list[str]) -> str:
    judge = results["judge"]
    parts = ["<h1>OmniInput: precision and recall over the input space</h1>",
             warnings_box(curve_warnings(results), "evalsift omni sample and omni curve"),
             f"<p>Judge: <b>{html.escape(judge['spec'])}</b> ({html.escape(judge['kind'])}). "
             f"{html.escape(judge.get('note') or '')}</p>",
             f"<p>{html.escape(_judged_per_bin(results))} (seed {results['seed']}).</p>"]
    parts.append(table(["model", "Z", "AUPR on log10 recall within Z", "AUPR (whole range, ours)", "95% interval", "AUPR (common range)", "... / width",
                        "AUROC", "precision at most (any threshold, simultaneous 95%)", "positive share of the space",
                        "precision at z>0", "recall at z>0", "judgments", "mass with interpolated r"],
                       _summary_rows(results["models"], results)))
    parts.append("<p>AUPR: from r = positives / judged per bin, with a 95% interval from bootstrapping the judged "
                 "labels within each bin (it cannot see positives hidden in bins where every judged input was a no). "
                 "Precision bounds: simultaneous over every threshold, from Clopper-Pearson bounds per bin "
                 "(Bonferroni), which allow for such positives. Both assume the judged inputs are uniform draws within "
                 "their bins and take rho as exact; the sampler's own error is the chains' spread below.</p>")
    cmp_ = results.get("aupr_log_comparison")
    if cmp_:
        lo, hi = cmp_["log10_recall_range"]
        parts.append("<p>The paper's comparison (Sec. 3.3): ratio of the areas under precision over log10 recall on the "
                     f"log-recall range both curves cover, [{lo:.3g}, {hi:.3g}]: "
                     + "; ".join(f"{html.escape(n)} / {html.escape(cmp_['reference'])} = {v:.4g}"
                                 for n, v in cmp_["ratio"].items()) + ".</p>")
    for m in results["models"]:
        zr = m.get("in_range") or {}
        if zr:
            parts.append(f"<p>{html.escape(str(m['model']))}: Z = [{zr['z_range'][0]:.4g}, {zr['z_range'][1]:.4g}] "
                         f"({zr['n_bins']} bins; start: {html.escape(zr['start'])}; end: {html.escape(zr['end'])}); "
                         f"recall within Z: {html.escape(zr['normalisation'])}"
                         + ("" if zr.get("recall_normalised") is not None else
                            f"; normalised recall not given: {html.escape(zr.get('recall_normalised_note', ''))}")
                         + ".</p>")
    if results.get("common_recall"):
        lo, hi = results["common_recall"]
        parts.append(f"<p>Common (linear, normalised) recall range of the whole-space curves: [{lo:.3g}, {hi:.3g}].</p>")
    parts.append(f"<h2>PR curves and r(z)</h2><img alt='PR curves' src='{uris['pr']}'>")
    parts += [f"<p>{html.escape(title)}: {html.escape(why)}.</p>"
              for title, why in pr_panels(results["models"])["left_out"].items()]
    parts.append(f"<h2>Output distributions</h2><img alt='output distributions' src='{uris['density']}'>")
    for m in results["models"]:
        s = m["samples"]
        d = s.get("diagnostics", {})
        parts.append(f"<h3>{html.escape(str(m['model']))}: sampling</h3><p>{html.escape(s['summary'])}</p>")
        parts.append(table(["diagnostic", "value"], _diagnostic_rows(d)))
    parts.append("<h2>Representative inputs per bin</h2>" + "".join(grids))
    return page("evalsift omni curve", "".join(parts))


__all__ = ["curve_warnings", "density_figure", "grid_figure", "pr_figure", "pr_panels", "sampler_warnings",
           "write_curve_report"]
