"""Win rates against a baseline, AlpacaEval's way, and AlpacaEval 2.0's length-controlled win rate.

Reference: Y. Dubois, B. Galambosi, P. Liang, T. B. Hashimoto, "Length-Controlled AlpacaEval: A Simple
Way to Debias Automatic Evaluators" (2024, arXiv:2404.04475; COLM 2024) -- "Dubois et al. 2024" below.

Every model is compared with one **baseline** on the same instructions. A comparison's *preference* is
the probability that the model's output beats the baseline's: AlpacaEval's recorded value minus one
(its scale is 1 = baseline wins, 2 = model wins; a weighted judge gives the values in between; 1.5 and 0
are draws), read from the model's side whichever side the baseline was on; a plain verdict counts 1 for
a win, 1/2 for a tie, 0 for a loss.

- :func:`win_rate`: AlpacaEval's win rate, 100 x the mean preference over the instructions (a draw counts
  half), and its standard error, 100 x the sample standard deviation (``ddof=1``) / sqrt(n) (what
  alpaca_eval's ``get_winrate`` computes; Dubois et al. 2024, Sec. 2, the win rate against a baseline).
- :func:`fit_length_glm` / :func:`length_controlled_win_rate`: the length-controlled win rate (Dubois et al.
  2024, Sec. 3: the GLM of the preference and its prediction with the length term switched off). Per
  model, a logistic GLM without a free intercept of the preference on three terms -- the model's own
  intercept, ``tanh(delta / sd(delta))`` with ``delta`` = baseline length - model length in characters
  and ``sd`` the sample standard deviation of ``delta`` over that model's instructions (no centring),
  and the instruction's difficulty (a fixed per-instruction number whose coefficient is fitted) -- is
  fitted to the continuous preferences (each instruction counts as a win with weight ``p`` and a loss
  with weight ``1 - p``: the cross-entropy with soft labels), L1-penalised, its strength ``C`` chosen
  among ``logspace(-4, 4, 10)`` by 5-fold cross-validated soft-label log loss. The length-controlled
  win rate is 100 x the mean over the instructions of the GLM's prediction with ``delta`` = 0. Its
  standard error (:func:`lc_standard_error`) is evalsift's own: the delta method on the fit (sandwich
  form, clustered by instruction), the uncertainty of the fitted coefficients plus the spread of the
  predictions over the instructions -- within 6 % of a bootstrap over instructions on AlpacaEval's
  models (``docs/winrate.md``). AlpacaEval's ``lc_standard_error`` is the standard error of the
  predictions alone (``lc_prediction_sem`` here): it leaves the fit out, so it is 0 whenever the
  predictions do not vary (one model's annotations, no difficulty term) and 3-10 times smaller than the
  bootstrap's spread on the leaderboard.
- :func:`estimate_difficulty`: the instruction difficulties. AlpacaEval downloads a fixed table of them
  (fitted once, by its authors, from the leaderboard models of early 2024); evalsift cannot, so it fits
  them from the comparisons at hand the way that table was made: one joint logistic GLM over every
  model, with a per-model intercept, a per-model slope on ``tanh(delta / sd_model(delta))``, one effect
  per instruction (the first instruction the reference, 0) and a shared intercept, the same L1 penalty
  and cross-validated ``C``; an instruction's difficulty is its effect. Comparisons with an empty model
  output are left out of this fit (as AlpacaEval's authors did).

One more AlpacaEval detail is not reproduced: its per-model fit adds, at weight 0.1 each, the
comparisons of the baseline with its own verbose and concise versions (the "gamed baselines"; the
fit's ``not_gamed_baseline`` term is their indicator), which pulls each model's length and difficulty
coefficients toward the baseline's. Those comparisons are a separate download too; without them this
is AlpacaEval's ``length_controlled_noreg`` variant of the GLM. ``docs/winrate.md`` measures both
differences against the published leaderboard (``benchmarks/alpaca_lc.py``).

AlpacaEval's published files, where you have them: :func:`read_alpaca_difficulty` reads its difficulty table
(``instruction_difficulty.csv``, which its code downloads from the Hugging Face hub), used instead of the
estimate; :func:`read_alpaca_weights` its saved per-model GLM weights (``metrics/weights/<annotator>/
length_controlled_v1/baseline_<baseline>.csv``), from which :func:`published_controlled` predicts a model's
length-controlled win rate as AlpacaEval does -- no fit, so with both files AlpacaEval's own number
(``evalsift winrate --difficulty FILE --weights FILE``; ``benchmarks/alpaca_published_lc.py``).

:func:`winrate_board` puts it together (a :class:`WinRateBoard`, written by :func:`write_board` as
``results.json``, ``leaderboard.csv`` and ``leaderboard.html``); ``evalsift winrate`` is its command.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import DataError, ParameterError, suggest
from .io.pairwise_data import group_of
from .progress import progress_bar
from .verdicts import describe_source, source_of, verdicts_line

#: the candidate L1 strengths (AlpacaEval's LogisticRegressionCV default grid)
CS = tuple(float(c) for c in np.logspace(-4, 4, 10))
N_SPLITS = 5
SEED = 123
#: AlpacaEval's weight of the gamed-baseline comparisons in each model's fit (split among them)
REGULARIZE_TO_BASELINE = 0.2
#: the gamed versions of the baseline whose comparisons with it regularise the fit, when the data has them
GAMED_SUFFIXES = ("_verbose", "_concise")
#: below this many models with lengths, a note says the estimated difficulties say little
FEW_MODELS = 10
#: per-judgment detail fields that are not groupings (``--by``)
# ---------------------------------------------------------------------------------------- the comparisons
@dataclass(frozen=True)
class ModelComparisons:
    """One model against the baseline: per comparison (an instruction; one repeated in the data appears again with
    ``repeats="all"``), the model's preference (probability of beating the baseline, in [0, 1]), the characters
    of both outputs (None when the data has no lengths) and the ``--by`` group (None without one)."""

    model: str
    item_ids: tuple[str, ...]
    preference: np.ndarray
    len_model: np.ndarray | None = None
    len_baseline: np.ndarray | None = None
    groups: tuple[str, ...] | None = None
    weight: np.ndarray | None = None  # per comparison (Arena-Hard's games weighted by strength); None: all 1

    @property
    def n(self) -> int:
        return len(self.item_ids)

    @property
    def delta_len(self) -> np.ndarray | None:
        """Baseline length - model length (characters), AlpacaEval's sign."""
        if self.len_model is None or self.len_baseline is None:
            return None
        return self.len_baseline - self.len_model


@dataclass(frozen=True)
class Comparisons:
    """Every model's comparisons with ``baseline`` by one annotator (see :func:`baseline_comparisons`)."""

    baseline: str
    annotator: str
    kind: str  # the judgments' kind: llm, metric or human
    source: str
    models: dict[str, ModelComparisons]
    by: str | None = None
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    verdicts: dict[str, Any] = field(default_factory=dict)
    annotators: tuple[str, ...] = ()  # the annotators counted (one judge's prompts: several); ``annotator`` joins them


def verdicts_text(annotator: str, kind: str) -> str:
    """Whose verdicts a board counts, in :func:`evalsift.verdicts.verdicts_line`'s words.

    >>> verdicts_text("weighted_alpaca_eval_gpt4_turbo (recorded)", "llm")
    'verdicts: judge weighted_alpaca_eval_gpt4_turbo (recorded)'
    """

    return verdicts_line(describe_source(source_of(kind), [annotator]))


def _judge_key(j: Any) -> tuple[str, str | None] | None:
    """The judge a judgment's annotator is one prompt of: ``(judge model, game)`` for FastChat's ``[judge model,
    prompt]`` cell (``gpt-4/pair-v2`` and ``gpt-4/pair-v2-multi-turn`` are both judge ``gpt-4``), else None."""
    d = j.detail if isinstance(getattr(j, "detail", None), Mapping) else {}
    model = d.get("judge_model")
    return None if model is None else (str(model), d.get("game"))


def pick_annotators(annotators: Sequence[str], wanted: str | None,
                    judges: Mapping[str, tuple[str, str | None] | None] | None = None) -> list[str]:
    """The annotators to count: ``wanted`` (exactly; or the judge model of FastChat prompts, e.g. ``gpt-4``; or
    the annotators whose name contains it, any case, when they are one), else the data's only annotator -- where
    an annotator is one judge under several prompts (``judges``: annotator -> :func:`_judge_key`, the same key for
    all of them), all of them, as FastChat's ``show_result.py`` counts every prompt of its judge file (turn 1's
    ``pair-v2``, turn 2's ``pair-v2-multi-turn``, the math prompts). No annotator, an unknown one, or an ambiguous
    choice is a ParameterError listing the annotators.

    >>> pick_annotators(["weighted_alpaca_eval_gpt4_turbo (recorded)"], "weighted_alpaca_eval_gpt4_turbo")
    ['weighted_alpaca_eval_gpt4_turbo (recorded)']
    >>> key = ("gpt-4", None)
    >>> pick_annotators(["gpt-4/pair-v2", "gpt-4/pair-v2-multi-turn"], None,
    ...                 {"gpt-4/pair-v2": key, "gpt-4/pair-v2-multi-turn": key})
    ['gpt-4/pair-v2', 'gpt-4/pair-v2-multi-turn']
    """
    names = list(dict.fromkeys(annotators))
    judges = dict(judges or {})
    listing = ", ".join(names) or "(none)"

    def one_judge(group: list[str]) -> bool:
        keys = {judges.get(a) for a in group}
        return len(keys) == 1 and None not in keys

    if wanted is None:
        if len(names) == 1 or (names and one_judge(names)):
            return names
        if not names:
            raise DataError("the data holds no pairwise verdicts to count")
        raise ParameterError(f"the data holds the verdicts of {len(names)} annotators; pick one with --annotator NAME. "
                             f"Annotators: {listing}", field="annotator")
    if wanted in names:
        return [wanted]
    by_model = [a for a in names if judges.get(a) is not None and judges[a][0] == wanted]
    if by_model and one_judge(by_model):
        return by_model
    hits = [a for a in names if wanted.lower() in a.lower()]
    if len(hits) == 1 or (hits and one_judge(hits)):
        return hits
    if hits:
        raise ParameterError(f"--annotator {wanted!r} is ambiguous: it matches {', '.join(hits)}; give the full name",
                             field="annotator")
    raise ParameterError(f"Unknown annotator '{wanted}'.{suggest(wanted, names)} Annotators: {listing}",
                         field="annotator")


