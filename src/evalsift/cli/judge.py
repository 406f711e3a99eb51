"""``evalsift judge``: have a judge (an LLM, usually) judge a selection, resumably; with ``--selective``, a judge
that answers only where its agreement with people is guaranteed (:mod:`evalsift.oracle.selective`) and hands
the rest on."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from collections import Counter
from pathlib import Path

from .. import interrupt
from ..errors import OracleError, ParameterError
from ._common import (ORACLE_HELP, add_data, add_judge_opts, add_quiet, build_oracle, load_data, name_list, note,
                      out_file, pair_only, picked_positions, positive_int)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``judge``."""
    p = sub.add_parser("judge", help="judge a selection of items (e.g. with an LLM judge); resumes where it stopped")
    add_data(p)
    p.add_argument("--items", metavar="FILE", help="the picks to judge (JSONL with item_id, e.g. from "
                                                                  "'evalsift select')")
    p.add_argument("--oracle", metavar="SPEC", help=ORACLE_HELP)
    p.add_argument("--mode", choices=["pairwise", "score"], default="pairwise",
                   help="compare --a with --b, or score each of --systems (an LLM judge's score template)")
    p.add_argument("--a", metavar="SYS", help="first system (pairwise)")
    p.add_argument("--b", metavar="SYS", help="second system (pairwise)")
    p.add_argument("--systems", type=name_list, metavar="A,B,...", help="systems to score (score mode; default all)")
    p.add_argument("--batch", type=positive_int, default=16,
                   help="items handed to the judge together (its --judge-concurrency bounds the requests in flight); "
                        "each judgment is written the moment its answers are in")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="(with --selective: a folder, see below) judgments JSONL, appended to; an existing file is continued: items with a verdict are not "
                        "asked again, nor items whose answers had no usable verdict (unless --retry-errors); items "
                        "whose call failed are asked again. A line cut off by a killed run is removed first; a "
                        "file judge did not write is refused, untouched")
    add_judge_opts(p)
    add_selective_opts(p)
    add_quiet(p)
    p.set_defaults(handler=cmd_judge)


def add_selective_opts(p: argparse.ArgumentParser) -> None:
    """The ``--selective`` options of ``judge`` (:mod:`evalsift.oracle.selective`)."""
    from ..oracle.selective import METHODS, MIN_ITEMS, TIES

    g = p.add_argument_group(
        "selective judge (--selective)",
        "the judge answers only where its calibrated confidence guarantees P(it agrees with people | it answers) "
        ">= --agreement with probability >= 1 - --risk (Trust or Escalate's fixed-sequence test), and escalates the "
        "rest. Recorded: --data PEOPLE (human verdicts) --judge judgments:A [--judge judgments:B ...] "
        "--calibration-size N --seed S. Live: --data POOL --a X --b Y --oracle llm:MODEL --calibration FILE "
        "(human verdicts on some items; the judge is asked on them first). --out DIR gets kept.jsonl, "
        "escalated.jsonl and results.json, written whole or not at all")
    g.add_argument("--selective", action="store_true", help="answer only where the agreement is guaranteed")
    g.add_argument("--judge", action="append", metavar="judgments:FILE",
                   help="a recorded judge (repeat for several: their verdicts averaged give the confidence; with "
                        "--cascade, one stage each, in order)")
    g.add_argument("--calibration", metavar="FILE", help="live: human verdicts on some items of --data (a pairwise "
                                                         "table or any judgments file) to calibrate on")
    g.add_argument("--agreement", type=float, default=0.9, help="the agreement with people to guarantee (default 0.9)")
    g.add_argument("--risk", type=float, default=0.1,
                   help="the chance the guarantee may fail (default 0.1: it holds with probability >= 0.9)")
    g.add_argument("--calibration-size", type=positive_int, default=500,
                   help="recorded: how many human-labelled items to calibrate on, drawn at random (default 500)")
    g.add_argument("--seed", type=int, default=0, help="the draw of the calibration items (default 0)")
    g.add_argument("--ties", choices=TIES, default="exclude",
                   help="exclude (default, the paper's): agreement on the items where people named a winner; count: "
                        "on every item, a tie a third verdict")
    g.add_argument("--method", choices=METHODS, default=METHODS[0],
                   help="fixed-sequence: Trust or Escalate's test (thresholds from high to low, an exact binomial "
                        "p-value at each, stop at the first failure)")
    g.add_argument("--min-items", type=positive_int, default=MIN_ITEMS,
                   help=f"the fewest answered calibration items a threshold is tested with (default {MIN_ITEMS})")
    g.add_argument("--cascade", action="store_true",
                   help="the --judge judges tried in order, each calibrated on what the ones before left, "
                        "escalating to the next")
    g.add_argument("--escalate-to", metavar="DB:PROJECT",
                   help="live: put the escalated items into a new pairwise annotation project PROJECT in the store "
                        "DB, for people")


