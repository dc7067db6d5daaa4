"""Reading measure names: ir_measures, trec_eval and ranx syntax -> Measure.

Expected Measures are written out by hand from each library's documented meaning of the name.
Where a library can read the name itself (ir_measures' two parsers), the test also asks it, live,
and compares its reading with ours; where a name's meaning was settled by running ranx (``-lN``,
``hits``), a live ranx call pins the fact the parser relies on.
"""

from __future__ import annotations

import importlib
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.conventions import AXES, TREC_EVAL, ConventionError
from conformance.measures import FAMILIES, KNOWN_NAMES, Measure, MeasureError, parse_measure, parse_measures

EXP = (("gain", "exponential"),)


def M(family, cutoff=None, overrides=(), alpha=None, params=()):
    """A measure; ``alpha``: T's parameter, the first of its params."""
    given = ((("alpha", alpha),) if alpha is not None else ()) + tuple(params)
    return Measure(family, cutoff, tuple(overrides), params=given)


# --- the three syntaxes -------------------------------------------------------------------

IR_MEASURES = [
    ("nDCG@10", M("nDCG", 10)),
    ("nDCG", M("nDCG")),
    ("NDCG@10", M("nDCG", 10)),
    ("nDCG(dcg='exp-log2')@10", M("nDCG", 10, EXP)),
    ('nDCG(dcg="exp-log2")@10', M("nDCG", 10, EXP)),
    ("nDCG(dcg='log2')@10", M("nDCG", 10)),  # ir_measures' default formulation: no override
    ("nDCG(cutoff=10)", M("nDCG", 10)),
    ("nDCG(gains={0:0,1:1,2:3})@5", M("nDCG", 5, [("gain", "0:0,1:1,2:3")])),
    ("P@5", M("P", 5)),
    ("P(rel=2)@5", M("P", 5, [("relevance_threshold", 2)])),
    ("Precision@5", M("P", 5)),
    ("R@100", M("R", 100)),
    ("Recall@100", M("R", 100)),
    ("AP", M("AP")),
    ("MAP", M("AP")),
    ("AP@10", M("AP", 10)),
    ("AP(rel=2)", M("AP", None, [("relevance_threshold", 2)])),
    ("RR", M("RR")),
    ("MRR@10", M("RR", 10)),
    ("RR@10", M("RR", 10)),
    ("RR(rel=2)", M("RR", None, [("relevance_threshold", 2)])),
    ("Rprec", M("Rprec")),
    ("Success@1", M("Success", 1)),
    ("NumQ", M("NumQ")),
    ("NumRet", M("NumRet")),
    ("NumRel", M("NumRel")),
    ("NumRelRet", M("NumRelRet")),
    ("NumRet(rel=2)", M("NumRelRet", None, [("relevance_threshold", 2)])),  # ir_measures' own alias
    ("DCG@10", M("DCG", 10)),
    ("F1@10", M("F1", 10)),
    ("T(alpha=0.5)@10", M("T", 10, alpha=0.5)),
    ("T(alpha=0)@3", M("T", 3, alpha=0.0)),
    ("Fe@20", M("Fe", 20)),
    # conformance's own name (Elliot's MAP@k); MAP@k stays average precision
    ("MeanP@10", M("MeanP", 10)),
    ("MeanP(empty_query=skip)@5", M("MeanP", 5, [("empty_query", "skip")])),
    ("MAP@10", M("AP", 10)),
    # any axis, validated by the conventions vocabulary, stored in axis order whatever the spelling
    ("nDCG(gain=exponential,discount=jarvelin)@10", M("nDCG", 10, [("gain", "exponential"), ("discount", "jarvelin")])),
    ("nDCG(discount=jarvelin, gain=exponential)@10", M("nDCG", 10, [("gain", "exponential"), ("discount", "jarvelin")])),
    ("nDCG(discount=jarvelin:3)@10", M("nDCG", 10, [("discount", "jarvelin:3")])),
    ("nDCG(gain='2:3,0:0,1:1')@10", M("nDCG", 10, [("gain", "0:0,1:1,2:3")])),
    ("P(k_beyond_list=min_k_n)@10", M("P", 10, [("k_beyond_list", "min_k_n")])),
    ("AP(ap_denominator=min_k_relevant)@10", M("AP", 10, [("ap_denominator", "min_k_relevant")])),
    ("nDCG(depth=none)", M("nDCG", None, [("depth", None)])),
    ("RR(ties=unspecified,rel=2)@10", M("RR", 10, [("ties", "unspecified"), ("relevance_threshold", 2)])),
    ("  nDCG@10  ", M("nDCG", 10)),
    ("P@1000000000", M("P", 1000000000)),
    ("P@007", M("P", 7)),
]

