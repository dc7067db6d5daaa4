"""trec_eval through pytrec_eval-terrier, live: published numbers and every profile fact.

Expected values are trec_eval's own published test outputs (``tests/data/trec_eval/``), the
numbers the libraries publish (cited where used), or hand computation (written out below), never the
reference implementation. Each quirk the profile in ``conformance/libs/trec_eval.py`` relies on
has a test here, so a pytrec_eval release that changes it fails.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.libs.trec_eval import PROFILE
from conformance.measures import Measure, parse_measure

from trec_eval_output import COUNT_MEASURES, measure_for, read_output
from libcall import call, only_value, one_list

pytestmark = pytest.mark.requires_library("trec_eval")

PEER_DIR = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
L2_3 = math.log2(3)


def run_entry(m: Measure | str, qrels: list, run: list) -> LibraryValues:
    return call("trec_eval", m, qrels, run)


def value(m, labels, scores) -> float:
    return only_value(run_entry(m, *one_list(labels, scores)))


# ---- published numbers (CONVENTIONS.md "External numbers") ------------------------------------

GRADED = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
SCORES_10_TO_1 = [float(10 - i) for i in range(10)]


@pytest.mark.parametrize(
    "name,expected",
    [("P@5", 0.600), ("R@5", 0.500), ("RR", 1.000), ("nDCG@5", 0.717), ("nDCG", 0.907)],
)
def test_published_graded_list(name, expected):
    assert round(value(name, GRADED, SCORES_10_TO_1), 3) == expected


def test_published_graded_list_exact():
    # by hand: DCG@5 = 3 + 2/log2 3 + 0 + 2/log2 5 + 0; ideal@5 = 3 + 3/log2 3 + 2/2 + 2/log2 5 + 1/log2 6
    dcg5 = 3 + 2 / L2_3 + 2 / math.log2(5)
    idcg5 = 3 + 3 / L2_3 + 1 + 2 / math.log2(5) + 1 / math.log2(6)
    assert value("nDCG@5", GRADED, SCORES_10_TO_1) == pytest.approx(dcg5 / idcg5, abs=1e-12)


def test_exponential_gain_is_not_offered():
    # trec_eval has no exponential nDCG; a custom gain map aborts pytrec_eval, so neither is offered
    assert not entry("trec_eval").supports(parse_measure("nDCG(gain=exponential)@5"))
    assert not entry("trec_eval").supports(parse_measure("ndcg.1=3,2=9"))


def test_ties_at_the_top_docid_descending():
    # qrels {a:0, b:1}, both scored 1.0: trec_eval puts b first (docno descending) -> P@1 = 1
    lv = run_entry("P@1", [("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 1.0)])
    assert lv.per_query == {"q": 1.0}


def test_ties_are_byte_order_descending_not_case_insensitive():
    # 'a' (0x61) > 'B' (0x42) byte-wise: a comes first although B is relevant
    lv = run_entry("P@1", [("q", "B", 1), ("q", "a", 0)], [("q", "a", 1.0), ("q", "B", 1.0)])
    assert lv.per_query == {"q": 0.0}
    # 'é' is 0xC3 0xA9 in UTF-8, above 'z' (0x7A)
    lv = run_entry("P@1", [("q", "é", 1), ("q", "z", 0)], [("q", "z", 1.0), ("q", "é", 1.0)])
    assert lv.per_query == {"q": 1.0}


def test_relevant_document_not_retrieved_judged_ideal():
    # qrels {a:1, b:0, c:2, z:3}, run a > b > c: DCG = 1 + 0 + 2/2; ideal = 3 + 2/log2 3 + 1/2
    lv = run_entry(
        "nDCG@3",
        [("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)],
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
    )
    assert round(lv.per_query["q"], 4) == 0.4200
    assert lv.per_query["q"] == pytest.approx(2.0 / (3 + 2 / L2_3 + 0.5), abs=1e-12)


# ---- trec_eval's own test suite, through the adapter ----------------------------------------


def _read_qrels(path: Path) -> Qrels:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return Qrels.from_records((q, d, float(l)) for q, _, d, l in rows)


def _read_run(path: Path) -> Run:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return Run.from_records((r[0], r[2], float(r[4])) for r in rows)


@pytest.mark.parametrize(
    "output,qrels,level,count",
    [("out.test.aq", "qrels.test", 1, 270), ("out.test.aql", "qrels.rel_level", 2, 270)],
)
def test_trec_eval_published_outputs(output, qrels, level, count):
    """Every per-query value of a measure the entry computes, to the 4 decimals trec_eval 9
    prints (the binding is trec_eval 9: its outputs in v9_de6a29f/; 90 measures a query)."""
    printed = {k: r for k, r in read_output(PEER_DIR / "v9_de6a29f" / output).items()
               if k[1] != "all"}
    wanted = {}
    for (name, qid), row in printed.items():
        m = measure_for(name)
        if m is None or m.family == "nDCG" and m.overrides:
            continue
        if level != 1:
            m = Measure(m.family, m.cutoff, m.overrides + (("relevance_threshold", level),),
                        params=m.params, text=name)
        assert entry("trec_eval").supports(m), name
        wanted[(name, qid)] = (m, row)
    assert len(wanted) == count  # pinned: a change in the name mapping cannot shrink this
    measures = list({m for m, _ in wanted.values()})
    got = entry("trec_eval").evaluate(_read_qrels(PEER_DIR / qrels), _read_run(PEER_DIR / "results.test"), measures)
    for (name, qid), (m, row) in wanted.items():
        lv = got[m]
        assert lv.error is None, lv.error
        v = lv.per_query[qid]
        text = str(int(v)) if name in COUNT_MEASURES else f"{v:.4f}"
        assert text == row.text, f"{output}:{row.line} {name} {qid}: adapter {v!r}, printed {row.text}"


# ---- the profile, fact by fact --------------------------------------------------------------


def test_scores_narrowed_to_float32():
    # a = 1 + 1e-9 outranks b = 1 in float64; as C floats they tie and docno descending puts b
    # (non-relevant) first
    lv = run_entry("P@1", [("q", "a", 1), ("q", "b", 0)], [("q", "a", 1.0 + 1e-9), ("q", "b", 1.0)])
    assert lv.per_query == {"q": 0.0}
    assert PROFILE.score_precision == "float32"
    # distinct in float32: a wins
    lv = run_entry("P@1", [("q", "a", 1), ("q", "b", 0)], [("q", "a", 1.0 + 1e-6), ("q", "b", 1.0)])
    assert lv.per_query == {"q": 1.0}


def test_fractional_label_refused_whole_float_accepted():
    lv = run_entry("P@1", [("q", "a", 1.5)], [("q", "a", 1.0)])
    assert lv.error == "TypeError: Expected relevance to be integer."
    assert PROFILE.label_type == "raise"
    lv = run_entry("P@1", [("q", "a", 1.0)], [("q", "a", 1.0)])  # stored as float64 2.0 -> int
    assert lv.per_query == {"q": 1.0}


def test_binding_refuses_non_int_labels_and_numpy_scores_but_float64():
    import numpy as np
    import pytrec_eval

    for label in (1.0, np.int64(1)):
        with pytest.raises(TypeError, match="Expected relevance to be integer"):
            pytrec_eval.RelevanceEvaluator({"q": {"a": label}}, {"P_1"})
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"P_1"})
    for score in (np.float32(1), np.int64(1)):
        with pytest.raises(TypeError, match="Unable to extract query/object scores"):
            evaluator.evaluate({"q": {"a": score}})
    # np.float64 is a float subclass: accepted as a score
    assert evaluator.evaluate({"q": {"a": np.float64(1)}}) == {"q": {"P_1": 1.0}}


def test_custom_gain_measure_string_aborts_the_process():
    # why the adapter never passes ndcg.1=3,... (not even to refuse it): the child dies of SIGABRT
    import subprocess
    import sys

    code = ("import pytrec_eval; pytrec_eval.RelevanceEvaluator({'q': {'a': 1}}, ['ndcg.1=3,2=9'])"
            ".evaluate({'q': {'a': 1.0}})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == -6, done  # SIGABRT
    assert b"malformed pair parameters" in done.stderr


def test_negative_labels_are_judged_nonrelevant():
    # labels a:-1, b:2, c:-3 ranked a, b, c: only b counts, at rank 2, and the ideal holds b alone
    labels, scores = [-1, 2, -3], [3.0, 2.0, 1.0]
    assert value("nDCG", labels, scores) == pytest.approx((2 / L2_3) / 2, abs=1e-12)
    assert value("NumRel", labels, scores) == 1.0
    assert value("Rprec", labels, scores) == 0.0
    assert PROFILE.negative_labels == "unjudged"


def test_relevance_level_moves_binary_measures_not_ndcg():
    labels, scores = [1, 2, 3], [3.0, 2.0, 1.0]
    # ndcg with every positive label as gain: (1 + 2/log2 3 + 3/2) / (3 + 2/log2 3 + 1/2)
    expected = (1 + 2 / L2_3 + 1.5) / (3 + 2 / L2_3 + 0.5)
    assert value("nDCG", labels, scores) == pytest.approx(expected, abs=1e-12)
    nd2 = Measure("nDCG", None, (("relevance_threshold", 2),))
    assert value(nd2, labels, scores) == pytest.approx(expected, abs=1e-12)
    assert value("P(rel=2)@1", labels, scores) == 0.0
    assert value("P(rel=2)@2", labels, scores) == 0.5
    assert value("AP(rel=2)", labels, scores) == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-12)
    assert PROFILE.threshold_scope == "binary"


def test_num_rel_follows_relevance_level():
    # ir_measures' pytrec_eval provider says relevance_level does not reach num_rel; live it does
    m = Measure("NumRel", None, (("relevance_threshold", 2),))
    assert value(m, [1, 2, 3], [3.0, 2.0, 1.0]) == 2.0


def test_relevance_level_below_one_not_offered():
    import pytrec_eval

    assert not entry("trec_eval").supports(parse_measure("P(rel=0)@2"))
    with pytest.raises(TypeError, match="relevance_level should be positive"):
        pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"P_2"}, relevance_level=0)
    # a negative level is accepted and gives nonsense: every document has label >= -1
    out = pytrec_eval.RelevanceEvaluator({"q": {"a": 1, "b": 2}}, {"P_2"}, relevance_level=-1)
    assert out.evaluate({"q": {"a": 2.0, "b": 1.0}}) == {"q": {"P_2": 0.0}}


def test_recip_rank_cutoff_is_ignored():
    # relevant document at rank 2: RR@1 would be 0; recip_rank.1 gives 1/2
    assert value("RR@1", [0, 1], [2.0, 1.0]) == 0.5
    assert PROFILE.rr_cutoff == "ignore"


def test_precision_divides_by_k_beyond_the_list():
    assert value("P@5", [1, 1], [2.0, 1.0]) == pytest.approx(2 / 5, abs=1e-15)


def test_ap_cut_divides_by_all_relevant():
    # relevant at ranks 1 and 3 of the list, 4 relevant judged: map_cut_2 = (1/1) / 4
    qrels, run = one_list([1, 0, 1, 1, 1], [5.0, 4.0, 3.0])
    lv = run_entry("AP@2", qrels, run)
    assert lv.per_query["q1"] == pytest.approx(1 / 4, abs=1e-15)
    assert PROFILE.ap_denominator == "relevant"


def test_empty_query_scores_zero_and_counts():
    qrels = [("q1", "a", 0), ("q1", "b", 0), ("q2", "a", 1)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "a", 1.0)]
    for name in ("nDCG", "AP", "RR", "P@1", "R@1", "Rprec", "Success@1", "nDCG@1"):
        lv = run_entry(name, qrels, run)
        assert lv.per_query == {"q1": 0.0, "q2": 1.0}, name
        assert lv.mean == 0.5, name


def test_query_set_is_run_and_qrels():
    qrels = [("both", "a", 1), ("qrels_only", "a", 1)]
    run = [("both", "a", 1.0), ("run_only", "a", 1.0)]
    lv = run_entry("P@1", qrels, run)
    assert lv.per_query == {"both": 1.0}
    assert PROFILE.query_set == "run"


def test_binding_drops_queries_with_empty_qrels():
    import pytrec_eval

    out = pytrec_eval.RelevanceEvaluator({"q": {}, "p": {"a": 0}}, {"P_1"}).evaluate(
        {"q": {"a": 1.0}, "p": {"a": 1.0}}
    )
    assert out == {"p": {"P_1": 0.0}}


def test_counts_and_the_binding_aggregate():
    qrels = [("q1", "a", 1), ("q1", "b", 1), ("q2", "a", 1)]
    run = [("q1", "a", 2.0), ("q1", "c", 1.0), ("q2", "a", 1.0)]
    expected = {"NumQ": (1, 1, 2), "NumRet": (2, 1, 3), "NumRel": (2, 1, 3), "NumRelRet": (1, 1, 2)}
    for family, (q1, q2, total) in expected.items():
        lv = run_entry(Measure(family), qrels, run)
        assert lv.per_query == {"q1": q1, "q2": q2}, family
        assert lv.mean == total, family  # compute_aggregated_measure sums num_*


def test_duplicate_listing_refused_by_the_binding_reader():
    lv = run_entry("P@1", [("q", "a", 1)], [("q", "a", 1.0), ("q", "a", 2.0)])
    assert lv.error is not None and lv.error.startswith("AssertionError")
    assert PROFILE.duplicates == "error"


def test_huge_label_isolated_not_fatal(monkeypatch):
    # a label of 2**31 makes pytrec_eval crash (SIGSEGV) or run for minutes, depending on the
    # measures asked: the adapter runs it in a child process with a time limit
    import conformance.libs.trec_eval as adapter

    monkeypatch.setattr(adapter, "ISOLATED_TIMEOUT", 5.0)
    lv = run_entry("nDCG", [("q", "a", float(2**31)), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 2.0)])
    assert lv.error is not None
    assert "crashed" in lv.error or "did not finish" in lv.error, lv.error
    # and the process is still here to compute the next thing
    assert value("P@1", [1], [1.0]) == 1.0


def test_query_with_only_negative_labels_isolated():
    # trec_eval 9 works past its per-level tables here: num_ret comes back 0 for 2 retrieved
    # documents, and repeating the call in one process hangs it. The adapter runs it in a child.
    import conformance.libs.trec_eval as adapter

    qrels = [("q9", "d11", -1), ("q9", "d13", -2), ("q1", "a", 1), ("q1", "b", 0)]
    run = [("q9", "d11", 1.0), ("q9", "x", 2.0), ("q1", "a", 1.0), ("q1", "c", 3.0)]
    assert adapter.needs_isolation(Qrels.from_records(qrels))
    from conformance.libs._nested import qrels_dict, run_dict

    from conformance import isolation

    got = isolation.one_shot(adapter.relevance_evaluate, qrels_dict(Qrels.from_records(qrels)),
                             run_dict(Run.from_records(run)), ["num_ret", "ndcg"], 1)
    assert {q: v["num_ret"] for q, v in got.items()} == {"q9": 0.0, "q1": 2.0}  # wrong count
    assert got["q1"]["ndcg"] == pytest.approx(1 / L2_3, abs=1e-12)
    assert not adapter.needs_isolation(Qrels.from_records([("q", "a", -1), ("q", "b", 0)]))
    # so the adapter refuses such a case, naming the query, whatever the measure
    out = entry("trec_eval").evaluate(Qrels.from_records(qrels), Run.from_records(run),
                                      [Measure("NumRet"), Measure("nDCG")])
    for lv in out.values():
        assert lv.error is not None and "'q9'" in lv.error and "refused" in lv.error


def test_query_with_only_negative_labels_can_crash_pytrec_eval():
    # smallest case found by the differential tests: SIGSEGV in a fresh process, every time
    import subprocess
    import sys

    code = ("import pytrec_eval; pytrec_eval.RelevanceEvaluator({'q1': {'d1': -2}, 'q2': {'d1': 0}},"
            " ['recip_rank']).evaluate({'q2': {'d1': 0.0}, 'q1': {'d1': 0.0}})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == -11, done  # SIGSEGV
    lv = run_entry("RR", [("q1", "d1", -2), ("q2", "d1", 0)], [("q2", "d1", 0.0), ("q1", "d1", 0.0)])
    assert lv.error is not None and "refused by the adapter" in lv.error


def test_isolated_call_returns_the_values():
    import conformance.libs.trec_eval as adapter

    big = adapter.ISOLATE_ABOVE + 1
    lv = run_entry("P@1", [("q", "a", float(big)), ("q", "b", 0)], [("q", "a", 2.0), ("q", "b", 1.0)])
    assert lv.per_query == {"q": 1.0} and lv.mean == 1.0


def test_profile_is_trec_eval_with_labels_refused():
    from conformance.conventions import TREC_EVAL

    assert PROFILE.differing_axes(TREC_EVAL) == ["label_type"]


def test_supports():
    e = entry("trec_eval")
    yes = ["nDCG", "nDCG@10", "AP", "AP@10", "P@5", "R@5", "RR", "RR@10", "Rprec", "Success@1",
           "NumQ", "NumRet", "NumRel", "NumRelRet", "P(rel=2)@5", "ndcg_cut_10", "map_cut_5",
           # R without a cutoff is set_recall; trec_eval 9's other measures
           "R", "SetP", "SetF(beta=0.5)", "gm_map", "gm_bpref", "bpref", "infAP", "G", "binG",
           "ndcg_rel", "Rndcg", "num_nonrel_judged_ret", "set_map", "set_relative_P",
           "relative_P_5", "Rprec_mult_0.20", "iprec_at_recall_0.10", "11pt_avg", "utility"]
    no = ["DCG@5", "F1@5", "Success", "P(k_beyond_list=min_k_n)@5", "nDCG(gain=exponential)",
          "ndcg@10-l2", "T(alpha=0.5)@5", "Fe@5",
          # trec_eval 10 only; utility's coefficients (pytrec_eval returns 0.0); custom gains
          "rbp", "rbp_resid", "unj_5", "utility.2,-1,0,0", "G.1=3", "ERR@10", "Judged@10"]
    assert [n for n in yes if not e.supports(parse_measure(n))] == []
    assert [n for n in no if e.supports(parse_measure(n))] == []
