"""``conformance.runner``: an entry run in its worker process answers every question asked of it
in this process exactly as the entry itself does.

``IsolatedEntry`` holds an entry so that its library is imported and called in a worker; every
other attribute must be the wrapped entry's. It is not an Entry subclass: Entry's own class
attributes and methods would shadow the lookup (``__getattr__`` only sees missing names), and a
wrapper that answered with Entry's defaults gave ir_measures' gdeval measures the float64
tolerance, torchmetrics' long lists the fixed float32 one, every documented library failure as
None, and BEIR's install command without its extra.
"""

from __future__ import annotations

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import all_entries
from conformance.libs.base import Entry
from conformance.measures import parse_measure
from conformance.runner import IsolatedEntry

# what the wrapper does itself, in the worker: the point of it
OWN = {"evaluate", "import_status", "available"}
MEASURES = [parse_measure(t) for t in ("nDCG@10", "nDCG", "ERR@20", "AP", "RecallAtPrecision@10",
                                       "Rcap@10", "Hole@10", "P@5")]


def _public(cls) -> list[str]:
    return sorted(n for n in vars(cls) if not n.startswith("_") and n not in OWN)


def test_the_wrapper_holds_the_entry_and_is_not_one():
    """Not a subclass of Entry, and defining nothing of Entry's but what it does itself: every
    other name is looked up on the wrapped entry, so Entry's defaults cannot answer for it."""
    assert not issubclass(IsolatedEntry, Entry)
    restated = sorted(set(_public(Entry)) & set(vars(IsolatedEntry)))
    assert not restated, f"IsolatedEntry restates {restated} instead of asking the wrapped entry"
    assert OWN <= set(vars(IsolatedEntry))


@pytest.mark.parametrize("e", all_entries(), ids=lambda e: e.name)
def test_the_wrapper_answers_as_the_entry(e):
    w = IsolatedEntry(e)
    qrels = Qrels.from_records([("q1", "a", 0.5), ("q2", "b", -1)])
    run = Run.from_records([("q1", "a", 1.0), ("q1", "c", 0.5), ("q3", "d", 1.0)])
    for name in _public(Entry):
        attr = getattr(Entry, name)
        if isinstance(attr, property) or not callable(attr):
            assert getattr(w, name) == getattr(e, name), name
    assert w.install_command() == e.install_command()
    for m in MEASURES:
        assert w.supports(m) == e.supports(m)
        assert w.tolerance_for(m, 1000) == e.tolerance_for(m, 1000), m.text
        if e.supports(m):
            assert w.profile(m) == e.profile(m)
            assert w.known_failure(qrels, run, m) == e.known_failure(qrels, run, m), m.text
    assert w.default_profile() == e.default_profile()
    assert w.split_supported(MEASURES) == e.split_supported(MEASURES)