def pick_annotator(annotators: Sequence[str], wanted: str | None) -> str:
    """The one annotator to count (:func:`pick_annotators` without judges: exactly one name).

    >>> pick_annotator(["weighted_alpaca_eval_gpt4_turbo (recorded)"], "weighted_alpaca_eval_gpt4_turbo")
    'weighted_alpaca_eval_gpt4_turbo (recorded)'
    """
    return pick_annotators(annotators, wanted)[0]


def _lengths(pool: Any) -> Any:
    """``length(item_index, system)`` -> characters or None: the reader's ``_output_length`` column (AlpacaEval's
    preference table), else the length of the output text the Pool holds (annotations.json, battles)."""
    meta = pool.metadata.get("_output_length") if hasattr(pool, "metadata") else None
    if meta is not None:
        def from_meta(i: int, system: str) -> float | None:
            v = meta[i].get(system) if meta[i] is not None else None
            return None if v is None else float(v)
        return from_meta
    outputs = pool.outputs

    def from_text(i: int, system: str) -> float | None:
        col = outputs.get(system)
        text = None if col is None else col[i]
        return None if text is None else float(len(str(text)))
    return from_text


def _preference(j: Any, baseline: str) -> float | None:
    """The model's preference in [0, 1] of one judgment (see the module doc); None without a verdict."""
    if j.status != "done" or j.verdict is None:
        return None
    raw = j.detail.get("preference") if isinstance(j.detail, Mapping) else None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and not math.isnan(raw):
        p = 0.5 if raw == 0 else float(raw) - 1.0  # AlpacaEval's scale: 1 = generator_1 wins, 2 = generator_2
        b_wins = p
    else:
        b_wins = {"b": 1.0, "a": 0.0, "tie": 0.5}[j.verdict]
    return b_wins if j.a == baseline else 1.0 - b_wins


def baseline_comparisons(data: Any, baseline: str, *, annotator: str | None = None,
                         by: str | None = None, repeats: str = "all") -> Comparisons:
    """Every model's comparisons with ``baseline`` in ``data`` (a :class:`~evalsift.io.pairwise_data.PairwiseData`)
    by one annotator (:func:`pick_annotators`: one name, or one judge under several prompts), oriented from the
    model's side whichever side the baseline was judged on. A judgment repeated for the same model, instruction
    and annotator (FastChat appends a rerun's rows) counts as one more comparison with ``repeats="all"`` (what
    ``show_result.py`` counts), or replaces the earlier one with ``"last"``; a note says how many either way.
    Models without a verdict against the baseline are left out (named in ``left_out`` and a note). An unknown
    baseline is a ParameterError naming it and listing the models.
    """
    from .verdicts import REPEATS, describe_judgments

    if repeats not in REPEATS:
        raise ParameterError(f"repeats {repeats!r}: use all or last", field="repeats")
    judgments = [j for j in data.judgments if not getattr(j, "is_score", False)]
    systems = list(data.pool.systems)
    if baseline not in systems:
        raise ParameterError(f"Unknown baseline '{baseline}'.{suggest(baseline, systems)} Models: "
                             f"{', '.join(systems) or '(none)'}", field="baseline")
    with_baseline = [j for j in judgments if baseline in (j.a, j.b)]
    # which annotator: among those who judged the baseline (any, when one is named: a wrong name is then unknown)
    pool_of = with_baseline if annotator is None else judgments
    judges = {j.annotator: _judge_key(j) for j in pool_of}
    who = pick_annotators([j.annotator for j in pool_of], annotator, judges)
    chosen = set(who)
    mine = [j for j in with_baseline if j.annotator in chosen]
    shown = ", ".join(who)
    if not mine:
        raise DataError(f"annotator {shown!r} judged no comparison with the baseline {baseline!r}; judged against it "
                        f"by: {', '.join(dict.fromkeys(j.annotator for j in with_baseline)) or '(nobody)'}",
                        field="baseline")
    group = group_of(data, by, mine) if by else None
    length = _lengths(data.pool)
    index = {iid: k for k, iid in enumerate(data.pool.item_ids)}
    rows: dict[str, list[tuple[str, float, str | None]]] = {}
    last: dict[tuple[str, str, str], int] = {}
    repeated = 0
    no_verdict = 0
    for j in mine:
        model = j.b if j.a == baseline else j.a
        if model == baseline:
            continue
        p = _preference(j, baseline)
        if p is None:
            no_verdict += 1
            continue
        per = rows.setdefault(model, [])
        wj = j.detail.get("weight") if isinstance(j.detail, Mapping) else None  # Arena-Hard: sum of its games' weights
        entry = (j.item_id, p, group(j) if group else None, 1.0 if wj is None else float(wj))
        key = (model, j.item_id, j.annotator)
        if key in last:
            repeated += 1
            if repeats == "last":
                per[last[key]] = entry
                continue
        last[key] = len(per)
        per.append(entry)
    notes: list[str] = []
    if len(who) > 1:
        notes.append(f"counting the verdicts of one judge under its {len(who)} prompts together ({shown}), as "
                     "FastChat's show_result.py does (both turns of MT-Bench); --annotator NAME counts one prompt, "
                     "--by turn gives a board per turn")
    if repeated:
        notes.append(f"{repeated} repeated judgment(s) of the same model, instruction and annotator (a rerun's rows): "
                     + ("each counts, as FastChat's show_result.py counts every row; --repeats last keeps the later "
                        "one only" if repeats == "all" else "the later one counts (--repeats last); FastChat's "
                        "show_result.py counts every row (--repeats all)"))
    if no_verdict:
        notes.append(f"{no_verdict} judgment(s) without a verdict (errors, skips) are not counted")
    models: dict[str, ModelComparisons] = {}
    for model in [s for s in systems if s in rows]:
        per = rows[model]
        ids = tuple(e[0] for e in per)
        pref = np.array([e[1] for e in per], float)
        lm = [length(index[i], model) if i in index else None for i in ids]
        lb = [length(index[i], baseline) if i in index else None for i in ids]
        have = all(v is not None for v in lm) and all(v is not None for v in lb)
        wts = np.array([e[3] for e in per], float)
        models[model] = ModelComparisons(
            model=model, item_ids=ids, preference=pref,
            len_model=np.array(lm, float) if have else None, len_baseline=np.array(lb, float) if have else None,
            groups=tuple(e[2] for e in per) if group else None, weight=None if (wts == 1).all() else wts)
    left = tuple(s for s in systems if s != baseline and s not in models)
    if left:
        notes.append(f"left out, with no verdict of {shown} against {baseline}: {', '.join(left)}")
    kinds = {j.kind for j in mine}
    kind = "human" if kinds == {"human"} else ("metric" if kinds == {"metric"} else "llm")
    return Comparisons(baseline=baseline, annotator=shown, kind=kind, source=str(getattr(data, "source", "")),
                       models=models, by=by, left_out=left, notes=tuple(notes), verdicts=describe_judgments(mine),
                       annotators=tuple(who))


# ---------------------------------------------------------------------------------------- the win rate
def win_rate(preference: Sequence[float], weight: Sequence[float] | None = None) -> dict[str, Any]:
    """AlpacaEval's win rate of preferences in [0, 1] (the model's probability of beating the baseline; a draw
    is 0.5): ``win_rate`` = 100 x mean, ``standard_error`` = 100 x sample sd (ddof=1) / sqrt(n) (None below two
    instructions), and the counts of wins (> 0.5), baseline wins (< 0.5) and draws (= 0.5). Dubois et al. 2024,
    Sec. 2 (AlpacaEval's win rate against a baseline).

    ``weight`` (one per comparison; Arena-Hard's questions, each the sum of its games' weights): the weighted
    mean ``sum(w p) / sum(w)`` -- Arena-Hard-Auto's score -- and the standard error of that ratio,
    ``sqrt(n / (n - 1) * sum(w^2 (p - mean)^2)) / sum(w)`` (the plain one when the weights are equal).

    >>> r = win_rate([1.0, 0.0, 0.5, 1.0])
    >>> r["win_rate"], round(r["standard_error"], 2), r["n_wins"], r["n_draws"]
    (62.5, 23.94, 2, 1)
    >>> win_rate([1.0, 0.25], [2, 4])["win_rate"]   # (2 x 1 + 4 x 0.25) / 6
    50.0
    """
    p = np.asarray(preference, float)
    n = len(p)
    if weight is not None and n:
        w = np.asarray(weight, float)
        m = float((w * p).sum() / w.sum())
        se = math.sqrt(n / (n - 1) * float((w * w * (p - m) ** 2).sum())) / float(w.sum()) if n > 1 else None
        return {"win_rate": 100 * m, "standard_error": None if se is None else 100 * se,
                "n": n, "n_wins": int((p > 0.5).sum()), "n_wins_base": int((p < 0.5).sum()),
                "n_draws": int((p == 0.5).sum())}
    return {"win_rate": float(100 * p.mean()) if n else None,
            "standard_error": float(100 * p.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "n": n, "n_wins": int((p > 0.5).sum()), "n_wins_base": int((p < 0.5).sum()),
            "n_draws": int((p == 0.5).sum())}


# ---------------------------------------------------------------------------------------- the GLM
def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _l1_kwargs() -> dict[str, Any]:
    """An L1 penalty for sklearn's liblinear solver (``l1_ratio=1`` from sklearn 1.8, ``penalty`` before)."""
    import sklearn

    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}


