"""``evalsift best``: the best of many systems, judging as few pairs of outputs as possible."""

from __future__ import annotations

import argparse

from ._common import (ORACLE_HELP, add_data, add_judge_opts, add_oracle_opts, add_proxy_opts, add_quiet, add_sampling_opts,
                      load_data_and_oracle, note, open_unit, positive_int, print_json, proxy_judges, proxy_spec,
                      seed_int, system_list)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``best``."""
    p = sub.add_parser("best", help="the best of many systems with as few pairwise judgments as possible (valid)")
    add_data(p)
    p.add_argument("--systems", type=system_list, metavar="A,B,...", help="the candidates (all systems when absent)")
    p.add_argument("--oracle", required=True, metavar="SPEC", help=ORACLE_HELP)
    p.add_argument("--risk", type=open_unit, default=0.1,
                   help="chance of naming a system that does not beat every other one")
    p.add_argument("--max-labels", type=positive_int, help="cap on pairwise judgments over all pairs (none: the pools)")
    p.add_argument("--strategy", default="leader", choices=["leader", "all_pairs"],
                   help="leader: judge the current leader against the systems it has not beaten (adaptive); "
                        "all_pairs: every undecided pair each round (the baseline)")
    p.add_argument("--ranking", action="store_true",
                   help="a full ranking with ties instead: every pair judged until decided (each at risk / number "
                        "of pairs), systems by decided wins minus losses, tiers where the order is not established")
    add_proxy_opts(p)
    add_sampling_opts(p)
    p.add_argument("--seed", type=seed_int, default=0, help="random seed of the pairs' orders")
    add_oracle_opts(p)
    add_judge_opts(p)
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_quiet(p)
    p.set_defaults(handler=cmd_best)


def cmd_best(args: argparse.Namespace) -> int:
    """``evalsift best``."""
    from ..best import BestOf

    pool, oracle = load_data_and_oracle(args)
    judges = proxy_judges(args)
    res = BestOf(pool, args.systems, risk=args.risk, max_labels=args.max_labels, strategy=args.strategy,
                 seed=args.seed, ranking=args.ranking, proxy=proxy_spec(args), sampling=args.sampling,
                 explore=args.explore, proxy_oracle=judges or None,
                 covariates=args.covariates or (), recorded=[oracle]).run(oracle)
    if args.json:
        print_json(res.to_dict())
        return 0
    print(res.summary())
    print(f"what the risk means: {res.guarantee}")
    if res.ranking is not None:
        print("ranking (a line: the system above beat the one below by a decided test; no line: order not established):")
        for r in res.ranking:
            print(f"  tier {r['tier']:>2}  {r['system']:<24} decided wins {r['wins']:>2}, losses {r['losses']:>2}  "
                  f"(win rate {r['win_rate']:.3f})")
            if r["line_below"]:
                print("  " + "-" * 60)
    beaten = {k: v for k, v in res.beaten_by.items() if v}
    if beaten:
        print("beaten (by a decided test): " + "; ".join(f"{k} by {', '.join(v)}" for k, v in beaten.items()))
    print("pairs judged (winner or -, judgments, a-b-ties, win rate of a with its interval at the pair's level):")
    for p in sorted(res.pairs, key=lambda p: -p["labels"]):
        if not p["labels"]:
            continue
        iv = p["win_rate_interval"]
        ivs = f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else ""
        print(f"  {p['a']:>16} vs {p['b']:<16} {p['winner'] or '-':<16} {p['labels']:>4} of {p['pool_size']:<5} "
              f"{p['wins_a']}-{p['wins_b']}-{p['ties']}  {p['win_rate_a']:.3f}{ivs}")
    if res.not_covered:
        shown = ", ".join(f"{p['a']} vs {p['b']}" for p in res.not_covered[:10])
        extra = len(res.not_covered) - 10
        more = f" and {extra} more (--json lists them with the reason)" if extra > 0 else ""
        note(f"{len(res.not_covered)} of {len(res.not_covered) + len(res.pairs)} pairs not covered (no items the judge "
             f"can judge; a system with such a pair cannot be named the best{'' if res.ranking is not None else '; --ranking judges every pair that is covered'}): {shown}{more}")
    if res.errors:
        print(f"note: {res.errors} judgment(s) failed and were left out")
    return 0
