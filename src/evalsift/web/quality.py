"""Quality control of people's judgments: gold items, the gold-accuracy rule, and adjudication.

**Gold items** (``annotate new ... --gold FILE --gold-rate R``): items whose answer is known, mixed into each
person's queue. On a share ``R`` of the requests that find work, the store serves the person's next gold
item instead (:meth:`~evalsift.store.Store.lease_next`: a seeded draw per person and request, so
deterministic; each person meets the gold items in a uniformly random order of their own, each once).
A gold assignment is an assignment like any other -- same table, same id sequence, the project's pair, a
shown order drawn the same way -- and in a project with gold items every item id and answer id the API
shows is opaque (:func:`opaque_id`), so neither the page nor its JSON tells a gold item from a real one. A
gold answer is stored in ``gold_answers``: it is never a judgment, never a verdict of the decision and never
in the judgments export.

**What "correct" means**: the person's verdict (first better, second better, tie) equals the known answer,
in terms of the systems (the shown order is undone first). Gold items are supported on pairwise projects
(live or fixed); a score or arena project refuses ``--gold`` with a message saying so.

**The rule** (``--min-gold-accuracy A``): after every gold answer, an anytime-valid upper confidence bound on
the person's accuracy is compared with ``A``; once it falls below ``A`` the person is flagged: their queue is
paused (the page says so), their verdicts leave the live decision (which is recomputed without them; the
units they finished are opened for someone else), and every judgment stays in the store (the export marks
them ``excluded``). ``annotate unpause`` lifts it. The bound is the upper end of
:func:`~evalsift.stats.sequential.win_rate_sequence`, the betting confidence sequence for a finite pool
sampled without replacement (Waudby-Smith & Ramdas, NeurIPS 2020; JRSS-B 2024), over the person's 0/1
correctness with the pool being the project's ``G`` gold items: the quantity bounded is the person's
accuracy over the whole gold set. Its level is ``1 - GOLD_RISK`` on each side uniformly over time, so a
person whose accuracy is at least ``A`` is flagged with probability at most ``GOLD_RISK`` however many
answers they give (a fixed-n interval checked after every answer would flag careful people by chance).
**Assumption**: each person meets the gold items in a uniformly random order (the store draws it), and
their answer to a gold item does not depend on when it is shown.

**Adjudication** (``--adjudicate split``): an item whose ``overlap`` people do not all give the same verdict
(among the people not excluded) goes to the adjudicators' queue (``annotate add-annotator --role
adjudicator``): their page shows the disputed item with the verdict counts, and their verdict is what
counts for that item (on a live project the Session waits for it and is given it alone); the others stay
in the store, and the export marks the adjudicator's verdict ``adjudicated``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataError, ParameterError
from ..oracle.base import Judgment
from ..store import ADJUDICATOR_KIND, OverlapCount

GOLD_RISK = 0.05
"""Each end of the gold-accuracy confidence sequence holds with probability >= 1 - GOLD_RISK, at every time."""
DEFAULT_GOLD_RATE = 0.2
ADJUDICATE_RULES = ("split",)
GOLD_ASSUMPTION = ("each person meets the gold items in a uniformly random order (the store draws it) and their "
                   "answer to a gold item does not depend on when it is shown")
GOLD_CORRECT = ("correct: the verdict (first better, second better, tie) equals the gold item's known answer, in "
                "terms of the systems")
PAUSED = "your queue is paused for now (the project's administrator can resume it)"


def read_gold_file(path: str | Path, a: str, b: str) -> list[dict[str, Any]]:
    """The gold items of a JSONL file, in the item format ``annotate new --from`` reads plus the known
    answer: per line ``item_id``, ``input``, the two outputs (``outputs: {system: text}`` naming the
    project's ``a`` and ``b``, or ``a``, ``b``, ``output_a``, ``output_b``) and ``answer`` -- ``a``'s name,
    ``b``'s name or ``tie``. Returns rows for :meth:`~evalsift.store.Store.add_gold_items` (answer as 'a', 'b'
    or 'tie'). DataError naming the line, the item and the field for anything missing or wrong."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"--gold {path}: no such file; give a JSONL file of items with outputs and an answer",
                        field="gold")
    rows, seen = [], set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"--gold {path}: cannot read it as UTF-8 text ({e})", field="gold") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"--gold {path}, line {n}"
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise DataError(f"{where}: not JSON ({e})", field="gold") from None
        if not isinstance(rec, dict):
            raise DataError(f"{where}: each line must be a JSON object", field="gold")
        gid = rec.get("item_id", rec.get("gold_id"))
        if not isinstance(gid, (str, int)) or isinstance(gid, bool) or not str(gid).strip():
            raise DataError(f"{where}: needs an item_id (text or integer)", field="item_id")
        gid = str(gid)
        if gid in seen:
            raise DataError(f"{where}: item_id {gid!r} appears twice", field="item_id", item_id=gid)
        seen.add(gid)
        outs = dict(rec["outputs"]) if isinstance(rec.get("outputs"), dict) else {}
        if rec.get("a") is not None and rec.get("b") is not None:
            outs.setdefault(str(rec["a"]), rec.get("output_a"))
            outs.setdefault(str(rec["b"]), rec.get("output_b"))
        for s in (a, b):
            if not isinstance(outs.get(s), str) or not outs[s].strip():
                raise DataError(f"{where}: gold item {gid!r} needs the output of {s!r} as text (outputs: {{{a!r}: ..., "
                                f"{b!r}: ...}}); it has {sorted(outs) or 'none'}", field="outputs", item_id=gid)
        if not isinstance(rec.get("input"), str):
            raise DataError(f"{where}: gold item {gid!r} needs its input as text", field="input", item_id=gid)
        answer = rec.get("answer")
        code = {a: "a", b: "b", "tie": "tie"}.get(answer) if isinstance(answer, str) else None
        if code is None:
            raise DataError(f"{where}: gold item {gid!r}: answer must be {a!r}, {b!r} or 'tie' (the better output's "
                            f"system), got {json.dumps(answer)}", field="answer", item_id=gid)
        rows.append({"gold_id": gid, "input": rec["input"], "outputs": {a: outs[a], b: outs[b]}, "answer": code})
    if not rows:
        raise DataError(f"--gold {path} holds no items", field="gold")
    return rows