Unit = tuple[str, str, str]  # (item_id, a, b); b is "" for a score


def repair_tail(path: Path) -> str | None:
    """Make ``path`` end with a whole line before anything is appended; a note saying what was done, or None.

    A run killed while writing leaves the start of a JSON line without its line end. That piece is cut
    away (its item has no finished record, so it is asked again -- from the cache, at no cost). A last
    line that is whole JSON but lacks only the line end gets one. Invalid lines elsewhere are left for
    the reader to report (they are not what a killed run leaves).
    """
    if not path.exists():
        return None
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return None
        start = size
        while start > 0:  # back to the last line end, in blocks
            step = min(65536, start)
            fh.seek(start - step)
            block = fh.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                start = start - step + cut + 1
                break
            start -= step
        fh.seek(start)
        tail = fh.read()
        try:
            whole = isinstance(json.loads(tail.decode("utf-8")), dict)
        except (UnicodeDecodeError, ValueError):
            whole = False
        if whole:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
            return f"{path}: the last line had no line end (a run stopped while writing it); added one"
        fh.truncate(start)
    return (f"{path}: removed a cut-off last line ({len(tail)} bytes, line {_count_lines(path) + 1}) that a run "
            "stopped while writing; its item is judged again (a cached answer costs nothing)")


#: the fields of every record ``judge`` writes (:meth:`evalsift.oracle.base.Judgment.to_dict`)
RECORD_FIELDS = ("item_id", "a", "b", "verdict", "annotator", "kind", "status", "detail")


def check_own_file(path: Path) -> None:
    """Refuse an ``--out`` that ``judge`` did not write, before anything is appended to it or repaired in it.

    Every whole line must be a judgment record as ``judge`` writes them (a JSON object with the fields of
    :data:`RECORD_FIELDS`, ``detail`` an object); a missing or empty file is fine, and so is a last line cut
    off without its line end (what a killed run leaves: :func:`repair_tail` handles it). Records of evalsift's
    judgment format written by another evalsift command pass too (they are the same records)."""
    from ..errors import DataError

    if not path.is_file():
        return
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                break  # a torn last line: repair_tail's
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                rec, what = None, "not a JSON object"
            else:
                missing = [f for f in RECORD_FIELDS if not isinstance(rec, dict) or f not in rec]
                what = ("not a JSON object" if not isinstance(rec, dict) else
                        f"it lacks {', '.join(missing)}" if missing else
                        "its detail is not an object" if not isinstance(rec["detail"], dict) else "")
            if what:
                raise DataError(f"--out {path}: line {n} is not a judgment that 'evalsift judge' writes ({what}), so "
                                "the file is not one judge wrote, and nothing was appended to it. judge --out appends "
                                "to a file of its own, to continue it: give a new file name (or the --out of an "
                                "earlier 'evalsift judge' run)", field="out")


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))


