import numpy as np
import pytest

from evalsift.errors import OracleError, ParameterError, UnknownNameError
from evalsift.oracle import Judgment, MetricOracle, make_oracle, verdicts_from_scores
from evalsift.pool import Pool


def pool3():
    return Pool(item_ids=["x", "y", "z", "w"], systems=["A", "B"],
                scores={"m": np.array([[1.0, 0.5], [0.70, 0.75], [0.2, 0.9], [np.nan, 1.0]])}, name="p")


def test_verdicts_with_tolerance():
    o = MetricOracle("m", tie_tolerance=0.1)
    # diffs a - b: 0.5 -> a; -0.05 within 0.1 -> tie; -0.7 -> b
    assert list(o.verdicts(pool3(), [0, 1, 2], "A", "B")) == ["a", "tie", "b"]


def test_exact_ties_only_by_default():
    assert list(verdicts_from_scores(np.array([1.0, 1.0]), np.array([1.0, 0.999]))) == ["tie", "a"]


def test_lower_is_better_flips():
    o = MetricOracle("m", higher_is_better=False)
    assert list(o.verdicts(pool3(), [0, 2], "A", "B")) == ["b", "a"]


def test_judgments_carry_provenance():
    js = MetricOracle("m").judge_pairs(pool3(), [0], "A", "B")
    j = js[0]
    assert (j.item_id, j.a, j.b, j.verdict, j.kind, j.annotator, j.status) == ("x", "A", "B", "a", "metric", "metric:m", "done")


def test_missing_score_fails_that_item_and_says_why():
    js = MetricOracle("m").judge_pairs(pool3(), [0, 3], "A", "B")
    assert [j.status for j in js] == ["done", "error"] and js[1].verdict is None
    assert js[1].detail["reason"] == "no 'm' score for A" and js[1].item_id == "w"
    # the vectorised fast path of simulations has no per-item status: it refuses, naming the item
    with pytest.raises(OracleError, match=r"system 'A'.*\['w'\].*complete\('m'\)"):
        MetricOracle("m").verdicts(pool3(), [3], "A", "B")


def test_make_oracle_from_spec():
    o = make_oracle("metric:m", tie_tolerance=0.2)
    assert isinstance(o, MetricOracle) and o.tie_tolerance == 0.2
    with pytest.raises(UnknownNameError, match="Did you mean 'metric'"):
        make_oracle("metrik:m")
    with pytest.raises(ParameterError):
        MetricOracle("m", tie_tolerance=-1)


def test_judgment_validation():
    with pytest.raises(ParameterError, match="verdict"):
        Judgment(item_id="x", a="A", b="B", verdict="maybe", annotator="me", kind="human")
    pending = Judgment(item_id="x", a="A", b="B", verdict=None, annotator="me", kind="human", status="pending")
    assert pending.to_dict()["status"] == "pending"
    with pytest.raises(ParameterError, match="a 'skipped' judgment has no verdict"):
        Judgment(item_id="x", a="A", b="B", verdict="a", annotator="me", kind="human", status="skipped")
    with pytest.raises(ParameterError, match="status='done!' is not one of: done, pending, skipped, error"):
        Judgment(item_id="x", a="A", b="B", verdict="a", annotator="me", kind="human", status="done!")


class _Replies:
    """A judge that answers every item of ``pool`` with the same recorded judgments (re-keyed to the item)."""

    name, kind = "replies", "llm"

    def __init__(self, recorded):
        self.recorded = recorded

    def judge_pairs(self, pool, items, a, b):
        return [Judgment(**{**j.to_dict(), "item_id": pool.item_ids[i]}) for i in items for j in self.recorded]


def test_one_vote_rule_for_the_session_the_replay_and_a_judge_proxy():
    """p says a, then corrects to b; q says a. The latest per annotator is p: b, q: a -- a split, so a
    tie. The Session, the replay of recorded verdicts and a cheap judge read as a proxy agree (the
    proxy used to count all three judgments: 2 a against 1 b, an 'a')."""
    from evalsift.oracle import JudgmentsOracle, combine
    from evalsift.proxy import judge_values
    from evalsift.session import Session

    recorded = [Judgment(item_id="x", a="A", b="B", verdict=v, annotator=who, kind="human")
                for v, who in (("a", "p"), ("b", "p"), ("a", "q"))]
    assert combine(recorded) == "tie"
    pool = pool3()
    s = Session(pool.subset([0, 1, 2]), "random", a="A", b="B", risk=0.2)
    for j in recorded:
        s.record(j)
    assert s.verdict_of(s.pool.item_ids.index("x")) == "tie"
    assert list(JudgmentsOracle(recorded).verdicts(pool, [0], "A", "B")) == ["tie"]
    assert judge_values(_Replies(recorded), pool, "A", "B").tolist() == [0.5] * 4
    flipped = [Judgment(**{**j.to_dict(), "a": "B", "b": "A", "verdict": {"a": "b", "b": "a"}[j.verdict]})
               for j in recorded]  # recorded the other way round: the same tie
    assert judge_values(_Replies(flipped), pool, "A", "B").tolist() == [0.5] * 4


def test_the_vote_rule_sits_below_the_session_and_nothing_imports_lazily_to_dodge_a_cycle():
    """Issue 19: oracle/judgments imported the Session's vote rule lazily (judgments -> session ->
    proxy -> oracle -> judgments). The oracle package must not import the Session or the proxy, and
    the Session, the proxy and best import their evalsift modules at the top (a function-level
    import of one of them would be a cycle dodged, not broken)."""
    import ast
    from pathlib import Path

    import evalsift

    src = Path(evalsift.__file__).parent

    def imports(path):
        tree = ast.parse(path.read_text())
        top = {n for n in tree.body if isinstance(n, ast.ImportFrom)}
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("evalsift")):
                found.append(((node.module or ""), node in top))
        return found

    for name in ("base.py", "votes.py", "judgments.py", "metric.py"):
        mods = [m for m, _ in imports(src / "oracle" / name)]
        assert not any(m.split(".")[-1] in ("session", "proxy", "best") for m in mods), (name, mods)
    for name in ("session.py", "proxy.py", "best.py"):
        lazy = [m for m, top in imports(src / name) if not top]
        assert lazy == [], (name, lazy)
