"""TorchRec through its adapter, live in its side environment: every fact of the profiles in
``conformance/libs/torchrec.py``.

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
from conformance.libs.torchrec import EXP_PROFILE, PROFILE, ndcg_metric
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
