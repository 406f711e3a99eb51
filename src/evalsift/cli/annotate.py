"""``evalsift serve`` and ``evalsift annotate new | add-annotator | revoke | rotate-token | rotate-admin |
revoke-admin | status | export``: people judging."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path

from ..errors import DataError, ParameterError
from ._common import (add_encoder, add_judge_opts, add_proxy_opts, add_quiet, add_sampling_opts, build_oracle,
                      load_data, note, open_unit, out_file, pair_only,
                      picked_pair, picked_positions, pool_from_picks, positive_float, positive_int, print_json,
                      proxy_judges, proxy_spec, resolve_encoder, seed_int)


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default="evalsift.db", metavar="PATH", help="the workspace's SQLite store")


def _scale(text: str) -> tuple[float, float]:
    lo, sep, hi = text.partition("-") if not text.startswith("-") else ("", "", "")
    try:
        out = (float(lo), float(hi)) if sep else None
    except ValueError:
        out = None
    if out is None or not out[0] < out[1]:
        raise argparse.ArgumentTypeError(f"expected LOW-HIGH such as 0-100 or 1-5, got {text!r}")
    return out


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port from 1 to 65535, got {text!r}")
    return value


def _text_file(text: str) -> str:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file; give a text or Markdown file with the guidelines")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise argparse.ArgumentTypeError(f"cannot read {text} as UTF-8 text ({e})") from None


def _admin_url(base: str, project: str, token: str) -> str:
    """The admin page's link: the token after '#', which the browser never sends anywhere."""
    from urllib.parse import quote

    return f"{base.rstrip('/')}/admin/{quote(str(project), safe='')}#token={token}"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``serve`` and ``annotate``."""
    s = sub.add_parser("serve", help="the local annotation app (people judge in the browser)")
    _add_db(s)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (anything but loopback is warned about)")
    s.add_argument("--port", type=_port, default=8000, help="TCP port (1-65535)")
    add_quiet(s)
    s.set_defaults(handler=cmd_serve)

    an = sub.add_parser("annotate", help="annotation projects: create, add annotators, status, export")
    add_quiet(an)
    asub = an.add_subparsers(dest="annotate_cmd", required=True,
                             metavar="{new,add-annotator,unpause,revoke,rotate-token,rotate-admin,revoke-admin,status,export}")

    new = asub.add_parser("new", help="a new project: a live pairwise decision, or a fixed selection")
    _add_db(new)
    new.add_argument("--name", required=True, help="project name (unique in the store)")
    how = new.add_mutually_exclusive_group(required=True)
    how.add_argument("--pairwise", action="store_true",
                     help="a live pairwise project: a Session picks the items until it decides (needs --data, --a, --b)")
    how.add_argument("--arena", action="store_true",
                     help="an arena: blind battles among --systems (default all, 3 or more) over the prompts of --data; "
                          "a rule picks each next battle and the admin page shows the live leaderboard (--stop, "
                          "--alpha, --allocation, --first, --max-labels; judges' verdicts on every battle with --proxy)")
    how.add_argument("--from", dest="picks", metavar="FILE",
                     help="a fixed selection: the picks.jsonl of 'evalsift select' (needs --mode; the outputs and the "
                          "pair come from the file unless --data, --a, --b say otherwise)")
    new.add_argument("--data", metavar="SPEC", help="the dataset the items and outputs come from (with --from: optional)")
    new.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    new.add_argument("--a", metavar="SYS", help="first system (pairwise)")
    new.add_argument("--b", metavar="SYS", help="second system (pairwise)")
    new.add_argument("--mode", choices=["pairwise", "score"], help="with --from: compare --a and --b, or score systems")
    new.add_argument("--systems", metavar="A,B,...",
                     help="with --mode score: the systems to score; with --arena: the systems to rank (default: all)")
    new.add_argument("--scale", type=_scale, default=(0.0, 100.0), metavar="LOW-HIGH", help="score scale, e.g. 1-5")
    new.add_argument("--method", default="random",
                     help="with --pairwise: the selector (diffuse needs --risk-rule paper, a heuristic)")
    new.add_argument("--risk", type=open_unit, default=0.2, help="with --pairwise: stop once the risk is at or below this")
    new.add_argument("--min-labels", type=positive_int, default=5, help="with --pairwise: first decision set size")
    new.add_argument("--max-labels", type=positive_int, default=None,
                     help="with --pairwise: cap on items asked about (default 200); with --arena: cap on human "
                          "battles (default 1000)")
    new.add_argument("--risk-rule", default="anytime", choices=["anytime", "paper", "tie_aware"],
                     help="with --pairwise: the stop rule (anytime: valid, needs method random; paper, tie_aware: "
                          "the DiffUse paper's heuristic)")
    new.add_argument("--seed", type=seed_int, default=0, help="random seed")
    ar = new.add_argument_group("arena (with --arena)")
    ar.add_argument("--stop", metavar="RULE",
                    help="the question: top-k:K (the K best singled out) or rank-set:S (every rank-set spans at most S "
                         "ranks); default top-k:1")
    ar.add_argument("--alpha", type=open_unit,
                    help="the answer is wrong with probability at most this (over all the stop rule's looks); the live "
                         "intervals and rank-sets are 1 - alpha (default 0.1)")
    ar.add_argument("--allocation", choices=["active", "uniform", "neyman"],
                    help="how the next battle is picked: active (Chatbot Arena's rule, the default), uniform, or neyman "
                         "(strata by pair and by what the --proxy judges said; more battles where people disagree with "
                         "the judges and where a comparison is close to being settled)")
    ar.add_argument("--first", type=positive_int,
                    help="the stop rule looks after this many human battles (default 50), then twice as many, ... up "
                         "to --max-labels")
    ar.add_argument("--blind-after-vote", action="store_true", default=None,
                    help="keep the models hidden after each vote too (by default, as in Chatbot Arena, a person sees "
                         "which two models they judged once the vote is stored)")
    add_proxy_opts(new)
    add_sampling_opts(new)
    add_judge_opts(new, db=False, title="LLM judge of a judge:llm:MODEL proxy (its answers are cached in --db)")
    add_encoder(new)
    new.add_argument("--overlap", type=positive_int, default=1, help="judgments per item, from different people")
    new.add_argument("--lease-seconds", type=positive_float, default=600.0,
                     help="how long an item stays with one annotator before it goes back to the queue")
    new.add_argument("--guidelines", type=_text_file, metavar="FILE",
                     help="a text or Markdown file shown to annotators on their page (as plain text)")
    qc = new.add_argument_group("quality control (pairwise projects)")
    qc.add_argument("--gold", metavar="FILE",
                    help="gold items: a JSONL file of items with their two outputs (as --from reads them) and "
                         "'answer' (--a's name, --b's name or tie), mixed into each person's queue, indistinguishable "
                         "on the page; their answers are never verdicts")
    qc.add_argument("--gold-rate", type=open_unit, default=None, metavar="R",
                    help="with --gold: the share of requests that get a gold item (default 0.2)")
    qc.add_argument("--min-gold-accuracy", type=open_unit, default=None, metavar="A",
                    help="with --gold: flag a person once the 95%% anytime upper bound on their gold accuracy falls "
                         "below A: their queue is paused and their verdicts leave the decision (kept in the store; "
                         "'annotate unpause' lifts it)")
    qc.add_argument("--adjudicate", choices=["split"], default=None,
                    help="split: an item whose --overlap people do not all agree goes to the adjudicators' queue "
                         "(add-annotator --role adjudicator); the adjudicator's verdict is what counts for it")
    new.add_argument("--url", default="http://127.0.0.1:8000", help="the server's address, for the printed admin link")
    new.add_argument("--json", action="store_true", help='print {"project": ID, "admin_token": ..., "admin_url": ...}')
    add_quiet(new)
    new.set_defaults(handler=cmd_new)

    _person_command(asub, "add-annotator", "add a person; prints their link", cmd_add_annotator,
                    "the annotator's name (unique in the project)",
                    '{"annotator": ID, "token": ..., "url": ..., "project": ID, "project_name": ...}')
    _person_command(asub, "unpause", "resume a person the gold rule paused: their queue opens and their verdicts count "
                    "again", cmd_unpause, "the annotator's name")
    _person_command(asub, "revoke", "revoke a person's link: it stops working, their open items go back", cmd_revoke,
                    "the annotator's name")
    _person_command(asub, "rotate-token", "give a person a new link (the old one stops working)", cmd_rotate,
                    "the annotator's name", '{"token": ..., "url": ...}')
    for name, help, handler in (
            ("rotate-admin", "a new admin token and link; the old token and signed-in admin pages stop working at once",
             cmd_rotate_admin),
            ("revoke-admin", "revoke the admin token: it and signed-in admin pages stop working at once (rotate-admin "
                             "makes a new one)", cmd_revoke_admin)):
        ad = asub.add_parser(name, help=help)
        _add_db(ad)
        ad.add_argument("--project", required=True, metavar="ID", help="project id or name")
        if handler is cmd_rotate_admin:
            ad.add_argument("--url", default="http://127.0.0.1:8000", help="the server's address, for the printed link")
            ad.add_argument("--json", action="store_true", help='print {"project": ID, "admin_token": ..., "admin_url": ...}')
        add_quiet(ad)
        ad.set_defaults(handler=handler)

    st = asub.add_parser("status", help="progress, the live decision, agreement")
    _add_db(st)
    st.add_argument("--project", required=True, metavar="ID", help="project id or name")
    st.add_argument("--json", action="store_true", help="print JSON")
    add_quiet(st)
    st.set_defaults(handler=cmd_status)

    ex = asub.add_parser("export", help="the judgments as JSONL, or scores as a dataset evalsift rank reads")
    _add_db(ex)
    ex.add_argument("--project", required=True, metavar="ID", help="project id or name")
    ex.add_argument("--out", required=True, metavar="FILE",
                    help="judgments.jsonl (our records); for score projects also .csv/.tsv/.parquet (a long table) "
                         "or --format s2e")
    ex.add_argument("--format", choices=["judgments", "pairwise", "arena", "table", "s2e"], default="judgments",
                    help="judgments: our JSONL records; pairwise: a pairwise table (.csv/.tsv/.jsonl) that "
                         "--oracle judgments:FILE replays; arena: an arena project's human battles as a Chatbot Arena "
                         "battle file (battle_id, model_a, model_b, winner: model_a, model_b, tie or tie (bothbad); "
                         ".jsonl/.csv/.tsv) that 'evalsift arena --data' reads; table / s2e: the mean score per item "
                         "and system as the human metric 'human'")
    add_quiet(ex)
    ex.set_defaults(handler=cmd_export)


def _person_command(asub, name: str, help: str, handler, name_help: str, json_help: str | None = None) -> None:
    """A sub-command about one annotator of a project (``--db --project --name``; a link printed with ``--url``
    when ``json_help`` says what ``--json`` prints)."""
    p = asub.add_parser(name, help=help)
    _add_db(p)
    p.add_argument("--project", required=True, metavar="ID", help="project id or name")
    p.add_argument("--name", required=True, help=name_help)
    if handler is cmd_add_annotator:
        p.add_argument("--role", choices=["annotator", "adjudicator"], default="annotator",
                       help="annotator (judges the queue) or adjudicator (judges the items --adjudicate sends to the "
                            "adjudicators' queue; their verdict counts for those items)")
    if json_help is not None:
        p.add_argument("--url", default="http://127.0.0.1:8000", help="the server's address, for the printed link")
        p.add_argument("--json", action="store_true", help=f"print {json_help}")
    add_quiet(p)
    p.set_defaults(handler=handler)


def _store(args: argparse.Namespace, must_exist: bool = True, read_only: bool = False):
    from ..store import Store

    if must_exist and not Path(args.db).exists():
        raise DataError(f"--db {args.db} does not exist; create a project first with 'evalsift annotate new --db "
                        f"{args.db} ...'", field="db")
    return Store(args.db, read_only=read_only)


def cmd_serve(args: argparse.Namespace) -> int:
    """``evalsift serve``."""
    from ..web import serve
    from ..web.app import check_port_free

    store = _store(args)
    check_port_free(args.host, args.port)
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback:
        note(f"listening on {args.host}: other machines can reach this server; the tokens in the links are all that "
             "protects it")
    projects = store.projects()
    print(f"evalsift annotation server on http://{args.host}:{args.port} ({len(projects)} project(s) in {args.db}); "
          "Ctrl+C stops it", file=sys.stderr)
    serve(args.db, args.host, args.port)
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    """``evalsift annotate new``: the project, its items and its queue in one transaction; nothing is
    written (no file left behind) when anything about it is wrong."""
    db = Path(args.db)
    existed = db.exists()
    try:
        pid, token = _create(args)
    except BaseException:
        if not existed and not _cached_answers(db):  # a failed first project leaves no empty store behind
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
        raise
    admin = _admin_url(args.url, args.name, token)
    if args.json:
        print_json({"project": pid, "admin_token": token, "admin_url": admin})
    else:
        print(f"project {pid} ({args.name}) in {args.db}")
        print(f"admin token (shown once): {token}")
        print(f"admin page: {admin}  (after 'evalsift serve --db {args.db}'; the token after # stays in your "
              "browser)")
    return 0


def _create(args: argparse.Namespace) -> tuple[int, str]:
    from ..select import build_selector
    from ..web import Workspace

    if args.arena:
        if args.sampling != "uniform":
            raise ParameterError(f"--design {args.sampling} is a live pairwise project's; an arena picks its battles "
                                 "by --allocation (active, uniform, neyman)", field="sampling")
        return _create_arena(args)
    for opt in ("stop", "alpha", "allocation", "first", "blind_after_vote"):
        if getattr(args, opt) is not None:
            raise ParameterError(f"--{opt.replace('_', '-')} is an arena setting: use it with --arena", field=opt)
    if args.pairwise:
        if not args.data:
            raise ParameterError("annotate new --pairwise needs --data SPEC: the dataset with the items and outputs "
                                 "to show", field="data")
        if not (args.a and args.b):
            raise ParameterError("--pairwise compares two systems: give --a SYS --b SYS", field="a")
        pool = load_data(args)
        data, proxy, spec = pair_only(pool, args.a, args.b), None, proxy_spec(args)
        if spec is not None:  # computed once here (a judge asked about every item); the project stores the values
            from ..proxy import restrict_to_proxy

            by_proxy, proxy = restrict_to_proxy(data, args.a, args.b, spec, oracle=proxy_judges(args),
                                                covariates=args.covariates or ())
            if by_proxy.dropped:
                note(f"proxy: {by_proxy.note()}")
            data = by_proxy.pool
        sel = build_selector(args.method, args.seed, {"encoder": resolve_encoder(args, pool)})
        quality = _quality_args(args, args.a, args.b)
        work = Workspace(_store(args, must_exist=False))
        return work.create_live_pairwise(args.name, data, args.a, args.b, sel, risk=args.risk,
                                         min_labels=args.min_labels, max_labels=args.max_labels or 200,
                                         risk_rule=args.risk_rule, overlap=args.overlap,
                                         lease_seconds=args.lease_seconds, data={"spec": args.data},
                                         guidelines=args.guidelines, proxy=proxy, sampling=args.sampling,
                                         explore=args.explore, **quality)
    if args.sampling != "uniform":
        raise ParameterError(f"--design {args.sampling} draws a live pairwise project's items: use it with --pairwise "
                             "and --proxy (an arena's is --allocation)", field="sampling")
    if proxy_spec(args) is not None:
        raise ParameterError("--proxy sharpens a live decision: use it with --pairwise (a fixed selection has "
                             "nothing to decide)", field="proxy")
    if not args.mode:
        raise ParameterError("--from needs --mode pairwise (compare two systems) or --mode score", field="mode")
    if args.data:
        pool = load_data(args)
        sub = pool.subset(picked_positions(args.picks, pool, args.data))
        data = {"spec": args.data, "picks": args.picks}
    else:
        sub = pool_from_picks(args.picks)
        data = {"picks": args.picks}
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    a, b = args.a, args.b
    if args.mode == "pairwise":
        if not (a and b):
            a, b = picked_pair(args.picks) if not (a or b) else (a, b)
        if not (a and b):
            raise ParameterError(f"--mode pairwise compares two systems and {args.picks} names no pair; give --a SYS "
                                 f"--b SYS (systems: {', '.join(sub.systems)})", field="a")
        sub = pair_only(sub, a, b)
    quality = _quality_args(args, a, b) if args.mode == "pairwise" else _quality_args(args, None, None)
    work = Workspace(_store(args, must_exist=False))
    return work.create_fixed(args.name, sub, mode=args.mode, a=a, b=b, systems=systems, scale=args.scale,
                             overlap=args.overlap, lease_seconds=args.lease_seconds, data=data,
                             guidelines=args.guidelines, **quality)


def _quality_args(args: argparse.Namespace, a: str | None, b: str | None) -> dict:
    """The gold and adjudication options of ``annotate new`` for the Workspace (the gold file read and checked)."""
    from ..web.quality import DEFAULT_GOLD_RATE, read_gold_file

    if args.gold is None:
        for opt in ("gold_rate", "min_gold_accuracy"):
            if getattr(args, opt) is not None:
                raise ParameterError(f"--{opt.replace('_', '-')} needs --gold FILE (the items with known answers)",
                                     field=opt)
        return {"adjudicate": args.adjudicate} if args.adjudicate else {}
    if a is None or b is None:
        raise ParameterError("--gold items are supported on pairwise projects (a verdict is right or wrong); a score "
                             "project has no known answer to compare a score with", field="gold")
    return {"gold": read_gold_file(args.gold, a, b), "gold_rate": args.gold_rate or DEFAULT_GOLD_RATE,
            "min_gold_accuracy": args.min_gold_accuracy, "adjudicate": args.adjudicate}


def _create_arena(args: argparse.Namespace) -> tuple[int, str]:
    """``annotate new --arena``: the project over the prompts of ``--data``; each ``--proxy`` judges every
    battle first (an LLM through the judge client, its answers cached in ``--db``; a metric; recorded
    judgments), and its verdicts are stored with the project."""
    from ..web import Workspace

    if not args.data:
        raise ParameterError("annotate new --arena needs --data SPEC: the prompts and the systems' outputs",
                             field="data")
    if args.a or args.b:
        raise ParameterError("--arena ranks several systems: name them with --systems A,B,C (not --a/--b)", field="a")
    if args.gold or args.adjudicate or args.min_gold_accuracy is not None:
        raise ParameterError("--gold, --min-gold-accuracy and --adjudicate are for pairwise projects (--pairwise, or "
                             "--from with --mode pairwise), not an arena", field="gold")
    if args.covariates:
        raise ParameterError("--covariates belong to a pairwise proxy's calibration; an arena's judges are combined "
                             "by PPI++ without them", field="covariates")
    pool = load_data(args)
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else list(pool.systems)
    judges = {}
    for spec in dict.fromkeys(args.proxy or ()):
        kind, _, rest = spec.partition(":")
        if kind not in ("judge", "metric") or not rest:
            raise ParameterError(f"--proxy {spec!r}: an arena's judge is judge:SPEC (judge:llm:MODEL, "
                                 "judge:judgments:FILE) or metric:NAME", field="proxy")
        oracle = build_oracle(args, rest if kind == "judge" else spec)
        verdicts = []
        for i, a in enumerate(systems):
            for b in systems[i + 1:]:
                verdicts += oracle.judge_pairs(pool, range(pool.n_items), a, b)
        judges[spec] = verdicts
        done = sum(j.status == "done" for j in verdicts)
        note(f"judge {spec}: {done} verdicts on {len(verdicts)} battles")
    work = Workspace(_store(args, must_exist=False))
    return work.create_arena(args.name, pool, systems, alpha=args.alpha or 0.1, stop=args.stop or "top-k:1",
                             first=args.first or 50, max_battles=args.max_labels or 1000,
                             allocation=args.allocation or "active", overlap=args.overlap,
                             lease_seconds=args.lease_seconds, seed=args.seed, judges=judges,
                             data={"spec": args.data}, guidelines=args.guidelines,
                             blind_after_vote=bool(args.blind_after_vote))


def _cached_answers(db: Path) -> int:
    """How many LLM answers ``db`` caches (a judge:llm proxy's, paid for: never deleted with a failed project)."""
    import sqlite3
    from contextlib import closing

    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0])
    except sqlite3.Error:
        return 0


