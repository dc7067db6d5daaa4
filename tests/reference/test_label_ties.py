"""``ties=pessimistic`` and ``ties=optimistic``: tied documents ordered by their labels, the
numbers computed by hand.

Each case writes out the order the rule gives (score descending; among equal scores the label
ascending for pessimistic, descending for optimistic, an unjudged document read as label 0;
among equal labels the docid descending) and the arithmetic of each measure on that order.
"""

from __future__ import annotations

from math import log2

import pytest

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.measures import Measure
from conformance.reference import evaluate

TOL = 1e-12


def M(family, cutoff=None, **overrides):
    return Measure(family, cutoff, tuple(overrides.items()))


def run_eval(qrels, run, measures, **conv):
    return evaluate(Qrels.from_records(qrels), Run.from_records(run), measures, Conventions(**conv))


# x scores 2.0 (label 0); a (2), b (1), e (1), d (0) and c (unjudged) tie at 1.0.
GRADED_QRELS = [("q", "x", 0), ("q", "a", 2), ("q", "b", 1), ("q", "e", 1), ("q", "d", 0)]
GRADED_RUN = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0), ("q", "d", 1.0),
              ("q", "e", 1.0), ("q", "x", 2.0)]


def test_pessimistic_puts_lower_labels_first_and_unjudged_with_label_zero():
    # label 0: d and c (unjudged, read as 0) -> docid descending d, c; label 1: e, b; then a.
    # Order x(0) d(0) c(-) e(1) b(1) a(2): gains 0 0 0 1 1 2 at ranks 1..6.
    ms = [M("DCG"), M("Judged", 2), M("Judged", 3), M("RR"), M("P", 3), M("AP")]
    ev = run_eval(GRADED_QRELS, GRADED_RUN, ms, ties="pessimistic")
    want = [1 / log2(5) + 1 / log2(6) + 2 / log2(7),
            2 / 2,  # x, d judged: c (unjudged) comes after the label 0 document d
            2 / 3,
            1 / 4,  # e at rank 4
            0 / 3,
            (1 / 4 + 2 / 5 + 3 / 6) / 3]  # R = 3 (a, b, e)
    for m, w in zip(ms, want):
        assert ev.aggregate(m) == pytest.approx(w, abs=TOL), m.text


def test_optimistic_puts_higher_labels_first():
    # Order x(0) a(2) e(1) b(1) d(0) c(-): gains 0 2 1 1 0 0.
    ms = [M("DCG"), M("Judged", 5), M("Judged", 6), M("RR"), M("P", 3), M("AP")]
    ev = run_eval(GRADED_QRELS, GRADED_RUN, ms, ties="optimistic")
    want = [2 / log2(3) + 1 / log2(4) + 1 / log2(5),
            5 / 5,  # the unjudged c is last: below the label 0 document d
            5 / 6,
            1 / 2,
            2 / 3,
            (1 / 2 + 2 / 3 + 3 / 4) / 3]
    for m, w in zip(ms, want):
        assert ev.aggregate(m) == pytest.approx(w, abs=TOL), m.text


def test_the_rules_are_the_ends_of_unspecified_for_measures_ordered_by_relevance():
    ms = [M("DCG"), M("RR"), M("P", 3), M("AP"), M("nDCG", 3)]
    low = run_eval(GRADED_QRELS, GRADED_RUN, ms, ties="pessimistic")
    high = run_eval(GRADED_QRELS, GRADED_RUN, ms, ties="optimistic")
    rng = run_eval(GRADED_QRELS, GRADED_RUN, ms, ties="unspecified")
    for m in ms:
        assert rng.aggregate(m) == pytest.approx(low.aggregate(m), abs=TOL), m.text
        assert rng.aggregate(m, upper=True) == pytest.approx(high.aggregate(m), abs=TOL), m.text


def test_a_negative_label_kept_comes_before_label_zero():
    # a (-1), b (0), c (1) tie; under negative_labels=keep pessimistic is a, b, c;
    # DCG = -1 + 0 + 1/log2(4). Under unjudged, a reads as unjudged, 0: (b, a) by docid
    # descending, then c: DCG = 0 + 0 + 1/log2(4) (a's gain is 0).
    qrels = [("q", "a", -1), ("q", "b", 0), ("q", "c", 1)]
    run = [("q", "c", 1.0), ("q", "b", 1.0), ("q", "a", 1.0)]
    keep = run_eval(qrels, run, [M("DCG"), M("Judged", 1)], ties="pessimistic",
                    negative_labels="keep")
    assert keep.aggregate(M("DCG")) == pytest.approx(-1 + 1 / log2(4), abs=TOL)
    unj = run_eval(qrels, run, [M("DCG"), M("Judged", 1)], ties="pessimistic")
    assert unj.aggregate(M("DCG")) == pytest.approx(1 / log2(4), abs=TOL)
    assert unj.aggregate(M("Judged", 1)) == 1.0  # b first: a, read as unjudged, sorts below it


