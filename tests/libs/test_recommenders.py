"""Microsoft Recommenders through its adapter, live: every fact of the profiles in
``conformance/libs/recommenders.py``.

Expected values are hand computation (written out below), never the reference implementation.
The library runs in its side environment; facts about a function itself (``by_threshold``,
``relevancy_method=None``, the two discount functions) are asked of that environment's worker
through the adapter's ``python_evaluation``, which calls the function on the frames it is given.
"""

from __future__ import annotations

import functools
import math

import pytest

from conformance import isolation
from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.recommenders import APK_PROFILE, NDCG_PROFILE, PROFILE, python_evaluation
from conformance.measures import Measure, parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("recommenders")

L2_3 = math.log2(3)
# relevant a and f (f not predicted), the predictions c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name, qrels=QRELS, run=RUN, user="u1", e="recommenders") -> float:
    lv = call(e, name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def library(function: str, rating_true: list, rating_pred: list, **kwargs) -> float:
    """The library's function itself, in its environment's worker."""
    fn = functools.partial(python_evaluation, **kwargs)
    return entry("recommenders").worker().call(fn, function, rating_true, rating_pred)


def test_ndcg_binary_gain_over_min_k_r_and_the_log_base_cancels():
    # dcg = 1/ln(3) (a at rank 2); ideal min(3, R=2) slots: 1/ln 2 + 1/ln 3; the base cancels
    assert value("nDCG@3") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    assert value("nDCG@1") == 0.0
    assert value("nDCG") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    true, pred = [("u1", "a", 1.0), ("u1", "f", 1.0)], [("u1", "c", 3.0), ("u1", "a", 2.0)]
    loge = library("ndcg_at_k", true, pred, k=3)
    log2 = library("ndcg_at_k", true, pred, k=3, discfun_type="log2")
    assert loge == pytest.approx(log2, abs=1e-15)
    assert NDCG_PROFILE.gain == "binary" and NDCG_PROFILE.discount == "log2"


def test_ndcg_raw_and_exp_gains_with_the_sorted_ideal():
    qrels, run = [("u1", "a", 1), ("u1", "b", 3)], [("u1", "a", 2.0), ("u1", "b", 1.0)]
    # raw: (1 + 3/log2 3) / (3 + 1/log2 3); exp: (1 + 7/log2 3) / (7 + 1/log2 3)
    assert value("nDCG@2", qrels, run, e="recommenders:raw") == pytest.approx(
        (1 + 3 / L2_3) / (3 + 1 / L2_3), abs=1e-15)
    assert value("nDCG@2", qrels, run, e="recommenders:exp") == pytest.approx(
        (1 + 7 / L2_3) / (7 + 1 / L2_3), abs=1e-15)
    # binary: both hits weigh 1, the ideal holds both: 1
    assert value("nDCG@2", qrels, run) == pytest.approx(1.0)
    # a label below the threshold is not in rating_true: not in the gains, not in the ideal
    graded = [("u1", "a", 1), ("u1", "b", 3), ("u1", "z", 0.5)]
    assert value("nDCG@2", graded, run, e="recommenders:raw") == pytest.approx(
        (1 + 3 / L2_3) / (3 + 1 / L2_3), abs=1e-15)
    assert entry("recommenders:raw").profile(parse_measure("nDCG@2")).threshold_scope == "graded"


def test_precision_divides_by_k_even_past_the_list_and_recall_by_r():
    assert value("P@5") == pytest.approx(1 / 5)
    assert value("P@2") == pytest.approx(1 / 2)
    assert value("R@3") == pytest.approx(1 / 2) and value("R") == pytest.approx(1 / 2)
    assert value("R@1") == 0.0
    assert PROFILE.k_beyond_list == "k"
    assert not entry("recommenders").supports(parse_measure("SetP"))


def test_map_at_k_over_min_k_r_and_map_over_r():
    # hit a at rank 2: precision 1/2; map_at_k / min(R=2, k); map / R
    assert value("AP@3") == pytest.approx((1 / 2) / 2)
    assert value("AP") == pytest.approx((1 / 2) / 2)
    only_a = [("u1", "a", 1), ("u1", "b", 1), ("u1", "g", 1)]  # R = 3
    run = [("u1", "a", 2.0), ("u1", "c", 1.0)]
    assert value("AP@1", only_a, run) == pytest.approx(1.0)  # / min(3, 1)
    m = Measure("AP", 1, (("ap_denominator", "relevant"),))
    lv = entry("recommenders").evaluate(Qrels.from_records(only_a), Run.from_records(run), [m])[m]
    assert lv.per_query == {"u1": pytest.approx(1 / 3)}  # map: / R
    assert APK_PROFILE.ap_denominator == "min_k_relevant" and PROFILE.ap_denominator == "relevant"


def test_r_precision_counts_the_top_r():
    # R = 2: the top 2 are c, a: one hit, 1/2
    assert value("Rprec") == pytest.approx(1 / 2)
    assert value("Rprec", [("u1", "a", 1)]) == 0.0  # R = 1: c alone


def test_ties_keep_the_frame_order():
    # get_top_k_items sorts on two keys (user, prediction): stable, so ties stay in input order
    tied = [("u1", f"i{j:02d}", 1.0) for j in range(40)]
    assert value("AP@40", [("u1", "i17", 1)], tied) == pytest.approx(1 / 18)
    assert value("AP@2", [("u1", "b", 1)], [("u1", "b", 1.0), ("u1", "a", 1.0)]) == 1.0
    assert value("AP@2", [("u1", "b", 1)], [("u1", "a", 1.0), ("u1", "b", 1.0)]) == 0.5
    assert PROFILE.ties == "input_order"


def test_users_in_both_frames_for_p_r_map_and_every_truth_user_for_ndcg():
    qrels = [("u1", "a", 1), ("u2", "x", 1), ("u4", "q", 0)]
    run = [("u1", "a", 1.0), ("u3", "a", 1.0), ("u4", "q", 1.0)]
    p = call("recommenders", "P@1", qrels, run)
    assert p.per_query == {"u1": 1.0} and p.mean == pytest.approx(1.0)  # u2 not predicted
    n = call("recommenders", "nDCG@3", qrels, run)
    assert n.per_query == {"u1": 1.0, "u2": 0.0} and n.mean == pytest.approx(0.5)
    assert PROFILE.query_set == "run" and NDCG_PROFILE.query_set == "qrels"
    assert PROFILE.empty_query == "skip"  # u4: no relevant item, in neither frame


def test_a_document_predicted_twice_counts_twice_in_p_r_and_map():
    run = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    assert value("P@3", run=run) == pytest.approx(2 / 3)
    assert value("R@3", run=run) == pytest.approx(1.0)  # 2 hits / R = 2
    assert value("AP@3", run=run) == pytest.approx((1 / 1 + 2 / 2) / 2)
    assert PROFILE.duplicates == "keep"


def test_ndcg_on_a_relevant_document_predicted_twice_is_refused_and_exceeds_one():
    true = [("u1", "a", 1.0), ("u1", "f", 1.0)]
    pred = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    # 2 listings x 2 merged rows: dcg = 2/ln 2 + 2/ln 3; ideal head(3) of the 5 truth rows
    want = (2 / math.log(2) + 2 / math.log(3)) / (1 / math.log(2) + 1 / math.log(3) + 1 / math.log(4))
    assert library("ndcg_at_k", true, pred, k=3) == pytest.approx(want)  # 1.5307
    lv = call("recommenders", "nDCG@3", QRELS, pred)
    assert lv.error is not None and "more than once" in lv.error
    e = entry("recommenders")
    assert e.known_failure(Qrels.from_records([("u1", "a", 1)]),
                           Run.from_records([("u1", "a", 2.0), ("u1", "a", 1.0)]),
                           parse_measure("nDCG@2")) is not None
    # both listings below the cutoff: no hit row, nothing to refuse
    assert e.known_failure(Qrels.from_records([("u1", "a", 1)]),
                           Run.from_records([("u1", "b", 3.0), ("u1", "a", 2.0),
                                             ("u1", "a", 1.0)]), parse_measure("nDCG@1")) is None


def test_r_precision_mean_leaves_out_users_without_a_hit_and_is_refused():
    true = [("u1", "a", 1.0), ("u2", "x", 1.0)]
    pred = [("u1", "a", 1.0), ("u2", "y", 1.0)]
    assert library("r_precision_at_k", true, pred, k=1) == 1.0  # u2's 0 is not in the mean
    assert library("precision_at_k", true, pred, k=1) == pytest.approx(0.5)  # P@1 counts it
    qrels = [("u1", "a", 1), ("u2", "x", 1)]
    lv = call("recommenders", "Rprec", qrels, [("u1", "a", 1.0), ("u2", "y", 1.0)])
    assert lv.error is not None and "leaves such a user out" in lv.error
    ok = call("recommenders", "Rprec", qrels, [("u1", "a", 1.0), ("u2", "x", 1.0)])
    assert ok.per_query == {"u1": 1.0, "u2": 1.0} and ok.mean == 1.0


def test_r_precision_mean_of_no_hit_in_any_top_r_is_nan_when_a_top_largest_r_holds_one():
    # u1: relevant a, list b, a (R = 1: a is 2nd); u2: relevant x, z, list y. The call's k is the
    # largest R, 2: a is a hit row there, so the function does not return 0.0 early, and no
    # user keeps a row within its own R: the mean of nothing
    true = [("u1", "a", 1.0), ("u2", "x", 1.0), ("u2", "z", 1.0)]
    pred = [("u1", "b", 2.0), ("u1", "a", 1.0), ("u2", "y", 1.0)]
    assert math.isnan(library("r_precision_at_k", true, pred, k=2))
    assert library("r_precision_at_k", true, [("u1", "b", 2.0), ("u2", "y", 1.0)], k=2) == 0.0
    qrels = [("u1", "a", 1), ("u2", "x", 1), ("u2", "z", 1)]
    lv = call("recommenders", "Rprec", qrels, pred)
    assert lv.error is not None and "averages no value" in lv.error


def test_by_threshold_reads_the_threshold_as_a_count_and_gives_precision_above_one():
    true = [("u1", "a", 1.0), ("u1", "b", 1.0)]
    pred = [("u1", "a", 2.0), ("u1", "b", 1.0)]
    # top_k = threshold = 2 items, divided by k = 1
    assert library("precision_at_k", true, pred, k=1, relevancy_method="by_threshold",
                   threshold=2) == 2.0
    assert library("precision_at_k", true, pred, k=1) == 1.0  # top_k


def test_relevancy_method_none_reads_the_frame_order_uncut():
    true = [("u1", "a", 1.0), ("u1", "f", 1.0)]
    pred = [("u1", "e", 9.0), ("u1", "a", 1.0), ("u1", "c", 5.0)]  # frame order e, a, c
    # the hit at frame rank 2 is counted although k = 1 (no cut), and ranked 2nd, not 3rd
    assert library("precision_at_k", true, pred, k=1, relevancy_method=None) == 1.0
    assert library("map_at_k", true, pred, k=1, relevancy_method=None) == pytest.approx(1 / 2)
    assert library("precision_at_k", true, pred, k=1) == 0.0  # top_k: e alone


def test_a_missing_function_or_column_is_the_librarys_error():
    with pytest.raises(isolation.Raised, match="AttributeError"):
        library("no_such_metric", [("u1", "a", 1.0)], [("u1", "a", 1.0)])


def test_rating_metrics_and_set_precision_are_not_claimed():
    e = entry("recommenders")
    for text in ("SetP", "RR", "Success@3", "DCG@3"):
        assert not e.supports(parse_measure(text)), text
    assert not e.supports(Measure("AP", 3, (("ap_denominator", "retrieved_relevant"),)))
    assert not entry("recommenders:raw").supports(parse_measure("P@3"))