TREC_EVAL_NAMES = [
    ("ndcg_cut_10", M("nDCG", 10)),
    ("ndcg_cut.10", M("nDCG", 10)),
    ("ndcg", M("nDCG")),
    ("ndcg.1=3,2=9", M("nDCG", None, [("gain", "1:3,2:9")])),
    ("ndcg.1=3,2=9,4=4.5", M("nDCG", None, [("gain", "1:3,2:9,4:4.5")])),
    ("map", M("AP")),
    ("map_cut_10", M("AP", 10)),
    ("map_cut.100", M("AP", 100)),
    ("recip_rank", M("RR")),
    ("P_5", M("P", 5)),
    ("P.5", M("P", 5)),
    ("recall_100", M("R", 100)),
    ("recall.100", M("R", 100)),
    ("Rprec", M("Rprec")),
    ("success_1", M("Success", 1)),
    ("success.5", M("Success", 5)),
    ("num_q", M("NumQ")),
    ("num_ret", M("NumRet")),
    ("num_rel", M("NumRel")),
    ("num_rel_ret", M("NumRelRet")),
]

RANX_NAMES = [
    ("ndcg@10", M("nDCG", 10)),
    ("ndcg_burges@10", M("nDCG", 10, EXP)),
    ("map@100", M("AP", 100)),
    ("map", M("AP")),
    ("mrr", M("RR")),
    ("mrr@10", M("RR", 10)),
    ("precision@5", M("P", 5)),
    ("recall@5", M("R", 5)),
    ("hit_rate@5", M("Success", 5)),
    ("hit_rate", M("Success")),
    ("f1@5", M("F1", 5)),
    ("r-precision", M("Rprec")),
    # the bare names are over the whole list: k = n (ranx's fix_k), the set measures
    ("precision", M("P")),
    ("f1", M("F1")),
    ("hits@3", M("Hits", 3)),
    ("hits", M("Hits")),
    ("bpref", M("Bpref")),
    ("rbp.95", M("RBP", params=[("p", 0.95)])),
    ("rbp.8-l2", M("RBP", None, [("relevance_threshold", 2)], params=[("p", 0.8)])),
    ("dcg@10", M("DCG", 10)),
    ("dcg_burges@10", M("DCG", 10, EXP)),
    # -lN: the threshold for every measure, and for DCG/nDCG also the gains (see test below)
    ("ndcg@10-l2", M("nDCG", 10, [("relevance_threshold", 2), ("threshold_scope", "graded")])),
    ("ndcg_burges@10-l2", M("nDCG", 10, [("gain", "exponential"), ("relevance_threshold", 2), ("threshold_scope", "graded")])),
    ("dcg@5-l3", M("DCG", 5, [("relevance_threshold", 3), ("threshold_scope", "graded")])),
    ("ndcg-l2", M("nDCG", None, [("relevance_threshold", 2), ("threshold_scope", "graded")])),
    ("precision@5-l2", M("P", 5, [("relevance_threshold", 2)])),
    ("map@100-l2", M("AP", 100, [("relevance_threshold", 2)])),
    ("mrr-l3", M("RR", None, [("relevance_threshold", 3)])),
    ("r-precision-l2", M("Rprec", None, [("relevance_threshold", 2)])),
    ("hit_rate@1-l2", M("Success", 1, [("relevance_threshold", 2)])),
]


