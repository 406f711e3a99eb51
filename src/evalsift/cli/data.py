"""``evalsift data info``, ``evalsift data example`` and ``evalsift methods``: what a dataset holds, the shipped
examples, what is registered."""

from __future__ import annotations

import argparse

from ._common import add_quiet, add_run_system, load_spec, out_dir, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``data info``, ``data example`` and ``methods``."""
    data = sub.add_parser("data", help="inspect a dataset; copy out a shipped example")
    add_quiet(data)
    data_sub = data.add_subparsers(dest="data_cmd", required=True, metavar="{info,example}")
    info = data_sub.add_parser("info", help="systems, items, metrics (human flagged), coverage")
    info.add_argument("spec", metavar="SPEC", help="dataset: a path, 'demo', or a name under $EVALSIFT_DATA")
    info.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_run_system(info)
    add_quiet(info)
    info.set_defaults(handler=cmd_data_info)
    example = data_sub.add_parser("example", help="copy a tiny example in another tool's published layout into a "
                                                  "folder (synthetic verdicts, fictional models)")
    example.add_argument("name", metavar="NAME", help="mt-bench (FastChat's data/mt_bench: question.jsonl, "
                                                      "model_judgment/gpt-4_single.jsonl, gpt-4_pair.jsonl) or arena "
                                                      "(Chatbot Arena battles.jsonl with both conversations)")
    example.add_argument("--out", required=True, metavar="DIR",
                         help="folder to copy it into; a file there with other content is never overwritten")
    add_quiet(example)
    example.set_defaults(handler=cmd_data_example)
    methods = sub.add_parser("methods", help="registered selectors, oracles and encoders")
    add_quiet(methods)
    methods.set_defaults(handler=cmd_methods)


def cmd_data_info(args: argparse.Namespace) -> int:
    """``evalsift data info SPEC``; for recorded pairwise judgments (a judge file) also what they say:
    verdicts a/b/tie, judges, pairs, items."""
    from ..io import HARNESSES, read_pairwise, resolve

    fmt, path = resolve(args.spec)
    if fmt == "pairwise":
        recorded = read_pairwise(path, name=args.spec)
        info = recorded.pool.info()
        info["judgments"] = judgments_info(recorded.judgments)
    else:
        info = load_spec(args.spec, args).info()
    if fmt in HARNESSES:
        info["written_by"] = HARNESSES[fmt].info(path)
    if args.json:
        print_json(info)
        return 0
    print(f"{info['name']}: {info['n_items']} items x {info['n_systems']} systems")
    if "written_by" in info:
        print(_written_by_text(info["written_by"]))
    if "judgments" in info:
        print(_judgments_text(info["judgments"]))
    print("systems: " + ", ".join(f"{s} ({100 * c:.0f}% outputs)" for s, c in info["output_coverage"].items()))
    print("metrics:" if info["metrics"] else "metrics: (none)")
    for m, d in info["metrics"].items():
        flag = "human" if d["human"] else "auto "
        print(f"  {flag}  {m:<28} {100 * d['cells']:5.1f}% of cells scored, {d['complete_items']} items scored "
              "for every system")
    if info["references"]:
        print("references: " + ", ".join(info["references"]))
    shown = [f for f in info["metadata"] if not f.startswith("_")]
    if shown:
        print("metadata: " + ", ".join(shown))
    return 0


def cmd_data_example(args: argparse.Namespace) -> int:
    """``evalsift data example NAME --out DIR``: the shipped example's files (:mod:`evalsift.examples`) in DIR."""
    import sys

    from ..examples import copy_example, example_files

    example_files(args.name)  # an unknown name fails before a folder is made
    out = out_dir(args.out)
    written = copy_example(args.name, out)
    print(f"wrote example {args.name!r} into {out}: {', '.join(str(p.relative_to(out)) for p in written)} (written "
          "by evalsift in the published layout; synthetic verdicts, fictional models: README.md there)",
          file=sys.stderr)
    return 0


