"""``evalsift bench pairwise``, ``bench subset`` (the two papers' protocols on real data) and
``bench calibration`` (does a stop rule's stated risk hold?)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ._common import (add_data, add_encoder, add_loop_opts, add_oracle_opts, add_quiet, fraction, fraction_list,
                      int_list, load_data, name_list, nonneg_int, note, open_unit, out_dir, positive_int,
                      proxy_spec, resolve_encoder, risk_list, share_list)


def jobs_count(text: str) -> int:
    """``--jobs``: an integer >= 0, or ``auto`` (0: every core)."""
    if text.strip().lower() == "auto":
        return 0
    try:
        return nonneg_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number of workers (1, 2, ...) or 'auto', got {text!r}") from None


def add_parallel(p: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--backend`` and ``--ray-address``: where the benchmark's independent tasks run
    (:mod:`evalsift.bench.parallel`); the results are the serial run's."""
    g = p.add_argument_group("workers (the results equal the serial run's; docs/scale.md)")
    g.add_argument("--jobs", type=jobs_count, default=1, metavar="N",
                   help="worker processes (with --backend ray: tasks at once); 1 runs in this process, 0 or auto "
                        "uses every core (on a Ray cluster, every CPU); each worker uses one BLAS/torch thread")
    g.add_argument("--backend", default="local", choices=["local", "ray"],
                   help="local: processes on this machine; ray: Ray tasks (pip install 'evalsift[ray]'), on a local "
                        "runtime with --jobs CPUs or on the cluster at --ray-address")
    g.add_argument("--ray-address", metavar="ADDR",
                   help="with --backend ray: an existing Ray cluster, e.g. ray://head:10001 or auto (default: "
                        "$RAY_ADDRESS, else a local runtime started and stopped by this command)")


