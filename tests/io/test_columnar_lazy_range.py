"""``io.columnar.LazyRange`` stands in for ``np.arange(start, stop)``: every index gives what the array
gives (checked against numpy itself), and readers and ``Prepared`` keep one instead of the array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import io
from conformance.io.columnar import LazyRange
from conformance.reference.prepare import Prepared


@settings(max_examples=300, deadline=None)
@given(start=st.integers(-5, 5), n=st.integers(0, 12), data=st.data())
def test_indexing_is_the_arrays(start, n, data):
    lazy, real = LazyRange(start, start + n), np.arange(start, start + n, dtype=np.int64)
    assert len(lazy) == lazy.size == real.size and lazy.shape == real.shape
    np.testing.assert_array_equal(np.asarray(lazy), real)
    assert lazy.tolist() == real.tolist() == list(lazy)
    sl = slice(data.draw(st.none() | st.integers(-15, 15)), data.draw(st.none() | st.integers(-15, 15)),
               data.draw(st.sampled_from([None, 1, 2, -1, -3])))
    np.testing.assert_array_equal(np.asarray(lazy[sl]), real[sl])
    if n:
        i = data.draw(st.integers(-n, n - 1))
        assert lazy[i] == real[i]
        idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=8)), dtype=np.int64)
        np.testing.assert_array_equal(lazy[idx], real[idx])
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        np.testing.assert_array_equal(lazy[mask], real[mask])
        assert lazy.min() == real.min() and lazy.max() == real.max()
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            lazy[bad]
        with pytest.raises(IndexError):
            lazy[np.array([bad])]


def test_readers_and_prepared_keep_ranges(tmp_path):
    run_path, qrels_path = tmp_path / "r.txt", tmp_path / "q.txt"
    run_path.write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 a 1 3 t\n")
    qrels_path.write_text("q1 0 a 1\nq2 0 a 0\n")
    run, qrels = io.read_run(run_path), io.read_qrels(qrels_path)
    assert isinstance(run.line, LazyRange) and run.line.tolist() == [1, 2, 3]
    prep = Prepared(qrels, run)
    assert isinstance(prep.run_line, LazyRange) and isinstance(prep.run_order, LazyRange)
    assert prep.run_order.tolist() == [0, 1, 2]
