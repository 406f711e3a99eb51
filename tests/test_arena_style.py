"""Style control for Bradley-Terry (issue 32 part 3): the answers' length and markdown as covariates beside
the model indicators, in the shared fit (MLE, sandwich, bootstrap, PPI++ with judges, human budgets), on
synthetic leagues with a known length effect, and the command end to end from a battle file with texts."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from evalsift.arena import Battles, fit_bt
from evalsift.arena.leaderboard import leaderboard
from evalsift.arena.style import parse_style, style_counts, style_covariates
from evalsift.cli import main
from evalsift.errors import DataError, ParameterError

TRUE_GAMMA = {"length": 0.5, "headers": 0.0, "bold": 0.15, "lists": 0.0}


def styled_league(seed: int, n: int = 3000, K: int = 8, judge_keep: float = 0.7):
    """Battles over random pairs whose first side wins with probability ``sigma(beta_a - beta_b + z . gamma)``:
    ``beta`` known strengths, ``z`` the scaled style features (:func:`style_covariates`) of answers whose
    length and markdown come from per-model distributions drawn independently of the strengths, ``gamma``
    :data:`TRUE_GAMMA` (longer answers win more). A judge repeats the verdict with probability ``judge_keep``."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 0.6, K)
    beta -= beta.mean()
    mu = rng.normal(np.log(300), 0.6, K)  # each model's typical length, unrelated to its strength
    md = rng.gamma(2.0, 1.5, K)  # each model's markdown habit
    a = rng.integers(K, size=n)
    b = (a + rng.integers(1, K, size=n)) % K
    side = np.column_stack([a, b])
    counts = {"length": rng.lognormal(mu[side], 0.4).round(), "headers": rng.poisson(md[side] / 3).astype(float),
              "bold": rng.poisson(md[side]).astype(float), "lists": rng.poisson(md[side] * 1.5).astype(float)}
    battles = Battles.from_arrays([f"m{k}" for k in range(K)], a, b, np.zeros(n))
    battles = replace(battles, style=counts)
    cov = style_covariates(battles, parse_style("length,markdown"))
    eta = beta[a] - beta[b] + cov.z @ np.array([TRUE_GAMMA[f] for f in cov.names])
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    judge = np.where(rng.random(n) < judge_keep, y, rng.integers(2, size=n).astype(float))
    return replace(battles, y=y, judges={"judge": judge}), cov, beta, mu


def test_style_counts_and_feature_names():
    text = "# Plan\n\nA **bold** start.\n\n1. one\n2. two\n- three\n```\n# code, not a header\n- nor a list\n```\n"
    length, headers, bold, lists = style_counts(text)
    assert (headers, bold, lists) == (1, 1, 3) and length > 20
    assert parse_style("length") == ("length",) and parse_style("markdown,length") == ("length", "headers", "bold", "lists")
    with pytest.raises(ParameterError, match="unknown feature 'colour'.*length, markdown"):
        parse_style("length,colour")


def test_controlled_recovers_the_truth_and_raw_is_biased():
    """30 leagues of 8 models: the style-controlled 90% intervals cover the true strengths (>= 0.84: 3
    s.e. of 240 model-leagues below 0.9) with no systematic error, the length coefficient is positive and
    its interval covers the truth in >= 80% of leagues; the raw fit's errors follow the models' lengths
    (a verbose model is overrated), so it misses far more often."""
    cover, raw_cover, err, raw_err, lengths, g_cover = [], [], [], [], [], []
    for s in range(30):
        battles, cov, beta, mu = styled_league(s)
        fit = fit_bt(battles, covariates=cov)
        raw = fit_bt(battles)
        lo, hi = fit.intervals(0.1).T
        cover.extend((lo <= beta) & (beta <= hi))
        rlo, rhi = raw.intervals(0.1).T
        raw_cover.extend((rlo <= beta) & (beta <= rhi))
        err.append(fit.coef - beta)
        raw_err.append(raw.coef - beta)
        lengths.append(mu - mu.mean())
        (glo, ghi), g = fit.gamma_intervals(0.1)[0], fit.gamma[0]
        assert fit.covariates[0] == "length" and g > 0
        g_cover.append(glo <= TRUE_GAMMA["length"] <= ghi)
    err, raw_err = np.concatenate(err), np.concatenate(raw_err)
    assert np.mean(cover) >= 0.84, np.mean(cover)
    assert abs(err.mean()) < 0.01 and abs(np.corrcoef(err, np.concatenate(lengths))[0, 1]) < 0.2
    assert np.mean(g_cover) >= 0.8
    assert np.corrcoef(raw_err, np.concatenate(lengths))[0, 1] > 0.6  # the raw scores credit length
    assert np.mean(raw_cover) < np.mean(cover) - 0.2