def parallel_opts(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments ``jobs``, ``backend``, ``ray_address`` of the bench functions; with
    ``--backend ray`` Ray must be importable (checked before any data is read)."""
    from ..errors import ParameterError

    if args.ray_address and args.backend != "ray":
        raise ParameterError("--ray-address needs --backend ray", field="ray_address")
    if args.backend == "ray":
        from ..bench.parallel import import_ray

        import_ray()
    return {"jobs": args.jobs, "backend": args.backend, "ray_address": args.ray_address}


RESUMES = "tasks.jsonl keeps finished tasks: the same command resumes)"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench pairwise``, ``bench subset`` and ``bench calibration``."""
    bench = sub.add_parser("bench", help="benchmarks on real data")
    add_quiet(bench)
    bsub = bench.add_subparsers(dest="bench_cmd", required=True, metavar="{pairwise,subset,calibration,estimate}")

    bp = bsub.add_parser("pairwise", help="DiffUse's protocol: success rate vs budget over system pairs")
    add_data(bp)
    judge = bp.add_mutually_exclusive_group(required=True)
    judge.add_argument("--oracle-metric", metavar="NAME", help="score column that decides each item (as metric:NAME)")
    judge.add_argument("--oracle", metavar="SPEC", help="the judge whose verdicts are replayed for every item: "
                                                       "metric:NAME (e.g. metric:mqm) or judgments:FILE (recorded "
                                                       "pairwise verdicts, e.g. judgments:summeval/llm-pairwise/"
                                                       "coherence)")
    bp.add_argument("--methods", type=name_list, default=["diffuse", "random"], metavar="M1,M2,...",
                    help="comma-separated selectors")
    bp.add_argument("--budgets", type=int_list, default=[10, 20, 50, 100], metavar="B",
                    help="budgets: 10,20,50 or 5..200 (step 5)")
    bp.add_argument("--seeds", type=positive_int, default=10, help="seeded subsamples per pair")
    bp.add_argument("--subsample", type=fraction, default=0.8, help="share of a pair's items in each test set")
    bp.add_argument("--max-pairs", type=positive_int, help="a seeded sample of this many pairs (all pairs when absent)")
    add_encoder(bp)
    bp.add_argument("--iterative", action="store_true", help="also run the iterative algorithm (the loop options)")
    add_loop_opts(bp, default_rule="paper")
    bp.add_argument("--analyses", action="store_true",
                    help="also DiffUse's own analyses (paper Sec. 5.1, 6.1, 7.2): deviation of the estimated from the "
                         "test winning distance by budget, cluster size vs difference norm, success by norm bin "
                         "(analyses.png); the pairs' winning distances, a t-SNE of one pair's difference vectors, the "
                         "norms of the selected items (analyses-figures.png)")
    bp.add_argument("--analysis-clusters", type=positive_int, default=50,
                    help="clusters per test set for cluster size vs norm (with --analyses; default 50 as the paper's "
                         "Fig. 8; it was 20)")
    bp.add_argument("--norm-bins", type=positive_int, default=50,
                    help="equal-count difference-norm bins per test set (with --analyses; default 50 as the paper; "
                         "the default was 5 before)")
    bp.add_argument("--analysis-budget", type=positive_int, default=None,
                    help="judge each norm bin by this many items drawn at random from it (with --analyses; default: "
                         "the whole bin, as the paper; 10 was the default before)")
    add_oracle_opts(bp)
    bp.add_argument("--out", required=True, metavar="DIR", help="output folder (results.json, success.png; " + RESUMES)
    add_parallel(bp)
    add_quiet(bp)
    bp.set_defaults(handler=cmd_bench_pairwise)

    bs = bsub.add_parser("subset", help="subset2evaluate's protocol: ranking systems from the first part of an "
                                        "ordering")
    add_data(bs)
    bs.add_argument("--human-metric", metavar="NAME",
                    help="the metric the ranking is judged by (naming it makes it human); required unless "
                         "--protocol paper, which takes the human scores subset2evaluate's loader takes")
    bs.add_argument("--protocol", default="evalsift", choices=["evalsift", "paper"],
                    help="evalsift (default): Kendall, our cluster rule, proportions 0.05..0.5 step 0.05, 80%% "
                         "subsamples; paper: the paper's Table 10 / Table 2 evaluation (Spearman, subset2evaluate's "
                         "cluster rule, Diversity tokens and knapsack values, 10 geometric proportions 0.05..0.5, the "
                         "whole pool, seed-independent methods once); the options below override one setting each")
    bs.add_argument("--metric", help="automatic metric for metric-based selectors (NAME-ref computes chrF-ref etc.)")
    bs.add_argument("--methods", type=name_list, metavar="M1,M2,...",
                    default=["random", "metric_avg", "metric_var", "metric_cons", "diversity", "irt"],
                    help="comma-separated selectors")
    bs.add_argument("--seeds", type=positive_int, default=10, help="seeded subsamples")
    bs.add_argument("--props", type=fraction_list, metavar="P1,P2,...",
                    help="proportions to report (default 0.05,0.1,...,0.5; --protocol paper: 10 geometric from 0.05 "
                         "to 0.5)")
    bs.add_argument("--subsample", type=fraction, help="share of the items in each subsample (default 0.8; --protocol "
                                                       "paper: 1)")
    bs.add_argument("--correlation", choices=["kendall", "spearman"],
                    help="rank correlation (default kendall; --protocol paper: spearman)")
    bs.add_argument("--alpha", type=open_unit, default=0.05, help="significance level of the cluster count")
    bs.add_argument("--cluster-rule", choices=["ours", "text", "package"],
                    help="cluster count: ours (default; against the cluster's best system, exact signed-rank test up "
                         "to 50 non-zero differences), text (App. Alg. 1 as written: against the system just above, "
                         "the same exact test), package (subset2evaluate's code, the default of --protocol paper: "
                         "against the system above, scipy.stats.wilcoxon's default call, identical systems split)")
    bs.add_argument("--cluster-chain", choices=["top", "previous"],
                    help="reference of each cluster test, replacing the cluster rule's own: top = the current "
                         "cluster's best system, previous = the system just above")
    bs.add_argument("--diversity-tokenizer", choices=["ours", "package"],
                    help="unigram tokens of diversity: ours (default; lower-cased words without punctuation) or "
                         "package (subset2evaluate's whitespace split, the default of --protocol paper)")
    bs.add_argument("--cost-aware", action="store_true",
                    help="the paper's Table 1 setting: each method's picks at proportion p are the knapsack's under "
                         "a cost budget of floor(p n) items of mean cost (costs: item field cost, else the time "
                         "model)")
    bs.add_argument("--knapsack-utility", choices=["ours", "package"],
                    help="with --cost-aware, the values the knapsack maximises: ours (default; u - min u) or package "
                         "(subset2evaluate's (u - min) / (max - min) / 2 + 0.1, the default of --protocol paper)")
    bs.add_argument("--level", type=open_unit, default=0.95,
                    help="level of the correlation intervals (bootstrap over each prefix's items)")
    bs.add_argument("--interval-resamples", type=int, default=1000,
                    help="bootstrap resamples per correlation interval (0: no intervals)")
    add_encoder(bs)
    bs.add_argument("--out", required=True, metavar="DIR", help="output folder (results.json, subset.png; " + RESUMES)
    add_parallel(bs)
    add_quiet(bs)
    bs.set_defaults(handler=cmd_bench_subset)

    bc = bsub.add_parser("calibration", help="is a stated risk true? wrong-winner rates of the stop rules on "
                                             "synthetic pools with known gaps and on real data")
    bc.add_argument("--data", metavar="SPEC", help="real data as well (a path, 'demo', or a name under $EVALSIFT_DATA);"
                                                   " needs --oracle")
    bc.add_argument("--include-refs", action="store_true", help="keep human references as systems")
    cjudge = bc.add_mutually_exclusive_group()
    cjudge.add_argument("--oracle", metavar="SPEC", help="the judge replayed on the real data: metric:NAME or "
                                                         "judgments:FILE")
    cjudge.add_argument("--oracle-metric", metavar="NAME", help="the same as --oracle metric:NAME")
    add_oracle_opts(bc)
    bc.add_argument("--rules", type=name_list, default=["anytime", "paper", "tie_aware"], metavar="R1,R2,...",
                    help="stop rules to check (anytime, paper, tie_aware)")
    bc.add_argument("--risks", type=risk_list, default=[0.05, 0.1, 0.2], metavar="P1,P2,...", help="stated risks")
    bc.add_argument("--methods", type=name_list, default=["random", "diffuse_strata", "diffuse", "diffuse_rep_random"],
                    metavar="M1,M2,...", help="selectors (the anytime rule runs only with a random order: random, "
                    "diffuse_strata -- alias diffuse_random_rep --; the paper rules with every method)")
    bc.add_argument("--runs", type=positive_int, default=200, help="synthetic pools per (gap, ties) case")
    bc.add_argument("--gaps", type=share_list, default=[0.0, 0.02, 0.05, 0.1], metavar="G1,G2,...",
                    help="synthetic win-rate gaps among decisive items (0 is a dead heat: every winner named is wrong)")
    bc.add_argument("--ties", type=share_list, default=[0.0, 0.3], metavar="T1,T2,...",
                    help="synthetic shares of tied items")
    bc.add_argument("--synthetic-items", type=positive_int, default=800, help="items per synthetic pool")
    bc.add_argument("--no-synthetic", action="store_true", help="real data only")
    bc.add_argument("--seeds", type=positive_int, default=10, help="seeded subsamples per real pair")
    bc.add_argument("--subsample", type=fraction, default=0.8, help="share of a pair's items in each real test set")
    bc.add_argument("--max-pairs", type=positive_int, help="a seeded sample of this many real pairs")
    bc.add_argument("--proxy", metavar="SPEC", action="append",
                    help="also run the anytime rule with this proxy (metric:NAME, an automatic metric of the real "
                         "data, or judge:judgments:FILE, a recorded judge; repeat it to stack several) on the random "
                         "orders, as methods <method>+proxy, each real pair restricted to the items every proxy "
                         "covers; the synthetic pools use their own metric 'proxy' (true score + N(0, 0.5))")
    bc.add_argument("--sampling", "--design", dest="sampling", default="uniform", choices=["uniform", "active", "neyman"],
                    help="with --proxy: active also runs <method>+proxy+active (draws weighted toward the items the "
                         "proxy is unsure about, inverse-probability weighted); neyman runs <method>+proxy+neyman "
                         "(draws allocated across the judge's verdicts by where people disagree with it)")
    bc.add_argument("--close", type=open_unit, default=0.05, help="real test sets with a gap below this are also "
                                                                  "reported apart")
    bc.add_argument("--min-labels", type=positive_int, default=5, help="size of the first decision set")
    bc.add_argument("--max-labels", type=positive_int, default=200, help="label cap of every run")
    add_encoder(bc)
    bc.add_argument("--out", required=True, metavar="DIR", help="output folder (results.json, calibration.png; "
                                                                + RESUMES)
    add_parallel(bc)
    add_quiet(bc)
    bc.set_defaults(handler=cmd_bench_calibration)

    be = bsub.add_parser("estimate", help="a held-out system's full-benchmark score from a few items: error, "
                                          "interval coverage and width per method and budget (tinyBenchmarks' and "
                                          "Zhang et al.'s protocol)")
    be.add_argument("--data", required=True, metavar="SPEC",
                    help="a response matrix: a path, a dataset name (alpaca-eval, opencompass-irt, wmt23/en-de) or "
                         "FORMAT:path")
    be.add_argument("--metric", help="the score (default: the data's human metric, or its only one)")
    be.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    be.add_argument("--budgets", type=int_list, default=[10, 25, 50, 100, 200], metavar="B",
                    help="anchor items per estimate (default 10,25,50,100,200)")
    be.add_argument("--methods", type=name_list, default=None, metavar="M[@DESIGN],...",
                    help="estimators (mean, aipw, regression, pirt, gpirt, pirt-1d, gpirt-1d), each with its design "
                         "after @ (random, stratified, anchor-points, anchor-irt, irt); default: mean, "
                         "mean@stratified, aipw, aipw@stratified, regression (@random: Zhang et al.'s baseline), "
                         "pirt and gpirt (@anchor-irt: tinyBenchmarks as the paper defines it; about 5 s of fitting "
                         "per held-out system on 57 x 805 scores). Adaptive designs, simulated from the full matrix: "
                         "pirt-1d@fisher (Fluid "
                         "Benchmarking; no interval) and aipw@active-cs (a confidence sequence; needs the score's "
                         "range at both ends); 'fisher' and 'active-cs' alone name them too")
    be.add_argument("--seeds", type=positive_int, default=10, help="seeded draws per held-out system and budget")
    be.add_argument("--alpha", type=open_unit, default=0.1, help="1 - the intervals' level (default 0.1)")
    be.add_argument("--by", metavar="COLUMN", help="also one table per value of this per-item column, e.g. benchmark")
    be.add_argument("--shared-ability", action="store_true",
                    help="with --by COLUMN, instead of the per-method tables: estimate each value of COLUMN (each "
                         "benchmark) and the total (the mean over benchmarks, and over items) from --budgets items "
                         "judged PER value, each benchmark on its own (separate: its own 2PL and p-IRT) vs one ability "
                         "shared across benchmarks (shared: a 2PL over all items) vs shared plus a shrunk "
                         "per-benchmark offset (shared-offset), beside each benchmark's judged mean (mean); the same "
                         "held-out systems, seeds and draws for all; MAE and mean signed error per benchmark and "
                         "total (model-based, no intervals)")
    be.add_argument("--out", required=True, metavar="DIR", help="output folder (results.json, table.txt, "
                                                                "estimate.png; by_<value>.png with --by)")
    add_parallel(be)
    add_quiet(be)
    be.set_defaults(handler=cmd_bench_estimate)


def provenance(argv: list[str] | None) -> dict[str, Any]:
    """What produced a result: the command line, evalsift's version, the git commit of the source
    (``+dirty`` when it has uncommitted changes; None outside a checkout) and the date."""
    import datetime
    import shlex
    import subprocess

    from .. import __version__

    src = Path(__file__).resolve().parents[1]
    commit = None
    try:
        sha = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if sha.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            commit = sha.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return {"command": "evalsift " + shlex.join(argv) if argv is not None else None, "version": __version__,
            "commit": commit, "date": datetime.date.today().isoformat()}


JOURNAL = "tasks.jsonl"
# results do not depend on them (--device: the same numbers up to float tolerance; the embedding cache is shared)
NOT_SETTINGS = ("handler", "argv", "out", "quiet", "jobs", "backend", "ray_address", "device")


def _run(args: argparse.Namespace, run: Callable[[Any, Any], dict[str, Any]]) -> tuple[dict[str, Any], Path]:
    """Load ``--data`` (None when absent), call ``run(pool, journal)``, add the load time and
    provenance, write ``--out``/results.json. ``journal``: ``--out``/tasks.jsonl, the finished tasks of
    every run of this command with the same options and data (:class:`evalsift.bench.parallel.TaskJournal`),
    so running it again after a crash or Ctrl-C runs only the tasks that had not finished."""
    from ..bench.parallel import TaskJournal, pool_digest

    out = out_dir(args.out, progress=(JOURNAL,))  # a failed run keeps its finished tasks for the rerun
    t0 = time.perf_counter()
    pool = load_data(args) if getattr(args, "data", None) is not None else None
    t_load = time.perf_counter() - t0
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in NOT_SETTINGS}
    journal = TaskJournal(out / JOURNAL, {"options": settings, "data": pool_digest(pool)})
    res = run(pool, journal)
    if journal.reused:
        note(f"{journal.reused} task(s) were finished by an earlier run of this command in {out} ({JOURNAL}) and are "
             "not run again; delete that file to run them anew")
    res["timing_s"]["load"] = round(t_load, 3)
    res["provenance"] = provenance(getattr(args, "argv", None))
    from ..device import device_report

    res["device"] = device_report()
    if res["device"]["used"]:
        note(f"device: {res['device']['summary']}")
    from ..io._common import plain_json, write_atomic  # here, not at the top: the CLI's start-up stays free of evalsift.io

    write_atomic(out / "results.json", json.dumps(plain_json(res), indent=2, allow_nan=False))  # whole or not at all
    return res, out


