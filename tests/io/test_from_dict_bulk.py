"""``Qrels.from_dict`` / ``Run.from_dict`` read a dict of dicts in one bulk pass
(``records._bulk``): the same columns, record numbers and counts as the per-query path, which
reads the same pairs given as ``records.Obj`` (the JSON reader's form), and the same error for
the first bad value a reader going query by query meets."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.errors import InputError
from conformance.io.data import Qrels, Run
from conformance.io.records import Obj, from_nested


def _both(obj):
    as_pairs = Obj((q, Obj(d.items()) if isinstance(d, dict) else d) for q, d in obj.items())
    return from_nested(obj, "<dict>", "score").parsed("record"), from_nested(as_pairs, "<dict>", "score").parsed("record")


def test_bulk_columns_equal_the_per_query_ones():
    obj = {"q1": {"d1": 2.5, "d2": 1}, "q2": {}, 7: {"d1": 0, 12: -1.5}, "q3": {"x": 3}}
    bulk, slow = _both(obj)
    assert bulk.qid.to_pylist() == slow.qid.to_pylist() == ["q1", "q1", "7", "7", "q3"]
    assert bulk.docid.to_pylist() == slow.docid.to_pylist()
    assert np.array_equal(bulk.value, slow.value) and np.array_equal(bulk.line, slow.line)
    assert bulk.line.tolist() == [1, 2, 4, 5, 6]  # the empty query q2 is record 3
    assert bulk.counts.to_dict() == slow.counts.to_dict()


@pytest.mark.parametrize("obj, message", [
    ({"q1": {"d1": 1.0}, "q2": {"d2": "high"}, "q3": {4.5: 1}},
     "record 2 (query 'q2'): the score of docid 'd2' is the string 'high': expected a number"),
    ({"q1": {"d1": 1.0, 2.5: 1.0}, "q2": {"d2": float("nan")}},
     "record 2 (query 'q1'): the docid is float 2.5: expected a string or an integer"),
    ({"q1": {"d1": True}}, "record 1 (query 'q1'): the score of docid 'd1' is the boolean true: expected a number"),
])
def test_the_first_problem_in_query_order_is_named(obj, message):
    with pytest.raises(InputError) as e:
        Run.from_dict(obj)
    assert message in str(e.value)


def test_qrels_from_dict_bulk_round_trip():
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    assert Qrels.from_dict(qrels).to_dict() == {"q1": {"d1": 1.0, "d2": 0.0}, "q2": {"d3": 2.0}}
