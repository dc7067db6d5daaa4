"""RecTools through its adapter, live in its side environment: every fact of the profiles in
``conformance/libs/rectools.py``.

Expected values are hand computation (written out below), never the reference implementation.
Where a fact is about the metric classes themselves (the log base, a repeated item), they are
also called directly, in the rectools environment's worker (``direct``): the library cannot be
imported in this process, whose numpy is 2.
"""

from __future__ import annotations

import math
import sys

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.rectools import ACHIEVABLE, COUNTS_ROWS, OVER_K, PROFILE
from conformance.measures import Measure, parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("rectools")

L2_3 = math.log2(3)
# relevant a and f (f not recommended), c judged not relevant; the ranking c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name: str, qrels=QRELS, run=RUN, user: str = "u1", lib: str = "rectools") -> float:
    lv = call(lib, name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def direct(metric: str, reco: list[tuple], interactions: list[tuple]) -> dict:
    """``rectools.metrics.<metric>.calc_per_user(reco, interactions)`` as a dict, evaluated in the
    rectools environment's worker (an expression: the worker imports only the package)."""
    expr = (f"(lambda pd, m: m.{metric}.calc_per_user("
            f"pd.DataFrame({reco!r}, columns=['user_id', 'item_id', 'rank']), "
            f"pd.DataFrame({interactions!r}, columns=['user_id', 'item_id'])).to_dict())"
            "(__import__('pandas'), __import__('rectools.metrics', fromlist=['NDCG']))")
    return entry("rectools").worker().call(eval, expr)


def test_it_runs_in_its_side_environment_and_never_here():
    e = entry("rectools")
    assert e.environment == "rectools" and e.version() == "0.19.0"
    numpy = e.worker().call(eval, "__import__('numpy').__version__")
    assert numpy.split(".")[0] == "1"  # rectools 0.19.0: numpy<2
    value("P@3")
    assert not [m for m in sys.modules if m.split(".")[0] == "rectools"]  # imported there only


def test_ndcg_ideal_counts_all_k_ranks_as_relevant():
    # dcg = 1/log2(3) (a at rank 2); ideal: ranks 1..3 all relevant = 1 + 1/log2(3) + 1/log2(4)
    assert value("nDCG@3") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3 + 1 / 2), abs=1e-15)
    # @5: the ideal has five ranks although u1 has two relevant items and three recommendations
    ideal5 = sum(1 / math.log2(i + 1) for i in range(1, 6))
    assert value("nDCG@5") == pytest.approx((1 / L2_3) / ideal5, abs=1e-15)
    assert PROFILE.ideal == "k_slots" and PROFILE.gain == "binary"


