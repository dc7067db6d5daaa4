"""scikit-learn through its adapters, live: published numbers and every profile fact.

Expected values are sklearn's own published docstring outputs, numbers the libraries
publish (cited where used), or hand computation (formulas written out below), never the
reference implementation.
"""

from __future__ import annotations

import math

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.measures import Measure
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("sklearn")

L2_3 = math.log2(3)
L2_4 = 2.0  # log2(4)


def run_entry(name: str, m: Measure, qrels: list, run: list) -> LibraryValues:
    return call(name, m, qrels, run)


def value(name, m, labels, scores) -> float:
    return only_value(run_entry(name, m, *one_list(labels, scores)))


NDCG, DCG = Measure("nDCG"), Measure("DCG")


def ndcg(k=None):
    return Measure("nDCG", k)


def dcg(k=None):
    return Measure("DCG", k)


# --- published numbers ---------------------------------------------------------------------------

DOC_TRUE = [10, 0, 0, 1, 5]
DOC_SCORE = [0.1, 0.2, 0.3, 4, 70]


def test_docstring_example_ndcg():
    # sklearn docstring and CONVENTIONS.md: 0.695694 (0.69 printed in the docstring)
    assert value("sklearn", NDCG, DOC_TRUE, DOC_SCORE) == pytest.approx(0.695694, abs=5e-7)


def test_docstring_example_all_tied_is_tie_averaged():
    # CONVENTIONS.md: every score tied -> 0.690979
    assert value("sklearn", NDCG, DOC_TRUE, [1.0] * 5) == pytest.approx(0.690979, abs=5e-7)


@pytest.mark.parametrize(
    "measure,scores,printed",
    [
        (NDCG, [0.05, 1.1, 1.0, 0.5, 0.0], 0.49),
        (ndcg(4), [0.05, 1.1, 1.0, 0.5, 0.0], 0.35),
        (ndcg(1), [1, 0, 0, 0, 1], 0.75),  # ties averaged: (10/10 + 5/10) / 2
        (DCG, DOC_SCORE, 9.49),
        (dcg(2), DOC_SCORE, 5.63),
        (dcg(1), [1, 0, 0, 0, 1], 7.5),  # (10 + 5) / 2
    ],
)
def test_docstring_examples_two_decimals(measure, scores, printed):
    # sklearn runs these doctests with pytest's NUMBER option: equal to within 10^-(digits
    # printed), which is how 9.4995 is printed as 9.49
    assert value("sklearn", measure, DOC_TRUE, scores) == pytest.approx(printed, abs=0.01)


def test_ties_at_the_top_average_to_one_half():
    # CONVENTIONS.md: qrels {a:0, b:1}, both scored 1.0 -> sklearn nDCG@1 = 0.5
    qrels = [("q1", "a", 0), ("q1", "b", 1)]
    run = [("q1", "a", 1.0), ("q1", "b", 1.0)]
    assert run_entry("sklearn", ndcg(1), qrels, run).per_query == {"q1": 0.5}


def test_relevant_not_retrieved_uses_the_retrieved_ideal():
    # CONVENTIONS.md: qrels {a:1, b:0, c:2, z:3}, run a > b > c -> 0.7602 (retrieved ideal);
    # by hand: (1 + 2/log2(4)) / (2 + 1/log2(3))
    qrels = [("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 2), ("q1", "z", 3)]
    run = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0)]
    v = run_entry("sklearn", ndcg(3), qrels, run).per_query["q1"]
    assert v == pytest.approx(0.7602, abs=5e-5)
    assert v == pytest.approx((1 + 2 / L2_4) / (2 + 1 / L2_3), abs=1e-12)


def test_relevance_in_rank_order_example():
    # CONVENTIONS.md: [3,2,0,2,0,3,0,1,0,1], scores 10..1: nDCG@5 0.717 and nDCG 0.907 (linear)
    labels = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
    scores = list(range(10, 0, -1))
    assert round(value("sklearn", ndcg(5), labels, scores), 3) == 0.717
    assert round(value("sklearn", NDCG, labels, scores), 3) == 0.907


# --- profile facts -------------------------------------------------------------------------------


def test_gain_is_linear_and_discount_log2():
    # labels in rank order [2, 0, 3]: DCG@3 = 2 + 0 + 3/log2(4); linear, not 2^rel - 1
    assert value("sklearn", dcg(3), [2, 0, 3], [3, 2, 1]) == pytest.approx(2 + 3 / L2_4, abs=1e-12)
    expected = (2 + 3 / L2_4) / (3 + 2 / L2_3)
    assert value("sklearn", ndcg(3), [2, 0, 3], [3, 2, 1]) == pytest.approx(expected, abs=1e-12)


def test_log_base10_changes_dcg():
    # dcg_score(log_base=10): gain / log10(rank + 1)
    expected = 3 / math.log10(2) + 2 / math.log10(3) + 1 / math.log10(4)
    v = value("sklearn:log_base10", dcg(), [3, 2, 1], [3, 2, 1])
    assert v == pytest.approx(expected, abs=1e-12)
    assert not entry("sklearn:log_base10").supports(NDCG)  # ndcg_score has no log_base