def judgments_info(judgments) -> dict:
    """What recorded pairwise judgments say, for ``data info``: ``n_judgments``; ``verdicts`` (a, b, tie:
    the finished verdicts, 'a' meaning the judgment's system_a did better); ``other_statuses`` (skipped,
    error: judgments without a verdict); ``judges`` (annotator -> judgments, most first) and
    ``judge_kinds`` (human / llm / metric -> judgments); ``pairs`` (system pairs judged, either order
    the same pair); ``items`` (items judged).

    >>> from evalsift.oracle import Judgment
    >>> js = [Judgment("1", "X", "Y", "a", "ann", "human"), Judgment("1", "Y", "X", "tie", "gpt-4", "llm")]
    >>> d = judgments_info(js)
    >>> d["verdicts"], d["judges"], d["pairs"], d["items"]
    ({'a': 1, 'b': 0, 'tie': 1}, {'ann': 1, 'gpt-4': 1}, 1, 1)
    """
    from collections import Counter

    verdicts = Counter(j.verdict for j in judgments if j.status == "done")
    others = Counter(j.status for j in judgments if j.status != "done")
    judges = Counter(j.annotator for j in judgments)
    return {"n_judgments": len(judgments), "verdicts": {v: verdicts.get(v, 0) for v in ("a", "b", "tie")},
            "other_statuses": dict(others), "judges": dict(judges.most_common()),
            "judge_kinds": dict(Counter(j.kind for j in judgments).most_common()),
            "pairs": len({frozenset((j.a, j.b)) for j in judgments}), "items": len({j.item_id for j in judgments})}


def _written_by_text(d: dict) -> str:
    """The ``written by`` line of ``data info`` on a harness's files: the tool, its version where the files
    record it, and what else its ``describe`` function found (``found``: runs, tasks, judges)."""
    version = f" {d['version']}" if d.get("version") else " (the files record no version)"
    found = f"; {d['found']}" if d.get("found") else ""
    return f"written by: {d['tool']}{version}{found}"


def _judgments_text(d: dict) -> str:
    """:func:`judgments_info` as two lines."""
    v = d["verdicts"]
    others = "".join(f", {n} {status}" for status, n in d["other_statuses"].items())
    judges = list(d["judges"].items())
    named = ", ".join(f"{name} ({n})" for name, n in judges[:8]) + (f" and {len(judges) - 8} more" if len(judges) > 8
                                                                     else "")
    kinds = ", ".join(f"{n} {kind}" for kind, n in d["judge_kinds"].items())
    return (f"judgments: {d['n_judgments']} (verdicts: a {v['a']}, b {v['b']}, tie {v['tie']}{others}; a = system_a "
            f"did better) on {d['items']} items and {d['pairs']} pairs of systems\n"
            f"judges: {len(judges)}: {named}; by kind: {kinds}")


def cmd_methods(args: argparse.Namespace) -> int:
    """``evalsift methods``: what is registered."""
    from ..embed import encoders
    from ..omninput import labelers, omni_models, samplers
    from ..oracle import oracles
    from ..select import selectors
    from ..transparency.dimensions import dimensions

    for title, reg in (("selectors", selectors), ("oracles", oracles), ("encoders", encoders),
                       ("omni samplers (evalsift omni sample --sampler)", samplers),
                       ("omni models (evalsift omni sample --model)", omni_models),
                       ("omni labelers (evalsift omni curve --judgments rule:NAME | proxy:NAME)", labelers),
                       ("dimensions (evalsift profile --dims)", dimensions)):
        print(f"{title}:")
        for name, desc in reg.describe().items():
            print(f"  {name:<24} {desc}")
        if reg is omni_models:  # not registered names: they take a folder
            print(f"  {'hf-lm:DIR':<24} your local Hugging Face causal LM (NLL of --length tokens)")
            print(f"  {'hf-cls:DIR':<24} your local Hugging Face sequence classifier (logit of --positive)")
    return 0
