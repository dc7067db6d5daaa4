"""keras-rs through its adapter, live: every fact of the profile in ``conformance/libs/keras_rs.py``
and its two findings.

Expected values are hand computation (written out below), never the reference implementation.
The library computes in float32: values are compared within the entry's tolerance (1e-6).
Facts about tie shuffling are checked over repeated calls: the shuffle is random, so a test
that needs both orders calls until it has seen them (40 calls: the chance of missing one of two
equally likely orders is 2^-39).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from conformance.libs import entry
from conformance.libs.keras_rs import PROFILE
from conformance.measures import parse_measure
from libcall import call, one_list, only_value

pytestmark = pytest.mark.requires_library("keras_rs")

L2_3 = math.log2(3)
TOL = 1e-6
LABELS, SCORES = [0, 1, 2, 0], [4.0, 3.0, 2.0, 1.0]


def value(name: str, labels=LABELS, scores=SCORES) -> float:
    return only_value(call("keras_rs", name, *one_list(labels, scores)))


def direct(cls_name: str, y_true, y_pred, **kwargs) -> float:
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras_rs

    metric = getattr(keras_rs.metrics, cls_name)(**kwargs)
    metric.update_state(np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float))
    return float(metric.result())


def test_runs_on_the_torch_backend_in_float32():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras

    assert keras.backend.backend() == "torch" and keras.config.floatx() == "float32"
    v = value("nDCG@2")
    exact = (1 / L2_3) / (3 + 1 / L2_3)
    assert v == pytest.approx(exact, abs=TOL) and v != exact  # float32 arithmetic
    assert PROFILE.score_precision == "float32"


def test_ndcg_exponential_gain_and_the_lists_own_ideal():
    # gains 2^y - 1: 0, 1, 3, 0; top 2 = labels 0, 1: dcg = 1/log2(3); ideal: 3 + 1/log2(3)
    assert value("nDCG@2") == pytest.approx((1 / L2_3) / (3 + 1 / L2_3), abs=TOL)
    assert direct("DCG", [LABELS], [SCORES], k=2) == pytest.approx(1 / L2_3, abs=TOL)
    # a judged relevant document not in the list is not in the ideal
    qrels, run = one_list(LABELS, SCORES)
    lv = call("keras_rs", "nDCG@2", qrels + [("q1", "unretrieved", 4)], run)
    assert lv.per_query["q1"] == pytest.approx((1 / L2_3) / (3 + 1 / L2_3), abs=TOL)
    # fractional labels as they are: gains 2^0.5 - 1 and 2^1.5 - 1
    g1, g2 = 2 ** 0.5 - 1, 2 ** 1.5 - 1
    assert value("nDCG@2", [0.5, 1.5], [2.0, 1.0]) == pytest.approx(
        (g1 + g2 / L2_3) / (g2 + g1 / L2_3), abs=TOL)


def test_precision_divides_by_min_k_and_the_list_length():
    assert value("P@10") == pytest.approx(2 / 4, abs=TOL)
    assert value("P@2") == pytest.approx(1 / 2, abs=TOL)
    assert PROFILE.k_beyond_list == "min_k_n"


def test_recall_and_ap_divide_by_the_relevant_documents_of_the_list():
    assert value("R@2") == pytest.approx(1 / 2, abs=TOL)
    assert value("AP@2") == pytest.approx((1 / 2) / 2, abs=TOL)  # not / 1 (relevant in the top 2)
    assert value("AP") == pytest.approx((1 / 2 + 2 / 3) / 2, abs=TOL)
    qrels, run = one_list(LABELS, SCORES)
    lv = call("keras_rs", "R@2", qrels + [("q1", "unretrieved", 1)], run)
    assert lv.per_query["q1"] == pytest.approx(1 / 2, abs=TOL)  # R is still 2


def test_threshold_one_and_rr_within_k():
    assert value("P@2", [0.5, 1.5], [2.0, 1.0]) == pytest.approx(1 / 2, abs=TOL)  # 0.5 < 1
    assert value("RR@1") == 0.0 and value("RR@2") == pytest.approx(1 / 2, abs=TOL)


def test_a_list_without_relevant_documents_scores_zero_and_counts():
    qrels = [("q1", "a", 1), ("q2", "b", 0)]
    run = [("q1", "a", 1.0), ("q2", "b", 1.0)]
    lv = call("keras_rs", "nDCG@3", qrels, run)
    assert lv.per_query == {"q1": pytest.approx(1.0, abs=TOL), "q2": 0.0}
    assert lv.mean == pytest.approx(0.5, abs=TOL)  # the library's weighted mean, weights 1


def test_ties_are_shuffled_at_random():
    seen = {direct("MeanReciprocalRank", [[0, 1]], [[1.0, 1.0]], k=1) for _ in range(40)}
    assert seen == {0.0, 1.0}
    assert PROFILE.ties == "unspecified"


def test_a_negative_label_is_padding_and_the_entry_refuses_it():
    # the document labelled -1 leaves the list: P@3 over the 2 others, the relevant one first
    assert direct("PrecisionAtK", [[-1, 1, 0]], [[3.0, 2.0, 1.0]], k=3) == pytest.approx(0.5)
    assert direct("MeanReciprocalRank", [[-1, 1, 0]], [[3.0, 2.0, 1.0]], k=3) == 1.0
    lv = call("keras_rs", "P@3", *one_list([-1, 1, 0], [3.0, 2.0, 1.0]))
    assert lv.error is not None and "padding" in lv.error
    assert PROFILE.negative_labels == "raise"


def test_finding_padding_can_outrank_a_real_document():
    y, s = [[0, 0, 0, 1, 0, -1]], [[0.0, 0.0, 0.0, -2.0, 0.0, 0.0]]
    seen = {round(direct("NDCG", y, s), 5) for _ in range(40)}
    assert seen == {round(1 / math.log2(6), 5), round(1 / math.log2(7), 5)}


def test_finding_the_stable_offset_reorders_distinct_scores():
    assert direct("MeanReciprocalRank", [[0, 1]], [[1.0, 1.0000005]], k=1, shuffle_ties=False) == 0.0
    assert direct("MeanReciprocalRank", [[0, 1]], [[1.0, 1.0000005]], k=1) == 1.0


def test_success_and_other_families_are_not_claimed():
    e = entry("keras_rs")
    for text in ("Success@1", "Rprec", "Rcap@5", "DCG@5"):
        assert not e.supports(parse_measure(text)), text
