"""What the judge report (:mod:`evalsift.oracle.report`) measures on: the judge and the people made ready
from their specs (:func:`resolve_judge`), and each pair's labelled items (:func:`_pair_data`) -- the items
with both a human and a judge verdict, their verdict values, the proxy's signal, the answers' presentation
orders and the outputs' lengths.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..pool import Pool
from ..proxy import judge_values, oriented_by_item, values_of
from ..restrict import restrict_pair
from ..stats.sequential import VALUES
from .base import make_oracle
from .judgments import _FLIP, _ORDER_FLIP
# ---------------------------------------------------------------------------------------- the judge
@dataclass(frozen=True)
class ResolvedJudge:
    """A judge spec made ready: ``name`` (as reported), ``oracle`` (gives verdicts), ``proxy_spec``
    (what ``compare --proxy`` would take: ``metric:NAME`` or ``judge:SPEC``), ``metric`` (for
    ``metric:NAME``: the metric whose difference is the proxy's signal, else None)."""

    name: str
    oracle: Any
    proxy_spec: str
    metric: str | None = None


def resolve_judge(spec: Any, pool: Pool, *, oracle: Any = None) -> tuple[ResolvedJudge, Pool]:
    """``(judge, pool)`` for a judge spec as ``compare --proxy`` takes it, with or without ``judge:``:
    ``metric:NAME`` (an automatic metric: its verdicts are the sign of the score difference, its
    proxy the calibrated difference; a reference metric such as ``chrF-ref`` is computed and the
    returned pool has it), ``judge:metric:NAME`` (the metric's verdicts only), ``judgments:SOURCE``,
    ``llm:MODEL`` (``judge:`` prefix optional), or an oracle object. ``oracle``: the judge already
    built (the command line builds an LLM judge with its options). A human metric is refused.

    >>> from evalsift.io import make_demo_pool
    >>> j, _ = resolve_judge("metric:token_f1", make_demo_pool(n_items=5))
    >>> j.proxy_spec, j.metric
    ('metric:token_f1', 'token_f1')
    >>> resolve_judge("judge:metric:human", make_demo_pool(n_items=5))
    Traceback (most recent call last):
    ...
    evalsift.errors.ParameterError: judge 'judge:metric:human' is the human metric 'human' of pool 'demo': the judge must not be the labels it is measured against; name an automatic metric, recorded judgments or an LLM
    """
    if not isinstance(spec, str):
        if spec is None or not hasattr(spec, "judge_pairs"):
            raise ParameterError(f"judge {spec!r}: expected a spec (metric:NAME, judgments:SOURCE, llm:MODEL, "
                                 "optionally after judge:) or an oracle", field="judge")
        judge = ResolvedJudge(name=str(getattr(spec, "name", spec)), oracle=spec,
                              proxy_spec=f"judge:{getattr(spec, 'name', 'oracle')}")
        _refuse_human(judge, pool, judge.name)
        return judge, pool
    text = spec.strip()
    if ":" not in text:
        raise ParameterError(f"judge {spec!r}: expected metric:NAME (an automatic metric), judgments:SOURCE (recorded "
                             "verdicts) or llm:MODEL, optionally after judge: (as compare --proxy takes it)",
                             field="judge")
    if text.startswith("metric:"):
        from ..metrics import ensure_metric

        name = text.partition(":")[2]
        if not name:
            raise ParameterError("judge 'metric:': name the metric, e.g. metric:COMET-refA", field="judge")
        pool, name = ensure_metric(pool, name)
        pool.check_metric(name)
        judge = ResolvedJudge(name=f"metric:{name}", oracle=oracle if oracle is not None else make_oracle(f"metric:{name}"),
                              proxy_spec=f"metric:{name}", metric=name)
        _refuse_human(judge, pool, spec)
        return judge, pool
    inner = text.removeprefix("judge:")
    if not inner or ":" not in inner:
        raise ParameterError(f"judge {spec!r}: after judge: give an oracle spec such as judgments:FILE, llm:MODEL or "
                             "metric:NAME", field="judge")
    built = oracle if oracle is not None else make_oracle(inner)
    metric = getattr(built, "metric", None)
    if metric is not None:
        pool.check_metric(metric)
    judge = ResolvedJudge(name=text, oracle=built, proxy_spec=f"judge:{inner}")
    _refuse_human(judge, pool, spec)
    return judge, pool


def _refuse_human(judge: ResolvedJudge, pool: Pool, spec: Any) -> None:
    metric = judge.metric or getattr(judge.oracle, "metric", None)
    if metric is not None and metric in pool.scores and pool.is_human(metric):
        raise ParameterError(f"judge {spec!r} is the human metric {metric!r} of pool {pool.name!r}: the judge must not "
                             "be the labels it is measured against; name an automatic metric, recorded judgments or "
                             "an LLM", field="judge")


def _resolve_human(spec: Any, pool: Pool) -> tuple[Any, str]:
    if isinstance(spec, str):
        if ":" not in spec:
            raise ParameterError(f"human {spec!r}: expected judgments:FILE (recorded human verdicts) or metric:NAME "
                                 "(a human score column, e.g. metric:mqm)", field="human")
        oracle = make_oracle(spec)
        name = spec
    elif spec is not None and hasattr(spec, "judge_pairs"):
        oracle, name = spec, str(getattr(spec, "name", spec))
    else:
        raise ParameterError(f"human {spec!r}: expected judgments:FILE or metric:NAME, or an oracle", field="human")
    metric = getattr(oracle, "metric", None)
    if metric is not None:
        pool.check_metric(metric)
    return oracle, name


# ---------------------------------------------------------------------------------------- one pair's data
@dataclass
class _PairData:
    a: str
    b: str
    pool_size: int  # items of the pair the judge covers: the forecast's pool
    n_pair: int  # the pair's items (own items with outputs, as compare uses them)
    n_human: int  # items with a human verdict
    h: np.ndarray  # human verdict values on the labelled items (both verdicts)
    j: np.ndarray  # judge verdict values on them
    signal: np.ndarray  # the proxy's signal on them: j, or the metric difference
    labelled: Pool  # the labelled items' pool (resampled for a metric judge's proxy)
    judge_first: np.ndarray  # per labelled item: the judge's decisive answers for the first-shown system
    judge_decisive: np.ndarray  # ... its decisive answers
    judge_ab: int = 0  # answers given with a shown first / with b shown first
    judge_ba: int = 0
    flip: np.ndarray = field(default_factory=lambda: np.zeros(0))  # 1 changed with the order, 0 not, NaN: one order
    human_first: np.ndarray = field(default_factory=lambda: np.zeros(0))
    human_decisive: np.ndarray = field(default_factory=lambda: np.zeros(0))
    log_len: np.ndarray = field(default_factory=lambda: np.zeros(0))  # log(len a / len b), NaN without both outputs
    judge_orders: bool = False  # the judge's answers record the shown order
    human_orders: bool = False


def _answers(j: Any) -> list[tuple[str, str]]:
    """(shown order, verdict) of every answer inside one judgment, in the judgment's a/b terms: both
    orders of SummEval's recorded answers (``detail["order_verdicts"]``) or of an LLM judge asked in
    both orders (``detail["answers"]``), else the judgment's own ``shown_order`` and verdict."""
    if getattr(j, "status", "done") != "done" or j.verdict is None:
        return []
    d = j.detail if isinstance(j.detail, dict) else {}
    if isinstance(d.get("order_verdicts"), dict):
        raw = list(d["order_verdicts"].items())
    elif isinstance(d.get("answers"), list) and d["answers"] and all(
            isinstance(x, dict) and "shown_order" in x for x in d["answers"]):
        raw = [(x["shown_order"], x.get("verdict")) for x in d["answers"]]
    elif j.shown_order in _ORDER_FLIP:
        return [(j.shown_order, j.verdict)]  # already oriented to the pair asked about
    else:
        return []
    if "recorded_as" in d:  # oriented from (b, a): the detail is in the recorded terms
        raw = [(_ORDER_FLIP.get(o, o), _FLIP.get(v, v)) for o, v in raw]
    return [(o, v) for o, v in raw if o in _ORDER_FLIP and v in VALUES]


def _ask(oracle: Any, pool: Pool, a: str, b: str, *, orders: bool) -> tuple[np.ndarray, list | None]:
    """Verdict values of every item of ``pool`` (NaN: none) and, with ``orders`` and an oracle whose
    judgments can record a presentation order (not a metric), each item's answers (order, verdict)."""
    with_orders = orders and getattr(oracle, "kind", None) != "metric"
    if hasattr(oracle, "covers") and hasattr(oracle, "verdicts"):
        values = judge_values(oracle, pool, a, b)  # the library's rule (the vote rule for several judgments)
        if not with_orders:
            return values, None
        keep = np.flatnonzero(np.isfinite(values))
        js = oracle.judge_pairs(pool, keep.tolist(), a, b) if keep.size else []
        by_item = oriented_by_item(js, a, b)
    else:  # an LLM judge: asked once, values and answers from the same judgments
        values, by_item = values_of(oracle.judge_pairs(pool, list(range(pool.n_items)), a, b), pool, a, b)
    if not with_orders:
        return values, None
    return values, [[x for jd in by_item.get(iid, ()) for x in _answers(jd)] for iid in pool.item_ids]


def _order_stats(answers: list[list[tuple[str, str]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Per item: decisive answers for the first-shown system, decisive answers, flip (NaN: not seen
    in both orders); and the number of answers given in each order."""
    n = len(answers)
    first, dec, flip = np.zeros(n), np.zeros(n), np.full(n, np.nan)
    ab = ba = 0
    for i, ans in enumerate(answers):
        per: dict[str, Counter] = {}
        for o, v in ans:
            ab += o == "ab"
            ba += o == "ba"
            per.setdefault(o, Counter())[v] += 1
            if v != "tie":
                dec[i] += 1
                first[i] += (o == "ab") == (v == "a")
        if len(per) == 2:
            flip[i] = float(_plurality(per["ab"]) != _plurality(per["ba"]))
    return first, dec, flip, ab, ba


def _plurality(c: Counter) -> str:
    top = c.most_common()
    return "tie" if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]


def _log_lengths(pool: Pool, a: str, b: str) -> np.ndarray:
    out = np.full(pool.n_items, np.nan)
    for i, (x, y) in enumerate(zip(pool.outputs[a], pool.outputs[b])):
        if isinstance(x, str) and isinstance(y, str) and x and y:
            out[i] = math.log(len(x) / len(y))
    return out


def _pair_data(pool: Pool, a: str, b: str, judge: ResolvedJudge, human: Any) -> _PairData | None:
    """The pair's labelled items (both verdicts) and what the report needs of them; None without any."""
    r = restrict_pair(pool, a, b, min_items=0)
    p = r.pool
    if p.n_items == 0:
        return None
    hv, _ = _ask(human, p, a, b, orders=False)
    has_h = np.isfinite(hv)
    n_human = int(has_h.sum())
    if not n_human:
        return _empty(a, b, p.n_items, 0)
    jo = judge.oracle
    if hasattr(jo, "covers") and hasattr(jo, "verdicts"):  # cheap to ask about every item: the pool it covers
        jv_all, _ = _ask(jo, p, a, b, orders=False)
        pool_size = int(np.isfinite(jv_all).sum())
        both = has_h & np.isfinite(jv_all)
    else:  # an LLM: asked only where people judged; it could judge every item of the pair
        pool_size = p.n_items
        both = has_h
    idx = np.flatnonzero(both)
    if idx.size == 0:
        return _empty(a, b, p.n_items, n_human)
    lab = p.subset(idx) if idx.size < p.n_items else p
    jv, janswers = _ask(jo, lab, a, b, orders=True)
    keep = np.isfinite(jv)  # an LLM may fail on some
    if not keep.all():
        lab = lab.subset(np.flatnonzero(keep))
        jv = jv[keep]
        janswers = None if janswers is None else [x for x, k in zip(janswers, keep) if k]
        idx = idx[keep]
        if idx.size == 0:
            return _empty(a, b, p.n_items, n_human)
    h = hv[idx]
    _, hanswers = _ask(human, lab, a, b, orders=True)
    if judge.metric is not None:
        signal = lab.score(judge.metric, a) - lab.score(judge.metric, b)
    else:
        signal = jv.copy()
    n = len(h)
    jf, jd, flip, ab, ba = _order_stats(janswers) if janswers is not None else (
        np.zeros(n), np.zeros(n), np.full(n, np.nan), 0, 0)
    if hanswers is not None:
        hf, hd, _, _, _ = _order_stats(hanswers)
        seen = np.array([len(x) > 0 for x in janswers]) if janswers is not None else np.zeros(n, dtype=bool)
        hf, hd = np.where(seen, hf, 0.0), np.where(seen, hd, 0.0)  # the items whose order the judge's answers record
    else:
        hf, hd = np.zeros(n), np.zeros(n)
    return _PairData(a=a, b=b, pool_size=max(pool_size, n), n_pair=p.n_items, n_human=n_human, h=h, j=jv,
                     signal=np.asarray(signal, dtype=float), labelled=lab, judge_first=jf, judge_decisive=jd,
                     judge_ab=ab, judge_ba=ba, flip=flip, human_first=hf, human_decisive=hd,
                     log_len=_log_lengths(lab, a, b), judge_orders=janswers is not None and (ab + ba) > 0,
                     human_orders=hanswers is not None and any(len(x) for x in hanswers))


def _empty(a: str, b: str, n_pair: int, n_human: int) -> _PairData:
    z = np.zeros(0)
    return _PairData(a=a, b=b, pool_size=0, n_pair=n_pair, n_human=n_human, h=z, j=z, signal=z,
                     labelled=None, judge_first=z, judge_decisive=z)  # type: ignore[arg-type]
