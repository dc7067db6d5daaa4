"""trectools, live, through its adapter: each profile fact on a small case.

Expected values are hand computation (arithmetic in the comments), never the reference.
"""

from __future__ import annotations

import math

import pytest

from libcall import call

L3 = math.log2(3)

pytestmark = pytest.mark.requires_library("trectools")


def test_mean_divides_by_the_run_topics_and_leaves_out_judged_queries_missing_from_it():
    # q1: a relevant at rank 1; q3 is in the run only (0, counted); q2 judged, not in the run
    qrels = [("q1", "a", 1), ("q2", "b", 1)]
    run = [("q1", "a", 1.0), ("q3", "x", 1.0)]
    for measure in ("P@1", "R@1", "RR@1", "AP@1", "nDCG@1"):
        lv = call("trectools", measure, qrels, run)
        assert lv.per_query == {"q1": 1.0, "q3": 0.0}, measure
        assert lv.mean == (1 + 0) / 2, measure


def test_ties_by_docid_descending_except_ndcg_which_keeps_the_readers_ascending_order():
    # a (label 1) and b (label 2) tied at 1.0; b relevant for RR
    qrels = [("q", "a", 0), ("q", "b", 2)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    assert call("trectools", "RR@1", qrels, run).mean == 1.0  # docid descending: b first
    # nDCG@2: read_run's (score desc, docid asc) puts a first: DCG = 0 + 2 / log2(3); ideal 2
    assert call("trectools", "nDCG@2", qrels, run).mean == pytest.approx((2 / L3) / 2, abs=1e-12)


def test_precision_divides_by_k_and_ap_by_every_relevant_judgment():
    # a (1) retrieved, b (1) judged only: P@5 = 1/5, AP@5 = (1/1) / 2
    qrels = [("q", "a", 1), ("q", "b", 1)]
    run = [("q", "a", 1.0)]
    assert call("trectools", "P@5", qrels, run).mean == pytest.approx(1 / 5, abs=1e-12)
    assert call("trectools", "AP@5", qrels, run).mean == pytest.approx(1 / 2, abs=1e-12)


def test_negative_labels_are_dropped_and_fractional_ones_below_one_refused():
    # a (-1) is removed by read_qrel: b (1) at rank 2 gives nDCG@2 = (1 / log2(3)) / 1
    qrels = [("q", "a", -1), ("q", "b", 1)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    assert call("trectools", "nDCG@2", qrels, run).mean == pytest.approx(1 / L3, abs=1e-12)
    lv = call("trectools", "P@1", [("q", "a", 0.5)], [("q", "a", 1.0)])
    assert lv.error is not None and "rel > 0" in lv.error


def test_the_refused_fractional_label_is_relevant_to_trectools_itself():
    """Why the adapter refuses a label between 0 and 1, shown live: trectools itself, asked
    anyway, counts a (0.5) relevant (rel > 0), which under relevance_threshold=1 it is not.
    P@2 = 2/2 (a and b relevant), not 1/2; AP@2 = (1/1 + 2/2) / 2 = 1, not (1/2) / 1; RR@2 =
    1/1 (a first), not 1/2."""
    from conformance.io.data import Qrels, Run
    from conformance.libs import entry
    from conformance.libs.base import ask_library
    from conformance.measures import parse_measure

    qrels = Qrels.from_records([("q", "a", 0.5), ("q", "b", 1)])
    run = Run.from_records([("q", "a", 2.0), ("q", "b", 1.0)])
    e = entry("trectools")
    for text, library_value in (("P@2", 1.0), ("AP@2", 1.0), ("RR@2", 1.0)):
        m = parse_measure(text)
        assert e.evaluate(qrels, run, [m])[m].error is not None  # refused by the adapter
        assert ask_library(e, qrels, run, [m])[m].per_query == {"q": library_value}, text