#: liblinear's L1-regularised logistic regression (its solver 6, newGLMNET), as sklearn's ``LogisticRegression(
#: solver="liblinear", penalty="l1")`` runs it: tolerance, iteration cap
_LIBLINEAR_L1LR, _TOL, _MAX_ITER = 6, 1e-4, 100


def _soft_problem(X: Any, p: np.ndarray, weight: np.ndarray | None) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """The soft-label problem as liblinear takes it: every row twice, as a win with weight ``weight * p`` and as a
    loss with weight ``weight * (1 - p)``, rows of weight 0 dropped; ``(X, y, sample_weight)``, or None when every
    label left is on one side."""
    import scipy.sparse as sp

    w = np.ones(len(p)) if weight is None else np.asarray(weight, float)
    sw = np.concatenate([w * p, w * (1 - p)])
    y = np.concatenate([np.ones(len(p)), np.zeros(len(p))])
    keep = sw > 0
    if len(np.unique(y[keep])) < 2:
        return None
    Xd = sp.vstack([X, X], format="csr") if sp.issparse(X) else np.vstack([X, X])
    return Xd[keep], y[keep], sw[keep]


def _liblinear() -> Any:
    """sklearn's compiled liblinear wrapper when it is the one this code was checked against, else None."""
    try:
        from sklearn.svm import _liblinear as lib
    except ImportError:  # pragma: no cover - sklearn moved it
        return None
    if not hasattr(lib, "train_wrap"):  # pragma: no cover
        return None
    if hasattr(lib, "set_verbosity_wrap"):
        lib.set_verbosity_wrap(0)  # as sklearn sets it before each fit: liblinear prints nothing
    return lib


def _solve_l1(problem: tuple[Any, np.ndarray, np.ndarray], C: float, seed: int) -> np.ndarray:
    """Coefficients of liblinear's L1-penalised logistic regression (no intercept) on a :func:`_soft_problem`.

    The compiled solver is called as ``LogisticRegression(solver="liblinear", penalty="l1", C=C,
    fit_intercept=False, random_state=seed).fit(X, y, sample_weight=...)`` calls it -- the same arguments, so the
    same coefficients to the last bit (``tests/test_winrate_lc.py`` checks it) -- without sklearn's per-fit input
    validation, which took most of the time of the thousands of small fits a leaderboard needs. Where that
    wrapper is missing or refuses the call (another sklearn), the estimator itself is used."""
    import scipy.sparse as sp

    X, y, sw = problem
    lib = _liblinear()
    if lib is not None:
        sparse = sp.issparse(X)
        Xc = X if sparse else np.ascontiguousarray(X, dtype=np.float64)
        seed_int = np.random.RandomState(seed).randint(np.iinfo("i").max)  # what sklearn passes for an int seed
        try:
            raw, _ = lib.train_wrap(Xc, np.require(y.astype(np.float64), requirements="W"), sparse, _LIBLINEAR_L1LR,
                                    _TOL, -1.0, float(C), np.ones(2), _MAX_ITER, seed_int, 0.1,
                                    np.ascontiguousarray(sw, dtype=np.float64))
            return np.asarray(raw, float).reshape(-1)[: X.shape[1]]
        except (TypeError, ValueError):  # pragma: no cover - another sklearn's signature
            pass
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(solver="liblinear", C=C, fit_intercept=False, random_state=seed, tol=_TOL,
                               max_iter=_MAX_ITER, **_l1_kwargs())
    model.fit(X, y, sample_weight=sw)
    return model.coef_[0].astype(float)


def _fit_l1(X: Any, p: np.ndarray, C: float, weight: np.ndarray | None, seed: int) -> np.ndarray | None:
    """Coefficients of the L1-penalised logistic regression of soft labels ``p`` on ``X`` (no free intercept):
    minimise ||w||_1 + C * sum_i weight_i * CE(p_i, sigmoid(x_i w)). Each row enters twice, as a win with weight
    ``weight * p`` and as a loss with weight ``weight * (1 - p)``. None when every label is on one side."""
    problem = _soft_problem(X, p, weight)
    return None if problem is None else _solve_l1(problem, C, seed)


def _soft_log_likelihood(p: np.ndarray, q: np.ndarray, weight: np.ndarray | None) -> float:
    q = np.clip(q, 1e-15, 1 - 1e-15)
    ll = p * np.log(q) + (1 - p) * np.log(1 - q)
    return float((ll if weight is None else ll * weight).mean())


#: from this many rows (the soft-label problem's, doubled) the cross-validation's fits run on worker processes
#: (the joint difficulty fit of a leaderboard is far above it; one model's fit far below)
_PARALLEL_ROWS = 20000


#: at most this many worker processes for one cross-validation (the folds' problems are copied to each)
MAX_JOBS = 4


def _workers(jobs: int | str | None) -> int:
    """Worker processes for the cross-validation's fits: ``jobs`` (1: none, in this process; 0, ``"auto"`` or None:
    the cores this process may use), at most :data:`MAX_JOBS`."""
    from .bench.parallel import resolve_jobs

    return max(1, min(MAX_JOBS, resolve_jobs(jobs)))


def _fold_fit(shared: tuple[list[Any], Sequence[float], int], task: tuple[int, int]) -> np.ndarray:
    """One cross-validation fit, in a worker of :func:`evalsift.bench.parallel.run_tasks`: fold ``task[0]``'s
    problem at strength ``Cs[task[1]]``."""
    problems, Cs, seed = shared
    f, c = task
    return _solve_l1(problems[f], Cs[c], seed)


def _cv_fit(X: Any, p: np.ndarray, weight: np.ndarray | None = None, *, Cs: Sequence[float] = CS,
            n_splits: int = N_SPLITS, seed: int = SEED, jobs: int | str | None = 1,
            advance: Any = None) -> tuple[np.ndarray | None, float | None]:
    """(coefficients, chosen C): the C of ``Cs`` with the best soft-label log likelihood summed over ``n_splits``
    folds of the rows (sklearn's GroupKFold, one group per row), refitted on every row. The folds' fits are
    independent and each seeds liblinear itself, so with ``jobs`` other than 1 a large problem (from
    :data:`_PARALLEL_ROWS` rows) runs them on worker processes (:func:`evalsift.bench.parallel.run_tasks`; not
    threads -- liblinear's random state is one per process), with the same result as one after the other.
    Worker processes are started afresh (``spawn``): a script that asks for them needs the usual ``if __name__ ==
    "__main__":`` guard. ``advance(n)``: called as fits finish (a progress bar)."""
    from sklearn.model_selection import GroupKFold

    n = len(p)
    step = advance or (lambda k=1: None)
    if np.all(p >= 1) or np.all(p <= 0):  # every row a sure win, or every one a sure loss: nothing to fit
        return None, None
    k = min(n_splits, n)
    if k >= 2:
        folds = [(_soft_problem(X[train], p[train], None if weight is None else weight[train]), test)
                 for train, test in GroupKFold(n_splits=k).split(np.zeros(n), groups=np.arange(n))]
        tasks = [(f, c) for f in range(len(folds)) for c in range(len(Cs)) if folds[f][0] is not None]
        step(len(folds) * len(Cs) - len(tasks))  # folds with every label on one side: nothing to fit
        shared = ([f[0] for f in folds], tuple(Cs), seed)
        workers = 1 if jobs == 1 or 2 * n < _PARALLEL_ROWS or len(tasks) <= 1 else _workers(jobs)
        if workers > 1:
            from .bench.parallel import run_tasks

            coefs = run_tasks(_fold_fit, tasks, shared=shared, jobs=min(workers, len(tasks)), advance=step)
        else:
            coefs = []
            for task in tasks:
                coefs.append(_fold_fit(shared, task))
                step(1)
        fitted = dict(zip(tasks, coefs))
        scores = np.zeros(len(Cs))
        for f, (problem, test) in enumerate(folds):  # summed fold by fold: the same floating-point sums as ever
            for c in range(len(Cs)):
                coef = fitted.get((f, c))
                if coef is None:
                    scores[c] = -np.inf
                    continue
                q = _sigmoid(np.asarray(X[test] @ coef).ravel())
                scores[c] += _soft_log_likelihood(p[test], q, None if weight is None else weight[test])
        best = float(Cs[int(np.argmax(scores))])
    else:
        best = float(Cs[-1])
    coef = _fit_l1(X, p, best, weight, seed)
    step(1)
    return coef, best


def cv_fits(n_rows: int, Cs: Sequence[float] = CS, n_splits: int = N_SPLITS) -> int:
    """How many fits :func:`_cv_fit` runs on ``n_rows`` rows (its progress steps)."""
    k = min(n_splits, n_rows)
    return (k * len(Cs) if k >= 2 else 0) + 1


