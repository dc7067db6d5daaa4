"""MTEB's retrieval metric functions, live, through its adapter: each profile fact on a small case.

Expected values are hand computation (arithmetic in the comments), never the reference.
"""

from __future__ import annotations

import math

import pytest

from conformance.libs.mteb import _tie_rule
from libcall import call

pytestmark = pytest.mark.requires_library("mteb")


def test_own_mrr_breaks_ties_as_the_installed_version_does():
    # a and b tied at 1.0, listed a then b, a relevant: MRR@1 = 1 in insertion order, 0 when
    # the doc id descending puts b first (mteb's fix of issue #5092)
    lv = call("mteb", "RR@1", [("q", "a", 1)], [("q", "a", 1.0), ("q", "b", 1.0)])
    assert lv.mean == (1.0 if _tie_rule() == "input_order" else 0.0)
    import mteb
    from packaging.version import Version
    if Version(mteb.__version__) >= Version("2.26"):  # the installed one has the fix
        assert _tie_rule() == "docid_desc"


def test_pytrec_measures_round_to_five_places_and_mrr_does_not():
    # q1: relevant a at rank 3 -> P@3 = 1/3, RR@3 = 1/3; one query: the mean is the value
    qrels = [("q1", "a", 1)]
    run = [("q1", "x", 3.0), ("q1", "y", 2.0), ("q1", "a", 1.0)]
    assert call("mteb", "P@3", qrels, run).mean == 0.33333
    assert call("mteb", "RR@3", qrels, run).mean == 1 / 3


def test_a_run_query_without_judgments_fails_the_call():
    lv = call("mteb", "nDCG@3", [("q1", "a", 1)], [("q1", "a", 1.0), ("q2", "b", 1.0)])
    assert lv.error is not None and "KeyError" in lv.error


def test_documents_named_like_their_query_are_kept():
    # q1 retrieves q1 (relevant) first: R@1 = 1/2 (BEIR's default would drop it and give 0)
    lv = call("mteb", "R@1", [("q1", "q1", 1), ("q1", "d1", 1)], [("q1", "q1", 2.0), ("q1", "d1", 1.0)])
    assert lv.mean == 0.5


def test_recall_cap_and_hole():
    # q1: relevant a, b, c; top 2 = x (unjudged everywhere), a -> Rcap@2 = 1 / min(3, 2) = 0.5;
    # Hole@2 = 1 / 2; q2: judged nothing relevant -> recall_cap None (NaN)
    qrels = [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 1), ("q2", "d", 0)]
    run = [("q1", "x", 2.0), ("q1", "a", 1.0), ("q2", "d", 1.0)]
    rcap = call("mteb:metrics", "Rcap@2", qrels, run)
    assert rcap.per_query["q1"] == 0.5 and math.isnan(rcap.per_query["q2"])
    assert call("mteb:metrics", "Hole@2", qrels, run).per_query == {"q1": 0.5, "q2": 0.0}


def test_hole_scores_a_run_query_without_judgments():
    # the smallest case of the map: qrels {q1: {d1: 1}}, run {q1: {d2: 1.0}, q2: {d3: 1.0}};
    # d2 and d3 are named by no judgment: Hole@1 = 1 for each run query
    lv = call("mteb:metrics", "Hole@1", [("q1", "d1", 1)], [("q1", "d2", 1.0), ("q2", "d3", 1.0)])
    assert lv.per_query == {"q1": 1.0, "q2": 1.0}
