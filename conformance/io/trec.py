"""TREC run and qrels files -> columns (:class:`~conformance.io.parsed.Parsed`), or one InputError.

* Run lines are ``qid Q0 docid rank score tag``; fields after the sixth are ignored (trec_eval's
  ``get_trec_results.c`` skips "the rest of the line"); fewer than six is an error.
* Qrels lines are ``qid iter docid relevance``: exactly four fields. trec_eval's ``get_qrels.c``
  (``parse_qrels_line``) refuses a qrels line with anything after the relevance except trailing
  whitespace ("Malformed line"), so a fifth field is an error here too.
* Fields are separated by any run of ASCII whitespace: space, tab, ``\\v``, ``\\f``, ``\\r`` (the
  C ``isspace`` set trec_eval splits on). Other characters, including non-ASCII spaces, belong to
  the field. Only ``\\n`` ends a line, so CRLF files read as LF files and a lone ``\\r`` is a
  separator.
* A line whose first non-blank character is ``#`` is a comment (trec_eval 10 accepts ``#`` only
  in column 0; a leading blank before ``#`` is accepted here too). A ``#`` anywhere else is data:
  MS MARCO v2 docids such as ``msmarco_v2.1_doc_50_2286987788#13_3087841662`` contain one. A
  blank (or whitespace-only) line is skipped, in qrels too (trec_eval skips them in runs and calls
  them malformed in qrels). Both are counted in :class:`~conformance.io.parsed.ReadCounts`.
* The whole file must be UTF-8 (comment lines too); a UTF-8 byte order mark is skipped. Gzip
  data (a ``.gz`` name or the gzip magic bytes) is decompressed first; line numbers are those of
  the decompressed text. The limits of :mod:`conformance.io.limits` apply (binary content, the
  input's size, the length of a line).
* Numbers (score, relevance, rank) are read by Arrow's parser: an optional sign, digits with an
  optional decimal point and exponent (``12``, ``-0.5``, ``.5``, ``3.``, ``1e-3``). Not numbers:
  ``1_000``, ``0x10``, ``1,5``. ``nan``/``inf`` spellings and values that overflow a double
  (``1e400``) are numbers but not finite, and a score or label must be finite.
* Negative and fractional relevance labels are valid here; conventions decide what they mean.
* The rank column is stored in ``Run.rank`` as float64 and used only under
  ``rank_source=rank_column``. trec_eval never reads it, so a rank that is not a number is not an
  error: it is stored as NaN (the row is still used, and is not counted as ignored).

Checks, and the order in which the first failing one is reported: the file can be read (exists,
not a directory, gzip intact, within the limits); it is UTF-8; every data line has the right
number of fields; scores / labels are numbers, then finite; then (in the data types) duplicates.
Within one check, the earliest line is reported. Detection is vectorized; only once a problem is
known is the file scanned in Python to name the line.

Speed: a clean TREC file (one kind of separator used once between fields, no comment or blank
line, no ``\\r``) is read by Arrow's multi-threaded CSV reader; any other file by a general path
that splits lines on whitespace runs with Arrow compute kernels. Both are columnar: no Python
loop over lines unless a problem has been found and its line must be named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from conformance.errors import InputError
from conformance.io import kernels as ac
from conformance.io.columnar import (LazyRange, arrow_numpy, arrow_offsets, first_bad_cast, lenient_float, numpy_arrow,
                                     read_csv)
from conformance.io.parsed import Parsed, ReadCounts
from conformance.io.text import WS, Text, check_line_lengths, clip

RUN_LAYOUT = "qid Q0 docid rank score tag"
QRELS_LAYOUT = "qid iter docid relevance"
_F64 = pa.float64()


class _Columns:
    """Columns of the data lines of a TREC file: Arrow string arrays and numpy arrays."""

    def __init__(self, columns: dict[str, Any], line: np.ndarray, counts: ReadCounts) -> None:
        self.columns, self.line, self.counts = columns, line, counts


def _valid_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8, by Arrow's validator on the whole buffer at once (~1 GB/s)."""
    large = len(data) >= 2**31 - 1
    arr = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(), 1,
        [None, pa.py_buffer(np.array([0, len(data)], np.int64 if large else np.int32)), pa.py_buffer(data)],
    )
    try:
        ac.cast(arr, pa.large_string() if large else pa.string())
    except pa.ArrowInvalid:
        return False
    return True