@pytest.mark.parametrize("text,expected", IR_MEASURES + TREC_EVAL_NAMES + RANX_NAMES)
def test_name_reads_as(text, expected):
    m = parse_measure(text)
    assert m == expected
    assert (m.family, m.cutoff, m.overrides, m.params) == (
        expected.family, expected.cutoff, expected.overrides, expected.params
    )
    assert m.text == text.strip()  # the user's spelling, for output keys


def test_equality_ignores_spelling():
    spellings = ["nDCG@10", "NDCG@10", "ndcg_cut_10", "ndcg_cut.10", "ndcg@10", "nDCG(dcg='log2')@10"]
    measures = [parse_measure(t) for t in spellings]
    assert len(set(measures)) == 1
    assert [m.text for m in measures] == spellings
    assert str(measures[2]) == "ndcg_cut_10"
    # a name that fixes an axis is another measure
    assert parse_measure("ndcg_burges@10") == parse_measure("nDCG(dcg='exp-log2')@10")
    assert parse_measure("ndcg_burges@10") != parse_measure("ndcg@10")
    assert parse_measure("P(rel=2)@5") == parse_measure("precision@5-l2")


def test_overrides_apply_over_the_profile():
    m = parse_measure("ndcg@10-l2")
    conv = m.conventions(TREC_EVAL)
    assert (conv.relevance_threshold, conv.threshold_scope) == (2, "graded")
    assert conv.differing_axes(TREC_EVAL) == ["relevance_threshold", "threshold_scope"]
    assert parse_measure("nDCG@10").conventions(TREC_EVAL) is TREC_EVAL
    assert parse_measure("ndcg.1=3,2=9").conventions(TREC_EVAL).gain == "1:3,2:9"


# --- ranx facts the parser relies on, checked live ----------------------------------------


@pytest.mark.requires_library("ranx")
def test_ranx_level_suffix_filters_ndcg_gains_and_hits_is_a_count():
    """ranx 0.3.21 ``metric-lN`` drops judgments below N before anything is computed, so for
    nDCG the lower labels lose their gain and leave the ideal (threshold_scope=graded); and
    ``hits@k`` is a count, not a rate, which is why the parser refuses it."""
    ranx = importlib.import_module("ranx")
    qrels = ranx.Qrels({"q1": {"a": 1, "b": 2, "c": 3, "d": 1}})
    run = ranx.Run({"q1": {"a": 4.0, "b": 3.0, "c": 2.0, "e": 1.0}})
    got = ranx.evaluate(qrels, run, ["ndcg@3-l2", "ndcg@3", "hits@3"])
    # Labels by rank: a=1, b=2, c=3. With -l2 (graded): gains 0, 2, 3; ideal 3, 2.
    #   DCG = 2/log2(3) + 3/log2(4) = 1.261860 + 1.5 = 2.761860
    #   IDCG = 3/log2(2) + 2/log2(3) = 3 + 1.261860 = 4.261860 -> 0.648041
    graded = (2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3))
    # Threshold for binary measures only: gains 1, 2, 3; ideal 3, 2, 1 (a, d, b, c judged >= 1).
    #   DCG = 1 + 1.261860 + 1.5 = 3.761860; IDCG = 3 + 1.261860 + 0.5 = 4.761860 -> 0.789998
    binary = (1 + 2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3) + 1 / 2)
    assert got["ndcg@3-l2"] == pytest.approx(graded, abs=1e-12)
    assert got["ndcg@3"] == pytest.approx(binary, abs=1e-12)
    assert got["hits@3"] == 3.0  # three relevant documents in the top 3: a count
    assert parse_measure("hits@3").family == "Hits" and not FAMILIES["Hits"].bounded