def test_empty_query_scores_zero_and_counts_in_the_mean():
    from sklearn.metrics import ndcg_score

    # a row whose labels are all 0 scores 0, and np.average still divides by both rows
    assert ndcg_score([[0, 0], [1, 0]], [[1, 2], [2, 1]]) == 0.5
    assert value("sklearn", NDCG, [0, None, 0], [3, 2, 1]) == 0.0


def test_k_beyond_the_list_is_the_whole_list():
    labels, scores = [1, 0, 2], [3, 2, 1]
    assert value("sklearn", ndcg(10), labels, scores) == value("sklearn", NDCG, labels, scores)


def test_tie_averaging_is_exact_float64_equality():
    # 1.0 and 1.0 + 1e-9 (equal in float32) are not tied: the relevant document ranks first
    assert value("sklearn", ndcg(1), [0, 1], [1.0, 1.0 + 1e-9]) == 1.0
    assert value("sklearn", ndcg(1), [0, 1], [1e8, 1e8 + 1]) == 1.0


def test_tie_average_spans_the_cutoff():
    # labels [3, 0, 1] all tied, k = 2: mean gain 4/3 times (1 + 1/log2(3)); ideal 3 + 1/log2(3)
    expected = (4 / 3) * (1 + 1 / L2_3) / (3 + 1 / L2_3)
    assert value("sklearn", ndcg(2), [3, 0, 1], [1, 1, 1]) == pytest.approx(expected, abs=1e-12)


def test_ignore_ties_takes_one_order_of_the_ties():
    # ignore_ties=True takes argsort's order (unstable: unspecified); a two-document tie gives
    # one of the two orders, never their average
    v = value("sklearn:ignore_ties", ndcg(1), [0, 1], [1.0, 1.0])
    assert v in (0.0, 1.0)
    # over a larger tie the value is that of some order: between the worst and the best
    labels, scores = [1, 0, 2, 0, 1, 3], [1.0] * 6
    worst = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(labels)))
    best = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(labels, reverse=True)))
    v = value("sklearn:ignore_ties", dcg(), labels, scores)
    assert worst - 1e-12 <= v <= best + 1e-12


def test_negative_labels_raise_in_ndcg_and_are_kept_in_dcg():
    lv = run_entry("sklearn", NDCG, *one_list([-1, 2], [2, 1]))
    assert lv.error is not None and "negative" in lv.error
    # dcg_score: -1 + 2/log2(3)
    assert value("sklearn", DCG, [-1, 2], [2, 1]) == pytest.approx(-1 + 2 / L2_3, abs=1e-12)


def test_fractional_labels_are_used_as_they_are():
    expected = (0.5 + 1.5 / L2_3) / (1.5 + 0.5 / L2_3)
    assert value("sklearn", NDCG, [0.5, 1.5], [2, 1]) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("name,m", [("sklearn", NDCG), ("sklearn", DCG), ("sklearn:log_base10", DCG)])
def test_one_document_lists_raise(name, m):
    # single_document=raise describes it; this pins the library's own refusal
    lv = run_entry(name, m, *one_list([1], [1.0]))
    assert lv.error is not None and lv.error.startswith("ValueError")


# --- the translation -----------------------------------------------------------------------------


def test_unjudged_documents_get_label_zero_and_unretrieved_ones_are_invisible():
    qrels = [("q1", "d1", 1), ("q1", "d9", 3)]  # d9 judged but not retrieved
    run = [("q1", "d2", 5.0), ("q1", "d1", 4.0), ("q1", "d3", 3.0)]  # d2, d3 unjudged
    # the list's labels are [0, 1, 0]: DCG 1/log2(3), ideal 1
    assert run_entry("sklearn", NDCG, qrels, run).per_query == pytest.approx({"q1": 1 / L2_3})


def test_only_queries_in_both_inputs_are_scored():
    qrels = [("q1", "d1", 1), ("q3", "d1", 1)]  # q3 is not in the run
    run = [("q1", "d1", 2.0), ("q1", "d2", 1.0), ("q2", "d1", 1.0), ("q2", "d2", 0.0)]
    assert sorted(run_entry("sklearn", NDCG, qrels, run).per_query) == ["q1"]


def test_scores_not_ids_order_the_list():
    # d10 sorts before d9 byte-wise; the scores put d9 first
    qrels = [("q1", "d9", 1), ("q1", "d10", 0)]
    run = [("q1", "d10", 1.0), ("q1", "d9", 2.0)]
    assert run_entry("sklearn", ndcg(1), qrels, run).per_query == {"q1": 1.0}


def test_profiles_state_the_facts_above():
    p = entry("sklearn").profile(NDCG)
    assert (p.gain, p.ideal, p.empty_query, p.ties, p.negative_labels, p.label_type,
            p.score_precision) == ("linear", "retrieved", "zero", "average", "raise", "float",
                                   "float64")
    assert entry("sklearn").profile(DCG).negative_labels == "keep"
    assert entry("sklearn:ignore_ties").profile(NDCG).ties == "unspecified"
    assert entry("sklearn:log_base10").profile(DCG).discount == "log:10"
    assert entry("sklearn").tolerance == 1e-12
