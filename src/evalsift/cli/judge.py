"""``evalsift judge``: have a judge (an LLM, usually) judge a selection, resumably."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import ParameterError
from ._common import (ORACLE_HELP, add_data, add_judge_opts, add_quiet, build_oracle, load_data, name_list, note,
                      out_file, picked_positions, positive_int)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``judge``."""
    p = sub.add_parser("judge", help="judge a selection of items (e.g. with an LLM judge); resumes where it stopped")
    add_data(p)
    p.add_argument("--items", required=True, metavar="FILE", help="the picks to judge (JSONL with item_id, e.g. from "
                                                                  "'evalsift select')")
    p.add_argument("--oracle", required=True, metavar="SPEC", help=ORACLE_HELP)
    p.add_argument("--mode", choices=["pairwise", "score"], default="pairwise",
                   help="compare --a with --b, or score each of --systems (an LLM judge's score template)")
    p.add_argument("--a", metavar="SYS", help="first system (pairwise)")
    p.add_argument("--b", metavar="SYS", help="second system (pairwise)")
    p.add_argument("--systems", type=name_list, metavar="A,B,...", help="systems to score (score mode; default all)")
    p.add_argument("--batch", type=positive_int, default=16, help="items sent together; each batch is written at once")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="judgments JSONL; an existing file is continued: items with a verdict are not asked again")
    add_judge_opts(p)
    add_quiet(p)
    p.set_defaults(handler=cmd_judge)


def _done_keys(path: Path) -> set[tuple[str, str, str]]:
    """(item_id, a, b) of the finished judgments already in ``path``."""
    if not path.exists():
        return set()
    from ..io._common import iter_jsonl

    keys = set()
    for _, rec in iter_jsonl(path):
        if isinstance(rec, dict) and rec.get("status") == "done":
            keys.add((str(rec.get("item_id")), str(rec.get("a")), str(rec.get("b", ""))))
    return keys


def cmd_judge(args: argparse.Namespace) -> int:
    """``evalsift judge``."""
    from ..restrict import restrict_pair

    out = out_file(args.out)
    pool = load_data(args)
    wanted = [pool.item_ids[i] for i in picked_positions(args.items, pool, args.data)]
    if args.mode == "pairwise" and not (args.a and args.b):
        raise ParameterError("judge --mode pairwise compares two systems: give --a SYS --b SYS", field="a")
    oracle = build_oracle(args, args.oracle)
    if args.mode == "pairwise":
        r = restrict_pair(pool, args.a, args.b)
        if r.dropped:
            note(r.note())
        work_pool = r.pool
        units = [(iid, args.a, args.b) for iid in dict.fromkeys(wanted) if iid in set(work_pool.item_ids)]
    else:
        if not hasattr(oracle, "judge_score_judgments"):
            raise ParameterError(f"oracle {oracle.name!r} gives no scores; use an LLM judge for --mode score",
                                 field="oracle")
        systems = args.systems or list(pool.systems)
        for s in systems:
            pool.system_index(s)
        work_pool = pool
        units = [(iid, s, "") for iid in dict.fromkeys(wanted) for s in systems]
    done = _done_keys(out)
    todo = [u for u in units if u not in done]
    position = {iid: i for i, iid in enumerate(work_pool.item_ids)}
    stats = {"done": 0, "error": 0, "tokens": 0}
    with out.open("a", encoding="utf-8") as fh:
        for start in range(0, len(todo), args.batch):
            batch = todo[start:start + args.batch]
            if args.mode == "pairwise":
                judgments = oracle.judge_pairs(work_pool, [position[i] for i, _, _ in batch], args.a, args.b)
            else:
                judgments = []
                for system in dict.fromkeys(s for _, s, _ in batch):
                    items = [position[i] for i, s, _ in batch if s == system]
                    judgments += oracle.judge_score_judgments(work_pool, items, system)
            for j in judgments:
                fh.write(json.dumps(j.to_dict(), ensure_ascii=False) + "\n")
                stats["done" if j.status == "done" else "error"] += 1
                stats["tokens"] += int((j.detail.get("usage") or {}).get("total_tokens") or 0)
            fh.flush()
    print(f"judged {stats['done']} of {len(todo)} asked ({len(units) - len(todo)} already in {out}); "
          f"{stats['error']} error(s) (asked again on the next run); {stats['tokens']} tokens", file=sys.stderr)
    return 0
