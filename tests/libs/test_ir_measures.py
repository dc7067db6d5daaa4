"""ir_measures through its adapter, live: published numbers, provider routing, every profile fact.

Expected values are numbers the libraries publish
(documentation examples, cited where used) or hand computation (written
out below), never the reference implementation. Each quirk the profiles in
``conformance/libs/ir_measures.py`` rely on has a test here, so a release that changes it fails.
"""

from __future__ import annotations

import math

import pandas
import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.libs.ir_measures import (
    GDEVAL_PROFILE, MSMARCO_PROFILE, PYTREC_EVAL_PROFILE, declared_provider, live_provider,
    measure_text,
)
from conformance.measures import Measure, parse_measure
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("ir_measures")

L2_3 = math.log2(3)


def run_entry(m: Measure | str, qrels: list, run: list) -> LibraryValues:
    return call("ir_measures", m, qrels, run)


def value(m, labels, scores, qid="q1") -> float:
    return only_value(run_entry(m, *one_list(labels, scores, qid)))


GRADED = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
SCORES_10_TO_1 = [float(10 - i) for i in range(10)]


# ---- published numbers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected,provider",
    [("P@5", 0.600, "pytrec_eval"), ("R@5", 0.500, "pytrec_eval"), ("RR", 1.000, "pytrec_eval"),
     ("RR@10", 1.000, "msmarco"), ("nDCG@5", 0.717, "pytrec_eval"), ("nDCG", 0.907, "pytrec_eval")],
)
def test_published_graded_list(name, expected, provider):
    lv = run_entry(name, *one_list(GRADED, SCORES_10_TO_1))
    assert lv.provider == provider
    assert round(lv.per_query["q1"], 3) == expected


def test_published_exponential_through_gdeval():
    # gdeval needs numeric query ids and prints 5 decimals: (7 + 3/log2 3 + 3/log2 5) over
    # (7 + 7/log2 3 + 3/2 + 3/log2 5 + 1/log2 6) is 0.697810...
    lv = run_entry("nDCG(gain=exponential)@5", *one_list(GRADED, SCORES_10_TO_1, qid="301"))
    assert lv.provider == "gdeval"
    exact = (7 + 3 / L2_3 + 3 / math.log2(5)) / (7 + 7 / L2_3 + 1.5 + 3 / math.log2(5) + 1 / math.log2(6))
    assert round(exact, 3) == 0.698
    assert lv.per_query == {"301": round(exact, 5)}


def test_gdeval_rounding_half_a_unit_is_within_the_tolerance():
    """A value exactly halfway between two printed ones: ERR@20 with the only relevant document
    (label 4, gdeval's largest grade) at rank 4 is (1/4) * (2^4 - 1) / 2^4 = 0.234375, printed
    0.23438. The distance, half a unit of the fifth decimal, is a hair above 5e-6 in binary,
    so the tolerance is half a unit plus the float64 one (found by the long fuzz)."""
    qrels = [("9", "d3", 4), ("9", "d16", -1)]
    run = [("9", "d13", 1.0), ("9", "d16", 0.8), ("9", "d6", 0.7165), ("9", "d3", 0.0)]
    lv = run_entry("ERR@20", qrels, run)
    assert lv.provider == "gdeval" and lv.per_query == {"9": 0.23438}
    exact = 0.25 * 15 / 16
    tol = entry("ir_measures").tolerance_for(parse_measure("ERR@20"))
    assert abs(lv.per_query["9"] - exact) > 5e-6  # binary: the halfway case lies just past 5e-6
    assert abs(lv.per_query["9"] - exact) <= tol
    assert abs(0.23439 - exact) > tol  # a value one unit further off is still a disagreement


