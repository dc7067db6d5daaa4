"""conformance.infer on metric functions written for the tests (tests/support/metrics_under_test.py):
each follows known conventions, stated by hand below, or has a bug no convention explains."""

import math

import pytest

import metrics_under_test as mt
from conformance.infer import infer
from conformance.infer.search import conventions
from conformance.measures import parse_measure
from conformance.profiles import profile
from conformance.testing import assert_conforms


def _profile(name, measure):
    m = parse_measure(measure)
    return m.conventions(profile(name, m))


def test_trec_eval_ndcg_is_inferred_as_trec_eval():
    found = infer(mt.trec_ndcg, "nDCG@10", "ranked")
    assert found.calls <= 100
    assert found.contains(_profile("trec_eval", "nDCG@10"))
    assert "trec_eval" in found.consistent_libraries
    # exponential gain, an ideal from the retrieved documents, labels read as floats: not it
    assert not found.contains(_profile("trec_eval", "nDCG@10").replace(gain="exponential"))
    assert not found.contains(_profile("trec_eval", "nDCG@10").replace(ideal="retrieved"))
    assert not found.contains(_profile("trec_eval", "nDCG@10").replace(label_type="float"))
    assert found.finding is None


def test_tutorial_ap_divides_by_the_relevant_documents_retrieved():
    found = infer(mt.tutorial_ap, "AP", "ranked")
    assert found.calls <= 100
    assert found.contains(conventions(ap_denominator="retrieved_relevant"))
    assert not found.contains(conventions(ap_denominator="relevant"))
    assert not found.contains(conventions(ap_denominator="min_k_relevant"))
    assert not found.contains(_profile("trec_eval", "AP"))


def test_precision_over_the_list_length_is_min_k_n():
    found = infer(mt.precision_over_list, "P@10", "ranked")
    assert found.calls <= 100
    assert found.contains(conventions(k_beyond_list="min_k_n"))
    assert not found.contains(conventions(k_beyond_list="k"))
    assert "trec_eval" not in found.consistent_libraries


def test_exponential_ndcg_with_input_order_ties():
    found = infer(mt.exp_ndcg_input_order, "nDCG@10", "arrays")
    assert found.calls <= 100
    exp = conventions(gain="exponential", negative_labels="keep")
    assert found.contains(exp.replace(ties="input_order"))
    assert not found.contains(exp.replace(ties="reverse_input"))
    assert not found.contains(exp.replace(ties="average"))
    assert not found.contains(exp.replace(ties="input_order", gain="linear"))


def test_a_bug_no_convention_explains_gets_its_smallest_case():
    found = infer(mt.buggy_ndcg, "nDCG@10", "ranked")
    assert found.calls <= 100
    assert found.consistent.size == 0
    f = found.finding
    assert f is not None
    # shrunk to one retrieved relevant document: DCG 1/log2(3) over an ideal of 1/log2(2)
    assert f.case.size == 2
    assert f.observed.value == pytest.approx(1 / math.log2(3))
    assert "finding" in found.render()


def test_a_failure_on_a_case_is_recorded_as_behaviour():
    found = infer(mt.trec_ndcg, "nDCG@10", "ranked")
    failed = [s for s in found.steps if s.observed.kind == "error"]
    assert failed and "labels must be integers" in failed[0].observed.text


def test_the_same_seed_gives_the_same_answer():
    a = infer(mt.precision_over_list, "P@10", "ranked").dumps()
    b = infer(mt.precision_over_list, "P@10", "ranked").dumps()
    assert a == b


def test_assert_conforms_passes_a_conforming_function():
    assert_conforms(mt.trec_ndcg, "nDCG@10", profile="trec_eval")
    assert_conforms(mt.precision_over_list, "P@10", profile="torchmetrics:adaptive_k")


def test_assert_conforms_names_the_convention_broken():
    with pytest.raises(AssertionError) as info:
        assert_conforms(mt.tutorial_ap, "AP", profile="trec_eval", label_type="float")
    assert "ap_denominator=retrieved_relevant" in str(info.value)


@pytest.mark.xfail(raises=AssertionError, strict=True,
                   reason="the buggy nDCG disagrees with trec_eval on a one-document case")
def test_assert_conforms_fails_on_the_buggy_function():
    assert_conforms(mt.buggy_ndcg, "nDCG@10", profile="trec_eval", label_type="float")


def test_assert_conforms_reports_the_smallest_case():
    with pytest.raises(AssertionError) as info:
        assert_conforms(mt.buggy_ndcg, "nDCG@10", profile="trec_eval", label_type="float")
    text = str(info.value)
    assert "0.63093" in text and "rel 1" in text