def test_ndcg_divide_by_achievable_ideal_over_min_k_r():
    assert value("nDCG@3", lib="rectools:achievable") == pytest.approx(
        (1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)  # min(3, R=2) ranks
    assert value("nDCG@1", lib="rectools:achievable") == 0.0
    assert ACHIEVABLE.ideal == "judged"


def test_ndcg_log_base_cancels():
    reco = [("u1", "c", 1), ("u1", "a", 2), ("u1", "e", 3)]
    inter = [("u1", "a"), ("u1", "f")]
    two = direct("NDCG(k=3)", reco, inter)["u1"]
    ten = direct("NDCG(k=3, log_base=10)", reco, inter)["u1"]
    assert ten == pytest.approx(two, abs=1e-15) == pytest.approx((1 / L2_3) / (1 + 1 / L2_3 + 1 / 2))
    assert PROFILE.discount == "log2"


def test_map_divides_by_every_relevant_item():
    assert value("AP@3") == pytest.approx((1 / 2) / 2)  # precision 1/2 at a; R = 2 (f unranked)
    assert value("AP@1") == 0.0
    assert COUNTS_ROWS.ap_denominator == "relevant"


def test_map_divide_by_k_divides_by_k():
    assert value("AP@3", lib="rectools:divide_by_k") == pytest.approx((1 / 2) / 3)
    assert value("AP@5", lib="rectools:divide_by_k") == pytest.approx((1 / 2) / 5)  # past the list
    # RecTools' MAP docstring: user 2, items 1, 2 recommended, 1 relevant: MAP(k=3,
    # divide_by_k=True) = 1/3 (precision 1 at rank 1, over k = 3)
    assert direct("MAP(k=3, divide_by_k=True)", [(2, 1, 1), (2, 2, 2)], [(2, 1)]) == {
        2: pytest.approx(1 / 3)}
    # the denominator is k, not the merged rows: a repeated relevant item is two hits, kept
    qrels, run = [("u1", "a", 1)], [("u1", "a", 2.0), ("u1", "a", 1.5), ("u1", "b", 1.0)]
    assert value("AP@3", qrels, run, lib="rectools:divide_by_k") == pytest.approx((1 + 2 / 2) / 3)
    assert OVER_K.ap_denominator == "k" and OVER_K.duplicates == "keep"


def test_mrr_within_k():
    assert value("RR@3") == pytest.approx(1 / 2)
    assert value("RR@1") == 0.0  # a at rank 2 is past k
    assert PROFILE.rr_cutoff == "honour"


def test_precision_divides_by_k_past_the_list_recall_by_r_hit_rate():
    assert value("P@5") == pytest.approx(1 / 5)  # one hit, three recommendations, k = 5
    assert value("P@2") == pytest.approx(1 / 2)
    assert value("R@3") == pytest.approx(1 / 2) and value("R@1") == 0.0
    assert value("Success@1") == 0.0 and value("Success@2") == 1.0
    assert PROFILE.k_beyond_list == "k"


def test_users_come_from_the_interactions():
    qrels = QRELS + [("u2", "x", 1), ("u3", "y", 0)]  # u2: no recommendation; u3: none relevant
    run = RUN + [("u3", "y", 1.0), ("u4", "z", 1.0)]  # u4: recommended, never judged
    for name in ("P@3", "nDCG@3", "AP@3", "RR@3", "R@3", "Success@3"):
        lv = call("rectools", name, qrels, run)
        assert lv.error is None, lv.error
        assert set(lv.per_query) == {"u1", "u2"}, name  # u3 and u4 are in no table
        assert lv.per_query["u2"] == 0.0, name
    assert PROFILE.query_set == "qrels" and PROFILE.empty_query == "skip"


def test_a_repeated_item_is_two_hits():
    qrels, run = [("u1", "a", 1)], [("u1", "a", 2.0), ("u1", "a", 1.5), ("u1", "b", 1.0)]
    assert value("P@3", qrels, run) == pytest.approx(2 / 3)
    assert value("nDCG@3", qrels, run) == pytest.approx((1 + 1 / L2_3) / (1 + 1 / L2_3 + 1 / 2))
    assert value("RR@3", qrels, run) == 1.0 and value("Success@3", qrels, run) == 1.0
    assert PROFILE.duplicates == "keep"


def test_a_repeated_item_is_also_a_second_relevant_item_for_map_recall_and_achievable():
    reco = [("u1", "a", 1), ("u1", "a", 2), ("u1", "b", 3)]
    # keeping both listings would give hits 2 over R = 1: R@3 = 2.0 and AP@3 = (1 + 2/2) / 1 = 2.0;
    # RecTools counts R = 2 merged rows: 2 / 2 and (1 + 1) / 2
    assert direct("Recall(k=3)", reco, [("u1", "a")]) == {"u1": 1.0}
    assert direct("MAP(k=3)", reco, [("u1", "a")]) == {"u1": 1.0}
    # nor is it one listing counted once: relevant a and f, list a, a: hits 2 over 3 rows
    assert direct("Recall(k=2)", reco[:2], [("u1", "a"), ("u1", "f")])["u1"] == pytest.approx(2 / 3)
    # divide_by_achievable's n_items counts the rows as well: ideal over 2 ranks, dcg 1 + 1/log2 3
    assert direct("NDCG(k=3, divide_by_achievable=True)", reco, [("u1", "a")]) == {"u1": 1.0}
    assert COUNTS_ROWS.duplicates == "keep_counted" and ACHIEVABLE.duplicates == "keep_counted"


def test_every_later_listing_of_a_relevant_item_is_one_more_in_r_in_the_top_k_or_not():
    # relevant a and f; list a, b, a, a (a three times): R = 2 + 2 later listings = 4, hits at
    # ranks 1, 3, 4: R@4 = 3/4 (keep: 3/2); AP@4 = (1/1 + 2/3 + 3/4) / 4 = 29/48 (keep: /2);
    # achievable NDCG@4: dcg 1 + 1/log2 4 + 1/log2 5 over min(4, 4) ranks (keep: over 2 ranks)
    qrels = [("u1", "a", 1), ("u1", "f", 1)]
    run = [("u1", "a", 4.0), ("u1", "b", 3.0), ("u1", "a", 2.0), ("u1", "a", 1.0)]
    assert value("R@4", qrels, run) == pytest.approx(3 / 4, abs=1e-15)
    assert value("AP@4", qrels, run) == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 4, abs=1e-15)
    ideal4 = 1 + 1 / L2_3 + 1 / 2 + 1 / math.log2(5)
    assert value("nDCG@4", qrels, run, lib="rectools:achievable") == pytest.approx(
        (1 + 1 / 2 + 1 / math.log2(5)) / ideal4, abs=1e-15)
    # the hits are keep's: P@4 = 3/4, and plain NDCG's ideal is every one of the k ranks
    assert value("P@4", qrels, run) == pytest.approx(3 / 4)
    assert value("nDCG@4", qrels, run) == pytest.approx((1 + 1 / 2 + 1 / math.log2(5)) / ideal4)
    # relevant a; list a, b, a at k = 2: the listing at rank 3, past k, still counts: R = 2;
    # R@2 = 1/2 and AP@2 = 1/2 (counted within k only: 1 and 1); achievable NDCG@2 = 1 over
    # min(2, 2) ranks = 1 / (1 + 1/log2 3) (within k: over 1 rank, 1.0)
    run = [("u1", "a", 3.0), ("u1", "b", 2.0), ("u1", "a", 1.0)]
    assert value("R@2", [("u1", "a", 1)], run) == pytest.approx(1 / 2)
    assert value("AP@2", [("u1", "a", 1)], run) == pytest.approx(1 / 2)
    assert value("nDCG@2", [("u1", "a", 1)], run, lib="rectools:achievable") == pytest.approx(
        1 / (1 + 1 / L2_3), abs=1e-15)
    # an item that is no interaction adds nothing, listed twice: relevant a, list b, b, a:
    # R@3 = 1/1, AP@3 = (1/3) / 1, achievable NDCG@3 = (1/log2 4) / 1
    qrels, run = [("u1", "a", 1), ("u1", "b", 0)], [("u1", "b", 3.0), ("u1", "b", 2.0), ("u1", "a", 1.0)]
    assert value("R@3", qrels, run) == 1.0
    assert value("AP@3", qrels, run) == pytest.approx(1 / 3)
    assert value("nDCG@3", qrels, run, lib="rectools:achievable") == pytest.approx(1 / 2)
    assert COUNTS_ROWS.duplicates == "keep_counted" and PROFILE.duplicates == "keep"


