"""``evalsift arena``: a leaderboard of many systems from pairwise battles (Bradley-Terry, intervals,
simultaneous rank-sets), with LLM judges folded in and human budgets drawn from the battles."""

from __future__ import annotations

import argparse
import sys

from ..verdicts import add_verdicts_from
from ._common import add_aggregate, add_by, add_games, add_quiet, open_unit, out_dir, positive_int, print_json, seed_int


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``arena``."""
    p = sub.add_parser("arena", help="rank many systems from pairwise battles: Bradley-Terry scores with intervals "
                                     "and simultaneous rank-sets; judges sharpen a human budget")
    p.add_argument("--data", required=True, metavar="BATTLES",
                   help="the human battles: a Chatbot Arena battle file (model_a, model_b, winner), FastChat / "
                        "MT-Bench judgments, AlpacaEval annotations, a pairwise table, Arena-Hard-Auto judgments "
                        "(model_judgment/<judge>/: its scores against the baseline are printed under the board), or a "
                        "recorded name under $EVALSIFT_DATA (e.g. arena-ppr/human)")
    p.add_argument("--judge", action="append", metavar="FILE",
                   help="an LLM judge's verdicts on the same battles (joined on the battle id: num, battle_id, id or "
                        "question_id); repeat for several (stacked). Used with --human-budget")
    p.add_argument("--human-budget", type=positive_int, metavar="N",
                   help="use only N of the human battles (drawn per --allocation) and the judges on all of them")
    p.add_argument("--allocation", choices=["uniform", "active", "neyman"], default="uniform",
                   help="with --human-budget: uniform draws at random; active draws pairs by Chatbot Arena's rule "
                        "(where one more battle shrinks an interval most), each battle weighted by the inverse of its "
                        "draw probability; neyman (ours) draws a stratified sample, strata by pair and by what the "
                        "judges said, with more battles where people disagree with the judges and where a comparison "
                        "is close to being settled")
    p.add_argument("--stop", metavar="RULE",
                   help="with --human-budget (the most it may use): draw human battles in a random order and stop once "
                        "the question is answered -- top-k:K (the K best are singled out) or rank-set:S (every rank-set "
                        "spans at most S ranks); looks after --first, 2x, 4x, ... battles, each at alpha / looks")
    p.add_argument("--first", type=positive_int, default=100, metavar="N", help="with --stop: battles at the first look")
    p.add_argument("--alpha", type=open_unit, default=0.05,
                   help="1 - alpha: the intervals' level and the rank-sets' simultaneous coverage")
    p.add_argument("--intervals", choices=["sandwich", "bootstrap"], default="sandwich",
                   help="sandwich: normal intervals from the robust covariance; bootstrap: percentile intervals and "
                        "bootstrap rank-sets")
    p.add_argument("--ties", choices=["half", "davidson"], default="half",
                   help="half: a tie is half a win (Chatbot Arena, FastChat); davidson: Davidson's tie-aware model "
                        "(human battles alone, sandwich intervals)")
    p.add_argument("--estimator", choices=["auto", "mle", "bias-corrected", "shrunk"], default="auto",
                   help="the scores printed. auto (default): shrunk below 400 human battles per model on average "
                        "(4,000 among 20 models; 4 or more models, --ties half), else mle; mle: the maximum-likelihood "
                        "fit (Chatbot Arena's); shrunk (ours): each score its posterior mean under an empirical-Bayes "
                        "prior toward the models' mean -- at small samples the plain fit prints the leaders tens to "
                        "hundreds of Elo above their true scores; bias-corrected (ours): the fit less its first-order "
                        "bias, a few Elo at a few thousand battles. Intervals and rank-sets are the fit's own under "
                        "every choice (docs/arena.md, 'Small samples: the scores printed')")
    p.add_argument("--style-control", metavar="FEATURES",
                   help="fit Bradley-Terry with the answers' style as covariates, as Chatbot Arena's style control: "
                        "length, markdown (headers, bold, lists; also one by one), comma-separated, e.g. "
                        "length,markdown. Prints the style-controlled scores beside the raw ones, with the style "
                        "coefficients; needs both answers of every battle (conversation_a / conversation_b, output_1 / "
                        "output_2, or --outputs) or their recorded counts (Chatbot Arena's conv_metadata; "
                        "Arena-Hard-Auto's answer metadata, with Arena-Hard's own features)")
    p.add_argument("--outputs", metavar="SPEC",
                   help="with --style-control: the answers' texts, one per (item, model): a table with item_id, system, "
                        "output columns (CSV, TSV, JSONL), an AlpacaEval folder (e.g. alpaca-eval), anything "
                        "'evalsift data' loads with outputs; joined on the battle's item id and model name")
    p.add_argument("--style-missing", choices=["error", "drop"], default="error",
                   help="with --style-control, a battle without both texts: error (default: names the battle) or drop "
                        "(leave it out of both boards, with a note)")
    add_by(p, "language, turn; category with MT-Bench's question.jsonl: in the terminal, by_<COLUMN>.csv and "
              "leaderboard.html")
    add_games(p)
    add_verdicts_from(p)
    add_aggregate(p)
    from .winrate import add_strong_weight

    add_strong_weight(p)
    p.add_argument("--bootstrap", type=positive_int, default=1000, metavar="B", help="bootstrap replicates")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed (the draws, the bootstrap)")
    p.add_argument("--out", required=True, metavar="DIR", help="writes results.json, leaderboard.csv, leaderboard.html")
    p.add_argument("--json", action="store_true", help="print results.json")
    add_quiet(p)
    p.set_defaults(handler=cmd_arena)
    _DEFAULTS.update({dest: p.get_default(dest) for dest in (*_LIVE_FIXED, "alpha")})


_LIVE_FIXED = ("judge", "human_budget", "allocation", "stop", "first", "intervals", "ties", "estimator", "style_control",
               "outputs", "style_missing", "by", "questions", "games", "verdicts_from", "strong_weight")
"""Options that change what is fitted: a replay of an arena project's live board (:func:`_live_replay`) has none."""
_DEFAULTS: dict = {}


