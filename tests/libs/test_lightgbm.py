"""LightGBM through its adapters, live: published numbers and every profile fact.

Expected values are numbers the libraries publish
(documentation examples, cited where used) or hand computation (formulas
written out below), never the reference implementation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.measures import Measure
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("lightgbm")

L2_3 = math.log2(3)


def run_entry(name: str, m: Measure, qrels: list, run: list) -> LibraryValues:
    return call(name, m, qrels, run)


def value(name, m, labels, scores) -> float:
    return only_value(run_entry(name, m, *one_list(labels, scores)))


def ndcg(k):
    return Measure("nDCG", k)


# labels in rank order [2, 0, 3] at k = 2: exponential DCG 3, ideal 7 + 3/log2(3);
# linear DCG 2, ideal 3 + 2/log2(3)
EXP_2_0_3 = 3 / (7 + 3 / L2_3)
LIN_2_0_3 = 2 / (3 + 2 / L2_3)


def test_default_label_gain_is_exponential():
    assert value("lightgbm", ndcg(2), [2, 0, 3], [3, 2, 1]) == pytest.approx(EXP_2_0_3, abs=1e-12)


def test_linear_label_gain():
    v = value("lightgbm:linear_gain", ndcg(2), [2, 0, 3], [3, 2, 1])
    assert v == pytest.approx(LIN_2_0_3, abs=1e-12)


def test_relevance_in_rank_order_example():
    # CONVENTIONS.md: [3,2,0,2,0,3,0,1,0,1], scores 10..1: nDCG@5 0.698 (exp), 0.717 (linear)
    labels, scores = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1], list(range(10, 0, -1))
    assert round(value("lightgbm", ndcg(5), labels, scores), 3) == 0.698
    assert round(value("lightgbm:linear_gain", ndcg(5), labels, scores), 3) == 0.717


def test_sklearn_docstring_example_with_linear_gain():
    # labels up to 30 are accepted; with gain = label this is sklearn's 0.695694
    v = value("lightgbm:linear_gain", ndcg(5), [10, 0, 0, 1, 5], [0.1, 0.2, 0.3, 4, 70])
    assert v == pytest.approx(0.695694, abs=5e-7)


def test_empty_query_scores_one_and_counts_in_the_mean():
    qrels = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d1", 0)]
    run = [("q1", "d1", 1.0), ("q1", "d2", 2.0), ("q2", "d1", 1.0), ("q2", "d2", 2.0)]
    lv = run_entry("lightgbm", ndcg(2), qrels, run)
    # q1: the relevant document second: 1/log2(3); q2 has nothing relevant: 1
    assert lv.per_query == pytest.approx({"q1": 1 / L2_3, "q2": 1.0}, abs=1e-12)
    assert lv.mean == pytest.approx((1 / L2_3 + 1.0) / 2, abs=1e-12)


def test_library_mean_equals_mean_of_per_query_values():
    rng = np.random.default_rng(7)
    qrels, run = [], []
    for q in range(6):
        n = int(rng.integers(1, 9))
        for i in range(n):
            qrels.append((f"q{q}", f"d{i}", int(rng.integers(0, 4))))
            run.append((f"q{q}", f"d{i}", float(rng.integers(0, 3))))
    for name in ("lightgbm", "lightgbm:linear_gain"):
        lv = run_entry(name, ndcg(3), qrels, run)
        assert len(lv.per_query) == 6
        assert lv.mean == pytest.approx(np.mean(list(lv.per_query.values())), abs=1e-12)


def test_ties_keep_input_order():
    # both scored 1.0: the document listed first ranks first (std::stable_sort)
    assert value("lightgbm", ndcg(1), [0, 1], [1.0, 1.0]) == 0.0
    assert value("lightgbm", ndcg(1), [1, 0], [1.0, 1.0]) == 1.0


def test_scores_are_float64():
    # 1.0 / 1.0 + 1e-9 and 1e8 / 1e8 + 1 are equal in float32, not in float64
    assert value("lightgbm", ndcg(1), [0, 1], [1.0, 1.0 + 1e-9]) == 1.0
    assert value("lightgbm", ndcg(1), [0, 1], [1e8, 1e8 + 1]) == 1.0


def test_k_beyond_the_list_is_the_whole_list():
    assert value("lightgbm", ndcg(10), [1, 0, 2], [3, 2, 1]) == value(
        "lightgbm", ndcg(3), [1, 0, 2], [3, 2, 1])


def test_one_document_lists():
    assert value("lightgbm", ndcg(3), [1], [1.0]) == 1.0
    assert value("lightgbm", ndcg(3), [0], [1.0]) == 1.0  # empty: 1


@pytest.mark.parametrize("name", ["lightgbm", "lightgbm:linear_gain"])
def test_negative_and_fractional_labels_raise(name):
    neg = run_entry(name, ndcg(2), *one_list([-1, 2], [2, 1]))
    assert neg.error is not None and "non-negative" in neg.error
    frac = run_entry(name, ndcg(2), *one_list([0.5, 1], [2, 1]))
    assert frac.error is not None and "int type" in frac.error


def test_labels_beyond_the_gain_table_raise():
    # label_gain has 31 entries (0..30); no axis describes this bound, cases use labels 0..4
    assert value("lightgbm", ndcg(2), [30, 0], [2, 1]) == 1.0
    lv = run_entry("lightgbm", ndcg(2), *one_list([31, 0], [2, 1]))
    assert lv.error is not None and "label mappings" in lv.error


def test_label_gain_is_process_global_and_the_adapter_isolates_it():
    import lightgbm

    # In one process: a Booster's value changes once another label_gain has been set.
    def booster(gain):
        params = {"objective": "none", "metric": "ndcg", "eval_at": [2], "num_threads": 1,
                  "verbose": -1}
        if gain is not None:
            params["label_gain"] = gain
        ds = lightgbm.Dataset(np.zeros((3, 1)), label=[2, 0, 3], group=[3],
                              init_score=[3.0, 2.0, 1.0], params=params)
        return lightgbm.Booster(params, ds)

    b1 = booster(None)
    before = b1.eval_train()[0][2]
    booster(list(range(31))).eval_train()
    after = b1.eval_train()[0][2]
    assert before == pytest.approx(EXP_2_0_3, abs=1e-12)
    assert after == pytest.approx(2 / (7 + 3 / L2_3), abs=1e-12)  # linear DCG over exp ideal

    # Through the adapters (one worker process per label_gain), alternating stays right.
    for _ in range(2):
        assert value("lightgbm", ndcg(2), [2, 0, 3], [3, 2, 1]) == pytest.approx(EXP_2_0_3, abs=1e-12)
        assert value("lightgbm:linear_gain", ndcg(2), [2, 0, 3], [3, 2, 1]) == pytest.approx(
            LIN_2_0_3, abs=1e-12)


def test_eval_at_defaults_to_one_through_five():
    import lightgbm

    params = {"objective": "none", "metric": "ndcg", "num_threads": 1, "verbose": -1}
    ds = lightgbm.Dataset(np.zeros((3, 1)), label=[1, 0, 2], group=[3],
                          init_score=[3.0, 2.0, 1.0], params=params)
    names = [r[1] for r in lightgbm.Booster(params, ds).eval_train()]
    assert names == [f"ndcg@{k}" for k in range(1, 6)]


def test_only_nDCG_at_k_is_supported():
    e = entry("lightgbm")
    assert e.supports(ndcg(10))
    assert not e.supports(Measure("nDCG")) and not e.supports(Measure("DCG", 10))


def test_profiles_state_the_facts_above():
    p = entry("lightgbm").profile(ndcg(5))
    assert (p.gain, p.ideal, p.empty_query, p.ties, p.negative_labels, p.label_type,
            p.score_precision) == ("exponential", "retrieved", "one", "input_order", "raise",
                                   "raise", "float64")
    assert entry("lightgbm:linear_gain").profile(ndcg(5)).gain == "linear"
