"""Work on large arrays in two threads, one per half of the rows.

numpy and Arrow release the GIL inside their loops over large arrays, so two threads each
working on half of the rows use two cores. Used where every output row depends only on its
own input row (hashes) or on rows of its own query (``reference.evaluate``), so the result is
the same, bit for bit, whether the work is split or not. Below ``MIN_ROWS`` rows, or on one
core, nothing is split: there the threads would cost more than they save.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

MIN_ROWS = 1 << 18


def two_cores() -> bool:
    return (os.cpu_count() or 1) >= 2


def row_halves(n: int) -> list[slice]:
    """[0, n) as two halves when worth splitting, else as one range."""
    if n < MIN_ROWS or not two_cores():
        return [slice(0, n)]
    return [slice(0, n // 2), slice(n // 2, n)]


def each(fn: Callable[[slice], T], parts: Sequence[slice]) -> list[T]:
    """``[fn(p) for p in parts]``, the parts in threads of their own when there are several.
    The first exception raised (in part order) is raised, after every part has finished."""
    if len(parts) < 2:
        return [fn(p) for p in parts]
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        return list(pool.map(fn, parts))


def both(first: Callable[[], T], second: Callable[[], object]) -> tuple[T, object]:
    """``(first(), second())``, the second in another thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(second)
        try:
            a = first()
        except BaseException:
            pending.exception()  # let it finish before unwinding
            raise
        return a, pending.result()


def query_halves(q, n_queries: int) -> list[slice]:
    """Two row ranges that hold disjoint sets of queries and about half the rows each, when
    worth splitting and every query's rows are contiguous (a run listed query by query); else
    one range of every row. ``q``: query index (0..n_queries-1) per row."""
    import numpy as np

    n = q.size
    whole = [slice(0, n)]
    if n < MIN_ROWS or not two_cores():
        return whole
    change = q[1:] != q[:-1]
    if int(np.count_nonzero(change)) + 1 != int(np.count_nonzero(np.bincount(q, minlength=n_queries))):
        return whole  # some query comes back after another
    after = np.flatnonzero(change[n // 2 - 1:])
    if after.size == 0:
        return whole  # one query holds the middle and the end of the list
    cut = n // 2 + int(after[0])
    return [slice(0, cut), slice(cut, n)]