def cmd_arena(args: argparse.Namespace) -> int:
    """``evalsift arena``."""
    from ..arena import read_battles
    from ..arena.leaderboard import leaderboard, write_leaderboard
    from ..arena.read import judge_name
    from ..errors import ParameterError

    live = _live_replay(args)
    if live is not None:  # an evalsift arena project's export: the admin page's live board, replayed
        out = out_dir(args.out)
        paths = write_leaderboard(live, out)
        print_json(live.to_dict()) if args.json else print(live.summary())
        print(f"wrote {', '.join(str(p) for p in paths.values())}", file=sys.stderr)
        return 0
    out = out_dir(args.out)
    judges = list(dict.fromkeys(args.judge or ()))
    names = [judge_name(j) for j in judges]
    if len(set(names)) != len(names):
        raise ParameterError(f"two --judge files share the name {next(n for n in names if names.count(n) > 1)!r}; "
                             "rename one", field="judge")
    style = features = None
    notes = []
    source = {"games": args.games, "verdicts_from": args.verdicts_from, "by": args.by, "questions": args.questions,
              "aggregate": args.aggregate, "aggregate_seed": args.aggregate_seed}
    ah = _arena_hard(args, judges, notes)  # Arena-Hard-Auto judgments: its games, weights and style features
    if ah is not None:
        battles, style, features = ah
    elif args.style_control is None:
        if args.outputs is not None:
            raise ParameterError("--outputs gives the answers' texts for --style-control: add --style-control "
                                 "length,markdown (or leave --outputs out)", field="outputs")
        battles = read_battles(args.data, judges, **source)
    else:
        from ..arena.style import missing_text, parse_style, style_covariates

        features = parse_style(args.style_control)
        if args.ties == "davidson":
            raise ParameterError("--style-control fits the Bradley-Terry model with a tie as half a win: leave out "
                                 "--ties davidson (use --ties half), or leave out --style-control", field="ties")
        battles = read_battles(args.data, judges, texts=True, outputs=args.outputs, **source)
        battles = _recorded_counts(battles, args.data, notes)
        miss = missing_text(battles)
        if args.style_missing == "drop" and miss.any():
            n0, k0 = battles.n, battles.K
            battles = battles.keep(~miss)
            if battles.n == 0:
                raise ParameterError(f"none of the {n0} battles of {args.data} has both texts: give them with "
                                     "--outputs FILE (item_id, system, output)", field="style_missing")
            notes.append(f"{int(miss.sum())} of {n0} battles without both texts left out (--style-missing drop)"
                         + (f", and with them {k0 - battles.K} model(s) that had no other battle" if battles.K < k0
                            else "") + "; both boards use the rest")
        style = style_covariates(battles, features)
    settings = dict(human_budget=args.human_budget, allocation=args.allocation, alpha=args.alpha, seed=args.seed,
                    intervals=args.intervals, B=args.bootstrap, ties=args.ties, stop=args.stop, first=args.first,
                    estimator=args.estimator)
    board = leaderboard(battles, style=style, **settings)
    board.notes.extend(notes)
    groups = _group_boards(battles, args.by, features, settings) if args.by else None
    paths = write_leaderboard(board, out, by=(args.by, groups) if groups is not None else None)
    ah_scores = _arena_hard_scores(battles, style, args.alpha, paths["results"]) if ah is not None else None
    if args.json:
        d = board.to_dict()
        if ah_scores is not None:
            d["arena_hard"] = ah_scores
        if groups is not None:
            d["by"] = {"column": args.by, "boards": {v: (g.to_dict() if not isinstance(g, str) else {"skipped": g})
                                                     for v, g in groups}}
        print_json(d)
    else:
        print(board.summary())
        if ah_scores is not None:
            from ..arena.hard import scores_text

            print("\n" + scores_text(ah_scores["scores"], ah_scores.get("raw")))
        for value, g in groups or ():
            lines = [g] if isinstance(g, str) else g.summary().split("\n")[1:]
            print(f"\n{args.by} = {value}: " + "\n".join(x for x in lines if not x.startswith("assumption:")))
    print(f"wrote {', '.join(str(p) for p in paths.values())}", file=sys.stderr)
    return 0


