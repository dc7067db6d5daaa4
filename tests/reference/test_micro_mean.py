"""``mean=micro``: each query's numerator and denominator summed over the counted queries and
divided once (implicit's ``ranking_metrics_at_k`` "precision": hits over min(K, R), summed over
users); the numbers computed by hand."""

from __future__ import annotations

import math

import pytest

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.io.data import Qrels, Run
from conformance.measures import Measure
from conformance.reference import evaluate

TOL = 1e-12

# q1: a (2), b (0), c (1) retrieved, c and b tied at 2.0; d (1) judged, not retrieved: R = 3.
# q2: x (unjudged), e (1): R = 1. q3: f (0): nothing relevant (empty). q4: z (1), no run.
QRELS = [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q1", "d", 1), ("q2", "e", 1),
         ("q3", "f", 0), ("q4", "z", 1)]
RUN = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 2.0), ("q2", "x", 2.0), ("q2", "e", 1.0),
       ("q3", "f", 1.0)]
P2, R2, RCAP2, P5 = Measure("P", 2), Measure("R", 2), Measure("Rcap", 2), Measure("P", 5)


def run_eval(measures, **conv):
    return evaluate(Qrels.from_records(QRELS), Run.from_records(RUN), measures,
                    Conventions(mean="micro", **conv))


def test_sums_then_divides_once():
    # docid_desc: q1 a, c, b -> top 2 holds a, c: 2 hits; q2 x, e: 1 hit; q3: 0.
    ev = run_eval([P2, R2, RCAP2, P5])
    assert ev.aggregate(P2) == pytest.approx((2 + 1 + 0) / (2 + 2 + 2), abs=TOL)
    assert ev.aggregate(R2) == pytest.approx((2 + 1 + 0) / (3 + 1 + 0), abs=TOL)
    assert ev.aggregate(RCAP2) == pytest.approx((2 + 1 + 0) / (2 + 1 + 0), abs=TOL)
    # lists shorter than 5: k = 5 all the same (k_beyond_list=k), or min(5, n)
    assert ev.aggregate(P5) == pytest.approx((2 + 1 + 0) / (5 + 5 + 5), abs=TOL)
    short = run_eval([P5], k_beyond_list="min_k_n")
    assert short.aggregate(P5) == pytest.approx((2 + 1 + 0) / (3 + 2 + 1), abs=TOL)
    # each query's own value is still its ratio
    assert ev.values(R2) == pytest.approx({"q1": 2 / 3, "q2": 1.0, "q3": 0.0}, abs=TOL)


def test_ties_pessimistic_and_the_range_of_unspecified():
    # pessimistic: q1 a, b (0), c (1): one hit in the top 2
    low = run_eval([R2], ties="pessimistic")
    assert low.aggregate(R2) == pytest.approx((1 + 1) / (3 + 1), abs=TOL)
    rng = run_eval([R2], ties="unspecified")
    assert (rng.aggregate(R2), rng.aggregate(R2, upper=True)) == pytest.approx(
        ((1 + 1) / 4, (2 + 1) / 4), abs=TOL)


def test_empty_queries():
    # skip: q3 left out of both sums; nan: NaN; one: refused
    skip = run_eval([P2], empty_query="skip")
    assert skip.aggregate(P2) == pytest.approx((2 + 1) / (2 + 2), abs=TOL)
    assert math.isnan(run_eval([P2], empty_query="nan").aggregate(P2))
    with pytest.raises(EvaluationError, match="empty_query=one"):
        run_eval([P2], empty_query="one")


def test_judged_queries_missing_from_the_run():
    # query_set=qrels: q4 adds 0 hits and its denominator (k = 2 for P, R = 1 for R)
    ev = run_eval([P2, R2], query_set="qrels")
    assert ev.aggregate(P2) == pytest.approx((2 + 1 + 0 + 0) / (2 * 4), abs=TOL)
    assert ev.aggregate(R2) == pytest.approx((2 + 1 + 0 + 0) / (3 + 1 + 0 + 1), abs=TOL)


def test_rounding_rounds_the_micro_average():
    ev = run_eval([R2], rounding=2)
    assert ev.aggregate(R2) == round(3 / 4, 2)
    ev = run_eval([P2], rounding=3)
    assert ev.aggregate(P2) == round(3 / 6, 3)


def test_families_that_are_no_one_ratio_refuse():
    for m in (Measure("nDCG", 2), Measure("AP"), Measure("RR")):
        with pytest.raises(EvaluationError, match="mean=micro"):
            run_eval([m])