def cmd_add_annotator(args: argparse.Namespace) -> int:
    """``evalsift annotate add-annotator``."""
    store = _store(args)
    project = store.project(args.project)
    aid, token = store.add_annotator(project.id, args.name, role=args.role)
    url = f"{args.url.rstrip('/')}/a/{token}"
    if args.json:
        print_json({"annotator": aid, "token": token, "url": url, "project": project.id,
                    "project_name": project.name})
    else:
        print(f"{args.name} in project {project.id} ({project.name}): {url}")
    return 0


def cmd_unpause(args: argparse.Namespace) -> int:
    """``evalsift annotate unpause``: the admin's answer to a gold-rule flag."""
    store = _store(args)
    project = store.project(args.project)
    if store.unpause_annotator(project.id, args.name) is None:
        print(f"{args.name} is not paused in project {project.name!r}: nothing changed")
        return 0
    print(f"{args.name} may work again in project {project.name!r}, and their verdicts count in the decision again "
          "(the gold rule will not flag them a second time)")
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    """``evalsift annotate revoke``."""
    store = _store(args)
    project = store.project(args.project)
    freed = store.revoke_annotator(project.id, args.name)
    print(f"{args.name}'s link no longer works in project {project.name!r}; {freed} open item(s) went back to the "
          f"queue; their judgments stay (a new link: evalsift annotate rotate-token --project {project.name} --name "
          f"{args.name})")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    """``evalsift annotate rotate-token``."""
    store = _store(args)
    project = store.project(args.project)
    token = store.rotate_token(project.id, args.name)
    url = f"{args.url.rstrip('/')}/a/{token}"
    if args.json:
        print_json({"token": token, "url": url})
    else:
        print(f"{args.name}: {url}  (the old link no longer works)")
    return 0