def gold_settings(rate: float, min_accuracy: float | None, n_items: int) -> dict[str, Any]:
    """The ``gold`` entry of a project's settings (checked)."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < 1:
        raise ParameterError(f"--gold-rate must be in (0, 1): the share of requests that get a gold item, got {rate!r}",
                             field="gold_rate")
    if min_accuracy is not None and (isinstance(min_accuracy, bool) or not 0 < float(min_accuracy) <= 1):
        raise ParameterError(f"--min-gold-accuracy must be in (0, 1], got {min_accuracy!r}", field="min_gold_accuracy")
    return {"rate": float(rate), "items": int(n_items), "risk": GOLD_RISK,
            **({"min_accuracy": float(min_accuracy)} if min_accuracy is not None else {})}


def check_adjudicate(rule: str | None, overlap: int) -> dict[str, Any]:
    """The ``adjudicate`` entry of a project's settings (nothing without a rule)."""
    if rule is None:
        return {}
    if rule not in ADJUDICATE_RULES:
        raise ParameterError(f"--adjudicate {rule!r}: the rule is 'split' (an item whose --overlap people do not all "
                             "give the same verdict)", field="adjudicate")
    if overlap < 2:
        raise ParameterError("--adjudicate split needs --overlap 2 or more: with one person per item nothing is split",
                             field="adjudicate")
    return {"adjudicate": rule}


