"""One case's reference values under every convention set of a :class:`Space`, read from the
check-paper sweep.

The sweep (``conformance.reference.sweep.Sweep``) evaluates the case once under every
combination of the swept values that can differ on it; a cell of the space is looked up in its
grid. A value the sweep's grid does not hold is one it proves equal, on this input, to one it
holds (``Facts.domains``: ``depth`` beyond every list is no depth, a threshold between two
labels is the next label, a value the input cannot tell from the default is the default), or
one of the behaviours the space adds, each derived from the reference without a second
arithmetic:

- a threshold above every label (nothing relevant): a second sweep of the measure with that
  threshold fixed by its name, as ``P(rel=2)@5`` fixes it;
- ``empty_query=raise`` / ``nan``: the case has a query with nothing relevant exactly when the
  cells ``zero`` and ``one`` differ; then the cell fails / is NaN, else it is the ``zero`` value;
- ``ties=unspecified``: the range of the ``docid_asc`` and ``docid_desc`` values (the cases hold
  at most one tied pair, so these two orders are every order of the tied documents);
- ``negative_labels``, ``label_type``, ``query_set``, ``single_document`` = raise: the cell fails
  where ``evaluate`` under that value refuses the case, and is the value it equals otherwise.

:meth:`CaseTable.values` gives ``(low, high, failed)`` per cell, vectorized over any number of
cells.
"""

from __future__ import annotations

from dataclasses import replace as _replace
from typing import Any

import numpy as np

from conformance.errors import ConformanceError
from conformance.infer.cases import Case
from conformance.infer.space import RAISE_EQUALS, Space
from conformance.io import Qrels, Run
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.reference.sweep import Grid, Sweep
from conformance.reference.sweep_engine import BASE


class _Lookup:
    """Flat positions in one grid of the cells of a space (value indices per space axis)."""

    def __init__(self, grid: Grid, space: Space, threshold_cap: Any = None) -> None:
        self.lo, self.hi, self.err = grid.lo.ravel(), grid.hi.ravel(), grid.error.ravel()
        strides = np.cumprod((grid.lo.shape + (1,))[::-1])[::-1][1:] if grid.axes else ()
        self.base = 0
        self.terms: list[tuple[int, np.ndarray]] = []  # (space column, position per value index)
        # per term, a class per value index: values whose slices of the grid are identical
        self.alike: list[np.ndarray] = []
        for g, (axis, dom, stride) in enumerate(zip(grid.axes, grid.domains, strides)):
            if axis not in space.axes:  # not shown by this calling convention: the default
                self.base += int(stride) * dom.index(getattr(BASE, axis))
                continue
            at = [_in_domain(axis, v, dom) for v in space.values[axis]]
            self.terms.append((space.column(axis), int(stride) * np.array(at, np.int64)))
            slices: dict[bytes, int] = {}
            self.alike.append(np.array([slices.setdefault(_slice_bytes(grid, g, i), len(slices))
                                        for i in at], np.int64))

    def __call__(self, idx: np.ndarray):
        at = np.full(idx.shape[0], self.base, np.int64)
        for col, pos in self.terms:
            at += pos[idx[:, col]]
        return self.lo[at], self.hi[at], self.err[at]


def _slice_bytes(grid: Grid, axis: int, i: int) -> bytes:
    """The grid's values at index ``i`` of its ``axis``, as bytes (equal bytes: equal values)."""
    return b"".join(a.take(i, axis=axis).tobytes() for a in (grid.lo, grid.hi, grid.error))


def _in_domain(axis: str, v: Any, dom: tuple) -> int:
    """The index in a grid's domain of the value equal to ``v`` on this input."""
    if v in dom:
        return dom.index(v)
    if axis == "depth":  # no list is longer than the depth
        return dom.index(None)
    if axis == "relevance_threshold":  # no label between v and the next threshold up
        above = [d for d in dom if d >= v]
        return dom.index(min(above)) if above else len(dom) - 1  # beyond: the other sweep
    if v in RAISE_EQUALS.values() or v == getattr(BASE, axis):
        return dom.index(getattr(BASE, axis))
    return dom.index(getattr(BASE, axis))  # a value Facts.domains proves equal to the default