def _figure(plot: Any, res: dict[str, Any], path: Path, quiet: bool = False) -> Path | None:
    """``plot(res, path)`` when matplotlib (the ``plots`` extra) is installed, else a note that the figure was left
    out and None: a bench run's results do not depend on its figures."""
    from ..report.plots import plots_available

    if plots_available():
        plot(res, path)
        return path
    if not quiet:
        note(f"left out {path.name}: the figures need matplotlib, which is not installed "
             "(pip install 'evalsift[plots]')")
    return None


def cmd_bench_pairwise(args: argparse.Namespace) -> int:
    """``evalsift bench pairwise``."""
    from ..bench import pairwise_bench
    from ..report import analyses_figures_plot, analyses_plot, success_plot

    workers = parallel_opts(args)
    iterative = None
    if args.iterative:
        iterative = {"risk": args.risk, "min_labels": args.min_labels, "max_labels": args.max_labels,
                     "risk_rule": args.risk_rule}
    res, out = _run(args, lambda pool, journal: pairwise_bench(
        pool, args.oracle or args.oracle_metric, args.methods, args.budgets, seeds=args.seeds, subsample=args.subsample,
        max_pairs=args.max_pairs, iterative=iterative, higher_is_better=not args.lower_is_better,
        tie_tolerance=args.tie_tolerance, encoder=resolve_encoder(args, pool), quiet=args.quiet,
        analyses={"clusters": args.analysis_clusters, "bins": args.norm_bins, "budget": args.analysis_budget}
        if args.analyses else None, journal=journal, **workers))
    written = [out / "results.json", _figure(success_plot, res, out / "success.png")]
    _print_pairwise(res)
    if "analyses" in res:
        _print_analyses(res["analyses"])
        written.append(_figure(analyses_plot, res, out / "analyses.png"))
        written.append(_figure(analyses_figures_plot, res, out / "analyses-figures.png"))
    print(f"wrote {', '.join(str(w) for w in written if w is not None)}", file=sys.stderr)
    return 0


