"""``evalsift data info`` and ``evalsift methods``: what a dataset holds, what is registered."""

from __future__ import annotations

import argparse

from ._common import add_quiet, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``data info`` and ``methods``."""
    data = sub.add_parser("data", help="inspect a dataset")
    add_quiet(data)
    data_sub = data.add_subparsers(dest="data_cmd", required=True, metavar="{info}")
    info = data_sub.add_parser("info", help="systems, items, metrics (human flagged), coverage")
    info.add_argument("spec", metavar="SPEC", help="dataset: a path, 'demo', or a name under $EVALSIFT_DATA")
    info.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_quiet(info)
    info.set_defaults(handler=cmd_data_info)
    methods = sub.add_parser("methods", help="registered selectors, oracles and encoders")
    add_quiet(methods)
    methods.set_defaults(handler=cmd_methods)


def cmd_data_info(args: argparse.Namespace) -> int:
    """``evalsift data info SPEC``."""
    from ..io import load

    info = load(args.spec, include_refs=args.include_refs).info()
    if args.json:
        print_json(info)
        return 0
    print(f"{info['name']}: {info['n_items']} items x {info['n_systems']} systems")
    print("systems: " + ", ".join(f"{s} ({100 * c:.0f}% outputs)" for s, c in info["output_coverage"].items()))
    print("metrics:" if info["metrics"] else "metrics: (none)")
    for m, d in info["metrics"].items():
        flag = "human" if d["human"] else "auto "
        print(f"  {flag}  {m:<28} {100 * d['cells']:5.1f}% of cells scored, {d['complete_items']} items scored "
              "for every system")
    if info["references"]:
        print("references: " + ", ".join(info["references"]))
    if info["metadata"]:
        print("metadata: " + ", ".join(f for f in info["metadata"] if not f.startswith("_")))
    return 0


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
    return 0
