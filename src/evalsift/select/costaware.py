"""Cost-aware selection: the most useful items whose total annotation cost fits a budget.

Zouhar et al. (TACL 2025, Eq. 2 and Sec. 5.2) select under a cost budget instead of an item count: each item has
a cost (annotation time) and a utility (from any utility selector), and the subset maximises total
utility subject to total cost <= budget, a 0-1 knapsack solved as an integer program.

- :func:`item_costs`: per-item costs from the metadata field ``cost``, or the paper's annotation-time
  model ``0.15 * |source| + 33.7`` seconds (Sec. 5.2), with ``|source|`` counted in words, or in
  characters for sources written without spaces between words (:func:`source_length`).
- :func:`knapsack_select`: the knapsack with ``scipy.optimize.milp`` (HiGHS), then a greedy fill of
  whatever budget remains; a greedy answer if the solver fails.

>>> r = knapsack_select([3.0, 1.0, 2.0, 0.5], [2.0, 1.0, 1.0, 1.0], cost_budget=3.0)
>>> r.items.tolist(), r.total_cost, r.total_utility, r.solver
([0, 2], 3.0, 5.0, 'milp')

Where we differ from subset2evaluate's ``select_subset.costaware``: it rescales utilities to
``(u - min) / (max - min) / 2 + 0.1``, which gives every item a bonus of 0.1 and so favours picking
more (cheaper) items; by default we subtract the minimum only (``rescale="ours"``), and
``rescale="package"`` is theirs (see :func:`knapsack_select` and :func:`knapsack_values`). Its greedy
fill walks items by the solver's 0/1 value and stops at the first item that does not fit; ours keeps
looking for any unpicked item that still fits, in order of utility per cost (under both rescalings).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
from scipy import optimize

from ..errors import DataError, ParameterError, check_choice, suggest
from ..pool import Pool

__all__ = ["KNAPSACK_RESCALES", "LENGTH_UNITS", "TIME_MODEL_BASE", "TIME_MODEL_PER_WORD", "KnapsackResult",
           "item_costs", "knapsack_select", "knapsack_values", "source_length", "time_model_cost"]

TIME_MODEL_PER_WORD = 0.15  # seconds per unit of source length (a word, or a character, see source_length)
TIME_MODEL_BASE = 33.7  # seconds per item
LENGTH_UNITS = ("auto", "words", "characters")
KNAPSACK_RESCALES = ("ours", "package")  # how utilities become the knapsack's values (knapsack_values)
_SHOW = 5  # how many offending item ids an error message names
# scripts written without spaces between words (or, for Hangul, with units far longer than a word
# of the time model): Han, Hiragana, Katakana (and half-width), Hangul, Thai
_CHARACTER_SCRIPTS = re.compile("[\u0e00-\u0e7f\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
                                "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
                                "\U00020000-\U0002fa1f]")


def source_length(source: str | None, unit: str = "auto") -> int:
    """Length of a source text for the time model: whitespace-separated words, or characters.

    ``unit='auto'`` counts characters (of the stripped text, spaces inside included, as
    subset2evaluate's loader does for zh, ja, ko and th) when at least half of the source's letters
    are Han, Kana, Hangul or Thai, and words otherwise: a Chinese or Japanese sentence has no
    spaces, so it would be one "word". The rule looks at the text itself, so a Japanese source is
    counted in characters whatever the pool is called, and an English source of an en-ja pair in
    words (the package counts characters for any pair that names one of the four languages).
    ``'words'`` / ``'characters'`` force one unit. None has length 0.

    >>> source_length("one two three"), source_length("我们今天去北京。"), source_length("我们 今天")
    (3, 8, 5)
    >>> source_length("Tokyo 東京都庁 に行きました"), source_length("我们今天去北京。", "words")  # 10 of 15 letters
    (17, 1)
    """
    check_choice("unit", unit, LENGTH_UNITS, where="source_length")
    if not isinstance(source, str):
        return 0
    if unit == "auto":
        letters = sum(ch.isalpha() for ch in source)
        unit = "characters" if letters and 2 * len(_CHARACTER_SCRIPTS.findall(source)) >= letters else "words"
    return len(source.strip()) if unit == "characters" else len(source.split())


def time_model_cost(source: str | None, unit: str = "auto") -> float:
    """Annotation time in seconds by the paper's model (Sec. 5.2): ``0.15 * |source| + 33.7``.

    ``|source|`` is :func:`source_length` (words; characters for Chinese, Japanese, Korean, Thai
    sources); a missing source (None) has length 0.

    >>> round(time_model_cost("one two three four five six seven eight nine ten"), 6)  # 0.15*10 + 33.7
    35.2
    >>> round(time_model_cost("我们今天去北京。"), 6)  # 8 characters: 0.15*8 + 33.7
    34.9
    """
    return TIME_MODEL_PER_WORD * source_length(source, unit) + TIME_MODEL_BASE


def _as_cost(value: Any) -> float | None:
    """A metadata value as a float, or None when it is missing (None, NaN, empty string)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise TypeError("a boolean is not a cost")
    v = float(value)
    return None if math.isnan(v) else v


def _ids(pool: Pool, idx: Sequence[int]) -> str:
    shown = ", ".join(repr(pool.item_ids[i]) for i in idx[:_SHOW])
    return shown + (f" and {len(idx) - _SHOW} more" if len(idx) > _SHOW else "")


def item_costs(pool: Pool, cost_field: str | None = "cost", length_unit: str = "auto") -> np.ndarray:
    """Per-item annotation costs, shape ``(n_items,)``, all finite and > 0.

    - ``pool.metadata[cost_field]`` when the pool has that field. Every item needs a value: if some
      items lack one (None, NaN, empty), this raises :class:`~evalsift.errors.DataError` naming the
      first of them instead of mixing measured and modelled costs; a value <= 0, infinite or not a
      number also raises, naming the item.
    - Otherwise the paper's time model, :func:`time_model_cost` of ``pool.inputs[i]``:
      ``0.15 * |source| + 33.7`` seconds (always >= 33.7 s), ``|source|`` in ``length_unit``
      (:func:`source_length`; ``auto``: characters for Chinese, Japanese, Korean and Thai sources,
      words otherwise). This fallback applies to the
      default field name ``"cost"`` and to ``cost_field=None``; another field name that the pool
      lacks is taken for a typo and raises DataError listing the metadata fields.

    >>> p = Pool(item_ids=["a", "b", "c"], inputs=["one two", "", "北京"], systems=["S"])
    >>> item_costs(p).round(2).tolist()  # 0.15*2 + 33.7, 0.15*0 + 33.7, 0.15*2 characters + 33.7
    [34.0, 33.7, 34.0]
    """
    check_choice("length_unit", length_unit, LENGTH_UNITS, where="item_costs")
    if cost_field is None or cost_field not in pool.metadata:
        if cost_field not in (None, "cost"):
            raise DataError(
                f"Pool {pool.name!r} has no metadata field {cost_field!r}.{suggest(cost_field, pool.metadata)} "
                f"Metadata fields: {', '.join(pool.metadata) or '(none)'}. Use cost_field=None (or 'cost' when "
                f"absent) for the time model {TIME_MODEL_PER_WORD} * source words + {TIME_MODEL_BASE} s."
            )
        if not pool.inputs_are_text:
            raise DataError(f"Pool {pool.name!r} has no cost field and its inputs are not text, so the time model "
                            "(source words) does not apply; give every item a cost (pool.with_columns(cost=...)).",
                            field="cost")
        return np.array([time_model_cost(src, length_unit) for src in pool.inputs], dtype=float)
    values: list[float | None] = []
    for i, v in enumerate(pool.metadata[cost_field]):
        try:
            values.append(_as_cost(v))
        except (TypeError, ValueError):
            raise DataError(f"Pool {pool.name!r}: item {pool.item_ids[i]!r} has {cost_field}={v!r}, expected a "
                            "positive number (e.g. annotation seconds).") from None
    missing = [i for i, v in enumerate(values) if v is None]
    if missing:
        raise DataError(
            f"Pool {pool.name!r}: metadata field {cost_field!r} has no value for {len(missing)} of {pool.n_items} "
            f"items ({_ids(pool, missing)}). Give every item a positive cost, or drop the field to use the "
            f"time model {TIME_MODEL_PER_WORD} * source words + {TIME_MODEL_BASE} s for all items."
        )
    costs = np.array(values, dtype=float)
    bad = np.flatnonzero(~np.isfinite(costs) | (costs <= 0))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"Pool {pool.name!r}: item {pool.item_ids[i]!r} has {cost_field}={costs[i]!r}; costs must be finite and "
            f"> 0 ({bad.size} item(s) are not: {_ids(pool, bad.tolist())}). Fix or drop those items."
        )
    return costs