@dataclass(frozen=True)
class LengthGLM:
    """One model's fitted length GLM (:func:`fit_length_glm`): coefficients of ``tanh(delta / sd)``
    (``length``), of the instruction difficulty (``difficulty``) and the model's intercept (``intercept``;
    AlpacaEval's ``not_gamed_baseline`` column), the chosen L1 strength ``C`` and ``sd``, the sample standard
    deviation of the length differences it standardised by."""

    length: float
    difficulty: float
    intercept: float
    C: float | None
    sd: float

    def predict(self, delta_len: np.ndarray | float, difficulty: np.ndarray | float) -> np.ndarray:
        """The preference the GLM predicts for a length difference (baseline - model) and a difficulty."""
        d = np.asarray(delta_len, float)
        z = np.tanh(d / self.sd) if self.sd > 0 else np.zeros_like(d)
        return _sigmoid(self.length * z + self.difficulty * np.asarray(difficulty, float) + self.intercept)

    def controlled(self, difficulty: np.ndarray) -> np.ndarray:
        """Per instruction, the preference with the length difference set to zero (Dubois et al. 2024, Sec. 3)."""
        return self.predict(0.0, difficulty)

    def to_dict(self) -> dict[str, Any]:
        return {"length": self.length, "difficulty": self.difficulty, "intercept": self.intercept, "C": self.C,
                "sd_delta_len": self.sd}


def _standardised(delta_len: np.ndarray) -> tuple[np.ndarray, float]:
    """(tanh(delta / sd), sd): sd the sample standard deviation (ddof=1) of ``delta``, not centred; zeros when 0."""
    d = np.asarray(delta_len, float)
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    sd = sd if np.isfinite(sd) else 0.0
    return (np.tanh(d / sd) if sd > 0 else np.zeros(len(d))), sd


def _length_design(preference: Sequence[float], delta_len: Sequence[float], difficulty: Sequence[float] | None,
                   anchors: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]],
                   anchor_weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """``(X, p, weight, sd)`` of one model's length GLM: the model's rows (``tanh(delta / sd)``, difficulty, 1)
    first, then each anchor's rows (its own ``tanh``, difficulty, 0) at weight ``anchor_weight / len(anchors)``;
    ``weight`` None without anchors."""
    p = np.asarray(preference, float)
    diff = np.zeros(len(p)) if difficulty is None else np.asarray(difficulty, float)
    z, sd = _standardised(delta_len)
    X = np.column_stack([z, diff, np.ones(len(p))])
    weight = None
    if anchors:
        parts, prefs, weights = [X], [p], [np.ones(len(p))]
        for ap, ad, adiff in anchors:
            az, _ = _standardised(ad)
            parts.append(np.column_stack([az, np.asarray(adiff, float), np.zeros(len(az))]))
            prefs.append(np.asarray(ap, float))
            weights.append(np.full(len(az), anchor_weight / len(anchors)))
        X, p, weight = np.vstack(parts), np.concatenate(prefs), np.concatenate(weights)
    return X, p, weight, sd


def fit_length_glm(preference: Sequence[float], delta_len: Sequence[float], difficulty: Sequence[float] | None = None,
                   *, anchors: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float]]] = (),
                   anchor_weight: float = REGULARIZE_TO_BASELINE, Cs: Sequence[float] = CS, n_splits: int = N_SPLITS,
                   seed: int = SEED) -> LengthGLM | None:
    """Fit one model's length GLM (Dubois et al. 2024, Sec. 3): the logistic regression of the preference on
    ``tanh(delta_len / sd(delta_len))``, the instruction ``difficulty`` (zeros when None) and a constant, with
    no other intercept, L1-penalised with C cross-validated (see the module doc). ``delta_len`` = baseline
    length - model length. None when every preference is 1 (or every one 0): nothing to fit.

    ``anchors``: AlpacaEval's regularisation to the baseline -- ``(preference, delta_len, difficulty)`` of the
    baseline against each of its own gamed (verbose, concise) versions, added to the fit with weight
    ``anchor_weight / len(anchors)`` each and without the model's constant, so they pull the length and
    difficulty coefficients toward the baseline's own.

    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(0, 500, 600)                       # the baseline is longer by d characters
    >>> p = 1 / (1 + np.exp(-(0.4 - 1.5 * np.tanh(d / d.std(ddof=1)))))
    >>> glm = fit_length_glm(p, d)
    >>> round(glm.length, 1), round(glm.intercept, 1)
    (-1.5, 0.4)
    """
    X, p, weight, sd = _length_design(preference, delta_len, difficulty, anchors, anchor_weight)
    coef, C = _cv_fit(X, p, weight, Cs=Cs, n_splits=n_splits, seed=seed)
    if coef is None:
        return None
    return LengthGLM(length=float(coef[0]), difficulty=float(coef[1]), intercept=float(coef[2]), C=C, sd=sd)


@dataclass(frozen=True)
class LCInfluence:
    """What the standard error of a length-controlled win rate needs (:func:`lc_standard_error`), for one model:
    per instruction the controlled prediction ``q0`` and its gradient ``dq0`` in the fitted coefficients (the
    active ones: non-zero, and always the model's intercept), ``G`` = H^-1 psi^T (the Hessian of the fit's
    log likelihood and each row's score: the model's rows, then the anchors'), and ``clusters``: the rows that
    are one instruction's (a repeated judgment of the same instruction is one cluster)."""

    q0: np.ndarray
    dq0: np.ndarray
    G: np.ndarray
    clusters: np.ndarray


def _lc_influence(glm: LengthGLM, X: np.ndarray, p: np.ndarray, weight: np.ndarray | None, diff: np.ndarray,
                  item_ids: Sequence[str] | None) -> LCInfluence:
    """The pieces of :class:`LCInfluence` for a fitted GLM on design ``X`` (:func:`_length_design`)."""
    coef = np.array([glm.length, glm.difficulty, glm.intercept])
    active = sorted(set(np.flatnonzero(coef != 0).tolist()) | {2})
    n = len(diff)
    w = np.ones(len(p)) if weight is None else np.asarray(weight, float)
    q = _sigmoid(X @ coef)
    Xa = X[:, active]
    psi = (w * (p - q))[:, None] * Xa
    H = (Xa * (w * q * (1 - q))[:, None]).T @ Xa
    G = np.linalg.pinv(H) @ psi.T
    X0 = np.column_stack([np.zeros(n), diff, np.ones(n)])
    q0 = _sigmoid(X0 @ coef)
    dq0 = (q0 * (1 - q0))[:, None] * X0[:, active]
    if item_ids is None:
        model_clusters = np.arange(n)
    else:
        first: dict[str, int] = {}
        model_clusters = np.array([first.setdefault(i, len(first)) for i in item_ids])
    top = int(model_clusters.max()) + 1 if n else 0
    clusters = np.concatenate([model_clusters, top + np.arange(len(p) - n)])
    return LCInfluence(q0=q0, dq0=dq0, G=G, clusters=clusters)


def lc_standard_error(influence: LCInfluence | None, mask: np.ndarray | None = None) -> float | None:
    """100 x the standard error of a length-controlled win rate (the mean of ``q0`` over the instructions in
    ``mask``, all by default), by the delta method on the fit (M-estimation, the sandwich form): per
    instruction ``i``, its influence ``(q0_i - LC) / n + grad(LC)^T H^-1 psi_i`` -- the spread of the
    predictions over the instructions plus what instruction ``i``'s comparison moved the fitted coefficients
    by -- summed within an instruction, squared and added up, times ``n / (n - 1)``. With no length and no
    difficulty term this is the raw win rate's standard error. The instruction difficulties count as known (as
    AlpacaEval's fixed table does), and the L1 strength as chosen. None below two instructions or without a
    fit."""
    if influence is None:
        return None
    n_all = len(influence.q0)
    m = np.ones(n_all, bool) if mask is None else np.asarray(mask, bool)
    k = int(m.sum())
    if k < 2:
        return None
    u = influence.dq0[m].mean(axis=0) @ influence.G
    u[:n_all][m] += (influence.q0[m] - influence.q0[m].mean()) / k
    sums = np.bincount(influence.clusters, weights=u)
    clusters_in = len(np.unique(influence.clusters[:n_all][m]))
    factor = clusters_in / (clusters_in - 1) if clusters_in > 1 else 1.0
    return float(100 * math.sqrt(float((sums ** 2).sum()) * factor))


def length_controlled_win_rate(preference: Sequence[float], delta_len: Sequence[float],
                               difficulty: Sequence[float] | None = None, *,
                               item_ids: Sequence[str] | None = None, **fit: Any) -> dict[str, Any]:
    """A model's length-controlled win rate (Dubois et al. 2024, Sec. 3): 100 x the mean over its instructions
    of the fitted GLM's prediction with the length difference set to zero. ``lc_standard_error``: its standard
    error by the delta method (:func:`lc_standard_error`: the fit's uncertainty and the spread over the
    instructions); ``lc_prediction_sem``: AlpacaEval's ``lc_standard_error``, 100 x the standard error of the
    predictions alone (``pd.Series(pred).sem()``; 0 whenever the predictions do not vary, e.g. with no
    difficulty term). With every preference 1 (or 0) the GLM cannot be fitted and the raw win rate stands
    (``glm`` None; both errors are then the raw one's). ``item_ids``: the instructions (a repeated one is one
    cluster of the standard error). ``fit``: options of :func:`fit_length_glm`."""
    p = np.asarray(preference, float)
    diff = np.zeros(len(p)) if difficulty is None else np.asarray(difficulty, float)
    glm = fit_length_glm(p, delta_len, diff, **fit)
    influence = None
    if glm is not None:
        q = glm.controlled(diff)
        X, pp, weight, _ = _length_design(p, delta_len, diff, fit.get("anchors", ()),
                                          fit.get("anchor_weight", REGULARIZE_TO_BASELINE))
        influence = _lc_influence(glm, X, pp, weight, diff, item_ids)
    else:
        q = p.copy()
    sem = float(100 * q.std(ddof=1) / math.sqrt(len(q))) if len(q) > 1 else None
    return {"length_controlled_winrate": float(100 * q.mean()) if len(q) else None,
            "lc_standard_error": lc_standard_error(influence) if influence is not None else sem,
            "lc_prediction_sem": sem, "glm": glm, "controlled": q, "influence": influence}