def read_states(path: Path) -> dict[Unit, dict]:
    """The last record of each (item_id, a, b) already in ``path`` (records are appended, never rewritten)."""
    if not path.exists():
        return {}
    from ..io._common import iter_jsonl

    last: dict[Unit, dict] = {}
    for _, rec in iter_jsonl(path, what="judgments"):
        if isinstance(rec, dict):
            last[(str(rec.get("item_id")), str(rec.get("a")), str(rec.get("b", "")))] = rec
    return last


def _settled(rec: dict | None, retry_errors: bool) -> bool:
    """Whether a unit whose last record is ``rec`` is left alone: a verdict (or score), or an answer the
    judge gave without a usable verdict (unless --retry-errors). A failed call is always asked again."""
    if rec is None:
        return False
    if rec.get("status") == "done":
        return True
    kind = (rec.get("detail") or {}).get("error_kind") if isinstance(rec.get("detail"), dict) else None
    return kind == "unusable_answer" and not retry_errors


def _streams(method) -> bool:
    """Whether an oracle's method hands over each judgment as it is made (``on_judgment=``)."""
    return "on_judgment" in inspect.signature(method).parameters


def _calls(j) -> list[dict]:
    """The calls behind one Judgment, each ``{"problem": reason or None, "failed": bool}``:
    an LLM pair's answers (one per order), an LLM score's one answer; none for a judgment made without a
    call (no output, a metric, a replayed verdict)."""
    d = j.detail if isinstance(j.detail, dict) else {}
    if isinstance(d.get("answers"), list):
        return [{"problem": a.get("error"), "failed": "error_type" in a} for a in d["answers"] if isinstance(a, dict)]
    if "cached" in d:  # a score: one call
        return [{"problem": d.get("reason") if j.status != "done" else None,
                 "failed": d.get("error_kind") == "call_failed"}]
    return []


def _no_answer_error(stats: dict, asked: int) -> OracleError:
    """Why a run that asked ``asked`` items got no verdict at all: how many calls failed, the most common
    problem, what to do."""
    (reason, k), = stats["problems"].most_common(1) or [("no reason given", 0)]
    n_calls, failed, unusable = stats["calls"], stats["failed_calls"], stats["unusable_calls"]
    what = []
    if failed:
        what.append(f"{failed} of {n_calls} call(s) failed")
    if unusable:
        what.append(f"{unusable} of {n_calls} call(s) answered without a usable verdict")
    if stats["no_output"]:
        what.append(f"{stats['no_output']} item(s) lack an output")
    if "HTTP 429" in reason:
        fix = "The server limits the request rate: wait, or lower --judge-concurrency"
    elif failed >= unusable and failed:
        fix = "Check that the server at --judge-url works and serves this model with this key"
    elif unusable:
        fix = "Check the model and the template (--judge-template); --retry-errors asks those answers again"
    else:
        fix = "Check --a/--b (or --systems) and the data"
    again = "; a rerun asks the failed calls again (the answers received are cached)" if failed else ""
    return OracleError(f"no usable answer from the judge for any of the {asked} item(s) asked: {'; '.join(what)}; "
                       f"the most common problem ({k} of {sum(stats['problems'].values())}): {reason}. {fix}{again}",
                       field="oracle")