def test_ties_at_the_top_depend_on_the_provider():
    qrels, run = [("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 1.0)]
    # pytrec_eval: docno descending puts b first
    assert run_entry("P@1", qrels, run).per_query == {"q": 1.0}
    assert run_entry("RR", qrels, run).per_query == {"q": 1.0}
    # msmarco (RR@k): doc id ascending puts a first
    lv = run_entry("RR@1", qrels, run)
    assert lv.provider == "msmarco" and lv.per_query == {"q": 0.0}
    assert MSMARCO_PROFILE.ties == "docid_asc" and PYTREC_EVAL_PROFILE.ties == "docid_desc"


def test_relevant_document_not_retrieved_judged_ideal():
    lv = run_entry(
        "nDCG@3",
        [("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)],
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
    )
    assert round(lv.per_query["q"], 4) == 0.4200


# ---- routing ---------------------------------------------------------------------------------

ROUTED = ["nDCG", "nDCG@10", "nDCG(gain=exponential)@10", "nDCG(gain=exponential)",
          "nDCG(gain='0:0,1:1,2:3')@10", "AP", "AP@10", "AP(rel=2)", "RR", "RR@10", "RR(rel=2)@10",
          "P@5", "P(rel=2)@5", "R@5", "Success@5", "Rprec", "NumQ", "NumRet", "NumRel",
          "NumRelRet", "NumRet(rel=2)",
          "Bpref", "Bpref(rel=2)", "infAP", "IPrec@0.25", "SetP", "SetR", "SetF(beta=0.5)",
          "SetAP", "SetRelP", "Judged@10", "Judged", "ERR@20", "RBP(p=0.8)", "RBP(p=0.5,rel=2)",
          "SDCG(max_rel=3)@10", "NERR8(max_rel=3)@10", "NERR9(max_rel=3)@10",
          "NERR10(max_rel=3)", "NERR11(max_rel=3)", "INST(max_rel=3)", "INSQ(max_rel=3)",
          "BPM(max_rel=3)@10"]


@pytest.mark.parametrize("name", ROUTED)
def test_declared_routing_is_the_live_routing(name):
    m = parse_measure(name)
    assert declared_provider(m) == live_provider(m) is not None


@pytest.mark.parametrize("name", ["Success", "DCG@5", "F1@5", "nDCG(relevance_threshold=2)@5",
                                  "NumRel(rel=2)", "P(k_beyond_list=min_k_n)@5", "R(rel=2)@5",
                                  # no provider for ERR without a cutoff; a level of 3 decimals
                                  "ERR", "IPrec@0.125", "RBPResid(p=0.8)", "FallOut@5"])
def test_not_offered(name):
    m = parse_measure(name)
    assert not entry("ir_measures").supports(m)


@pytest.mark.parametrize("name,expected", [
    # labels 1, 0, 1 in rank order: precision 1/1, 1/2, 2/3 at recall 1/2, 1/2, 1. Interpolated
    # precision at recall r is the highest precision at recall >= r: 1 at r = 0, 2/3 at r = 1
    ("IPrec@0", 1.0), ("iprec_at_recall_0.00", 1.0), ("IPrec@1", 2 / 3)])
def test_recall_levels_0_and_1_are_named_as_floats(name, expected):
    """ir_measures' runtime provider asserts on recall=0 or 1 read as an integer ("invalid
    param recall=0", live), which once made ``supports`` raise: the level is named as a float."""
    assert value(name, [1, 0, 1], [3.0, 2.0, 1.0]) == pytest.approx(expected, abs=1e-12)


def test_binary_gain_is_not_offered_and_does_not_raise():
    """ir_measures names gains as a label map (gains=), not a threshold: nDCG under gain=binary
    has no name there (asking once raised TypeError in ``supports``)."""
    assert not entry("ir_measures").supports(parse_measure("nDCG(gain=binary)@10"))


def test_measure_text():
    assert measure_text(parse_measure("nDCG(gain=exponential)@10")) == "nDCG(dcg='exp-log2')@10"
    assert measure_text(parse_measure("P(rel=2)@5")) == "P(rel=2)@5"
    assert measure_text(parse_measure("NumRelRet")) == "NumRet(rel=1)"
    assert measure_text(parse_measure("nDCG(gain='0:0,1:1,2:3')")) == "nDCG(gains={0:0,1:1,2:3})"


# ---- the profiles, fact by fact --------------------------------------------------------------


def test_qrels_query_missing_from_the_run_scores_zero_even_its_counts():
    qrels = [("both", "a", 1), ("qrels_only", "a", 1), ("qrels_only", "b", 1)]
    run = [("both", "a", 1.0), ("run_only", "a", 1.0)]
    for name in ("P@1", "nDCG", "AP", "RR", "RR@1", "NumQ", "NumRel", "NumRet"):
        lv = run_entry(name, qrels, run)
        assert lv.per_query == {"both": 1.0, "qrels_only": 0.0}, name
    # trec_eval -c would give qrels_only num_q 1 and num_rel 2: no axis describes the zeros yet
    assert PYTREC_EVAL_PROFILE.query_set == "qrels"


def test_pytrec_eval_provider_refuses_fractional_labels():
    lv = run_entry("P@1", [("q", "a", 1.5)], [("q", "a", 1.0)])
    assert lv.error == "TypeError: Expected relevance to be integer." and lv.provider == "pytrec_eval"
    assert PYTREC_EVAL_PROFILE.label_type == "raise"


def test_msmarco_provider_uses_fractional_labels_as_they_are():
    # 0.5 is not relevant, 1.5 is: b (0.5) first, a (1.5) second -> RR@2 = 1/2
    assert value("RR@2", [1.5, 0.5], [1.0, 2.0]) == 0.5
    assert MSMARCO_PROFILE.label_type == "float"


def test_msmarco_provider_honours_the_cutoff_in_float64():
    assert value("RR@1", [0, 1], [2.0, 1.0]) == 0.0
    assert value("RR@2", [0, 1], [2.0, 1.0]) == 0.5
    # 1 + 1e-9 stays above 1 (no float32 narrowing): the relevant d0 is first
    assert value("RR@1", [1, 0], [1.0 + 1e-9, 1.0]) == 1.0


def test_pytrec_eval_provider_narrows_scores_to_float32():
    # d0 (relevant) at 1 + 1e-9 ties d1 at 1.0 in float32; docno descending puts d1 first
    assert value("P@1", [1, 0], [1.0 + 1e-9, 1.0]) == 0.0


def test_custom_gains_remap_the_labels():
    # labels 0..3 under gains {1:1, 2:3, 3:7} are 2^rel - 1: the exponential value 0.698
    v = value("nDCG(gain='0:0,1:1,2:3,3:7')@5", GRADED, SCORES_10_TO_1)
    assert round(v, 3) == 0.698
    # a fractional gain becomes a fractional label, which pytrec_eval refuses
    lv = run_entry("nDCG(gain='1:1.5')@5", *one_list(GRADED, SCORES_10_TO_1))
    assert lv.error == "TypeError: Expected relevance to be integer."


def _ir_measures_itself(text: str, qrels: list, run: list):
    """ir_measures called directly, without the adapter (the facts behind its refusals)."""
    import ir_measures

    q, r = {}, {}
    for qid, d, lab in qrels:
        q.setdefault(qid, {})[d] = lab
    for qid, d, s in run:
        r.setdefault(qid, {})[d] = s
    return list(ir_measures.iter_calc([ir_measures.parse_measure(text)], q, r))


def test_gdeval_refuses_non_numeric_query_ids():
    import subprocess

    qrels, run = one_list(GRADED, SCORES_10_TO_1, qid="q1")
    for name in ("nDCG(gain=exponential)@5", "ERR@5"):
        lv = run_entry(name, qrels, run)
        assert lv.provider == "gdeval"
        assert lv.error == ("refused by the adapter: gdeval (the provider) dies on the query id "
                            "'q1', which is not a number")
    # the fact behind it, live: gdeval dies (exit status 25)
    with pytest.raises(subprocess.CalledProcessError):
        _ir_measures_itself("ERR@5", qrels, run)


def test_gdeval_profile_facts():
    # ties by docno descending: qrels {1:0, 2:1} tied -> "2" first -> nDCG@1 = 1
    lv = run_entry("nDCG(gain=exponential)@1", [("7", "1", 0), ("7", "2", 1)], [("7", "1", 1.0), ("7", "2", 1.0)])
    assert lv.per_query == {"7": 1.0}
    # a label above 4 (gdeval's MAX_JUDGMENT): gdeval dies, the adapter refuses
    import subprocess

    lv = run_entry("nDCG(gain=exponential)@1", [("7", "a", 5)], [("7", "a", 1.0)])
    assert lv.error.startswith("refused by the adapter: gdeval (the provider) dies on a label above 4")
    with pytest.raises(subprocess.CalledProcessError):
        _ir_measures_itself("nDCG(dcg='exp-log2')@1", [("7", "a", 5)], [("7", "a", 1.0)])
    # negative labels leave the qrels; a topic with nothing above 0 is not printed: DEFAULT 0
    lv = run_entry("nDCG(gain=exponential)@2", [("7", "a", -1), ("7", "b", 2)], [("7", "a", 2.0), ("7", "b", 1.0)])
    assert lv.per_query == {"7": round(3 / L2_3 / 3, 5)}
    lv = run_entry("nDCG(gain=exponential)@2", [("7", "a", 0)], [("7", "a", 2.0)])
    assert lv.per_query == {"7": 0.0}
    assert GDEVAL_PROFILE.ties == "docid_desc" and GDEVAL_PROFILE.negative_labels == "unjudged"


def test_ranx_route_fails_under_pandas_3():
    lv = run_entry("nDCG(gain=exponential)", *one_list(GRADED, SCORES_10_TO_1))
    assert lv.provider == "ranx"
    if int(pandas.__version__.split(".")[0]) >= 3:
        assert lv.error == "AssertionError: DataFrame Query IDs column dtype must be `object` (string)"
    else:  # pragma: no cover - before pandas 3 the route runs, under ranx's profile
        assert lv.error is None


def test_query_with_only_negative_labels_is_refused():
    # pytrec_eval's wrong count there (NumRet 0 for q9, see the trec_eval tests): refused
    qrels = [("q9", "d11", -1), ("q9", "d13", -2), ("q1", "a", 1)]
    run = [("q9", "d11", 1.0), ("q9", "x", 2.0), ("q1", "a", 1.0)]
    for m in ("NumRet", "P@1"):
        lv = run_entry(m, qrels, run)
        assert lv.error is not None and "refused by the adapter" in lv.error and "'q9'" in lv.error


def test_empty_query_zero_and_empty_qrels_nan():
    import ir_measures

    assert value("P@1", [0], [1.0]) == 0.0 and value("RR@1", [0], [1.0]) == 0.0
    # the "nan" of CONVENTIONS.md: the aggregate over no qrels query at all
    out = ir_measures.calc_aggregate([ir_measures.parse_measure("P@1")], {}, {"q": {"a": 1.0}})
    assert all(math.isnan(v) for v in out.values())


def test_trec_reader_refuses_fractional_labels():
    # CONVENTIONS.md lists ir_measures' reading under int_truncate; live, int('1.7') raises
    import ir_measures

    with pytest.raises(ValueError, match="invalid literal for int"):
        list(ir_measures.read_trec_qrels("q 0 d 1.7\n"))


def test_duplicate_listing_last_wins():
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)]
    assert run_entry("P@1", qrels, run).per_query == {"q": 0.0}
    assert run_entry("RR@1", qrels, run).per_query == {"q": 0.0}
    assert PYTREC_EVAL_PROFILE.duplicates == MSMARCO_PROFILE.duplicates == "last"


def test_library_mean_is_calc_aggregate():
    qrels = [("q1", "a", 1), ("q2", "a", 0), ("q2", "b", 1)]
    run = [("q1", "a", 1.0), ("q2", "a", 2.0), ("q2", "b", 1.0)]
    lv = run_entry("P@1", qrels, run)
    assert lv.per_query == {"q1": 1.0, "q2": 0.0} and lv.mean == 0.5
    lv = run_entry("NumRet", qrels, run)
    assert lv.mean == 3.0  # summed


def test_all_negative_query_refused_for_pytrec_eval_routes_only():
    # pytrec_eval reads past its tables on a query whose judgments are all negative (see the
    # trec_eval adapter): measures routed to it are refused; the msmarco route (RR@k) computes
    qrels = Qrels.from_records([("q1", "d1", -2), ("q2", "d1", 1)])
    run = Run.from_records([("q2", "d1", 1.0), ("q1", "d1", 1.0)])
    e = entry("ir_measures")
    out = e.evaluate(qrels, run, [Measure("nDCG"), Measure("RR", 10)])
    assert out[Measure("nDCG")].error is not None and "'q1'" in out[Measure("nDCG")].error
    assert out[Measure("RR", 10)].provider == "msmarco"
    assert out[Measure("RR", 10)].error is None and out[Measure("RR", 10)].per_query["q2"] == 1.0


def test_judged_facts():
    """The judged provider: ties by doc id ascending, a negative label is judged, divided by
    min(k, n). Live: labels {a: -1} on 3 retrieved (a, b, c, all tied): sorted a, b, c, so
    Judged@1 = 1/1; Judged@5 over the 3 retrieved = 1/3."""
    qrels = [("7", "a", -1), ("7", "z", 1)]
    run = [("7", "c", 1.0), ("7", "b", 1.0), ("7", "a", 1.0)]
    assert run_entry("Judged@1", qrels, run).per_query == {"7": 1.0}
    assert run_entry("Judged@5", qrels, run).per_query == {"7": pytest.approx(1 / 3, abs=1e-12)}


def test_cwl_rbp_reads_1000_ranks():
    """cwl_eval normalises RBP's weights over 1000 ranks: RBP(p=0.999) of one relevant document
    at rank 1 is (1 - p) / (1 - p^1000), not 1 - p (live)."""
    lv = run_entry("RBP(p=0.999)", [("7", "a", 1)], [("7", "a", 1.0)])
    assert lv.provider == "cwl_eval"
    assert lv.per_query["7"] == pytest.approx(0.001 / (1 - 0.999 ** 1000), rel=1e-12)
    assert lv.per_query["7"] != pytest.approx(0.001, rel=1e-6)
