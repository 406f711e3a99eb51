"""``--aggregate majority|dawid-skene|mace``: several annotators' recorded verdicts on the same item and pair made
one verdict, by a competence model or by majority (:mod:`evalsift.stats.crowd`).

One mechanism for every command that reads recorded multi-annotator verdicts: :func:`aggregate_judgments`
takes the recorded :class:`~evalsift.oracle.base.Judgment`\\ s and returns one judgment per (item, pair) -- the
posterior verdict, oriented to the pair as its first judgment records it, with the posterior probabilities of
a / b / tie in ``detail["posterior"]`` -- plus the fit (each annotator's competence). ``arena`` and ``winrate``
get it through :func:`evalsift.io.pairwise.read_verdicts`, ``compare --oracle judgments:...`` and
``judge-report --human judgments:...`` through :class:`~evalsift.oracle.judgments.JudgmentsOracle`
(``aggregate=``). Without ``--aggregate`` nothing changes: each command counts the judgments as before (the
replay oracle by evalsift's vote rule, :mod:`evalsift.oracle.votes`; arena one battle per judgment).

Per annotator the latest judgment of an item counts, as in the vote rule; ``majority`` breaks a split top as the
vote rule does (a ``tie`` verdict), so ``--aggregate majority`` gives the replay oracle's verdicts. The label
space of the competence models is the verdicts seen (``a``, ``b``, ``tie``), each judgment oriented to its
item's first recorded order (a confusion of "a" is a confusion of that side).

Competence models need the same person across items: the judgments' ``annotator`` (the file's annotator or
judge field). A file that names none (every judgment's annotator is the reader's fallback ``file``) is refused
for ``dawid-skene`` and ``mace``.

>>> from evalsift.oracle.base import Judgment
>>> js = [Judgment(item_id="1", a="X", b="Y", verdict=v, annotator=w, kind="human")
...       for v, w in (("a", "p"), ("a", "q"), ("b", "r"))]
>>> out, fit = aggregate_judgments(js, "majority")
>>> [(j.item_id, j.verdict, j.annotator) for j in out], fit.rule
([('1', 'a', 'majority')], 'majority')
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import DataError
from ..stats.crowd import RULES, CrowdResult, aggregate
from .base import Judgment
from .votes import orient

#: the annotator name the pairwise readers give a judgment whose file names nobody
UNNAMED = "file"

def _flip(v: str | None) -> str | None:
    return {"a": "b", "b": "a"}.get(v, v) if v is not None else None


def aggregate_judgments(judgments: Iterable[Judgment], rule: str, *, seed: int = 0,
                        source: str = "the verdicts") -> tuple[tuple[Judgment, ...], CrowdResult]:
    """One judgment per (item, pair) from ``judgments`` by ``rule`` (see the module doc), and the fit.

    Judgments without a verdict (``error``/``skipped``/``pending``) withdraw the annotator's earlier verdict of the
    item and give none; items left without any verdict give no judgment."""

    judgments = list(judgments)
    first: dict[tuple, Judgment] = {}
    latest: dict[tuple, str | None] = {}
    kinds: dict[tuple, set] = {}
    names = set()
    for j in judgments:
        key = (str(j.item_id), frozenset((j.a, j.b)))
        head = first.setdefault(key, j)
        o = orient(j, head.a, head.b) if (j.a, j.b) != (head.a, head.b) else j
        latest.pop((key, j.annotator), None)
        latest[(key, j.annotator)] = o.verdict if j.status == "done" else None
        kinds.setdefault(key, set()).add(j.kind)
        names.add(j.annotator)
    if rule != "majority" and names and names <= {UNNAMED}:
        raise DataError(f"--aggregate {rule}: {source} name no annotator (no annotator or judge field), so nothing "
                        "says which verdicts are the same person's; competence models need the same person across "
                        "items. Add an annotator column, or use --aggregate majority", field="annotator",
                        hint="add an annotator column naming who judged")
    codes = {key: n for n, key in enumerate(first)}
    voters: dict[tuple, list] = {}
    for (key, who), v in latest.items():
        if v is not None:
            voters.setdefault(key, []).append(who)
    rows = [(codes[key], who, v) for (key, who), v in latest.items() if v is not None]
    if not rows:
        raise DataError(f"--aggregate {rule}: {source} hold no verdict to combine", field="verdict")
    fit = aggregate(rows, rule, seed=seed, ties="tie")
    space = list(fit.label_space)
    out = []
    for key, n in codes.items():
        if n not in fit.verdict:
            continue
        head = first[key]
        ks = kinds[key]
        kind = ks.pop() if len(ks) == 1 else "human"
        post = {lab: float(p) for lab, p in zip(space, fit.proba[n])}
        who = sorted(set(voters.get(key, ())), key=str)
        detail: dict[str, Any] = {"aggregate": rule, "posterior": post, "annotators": who}
        if isinstance(head.detail, dict) and "source" in head.detail:
            detail["source"] = head.detail["source"]
        out.append(Judgment(item_id=head.item_id, a=head.a, b=head.b, verdict=fit.verdict[n], annotator=rule,
                            kind=kind, shown_order=head.shown_order, detail=detail))
    return tuple(out), fit


def aggregate_report(fit: CrowdResult, recorded: int | None = None) -> list[str]:
    """The lines the commands print: the rule, and each annotator's competence."""
    n = len(fit.items)
    was = f" from {recorded} recorded" if recorded is not None else ""
    return [f"{fit.describe()}: {n} verdict(s), one per item and pair{was}", fit.competence_line()]


def aggregated(judgments: Iterable[Judgment], rule: str | None, *, seed: int = 0,
               source: str = "the verdicts") -> tuple[tuple[Judgment, ...], CrowdResult | None]:
    """``judgments`` unchanged (and no fit) for ``rule`` None; else :func:`aggregate_judgments`, its report
    (:func:`aggregate_report`) issued as data warnings -- ``note:`` lines on the command line, the one way every
    command says which rule it used and each annotator's competence."""
    judgments = tuple(judgments)
    if rule is None:
        return judgments, None
    from ..io._common import warn_data

    out, fit = aggregate_judgments(judgments, rule, seed=seed, source=source)
    for line in aggregate_report(fit, len(judgments)):
        warn_data(f"{source}: {line}")
    return out, fit