_RELEASE_BYTES = 1 << 24  # files at least this large return the parser's memory once parsed


def _fast_parse(src: Text, names: list[str], numeric: str) -> _Columns | None:
    """The clean case: one kind of separator, used once between fields, no comments, no blanks.

    Arrow's multi-threaded CSV reader does the work. Returns None (so the general path decides)
    whenever the file is not provably clean: any ``\\r``, ``\\v``, ``\\f``, both tabs and spaces,
    an empty field (a doubled, leading or trailing separator), a field count other than
    ``len(names)``, a qid starting with ``#``, a score, label or rank Arrow cannot read as a
    number, or bad UTF-8.
    """
    data = src.data
    # find, not ``in``: an mmap's ``in`` compares byte by byte in Python (~1 s on 78 MB)
    if not data or data.find(b"\r") >= 0 or data.find(b"\x0b") >= 0 or data.find(b"\x0c") >= 0:
        return None
    has_tab = data.find(b"\t") >= 0
    if has_tab and data.find(b" ") >= 0:
        return None
    if not _valid_utf8(data):
        return None
    # Fields the readers do not keep (Q0, tag, iter) are read as bytes: only their presence is
    # checked (no empty field), and the whole file was checked to be UTF-8 above, once.
    types = {name: pa.string() if name in ("qid", "docid") else pa.binary() for name in names}
    types[numeric] = _F64
    if "rank" in types:  # a rank that is not a number sends the file to the general path
        types["rank"] = _F64
    try:
        table = read_csv(
            data,
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=pcsv.ParseOptions(
                delimiter="\t" if has_tab else " ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types,
                null_values=[],
                true_values=[],
                false_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=False,
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    n = table.num_rows
    if n == 0:
        return None
    if any(types[name] != _F64 and _has_empty(table.column(name)) for name in names):
        return None
    limit = src.limits.max_line_bytes if src.limits is not None else None
    if limit is not None and len(data) > limit and any(
            types[name] != _F64 and _longer(table.column(name), limit) for name in names):
        return None  # a line over the limit: the general path names it
    if _starts_with_hash(table.column(names[0])):
        return None
    columns = {name: table.column(name) for name in ("qid", "docid", "rank", numeric) if name in names}
    columns[numeric] = arrow_numpy(columns[numeric])  # the rank column stays Arrow's (see Run.rank)
    del table
    if len(data) >= _RELEASE_BYTES:
        # The parser's transient blocks are garbage now; a pool that keeps freed memory for
        # reuse (Arrow's default, mimalloc) would hold them through the rest of the read. (The
        # command's jemalloc has returned them as they were freed: see pipeline.own_process.)
        pa.default_memory_pool().release_unused()
    return _Columns(columns, LazyRange(1, n + 1), ReadCounts(read=n, used=n))


# The two checks below read the columns' offsets and bytes in place, chunk by chunk; Arrow's
# kernels (binary_length, starts_with) would first write an 8 MB array per column of a 2M-row
# run, and fresh memory is most of what they cost.
def _has_empty(column: pa.ChunkedArray) -> bool:
    """Whether a string or binary column (as the CSV reader gives them) holds an empty value."""
    for chunk in column.chunks:
        off = arrow_offsets(chunk)
        if not (off[1:] > off[:-1]).all():
            return True
    return False


def _longer(column: pa.ChunkedArray, limit: int) -> bool:
    """Whether a value of a string or binary column is longer than ``limit`` bytes. Only a chunk
    holding more than ``limit`` bytes in all can (the CSV reader's chunks hold a few MB), so the
    values' lengths are looked at in those alone."""
    for c in column.chunks:
        off = arrow_offsets(c)
        if len(c) and int(off[-1] - off[0]) > limit and int(np.diff(off).max()) > limit:
            return True
    return False


def _starts_with_hash(column: pa.ChunkedArray) -> bool:
    """Whether a value of a string column without empty values starts with ``#``."""
    for chunk in column.chunks:
        if len(chunk) and (np.frombuffer(chunk.buffers()[2], np.uint8)[arrow_offsets(chunk)[:-1]] == ord("#")).any():
            return True
    return False


def _general_parse(src: Text, names: list[str], numeric: str, layout: str, exact: bool) -> _Columns:
    """Any file: lines split on ASCII whitespace runs, comments and blank lines skipped, all in Arrow."""
    data = src.data
    u8 = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(u8 == 10) + 1
    if data and data[-1:] != b"\n":
        ends = np.append(ends, len(data))
    check_line_lengths(ends, src.name, src.limits)
    offsets = np.concatenate([[0], ends])
    large = len(data) >= 2**31 - 1
    binary = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(ends),
        [None, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)), pa.py_buffer(data)],
    )
    try:
        lines = ac.cast(binary, pa.large_string() if large else pa.string())
    except pa.ArrowInvalid:
        src.check_utf8()  # names the line
        raise InputError(src.name, "not valid UTF-8: expected a UTF-8 text file") from None
    trimmed = ac.ascii_trim_whitespace(lines)
    blank = arrow_numpy(ac.binary_length(trimmed)) == 0
    comment = arrow_numpy(ac.starts_with(trimmed, "#"))
    tokens = ac.ascii_split_whitespace(trimmed)
    ntok = arrow_numpy(ac.list_value_length(tokens))
    rows = np.flatnonzero(~(blank | comment))
    counts = ReadCounts(read=int(rows.size), used=int(rows.size), comments=int(comment.sum()), blank=int(blank.sum()))
    want = len(names)
    bad = ntok[rows] != want if exact else ntok[rows] < want
    if bad.any():
        k = int(rows[np.argmax(bad)]) + 1
        got = src.fields(k)
        expected = f"{want}" if exact else f"at least {want}"
        raise InputError(
            src.name,
            f"expected {expected} whitespace-separated fields ({layout}), got {len(got)}: {clip(src.line(k))!r}",
            k,
        )
    if not exact:  # fields after the last are ignored (trec_eval does): counted, so it can be said
        counts.extra_fields = int((ntok[rows] > want).sum())
    starts = arrow_numpy(tokens.offsets)[rows]
    flat = tokens.values
    columns: dict[str, Any] = {}
    for i, name in enumerate(names):
        if name in ("qid", "docid", "rank", numeric):
            columns[name] = ac.take(flat, numpy_arrow(starts + i))
    return _Columns(columns, rows.astype(np.int64) + 1, counts)


