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
       "img{max-width:100%}")


def png_uri(fig: Any) -> str:
    """A matplotlib figure as a ``data:image/png;base64,...`` URI (and the figure closed)."""
    from .plots import _pyplot

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def fmt(v: Any) -> str:
    """A table cell: numbers to 4 significant digits, everything escaped."""
    if isinstance(v, bool) or v is None:
        return html.escape(str(v))
    if isinstance(v, (float, np.floating)):
        return "nan" if np.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An HTML table (cells through :func:`fmt`)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def page(title: str, body: str) -> str:
    """A whole HTML document with the shared stylesheet."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def write_json(results: dict, path: str | Path) -> Path:
    """Strict JSON (numpy values converted, NaN written as null)."""
    from ..io._common import json_default, plain_json

    path = Path(path)
    path.write_text(json.dumps(plain_json(results), indent=1, default=json_default, allow_nan=False),
                    encoding="utf-8")
    return path


__all__ = ["CSS", "fmt", "page", "png_uri", "table", "write_json"]