def estimate_difficulty(comparisons: Comparisons | Mapping[str, ModelComparisons], *, Cs: Sequence[float] = CS,
                        n_splits: int = N_SPLITS, seed: int = SEED, quiet: bool | None = None,
                        jobs: int | str | None = 1) -> dict[str, Any]:
    """Per-instruction difficulties from the comparisons at hand, fitted as AlpacaEval's authors fitted theirs
    (see the module doc): one joint L1-penalised logistic GLM over every model with lengths -- per-model
    intercepts, per-model slopes on ``tanh(delta / sd_model(delta))``, an effect per instruction (the first
    instruction seen is the reference, 0) and a shared constant -- with C cross-validated. Comparisons with an
    empty model output are left out. Returns ``{"difficulty": {item_id: value}, "C": chosen C, "rows": n,
    "models": m}``; instructions no model with lengths was compared on get 0. ``jobs``: worker processes for the
    cross-validation's fits (:func:`_cv_fit`; the same result); a progress bar unless ``quiet``
    (:func:`evalsift.progress.progress_bar`).
    """
    import scipy.sparse as sp

    models = comparisons.models if isinstance(comparisons, Comparisons) else dict(comparisons)
    usable = [m for m in models.values() if m.len_model is not None]
    items: dict[str, int] = {}
    for m in usable:
        for i in m.item_ids:
            items.setdefault(i, len(items))
    M, nI = len(usable), len(items)
    rows, cols, vals, prefs = [], [], [], []
    r = 0
    for k, m in enumerate(usable):
        d = m.delta_len
        sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
        z = np.tanh(d / sd) if sd > 0 and np.isfinite(sd) else np.zeros(len(d))
        for t, iid in enumerate(m.item_ids):
            if m.len_model[t] <= 0:
                continue
            rows += [r, r, r]
            cols += [k, M + k, 2 * M + nI - 1]
            vals += [1.0, z[t], 1.0]
            j = items[iid]
            if j > 0:
                rows.append(r)
                cols.append(2 * M + j - 1)
                vals.append(1.0)
            prefs.append(m.preference[t])
            r += 1
    if r == 0:
        return {"difficulty": {i: 0.0 for i in items}, "C": None, "rows": 0, "models": M}
    X = sp.csr_matrix((vals, (rows, cols)), shape=(r, 2 * M + nI))
    with progress_bar(cv_fits(r, Cs, n_splits), f"instruction difficulty (joint GLM, {M} models)", quiet) as advance:
        coef, C = _cv_fit(X, np.asarray(prefs, float), Cs=Cs, n_splits=n_splits, seed=seed, jobs=jobs,
                          advance=advance)
    effects = np.zeros(nI)
    if coef is not None:
        effects[1:] = coef[2 * M: 2 * M + nI - 1]
    return {"difficulty": {i: float(effects[j]) for i, j in items.items()}, "C": C, "rows": r, "models": M}


# ---------------------------------------------------------------------------------------- AlpacaEval's published files
#: AlpacaEval's saved GLM weights: its formula's terms as patsy names them (the file's columns) -> our names
WEIGHT_COLUMNS = {"np.tanh(std_delta_len)": "length", "instruction_difficulty": "difficulty",
                  "not_gamed_baseline.astype(float)": "intercept"}
_WEIGHTS_NAME = re.compile(r"baseline_(?P<baseline>.+)\.csv$")


@dataclass(frozen=True)
class PublishedDifficulty:
    """AlpacaEval's per-instruction difficulty table (:func:`read_alpaca_difficulty`): ``values`` maps AlpacaEval's
    instruction index (``by="index"``) or the instruction's text (``by="instruction"``) to its difficulty."""

    path: str
    values: dict[Any, float]
    by: str

    def join(self, pool: Any, item_ids: Sequence[str]) -> tuple[dict[str, float], str]:
        """``({item_id: difficulty}, how the items were matched)`` for the instructions ``item_ids`` of ``pool``.

        By index: an item whose id is a whole number (the preference table's ``instruction_idx``, an
        ``annotations.json`` with an ``index`` column) is that index; when the ids are not numbers (AlpacaEval
        annotations keyed by their text), the k-th instruction in the data's order is index k, as AlpacaEval's own
        code reads the k-th annotation of a run. By instruction: the item's input text. An instruction of the data
        without a difficulty is a DataError naming the first and the count (AlpacaEval's code stops on it too)."""
        wanted = list(dict.fromkeys(item_ids))
        if self.by == "instruction":
            inputs = getattr(pool, "inputs", None)
            if not inputs or not any(inputs):
                raise DataError(f"{self.path}: the difficulties are keyed by instruction text, and the data holds no "
                                "instruction texts to join them on (AlpacaEval's preference table has none): give a "
                                "table keyed by AlpacaEval's instruction index, or annotations with their instructions",
                                field="difficulty")
            text_of = dict(zip(pool.item_ids, inputs))
            keys = {i: (str(text_of[i]) if text_of.get(i) else None) for i in wanted}
            how = "joined by instruction text"
        elif all(str(i).strip().isdigit() for i in wanted):
            keys = {i: int(str(i).strip()) for i in wanted}
            how = "joined by AlpacaEval's instruction index (the item id)"
        else:
            position = {iid: k for k, iid in enumerate(pool.item_ids)}
            keys = {i: position.get(i) for i in wanted}
            how = ("joined by position: the data's k-th instruction is AlpacaEval's index k (its item ids are not "
                   "indices; AlpacaEval's own code reads a run's k-th annotation as index k)")
        missing = [i for i in wanted if keys[i] is None or keys[i] not in self.values]
        if missing:
            first = missing[0]
            shown = f"item {first!r}" + (f" (index {keys[first]})" if self.by == "index" and keys[first] is not None
                                         else "")
            raise DataError(f"{self.path}: {len(missing)} of the data's {len(wanted)} instructions have no difficulty "
                            f"in this table ({how}); the first: {shown}. AlpacaEval's table covers its 805 "
                            "instructions: check that the data is AlpacaEval's evaluation set, or leave --difficulty "
                            "out to estimate the difficulties from the data", field="difficulty", item_id=str(first))
        return {i: float(self.values[keys[i]]) for i in wanted}, how


@dataclass(frozen=True)
class PublishedWeights:
    """AlpacaEval's saved per-model GLM weights (:func:`read_alpaca_weights`): ``rows`` maps the file's model
    name to ``{"length", "difficulty", "intercept"}``; ``baseline``: the one its name records (``baseline_<name>.csv``),
    or None."""

    path: str
    rows: dict[str, dict[str, float]]
    baseline: str | None = None


def _csv_table(path: str | Path, what: str, expected: str) -> tuple[Path, list[str], list[tuple[int, list[str]]]]:
    """(path, header, [(line, row)]) of a small CSV file; DataError naming the file when empty, ragged or not CSV."""
    import io as _io

    from .io._common import blank_state, empty_file_error, read_text

    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise empty_file_error(path, blank_state(text), what, expected)
    reader = csv.reader(_io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
        rows = []
        for r in reader:
            if not r or not any(c.strip() for c in r):
                continue
            if len(r) != len(header):
                raise DataError(f"{path}: line {reader.line_num} has {len(r)} fields, the header {len(header)}; "
                                f"expected {expected}.")
            rows.append((reader.line_num, r))
    except csv.Error as e:
        raise DataError(f"{path}: line {reader.line_num} is not valid CSV ({e}); expected {expected}.") from None
    return path, header, rows


def _number(path: Path, line: int, column: str, raw: str, what: str) -> float:
    from .io._common import to_float

    try:
        v = to_float(raw)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v):
        raise DataError(f"{path}: line {line}: {column} is {raw.strip()!r}, not a number; every {what} needs one.",
                        field=column)
    return v


