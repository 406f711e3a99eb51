"""The HTML reports say what the terminal says (issue 29, item 7): ``omni curve``'s and ``profile``'s
report.html, written by the real commands on small inputs, show no Python ``None``/``nan`` (a dash and a
footnote saying why), no empty plot panel, and a Warnings box holding exactly the ``note:`` lines the
command printed -- the sampler's convergence warnings and the OOD warning included; no matplotlib warning
reaches the terminal.
"""

from __future__ import annotations

import json
import warnings
from html.parser import HTMLParser

import pytest

from evalsift.cli import main
from evalsift.cli._common import collect_notes, note
from evalsift.report.html import DASH

# what matplotlib's own warnings say (an empty legend, a layout it cannot make, a log axis with values <= 0)
MATPLOTLIB = ("matplotlib", "UserWarning", "No artists with labels", "tight_layout", "Tight layout", "nonpositive",
              "Data has no positive values")


class Report(HTMLParser):
    """The parts of a report the tests read: every table cell's text (with its footnote mark), the Warnings
    box's items, the footnotes and the whole visible text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.warnings: list[str] = []
        self.feet: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._li: list[str] | None = None
        self._foot: list[str] | None = None
        self._in_box = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td":
            self._cell = []
        elif tag == "div" and a.get("class") == "warnings":
            self._in_box = True
        elif tag == "li" and self._in_box:
            self._li = []
        elif tag == "p" and a.get("class") == "foot" and not self._in_box:
            self._foot = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None
        elif tag == "li" and self._li is not None:
            self.warnings.append("".join(self._li))
            self._li = None
        elif tag == "div":
            self._in_box = False
        elif tag == "p" and self._foot is not None:
            self.feet.append("".join(self._foot))
            self._foot = None

    def handle_data(self, data):
        for part in (self._cell, self._li, self._foot, self.text):
            if part is not None:
                part.append(data)


def notes(err: str) -> list[str]:
    return [line[len("note: "):] for line in err.splitlines() if line.startswith("note: ")]


def check_cells(rep: Report) -> None:
    """No cell is Python's None or nan; every dash carries a footnote mark whose footnote is there."""
    assert rep.cells
    bad = [c for c in rep.cells if c.strip().lower() in ("none", "nan") or "None" in c]
    assert not bad, bad
    marks = {c[len(DASH):] for c in rep.cells if c.startswith(DASH)}
    for m in marks:
        assert m.isdigit() and any(f.startswith(m + " ") for f in rep.feet), (m, rep.feet)


def check_terminal(err: str, rep: Report) -> None:
    """The Warnings box holds exactly the note: lines, in order; none of them is matplotlib's."""
    said = notes(err)
    assert rep.warnings == said
    assert not [n for n in said if any(m in n for m in MATPLOTLIB)], said


