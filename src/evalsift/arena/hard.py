"""Arena-Hard-Auto's numbers from its judgments (read by :mod:`evalsift.io.arena_hard`): the games as battles
with the baseline as side ``a``, its style covariates from the answers' recorded counts, and its score (the
Bradley-Terry win rate against the baseline) with intervals clustered by question; ``evalsift arena`` prints
them under its board."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from ..errors import DataError, ParameterError
from ..io.arena_hard import _GAME_SUFFIX
from ..io.pairwise import read_judgments
from ..io.pairwise_data import PairwiseData
from ..oracle.base import Judgment
from ..verdicts import describe_judgments
from .battles import Battles
from .bt import Covariates, fit_bt
from .read import judge_name
from .style import battle_counts

def arena_hard_battles(data: PairwiseData, *, by: str | None = None, judges: Iterable[str] = ()) -> Any:
    """The :class:`~evalsift.arena.battles.Battles` of Arena-Hard games (``data``: :func:`combine_arena_hard` with
    ``games="separate"``): one battle per game with a verdict, ``a`` = the baseline, a strong one repeated its
    ``weight`` times (Arena-Hard's rule; the battle id is the question); ``judges``: other judges' files or folders
    joined on (question, baseline, model), each the mean of its games; ``style``: the answers' counts from
    Arena-Hard's metadata (``token_len``, headers, lists, bold), else counted from the answers' texts."""

    done = [j for j in data.judgments if j.status == "done" and j.verdict is not None]
    rep = [j for j in done for _ in range(int((j.detail or {}).get("weight", 1)))]
    battles = Battles.from_pairwise(PairwiseData(data.pool, tuple(rep), data.source), source=data.source,
                                    by=(by,) if by else ())
    battles = replace(battles, verdicts=describe_judgments(  # whose verdicts: the judge, not its two games
        Judgment(**{**j.to_dict(), "annotator": _GAME_SUFFIX.sub("", j.annotator)}) for j in done))
    for j in judges:
        battles = battles.with_judge(judge_name(j), read_judgments(j))
    pool = data.pool
    index = {iid: k for k, iid in enumerate(pool.item_ids)}
    recorded = pool.metadata.get("_style")
    names = ("length", "headers", "bold", "lists")
    counts = np.full((len(names), battles.n, 2), np.nan)
    texts = []
    for k in range(battles.n):
        i = index.get(battles.ids[k])
        for side, m in ((0, battles.a[k]), (1, battles.b[k])):
            c = (recorded[i] or {}).get(battles.models[m]) if recorded is not None and i is not None else None
            if c is not None:
                counts[:, k, side] = [c[n] for n in names]
            else:
                texts.append((k, side))
    if texts and pool.outputs:
        def text(k: int, side: int) -> str | None:
            col = pool.outputs.get(battles.models[battles.a[k] if side == 0 else battles.b[k]])
            i = index.get(battles.ids[k])
            return None if col is None or i is None else col[i]
        counted = battle_counts(battles, text)
        for t, n in enumerate(names):
            miss = np.isnan(counts[t])
            counts[t][miss] = counted[n][miss]
    if not np.isnan(counts).all():
        battles = replace(battles, style={n: counts[t] for t, n in enumerate(names)})
    return battles


#: what :func:`arena_hard_covariates` computes, for the board's note, per ``show_result.py`` version
AH_STYLE_NOTE = {
    "v2.0": ("Arena-Hard-Auto's style features (show_result.py v2.0), model minus baseline: length (m - b) / (m + b) "
             "of token_len; headers, lists, bold as densities d = count / (token_len + 1), (d_m - d_b) / (d_m + d_b "
             "+ 1); each centred and divided by its standard deviation (ddof 1) over the battles; counts from the "
             "answers' metadata (else counted from their texts)"),
    "v0.1": ("Arena-Hard-Auto's style features (show_result.py v0.1, as Chatbot Arena's), baseline minus model: "
             "(b - m) / (b + m + 1) of token_len and of the header, list and bold counts; each centred and divided by "
             "its standard deviation (ddof 0) over the battles; counts from the answers' conv_metadata (else counted "
             "from their texts); v0.1 fits them with scikit-learn's default L2 penalty (C = 1), evalsift without"),
}


def style_recipe(data: PairwiseData) -> str:
    """``v0.1`` for Arena-Hard v0.1's files (``question_id``; answers with ``conv_metadata``), else ``v2.0``: the
    ``show_result.py`` whose style features :func:`arena_hard_covariates` computes."""
    return next(((j.detail or {}).get("layout", "v2.0") for j in data.judgments if "ah_game" in (j.detail or {})),
                "v2.0")


def arena_hard_covariates(battles: Any, features: Iterable[str], recipe: str = "v2.0") -> Any:
    """Arena-Hard-Auto's style covariates (:data:`AH_STYLE_NOTE`; ``recipe`` ``v2.0`` or ``v0.1``:
    :func:`style_recipe`) of battles whose side ``a`` is the baseline (:func:`arena_hard_battles`), for
    :func:`evalsift.arena.bt.fit_bt`: a :class:`~evalsift.arena.bt.Covariates` with the sign for side ``a``. A
    battle without counts, or a feature that does not vary, is a DataError."""
    if recipe not in AH_STYLE_NOTE:
        raise ParameterError(f"style recipe {recipe!r}: use v2.0 or v0.1", field="style_control")
    features = tuple(features)
    if not battles.style:
        raise DataError("--style-control needs the answers' style counts, and the Arena-Hard files have none: put "
                        "model_answer/<model>.jsonl (with metadata: token_len, header_count, list_count, bold_count, "
                        "or the answers' texts) beside model_judgment/", field="style_control")
    length = battles.style["length"]
    miss = np.isnan(length).any(axis=1)
    if miss.any():
        k = int(np.flatnonzero(miss)[0])
        raise DataError(f"question {battles.ids[k]!r}: no answer metadata for "
                        f"{battles.models[battles.a[k]]!r} or {battles.models[battles.b[k]]!r} ({int(miss.sum())} of "
                        f"{battles.n} battles lack it); --style-control needs every answer's counts in model_answer/",
                        item_id=battles.ids[k], field="style_control")
    lb, lm = length[:, 0], length[:, 1]
    cols, kept = [], []
    for f in features:
        if recipe == "v0.1":  # baseline minus model, as a ratio with + 1 (utils_math.construct_style_matrices)
            c = battles.style[f]
            d = (c[:, 0] - c[:, 1]) / (c[:, 0] + c[:, 1] + 1.0)
        elif f == "length":
            with np.errstate(invalid="ignore", divide="ignore"):
                d = (lm - lb) / (lm + lb)
        else:
            c = battles.style[f]
            dm, db = c[:, 1] / (lm + 1.0), c[:, 0] / (lb + 1.0)
            d = (dm - db) / (dm + db + 1.0)
        if not np.isfinite(d).all():
            raise DataError(f"--style-control {f}: an answer pair has token_len 0 on both sides, which Arena-Hard's "
                            "length feature cannot take", field="style_control")
        sd = float(np.std(d, ddof=1 if recipe == "v2.0" else 0)) if len(d) > 1 else 0.0
        if sd == 0.0:
            raise DataError(f"--style-control: {f} does not vary over the battles; leave it out", field="style_control")
        # side a is the baseline: v2.0's model-minus-baseline row negated, v0.1's baseline-minus-model row as it is
        cols.append((d - d.mean()) / sd * (-1.0 if recipe == "v2.0" else 1.0))
        kept.append(f)
    return Covariates(tuple(kept), np.column_stack(cols), note=AH_STYLE_NOTE[recipe])


def arena_hard_scores(battles: Any, baseline: str, *, covariates: Any = None, alpha: float = 0.05) -> dict[str, Any]:
    """Arena-Hard-Auto's score of every model: its predicted win rate against ``baseline``,
    ``100 sigmoid(beta_m - beta_baseline)``, from the Bradley-Terry maximum-likelihood fit of the battles (with
    ``covariates``: the style-controlled fit, the features at their mean as Arena-Hard centres them). Without
    covariates and with every battle against the baseline this is the weighted mean of the model's game scores
    (show_result.py's point score), up to the shared fit's small ridge (``RIDGE`` = 0.01 battle: thousandths of a
    point at a few hundred questions). Intervals: normal on the log-odds from the sandwich covariance clustered by
    question (both games of a question, and a strong verdict's copies, are one cluster), mapped to the scale."""
    if baseline not in battles.models:
        raise ParameterError(f"baseline {baseline!r} is not among the battles' models", field="baseline")
    fit = fit_bt(battles, covariates=covariates)
    K = battles.K
    z = np.zeros((battles.n, 0)) if covariates is None else np.asarray(covariates.z, float)
    theta = np.concatenate([fit.coef, [] if fit.gamma is None else fit.gamma])
    X = np.zeros((battles.n, K + z.shape[1]))
    X[np.arange(battles.n), battles.a] += 1.0
    X[np.arange(battles.n), battles.b] -= 1.0
    X[:, K:] = z
    p = expit(X @ theta)
    H = (X * (p * (1 - p))[:, None]).T @ X
    U = X * (battles.y - p)[:, None]
    _, cluster = np.unique(np.asarray(battles.ids, dtype=object).astype(str), return_inverse=True)
    G = int(cluster.max()) + 1
    S = np.zeros((G, X.shape[1]))
    np.add.at(S, cluster, U)
    Hi = np.linalg.pinv(H)
    cov = Hi @ (S.T @ S) @ Hi * (G / (G - 1) if G > 1 else 1.0)
    q = float(norm.ppf(1 - alpha / 2))
    b = battles.models.index(baseline)
    games = np.bincount(np.concatenate([battles.a, battles.b]), minlength=K)
    rows = []
    for m, name in enumerate(battles.models):
        if m == b:
            rows.append({"model": name, "score": 50.0, "interval": [50.0, 50.0], "battles": None, "baseline": True})
            continue
        c = np.zeros(len(theta))
        c[m], c[b] = 1.0, -1.0
        d = float(c @ theta)
        se = math.sqrt(max(float(c @ cov @ c), 0.0))
        rows.append({"model": name, "score": 100 * float(expit(d)),
                     "interval": [100 * float(expit(d - q * se)), 100 * float(expit(d + q * se))],
                     "battles": int(games[m]), "baseline": False})
    rows.sort(key=lambda r: -r["score"])
    return {"baseline": baseline, "models": rows, "style": list(covariates.names) if covariates is not None else None,
            "coverage": f"from all {battles.n} battles; {1 - alpha:.0%} intervals, clustered by question",
            "definition": "100 x sigmoid(beta_model - beta_baseline) of the Bradley-Terry fit (Arena-Hard-Auto's "
                          "score: the predicted win rate against the baseline)"}


def scores_text(scores: Mapping[str, Any], raw: Mapping[str, Any] | None = None) -> str:
    """The Arena-Hard score table printed under ``arena``'s board (``raw``: the same without style control)."""
    head = (f"Arena-Hard-Auto scores: win rate against {scores['baseline']} (%)"
            + (f", style-controlled for {', '.join(scores['style'])}" if scores.get("style") else "")
            + f"; {scores['coverage']}")
    width = max(len(r["model"]) for r in scores["models"])
    rawd = {r["model"]: r for r in raw["models"]} if raw else {}
    lines = [head, f"  {'model':<{width}}  {'score':>6}  {'interval':>15}" + ("  raw score" if raw else "")]
    for r in scores["models"]:
        line = f"  {r['model']:<{width}}  {r['score']:>6.1f}  [{r['interval'][0]:>5.1f}, {r['interval'][1]:>5.1f}]"
        if raw:
            line += f"  {rawd[r['model']]['score']:>9.1f}"
        lines.append(line)
    return "\n".join(lines)


__all__ = ["AH_STYLE_NOTE", "arena_hard_battles", "arena_hard_covariates", "arena_hard_scores", "scores_text", "style_recipe"]