def _parse(src: Text, names: list[str], numeric: str, layout: str, exact: bool, field: int, what: str) -> _Columns:
    parsed = _fast_parse(src, names, numeric)
    if parsed is None:
        parsed = _general_parse(src, names, numeric, layout, exact)
        strings = parsed.columns[numeric]
        try:
            parsed.columns[numeric] = arrow_numpy(ac.cast(strings, _F64))
        except pa.ArrowInvalid:
            i = first_bad_cast(strings)
            raise InputError(
                src.name,
                f"{what} {strings[i].as_py()!r} (field {field}) is not a number: "
                f"expected a decimal number such as {'12.5' if what == 'score' else '0, 1 or 2'}",
                int(parsed.line[i]),
            ) from None
    if parsed.counts.read == 0:
        raise InputError(src.name, "no data rows: the file is empty" if not bytes(src.data).strip(WS.encode())
                         else "no data rows: the file has only comment and blank lines")
    values = parsed.columns[numeric]
    finite = np.isfinite(values)
    if not finite.all():
        i = int(np.argmin(finite))
        k = int(parsed.line[i])
        fields = src.fields(k)
        token = fields[field - 1] if len(fields) >= field else repr(float(values[i]))
        raise InputError(
            src.name,
            f"{what} {token!r} (field {field}) is not a finite number (it reads as {float(values[i])!r}): "
            "expected a finite number",
            k,
        )
    return parsed


def parse_run(src: Text) -> Parsed:
    """The columns of a TREC run (``qid Q0 docid rank score tag``), or the InputError of its
    first problem (see the module docstring). The rank column is kept leniently (NaN where it
    is not a number)."""
    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    p = _parse(src, names, "score", RUN_LAYOUT, exact=False, field=5, what="score")
    src.release()
    return Parsed(src.name, p.columns["qid"], p.columns["docid"], p.columns["score"], p.line, p.counts,
                  "line", rank=lenient_float(p.columns["rank"]))


def parse_qrels(src: Text) -> Parsed:
    """The columns of TREC qrels (``qid iter docid relevance``), or the InputError of the first
    problem."""
    names = ["qid", "iter", "docid", "label"]
    p = _parse(src, names, "label", QRELS_LAYOUT, exact=True, field=4, what="relevance label")
    src.release()
    return Parsed(src.name, p.columns["qid"], p.columns["docid"], p.columns["label"], p.line, p.counts, "line")