class CaseTable:
    """The reference's values on ``case`` under every cell of ``space``."""

    def __init__(self, case: Case, space: Space) -> None:
        self.case, self.space = case, space
        m = space.measure
        self.prep = Prepared(Qrels.from_dict(case.qrels()), Run.from_dict(case.run()))
        sweep = Sweep(self.prep, [m])
        self.plain = _Lookup(sweep.grids[m], space)
        self.cap = None  # the largest threshold the plain sweep holds; above it, self.above
        self.above = None
        if "relevance_threshold" in space.axes:
            dom = sweep.domains["relevance_threshold"]
            if max(space.values["relevance_threshold"]) > max(dom):
                self.cap = max(dom)
                fixed = Measure(m.family, m.cutoff, m.overrides + (("relevance_threshold", self.cap + 1),),
                                params=m.params)
                self.above = _Lookup(Sweep(self.prep, [fixed]).grids[fixed], space)
        self.refuses: dict[str, bool] = {}
        for axis in RAISE_EQUALS:
            if axis in space.axes:
                self.refuses[axis] = self._refuses(axis)
        self._subtables: dict[str, CaseTable] = {}

    def _refuses(self, axis: str) -> bool:
        m = self.space.measure
        try:
            evaluate(self.prep, None, [m], m.conventions(_replace(BASE, **{axis: "raise"})))
        except ConformanceError:
            return True
        return False

    def query(self, qid: str) -> "CaseTable":
        """The table of this case's query ``qid`` alone (a per-query value's reference)."""
        if qid not in self._subtables:
            self._subtables[qid] = CaseTable(self.case.only(qid), self.space)
        return self._subtables[qid]

    def _lookup(self, idx: np.ndarray):
        if self.above is None:
            return self.plain(idx)
        col = self.space.column("relevance_threshold")
        thresholds = np.array(self.space.values["relevance_threshold"])
        high = thresholds[idx[:, col]] > self.cap
        lo, hi, err = self.plain(idx)
        if high.any():
            a_lo, a_hi, a_err = self.above(idx[high])
            lo, hi, err = lo.copy(), hi.copy(), err.copy()
            lo[high], hi[high], err[high] = a_lo, a_hi, a_err
        return lo, hi, err

    def _tied(self, idx: np.ndarray):
        """As _lookup, with ties=unspecified read as the range of docid_asc and docid_desc."""
        sp = self.space
        if "ties" not in sp.axes:
            return self._lookup(idx)
        col = sp.column("ties")
        unspecified = idx[:, col] == sp.index_of("ties", "unspecified")
        if not unspecified.any():
            return self._lookup(idx)
        a, b = idx.copy(), idx.copy()
        a[unspecified, col] = sp.index_of("ties", "docid_desc")
        b[unspecified, col] = sp.index_of("ties", "docid_asc")
        lo1, hi1, e1 = self._lookup(a)
        lo2, hi2, e2 = self._lookup(b)
        return np.fmin(lo1, lo2), np.fmax(hi1, hi2), e1 | e2

    def alike(self, axis: str) -> list:
        """A key per value index of ``axis``: cells that differ only in values with equal keys
        have equal :meth:`values`. Values the methods above test by index (a ``raise``
        that refuses, ``empty_query`` nan and raise, ``ties=unspecified``, a threshold when a
        second sweep holds those above the cap) are keyed alone; the others by the classes of
        the grid slices they are looked up in."""
        sp, col = self.space, self.space.column(axis)
        alone = set()
        if axis in self.refuses:
            alone.add(sp.index_of(axis, "raise"))
        if axis == "empty_query":
            alone |= {sp.index_of(axis, "nan"), sp.index_of(axis, "raise")}
        if axis == "ties":
            alone.add(sp.index_of(axis, "unspecified"))
        if axis == "relevance_threshold" and self.above is not None:
            alone |= set(range(len(sp.values[axis])))
        lookups = [lk for lk in (self.plain, self.above) if lk is not None]
        return [("alone", i) if i in alone else
                tuple(int(cls[i]) for lk in lookups for (c, _), cls in zip(lk.terms, lk.alike) if c == col)
                for i in range(len(sp.values[axis]))]

    def values(self, idx: np.ndarray):
        """(low, high, failed) of the cells ``idx`` ((n, len(space.axes)) value indices)."""
        sp = self.space
        idx = np.array(idx, np.int64, copy=True)
        failed = np.zeros(idx.shape[0], bool)
        for axis, refuses in self.refuses.items():
            col = sp.column(axis)
            raising = idx[:, col] == sp.index_of(axis, "raise")
            if refuses:
                failed |= raising
            idx[raising, col] = sp.index_of(axis, RAISE_EQUALS[axis])
        if "empty_query" not in sp.axes:
            lo, hi, err = self._tied(idx)
            return lo, hi, err | failed
        col = sp.column("empty_query")
        nan_rule = idx[:, col] == sp.index_of("empty_query", "nan")
        raise_rule = idx[:, col] == sp.index_of("empty_query", "raise")
        special = nan_rule | raise_rule
        zero = idx
        if special.any():
            zero = idx.copy()
            zero[special, col] = sp.index_of("empty_query", "zero")
        lo, hi, err = self._tied(zero)
        if special.any():
            one = zero.copy()
            one[special, col] = sp.index_of("empty_query", "one")
            lo1, hi1, err1 = self._tied(one[special])
            empty = np.zeros(idx.shape[0], bool)
            empty[special] = ~_same(lo[special], lo1) | ~_same(hi[special], hi1) | (err[special] != err1)
            failed |= raise_rule & empty
            lo = np.where(nan_rule & empty, np.nan, lo)
            hi = np.where(nan_rule & empty, np.nan, hi)
        return lo, hi, err | failed


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))
