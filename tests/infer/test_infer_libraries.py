"""conformance.infer on the libraries' own functions, called live through the wrappers of
tests/support/library_wrappers.py: the inferred set must hold the entry's declared profile."""

import pytest

import library_wrappers as lw
from conformance.infer import infer
from conformance.measures import parse_measure
from conformance.profiles import profile

NDCG10 = parse_measure("nDCG@10")


@pytest.mark.parametrize("fn, calling, entry", [
    pytest.param(lw.sklearn_ndcg, "arrays", "sklearn", marks=pytest.mark.requires_library("sklearn")),
    pytest.param(lw.pytrec_eval_ndcg, "run", "trec_eval", marks=pytest.mark.requires_library("trec_eval")),
    pytest.param(lw.ranx_ndcg, "run", "ranx", marks=pytest.mark.requires_library("ranx")),
])
def test_the_inferred_set_holds_the_declared_profile(fn, calling, entry):
    found = infer(fn, NDCG10, calling)
    assert found.calls <= 100
    assert found.contains(NDCG10.conventions(profile(entry, NDCG10))), found.render()
    assert entry in found.consistent_libraries
