"""``evalsift select METHOD``: the items to judge, in pick order."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError
from ._common import (add_data, add_encoder, device_line, add_quiet, cap_budget, fraction, load_data, name_list, note,
                      out_file, pair_only, positive_float, positive_int, resolve_encoder, seed_int)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``select``."""
    p = sub.add_parser("select", help="items to judge, in pick order")
    p.add_argument("method", metavar="METHOD", help="a selector name: diffuse, random, metric_var, ... "
                                                   "('evalsift methods' lists them); or 'anchors': the items a new "
                                                   "system is judged on to estimate its full-benchmark score "
                                                   "(docs/estimate.md)")
    add_data(p)
    p.add_argument("--a", metavar="SYS", help="first system (pairwise methods such as diffuse)")
    p.add_argument("--b", metavar="SYS", help="second system (pairwise methods)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--budget", type=positive_int, help="number of items")
    size.add_argument("--proportion", type=fraction, help="share of the pool, e.g. 0.2")
    size.add_argument("--cost-budget", type=positive_float,
                      help="total annotation cost: the most useful items that fit (0-1 knapsack over the method's "
                           "utility; see --cost-field)")
    p.add_argument("--cost-field", default="cost",
                   help="per-item cost field; when the data has no such field: 0.15 x source length + 33.7 s")
    p.add_argument("--cost-length", default="auto", choices=["auto", "words", "characters"],
                   help="source length of that time model: auto (default) counts characters for sources mostly in "
                        "Han, Kana, Hangul or Thai script and words otherwise")
    p.add_argument("--metric", help="automatic metric for metric-based selectors (NAME-ref computes chrF-ref etc.)")
    p.add_argument("--balance", metavar="FIELD", help="equal shares per value of FIELD, e.g. domain")
    p.add_argument("--documents", metavar="FIELD", nargs="?", const="doc",
                   help="select whole documents (FIELD, default doc when given without a value)")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed")
    p.add_argument("--method", dest="anchor_design", default=None, metavar="DESIGN",
                   help="with 'anchors': random (default) | stratified (by the known systems' item difficulty) | "
                        "anchor-points (tinyBenchmarks' clusters of the score vectors) | anchor-irt (tinyBenchmarks' "
                        "clusters of its multidimensional IRT's item embeddings, their code's default; about 5 s "
                        "to fit on 57 x 805 scores) | irt (IRT-information picks)")
    p.add_argument("--exclude", type=name_list, default=[], metavar="SYS[,SYS]",
                   help="with 'anchors': systems of --data that are not known ones (the new system, if it is there)")
    p.add_argument("--where", metavar="COLUMN=VALUE", help="with 'anchors': only the items with this per-item value, "
                                                         "e.g. benchmark=MMLU")
    p.add_argument("--export", metavar="FORMAT", help="also hand the picks back to the harness whose logs --data "
                   "holds: lm-eval (<out>.lm-eval.json for lm_eval --samples, and the command to run) | inspect; "
                   "needs data read from that harness's own logs")
    add_encoder(p)
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output JSONL in pick order (subset2evaluate input comes back in its own format)")
    p.add_argument("--report", action="store_true",
                   help="also say how the picks differ from the pool on the label-free dimensions (length; "
                        "score_difficulty on an automatic --metric): SMD against the band of random samples of the same size; printed "
                        "and written to OUT.report.json")
    add_quiet(p)
    p.set_defaults(handler=cmd_select)


def _selector_and_pool(args: argparse.Namespace, pool):
    """The selector the command line asks for (wrapped for --balance / --documents), and the pool it
    applies to (the two systems' comparable items, for pairwise methods)."""
    from ..select import DocumentLevel, DomainBalanced, build_selector

    sel = build_selector(args.method, args.seed, {"encoder": resolve_encoder(args, pool), "metric": args.metric})
    if args.balance and args.documents:
        raise ParameterError("--balance and --documents do not combine; choose one")
    if args.balance:
        sel = DomainBalanced(sel, field=args.balance)
    elif args.documents:
        sel = DocumentLevel(sel, field=args.documents)
    if sel.pairwise and not (args.a and args.b):
        raise ParameterError(f"{args.method} compares two systems: give --a SYS --b SYS "
                             f"(systems: {', '.join(pool.systems[:12])})")
    if args.a or args.b:
        if not (args.a and args.b):
            raise ParameterError("give both --a and --b, or neither")
        pool = pair_only(pool, args.a, args.b)
    return sel, pool


