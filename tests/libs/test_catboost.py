"""CatBoost through its adapter, live: every fact of the profiles in ``conformance/libs/catboost.py``.

Expected values are hand computation (written out below), never the reference implementation.
``eval_metric`` is also called directly where a fact is about the library itself (the border,
ERR's raw labels that the entries do not claim), so a CatBoost release that changes one fails
here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.catboost import EXP_PROFILE, POSITION_PROFILE, PROFILE
from conformance.measures import Measure, parse_measure
from libcall import call, one_list, only_value

pytestmark = pytest.mark.requires_library("catboost")

L3, L5 = math.log2(3), math.log2(5)  # discounts of ranks 2 and 4 (rank 3: log2 4 = 2)
# one query: labels 2, 0, 3, 1 listed with falling scores, so ranked in this order
LABELS, SCORES = [2, 0, 3, 1], [3.0, 2.0, 1.0, 0.0]


def value(name: str, labels=LABELS, scores=SCORES, lib: str = "catboost") -> float:
    return only_value(call(lib, name, *one_list(labels, scores)))


def eval_metric(labels, scores, metric: str) -> float:
    from catboost.utils import eval_metric as native

    (v,) = native(labels, scores, metric, group_id=[0] * len(labels), thread_count=1)
    return v


def test_ndcg_base_is_linear_gain_log2_discount_ideal_from_the_group():
    dcg = 2 + 0 / L3 + 3 / 2 + 1 / L5
    ideal = 3 + 2 / L3 + 1 / 2 + 0 / L5
    assert value("DCG") == pytest.approx(dcg, abs=1e-12)
    assert value("nDCG") == pytest.approx(dcg / ideal, abs=1e-12)
    assert PROFILE.gain == "linear" and PROFILE.discount == "log2"


def test_ndcg_exp_is_two_to_the_label_minus_one():
    dcg = 3 + 0 / L3 + 7 / 2 + 1 / L5
    ideal = 7 + 3 / L3 + 1 / 2
    assert value("DCG", lib="catboost:exp") == pytest.approx(dcg, abs=1e-12)
    assert value("nDCG", lib="catboost:exp") == pytest.approx(dcg / ideal, abs=1e-12)
    assert EXP_PROFILE.gain == "exponential"


def test_ndcg_position_discounts_by_one_over_the_rank():
    # labels 2, 0, 3, 1 at ranks 1..4: 2/1 + 0/2 + 3/3 + 1/4; the ideal 3, 2, 1, 0: 3/1 + 2/2 + 1/3
    dcg, ideal = 2 + 0 / 2 + 3 / 3 + 1 / 4, 3 + 2 / 2 + 1 / 3 + 0 / 4
    assert value("DCG", lib="catboost:position") == pytest.approx(dcg, abs=1e-12)
    assert value("nDCG", lib="catboost:position") == pytest.approx(dcg / ideal, abs=1e-12)
    # top=2: 2/1 + 0/2 over 3/1 + 2/2
    assert value("nDCG@2", lib="catboost:position") == pytest.approx(2 / 4, abs=1e-12)
    # the smallest case: labels [0, 1]: (1/2) / 1, where the log2 discount gives 1/log2(3)
    assert eval_metric([0, 1], [2, 1], "NDCG:denominator=Position") == pytest.approx(0.5)
    assert eval_metric([0, 1], [2, 1], "NDCG") == pytest.approx(1 / L3)
    assert entry("catboost:position").metric(parse_measure("nDCG@2")) == (
        "NDCG:top=2;denominator=Position")
    assert POSITION_PROFILE.discount == "reciprocal" and POSITION_PROFILE.gain == "linear"


def test_top_cuts_the_list_and_its_ideal():
    assert value("nDCG@2") == pytest.approx(2 / (3 + 2 / L3), abs=1e-12)
    assert value("DCG@2") == pytest.approx(2.0, abs=1e-12)
    # past the list's length: the whole list (top is min(top, n))
    assert value("nDCG@10") == pytest.approx(value("nDCG"), abs=1e-15)


def test_the_ideal_and_recall_read_only_the_group_itself():
    # z is relevant but not retrieved: CatBoost never sees it (ideal=retrieved)
    qrels = [("q1", "a", 1), ("q1", "z", 1)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0)]
    assert only_value(call("catboost", "nDCG", qrels, run)) == 1.0
    assert only_value(call("catboost", "R@2", qrels, run)) == 1.0
    assert only_value(call("catboost", "AP", qrels, run)) == 1.0
    assert PROFILE.ideal == "retrieved"


def test_a_group_without_relevance_scores_one_in_ndcg_and_recall_zero_elsewhere():
    labels, scores = [0, 0], [2.0, 1.0]
    assert value("nDCG", labels, scores) == 1.0  # CalcNdcg: idcg > 0 ? dcg / idcg : 1
    assert value("R@1", labels, scores) == 1.0  # CalcRecallAtK: relevant != 0 ? ... : 1
    for name in ("DCG", "AP", "RR", "P@1"):
        assert value(name, labels, scores) == 0.0, name
    e = entry("catboost")
    assert e.profile(parse_measure("nDCG")).empty_query == "one"
    assert e.profile(parse_measure("R@1")).empty_query == "one"
    assert e.profile(parse_measure("AP")).empty_query == "zero"


def test_negative_labels_are_gains_in_the_list_and_the_ideal():
    labels, scores = [-1, 2, 0], [3.0, 2.0, 1.0]
    dcg = -1 + 2 / L3 + 0 / 2
    assert value("DCG", labels, scores) == pytest.approx(dcg, abs=1e-12)
    assert value("nDCG", labels, scores) == pytest.approx(dcg / (2 + 0 / L3 - 1 / 2), abs=1e-12)
    # an ideal DCG below 0 gives 1, as one of 0 does
    assert value("nDCG", [-1, -2], [3.0, 2.0]) == 1.0
    assert PROFILE.negative_labels == "keep" and PROFILE.negative_ideal == "empty"


def test_labels_are_read_as_float32():
    f32 = float(np.float32(0.7)) + float(np.float32(0.3)) / L3
    f64 = 0.7 + 0.3 / L3
    assert f32 != f64
    assert value("DCG", [0.3, 0.7], [1.0, 2.0]) == pytest.approx(f32, abs=1e-15)
    assert abs(value("DCG", [0.3, 0.7], [1.0, 2.0]) - f64) > 1e-9
    assert PROFILE.label_type == "float32"


def test_relevance_is_a_label_above_the_border_half():
    # border 0.5 by default, label > border: 0.5 is not relevant, 0.50001 is
    assert eval_metric([0.5, 0], [2, 1], "PrecisionAt:top=1") == 0.0
    assert eval_metric([0.50001, 0], [2, 1], "PrecisionAt:top=1") == 1.0
    assert value("P@1", [1, 0], [2.0, 1.0]) == 1.0
    assert value("P@1", [0.5, 0], [2.0, 1.0]) == 0.0
    # a threshold of 2 is border 1.5: label 2 relevant, label 1 not
    m = Measure("P", 1, (("relevance_threshold", 2),))
    e = entry("catboost")
    assert e.metric(m) == "PrecisionAt:top=1;border=1.5"
    for labels, want in (([2, 0], 1.0), ([1, 0], 0.0)):
        qrels, run = one_list(labels, [2.0, 1.0])
        lv = e.evaluate(Qrels.from_records(qrels), Run.from_records(run), [m])[m]
        assert only_value(lv) == want


def test_a_label_between_the_border_and_the_threshold_is_refused():
    # CatBoost counts 0.7 relevant (0.7 > 0.5); the reference's threshold 1 does not, and no
    # convention says "above 0.5": the entry refuses rather than mis-explains
    assert eval_metric([0.7], [1.0], "PrecisionAt:top=1") == 1.0
    lv = call("catboost", "P@1", *one_list([0.7], [1.0]))
    assert lv.error is not None and "border 0.5" in lv.error
    # the graded metrics take no border: nDCG of that list is computed, 0.7/log2(3) over 0.7
    assert value("nDCG", [0.7, 0], [1.0, 2.0]) == pytest.approx(1 / L3, abs=1e-12)


def test_equal_scores_put_the_lower_label_first_in_every_metric():
    for labels in ([1, 0], [0, 1]):  # either listing order
        scores = [1.0, 1.0]
        assert value("nDCG", labels, scores) == pytest.approx(1 / L3, abs=1e-15)
        assert value("RR", labels, scores) == 0.5
        assert value("AP", labels, scores) == 0.5
        assert value("P@1", labels, scores) == 0.0
        assert value("R@1", labels, scores) == 0.0
    # graded: among three tied documents the order is 0, 1, 2
    assert value("DCG", [2, 1, 0], [1.0, 1.0, 1.0]) == pytest.approx(1 / L3 + 2 / 2, abs=1e-12)
    assert PROFILE.ties == "pessimistic"


def test_scores_are_doubles():
    # 1 and 1 + 1e-12 are one float32 number; in double the higher score ranks first
    assert value("nDCG", [0, 1], [1.0, 1.0 + 1e-12]) == 1.0
    assert value("nDCG", [1, 0], [1.0, 1.0 + 1e-12]) == pytest.approx(1 / L3, abs=1e-15)
    assert PROFILE.score_precision == "float64"


def test_precision_divides_by_min_top_n():
    assert value("P@5", [1, 0], [2.0, 1.0]) == 0.5  # 1 relevant / min(5, 2)
    assert value("P@2") == 0.5  # labels 2, 0 in the top 2
    assert value("SetP") == 3 / 4  # no top: the whole group
    assert PROFILE.k_beyond_list == "min_k_n"


def test_recall_over_the_relevant_of_the_group():
    assert value("R@2") == pytest.approx(1 / 3)  # 2 is in the top 2; 2, 3, 1 are relevant
    assert value("R") == 1.0


def test_map_divides_by_min_top_and_relevant():
    assert value("AP") == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 3, abs=1e-15)
    assert value("AP@2") == pytest.approx((1 / 1) / min(2, 3), abs=1e-15)
    # one relevant document in the group, top 3: divided by min(3, 1) = 1
    assert value("AP@3", [0, 1, 0, 0], [4.0, 3.0, 2.0, 1.0]) == 0.5
    assert PROFILE.ap_denominator == "min_k_relevant"


def test_mrr_honours_top():
    labels, scores = [0, 0, 1], [3.0, 2.0, 1.0]
    assert value("RR", labels, scores) == pytest.approx(1 / 3)
    assert value("RR@3", labels, scores) == pytest.approx(1 / 3)
    assert value("RR@2", labels, scores) == 0.0
    assert PROFILE.rr_cutoff == "honour"


def test_the_mean_over_groups_is_their_arithmetic_mean():
    # q1: relevant first, nDCG 1; q2: relevant second of three, nDCG 1/log2(3)
    qrels = [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 0), ("q2", "d", 1), ("q2", "e", 0)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "c", 2.0), ("q2", "d", 1.0),
           ("q2", "e", 0.0)]
    lv = call("catboost", "nDCG", qrels, run)
    assert lv.per_query == pytest.approx({"q1": 1.0, "q2": 1 / L3}, abs=1e-15)
    assert lv.mean == pytest.approx((1 + 1 / L3) / 2, abs=1e-15)


def test_what_the_reference_has_no_convention_or_family_for_is_not_claimed():
    # ERR takes the raw label as a probability: 2 + (1 - 2)(1 - 0) 3/3 + (1 - 2)(1)(1 - 3) 1/4
    assert eval_metric([2, 0, 3, 1], [3, 2, 1, 0], "ERR") == pytest.approx(1.5)
    for name in ("catboost", "catboost:exp", "catboost:position"):
        e = entry(name)
        for text in ("ERR@5", "RBP", "Success@1", "F1@5", "Rprec", "bpref"):
            assert not e.supports(parse_measure(text)), (name, text)
    assert not entry("catboost:exp").supports(parse_measure("AP"))
    assert not entry("catboost:position").supports(parse_measure("AP"))
