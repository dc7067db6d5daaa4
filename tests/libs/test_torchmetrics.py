"""torchmetrics through its adapters, live: published numbers and every profile fact.

Expected values are numbers the libraries publish
(documentation examples, cited where used) or hand computation (written
out below), never the reference implementation. Each quirk the profiles in
``conformance/libs/torchmetrics.py`` rely on, and each behaviour no axis describes yet, has a
test here, so a torchmetrics release that changes it fails. Values are float32: compared within
the entry's tolerance (1e-6).
"""

from __future__ import annotations

import math

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.libs.torchmetrics import NDCG_PROFILE, PROFILE
from conformance.measures import Measure, parse_measure
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("torchmetrics")

L2_3 = math.log2(3)
TOL = 1e-6


def run_entry(m: Measure | str, qrels: list, run: list, name: str = "torchmetrics") -> LibraryValues:
    return call(name, m, qrels, run)


def value(m, labels, scores, name="torchmetrics") -> float:
    return only_value(run_entry(m, *one_list(labels, scores), name=name))


GRADED = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
SCORES_10_TO_1 = [float(10 - i) for i in range(10)]


# ---- published numbers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected",
    [("P@5", 0.600), ("R@5", 0.500), ("RR", 1.000), ("nDCG@5", 0.717), ("nDCG", 0.907)],
)
def test_published_graded_list(name, expected):
    assert round(value(name, GRADED, SCORES_10_TO_1), 3) == expected


def test_published_ndcg5_in_float32_tolerance():
    dcg5 = 3 + 2 / L2_3 + 2 / math.log2(5)
    idcg5 = 3 + 3 / L2_3 + 1 + 2 / math.log2(5) + 1 / math.log2(6)
    v = value("nDCG@5", GRADED, SCORES_10_TO_1)
    assert v == pytest.approx(dcg5 / idcg5, abs=TOL)
    assert v != dcg5 / idcg5  # it is float32 arithmetic, not float64