@dataclass(frozen=True)
class KnapsackResult:
    """Outcome of :func:`knapsack_select`.

    ``items``: positions in pick order (descending utility, ties by position). ``total_cost`` and
    ``total_utility``: sums over ``items`` of the given costs and of the *given* (unshifted)
    utilities. ``solver``: ``"milp"`` (HiGHS answer as is), ``"milp+greedy"`` (greedy fill added
    items), ``"greedy"`` (the solver failed; greedy answer), ``"all"`` (every item fits, no solve
    needed). ``status``: ``"optimal"``, ``"time_limit"`` (best solution found in time, optimality not
    proven) or ``"failed"``. ``message``: what happened, empty when there is nothing to add.
    """

    items: np.ndarray
    total_cost: float
    total_utility: float
    solver: str
    status: str
    message: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"items": [int(i) for i in self.items], "total_cost": self.total_cost,
                "total_utility": self.total_utility, "solver": self.solver, "status": self.status,
                "message": self.message, "params": self.params}


def _check_inputs(utilities: Any, costs: Any, cost_budget: float, time_limit: float) -> tuple[np.ndarray, np.ndarray]:
    u = np.asarray(utilities, dtype=float)
    c = np.asarray(costs, dtype=float)
    if u.ndim != 1 or c.ndim != 1 or len(u) != len(c):
        raise ParameterError(f"utilities and costs must be 1-D and of equal length, got shapes {u.shape} and {c.shape}")
    bad = np.flatnonzero(~np.isfinite(u))
    if bad.size:
        raise ParameterError(f"utilities must be finite; utilities[{bad[0]}] = {u[bad[0]]} ({bad.size} not finite). "
                             "Drop those items or give them a utility first.")
    bad = np.flatnonzero(~np.isfinite(c) | (c <= 0))
    if bad.size:
        raise ParameterError(f"costs must be finite and > 0; costs[{bad[0]}] = {c[bad[0]]} ({bad.size} such items)")
    if not (isinstance(cost_budget, (int, float, np.number)) and math.isfinite(cost_budget) and cost_budget >= 0):
        raise ParameterError(f"cost_budget must be a finite number >= 0, got {cost_budget!r}")
    if not time_limit > 0:
        raise ParameterError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    return u, c


