"""``leaderboard.html``: one self-contained page (no script, no external file): the scores with their
intervals drawn as bars, the rank-sets, the predicted win-rate heatmap and the human battles per
pair."""

from __future__ import annotations

import html
from typing import Any

import numpy as np


def _cell_colour(p: float) -> str:
    """White at 1/2, blue toward 1, red toward 0."""
    t = abs(p - 0.5) * 2
    base = (49, 104, 172) if p >= 0.5 else (190, 60, 50)
    r, g, b = (round(255 + (c - 255) * t) for c in base)
    return f"rgb({r},{g},{b})"


def _num(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def leaderboard_html(board: Any) -> str:
    """The page for a :class:`~evalsift.arena.leaderboard.Leaderboard`."""
    d = board.to_dict()
    esc = html.escape
    scaled = [m for m in d["models"] if not m["few_battles"]] or d["models"]  # a few-battle model's wide bar is cut
    lo = min(min(m["interval"][0] for m in scaled), min(m["score"] for m in d["models"]))
    hi = max(max(m["interval"][1] for m in scaled), max(m["score"] for m in d["models"]))
    span = max(hi - lo, 1e-9)
    rows = []
    for m in d["models"]:
        left = max(100 * (m["interval"][0] - lo) / span, 0.0)
        width = max(min(100 * (m["interval"][1] - lo) / span, 100.0) - left, 0.3)
        dot = 100 * (m["score"] - lo) / span
        rows.append(f"<tr><td>{m['rank']}{'' if m['resolved'] else '?'}</td><td>{esc(m['name'])}</td><td class=num>{m['score']:.1f}</td>"
                    f"<td class=num>[{m['interval'][0]:.1f}, {m['interval'][1]:.1f}]</td>"
                    f"<td class=bar><div class=track><div class=ci style='left:{left:.2f}%;width:{width:.2f}%'></div>"
                    f"<div class=dot style='left:{dot:.2f}%'></div></div></td>"
                    f"<td>{m['rank_set'][0]}&ndash;{m['rank_set'][1]}</td><td class=num>{m['human_battles']}{'*' if m['few_battles'] else ''}</td>"
                    + (f"<td class=num>{m['raw']['rank']}{'' if m['raw']['resolved'] else '?'}</td><td class=num>{m['raw']['score']:.1f}</td>"
                       f"<td class=num>[{m['raw']['interval'][0]:.1f}, {m['raw']['interval'][1]:.1f}]</td>"
                       f"<td>{m['raw']['rank_set'][0]}&ndash;{m['raw']['rank_set'][1]}</td>" if "raw" in m else "")
                    + "</tr>")
    order = [board.models.index(m["name"]) for m in d["models"]]
    W = board.fit.win_matrix()
    counts = board.pair_counts if board.pair_counts is not None else np.zeros((len(order), len(order)), int)
    head = "".join(f"<th class=rot><div>{esc(board.models[j])}</div></th>" for j in order)
    heat = []
    for i in order:
        cells = "".join("<td class=h></td>" if i == j else
                        f"<td class=h style='background:{_cell_colour(W[i, j])}' title='{esc(board.models[i])} beats "
                        f"{esc(board.models[j])}: {W[i, j]:.2f} predicted; {counts[i, j]} human battles'>{W[i, j]:.2f}"
                        f"<br><small>{counts[i, j]}</small></td>" for j in order)
        heat.append(f"<tr><th>{esc(board.models[i])}</th>{cells}</tr>")
    judges = "".join(f"<li>{esc(k)}: weight {d['judge_weights'].get(k, 0.0):.2f}; agreement with people "
                     f"{_num(v['agreement'])}, per-battle correlation "
                     f"{_num(v['correlation']) if v['correlation'] is not None else '- (' + esc(v['correlation_note']) + ')'}"
                     f" over {v['battles']} battles</li>" for k, v in d["judges"].items())
    stop = ""
    if board.stop:
        why = (board.stop.get("explanation") or {}).get("sentence")
        stop = (f"<h2>Stop rule</h2><p id=stop>{esc(board.stop_text())}.</p>"
                + (f"<p id=stop-why>Why: {esc(why)}</p>" if why else ""))
    style = ""
    raw_head = ""
    if board.style:
        coefs = "".join(f"<tr><td>{esc(c['name'])}</td><td class=num>{c['coef']:+.3f}</td>"
                        f"<td class=num>[{c['interval'][0]:+.3f}, {c['interval'][1]:+.3f}]</td></tr>"
                        for c in board.style["coefficients"])
        style = (f"<h2>Style control</h2><p id=style>Scores are style-controlled for {esc(', '.join(board.style['features']))}"
                 f" (the raw scores, fitted on the same battles without the style features, beside them). Style "
                 f"coefficients, {esc(board.style['units'])}, with {1 - d['alpha']:.0%} intervals:</p>"
                 f"<table id=style-coefficients><tr><th>feature</th><th>coefficient</th><th>interval</th></tr>{coefs}"
                 f"</table><p class=note>{esc(board.style['note'])}.</p>")
        raw_head = "<th>raw rank</th><th>raw score</th><th>raw interval</th><th>raw rank-set</th>"
    notes = "".join(f"<p class=note>Note: {esc(n)}.</p>" for n in getattr(board, "notes", []))
    estimator = (" Scores bias-corrected (the maximum-likelihood fit less its first-order bias)."
                 if board.estimator == "bias-corrected" else
                 " Scores shrunk toward the models' mean (empirical Bayes; the note below says why)."
                 if board.estimator == "shrunk" else "")
    marks = "".join(f"<p id={key} class=note>{esc(text)}.</p>" for key, text in
                    (("unresolved", board.unresolved_text()), ("shrunk", board.shrinkage_text())) if text)
    return board._words(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evalsift leaderboard</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}}
