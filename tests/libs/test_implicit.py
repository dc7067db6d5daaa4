"""implicit through its adapter, live: every fact of the profile in ``conformance/libs/implicit.py``.

Expected values are hand computation (written out below), never the reference implementation.
Facts about ``ranking_metrics_at_k`` itself (its micro-averaged precision, its division by
zero) are also checked on a model implicit ships, so they do not rest on the adapter's model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.implicit import PROFILE
from conformance.measures import parse_measure
from libcall import call

pytestmark = pytest.mark.requires_library("implicit")

L2_3 = math.log2(3)
# relevant a and f (f not recommended), the recommendations c, a, e
QRELS = [("u1", "a", 1), ("u1", "f", 1), ("u1", "c", 0)]
RUN = [("u1", "c", 3.0), ("u1", "a", 2.0), ("u1", "e", 1.0)]


def value(name, qrels=QRELS, run=RUN, user="u1") -> float:
    lv = call("implicit", name, qrels, run)
    assert lv.error is None, lv.error
    return lv.per_query[user]


def test_ndcg_binary_gain_ideal_over_min_k_r():
    assert value("nDCG@3") == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)
    assert value("nDCG@1") == 0.0
    graded = [("u1", "a", 3), ("u1", "f", 1)]
    assert value("nDCG@3", graded) == pytest.approx((1 / L2_3) / (1 + 1 / L2_3), abs=1e-15)


def test_map_divides_by_min_k_r():
    assert value("AP@3") == pytest.approx((1 / 2) / 2)
    assert value("AP@2") == pytest.approx((1 / 2) / 2)
    assert value("AP@1") == 0.0
    assert PROFILE.ap_denominator == "min_k_relevant"
    # min(K, R) = 1 at K = 2 when only a is relevant
    assert value("AP@2", [("u1", "a", 1)]) == pytest.approx(1 / 2)


def test_users_without_test_items_are_skipped_and_users_without_recommendations_score_zero():
    qrels = QRELS + [("u2", "x", 0), ("u3", "y", 1)]
    run = RUN + [("u2", "x", 1.0), ("u9", "a", 1.0)]
    lv = call("implicit", "nDCG@3", qrels, run)
    assert set(lv.per_query) == {"u1", "u3"} and lv.per_query["u3"] == 0.0
    assert lv.mean == pytest.approx((1 / L2_3) / (1 + 1 / L2_3) / 2)
    assert PROFILE.empty_query == "skip" and PROFILE.query_set == "qrels"


def test_a_document_recommended_twice_counts_twice():
    run = [("u1", "a", 3.0), ("u1", "a", 2.0), ("u1", "c", 1.0)]
    # hits at ranks 1 and 2: dcg = 1 + 1/log2(3), ideal min(3, R=2) slots: the same
    assert value("nDCG@3", run=run) == pytest.approx(1.0)
    assert PROFILE.duplicates == "keep"


def test_precision_is_micro_averaged_so_it_is_rcap_under_mean_micro():
    """On a model implicit ships: precision = sum(hits) / sum(min(K, R)), one division."""
    import scipy.sparse as sp
    from implicit.evaluation import ranking_metrics_at_k
    from implicit.nearest_neighbours import CosineRecommender

    rng = np.random.default_rng(0)
    train = sp.csr_matrix((rng.random((6, 12)) < 0.4).astype(np.float64))
    test = sp.csr_matrix(((rng.random((6, 12)) < 0.35) & (train.toarray() == 0)).astype(np.float64))
    model = CosineRecommender(K=5)
    model.fit(train, show_progress=False)
    K = 3
    got = ranking_metrics_at_k(model, train, test, K=K, show_progress=False)
    ids, _ = model.recommend(np.arange(6), train, N=K, filter_already_liked_items=True)
    hits, capped, per_user = 0, 0, []
    for u in range(6):
        rel = set(test[u].indices.tolist())
        if not rel:
            continue
        h = sum(int(i) in rel for i in ids[u])
        hits, capped = hits + h, capped + min(K, len(rel))
        per_user.append(h / min(K, len(rel)))
    assert got["precision"] == pytest.approx(hits / capped)
    assert got["precision"] != pytest.approx(float(np.mean(per_user)))  # not the macro mean
    e = entry("implicit")
    for text in ("P@3", "AUROC", "nDCG", "RR@3"):
        assert not e.supports(parse_measure(text)), text
    assert e.supports(parse_measure("Rcap@3")) and e.profile(parse_measure("Rcap@3")).mean == "micro"


def test_the_adapters_precision_is_each_users_rcap_and_the_micro_mean():
    # u1: relevant {a, f}, list c, a, e: 1 hit over min(3, 2); u2: relevant {x}, list x: 1 / 1
    qrels = QRELS + [("u2", "x", 1)]
    run = RUN + [("u2", "x", 1.0)]
    lv = call("implicit", "Rcap@3", qrels, run)
    assert lv.error is None, lv.error
    assert lv.per_query == pytest.approx({"u1": 1 / 2, "u2": 1.0}, abs=1e-15)
    assert lv.mean == pytest.approx((1 + 1) / (2 + 1), abs=1e-15)  # not (1/2 + 1) / 2


def test_a_user_whose_test_items_are_the_catalogue_divides_by_zero_and_is_refused():
    import scipy.sparse as sp
    from implicit.evaluation import ranking_metrics_at_k
    from implicit.nearest_neighbours import CosineRecommender

    train = sp.csr_matrix(np.array([[0.0, 0.0], [1.0, 1.0]]))
    model = CosineRecommender(K=2)
    model.fit(train, show_progress=False)
    test = sp.csr_matrix(np.array([[1.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ZeroDivisionError):
        ranking_metrics_at_k(model, train, test, K=1, show_progress=False)
    lv = call("implicit", "nDCG@1", [("u1", "a", 1)], [("u1", "a", 1.0)])
    assert lv.error is not None and "divides by zero" in lv.error
    assert entry("implicit").known_failure(
        Qrels.from_records([("u1", "a", 1)]), Run.from_records([("u1", "a", 1.0)]),
        parse_measure("nDCG@1")) == lv.error
    # one more item in the catalogue (judged, not relevant) and the call succeeds
    assert value("nDCG@1", [("u1", "a", 1), ("u1", "b", 0)], [("u1", "a", 1.0)]) == 1.0
