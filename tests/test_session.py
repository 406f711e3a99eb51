"""The adaptive loop: stop rule, caps, asynchronous and failing judges, votes, resume."""

import json

import numpy as np
import pytest

from evalsift.errors import DataError, OracleError, ParameterError
from evalsift.oracle import Judgment, MetricOracle
from evalsift.pool import Pool
from evalsift.select import DiffUse, RandomSelector, make_selector
from evalsift.session import Session
from evalsift.stats import hypergeometric_risk

from _fakes import DictEncoder, pair_pool, random_pair_pool


def j(item, verdict, annotator="ann", status="done", a="A", b="B"):
    return Judgment(item_id=item, a=a, b=b, verdict=verdict, annotator=annotator, kind="human", status=status)


class Later:
    """An asynchronous oracle: every item goes out for judgment; verdicts arrive through record()."""

    name, kind = "people", "human"

    def __init__(self):
        self.asked = []

    def judge_pairs(self, pool, items, a, b):
        self.asked += [pool.item_ids[i] for i in items]
        return [j(pool.item_ids[i], None, annotator="queue", status="pending", a=a, b=b) for i in items]


def test_clear_winner_stops_at_min_labels():
    pool = random_pair_pool(n=500, p_a=1.0)  # A better on every item
    d = Session(pool, RandomSelector(), risk=0.2, min_labels=5, risk_rule="paper").run(MetricOracle("human"))
    # 5 of 5 for A in a pool of 500: C(250,5)/C(500,5) = 0.0297 <= 0.2
    assert d.outcome == "winner" and d.winner == "A"
    assert d.labels_used == 5 and d.risk == pytest.approx(hypergeometric_risk(5, 5, 500))
    assert len(d.trace) == 1


def test_all_ties_is_inconclusive_exactly_at_the_cap():
    pool = pair_pool(np.zeros((300, 2)), np.ones((300, 2)), np.full(300, 0.5), np.full(300, 0.5))
    d = Session(pool, RandomSelector(), risk=0.05, min_labels=5, max_labels=30).run(MetricOracle("human"))
    # every verdict is a tie: no leader, risk 1 at every step; random adds one item per step, so the
    # session asks for 5, 6, ..., 30 items and stops before the 31st
    assert d.outcome == "inconclusive" and d.winner is None and d.risk == 1.0
    assert d.labels_used == 30 and d.ties == 30 and len(d.trace) == 26


def test_diffuse_iterative_pays_for_split_representatives():
    pool = random_pair_pool(n=200, p_a=0.6, seed=8)
    s = Session(pool, DiffUse(encoder=DictEncoder(4)), risk=0.01, min_labels=5, max_labels=40, risk_rule="paper")
    d = s.run(MetricOracle("human"))
    steps = d.trace
    assert steps[0]["decision_set"] == 5
    for prev, cur in zip(steps, steps[1:]):
        assert cur["decision_set"] == prev["decision_set"] + 1  # one cluster split into two
        assert cur["labels_used"] - prev["labels_used"] in (1, 2)  # 1 when a half keeps the old representative
    assert d.labels_used >= d.decision_set  # dropped representatives were still paid for
    assert d.labels_used <= 40


def test_async_oracle_is_asked_once_per_item_then_resumes():
    pool = random_pair_pool(n=100, p_a=1.0)
    s = Session(pool, RandomSelector(), risk=0.2, min_labels=5, risk_rule="paper")
    people = Later()
    for _ in range(3):  # calling run again while judgments are out must not ask again
        d = s.run(people)
    assert d.outcome == "waiting" and d.labels_used == 0 and d.outstanding == 5
    assert len(people.asked) == 5 and len(s.judgments) == 5 and s.pending() == []
    for i in s.outstanding():  # verdicts arrive, shown in the other order (b, a)
        s.record(j(pool.item_ids[i], "b", annotator="p", a="B", b="A"))
    s.advance()
    d = s.decision()
    assert d.outcome == "winner" and d.winner == "A" and d.labels_used == 5 and d.outstanding == 0


