"""Calling one library entry on a small hand-written input, for the tests/libs/test_*.py files:
the live library is called through its adapter, never mocked."""

from __future__ import annotations

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.measures import Measure, parse_measure


def call(name: str, m: Measure | str, qrels: list, run: list) -> LibraryValues:
    """Entry ``name`` on ``m`` (a Measure or its name); the entry must claim to support it."""
    m = parse_measure(m) if isinstance(m, str) else m
    e = entry(name)
    assert e.supports(m), f"{name} should support {m}"
    return e.evaluate(Qrels.from_records(qrels), Run.from_records(run), [m])[m]


def one_list(labels, scores, qid="q1", pad=0):
    """One query: document d<i> has labels[i] (None: unjudged) and scores[i], listed in order.
    ``pad`` zero-pads i (d01, d02, ...) where docid byte order must follow list order."""
    qrels = [(qid, f"d{i:0{pad}d}", l) for i, l in enumerate(labels) if l is not None]
    run = [(qid, f"d{i:0{pad}d}", s) for i, s in enumerate(scores)]
    return qrels, run


def only_value(lv: LibraryValues) -> float:
    """The single query's value; the call must not have failed."""
    assert lv.error is None, lv.error
    (v,) = lv.per_query.values()
    return v
