"""``ap_denominator=k``: AP@k divided by k (RecTools' ``MAP(divide_by_k=True)``), and by the
list's length n without a cutoff; the numbers computed by hand."""

from __future__ import annotations

import pytest

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.measures import Measure
from conformance.reference import evaluate

TOL = 1e-12


def run_eval(qrels, run, measures, **conv):
    return evaluate(Qrels.from_records(qrels), Run.from_records(run), measures,
                    Conventions(ap_denominator="k", **conv))


def test_graded_labels_ties_and_unjudged():
    # threshold 2: a (3) relevant, b (1) not, u unjudged, c (2) relevant; b and u tie at 2.0.
    # docid_desc: a, u, b, c -> relevant at 1 and 4. AP@3 = (1/1) / 3; AP@4 = (1 + 2/4) / 4.
    # pessimistic: u (unjudged, 0) and b (1): u then b, the same order here.
    qrels = [("q", "a", 3), ("q", "b", 1), ("q", "c", 2)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "u", 2.0), ("q", "c", 1.0)]
    ms = [Measure("AP", 3), Measure("AP", 4), Measure("AP")]
    for ties in ("docid_desc", "pessimistic"):
        ev = run_eval(qrels, run, ms, relevance_threshold=2, ties=ties)
        got = [ev.aggregate(m) for m in ms]
        assert got == pytest.approx([1 / 3, (1 + 2 / 4) / 4, (1 + 2 / 4) / 4], abs=TOL)
    # average: b, u tie at ranks 2, 3 with no relevant between: the same values
    ev = run_eval(qrels, run, ms, relevance_threshold=2, ties="average")
    assert [ev.aggregate(m) for m in ms] == pytest.approx([1 / 3, 1.5 / 4, 1.5 / 4], abs=TOL)


def test_short_lists_and_empty_queries():
    # q1: a (1) alone, R = 2 (d judged, not retrieved): AP@5 = 1 / 5; AP = 1 / n = 1.
    # q2: nothing relevant: empty (0 under zero, left out under skip).
    # q3: judged relevant, nothing retrieved (query_set=qrels): AP = 0 / n = 0/0, read as 0.
    qrels = [("q1", "a", 1), ("q1", "d", 1), ("q2", "b", 0), ("q3", "e", 1)]
    run = [("q1", "a", 1.0), ("q2", "b", 1.0)]
    ms = [Measure("AP", 5), Measure("AP")]
    ev = run_eval(qrels, run, ms, query_set="qrels")
    assert ev.values(ms[0]) == pytest.approx({"q1": 1 / 5, "q2": 0.0, "q3": 0.0}, abs=TOL)
    assert ev.values(ms[1]) == pytest.approx({"q1": 1.0, "q2": 0.0, "q3": 0.0}, abs=TOL)
    skip = run_eval(qrels, run, ms, query_set="qrels", empty_query="skip")
    assert skip.aggregate(ms[0]) == pytest.approx((1 / 5 + 0) / 2, abs=TOL)
