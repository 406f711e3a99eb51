"""A leaderboard from battles: what ``evalsift arena`` computes and writes.

:func:`leaderboard` takes :class:`~evalsift.arena.battles.Battles` (human verdicts, judges beside
them) and returns a :class:`Leaderboard`: per model the Bradley-Terry score on the Elo scale, a
``1 - alpha`` interval, a simultaneous ``1 - alpha`` rank-set, and the predicted win-rate matrix.

- ``human_budget=N``: N of the human battles are drawn -- ``allocation="uniform"``: uniformly without
  replacement; ``"active"``: in rounds by Chatbot Arena's rule (Chiang et al. 2024, Sec. 5: a pair is
  drawn with probability proportional to how much one more battle would shrink its interval,
  ``sqrt(v / n) - sqrt(v / (n + 1))``, mixed with 10% uniform), each battle with the probability it
  was drawn with recorded and weighted by its inverse; ``"neyman"`` (ours): a stratified draw by pair
  and by what the judges said, allocated where people disagree with the judges and where a comparison
  is close to being settled (:mod:`evalsift.arena.design`) -- and the judges' verdicts on every battle
  sharpen them (PPI++, :func:`~evalsift.arena.bt.fit_bt_ppi`). The other battles' human verdicts are
  never read.
- without a budget: every human battle; judges then add nothing to the estimate (PPI would weight
  them 0) and are reported only as their agreement with the people.
- ``intervals="sandwich"`` (normal, robust covariance) or ``"bootstrap"`` (percentile intervals and
  bootstrap rank-sets, ``B`` replicates); the rank-sets are step-down max-|t| sets either way.
- ``ties="half"`` (a tie is half a win: Chatbot Arena's and FastChat's count) or ``"davidson"``
  (Davidson's tie-aware model, :func:`~evalsift.arena.bt.fit_davidson`; the human battles alone).
- ``estimator="mle"`` (the maximum-likelihood fit, as Chatbot Arena publishes it),
  ``"bias-corrected"`` (ours: the fit less its first-order bias, :func:`~evalsift.arena.bt.curvature_bias`;
  at a few thousand human battles the plain fit puts the strongest and weakest models a few Elo too
  far apart, more so when a draw gives their settled pairs few battles, as ``neyman`` does),
  ``"shrunk"`` (ours: the scores are the posterior means under an empirical-Bayes prior toward the
  models' mean, :func:`~evalsift.arena.bt.shrinkage_prior`; the intervals and rank-sets stay the
  fit's own, each interval widened to hold its score where it falls outside) or ``"auto"`` (the
  default: ``shrunk`` below :data:`SMALL` human battles per model on average among 4 or more models
  with ties half, else ``mle``). Below that size the maximum-likelihood scores of the models printed
  first sit tens to hundreds of Elo above the truth (the winner's curse: the top of a noisy board is
  where the noise went up); docs/arena.md, "Small samples: the scores printed".
- the order: strongest first by the printed score, never above a model the rank-sets put surely above
  it (:func:`~evalsift.arena.bt.claimed_order`); a model whose rank-set spans more than half of the
  ranks is *unresolved*, marked ``?`` beside its rank in every output (``resolved: false``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, ParameterError, check_choice
from ..io._common import plain_json
from .battles import Battles
from .bt import (ELO, FEW, FEW_SIDE, TIES, BTFit, Covariates, _drawn, anchor_draws, bootstrap_bt_ppi, claimed_order,
                 curvature_bias, few_battle_floor, fit_bt_ppi, fit_davidson, independent_covariates, rank_sets_of,
                 sure_pairs)
from .design import EXPLORE, ROUNDS, pair_probabilities  # noqa: F401 - their old home; they live in design now
from .design import draw_active, draw_neyman, draw_uniform, strata_note
from .html import group_sections, leaderboard_html

ALLOCATIONS = ("uniform", "active", "neyman")
INTERVALS = ("sandwich", "bootstrap")
ESTIMATORS = ("auto", "mle", "bias-corrected", "shrunk")
#: ``estimator="auto"`` shrinks the scores below this many human battles per model on average (``2 n / K``;
#: 4,000 battles among 20 models), among at least :data:`SMALL_MODELS` models
SMALL = 400
SMALL_MODELS = 4


@dataclass
class Leaderboard:
    """Scores, intervals and rank-sets per model, with how they were made (see the module doc)."""

    models: tuple[str, ...]
    fit: BTFit
    interval: np.ndarray  # K x 2, Elo scale
    rank_set: np.ndarray  # K x 2
    critical: float
    alpha: float
    intervals: str
    allocation: str
    human_battles_used: int
    battles_total: int
    judges: dict = field(default_factory=dict)  # name -> agreement etc.
    seed: int = 0
    source: str = ""
    pair_counts: np.ndarray | None = None  # human battles used per pair
    stop: dict | None = None  # with a stop rule: the looks and whether it was met
    strata: str | None = None  # a stratified draw (neyman): how many strata and battles in each
    few: int = FEW  # below this many human battles a model's variance was floored (few_battle_floor)
    few_models: np.ndarray | None = None  # which models had few battles (or few wins or losses)
    raw: "Leaderboard | None" = None  # with style control: the board without it (same battles, same draws)
    style: dict | None = None  # with style control: {features, coefficients: [{name, coef, interval}], note}
    notes: list = field(default_factory=list)  # e.g. battles left out for lack of a text
    verdicts: dict = field(default_factory=dict)  # whose verdicts the battles are (evalsift.verdicts)
    above: np.ndarray | None = None  # above[x, y]: the rank-sets' claim "x is surely stronger than y"
    shrinkage: dict | None = None  # --estimator shrunk: the prior, the threshold, why (small_sample_text)

    @property
    def who(self) -> str:
        """``human`` or ``judge``: whose verdicts the board's battles are (``mixed`` reads as judge)."""
        return "human" if self.verdicts.get("source", "human") == "human" else "judge"

    def verdicts_text(self) -> str:
        """The line every output carries: whose verdicts the board counts."""
        from ..verdicts import verdicts_line

        return verdicts_line(self.verdicts) if self.verdicts else "verdicts: human"

    def _words(self, text: str) -> str:
        """``text`` with the board's battles called by whose verdicts they are: a judge's battles are not
        human battles."""
        return text if self.who == "human" else text.replace("human battles", "judge battles").replace(
            "human battle", "judge battle")

    def few_mask(self) -> np.ndarray:
        """Which models had their variance floored: few human battles, or few wins or losses."""
        return (np.zeros(len(self.models), bool) if self.few_models is None else np.asarray(self.few_models, bool))

    def human_battles(self) -> np.ndarray:
        """Each model's human battles used."""
        return (self.pair_counts.sum(axis=1) if self.pair_counts is not None
                else np.zeros(len(self.models), int)).astype(int)

    def few_note(self) -> str | None:
        """One sentence on the models with fewer than ``few`` human battles, or None when there are none."""
        low = [self.models[i] for i in self.order() if self.few_mask()[i]]
        if not low:
            return None
        names = ", ".join(low[:6]) + (f" and {len(low) - 6} more" if len(low) > 6 else "")
        scale = ("; 1000 is the mean of the other models, so these move no one else's score" if len(low) < len(self.models)
                 else "")
        return (f"{len(low)} model(s) with fewer than {self.few} human battles, or fewer than {FEW_SIDE} wins or losses "
                f"({names}): their intervals and rank-sets "
                "use Bradley-Terry's model-based variance where it is wider than the robust one, so a model that won "
                f"or lost all of its few battles stays wide{scale} (docs/arena.md, 'Few battles and small budgets')")

    @property
    def estimator(self) -> str:
        """``bias-corrected`` or ``shrunk`` when the scores were so made (:func:`_board`), else ``mle``."""
        return ("bias-corrected" if self.fit.method.endswith("+bc") else "shrunk" if self.fit.method.endswith("+shrunk")
                else "mle")

    def resolved(self) -> np.ndarray:
        """Which models' rank-sets span at most half of the ranks (the others are marked ``?``: their place by
        score is not resolved)."""
        width = self.rank_set[:, 1] - self.rank_set[:, 0] + 1
        return width <= len(self.models) / 2

    def shrinkage_text(self) -> str | None:
        """One sentence on shrunk scores (``--estimator shrunk``, or ``auto`` below :data:`SMALL`), or None."""
        if not self.shrinkage:
            return None
        sh = self.shrinkage
        why = (f"{sh['human_battles']} human battles among {len(self.models)} models, fewer than {SMALL} per model on "
               f"average, so --estimator auto shrank them" if sh["auto"] else "--estimator shrunk")
        return (f"scores shrunk toward the models' mean ({why}): each is its posterior mean under a normal prior "
                f"whose spread the battles choose (empirical Bayes: sd {sh['tau_elo']:.0f} Elo; the verdicts' dispersion "
                f"{sh['dispersion']:.2f}, a tie varying less than a win or a loss), because at this size the plain fit prints the top models far "
                "above their true scores; the intervals and rank-sets are the plain fit's (an interval is widened "
                f"to hold its score where the score falls outside it: {sh['widened']} here); --estimator mle prints "
                "the plain fit (docs/arena.md, 'Small samples: the scores printed')")

    def unresolved_text(self) -> str | None:
        """The legend of the ``?`` mark, or None when every model's rank is resolved."""
        n = int((~self.resolved()).sum())
        if not n:
            return None
        every = n == len(self.models)
        return (f"? beside a rank: {'every' if every else n} model{'' if every else '(s)'}'s rank-set spans more than "
                f"half of the {len(self.models)} ranks, so {'no' if every else 'its'} place by score is resolved (the "
                "rank-set says where it may be)")

    def stop_text(self) -> str | None:
        """One line on the stop rule: met or not, after how many battles, which look, and its guarantee."""
        if not self.stop:
            return None
        last = self.stop["looks"][-1]
        done = (f"met after {last['battles']} human battles" if self.stop["met"] else
                f"not met within {last['battles']} human battles")
        return (f"{self.stop['rule']}: {done} (look {len(self.stop['looks'])} of {len(self.stop['planned_looks'])}); "
                f"{self.stop['guarantee']}")

    def assumption(self) -> str:
        """What the intervals and rank-sets rest on (:data:`ASSUMPTION`), and the correction's when it was made."""
        if self.estimator == "bias-corrected":
            return ASSUMPTION + ("; the scores are bias-corrected to first order in 1/n, which rests on the "
                                 "Bradley-Terry curve near the fit and its covariance")
        if self.estimator == "shrunk":
            return ASSUMPTION + ("; the scores are shrunk toward the mean by an empirical-Bayes normal prior, which "
                                 "trades a pull toward the middle for far smaller errors at the top; the intervals and "
                                 "rank-sets do not rest on the prior")
        return ASSUMPTION

    def order(self) -> np.ndarray:
        """Model indices, strongest first: by score, never above a model its rank-set claims put surely above it
        (:func:`~evalsift.arena.bt.claimed_order`)."""
        return claimed_order(self.fit.coef, self.above)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` content: ``models`` (strongest first) as ``{name, score, interval,
        rank_set, rank, battles}`` plus how it was made."""
        order = self.order()
        r = np.empty(len(order), dtype=int)
        r[order] = np.arange(1, len(order) + 1)
        per_model = self.human_battles()
        resolved = self.resolved()
        models = [{"name": self.models[i], "score": round(float(self.fit.scores[i]), 2),
                   "interval": [round(float(self.interval[i, 0]), 2), round(float(self.interval[i, 1]), 2)],
                   "rank_set": [int(self.rank_set[i, 0]), int(self.rank_set[i, 1])], "rank": int(r[i]),
                   "resolved": bool(resolved[i]), "human_battles": int(per_model[i]),
                   "few_battles": bool(self.few_mask()[i])}
                  for i in order]
        return {"models": models, "human_battles_used": self.human_battles_used, "battles": self.battles_total,
                "alpha": self.alpha, "coverage": f"simultaneous {1 - self.alpha:.0%} rank-sets; per-model {1 - self.alpha:.0%} "
                                                   "score intervals",
                "intervals": self.intervals, "allocation": self.allocation, "method": self.fit.method,
                "estimator": self.estimator, "shrinkage": ({**self.shrinkage, "note": self.shrinkage_text()}
                                                           if self.shrinkage else None),
                "unresolved_note": self.unresolved_text(),
                "judge_weights": {k: v for k, v in self.fit.lam.items() if k in self.judges},
                "tie_propensity": self.fit.lam.get("tie_propensity"), "judges": self.judges, "critical_value": round(self.critical, 4),
                "scale": "Elo: 1000 + 400 * log10-odds, centred on the " + (
                    "mean of the models not marked few_battles" if 0 < self.few_mask().sum() < len(self.models)
                    else "models' mean"), "seed": self.seed,
                "source": self.source, "win_matrix": np.round(self.fit.win_matrix(), 4).tolist(),
                "model_order": list(self.models), "stop": self.stop, "strata": self.strata,
                "few_battles": {"threshold": self.few, "wins_or_losses": FEW_SIDE, "note": self.few_note()},
                "assumption": self._words(self.assumption()),
                "verdicts": {**self.verdicts, "line": self.verdicts_text()}, **self._style_dict(models)}

    def _style_dict(self, models: list[dict]) -> dict[str, Any]:
        """With style control: each model's raw (uncontrolled) score, interval and rank-set beside the
        controlled ones, and the style coefficients."""
        if self.raw is None:
            return {"notes": list(self.notes)} if self.notes else {}
        raw = {m["name"]: m for m in self.raw.to_dict()["models"]}
        for m in models:
            r = raw[m["name"]]
            m["raw"] = {k: r[k] for k in ("score", "interval", "rank_set", "rank", "resolved")}
        return {"style_control": self.style, "raw_scale": "the same battles fitted without the style features",
                "notes": list(self.notes)}

    def csv(self) -> str:
        """The leaderboard as CSV (strongest first)."""
        styled = self.raw is not None
        lines = ["rank,model,score,low,high,rank_best,rank_worst,human_battles,few_battles,resolved"
                 + (",raw_rank,raw_score,raw_low,raw_high,raw_rank_best,raw_rank_worst" if styled else "") + ",verdicts"]
        who = '"' + self.verdicts_text().replace('"', '""') + '"'
        for m in self.to_dict()["models"]:
            name = '"' + m["name"].replace('"', '""') + '"' if any(c in m["name"] for c in ',"\n') else m["name"]
            line = (f"{m['rank']},{name},{m['score']},{m['interval'][0]},{m['interval'][1]},{m['rank_set'][0]},"
                    f"{m['rank_set'][1]},{m['human_battles']},{str(m['few_battles']).lower()},"
                    f"{str(m['resolved']).lower()}")
            if styled:
                r = m["raw"]
                line += (f",{r['rank']},{r['score']},{r['interval'][0]},{r['interval'][1]},{r['rank_set'][0]},"
                         f"{r['rank_set'][1]}")
            lines.append(line + "," + who)
        return "\n".join(lines) + "\n"

    def style_lines(self) -> list[str]:
        """The style coefficients, one line each (empty without style control)."""
        if not self.style:
            return []
        out = [f"style coefficients (log-odds of winning per unit of the scaled feature; {1 - self.alpha:.0%} "
               f"intervals, {self.intervals}):"]
        for c in self.style["coefficients"]:
            out.append(f"  {c['name']:<8} {c['coef']:+.3f}  [{c['interval'][0]:+.3f}, {c['interval'][1]:+.3f}]")
        return out

    def summary(self) -> str:
        """A text table, strongest first, under the line saying whose verdicts it counts."""
        d = self.to_dict()
        text = self._styled_summary(d) if self.raw is not None else self._summary(d)
        return self.verdicts_text() + "\n" + self._words(text)

    def _summary(self, d: dict[str, Any]) -> str:
        width = max(len(m["name"]) for m in d["models"])
        out = [f"{len(d['models'])} models from {d['human_battles_used']} human battles of {d['battles']}"
               + (f", judges {', '.join(f'{k} (weight {v:.2f})' for k, v in d['judge_weights'].items())}"
                  if d["judge_weights"] else "")
               + (f", Davidson's ties (propensity {d['tie_propensity']:.2f})" if d["tie_propensity"] else "")
               + (f", drawn by {self.allocation} ({self.strata})" if self.strata else "")
               + (", bias-corrected scores" if d["estimator"] == "bias-corrected" else "")
               + (", scores shrunk toward the mean" if d["estimator"] == "shrunk" else "")
               + f"; {1 - self.alpha:.0%} intervals ({self.intervals}) and simultaneous rank-sets",
               f"{'rank':>4}  {'model':<{width}}  {'score':>7}  {'interval':>17}  rank-set"]
        for m in d["models"]:
            out.append(f"{_rank_cell(m):>4}  {m['name']:<{width}}  {m['score']:>7.1f}  [{m['interval'][0]:>7.1f}, "
                       f"{m['interval'][1]:>7.1f}]  {m['rank_set'][0]}-{m['rank_set'][1]}"
                       + (f"  * {m['human_battles']} battles" if m["few_battles"] else ""))
        return "\n".join(out + self._tail())

    def _tail(self) -> list[str]:
        """The lines under a board: the few-battle note, the notes, the stop rule, the assumption."""
        out = [f"* {self.few_note()}"] if self.few_note() else []
        if self.unresolved_text():
            out.append(self.unresolved_text())
        if self.shrinkage_text():
            out.append(f"note: {self.shrinkage_text()}")
        out.extend(f"note: {note}" for note in self.notes)
        if self.stop:
            out.append(f"stop rule {self.stop_text()}")
            if self.stop.get("explanation"):
                out.append(f"why: {self.stop['explanation']['sentence']}")
        out.append(f"assumption: {self.assumption()}")
        return out

    def _styled_summary(self, d: dict[str, Any]) -> str:
        """Controlled and raw scores side by side (style control)."""
        width = max(len(m["name"]) for m in d["models"])
        feats = ", ".join(self.style["features"])
        out = [f"{len(d['models'])} models from {d['human_battles_used']} human battles of {d['battles']}"
               + (f", judges {', '.join(f'{k} (weight {v:.2f})' for k, v in d['judge_weights'].items())}"
                  if d["judge_weights"] else "")
               + (f", drawn by {self.allocation} ({self.strata})" if self.strata else "")
               + (", bias-corrected scores" if d["estimator"] == "bias-corrected" else "")
               + (", scores shrunk toward the mean" if d["estimator"] == "shrunk" else "")
               + f"; style control for {feats}; {1 - self.alpha:.0%} intervals ({self.intervals}) and simultaneous "
                 "rank-sets",
               f"{'':>4}  {'':<{width}}  {'style-controlled':^38}    {'raw':^43}",
               f"{'rank':>4}  {'model':<{width}}  {'score':>7}  {'interval':>18}  {'rank-set':>8}    {'rank':>4} "
               f"{'score':>7}  {'interval':>18}  {'rank-set':>8}"]
        for m in d["models"]:
            r = m["raw"]
            out.append(f"{_rank_cell(m):>4}  {m['name']:<{width}}  {m['score']:>7.1f}  [{m['interval'][0]:>7.1f}, "
                       f"{m['interval'][1]:>7.1f}]  {str(m['rank_set'][0]) + '-' + str(m['rank_set'][1]):>8}    "
                       f"{_rank_cell(r):>4} {r['score']:>7.1f}  [{r['interval'][0]:>7.1f}, {r['interval'][1]:>7.1f}]  "
                       f"{str(r['rank_set'][0]) + '-' + str(r['rank_set'][1]):>8}"
                       + (f"  * {m['human_battles']} battles" if m["few_battles"] else ""))
        out.extend(self.style_lines())
        out.append(f"style features: {self.style['note']}")
        return "\n".join(out + self._tail())


def _rank_cell(m: dict) -> str:
    """A model's rank as printed: ``?`` after it when its rank-set spans more than half of the ranks."""
    return f"{m['rank']}{'' if m.get('resolved', True) else '?'}"


ASSUMPTION = ("the human battles used are every battle of the file, or a draw from them with recorded probabilities "
              "(uniform; the active rule's; or neyman's, strata fixed before the draw and battles drawn uniformly "
              "within each), where a draw may depend on verdicts already seen but not on those still to come; the "
              "judges may be anything (a poor judge lowers the gain, never the validity); intervals and rank-sets are "
              "asymptotic (normal or bootstrap)")


def leaderboard(battles: Battles, *, judges: Sequence[str] | None = None, human_budget: int | None = None,
                allocation: str = "uniform", alpha: float = 0.05, seed: int = 0, intervals: str = "sandwich",
                B: int = 1000, ties: str = "half", stop: str | None = None, first: int = 100,
                estimator: str = "auto", few: int = FEW, style: Covariates | None = None) -> Leaderboard:
    """The leaderboard of ``battles`` (module doc). ``judges``: names of ``battles.judges`` to use
    (default all of them). ``ties``: ``half`` or ``davidson`` (the tie-aware model; human battles
    only, sandwich intervals). ``stop``: ``"top-k:K"`` (stop once the rank-sets single out the K best)
    or ``"rank-set:S"`` (once every rank-set spans at most S ranks): human battles are then drawn in a
    random order and looked at after ``first``, ``2 first``, ``4 first``, ... up to ``human_budget``,
    each look at level ``alpha / L`` (L looks in all), so the stop is wrong with probability at most
    ``alpha`` (a union bound over the looks; asymptotic, as the rank-sets). When no look meets the rule,
    ``stop["explanation"]`` says why in one sentence (:func:`explain_stop`). ``estimator``: ``auto`` (default),
    ``mle``, ``bias-corrected`` or ``shrunk`` (module doc). ``few``: a model with fewer human battles than this has its variance
    floored at the model-based one (:func:`~evalsift.arena.bt.few_battle_floor`; 0 turns the floor off).
    ``style``: covariates of every battle (:func:`~evalsift.arena.style.style_covariates`): the board is
    then the style-controlled fit, with the same human draws fitted without them in ``board.raw`` and the
    covariates' coefficients and intervals in ``board.style`` (docs/arena.md, "Style control")."""
    if isinstance(few, bool) or not isinstance(few, (int, np.integer)) or few < 0:
        raise ParameterError(f"few must be an integer >= 0, got {few!r}", field="few")
    check_choice("allocation", allocation, ALLOCATIONS, where="arena")
    check_choice("estimator", estimator, ESTIMATORS, where="arena")
    check_choice("intervals", intervals, INTERVALS, where="arena")
    check_choice("ties", ties, TIES, where="arena")
    if style is not None and ties == "davidson":
        raise ParameterError("--style-control fits the Bradley-Terry model with a tie as half a win: leave out "
                             "--ties davidson (use --ties half), or leave out --style-control", field="ties")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ParameterError(f"--alpha must be in (0, 1), got {alpha!r}", field="alpha")
    judges = list(battles.judges) if judges is None else list(judges)
    rng = np.random.default_rng(seed)
    if human_budget is None:
        if allocation != "uniform":
            raise ParameterError(f"--allocation {allocation} chooses which human battles to use: give --human-budget N",
                                 field="allocation")
        if stop is not None:
            raise ParameterError("--stop needs --human-budget N: the most human battles it may use", field="stop")
        return _board(battles, np.arange(battles.n), np.ones(battles.n), [], judges, alpha, seed, intervals, B, ties,
                      allocation, estimator=estimator, few=few, style=style)
    if isinstance(human_budget, bool) or not isinstance(human_budget, (int, np.integer)) or human_budget < 2:
        raise ParameterError(f"--human-budget must be an integer >= 2, got {human_budget!r}", field="human_budget")
    if human_budget > battles.n:
        raise ParameterError(f"--human-budget {human_budget} is more than the {battles.n} battles in "
                             f"{battles.source or 'the data'}; use at most {battles.n}, or leave it out to use all",
                             field="human_budget")
    if stop is not None:
        return _stopped(battles, judges, int(human_budget), allocation, alpha, seed, intervals, B, ties, stop, first,
                        estimator, few, style)
    strata = None
    if allocation == "uniform":
        labelled, prob = draw_uniform(battles.n, human_budget, rng)
    elif allocation == "active":
        labelled, prob = draw_active(battles, human_budget, rng)
    else:
        labelled, prob, strata = draw_neyman(battles, human_budget, rng, judges, alpha=alpha)
    return _board(battles, labelled, prob, judges, judges, alpha, seed, intervals, B, ties, allocation, strata=strata,
                  estimator=estimator, few=few, style=style)


def parse_stop(stop: str, K: int) -> tuple[str, int]:
    """``"top-k:K"`` or ``"rank-set:S"`` -> (rule, number), checked against ``K`` models."""
    rule, _, num = str(stop).partition(":")
    try:
        value = int(num)
    except ValueError:
        value = -1
    if rule not in ("top-k", "rank-set") or not 1 <= value <= K:
        raise ParameterError(f"--stop must be top-k:K (1 <= K <= {K}) or rank-set:S (1 <= S <= {K}), got {stop!r}",
                             field="stop")
    return rule, value


def stop_met(rule: str, value: int, rank_set: np.ndarray) -> bool:
    """Whether the rank-sets settle the question: ``top-k``: exactly ``value`` models can only be in the
    top ``value`` and every other model can only be below; ``rank-set``: every set spans <= ``value`` ranks."""
    best, worst = rank_set[:, 0], rank_set[:, 1]
    if rule == "top-k":
        inside = worst <= value
        return int(inside.sum()) == value and bool(np.all(best[~inside] > value))
    return bool(np.all(worst - best + 1 <= value))


def planned_looks(first: int, budget: int) -> list[int]:
    """When a stop rule looks: after ``first``, ``2 first``, ``4 first``, ... human battles, and at ``budget``;
    each look is made at ``alpha / len(looks)``, so the stop is wrong with probability at most ``alpha``.

    >>> planned_looks(100, 1000)
    [100, 200, 400, 800, 1000]
    """
    looks = []
    n = min(int(first), int(budget))
    while n < budget:
        looks.append(n)
        n *= 2
    looks.append(int(budget))
    return looks


def level_text(alpha: float) -> str:
    """``1 - alpha`` as a percentage, with as many decimals as it takes to show ``alpha`` to within 5% of
    itself (never rounded up to 100%).

    >>> level_text(0.1), level_text(0.1 / 6), level_text(0.05 / 7), level_text(0.0001)
    ('90%', '98.3%', '99.3%', '99.99%')
    """
    p = 100.0 * (1.0 - float(alpha))
    for d in range(8):
        r = round(p, d)
        if r < 100 and abs(r - p) <= 0.05 * (100.0 - p):
            break
    return f"{r:.{d}f}%"


def explain_stop(stop: str, models: Sequence[str], alpha: float, looks: Sequence[int], n: int, *,
                 rank_set: np.ndarray | None = None, look_rank_set: np.ndarray | None = None,
                 order: Sequence[int] | None = None, met_at: int | None = None,
                 closed: str | None = None) -> dict[str, Any]:
    """Why a stop rule has or has not stopped, in one plain sentence built from the numbers -- the app's
    admin page, ``annotate status`` and ``evalsift arena --stop`` all say it with this function.

    The board a person reads is at ``1 - alpha`` (``rank_set``, on the ``n`` human battles so far), while
    the rule (:func:`planned_looks`, :func:`stop_met`) looks only at the planned ``looks``, each at
    ``1 - alpha / L``: a board can single out the best at 90% long before the rule may stop.
    ``look_rank_set``: the rank-sets of the same ``n`` battles at the looks' level, when known;
    ``order``: model indices strongest first (names the leaders in that order); ``met_at``: the look
    that met the rule; ``closed``: why no more battles will come, when that is so before the last look.

    Returns ``{"sentence", "level", "look_level", "alpha", "alpha_per_look", "planned_looks", "battles",
    "next_look", "settled", "settled_at_look_level", "leaders"}`` (``settled``: whether the ``1 - alpha``
    rank-sets meet the rule; ``leaders``: with ``top-k``, the systems they single out).

    >>> rs = np.array([[1, 1], [2, 3], [2, 3]])          # the best singled out at 90%
    >>> why = explain_stop("top-k:1", ["A", "B", "C"], 0.1, [100, 200, 400, 600], 250, rank_set=rs)
    >>> print(*why["sentence"].split("; "), sep="\\n")
    A looks best at 90%
    the stop needs 97.5% (alpha 0.1 / 4 planned looks) at a planned look
    next look at 400 human battles (250 now)
    """
    rule, value = parse_stop(stop, len(models))
    looks = [int(x) for x in looks]
    L = len(looks)
    a_look = alpha / L
    shown, needed = level_text(alpha), level_text(a_look)
    need = f"{needed} (alpha {alpha:g} / {L} planned look{'s' if L > 1 else ''})"
    nxt = None if closed or met_at is not None else next((x for x in looks if x > n), None)
    out: dict[str, Any] = {"level": shown, "look_level": needed, "alpha": alpha, "alpha_per_look": a_look,
                           "planned_looks": L, "battles": int(n), "next_look": nxt, "settled": None,
                           "settled_at_look_level": None, "leaders": None}
    if met_at is not None:
        out["sentence"] = f"{stop} was met at the planned look at {met_at} human battles, at {need}"
        return out
    parts = []
    if rank_set is not None:
        rank_set = np.asarray(rank_set)
        settled = stop_met(rule, value, rank_set)
        out["settled"] = settled
        if rule == "top-k":
            idx = list(order) if order is not None else sorted(range(len(models)), key=lambda i: tuple(rank_set[i]))
            leaders = [models[i] for i in idx if rank_set[i, 1] <= value]
            if settled:
                out["leaders"] = leaders
                parts.append(f"{leaders[0]} looks best at {shown}" if value == 1 else
                             f"{', '.join(leaders)} look like the top {value} at {shown}")
            else:
                parts.append(f"no system is singled out as the best at {shown}" if value == 1 else
                             f"the top {value} are not singled out at {shown}")
        else:
            ranks_ = f"{value} rank{'s' if value > 1 else ''}"
            parts.append(f"every rank-set spans at most {ranks_} at {shown}" if settled else
                         f"some rank-set spans more than {ranks_} at {shown}")
    rule_part = f"the stop needs {need} at a planned look"
    if look_rank_set is not None:
        at_look = stop_met(rule, value, np.asarray(look_rank_set))
        out["settled_at_look_level"] = at_look
        rule_part += (f", and at {needed} the {n} human battles " +
                      ("settle it too, but the rule looks only at its planned looks" if at_look else "do not settle it"))
    parts.append(rule_part)
    if closed:
        parts.append(f"no more battles will come: {closed} ({n} human battles)")
    elif nxt is not None:
        parts.append(f"next look at {nxt} human battles ({n} now)")
    else:
        parts.append(f"no planned look is left (the last was at {looks[-1]} human battles)")
    out["sentence"] = "; ".join(parts)
    return out


def _stopped(battles, judges, budget, allocation, alpha, seed, intervals, B, ties, stop, first,
             estimator="auto", few=FEW, style=None) -> Leaderboard:
    rule, value = parse_stop(stop, battles.K)
    if allocation != "uniform":
        raise ParameterError("--stop draws the human battles in one random order: use --allocation uniform",
                             field="allocation")
    if isinstance(first, bool) or not isinstance(first, (int, np.integer)) or first < 2:
        raise ParameterError(f"--first must be an integer >= 2, got {first!r}", field="first")
    looks = planned_looks(int(first), budget)
    a_look = alpha / len(looks)
    order = np.random.default_rng([seed, 7]).permutation(battles.n)
    trail = []
    board = seen = None
    # a look reads only the rank-sets, which shrinking the scores leaves as they are: looks fit the plain scores,
    # and the board printed (the last look's) is made again with the estimator asked for
    at_look = "mle" if estimator in ("auto", "shrunk") else estimator
    for n in looks:
        labelled = np.sort(order[:n])
        try:
            board = _board(battles, labelled, np.full(n, n / battles.n), judges, judges, a_look, seed, intervals, B,
                           ties, allocation, estimator=at_look, few=few, style=style)
            seen = labelled
        except DataError as e:  # too few battles yet for every model to meet the others: look again later
            trail.append({"battles": n, "met": False, "note": str(e)})
            continue
        met = stop_met(rule, value, board.rank_set)
        trail.append({"battles": n, "met": met})
        if met:
            break
    if board is None:
        raise DataError(f"even {budget} human battles leave a model without battles or the models in groups that "
                        "never meet; give a larger --human-budget", field="human_budget")
    if at_look != estimator:
        board = _board(battles, seen, np.full(len(seen), len(seen) / battles.n), judges, judges, a_look, seed, intervals,
                       B, ties, allocation, estimator=estimator, few=few, style=style)
    board.stop = {"rule": stop, "met": trail[-1]["met"], "looks": trail, "planned_looks": looks,
                  "alpha_per_look": a_look,
                  "guarantee": f"the stop names the answer wrongly with probability at most {alpha} (each of the "
                               f"{len(looks)} planned looks at {a_look:.4g}; asymptotic)"}
    if not board.stop["met"]:  # why not: the same battles at 1 - alpha, as a person would read them
        shown = _board(battles, seen, np.full(len(seen), len(seen) / battles.n), judges, judges, alpha, seed,
                       intervals, B, ties, allocation, estimator=estimator, few=few, style=style)
        board.stop["explanation"] = explain_stop(stop, battles.models, alpha, looks, len(seen),
                                                 rank_set=shown.rank_set, look_rank_set=board.rank_set,
                                                 order=shown.order())
    return board


def small_sample(estimator: str, ties: str, n: int, K: int) -> tuple[str, bool]:
    """``(estimator, chosen)``: what ``estimator`` means for ``n`` human battles among ``K`` models -- ``auto``
    is ``shrunk`` below :data:`SMALL` human battles per model on average (``2 n < SMALL K``) among at least
    :data:`SMALL_MODELS` models with ties half (``chosen``: so decided), else ``mle``; the others are themselves.

    >>> small_sample("auto", "half", 500, 20), small_sample("auto", "half", 4000, 20), small_sample("auto", "half", 50, 3)
    (('shrunk', True), ('mle', False), ('mle', False))
    """
    if estimator != "auto":
        return estimator, False
    if ties == "half" and K >= SMALL_MODELS and 2 * n < SMALL * K:
        return "shrunk", True
    return "mle", False


def _board(battles, labelled, prob, use, judges, alpha, seed, intervals, B, ties, allocation,
           verdicts=None, strata=None, estimator="auto", few=None, style=None) -> Leaderboard:
    """The leaderboard from the human draws ``labelled`` (with probabilities ``prob``; ``verdicts``: each
    draw's own verdict, default the battle's; ``strata``: each draw's stratum, for a stratified draw) and
    the judges ``use``; ``estimator="bias-corrected"`` subtracts the fit's first-order bias from the
    scores and from every bootstrap replicate; ``"shrunk"`` prints the posterior means under the
    empirical prior (:func:`~evalsift.arena.bt.shrinkage_prior`) as the scores, the intervals and
    rank-sets being the plain fit's (each interval widened to hold its score); ``"auto"``:
    :func:`small_sample`. ``style``: covariates of every battle (style control): the board is the
    controlled fit, with the same draws fitted without them in ``raw``; covariates that cannot be told
    apart on the human draws are merged or dropped first, with a note
    (:func:`~evalsift.arena.bt.independent_covariates`)."""
    if style is not None and ties == "davidson":
        raise ParameterError("--style-control fits the Bradley-Terry model with a tie as half a win: leave out "
                             "--ties davidson (use --ties half), or leave out --style-control", field="ties")
    estimator, chosen = small_sample(estimator, ties, len(labelled), battles.K)
    if ties == "davidson" and estimator != "mle":
        raise ParameterError(f"--estimator {estimator} works on the Bradley-Terry fit of --ties half; with --ties "
                             "davidson use --estimator mle (or auto, which is mle there)", field="estimator")
    notes = []
    if style is not None:
        style, merged = independent_covariates(style, battles.a[labelled], battles.b[labelled], battles.K, at=labelled)
        if merged:
            notes.append(merged)
    if ties == "davidson":
        if strata is not None:
            raise ParameterError("--ties davidson fits battles drawn uniformly: use --allocation uniform or active, "
                                 "or --ties half", field="ties")
        if intervals == "bootstrap" or use:
            raise ParameterError("--ties davidson fits the human battles alone with sandwich intervals: leave out "
                                 "--judge (with --human-budget) and --intervals bootstrap, or use --ties half",
                                 field="ties")
        fit = fit_davidson(_drawn(battles, np.asarray(labelled, dtype=int), prob, verdicts))
    else:
        fit = fit_bt_ppi(battles, labelled, use, prob=prob, verdicts=verdicts, strata=strata, covariates=style)
    shrunk = (fit_bt_ppi(battles, labelled, use, prob=prob, verdicts=verdicts, strata=strata, covariates=style,
                         prior="empirical") if estimator == "shrunk" else None)
    from dataclasses import replace

    bias = None
    if estimator == "bias-corrected":
        bias = (curvature_bias(battles, fit.coef, fit.cov) if style is None else
                curvature_bias(battles, fit.coef, fit.cov, covariates=style, gamma=fit.gamma, full_cov=fit.full_cov))
    lam = list(fit.lam.values())
    if bias is not None:
        fit = replace(fit, coef=fit.coef - bias, method=f"{fit.method}+bc")
    coef, cov, extra, low = few_battle_floor(battles, labelled, fit.coef, fit.cov, prob=prob, few=few,
                                             verdicts=verdicts, covariates=style, gamma=fit.gamma)
    fit = replace(fit, coef=coef, cov=cov)
    gamma_interval = fit.gamma_intervals(alpha)
    if intervals == "bootstrap":
        draws = bootstrap_bt_ppi(battles, labelled, use, lam, B, prob=prob, seed=seed, verdicts=verdicts,
                                 strata=strata, covariates=style)
        if style is not None:
            K = battles.K
            gamma_interval = np.quantile(draws[:, K:], [alpha / 2, 1 - alpha / 2], axis=0).T
            draws = draws[:, :K]
        if bias is not None:
            draws = draws - bias
        draws = anchor_draws(draws, extra, low, seed=[seed, 30])
        lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
        interval = np.column_stack([lo, hi])
        above, c = sure_pairs(fit.coef, alpha=alpha, draws=draws)
    else:
        interval = fit.intervals(alpha)
        above, c = sure_pairs(fit.coef, alpha=alpha, cov=fit.cov, seed=seed)
    shrinkage = None
    if shrunk is not None:  # the printed scores: the posterior means, on the same scale; the claims stay the fit's
        anchor = ~low if not low.all() else np.ones(len(low), bool)
        score = shrunk.coef - shrunk.coef[anchor].mean()
        out = (score < interval[:, 0]) | (score > interval[:, 1])
        interval = np.column_stack([np.minimum(interval[:, 0], score), np.maximum(interval[:, 1], score)])
        fit = replace(fit, coef=score, method=f"{fit.method}+shrunk", prior=shrunk.prior)
        shrinkage = {"auto": chosen, "threshold_per_model": SMALL, "human_battles": int(len(labelled)),
                     "tau": round(shrunk.prior["tau"], 4), "tau_elo": round(ELO * shrunk.prior["tau"], 1),
                     "dispersion": round(shrunk.prior["dispersion"], 4),
                     "precision": round(shrunk.prior["precision"], 6), "widened": int(out.sum())}
    board = Leaderboard(battles.models, fit, 1000.0 + ELO * interval, rank_sets_of(above), c, float(alpha), intervals,
                        allocation, len(labelled), battles.n, {j: _agreement(battles, j, labelled, verdicts)
                                                               for j in judges}, seed,
                        battles.source, battles.pair_counts(labelled),
                        strata=strata_note(np.asarray(strata)) if strata is not None else None,
                        few=FEW if few is None else int(few), few_models=low, verdicts=dict(battles.verdicts),
                        above=above, shrinkage=shrinkage, notes=notes)
    if style is not None:
        board.raw = _board(battles, labelled, prob, use, judges, alpha, seed, intervals, B, ties, allocation,
                           verdicts=verdicts, strata=strata, estimator=estimator, few=few)
        board.style = {"features": list(style.names), "note": style.note,
                       "coefficients": [{"name": n, "coef": round(float(g), 4),
                                         "interval": [round(float(lo), 4), round(float(hi), 4)]}
                                        for n, g, (lo, hi) in zip(style.names, fit.gamma, gamma_interval)],
                       "units": "log-odds of the first side winning per unit of the scaled feature"}
    return board


def _agreement(battles: Battles, judge: str, labelled=None, verdicts=None) -> dict[str, Any]:
    """A judge against the human verdicts on every battle both have (``verdicts``: the people's at the
    draws ``labelled``, when they are not the battles' own): agreement (ties half) and the per-battle
    correlation."""
    f = battles.judges[judge]
    if verdicts is not None:
        f, y = f[np.asarray(labelled, dtype=int)], np.asarray(verdicts, float)
    else:
        y = battles.y
    ok = ~np.isnan(f)
    y = y[ok]
    out: dict[str, Any] = {"battles": int(ok.sum()),
                           "agreement": round(float(np.mean(1 - np.abs(y - f[ok]))), 4) if ok.any() else None,
                           "correlation": None}
    if ok.sum() <= 2:
        out["correlation_note"] = f"{int(ok.sum())} battle(s) with both a human and a {judge} verdict: too few for a correlation"
    elif f[ok].std() == 0 or y.std() == 0:
        who = f"{judge} gave" if f[ok].std() == 0 else "the people gave"
        out["correlation_note"] = (f"{who} the same verdict on all {int(ok.sum())} battles: a constant has no "
                                   "correlation")
    else:
        out["correlation"] = round(float(np.corrcoef(y, f[ok])[0, 1]), 4)
    return out


def write_leaderboard(board: Leaderboard, out: str | Path, by: tuple[str, list] | None = None) -> dict[str, Path]:
    """Write ``results.json``, ``leaderboard.csv`` and ``leaderboard.html`` into ``out``.

    ``by``: ``(column, [(value, board or the reason there is none), ...])`` -- one board per value of a
    column (``arena --by``): ``by_<column>.csv`` (the boards' rows with a ``group`` column), a section per
    value in ``leaderboard.html`` and ``results.json["by"]``."""
    import csv as _csv
    import io
    import re

    from ..io._common import write_atomic

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.json", "csv": out / "leaderboard.csv", "html": out / "leaderboard.html"}
    d = board.to_dict()
    page = leaderboard_html(board)
    if by is not None:
        column, groups = by
        d["by"] = {"column": column, "boards": {v: (g.to_dict() if isinstance(g, Leaderboard) else {"skipped": g})
                                                for v, g in groups}}
        rows = []
        for value, g in groups:
            if not isinstance(g, Leaderboard):
                continue
            table = list(_csv.reader(io.StringIO(g.csv())))
            header = ["group"] + table[0]
            rows.extend([value] + r for r in table[1:])
        paths["by"] = out / f"by_{re.sub(r'[^A-Za-z0-9_.-]+', '_', column)}.csv"
        buf = io.StringIO()
        w = _csv.writer(buf, lineterminator="\n")
        if rows:
            w.writerow(header)
            w.writerows(rows)
        write_atomic(paths["by"], buf.getvalue())
        page = page.replace("</body></html>", group_sections(column, groups) + "</body></html>")
    write_atomic(paths["results"], json.dumps(plain_json(d), indent=2, allow_nan=False) + "\n")  # each file whole
    write_atomic(paths["csv"], board.csv())
    write_atomic(paths["html"], page)
    return paths


__all__ = ["ALLOCATIONS", "ASSUMPTION", "INTERVALS", "Leaderboard", "explain_stop", "leaderboard", "level_text",
           "pair_probabilities", "parse_stop", "planned_looks", "stop_met", "write_leaderboard"]