def _live_replay(args: argparse.Namespace):
    """The live board of an evalsift arena project when ``--data`` is its export (``annotate export --format
    arena`` or ``judgments``, with the project file ``<data>.project.json`` beside it): its human battles in
    stored order, each weighted by its draw's probability, the project's judges and settings -- the admin
    page's board (:func:`~evalsift.web.arena.replay_board`; ``--alpha`` when given, else the project's).
    None when ``--data`` is anything else. Options the live board does not have are refused, and so is a
    pairwise table (it keeps no draw probabilities), each naming what replays."""
    from pathlib import Path

    from ..errors import ParameterError

    if not Path(args.data).expanduser().is_file() or not Path(str(args.data) + ".project.json").is_file():
        return None  # no project file beside it (web.replay's SUFFIX): the web app's modules need not load
    from ..web.replay import project_file_for, read_project_file

    doc = read_project_file(args.data)
    if doc is None or not ((doc.get("project") or {}).get("settings") or {}).get("arena"):
        return None
    changed = [f"--{d.replace('_', '-')}" for d in _LIVE_FIXED if getattr(args, d, None) != _DEFAULTS.get(d)]
    name = doc["project"].get("name")
    if changed:
        raise ParameterError(f"--data {args.data} is the export of arena project {name!r} (its project file "
                             f"{project_file_for(args.data)} lies beside it), so 'arena' replays the project's live "
                             f"board, which has no {', '.join(changed)}: leave {'them' if len(changed) > 1 else 'it'} "
                             f"out to replay it, or move the project file aside to fit the battles as a plain battle "
                             "file", field=changed[0].lstrip("-").replace("-", "_"))
    from ..io.pairwise import read_judgments
    from ..web.arena import replay_board

    alpha = None if args.alpha == _DEFAULTS.get("alpha") else args.alpha
    return replay_board(doc, read_judgments(args.data).judgments, alpha=alpha, source=str(args.data))


def _group_boards(battles, by: str, features, settings: dict) -> list:
    """``(value, board)`` per value of column ``by`` (each on that value's battles; the human budget, when
    given, shared in proportion to the value's battles), or ``(value, reason)`` where a board cannot be fitted
    (too few battles, or models that never meet)."""
    from dataclasses import replace

    from ..arena.leaderboard import leaderboard
    from ..arena.style import style_covariates
    from ..errors import EvalsiftError

    labels = battles.tags[by]
    out = []
    for value in sorted(set(labels), key=str):
        mask = labels == value
        sub = battles.keep(mask)
        sub = replace(sub, verdicts={**battles.verdicts, "verdicts": int(sub.n)})
        local = dict(settings)
        if settings.get("human_budget"):
            local["human_budget"] = max(2, round(settings["human_budget"] * sub.n / battles.n))
        try:
            if sub.K < 2:
                raise ValueError(f"only {sub.K} model")
            style = style_covariates(sub, features) if features else None
            out.append((str(value), leaderboard(sub, style=style, **local)))
        except (EvalsiftError, ValueError) as e:
            out.append((str(value), f"no board: {sub.n} battles among {sub.K} models ({e})"))
    return out


