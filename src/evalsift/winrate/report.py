"""The board's reports: :class:`WinRateBoard` (the win rates against a baseline, overall and per ``--by`` group)
with its ``results.json`` dict, CSV rows, summary and HTML page (:func:`_board_html`); :func:`write_board` writes
the three files."""

from __future__ import annotations

import csv
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..verdicts import source_of
from .comparisons import Comparisons, verdicts_text


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
    from ..io._common import atomic_file, json_default, plain_json, write_atomic

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