def test_one_order_for_graded_measures_even_when_the_gain_map_falls():
    # gains 1 -> 5, 2 -> 1: pessimistic orders by label (1 before 2), not by gain.
    # a (2) and b (1) tie: order b, a: DCG = 5 + 1/log2(3).
    qrels = [("q", "a", 2), ("q", "b", 1)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    ev = run_eval(qrels, run, [M("DCG")], ties="pessimistic", gain="1:5,2:1")
    assert ev.aggregate(M("DCG")) == pytest.approx(5 + 1 / log2(3), abs=TOL)
    rng = run_eval(qrels, run, [M("DCG")], ties="unspecified", gain="1:5,2:1")
    assert rng.aggregate(M("DCG")) == pytest.approx(1 + 5 / log2(3), abs=TOL)  # its low end


def test_a_depth_cut_inside_a_tied_group_keeps_the_rows_the_order_puts_first():
    # a (1), b (0), c (0) tie; depth 2. Pessimistic: c, b | a (a cut away): R@2 = 0/1.
    # Optimistic: a, c | b: R@2 = 1/1. (ties=average refuses this cut.)
    qrels = [("q", "a", 1), ("q", "b", 0), ("q", "c", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    ms = [M("R", 2), M("NumRet"), M("NumRelRet")]
    low = run_eval(qrels, run, ms, ties="pessimistic", depth=2)
    high = run_eval(qrels, run, ms, ties="optimistic", depth=2)
    assert [low.aggregate(m) for m in ms] == [0.0, 2, 0]
    assert [high.aggregate(m) for m in ms] == [1.0, 2, 1]


def test_ap_at_k_over_the_relevant_retrieved_is_the_orders_value_not_the_worst():
    # y (1) at rank 1; a (1), b (0), c (0) tie at ranks 2..4; AP@3 over the relevant retrieved.
    # Pessimistic: y, c, b | a: one relevant in the top 3, AP = (1/1) / 1 = 1.
    # The low end of unspecified is another order: y, b, a, c gives (1 + 2/3) / 2.
    qrels = [("q", "y", 1), ("q", "a", 1), ("q", "b", 0), ("q", "c", 0)]
    run = [("q", "y", 2.0), ("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    m = M("AP", 3)
    ev = run_eval(qrels, run, [m], ties="pessimistic", ap_denominator="retrieved_relevant")
    assert ev.aggregate(m) == pytest.approx(1.0, abs=TOL)
    rng = run_eval(qrels, run, [m], ties="unspecified", ap_denominator="retrieved_relevant")
    assert rng.aggregate(m) == pytest.approx((1 + 2 / 3) / 2, abs=TOL)


def test_hole_reads_the_documents_where_the_labels_put_them():
    # a (1), b (0) judged; u named by no judgment (a hole, unjudged: label 0); all tie.
    # Pessimistic: (u, b) by docid descending, then a: Hole@1 = 1. Optimistic: a first: 0.
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "u", 1.0)]
    m = M("Hole", 1)
    assert run_eval(qrels, run, [m], ties="pessimistic").aggregate(m) == 1.0
    assert run_eval(qrels, run, [m], ties="optimistic").aggregate(m) == 0.0


def test_short_lists_and_empty_queries():
    # q1: a (1), b (0) tie, P@5 over 5: pessimistic b, a -> 1/5, RR 1/2;
    # q2: c (0) only, nothing relevant: empty, scored 0 (empty_query=zero) or left out (skip).
    qrels = [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 0)]
    run = [("q1", "a", 1.0), ("q1", "b", 1.0), ("q2", "c", 1.0)]
    ms = [M("P", 5), M("RR")]
    ev = run_eval(qrels, run, ms, ties="pessimistic")
    assert ev.aggregate(ms[0]) == pytest.approx((1 / 5 + 0) / 2, abs=TOL)
    assert ev.aggregate(ms[1]) == pytest.approx((1 / 2 + 0) / 2, abs=TOL)
    skip = run_eval(qrels, run, ms, ties="pessimistic", empty_query="skip")
    assert skip.aggregate(ms[1]) == pytest.approx(1 / 2, abs=TOL)


def test_the_tie_check_reads_the_order():
    # one relevant among two tied documents: their order changes RR
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    ev = evaluate(Qrels.from_records(qrels), Run.from_records(run), [M("RR")],
                  Conventions(ties="pessimistic"), tie_check=True)
    assert ev.aggregate(M("RR")) == 1 / 2
    assert ev.tie_changed[M("RR")].tolist() == [True]
