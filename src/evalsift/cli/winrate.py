"""``evalsift winrate``: every model's win rate against one baseline, AlpacaEval's way, and AlpacaEval 2.0's
length-controlled win rate (Dubois et al. 2024), overall and per group."""

from __future__ import annotations

import argparse
import sys

from ._common import add_by, add_games, add_quiet, collect_notes, note, out_dir, print_json, positive_int
from .bench import jobs_count


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``winrate``."""
    from ..verdicts import add_repeats, add_verdicts_from

    p = sub.add_parser("winrate", help="win rates against a baseline (AlpacaEval), optionally length-controlled "
                                       "(AlpacaEval 2.0's GLM), overall and per group")
    p.add_argument("--data", required=True, metavar="SPEC",
                   help="pairwise judgments: a recorded name under $EVALSIFT_DATA (alpaca-eval/preferences, "
                        "alpaca-eval/preferences/<annotator_config>), AlpacaEval annotations.json, Arena-Hard-Auto judgments "
                        "(model_judgment/<judge>/ or one of its files), or any file the pairwise readers take "
                        "(battles, FastChat judgments, a pairwise table)")
    p.add_argument("--baseline", required=True, metavar="MODEL",
                   help="the model every other one is compared with (AlpacaEval 2.0: gpt4_1106_preview)")
    p.add_argument("--annotator", metavar="NAME",
                   help="count this annotator's verdicts only (its full name or a unique part of it); needed when "
                        "the data holds several. One judge under several prompts (FastChat's pair-v2 and "
                        "pair-v2-multi-turn: both turns) counts as one, as show_result.py counts it; name a prompt to "
                        "count it alone")
    p.add_argument("--length-controlled", action="store_true",
                   help="also the length-controlled win rate: per model a logistic GLM of the preference on the "
                        "standardised length difference, the instruction difficulty and the model, predicted with no "
                        "length difference (Dubois et al. 2024); the difficulties are estimated from the data")
    p.add_argument("--difficulty", metavar="FILE",
                   help="AlpacaEval's published instruction difficulties (its instruction_difficulty.csv: index, "
                        "instruction_difficulty) instead of estimating them; implies --length-controlled. Every "
                        "instruction of the data needs one")
    p.add_argument("--weights", metavar="FILE",
                   help="AlpacaEval's saved per-model GLM weights (metrics/weights/<annotator>/length_controlled_v1/"
                        "baseline_<baseline>.csv): each model in it gets AlpacaEval's own prediction from them (with "
                        "--difficulty, its published LC win rate); the others are fitted; implies --length-controlled")
    add_by(p, "dataset: AlpacaEval's subsets; category with MT-Bench's question.jsonl")
    add_verdicts_from(p)
    add_repeats(p, "a comparison of the same model, instruction and annotator")
    add_games(p)
    add_strong_weight(p)
    p.add_argument("--jobs", type=jobs_count, default=1, metavar="N",
                   help="worker processes for --length-controlled's joint fit of the instruction difficulties "
                        "(1: none, in this process; 0 or auto: the cores this command may use, at most 4); the "
                        "numbers are the same either way. On 2 busy cores two workers measured slower than one "
                        "process (docs/winrate.md); they pay on more, idle cores")
    p.add_argument("--out", required=True, metavar="DIR", help="writes results.json, leaderboard.csv, leaderboard.html")
    p.add_argument("--json", action="store_true", help="print results.json")
    add_quiet(p)
    p.set_defaults(handler=cmd_winrate)


def add_strong_weight(p: argparse.ArgumentParser) -> None:
    """``--strong-weight W``: how many times an Arena-Hard-Auto strong verdict (``A>>B``) counts."""
    p.add_argument("--strong-weight", type=positive_int, default=1, metavar="W",
                   help="Arena-Hard-Auto judgments: a strong verdict (A>>B, B>>A) counts W times, a plain one or a tie "
                        "once (default 1; Arena-Hard's show_result.py uses 3); the output says which was used")


def cmd_winrate(args: argparse.Namespace) -> int:
    """``evalsift winrate``."""
    from ..io.pairwise import read_verdicts
    from ..winrate import winrate_board, write_board

    out = out_dir(args.out)
    notes: list[str] = []
    with collect_notes(notes):
        data = read_verdicts(args.data, games=args.games, verdicts_from=args.verdicts_from, by=args.by,
                             questions=args.questions, strong_weight=args.strong_weight, baseline=args.baseline)
        from ..winrate import read_alpaca_difficulty
        board = winrate_board(data, args.baseline, annotator=args.annotator,
                              length_controlled=args.length_controlled or bool(args.difficulty or args.weights),
                              difficulty=read_alpaca_difficulty(args.difficulty) if args.difficulty else "estimate",
                              weights=args.weights, by=args.by, repeats=args.repeats, jobs=args.jobs)
    board.notes[:0] = [n for n in notes if n not in board.notes]
    paths = write_board(board, out)
    for text in list(board.comparisons.notes) + board.notes:
        note(text)
    if args.json:
        print_json(board.to_dict())
    else:
        print(board.summary())
    print(f"wrote {paths['results']}, {paths['csv']} and {paths['html']}", file=sys.stderr)
    return 0