@pytest.fixture(scope="module")
def proxy_run(tmp_path_factory):
    """Uniform draws of 8x8 images with 3 grey levels through the digits' logistic regression (seconds; two
    chains that disagree: a sampler warning), judged by the digits proxy, which says no to every one: no
    judged positive, so no recall and no PR curve -- the case of the issue. ``(samples, what omni sample
    printed, curve folder, what omni curve printed on stderr)``."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("omni")
    runs = []
    for argv in (["omni", "sample", "--model", "digits-lr", "--levels", "3", "--sampler", "uniform", "--steps", "5",
                  "--walkers", "64", "--chains", "2", "--out", str(tmp / "s")],
                 ["omni", "curve", "--samples", str(tmp / "s"), "--judgments", "proxy:digits", "--per-bin", "2",
                  "--boot", "50", "--out", str(tmp / "c")]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["--quiet", *argv]) == 0
        runs.append(err.getvalue())
    return tmp / "s", notes(runs[0]), tmp / "c", runs[1]


def test_omni_report_repeats_the_sampler_warnings_and_leaves_out_the_empty_panel(proxy_run):
    _, sampled, out, err = proxy_run
    assert any("the independent chains disagree" in n for n in sampled)  # a sampler warning, printed by omni sample
    rep = Report((out / "report.html").read_text(encoding="utf-8"))
    res = json.loads((out / "results.json").read_text())
    m = res["models"][0]
    assert sum(m["positives"]) == 0 and m["auroc"] is None and m["positive_share"] is None  # the case of the issue
    # no judged yes: recall divides by 0 positives, so the AUPR is undefined (not 0, which reads as a model that misses all)
    assert m["aupr"] is None and m["aupr_own_range"] is None and "aupr" not in m["intervals"]
    assert "undefined" in m["aupr_note"]
    check_cells(rep)
    check_terminal(err, rep)
    # every warning omni sample printed is in the curve's report (and printed again), with the model's name
    assert [w for w in rep.warnings if w.startswith("digits-lr (omni sample): ")] == \
        [f"digits-lr (omni sample): {n}" for n in sampled]
    # the absent AUROC, positive share and recall say why
    assert any("no judged input was a yes" in f for f in rep.feet)
    assert any("one model: the common recall range is for comparing several" in f for f in rep.feet)
    # the PR panels that would be empty are left out, and the report says why
    text = " ".join(rep.text)
    assert "PR within the output range Z: not drawn: no model has a judged yes within Z" in text
    assert "whole-space PR (ours): not drawn: digits-lr: no judged input was a yes" in text
    assert _every_panel_has_data(res) == 2  # r(z) and the upper bound on precision


def test_omni_report_with_positives_draws_every_panel(proxy_run, tmp_path, capsys):
    samples, _, proxied, _ = proxy_run
    # the same representatives, judged yes where the model's logit is >= 0: positives in the upper bins, every bin
    # judged, so both PR curves exist
    labels = tmp_path / "labels.jsonl"
    with open(labels, "w", encoding="utf-8") as f:
        for line in (proxied / "judgments.jsonl").read_text().splitlines():
            j = json.loads(line)
            f.write(json.dumps({"item_id": j["item_id"], "label": int(j["detail"]["z"] >= 0)}) + "\n")
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", str(samples), "--judgments", str(labels), "--boot", "50",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    rep = Report((out / "report.html").read_text(encoding="utf-8"))
    res = json.loads((out / "results.json").read_text())
    assert sum(res["models"][0]["positives"]) > 0 and res["models"][0]["normalised"]
    check_cells(rep)
    check_terminal(err, rep)
    assert "not drawn" not in " ".join(rep.text)
    assert _every_panel_has_data(res) == 3  # PR within Z, whole-space PR, r(z)


def _every_panel_has_data(res: dict) -> int:
    """The PR figure of the results: each of its panels holds something drawn. Returns how many panels."""
    from evalsift.omninput.report import pr_figure
    from evalsift.report.plots import _pyplot

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a matplotlib warning here fails the test
        fig = pr_figure(res["models"], res.get("common_recall"), res.get("aupr_log_comparison"))
        fig.tight_layout()
    try:
        empty = [ax.get_title() for ax in fig.axes if not ax.has_data()]
        assert not empty, empty
        return len(fig.axes)
    finally:
        _pyplot().close(fig)


def test_profile_report_shows_the_ood_warning(tmp_path, capsys):
    out = tmp_path / "new" / "p"  # into a folder that is not there yet: whatever is said about it is in the report too
    assert main(["--quiet", "profile", "--data", "demo", "--metric", "human", "--dims", "length,score_difficulty",
                 "--topics", "domain", "--samples", "30", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    rep = Report((out / "report.html").read_text(encoding="utf-8"))
    res = json.loads((out / "results.json").read_text())
    assert not res["ood"]["beats_no_change"]  # demo's three domains: the regression loses to no change
    warning = ("on held-out domain splits the regression (all dimensions) is worse than assuming no change; do not "
               "use its predictions for a new split of this data")
    assert warning in notes(err) and warning in rep.warnings
    assert res["notes"] == notes(err)
    check_cells(rep)
    check_terminal(err, rep)


def test_profile_report_footnotes_a_value_it_cannot_give(tmp_path, capsys):
    # every input is the same text: length is constant, so its Spearman rho with any dimension is not defined
    data = tmp_path / "same.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for i in range(60):
            f.write(json.dumps({"i": i, "src": "one and the same input", "tgt": {s: f"{s} {i}" for s in "ABC"},
                                "scores": {s: {"human": (i * 7 + 3 * k) % 11 / 10} for k, s in enumerate("ABC")}})
                    + "\n")
    out = tmp_path / "p"
    assert main(["--quiet", "profile", "--data", str(data), "--metric", "human", "--dims", "length,score_difficulty",
                 "--samples", "20", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    rep = Report((out / "report.html").read_text(encoding="utf-8"))
    res = json.loads((out / "results.json").read_text())
    assert res["correlation"]["rho"][0][1] is None  # NaN in memory, null in results.json
    check_cells(rep)
    check_terminal(err, rep)
    assert f"{DASH}1" in rep.cells
    assert "1 not defined: a dimension is constant on the items both have (Spearman rho needs variation)" in rep.feet


def test_collect_notes_defers_notes_and_warnings_and_prints_them_on_failure(capsys):
    got: list[str] = ["earlier"]
    with collect_notes(got):
        note("said by the command")
        warnings.warn("first\n  line", RuntimeWarning)
        warnings.warn("first line", UserWarning)  # the same words once
    assert got == ["earlier", "said by the command", "first line"] and capsys.readouterr().err == ""
    note("outside")  # printed as before
    assert capsys.readouterr().err == "note: outside\n"
    with pytest.raises(ValueError), collect_notes(got):
        note("a note")
        warnings.warn("about to fail")
        raise ValueError("boom")
    assert capsys.readouterr().err == "note: a note\nnote: about to fail\n"  # not lost with the error
    assert got[-2:] == ["a note", "about to fail"]
