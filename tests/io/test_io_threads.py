"""Arrow's reader threads have let go of the input when a reader returns.

Arrow's multi-threaded CSV reader finishes on a worker thread of Arrow's pool after
``read_csv`` has returned, and that worker then drops the buffer over the input, a Python
object, which needs the GIL. When the interpreter was already exiting (an error right after the
read), the process aborted: ``terminate called without an active exception``, about 1 run in
300 of ``conformance eval`` on a bad JSONL qrels file (``conformance.io.columnar.read_csv``
says more). The buffer exported by the input holds a reference to it, so the input's reference
count after the read tells whether a worker still holds it. The plain call, the control, is
seen still held after some returns; the readers' call never.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.csv as pcsv

from conformance.io import columnar, trec
from conformance.io.text import Text

ROWS = b"".join(b"q%d Q0 d%d %d %d.5 tag\n" % (i % 7, i, i, i) for i in range(300))
OPTIONS = {"read_options": pcsv.ReadOptions(column_names=list("abcdef"), block_size=1 << 22),
           "parse_options": pcsv.ParseOptions(delimiter=" ")}
READS = 400


def _held_after_plain_reads(data: bytes) -> int:
    before, held = sys.getrefcount(data), 0
    for _ in range(READS):
        buffer = pa.py_buffer(data)
        pcsv.read_csv(pa.BufferReader(buffer), **OPTIONS)
        del buffer
        held += sys.getrefcount(data) > before
    return held


def _fresh() -> bytes:
    """A bytes object of its own (``bytes(ROWS)`` would be ROWS itself), which no earlier read's
    worker can still hold."""
    return bytes(bytearray(ROWS))


def test_plain_read_csv_returns_before_its_worker_lets_go():
    # the control: without the wait, a worker still holds the input after some reads
    # (265 of 2000 when measured), so the test below can see the fault it guards against
    assert _held_after_plain_reads(_fresh()) > 0


def test_the_readers_return_after_arrows_threads_let_go():
    data = _fresh()
    before = sys.getrefcount(data)
    for _ in range(READS):
        columnar.read_csv(data, **OPTIONS)
        assert sys.getrefcount(data) == before
    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    for _ in range(READS // 4):  # and the TREC fast path, which reads that way
        src = Text("x", data)
        assert trec._fast_parse(src, names, "score") is not None
        assert sys.getrefcount(data) == before + 1  # src's own reference, nothing of Arrow's
        del src