def cmd_judge(args: argparse.Namespace) -> int:
    """``evalsift judge``.

    Exit status 0 when at least one item got its verdict (the summary counts the rest); 2 with one
    ``error:`` line when items were asked and none did (every call failed, or no answer was usable);
    130 on Ctrl-C (the first waits up to one ``--judge-timeout`` for answers in flight, a second
    abandons them). ``--selective``: :func:`cmd_selective`.
    """
    if args.selective:
        return cmd_selective(args)
    for opt in ("judge", "calibration", "escalate_to"):
        if getattr(args, opt):
            raise ParameterError(f"--{opt.replace('_', '-')} belongs to a selective judge: add --selective",
                                 field=opt)
    for opt in ("items", "oracle"):
        if not getattr(args, opt):
            raise ParameterError(f"judge needs --{opt} (or --selective with its options)", field=opt)
    try:
        prepared = _prepare(args)
    except KeyboardInterrupt:
        raise KeyboardInterrupt("nothing was judged") from None
    out, oracle, work_pool, units, todo, kept = prepared
    position = {iid: i for i, iid in enumerate(work_pool.item_ids)}
    stats = {"done": 0, "call_failed": 0, "unusable_answer": 0, "no_output": 0, "other": 0, "injection_risk": 0,
             "tokens_paid": 0, "tokens_cached": 0, "calls": 0, "failed_calls": 0, "unusable_calls": 0,
             "problems": Counter()}
    interrupted = False
    with out.open("a", encoding="utf-8") as fh:

        def write(j) -> None:  # each judgment the moment its answers are in
            fh.write(json.dumps(j.to_dict(), ensure_ascii=False) + "\n")
            fh.flush()
            kind = "done" if j.status == "done" else j.detail.get("error_kind")
            stats[kind if kind in ("done", "call_failed", "unusable_answer", "no_output") else "other"] += 1
            stats["injection_risk"] += bool(j.detail.get("injection_risk"))
            tokens = int((j.detail.get("usage") or {}).get("total_tokens") or 0)
            cached = min(tokens, int(j.detail.get("cached_tokens") or 0))
            stats["tokens_paid"] += tokens - cached
            stats["tokens_cached"] += cached
            calls = _calls(j)
            stats["calls"] += len(calls)
            for c in calls:
                stats["failed_calls" if c["failed"] else "unusable_calls"] += bool(c["problem"])
                if c["problem"]:
                    stats["problems"][c["problem"]] += 1
            if j.status != "done" and not calls:
                stats["problems"][str(j.detail.get("reason") or "no reason given")] += 1

        try:
            for start in range(0, len(todo), args.batch):
                interrupt.check()  # Ctrl-C, also one swallowed by a library or a thread: no further batch
                batch = todo[start:start + args.batch]
                if args.mode == "pairwise":
                    streams = _streams(oracle.judge_pairs)
                    judgments = oracle.judge_pairs(work_pool, [position[i] for i, _, _ in batch], args.a, args.b,
                                                   **({"on_judgment": write} if streams else {}))
                    if not streams:  # an oracle that answers a batch at once (metric, replayed judgments)
                        for j in judgments:
                            write(j)
                else:
                    for system in dict.fromkeys(s for _, s, _ in batch):
                        items = [position[i] for i, s, _ in batch if s == system]
                        oracle.judge_score_judgments(work_pool, items, system, on_judgment=write)
        except KeyboardInterrupt:
            interrupted = True
    errors = stats["call_failed"] + stats["unusable_answer"] + stats["no_output"] + stats["other"]
    parts = [f"{stats['call_failed']} failed call(s), asked again on the next run",
             f"{stats['unusable_answer']} answer(s) without a usable verdict, kept (--retry-errors asks again)"]
    if stats["no_output"]:
        parts.append(f"{stats['no_output']} without an output")
    if stats["other"]:
        parts.append(f"{stats['other']} other error(s), asked again on the next run")
    summary = (f"judged {stats['done']} of {len(todo)} asked ({len(units) - len(todo)} already in {out}"
               + (f"; {kept} of them without a usable verdict: --retry-errors asks them again" if kept else "")
               + f"); {errors} error(s)" + (f" ({'; '.join(parts)})" if errors else "")
               + f"; {stats['injection_risk']} flagged injection_risk"
               + f"; tokens: {stats['tokens_paid']:,} paid now, {stats['tokens_cached']:,} from the cache")
    if interrupted:  # the one line main() prints: "interrupted; judged ..."
        raise KeyboardInterrupt(f"{summary}; the same command continues where this one stopped (the answers "
                                "received are cached)")
    print(summary, file=sys.stderr)
    if todo and stats["done"] == 0:
        raise _no_answer_error(stats, len(todo))
    if errors and stats["problems"]:
        (reason, k), = stats["problems"].most_common(1)
        note(f"the most common problem ({k} of {sum(stats['problems'].values())}): {reason}")
    return 0