def knapsack_values(utilities: Sequence[float] | np.ndarray, rescale: str = "ours") -> np.ndarray:
    """The values the knapsack maximises, from finite utilities.

    - ``"ours"``: ``u - min u`` (>= 0; adding a constant to every utility changes nothing).
    - ``"package"``: ``(u - min u) / (max u - min u) / 2 + 0.1``, in [0.1, 0.6]: subset2evaluate's
      rescaling before its knapsack (``select_subset.py::costaware``, our reading of it, not its
      code). Every item is worth at least 0.1, so more (cheaper) items are favoured. When all
      utilities are equal the package divides by zero; here every value is then 0.1.

    >>> knapsack_values([2.0, 4.0, 10.0]).tolist()              # u - 2
    [0.0, 2.0, 8.0]
    >>> knapsack_values([2.0, 4.0, 10.0], "package").tolist()   # (u - 2) / 8 / 2 + 0.1
    [0.1, 0.225, 0.6]
    """
    rescale = check_choice("rescale", rescale, KNAPSACK_RESCALES, where="knapsack_values")
    u = np.asarray(utilities, dtype=float)
    if not len(u):
        return u.copy()
    shifted = u - u.min()
    if rescale == "ours":
        return shifted
    span = float(shifted.max())
    return (shifted / span if span > 0 else np.zeros_like(shifted)) / 2 + 0.1


def _greedy_fill(picked: np.ndarray, value: np.ndarray, costs: np.ndarray, budget: float) -> int:
    """Add unpicked items that still fit, best value per cost first (ties: cheaper, then earlier).
    Changes ``picked`` in place; returns how many items were added."""
    spent = float(costs[picked].sum())
    added = 0
    for i in np.lexsort((np.arange(len(costs)), costs, -(value / costs))):
        if not picked[i] and spent + costs[i] <= budget:
            picked[i] = True
            spent += costs[i]
            added += 1
    return added