def _picks(args: argparse.Namespace, sel, pool) -> tuple[list[int], list[float | None], list[int | None], str]:
    """Item positions in pick order, their utilities, their cluster sizes, and a one-line account."""
    from ..select import utilities_of

    sel.fit(pool)
    if args.cost_budget is not None:
        from ..select.costaware import item_costs, knapsack_select

        costs = item_costs(pool, args.cost_field, args.cost_length)
        util = utilities_of(sel)
        res = knapsack_select(np.nan_to_num(util, nan=np.nanmin(util) if np.isfinite(util).any() else 0.0),
                              costs, args.cost_budget)
        items = [int(i) for i in res.items]
        account = (f"cost {res.total_cost:.1f} of {args.cost_budget:g} ({res.solver}"
                   + (f": {res.message}" if res.message else "") + ")")
        return items, [float(util[i]) for i in items], [None] * len(items), account
    where = f"the pool ({' vs '.join(pool.systems)})" if args.a else "the pool"
    budget = (cap_budget(args.budget, pool.n_items, "--budget", where) if args.budget is not None
              else max(1, int(round(args.proportion * pool.n_items))))
    s = sel.select(budget)
    util = [None] * len(s.items) if s.utilities is None else [float(u) for u in s.utilities]
    sizes = [None] * len(s.items) if s.cluster_sizes is None else [int(c) for c in s.cluster_sizes]
    return [int(i) for i in s.items], util, sizes, f"{len(s.items)} of {pool.n_items} items"


def cmd_select(args: argparse.Namespace) -> int:
    """``evalsift select METHOD``."""
    if args.method == "anchors":
        return _select_anchors(args)
    unused = [o for o, v in (("--method", args.anchor_design), ("--exclude", args.exclude), ("--where", args.where)) if v]
    if unused:
        raise ParameterError(f"{', '.join(unused)} {'belongs' if len(unused) == 1 else 'belong'} to `evalsift select anchors`; `select {args.method}` does not "
                             "take them (the selector is the first word).", field=unused[0].lstrip("-"))
    out = out_file(args.out)
    pool = load_data(args)
    _check_export(args)
    sel, pool = _selector_and_pool(args, pool)
    items, util, sizes, account = _picks(args, sel, pool)
    exported = _export(args, pool, [pool.item_ids[i] for i in items], out)
    if "_record" in pool.metadata:  # subset2evaluate input: the same format back, plus the utility
        from ..io import write_s2e_jsonl

        write_s2e_jsonl(pool.subset(items), out, extra={"subset2evaluate_utility": util})
    else:
        _write_picks(out, pool, sel, items, util, sizes, args.seed)
    print(f"wrote {len(items)} items to {out} ({args.method}, seed {args.seed}; {account})", file=sys.stderr)
    _say_exported(exported)
    if device_line():
        print(device_line(), file=sys.stderr)
    if args.report:
        _selection_report(args, pool, items, out)
    return 0


def _select_anchors(args: argparse.Namespace) -> int:
    """``evalsift select anchors``: a design over the known systems' response matrix (evalsift.estimate)."""
    from ..estimate import response_matrix, select_anchors, write_anchors
    from ..estimate.anchors import DESIGNS
    from .estimate import restrict

    if args.budget is None:
        raise ParameterError("select anchors takes --budget N (the number of items to judge).", field="budget")
    out = out_file(args.out)
    _check_export(args)
    data = args.data
    if args.export:  # the export needs the Pool's per-item columns (task, doc_id): read it once, for both
        from ._common import load_spec

        data = load_spec(args.data, args)
    R = restrict(response_matrix(data, metric=args.metric, keep_partial=args.exclude,
                                 include_refs=args.include_refs), args.where)
    if args.exclude:
        R = R.rows([s for s in R.systems if s not in set(args.exclude)])
    from ..errors import check_choice

    design = check_choice("--method", args.anchor_design or "random", DESIGNS)
    n = cap_budget(args.budget, R.n_items, "--budget", f"the {R.n_items} items")
    anchors = select_anchors(R.Y, n, design, seed=args.seed)
    exported = _export(args, data, [R.item_ids[i] for i in anchors.items], out) if args.export else None
    write_anchors(out, anchors, R.item_ids)
    for line in R.notes:
        note(line)
    kind = "a random draw: design-based intervals hold" if anchors.probability_design else \
        "deterministic: only model-based estimates (pirt, gpirt, pirt-1d, gpirt-1d, regression)"
    print(f"wrote {anchors.n} anchor items to {out} ({design}, seed {args.seed}; {len(R.systems)} known systems, "
          f"{R.n_items} items, {R.metric}; {kind})", file=sys.stderr)
    _say_exported(exported)
    if exported is not None:  # the loop's last step: the new model's run on the anchors -> its estimate
        import shlex

        print("then, with the new model's run: evalsift estimate --data " + shlex.quote(str(args.data))
              + f" --metric {shlex.quote(R.metric)} --system NEW_MODEL --items {shlex.quote(str(out))} "
              "--run NEW_RUN_DIR --out EST_DIR" + (f" --where {shlex.quote(args.where)}" if args.where else ""),
              file=sys.stderr)
    return 0