def _print_analyses(an: dict[str, Any]) -> None:
    print("DiffUse's analyses (descriptive):")
    print("  deviation of the estimated from the test winning distance (toward the test winner), by budget "
          "(mean ± se across seeds):")
    for kind in ("deviation", "weighted_deviation"):
        for m, curve in an[kind].items():
            cells = "  ".join(f"{b}:{c['mean']:+.3f}±{c['se']:.3f}" for b, c in curve.items())
            print(f"    {m + (' (cluster-weighted)' if kind == 'weighted_deviation' else ''):<34} {cells}")
    if "cluster_norm" in an:
        cn = an["cluster_norm"]
        sizes = ", ".join(f"{b['sizes'][0]}-{b['sizes'][1]}: {b['mean_norm']:.3f}" for b in cn["by_size"])
        print(f"  cluster size vs mean difference norm ({cn['n_clusters']} clusters, {cn['clusters_per_test_set']} per "
              f"test set): Spearman {cn['spearman_size_norm']:+.3f}; mean norm by size {sizes}")
    if "norm_bins" in an:
        nb = an["norm_bins"]

        def row(v):
            return " ".join("  -  " if x is None else f"{x:.3f}" for x in v)

        judged = "the whole bin" if nb["budget"] is None else f"{nb['budget']} random items"
        print(f"  by difference-norm bin ({nb['bins']} bins, low to high, {nb['test_sets']} test sets): mean norm "
              f"{row(nb['mean_norm'])}")
        print(f"    agreement with the test winner {row(nb['agreement'])}")
        print(f"    ties {row(nb['ties'])}")
        print(f"    success of {judged} {row(nb['success'])}")
    if "winning_distance" in an:
        wd = an["winning_distance"]
        q = ", ".join(f"{v:.3f}" for v in wd["quartiles"])
        print(f"  test winning distance over {len(wd['pairs'])} pairs: quartiles {q}; share below 0.1 "
              f"{wd['share_below_0.1']:.2f}")
    if "tsne" in an:
        ts = an["tsne"]
        print(f"  t-SNE of {ts['pair'][0]} vs {ts['pair'][1]} ({len(ts['points'])} items): zero vectors "
              f"{ts['share_zero_vectors']:.2f}; Spearman(norm, distance from the median point) "
              f"{ts['spearman_norm_vs_distance_from_median']:+.3f}")
    if "selected_norms" in an:
        print("  difference norms of the selected items (all budgets pooled): mean; quartiles")
        for m, c in an["selected_norms"]["methods"].items():
            print(f"    {m:<24} {c['mean']:.3f}; {', '.join(f'{v:.3f}' for v in c['quartiles'])} ({c['picks']} picks)")