# --- ir_measures' own parsers agree with ours ---------------------------------------------


def _from_ir_measures(m) -> tuple:
    params = dict(m.params)
    family = m.NAME
    if family == "NumRet" and "rel" in params:
        family = "NumRelRet"
        if params["rel"] == 1:  # ir_measures' NumRelRet is NumRet(rel=1), its default level
            params.pop("rel")
    over = {}
    if params.get("dcg") == "exp-log2":
        over["gain"] = "exponential"
    if "rel" in params:
        over["relevance_threshold"] = params["rel"]
    return family, params.get("cutoff"), over


@pytest.mark.parametrize(
    "text",
    ["nDCG@10", "nDCG", "NDCG@10", "nDCG(dcg='exp-log2')@10", "P@5", "P(rel=2)@5", "R@100", "AP",
     "AP@10", "AP(rel=2)", "RR", "RR@10", "RR(rel=2)", "MAP@10", "MRR", "Rprec", "Success@1",
     "NumQ", "NumRet", "NumRel", "NumRelRet", "NumRet(rel=2)", "nDCG(cutoff=10)"],
)
@pytest.mark.requires_library("ir_measures")
def test_ir_measures_reads_its_names_as_we_do(text):
    ir_measures = importlib.import_module("ir_measures")
    theirs = _from_ir_measures(ir_measures.parse_measure(text))
    ours = parse_measure(text)
    assert (ours.family, ours.cutoff, dict(ours.overrides)) == theirs


@pytest.mark.parametrize(
    "text",
    ["ndcg_cut_10", "ndcg_cut.10", "ndcg_cut.5,10", "ndcg", "map", "map_cut_10", "map_cut.5,100",
     "recip_rank", "P_5", "P.5", "P.5,10,20", "recall_100", "recall.20,2000", "Rprec", "success_1",
     "success.2,5,20", "num_q", "num_ret", "num_rel", "num_rel_ret"],
)
@pytest.mark.requires_library("ir_measures")
def test_ir_measures_reads_trec_eval_names_as_we_do(text):
    ir_measures = importlib.import_module("ir_measures")
    theirs = [_from_ir_measures(m) for m in ir_measures.parse_trec_measure(text)]
    ours = [(m.family, m.cutoff, dict(m.overrides)) for m in parse_measures(text)]
    assert ours == theirs


# --- lists ----------------------------------------------------------------------------------


def test_list_splits_at_top_level_commas_only():
    got = parse_measures("nDCG@10,AP,RR,P@10")
    assert got == [M("nDCG", 10), M("AP"), M("RR"), M("P", 10)]
    assert [m.text for m in got] == ["nDCG@10", "AP", "RR", "P@10"]
    got = parse_measures("nDCG(gain=exponential,discount=jarvelin)@10, nDCG(dcg='exp-log2')@5 ,RR")
    assert [m.text for m in got] == [
        "nDCG(gain=exponential,discount=jarvelin)@10", "nDCG(dcg='exp-log2')@5", "RR"
    ]
    got = parse_measures("nDCG(gain='0:0,1:1,2:3')@10,nDCG(gains={0:0,1:2})@10,P@5")
    assert got == [
        M("nDCG", 10, [("gain", "0:0,1:1,2:3")]), M("nDCG", 10, [("gain", "0:0,1:2")]), M("P", 5)
    ]


def test_trec_eval_parameter_lists_expand_into_measures():
    got = parse_measures("ndcg_cut.5,10,map,P.5,10,20")
    assert got == [M("nDCG", 5), M("nDCG", 10), M("AP"), M("P", 5), M("P", 10), M("P", 20)]
    # each expanded measure is keyed by the name it would have alone
    assert [m.text for m in got] == ["ndcg_cut.5", "ndcg_cut.10", "map", "P.5", "P.10", "P.20"]
    # a gain map is one measure: its pieces stay together
    got = parse_measures("ndcg.1=3,2=9,P_5,ndcg_cut.10")
    assert got == [M("nDCG", None, [("gain", "1:3,2:9")]), M("P", 5), M("nDCG", 10)]
    assert got[0].text == "ndcg.1=3,2=9"
    # a single cutoff keeps its spelling
    assert [m.text for m in parse_measures("ndcg_cut.10")] == ["ndcg_cut.10"]


