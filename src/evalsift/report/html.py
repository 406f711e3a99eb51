"""Self-contained HTML reports: PNG figures as ``data:`` URIs, tables, one small stylesheet; no network,
no external JavaScript or CSS, so a report can be mailed or archived as it is. Shared by
``evalsift profile`` and ``evalsift omni curve``."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}"
       "img{max-width:100%}.foot{font-size:12px;color:#555;margin:.1em 0}"
       ".warnings{border:2px solid #c77700;background:#fff6e5;padding:.3em 1em;margin:1em 0}"
       ".warnings h2{margin:.3em 0;font-size:1.1em;color:#8a4b00}")

DASH = "\u2014"  # what a table shows where it has no value
NOT_DEFINED = "no value: not defined for this row"  # the footnote of a missing value nobody explained


class Absent:
    """A table cell that has no value, and why: :func:`table` shows a dash and puts ``why`` in a footnote."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = str(why)

    def __repr__(self) -> str:
        return f"Absent({self.why!r})"


def missing(v: Any) -> bool:
    """True for a cell with no value: None, NaN or an :class:`Absent`."""
    return v is None or isinstance(v, Absent) or (isinstance(v, (float, np.floating)) and bool(np.isnan(v)))


def png_uri(fig: Any) -> str:
    """A matplotlib figure as a ``data:image/png;base64,...`` URI (and the figure closed)."""
    from .plots import _pyplot

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def fmt(v: Any) -> str:
    """A table cell: numbers to 4 significant digits, everything escaped; no value (:func:`missing`) is a dash.

    >>> fmt(0.123456), fmt(None) == DASH, fmt(float("nan")) == DASH, fmt("a<b")
    ('0.1235', True, True, 'a&lt;b')
    """
    if missing(v):
        return DASH
    if isinstance(v, bool):
        return html.escape(str(v))
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}"
    return html.escape(str(v))


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], absent: dict[str, str] | None = None) -> str:
    """An HTML table (cells through :func:`fmt`). A cell with no value (None, NaN, an :class:`Absent`) shows a
    dash and a footnote mark; the footnotes under the table say why: the Absent's reason, else ``absent`` of the
    cell's column header, else :data:`NOT_DEFINED`. A report never shows Python's None or nan.

    >>> t = table(["x", "y"], [[1, None], [Absent("not judged"), 2.5]], absent={"y": "no y here"})
    >>> "None" in t, t.count(DASH + "<sup>"), "<sup>1</sup> no y here" in t, "<sup>2</sup> not judged" in t
    (False, 2, True, True)
    """
    why: dict[str, int] = {}

    def cell(v: Any, col: int) -> str:
        if not missing(v):
            return fmt(v)
        reason = v.why if isinstance(v, Absent) else (absent or {}).get(header[col] if col < len(header) else "")
        k = why.setdefault(reason or NOT_DEFINED, len(why) + 1)
        return f"{DASH}<sup>{k}</sup>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(c, j)}</td>" for j, c in enumerate(r)) + "</tr>" for r in rows)
    foot = "".join(f"<p class='foot'><sup>{k}</sup> {html.escape(w)}</p>" for w, k in why.items())
    return f"<table><tr>{head}</tr>{body}</table>{foot}"


def warnings_box(lines: Sequence[str], source: str = "the command") -> str:
    """The report's "Warnings" box: every warning and note ``source`` prints on the terminal (its ``note:``
    lines), in the same words and order; empty when there are none.

    >>> box = warnings_box(["a <b> c"], "evalsift profile")
    >>> "<h2>Warnings (1)</h2>" in box, "<li>a &lt;b&gt; c</li>" in box, warnings_box([])
    (True, True, '')
    """
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(str(n))}</li>" for n in lines)
    return (f"<div class='warnings' id='warnings'><h2>Warnings ({len(lines)})</h2><p class='foot'>What {source} "
            f"prints on the terminal as <code>note:</code> lines, in the same words.</p><ul>{items}</ul></div>")


def page(title: str, body: str) -> str:
    """A whole HTML document with the shared stylesheet."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def write_json(results: dict, path: str | Path) -> Path:
    """Strict JSON (numpy values converted, NaN written as null), written whole or not at all."""
    from ..io._common import json_default, plain_json, write_atomic

    return write_atomic(path, json.dumps(plain_json(results), indent=1, default=json_default, allow_nan=False))


__all__ = ["CSS", "DASH", "NOT_DEFINED", "Absent", "fmt", "missing", "page", "png_uri", "table", "warnings_box",
           "write_json"]