def _print_pairwise(res: dict[str, Any]) -> None:
    budgets = [str(b) for b in res["budgets"] if any(str(b) in c for c in res["curves"].values())]
    print(f"{res['data']}: oracle {res['oracle_spec']}, {res['n_pairs']} pairs x {res['seeds']} seeds, "
          f"~{res['n_items']} items per pair, subsample {res['subsample']}")
    if res.get("left_out_pairs"):
        print(f"left out {len(res['left_out_pairs'])} pair(s) with too few comparable items (see results.json)")
    print("success rate by budget (mean, se across seeds):")
    print("method".ljust(24) + "".join(b.rjust(13) for b in budgets))
    for m, curve in res["curves"].items():
        cells = "".join(f"{curve[b]['success']:.3f}±{curve[b]['se']:.3f}".rjust(13) if b in curve else " " * 13
                        for b in budgets)
        print(m.ljust(24) + cells)
    if "iterative" in res:
        p = res["iterative_params"]
        kind = "valid" if p["risk_rule"] == "anytime" else "a heuristic bound"
        print(f"iterative (risk {p['risk']}, n={p['min_labels']}, N={p['max_labels']}, {p['risk_rule']} rule, {kind}):")
        for m, row in res["iterative"].items():
            dist = ", ".join(f"{k} {v:.3f}" for k, v in row["distance"].items())
            print(f"  {m:<22} annotations {row['annotations']:.1f}  success {100 * row['success']:.1f}%  "
                  f"error {100 * row['error']:.1f}%  inconclusive {100 * row['inconclusive']:.1f}%  distance: {dist}")