def read_alpaca_difficulty(path: str | Path) -> PublishedDifficulty:
    """AlpacaEval's per-instruction difficulty table, ``instruction_difficulty.csv`` (the file its
    ``glm_winrate._get_instructions_difficulty`` reads with ``pd.read_csv(path, index_col=0).squeeze()``): a
    header line, then per instruction its key (first column, ``index``: AlpacaEval's instruction index 0..804 in
    its evaluation set's order) and its difficulty (column ``instruction_difficulty``, or ``difficulty``, or the only
    other column). A table keyed by the instructions' text instead has a column ``instruction`` (or text keys in the
    first column). A key given twice, or a value that is not a number, is a DataError naming the line.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "instruction_difficulty.csv")
    >>> _ = open(p, "w").write("index,instruction_difficulty\\n0,0.0\\n1,-0.25\\n")
    >>> t = read_alpaca_difficulty(p)
    >>> t.by, t.values
    ('index', {0: 0.0, 1: -0.25})
    """
    expected = ("AlpacaEval's instruction_difficulty.csv: a header line (index,instruction_difficulty), then one "
                "line per instruction with its index and difficulty")
    path, header, rows = _csv_table(path, "instruction difficulties", expected)
    lower = [h.lower() for h in header]
    key_col = lower.index("instruction") if "instruction" in lower else 0
    value_col = next((lower.index(c) for c in ("instruction_difficulty", "difficulty") if c in lower), None)
    if value_col is None and len(header) == 2:
        value_col = 1 - key_col
    if value_col is None or value_col == key_col:
        raise DataError(f"{path}: no difficulty column among {header}; expected {expected}.", field="difficulty")
    keys = [r[key_col].strip() for _, r in rows]
    by = "instruction" if lower[key_col] == "instruction" else (
        "index" if all(k.isdigit() for k in keys) else ("instruction" if lower[key_col] != "index" else None))
    if by is None:
        bad = next((line, r[key_col]) for line, r in rows if not r[key_col].strip().isdigit())
        raise DataError(f"{path}: line {bad[0]}: index {bad[1]!r} is not a whole number; AlpacaEval's table gives each "
                        "instruction's index (0, 1, ...).", field="index")
    values: dict[Any, float] = {}
    seen: dict[Any, int] = {}
    for (line, r), k in zip(rows, keys):
        key: Any = int(k) if by == "index" else r[key_col]
        if key in seen:
            raise DataError(f"{path}: line {line} gives {header[key_col]} {k[:60]!r} again (first on line {seen[key]}); "
                            "keep one difficulty per instruction.", field=header[key_col])
        seen[key] = line
        values[key] = _number(path, line, header[value_col], r[value_col], "instruction")
    if not values:
        raise DataError(f"{path}: a header line and no instruction; expected {expected}.", field="difficulty")
    return PublishedDifficulty(path=str(path), values=values, by=by)


def read_alpaca_weights(path: str | Path) -> PublishedWeights:
    """AlpacaEval's saved per-model weights of its length-controlled GLM, ``metrics/weights/<annotator>/
    length_controlled_v1/baseline_<baseline>.csv`` (what ``glm_winrate.get_length_controlled_winrate`` writes with
    ``DataFrame.to_csv``): the model in the first column (AlpacaEval's ``generator_2``), then one column per term
    of its formula, :data:`WEIGHT_COLUMNS` (``np.tanh(std_delta_len)``, ``instruction_difficulty``,
    ``not_gamed_baseline.astype(float)``, the model's intercept). The intercept is needed; a term the file lacks
    (``length_controlled_minimal`` has no difficulty) is 0; a column of another term is a DataError (its prediction
    would need it), as are a model given twice and a value that is not a number.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "baseline_gpt4_1106_preview.csv")
    >>> _ = open(p, "w").write(",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\\n"
    ...                        "m1,-1.5,0.8,-0.5\\n")
    >>> w = read_alpaca_weights(p)
    >>> w.rows["m1"], w.baseline
    ({'length': -1.5, 'difficulty': 0.8, 'intercept': -0.5}, 'gpt4_1106_preview')
    """
    names = ", ".join(WEIGHT_COLUMNS)
    expected = (f"AlpacaEval's GLM weights (metrics/weights/<annotator>/length_controlled_v1/baseline_<model>.csv): a "
                f"header line naming {names} after the model column, then one line per model")
    path, header, rows = _csv_table(path, "GLM weights", expected)
    terms = header[1:]
    unknown = [t for t in terms if t not in WEIGHT_COLUMNS]
    if unknown or "not_gamed_baseline.astype(float)" not in terms:
        what = (f"unknown term column(s) {unknown}" if unknown else
                "no column not_gamed_baseline.astype(float) (the model's intercept)")
        raise DataError(f"{path}: {what}; found {header}. Expected {expected}.", field="weights")
    out: dict[str, dict[str, float]] = {}
    seen: dict[str, int] = {}
    for line, r in rows:
        model = r[0].strip()
        if not model:
            raise DataError(f"{path}: line {line} names no model (first column); every row is one model's weights.",
                            field="model")
        if model in seen:
            raise DataError(f"{path}: line {line} gives the weights of {model!r} again (first on line {seen[model]}); "
                            "keep one row per model.", field="model", system=model)
        seen[model] = line
        row = {v: 0.0 for v in WEIGHT_COLUMNS.values()}
        for t, raw in zip(terms, r[1:]):
            row[WEIGHT_COLUMNS[t]] = _number(path, line, t, raw, "model's weight")
        out[model] = row
    m = _WEIGHTS_NAME.search(path.name)
    return PublishedWeights(path=str(path), rows=out, baseline=m.group("baseline") if m else None)


def published_controlled(weights: Mapping[str, float], difficulty: Sequence[float]) -> np.ndarray:
    """Per instruction, the preference AlpacaEval's GLM predicts with a model's saved ``weights`` and no length
    difference: ``logistic(intercept + difficulty_coefficient x difficulty)`` (the length term is 0 at no length
    difference). 100 x their mean is the model's length-controlled win rate, as
    ``glm_winrate.get_length_controlled_winrate`` computes it from the same coefficients.

    >>> published_controlled({"length": -1.5, "difficulty": 1.0, "intercept": 0.0}, [0.0, 1.0]).round(4)
    array([0.5   , 0.7311])
    """
    d = np.asarray(difficulty, float)
    return _sigmoid(float(weights["intercept"]) + float(weights["difficulty"]) * d)


def _weights_keys(data: Any, comparisons: Comparisons, weights: PublishedWeights) -> dict[str, str]:
    """``{model: the row of weights}``: the model's AlpacaEval results folder (``model_dir`` of the preference
    table, the name its leaderboard and weights use) when the file has a row of that name, else the model's own name
    (AlpacaEval's ``generator_2``, the key it saves weights under)."""
    dirs: dict[str, dict[str, None]] = {}
    base = comparisons.baseline
    for j in data.judgments:
        d = j.detail.get("model_dir") if isinstance(getattr(j, "detail", None), Mapping) else None
        if d and base in (j.a, j.b):
            dirs.setdefault(j.b if j.a == base else j.a, {})[str(d)] = None
    out = {}
    for model in comparisons.models:
        key = next((c for c in [*dirs.get(model, {}), model] if c in weights.rows), None)
        if key is not None:
            out[model] = key
    return out


# ---------------------------------------------------------------------------------------- the board
@dataclass
class WinRateBoard:
    """Win rates against a baseline, overall and per ``--by`` group (:func:`winrate_board`)."""

    comparisons: Comparisons
    boards: list[dict[str, Any]]
    length_controlled: bool
    difficulty: dict[str, Any] | None = None
    glms: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    published: dict[str, Any] | None = None  # which parts came from AlpacaEval's published files (winrate_board)

    @property
    def verdicts(self) -> str:
        """``verdicts: judge <annotator>`` (or ``human``): whose verdicts the board counts."""
        return verdicts_text(self.comparisons.annotator, self.comparisons.kind)

    def to_dict(self) -> dict[str, Any]:
        c = self.comparisons
        return {
            "baseline": c.baseline, "source": c.source,
            "verdicts": {"annotator": c.annotator, "kind": c.kind, "source": source_of(c.kind), "line": self.verdicts,
                         "count": c.verdicts.get("verdicts")},
            "length_controlled": self.length_controlled, "by": c.by,
            "definitions": {
                "win_rate": "100 x mean over instructions of the model's preference (preference - 1 on AlpacaEval's "
                            "1..2 scale, oriented to the model; a draw counts 1/2); standard_error = 100 x sd(ddof=1)"
                            " / sqrt(n) (Dubois et al. 2024, Sec. 2)",
                "length_controlled_winrate": "100 x mean over instructions of the per-model logistic GLM's preference "
                                             "with the length difference set to 0 (Dubois et al. 2024, Sec. 3)"
                if self.length_controlled else None,
                "lc_standard_error": "100 x the standard error of the length-controlled win rate by the delta method "
                                     "on the GLM's fit (sandwich; the fit's uncertainty plus the spread over the "
                                     "instructions, clustered by instruction; difficulties taken as known)"
                if self.length_controlled else None,
                "lc_prediction_sem": "AlpacaEval's lc_standard_error: 100 x sd(ddof=1) / sqrt(n) of the GLM's "
                                     "predictions alone (0 when they do not vary)"
                if self.length_controlled else None},
            "difficulty": ({k: v for k, v in self.difficulty.items() if k != "difficulty"} | {
                "values": self.difficulty.get("difficulty")} if self.difficulty else None),
            "glm": self.glms or None,
            "boards": self.boards, "left_out": list(c.left_out), "notes": list(c.notes) + self.notes,
        } | ({"published": self.published} if self.published is not None else {})

    def csv_rows(self) -> list[dict[str, Any]]:
        out = []
        for b in self.boards:
            for m in b["models"]:
                row = {"group": b["group"], "rank": m["rank"], "model": m["model"], "win_rate": m["win_rate"],
                       "standard_error": m["standard_error"]}
                if self.length_controlled:
                    row["length_controlled_winrate"] = m.get("length_controlled_winrate")
                    row["lc_standard_error"] = m.get("lc_standard_error")
                    row["lc_prediction_sem"] = m.get("lc_prediction_sem")
                    if self.published is not None:
                        row["lc_source"] = m.get("lc_source")
                row.update({"n": m["n"], "n_wins": m["n_wins"], "n_wins_base": m["n_wins_base"],
                            "n_draws": m["n_draws"],
                            "avg_length": m["avg_length"], "baseline": self.comparisons.baseline,
                            "verdicts": self.verdicts})
                out.append(row)
        return out

    def summary(self) -> str:
        c = self.comparisons
        lc = self.length_controlled
        n = len(c.models)
        lines = [f"win rates against {c.baseline} ({n} model{'' if n == 1 else 's'}); {self.verdicts}; "
                 f"source {c.source}"]
        if lc and self.difficulty is not None:
            lines.append(f"length-controlled (Dubois et al. 2024), GLM {self.difficulty['glm_variant']}; instruction "
                         f"difficulty: {self.difficulty['how']}")
        pub = self.published
        if lc and pub is not None:
            fitted = pub["fitted"]
            lines.append(f"LC from AlpacaEval's published GLM weights {pub['weights']} for {len(pub['models'])} "
                         f"model(s) (marked *)" + (f"; fitted here for {len(fitted)}: {', '.join(fitted)}" if fitted
                                                   else "; none fitted here"))
        for b in self.boards:
            lines.append("")
            lines.append(f"[{b['group']}]" + (f" {b['items']} instructions" if b.get("items") else ""))
            head = f"{'rank':>4}  {'model':<40} {'win rate':>8} {'SE':>5}"
            head += f" {'LC':>6} {'LC SE':>5}" if lc else ""
            lines.append(head + f" {'n':>5} {'avg len':>7}")
            for m in b["models"]:
                se = "-" if m["standard_error"] is None else f"{m['standard_error']:.2f}"
                line = f"{m['rank']:>4}  {m['model'][:40]:<40} {m['win_rate']:>8.2f} {se:>5}"
                if lc:
                    v, s = m.get("length_controlled_winrate"), m.get("lc_standard_error")
                    line += f" {'-' if v is None else f'{v:.2f}':>6} {'-' if s is None else f'{s:.2f}':>5}"
                    if pub is not None:
                        line += "*" if m.get("lc_source") == "published weights" else " "
                avg = "-" if m["avg_length"] is None else f"{m['avg_length']:.0f}"
                lines.append(line + f" {m['n']:>5} {avg:>7}")
        lines.append("")
        lines.append(self.verdicts)
        return "\n".join(lines)

    def html(self) -> str:
        return _board_html(self)


