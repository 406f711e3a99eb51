"""The board: :func:`winrate_board` (what ``evalsift winrate`` computes) puts the comparisons, the win rates and
the length-controlled ones together into a :class:`WinRateBoard`, overall and per ``--by`` group."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import DataError, ParameterError
from ..progress import progress_bar
from .comparisons import Comparisons, baseline_comparisons
from .lc import (REGULARIZE_TO_BASELINE, LCInfluence, _standardised, estimate_difficulty, lc_standard_error,
                 length_controlled_win_rate)
from .published import PublishedDifficulty, PublishedWeights, _weights_keys, published_controlled, read_alpaca_weights
from .rate import win_rate
from .report import WinRateBoard


#: the gamed versions of the baseline whose comparisons with it regularise the fit, when the data has them
GAMED_SUFFIXES = ("_verbose", "_concise")
#: below this many models with lengths, a note says the estimated difficulties say little
FEW_MODELS = 10

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
