"""Style features that cannot be told apart (issue 42, item 4): one model writes headers, bold and lists together.

Before, `arena --style-control length,markdown` (and `markdown` alone) on such battles stopped with
"internal error (LinAlgError: Singular matrix)": the three markdown features are the same column, or a
multiple of that model's indicator, so the Hessian has a null direction beyond the strengths' shift. Now
the board merges features that move in the same proportion (one column ``headers+bold+lists``) and drops
those fixed by which two models meet, with a note saying which and why, on every path (sandwich,
bootstrap, PPI with judges, weighted draws); a fit called directly with such covariates is refused."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from evalsift.arena import Battles, fit_bt
from evalsift.arena.bt import Covariates, independent_covariates
from evalsift.arena.leaderboard import leaderboard
from evalsift.arena.style import parse_style, style_covariates
from evalsift.cli import main
from evalsift.errors import DataError, ParameterError

MODELS = ["ant", "bee", "cat", "dog", "eel"]


def together(seed: int, n: int = 400, vary: bool = True):
    """Battles of 5 models of equal strength in which only ``ant`` writes markdown, always a header, a bold
    span and a list item together (``vary``: 1-3 of each per answer; else always 2); lengths random; a judge
    that repeats the verdict 70% of the time."""
    rng = np.random.default_rng(seed)
    a = rng.integers(5, size=n)
    b = (a + rng.integers(1, 5, size=n)) % 5
    side = np.column_stack([a, b])
    md = np.where(side == 0, rng.integers(1, 4, size=(n, 2)) if vary else 2, 0).astype(float)
    counts = {"length": rng.poisson(40, size=(n, 2)).astype(float) + 1, "headers": md, "bold": md.copy(),
              "lists": md.copy()}
    y = (rng.random(n) < 0.5).astype(float)
    judge = np.where(rng.random(n) < 0.7, y, rng.integers(2, size=n).astype(float))
    return replace(Battles.from_arrays(MODELS, a, b, y, judges={"judge": judge}), style=counts)


def test_merged_when_they_move_together_on_every_path():
    """Varying counts: headers, bold and lists are one column (each divided by its root mean square, the three
    are equal in every battle), so the board fits one feature ``headers+bold+lists`` beside length -- with
    sandwich and bootstrap intervals, with a judge on a human budget (PPI++), and under the active rule's
    weighted draws -- and says so in a note."""
    battles = together(0)
    cov = style_covariates(battles, parse_style("length,markdown"))
    assert np.allclose(cov.z[:, 1], cov.z[:, 2]) and np.allclose(cov.z[:, 2], cov.z[:, 3])  # the defect's cause
    runs = [{}, {"intervals": "bootstrap", "B": 40}, {"human_budget": 300}, {"human_budget": 300, "allocation": "active"},
            {"human_budget": 300, "allocation": "neyman"}]
    for kw in runs:
        L = leaderboard(battles, style=cov, alpha=0.1, seed=1, **kw)
        d = L.to_dict()
        assert [c["name"] for c in d["style_control"]["coefficients"]] == ["length", "headers+bold+lists"], kw
        assert any("headers, bold and lists differ in the same proportion" in n for n in d["notes"]), kw
        assert all(np.isfinite(m["score"]) and m["interval"][0] <= m["score"] <= m["interval"][1] for m in d["models"])
        assert "headers+bold+lists" in L.summary()
    # the merged fit is the fit on the one column: the same strengths as length + headers alone
    one = Covariates(("length", "headers"), cov.z[:, :2])
    merged, why = independent_covariates(cov, battles.a, battles.b, battles.K)
    assert merged.names == ("length", "headers+bold+lists") and "joint effect" in why
    assert np.allclose(fit_bt(battles, covariates=merged).coef, fit_bt(battles, covariates=one).coef)


def test_dropped_when_fixed_by_the_models():
    """Always two of each: every feature is 2/3 times ant's indicator (+2/3 when ant is first, -2/3 when
    second, 0 otherwise; (2 - 0) / (2 + 0 + 1)), a multiple of a model column -- its effect is ant's
    strength. With length the markdown features are left out with the reason; markdown alone leaves nothing
    to control for, which is a DataError naming the fix."""
    battles = together(1, vary=False)
    cov = style_covariates(battles, parse_style("length,markdown"))
    ant = (battles.a == 0).astype(float) - (battles.b == 0)
    assert np.allclose(cov.z[:, 1] / np.sqrt(np.mean(cov.z[:, 1] ** 2)), ant / np.sqrt(np.mean(ant ** 2)))
    for kw in ({}, {"intervals": "bootstrap", "B": 40}, {"human_budget": 300}):
        L = leaderboard(battles, style=cov, alpha=0.1, seed=2, **kw)
        assert [c["name"] for c in L.style["coefficients"]] == ["length"]
        assert any("left out headers, bold, lists: each is fixed by which two models meet" in n for n in L.notes)
    with pytest.raises(DataError, match="nothing is left to control for.*leave --style-control out"):
        leaderboard(battles, style=style_covariates(battles, parse_style("markdown")))


def test_a_direct_fit_refuses_collinear_covariates():
    """The fitting functions do not merge on their own: given the three equal columns they say which cannot
    be told apart and where the merge is done (before: LinAlgError from the sandwich's inverse)."""
    battles = together(2)
    cov = style_covariates(battles, parse_style("markdown"))
    with pytest.raises(ParameterError, match="covariates bold, lists cannot be told apart"):
        fit_bt(battles, covariates=cov)


def test_by_hand():
    """Four battles of three models; bold is twice headers in each (merged); lists is +1 when model 0 is first
    and -1 when it is second, 0 otherwise: model 0's column (dropped)."""
    z = np.array([[1.0, 2.0, 1.0], [-1.0, -2.0, 0.0], [0.5, 1.0, 1.0], [0.0, 0.0, 0.0]])
    a, b = [0, 1, 0, 2], [1, 2, 2, 1]
    cov, why = independent_covariates(Covariates(("headers", "bold", "lists"), z), a, b, 3)
    assert cov.names == ("headers+bold",) and np.array_equal(cov.z, z[:, :1])
    assert "left out lists: fixed by which two models meet" in why


def _battle_file(path, vary: bool, n: int = 300) -> None:
    rng = np.random.default_rng(5)
    with open(path, "w") as fh:
        for k in range(n):
            a, b = rng.choice(5, 2, replace=False)

            def text(m):
                words = " ".join(rng.choice(["alpha", "beta", "gamma"], size=int(rng.poisson(30)) + 1))
                c = int(rng.integers(1, 4)) if vary else 2
                return ("".join(f"# Part {i}\n**key {i}**\n- item {i}\n" for i in range(c)) if m == 0 else "") + words

            row = {"num": k, "model_a": MODELS[a], "model_b": MODELS[b],
                   "winner": "model_a" if rng.random() < 0.5 else "model_b",
                   "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": text(a)}],
                   "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": text(b)}]}
            fh.write(json.dumps(row) + "\n")


@pytest.mark.parametrize("vary", [True, False])
def test_the_command_as_the_user_ran_it(tmp_path, capsys, vary):
    """The issue's two commands on a battle file where ant writes headers, bold and lists together."""
    path = tmp_path / "battles.jsonl"
    _battle_file(path, vary)
    assert main(["arena", "--data", str(path), "--style-control", "length,markdown", "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert ("headers+bold+lists" in text) == vary and "note: style features:" in text
    code = main(["arena", "--data", str(path), "--style-control", "markdown", "--out", str(tmp_path / "b")])
    captured = capsys.readouterr()
    if vary:
        assert code == 0 and "headers+bold+lists" in captured.out
    else:
        errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("error: --style-control: nothing is left to "
                                                                     "control for")
        assert "internal error" not in captured.err
