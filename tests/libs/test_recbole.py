"""RecBole through its adapter, live in its side environment: every fact of the profile in
``conformance/libs/recbole.py``.

Expected values are hand computation (written out below), never the reference implementation.
Facts about torch's ranking and about RecBole's metric classes on a matrix of its own are asked
of the recbole environment's worker (``in_worker``): the library cannot be imported in this
process, whose numpy is 2.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.recbole import PROFILE, full_sort_evaluate, topk_order
from conformance.measures import parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("recbole")

L2_3 = math.log2(3)
# relevant a and f (f not recommended), c judged not relevant; the ranking c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name: str, qrels=QRELS, run=RUN, user: str = "u1") -> float:
    lv = call("recbole", name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def in_worker(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in the recbole environment's worker."""
    return entry("recbole").worker().call(functools.partial(fn, **kwargs), *args)


def test_it_runs_in_its_side_environment_on_numpy_1_23():
    e = entry("recbole")
    assert e.environment == "recbole" and e.version() == "1.2.1"
    versions = e.worker().call(eval, "(__import__('numpy').__version__, "
                                     "hasattr(__import__('numpy'), 'float'))")
    assert versions == ("1.23.5", True)  # np.float, which MRR, MAP and NDCG call, exists there
    assert np.__version__.split(".")[0] == "2"  # and this process is on numpy 2


def test_metric_classes_on_a_matrix_of_their_own():
    # two users, two columns each plus nothing else; u0 hits at rank 2 of 2 (R = 1),
    # u1 at rank 1 (R = 2: one positive is -inf, out of the top 2)
    scores = [[2.0, 1.0, -np.inf], [5.0, 4.0, -np.inf]]
    pos_u, pos_i = [0, 1, 1], [1, 0, 2]
    per, mean = in_worker(full_sort_evaluate, "NDCG", 2, scores, pos_u, pos_i)
    # u0: (1/log2 3) / 1; u1: 1 / (1 + 1/log2 3)
    assert per == pytest.approx([1 / L2_3, 1 / (1 + 1 / L2_3)], abs=1e-15)
    assert mean == pytest.approx((1 / L2_3 + 1 / (1 + 1 / L2_3)) / 2, abs=1e-14)
    per, _ = in_worker(full_sort_evaluate, "Recall", 2, scores, pos_u, pos_i)
    assert per == pytest.approx([1.0, 0.5], abs=1e-15)