def test_list_accepts_several_strings():
    assert parse_measures(["nDCG@10,AP", "ndcg_cut.5,10"]) == [M("nDCG", 10), M("AP"), M("nDCG", 5), M("nDCG", 10)]


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "no measure"),
        ("   ", "no measure"),
        ("nDCG@10,,AP", "empty measure name"),
        ("nDCG@10,", "empty measure name"),
        ("10,P@5", "not a measure name"),
        ("P@5,10", "not a measure name"),  # a bare number only continues a trec_eval list
        ("P@5,P@5", "listed twice"),
        ("P.5,5", "listed twice"),
        ("ndcg_cut.5,0", "positive integer, got 0"),
        ("ndcg_cut.5,x", "unknown measure 'x'"),  # a letter starts a new name
    ],
)
def test_bad_lists(text, message):
    with pytest.raises(MeasureError, match=message):
        parse_measures(text)


def test_parse_measure_refuses_an_item_naming_several():
    with pytest.raises(MeasureError, match="names 2 measures"):
        parse_measure("ndcg_cut.5,10")


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,message",
    [
        ("P@0", "cutoff must be a positive integer, got 0"),
        ("P@-1", "cutoff must be a positive integer, got -1"),
        ("P_0", "cutoff must be a positive integer, got 0"),
        ("P_-1", "cutoff must be a positive integer, got -1"),
        ("ndcg_cut.0", "cutoff must be a positive integer, got 0"),
        ("nDCG(cutoff=0)", "cutoff must be a positive integer, got 0"),
        ("P@1.5", "not an integer"),
        ("P@ten", "not an integer"),
        ("P@", "empty cutoff"),
        ("nDCG@10@5", "not an integer"),
        ("ndcg_cut_10@5", "cutoff given twice"),
        ("nDCG(cutoff=5)@10", "cutoff given twice"),
        ("Rprec@10", "Rprec takes no cutoff"),
        ("NumQ@5", "NumQ takes no cutoff"),
        ("P", "P needs a cutoff"),
        ("F1", "F1 needs a cutoff"),
        ("Fe", "Fe needs a cutoff"),
        ("MeanP", "MeanP needs a cutoff, such as MeanP@10"),
        ("T(alpha=0.5)", "T needs alpha and a cutoff"),
        ("T@10", "T needs alpha"),
        ("T(alpha=1.5)@10", "alpha must be a number in [0.0, 1.0], got 1.5"),
        ("T(alpha=x)@10", "alpha must be a number in [0.0, 1.0], got 'x'"),
        ("T(alpha=0.2,alpha=0.3)@10", "alpha given twice (0.2 and 0.3)"),
        ("AP(alpha=0.5)", "unknown parameter 'alpha'"),
        ("RBP(p=1)", "p must be a number in (0.0, 1.0), got 1.0"),
        ("IPrec", "IPrec needs recall"),
        ("IPrec@1.5", "recall must be a number in [0.0, 1.0]"),
        ("iprec_at_recall", "default recalls 0,0.1"),
        ("Rprec_mult", "default multiples 0.2,0.4"),
        ("utility.1,2", "coefficients takes 4 numbers"),
        ("SDCG@10", "SDCG needs max_rel"),
        ("rbp.x=1", "expected rbp.NAME=VALUE"),
        ("rbp.9x", "ranx reads rbp.DIGITS"),
        ("SetP(relative=maybe)", "relative must be True or False"),
        ("ERR(dcg='exp-log2')@10", "dcg= applies to nDCG and DCG only"),
        ("SDCG(dcg='exp-log2',max_rel=2)@10", "SDCG takes dcg='log2' only"),
        ("recall", "ambiguous"),
        ("ndcg_cut", "default cutoffs 5,10,15,20,30,100,200,500,1000"),
        ("map_cut", "default cutoffs"),
        ("success", "default cutoffs 1,5,10"),
        ("nDCG(judged_only=True)@10", "judged_only is not supported"),
        ("P(judged_only=True)@10", "judged_only is not supported"),
        ("nDCG(rel=2)@10", "relevance_threshold=N,threshold_scope=graded"),
        ("P(dcg='exp-log2')@5", "dcg= applies to nDCG and DCG only"),
        ("nDCG(dcg='exp')@5", "expected 'log2' or 'exp-log2'"),
        ("nDCG(dcg='exp-log2',gain=linear)@5", "sets gain=linear but gain=exponential is also given"),
        ("P@5,AP", "is a list of 2 measures; read it with parse_measures"),
        ("nDCG(gains=3)@5", "gains must be a map"),
        ("nDCG(gain=0:0,1:1)@5", "quote a value that holds commas"),
        ("nDCG(foo=1)@5", "unknown parameter 'foo'"),
        ("nDCG(gian=linear)@5", "did you mean gain"),
        ("nDCG(ties=random)@5", "axis 'ties' has no value 'random'"),
        ("nDCG(relevance_threshold=high)@5", "expected an integer"),
        ("nDCG(duplicates=first)@5", "settled when the run is read"),
        ("nDCG(rel)@5", "not key=value"),
        ("nDCG(@5", "unbalanced"),
        ("nDCG)@5", "cannot read"),
        ("P(rel=2)_5", "cannot read"),
        ("P@10-l2", "ranx syntax"),  # -lN goes with ranx names
        ("recall_5-l2", "ranx syntax"),
        ("ndcg.1=3-l2", "does not combine"),
        ("ndcg@10-lx", "integer level"),
        ("ndcg_10", "ndcg takes no _k cutoff; write ndcg@10"),
        ("Rprec_5", "Rprec has no cutoff"),
        ("ndcg_cut@10", "write ndcg_cut_10 or nDCG@10"),
        ("recip_rank@10", "write RR@10"),
        ("recip_rank_10", "write RR@10"),
        ("recip_rank.10", "ignores k"),
        ("map.10", "takes no trec_eval .parameters"),
        ("ndcg_cut.1=3", "not an integer"),
        ("ndcg.1=x", "gain"),
        ("ndcg_burges(gain=linear)@10", "takes no (parameters)"),
        ("@10", "starts with a letter"),
    ],
)
def test_bad_names(text, message):
    with pytest.raises(MeasureError, match=re.escape(message)):
        parse_measure(text)


