"""``evalsift judge-report``: what a judge is worth against the human verdicts that exist, with intervals."""

from __future__ import annotations

import argparse


from ._common import (
    add_aggregate,
    add_data,
    add_judge_opts,
    add_quiet,
    build_oracle,
    load_data,
    note,
    open_unit,
    positive_int,
    print_json,
    seed_int,
)

JUDGE_HELP = ("the judge to assess, as compare --proxy takes it, with or without the judge: prefix -- metric:NAME (an automatic "
              "metric: verdicts from its score difference, the proxy its calibrated difference), judgments:FILE or a "
              "recorded source (e.g. judgments:summeval/llm-pairwise/coherence), llm:MODEL (asked only about the items "
              "people judged; see the LLM judge options), judge:metric:NAME (the metric's verdicts only)")
HUMAN_HELP = ("the people's verdicts: judgments:FILE (recorded human verdicts, e.g. judgments:human.jsonl) or "
              "metric:NAME (a human score column, e.g. metric:mqm)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``judge-report``."""
    p = sub.add_parser("judge-report",
                       help="a judge against the human verdicts that exist: agreement, kappa, correlation, position "
                            "and length bias, and the labels it would save as a proxy, each with an interval")
    add_data(p)
    p.add_argument("--judge", required=True, metavar="SPEC", help=JUDGE_HELP)
    p.add_argument("--human", required=True, metavar="SPEC", help=HUMAN_HELP)
    p.add_argument("--a", metavar="SYS", help="one pair's first system (with --b); default: every pair with items "
                                              "judged by both")
    p.add_argument("--b", metavar="SYS", help="one pair's second system (with --a)")
    p.add_argument("--risk", type=open_unit, default=0.1,
                   help="the decision risk of the forecast (labels the anytime rule needs without and with the judge)")
    p.add_argument("--draws", type=positive_int, default=200,
                   help="simulated runs per pair for the forecast, 5 per resample of the labelled items (its time "
                        "grows with this)")
    p.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples for the intervals")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed of the bootstrap and the forecast")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes for the forecast (0: every core); the same result on any number")
    add_aggregate(p)
    add_judge_opts(p, title="LLM judge (--judge llm:MODEL)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON (every pair, every interval)")
    add_quiet(p)
    p.set_defaults(handler=cmd_judge_report)


def cmd_judge_report(args: argparse.Namespace) -> int:
    """``evalsift judge-report``."""
    from ..errors import ParameterError
    from ..oracle.report import judge_report

    if (args.a is None) != (args.b is None):
        raise ParameterError("give both --a and --b for one pair, or neither for every pair with items judged by "
                             "both", field="b" if args.b is None else "a")
    if args.jobs < 0:
        raise ParameterError(f"--jobs must be 0 (every core) or a positive number of workers, got {args.jobs}",
                             field="jobs")
    pool = load_data(args)
    spec = args.judge.strip()
    inner = spec.removeprefix("judge:")
    built = build_oracle(args, inner) if inner.startswith("llm:") else None  # with the --judge-* options
    human = args.human
    if args.aggregate:  # the people's verdicts, one per item and pair by the rule (evalsift.oracle.aggregate)
        if not human.strip().startswith("judgments:"):
            raise ParameterError(f"--aggregate {args.aggregate} combines recorded verdicts: give --human "
                                 f"judgments:FILE (got {human!r}; a score column has one value per item)",
                                 field="aggregate")
        human = build_oracle(args, human.strip())
    report = judge_report(pool, spec, human, pairs=None if args.a is None else [(args.a, args.b)], risk=args.risk,
                          draws=args.draws, seed=args.seed, resamples=args.resamples, judge=built, jobs=args.jobs)
    if args.json:
        print_json(report.to_dict())
        return 0
    text = report.summary()
    body = [line for line in text.splitlines() if not line.startswith("note: ")]
    print("\n".join(body))
    for n in report.notes:
        note(n)
    return 0
