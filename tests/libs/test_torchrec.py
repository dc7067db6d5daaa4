"""TorchRec through its adapter, live in its side environment: every fact of the profiles in
``conformance/libs/torchrec.py`` (NDCGMetric's, then the session precision and recall's).

Expected values are hand computation (written out below), never the reference implementation;
TorchRec's discounts are float32, so values are held to float32's precision (``F32``), and the
float32 fact itself to the exact double. What the metric reports (1 - NDCG) is asked of the
torchrec environment's worker (``reported``).
"""

from __future__ import annotations

import functools
import math

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.torchrec import (EXP_PROFILE, PROFILE, SESSION_P, SESSION_R, ndcg_metric,
                                       session_metric, session_ranks)
from conformance.measures import parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("torchrec")

L2_3 = math.log2(3)
F32 = 2e-7  # float32's discounts: a few units of 2^-24 on values near 1
# relevant a and f (f not listed), the list c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name, qrels=QRELS, run=RUN, user="u1", e="torchrec") -> float:
    lv = call(e, name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def reported(sessions, exponential=False, k=-1) -> float:
    """What ``NDCGMetric`` reports on these (scores, labels) sessions, in the worker."""
    return entry("torchrec").worker().call(functools.partial(ndcg_metric, exponential_gain=exponential, k=k),
                                           sessions)


def test_it_reports_one_minus_ndcg():
    # labels 0, 1, 0 in score order: NDCG = 1 / log2 3; the metric reports 1 - that
    assert reported([([3.0, 2.0, 1.0], [0.0, 1.0, 0.0])]) == pytest.approx(1 - 1 / L2_3, abs=F32)
    assert entry("torchrec").version() == "1.9.2"


def test_the_ideal_is_the_sessions_own_labels():
    # f is relevant but not listed: in no session, so the ideal is a's alone
    assert value("nDCG") == pytest.approx(1 / L2_3, abs=F32)
    # cut at k = 1 on both sides: c first, no gain; the ideal's one slot holds a
    assert value("nDCG@1") == 0.0
    assert value("nDCG@2") == pytest.approx(1 / L2_3, abs=F32)
    assert PROFILE.ideal == "retrieved"


def test_linear_and_exponential_gain():
    qrels = [("u1", "a", 2), ("u1", "e", 1)]
    # gains in score order 0, 2, 1; ideal 2, 1, 0
    linear = (2 / L2_3 + 1 / 2) / (2 + 1 / L2_3)
    assert value("nDCG", qrels) == pytest.approx(linear, abs=F32)
    exp = (3 / L2_3 + 1 / 2) / (3 + 1 / L2_3)
    assert value("nDCG", qrels, e="torchrec:exp") == pytest.approx(exp, abs=F32)
    assert (PROFILE.gain, EXP_PROFILE.gain) == ("linear", "exponential")


def test_its_discounts_are_float32():
    got = value("nDCG")
    assert got != 1 / L2_3  # the double discount
    assert abs(got - 1 / L2_3) < F32
    assert entry("torchrec").float32_sums


def test_equal_scores_are_in_no_stated_order():
    # 300 equal scores, the first listed relevant: not ranked first
    run = [("u1", f"d{i:03d}", 1.0) for i in range(300)]
    got = value("nDCG", [("u1", "d000", 1)], run)
    assert got < 0.5  # rank 1 would give 1.0, rank 2 0.63
    assert PROFILE.ties == "unspecified"


def test_a_query_without_gain_scores_zero_and_every_run_query_counts():
    qrels = QRELS + [("u3", "z", 1)]  # u3 judged, not in the run: in no session
    run = RUN + [("u2", "x", 1.0), ("u2", "y", 0.5)]  # u2 not judged: labels 0
    lv = call("torchrec", "nDCG", qrels, run)
    assert lv.error is None, lv.error
    assert lv.per_query == pytest.approx({"u1": 1 / L2_3, "u2": 0.0}, abs=F32)
    assert lv.mean == pytest.approx((1 / L2_3) / 2, abs=F32)
    assert (PROFILE.empty_query, PROFILE.query_set) == ("zero", "run_all")


def test_negative_labels_are_negative_gains_and_a_negative_ideal_divides():
    # labels 2, -1, 0 in score order: dcg 2 - 1/log2 3; ideal 2, 0, -1: 2 - 1/2
    qrels = [("u1", "c", 2), ("u1", "a", -1)]
    assert value("nDCG", qrels) == pytest.approx((2 - 1 / L2_3) / (2 - 1 / 2), abs=F32)
    # labels 1, -1, 0: the ideal 1 - 1/2 keeps a third of 1 + 1/2: decided by rounding, refused
    assert "cancel" in call("torchrec", "nDCG", [("u1", "c", 1), ("u1", "a", -1)], RUN).error
    # labels -1, 0, 0: dcg -1, ideal 0, 0, -1: -1/2; NDCG 2, the metric reporting 1 - 2
    assert value("nDCG", [("u1", "c", -1)]) == pytest.approx(2.0, abs=F32)
    assert reported([([3.0, 2.0, 1.0], [-1.0, 0.0, 0.0])]) == pytest.approx(1 - 2.0, abs=F32)
    assert (PROFILE.negative_labels, PROFILE.negative_ideal) == ("keep", "divide")


def test_an_ideal_of_zero_is_replaced_by_a_millionth_and_refused():
    # labels -1 (a) and 0 (b), tied; at k = 1 the ideal holds b's 0. Asked anyway, with a
    # first the DCG is -1 and the value -1 / 1e-6; with b first 0
    qrels, run = [("u1", "a", -1)], [("u1", "a", 0.0), ("u1", "b", 0.0)]
    assert "ideal DCG of 0" in call("torchrec", "nDCG@1", qrels, run).error
    assert reported([([0.0, 0.0], [-1.0, 0.0])], k=1) in (pytest.approx(1 + 1e6), 1.0)
    assert reported([([1.0, 0.0], [-1.0, 0.0])], k=1) == pytest.approx(1 + 1e6)
    m = parse_measure("nDCG@1")
    asked = entry("torchrec").asking_the_library().evaluate(
        Qrels.from_records(qrels), Run.from_records([("u1", "a", 1.0), ("u1", "b", 0.0)]), [m])[m]
    assert asked.per_query["u1"] == pytest.approx(-1e6)  # where an ideal of 0 is an empty query
    # b first: no gain in the top 1, nothing to refuse
    assert value("nDCG@1", qrels, [("u1", "b", 1.0), ("u1", "a", 0.0)]) == 0.0


def test_a_document_listed_twice_is_two_examples():
    run = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    # labels 1, 1, 0 in score order; the ideal from those same labels: 1.0
    assert value("nDCG", [("u1", "a", 1)], run) == pytest.approx(1.0, abs=F32)
    assert PROFILE.duplicates == "keep"


# --------------------------------------------------------------------------------------------
# PrecisionSessionMetric and RecallSessionMetric (entry torchrec:session)
# --------------------------------------------------------------------------------------------


def session(sessions, family, k) -> float:
    """What the session metric (family "P" or "R") reports on these (scores, labels) sessions
    with top_threshold=k, in the worker."""
    return entry("torchrec:session").worker().call(
        functools.partial(session_metric, family=family, k=k), sessions)


def both(name, qrels, run, e="torchrec:session"):
    lv = call(e, name, qrels, run)
    assert lv.error is None, lv.error
    return lv


def test_a_row_s_rank_is_the_count_of_strictly_higher_predictions_not_the_comment_s():
    # ranking_within_session's own comment example: the session of id 1 holds 1.0, 0.0, 0.51,
    # 0.8, 1.0, 0.0, 0.51; session -1 holds 0.8, 1.0, 0.0, 0.51, 0.8. Counting the strictly higher
    # predictions: the two 1.0 rows 0, the 0.0 rows 5, the 0.51 rows 3 (1.0, 1.0, 0.8), 0.8 2;
    # in session -1 both 0.8 rows 1, 1.0 0, 0.0 4, 0.51 3
    predictions = [1.0, 0.0, 0.51, 0.8, 1.0, 0.0, 0.51, 0.8, 1.0, 0.0, 0.51, 0.8]
    sessions = [1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1]
    got = entry("torchrec:session").worker().call(session_ranks, predictions, sessions)
    assert got == [0, 5, 3, 2, 0, 5, 3, 1, 0, 4, 3, 1]
    # the comment says [0, 5, 3, 2, 1, 6, 4, 1, 0, 4, 3, 2]: tied rows apart, as an order
    assert got != [0, 5, 3, 2, 1, 6, 4, 1, 0, 4, 3, 2]
    assert entry("torchrec:session").version() == "1.9.2"


def test_a_tie_group_whose_first_rank_is_in_the_top_is_in_it_whole():
    # predictions 2, 1, 1, 0, labels 0, 0, 1, 0: ranks 0, 1, 1, 3; at k = 2 three rows are in
    # the top: precision 1 / 3, recall 1 / 1; at k = 1 the first row alone: 0 / 1
    one = [([2.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0])]
    assert session(one, "P", 2) == pytest.approx(1 / 3, abs=1e-15)
    assert session(one, "R", 2) == 1.0
    assert session(one, "P", 1) == 0.0
    # through the adapter: a (2.0), b and c (1.0, c relevant), d (0.0)
    qrels, run = [("u1", "c", 1)], [("u1", "a", 2.0), ("u1", "b", 1.0), ("u1", "c", 1.0),
                                    ("u1", "d", 0.0)]
    assert both("P@2", qrels, run).per_query["u1"] == pytest.approx(1 / 3, abs=1e-15)
    assert (SESSION_P.ties, SESSION_P.k_beyond_list) == ("group_first", "rows_in_top")


def test_each_row_in_the_top_counts_its_label():
    # labels 2, 0.5, 1 in score order: the top 2 sums 2.5 over 2 rows; recall 2.5 / 3.5
    qrels = [("u1", "c", 2), ("u1", "a", 0.5), ("u1", "e", 1)]
    assert both("P@2", qrels, RUN).per_query["u1"] == pytest.approx(2.5 / 2, abs=1e-15)
    assert both("R@2", qrels, RUN).per_query["u1"] == pytest.approx(2.5 / 3.5, abs=1e-15)
    # a negative label takes away: labels 2, -1, 0: (2 - 1) / 2
    negative = [("u1", "c", 2), ("u1", "a", -1)]
    assert both("P@2", negative, RUN).per_query["u1"] == pytest.approx(1 / 2, abs=1e-15)
    assert (SESSION_P.hit_weight, SESSION_P.negative_labels) == ("label", "keep")


def test_recall_divides_by_the_listed_documents_labels():
    # a relevant, f relevant and not listed: in no session, so recall@3 is 1 / 1, not 1 / 2
    assert both("R@3", QRELS, RUN).per_query["u1"] == 1.0
    assert both("R@1", QRELS, RUN).per_query["u1"] == 0.0  # c first, label 0
    assert SESSION_R.ideal == "retrieved"


def test_the_sessions_parts_are_summed_before_one_division():
    # u1: a (1) alone, precision 1 / 1; u2: x (0.5), y (0), precision 0.5 / 2 at k = 2. The
    # metric: (1 + 0.5) / (1 + 2) = 0.5, where the sessions' mean is (1 + 0.25) / 2
    qrels = [("u1", "a", 1), ("u2", "x", 0.5)]
    run = [("u1", "a", 1.0), ("u2", "x", 2.0), ("u2", "y", 1.0)]
    lv = both("P@2", qrels, run)
    assert lv.per_query == pytest.approx({"u1": 1.0, "u2": 0.25}, abs=1e-15)
    assert lv.mean == pytest.approx(0.5, abs=1e-15)
    # recall: u1 1 / 1, u2 0.5 / 0.5 at k = 1: (1 + 0.5) / (1 + 0.5)
    assert both("R@1", qrels, run).mean == 1.0
    assert (SESSION_P.mean, SESSION_R.mean) == ("micro", "micro")


def test_a_zero_denominator_is_nan_and_every_run_query_is_a_session():
    # u2 is not judged: its labels are 0. Precision 0 / 2; recall 0 / 0, NaN, adding nothing
    run = RUN + [("u2", "x", 1.0), ("u2", "y", 0.5)]
    p = both("P@2", QRELS, run)
    assert p.per_query == pytest.approx({"u1": 1 / 2, "u2": 0.0}, abs=1e-15)
    assert p.mean == pytest.approx((1 + 0) / (2 + 2), abs=1e-15)
    r = both("R@2", QRELS, run)
    # TorchRec's own value for u2 alone is NaN; the adapter reads that as no value
    assert math.isnan(session([([1.0, 0.5], [0.0, 0.0])], "R", 2))
    assert r.per_query["u1"] == 1.0 and "u2" not in r.per_query
    assert r.mean == 1.0
    # nothing in the top (a threshold of 0, which the adapter never asks): precision NaN
    assert math.isnan(session([([1.0], [1.0])], "P", 0))
    assert (SESSION_P.empty_query, SESSION_R.empty_query, SESSION_P.query_set) == (
        "zero", "skip", "run_all")


def test_a_document_listed_twice_is_two_examples_in_the_top_and_in_the_sum():
    run = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    # labels 1, 1, 0: precision@2 2 / 2; recall@1 1 / 2 (the sum counts both listings)
    assert both("P@2", [("u1", "a", 1)], run).per_query["u1"] == 1.0
    assert both("R@1", [("u1", "a", 1)], run).per_query["u1"] == pytest.approx(1 / 2, abs=1e-15)
    assert SESSION_P.duplicates == "keep"


def test_recall_sums_the_hits_of_a_session_whose_own_recall_is_nan_and_is_refused():
    # s1: labels 1 (first), -1; s2: label 1. At k = 1: s1 alone NaN (its labels sum to 0), s2
    # 1.0, together (1 + 1) / (0 + 1) = 2.0
    s1, s2 = ([2.0, 1.0], [1.0, -1.0]), ([1.0], [1.0])
    assert math.isnan(session([s1], "R", 1))
    assert session([s1, s2], "R", 1) == 2.0
    # the sums cancel in total (1 and -1): NaN though the first session's recall is 1
    assert math.isnan(session([([1.0], [1.0]), ([1.0], [-1.0])], "R", 1))
    qrels = [("u1", "a", 1), ("u1", "b", -1), ("u2", "x", 1)]
    run = [("u1", "a", 2.0), ("u1", "b", 1.0), ("u2", "x", 1.0)]
    assert "sum to 0" in call("torchrec:session", "R@1", qrels, run).error
    assert "cancel" in call("torchrec:session", "R@1", [("u1", "a", 1), ("u2", "x", -1)],
                            [("u1", "a", 1.0), ("u2", "x", 1.0)]).error
    # precision is not refused there: (1 + 1) / (1 + 1)
    assert both("P@1", qrels, run).mean == 1.0
