"""Spark's ranking evaluators through their adapters, live on one local session per module.

Expected values are hand computation (written out below) or Spark's own public Python API,
never the reference implementation. Each fact the profiles in ``conformance/libs/spark.py`` rest
on has a test here, so a Spark release that changes it fails.
"""

from __future__ import annotations

import math

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry, spark as spark_lib
from conformance.measures import parse_measure

pytestmark = pytest.mark.requires_library("spark")

LN = math.log


@pytest.fixture(scope="module", autouse=True)
def session():
    s = spark_lib.session()
    yield s
    spark_lib.stop_session()


def values(name: str, measures: list[str], qrels: list, run: list) -> dict:
    e = entry(name)
    ms = [parse_measure(m) for m in measures]
    assert all(e.supports(m) for m in ms)
    out = e.evaluate(Qrels.from_records(qrels), Run.from_records(run), ms)
    for m in ms:
        assert out[m].error is None, out[m].error
    return {m.text: out[m] for m in ms}


# q1: a (1), c (2) relevant, b judged 0; listed b 3.0, a 2.0, c 2.0 (tie), d 1.0 (unjudged).
# q2: judged, nothing relevant (x: 0). q3: not judged at all.
QRELS = [("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 2), ("q2", "x", 0)]
RUN = [("q1", "b", 3.0), ("q1", "a", 2.0), ("q1", "c", 2.0), ("q1", "d", 1.0),
       ("q2", "x", 1.0), ("q3", "z", 1.0)]
MEASURES = ["P@2", "P@10", "R@2", "AP", "AP@2", "nDCG@3"]


@pytest.fixture(scope="module")
def plain():
    return values("spark", MEASURES, QRELS, RUN)


def test_every_run_query_is_a_row_and_an_empty_ground_truth_scores_0_in_the_mean(plain):
    # q2 (judged, none relevant) and q3 (not judged): empty ground truth -> 0, counted
    for lv in plain.values():
        assert set(lv.per_query) == {"q1", "q2", "q3"}
        assert lv.per_query["q2"] == lv.per_query["q3"] == 0.0
        assert lv.mean == pytest.approx(lv.per_query["q1"] / 3, abs=1e-15)


def test_ties_follow_the_adapters_order_docid_descending(plain):
    # order b, c, a, d (a and c tie at 2.0: c first); P@2 = 1/2, R@2 = 1/2
    assert plain["P@2"].per_query["q1"] == 0.5
    assert plain["R@2"].per_query["q1"] == 0.5


def test_precision_divides_by_k_beyond_the_list(plain):
    assert plain["P@10"].per_query["q1"] == 2 / 10  # 4 listed, 2 relevant


def test_map_divides_by_r_and_map_at_k_by_min_k_r(plain):
    assert plain["AP"].per_query["q1"] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-15)
    assert plain["AP@2"].per_query["q1"] == pytest.approx((1 / 2) / 2, abs=1e-15)  # min(2, R=2)
    one = values("spark", ["AP@1"], [("q", "a", 1), ("q", "b", 1)], [("q", "a", 1.0)])
    assert one["AP@1"].per_query["q"] == 1.0  # divided by min(1, 2) = 1, not R = 2


def test_ndcg_binary_over_min_k_r_ideal(plain):
    dcg = 1 / LN(3) + 1 / LN(4)  # c at rank 2, a at rank 3 (gain 1 each, labels 2 and 1)
    idcg = 1 / LN(2) + 1 / LN(3)  # min(3, R=2) ones
    assert plain["nDCG@3"].per_query["q1"] == pytest.approx(dcg / idcg, abs=1e-15)


def test_duplicates_count_each_time():
    v = values("spark", ["P@2", "R@2"], [("q", "a", 1)], [("q", "a", 2.0), ("q", "a", 1.0)])
    assert v["P@2"].per_query["q"] == 1.0  # two hits of one document
    assert v["R@2"].per_query["q"] == 2.0  # 2 / |ground truth| = 2, above 1


def test_relevance_array_is_dropped_every_judged_document_relevant():
    rel = values("spark:relevance", MEASURES, QRELS, RUN)
    # q1: b (label 0) counts as relevant: order b, c, a, d -> P@2 = 1
    assert rel["P@2"].per_query["q1"] == 1.0
    assert rel["R@2"].per_query["q1"] == pytest.approx(2 / 3, abs=1e-15)
    assert rel["P@2"].per_query["q2"] == 0.5  # x, label 0, is relevant
    # nDCG: binary over all three judged documents, not graded
    assert rel["nDCG@3"].per_query["q1"] == 1.0


def test_pyspark_drops_the_relevance_array_finding(session):
    """The public Python class: graded input gives the binary value."""
    from pyspark.mllib.evaluation import RankingMetrics

    rdd = session.sparkContext.parallelize([(["b", "a"], ["a", "b"], [3.0, 1.0])], 1)
    graded = (1 / LN(2) + 7 / LN(3)) / (7 / LN(2) + 1 / LN(3))  # 0.7098...
    assert RankingMetrics(rdd).ndcgAt(2) == 1.0 != pytest.approx(graded)


def test_scala_graded_ndcg_builds_the_ideal_in_the_callers_order(session):
    """The per-row function of ndcgAt, given a relevance array (what a Scala caller's
    RankingMetrics maps): prediction [a], ground truth [b, a], relevance [1, 2]: the ideal is
    b's gain (2^1 - 1), not a's (2^2 - 1): nDCG@1 = 3, above 1."""
    jvm, gw = session._jvm, session.sparkContext._gateway

    def strings(xs):
        arr = gw.new_array(jvm.java.lang.String, len(xs))
        for i, x in enumerate(xs):
            arr[i] = x
        return arr

    rel = gw.new_array(jvm.double, 2)
    rel[0], rel[1] = 1.0, 2.0
    ranking = jvm.org.apache.spark.mllib.evaluation.RankingMetrics
    row = jvm.scala.Tuple3(strings(["a"]), strings(["b", "a"]), rel)
    df = session.createDataFrame([(["a"], ["b", "a"])], "p array<string>, l array<string>")
    from pyspark.mllib.common import callMLlibFunc

    jm = callMLlibFunc("newRankingMetrics", df._jdf)
    assert getattr(ranking, "$anonfun$ndcgAt$2")(jm, 1, row) == pytest.approx(3.0, abs=1e-15)
    rel[0], rel[1] = 2.0, 1.0  # ... and 1 once the labels are given sorted by relevance desc
    row = jvm.scala.Tuple3(strings(["a"]), strings(["a", "b"]), rel)
    assert getattr(ranking, "$anonfun$ndcgAt$2")(jm, 1, row) == 1.0


def test_public_python_class_gives_the_adapters_means(session, plain):
    from pyspark.mllib.evaluation import RankingMetrics

    rows = [(p, g) for _, p, g, _ in spark_lib.spark_rows(
        Qrels.from_records(QRELS), Run.from_records(RUN), every_judged=False)]
    rm = RankingMetrics(session.sparkContext.parallelize(rows, 2))
    assert rm.precisionAt(2) == pytest.approx(plain["P@2"].mean, abs=1e-15)
    assert rm.meanAveragePrecision == pytest.approx(plain["AP"].mean, abs=1e-15)
    assert rm.ndcgAt(3) == pytest.approx(plain["nDCG@3"].mean, abs=1e-15)


def test_evaluator_matches_mllib(plain):
    ev = values("spark:evaluator", MEASURES, QRELS, RUN)
    for name in MEASURES:
        assert ev[name].per_query == plain[name].per_query
        assert ev[name].mean == pytest.approx(plain[name].mean, abs=1e-15)


def test_batch_gives_each_cases_values(plain):
    e = entry("spark")
    ms = [parse_measure(m) for m in MEASURES]
    case = (Qrels.from_records(QRELS), Run.from_records(RUN))
    other = (Qrels.from_records([("q1", "d", 1)]), Run.from_records([("q1", "d", 1.0)]))
    first, second = e.evaluate_batch([case, other], ms)
    # the second case: one relevant document at rank 1
    alone = {"P@2": 0.5, "P@10": 0.1, "R@2": 1.0, "AP": 1.0, "AP@2": 1.0, "nDCG@3": 1.0}
    for m in ms:
        assert first[m].per_query == plain[m.text].per_query
        assert second[m].per_query == {"q1": alone[m.text]}
        assert first[m].mean is second[m].mean is None  # a batch gives no mean per case