def test_skipped_and_error_judgments_move_the_session_on():
    pool = random_pair_pool(n=300, p_a=1.0, seed=2)

    class Picky:
        name, kind = "picky", "human"

        def judge_pairs(self, pool, items, a, b):
            out = []
            for i in items:  # declines every third item
                skip = int(pool.item_ids[i][1:]) % 3 == 0
                out.append(j(pool.item_ids[i], None if skip else "a", status="skipped" if skip else "done", a=a, b=b))
            return out

    d = Session(pool, RandomSelector(seed=1), risk=0.05, min_labels=5).run(Picky())
    skipped = [r for r in d.judged if r["state"] == "skipped"]
    assert d.outcome == "winner" and d.winner == "A" and d.skipped == len(skipped) > 0
    assert d.labels_used == d.wins_a == len(d.judged) - d.skipped  # skipped items are not counted as votes
    # an 'error' from a metric oracle (no score) is never a verdict; the loop moves on the same way and says why
    scores = np.column_stack([np.ones(40), np.zeros(40)])
    scores[::2, 1] = np.nan
    holes = Pool(item_ids=[f"i{k}" for k in range(40)], systems=["A", "B"], scores={"m": scores})
    d = Session(holes, RandomSelector(), risk=0.2, max_labels=40).run(MetricOracle("m"))
    assert d.outcome == "winner" and d.errors > 0 and d.skipped == 0
    assert {r["votes"]["metric:m"] for r in d.judged if r["state"] == "error"} == {"error"}


def test_max_labels_counts_every_item_asked_for():
    pool = random_pair_pool(n=200, p_a=0.5, seed=3)

    class Never:
        name, kind = "never", "human"

        def judge_pairs(self, pool, items, a, b):
            return [j(pool.item_ids[i], None, status="skipped", a=a, b=b) for i in items]

    d = Session(pool, RandomSelector(), risk=0.2, min_labels=5, max_labels=12).run(Never())
    assert d.outcome == "inconclusive" and d.skipped == 12 and d.labels_used == 0 and len(d.judged) == 12


def test_later_judgment_from_the_same_annotator_supersedes():
    pool = random_pair_pool(n=50)
    s = Session(pool, RandomSelector(), min_labels=1, risk=0.2)
    item = s.pending()[0]
    iid = pool.item_ids[item]
    s.record(j(iid, "b"))
    s.record(j(iid, "a"))  # the same annotator corrects itself
    assert s.verdict_of(item) == "a" and len(s.judgments) == 2  # both kept, the later one counts
    s.record(j(iid, None, status="skipped"))  # a later skip withdraws that annotator's verdict
    assert s.verdict_of(item) is None and s.pending() == [] and s.outstanding() == []


@pytest.mark.parametrize("votes,expected", [
    (["a", "a", "b"], "a"),        # plurality
    (["a", "b"], "tie"),           # a split top is a tie
    (["a", "tie", "b"], "tie"),    # three-way split
    (["tie", "tie", "a"], "tie"),  # plurality of ties
    (["b"], "b"),
])
def test_annotators_combine_by_plurality(votes, expected):
    pool = random_pair_pool(n=20)
    s = Session(pool, RandomSelector(), min_labels=1)
    item = s.pending()[0]
    for k, v in enumerate(votes):
        s.record(j(pool.item_ids[item], v, annotator=f"ann{k}"))
    assert s.verdict_of(item) == expected


def _same(d1, d2):
    assert json.dumps(d1.to_dict(), sort_keys=True) == json.dumps(d2.to_dict(), sort_keys=True)


