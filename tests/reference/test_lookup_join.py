"""A run read from a dict keyed by strings is joined to its qrels by dictionary lookups
(``prepare.looked_up_labels``): the labels, and so every value, are those of the join on the
docids' bytes."""

from __future__ import annotations

import numpy as np
import pytest

import conformance
from conformance.io.data import Qrels, Run
from conformance.reference.prepare import Prepared, judgments, looked_up_labels

QRELS = {"q1": {"a": 1, "b": np.int64(2), "c": np.float32(0.7), "d": 2**60, "é": 3, "日本": -1},
         "q2": {"q2": 1, "x" * 200: 2}, "q3": {}, "q4": {"z": 1}}
RUN = {"q1": {"a": 0.5, "b": 0.5, "zz": 0.5, "é": 0.1, "日本": 0.9, "c": 0.3},
       "q2": {"q2": 1.0, "x" * 200: 1.0, "x" * 199: 1.0}, "q5": {"a": 1.0}, "q6": {}}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.tobytes() == b.tobytes()  # bit for bit, NaN included


@pytest.mark.parametrize("judged", ["the user's dict", "judgments"])
def test_the_looked_up_labels_are_the_join_s(judged):
    qrels, run = Qrels.from_dict(QRELS), Run.from_dict(RUN)
    table = QRELS if judged == "the user's dict" else judgments(qrels)
    labels = looked_up_labels(table, run)
    assert _same(labels, Prepared(qrels, run).run_label)


def test_judgments_of_qrels_read_from_a_file_hold_every_judgment(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q2 0 d1 1\nq1 0 d2 2\nq2 0 d3 0\nq1 0 d2 2\n")  # a repeat of one label
    qrels = conformance.io.load_qrels(str(path))
    assert judgments(qrels) == {"q2": {"d1": 1.0, "d3": 0.0}, "q1": {"d2": 2.0}}


def test_only_a_run_read_from_a_dict_keyed_by_strings_is_looked_up():
    assert looked_up_labels(QRELS, Run.from_dict({"q1": {1: 1.0}})) is None  # an integer id
    assert looked_up_labels(QRELS, Run.from_records([("q1", "a", 1.0)])) is None


@pytest.mark.parametrize("over", [{}, {"ties": "unspecified"}, {"ties": "docid_asc"},
                                  {"duplicates": "set"}, {"identical_ids": "drop"},
                                  {"unretrieved": "appended"}])
def test_evaluate_and_the_evaluator_give_the_join_s_values(over):
    # heavy ties (scores 0..2) order tied rows by their docid strings, without a word form of
    # the whole run; every value equals the evaluation of the same inputs prebuilt and joined
    rng = np.random.default_rng(7)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(60, 20, replace=False)}
             for i in range(30)}
    run = {f"q{i}": {f"d{j}": float(rng.integers(0, 3)) for j in range(50)} for i in range(32)}
    measures = "nDCG@10,AP,RR,P@5,R@20,bpref"
    prebuilt = Run.from_records([(q, d, s) for q, ds in run.items() for d, s in ds.items()])
    joined = conformance.evaluate(Qrels.from_dict(qrels), prebuilt, measures, **over)
    looked_up = conformance.evaluate(qrels, run, measures, **over)
    again = conformance.Evaluator(qrels, measures, **over).evaluate(run)
    for got in (looked_up, again):
        assert got.per_query_low == joined.per_query_low and got.per_query_high == joined.per_query_high
        assert got.low == joined.low and got.counts == joined.counts


def test_the_evaluator_keeps_the_judged_side_only_for_the_same_queries():
    # runs over other queries, and a run again after them: each as evaluate gives it alone
    rng = np.random.default_rng(3)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 4)) for j in range(20)} for i in range(12)}
    runs = [{f"q{i}": {f"d{j}": float(rng.random()) for j in range(25)} for i in qs}
            for qs in (range(12), range(3, 15), range(12), [0, 5])]
    for over in ({}, {"gain": "exponential", "query_set": "qrels"}):
        ev = conformance.Evaluator(qrels, "nDCG@10,nDCG,AP,R@5", **over)
        for run in runs + runs[::-1]:
            got, alone = ev.evaluate(run), conformance.evaluate(qrels, run, "nDCG@10,nDCG,AP,R@5", **over)
            assert got.per_query == alone.per_query and got.mean == alone.mean


def test_the_evaluator_prepares_the_judged_side_when_it_is_made():
    # as pytrec_eval's constructor prepares its qrels: the first run over the qrels' queries
    # finds the judged side kept, and adds nothing to it; a run over other queries replaces it
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1, "e": 3}}
    ev = conformance.Evaluator(qrels, "nDCG@3,AP")
    kept = dict(ev._shared)
    assert len(kept) == 2 and kept["qids"].tolist() == ["q1", "q2"]  # the queries, one convention set
    run = {"q1": {"a": 0.5, "c": 0.7, "x": 0.9}, "q2": {"e": 0.1, "d": 0.2}}
    got = ev.evaluate(run)
    assert ev._shared.keys() == kept.keys() and all(ev._shared[k] is kept[k] for k in kept)
    # q1: x, c (label 1), a (label 2) -> DCG 1/log2(3) + 2/2; ideal 2, 1 -> 2 + 1/log2(3)
    assert got.per_query["nDCG@3"]["q1"] == pytest.approx((1 / np.log2(3) + 1) / (2 + 1 / np.log2(3)))
    assert got.mean == conformance.evaluate(qrels, run, "nDCG@3,AP").mean


def test_an_evaluator_over_qrels_its_conventions_refuse_is_made_and_refuses_each_run():
    # the preparation meets the refusal first; it keeps nothing and says nothing: each run's
    # evaluation gives the error evaluate gives
    qrels, run = {"q1": {"a": 1.5}}, {"q1": {"a": 1.0}}
    ev = conformance.Evaluator(qrels, "nDCG@3", label_type="raise")
    assert ev._shared == {}
    with pytest.raises(conformance.ConformanceError) as got:
        ev.evaluate(run)
    with pytest.raises(conformance.ConformanceError) as alone:
        conformance.evaluate(qrels, run, "nDCG@3", label_type="raise")
    assert str(got.value) == str(alone.value)