table{{border-collapse:collapse;margin:1em 0}} td,th{{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}}
.num{{text-align:right;font-variant-numeric:tabular-nums}} .bar{{width:320px}}
.track{{position:relative;height:12px;background:#f3f3f3}} .ci{{position:absolute;top:3px;height:6px;background:#3168ac}}
.dot{{position:absolute;top:1px;width:4px;height:10px;margin-left:-2px;background:#111}}
.h{{width:42px;height:34px;text-align:center;font-size:11px;border:1px solid #fff}} .rot{{height:140px;vertical-align:bottom}}
.rot div{{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;font-size:12px}}
.note{{color:#555;font-size:0.9em}}
</style></head><body>
<h1>Leaderboard</h1>
<p id=verdicts><b>{esc(board.verdicts_text())}</b></p>
<p>{len(d['models'])} models from {d['human_battles_used']} human battles of {d['battles']} ({esc(d['allocation'])}
allocation{', judges stacked by prediction-powered inference' if d['judge_weights'] else ''}); source {esc(str(d['source']))}.
Scores on the Elo scale (1000 = the models' mean); {1 - d['alpha']:.0%} intervals ({esc(d['intervals'])});
rank-sets hold simultaneously with probability {1 - d['alpha']:.0%}.{estimator}</p>
{stop}
<table id=scores><thead><tr><th>rank</th><th>model</th><th>score</th><th>{1 - d['alpha']:.0%} interval</th><th></th>
<th>rank-set</th><th>human battles</th>{raw_head}</tr></thead><tbody>
{''.join(rows)}
</tbody></table>
{f'<p id=few class=note>* {esc(board.few_note())}.</p>' if board.few_note() else ''}
{marks}{style}{notes}
{f'<h2>Judges</h2><ul>{judges}</ul>' if judges else ''}
<h2>Predicted win rates (row beats column) and human battles per pair</h2>
<table id=heatmap><tr><th></th>{head}</tr>{''.join(heat)}</table>
<p class=note>Assumption: {esc(d['assumption'])}.</p>
</body></html>
""")


def group_sections(column: str, groups: list) -> str:
    """One section per value of ``column`` (``arena --by``): its board's score table, or why there is none."""
    esc = html.escape
    parts = [f"<h2 id=by>Boards by {esc(column)}</h2>"]
    for k, (value, board) in enumerate(groups):
        if isinstance(board, str):
            parts.append(f"<h3>{esc(column)} = {esc(value)}</h3><p class=note>{esc(board)}</p>")
            continue
        page = leaderboard_html(board)
        start = page.index("<table id=scores>")
        end = page.index("</tbody></table>", start) + len("</tbody></table>")
        d = board.to_dict()
        parts.append(f"<h3>{esc(column)} = {esc(value)}</h3><p>{len(d['models'])} models from "
                     f"{d['human_battles_used']} {board.who} battles</p>"
                     + page[start:end].replace("<table id=scores>", f"<table id=scores-{k} class=group-scores>")
                     + (f"<p class=note>* {esc(board._words(board.few_note()))}.</p>" if board.few_note() else ""))
    return "".join(parts)