def _resolve_difficulty(comparisons: Comparisons, difficulty: Any, fit: dict[str, Any],
                        quiet: bool | None = None, jobs: int | str | None = 1) -> dict[str, Any]:
    if isinstance(difficulty, Mapping) and isinstance(difficulty.get("difficulty"), Mapping):
        est = dict(difficulty)  # what estimate_difficulty returned
    elif isinstance(difficulty, Mapping):
        values = {str(k): float(v) for k, v in difficulty.items()}
        return {"how": "given", "difficulty": values}
    elif difficulty == "zero":
        return {"how": "zero (no difficulty term)", "difficulty": {}}
    elif difficulty == "estimate":
        est = estimate_difficulty(comparisons, quiet=quiet, jobs=jobs, **fit)
    else:
        est = None
    if est is not None:
        C = "-" if est.get("C") is None else f"{est['C']:.3g}"
        return {"how": f"estimated from these comparisons (joint GLM over {est.get('models')} models, "
                       f"{est.get('rows')} comparisons, C={C})", **est}
    raise ParameterError(f"difficulty {difficulty!r}: use 'estimate', 'zero' or a mapping of item id to value",
                         field="difficulty")


def _from_weights(comp: Comparisons, weights: PublishedWeights, keys: Mapping[str, str], values: Mapping[str, float],
                  difficulty: Any, controlled: dict[str, np.ndarray], influences: dict[str, Any],
                  glms: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """:func:`winrate_board`'s models with published weights: their controlled preferences (into ``controlled``,
    ``influences``, ``glms``), the notes, and ``board.published``."""
    published_difficulty = isinstance(difficulty, PublishedDifficulty)
    shifted = []
    for model, key in keys.items():
        mc = comp.models[model]
        dv = np.array([values.get(i, 0.0) for i in mc.item_ids], float)
        row = weights.rows[key]
        controlled[model] = published_controlled(row, dv)
        influences[model] = None
        sd = None if mc.delta_len is None else _standardised(mc.delta_len)[1]
        glms[model] = {**row, "C": None, "sd_delta_len": sd, "source": "published", "weights": weights.path,
                       "weights_row": key}
        if published_difficulty and difficulty.by == "index":
            ids = list(mc.item_ids)
            if not all(str(i).strip().isdigit() for i in ids) or sorted(int(i) for i in ids) != list(range(len(ids))):
                shifted.append(f"{model} ({len(ids)} instructions)")
    fitted = [m for m in comp.models if m not in keys]
    renamed = [f"{m} (row {k})" for m, k in keys.items() if k != m]
    notes.append(f"length-controlled win rates of {len(keys)} model(s) from AlpacaEval's published GLM weights "
                 f"({weights.path}), predicted as AlpacaEval predicts them: 100 x the mean over the model's "
                 "instructions of logistic(intercept + difficulty coefficient x instruction difficulty), the length "
                 "term at 0; their LC SE is AlpacaEval's (the predictions' sem; the file holds no fit to take the "
                 "fit's uncertainty from)" + (f"; matched by AlpacaEval results folder: {', '.join(renamed)}"
                                              if renamed else ""))
    if fitted:
        notes.append(f"not in {weights.path}, fitted here: {', '.join(fitted)}")
    if not published_difficulty:
        notes.append("the published weights were fitted with AlpacaEval's own instruction difficulties; with other "
                     "ones their predictions only approximate AlpacaEval's: give its table with --difficulty FILE "
                     "(instruction_difficulty.csv)")
    if shifted:
        notes.append("AlpacaEval's get_length_controlled_winrate looks a model's difficulties up by its annotations' "
                     "row number (reset_index), which is the instruction's own index only for a run of instructions "
                     "0, 1, ..., n-1 in order; these runs lack some of them, so their published LC may differ from "
                     f"this one (evalsift joins each instruction's own difficulty): {', '.join(shifted)}")
    return {"weights": weights.path, "models": dict(keys), "fitted": fitted,
            "difficulty": difficulty.path if published_difficulty else None}


def winrate_board(data: Any, baseline: str, *, annotator: str | None = None, length_controlled: bool = False,
                  by: str | None = None, difficulty: Any = "estimate", regularize: bool = True,
                  repeats: str = "all", quiet: bool | None = None, jobs: int | str | None = 1,
                  weights: PublishedWeights | str | Path | None = None, **fit: Any) -> WinRateBoard:
    """Every model's win rate against ``baseline`` (:func:`win_rate`; Dubois et al. 2024, Sec. 2) and, with
    ``length_controlled``, its length-controlled win rate (:func:`length_controlled_win_rate`; Sec. 3), overall and per
    value of column ``by``. ``data``: a :class:`~evalsift.io.pairwise_data.PairwiseData` (what
    :func:`evalsift.io.pairwise.read_judgments` returns). ``difficulty``: ``"estimate"``
    (:func:`estimate_difficulty`), ``"zero"`` or a mapping item id -> difficulty (e.g. AlpacaEval's table).
    Per group, each model's GLM is the one fitted on all its instructions, averaged over the group's.
    ``regularize``: when the data holds the baseline's own gamed versions (``<baseline>_verbose``,
    ``<baseline>_concise``), their comparisons regularise every model's fit as in AlpacaEval
    (:func:`fit_length_glm`'s ``anchors``); without them the fit is AlpacaEval's unregularised variant.
    ``repeats``: how a repeated judgment counts (:func:`baseline_comparisons`).
    Boards rank by the length-controlled win rate when there is one, else by the win rate. The fits show
    progress bars unless ``quiet`` (:func:`evalsift.progress.progress_bar`; ``EVALSIFT_QUIET``). ``jobs``: worker
    processes for the joint difficulty fit (:func:`estimate_difficulty`; 1, the default: none; the same result
    either way; a script asking for more needs an ``if __name__ == "__main__":`` guard).

    AlpacaEval's published files: ``difficulty`` a :class:`PublishedDifficulty` (:func:`read_alpaca_difficulty`, its
    ``instruction_difficulty.csv``) is joined to the instructions (:meth:`PublishedDifficulty.join`) instead of
    estimated; ``weights`` (a :class:`PublishedWeights` or the path of its saved GLM weights,
    :func:`read_alpaca_weights`; it implies ``length_controlled``): every model with a row there gets AlpacaEval's
    prediction from those weights (:func:`published_controlled`) -- with both files, AlpacaEval's own
    length-controlled win rate -- and its ``lc_standard_error`` is AlpacaEval's (the predictions' sem: the file holds
    no fit to take an error from); the other models are fitted here, with a note. ``board.published`` says which
    parts came from which file.
    """
    comp = baseline_comparisons(data, baseline, annotator=annotator, by=by, repeats=repeats)
    notes: list[str] = []
    diff_info = None
    controlled: dict[str, np.ndarray] = {}
    influences: dict[str, LCInfluence | None] = {}
    glms: dict[str, dict[str, Any]] = {}
    published: dict[str, Any] | None = None
    from_weights: dict[str, str] = {}
    if weights is not None:
        weights = weights if isinstance(weights, PublishedWeights) else read_alpaca_weights(weights)
        if weights.baseline is not None and weights.baseline != baseline:
            raise ParameterError(f"{weights.path} holds the weights of models against {weights.baseline} (its name "
                                 f"says baseline_{weights.baseline}), not against the baseline {baseline}: give the "
                                 f"file of baseline {baseline}, or --baseline {weights.baseline}", field="weights")
        from_weights = _weights_keys(data, comp, weights)
        length_controlled = True
    if length_controlled:
        no_len = [m for m, mc in comp.models.items() if mc.len_model is None and m not in from_weights]
        if len(no_len) == len(comp.models):
            raise DataError("--length-controlled needs the lengths of the outputs, and the data has none: give "
                            "AlpacaEval annotations (output_1, output_2), its preference table (len_output_1, "
                            "len_output_2), or a file with the outputs' texts", field="length")
        if no_len:
            notes.append(f"no output lengths for {', '.join(no_len)}: no length-controlled win rate for them")
        if isinstance(difficulty, PublishedDifficulty):
            needed = [i for m, mc in comp.models.items() if mc.len_model is not None or m in from_weights
                      for i in mc.item_ids]
            values, how = difficulty.join(data.pool, needed)
            diff_info = {"how": f"AlpacaEval's published table {difficulty.path} ({len(difficulty.values)} instructions;"
                                f" {how})", "difficulty": values, "published": difficulty.path, "joined": how}
        else:
            diff_info = _resolve_difficulty(comp, difficulty, fit, quiet, jobs)
        values = diff_info["difficulty"]
        if diff_info.get("models") is not None and diff_info["models"] < FEW_MODELS:
            notes.append(f"the instruction difficulties are estimated from {diff_info['models']} model(s) only; with "
                         f"few models they are mostly shrunk to 0 (AlpacaEval's were fitted on dozens), and the "
                         "length-controlled win rates move with them (docs/winrate.md)")
        gamed = [comp.models[baseline + s] for s in GAMED_SUFFIXES
                 if baseline + s in comp.models and comp.models[baseline + s].len_model is not None]
        anchors = [(g.preference, g.delta_len, np.array([values.get(i, 0.0) for i in g.item_ids], float))
                   for g in gamed] if regularize else []
        diff_info["regularized_to_baseline"] = [g.model for g in gamed] if anchors else None
        used = ", ".join(g.model for g in gamed)
        diff_info["glm_variant"] = (f"length_controlled_v1 (regularised to the baseline with {used}, weight "
                                    f"{REGULARIZE_TO_BASELINE})" if anchors else
                                    "length_controlled_noreg (no gamed versions of the baseline "
                                    f"{'used' if gamed else 'in the data'})")
        if weights is not None:
            published = _from_weights(comp, weights, from_weights, values, difficulty, controlled, influences, glms,
                                      notes)
            if not published["fitted"]:
                diff_info["glm_variant"] = "AlpacaEval's published weights for every model (none fitted here)"
            else:
                diff_info["glm_variant"] += f" for the {len(published['fitted'])} model(s) fitted here"
        fitted = [(model, mc) for model, mc in comp.models.items() if mc.len_model is not None
                  and model not in from_weights]
        with progress_bar(len(fitted), "length-controlled GLMs (per model)", quiet) as advance:
            for model, mc in fitted:
                dv = np.array([values.get(i, 0.0) for i in mc.item_ids], float)
                res = length_controlled_win_rate(mc.preference, mc.delta_len, dv, anchors=anchors,
                                                 item_ids=mc.item_ids, **fit)
                controlled[model] = res["controlled"]
                influences[model] = res["influence"]
                glms[model] = res["glm"].to_dict() if res["glm"] is not None else None
                if res["glm"] is None:
                    notes.append(f"{model}: every preference is the same; its length-controlled win rate is the raw "
                                 "one")
                advance(1)
    groups: list[str | None] = [None]
    if by:
        seen: dict[str, None] = {}
        for mc in comp.models.values():
            seen.update(dict.fromkeys(mc.groups or ()))
        groups += sorted(seen)
    boards = []
    for g in groups:
        entries = []
        items: set[str] = set()
        for model, mc in comp.models.items():
            mask = np.ones(mc.n, bool) if g is None else np.array([x == g for x in mc.groups], bool)
            if not mask.any():
                continue
            items.update(i for i, k in zip(mc.item_ids, mask) if k)
            e = {"model": model, **win_rate(mc.preference[mask], None if mc.weight is None else mc.weight[mask])}
            e["avg_length"] = float(mc.len_model[mask].mean()) if mc.len_model is not None else None
            if length_controlled:
                q = controlled.get(model)
                e["length_controlled_winrate"] = float(100 * q[mask].mean()) if q is not None else None
                sem = (float(100 * q[mask].std(ddof=1) / math.sqrt(mask.sum()))
                       if q is not None and mask.sum() > 1 else None)
                inf = influences.get(model)
                e["lc_standard_error"] = lc_standard_error(inf, mask) if inf is not None else sem
                e["lc_prediction_sem"] = sem
                if published is not None:
                    e["lc_source"] = ("published weights" if model in from_weights else
                                      "fitted" if q is not None else None)
            entries.append(e)
        key = "length_controlled_winrate" if length_controlled else "win_rate"
        entries.sort(key=lambda e: (-(e[key] if e[key] is not None else -np.inf), -e["win_rate"], e["model"]))
        for r, e in enumerate(entries, 1):
            e["rank"] = r
        boards.append({"group": "all" if g is None else g, "items": len(items),
                       "models": [{"rank": e.pop("rank"), **e} for e in entries]})
    return WinRateBoard(comparisons=comp, boards=boards, length_controlled=length_controlled, difficulty=diff_info,
                        glms=glms, notes=notes, published=published)


# ---------------------------------------------------------------------------------------- files
def _fmt(x: Any, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _board_html(board: WinRateBoard) -> str:
    """``leaderboard.html``: one self-contained page (no script, no external file), a table per board."""
    esc = html.escape
    c = board.comparisons
    lc = board.length_controlled
    sections = []
    for b in board.boards:
        rows = []
        for m in b["models"]:
            cells = [str(m["rank"]), esc(m["model"]), _fmt(m["win_rate"]), _fmt(m["standard_error"])]
            if lc:
                cells += [_fmt(m.get("length_controlled_winrate")), _fmt(m.get("lc_standard_error"))]
            cells += [str(m["n"]), _fmt(m["avg_length"], 0)]
            rows.append("<tr>" + "".join(f"<td{' class=num' if k != 1 else ''}>{v}</td>" for k, v in enumerate(cells))
                        + "</tr>")
        head = (["rank", "model", "win rate (%)", "SE"] + (["LC win rate (%)", "LC SE"] if lc else [])
                + ["n", "avg length"])
        title = "All instructions" if b["group"] == "all" else f"{esc(str(c.by))} = {esc(b['group'])}"
        sections.append(f"<h2>{title} <small class=note>({b['items']} instructions)</small></h2>"
                        f"<table class=board data-group='{esc(b['group'])}'><thead><tr>"
                        + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
                        + "</tbody></table>")
    diff = ""
    if lc and board.difficulty is not None:
        diff = (f"<p class=note>Length-controlled win rate: Dubois et al. 2024 (Length-Controlled AlpacaEval), "
                f"Sec. 3 -- a per-model logistic GLM of the preference on tanh(standardised length difference), the "
                f"instruction difficulty and the model's intercept, predicted with no length difference. Instruction "
                f"difficulty: {esc(board.difficulty['how'])}. GLM: {esc(board.difficulty['glm_variant'])}.</p>")
        if board.published is not None:
            pub = board.published
            diff += (f"<p class=note id=published>LC win rates of {len(pub['models'])} model(s) from AlpacaEval's "
                     f"published GLM weights ({esc(pub['weights'])}), as AlpacaEval predicts them"
                     + (f"; fitted here: {esc(', '.join(pub['fitted']))}" if pub["fitted"] else "") + ".</p>")
    notes = "".join(f"<li>{esc(n)}</li>" for n in list(c.notes) + board.notes)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evalsift win rates against {esc(c.baseline)}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}}
