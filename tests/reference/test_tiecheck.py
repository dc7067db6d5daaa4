"""The tie check (``reference.tiecheck``, ``evaluate(..., tie_check=True)``) against the
evaluation it replaces: per query, whether the range under ``ties=unspecified`` is more than
one value (the oracle: that evaluation itself, with the same other conventions).

Generated cases (``tests/support/strategies.py``) draw scores from a small pool, so ties are
common; the measures cover every family the check decides by a rule (nDCG, DCG, AP, RR, P, R,
NumRelRet, Success) and some it settles by the generic test or leaves to the evaluation, and
the conventions vary the axes the rules depend on.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from conformance.errors import ConformanceError
from conformance.measures import parse_measures
from conformance.profiles import profile
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from tests.support.strategies import cases

MEASURES = parse_measures("nDCG,nDCG@3,DCG@5,AP,AP@3,RR,RR@2,P@1,P@3,R@5,NumRelRet,Success@2,"
                          "Bpref,ERR@5,Rprec,infAP,Judged@5,Hole@3")
VARIATIONS = [
    {},
    {"ties": "input_order"},
    {"ties": "average"},
    {"ties": "group_last"},  # a rank rule: the check still answers for the two orders
    {"ties": "group_last", "depth": 4},
    {"depth": 4},
    {"depth": 2, "ties": "docid_asc"},
    {"relevance_threshold": 2},
    {"relevance_threshold": 0},
    {"gain": "exponential"},
    {"discount": "jarvelin"},
    {"ideal": "retrieved"},
    {"rr_cutoff": "honour"},
    {"ap_denominator": "min_k_relevant"},
    {"score_precision": "float64"},
    {"nonpositive_scores": "not_relevant"},
    {"negative_labels": "keep"},
    {"empty_query": "skip"},
]


def _differ(lo, hi):
    return ~((lo == hi) | (np.isnan(lo) & np.isnan(hi)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(negative=True, fractional=True, max_docs=12),
       variation=st.sampled_from(VARIATIONS))
def test_the_check_names_the_queries_whose_range_is_more_than_one_value(case, variation):
    qrels, run = case.qrels, case.run
    prep = Prepared(qrels, run)
    base = profile("trec_eval", MEASURES[0]).replace(**{"label_type": "float", **variation})
    for m in MEASURES:
        conv = m.conventions(base)
        try:
            ev = evaluate(prep, None, [m], conv, tie_check=True)
        except ConformanceError:
            continue
        try:
            full = evaluate(prep, None, [m], conv.replace(ties="unspecified"))
        except ConformanceError:
            continue  # only ties=unspecified can say so, and it refuses
        expected = _differ(full.per_query[m], full.upper[m])
        decided = ev.tie_changed[m]
        if decided is None:
            continue  # left to the evaluation (statement.tied_queries makes it)
        event("decided, some query changed" if expected.any() else "decided, none changed")
        note(f"{m.text} under {variation}: decided {decided.tolist()}, expected {expected.tolist()}")
        assert np.array_equal(decided, expected), case.dump()


def test_a_decision_is_made_for_the_default_measures_on_a_tie():
    # a relevant and a non-relevant document tied at the top: RR and P@1 change, P@2 does not
    from conformance.io.data import Qrels, Run

    qrels = Qrels.from_records([("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 1)])
    run = Run.from_records([("q1", "a", 1.0), ("q1", "b", 1.0), ("q2", "c", 2.0), ("q2", "d", 1.0)])
    ms = parse_measures("RR,P@1,P@2,nDCG@10,AP")
    ev = evaluate(qrels, run, ms, profile("trec_eval", ms[0]), tie_check=True)
    got = {m.text: ev.tie_changed[m].tolist() for m in ms}
    assert got == {"RR": [True, False], "P@1": [True, False], "P@2": [False, False],
                   "nDCG@10": [True, False], "AP": [True, False]}


@pytest.mark.parametrize("text", ["Bpref", "ERR@5"])
def test_a_family_without_a_rule_is_left_to_the_evaluation_only_where_labels_tie(text):
    from conformance.io.data import Qrels, Run

    m = parse_measures(text)[0]
    qrels = Qrels.from_records([("q1", "a", 1), ("q1", "b", 0)])
    untied = Run.from_records([("q1", "a", 2.0), ("q1", "b", 1.0)])
    same_labels = Run.from_records([("q1", "a", 2.0), ("q1", "c", 1.0), ("q1", "d", 1.0)])
    mixed = Run.from_records([("q1", "a", 1.0), ("q1", "b", 1.0)])
    conv = profile("trec_eval", m)
    assert evaluate(qrels, untied, [m], conv, tie_check=True).tie_changed[m].tolist() == [False]
    # c and d are unjudged alike: both end orders are one order
    assert evaluate(qrels, same_labels, [m], conv, tie_check=True).tie_changed[m].tolist() == [False]
    assert evaluate(qrels, mixed, [m], conv, tie_check=True).tie_changed[m] is None
