"""ragas, live, through its adapter: each profile fact on a small case.

Expected values are hand computation (arithmetic in the comments), never the reference.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from libcall import call

pytestmark = pytest.mark.requires_library("ragas")


def test_precision_divides_by_the_distinct_documents_of_the_top_k():
    # ranks: a (3.0, relevant), b (2.0), a again (1.0); top 3 as a set {a, b}: 1 / 2
    qrels = [("q", "a", 1), ("q", "c", 1)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)]
    assert call("ragas", "P@3", qrels, run).per_query == {"q": 1 / 2}
    # top 1 = {a}: 1 / 1; recall: {a} of {a, c}: 1 / 2, the repeat counted once
    assert call("ragas", "P@1", qrels, run).per_query == {"q": 1 / 1}
    assert call("ragas", "R", qrels, run).per_query == {"q": 1 / 2}


def test_ties_stay_in_listing_order_in_the_top_k():
    # a and b tied at 1.0, listed b then a, a relevant: top 1 = {b}: P@1 = 0
    qrels = [("q", "a", 1)]
    run = [("q", "b", 1.0), ("q", "a", 1.0)]
    assert call("ragas", "P@1", qrels, run).per_query == {"q": 0.0}


def test_a_query_without_relevant_documents_is_zero_for_precision_and_nan_for_recall():
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics import IDBasedContextRecall
    # the library itself: an empty reference gives NaN
    sample = SingleTurnSample(retrieved_context_ids=["a"], reference_context_ids=[])
    assert math.isnan(IDBasedContextRecall().single_turn_score(sample))
    qrels, run = [("q", "a", 0)], [("q", "a", 1.0)]
    assert call("ragas", "P@1", qrels, run).per_query == {"q": 0.0}
    assert call("ragas", "R", qrels, run).per_query == {}  # NaN: no value to report


def test_the_adapter_opts_out_of_ragas_usage_analytics_unless_the_user_chose():
    # ragas posts usage events unless RAGAS_DO_NOT_TRACK is "true"; its own check decides
    code = ("import conformance.libs.ragas, ragas._analytics as a; "
            "print(a.do_not_track())")
    env = {k: v for k, v in os.environ.items() if k != "RAGAS_DO_NOT_TRACK"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    env["RAGAS_DO_NOT_TRACK"] = "false"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