def _prepare(args: argparse.Namespace):
    """What ``judge`` works on: ``(out, oracle, pool, units, todo, kept)`` -- the units to judge, those not
    settled yet in ``--out`` (its torn last line repaired first), and how many settled ones are errors."""
    out = out_file(args.out, progress=True)  # the verdicts written stay for the rerun, even after a failure
    check_own_file(out)  # before any work, and before repair_tail touches it: a file judge did not write stays as it is
    pool = load_data(args)
    wanted = [pool.item_ids[i] for i in picked_positions(args.items, pool, args.data)]
    if args.mode == "pairwise" and not (args.a and args.b):
        raise ParameterError("judge --mode pairwise compares two systems: give --a SYS --b SYS", field="a")
    oracle = build_oracle(args, args.oracle)
    if args.mode == "pairwise":
        work_pool = pair_only(pool, args.a, args.b)
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
    repaired = repair_tail(out)
    if repaired:
        note(repaired)
    states = read_states(out)
    retry = bool(getattr(args, "retry_errors", False))
    todo = [u for u in units if not _settled(states.get(u), retry)]
    kept = sum(1 for u in units if states.get(u, {}).get("status") == "error" and _settled(states[u], retry))
    return out, oracle, work_pool, units, todo, kept


# ---------------------------------------------------------------------------------------------- --selective
def _judge_source(spec: str) -> str:
    """The recorded source of a ``--judge judgments:FILE`` (the prefix may be left out)."""
    kind, sep, rest = spec.partition(":")
    if sep and kind == "judgments":
        return rest
    if sep and kind in ("llm", "metric"):
        raise ParameterError(f"--judge {spec}: a recorded judge is judgments:FILE; a live LLM judge is --oracle "
                             f"{spec} with --calibration FILE", field="judge")
    return spec


def _check_selective_out(path: str) -> Path:
    """``--out DIR`` of a selective run, checked before any work (so a refused folder costs nothing)."""
    from ..errors import DataError
    from ..oracle.selective import is_selective_dir
    from ._common import _make_folder

    out = Path(path)
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {path} is a file; --selective writes a folder (kept.jsonl, escalated.jsonl, "
                        "results.json): give a folder name", field="out")
    if out.is_dir() and any(out.iterdir()) and not is_selective_dir(out):
        raise DataError(f"--out {path} holds files a selective judge did not write; give a new or empty folder",
                        field="out")
    _make_folder(out.parent)
    return out


def _escalate_target(spec: str | None) -> tuple[str, str] | None:
    if spec is None:
        return None
    db, sep, project = spec.rpartition(":")
    if not (sep and db and project.strip()):
        raise ParameterError(f"--escalate-to {spec!r}: give DB:PROJECT, e.g. evalsift.db:hard-items", field="escalate_to")
    return db, project.strip()


def cmd_selective(args: argparse.Namespace) -> int:
    """``evalsift judge --selective``: calibrate the judge's confidence threshold on human-labelled items
    (recorded judges: ``--judge``; a live one: ``--oracle`` with ``--calibration``), keep its verdicts where the
    agreement is guaranteed and escalate the rest (to the next judge of ``--cascade``; to a new annotation
    project with ``--escalate-to``). Writes ``--out DIR`` whole at the end; prints the guarantee."""
    from ..oracle.selective import write_dir

    if args.oracle and args.judge:
        raise ParameterError("--selective takes recorded judges (--judge judgments:FILE) or one live judge "
                             "(--oracle llm:MODEL with --calibration FILE), not both", field="judge")
    if not (args.oracle or args.judge):
        raise ParameterError("--selective needs a judge: --judge judgments:FILE (recorded verdicts; repeat for "
                             "several) or --oracle llm:MODEL with --calibration FILE", field="judge")
    target = _escalate_target(args.escalate_to)
    if target is not None and Path(target[0]).is_file():  # refused before the judge is asked anything
        from ..errors import DataError
        from ..store import Store

        if any(p.name == target[1] for p in Store(target[0]).projects()):
            raise DataError(f"--escalate-to {args.escalate_to}: a project named {target[1]!r} already exists in "
                            f"{target[0]}; the escalated items go into a new project: choose another name",
                            field="escalate_to")
    out = _check_selective_out(args.out)
    if args.judge:
        if args.calibration:
            raise ParameterError("--calibration FILE is the live form's (--oracle); recorded judges calibrate on "
                                 "--calibration-size items of --data drawn with --seed", field="calibration")
        if target is not None:
            raise ParameterError("--escalate-to needs the items' texts to show people: use the live form (--data "
                                 "POOL --a X --b Y --oracle llm:MODEL --calibration FILE)", field="escalate_to")
        run, extra, pool = _selective_recorded(args), {}, None
    else:
        run, extra, pool = _selective_live(args)
    res = run["results"]
    if target is not None:
        res["escalated_to"] = _escalate(target, pool, run, args)
    write_dir(out, run, extra)
    _print_selective(res, out)
    return 0