def _check_export(args: argparse.Namespace) -> None:
    """An unknown ``--export`` name fails before any work (with a suggestion)."""
    if getattr(args, "export", None):
        from ..io.export import exporters

        exporters.get(args.export)


def _export(args: argparse.Namespace, pool, item_ids: list[str], out: Path):
    """The ``--export`` files beside ``out`` (evalsift.io.export), or None without ``--export``. Written before
    the picks file, so an export that cannot be made (data not from that harness) leaves nothing behind."""
    if not getattr(args, "export", None):
        return None
    import os

    from ..io.export import export
    from ._common import _record

    before = set(os.listdir(out.parent)) if out.parent.is_dir() else set()
    exported = export(args.export, pool, item_ids, out)
    _record("files", [Path(os.path.abspath(p)) for p in exported.paths if p.name not in before])  # undone on failure
    return exported


def _say_exported(exported) -> None:
    """Print what the export wrote and the next step (the harness command to run)."""
    if exported is not None and exported.next_step:
        print(exported.next_step, file=sys.stderr)


def _label_free_dims(args: argparse.Namespace, pool) -> dict[str, np.ndarray]:
    """The dimensions known before any judgment: length (text inputs), score_difficulty on an automatic --metric."""
    from ..transparency import compute_dimensions

    dims = {}
    if pool.inputs_are_text:
        dims.update(compute_dimensions(["length"], pool=pool))
    if args.metric and args.metric in pool.scores and not pool.is_human(args.metric):
        dims[f"score_difficulty ({args.metric})"] = compute_dimensions(["score_difficulty"], pool=pool,
                                                                       metric=args.metric)["score_difficulty"]
    return dims


def _selection_report(args: argparse.Namespace, pool, items: list[int], out: Path) -> None:
    """Print the picks' SMD per label-free dimension against the random band, and write OUT.report.json."""
    from ..io._common import json_default, plain_json, write_atomic
    from ..transparency.ood import selection_report

    dims = _label_free_dims(args, pool)
    if not dims:
        note("--report: no label-free dimension to compare on (the inputs are not text and no automatic --metric)")
        return
    rep = selection_report(dims, items, seed=args.seed)
    rep.update(method=args.method, data=args.data)
    path = out.with_name(out.stem + ".report.json")
    write_atomic(path, json.dumps(plain_json(rep), indent=1, default=json_default, allow_nan=False))
    lo_q, hi_q = rep["q"]
    print(f"picks vs pool ({rep['n_selected']} of {rep['n_pool']} items); band: {lo_q:g}-{hi_q:g} percentiles of "
          f"{rep['n_samples']} random samples of the same size")
    print(f"  {'dimension':<24} {'SMD':>7}   {'random band':<17} {'mean picks':>10} {'mean pool':>10}")
    for name, d in rep["dimensions"].items():
        lo, hi = d["band"]
        flag = "  skewed" if d["outside"] else ""
        print(f"  {name:<24} {d['smd']:7.3f}   [{lo:6.3f}, {hi:6.3f}] {d['mean_selected']:10.4g} "
              f"{d['mean_pool']:10.4g}{flag}")
    print(f"wrote {path}", file=sys.stderr)


def _write_picks(out: Path, pool, sel, items: list[int], util: list[float | None], sizes: list[int | None],
                 seed: int) -> None:
    meta = [f for f in ("domain", "doc", "cost") if f in pool.metadata]
    from ..io._common import atomic_file

    pair = pool.n_systems == 2 and sel.pairwise
    with atomic_file(out) as fh:  # whole or not at all
        for rank, (i, u, c) in enumerate(zip(items, util, sizes), 1):
            row: dict[str, Any] = {"rank": rank, "item_id": pool.item_ids[i], "position": i,
                                   "input": pool.inputs[i] if pool.inputs_are_text else None}
            row.update({f: pool.metadata[f][i] for f in meta})
            if pair:
                a, b = pool.systems
                row.update(a=a, b=b, output_a=pool.outputs[a][i], output_b=pool.outputs[b][i])
            else:  # every system's output, so 'annotate new --from picks.jsonl' needs nothing else
                row["outputs"] = {s: pool.outputs[s][i] for s in pool.systems}
            if u is not None:
                row["utility"] = u
            if c is not None:
                row["cluster_size"] = c  # how many pool items this pick stands for
            row.update(method=sel.name or type(sel).__name__, seed=seed)
            fh.write(json.dumps(row, ensure_ascii=False, default=_plain) + "\n")


def _plain(o: Any) -> Any:
    from ..io._common import json_default

    try:
        return json_default(o)
    except TypeError:
        return str(o)