@contextlib.contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """Send what native code writes to stdout (fd 1) to /dev/null for the duration."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real stdout (embedded interpreters): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _solve_milp(value: np.ndarray, costs: np.ndarray, budget: float, time_limit: float) -> tuple[np.ndarray | None, str, str]:
    """HiGHS 0-1 knapsack: (picked mask or None, status, message)."""
    try:
        with _native_stdout_silenced():  # HiGHS can print debug lines straight to file descriptor 1
            res = optimize.milp(
                c=-value,  # milp minimises
                integrality=np.ones(len(value)),
                bounds=optimize.Bounds(0, 1),
                constraints=optimize.LinearConstraint(costs[None, :], -np.inf, budget),
                options={"time_limit": float(time_limit), "disp": False},
            )
    except Exception as e:  # noqa: BLE001 - any solver error falls back to greedy
        return None, "failed", f"milp failed: {type(e).__name__}: {e}"
    x = getattr(res, "x", None)
    if x is None or res.status not in (0, 1):
        return None, "failed", f"milp failed: status {res.status}: {getattr(res, 'message', '')}".rstrip(": ")
    picked = np.asarray(x) > 0.5
    status = "optimal" if res.status == 0 else "time_limit"
    message = "" if status == "optimal" else f"milp stopped at the time limit ({time_limit:g} s) with a feasible solution"
    return picked, status, message


def knapsack_select(utilities: Sequence[float] | np.ndarray, costs: Sequence[float] | np.ndarray,
                    cost_budget: float, *, time_limit: float = 10.0, rescale: str = "ours") -> KnapsackResult:
    """Items maximising total utility with total cost <= ``cost_budget`` (0-1 knapsack).

    1. **Shift.** The solver maximises ``sum (u_i - min u)``. Utilities are often negated
       quantities (negated similarity or metric average), and a knapsack over negative utilities
       would pick nothing; subtracting the minimum makes them >= 0. It also makes the result
       independent of adding a constant to every utility; the flip side is that each picked item
       "costs" ``min u`` relative to the raw sum, so with all-positive utilities a few high-utility
       items can beat more items of moderate utility. ``rescale="package"`` maximises
       subset2evaluate's values instead, ``(u - min) / (max - min) / 2 + 0.1``
       (:func:`knapsack_values`); the steps below use whichever values were chosen.
    2. **Solve.** ``scipy.optimize.milp`` (HiGHS): integrality 1, bounds 0..1, one constraint
       ``costs @ x <= cost_budget``, ``options={"time_limit": time_limit}`` (seconds). HiGHS stops
       at its default relative MIP gap (1e-4). If the budget covers every item, no solve is needed.
    3. **Greedy fill.** Any budget left is filled with unpicked items that still fit, in order of
       shifted utility per cost (ties: cheaper first, then position). This spends budget left by a
       time-limited solve, the MIP gap, or zero-utility items the solver was indifferent to: judging
       one more item never hurts.
    4. **Fallback.** If milp raises or ends without a feasible solution, the greedy fill from an
       empty set is the answer (``solver="greedy"``, ``status="failed"``, ``message`` says why).

    ``utilities`` must be finite, ``costs`` finite and > 0, ``cost_budget`` >= 0. Items come back
    in pick order: descending (given) utility, ties by position.

    >>> knapsack_select([-0.9, -0.2, -0.5], [1.0, 1.0, 1.0], 2.0).items.tolist()  # negated similarities
    [1, 2]
    """
    u, c = _check_inputs(utilities, costs, cost_budget, time_limit)
    budget = float(cost_budget)
    value = knapsack_values(u, rescale)
    params = {"cost_budget": budget, "time_limit": float(time_limit), "n_items": len(u), "rescale": rescale}
    if c.sum() <= budget:
        picked, solver, status, message = np.ones(len(u), dtype=bool), "all", "optimal", "the budget covers every item"
    else:
        sol, status, message = _solve_milp(value, c, budget, time_limit)
        if sol is None:
            picked, solver = np.zeros(len(u), dtype=bool), "greedy"
            message += "; used the greedy utility-per-cost answer"
        else:
            picked, solver = sol, "milp"
            while c[picked].sum() > budget:  # solver tolerance: drop the weakest item per cost until it fits
                inside = np.flatnonzero(picked)
                picked[inside[np.argmin(value[inside] / c[inside])]] = False
        added = _greedy_fill(picked, value, c, budget)
        if added and solver == "milp":
            solver = "milp+greedy"
            message = "; ".join(m for m in (message, f"greedy fill added {added} item(s)") if m)
    items = np.flatnonzero(picked)
    items = items[np.lexsort((items, -u[items]))]
    return KnapsackResult(items=items, total_cost=math.fsum(c[items]), total_utility=math.fsum(u[items]),
                          solver=solver, status=status, message=message, params=params)