def _stages(args: argparse.Namespace, pairs: dict) -> list[tuple[str, list]]:
    from ..io.pairwise import read_judgments
    from ..oracle.selective import judge_weights

    weights = []
    for spec in args.judge:
        data = read_judgments(_judge_source(spec))
        w = judge_weights(data.judgments, pairs)
        if not w:
            raise ParameterError(f"--judge {spec}: none of its verdicts is on an item of --data {args.data} (items "
                                 "match by id and pair of systems)", field="judge")
        src = Path(_judge_source(spec))
        weights.append((src.stem if src.is_file() else str(src), w))
    if args.cascade:
        return [(name, [w]) for name, w in weights]
    return [("+".join(n for n, _ in weights), [w for _, w in weights])]


def _selective_recorded(args: argparse.Namespace) -> dict:
    """The recorded form: people's verdicts in ``--data``, recorded judges in ``--judge``."""
    from ..io.pairwise import read_judgments
    from ..oracle.selective import human_verdicts, selective_run, split

    people = read_judgments(args.data)
    human, pairs = human_verdicts(people.judgments)
    stages = _stages(args, pairs)
    counted = [i for i in human if args.ties == "count" or human[i] != "tie"]
    cal, _ = split(counted, args.calibration_size, args.seed)
    cal_set = set(cal)
    judged = [i for i in pairs if i not in cal_set]
    run = selective_run(human, pairs, stages, calibration=cal, judged=judged, agreement=args.agreement,
                        risk=args.risk, ties=args.ties, min_items=args.min_items, method=args.method)
    run["results"].update(people=str(args.data), judges=list(args.judge), seed=args.seed,
                          calibration_size=args.calibration_size, form="recorded")
    return run