def cmd_bench_subset(args: argparse.Namespace) -> int:
    """``evalsift bench subset``."""
    from ..bench.subset import subset_bench
    from ..errors import ParameterError
    from ..report import subset_plot

    workers = parallel_opts(args)
    if args.human_metric is None and args.protocol != "paper":
        raise ParameterError("bench subset: --human-metric NAME is required (only --protocol paper chooses the human "
                             "scores itself)", field="human_metric")
    res, out = _run(args, lambda pool, journal: subset_bench(
        pool, args.human_metric, args.methods, metric=args.metric, seeds=args.seeds, props=args.props,
        subsample=args.subsample, correlation=args.correlation, alpha=args.alpha, cluster_chain=args.cluster_chain,
        protocol=args.protocol, cluster_rule=args.cluster_rule, diversity_tokenizer=args.diversity_tokenizer,
        knapsack_utility=args.knapsack_utility, cost_aware=args.cost_aware,
        encoder=resolve_encoder(args, pool), quiet=args.quiet, level=args.level,
        interval_resamples=max(0, args.interval_resamples), journal=journal, **workers))
    _figure(subset_plot, res, out / "subset.png")
    print(f"{res['data']}: human {res['human_metric']}, metric {res['metric']}, {res['n_systems']} systems, "
          f"{res['n_items']} items (subsample {res['subsample']}), {res['seeds']} seeds, {res['correlation']}, "
          f"{res['cluster_rule']} cluster rule, diversity tokens {res['diversity_tokenizer']}, "
          + (f"cost-aware (knapsack values {res['cost_aware']['knapsack_utility']}), " if "cost_aware" in res else "")
          + f"clusters vs {res['cluster_chain']}, protocol {res['protocol']}")
    print("mean over the proportions (the paper's Table 10 cell: correlation / clusters):")
    for m in res["methods"]:
        r = res["mean_over_props"][m]
        print(f"  {m:<18} {r['correlation']:.3f}±{r['correlation_se']:.3f} / {r['clusters']:.2f}±{r['clusters_se']:.2f}")
    left = res.get("left_out", {})
    if left.get("systems_left_out") or left.get("items_left_out"):
        print(f"left out: {left['items_left_out']} item(s) not scored for every system; systems without scores: "
              f"{', '.join(left['systems_left_out']) or 'none'}")
    print("needed to match random (first crossing, random = 1.0; lower is better) | 'stays' rule:")
    for m in res["methods"]:
        a, b = res["needed_to_match"][m], res["needed_to_match_stays"][m]
        print(f"  {m:<18} correlation {a['correlation']:.3f}±{a['correlation_se']:.3f}  clusters "
              f"{a['clusters']:.3f}±{a['clusters_se']:.3f}  | stays: {b['correlation']:.3f}  {b['clusters']:.3f}")
    if "correlation_intervals" in res:
        ci = res["correlation_intervals"]
        print(f"{res['correlation']} with the full ranking: observed mean, and what the prefix alone says (expected "
              f"[{ci['level']:g} interval], coverage of the observed value over seeds):")
        for m in res["methods"]:
            cells = []
            for p, c in res["curves"][m].items():
                lo, hi = c["correlation_interval"]
                cells.append(f"{p}: {c['correlation']:.2f} / {c['correlation_expected']:.2f} [{lo:.2f},{hi:.2f}] "
                             f"cov {c['interval_coverage']:.2f}, means cov {c['mean_interval_coverage']:.2f}")
            print(f"  {m:<18} " + "; ".join(cells))
    print(f"wrote {out / 'results.json'} and {out / 'subset.png'}", file=sys.stderr)
    return 0


