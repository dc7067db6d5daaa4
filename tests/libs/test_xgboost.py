"""XGBoost through its adapters, live: published numbers and every profile fact.

Expected values are numbers the libraries publish
(documentation examples, cited where used), hand computation (formulas
written out below), or XGBoost itself (plain ``ndcg`` against ``ndcg@32``), never the reference
implementation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs._listwise import parse_version
from conformance.libs.base import LibraryValues
from conformance.libs.xgboost import EXP_GAIN_PARAM_SINCE
from conformance.measures import Measure
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("xgboost")

L2_3 = math.log2(3)
EXP_2_0_3 = 3 / (7 + 3 / L2_3)  # labels in rank order [2, 0, 3], k = 2, gain 2^rel - 1
LIN_2_0_3 = 2 / (3 + 2 / L2_3)  # the same with gain = rel


def run_entry(name: str, m: Measure, qrels: list, run: list) -> LibraryValues:
    return call(name, m, qrels, run)


def value(name, m, labels, scores) -> float:
    return only_value(run_entry(name, m, *one_list(labels, scores)))


def ndcg(k):
    return Measure("nDCG", k)


def linear_gain_honoured() -> bool:
    return parse_version(entry("xgboost").version()) >= EXP_GAIN_PARAM_SINCE


def test_default_gain_is_exponential():
    assert value("xgboost", ndcg(2), [2, 0, 3], [3, 2, 1]) == pytest.approx(EXP_2_0_3, abs=1e-12)


def test_ndcg_exp_gain_false_is_linear_from_3_0_3():
    v = value("xgboost:linear_gain", ndcg(2), [2, 0, 3], [3, 2, 1])
    expected = LIN_2_0_3 if linear_gain_honoured() else EXP_2_0_3
    assert v == pytest.approx(expected, abs=1e-12)
    assert entry("xgboost:linear_gain").profile(ndcg(2)).gain == (
        "linear" if linear_gain_honoured() else "exponential")


def test_profile_before_3_0_3_ignores_ndcg_exp_gain():
    e = entry("xgboost:linear_gain")
    assert e._profile("3.0.2") == entry("xgboost")._profile("3.0.2")
    assert e._profile("3.0.3").gain == "linear"


def test_relevance_in_rank_order_example():
    # CONVENTIONS.md: [3,2,0,2,0,3,0,1,0,1], scores 10..1: nDCG@5 0.698 (exp), 0.717 (linear)
    labels, scores = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1], list(range(10, 0, -1))
    assert round(value("xgboost", ndcg(5), labels, scores), 3) == 0.698
    if linear_gain_honoured():
        assert round(value("xgboost:linear_gain", ndcg(5), labels, scores), 3) == 0.717


def test_empty_query_is_one_or_zero_with_the_minus_suffix():
    qrels = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d1", 0)]
    run = [("q1", "d1", 1.0), ("q1", "d2", 2.0), ("q2", "d1", 1.0), ("q2", "d2", 2.0)]
    plain = run_entry("xgboost", ndcg(2), qrels, run)
    minus = run_entry("xgboost:ndcg-", ndcg(2), qrels, run)
    assert plain.per_query == pytest.approx({"q1": 1 / L2_3, "q2": 1.0}, abs=1e-12)
    assert minus.per_query == pytest.approx({"q1": 1 / L2_3, "q2": 0.0}, abs=1e-12)
    # both count the empty query in the mean
    assert plain.mean == pytest.approx((1 / L2_3 + 1) / 2, abs=1e-12)
    assert minus.mean == pytest.approx((1 / L2_3) / 2, abs=1e-12)


def test_library_mean_equals_mean_of_per_query_values():
    rng = np.random.default_rng(11)
    qrels, run = [], []
    for q in range(6):
        n = int(rng.integers(1, 9))
        for i in range(n):
            qrels.append((f"q{q}", f"d{i}", int(rng.integers(0, 4))))
            run.append((f"q{q}", f"d{i}", float(rng.integers(0, 3))))
    for name in ("xgboost", "xgboost:ndcg-", "xgboost:linear_gain"):
        lv = run_entry(name, ndcg(3), qrels, run)
        assert len(lv.per_query) == 6
        assert lv.mean == pytest.approx(np.mean(list(lv.per_query.values())), abs=1e-12)


def test_plain_ndcg_is_ndcg_at_32():
    rng = np.random.default_rng(3)
    labels = [int(x) for x in rng.integers(0, 3, 40)]
    scores = [float(x) for x in range(40, 0, -1)]
    plain = value("xgboost:plain_ndcg", ndcg(32), labels, scores)
    assert plain == value("xgboost", ndcg(32), labels, scores)
    assert plain != value("xgboost", ndcg(40), labels, scores)  # the case can tell them apart
    e = entry("xgboost:plain_ndcg")
    assert not e.supports(Measure("nDCG")) and not e.supports(ndcg(40))


def test_ties_keep_input_order():
    assert value("xgboost", ndcg(1), [0, 1], [1.0, 1.0]) == 0.0
    assert value("xgboost", ndcg(1), [1, 0], [1.0, 1.0]) == 1.0


def test_scores_are_float32():
    # equal once narrowed to float32, so tied and kept in input order: the label-0 doc first
    assert value("xgboost", ndcg(1), [0, 1], [1.0, 1.0 + 1e-9]) == 0.0
    assert value("xgboost", ndcg(1), [0, 1], [1e8, 1e8 + 1]) == 0.0
    assert value("xgboost", ndcg(1), [0, 1], [1e8, 1e8 + 8]) == 1.0  # distinct in float32


def test_k_beyond_the_list_is_the_whole_list():
    assert value("xgboost", ndcg(10), [1, 0, 2], [3, 2, 1]) == value(
        "xgboost", ndcg(3), [1, 0, 2], [3, 2, 1])


def test_one_document_lists():
    assert value("xgboost", ndcg(3), [1], [1.0]) == 1.0


@pytest.mark.parametrize("name", ["xgboost", "xgboost:ndcg-", "xgboost:plain_ndcg"])
def test_exponential_gain_refuses_negative_and_fractional_labels(name):
    k = 32 if name == "xgboost:plain_ndcg" else 2
    for labels in ([-1, 2], [0.5, 1]):
        lv = run_entry(name, ndcg(k), *one_list(labels, [2, 1]))
        assert lv.error is not None and "positive integer" in lv.error


def test_exponential_gain_refuses_labels_above_31():
    # no axis describes this bound; cases use labels 0..4
    assert value("xgboost", ndcg(2), [31, 0], [2, 1]) == 1.0
    lv = run_entry("xgboost", ndcg(2), *one_list([32, 0], [2, 1]))
    assert lv.error is not None and "31" in lv.error


def test_linear_gain_keeps_negative_and_fractional_labels():
    if not linear_gain_honoured():
        pytest.fail("xgboost < 3.0.3: ndcg_exp_gain is ignored; this test pins 3.0.3+")
    # rank order [-1, 2]: (-1 + 2/log2 3) / (2 - 1/log2 3)
    v = value("xgboost:linear_gain", ndcg(2), [-1, 2], [2, 1])
    assert v == pytest.approx((-1 + 2 / L2_3) / (2 - 1 / L2_3), abs=1e-7)
    # rank order [0.5, 1]: (0.5 + 1/log2 3) / (1 + 0.5/log2 3); labels are float32 (0.5 exact)
    v = value("xgboost:linear_gain", ndcg(2), [0.5, 1], [2, 1])
    assert v == pytest.approx((0.5 + 1 / L2_3) / (1 + 0.5 / L2_3), abs=1e-7)


def test_linear_gain_treats_a_negative_ideal_as_empty():
    # A list whose ideal DCG is negative (labels [0, -1]: ideal 0 - 1/log2(3)) scores 1, as if
    # it had no relevant document (EvalNDCG: inv_idcg <= 0). The reference divides instead
    # (DCG -1 over ideal -1/log2(3) = log2(3)): a convention the vocabulary does not have yet.
    if not linear_gain_honoured():
        pytest.fail("xgboost < 3.0.3: ndcg_exp_gain is ignored; this test pins 3.0.3+")
    assert value("xgboost:linear_gain", ndcg(2), [0, -1], [1, 2]) == 1.0


def test_profiles_state_the_facts_above():
    p = entry("xgboost").profile(ndcg(5))
    assert (p.gain, p.ideal, p.empty_query, p.ties, p.negative_labels, p.label_type,
            p.score_precision) == ("exponential", "retrieved", "one", "input_order", "raise",
                                   "raise", "float32")
    assert entry("xgboost:ndcg-").profile(ndcg(5)).empty_query == "zero"
    # double arithmetic on integer labels; float32-read fractional labels under linear gain
    assert entry("xgboost").tolerance == 1e-12
    assert entry("xgboost:linear_gain").tolerance == 1e-12
    assert entry("xgboost:linear_gain").profile(ndcg(5)).label_type == "float32"


def test_linear_gain_reads_labels_as_float32():
    """The long fuzz's case: labels 0.3, 0.3, 0.5, 0.5, -2, -1, 0 (and an unjudged document) in
    the run's order below. Its nDCG@20 is a ratio of two sums that nearly cancel, so reading
    0.3 as float32 (0.30000001192...) moves the value by 4.2e-7: XGBoost's value is the
    formula on float32 labels, to double precision, not on the float64 ones."""
    if not linear_gain_honoured():
        pytest.fail("xgboost < 3.0.3: ndcg_exp_gain is ignored; this test pins 3.0.3+")
    labels = [0.3, 0.3, 0.5, 0.5, -2.0, -1.0, 0.0, 0.0]
    scores = [2.0, 3.0, 1.0, -9.037798672694901, 1.0, 2.0, 0.5012999773025513, -0.1274999976158142]
    # by the formula, in double arithmetic: the order is score descending, ties in input order
    order = sorted(range(8), key=lambda i: -scores[i])
    disc = [1 / math.log2(r + 2) for r in range(8)]

    def ndcg_of(cast):
        g = [float(cast(labels[i])) for i in order]
        return sum(a * b for a, b in zip(g, disc)) / sum(a * b for a, b in zip(sorted(g, reverse=True), disc))

    f32, f64 = ndcg_of(np.float32), ndcg_of(float)
    assert abs(f32 - f64) > 4e-7
    got = value("xgboost:linear_gain", ndcg(20), labels, scores)
    assert got == pytest.approx(f32, abs=1e-12)