def test_ranks_break_equal_scores_by_document_id_descending():
    tied = [("u1", "a", 1.0), ("u1", "b", 1.0)]
    assert value("RR@2", [("u1", "b", 1)], tied) == 1.0  # b gets rank 1
    assert value("RR@2", [("u1", "a", 1)], tied) == 0.5
    assert PROFILE.ties == "docid_desc"


def test_the_threshold_chooses_the_interactions():
    qrels = [("u1", "a", 2), ("u1", "f", 1)]
    m = Measure("R", 3, (("relevance_threshold", 2),))
    lv = entry("rectools").evaluate(Qrels.from_records(qrels), Run.from_records(RUN), [m])[m]
    assert lv.per_query == {"u1": 1.0}  # only a (label 2) is an interaction, and it is ranked


def test_r_precision_is_hits_over_min_k_r_a_capped_recall_not_offered():
    # relevant a and b, list a, c, b: 2 hits in the top 3 over min(3, R = 2); R-precision (the
    # top R = 2: a, c) would be 1/2
    reco = [("u", "a", 1), ("u", "c", 2), ("u", "b", 3)]
    assert direct("Precision(k=3, r_precision=True)", reco, [("u", "a"), ("u", "b")]) == {"u": 1.0}
    assert not entry("rectools").supports(parse_measure("Rprec"))


def test_what_is_not_claimed():
    e, a, over_k = entry("rectools"), entry("rectools:achievable"), entry("rectools:divide_by_k")
    for text in ("nDCG", "AP", "SetP", "RR", "Rprec", "F1@3", "DCG@3"):
        assert not e.supports(parse_measure(text)), text
    for text in ("AP@3", "P@3", "R@3"):
        assert not a.supports(parse_measure(text)), text
    assert a.supports(parse_measure("nDCG@3"))
    assert [f for f in ("nDCG@3", "AP@3", "P@3", "AP") if over_k.supports(parse_measure(f))] == ["AP@3"]