def cmd_bench_calibration(args: argparse.Namespace) -> int:
    """``evalsift bench calibration``."""
    from ..bench.calibration import calibration_bench
    from ..errors import ParameterError
    from ..report import calibration_plot

    if args.oracle_metric is not None:
        args.oracle = f"metric:{args.oracle_metric}"
    if args.data is not None and args.oracle is None:
        raise ParameterError("bench calibration: --data needs --oracle (metric:NAME or judgments:FILE) or "
                             "--oracle-metric NAME to know each test set's winner", field="oracle")
    if args.oracle is not None and args.data is None:
        raise ParameterError("bench calibration: --oracle judges real data; give it with --data", field="data")
    workers = parallel_opts(args)
    res, out = _run(args, lambda pool, journal: calibration_bench(
        pool, args.oracle, rules=args.rules, risks=args.risks, methods=args.methods, seeds=args.seeds, runs=args.runs,
        gaps=args.gaps, ties=args.ties, synthetic_items=args.synthetic_items, synthetic=not args.no_synthetic,
        subsample=args.subsample, min_labels=args.min_labels, max_labels=args.max_labels, max_pairs=args.max_pairs,
        close=args.close, higher_is_better=not args.lower_is_better, tie_tolerance=args.tie_tolerance, **workers,
        encoder=resolve_encoder(args, pool), quiet=args.quiet, proxy=proxy_spec(args), sampling=args.sampling,
        journal=journal))
    png = _figure(calibration_plot, res, out / "calibration.png")
    print(calibration_text(res), end="")
    print(f"wrote {out / 'results.json'}" + (f" and {png}" if png else ""), file=sys.stderr)
    return 0


def cmd_bench_estimate(args: argparse.Namespace) -> int:
    """``evalsift bench estimate``."""
    from ..bench.estimate import DEFAULT_METHODS, estimate_plot, run_estimate_bench, table_text
    from ..estimate import response_matrix
    from ..io._common import plain_json, write_atomic

    if getattr(args, "shared_ability", False):
        _check_shared_ability(args)
    out = out_dir(args.out)
    t0 = time.perf_counter()
    R = response_matrix(args.data, metric=args.metric, include_refs=args.include_refs)
    t_load = time.perf_counter() - t0
    for line in R.notes:
        note(line)
    if getattr(args, "shared_ability", False):
        return _bench_shared_ability(args, R, out, t0, t_load)
    kw = dict(budgets=args.budgets, methods=args.methods or DEFAULT_METHODS, seeds=args.seeds, alpha=args.alpha,
              quiet=args.quiet, **parallel_opts(args))
    res = run_estimate_bench(R, **kw)
    res["timing_s"].update(load=round(t_load, 3), total=round(time.perf_counter() - t0, 3))
    print(f"bench estimate: {res['timing_s']['total']:.1f} s for {res['systems']} systems x {len(args.budgets)} budgets "
          f"x {args.seeds} seeds x {len(res['methods'])} methods (load included)", file=sys.stderr)
    text = table_text(res)
    files = ["results.json", "table.txt"] + (["estimate.png"] if _figure(estimate_plot, res, out / "estimate.png")
                                              else [])
    if args.by:
        res["groups"] = {}
        for value in R.groups(args.by):
            sub = run_estimate_bench(R.group(args.by, value), **kw)
            sub.pop("records")
            res["groups"][value] = sub
            text += f"\n== {args.by} = {value} ({sub['items']} items)\n" + table_text(sub)
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)
            _figure(estimate_plot, sub, out / f"by_{safe}.png", quiet=True)
        if "estimate.png" in files:
            files.append(f"by_<{args.by}>.png")
    res["provenance"] = provenance(getattr(args, "argv", None))
    write_atomic(out / "results.json", json.dumps(plain_json(res), indent=2, allow_nan=False))  # whole or not at all
    write_atomic(out / "table.txt", text)
    print(text, end="")
    print(f"wrote {', '.join(files)} to {out}", file=sys.stderr)
    return 0