def test_ndcg_is_binary_log2_over_min_k_r_ones():
    # hit a at rank 2; ideal: min(3, R = 2) ones
    assert value("nDCG@3") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    # a graded label is still one hit
    assert value("nDCG@3", [("u1", "a", 3), ("u1", "f", 1)]) == pytest.approx(
        (1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    # k = 1: ideal one slot, no hit at rank 1
    assert value("nDCG@1") == 0.0
    assert (PROFILE.gain, PROFILE.discount, PROFILE.ideal) == ("binary", "log2", "judged")


def test_map_divides_by_min_k_r():
    assert value("AP@3") == pytest.approx((1 / 2) / 2, abs=1e-15)  # min(3, 2) = 2
    # R = 1: one hit at rank 1 gives 1
    assert value("AP@3", [("u1", "c", 1)]) == pytest.approx(1.0, abs=1e-15)
    # k = 1 under R = 2: min(1, 2) = 1, no hit at rank 1
    assert value("AP@1", [("u1", "c", 1), ("u1", "a", 1)]) == pytest.approx(1.0, abs=1e-15)
    assert value("AP@2", [("u1", "c", 1), ("u1", "e", 1), ("u1", "f", 1)]) == pytest.approx(
        1 / 2, abs=1e-15)  # hit at 1 only: 1 / min(2, 3)
    assert PROFILE.ap_denominator == "min_k_relevant"


def test_mrr_precision_recall_hit():
    assert value("RR@3") == pytest.approx(1 / 2, abs=1e-15)
    assert value("RR@1") == 0.0  # the first hit is below k
    assert value("P@3") == pytest.approx(1 / 3, abs=1e-15)
    assert value("P@5") == pytest.approx(1 / 5, abs=1e-15)  # three listed, divided by 5
    assert value("R@3") == pytest.approx(1 / 2, abs=1e-15)  # hits over R, uncapped
    assert value("R@1") == 0.0
    assert value("Success@2") == 1.0 and value("Success@1") == 0.0
    assert (PROFILE.k_beyond_list, PROFILE.rr_cutoff) == ("k", "honour")


def test_a_short_list_never_reaches_an_unlisted_relevant_item():
    # list a alone, relevant a and f; at k = 4 the padding fills ranks 2-4, f stays out
    run = [("u1", "a", 1.0)]
    assert value("P@4", run=run) == pytest.approx(1 / 4, abs=1e-15)
    assert value("AP@4", run=run) == pytest.approx(1 / 2, abs=1e-15)
    assert value("nDCG@4", run=run) == pytest.approx(1 / (1 + 1 / L2_3), abs=1e-15)


def test_users_are_the_test_users_and_a_missing_one_scores_zero():
    qrels = QRELS + [("u2", "x", 1), ("u3", "y", 0)]
    run = RUN + [("u3", "y", 1.0), ("u4", "z", 1.0)]
    lv = call("recbole", "P@3", qrels, run)
    assert lv.error is None, lv.error
    # u2 has a relevant item and no recommendation: 0; u3 (no relevant item) and u4 (not
    # judged) are no test users
    assert lv.per_query == pytest.approx({"u1": 1 / 3, "u2": 0.0}, abs=1e-15)
    assert lv.mean == pytest.approx(1 / 6, abs=1e-15)
    assert (PROFILE.query_set, PROFILE.empty_query) == ("qrels", "skip")


def test_torch_topk_orders_equal_scores_in_no_stated_order():
    assert in_worker(topk_order, [1.0] * 2, 2) == [0, 1]  # two ties: the columns' order
    five = in_worker(topk_order, [1.0] * 5, 5)
    assert sorted(five) == [0, 1, 2, 3, 4] and five != [0, 1, 2, 3, 4]  # five: another
    assert in_worker(topk_order, [1.0] * 300, 10) != list(range(10))
    assert PROFILE.ties == "unspecified"


def test_scores_are_float32():
    # c at 1 + 1e-9 above four items at 1: in float32 all five tie, and torch.topk puts
    # another column before c's, so P@1 of relevant c is 0 (in double c is first: 1)
    qrels = [("u1", "c", 1)]
    run = [("u1", "c", 1.0 + 1e-9)] + [("u1", f"x{i}", 1.0) for i in range(4)]
    first = in_worker(topk_order, [np.float32(1.0 + 1e-9)] + [1.0] * 4, 5)[0]
    assert first != 0
    assert value("P@1", qrels, run) == 0.0
    assert PROFILE.score_precision == "float32"


def test_a_document_listed_twice_keeps_its_last_listing():
    # a listed at 3.0 and again at 0.5: its cell holds 0.5, below c
    qrels = [("u1", "a", 1)]
    run = [("u1", "a", 3.0), ("u1", "c", 2.0), ("u1", "a", 0.5)]
    assert value("RR@3", qrels, run) == pytest.approx(1 / 2, abs=1e-15)
    assert PROFILE.duplicates == "last"


def test_only_measures_with_a_cutoff():
    e = entry("recbole")
    assert not e.supports(parse_measure("nDCG"))
    assert not e.supports(parse_measure("AP"))
    assert e.supports(parse_measure("nDCG@10")) and e.supports(parse_measure("Success@5"))
    assert not e.supports(parse_measure("Rcap@5"))


def test_a_score_below_float32s_range_is_refused_and_ranks_out_of_the_list_if_asked():
    qrels, run = [("u1", "a", 1)], [("u1", "a", -1e39)]
    lv = call("recbole", "P@1", qrels, run)
    assert lv.error is not None and "out of the ranking" in lv.error
    m = parse_measure("P@1")
    asked = entry("recbole").asking_the_library().evaluate(
        Qrels.from_records(qrels), Run.from_records(run), [m])[m]
    assert asked.error is None and asked.per_query == {"u1": 0.0}  # the padding came first
    # above float32's range: +inf, first in the list
    assert value("P@1", qrels, [("u1", "a", 1e39), ("u1", "b", 1.0)]) == 1.0
