"""Cornac through its adapter, live: every fact of the profile in ``conformance/libs/cornac.py``.

Expected values are hand computation (written out below), never the reference implementation.
The metric classes are also called directly where a fact is about the class itself (MRR's
refusal, a shorter list, a duplicate), so a Cornac release that changes one fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.cornac import PROFILE
from conformance.measures import Measure, parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("cornac")

L2_3 = math.log2(3)
# positives a and f (f not ranked), the ranking c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name: str, qrels=QRELS, run=RUN, user: str = "u1") -> float:
    lv = call("cornac", name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def test_ndcg_binary_gain_log2_ideal_over_min_k_r():
    # dcg = 1/log2(3) (a at rank 2); ideal: min(3, R=2) relevant slots = 1 + 1/log2(3)
    assert value("nDCG@3") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    # without a cutoff the ideal holds every positive: the same here
    assert value("nDCG") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    # @1: the ideal is one slot, a is not in it
    assert value("nDCG@1") == 0.0


def test_ndcg_gain_is_binary_whatever_the_label():
    graded = [("u1", "a", 3), ("u1", "f", 1), ("u1", "c", 0)]
    assert value("nDCG@3", qrels=graded) == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    assert PROFILE.gain == "binary"


def test_precision_divides_by_k_even_past_the_list():
    assert value("P@5") == pytest.approx(1 / 5)  # tp_fp = k
    assert value("P@2") == pytest.approx(1 / 2)
    assert value("SetP") == pytest.approx(1 / 3)  # k = -1: the list's length


def test_recall_counts_positives_not_ranked():
    assert value("R@3") == pytest.approx(1 / 2)
    assert value("R@1") == 0.0


def test_hit_ratio_and_f1():
    assert value("Success@1") == 0.0 and value("Success@2") == 1.0
    p, r = 1 / 5, 1 / 2
    assert value("F1@5") == pytest.approx(2 * p * r / (p + r))


def test_mrr_reads_the_whole_ranking_and_takes_no_cutoff():
    assert value("RR") == pytest.approx(1 / 2)
    assert not entry("cornac").supports(parse_measure("RR@3"))


def test_mrr_raises_when_no_positive_is_ranked_and_the_entry_refuses():
    from cornac.metrics import MRR

    with pytest.raises(ValueError, match="No matched"):
        MRR().compute(gt_pos=np.array([0]), pd_rank=np.array([1, 2]))
    lv = call("cornac", "RR", [("u1", "a", 1)], [("u1", "b", 1.0)])
    assert lv.error is not None and "MRR raises ValueError" in lv.error
    e = entry("cornac")
    assert e.known_failure(Qrels.from_records([("u1", "a", 1)]),
                           Run.from_records([("u1", "b", 1.0)]), parse_measure("RR")) == lv.error


def test_a_document_listed_twice_counts_twice():
    from cornac.metrics import NDCG, Precision

    gt, rank = np.array([0]), np.array([0, 0, 1])
    assert NDCG(3).compute(gt_pos=gt, pd_rank=rank) == pytest.approx(1 + 1 / L2_3)
    assert Precision(3).compute(gt_pos=gt, pd_rank=rank) == pytest.approx(2 / 3)
    qrels, run = [("u1", "a", 1)], [("u1", "a", 2.0), ("u1", "a", 1.5), ("u1", "b", 1.0)]
    assert value("nDCG@3", qrels, run) == pytest.approx(1 + 1 / L2_3)
    assert PROFILE.duplicates == "keep"


def test_a_user_without_positives_is_skipped():
    qrels = QRELS + [("u2", "x", 0)]
    run = RUN + [("u2", "x", 1.0)]
    lv = call("cornac", "nDCG@3", qrels, run)
    assert set(lv.per_query) == {"u1"}
    # the class itself divides 0 by 0 on such a user, which ranking_eval never asks
    from cornac.metrics import NDCG

    with np.errstate(invalid="ignore", divide="ignore"):
        assert math.isnan(NDCG(3).compute(gt_pos=np.array([], dtype=int), pd_rank=np.array([1])))
    assert PROFILE.empty_query == "skip"


def test_rating_threshold_is_the_relevance_threshold():
    qrels = [("u1", "a", 2), ("u1", "f", 1)]
    m2 = Measure("R", 3, (("relevance_threshold", 2),))
    lv = entry("cornac").evaluate(Qrels.from_records(qrels), Run.from_records(RUN), [m2])[m2]
    assert lv.per_query == {"u1": 1.0}  # only a (label 2) is positive, and it is ranked


def test_ties_follow_argsort_reversed():
    # Recommender.rank: item_scores.argsort()[::-1]; on a short list numpy's quicksort is an
    # insertion sort (stable), so tied items come out in reverse input order: one case of the
    # unspecified order the profile declares
    assert PROFILE.ties == "unspecified"
    tied = [("u1", "b", 1.0), ("u1", "a", 1.0)]
    assert value("RR", [("u1", "a", 1)], tied) == 1.0
    assert value("RR", [("u1", "b", 1)], tied) == 0.5


def test_graded_dcg_map_at_k_and_auc_at_k_are_not_claimed():
    e = entry("cornac")
    for text in ("AP@5", "AUROC@5", "DCG@5", "Rprec"):
        assert not e.supports(parse_measure(text)), text
    assert e.supports(parse_measure("AP")) and e.supports(parse_measure("AUROC"))


# items n, r1, r2 (r1 and r2 positive) under three scorings
MAP_QRELS = [("u1", "n", 0), ("u1", "r1", 1), ("u1", "r2", 1)]


def test_map_gives_every_tied_item_the_group_s_last_rank():
    from cornac.metrics import MAP

    items, positives = np.array([0, 1, 2]), np.array([1, 2])  # n, r1, r2
    # one score: r1 and r2 both at rank 3, 2 positives through it: (2/3 + 2/3) / 2
    assert MAP().compute(item_indices=items, pd_scores=np.array([1.0, 1.0, 1.0]),
                         gt_pos=positives) == pytest.approx(2 / 3)
    # n above the tie of r1 and r2: both at 3 again, 2/3, where either order of the two gives
    # (1/2 + 2/3) / 2
    assert MAP().compute(item_indices=items, pd_scores=np.array([2.0, 1.0, 1.0]),
                         gt_pos=positives) == pytest.approx(2 / 3)
    # r1 above the tie of n and r2: r1 1/1, r2 at 3 with 2 positives through it: 5/6
    assert MAP().compute(item_indices=items, pd_scores=np.array([1.0, 2.0, 1.0]),
                         gt_pos=positives) == pytest.approx(5 / 6)
    tied = [("u1", "n", 1.0), ("u1", "r1", 1.0), ("u1", "r2", 1.0)]
    assert value("AP", MAP_QRELS, tied) == pytest.approx(2 / 3)
    above = [("u1", "n", 2.0), ("u1", "r1", 1.0), ("u1", "r2", 1.0)]
    assert value("AP", MAP_QRELS, above) == pytest.approx(2 / 3)
    assert entry("cornac").profile(parse_measure("AP")).ties == "group_last"


def test_map_averages_over_the_positives_in_the_list():
    from cornac.metrics import MAP

    # positives 1, 2, 7; list 0, 1, 2 in score order: (1/2 + 2/3) / 2, 7 not counted
    assert MAP().compute(item_indices=np.array([0, 1, 2]), pd_scores=np.array([3.0, 2.0, 1.0]),
                         gt_pos=np.array([1, 2, 7])) == pytest.approx(7 / 12)
    # as the adapter hands it: positives a, f (f not ranked), list c, a, e: a at 2, 1/2 over 1
    assert value("AP") == pytest.approx(1 / 2)
    assert entry("cornac").profile(parse_measure("AP")).ap_denominator == "retrieved_relevant"


def test_map_gives_nan_when_no_positive_is_ranked_and_the_entry_refuses():
    from cornac.metrics import MAP

    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        assert math.isnan(MAP().compute(item_indices=np.array([1, 2]),
                                        pd_scores=np.array([2.0, 1.0]), gt_pos=np.array([0])))
    lv = call("cornac", "AP", [("u1", "a", 1)], [("u1", "b", 1.0)])
    assert lv.error is not None and "MAP gives NaN" in lv.error


def auc(scores, positives, items=None) -> float:
    from cornac.metrics import AUC

    scores = np.asarray(scores, dtype=np.float64)
    items = np.arange(len(scores)) if items is None else np.asarray(items)
    return AUC().compute(item_indices=items, pd_scores=scores, gt_pos=np.asarray(positives))


def test_auc_is_the_share_of_pairs_ranked_right_over_the_list():
    # scores 3, 2, 1, positive item 1: pairs (1, 0) wrong, (1, 2) right: 1/2
    assert auc([3.0, 2.0, 1.0], [1]) == pytest.approx(1 / 2)
    # as the adapter hands it: positives a, f (f not in the list), list c 3, a 2, e 1: the same
    # two pairs, f in none
    assert value("AUROC") == pytest.approx(1 / 2)
    assert not entry("cornac").supports(parse_measure("AUROC@3"))


def test_auc_counts_a_tied_pair_zero():
    # scores 2, 1, 1 with the two tied items positive: both pairs against item 0 wrong: 0
    assert auc([2.0, 1.0, 1.0], [1, 2]) == 0.0
    # positives 0 and 1 (scores 2, 1), negative 2 (score 1): (0, 2) right, (1, 2) tied: 1/2
    assert auc([2.0, 1.0, 1.0], [0, 1]) == pytest.approx(1 / 2)
    # one positive tied with one negative: 0 (1/2 under average, 1 under optimistic)
    assert auc([1.0, 1.0], [0]) == 0.0
    qrels = [("u1", "a", 1), ("u1", "b", 1)]
    assert value("AUROC", qrels, [("u1", "a", 2.0), ("u1", "b", 1.0), ("u1", "c", 1.0)]) \
        == pytest.approx(1 / 2)
    assert value("AUROC", [("u1", "b", 1)], [("u1", "a", 1.0), ("u1", "b", 1.0)]) == 0.0
    assert value("AUROC", [("u1", "a", 1)], [("u1", "a", 1.0), ("u1", "b", 1.0)]) == 0.0
    assert entry("cornac").profile(parse_measure("AUROC")).ties == "pessimistic"


def test_auc_counts_a_document_listed_twice_at_each_listing():
    # a (positive) listed at 2 and at 0.5, b (negative) at 1: (a@2, b) right, (a@0.5, b) wrong
    assert auc([2.0, 0.5, 1.0], [0], items=[0, 0, 1]) == pytest.approx(1 / 2)
    run = [("u1", "a", 2.0), ("u1", "a", 0.5), ("u1", "b", 1.0)]
    assert value("AUROC", [("u1", "a", 1)], run) == pytest.approx(1 / 2)


def test_auc_gives_nan_without_a_positive_or_a_negative_and_the_entry_refuses():
    with np.errstate(invalid="ignore"):  # 0 / 0 of numpy integers
        assert math.isnan(auc([2.0, 1.0], [0, 1]))  # every item positive
        assert math.isnan(auc([2.0, 1.0], [7]))  # no positive in the list
    e = entry("cornac")
    m = parse_measure("AUROC")
    for qrels, run in (([("u1", "a", 1)], [("u1", "a", 1.0)]),
                       ([("u1", "a", 1)], [("u1", "b", 1.0)])):
        lv = call("cornac", "AUROC", qrels, run)
        assert lv.error is not None and "AUC gives NaN" in lv.error
        assert e.known_failure(Qrels.from_records(qrels), Run.from_records(run), m) == lv.error
    # a positive and a negative in the list: not refused
    assert e.known_failure(Qrels.from_records([("u1", "a", 1)]),
                           Run.from_records([("u1", "a", 1.0), ("u1", "b", 2.0)]), m) is None


# NCRR, offered by the entry cornac:ncrr as nDCG under NCRR_PROFILE


def ncrr(name: str, qrels=QRELS, run=RUN, user: str = "u1") -> float:
    lv = call("cornac:ncrr", name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def test_ncrr_is_binary_gain_over_rank_with_the_ideal_cut_at_min_k_r():
    from cornac.metrics import NCRR

    # positives a, f (f not ranked), list c, a, e: a at rank 2, 1/2; the ideal min(k, n, R) = 2
    # slots, 1 + 1/2; the same with k = -1 (no cutoff), 3, and 5 (past the list)
    for name in ("nDCG", "nDCG@3", "nDCG@5"):
        assert ncrr(name) == pytest.approx((1 / 2) / (1 + 1 / 2), abs=1e-15), name
    assert ncrr("nDCG@1") == 0.0  # a is not in the top 1: 0 over the ideal 1
    # four positives, list a, z, b, c: more positives than k = 2, the ideal is 2 slots
    gt, rank = np.array([0, 1, 2, 3]), np.array([0, 9, 1, 2])
    assert NCRR(2).compute(gt_pos=gt, pd_rank=rank) == pytest.approx(1 / (1 + 1 / 2))
    four = [("u1", d, 1) for d in "abcd"]
    listed = [("u1", "a", 4.0), ("u1", "z", 3.0), ("u1", "b", 2.0), ("u1", "c", 1.0)]
    assert ncrr("nDCG@2", four, listed) == pytest.approx(1 / (1 + 1 / 2), abs=1e-15)
    # no cutoff: a, b, c at 1, 3, 4 over the ideal of n = 4 slots (R = 4)
    assert ncrr("nDCG", four, listed) == pytest.approx(
        (1 + 1 / 3 + 1 / 4) / (1 + 1 / 2 + 1 / 3 + 1 / 4), abs=1e-15)
    p = entry("cornac:ncrr").profile(parse_measure("nDCG@5"))
    assert (p.gain, p.discount) == ("binary", "reciprocal")


def test_ncrr_ideal_is_cut_at_the_list_s_length():
    from cornac.metrics import NCRR

    # positives 0, 1, 2; list 9, 0; k = 5: icrr over min(3, len(pd_rank[:5]) = 2) ranks,
    # (1/2) / (1 + 1/2) = 1/3, where the judged ideal (3 slots) would give 3/11
    assert NCRR(5).compute(gt_pos=np.array([0, 1, 2]), pd_rank=np.array([9, 0])) == \
        pytest.approx(1 / 3)
    three = [("u1", d, 1) for d in "abc"]
    short = [("u1", "z", 2.0), ("u1", "a", 1.0)]
    assert ncrr("nDCG@5", three, short) == pytest.approx((1 / 2) / (1 + 1 / 2), abs=1e-15)
    assert ncrr("nDCG", three, short) == pytest.approx((1 / 2) / (1 + 1 / 2), abs=1e-15)
    assert entry("cornac:ncrr").profile(parse_measure("nDCG@5")).ideal == "judged_to_list"


def test_ncrr_scores_0_when_no_positive_is_ranked_and_counts_a_duplicate_twice():
    from cornac.metrics import NCRR

    assert NCRR().compute(gt_pos=np.array([0]), pd_rank=np.array([1, 2])) == 0.0
    assert ncrr("nDCG", [("u1", "a", 1)], [("u1", "b", 1.0)]) == 0.0
    # positive a listed twice, then b: (1 + 1/2) over the ideal of min(R = 1, 3) = 1 slot
    assert NCRR(3).compute(gt_pos=np.array([0]), pd_rank=np.array([0, 0, 1])) == \
        pytest.approx(1.5)
    twice = [("u1", "a", 2.0), ("u1", "a", 1.5), ("u1", "b", 1.0)]
    assert ncrr("nDCG@3", [("u1", "a", 1)], twice) == pytest.approx(1.5, abs=1e-15)


def test_ncrr_entry_offers_only_ndcg():
    e = entry("cornac:ncrr")
    assert e.supports(parse_measure("nDCG@10")) and e.supports(parse_measure("nDCG"))
    for text in ("P@5", "RR", "AP", "DCG@5"):
        assert not e.supports(parse_measure(text)), text