table{{border-collapse:collapse;margin:1em 0}} td,th{{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}}
.num{{text-align:right;font-variant-numeric:tabular-nums}}
.note{{color:#555;font-size:0.9em}} .verdicts{{font-weight:bold}}
</style></head><body>
<h1>Win rates against {esc(c.baseline)}</h1>
<p id=verdicts class=verdicts>{esc(board.verdicts)}</p>
<p>{len(c.models)} models; source {esc(c.source)}. Win rate: 100 &times; the mean over instructions of the model's
preference against the baseline (a draw counts half), with its standard error (AlpacaEval; Dubois et al. 2024,
Sec. 2).</p>
{diff}
{''.join(sections)}
{f'<h2>Notes</h2><ul id=notes>{notes}</ul>' if notes else ''}
<p class=note>{esc(board.verdicts)}</p>
</body></html>
"""


def write_board(board: WinRateBoard, out: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``leaderboard.csv`` (one row per group and model, with ``group`` and ``verdicts``
    columns) and ``leaderboard.html`` into folder ``out``; their paths."""
    from .io._common import atomic_file, json_default, plain_json, write_atomic

    out = Path(out)
    paths = {"results": out / "results.json", "csv": out / "leaderboard.csv", "html": out / "leaderboard.html"}
    write_atomic(paths["results"], json.dumps(plain_json(board.to_dict()), indent=2, default=json_default,
                                              allow_nan=False) + "\n")  # each file whole or not at all
    rows = board.csv_rows()
    fields = list(rows[0]) if rows else ["group", "rank", "model", "win_rate", "standard_error", "verdicts"]
    with atomic_file(paths["csv"], newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else (f"{v:.6g}" if isinstance(v, float) else v)) for k, v in r.items()})
    write_atomic(paths["html"], board.html())
    return paths