def test_resume_rebuilds_the_same_decision():
    pool = random_pair_pool(n=150, p_a=0.65, seed=11)
    first = Session(pool, "diffuse", a="A", b="B", risk=0.1, max_labels=60, encoder="tfidf", risk_rule="paper")
    d = first.run(MetricOracle("human"))
    assert d.outcome == "winner" and len(d.trace) > 1
    again = Session.resume(pool, first.settings(), first.judgments)
    _same(d, again.decision())
    # half the judgments: the same state as the first session had at that point, and it goes on the same way
    half = first.judgments[: len(first.judgments) // 2]
    partial = Session.resume(pool, first.settings(), half)
    assert not partial.done
    _same(partial.run(MetricOracle("human")), d)


def test_resume_after_judgments_arrived_one_by_one():
    pool = random_pair_pool(n=120, p_a=0.8, seed=4)
    s = Session(pool, RandomSelector(seed=3), risk=0.05)
    oracle = MetricOracle("human")
    while not s.done:  # the web app's flow: one verdict at a time, advance after each
        for jd in oracle.judge_pairs(s.pool, s.pending()[:1], s.a, s.b):
            s.record(jd)
            s.advance()
    _same(Session.resume(pool, s.settings(), s.judgments).decision(), s.decision())


def test_fitted_selector_must_match_the_pair():
    pool = random_pair_pool(n=30)
    three = Pool(item_ids=pool.item_ids, systems=["A", "B", "C"],
                 outputs={"A": pool.outputs["A"], "B": pool.outputs["B"], "C": pool.outputs["A"]})
    fitted_ac = make_selector("random").fit(three.pair("A", "C"))
    with pytest.raises(ParameterError, match=r"compares 'A' vs 'B', but the selector was fitted on 'A' vs 'C'"):
        Session(three, fitted_ac, a="A", b="B")
    with pytest.raises(ParameterError, match="fitted on 3 systems"):
        Session(three, make_selector("random").fit(three), a="A", b="B")
    ok = Session(three, fitted_ac, a="A", b="C")
    assert (ok.a, ok.b) == ("A", "C")


def test_weighted_win_rate_only_from_cluster_sizes():
    pool = random_pair_pool(n=120, p_a=0.7, seed=5)
    scored = Pool(item_ids=pool.item_ids, systems=pool.systems, outputs=pool.outputs,
                  scores={"human": pool.scores["human"], "auto": pool.scores["human"] * 3 - 1},
                  human_metrics=["human"])
    d = Session(scored, make_selector("metric_avg", metric="auto"), risk=0.2, risk_rule="paper").run(MetricOracle("human"))
    assert d.weighted_win_rate_a is None  # a utility is not a weight
    s = Session(pool, DiffUse(encoder=DictEncoder(4)), risk=0.2, risk_rule="paper")
    d = s.run(MetricOracle("human"))
    sizes, items = s._set.cluster_sizes, s._set.items
    score = {"a": 1.0, "b": 0.0, "tie": 0.5}
    expected = sum(w * score[s.verdict_of(i)] for w, i in zip(sizes, items)) / sizes.sum()
    assert d.weighted_win_rate_a == pytest.approx(expected) and 0.0 <= d.weighted_win_rate_a <= 1.0


def test_items_without_both_outputs_are_left_out_and_counted():
    pool = random_pair_pool(n=40, p_a=1.0)
    outs = list(pool.outputs["B"])
    for k in (0, 3, 7):
        outs[k] = None
    holes = Pool(item_ids=pool.item_ids, systems=["A", "B"], outputs={"A": pool.outputs["A"], "B": outs},
                 scores=pool.scores, human_metrics=["human"])
    s = Session(holes, DiffUse(encoder=DictEncoder(4)), a="A", b="B", risk_rule="paper")
    assert s.pool.n_items == 37 and s.restriction.dropped_outputs == 3
    d = s.run(MetricOracle("human"))
    assert d.data["dropped_outputs"] == 3 and d.pool_size == 37
    with pytest.raises(DataError, match="using 0 of 2 items"):
        Session(holes.subset([0, 3]), "random", a="A", b="B")


def test_record_rejects_foreign_judgments():
    s = Session(random_pair_pool(n=20), RandomSelector())
    with pytest.raises(OracleError, match="does not belong"):
        s.record(j("i0", "a", a="A", b="C"))
    with pytest.raises(OracleError, match="unknown item"):
        s.record(j("nope", "a"))
    with pytest.raises(OracleError, match="takes a Judgment"):
        s.record({"item_id": "i0", "verdict": "a"})


def test_bad_parameters():
    pool = random_pair_pool(n=20)
    with pytest.raises(ParameterError, match="risk must be in"):
        Session(pool, "random", risk=1.5)
    with pytest.raises(ParameterError, match="min_labels"):
        Session(pool, "random", min_labels=10, max_labels=5)
    with pytest.raises(ParameterError, match="risk_rule='papr' is not one of: anytime, paper, tie_aware. Did you mean 'paper'"):
        Session(pool, "random", risk_rule="papr")


def test_decision_is_json_ready_and_auditable():
    d = Session(random_pair_pool(n=50, p_a=1.0), "random").run(MetricOracle("human"))
    data = json.loads(json.dumps(d.to_dict()))
    assert data["method"] == "random" and data["outcome"] == "winner" and "bias_note" in data
    assert [r["verdict"] for r in data["judged"]] == ["a"] * data["labels_used"]
    assert all(r["votes"] == {"metric:human": "a"} for r in data["judged"])


def test_judge_errors_are_retried_later_and_then_reported():
    pool = random_pair_pool(n=200, p_a=1.0, seed=6)

    class Flaky:
        """Fails the first time it sees an item whose number is a multiple of 3; answers 'a' otherwise."""

        name, kind = "flaky", "llm"

        def __init__(self):
            self.seen = []

        def judge_pairs(self, pool, items, a, b):
            out = []
            for i in items:
                iid = pool.item_ids[i]
                first = iid not in self.seen
                self.seen.append(iid)
                if int(iid[1:]) % 3 == 0 and first:
                    out.append(j(iid, None, status="error", a=a, b=b))
                else:
                    out.append(j(iid, "a", a=a, b=b))
            return out

    flaky = Flaky()
    s = Session(pool, RandomSelector(seed=2), risk=0.01, min_labels=10)
    d = s.run(flaky)
    errored = [iid for iid in dict.fromkeys(flaky.seen) if int(iid[1:]) % 3 == 0]
    retried = [iid for iid in errored if flaky.seen.count(iid) == 2]  # asked once more with the next batch
    left = [iid for iid in errored if flaky.seen.count(iid) == 1]  # failed in the last batch: reported
    assert len(retried) >= 2 and len(retried) + len(left) == len(errored)
    assert d.winner == "A" and d.errors == len(left)
    assert {r["item_id"] for r in d.judged if r["state"] == "error"} == set(left)
    again = Session.resume(pool, s.settings(), s.judgments)
    _same(again.decision(), d)

    class Broken:
        name, kind = "broken", "llm"

        def judge_pairs(self, pool, items, a, b):
            return [j(pool.item_ids[i], None, status="error", a=a, b=b) for i in items]

    d = Session(pool, RandomSelector(), risk=0.2, max_labels=12).run(Broken())
    assert d.outcome == "inconclusive" and d.errors == 12 and d.labels_used == 0


def test_the_decision_states_the_assumptions_its_risk_rests_on():
    """Issue 19: the seed/order, a proxy's blindness to the draw and the missing data are printed
    where the risk is: in the summary (one `assumes` line each) and in the JSON (`assumptions`)."""
    pool = random_pair_pool(n=120, p_a=0.9, seed=4)
    d = Session(pool, RandomSelector(seed=7), risk=0.1).run(MetricOracle("human"))
    kinds = [a.split(":")[0] for a in d.assumptions]
    assert kinds == ["order", "judgments", "missing data"]
    assert "drawn once (seed 7)" in d.assumptions[0] and "voids the guarantee" in d.assumptions[0]
    assert "the 120 of 120 items" in d.assumptions[2] and "none was left out" in d.assumptions[2]
    lines = d.summary().splitlines()
    assert len(lines) == 4 and all(x.startswith("  assumes ") for x in lines[1:])
    assert json.loads(json.dumps(d.to_dict()))["assumptions"] == d.assumptions
    scores = np.column_stack([pool.score("human", "A") + 0.1, pool.score("human", "B")])
    proxied = Pool(item_ids=pool.item_ids, systems=["A", "B"], outputs=pool.outputs,
                   scores={"human": pool.scores["human"], "auto": scores}, human_metrics=["human"])
    d = Session(proxied, "random", risk=0.1, proxy="metric:auto").run(MetricOracle("human"))
    assert any(a.startswith("predictions: metric:auto predicts each item from the verdicts judged before it")
               and "must not depend on the draw order" for a in d.assumptions)
    d = Session(pool, DiffUse(encoder=DictEncoder(4)), risk=0.1, risk_rule="paper").run(MetricOracle("human"))
    assert d.assumptions[0].startswith("order: the paper's bound") and "no guarantee" in d.assumptions[0]


def test_items_left_out_for_missing_outputs_could_change_the_winner():
    """60 items: A wins the 30 where both have an output; B has no output on the other 30. The
    decision (about the 30) names A with the win-rate interval [lo, hi]. All 30 left out going to B
    would leave A lo * 30 / 60 <= 1/2 of all items: it could change the winner, and the Decision says
    so. Counting a missing output as a loss for its system (B lacks all 30), A would win
    (lo * 30 + 30) / 60 to (hi * 30 + 30) / 60 of all items."""
    n = 60
    outs_b = [f"b{k}" if k < 30 else None for k in range(n)]
    scores = np.column_stack([np.ones(n), np.zeros(n)])
    pool = Pool(item_ids=[f"i{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"a{k}" for k in range(n)], "B": outs_b}, scores={"human": scores},
                human_metrics=["human"])
    s = Session(pool, "random", a="A", b="B", risk=0.1)
    d = s.run(MetricOracle("human"))
    lo, hi = d.win_rate_interval
    assert d.winner == "A" and d.pool_size == 30 and d.data["no_output"] == {"A": 0, "B": 30, "both": 0}
    assert s.restriction.could_change("A", d.win_rate_interval, 30)
    flip = next(a for a in d.assumptions if "could change the winner" in a)
    assert f"A would win only {lo * 30 / 60:.3f} of all 60 items" in flip
    assert f"A would win {(lo * 30 + 30) / 60:.3f}-{(hi * 30 + 30) / 60:.3f} of all 60 items" in flip
    assert "(A has no output on 0, B on 30)" in next(a for a in d.assumptions if "left out (" in a)


def test_items_left_out_that_cannot_change_the_winner_are_said_so():
    """A wins all 200 comparable items; 4 items lack B's output. The rule stops with A named and an
    interval whose low end lo is high enough that, even if all 4 went to B, A keeps lo * 200 / 204 > 1/2."""
    n = 204
    scores = np.column_stack([np.ones(n), np.zeros(n)])
    pool = Pool(item_ids=[f"i{k}" for k in range(n)], systems=["A", "B"],
                outputs={"A": [f"a{k}" for k in range(n)], "B": [f"b{k}" if k >= 4 else None for k in range(n)]},
                scores={"human": scores}, human_metrics=["human"])
    s = Session(pool, "random", a="A", b="B", risk=0.1)
    d = s.run(MetricOracle("human"))
    lo = d.win_rate_interval[0]
    assert d.winner == "A" and lo * 200 / 204 > 0.5 and not s.restriction.could_change("A", d.win_rate_interval, 200)
    assert any("cannot change the winner" in a for a in d.assumptions)


def test_compare_warns_when_the_items_left_out_could_change_the_winner(tmp_path, capsys):
    """`compare` on a long table where B has no output on 30 of 60 items and A wins the other 30:
    a note gives the per-system counts (A 0, B 30) and warns that the 30 could change the winner;
    the summary prints the assumptions."""
    from evalsift.cli import main

    rows = []
    for k in range(60):
        rows.append({"item_id": f"i{k}", "system": "A", "output": f"a{k}", "human": 1.0})
        rows.append({"item_id": f"i{k}", "system": "B", "output": f"b{k}" if k < 30 else None, "human": 0.0})
    data = tmp_path / "long.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc = main(["--quiet", "compare", "--data", str(data), "--a", "A", "--b", "B", "--oracle", "metric:human",
               "--risk", "0.1"])
    out = capsys.readouterr()
    assert rc == 0 and out.out.startswith("A wins")
    assert "note: A vs B: using 30 of 60 items (30 lack an output of A or B); without an output: A 0, B 30" in out.err
    assert "note: the 30 item(s) left out could change the winner: if all went to B" in out.err
    assert "  assumes order: the items are judged in a uniformly random order, drawn once (seed 0)" in out.out
