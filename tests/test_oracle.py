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
