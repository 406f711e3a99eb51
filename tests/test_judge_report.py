"""``evalsift judge-report`` (evalsift.judge_report): synthetic judges whose worth is known, driven
through the command line, and SummEval's recorded GPT-3.5 answers when the real data is there."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from _data import need

from evalsift.cli import main
from evalsift.judge_report import _kappa, judge_report
from evalsift.pool import Pool

FIELDS = ["item_id", "system_a", "system_b", "verdict", "shown_order", "annotator", "output_a", "output_b"]
OTHER = {"a": ("b", "tie"), "b": ("a", "tie"), "tie": ("a", "b")}


def run(capsys, *argv):
    code = main(["--quiet", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def report(capsys, *argv):
    code, out, err = run(capsys, "judge-report", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    return str(path)


def human_verdicts(rng, n, p=(0.45, 0.35, 0.2)):
    return list(rng.choice(["a", "b", "tie"], size=n, p=p))


def copy_with_flips(rng, verdicts, q):
    """The human verdict, replaced by one of the other two (uniformly) with probability q."""
    return [OTHER[v][rng.integers(2)] if rng.random() < q else v for v in verdicts]


PAIRS = [("S1", "S2"), ("S2", "S3"), ("S1", "S3")]


def pair_files(tmp_path, rng, *, n=200, q=0.25, human_n=None, judge=None, pairs=PAIRS, p=(0.45, 0.35, 0.2)):
    """A judge file covering n items per pair and a human file on the first human_n of them; the
    people say a, b, tie with probabilities p, the judge copies them but for a share q of flips."""
    hrows, jrows = [], []
    for a, b in pairs:
        h = human_verdicts(rng, n, p)
        j = judge(h) if judge is not None else copy_with_flips(rng, h, q)
        for i in range(n):
            iid = f"{a}{b}-{i}"
            jrows.append({"item_id": iid, "system_a": a, "system_b": b, "verdict": j[i], "annotator": "judge"})
            if human_n is None or i < human_n:
                hrows.append({"item_id": iid, "system_a": a, "system_b": b, "verdict": h[i], "annotator": "person"})
    return write(tmp_path / "judge.csv", jrows), write(tmp_path / "human.csv", hrows)


# ---------------------------------------------------------------------------------------- agreement
def test_a_copying_judge_agreement_and_correlation_intervals_cover_the_truth(capsys, tmp_path):
    rng = np.random.default_rng(1)
    q, p = 0.25, np.array([0.45, 0.35, 0.2])  # P(a), P(b), P(tie) of the people
    jf, hf = pair_files(tmp_path, rng, n=200, q=q)
    d = report(capsys, "--data", jf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}",
               "--draws", "5", "--resamples", "400")
    P = d["pooled"]
    assert P["pairs"] == 3 and P["items"] == 600 and d["interval"]["method"].startswith("percentile bootstrap")
    # the truth of the generating process
    agree = 1 - q
    pj = (1 - q) * p + q / 2 * (1 - p)  # the judge's marginal
    pe = float((p * pj).sum())
    kappa = (agree - pe) / (1 - pe)
    decisive = (1 - q) / (1 - q / 2)
    big = 400_000  # the verdict values' correlation, by a large sample of the same process
    h = rng.choice([1.0, 0.0, 0.5], size=big, p=p)
    flip = rng.random(big) < q
    other = np.where(rng.random(big) < 0.5, 0, 1)
    alt = {1.0: (0.0, 0.5), 0.0: (1.0, 0.5), 0.5: (1.0, 0.0)}
    j = h.copy()
    for v, (x, y) in alt.items():
        m = flip & (h == v)
        j[m] = np.where(other[m] == 0, x, y)
    corr = float(np.corrcoef(h, j)[0, 1])
    for name, truth in (("agreement", agree), ("kappa", kappa), ("decisive_agreement", decisive),
                        ("correlation_within", corr), ("correlation_pooled", corr)):
        fig = P[name]
        assert fig["low"] <= truth <= fig["high"], (name, truth, fig)
        assert fig["high"] - fig["low"] < 0.2, (name, fig)
    # each pair has its own figures with (wider) intervals
    assert len(d["pairs"]) == 3 and all(r["items"] == 200 for r in d["pairs"])
    widths = [r["agreement"]["high"] - r["agreement"]["low"] for r in d["pairs"]]
    assert min(widths) > P["agreement"]["high"] - P["agreement"]["low"]
    # a metric-free judge of recorded verdicts: no output texts, so no length bias; no second order
    assert P["length"]["available"] is False and P["flip_rate"]["n"] == 0


def test_kappa_is_sklearns():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(3)
    h = rng.choice([0.0, 0.5, 1.0], size=80)
    j = np.where(rng.random(80) < 0.6, h, rng.choice([0.0, 0.5, 1.0], size=80))
    w = rng.integers(0, 4, size=(5, 80)).astype(float)
    got = _kappa(w, h, j)
    for row, k in zip(w, got):
        idx = np.repeat(np.arange(80), row.astype(int))
        assert k == pytest.approx(cohen_kappa_score(h[idx] * 2, j[idx] * 2), abs=1e-12)


# ---------------------------------------------------------------------------------------- position and length
def test_a_judge_that_picks_the_first_shown_has_position_bias_near_one(capsys, tmp_path):
    rng = np.random.default_rng(2)
    hrows, jrows, both = [], [], []
    for i in range(150):
        h = rng.choice(["a", "b"])
        shown = rng.choice(["ab", "ba"])  # what the judge saw: one order per item, drawn at random
        common = {"item_id": str(i), "system_a": "X", "system_b": "Y"}
        hrows.append({**common, "verdict": h, "shown_order": "ab", "annotator": "person"})
        jrows.append({**common, "verdict": "a" if shown == "ab" else "b", "shown_order": shown, "annotator": "judge"})
        # the same judge asked in both orders: two answers per item, always the first shown
        both += [{**common, "verdict": "a", "shown_order": "ab", "annotator": "judge (g1)"},
                 {**common, "verdict": "b", "shown_order": "ba", "annotator": "judge (g2)"}]
    hf, jf = write(tmp_path / "h.csv", hrows), write(tmp_path / "j.csv", jrows)
    d = report(capsys, "--data", hf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}", "--draws", "3",
               "--resamples", "300")
    P = d["pooled"]
    assert P["position"]["available"] and P["position"]["human_available"]
    assert P["judge_first_share"]["value"] == 1.0 and P["judge_first_share"]["low"] == 1.0
    assert P["judge_first_share"]["n"] == 150
    people = P["human_first_share"]
    assert people["n"] == 150 and people["low"] < 0.5 < people["high"]  # people's verdicts ignore the order
    assert P["flip_rate"]["n"] == 0  # one order per item: no flip rate
    code, out, _ = run(capsys, "judge-report", "--data", hf, "--judge", f"judgments:{jf}", "--human",
                       f"judgments:{hf}", "--draws", "3", "--resamples", "100")
    assert code == 0 and "judge: first shown wins" in out and "flip rate: not available" in out
    bf = write(tmp_path / "both.csv", both)
    d = report(capsys, "--data", hf, "--judge", f"judgments:{bf}", "--human", f"judgments:{hf}", "--draws", "3",
               "--resamples", "100")
    P = d["pooled"]
    assert P["judge_first_share"]["value"] == 1.0 and P["judge_first_share"]["n"] == 300
    assert P["position"]["answers_ab"] == 150 and P["position"]["answers_ba"] == 150
    assert P["flip_rate"]["value"] == 1.0 and P["flip_rate"]["n"] == 150
    assert P["agreement"]["value"] == 0.0  # the two orders disagree on every item: a tie, never a person's verdict


def test_length_bias_where_outputs_exist(capsys, tmp_path):
    rng = np.random.default_rng(4)
    rows, hrows = [], []
    for i in range(160):
        la, lb = rng.integers(20, 400, size=2)
        out = {"output_a": "x" * int(la), "output_b": "y" * int(lb)}
        common = {"item_id": str(i), "system_a": "X", "system_b": "Y", **out}
        rows.append({**common, "verdict": "a" if la > lb else "b", "annotator": "judge"})  # prefers the longer
        hrows.append({**common, "verdict": rng.choice(["a", "b", "tie"]), "annotator": "person"})
    jf, hf = write(tmp_path / "j.csv", rows), write(tmp_path / "h.csv", hrows)
    d = report(capsys, "--data", jf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}", "--draws", "3",
               "--resamples", "300")
    P = d["pooled"]
    assert P["length"]["available"] and P["length_judge"]["n"] == 160
    assert P["length_judge"]["low"] > 0.6
    assert abs(P["length_human"]["value"]) < 0.2 and P["length_human"]["high"] < 0.3  # people: no length preference


def test_no_outputs_says_so(capsys, tmp_path):
    jf, hf = pair_files(tmp_path, np.random.default_rng(5), n=40, pairs=PAIRS[:1])
    code, out, _ = run(capsys, "judge-report", "--data", jf, "--judge", f"judgments:{jf}", "--human",
                       f"judgments:{hf}", "--draws", "3", "--resamples", "50")
    assert code == 0 and "not available: the data has no output texts" in out


# ---------------------------------------------------------------------------------------- the forecast
def test_a_useless_judge_saves_nothing(capsys, tmp_path):
    rng = np.random.default_rng(6)
    jf, hf = pair_files(tmp_path, rng, n=300, judge=lambda h: human_verdicts(rng, len(h)), pairs=PAIRS[:1])
    d = report(capsys, "--data", jf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}", "--draws", "30",
               "--resamples", "100")
    fc = d["pooled"]["forecast"]
    assert fc["pairs"] == 1 and 0.9 <= fc["ratio"]["value"] <= 1.1
    assert fc["ratio"]["low"] <= 1.0 <= fc["ratio"]["high"]
    assert fc["reference"] > 0.95
    pair = d["pairs"][0]["forecast"]
    assert pair["pool_size"] == 300 and pair["without"] <= 300 and pair["with"] <= 300


def test_a_perfect_judge_saves_labels(capsys, tmp_path):
    rng = np.random.default_rng(7)
    jf, hf = pair_files(tmp_path, rng, n=300, q=0.0, pairs=PAIRS[:1])
    d = report(capsys, "--data", jf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}", "--draws", "40",
               "--resamples", "100")
    fc = d["pooled"]["forecast"]
    assert fc["ratio"]["value"] < 0.8 and fc["ratio"]["high"] < 0.95 and fc["reference"] == pytest.approx(0.0)
    assert d["pooled"]["agreement"]["value"] == 1.0
    pair = d["pairs"][0]["forecast"]
    assert pair["runs"] == 40 and pair["replicates"] == 8 and pair["runs_per_replicate"] == 5


def test_ten_labels_give_a_wider_forecast_interval_than_a_hundred_and_fifty(capsys, tmp_path):
    widths = {}
    for n in (10, 150):
        folder = tmp_path / str(n)
        folder.mkdir()
        jf, hf = pair_files(folder, np.random.default_rng(1), n=150, q=0.2, human_n=n, pairs=PAIRS[:1])
        d = report(capsys, "--data", jf, "--judge", f"judgments:{jf}", "--human", f"judgments:{hf}", "--draws",
                   "60", "--resamples", "200")
        fc = d["pairs"][0]["forecast"]
        assert d["pooled"]["items"] == n and fc["pool_size"] == 150  # the judge covers the pair's 150 items
        widths[n] = fc["ratio"]["high"] - fc["ratio"]["low"]
        widths[f"agree{n}"] = d["pooled"]["agreement"]["high"] - d["pooled"]["agreement"]["low"]
        widths[f"labels{n}"] = fc["ratio"]["spread_labels"]
    assert widths[10] > 2 * widths[150]
    assert widths["labels10"] > widths["labels150"]
    assert widths["agree10"] > 2 * widths["agree150"]


def test_the_forecast_is_seeded_and_the_same_on_two_workers(tmp_path):
    rng = np.random.default_rng(9)
    h = rng.normal(size=(80, 3))
    pool = Pool(item_ids=range(80), systems=["A", "B", "C"], human_metrics=["h"],
                scores={"h": h, "m": h + rng.normal(scale=0.5, size=(80, 3))})
    one = judge_report(pool, "metric:m", "metric:h", draws=6, resamples=50, seed=3).to_dict()
    two = judge_report(pool, "metric:m", "metric:h", draws=6, resamples=50, seed=3, jobs=2).to_dict()
    assert json.dumps(one, default=str) == json.dumps(two, default=str)
    alone = judge_report(pool, "metric:m", "metric:h", pairs=[("A", "C")], draws=6, resamples=50, seed=3)
    among = next(p for p in one["pairs"] if (p["a"], p["b"]) == ("A", "C"))
    assert alone.pairs[0]["forecast"] == among["forecast"]  # a pair's draws do not depend on the others
    assert one["pooled"]["pairs"] == 3 and one["pooled"]["position"]["available"] is False


# ---------------------------------------------------------------------------------------- errors
def test_errors_name_the_field_and_the_fix(capsys, tmp_path):
    rng = np.random.default_rng(10)
    jf, hf = pair_files(tmp_path, rng, n=20, pairs=PAIRS[:1])
    base = ["judge-report", "--data", jf, "--judge", f"judgments:{jf}"]
    code, _, err = run(capsys, *base, "--human", f"judgments:{hf}", "--a", "S1", "--b", "S9")
    assert code == 2 and "Unknown system 'S9'" in err and "Available systems: S1, S2" in err
    code, _, err = run(capsys, *base, "--human", f"judgments:{hf}", "--a", "S1")
    assert code == 2 and "give both --a and --b" in err
    one = write(tmp_path / "one.csv", [{"item_id": "S1S2-0", "system_a": "S1", "system_b": "S2", "verdict": "a"}])
    code, _, err = run(capsys, *base, "--human", f"judgments:{one}")
    assert code == 2 and "only 1 item" in err and "at least 2 human labels" in err
    other = write(tmp_path / "other.csv", [{"item_id": f"z{i}", "system_a": "S1", "system_b": "S2", "verdict": "a"}
                                            for i in range(5)])
    code, _, err = run(capsys, "judge-report", "--data", other, "--judge", f"judgments:{jf}", "--human",
                       f"judgments:{other}")
    assert code == 2 and "no item of" in err and "both a human verdict" in err
    code, _, err = run(capsys, "judge-report", "--data", "demo", "--judge", "metric:human", "--human", "metric:human")
    assert code == 2 and "is the human metric 'human'" in err and "must not be the labels" in err
    code, _, err = run(capsys, "judge-report", "--data", "demo", "--judge", "judge:metric:human", "--human",
                       "metric:human")
    assert code == 2 and "is the human metric" in err
    code, _, err = run(capsys, "judge-report", "--data", "demo", "--judge", "token_f1", "--human", "metric:human")
    assert code == 2 and "expected metric:NAME" in err


def test_demo_metric_judge_readable_output(capsys):
    code, out, _ = run(capsys, "judge-report", "--data", "demo", "--judge", "metric:token_f1", "--human",
                       "metric:human", "--a", "A", "--b", "B", "--draws", "5", "--resamples", "100")
    assert code == 0
    for text in ("raw agreement", "Cohen's kappa", "decisive items only", "position bias",
                 "not available: the judge is a metric", "length bias", ("labels until the anytime rule decides at "
                 "risk 0.1"), "resembles its labelled items", "reference 1 - rho^2"):
        assert text in out, text


def test_an_llm_judge_is_asked_in_both_orders_only_where_people_judged(capsys, tmp_path):
    pytest.importorskip("openai", reason="the LLM judge needs evalsift[llm]")
    from llm_stub import StubServer, position_biased

    rows = [{"item_id": str(i), "system_a": "A", "system_b": "B", "verdict": v, "annotator": "person"}
            for i, v in zip(range(0, 60, 2), ["a", "b", "tie"] * 10)]
    hf = write(tmp_path / "people.csv", rows)
    with StubServer(position_biased()) as stub:
        d = report(capsys, "--data", "demo", "--judge", "llm:judge", "--judge-url", stub.base_url, "--db",
                   str(tmp_path / "w.db"), "--human", f"judgments:{hf}", "--a", "A", "--b", "B", "--draws", "5",
                   "--resamples", "100")
        # the 30 items people judged, each in both orders (the same prompt twice is sent once: cached)
        assert 30 < len(stub.requests) <= 60
    P = d["pooled"]
    assert P["items"] == 30 and P["flip_rate"]["value"] == 1.0 and P["flip_rate"]["n"] == 30
    assert P["judge_first_share"]["value"] == 1.0 and P["position"]["answers_ab"] == 30
    assert P["agreement"]["value"] == pytest.approx(1 / 3)  # every item a tie (the orders disagree): the people's ties
    assert d["pairs"][0]["pool_size"] == 300  # the LLM could judge every item of the pair


# ---------------------------------------------------------------------------------------- real data
def test_summeval_gpt35_coherence(capsys):
    need("summeval/summeval.json", "summeval/llm-pairwise/M8-M9_coherence.result",
         "summeval/llm-pairwise/M8-M9_coherence_toggle.result")
    d = report(capsys, "--data", "summeval", "--judge", "judgments:summeval/llm-pairwise/coherence", "--human",
               "metric:coherence", "--a", "M8", "--b", "M9", "--draws", "20", "--resamples", "200")
    P = d["pooled"]
    assert P["items"] == 100 and P["position"]["available"] and not P["position"]["human_available"]
    # docs/llm-judge.md: on M8 vs M9 (coherence) the two orders disagree on 25 of 100 items
    assert P["flip_rate"]["value"] == 0.25 and P["flip_rate"]["n"] == 100
    assert P["position"]["answers_ab"] == 100 and P["position"]["answers_ba"] == 100
    assert 0.4 < P["agreement"]["value"] < 0.8 and P["agreement"]["low"] < P["agreement"]["value"]
    assert P["length"]["available"] and P["length_judge"]["n"] == 100
    fc = d["pairs"][0]["forecast"]
    assert fc["pool_size"] == 100 and 0 < fc["without"] <= 100 and fc["ratio"]["low"] <= fc["ratio"]["high"]