def test_leaderboard_with_judges_budgets_and_bootstrap():
    """The board carries both fits: with judges (PPI) on a uniform human budget, the controlled board
    covers the truth and the judges get a weight; with the active (weighted) and neyman draws and with
    bootstrap intervals it runs and reports both scores and the coefficients."""
    cover, raw_cover, g_cover = [], [], []
    for s in range(8):
        battles, cov, beta, _ = styled_league(100 + s, n=4000)
        L = leaderboard(battles, style=cov, human_budget=800, alpha=0.1, seed=s)
        # 800 human battles of 8 models (200 per model, under 400): the default prints shrunk scores
        assert L.fit.method == "ppi+shrunk" and L.fit.lam["judge"] > 0 and L.raw is not None and L.raw.fit.gamma is None
        lo, hi = ((L.interval - 1000) / 400 * np.log(10)).T
        shift = L.fit.coef.mean()  # the scale is centred on the models (none has few battles here)
        cover.extend((lo - shift <= beta) & (beta <= hi - shift))
        rlo, rhi = ((L.raw.interval - 1000) / 400 * np.log(10)).T
        raw_cover.extend((rlo <= beta) & (beta <= rhi))
        c = L.style["coefficients"][0]
        assert c["name"] == "length" and c["coef"] > 0
        g_cover.append(c["interval"][0] <= TRUE_GAMMA["length"] <= c["interval"][1])
    assert np.mean(cover) >= 0.8 and np.mean(cover) > np.mean(raw_cover) + 0.1, (np.mean(cover), np.mean(raw_cover))
    assert np.mean(g_cover) >= 5 / 8, g_cover
    battles, cov, beta, _ = styled_league(7, n=3000)
    for kw in ({"allocation": "active"}, {"allocation": "neyman"}, {"intervals": "bootstrap", "B": 60},
               {"estimator": "bias-corrected"}):
        L = leaderboard(battles, style=cov, human_budget=900, alpha=0.1, seed=3, **kw)
        d = L.to_dict()
        assert [c["name"] for c in d["style_control"]["coefficients"]] == ["length", "headers", "bold", "lists"]
        assert d["style_control"]["coefficients"][0]["coef"] > 0
        assert all("raw" in m and m["interval"][0] <= m["score"] <= m["interval"][1] for m in d["models"])
        assert "raw_score" in L.csv().splitlines()[0] and "style-controlled" in L.summary()
    with pytest.raises(ParameterError, match="--ties davidson"):
        leaderboard(battles, style=cov, ties="davidson")


def _answer(rng, length: int, bold: int) -> str:
    words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"], size=length))
    return words + "".join(f"\n**point {k}**" for k in range(bold))