def cmd_rotate_admin(args: argparse.Namespace) -> int:
    """``evalsift annotate rotate-admin``: a new admin token; the old one, and every admin page signed in with
    it, stop working at once (also in a server already running on the file)."""
    store = _store(args)
    project = store.project(args.project)
    token = store.rotate_admin(project.id)
    admin = _admin_url(args.url, project.name, token)
    if args.json:
        print_json({"project": project.id, "admin_token": token, "admin_url": admin})
    else:
        print(f"project {project.id} ({project.name}): new admin token (shown once): {token}")
        print(f"admin page: {admin}  (the old token and the admin pages signed in with it no longer work)")
    return 0


def cmd_revoke_admin(args: argparse.Namespace) -> int:
    """``evalsift annotate revoke-admin``."""
    store = _store(args)
    project = store.project(args.project)
    store.revoke_admin(project.id)
    print(f"project {project.id} ({project.name}): the admin token no longer works, nor any admin page signed in "
          f"with it (the status API answers 403); a new one: evalsift annotate rotate-admin --db {args.db} "
          f"--project {project.name}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """``evalsift annotate status``."""
    from ..web import Workspace

    store = _store(args, read_only=True)
    status = Workspace(store).status(store.project(args.project).id)
    if args.json:
        print_json(status)
        return 0
    p = status["project"]
    kind = f"arena of {len(status['arena']['systems'])} systems" if status.get("arena") else f"{p['kind']}, {p['mode']}"
    print(f"project {p['id']} ({p['name']}): {kind}; {status['items']} items; annotators: "
          f"{', '.join(status['annotators']) or 'none'}")
    extra = status["judgments"].get("extra", 0)
    print(f"judgments: {status['judgments']['done']} done, {status['judgments']['skipped']} skipped; "
          f"open leases {status['open_leases']}" + (f"; {extra} late answer(s) past the overlap, stored and not "
                                                   "counted" if extra else ""))
    g = status.get("gold")
    if g:
        print(_gold_lines(g))
    adj = status.get("adjudication")
    if adj:
        print(f"adjudication ({adj['rule']}): {adj['disputed']} disputed item(s), {adj['adjudicated']} adjudicated; "
              f"adjudicators: {', '.join(adj['adjudicators']) or 'none yet (add-annotator --role adjudicator)'}")
    ar = status.get("arena")
    if ar:
        print(_arena_lines(ar))
    d = status.get("decision")
    if d:
        head = (f"decided: {d['winner']} wins" if d["decided"] and d["winner"] else
                "decided: inconclusive" if d["decided"] else
                (f"leader {d['leader']}, at least {d['more_needed_at_least']} more needed" if d["more_needed_at_least"]
                 else f"leader {d['leader']}, more needed") if d["leader"] else "no leader yet")
        print(f"{head}; {status['settings']['a']} {d['wins_a']} - {d['wins_b']} {status['settings']['b']} "
              f"({d['ties']} ties); risk {d['risk']:.4f} (stop at {d['risk_threshold']}; {d['note']})")
        if d.get("proxy"):
            print(f"proxy: {d['proxy']} (calibrated on the verdicts seen; the guarantee does not rest on it)")
        if d.get("sampling") not in (None, "uniform"):
            print(f"design: {d['sampling']} (items drawn from the verdicts seen, each verdict weighted by the "
                  "inverse of the probability its draw was made with; a person with nothing open gets a draw made "
                  f"ahead of the decision: {d.get('drawn_ahead', 0)} drawn ahead now)")
    ag = status.get("agreement") or {}
    if ag.get("n_items_multi"):
        def num(x):
            return "-" if x is None or x != x else f"{x:.3f}"

        print(f"agreement over {ag['n_items_multi']} item(s) judged by 2+ people: " + _agreement_text(ag, num))
    else:
        print("agreement: no item has been judged by 2 or more people yet")
    return 0


def _gold_lines(g: dict) -> str:
    """The gold items' part of ``annotate status``: each person's accuracy with its anytime interval, the rule."""
    lines = [f"gold items: {g['items']} (served on {g['rate']:g} of requests); {g['answers']} gold answer(s), never "
             f"counted as verdicts; {g['correct_means']}",
             f"rule: {g['rule']}; confidence level {100 * g['level']:g}% per end, valid at every answer "
             f"(a betting confidence sequence over the gold set); assumption: {g['assumption']}"]
    for p in g["annotators"]:
        state = (" -- FLAGGED: paused, verdicts excluded from the decision (annotate unpause lifts it)" if p["excluded"]
                 else " -- flagged, unpaused by the admin" if p["unpaused"] else "")
        lines.append(f"  {p['name']}: {p['text']}{state}")
    return "\n".join(lines)


def _agreement_text(ag: dict, num) -> str:
    """The agreement statistics of a status, each with the level of measurement it uses (``levels``): on
    continuous scores the interval-level ones only."""
    lv = ag.get("levels") or {}
    parts = []
    if "mean_abs_diff" in lv:
        mad = ag["mean_abs_diff"]
        width = f" on a scale {mad['scale_width']:g} wide" if mad.get("scale_width") else ""
        parts.append(f"mean absolute difference {num(mad.get('value'))}{width} ({lv['mean_abs_diff']})")
    if "percent_agreement" in lv:
        parts.append(f"{num(ag.get('percent_agreement'))}% agree ({lv['percent_agreement']})")
    parts.append(f"Cohen's kappa, mean over pairs {num((ag.get('cohen') or {}).get('mean'))} ({lv.get('cohen', '')})")
    if "fleiss" in lv:
        parts.append(f"Fleiss' kappa {num((ag.get('fleiss') or {}).get('kappa'))} ({lv['fleiss']})")
    parts.append(f"Krippendorff's alpha {num((ag.get('krippendorff') or {}).get('alpha'))} "
                 f"({lv.get('krippendorff', '')})")
    if ag.get("scores") == "continuous":
        parts.append("continuous scores: exact-match and nominal statistics left out")
    return "; ".join(parts)


def _arena_lines(ar: dict) -> str:
    """An arena project's live leaderboard as text."""
    stop = ar["stop"]
    head = (ar["answer"] if ar["answered"] else
            f"closed, {stop['rule']} not settled: {ar['closed']} ({ar['human_battles']} human battles)" if ar["decided"] else
            f"open: {ar['human_battles']} of at most {ar['max_battles']} human battles; {stop['rule']} not settled yet "
            f"(looks at {', '.join(map(str, stop['planned_looks']))})")
    weights = ar.get("judge_weights") or {}
    why = [] if ar["answered"] or not ar.get("explanation") else [f"why: {ar['explanation']}"]
    shown = ("after each vote the person sees the two models" if ar.get("reveal_after_vote", True)
             else "the models stay hidden after the vote (--blind-after-vote)")
    if ar.get("reveal_after_vote", True) and "votes_withheld" in ar:  # withheld where the outputs may come back
        shown += (f", unless they may be shown those outputs again ({ar['votes_revealed']} named, "
                  f"{ar['votes_withheld']} withheld)")
    lines = [head, *why, f"allocation: {ar['allocation']}" + (f" ({ar['strata']})" if ar.get("strata") else ""),
             f"reveal: {shown}", f"both are bad: {ar.get('bothbad', 0)} of {ar['human_battles']} human battles (ties)",
             "judges: " + (", ".join(f"{k} (weight {weights[k]:.2f})" if k in weights else k for k in ar["judges"])
                           or "none")]
    if not ar["models"]:
        lines.append(f"leaderboard: not yet ({ar.get('reason', '')})")
    else:
        width = max(len("system"), *(len(m["name"]) for m in ar["models"]))
        at_look = f"at {stop['explanation']['look_level']}"  # the rank-sets the stop's looks read
        lines.append(f"{'rank':>4}  {'system':<{width}}  {'score':>7}  {'interval':>17}  rank-set  {at_look}  battles")
        for m in ar["models"]:
            look = f"{m['look_rank_set'][0]}-{m['look_rank_set'][1]}"
            lines.append(f"{m['rank']:>4}  {m['name']:<{width}}  {m['score']:>7.1f}  [{m['interval'][0]:>7.1f}, "
                         f"{m['interval'][1]:>7.1f}]  {m['rank_set'][0]}-{m['rank_set'][1]:<6}  {look:<{len(at_look)}}  "
                         f"{m['human_battles']}")
        lines.append(ar["coverage"])
    lines.append(f"guarantee: {stop['guarantee']}; assumption: {ar['assumption']}")
    return "\n".join(lines)


def cmd_export(args: argparse.Namespace) -> int:
    """``evalsift annotate export`` (reads the store read-only)."""
    store = _store(args, read_only=True)
    project = store.project(args.project)
    out = out_file(args.out)
    if args.format == "arena":
        if not project.settings.get("arena"):
            raise ParameterError(f"--format arena writes an arena's battles, and project {project.name!r} is not an "
                                 "arena; use --format pairwise or judgments", field="format")
        from ..web.replay import write_project_file

        n = write_arena_battles(store, project.id, out)
        pf = write_project_file(store, project.id, out)
        print(f"wrote {n} human battles to {out} (a Chatbot Arena battle file: model_a was shown first), and the "
              f"project's prompts, settings and judges to {pf}; replay the admin page's live board with: evalsift "
              f"arena --data {out} --out DIR", file=sys.stderr)
        return 0
    if args.format in ("judgments", "pairwise") and project.kind == "pairwise":
        from ..web.replay import write_project_file

        if args.format == "judgments":
            n = store.export_jsonl(project.id, out)
        else:
            n = write_pairwise_table(store, project.id, out)
        pf = write_project_file(store, project.id, out)
        what = "judgments (undone ones marked)" if args.format == "judgments" else "verdicts"
        print(f"wrote {n} {what} to {out}, and what they decide about to {pf} (the pool of "
              f"{store.item_count(project.id)} items, the pair, the risk rule and risk)", file=sys.stderr)
        if project.settings.get("arena"):  # the live board replays from the battles with their draw probabilities
            print(f"replay the admin page's live board with: evalsift arena --data {out} --out DIR" if args.format ==
                  "judgments" else "a pairwise table keeps no draw probabilities, so 'evalsift arena' refuses it: "
                  "export with --format arena or judgments to replay the live board", file=sys.stderr)
        elif project.mode == "live":
            a, b = project.settings["a"], project.settings["b"]
            print(f"replay the admin page's decision with: evalsift compare --data {out} --a {a} --b {b} "
                  f"--oracle judgments:{out}", file=sys.stderr)
        else:
            print(f"replay them with --oracle judgments:{out}", file=sys.stderr)
        return 0
    if args.format == "judgments":
        n = store.export_jsonl(project.id, out)
        print(f"wrote {n} judgments to {out}", file=sys.stderr)
        return 0
    if args.format == "pairwise":
        raise ParameterError(f"--format pairwise writes verdicts, and project {project.name!r} holds scores; use "
                             "--format table or s2e", field="format")
    if project.kind != "score":
        raise ParameterError(f"--format {args.format} writes scores, and project {project.name!r} holds pairwise "
                             "verdicts; use --format pairwise or judgments", field="format")
    from ..io import write_s2e_jsonl, write_table

    pool, counts = scores_pool(store, project.id)
    if counts == 0:
        raise DataError(f"project {project.name!r} has no scores yet, so there is nothing to rank; export its judgments "
                        "with --format judgments, or wait for people to score", field="project")
    if args.format == "s2e":
        write_s2e_jsonl(pool, out)
    else:
        write_table(pool, out, spreadsheet_safe=True)
    print(f"wrote {pool.n_items} items x {pool.n_systems} systems ({counts} scores; metric 'human' = the mean over "
          f"annotators) to {out}", file=sys.stderr)
    return 0


def write_pairwise_table(store, project_id: int, path: Path) -> int:
    """The project's finished verdicts as a pairwise table (``item_id, system_a, system_b, verdict,
    annotator, input, output_a, output_b, shown_order, comment, counted, excluded, adjudicated``); CSV, TSV or
    JSONL by suffix. ``counted`` is false for a late answer past its item's overlap and for the verdicts of a
    person the gold rule flagged (``excluded``; stored, never counted by the decision); ``adjudicated`` marks an
    adjudicator's verdict, the one that counts for its disputed item. Gold answers are never in it.
    CSV/TSV text cells that a spreadsheet would run as formulas start with ``'``."""
    from ..store import OverlapCount

    items = {r["item_id"]: r for r in store.items(project_id)}
    rows = []
    count = OverlapCount(int(store.project(project_id).settings.get("overlap", 1)))
    excluded = store.excluded(project_id)
    for j in store.judgments(project_id):
        counted = j.annotator not in excluded and count.counts(j)
        if j.status != "done" or j.is_score:
            continue
        it = items.get(j.item_id, {"input": None, "outputs": {}})
        rows.append({"item_id": j.item_id, "system_a": j.a, "system_b": j.b, "verdict": j.verdict,
                     "annotator": j.annotator, "input": it["input"], "output_a": it["outputs"].get(j.a),
                     "output_b": it["outputs"].get(j.b), "shown_order": j.shown_order,
                     "comment": j.detail.get("comment", ""), "counted": counted,
                     "excluded": j.annotator in excluded, "adjudicated": j.kind == "adjudicator"})
    _write_rows(path, rows, ["item_id", "system_a", "system_b", "verdict", "annotator", "input", "output_a",
                             "output_b", "shown_order", "comment", "counted", "excluded", "adjudicated"],
                "a pairwise table is .csv, .tsv or .jsonl")
    return len(rows)


def _write_rows(path: Path, rows: list[dict], fields: list[str], formats: str) -> None:
    """``rows`` as JSONL (every key), or as CSV / TSV by suffix (``fields`` only; text cells a spreadsheet
    would run start with ``'``); another suffix is a ParameterError saying ``formats``."""
    import csv
    import json

    from ..io._common import atomic_file, spreadsheet_cell

    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        with atomic_file(path) as f:  # whole or not at all
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    elif suffix in (".csv", ".tsv", ".tab"):
        with atomic_file(path, newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, delimiter="," if suffix == ".csv" else "\t")
            w.writeheader()
            w.writerows({k: "" if r.get(k) is None else spreadsheet_cell(r[k]) for k in fields} for r in rows)
    else:
        raise ParameterError(f"--out {path}: {formats}", field="out")


def write_arena_battles(store, project_id: int, path: Path) -> int:
    """An arena project's human battles that stand as a Chatbot Arena battle file: ``battle_id`` (the
    judgment's store id), ``question_id`` (the prompt), ``model_a`` (shown first), ``model_b``, ``winner``
    (``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``), ``judge`` (the person), ``kind`` (``human``),
    ``prob`` (the draw's probability), ``shown_order`` and ``comment``; in JSONL also ``conversation_a`` /
    ``conversation_b`` (the prompt and each model's answer, as LMSYS's release writes them). CSV or TSV
    by suffix too (without the conversations; text cells a spreadsheet would run start with ``'``).
    :func:`~evalsift.io.judge_files.read_arena` reads it back with every tie a tie and ``tie (bothbad)``
    kept in ``detail["winner"]``. A late answer past a battle's overlap (``counted: false`` in the judgments
    export) is left out, as the live board leaves it out."""
    from ..store import OverlapCount
    from ..web.arena import JUDGE_KIND

    items = {r["item_id"]: r for r in store.items(project_id)}
    rows = []
    count = OverlapCount(int(store.project(project_id).settings.get("overlap", 1)))
    for jid, j in store.judgments_with_ids(project_id):
        if not count.counts(j):  # a late answer past the battle's overlap is not a battle of the board
            continue
        if j.kind == JUDGE_KIND or j.status != "done" or j.verdict not in ("a", "b", "tie"):
            continue
        first, second = (j.a, j.b) if j.shown_order != "ba" else (j.b, j.a)
        if j.verdict == "tie":
            winner = "tie (bothbad)" if str((j.detail or {}).get("winner", "")).lower() == "tie (bothbad)" else "tie"
        else:
            winner = "model_a" if (j.a if j.verdict == "a" else j.b) == first else "model_b"
        it = items.get(j.item_id, {"input": None, "outputs": {}})
        row = {"battle_id": jid, "question_id": j.item_id, "model_a": first, "model_b": second, "winner": winner,
               "judge": j.annotator, "kind": "human", "prob": (j.detail or {}).get("prob"),
               "shown_order": "ab", "comment": (j.detail or {}).get("comment", "")}
        if it["input"] is not None:
            row["conversation_a"] = [{"role": "user", "content": it["input"]},
                                     {"role": "assistant", "content": it["outputs"].get(first)}]
            row["conversation_b"] = [{"role": "user", "content": it["input"]},
                                     {"role": "assistant", "content": it["outputs"].get(second)}]
        rows.append(row)
    _write_rows(path, rows, ["battle_id", "question_id", "model_a", "model_b", "winner", "judge", "kind", "prob",
                             "shown_order", "comment"], "an arena battle file is .jsonl, .csv or .tsv")
    return len(rows)


def scores_pool(store, project_id: int):
    """The project's items as a Pool whose metric ``human`` is each (item, system)'s mean score
    (latest per annotator; a late score past the overlap is left out, as every count leaves it out), with
    ``n_annotators`` the number of annotators behind it."""
    import numpy as np

    from ..pool import Pool
    from ..store import OverlapCount

    project = store.project(project_id)
    items = store.items(project_id)
    systems = project.settings["systems"]
    latest: dict[tuple[str, str, str], float] = {}
    count = OverlapCount(int(project.settings.get("overlap", 1)))
    for j in store.judgments(project_id):
        if j.is_score:
            key = (j.item_id, j.a, j.annotator)
            if j.status != "done":
                latest.pop(key, None)
            elif count.counts(j):
                latest[key] = j.score
    index = {r["item_id"]: k for k, r in enumerate(items)}
    col = {s: k for k, s in enumerate(systems)}
    sums = np.zeros((len(items), len(systems)))
    n = np.zeros((len(items), len(systems)))
    for (item, system, _), value in latest.items():
        sums[index[item], col[system]] += value
        n[index[item], col[system]] += 1
    mean = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
    pool = Pool(item_ids=[r["item_id"] for r in items], inputs=[r["input"] for r in items], systems=systems,
                outputs={s: [r["outputs"].get(s) for r in items] for s in systems},
                scores={"human": mean, "n_annotators": n}, human_metrics=["human"], name=project.name)
    return pool, len(latest)

