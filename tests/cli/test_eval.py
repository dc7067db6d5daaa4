"""``conformance eval``: formats, conventions from the command line, and errors as exit status 2.

Every expected number is computed by hand in the comment beside it (log2(3) = 1.5849625,
log2(5) = 2.3219281, log2(8) = 3). The library is only asked to agree.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main

# Case A. Query a: d1 (label 2) at 3.0, then d2 (0) and d3 (1) tied at 2.0, listed d2 first; d9
# (label 1) is judged but not retrieved. Query b: e1 (0) and e2 (1) tied at 1.0, e1 listed first.
# Query y is only in the qrels, query z only in the run.
# trec_eval breaks ties by docid descending: a -> d1 d3 d2 (labels 2 1 0), b -> e2 e1 (1 0).
# In input order: a -> d1 d2 d3 (2 0 1), b -> e1 e2 (0 1).
QRELS_A = """\
a 0 d1 2
a 0 d2 0
a 0 d3 1
a 0 d9 1
b 0 e1 0
b 0 e2 1
y 0 g1 1
"""
RUN_A = """\
a Q0 d1 1 3.0 r
a Q0 d2 2 2.0 r
a Q0 d3 3 2.0 r
b Q0 e1 1 1.0 r
b Q0 e2 2 1.0 r
z Q0 d1 1 1.0 r
"""

# nDCG@3, linear gain, judged ideal:
#   a: DCG = 2/log2(2) + 1/log2(3) = 2 + 0.6309298 = 2.6309298
#      ideal labels 2 1 1: IDCG = 2 + 0.6309298 + 1/log2(4) = 3.1309298 -> 0.8403016
#   b: DCG = 1/log2(2) = 1 = IDCG -> 1
NDCG3_A = (2 + 1 / math.log2(3)) / (2 + 1 / math.log2(3) + 0.5)
NDCG3_MEAN = (NDCG3_A + 1) / 2  # 0.9201508
# nDCG@3, exponential gain (2^rel - 1: label 2 -> 3, label 1 -> 1):
#   a: DCG = 3 + 1/log2(3) = 3.6309298; IDCG = 3 + 0.6309298 + 0.5 = 4.1309298 -> 0.8789615
NDCG3_EXP_A = (3 + 1 / math.log2(3)) / (3 + 1 / math.log2(3) + 0.5)
NDCG3_EXP_MEAN = (NDCG3_EXP_A + 1) / 2  # 0.9394807
# AP (R = relevant judged, retrieved or not): a: R = 3 (d1 d3 d9), relevant at ranks 1 and 2:
#   (1/1 + 2/2) / 3 = 2/3; b: R = 1, relevant at rank 1: 1. Mean 5/6.
# RR: a 1 (d1 at rank 1), b 1 (e2 first) -> 1. In input order b is 1/2 -> mean 3/4.
# P@2: a labels 2 1 -> 2/2; b 1 0 -> 1/2; mean 3/4. In input order: a 2 0 -> 1/2, b 0 1 -> 1/2.


@pytest.fixture
def case_a(tmp_path: Path) -> tuple[str, str]:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text(QRELS_A)
    r.write_text(RUN_A)
    return str(q), str(r)


def invoke(*args: str):
    return CliRunner(catch_exceptions=False).invoke(main, list(args))


def table(stdout: str) -> dict[tuple[str, str], str]:
    """(measure, qid) -> value text, from trec_eval-style rows."""
    out = {}
    for line in stdout.splitlines():
        name, qid, value = line.split("\t")
        out[(name.strip(), qid)] = value
    return out


def assert_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("conformance: error: ")
    assert "Traceback" not in result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    assert result.stdout == ""


# --- the bundled example ----------------------------------------------------------------

# conformance/examples (see its README): labels by trec_eval rank
#   q1: 3 2 0 2 0 3 0 1 0 1 (R = 6)      q2: 1 0 0 2 0 0 1 0 0 0 (R = 4, D299 unretrieved)
#   q3: 0 0 1 0 2 0 0 0 0 0 (R = 2)
# P@10: 6/10, 3/10, 2/10 -> mean 1.1/3 = 0.36667
# RR: 1, 1, 1/3 -> mean 0.77778
# AP: q1 (1 + 1 + 3/4 + 4/6 + 5/8 + 6/10)/6 = 4.6416667/6 = 0.7736111
#     q2 (1/1 + 2/4 + 3/7)/4 = 1.9285714/4 = 0.4821429
#     q3 (1/3 + 2/5)/2 = 0.3666667                          -> mean 0.5408069
# nDCG@10: q1 DCG = 3 + 2/log2(3) + 2/log2(5) + 3/log2(7) + 1/log2(9) + 1/log2(11)
#              = 3 + 1.2618595 + 0.8613531 + 1.0686216 + 0.3154649 + 0.2890648 = 6.7963639
#          IDCG (3 3 2 2 1 1) = 3 + 1.8927893 + 1 + 0.8613531 + 0.3868528 + 0.3562072 = 7.4972024
#          -> 0.9065200
#          q2 DCG = 1 + 2/log2(5) + 1/log2(8) = 1 + 0.8613531 + 0.3333333 = 2.1946864
#          IDCG (2 2 1 1) = 2 + 1.2618595 + 0.5 + 0.4306766 = 4.1925361 -> 0.5234747
#          q3 DCG = 1/log2(4) + 2/log2(6) = 0.5 + 0.7737056 = 1.2737056
#          IDCG (2 1) = 2 + 0.6309298 = 2.6309298 -> 0.4841276       -> mean 0.6380407
EX_NDCG = {
    "q1": (3 + 2 / math.log2(3) + 2 / math.log2(5) + 3 / math.log2(7) + 1 / math.log2(9) + 1 / math.log2(11))
    / (3 + 3 / math.log2(3) + 2 / 2 + 2 / math.log2(5) + 1 / math.log2(6) + 1 / math.log2(7)),
    "q2": (1 + 2 / math.log2(5) + 1 / 3) / (2 + 2 / math.log2(3) + 1 / 2 + 1 / math.log2(5)),
    "q3": (1 / 2 + 2 / math.log2(6)) / (2 + 1 / math.log2(3)),
}
EX_AP = {
    "q1": (1 + 1 + 3 / 4 + 4 / 6 + 5 / 8 + 6 / 10) / 6,
    "q2": (1 + 2 / 4 + 3 / 7) / 4,
    "q3": (1 / 3 + 2 / 5) / 2,
}
EX_RR = {"q1": 1.0, "q2": 1.0, "q3": 1 / 3}
EX_P10 = {"q1": 0.6, "q2": 0.3, "q3": 0.2}


def test_example_default_metrics_table():
    result = invoke("eval", "--example")
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()
    # trec_eval's layout: name padded to 22, tab, qid, tab, 4 decimals
    assert rows == [
        "nDCG@10               \tall\t0.6380",
        "AP                    \tall\t0.5408",
        "RR                    \tall\t0.7778",
        "P@10                  \tall\t0.3667",
    ]
    assert f"{sum(EX_NDCG.values()) / 3:.4f}" == "0.6380"  # the hand arithmetic above, rounded
    assert f"{sum(EX_AP.values()) / 3:.4f}" == "0.5408"
    # counts go to stderr
    assert "qrels" in result.stderr and "22 rows read" in result.stderr
    assert "30 rows read" in result.stderr
    assert "3 scored, 0 only in the run, 0 only in the qrels" in result.stderr


def test_example_per_query_rows_come_first_sorted_by_qid():
    result = invoke("eval", "--example", "--per-query", "--quiet")
    assert result.exit_code == 0
    assert result.stderr == ""
    keys = [(l.split("\t")[0].strip(), l.split("\t")[1]) for l in result.stdout.splitlines()]
    names = ["nDCG@10", "AP", "RR", "P@10"]
    assert keys == [(m, q) for q in ("q1", "q2", "q3", "all") for m in names]
    t = table(result.stdout)
    for q in ("q1", "q2", "q3"):
        assert float(t[("nDCG@10", q)]) == pytest.approx(EX_NDCG[q], abs=5e-5)
        assert float(t[("AP", q)]) == pytest.approx(EX_AP[q], abs=5e-5)
        assert float(t[("RR", q)]) == pytest.approx(EX_RR[q], abs=5e-5)
        assert float(t[("P@10", q)]) == pytest.approx(EX_P10[q], abs=5e-5)


def test_example_json_full_precision():
    result = invoke("eval", "--example", "--format", "json", "--per-query", "-m", "nDCG@10,AP,RR,P@10")
    assert result.exit_code == 0
    # no counts on stderr in JSON mode (they are in the document); the example's tie is warned
    # about for each measure it changes (issue 16.3)
    assert all(line.startswith("conformance: warning: ") and "tied scores" in line
               for line in result.stderr.splitlines()), result.stderr
    doc = json.loads(result.stdout)
    assert list(doc) == sorted(doc)
    assert sorted(doc) == ["conventions", "counts", "metrics", "overrides", "per_query", "profile"]
    assert doc["profile"] == "trec_eval"
    assert doc["conventions"]["ties"] == "docid_desc"
    assert doc["conventions"]["gain"] == "linear"
    means = {"nDCG@10": EX_NDCG, "AP": EX_AP, "RR": EX_RR, "P@10": EX_P10}
    for name, per_q in means.items():
        assert doc["metrics"][name] == pytest.approx(sum(per_q.values()) / 3, abs=1e-12)
        for q, v in per_q.items():
            assert doc["per_query"][q][name] == pytest.approx(v, abs=1e-12)
    assert doc["counts"]["queries"] == {"scored": 3, "run_only": 0, "qrels_only": 0}
    assert doc["counts"]["qrels"]["read"] == 22
    assert doc["counts"]["run"]["read"] == 30
    assert doc["overrides"] == {}


def test_example_input_order_ties_change_rr():
    # q2's tied pair in input order puts D203 (label 0) first: RR 1/2; mean (1 + 1/2 + 1/3)/3
    result = invoke("eval", "--example", "-m", "RR", "--set", "ties=input_order", "--quiet")
    assert result.exit_code == 0
    assert table(result.stdout)[("RR", "all")] == f"{(1 + 0.5 + 1 / 3) / 3:.4f}" == "0.6111"


# --- formats, --set and measure-level overrides on case A ---------------------------------


def test_table_values_and_counts(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "-m", "nDCG@3,AP,RR,P@2,num_q,num_rel_ret,num_rel,num_ret")
    assert result.exit_code == 0, result.stderr
    t = table(result.stdout)
    assert t[("nDCG@3", "all")] == f"{NDCG3_MEAN:.4f}" == "0.9202"
    assert t[("AP", "all")] == "0.8333"  # 5/6
    assert t[("RR", "all")] == "1.0000"
    assert t[("P@2", "all")] == "0.7500"
    # counts are printed as integers, like trec_eval
    assert t[("num_q", "all")] == "2"  # a and b (y is not in the run, z not in the qrels)
    assert t[("num_rel_ret", "all")] == "3"  # a: d1 d3; b: e2
    assert t[("num_rel", "all")] == "4"  # a: d1 d3 d9; b: e2
    assert t[("num_ret", "all")] == "5"  # a: 3; b: 2
    assert "7 rows read" in result.stderr  # qrels
    assert "6 rows read" in result.stderr  # run
    assert "2 scored, 1 only in the run, 1 only in the qrels" in result.stderr


def test_set_overrides_the_profile(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "-m", "nDCG@3,RR,P@2", "--quiet",
                    "--set", "gain=exponential", "--set", "ties=input_order")
    assert result.exit_code == 0
    t = table(result.stdout)
    # input order: a -> 2 0 1, b -> 0 1.
    # nDCG@3 exp: a DCG = 3 + 1/log2(4) = 3.5; IDCG 4.1309298 -> 0.8472625; b DCG = 1/log2(3)
    #   = 0.6309298, IDCG 1 -> 0.6309298; mean 0.7390962
    expected = ((3 + 0.5) / (3 + 1 / math.log2(3) + 0.5) + 1 / math.log2(3)) / 2
    assert t[("nDCG@3", "all")] == f"{expected:.4f}" == "0.7391"
    assert t[("RR", "all")] == "0.7500"  # a 1, b 1/2
    assert t[("P@2", "all")] == "0.5000"  # a 1/2, b 1/2


def test_set_query_set_qrels_scores_missing_queries_zero(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "-m", "RR", "--set", "query_set=qrels", "--format", "json")
    doc = json.loads(result.stdout)
    # a 1, b 1, y (judged, not retrieved) 0 -> 2/3
    assert doc["metrics"]["RR"] == pytest.approx(2 / 3, abs=1e-12)
    assert doc["conventions"]["query_set"] == "qrels"
    assert doc["counts"]["queries"] == {"scored": 3, "run_only": 1, "qrels_only": 1}


def test_measure_level_overrides_group_with_the_profile(case_a):
    q, r = case_a
    # One call, three convention sets: the profile's, gain=exponential, ties=input_order.
    result = invoke("eval", "--qrels", q, "--run", r, "--format", "json", "--per-query",
                    "-m", "nDCG@3,ndcg_burges@3,nDCG(dcg='exp-log2')@3,RR,RR(ties=input_order)")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    m = doc["metrics"]
    assert m["nDCG@3"] == pytest.approx(NDCG3_MEAN, abs=1e-12)
    assert m["ndcg_burges@3"] == pytest.approx(NDCG3_EXP_MEAN, abs=1e-12)
    assert m["nDCG(dcg='exp-log2')@3"] == pytest.approx(NDCG3_EXP_MEAN, abs=1e-12)
    assert m["RR"] == 1.0
    assert m["RR(ties=input_order)"] == 0.75
    assert doc["per_query"]["b"]["RR(ties=input_order)"] == 0.5
    assert doc["overrides"] == {
        "ndcg_burges@3": {"gain": "exponential"},
        "nDCG(dcg='exp-log2')@3": {"gain": "exponential"},
        "RR(ties=input_order)": {"ties": "input_order"},
    }
    assert doc["conventions"]["gain"] == "linear"  # the profile is unchanged


def test_output_keys_are_spelled_as_asked(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "--format", "json", "--per-query",
                    "-m", "ndcg_cut_3,ndcg_cut.2,3,nDCG@3,map,P_2,recip_rank,ndcg@3-l2")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    names = {"ndcg_cut_3", "ndcg_cut.2", "ndcg_cut.3", "nDCG@3", "map", "P_2", "recip_rank", "ndcg@3-l2"}
    assert set(doc["metrics"]) == names
    assert set(doc["per_query"]["a"]) == names
    # one measure under three spellings: one value
    assert doc["metrics"]["ndcg_cut_3"] == doc["metrics"]["ndcg_cut.3"] == doc["metrics"]["nDCG@3"]
    assert doc["metrics"]["map"] == pytest.approx(5 / 6, abs=1e-12)
    # nDCG@2: a labels 2 1: DCG = 2 + 0.6309298; ideal 2 1: same -> 1; b 1 0 -> 1
    assert doc["metrics"]["ndcg_cut.2"] == pytest.approx(1.0, abs=1e-12)
    # ndcg@3-l2 (ranx): labels below 2 drop out of gains and ideal. a: gains 2 0 0, ideal 2 -> 1.
    # b: no label >= 2, IDCG 0 -> the empty query rule of trec_eval's profile (zero) -> 0
    assert doc["per_query"]["a"]["ndcg@3-l2"] == pytest.approx(1.0, abs=1e-12)
    assert doc["per_query"]["b"]["ndcg@3-l2"] == 0.0
    assert doc["overrides"]["ndcg@3-l2"] == {"relevance_threshold": "2", "threshold_scope": "graded"}


def test_csv(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "--format", "csv", "--per-query", "--quiet",
                    "-m", "AP,nDCG(gain=exponential,discount=log2)@3")
    assert result.exit_code == 0
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["measure", "qid", "value"]
    name = "nDCG(gain=exponential,discount=log2)@3"  # holds a comma: quoted by the csv writer
    assert [row[:2] for row in rows[1:]] == [
        ["AP", "a"], [name, "a"], ["AP", "b"], [name, "b"], ["AP", "all"], [name, "all"]
    ]
    values = {(row[0], row[1]): row[2] for row in rows[1:]}
    assert float(values[("AP", "a")]) == pytest.approx(2 / 3, abs=1e-15)  # full precision
    assert float(values[(name, "all")]) == pytest.approx(NDCG3_EXP_MEAN, abs=1e-15)


def test_unspecified_ties_give_ranges(case_a):
    q, r = case_a
    # RR: a 1 whatever the order (d1 untied at rank 1); b 1/2 (e1 first) to 1 (e2 first).
    # P@2: a 1/2 (d2 before d3) to 1; b 1/2 either way.
    args = ["eval", "--qrels", q, "--run", r, "-m", "RR,P@2,num_q", "--set", "ties=unspecified", "--per-query"]
    t = table(invoke(*args, "--quiet").stdout)
    assert t[("RR", "a")] == "1.0000"  # both ends agree: one number
    assert t[("RR", "b")] == "0.5000..1.0000"
    assert t[("RR", "all")] == "0.7500..1.0000"
    assert t[("P@2", "a")] == "0.5000..1.0000"
    assert t[("P@2", "all")] == "0.5000..0.7500"
    assert t[("num_q", "all")] == "2"
    doc = json.loads(invoke(*args, "--format", "json").stdout)
    assert doc["metrics"]["RR"] == [0.75, 1.0]
    assert doc["per_query"]["a"]["RR"] == [1.0, 1.0]  # always a pair under ties=unspecified
    assert doc["metrics"]["P@2"] == [0.5, 0.75]
    assert doc["metrics"]["num_q"] == [2, 2]


def test_nan_is_null_in_json(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    # query c has no relevant document: under empty_query=nan its AP is NaN, and so is the mean
    q.write_text("a 0 d1 1\nc 0 f1 0\n")
    r.write_text("a Q0 d1 1 1.0 r\nc Q0 f1 1 1.0 r\n")
    result = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "AP", "--set", "empty_query=nan",
                    "--format", "json", "--per-query")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["metrics"]["AP"] is None
    assert doc["per_query"]["c"]["AP"] is None
    assert doc["per_query"]["a"]["AP"] == 1.0
    assert "NaN" not in result.stdout
    t = table(invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "AP", "--set", "empty_query=nan").stdout)
    assert t[("AP", "all")] == "nan"


def test_profile_option(case_a):
    q, r = case_a
    result = invoke("eval", "--qrels", q, "--run", r, "-m", "RR", "--profile", "trec_eval10", "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["profile"] == "trec_eval10"
    assert doc["conventions"]["score_precision"] == "float64"


def test_duplicates_follow_the_set_option(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("a 0 d1 1\na 0 d2 0\n")
    # d1 listed twice: refused by default (trec_eval's duplicates=error); with first kept
    # (score 0.5) d2 ranks first: RR = 1/2; with last kept (score 3.0) d1 is first: RR = 1
    r.write_text("a Q0 d1 1 0.5 r\na Q0 d2 2 1.0 r\na Q0 d1 3 3.0 r\n")
    refused = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR")
    assert_user_error(refused, str(r))
    first = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR", "--set", "duplicates=first", "--quiet")
    assert table(first.stdout)[("RR", "all")] == "0.5000"
    last = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR", "--set", "duplicates=last", "--quiet")
    assert table(last.stdout)[("RR", "all")] == "1.0000"


def test_duplicates_found_when_the_join_runs_and_when_it_does_not(tmp_path):
    # eval leaves the run's duplicate check to the join on the docid words; when the join
    # does not run (here the qrels repeat a judgment, which takes the exact coding), the
    # reader's check is made after all: the same refusal and the same kept listings
    r = tmp_path / "r"
    r.write_text("a Q0 d1 1 0.5 r\na Q0 d2 2 1.0 r\na Q0 d1 3 3.0 r\n")
    for qrels_text in ("a 0 d1 1\na 0 d2 0\n", "a 0 d1 1\na 0 d2 0\na 0 d1 1\n"):
        q = tmp_path / "q"
        q.write_text(qrels_text)
        refused = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR")
        assert_user_error(refused, f"{r}:3: docid 'd1' is listed twice for query 'a', on lines 1 and 3")
        first = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR", "--set", "duplicates=first",
                       "--format", "json")
        doc = json.loads(first.stdout)
        assert doc["metrics"]["RR"] == 0.5
        assert doc["counts"]["run"]["ignored_reasons"] == {"duplicate docid": 1}


# --- errors: one line, exit 2 ---------------------------------------------------------------


def test_unknown_metric(case_a):
    q, r = case_a
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "-m", "nDCG@10,alpha_nDCG@10"), "alpha_nDCG@10")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "-m", "nDGC@10"), "did you mean nDCG")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "-m", "P@0"), "positive integer")


def test_unknown_axis_value_and_profile(case_a):
    q, r = case_a
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "--set", "gian=linear"), "unknown axis 'gian'", "gain")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "--set", "gain=cubic"), "gain 'cubic'", "exponential")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "--set", "gain"), "expected axis=value")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "--profile", "trec_evl"), "unknown profile 'trec_evl'")
    assert_user_error(invoke("eval", "--qrels", q, "--run", r, "-m", "nDCG(ties=sometimes)@3"), "ties")


def test_files_that_cannot_be_read(tmp_path, case_a):
    q, r = case_a
    missing = str(tmp_path / "nope.txt")
    assert_user_error(invoke("eval", "--qrels", missing, "--run", r), "nope.txt")
    assert_user_error(invoke("eval", "--qrels", q, "--run", missing), "nope.txt")
    assert_user_error(invoke("eval", "--qrels", str(tmp_path), "--run", r), str(tmp_path))  # a directory
    bad = tmp_path / "bad_qrels.txt"
    bad.write_text("a 0 d1 1\na 0 d2\n")  # line 2 has three fields
    result = invoke("eval", "--qrels", str(bad), "--run", r)
    assert_user_error(result, "bad_qrels.txt", "2")


def test_evaluation_refusal_is_a_user_error(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("a 0 d1 0\n")
    r.write_text("a Q0 d1 1 1.0 r\n")
    result = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "AP", "--set", "empty_query=raise")
    assert_user_error(result, "empty_query=raise")


def test_input_choice_errors(case_a):
    q, r = case_a
    assert_user_error(invoke("eval", "--example", "--qrels", q), "--example")
    assert_user_error(invoke("eval", "--qrels", q), "missing --run")
    assert_user_error(invoke("eval"), "missing --qrels and --run", "--example")


def test_click_usage_errors_exit_2():
    result = invoke("eval", "--example", "--format", "xml")
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "xml" in result.stderr


def test_help():
    result = invoke("--help")
    assert result.exit_code == 0
    assert "eval" in result.stdout
    result = invoke("eval", "--help")
    assert result.exit_code == 0
    assert "--metrics" in result.stdout and "--example" in result.stdout


# --- the installed console script -----------------------------------------------------------


def _script() -> str:
    name = "conformance.exe" if sys.platform == "win32" else "conformance"
    path = Path(sysconfig.get_path("scripts")) / name
    assert path.exists(), f"console script {path} not installed: run pip install -e ."
    return str(path)


def test_console_script_runs_the_example():
    done = subprocess.run([_script(), "eval", "--example", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metrics"]["RR"] == pytest.approx((1 + 1 + 1 / 3) / 3, abs=1e-12)
    assert doc["metrics"]["P@10"] == pytest.approx(1.1 / 3, abs=1e-12)


def test_console_script_error_exit_status():
    done = subprocess.run([_script(), "eval", "--example", "-m", "ndcg_cut@10"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("conformance: error: ")
    assert done.stderr.count("\n") == 1
    assert "write ndcg_cut_10 or nDCG@10" in done.stderr


def test_console_script_leaves_complete_output():
    # After eval the console script exits without the interpreter's teardown (cli.console):
    # everything written to stdout and stderr must still arrive, in every format.
    for fmt in ("table", "csv", "json"):
        done = subprocess.run([_script(), "eval", "--example", "--per-query", "--format", fmt],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        if fmt != "json":
            assert "rows read" in done.stderr
        else:  # only the warnings of the example's tie (issue 16.3), no counts
            assert "rows read" not in done.stderr and "tied scores" in done.stderr.splitlines()[-1]
        if fmt == "json":
            assert set(json.loads(done.stdout)["per_query"]) == {"q1", "q2", "q3"}
        else:
            lines = done.stdout.splitlines()
            sep = "," if fmt == "csv" else "\t"
            assert sum(1 for x in lines if x.split(sep)[1].strip() == "all") == 4, done.stdout
            assert lines[-1].split(sep)[0].strip() == "P@10"


@pytest.mark.parametrize("user_value", [None, "3"])
def test_eval_starts_no_blas_threads_unless_asked(user_value):
    # numpy's OpenBLAS reads OPENBLAS_NUM_THREADS once, at import: eval sets it to 1 first
    # (it never calls BLAS), and leaves a value the user set alone
    code = ("import os, sys\n"
            "from conformance.cli import main\n"
            "main(['eval', '--example', '--format', 'json'], standalone_mode=False)\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"{user_value or '1'} True"


def test_both_files_bad_reports_the_qrels_first(tmp_path):
    # the two files are read concurrently; the qrels error still comes first, as it would if
    # they were read one after the other (whichever reader finishes first)
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("q1 0 d1 x\n")
    r.write_text("q1 Q0 d1 1 nan t\n")
    result = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR")
    assert result.exit_code == 2
    assert str(q) in result.stderr and "relevance label 'x'" in result.stderr
    r.write_text("q1 Q0 d1 1 2 t\n" * 3)  # a duplicate in the run: found only after parsing
    q.write_text("")
    result = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR")
    assert result.exit_code == 2 and str(q) in result.stderr and "empty" in result.stderr


def test_rank_column_read_from_a_trec_file(tmp_path):
    # the reader keeps the rank column as text until rank_source=rank_column asks for it: the
    # ranks (not the scores) must then order the list
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("q1 0 b 1\n")
    r.write_text("q1 Q0 a 2 9.0 t\nq1 Q0 b 1 1.0 t\n")  # by score a first; by rank b first
    by_score = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR", "--format", "json")
    by_rank = invoke("eval", "--qrels", str(q), "--run", str(r), "-m", "RR", "--format", "json",
                     "--set", "rank_source=rank_column")
    assert json.loads(by_score.stdout)["metrics"]["RR"] == 0.5
    assert json.loads(by_rank.stdout)["metrics"]["RR"] == 1.0


def test_measures_lists_every_family_and_name():
    """``conformance measures``: one row per family record, with every spelling the parser reads
    (the table folds long cells, so the JSON form is checked for completeness)."""
    from conformance.measures import FAMILIES, KNOWN_NAMES

    result = CliRunner().invoke(main, ["measures", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [r["family"] for r in doc["families"]] == list(FAMILIES)
    listed = {n["name"] for r in doc["families"] for names in r["names"].values() for n in names}
    assert listed == set(KNOWN_NAMES)
    bpref = next(r for r in doc["families"] if r["family"] == "Bpref")
    assert {n["name"] for n in bpref["names"]["trec_eval"]} == {"bpref", "gm_bpref"}
    rbp = next(r for r in doc["families"] if r["family"] == "RBP")
    assert rbp["parameters"] == {"p": None}
    table = CliRunner().invoke(main, ["measures"])
    assert table.exit_code == 0 and "Bpref" in table.output and "infAP" in table.output
    help_text = CliRunner().invoke(main, ["eval", "--help"]).output
    assert "conformance measures" in help_text