def test_unknown_name_lists_the_closest_known_names():
    with pytest.raises(MeasureError) as info:
        parse_measure("nDGC@10")
    msg = str(info.value)
    assert "unknown measure 'nDGC@10'" in msg
    assert "did you mean nDCG, NDCG, ndcg" in msg
    assert "known names: nDCG" in msg
    with pytest.raises(MeasureError, match="did you mean Precision, precision"):
        parse_measure("precison@5")


@pytest.mark.parametrize("text,why", [
    ("alpha_nDCG@10", "diversity measure"), ("Compat", "not computed by conformance"),
    ("P_avgjg", "judgment-group file"), ("relstring", "not a measure"), ("runid", "not a measure")])
def test_library_measures_we_do_not_compute_say_so(text, why):
    with pytest.raises(MeasureError) as info:
        parse_measure(text)
    assert why in str(info.value)
    assert "known names:" in str(info.value)


def test_every_known_name_reads():
    """No entry of the name table is dead: each reads in at least one form."""
    forms = ["{}", "{}@10", "{}_10", "{}(alpha=0.5)@10", "{}_0.5", "{}(max_rel=2)@10",
             "{}(max_rel=2)", "{}@0.5", "{}(p=0.5)", "{}(multiple=2)"]
    for name in KNOWN_NAMES:
        read = []
        for form in forms:
            try:
                read.append(parse_measure(form.format(name)))
            except MeasureError:
                pass
        assert read, name


