"""``evalsift compare``: which of two systems wins, judging as few items as possible."""

from __future__ import annotations

import argparse

from ._common import (ORACLE_HELP, add_data, add_encoder, add_judge_opts, add_loop_opts, add_oracle_opts, add_proxy_opts,
                      add_quiet, add_sampling_opts, load_data_and_oracle, note, positive_int, print_json, proxy_judges,
                      proxy_spec, proxy_specs, resolve_encoder, resolve_risk_rule, seed_int)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``compare``."""
    p = sub.add_parser("compare", help="which of two systems wins, with as few judgments as possible")
    add_data(p)
    p.add_argument("--a", required=True, metavar="SYS", help="first system")
    p.add_argument("--b", required=True, metavar="SYS", help="second system")
    p.add_argument("--oracle", required=True, metavar="SPEC", help=ORACLE_HELP)
    p.add_argument("--method", default="random",
                   help="selector that picks the items to judge: random (default); diffuse_strata (random order, DiffUse's "
                   "clusters as strata for the valid rule); diffuse runs with the paper's rule, a heuristic")
    add_proxy_opts(p)
    p.add_argument("--budget", type=positive_int, metavar="N",
                   help="a fixed budget instead of stopping as soon as decided: judge N items drawn at random, then "
                        "print the pool's win rate with a finite-sample valid interval (with --proxy, sharpened by it) "
                        "and the decision it supports at --risk")
    add_sampling_opts(p)
    p.add_argument("--seed", type=seed_int, default=0, help="random seed")
    add_encoder(p)
    add_loop_opts(p, default_rule=None)
    add_oracle_opts(p)
    add_judge_opts(p)
    p.add_argument("--json", action="store_true",
                   help="print the whole Decision as JSON, with every judged item and its verdict")
    add_quiet(p)
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """``evalsift compare``."""
    from ..proxy import restrict_to_proxy
    from ..restrict import restrict_pair
    from ..select import build_selector
    from ..session import Session

    pool, oracle = load_data_and_oracle(args)
    restriction = restrict_pair(pool, args.a, args.b, oracle=oracle)
    if restriction.dropped:
        note(restriction.note())
    data, proxy, judges = restriction.pool, None, []
    spec = proxy_spec(args)
    if spec is not None:  # a proxy must cover every item: keep the ones it covers; fitted here, once
        judges = proxy_judges(args)
        by_proxy, proxy = restrict_to_proxy(data, args.a, args.b, spec, oracle=judges, covariates=args.covariates or (),
                                            recorded=[oracle])
        if by_proxy.dropped:
            note(f"proxy: {by_proxy.note()}")
        data = by_proxy.pool
    sel = build_selector(args.method, args.seed, {"encoder": resolve_encoder(args, pool)})
    session = Session(data, sel, a=args.a, b=args.b, risk=args.risk, min_labels=args.min_labels,
                      max_labels=args.max_labels, risk_rule=resolve_risk_rule(args, sel), proxy=proxy,
                      sampling=args.sampling, explore=args.explore, budget=args.budget)
    session.restriction = restriction  # what was left out of the whole data, for the Decision's assumptions
    decision = session.run(oracle)
    if args.json:
        out = decision.to_dict()
        if spec is not None:
            out["judge_report"] = _judge_reports(args, data, judges, session)
        print_json(out)
        return 0
    if restriction.could_change(decision.winner, decision.win_rate_interval, decision.pool_size):
        note(restriction.flip_note(decision.winner, decision.win_rate_interval, decision.pool_size))
    print(decision.summary())
    if decision.errors:
        first = next((r["error"] for r in decision.judged if r.get("error")), "")
        note(f"{decision.errors} item(s) got no verdict because the judge failed (first reason: {first}); they are "
             "left out, never counted as verdicts; a rerun asks them again")
    if decision.usage:
        print(f"tokens: {decision.usage['total_tokens']} ({decision.usage['prompt_tokens']} prompt, "
              f"{decision.usage['completion_tokens']} completion) over {decision.usage['judgments']} judgments")
    wr = f"pool: {decision.pool_size} items; win rate of {decision.a} on the decision set {decision.win_rate_a:.3f}"
    if decision.weighted_win_rate_a is not None:
        kind = ("with the proxy, over the pool" if decision.proxy else "with the strata, over the pool"
                if decision.risk_rule == "anytime" else "cluster-weighted")
        wr += f" ({kind} {decision.weighted_win_rate_a:.3f})"
    print(wr)
    print(f"what the risk means: {decision.guarantee}")
    if decision.win_rate_interval is not None:
        lo, hi = decision.win_rate_interval
        kind = ("fixed-budget interval" if decision.risk_rule == "budget" else "confidence sequence")
        print(f"win rate of {decision.a} in the pool (ties half): {lo:.3f} to {hi:.3f} ({kind} at "
              f"{decision.risk_threshold})")
    print("trace (clusters, decision set, judged, a-b-ties, risk):")
    steps = decision.trace
    shown = steps if len(steps) <= 12 else steps[:5] + [None] + steps[-5:]
    for t in shown:
        if t is None:
            print(f"  ... {len(steps) - 10} more steps (--json prints them all)")
            continue
        print(f"  k={t['clusters']:>3}  set={t['decision_set']:>3}  judged={t['labels_used']:>3}  "
              f"{t['wins_a']}-{t['wins_b']}-{t['ties']}  risk={t['risk']:.4f}")
    return 0


def _judge_reports(args: argparse.Namespace, pool, judges: list, session) -> dict:
    """Per ``judge:`` proxy, its judge report (:func:`evalsift.judge_report.judge_report`) against the
    verdicts this comparison collected -- only those: the labels paid for, not the rest of a replayed
    file -- with a quick forecast (100 simulated pools, 500 bootstrap resamples)."""
    from ..errors import EvalsiftError
    from ..judge_report import judge_report
    from ..oracle.judgments import JudgmentsOracle

    collected = JudgmentsOracle([j for j in session.judgments if j.status == "done"], name="the verdicts collected")
    out = {}
    for spec, judge in zip(proxy_specs(args), judges):
        if not spec.startswith("judge:"):
            continue
        try:
            report = judge_report(pool, spec, collected, pairs=[(args.a, args.b)], risk=args.risk, draws=100,
                                  resamples=500, seed=args.seed, judge=judge, quiet=True)
            out[spec] = report.to_dict()
        except EvalsiftError as e:  # too few verdicts collected to say anything
            out[spec] = {"error": str(e)}
    return out