def gold_accuracy(correct: Sequence[int], n_gold: int, risk: float = GOLD_RISK) -> dict[str, Any]:
    """A person's gold accuracy: ``{answered, correct, accuracy, interval: [low, high]}``, the interval the
    betting confidence sequence over the ``n_gold`` gold items (each end valid at ``1 - risk`` uniformly over
    time; see the module doc). ``accuracy`` is None and the interval [0, 1] with no answer.

    >>> r = gold_accuracy([1] * 18 + [0] * 2, 40)
    >>> r["answered"], r["correct"], 0.6 < r["interval"][0] < 0.9 < r["interval"][1] <= 1.0
    (20, 18, True)
    """
    from ..stats.sequential import win_rate_sequence

    values = [float(c) for c in correct]
    if not values:
        return {"answered": 0, "correct": 0, "accuracy": None, "interval": [0.0, 1.0]}
    lo, hi = win_rate_sequence(values, max(int(n_gold), len(values)), 2 * risk)
    return {"answered": len(values), "correct": int(sum(values)), "accuracy": sum(values) / len(values),
            "interval": [float(lo), float(hi)]}


def breaks_rule(acc: dict[str, Any], min_accuracy: float | None) -> bool:
    """Whether the rule flags the person: the upper bound fell below ``min_accuracy``."""
    return min_accuracy is not None and acc["answered"] > 0 and acc["interval"][1] < float(min_accuracy)


def flag_reason(acc: dict[str, Any], min_accuracy: float, risk: float = GOLD_RISK) -> str:
    """The reason stored with a flag."""
    return (f"gold accuracy {acc['correct']}/{acc['answered']}: its {100 * (1 - risk):g}% anytime upper bound "
            f"{acc['interval'][1]:.3f} is below --min-gold-accuracy {min_accuracy:g}")


def opaque_id(key: bytes, project_id: int, what: str, value: Any) -> str:
    """An id the API shows in a project with gold items, in place of an item id or an answer id: an HMAC under
    the store's own key, so it reads the same for every kind of item and tells nothing of what is behind it."""
    return hmac.new(key, f"evalsift-opaque|{project_id}|{what}|{value}".encode(), hashlib.sha256).hexdigest()[:16]


def disputes(judgments: Sequence[Judgment], overlap: int, excluded: frozenset[str] = frozenset()
             ) -> tuple[dict[str, Counter], set[str]]:
    """The disputed items of a pairwise project (rule ``split``): ``({item_id: Counter of verdicts 'a'/'b'/'tie'},
    items already adjudicated)``, from the judgments that stand, in stored order -- each person's latest verdict,
    the first ``overlap`` people per item (:class:`~evalsift.store.OverlapCount`), people in ``excluded`` left out.
    An item is disputed once it has ``overlap`` people and their verdicts are not all the same."""
    count = OverlapCount(overlap)
    votes: dict[str, dict[str, str]] = {}
    adjudicated: set[str] = set()
    for j in judgments:
        if j.status != "done" or j.is_score or j.annotator in excluded:
            continue
        if j.kind == ADJUDICATOR_KIND:
            adjudicated.add(j.item_id)
            continue
        if j.kind != "human" or not count.counts(j):
            continue
        votes.setdefault(j.item_id, {})[j.annotator] = j.verdict
    out = {item: Counter(v.values()) for item, v in votes.items() if len(v) >= overlap and len(set(v.values())) > 1}
    return out, adjudicated


def interval_text(acc: dict[str, Any], risk: float = GOLD_RISK) -> str:
    """``12/20 = 0.600, anytime interval [0.31, 0.84]`` for the status."""
    if not acc["answered"]:
        return "no gold answers yet"
    lo, hi = acc["interval"]
    return (f"{acc['correct']}/{acc['answered']} = {acc['accuracy']:.3f}, anytime interval [{lo:.3f}, {hi:.3f}] "
            f"(each end {100 * (1 - risk):g}%)")


__all__ = ["ADJUDICATE_RULES", "DEFAULT_GOLD_RATE", "GOLD_ASSUMPTION", "GOLD_RISK", "breaks_rule", "check_adjudicate",
           "disputes", "gold_accuracy", "gold_settings", "opaque_id", "read_gold_file"]
