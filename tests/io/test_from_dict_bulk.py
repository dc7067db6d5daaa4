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


def _per_query(obj, kind):
    """``obj`` read pair by pair (the JSON reader's ``Obj`` form), as the data type builds it."""
    as_pairs = Obj((q, Obj(d.items())) for q, d in obj.items())
    parsed = from_nested(as_pairs, "<dict>", "label" if kind is Qrels else "score").parsed("record")
    return kind.from_parsed(parsed)


_STRING_KEYED = {"q1": {"d1": 2.5, "d2": 1}, "q2": {}, "é": {"日本": 0, "x" * 200: -1.5, "y" * 130: 3},
                 "q3": {"d1": 3}}


@pytest.mark.parametrize("kind", [Qrels, Run])
def test_a_dict_keyed_by_strings_is_read_as_the_per_query_path_reads_it(kind):
    # the plain path keeps the docids as strings (no word form until asked): same table
    fast, slow = kind.from_dict(_STRING_KEYED), _per_query(_STRING_KEYED, kind)
    assert fast.doc_list is not None and slow.doc_list is None
    assert fast.qids.tolist() == slow.qids.tolist() and np.array_equal(fast.qcode, slow.qcode)
    assert fast.doc_ids().tolist() == slow.doc_ids().tolist()
    assert np.array_equal(fast.line, slow.line) and fast.counts.to_dict() == slow.counts.to_dict()
    values = (lambda t: t.label) if kind is Qrels else (lambda t: t.score)
    assert np.array_equal(values(fast), values(slow))
    assert fast.distinct_pairs is True and fast.qid_strings.to_pylist() == slow.qid_strings.to_pylist()
    assert fast.to_dict() == slow.to_dict()


def test_a_lone_surrogate_in_a_query_id_is_named_on_the_plain_path_too():
    with pytest.raises(InputError) as e:
        Run.from_dict({"q1": {"d1": 1.0}, "\ud800": {"d2": 1.0}})
    assert "the query id '\\ud800' holds a lone surrogate" in str(e.value)


def test_the_doc_list_orders_any_rows_as_the_word_form_does():
    from conformance.io.columnar import DocList, DocWords, arrow_strings

    ids = ["b", "a", "ab", "é", "a", "", "日本", "b\x00", "z" * 20]
    words = DocWords.of(arrow_strings(ids))
    for rows in (None, np.array([3, 0, 4, 1]), slice(2, 7), np.arange(len(ids))[::-1]):
        for descending in (False, True):
            mine = np.lexsort(DocList(ids).sort_keys(rows, descending))
            theirs = np.lexsort(words.sort_keys(rows, descending))
            assert mine.tolist() == theirs.tolist()
        assert DocList(ids).order_codes(rows).tolist() == words.order_codes(rows).tolist()
    # ids past the word form's 128 bytes: ordered by code point, which is their bytes' order
    long = ["b" * 200, "a" * 200, "a" * 199, "é" * 100, "a" * 200]
    codes = DocList(long).order_codes(np.array([0, 1, 2, 3, 4]))
    by_bytes = sorted(set(s.encode() for s in long))
    assert codes.tolist() == [by_bytes.index(s.encode()) for s in long]
