"""LensKit through its adapter, live: every fact of the profiles in ``conformance/libs/lenskit.py``.

Expected values are hand computation (written out below), never the reference implementation.
The library runs in its side environment; facts about a metric class itself (AveragePrecision's
denominator and its division by zero, ``ItemList``'s float32 scores) are asked of that
environment's worker through the adapter's module-level functions.
"""

from __future__ import annotations

import functools
import math

import pytest

from conformance import isolation
from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.lenskit import (GRADED_PROFILE, OFFSET_PROFILE, PROFILE, analyse,
                                      measure_lists, top_n_order)
from conformance.measures import parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("lenskit")

L2_3 = math.log2(3)
# relevant a and f (f not listed), the list c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]
RECS = (["c", "a", "e"], [3.0, 2.0, 1.0])
TEST = (["a", "f"], [1.0, 1.0])


def value(name, qrels=QRELS, run=RUN, user="u1", e="lenskit") -> float:
    lv = call(e, name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def in_worker(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in the lenskit environment's worker."""
    return entry("lenskit").worker().call(functools.partial(fn, **kwargs), *args)


def test_default_weight_gives_ranks_one_and_two_weight_one():
    # LogRankWeight(): 1 / log2(max(rank, 2)): a at rank 2 weighs 1; ideal 2 slots: 1 + 1
    assert value("nDCG") == pytest.approx(1 / 2, abs=1e-15)
    assert value("nDCG@3") == pytest.approx(1 / 2, abs=1e-15)
    assert value("DCG@3") == pytest.approx(1.0, abs=1e-15)
    # rank 3 weighs 1/log2 3: relevant e alone, ideal one slot
    assert value("nDCG", [("u1", "e", 1)]) == pytest.approx(1 / L2_3, abs=1e-15)
    assert PROFILE.discount == "jarvelin"


def test_offset_one_is_log2_of_rank_plus_one():
    assert value("nDCG", e="lenskit:offset") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    assert in_worker(measure_lists, "NDCG", RECS, TEST, offset=1) == pytest.approx(
        (1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    assert OFFSET_PROFILE.discount == "log2"


def test_ndcg_binary_ideal_is_min_n_r_ones():
    # @1: one ideal slot, c is not relevant
    assert value("nDCG@1") == 0.0
    # graded labels count 1 each without gain=
    assert value("nDCG", [("u1", "a", 3), ("u1", "f", 1)]) == pytest.approx(1 / 2, abs=1e-15)
    assert PROFILE.gain == "binary" and PROFILE.ideal == "judged"


def test_graded_ndcg_reads_the_rating_with_the_sorted_ideal():
    qrels, run = [("u1", "a", 1), ("u1", "b", 3)], [("u1", "a", 2.0), ("u1", "b", 1.0)]
    # ranks 1 and 2 both weigh 1: (1 + 3) / (3 + 1)
    assert value("nDCG", qrels, run, e="lenskit:graded") == pytest.approx(1.0)
    # @1: 1 / 3 (the ideal is the largest rating)
    assert value("nDCG@1", qrels, run, e="lenskit:graded") == pytest.approx(1 / 3)
    assert value("DCG", qrels, run, e="lenskit:graded") == pytest.approx(4.0)
    # with offset=1: (1 + 3/log2 3) / (3 + 1/log2 3)
    assert in_worker(measure_lists, "NDCG", (["a", "b"], [2.0, 1.0]), (["a", "b"], [1.0, 3.0]),
                     offset=1, gain="rating") == pytest.approx((1 + 3 / L2_3) / (3 + 1 / L2_3))
    # a label below the threshold is not in the test list
    low = qrels + [("u1", "z", 0.5)]
    assert value("nDCG@1", low, run, e="lenskit:graded") == pytest.approx(1 / 3)
    assert GRADED_PROFILE.gain == "linear" and GRADED_PROFILE.threshold_scope == "graded"


def test_precision_over_the_list_cut_at_n():
    assert value("P@5") == pytest.approx(1 / 3)  # the list has 3 items
    assert value("P@1") == 0.0
    assert value("SetP") == pytest.approx(1 / 3)
    assert PROFILE.k_beyond_list == "min_k_n"


def test_recall_is_capped_at_n():
    assert value("Rcap@1", run=[("u1", "a", 1.0)]) == 1.0  # 1 / min(R=2, 1)
    assert value("Rcap@3") == pytest.approx(1 / 2)
    assert value("R") == pytest.approx(1 / 2)
    assert not entry("lenskit").supports(parse_measure("R@3"))


def test_reciprocal_rank_and_hit_read_the_cut_list():
    assert value("RR") == pytest.approx(1 / 2) and value("RR@1") == 0.0
    assert value("Success@1") == 0.0 and value("Success@2") == 1.0
    assert PROFILE.rr_cutoff == "honour"


def test_rbp_is_unnormalised_with_its_patience():
    # a at rank 2: (1 - p) p
    assert value("RBP(p=0.85)") == pytest.approx(0.15 * 0.85)
    assert value("RBP(p=0.5)") == pytest.approx(0.5 * 0.5)


def test_a_user_without_test_items_scores_zero_and_counts_in_the_mean():
    qrels = QRELS + [("u2", "x", 0)]
    run = RUN + [("u2", "x", 1.0), ("u3", "y", 1.0)]
    for name, u1 in (("nDCG", 1 / 2), ("RR", 1 / 2), ("Rcap@3", 1 / 2), ("P@3", 1 / 3)):
        lv = call("lenskit", name, qrels + [("u9", "a", 1)], run)
        assert lv.per_query == {"u1": pytest.approx(u1), "u2": 0.0, "u3": 0.0}, name
        assert lv.mean == pytest.approx(u1 / 3), name  # u9 has no output list: not measured
    # the metric itself returns NaN there; the collector fills the default 0.0
    per_user, mean = in_worker(analyse, "NDCG", {"u1": RECS, "u2": (["x"], [1.0])},
                               {"u1": TEST})
    assert per_user == {"u1": 0.5, "u2": 0.0} and mean == pytest.approx(0.25)
    assert PROFILE.empty_query == "zero" and PROFILE.query_set == "run_all"


def test_ties_keep_the_list_order_and_scores_are_float32():
    assert in_worker(top_n_order, ["b", "a", "c"], [1.0, 1.0, 1.0]) == ["b", "a", "c"]
    many = [f"i{j:03d}" for j in range(300)]
    assert in_worker(top_n_order, many, [1.0] * 300) == many
    # 1 + 1e-9 is 1 in float32: a tie, kept in list order
    assert in_worker(top_n_order, ["a", "b"], [1.0, 1.0 + 1e-9]) == ["a", "b"]
    assert in_worker(top_n_order, ["a", "b"], [1.0, 1.0 + 1e-6]) == ["b", "a"]
    assert value("RR", [("u1", "b", 1)], [("u1", "a", 1.0), ("u1", "b", 1.0 + 1e-9)]) == 0.5
    assert PROFILE.ties == "input_order" and PROFILE.score_precision == "float32"


def test_a_document_listed_twice_counts_twice():
    run = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    assert value("nDCG@3", run=run) == pytest.approx(1.0)  # 1 + 1 over 1 + 1
    assert value("P@3", run=run) == pytest.approx(2 / 3)
    assert PROFILE.duplicates == "keep"


def test_average_precision_divides_by_min_r_and_the_cut_list():
    # relevant {a, b, e}, list c, a: a at rank 2 gives P@2 = 1/2; divided by min(R = 3, n = 2):
    # 0.25 (R: 1/6; the relevant retrieved: 1/2)
    qrels = [("u1", "a", 1), ("u1", "b", 1), ("u1", "e", 1)]
    run = [("u1", "c", 2.0), ("u1", "a", 1.0)]
    assert value("AP", qrels, run) == pytest.approx(0.25, abs=1e-15)
    # n = 3 and 5 reach past the list: still min(3, 2) (min(k, R) would give (1/2) / 3)
    assert value("AP@3", qrels, run) == pytest.approx(0.25, abs=1e-15)
    assert value("AP@5", qrels, run) == pytest.approx(0.25, abs=1e-15)
    # list c, a, b, e cut at n = 2 is c, a: (1/2) / min(3, 2)
    longer = run + [("u1", "b", 0.5), ("u1", "e", 0.25)]
    assert value("AP@2", qrels, longer) == pytest.approx(0.25, abs=1e-15)
    # R below the list's length: a, c, b with relevant {a, b}: (1/1 + 2/3) / min(2, 3)
    assert in_worker(measure_lists, "AveragePrecision", (["a", "c", "b"], [3.0, 2.0, 1.0]),
                     (["a", "b"], [1.0, 1.0]), n=3) == pytest.approx((1 + 2 / 3) / 2)
    assert PROFILE.ap_denominator == "min_k_n_relevant"


def test_average_precision_on_a_list_without_test_items_stops_the_run_and_is_refused():
    with pytest.raises(isolation.Raised, match="ZeroDivisionError"):
        in_worker(analyse, "AveragePrecision", {"u1": RECS, "u2": (["x"], [1.0])}, {"u1": TEST})
    qrels, run = [("u1", "a", 0)], [("u1", "a", 1.0)]
    lv = call("lenskit", "AP", qrels, run)
    assert lv.error is not None and "ZeroDivisionError" in lv.error
    assert entry("lenskit").known_failure(
        Qrels.from_records(qrels), Run.from_records(run), parse_measure("AP@3")) is not None
    # the users all have test items: measured
    assert value("AP") == pytest.approx((1 / 2) / 2, abs=1e-15)  # a at rank 2, min(R 2, n 3)


def test_graded_dcg_on_a_list_without_test_items_raises_and_is_refused():
    with pytest.raises(isolation.Raised, match="no field rating"):
        in_worker(analyse, "DCG", {"u1": RECS, "u2": (["x"], [1.0])}, {"u1": TEST}, gain="rating")
    qrels, run = [("u1", "a", 0)], [("u1", "a", 1.0)]
    lv = call("lenskit:graded", "DCG", qrels, run)
    assert lv.error is not None and "raises KeyError" in lv.error
    assert entry("lenskit:graded").known_failure(
        Qrels.from_records(qrels), Run.from_records(run), parse_measure("DCG")) == lv.error
    # graded NDCG returns NaN first, filled with 0
    assert call("lenskit:graded", "nDCG", qrels, run).per_query == {"u1": 0.0}


def test_the_relevance_threshold_selects_the_test_items():
    from conformance.measures import Measure

    m = Measure("RR", None, (("relevance_threshold", 2),))
    qrels = [("u1", "a", 1), ("u1", "e", 2)]
    lv = entry("lenskit").evaluate(Qrels.from_records(qrels), Run.from_records(RUN), [m])[m]
    assert lv.per_query == {"u1": pytest.approx(1 / 3)}  # only e (label 2) is a test item
