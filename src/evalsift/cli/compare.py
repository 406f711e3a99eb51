"""``evalsift compare``: which of two systems wins, judging as few items as possible."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ParameterError
from ._common import (ORACLE_HELP, add_aggregate, add_data, add_encoder, device_line, add_judge_opts, add_loop_opts, add_oracle_opts, add_proxy_opts,
                      add_quiet, add_sampling_opts, cap_budget, load_data_and_oracle, note, positive_int, print_json,
                      proxy_judges, proxy_spec, proxy_specs, resolve_encoder, resolve_risk_rule, seed_int)


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
    add_aggregate(p)
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

    if _replay_export(args):
        return 0
    oracle_spec = str(args.oracle or "")
    if oracle_spec.startswith("judgments:") and _export_source(args) is None:  # another dataset: not the replay
        from ..web.replay import refuse_other_replay

        refuse_other_replay(oracle_spec[len("judgments:"):], str(args.data))
    pool, oracle = load_data_and_oracle(args)
    pool_note = None
    if _only_judged(args):
        pool_note = (f"pool: the {pool.n_items} items in {args.data}, every one of them judged -- the decision is "
                     "about these items only, not a larger pool they were drawn from (an export of an annotation "
                     f"project carries its whole pool in {args.data}.project.json; this file has none)")
        if not args.json:
            print(pool_note)
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
                      sampling=args.sampling, explore=args.explore,
                      budget=cap_budget(args.budget, data.n_items, "--budget",
                                        f"the pool ({args.a} vs {args.b}: the items both have and the judge covers)"))
    session.restriction = restriction  # what was left out of the whole data, for the Decision's assumptions
    decision = session.run(oracle)
    if args.json:
        out = decision.to_dict()
        if pool_note:
            out["pool_note"] = pool_note
        if spec is not None:
            out["judge_report"] = _judge_reports(args, data, judges, session)
        from ..device import device_report

        out["device"] = device_report()
        print_json(out)
        return 0
    if device_line():
        note(device_line())
    if restriction.could_change(decision.winner, decision.win_rate_interval, decision.pool_size):
        note(restriction.flip_note(decision.winner, decision.win_rate_interval, decision.pool_size))
    _print_decision(decision, session)
    return 0


def _print_decision(decision, session) -> None:
    """The Decision as ``compare`` prints it: the summary, the pool's win rate, what the risk means, the
    interval and the trace (the same for a comparison and for a replay of an annotation project)."""
    print(decision.summary())
    if decision.errors:
        first = next((r["error"] for r in decision.judged if r.get("error")), "")
        note(f"{decision.errors} item(s) got no verdict because the judge failed (first reason: {first}); they are "
             "left out, never counted as verdicts; a rerun asks them again")
    if decision.usage:
        u = decision.usage
        cached = int(u.get("cached_tokens", 0))
        print(f"tokens: {u['total_tokens'] - cached:,} paid now, {cached:,} from the cache ({u['prompt_tokens']:,} "
              f"prompt, {u['completion_tokens']:,} completion in all) over {u['judgments']} judgments")
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
    print(f"trace (k = {_step_meaning(session.selector)}; decision set, judged, a-b-ties, risk):")
    steps = decision.trace
    shown = steps if len(steps) <= 12 else steps[:5] + [None] + steps[-5:]
    for t in shown:
        if t is None:
            print(f"  ... {len(steps) - 10} more steps (--json prints them all)")
            continue
        print(f"  k={t['clusters']:>3}  set={t['decision_set']:>3}  judged={t['labels_used']:>3}  "
              f"{t['wins_a']}-{t['wins_b']}-{t['ties']}  risk={t['risk']:.4f}")


def _export_source(args: argparse.Namespace) -> str | None:
    """The file of ``--oracle judgments:FILE`` when ``--data`` is that same file (a replay), else None."""
    oracle = str(args.oracle or "")
    if not oracle.startswith("judgments:"):
        return None
    src = oracle[len("judgments:"):]
    try:
        same = Path(src).resolve() == Path(str(args.data)).resolve()
    except OSError:
        return None
    return src if same and Path(src).is_file() else None


def _only_judged(args: argparse.Namespace) -> bool:
    """Whether the pool is a verdict file's own items (so every item in it was judged)."""
    return _export_source(args) is not None


def _replay_export(args: argparse.Namespace) -> bool:
    """``compare --data X --oracle judgments:X`` on an annotation project's export (``X.project.json`` beside
    X): print the decision the project's admin page shows -- the project's whole pool, its settings, the
    verdicts in the order they were stored. False (nothing printed) when X is no such export."""
    from ..io.pairwise import read_pairwise
    from ..web.replay import read_project_file, replay

    src = _export_source(args)
    doc = read_project_file(src) if src is not None else None
    if doc is None:
        return False
    p, st = doc["project"], doc["project"]["settings"]
    if {args.a, args.b} != {st.get("a"), st.get("b")}:
        raise ParameterError(f"--a {args.a} --b {args.b}: {src} is an export of project {p['name']!r}, which compares "
                             f"{st.get('a')} and {st.get('b')}; give those, or move {src}.project.json aside to compare "
                             "the exported items alone", field="a")
    judgments = read_pairwise(src).judgments
    session = replay(doc, judgments)
    decision = session.decision()
    if args.json:
        print_json({**decision.to_dict(), "replay": {"project": p["name"], "pool_size": doc["pool_size"],
                                                    "verdicts": len(judgments), "settings": st}})
        return True
    print(f"replay of annotation project {p['name']!r}: its pool of {doc['pool_size']} items (from "
          f"{src}.project.json) and the {len(judgments)} verdicts in {src}, in the order they were stored -- the "
          "decision its admin page shows")
    extra = f", proxy {st['proxy']}" if st.get("proxy") else ""
    print(f"the project's settings, not this command's: {st['a']} vs {st['b']}, risk {st['risk']}, rule "
          f"{st['risk_rule']}, labels {st['min_labels']}-{st['max_labels']}, overlap {st.get('overlap', 1)}{extra}")
    _print_decision(decision, session)
    return True


def _step_meaning(selector) -> str:
    """What the trace's ``k`` (the loop's step, the size asked of the selector) is for this selector."""
    if getattr(selector, "random_order", False):
        return "the first k items of the random order"
    if selector.select(1).cluster_sizes is not None:
        return "clusters, one judged representative each"
    return f"the first k picks of {selector.name or type(selector).__name__}"


def _judge_reports(args: argparse.Namespace, pool, judges: list, session) -> dict:
    """Per ``judge:`` proxy, its judge report (:func:`evalsift.judge_report.judge_report`) against the
    verdicts this comparison collected -- only those: the labels paid for, not the rest of a replayed
    file -- with a quick forecast (100 simulated pools, 500 bootstrap resamples)."""
    from ..errors import EvalsiftError
    from ..oracle.report import judge_report
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