def test_ties_at_the_top_averaged_for_ndcg_only():
    qrels, run = [("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 1.0)]
    # nDCG@1: the tied pair shares rank 1's discount: gain (0 + 1)/2 over the ideal 1
    assert run_entry("nDCG@1", qrels, run).per_query == {"q": 0.5}
    assert NDCG_PROFILE.ties == "average"
    # P@1 is not averaged: one of the two documents is taken
    assert run_entry("P@1", qrels, run).per_query["q"] in (0.0, 1.0)
    assert PROFILE.ties == "unspecified"


def test_topk_and_argsort_order_ties_neither_by_input_nor_reversed():
    import torch

    tied = torch.ones(5)
    order = tied.topk(5, sorted=True)[1].tolist()
    assert order not in ([0, 1, 2, 3, 4], [4, 3, 2, 1, 0])
    order = torch.argsort(torch.ones(20), descending=True).tolist()
    assert order not in (list(range(20)), list(range(19, -1, -1)))


def test_relevant_document_not_retrieved_retrieved_ideal():
    # qrels {a:1, b:0, c:2, z:3}, run a > b > c: z is invisible; DCG = 1 + 2/2, ideal 2 + 1/log2 3
    lv = run_entry(
        "nDCG@3",
        [("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)],
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
    )
    assert round(lv.per_query["q"], 4) == 0.7602
    assert lv.per_query["q"] == pytest.approx(2.0 / (2 + 1 / L2_3), abs=TOL)
    # recall: R is the relevant documents of the list (a and c), both found
    qrels = [("q", "a", 1), ("q", "c", 2), ("q", "z", 3)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    assert run_entry("R", qrels, run).per_query == {"q": 1.0}
    assert run_entry("Rprec", qrels, run).per_query == {"q": 0.5}
    assert PROFILE.ideal == "retrieved"


# ---- the profile, fact by fact --------------------------------------------------------------


def test_everything_float32():
    import torch
    from torchmetrics.retrieval import RetrievalPrecision

    m = RetrievalPrecision(top_k=1)
    m.update(torch.tensor([1.0 + 1e-9, 1.0], dtype=torch.float64), torch.tensor([False, True]),
             torch.zeros(2, dtype=torch.long))
    assert m.compute().dtype == torch.float32
    assert PROFILE.score_precision == "float32"
    # 1 + 1e-9 and 1 tie in float32; in nDCG the pair is averaged
    assert value("nDCG@1", [0, 1], [1.0 + 1e-9, 1.0]) == 0.5


@pytest.mark.parametrize(
    "name,expected",
    [("torchmetrics", {"empty": 0.0, "full": 1.0}), ("torchmetrics:pos", {"empty": 1.0, "full": 1.0}),
     ("torchmetrics:skip", {"full": 1.0})],
)
def test_empty_target_action(name, expected):
    qrels = [("empty", "a", 0), ("full", "a", 1)]
    run = [("empty", "a", 1.0), ("full", "a", 1.0)]
    for m in ("nDCG", "AP", "RR", "P@1", "R", "Success@1", "Rprec"):
        lv = run_entry(m, qrels, run, name=name)
        assert lv.per_query == expected, (name, m)
        assert lv.mean == pytest.approx(sum(expected.values()) / len(expected), abs=TOL)


def test_empty_target_action_error():
    qrels = [("empty", "a", 0), ("full", "a", 1)]
    run = [("empty", "a", 1.0), ("full", "a", 1.0)]
    lv = run_entry("P@1", qrels, run, name="torchmetrics:error")
    assert lv.error == "ValueError: `compute` method was provided with a query with no positive target."


def test_skip_when_every_query_is_skipped_mean_is_zero():
    # not the undefined mean the reference gives under empty_query=skip: a finding, live
    import torch
    from torchmetrics.retrieval import RetrievalPrecision

    m = RetrievalPrecision(top_k=1, empty_target_action="skip")
    m.update(torch.tensor([1.0]), torch.tensor([False]), torch.zeros(1, dtype=torch.long))
    assert float(m.compute()) == 0.0
    # so the adapter refuses such a case; one non-empty query is enough to compute
    lv = run_entry("P@1", [("q", "a", 0)], [("q", "a", 1.0)], name="torchmetrics:skip")
    assert lv.error is not None and "refused by the adapter" in lv.error
    lv = run_entry("P@1", [("q", "a", 0), ("r", "a", 1)], [("q", "a", 1.0), ("r", "a", 1.0)],
                   name="torchmetrics:skip")
    assert lv.per_query == {"r": 1.0} and lv.mean == 1.0


def test_nonpositive_scores_are_not_relevant_for_ap_rr_p_r():
    # one relevant document with score 0 or below: AP, RR, P and R count it as non-relevant
    for score in (0.0, -1.0):
        for m in ("AP", "RR", "P@1", "R@1", "RR@1", "AP@1"):
            assert value(m, [1], [score]) == 0.0, (m, score)
        for m in ("Success@1", "Rprec", "nDCG"):  # these do not filter
            assert value(m, [1], [score]) == 1.0, (m, score)
    # R's denominator still counts it: two relevant, the negative-score one never found
    assert value("R", [1, 1], [1.0, -1.0]) == 0.5
    assert value("R", [1, 1], [1.0, 0.5]) == 1.0


def _library_ndcg(labels, scores, action="neg") -> float:
    """The library called directly (the adapter refuses negative labels for nDCG)."""
    import torch
    from torchmetrics.retrieval import RetrievalNormalizedDCG

    m = RetrievalNormalizedDCG(empty_target_action=action)
    m.update(torch.tensor(scores, dtype=torch.float64), torch.tensor(labels, dtype=torch.float64),
             torch.zeros(len(labels), dtype=torch.long))
    return float(m.compute())


def test_ndcg_negative_labels_finding_and_refusal():
    # Finding (smallest cases): labels [2, -2] ranked perfectly: nDCG is 1 by its formula, but
    # the query is "empty" (its labels sum to 0)
    assert _library_ndcg([2, -2], [2.0, 1.0]) == 0.0
    assert _library_ndcg([2, -2], [2.0, 1.0], action="pos") == 1.0
    # with another sum the same negative label is a negative gain, in the ideal too
    v = _library_ndcg([-1, 2], [2.0, 1.0])
    assert v == pytest.approx((-1 + 2 / L2_3) / (2 - 1 / L2_3), abs=TOL)
    # a negative ideal is not empty: it is divided through. Labels [-1, 0] tied: the group's
    # mean gain -1/2 over both discounts, against the ideal 0 - 1/log2 3: above 1
    v = _library_ndcg([-1, 0], [0.5, 0.5])
    assert v == pytest.approx((-0.5 * (1 + 1 / L2_3)) / (-1 / L2_3), abs=TOL)
    assert v > 1
    assert _library_ndcg([-1], [0.5]) == 1.0
    # so the adapter refuses a negative label in a list for nDCG, and the profile says so
    assert NDCG_PROFILE.negative_labels == "raise"
    for name in ("torchmetrics", "torchmetrics:pos"):
        lv = run_entry("nDCG", [("q", "a", -1), ("q", "b", 2)],
                       [("q", "a", 2.0), ("q", "b", 1.0)], name=name)
        assert lv.error is not None and "negative label" in lv.error
    # a negative label the library never sees (judged, not retrieved) is no reason to refuse
    lv = run_entry("nDCG", [("q", "a", 1), ("q", "z", -1)], [("q", "a", 2.0)])
    assert lv.error is None and lv.per_query == {"q": 1.0}


def test_nonpositive_scores_profile():
    from conformance.libs.torchmetrics import TorchmetricsEntry

    e = TorchmetricsEntry("t", "t")
    for fam, want in [("AP", "not_relevant"), ("RR", "not_relevant"), ("P", "not_relevant"),
                      ("R", "not_relevant"), ("Success", "rank"), ("Rprec", "rank"),
                      ("nDCG", "rank")]:
        assert e.profile(Measure(fam, None if fam == "Rprec" else 3)).nonpositive_scores == want


def test_ndcg_fractional_labels_used_as_they_are():
    assert value("nDCG", [0.5, 1.5], [2.0, 1.0]) == pytest.approx(
        (0.5 + 1.5 / L2_3) / (1.5 + 0.5 / L2_3), abs=TOL)
    assert NDCG_PROFILE.label_type == "float"


def test_binary_metrics_refuse_graded_targets():
    # why the adapter passes label >= L to them
    import torch
    from torchmetrics.retrieval import RetrievalPrecision

    m = RetrievalPrecision(top_k=1)
    with pytest.raises(ValueError, match="binary"):
        m.update(torch.tensor([1.0]), torch.tensor([2]), torch.zeros(1, dtype=torch.long))
    assert value("P(rel=2)@2", [1, 2], [2.0, 1.0]) == 0.5


def test_precision_k_beyond_the_list():
    assert value("P@5", [1, 0], [2.0, 1.0]) == pytest.approx(1 / 5, abs=TOL)
    assert value("P@5", [1, 0], [2.0, 1.0], name="torchmetrics:adaptive_k") == pytest.approx(1 / 2, abs=TOL)
    assert PROFILE.k_beyond_list == "k"


def test_ap_divides_by_relevant_found_in_the_top_k():
    # relevant at rank 2 and 3: AP@2 = (1/2) / 1
    assert value("AP@2", [0, 1, 1], [3.0, 2.0, 1.0]) == pytest.approx(0.5, abs=TOL)
    assert value("AP", [0, 1, 1], [3.0, 2.0, 1.0]) == pytest.approx((1 / 2 + 2 / 3) / 2, abs=TOL)
    assert PROFILE.ap_denominator == "retrieved_relevant"


def test_rr_honours_k():
    assert value("RR@1", [0, 1], [2.0, 1.0]) == 0.0
    assert value("RR@2", [0, 1], [2.0, 1.0]) == pytest.approx(0.5, abs=TOL)


def test_query_set_is_run_and_qrels():
    qrels = [("both", "a", 1), ("qrels_only", "a", 1)]
    run = [("both", "a", 1.0), ("run_only", "a", 1.0)]
    assert run_entry("P@1", qrels, run).per_query == {"both": 1.0}


def test_supports():
    e = entry("torchmetrics")
    yes = ["nDCG", "nDCG@10", "AP", "AP@10", "RR", "RR@10", "P@5", "R", "R@5", "Success",
           "Success@5", "Rprec", "P(rel=2)@5"]
    no = ["DCG@5", "F1@5", "NumQ", "nDCG(gain=exponential)@5", "P(k_beyond_list=min_k_n)@5",
          "P(rel=0)@5", "ndcg@10-l2"]
    assert [n for n in yes if not e.supports(parse_measure(n))] == []
    assert [n for n in no if e.supports(parse_measure(n))] == []
    assert entry("torchmetrics:adaptive_k").supports(parse_measure("P@5"))
    assert not entry("torchmetrics:adaptive_k").supports(parse_measure("R@5"))


def test_recall_at_fixed_precision_at_the_threshold_depends_on_the_query_order():
    """A finding, live: RetrievalRecallAtFixedPrecision averages P@j in float32, so a mean
    precision exactly at min_precision counts or not by the order the queries are summed in.
    Four lists of six documents, relevant at ranks {1, 6}, {1, 2, 3, 6}, {1, 2, 3, 4, 6} and
    {1}: by hand, mean P@j = 1, 6/8, 8/12, 9/16, 9/20, 12/24 = 1/2; mean R@4 = (1/2 + 3/4 + 4/5
    + 1) / 4 = 0.7625, mean R@6 = 1. Exactly, j = 6 reaches 1/2 and the answer is 1; the library
    gives 0.7625 in this order and 1 in reverse. The adapter refuses such an input, saying why."""
    import torch
    from torchmetrics.retrieval import RetrievalRecallAtFixedPrecision

    lists = [[1, 0, 0, 0, 0, 1], [1, 1, 1, 0, 0, 1], [1, 1, 1, 1, 0, 1], [1, 0, 0, 0, 0, 0]]

    def library(order):
        rows = [lists[i] for i in order]
        preds = torch.tensor([6.0 - r for t in rows for r in range(6)])
        target = torch.tensor([x for t in rows for x in t]).bool()
        indexes = torch.tensor([q for q, t in enumerate(rows) for _ in t])
        metric = RetrievalRecallAtFixedPrecision(min_precision=0.5, max_k=6)
        return float(metric(preds, target, indexes=indexes)[0])

    assert library([0, 1, 2, 3]) == pytest.approx(0.7625, abs=1e-6)
    assert library([3, 2, 1, 0]) == 1.0
    qrels = [(f"q{q}", f"d{r}", 1) for q, t in enumerate(lists) for r, x in enumerate(t) if x]
    run = [(f"q{q}", f"d{r}", 6.0 - r) for q, t in enumerate(lists) for r in range(6)]
    m = Measure("RecallAtPrecision", 6, params=(("min_precision", 0.5),))
    lv = run_entry(m, qrels, run)
    assert lv.error.startswith("refused by the adapter: torchmetrics averages P@j")
    assert "mean P@6 here is 0.5" in lv.error
    # without the third list, mean P@6 is 7/18, off the threshold: computed
    far = [(q, d, s) for q, d, s in run if q != "q3"]
    lv = run_entry(m, [r for r in qrels if r[0] != "q3"], far)
    assert lv.error is None