def _check_shared_ability(args: argparse.Namespace) -> None:
    """``--shared-ability`` needs ``--by`` and runs its own three estimators (no ``--methods``)."""
    from ..errors import ParameterError

    if not args.by:
        raise ParameterError("--shared-ability shares one ability across the values of a per-item column: give the "
                             "column with --by COLUMN (e.g. --by benchmark)", field="shared_ability")
    if args.methods:
        raise ParameterError("--shared-ability compares its own estimators (separate, shared, shared-offset, mean); "
                             "leave out --methods, or drop --shared-ability to compare the methods", field="methods")


def _bench_shared_ability(args: argparse.Namespace, R: Any, out: Path, t0: float, t_load: float) -> int:
    """``bench estimate --by COLUMN --shared-ability``: :func:`evalsift.bench.across.run_across_bench`;
    writes results.json and table.txt."""
    from ..bench.across import across_table_text, run_across_bench
    from ..io._common import plain_json, write_atomic

    res = run_across_bench(R, args.by, budgets=args.budgets, seeds=args.seeds, quiet=args.quiet, **parallel_opts(args))
    res["timing_s"].update(load=round(t_load, 3), total=round(time.perf_counter() - t0, 3))
    print(f"bench estimate --shared-ability: {res['timing_s']['total']:.1f} s for {res['systems']} systems x "
          f"{len(res['groups'])} values of {args.by} x {len(res['budgets'])} budgets x {args.seeds} seeds (load "
          "included)", file=sys.stderr)
    res["provenance"] = provenance(getattr(args, "argv", None))
    text = across_table_text(res)
    write_atomic(out / "results.json", json.dumps(plain_json(res), indent=2, allow_nan=False))
    write_atomic(out / "table.txt", text)
    print(text, end="")
    print(f"wrote results.json, table.txt to {out}", file=sys.stderr)
    return 0


def calibration_text(res: dict[str, Any]) -> str:
    """The calibration results as text: what each rule promises, then per case the wrong-winner share
    (its 95% interval) and the mean labels at every stated risk, and per rule the cells that exceed."""
    lines = [f"stop-rule calibration: label cap {res['max_labels']}, first decision set {res['min_labels']}",
             "what each rule promises:"]
    lines += [f"  {rule}: {text}" for rule, text in res["guarantee"].items()]
    lines.append(res["check"])
    parts = []
    if "synthetic" in res:
        syn = res["synthetic"]
        parts.append((f"synthetic pools ({syn['items']} items, {syn['runs_per_cell']} runs per case)", syn["cells"],
                      syn["summary"]))
    if "real" in res:
        real = res["real"]
        parts.append((f"{real['data']}, oracle {real['oracle']}: {real['pairs']} pairs x {real['seeds']} seeds = "
                      f"{real['cases']} test sets ({real['close_cases']} close, {real['skipped_tied']} tied skipped)"
                      + (f"; {len(real['left_out_pairs'])} pairs left out (too few items the oracle or the proxy "
                         "covers: results.json's left_out_pairs)" if real.get("left_out_pairs") else ""),
                      real["cells"], real["summary"]))
    for title, cells, summary in parts:
        lines.append(title)
        for case, by_method in cells.items():
            lines.append(f"  {case}")
            for method, by_rule in by_method.items():
                for rule, by_risk in by_rule.items():
                    cellstr = "  ".join(
                        f"risk {r}: named {c['declared']:.2f} wrong {c['wrong']:.3f} [{c['wrong_ci'][0]:.3f},"
                        f"{c['wrong_ci'][1]:.3f}]{' EXCEEDS' if c['exceeds'] else ''} labels {c['mean_labels']:.0f}"
                        + (f" covered {c['interval_coverage']:.2f}" if c.get("interval_coverage") is not None else "")
                        for r, c in by_risk.items() if c.get("runs"))
                    lines.append(f"    {method + '/' + rule:<30} {cellstr or 'no runs'}")
        for rule, s in summary.items():
            cov = (f"; interval coverage at least nominal {s['coverage_minus_nominal']:+.3f}"
                   if "coverage_minus_nominal" in s else "")
            lines.append(f"  {rule}: {s['exceeds']} of {s['cells']} cells exceed their stated risk{cov}")
    return "\n".join(lines) + "\n"