def test_errors_are_value_errors_distinct_from_convention_errors():
    assert issubclass(MeasureError, ValueError)
    with pytest.raises(MeasureError):  # a bad axis value inside a name is a MeasureError
        parse_measure("nDCG(ties=random)@5")
    assert not issubclass(MeasureError, ConventionError)


# --- canonical names read back ------------------------------------------------------------

_AXIS_VALUES = {
    "gain": ["linear", "exponential", "0:0,1:1,2:3", "1:3,2:9,4:4.5"],
    "discount": ["log2", "jarvelin", "jarvelin:3", "log:10"],
    "ideal": ["judged", "retrieved"],
    "ties": ["docid_desc", "unspecified", "average"],
    "relevance_threshold": [-1, 1, 2, 7],
    "threshold_scope": ["binary", "graded"],
    "empty_query": ["zero", "skip"],
    "depth": [None, 5, 1000],
    "rr_cutoff": ["honour", "ignore"],
}


@st.composite
def measures(draw):
    family = draw(st.sampled_from(sorted(FAMILIES)))
    takes, needs = FAMILIES[family].takes_cutoff, FAMILIES[family].needs_cutoff
    cutoff = None
    if needs or (takes and draw(st.booleans())):
        cutoff = draw(st.integers(min_value=1, max_value=10**12))
    axes = draw(st.lists(st.sampled_from(sorted(_AXIS_VALUES)), unique=True, max_size=4))
    order = list(AXES)
    overrides = tuple(
        sorted(((a, draw(st.sampled_from(_AXIS_VALUES[a]))) for a in axes), key=lambda kv: order.index(kv[0]))
    )
    params = []
    for p in FAMILIES[family].parameters:
        if p.default is not None and draw(st.booleans()):
            continue
        if p.kind == "integer":
            params.append((p.name, draw(st.integers(int(max(p.low, 1)), 5))))
        elif p.kind == "numbers":
            n = p.length or draw(st.integers(1, 4))
            params.append((p.name, tuple(draw(st.lists(
                st.floats(0, 1), min_size=n, max_size=n, unique=p.length is None)))))
        else:
            low = max(p.low, 0.0)
            high = min(p.high, 10.0)
            params.append((p.name, draw(st.floats(low, high, exclude_min=p.open_low,
                                                   exclude_max=p.open_high))))
    if family in ("SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "INST", "INSQ", "BPM"):
        params = [(k, v) for k, v in params if k != "min_rel"] + [("min_rel", 0)]
        params = [(k, (3 if k == "max_rel" else v)) for k, v in params]
    return Measure(family, cutoff, overrides, params=tuple(params))


@given(measures())
def test_canonical_name_reads_back_to_the_same_measure(m):
    back = parse_measure(m.canonical)
    assert back == m
    assert back.text == m.canonical


def test_no_stage_of_the_reference_tests_a_family_by_its_name():
    """What decides a family's arithmetic is its record (``Family`` fields) or a table keyed by
    family (``FORMULAS``, ``CURVES``, ``RATIO_PARTS``); a branch on a family's name in the
    reference's stages (``m.family == "AP"``) is a fact kept outside the records."""
    from pathlib import Path

    import conformance.reference as reference

    named = re.compile(r"\bfamily\s*(?:==|!=)\s*[\"']|\bfamily\s+(?:not\s+)?in\s+[(\[{][\"']")
    found = [f"{p.name}:{i}" for p in sorted(Path(reference.__file__).parent.glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if named.search(line)]
    assert not found, found