def _selective_live(args: argparse.Namespace):
    """The live form: ``--oracle`` asked on ``--calibration``'s human-labelled items of ``--data``, then on the
    rest (``--items``, default every other item of the pair)."""
    from ..errors import DataError
    from ..io.pairwise import read_judgments
    from ..oracle.selective import human_verdicts, judge_weights, selective_run

    if not args.calibration:
        raise ParameterError("a live selective judge (--oracle) calibrates on people's verdicts: give --calibration "
                             "FILE (a pairwise table of human verdicts on items of --data)", field="calibration")
    if not (args.a and args.b):
        raise ParameterError("judge --selective --oracle compares two systems: give --a SYS --b SYS", field="a")
    pool = load_data(args)
    pool = pair_only(pool, args.a, args.b)
    index = {iid: k for k, iid in enumerate(pool.item_ids)}
    human_all, hpairs = human_verdicts(read_judgments(args.calibration).judgments)
    human = {i: v if hpairs[i] == (args.a, args.b) else {"a": "b", "b": "a"}.get(v, v)
             for i, v in human_all.items() if i in index and set(hpairs[i]) == {args.a, args.b}}
    if not human:
        raise DataError(f"--calibration {args.calibration}: no human verdict on an item of --data {args.data} for "
                        f"{args.a} vs {args.b} (items match by id)", field="calibration")
    cal = [i for i in pool.item_ids if i in human]
    wanted = ([pool.item_ids[k] for k in picked_positions(args.items, pool, args.data)] if args.items
              else list(pool.item_ids))
    judged = [i for i in dict.fromkeys(wanted) if i not in human]
    if not judged:
        raise DataError("every item to judge has a human verdict in --calibration; nothing is left for the judge",
                        field="items")
    oracle = build_oracle(args, args.oracle)
    asked = [index[i] for i in cal + judged]
    records = []
    for start in range(0, len(asked), args.batch):
        interrupt.check()
        records.extend(oracle.judge_pairs(pool, asked[start:start + args.batch], args.a, args.b))
    pairs = {i: (args.a, args.b) for i in pool.item_ids}
    weights = judge_weights(records, pairs)
    failed = sum(j.status != "done" for j in records)
    if not weights:
        raise OracleError(f"no usable verdict from {oracle.name} on any of the {len(asked)} item(s) asked "
                          f"({failed} error(s)); check --judge-url and the model", field="oracle")
    if failed:
        note(f"{failed} of {len(records)} judgment(s) had no usable verdict: those items are escalated")
    run = selective_run(human, pairs, [(oracle.name, [weights])], calibration=cal, judged=judged,
                        agreement=args.agreement, risk=args.risk, ties=args.ties, min_items=args.min_items,
                        method=args.method)
    run["results"].update(people=str(Path(args.calibration).resolve()), judges=[oracle.name], form="live",
                          a=args.a, b=args.b, data=str(args.data))
    return run, {"judgments.jsonl": [j.to_dict() for j in records]}, pool


def _escalate(target: tuple[str, str], pool, run: dict, args: argparse.Namespace) -> dict:
    """Create the annotation project ``target`` (DB, name) with the escalated items, as ``annotate new
    --mode pairwise`` does; returns what results.json records of it."""
    from ..store import Store
    from ..web import Workspace

    db, name = target
    ids = {r["item_id"] for r in run["escalated"]}
    if not ids:
        note("--escalate-to: the judge answered every item; no project was created")
        return {"db": db, "project": None, "items": 0}
    positions = [k for k, iid in enumerate(pool.item_ids) if iid in ids]
    work = Workspace(Store(db))
    pid, token = work.create_fixed(name, pool.subset(positions), mode="pairwise", a=args.a, b=args.b,
                                   data={"spec": args.data, "escalated_from": "judge --selective"})
    print(f"escalated {len(positions)} item(s) to annotation project {name!r} (id {pid}) in {db}; its admin token "
          f"(shown once): {token}")
    return {"db": db, "project": name, "project_id": pid, "items": len(positions)}


def _print_selective(res: dict, out: Path) -> None:
    cov = res["coverage"]
    lo, hi = cov["interval"]
    for s in res["stages"]:
        t = "none passed: answers nothing" if s["threshold"] is None else f"{s['threshold']:.4g}"
        print(f"{s['judge']}: threshold {t} (calibration: {s['calibration_answered']} of {s['calibration_items']} "
              f"answered, {s['calibration_disagreements']} disagree); kept {s['kept']}")
    print(f"coverage {cov['value']:.3f} ({cov['answered']} of {cov['items']} judged items the rule counts; "
          f"{cov['level']:.0%} Clopper-Pearson interval {lo:.3f}-{hi:.3f}); kept {res['kept']}, escalated "
          f"{res['escalated']}")
    emp = res.get("empirical_agreement")
    if emp and res.get("form") == "recorded":
        print(f"agreement with people on the kept items they also labelled: {emp['value']:.3f} ({emp['agree']} of "
              f"{emp['answered']}; a check, not the guarantee)")
    print(res["guarantee"])
    print(f"wrote {out}/kept.jsonl, escalated.jsonl, results.json")
