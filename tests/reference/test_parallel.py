"""Large evaluations run in two threads, one per half of the queries (``parallel.query_halves``).

The halves must give the same values as one pass over every row, bit for bit, under every
convention: each per-query value depends on its own query's rows only; and the same answer of
the tie check (``Evaluation.tie_changed``). Here the split is
forced on small generated cases (``parallel.MIN_ROWS`` lowered, two cores assumed) and compared with
the single pass on the same case, for both docid paths (the word form the readers give, and the
exact vocabulary of ``from_records``). A refusal must be the same refusal.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conformance import io, parallel
from conformance.conventions import AXES, TREC_EVAL
from conformance.errors import EvaluationError
from conformance.measures import parse_measures
from strategies import cases

E = importlib.import_module("conformance.reference.evaluate")

MEASURES = parse_measures("nDCG@3,nDCG,DCG@3,AP,AP@3,RR,RR@3,P@3,R@3,Rprec,Success@1,F1@3,"
                          "T(alpha=0.5)@3,Fe@3")
CLOSED = {a: sorted(x.values) for a, x in AXES.items() if x.values and a not in ("depth",)}


@st.composite
def conventions(draw):
    settings_ = [f"{a}={draw(st.sampled_from(v))}" for a, v in CLOSED.items()]
    settings_.append(f"relevance_threshold={draw(st.sampled_from([1, 2]))}")
    settings_.append(f"depth={draw(st.sampled_from(['none', '2', '5']))}")
    return TREC_EVAL.with_settings(settings_)


def _outcome(qrels, run, conv, split: bool, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ROWS", 2 if split else 1 << 62)
    monkeypatch.setattr(parallel, "two_cores", lambda: True)
    try:
        ev = E.evaluate(qrels, run, MEASURES, conv, tie_check=True)
    except EvaluationError as e:
        return str(e)
    return ev


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    np.testing.assert_array_equal(a.qids, b.qids)
    for m in MEASURES:
        for part in ("per_query", "upper", "counted"):
            x, y = getattr(a, part)[m], getattr(b, part)[m]
            # bit for bit: the same floats, NaN where NaN
            assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8)), (m, part)
        # the tie check's answer: the pieces' tie groups taken as one are the single pass's
        x, y = a.tie_changed.get(m), b.tie_changed.get(m)  # none under ties=unspecified
        assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), (m, "tie_changed")


def _word_form(case):
    # the dict readers refuse empty input; one row has no word form (data.DocWords)
    assume(len(case.qrels_records) > 1 and len(case.run_records) > 1)
    run = io.run_from_dict(_nested(case.run_records))
    qrels = io.qrels_from_dict(_nested(case.qrels_records))
    assert run.doc_words is not None and qrels.doc_words is not None
    return qrels, run


def _nested(records):
    out: dict[str, dict[str, float]] = {}
    for q, d, v in records:
        out.setdefault(q, {})[d] = v
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(negative=True, fractional=True), conv=conventions(), words=st.booleans())
def test_halves_equal_one_pass(case, conv, words, monkeypatch):
    qrels, run = _word_form(case) if words else (case.qrels, case.run)
    _same(_outcome(qrels, run, conv, True, monkeypatch), _outcome(qrels, run, conv, False, monkeypatch))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(negative=True, fractional=True), conv=conventions(), words=st.booleans())
def test_pieces_equal_one_pass(case, conv, words, monkeypatch):
    # each half taken in pieces of one or two queries (``parallel.query_pieces``), one after the other
    qrels, run = _word_form(case) if words else (case.qrels, case.run)
    one_pass = _outcome(qrels, run, conv, False, monkeypatch)
    monkeypatch.setattr(parallel, "PIECE_ROWS", 1)
    monkeypatch.setattr(parallel, "MAX_PIECES", 1 << 62)
    _same(_outcome(qrels, run, conv, True, monkeypatch), one_pass)


def test_query_pieces_are_whole_queries_of_about_the_rows_asked(monkeypatch):
    monkeypatch.setattr(parallel, "PIECE_ROWS", 2)
    q = np.array([0, 0, 0, 1, 1, 2, 3, 3, 4])
    # a piece ends at the first query boundary 2 rows or more past its start; the last piece
    # takes the rest when fewer than 2 rows would be left after a cut
    assert parallel.query_pieces(q, slice(0, 9)) == [slice(0, 3), slice(3, 5), slice(5, 9)]
    assert parallel.query_pieces(q, slice(3, 9)) == [slice(3, 5), slice(5, 9)]
    assert parallel.query_pieces(q, slice(0, 3)) == [slice(0, 3)]  # fewer than twice the rows: one piece
    monkeypatch.setattr(parallel, "MAX_PIECES", 2)  # then 9 // 2 = 4 rows a piece at least
    assert parallel.query_pieces(q, slice(0, 9)) == [slice(0, 5), slice(5, 9)]


def test_split_happens_on_a_run_listed_query_by_query(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ROWS", 2)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    q = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    assert parallel.query_halves(q, 3) == [slice(0, 5), slice(5, 8)]
    assert parallel.query_halves(np.array([2, 2, 0, 0, 1]), 3) == [slice(0, 2), slice(2, 5)]
    assert len(parallel.query_halves(np.array([0, 1, 0, 1]), 2)) == 1  # query 0 comes back
    assert len(parallel.query_halves(np.array([0, 0, 0, 0]), 1)) == 1  # one query: no second half
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 1)
    assert len(parallel.query_halves(q, 3)) == 1


@pytest.mark.parametrize("split", [True, False])
def test_refusal_is_the_single_pass_refusal(split, monkeypatch):
    # q1 in the first half, q2 in the second, each with a one-document list: single_document=raise
    # names the first such query whichever half finds one
    qrels = io.qrels_from_dict({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}})
    run = io.run_from_dict({"q1": {"a": 1.0}, "q2": {"b": 1.0, "x": 0.5}, "q3": {"c": 1.0}})
    conv = TREC_EVAL.with_settings(["single_document=raise"])
    out = _outcome(qrels, run, conv, split, monkeypatch)
    assert isinstance(out, str) and "'q1'" in out


def test_each_waits_for_every_part_and_raises_the_first_error():
    import time

    finished = []

    def work(part: slice):
        if part.start == 1:
            raise ValueError("part 1")
        if part.start == 2:
            time.sleep(0.2)
            finished.append(2)
            raise KeyError("part 2")
        return part.start

    with pytest.raises(ValueError, match="part 1"):
        parallel.each(work, [slice(0, 1), slice(1, 2), slice(2, 3)])
    assert finished == [2]  # the slow part had finished before the error was raised
    assert parallel.each(work, [slice(0, 1), slice(5, 6)]) == [0, 5]


TIE_MEASURES = parse_measures("nDCG@3,nDCG,AP,AP@3,RR,RR@2,P@1,P@3,R@3,NumRelRet,Success@2,Bpref")
TIE_VARIATIONS = [{}, {"ties": "input_order"}, {"ties": "average"}, {"ties": "group_last"},
                  {"depth": 4}, {"relevance_threshold": 2}, {"gain": "exponential"},
                  {"ideal": "retrieved"}, {"rr_cutoff": "honour"}, {"score_precision": "float64"}]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(negative=True, fractional=True, max_docs=12), variation=st.sampled_from(TIE_VARIATIONS))
def test_the_tie_check_of_pieces_equals_that_of_one_pass(case, variation, monkeypatch):
    """Under the trec_eval conventions the check decides by each family's rule (the relevant
    rows above a group, its first rank, its relevant count): the pieces' groups, taken as one,
    give every query the answer of one pass."""
    conv = TREC_EVAL.replace(**{"label_type": "float", **variation})

    def changed(split: bool):
        monkeypatch.setattr(parallel, "MIN_ROWS", 2 if split else 1 << 62)
        monkeypatch.setattr(parallel, "two_cores", lambda: True)
        monkeypatch.setattr(parallel, "PIECE_ROWS", 1 if split else parallel.PIECE_ROWS)
        monkeypatch.setattr(parallel, "MAX_PIECES", 1 << 62 if split else parallel.MAX_PIECES)
        out = {}
        for m in TIE_MEASURES:
            try:
                ev = E.evaluate(case.qrels, case.run, [m], m.conventions(conv), tie_check=True)
            except EvaluationError as e:
                out[m] = str(e)
            else:
                c = ev.tie_changed.get(m)
                out[m] = None if c is None else c.tolist()
        return out

    one_pass = changed(False)
    assert changed(True) == one_pass


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("settings_", [(), ("ties=unspecified",), ("ideal=retrieved", "nonpositive_scores=not_relevant")])
def test_an_evaluation_leaves_nothing_for_the_cycle_collector(tmp_path, monkeypatch, split, settings_):
    """``evaluate`` on a qrels and a run makes the join itself and lets it go on return: with
    the cyclic garbage collector off, nothing it made is left in a reference cycle (its
    functions referring to each other held every array of the evaluation, and the join, until
    the collector ran: ~60 MB a call on 2M rows for a caller evaluating in a loop). In one pass
    and in pieces; under a rule that ranks each tie order and asks the averaged grouping
    (``ties=unspecified``, where some of the measures refuse), and where masked rows ask the
    unmasked list's R."""
    import gc

    rng = np.random.default_rng(7)
    (tmp_path / "qrels").write_text("".join(f"q{q} 0 d{d} {int(rng.integers(0, 3))}\n"
                                            for q in range(6) for d in range(0, 40, 2)))
    (tmp_path / "run").write_text("".join(f"q{q} Q0 d{d} 1 {int(rng.integers(-3, 8))} r\n"
                                          for q in range(6) for d in range(40)))
    qrels, run = io.load_qrels(str(tmp_path / "qrels")), io.load_run(str(tmp_path / "run"))
    conv = TREC_EVAL.with_settings(list(settings_))
    _outcome(qrels, run, conv, split, monkeypatch)  # first use: whatever importing leaves
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        _outcome(qrels, run, conv, split, monkeypatch)  # a value or a refusal (Fe@3, AP@3)
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()
