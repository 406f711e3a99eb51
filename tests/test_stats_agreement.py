"""Inter-annotator agreement (evalsift.stats.agreement): Cohen's kappa, Fleiss' kappa,
Krippendorff's alpha and the judgments -> matrix -> statistics path.

Textbook values: Fleiss' kappa on Wikipedia's 10 items x 5 categories x 14 raters example (0.210,
P-bar 0.378, P-bar_e 0.213); Krippendorff (2011)'s 4 coders x 12 units example (nominal 0.743,
interval 0.849); Wikipedia's Cohen example (0.4). Small cases carry their arithmetic in comments.
Real-data checks assert only robust facts."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from _data import need

from evalsift.errors import DataError, ParameterError
from evalsift.oracle import Judgment
from evalsift.stats import (
    agreement_from_judgments,
    cohen_kappa,
    fleiss_kappa,
    judgment_matrix,
    krippendorff_alpha,
)

NAN = float("nan")
WIKI_FLEISS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
               [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
KRIPP_2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
              [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
              [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
              [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]


# ------------------------------------------------------------------------------------------ Cohen
def test_cohen_perfect_agreement_is_one():
    r = cohen_kappa([1, 2, 3, 4], [1, 2, 3, 4])
    assert r.kappa == 1.0 and r.n_items == 4 and r.n_dropped == 0 and r.observed_agreement == 1.0
    assert r.note is None


def test_cohen_complete_disagreement():
    # p_o = 0; marginals 1/2, 1/2 for both: p_e = 1/4 + 1/4 = 1/2; (0 - 1/2) / (1 - 1/2) = -1
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]).kappa == -1.0


def test_cohen_small_hand_case():
    # p_o = 3/4; A: a 1/2, b 1/2; B: a 1/4, b 3/4 -> p_e = 1/8 + 3/8 = 1/2; (3/4 - 1/2) / (1/2) = 1/2
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]).kappa == pytest.approx(0.5)


def test_cohen_wikipedia_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = .5 * .6 + .5 * .4 = .5 -> 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    r = cohen_kappa(a, b)
    assert r.kappa == pytest.approx(0.4) and r.observed_agreement == pytest.approx(0.7)


def test_cohen_weighted_hand_cases():
    # a = [1, 2, 3], b = [1, 3, 3]; categories 1, 2, 3 (indices 0, 1, 2); p_a = 1/3 each, p_b = (1/3, 0, 2/3)
    # quadratic: observed sum w = 1/3 (one item off by 1); expected
    #   1/3 [2/3 * 4] + 1/3 [1/3 * 1 + 2/3 * 1] + 1/3 [1/3 * 4] = 1/3 (8/3 + 1 + 4/3) = 5/3 -> 1 - (1/3)/(5/3) = 0.8
    # linear: observed 1/3; expected 1/3 (4/3 + 1 + 2/3) = 1 -> 1 - 1/3 = 2/3
    assert cohen_kappa([1, 2, 3], [1, 3, 3], weights="quadratic").kappa == pytest.approx(0.8)
    assert cohen_kappa([1, 2, 3], [1, 3, 3], weights="linear").kappa == pytest.approx(2 / 3)


def test_cohen_labels_fix_the_scale_for_weights():
    # a = [1, 2, 4], b = [1, 4, 4]. Observed labels 1, 2, 4 sit at indices 0, 1, 2: the same as the
    # case above (0.8). With labels 1..4 the indices are 0, 1, 3: observed (2 vs 4) = 4/3; expected
    # 1/3 [2/3 * 9] + 1/3 [1/3 * 1 + 2/3 * 4] + 1/3 [1/3 * 9] = 1/3 * 12 = 4 -> 1 - (4/3)/4 = 2/3
    assert cohen_kappa([1, 2, 4], [1, 4, 4], weights="quadratic").kappa == pytest.approx(0.8)
    assert cohen_kappa([1, 2, 4], [1, 4, 4], labels=[1, 2, 3, 4], weights="quadratic").kappa == pytest.approx(2 / 3)


def test_cohen_drops_missing_and_says_how_many():
    r = cohen_kappa(["x", None, "y", "x", "y"], ["x", "y", "y", float("nan"), "y"])
    assert (r.kappa, r.n_items, r.n_dropped) == (1.0, 3, 2)
    r = cohen_kappa(np.array([1.0, np.nan, 2.0]), np.array([1.0, 2.0, 2.0]))
    assert (r.kappa, r.n_items, r.n_dropped) == (1.0, 2, 1)


def test_cohen_all_same_label_is_nan_with_note():
    r = cohen_kappa(["a", "a", "a"], ["a", "a", "a"])
    assert math.isnan(r.kappa) and r.observed_agreement == 1.0 and "chance agreement is 1" in r.note


def test_cohen_no_overlap_is_nan_with_note():
    r = cohen_kappa([1, None], [None, 2])
    assert math.isnan(r.kappa) and r.n_items == 0 and r.n_dropped == 2 and "no item" in r.note


def test_cohen_bad_input():
    with pytest.raises(ParameterError) as e:
        cohen_kappa([1, 2], [1, 2, 3])
    assert e.value.field == "b"
    with pytest.raises(ParameterError) as e:
        cohen_kappa([1, 2], [1, 2], weights="cubic")
    assert e.value.field == "weights"
    with pytest.raises(DataError) as e:
        cohen_kappa([1, 2, 5], [1, 2, 2], labels=[1, 2, 3])
    assert e.value.field == "labels"
    with pytest.raises(ParameterError) as e:
        cohen_kappa("abc", "abc")
    assert e.value.field == "a"


def test_cohen_result_is_json_ready():
    assert json.loads(json.dumps(cohen_kappa([1, 2], [1, 2]).to_dict()))["kappa"] == 1.0


# ------------------------------------------------------------------------------------------ Fleiss
def test_fleiss_wikipedia_example():
    r = fleiss_kappa(WIKI_FLEISS)
    assert round(r.kappa, 3) == 0.210
    assert round(r.observed_agreement, 3) == 0.378 and round(r.expected_agreement, 3) == 0.213
    assert (r.n_items, r.n_raters, r.n_categories, r.form) == (10, 14, 5, "counts")


def test_fleiss_label_matrix_equals_count_table():
    labels = [[c for c, k in enumerate(row) for _ in range(k)] for row in WIKI_FLEISS]   # 10 x 14
    r = fleiss_kappa(labels, form="labels")
    assert r.kappa == pytest.approx(fleiss_kappa(WIKI_FLEISS).kappa) and r.form == "labels"


def test_fleiss_two_raters_is_scotts_pi():
    # items (a,a) (a,b) (b,b) (b,b): P_i = 1, 0, 1, 1 -> P-bar 3/4; p_a = 3/8, p_b = 5/8 -> P_e = 34/64
    # kappa = (3/4 - 34/64) / (1 - 34/64) = (14/64) / (30/64) = 7/15
    r = fleiss_kappa([["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]])
    assert r.kappa == pytest.approx(7 / 15) and r.form == "labels" and r.n_raters == 2


def test_fleiss_missing_values_drop_items_with_one_rating():
    # the third item has a single rating: dropped; the rest is the Scott's pi case above
    r = fleiss_kappa([["a", "a", None], ["a", None, "b"], [None, None, "b"], ["b", "b", None], [None, "b", "b"]])
    assert r.kappa == pytest.approx(7 / 15) and r.n_dropped == 1 and r.n_items == 4


def test_fleiss_varying_ratings_is_nan_with_note():
    r = fleiss_kappa([["a", "a", None], ["a", "b", "b"], ["b", "b", "b"]])
    assert math.isnan(r.kappa) and "varies (2 to 3)" in r.note and "Krippendorff" in r.note


def test_fleiss_perfect_and_degenerate():
    assert fleiss_kappa([["x", "x", "x"], ["y", "y", "y"]]).kappa == 1.0
    r = fleiss_kappa([["x", "x"], ["x", "x"]])
    assert math.isnan(r.kappa) and "same category" in r.note
    r = fleiss_kappa([["x", None], [None, "y"]])
    assert math.isnan(r.kappa) and r.n_items == 0 and r.n_dropped == 2 and "at least 2" in r.note


def test_fleiss_auto_reads_complete_numbers_as_counts():
    # [[1, 2], [2, 1]] as counts: 3 ratings per item in 2 categories; as labels: 2 raters' 1-2 scores
    assert fleiss_kappa([[1, 2], [2, 1]]).form == "counts"
    r = fleiss_kappa([[1, 2], [2, 1]], form="labels")      # P-bar 0, p = 1/2, 1/2 -> (0 - 1/2) / (1/2) = -1
    assert r.form == "labels" and r.kappa == pytest.approx(-1.0)


def test_fleiss_bad_input():
    with pytest.raises(DataError) as e:
        fleiss_kappa([[1, np.nan], [2, 1]], form="counts")
    assert e.value.field == "table_or_labels"
    with pytest.raises(DataError):
        fleiss_kappa([[1.5, 1.5], [2, 1]])
    with pytest.raises(ParameterError) as e:
        fleiss_kappa([[1, 2]], form="table")
    assert e.value.field == "form"
    with pytest.raises(ParameterError):
        fleiss_kappa([1, 2, 3])


# ------------------------------------------------------------------------------------------ Krippendorff
def test_krippendorff_2011_canonical_example():
    assert round(krippendorff_alpha(KRIPP_2011, "nominal").alpha, 3) == 0.743
    assert round(krippendorff_alpha(KRIPP_2011, "interval").alpha, 3) == 0.849
    r = krippendorff_alpha(KRIPP_2011, "nominal")
    # unit 12 has one value: not pairable; 11 units with 40 values remain
    assert (r.n_raters, r.n_items, r.n_values, r.n_dropped) == (4, 11, 40, 1)


def test_krippendorff_nan_none_and_labels_agree():
    as_nan = [[np.nan if v is None else v for v in row] for row in KRIPP_2011]
    letters = [[None if v is None else "abcde"[v - 1] for v in row] for row in KRIPP_2011]
    ref = krippendorff_alpha(KRIPP_2011, "nominal").alpha
    assert krippendorff_alpha(as_nan, "nominal").alpha == pytest.approx(ref)
    assert krippendorff_alpha(letters, "nominal").alpha == pytest.approx(ref)


def test_krippendorff_nominal_hand_case():
    # coders [a, a, b, b] and [a, b, b, b]: coincidences o_aa 2, o_ab = o_ba 1, o_bb 4; n_a 3, n_b 5, n 8
    # alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k = 1 - 7 * 2 / 30 = 8/15
    assert krippendorff_alpha([["a", "a", "b", "b"], ["a", "b", "b", "b"]]).alpha == pytest.approx(8 / 15)


def test_krippendorff_interval_hand_case():
    # coders [1, 2, 3], [1, 2, 4]: o_11 2, o_22 2, o_34 = o_43 1; n_1 2, n_2 2, n_3 1, n_4 1, n 6
    # sum o delta^2 = 2; sum_{c,k} n_c n_k delta^2 = 2 (4 + 8 + 18 + 2 + 8 + 1) = 82 -> 1 - 5 * 2 / 82 = 36/41
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 4]], "interval").alpha == pytest.approx(36 / 41)


def test_krippendorff_perfect_and_degenerate():
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]], "interval").alpha == pytest.approx(1.0)
    r = krippendorff_alpha([[1, 1, 1], [1, 1, None]])
    assert math.isnan(r.alpha) and "same" in r.note
    r = krippendorff_alpha([[1, None], [None, 2]])
    assert math.isnan(r.alpha) and r.n_items == 0 and r.n_dropped == 2 and "at least 2" in r.note


def test_krippendorff_bad_input():
    with pytest.raises(ParameterError) as e:
        krippendorff_alpha([["a", "b"], ["a", "b"]], "interval")
    assert e.value.field == "level"
    with pytest.raises(ParameterError) as e:
        krippendorff_alpha([[1, 2]], "ordinl")
    assert e.value.field == "level"
    with pytest.raises(ParameterError) as e:
        krippendorff_alpha([1, 2, 3])
    assert e.value.field == "data"


# ------------------------------------------------------------------------------------------ judgments
def J(item, a, b, verdict, annotator, status="done", **detail):
    return Judgment(item_id=item, a=a, b=b, verdict=verdict if status == "done" else None, annotator=annotator,
                    kind="human", status=status, detail=detail)


def S(item, system, score, annotator):
    return Judgment(item_id=item, a=system, b="", verdict=None, annotator=annotator, kind="human",
                    detail={"score": score})


def test_judgments_b_a_flip_counts_as_the_mirror_verdict():
    # ann1 judged (A, B): a, b, tie, a. ann2 saw (B, A) and preferred the same systems: b, a, tie, b
    js = [J(f"i{k}", "A", "B", v, "ann1") for k, v in enumerate(["a", "b", "tie", "a"])]
    js += [J(f"i{k}", "B", "A", v, "ann2") for k, v in enumerate(["b", "a", "tie", "b"])]
    m = judgment_matrix(js)
    assert m.items[0] == ("i0", ("A", "B")) and m.values[1] == ("a", "b", "tie", "a")
    r = agreement_from_judgments(js)
    assert r["cohen"]["mean"] == 1.0 and r["percent_agreement"] == 100.0
    assert r["krippendorff"]["alpha"] == 1.0 and r["fleiss"]["kappa"] == 1.0
    # the same verdict letters without the flip would be complete disagreement on the decided items
    js_same_order = js[:4] + [J(f"i{k}", "A", "B", v, "ann2") for k, v in enumerate(["b", "a", "tie", "b"])]
    assert agreement_from_judgments(js_same_order)["cohen"]["mean"] < 0


def test_judgments_pairwise_hand_case_and_statuses():
    # x: a a b b; y: a b b b (plus a pending, a skipped and an error judgment, all ignored)
    js = [J(f"i{k}", "A", "B", v, "x") for k, v in enumerate("aabb")]
    js += [J(f"i{k}", "A", "B", v, "y") for k, v in enumerate("abbb")]
    js += [J("i0", "A", "B", None, "z", status="pending"), J("i1", "A", "B", None, "z", status="skipped"),
           J("i2", "A", "B", None, "z", status="error", reason="timeout")]
    r = agreement_from_judgments(js)
    assert r["n_ignored"] == {"error": 1, "pending": 1, "skipped": 1}
    assert r["n_annotators"] == 2 and r["n_items"] == 4 and r["n_items_multi"] == 4
    assert r["cohen"]["mean"] == pytest.approx(0.5)                      # the Cohen hand case
    assert r["krippendorff"]["alpha"] == pytest.approx(8 / 15, abs=1e-6)  # the Krippendorff hand case
    assert r["fleiss"]["kappa"] == pytest.approx(7 / 15, abs=1e-6)        # Scott's pi hand case
    assert r["percent_agreement"] == 75.0
    assert r["cohen"]["pairs"] == [{"annotators": ["x", "y"], "n_items": 4, "kappa": 0.5, "agreement": 0.75,
                                    "note": None}]
    assert json.loads(json.dumps(r))["kind"] == "pairwise"


def test_judgments_latest_correction_wins():
    js = [J("i0", "A", "B", "a", "x"), J("i1", "A", "B", "b", "x"), J("i0", "A", "B", "a", "y"),
          J("i1", "A", "B", "a", "y"), J("i1", "A", "B", "b", "y")]     # y corrects i1 to 'b'
    r = agreement_from_judgments(js)
    assert r["n_superseded"] == 1 and r["n_judgments_used"] == 4 and r["cohen"]["mean"] == 1.0


def test_judgments_too_little_overlap_is_nan_with_note():
    r = agreement_from_judgments([J("i0", "A", "B", "a", "x"), J("i1", "A", "B", "b", "y")])
    assert r["n_items_multi"] == 0 and math.isnan(r["percent_agreement"])
    assert math.isnan(r["cohen"]["mean"]) and math.isnan(r["fleiss"]["kappa"])
    assert math.isnan(r["krippendorff"]["alpha"]) and "no item was judged by 2" in r["note"]
    # one shared item: no pair of annotators shares 2 items; alpha over the one item is undefined too
    r = agreement_from_judgments([J("i0", "A", "B", "a", "x"), J("i0", "A", "B", "b", "y")])
    assert r["cohen"]["n_pairs"] == 0 and "share 2" in r["cohen"]["note"] and math.isnan(r["cohen"]["mean"])
    assert r["percent_agreement"] == 0.0 and "Cohen" in r["note"]
    r = agreement_from_judgments([])
    assert r["n_items"] == 0 and "no judgments" in r["note"] and math.isnan(r["krippendorff"]["alpha"])


def test_judgments_fleiss_only_with_a_fixed_number_of_annotators():
    three = [J(f"i{k}", "A", "B", v, ann) for ann, vs in {"x": "aab", "y": "aab", "z": "abb"}.items()
             for k, v in enumerate(vs)]
    r = agreement_from_judgments(three)
    assert r["fleiss"]["n_raters"] == 3 and math.isfinite(r["fleiss"]["kappa"]) and r["cohen"]["n_pairs"] == 3
    r = agreement_from_judgments(three + [J("i3", "A", "B", "a", "x"), J("i3", "A", "B", "a", "y")])
    assert math.isnan(r["fleiss"]["kappa"]) and "varies" in r["fleiss"]["note"]
    assert math.isfinite(r["krippendorff"]["alpha"]) and r["n_items_multi"] == 4


def test_judgments_pairs_of_different_systems_are_different_items():
    js = [J("i0", "A", "B", "a", "x"), J("i0", "A", "C", "a", "x"), J("i0", "B", "A", "b", "y"),
          J("i0", "C", "A", "b", "y")]
    m = judgment_matrix(js)
    assert m.items == (("i0", ("A", "B")), ("i0", ("A", "C"))) and m.values == (("a", "a"), ("a", "a"))


def test_judgments_scores_hand_case():
    # x: 1, 2, 3; y: 1, 2, 4 on three items of system A
    # interval alpha: the Krippendorff hand case, 36/41
    # Cohen, quadratic over the scale 1..4: observed 1/3; expected 1/9 (10 + 5 + 6) = 7/3 -> 1 - 1/7 = 6/7
    # Pearson: deviations (-1, 0, 1) and (-4/3, -1/3, 5/3): 3 / sqrt(2 * 42/9) = 9 / sqrt(84)
    js = [S(f"i{k}", "A", v, "x") for k, v in enumerate([1, 2, 3])]
    js += [S(f"i{k}", "A", v, "y") for k, v in enumerate([1, 2, 4])]
    r = agreement_from_judgments(js, kind="score")
    assert r["krippendorff"]["alpha"] == pytest.approx(36 / 41, abs=1e-6) and r["krippendorff"]["level"] == "interval"
    pair = r["cohen"]["pairs"][0]
    assert pair["kappa"] == pytest.approx(6 / 7, abs=1e-6) and pair["pearson"] == pytest.approx(9 / 84 ** 0.5, abs=1e-6)
    assert r["cohen"]["weights"] == "quadratic" and r["percent_agreement"] == pytest.approx(200 / 3, abs=1e-4)
    assert math.isfinite(r["fleiss"]["kappa"])


def test_judgments_scores_non_integer_and_systems():
    js = [S("i0", "A", 10.5, "x"), S("i0", "A", 11.5, "y"), S("i1", "A", 50.0, "x"), S("i1", "A", 60.25, "y"),
          S("i0", "B", 90.0, "x"), S("i0", "B", 80.0, "y")]
    r = agreement_from_judgments(js, kind="score")
    assert r["n_items"] == 3                                  # (i0, A), (i1, A), (i0, B)
    assert math.isnan(r["cohen"]["mean"]) and "whole numbers" in r["cohen"]["pairs"][0]["note"]
    assert math.isnan(r["fleiss"]["kappa"]) and math.isfinite(r["krippendorff"]["alpha"])


def test_continuous_scores_get_interval_statistics_only():
    # issue 29: on a 0-100 scale two people one point apart showed 0 % agreement and a negative Fleiss' kappa
    # beside an interval alpha near 1. x: 70, 80, 90, 60; y one point higher on every item.
    js = [S(f"i{k}", "A", v, "x") for k, v in enumerate([70, 80, 90, 60])]
    js += [S(f"i{k}", "A", v + 1, "y") for k, v in enumerate([70, 80, 90, 60])]
    # interval alpha = 1 - (n - 1) D_o / D_e: within items 4 x 2 ordered pairs x 1^2 = 8; all 8 values (mean 75.5,
    # squared deviations 2 x (240.25 + 210.25 + 30.25 + 20.25) = 1002) give 2 x 8 x 1002 = 16032 -> 1 - 7 x 8 / 16032
    alpha = 1 - 7 * 8 / 16032
    for scale in ((0, 100), None):  # without a scale, the scores' own span: 60..91, 32 points, continuous too
        r = agreement_from_judgments(js, kind="score", scale=scale)
        assert r["scores"] == "continuous" and r["krippendorff"]["alpha"] == pytest.approx(alpha, abs=1e-6)
        assert r["mean_abs_diff"]["value"] == 1.0 and r["mean_abs_diff"]["n_items"] == 4  # |x - y| = 1 on each
        assert math.isnan(r["percent_agreement"]) and math.isnan(r["fleiss"]["kappa"])  # not at this level
        assert "continuous" in r["fleiss"]["note"]
        assert r["levels"] == {"cohen": "interval: quadratic weights", "krippendorff": "interval",
                               "mean_abs_diff": "interval"}
        assert "exact-match statistics (percent agreement, Fleiss' kappa) are not shown" in r["note"]
    assert agreement_from_judgments(js, kind="score", scale=(0, 100))["mean_abs_diff"]["scale_width"] == 100.0
    # the nominal statistics on these scores, for the record: every item a disagreement (P_i = 0) over 8 equally
    # used categories (P_e = 8 / 64): Fleiss' kappa (0 - 1/8) / (1 - 1/8) = -1/7; percent agreement 0
    assert fleiss_kappa([[70, 71], [80, 81], [90, 91], [60, 61]], form="labels").kappa == pytest.approx(-1 / 7)


def test_rating_scale_scores_keep_the_nominal_statistics_too():
    # a 1-5 scale: 5 whole-number points, categories as well as numbers. x: 1, 2, 5, 4; y: 1, 2, 4, 4
    js = [S(f"i{k}", "A", v, "x") for k, v in enumerate([1, 2, 5, 4])]
    js += [S(f"i{k}", "A", v, "y") for k, v in enumerate([1, 2, 4, 4])]
    r = agreement_from_judgments(js, kind="score", scale=(1, 5))
    assert r["scores"] == "categorical" and r["percent_agreement"] == 75.0  # 3 of 4 items the same score
    assert r["mean_abs_diff"]["value"] == 0.25  # (0 + 0 + 1 + 0) / 4
    assert math.isfinite(r["fleiss"]["kappa"]) and r["levels"]["fleiss"] == "nominal"
    assert r["levels"]["percent_agreement"] == "nominal: exact match" and r["levels"]["krippendorff"] == "interval"
    # the same whole numbers judged on a 0-100 scale are continuous (101 points): no exact-match statistics
    assert math.isnan(agreement_from_judgments(js, kind="score", scale=(0, 100))["percent_agreement"])
    # verdicts are nominal throughout, and have no mean difference
    v = agreement_from_judgments([J("i0", "A", "B", "a", "x"), J("i0", "A", "B", "a", "y")])
    assert set(v["levels"].values()) == {"nominal", "nominal: exact match"} and "mean_abs_diff" not in v
    with pytest.raises(ParameterError) as e:
        agreement_from_judgments(js, kind="score", scale=(5, 1))
    assert e.value.field == "scale"


def test_judgments_kind_mismatch_and_bad_kind():
    with pytest.raises(DataError) as e:
        agreement_from_judgments([S("i0", "A", 3, "x")], kind="pairwise")
    assert e.value.field == "kind"
    r = agreement_from_judgments([J("i0", "A", "B", "a", "x")], kind="score")    # no score: counted, not used
    assert r["n_unscored"] == 1 and r["n_items"] == 0
    with pytest.raises(ParameterError) as e:
        agreement_from_judgments([], kind="scores")
    assert e.value.field == "kind"


# ------------------------------------------------------------------------------------------ real data
def _summeval(group: str, dim: str) -> np.ndarray:
    folder = need("summeval/annotators")
    rows = []
    for f in sorted(folder.glob("M*_outputs_annotations.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            rows.append([a[dim] for a in json.loads(line)[group]])
    return np.array(rows, dtype=float).T      # raters x summaries


def test_summeval_experts_agree_more_than_crowd_on_coherence():
    experts, crowd = _summeval("expert_annotations", "coherence"), _summeval("turker_annotations", "coherence")
    assert experts.shape == (3, 1200) and crowd.shape == (5, 1200)
    ae, ac = krippendorff_alpha(experts, "interval"), krippendorff_alpha(crowd, "interval")
    assert 0 < ac.alpha < ae.alpha < 1 and ae.n_items == 1200
    # with 1200 items nominal alpha and Fleiss' kappa differ only by alpha's small-sample correction
    fe = fleiss_kappa(experts.T, form="labels")
    assert fe.kappa == pytest.approx(krippendorff_alpha(experts, "nominal").alpha, abs=0.01)


def test_esa_rounds_agree_positively_but_far_from_perfectly():
    from evalsift.io import read_score_file

    folder = need("wmt23/esa-campaign/en-de.ESA-1.seg.score", "wmt23/esa-campaign/en-de.ESA-IAA.seg.score")
    folder = folder.parent
    systems = list(dict.fromkeys(line.split("\t")[0] for line in
                                 (folder / "en-de.ESA-1.seg.score").read_text().splitlines()))
    a = read_score_file(folder / "en-de.ESA-1.seg.score", 557, systems)
    b = read_score_file(folder / "en-de.ESA-IAA.seg.score", 557, systems)
    both = np.isfinite(a) & np.isfinite(b)
    assert both.sum() > 500
    r = krippendorff_alpha(np.vstack([a[both], b[both]]), "interval")
    assert 0 < r.alpha < 0.9 and r.n_items == both.sum()
    # the same through judgments: one score judgment per (segment, system) and round
    js = [S(f"seg{i}", systems[j], float(m[i, j]), who) for who, m in (("first", a), ("repeat", b))
          for i, j in zip(*np.nonzero(both))]
    out = agreement_from_judgments(js, kind="score")
    assert out["krippendorff"]["alpha"] == pytest.approx(r.alpha, abs=1e-6)
    assert out["n_items_multi"] == both.sum() and out["cohen"]["n_pairs"] == 1
    assert out["cohen"]["pairs"][0]["pearson"] == pytest.approx(np.corrcoef(a[both], b[both])[0, 1], abs=1e-6)


def test_mean_pairwise_cohen_matches_pair_loop():
    # agreement_from_judgments' mean equals the mean of cohen_kappa over the pairs, on random labels
    rng = np.random.default_rng(0)
    labels = rng.choice(["a", "b", "tie"], size=(4, 30))
    js = [J(f"i{k}", "A", "B", str(labels[r, k]), f"r{r}") for r in range(4) for k in range(30)]
    want = np.mean([cohen_kappa(labels[i], labels[j]).kappa for i, j in combinations(range(4), 2)])
    assert agreement_from_judgments(js)["cohen"]["mean"] == pytest.approx(want, abs=1e-6)