def _arena_hard(args: argparse.Namespace, judges: list, notes: list):
    """``(battles, style covariates or None, features or None)`` when ``--data`` is Arena-Hard-Auto judgments
    (:mod:`evalsift.io.arena_hard`): every game a battle against the baseline, a strong verdict counted
    ``--strong-weight`` times; ``--style-control`` with Arena-Hard's own features from the answers' metadata.
    None for any other data (a ``--strong-weight`` other than 1 is then refused)."""
    from pathlib import Path

    from ..errors import ParameterError
    from ..io.arena_hard import check_strong_weight, looks_arena_hard

    check_strong_weight(args.strong_weight)
    if not looks_arena_hard(Path(args.data).expanduser()):
        if args.strong_weight != 1:
            raise ParameterError(f"--strong-weight {args.strong_weight}: {args.data} records no verdict strength "
                                 "(only Arena-Hard-Auto's judgments do: A>>B vs A>B); leave --strong-weight out",
                                 field="strong_weight")
        return None
    from ..arena.hard import arena_hard_battles, arena_hard_covariates  # here: it imports scipy.stats (a second)
    from ..io.pairwise import read_verdicts

    if args.outputs is not None:
        raise ParameterError("--outputs: Arena-Hard-Auto's answers are read from model_answer/ beside model_judgment/ "
                             "(their metadata counts); leave --outputs out", field="outputs")
    data = read_verdicts(args.data, games="separate", verdicts_from=args.verdicts_from,
                         strong_weight=args.strong_weight)
    battles = arena_hard_battles(data, by=args.by, judges=judges)
    if args.strong_weight > 1:
        notes.append(f"--strong-weight {args.strong_weight}: the board's intervals and rank-sets count a strong "
                     "verdict's copies as separate battles, as Arena-Hard's bootstrap does, so they are too narrow by "
                     f"up to sqrt({args.strong_weight}); the Arena-Hard score intervals are clustered by question")
    if args.style_control is None:
        return battles, None, None
    from ..arena.style import parse_style

    features = parse_style(args.style_control)
    if args.ties == "davidson":
        raise ParameterError("--style-control fits the Bradley-Terry model with a tie as half a win: leave out "
                             "--ties davidson (use --ties half), or leave out --style-control", field="ties")
    from ..arena.hard import style_recipe

    return battles, arena_hard_covariates(battles, features, style_recipe(data)), features


def _arena_hard_scores(battles, style, alpha: float, results) -> dict:
    """Arena-Hard-Auto's scores (win rate against the baseline) beside the board, style-controlled and raw when
    ``style``; added to ``results.json`` as ``arena_hard``."""
    import json
    from collections import Counter

    from ..io._common import write_atomic
    from ..arena.hard import arena_hard_scores

    baseline = battles.models[Counter(battles.a.tolist()).most_common(1)[0][0]]
    out = {"scores": arena_hard_scores(battles, baseline, covariates=style, alpha=alpha)}
    if style is not None:
        out["raw"] = arena_hard_scores(battles, baseline, alpha=alpha)
    d = json.loads(results.read_text(encoding="utf-8"))
    d["arena_hard"] = out
    write_atomic(results, json.dumps(d, indent=2, allow_nan=False) + "\n")
    return out


def _recorded_counts(battles, spec: str, notes: list):
    """``battles`` with the counts a Chatbot Arena export records (``conv_metadata``) for answers without a text
    (:func:`~evalsift.arena.style.with_recorded_counts`), with a note saying how many."""
    from ..arena.style import with_recorded_counts
    from ..io.pairwise import read_judgments

    battles, filled = with_recorded_counts(battles, read_judgments(spec))
    if filled:
        notes.append(f"style counts of {filled} answer(s) without a text from the battle file's conv_metadata "
                     "(sum_assistant_*_tokens: its tokenizer's tokens; header, bold and list counts)")
    return battles