def _battle_file(path, seed: int = 0, n: int = 1500, drop_text: int | None = None, texts: bool = True):
    """A Chatbot Arena battle file with conversation_a / conversation_b: 5 models of equal strength whose
    answer lengths differ; people prefer the longer answer."""
    rng = np.random.default_rng(seed)
    K, models = 5, ["ant", "bee", "cat", "dog", "eel"]
    mean_len = np.array([20, 40, 80, 160, 320])
    outputs = []
    with open(path, "w") as fh:
        for k in range(n):
            a, b = rng.choice(K, 2, replace=False)
            la, lb = (int(rng.poisson(mean_len[m])) + 1 for m in (a, b))
            ta, tb = _answer(rng, la, rng.poisson(1)), _answer(rng, lb, rng.poisson(1))
            p = 1 / (1 + np.exp(-1.2 * (la - lb) / (la + lb + 1)))
            row = {"num": k, "model_a": models[a], "model_b": models[b],
                   "winner": "model_a" if rng.random() < p else "model_b"}
            if texts:
                row["conversation_a"] = [{"role": "user", "content": "q"}, {"role": "assistant", "content": ta}]
                row["conversation_b"] = [{"role": "user", "content": "q"}, {"role": "assistant", "content": tb}]
                if k == drop_text:
                    row["conversation_b"] = [{"role": "user", "content": "q"}]
            outputs += [{"item_id": str(k), "system": models[a], "output": ta},
                        {"item_id": str(k), "system": models[b], "output": tb}]
            fh.write(json.dumps(row) + "\n")
    return outputs


def test_the_command_end_to_end_from_conversations(tmp_path, capsys):
    path = tmp_path / "battles.jsonl"
    _battle_file(path)
    out = tmp_path / "out"
    assert main(["arena", "--data", str(path), "--style-control", "length,markdown", "--alpha", "0.1",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "style-controlled" in printed and "raw" in printed and "length" in printed
    assert "left out: headers" in printed  # no answer has a header: nothing to control for, said
    d = json.loads((out / "results.json").read_text())
    coefs = {c["name"]: c for c in d["style_control"]["coefficients"]}
    assert coefs["length"]["interval"][0] > 0  # people prefer longer answers
    raw = {m["name"]: m["raw"]["score"] for m in d["models"]}
    ctl = {m["name"]: m["score"] for m in d["models"]}
    assert raw["eel"] - raw["ant"] > 150  # the raw board ranks by length
    assert abs(ctl["eel"] - ctl["ant"]) < abs(raw["eel"] - raw["ant"]) / 3  # the controlled one hardly does
    header = (out / "leaderboard.csv").read_text().splitlines()[0]
    assert header.endswith("raw_rank,raw_score,raw_low,raw_high,raw_rank_best,raw_rank_worst,verdicts")
    html = (out / "leaderboard.html").read_text()
    assert "id=style-coefficients" in html and "raw score" in html


def test_outputs_table_bad_names_and_missing_texts(tmp_path, capsys):
    bare = tmp_path / "bare.jsonl"
    outputs = _battle_file(bare, n=600, texts=False)
    table = tmp_path / "outputs.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in outputs))
    base = ["arena", "--data", str(bare), "--out", str(tmp_path / "o")]
    assert main([*base, "--style-control", "length", "--outputs", str(table)]) == 0
    assert "style-controlled" in capsys.readouterr().out
    assert main([*base, "--style-control", "length"]) == 2  # no texts at all
    assert "--outputs FILE" in capsys.readouterr().err
    assert main([*base, "--style-control", "length,colour", "--outputs", str(table)]) == 2
    assert "unknown feature 'colour'; the features are length, markdown" in capsys.readouterr().err
    assert main([*base, "--outputs", str(table)]) == 2
    assert "add --style-control" in capsys.readouterr().err
    assert main([*base, "--style-control", "length", "--outputs", str(table), "--ties", "davidson"]) == 2
    assert "--ties davidson" in capsys.readouterr().err
    gappy = tmp_path / "gappy.jsonl"
    _battle_file(gappy, n=600, drop_text=17)
    base = ["arena", "--data", str(gappy), "--style-control", "length", "--out", str(tmp_path / "g")]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "battle '17' has no text for" in err and "--style-missing drop" in err
    assert main([*base, "--style-missing", "drop", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["battles"] == 599 and "1 of 600 battles without both texts left out" in d["notes"][0]


def test_a_feature_with_nothing_to_control_is_refused():
    battles, _, _, _ = styled_league(1, n=200)
    flat = replace(battles, style={**battles.style, "headers": np.zeros((200, 2))})
    cov = style_covariates(flat, ["length", "headers"])
    assert cov.names == ("length",) and "left out: headers" in cov.note
    with pytest.raises(DataError, match="headers is the same for both answers in every battle"):
        style_covariates(flat, ["headers"])
