"""Sums over each query's contiguous rows: a range's sum, a running sum (or product, maximum)
down each list, the (start, count) of each query. Each is computed over a query's own rows
alone, in list order, so no query's value carries rounding from another's."""

from __future__ import annotations

import numpy as np


def range_sums(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``sum(x[starts[j] : starts[j] + lengths[j]])`` for every j (0 where the length is 0).

    One ``np.add.reduceat`` over (start, end) index pairs: each range is summed on its own, so
    sums never carry rounding from other queries.
    """
    return planned_sums(x, range_plan(starts, lengths))


def range_plan(starts: np.ndarray, lengths: np.ndarray) -> tuple[int, np.ndarray, np.ndarray | None]:
    """What :func:`range_sums` needs of the ranges alone: (how many, which are not empty, their
    (start, end) index pairs for ``np.add.reduceat``; None when every range is empty)."""
    nz = lengths > 0
    if not nz.any():
        return starts.size, nz, None
    idx = np.empty(2 * int(nz.sum()), dtype=np.int64)
    idx[0::2] = starts[nz]
    idx[1::2] = starts[nz] + lengths[nz]
    return starts.size, nz, idx


def planned_sums(x: np.ndarray, ranges: tuple[int, np.ndarray, np.ndarray | None]) -> np.ndarray:
    size, nz, idx = ranges
    out = np.zeros(size, dtype=np.float64)
    if idx is None:
        return out
    x = x.astype(np.float64, copy=False)
    if idx[-1] == x.size:
        # the last range ends at the end of x: reduceat's last index sums to the end by
        # itself, so x need not be copied to hold an end marker
        out[nz] = np.add.reduceat(x, idx[:-1])[0::2]
    else:
        out[nz] = np.add.reduceat(x, idx)[0::2]
    return out


_IDENTITY = {np.add: 0.0, np.multiply: 1.0, np.maximum: -np.inf, np.minimum: np.inf}


def segment_accumulate(ufunc, x: np.ndarray, start: np.ndarray, n: np.ndarray,
                       reverse: bool = False) -> np.ndarray:
    """Per row, ``ufunc.accumulate`` of ``x`` over its query's rows from the first (from the
    last when ``reverse``) to it: the running sum, product, maximum of each list, computed in
    list order as a loop over the list would, so no rounding comes from other queries.

    Queries are grouped by length (lengths within a factor of two), and each group is one
    dense (queries x length) block accumulated along its rows: at most 64 blocks, holding at
    most twice the rows, whatever the lengths."""
    out = np.empty(x.size, dtype=np.float64)
    have = np.flatnonzero(n > 0)
    if have.size == 0:
        return out
    lengths = n[have]
    bucket = np.ceil(np.log2(lengths)).astype(np.int64)
    for b in np.unique(bucket):
        qs = have[bucket == b]
        length = n[qs]
        width = int(length.max())
        offset = np.arange(width)[None, :]
        valid = offset < length[:, None]
        if reverse:
            idx = start[qs][:, None] + length[:, None] - 1 - offset
        else:
            idx = start[qs][:, None] + offset
        block = np.where(valid, x[np.where(valid, idx, start[qs][:, None])], _IDENTITY[ufunc])
        acc = ufunc.accumulate(block, axis=1)
        out[idx[valid]] = acc[valid]
    return out


def segments(q: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by query code: (start index, row count) of every query."""
    n = np.bincount(q, minlength=n_queries).astype(np.int64)
    return np.cumsum(n) - n, n
