"""Work on large arrays in two threads, one per half of the rows.

numpy and Arrow release the GIL inside their loops over large arrays, so two threads each
working on half of the rows use two cores. Used where every output row depends only on its
own input row (hashes) or on rows of its own query (``reference.evaluate``), so the result is
the same, bit for bit, whether the work is split or not. Below ``MIN_ROWS`` rows, or on one
core, nothing is split: there the threads would cost more than they save. A half of the queries
can be cut again into pieces (:func:`query_pieces`), which its thread takes one after the other,
so that the arrays made per row are held for one piece at a time.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

MIN_ROWS = 1 << 18
PIECE_ROWS = 1 << 16  # rows of a piece at least ...
MAX_PIECES = 16  # ... and at most this many pieces to a part


def two_cores() -> bool:
    return (os.cpu_count() or 1) >= 2


def worth_splitting(n: int) -> bool:
    """Whether work over ``n`` rows goes to two threads."""
    return n >= MIN_ROWS and two_cores()


def row_halves(n: int) -> list[slice]:
    """[0, n) as two halves when worth splitting, else as one range."""
    if not worth_splitting(n):
        return [slice(0, n)]
    return [slice(0, n // 2), slice(n // 2, n)]


def in_thread(fn: Callable[[], T]) -> Callable[[], T]:
    """Start ``fn()`` in a thread of its own; return a function that waits for it and gives
    its result, or raises its exception. (A bare thread, not ``concurrent.futures``, whose
    import costs ~10 ms of a command's start.)"""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def wait() -> T:
        thread.join()
        if "error" in box:
            raise box.pop("error")
        return box["value"]

    return wait


def each(fn: Callable[[slice], T], parts: Sequence[slice]) -> list[T]:
    """``[fn(p) for p in parts]``, the parts after the first in threads of their own. The
    first exception raised (in part order) is raised, after every part has finished."""
    waits = [in_thread(lambda p=p: fn(p)) for p in parts[1:]]
    outcomes = []  # (ok, value or exception) per part, in part order
    for run in ([lambda: fn(parts[0])] if parts else []) + waits:
        try:
            outcomes.append((True, run()))
        except BaseException as e:
            outcomes.append((False, e))
    errors = [value for ok, value in outcomes if not ok]
    if errors:
        error = errors[0]
        # the exception's traceback holds this frame: its locals let go of the exceptions (and
        # the parts' values), which would make a cycle through them
        del outcomes, errors
        try:
            raise error
        finally:
            del error
    return [value for _, value in outcomes]


def both(first: Callable[[], T], second: Callable[[], object]) -> tuple[T, object]:
    """``(first(), second())``, the second in another thread; ``first``'s exception wins."""
    wait = in_thread(second)
    try:
        a = first()
    except BaseException:
        try:
            wait()
        except BaseException:
            pass
        raise
    return a, wait()


def query_halves(q, n_queries: int) -> list[slice]:
    """Two row ranges that hold disjoint sets of queries and about half the rows each, when
    worth splitting and every query's rows are contiguous (a run listed query by query); else
    one range of every row. ``q``: query index (0..n_queries-1) per row."""
    import numpy as np

    n = q.size
    whole = [slice(0, n)]
    if not worth_splitting(n):
        return whole
    change = q[1:] != q[:-1]
    if int(np.count_nonzero(change)) + 1 != int(np.count_nonzero(np.bincount(q, minlength=n_queries))):
        return whole  # some query comes back after another
    after = np.flatnonzero(change[n // 2 - 1:])
    if after.size == 0:
        return whole  # one query holds the middle and the end of the list
    cut = n // 2 + int(after[0])
    return [slice(0, cut), slice(cut, n)]


def query_pieces(q, part: slice) -> list[slice]:
    """``part``, a range of rows holding whole queries listed one after the other, as
    consecutive ranges of whole queries of about ``max(PIECE_ROWS, rows / MAX_PIECES)`` rows
    each (a piece ends at the first query boundary past that many rows; a query longer than
    that is one piece). ``q``: query index per row.

    Small pieces keep the arrays made per row small (cache-sized, reused by the allocator
    instead of fresh pages); the bound on their number bounds the work a piece does per query
    of the whole input (arrays of one value per query)."""
    import numpy as np

    start, stop = part.indices(q.size)[:2]
    rows = max(PIECE_ROWS, (stop - start) // MAX_PIECES)
    if stop - start < 2 * rows:
        return [slice(start, stop)]
    # the rows where a query begins, after the first
    begins = np.flatnonzero(q[start + 1:stop] != q[start:stop - 1]) + (start + 1)
    cuts = [start]
    while True:
        at = int(np.searchsorted(begins, cuts[-1] + rows))
        if at == begins.size or stop - int(begins[at]) < rows:
            break
        cuts.append(int(begins[at]))
    return [slice(a, b) for a, b in zip(cuts, cuts[1:] + [stop])]
