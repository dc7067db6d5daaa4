"""The input boundary: TREC run and qrels files, JSON, JSONL and DataFrames -> validated Run/Qrels.

Everything a user hands the tool passes through here, and leaves as the columnar, validated
:class:`~conformance.data.Run` / :class:`~conformance.data.Qrels` of ``data.py``, or as one
:class:`~conformance.errors.InputError` naming the file, the 1-based line (for JSON: the record
number; for DataFrames: the row number) and the problem, with what was expected and what was found.

TREC files (``read_run``, ``read_qrels``)
-----------------------------------------
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
  them malformed in qrels). Both are counted in :class:`ReadCounts`.
* The whole file must be UTF-8 (comment lines too); a UTF-8 byte order mark is skipped. Gzip
  data (a ``.gz`` name or the gzip magic bytes) is decompressed first; line numbers are those of
  the decompressed text.
* Numbers (score, relevance, rank) are read by Arrow's parser: an optional sign, digits with an
  optional decimal point and exponent (``12``, ``-0.5``, ``.5``, ``3.``, ``1e-3``). Not numbers:
  ``1_000``, ``0x10``, ``1,5``. ``nan``/``inf`` spellings and values that overflow a double
  (``1e400``) are numbers but not finite, and a score or label must be finite.
* Negative and fractional relevance labels are valid here; conventions decide what they mean.
* The rank column is stored in ``Run.rank`` as float64 and used only under
  ``rank_source=rank_column``. trec_eval never reads it, so a rank that is not a number is not an
  error: it is stored as NaN (the row is still used, and is not counted as ignored).

Checks, and the order in which the first failing one is reported: the file can be read (exists,
not a directory, gzip intact); it is UTF-8; every data line has the right number of fields;
scores / labels are numbers, then finite; duplicates. Within one check, the earliest line is
reported. Detection is vectorized; only once a problem is known is the file scanned in Python
to name the line.

Duplicates
----------
* A run that lists one docid twice for one query: with ``duplicates="error"`` an InputError names
  both lines; with ``"first"`` / ``"last"`` the first / last listing is kept and each other one is
  counted in ``ReadCounts`` as ignored ("duplicate docid").
* Qrels that judge one (qid, docid) twice: the same label -> the first line is kept and the
  others counted as ignored ("duplicate judgment, same label"); different labels -> InputError
  naming both lines.

Other shapes
------------
* JSON dict of dicts ``{qid: {docid: score}}`` (``read_run_json``) and ``{qid: {docid: label}}``
  (``read_qrels_json``), kept in listing order. Values must be numbers (not strings, not
  booleans; Python mappings given to ``run_from_dict`` / ``qrels_from_dict`` may also hold numpy
  numbers and integer ids). A key repeated inside one JSON object is a duplicate as above (the JSON module would
  silently keep the last). A query with an empty object has no rows: it is counted as one row
  read and ignored ("query with no documents"). The "line" of a problem is the record number:
  the 1-based position of the (qid, docid) pair in listing order. A JSON list of flat records
  (the JSONL record shapes below) is also accepted; then the record number is the list position.
* JSONL (``read_qrels_jsonl``, ``read_run_jsonl``): one JSON object per line; blank lines are
  counted and skipped; the line number is the physical line. Record shapes, recognised by their
  keys (query id key: ``qid``, ``query_id`` or ``q_id``):

  - qrels, RAG shape: ``{"qid": "q1", "query": "...", "gold_doc_ids": ["d1", "d3"],
    "graded_relevance": {"d1": 3, "d3": 2}}``. A gold id without a grade gets label 1; a grade in
    ``graded_relevance`` takes precedence over gold membership (so a gold id graded 0 has label
    0); graded ids that are not gold are judged with their grade. Rows follow ``gold_doc_ids``
    order, then the remaining graded ids. Other keys (``query``, ``answer``...) are ignored. A
    record with neither gold nor graded ids is counted as one row read and ignored ("record with
    no judged documents").
  - qrels, flat: ``{"qid": "q1", "docid": "d1", "relevance": 2}`` (docid key ``docid`` or
    ``doc_id``; label key ``relevance``, ``label`` or ``rel``).
  - run, ranked-list shape: ``{"qid": "q1", "doc_ids": ["d3", "d1"], "scores": [2.5, 1.0]}``
    (list key ``doc_ids``, ``docids`` or ``retrieved_doc_ids``). The rank is the list position
    (1-based). Without ``scores`` the list order is the ranking: the score of position i (1-based)
    of n is n - i + 1. An empty list is counted as one row read and ignored ("query with no
    documents").
  - run, flat: ``{"qid": "q1", "docid": "d1", "score": 2.5, "rank": 1}`` (rank optional).

  Query and document ids must be JSON strings or integers (integers are written in decimal).
* pandas DataFrames (``run_from_frame``, ``qrels_from_frame``): columns are found by name, case
  insensitively: query id ``qid`` / ``q_id`` / ``query_id``; document id ``docid`` / ``doc_id``;
  ``score``; optional ``rank``; label ``relevance`` / ``label`` / ``rel``. Other columns are
  ignored. Id columns must hold strings or integers (a float id column such as 301.0 is refused:
  it would not match "301"). The "line" of a problem is the 1-based row position.
* ``load_run`` / ``load_qrels`` dispatch on the object: a Run/Qrels is returned as it is, a
  DataFrame or a mapping goes to the functions above, a path by its extension after an optional
  ``.gz``: ``.json`` -> JSON, ``.jsonl`` / ``.ndjson`` -> JSONL, anything else -> TREC.

Query and document ids are dictionary-encoded in order of first appearance.

Speed
-----
A regular uncompressed file is memory-mapped, not copied. A clean TREC file (one kind of
separator used once between fields, no comment or blank line, no ``\r``) is read by Arrow's
multi-threaded CSV reader; any other file by a general path that splits lines on whitespace runs
with Arrow compute kernels. Both are columnar: no Python loop over lines unless a problem has been
found and its line must be named. Docids are kept in their word form (``data.DocWords``: padded
bytes, no vocabulary) when the (query, docid) pairs are distinct, which the reader checks by one
sort of hashed pairs (``read_run(check_pairs=False)`` leaves that check to the reference's join,
which sees every repeat anyway, and to :func:`settle_pairs`); otherwise they are encoded by a
sort of hashed ids (see :func:`_factorize_arrow`), which beats a hash table on millions of
distinct ids. On large inputs the docid words, the query coding, the hashes and the duplicate
check use two threads (``conformance.parallel``); the result does not depend on it.
"""

from __future__ import annotations

import gzip
import json
import math
import mmap
import os
import re
import stat
import sys
import zlib
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from conformance import arrow_compute as ac
from conformance.conventions import AXES
from conformance.data import (DocWords, LazyRange, Qrels, ReadCounts, Run, arrow_numpy, arrow_offsets, arrow_strings,
                              line_numbers, numpy_arrow, pair_hash)
from conformance.errors import InputError
from conformance.parallel import both, each, query_halves, worth_splitting

__all__ = [
    "read_run",
    "read_qrels",
    "read_run_json",
    "read_qrels_json",
    "read_run_jsonl",
    "read_qrels_jsonl",
    "run_from_dict",
    "qrels_from_dict",
    "run_from_frame",
    "qrels_from_frame",
    "load_run",
    "load_qrels",
]

_RUN_LAYOUT = "qid Q0 docid rank score tag"
_QRELS_LAYOUT = "qid iter docid relevance"
_WS = " \t\n\v\f\r"
_WS_SPLIT = re.compile(r"[ \t\n\v\f\r]+")
_F64 = pa.float64()

# Reasons recorded in ReadCounts.
DUPLICATE_DOCID = "duplicate docid"
DUPLICATE_JUDGMENT = "duplicate judgment, same label"
EMPTY_QUERY = "query with no documents"
EMPTY_RECORD = "record with no judged documents"


# --------------------------------------------------------------------------------------------
# Public API: TREC files


def read_run(path: str | os.PathLike, duplicates: str = "error", check_pairs: bool = True) -> Run:
    """Read a TREC run file (``qid Q0 docid rank score tag`` per line; see the module docstring).

    ``duplicates`` ("error", "first", "last", "keep") settles a docid listed twice for one query.
    Raises InputError on any problem in the file. ``check_pairs=False`` leaves that check to
    the caller when the docids have a word form (``run.distinct_pairs`` is then None, and
    :func:`settle_pairs` does it): the reference's join finds repeated pairs anyway, and
    ``conformance eval`` saves the reader's sort of every (query, docid) pair.
    """
    duplicates = _check_duplicates(duplicates)
    return _trec_run(_Text.open(path), duplicates, check_pairs)


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a TREC qrels file (``qid iter docid relevance`` per line; see the module docstring)."""
    return _trec_qrels(_Text.open(path))


# --------------------------------------------------------------------------------------------
# Reading bytes


def _map(f) -> "mmap.mmap | None":
    """The open file's pages mapped read-only and faulted in at once, or None where that is not
    possible (not POSIX, not a regular file, empty).

    Reading a large run into a ``bytes`` object costs a fresh page of memory per 4 KiB, each a
    page fault, plus a copy; mapping the file's cached pages in one ``MAP_POPULATE`` call
    costs neither (~0.08 s of a 2M-row run). The text is only read: Arrow's parser copies
    what it keeps. A file truncated by another process while it is being read would end the
    process with SIGBUS; a file being rewritten is not a consistent input anyway.
    """
    if os.name != "posix":
        return None
    try:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0),
                         prot=mmap.PROT_READ)
    except (OSError, ValueError, OverflowError):
        return None


def _read_bytes(path: str | os.PathLike, mapped: bool = False) -> tuple["bytes | mmap.mmap", str]:
    """The file's bytes, gunzipped, without a UTF-8 byte order mark. With ``mapped``, an
    uncompressed file without a byte order mark may come back as a read-only ``mmap`` (it has
    ``find``, slicing and the buffer protocol, not the ``bytes`` methods; its ``in`` works but
    compares byte by byte in Python)."""
    name = os.fsdecode(path)
    if os.path.isdir(name):
        raise InputError(name, "is a directory: expected a file")
    try:
        with open(name, "rb") as f:
            data = (_map(f) if mapped else None) or f.read()
    except FileNotFoundError:
        raise InputError(name, "no such file") from None
    except PermissionError:
        raise InputError(name, "cannot read the file: permission denied") from None
    except OSError as e:
        raise InputError(name, f"cannot read the file: {e.strerror or e}") from None
    if data[:2] == b"\x1f\x8b" or name.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error, ValueError) as e:
            raise InputError(
                name, f"cannot decompress: expected gzip-compressed text, but the gzip data is damaged ({e})"
            ) from None
    if data[:3] == b"\xef\xbb\xbf":
        data = bytes(data[3:])
    return data, name


class _Text:
    """A text file's bytes, with what the error path needs: physical lines by number."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self.data = name, data
        self._ends: np.ndarray | None = None

    @classmethod
    def open(cls, path: str | os.PathLike) -> "_Text":
        data, name = _read_bytes(path, mapped=True)
        return cls(name, data)

    def release(self) -> None:
        """Drop the bytes once every check that quotes a line is done (peak memory)."""
        self.data, self._ends = b"", None

    def line(self, k: int) -> str:
        """Physical line ``k`` (1-based), without its line end, decoded leniently."""
        if self._ends is None:
            self._ends = np.flatnonzero(np.frombuffer(self.data, np.uint8) == 10)
        start = 0 if k == 1 else int(self._ends[k - 2]) + 1
        end = int(self._ends[k - 1]) if k - 1 < self._ends.size else len(self.data)
        return self.data[start:end].decode("utf-8", "replace")

    def fields(self, k: int) -> list[str]:
        text = self.line(k).strip(_WS)
        return _WS_SPLIT.split(text) if text else []

    def check_utf8(self) -> None:
        data = bytes(self.data)  # an error path: a copy of a mapped file is affordable
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            bad = data[e.start : e.end].hex(" ")
            raise InputError(
                self.name,
                f"byte(s) {bad} at column {column} are not valid UTF-8: expected a UTF-8 text file",
                line,
            ) from None


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# TREC parsing: a fast path for clean files and a general path for everything else


class _Parsed:
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


def _fast_parse(src: _Text, names: list[str], numeric: str) -> _Parsed | None:
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
        table = pcsv.read_csv(
            pa.BufferReader(data),
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
    if _starts_with_hash(table.column(names[0])):
        return None
    columns = {name: table.column(name) for name in ("qid", "docid", "rank", numeric) if name in names}
    columns[numeric] = arrow_numpy(columns[numeric])  # the rank column stays Arrow's (see Run.rank)
    del table
    if len(data) >= _RELEASE_BYTES:
        # The parser's transient blocks are garbage now; a pool that keeps freed memory for
        # reuse (Arrow's default, or the command's jemalloc with a decay time) would hold
        # them through the rest of the read.
        pa.default_memory_pool().release_unused()
    return _Parsed(columns, LazyRange(1, n + 1), ReadCounts(read=n, used=n))


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


def _starts_with_hash(column: pa.ChunkedArray) -> bool:
    """Whether a value of a string column without empty values starts with ``#``."""
    for chunk in column.chunks:
        if len(chunk) and (np.frombuffer(chunk.buffers()[2], np.uint8)[arrow_offsets(chunk)[:-1]] == ord("#")).any():
            return True
    return False


def _general_parse(src: _Text, names: list[str], numeric: str, layout: str, exact: bool) -> _Parsed:
    """Any file: lines split on ASCII whitespace runs, comments and blank lines skipped, all in Arrow."""
    data = src.data
    u8 = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(u8 == 10) + 1
    if data and data[-1:] != b"\n":
        ends = np.append(ends, len(data))
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
            f"expected {expected} whitespace-separated fields ({layout}), got {len(got)}: {_clip(src.line(k))!r}",
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
    return _Parsed(columns, rows.astype(np.int64) + 1, counts)


def _parse(src: _Text, names: list[str], numeric: str, layout: str, exact: bool, field: int, what: str) -> _Parsed:
    parsed = _fast_parse(src, names, numeric)
    if parsed is None:
        parsed = _general_parse(src, names, numeric, layout, exact)
        strings = parsed.columns[numeric]
        try:
            parsed.columns[numeric] = arrow_numpy(ac.cast(strings, _F64))
        except pa.ArrowInvalid:
            i = _first_bad_cast(strings)
            raise InputError(
                src.name,
                f"{what} {strings[i].as_py()!r} (field {field}) is not a number: "
                f"expected a decimal number such as {'12.5' if what == 'score' else '0, 1 or 2'}",
                int(parsed.line[i]),
            ) from None
    if parsed.counts.read == 0:
        raise InputError(src.name, "no data rows: the file is empty" if not bytes(src.data).strip(_WS.encode())
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


def _first_bad_cast(strings: pa.Array) -> int:
    """Index of the first element Arrow cannot cast to float64, by bisection (O(n) work in all)."""
    lo, hi = 0, len(strings)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            ac.cast(strings.slice(lo, mid - lo), _F64)
        except pa.ArrowInvalid:
            hi = mid
        else:
            lo = mid
    return lo


_NUMBER = r"^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf|infinity))$"


def _lenient_float(strings: pa.Array | pa.ChunkedArray | np.ndarray) -> np.ndarray:
    """Numbers where Arrow can read them, NaN elsewhere (for the rank column)."""
    if isinstance(strings, np.ndarray):
        return strings.astype(np.float64, copy=False)
    if strings.type == _F64:  # already numbers (the fast path): converted when first used
        return strings
    try:
        return arrow_numpy(ac.cast(strings, _F64))
    except pa.ArrowInvalid:
        pass
    # The pattern accepts exactly what Arrow's cast reads (tests/test_io.py checks this), so
    # the second cast cannot fail.
    ok = arrow_numpy(ac.match_substring_regex(strings, _NUMBER))
    values = np.full(len(strings), np.nan)
    values[ok] = arrow_numpy(ac.cast(ac.filter(strings, numpy_arrow(ok)), _F64))
    return values


def _trec_run(src: _Text, duplicates: str, check_pairs: bool = True) -> Run:
    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    p = _parse(src, names, "score", _RUN_LAYOUT, exact=False, field=5, what="score")
    src.release()
    rank = _lenient_float(p.columns["rank"])
    return _make_run(src.name, p.columns["qid"], p.columns["docid"], p.columns["score"], rank, p.line,
                     p.counts, duplicates, "line", check_pairs)


def _trec_qrels(src: _Text) -> Qrels:
    names = ["qid", "iter", "docid", "label"]
    p = _parse(src, names, "label", _QRELS_LAYOUT, exact=True, field=4, what="relevance label")
    src.release()
    return _make_qrels(src.name, p.columns["qid"], p.columns["docid"], p.columns["label"], p.line, p.counts, "line")


# --------------------------------------------------------------------------------------------
# Dictionary encoding


_SORT_MIN_ROWS = 1 << 16
_MAX_WORDS = 8  # ids up to 64 bytes take the sort path; longer ones the hash table
_SAMPLE = 4096


def _as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        try:
            values = values.combine_chunks()
        except pa.ArrowInvalid:  # over 2 GiB of id bytes
            values = ac.cast(values, pa.large_string()).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values


def _to_object(strings: pa.Array) -> np.ndarray:
    # to_pylist, not to_numpy: Arrow's to_numpy of strings imports pandas (~0.5 s)
    out = np.empty(len(strings), dtype=object)
    out[:] = strings.to_pylist()
    return out


def _factorize(values: pa.Array | pa.ChunkedArray, *, method: str | None = None,
               hash_bits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row int64 codes and the object array of unique ids, in order of first appearance."""
    codes, vocab = _factorize_arrow(values, method=method, hash_bits=hash_bits)
    return codes, _to_object(vocab)


def _factorize_arrow(values: pa.Array | pa.ChunkedArray, *, method: str | None = None,
                     hash_bits: int | None = None) -> tuple[np.ndarray, pa.Array]:
    """Per-row int64 codes and the Arrow array of unique ids, in order of first appearance.

    Three exact methods. "table": Arrow's hash-table dictionary_encode, fastest when few
    distinct ids or few rows. "runs" (:func:`_factorize_runs`): few distinct ids on a large
    input (qids), listed in groups; it falls back to "table" when they are not grouped. "sort":
    for many distinct short ids (docids) on large inputs, where a hash table far bigger than
    the CPU caches spends its time on cache misses. Each id is read as
    up to 8 little-endian 64-bit words (zero padded), hashed, and the (hash, row) pairs are sorted
    in one SIMD ``np.sort``; equal hashes form a group. Each row is then compared word by word
    (and by length) with the row before it in its group, so a hash collision cannot merge two
    ids: groups that hold more than one id are split exactly. ``hash_bits`` keeps only that many
    hash bits (tests use it to force collisions).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64), arrow_strings([])
    if method is None:
        method = "table" if n < _SORT_MIN_ROWS else "sort"
        if method == "sort":
            sample = ac.count_distinct(values.slice(0, _SAMPLE)).as_py()
            if sample * 2 < min(n, _SAMPLE):
                method = "runs"
    if method == "runs":
        out = _factorize_runs(values)
        if out is not None:
            return out
        method = "table"
    arr = _as_array(values)
    if method == "sort":
        out = _factorize_sort(arr, hash_bits)
        if out is not None:
            return out
    enc = ac.dictionary_encode(arr)
    return arrow_numpy(enc.indices).astype(np.int64), enc.dictionary


def _factorize_runs(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array] | None:
    """The "runs" method: ids listed in groups of equal neighbours (a run's qids, query by
    query) are coded by coding only the first row of each group and spreading its code over the
    group. The same codes and vocabulary as the hash table (first appearance among the group
    heads is first appearance among the rows), with one comparison of neighbours instead of a
    hash lookup per row: on a 2M-row run ~0.03 s against ~0.07 s. None when the ids are not
    grouped (more than one group in 16 rows), or are dictionary-encoded."""
    if pa.types.is_dictionary(values.type):
        return None
    n = len(values)
    starts, base, groups = [], 0, 0
    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        m = len(chunk)
        if m == 0:
            continue
        starts.append(np.array([base], np.int64))  # a chunk's first row always starts a group
        if m > 1:
            changed = ac.indices_nonzero(ac.not_equal(chunk.slice(1), chunk.slice(0, m - 1)))
            at = arrow_numpy(changed).astype(np.int64)
            at += base + 1
            starts.append(at)
        base += m
        groups += 1 + (at.size if m > 1 else 0)
        if groups * 16 > n:
            return None
    first = np.concatenate(starts)
    enc = ac.dictionary_encode(_as_array(ac.take(values, numpy_arrow(first))))
    sizes = np.diff(first, append=n)
    return np.repeat(arrow_numpy(enc.indices).astype(np.int64), sizes), enc.dictionary


def _factorize_sort(arr: pa.Array, hash_bits: int | None) -> tuple[np.ndarray, pa.Array] | None:
    n = len(arr)
    bufs = arr.buffers()
    off = arrow_offsets(arr).astype(np.int64)
    lens = np.diff(off)
    width = (int(lens.max()) + 7) // 8
    if width > _MAX_WORDS:
        return None
    total = int(off[-1] - off[0])
    padded = np.zeros(total + 8, np.uint8)
    if total:
        padded[:total] = np.frombuffer(bufs[2], np.uint8, total, int(off[0]))
    starts = off[:-1] - off[0]
    # element i of this view is the 8 bytes from byte i on (little endian, unaligned)
    view = np.ndarray((total + 1,), dtype="<u8", buffer=padded, strides=(1,))
    words = []
    for j in range(max(width, 1)):
        w = view[starts if j == 0 else np.minimum(starts + 8 * j, total)]
        rem = lens - 8 * j
        short = rem < 8  # ids that end inside this word: clear the bytes after their end
        if short.any():
            shift = np.clip(rem[short], 0, 7).astype(np.uint64) * np.uint64(8)
            w[short] &= (np.uint64(1) << shift) - np.uint64(1)
        words.append(w)
    h = lens.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for w in words:
        h ^= w
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(29)
    for c in (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)):
        h ^= h >> np.uint64(33)
        h *= c
    h ^= h >> np.uint64(33)
    bits = max(1, (n - 1).bit_length())
    keep = 64 - bits if hash_bits is None else min(hash_bits, 64 - bits)
    packed = ((h >> np.uint64(64 - keep)) << np.uint64(bits)) if keep > 0 else np.zeros(n, np.uint64)
    del h
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    rows = (packed & np.uint64((1 << bits) - 1)).astype(np.int64)  # sorted by (hash, row)
    key = packed >> np.uint64(bits)
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    del packed, key
    group = np.cumsum(first) - 1  # per sorted position
    reps = rows[first]  # the first row (first appearance) of each hash group
    # Verify: a row whose hash equals that of the row before it (in sorted order) must equal
    # that row, byte for byte; by transitivity every hash group then holds one id.
    later = np.flatnonzero(~first)
    if later.size:
        if later.size * 4 > n:  # many repeats: put every word in sorted order once, compare neighbours
            in_order = lens[rows]
            neighbours = in_order[1:] == in_order[:-1]
            for w in words:
                in_order = w[rows]
                neighbours &= in_order[1:] == in_order[:-1]
            same = neighbours[later - 1]
            del in_order, neighbours
        else:  # few repeats: compare just those rows with their predecessors
            a, b = rows[later], rows[later - 1]
            same = lens[a] == lens[b]
            for w in words:
                same &= w[a] == w[b]
        if not same.all():
            mixed = np.unique(group[later[~same]])
            positions = np.flatnonzero(np.isin(group, mixed))
            if positions.size > 65536 and hash_bits is None:
                return None  # something defeats the hash: let the hash table do it
            extra: dict[tuple[int, bytes], int] = {}
            new_reps: list[int] = []
            for p in positions.tolist():  # a group's rows in ascending row order
                r, g = int(rows[p]), int(group[p])
                text = padded[starts[r] : starts[r] + lens[r]].tobytes()
                rep = int(reps[g])
                if text == padded[starts[rep] : starts[rep] + lens[rep]].tobytes():
                    continue
                k = (g, text)
                if k not in extra:
                    extra[k] = reps.size + len(extra)
                    new_reps.append(r)
                group[p] = extra[k]
            reps = np.concatenate([reps, np.asarray(new_reps, np.int64)])
    # renumber groups in order of first appearance, then scatter codes back to rows
    marker = np.zeros(n, bool)
    marker[reps] = True
    renumber = (np.cumsum(marker) - 1)[reps]
    codes = np.empty(n, np.int64)
    codes[rows] = renumber[group]
    vocab_rows = np.flatnonzero(marker)
    return codes, (arr if vocab_rows.size == n else ac.take(arr, numpy_arrow(vocab_rows)))


# --------------------------------------------------------------------------------------------
# Building validated Run / Qrels from columns (shared by every input shape)


def _check_duplicates(duplicates: str) -> str:
    return AXES["duplicates"].parse(duplicates)


def _pair_keys(qcode: np.ndarray, dcode: np.ndarray, ndocs: int) -> np.ndarray:
    return qcode * max(ndocs, 1) + dcode


def _has_repeats(key: np.ndarray) -> bool:
    s = np.sort(key)
    return bool((s[1:] == s[:-1]).any())


def _encode_pairs(qid, docid) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, Any, np.ndarray, bool]:
    """Codes and vocabularies of both id columns (qid codes, qid vocabulary in Arrow, docid
    codes, docid vocabulary as Python strings and in Arrow), the (query, doc) pair keys, and
    whether any repeats.

    On large inputs the Python strings of the docid vocabulary (which hold the GIL) are made in a
    second thread while this one encodes the qids and looks for repeated pairs (Arrow and
    numpy release the GIL there).
    """
    dcode, dvocab = _factorize_arrow(docid)

    def encode_qids():
        qcode, qvocab = _factorize_arrow(qid)
        key = _pair_keys(qcode, dcode, len(dvocab))
        return qcode, qvocab, key, key.size > 1 and _has_repeats(key)

    if len(dvocab) < _SORT_MIN_ROWS:
        (qcode, qvocab, key, repeats), docids = encode_qids(), _to_object(dvocab)
    else:
        (qcode, qvocab, key, repeats), docids = both(encode_qids, lambda: _to_object(dvocab))
    return qcode, qvocab, dcode, docids, dvocab, key, repeats


def _encode_words(qid, docid, check_pairs: bool = True) -> tuple[np.ndarray, np.ndarray, Any, DocWords] | None:
    """The fast coding: query codes and vocabulary, and the docids as per-row strings and words
    (no docid vocabulary: ``data._Table`` builds it from the words if asked; the strings are
    not kept, 13 bytes a row on the usual docids). None when the docids have no
    word form, or (``check_pairs``) when two rows may hold the same (query, docid) pair (then
    the exact coding settles, and names, the repeats)."""
    if not isinstance(docid, (pa.Array, pa.ChunkedArray)) or len(docid) < 2:
        return None
    # the docid words and the query coding are independent: on large inputs, two threads
    words, (qcode, qvocab) = both(lambda: DocWords.of(docid), lambda: _factorize_arrow(qid)) if (
        worth_splitting(len(docid))) else (DocWords.of(docid), _factorize_arrow(qid))
    if words is None or (check_pairs and _pairs_may_repeat(qcode, len(qvocab), words)):
        return None
    return qcode, qvocab, docid, words


def _pairs_may_repeat(qcode: np.ndarray, n_queries: int, words: DocWords) -> bool:
    """Whether two rows may hold the same (query, docid): True for a repeat, or (rarely) two
    pairs of one hash; False proves every pair distinct."""
    h = words.hash()

    def repeats(part: slice) -> bool:
        key = pair_hash(qcode[part], h[part])
        key.sort()
        return bool((key[1:] == key[:-1]).any())

    # a pair can repeat only within its query: a run listed query by query is checked in
    # two halves of its queries at once
    return any(each(repeats, query_halves(qcode, n_queries)))


def settle_pairs(run: Run, duplicates: str = "error") -> Run:
    """The duplicate check that ``read_run(..., check_pairs=False)`` left out: the run itself
    when no (query, docid) pair repeats, else what the reader would have returned under
    ``duplicates`` (the repeats dropped and counted) or raised (the two lines of the first
    repeat). Runs already checked are returned as they are."""
    if run.distinct_pairs is not None or run.doc_words is None:
        return run
    if not _pairs_may_repeat(run.qcode, len(run.qids), run.doc_words):
        run.distinct_pairs = True
        return run
    qid = ac.take(run.qid_strings, numpy_arrow(run.qcode))
    return _make_run(run.source, qid, run.doc_words.strings(), run.score, run._rank, run.line, run.counts,
                     _check_duplicates(duplicates), "line")


def _with_strings(table, qvocab, dvocab):
    """``table`` holding the Arrow copies of its vocabularies (the reference joins on them)."""
    table.qid_strings, table.docid_strings = qvocab, dvocab
    return table


def _make_run(name, qid, docid, score, rank, line, counts: ReadCounts, duplicates: str, unit: str,
              check_pairs: bool = True) -> Run:
    fast = _encode_words(qid, docid, check_pairs)
    if fast is not None:
        qcode, qvocab, strings, words = fast
        run = Run(qcode, _to_object(qvocab), None, None, line_numbers(line), name, counts,
                  np.ascontiguousarray(score, dtype=np.float64),
                  rank if isinstance(rank, pa.ChunkedArray) else np.ascontiguousarray(rank, dtype=np.float64),
                  doc_words=words)
        run.distinct_pairs, run.qid_strings = (True if check_pairs else None), qvocab
        return run
    qcode, qvocab, dcode, docids, dvocab, key, repeats = _encode_pairs(qid, docid)
    qids = _to_object(qvocab)
    score = np.ascontiguousarray(score, dtype=np.float64)
    rank = np.ascontiguousarray(arrow_numpy(rank) if isinstance(rank, pa.ChunkedArray) else rank, dtype=np.float64)
    line = np.asarray(line, dtype=np.int64)
    if repeats and duplicates != "keep":  # keep: every listing stays, each its own row
        order = np.argsort(key, kind="stable")
        ks = key[order]
        repeat = np.zeros(key.size, bool)
        repeat[1:] = ks[1:] == ks[:-1]  # a later listing of the pair before it, in row order
        if duplicates == "error":
            later = order[repeat]
            r2 = int(later.min())
            r1 = int(order[np.searchsorted(ks, key[r2])])
            q, d = qids[qcode[r2]], docids[dcode[r2]]
            raise InputError(
                name,
                f"docid {d!r} is listed twice for query {q!r}, on {unit}s {line[r1]} and {line[r2]}: "
                "expected each docid at most once per query (duplicates='first' or 'last' keeps one)",
                int(line[r2]),
            )
        drop = np.zeros(key.size, bool)
        if duplicates == "first":
            drop[order[repeat]] = True
        else:  # last: drop every listing that has a later one
            drop[order[np.append(repeat[1:], False)]] = True
        keep = ~drop
        counts.ignore(DUPLICATE_DOCID, int(drop.sum()))
        qcode, dcode, score, rank, line = qcode[keep], dcode[keep], score[keep], rank[keep], line[keep]
    return _with_strings(Run(qcode, qids, dcode, docids, line, name, counts, score, rank), qvocab, dvocab)


def _make_qrels(name, qid, docid, label, line, counts: ReadCounts, unit: str) -> Qrels:
    fast = _encode_words(qid, docid)
    if fast is not None:
        qcode, qvocab, strings, words = fast
        qrels = Qrels(qcode, _to_object(qvocab), None, None, line_numbers(line), name, counts,
                      np.ascontiguousarray(label, dtype=np.float64), doc_words=words)
        qrels.distinct_pairs, qrels.qid_strings = True, qvocab
        return qrels
    qcode, qvocab, dcode, docids, dvocab, key, repeats = _encode_pairs(qid, docid)
    qids = _to_object(qvocab)
    label = np.ascontiguousarray(label, dtype=np.float64)
    line = np.asarray(line, dtype=np.int64)
    if repeats:
        order = np.argsort(key, kind="stable")
        ks = key[order]
        repeat = np.zeros(key.size, bool)
        repeat[1:] = ks[1:] == ks[:-1]
        group = np.cumsum(~repeat) - 1
        first_row = order[~repeat][group]  # per sorted position: the first row of its pair
        conflict = repeat & (label[order] != label[first_row])
        if conflict.any():
            r2 = int(order[conflict].min())
            r1 = int(order[np.searchsorted(ks, key[r2])])
            q, d = qids[qcode[r2]], docids[dcode[r2]]
            raise InputError(
                name,
                f"conflicting judgments of docid {d!r} for query {q!r}: label {_num(label[r1])} on "
                f"{unit} {line[r1]} and label {_num(label[r2])} on {unit} {line[r2]}: "
                "expected one label per (query, docid)",
                int(line[r2]),
            )
        keep = np.ones(key.size, bool)
        keep[order[repeat]] = False
        counts.ignore(DUPLICATE_JUDGMENT, int((~keep).sum()))
        qcode, dcode, label, line = qcode[keep], dcode[keep], label[keep], line[keep]
    return _with_strings(Qrels(qcode, qids, dcode, docids, line, name, counts, label), qvocab, dvocab)


def _num(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


# --------------------------------------------------------------------------------------------
# JSON and JSONL


class _Obj(list):
    """A JSON object as its (key, value) pairs, in order, repeated keys kept."""


def _decode_text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        _Text(name, data).check_utf8()
        raise


def _json_loads(text: str, name: str, line: int | None = None) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_Obj)
    except json.JSONDecodeError as e:
        raise InputError(name, f"not valid JSON: {e.msg} (column {e.colno})",
                         e.lineno if line is None else line) from None
    except (ValueError, RecursionError) as e:
        raise InputError(name, f"not valid JSON: {e}", line) from None


def _kind(v: Any) -> str:
    if isinstance(v, _Obj):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return f"the string {_clip(v, 40)!r}"
    if isinstance(v, bool):
        return f"the boolean {'true' if v else 'false'}"
    if v is None:
        return "null"
    return f"{type(v).__name__} {v!r}"


def _id(v: Any, what: str, fail: Callable[[str], InputError]) -> str:
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    raise fail(f"{what} is {_kind(v)}: expected a string or an integer")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _to_float(v: Any) -> float:
    try:
        return float(v)
    except OverflowError:  # an integer beyond the double range
        return math.copysign(math.inf, v)


def _number(v: Any, what: str, fail: Callable[[str], InputError]) -> float:
    if not _is_number(v):
        raise fail(f"{what} is {_kind(v)}: expected a number")
    x = _to_float(v)
    if not math.isfinite(x):
        raise fail(f"{what} {v!r} is not a finite number: expected a finite number")
    return x


class _Rows:
    """Rows gathered from JSON-shaped input, before encoding (kept as per-record chunks)."""

    def __init__(self) -> None:
        self.qid: list[str] = []
        self.docid: list[str] = []
        self.value: list[np.ndarray] = []
        self.rank: list[np.ndarray] = []
        self.line: list[np.ndarray] = []
        self.n = 0
        self.counts = ReadCounts()

    def add(self, q: str, d: str, v: float, line: int, rank: float = math.nan) -> None:
        self.extend(q, [d], np.array([v]), np.array([line]), np.array([rank]))

    def extend(self, q: str, docids: list[str], values: np.ndarray, lines: np.ndarray, ranks: np.ndarray) -> None:
        k = len(docids)
        self.qid.extend([q] * k)
        self.docid.extend(docids)
        self.value.append(values)
        self.line.append(lines)
        self.rank.append(ranks)
        self.n += k

    def empty(self, reason: str) -> None:
        """A query or record that yields no row: one row read, and ignored for ``reason``."""
        self.counts.read += 1
        self.counts.used += 1
        self.counts.ignore(reason, 1)

    def finish_counts(self) -> ReadCounts:
        self.counts.read += self.n
        self.counts.used += self.n
        return self.counts

    def arrays(self):
        def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        return (arrow_strings(self.qid), arrow_strings(self.docid),
                cat(self.value, np.float64), cat(self.rank, np.float64), cat(self.line, np.int64))


_NUMBER_TYPES = {int, float}


def _numbers(values: list, what: Callable[[int], str], fail: Callable[[int, str], InputError]) -> np.ndarray:
    """Numbers -> finite float64, checked in bulk; ``fail(i, problem)`` names element i."""
    if not set(map(type, values)) <= _NUMBER_TYPES:  # type() is exact, so bool is not let through
        for i, v in enumerate(values):
            if not _is_number(v):
                raise fail(i, f"{what(i)} is {_kind(v)}: expected a number")
    try:
        out = np.array(values, dtype=np.float64)
    except OverflowError:
        out = np.array([_to_float(v) for v in values], dtype=np.float64)
    finite = np.isfinite(out)
    if not finite.all():
        i = int(np.argmin(finite))
        raise fail(i, f"{what(i)} {values[i]!r} is not a finite number: expected a finite number")
    return out


def _ids(values: list, what: Callable[[int], str], fail: Callable[[int, str], InputError]) -> list[str]:
    if all(type(v) is str for v in values):
        return values
    return [_id(v, what(i), lambda p, _i=i: fail(_i, p)) for i, v in enumerate(values)]


def _from_nested(obj: Any, name: str, what: str) -> _Rows:
    """``{qid: {docid: number}}`` (as _Obj pairs or plain mappings) -> rows; record = pair index."""
    rows = _Rows()
    pairs = obj if isinstance(obj, _Obj) else list(obj.items())
    record = 0  # records before this query's first
    for q_raw, docs in pairs:
        q = _id(q_raw, "a query id", lambda p: InputError(name, f"record {record + 1}: {p}", record + 1))
        if isinstance(docs, Mapping) and not isinstance(docs, _Obj):
            docs = list(docs.items())
        elif not isinstance(docs, _Obj):
            raise InputError(name, f"record {record + 1} (query {q!r}): the value is {_kind(docs)}: "
                                   f"expected an object {{docid: {what}}}", record + 1)
        if not docs:
            record += 1
            rows.empty(EMPTY_QUERY)
            continue

        def fail(i: int, problem: str, _base=record, _q=q) -> InputError:
            return InputError(name, f"record {_base + i + 1} (query {_q!r}): {problem}", _base + i + 1)

        docids = _ids([d for d, _ in docs], lambda i: "the docid", fail)
        values = _numbers([v for _, v in docs], lambda i, _d=docids: f"the {what} of docid {_d[i]!r}", fail)
        k = len(docids)
        rows.extend(q, docids, values, np.arange(record + 1, record + k + 1), np.full(k, np.nan))
        record += k
    return rows


def _record_key(rec: _Obj, names: tuple[str, ...]) -> tuple[str | None, Any]:
    for k, v in rec:
        if isinstance(k, str) and k.lower() in names:
            return k, v
    return None, None


_QID_KEYS = ("qid", "query_id", "q_id")
_DOCID_KEYS = ("docid", "doc_id")
_LABEL_KEYS = ("relevance", "label", "rel")
_LIST_KEYS = ("doc_ids", "docids", "retrieved_doc_ids")


def _qrels_record(rec: Any, rows: _Rows, name: str, line: int) -> None:
    def fail(p: str) -> InputError:
        return InputError(name, p, line)

    if not isinstance(rec, _Obj):
        raise fail(f"the record is {_kind(rec)}: expected a JSON object with a query id and judged documents")
    key, q_raw = _record_key(rec, _QID_KEYS)
    if key is None:
        raise fail(f"no query id: expected a key {' / '.join(_QID_KEYS)}, found {_keys(rec)}")
    q = _id(q_raw, f"the query id ({key})", fail)
    dkey, d_raw = _record_key(rec, _DOCID_KEYS)
    gkey, gold = _record_key(rec, ("gold_doc_ids",))
    rkey, graded = _record_key(rec, ("graded_relevance",))
    if dkey is not None:
        lkey, lab = _record_key(rec, _LABEL_KEYS)
        if lkey is None:
            raise fail(f"query {q!r}: no label: expected a key {' / '.join(_LABEL_KEYS)} beside {dkey!r}")
        d = _id(d_raw, f"the docid ({dkey})", fail)
        rows.add(q, d, _number(lab, f"the label of docid {d!r}", fail), line)
        return
    if gkey is None and rkey is None:
        raise fail(f"query {q!r}: no judged documents: expected 'gold_doc_ids' and/or "
                   f"'graded_relevance', or 'docid' with 'relevance'; found {_keys(rec)}")
    grades: dict[str, float] = {}
    graded_order: list[str] = []
    repeats = 0
    if rkey is not None:
        if not isinstance(graded, _Obj):
            raise fail(f"query {q!r}: graded_relevance is {_kind(graded)}: expected an object {{docid: grade}}")
        for d_raw, v in graded:
            d = _id(d_raw, "a docid in graded_relevance", fail)
            x = _number(v, f"the grade of docid {d!r}", fail)
            if d in grades:
                if grades[d] != x:
                    raise fail(f"query {q!r}: graded_relevance grades docid {d!r} twice, "
                               f"{_num(grades[d])} and {_num(x)}: expected one grade per docid")
                repeats += 1
            else:
                graded_order.append(d)
                grades[d] = x
    golds: list[str] = []
    if gkey is not None:
        if not isinstance(gold, list) or isinstance(gold, _Obj):
            raise fail(f"query {q!r}: gold_doc_ids is {_kind(gold)}: expected a list of docids")
        golds = [_id(d, "an id in gold_doc_ids", fail) for d in gold]
    if not golds and not graded_order:
        rows.empty(EMPTY_RECORD)
        return
    gold_set = set(golds)
    for d in golds:
        rows.add(q, d, grades.get(d, 1.0), line)
    for d in graded_order:
        if d not in gold_set:
            rows.add(q, d, grades[d], line)
    for _ in range(repeats):  # a docid graded twice alike: read, then ignored as a duplicate judgment
        rows.counts.read += 1
        rows.counts.used += 1
        rows.counts.ignore(DUPLICATE_JUDGMENT, 1)


def _run_record(rec: Any, rows: _Rows, name: str, line: int) -> None:
    def fail(p: str) -> InputError:
        return InputError(name, p, line)

    if not isinstance(rec, _Obj):
        raise fail(f"the record is {_kind(rec)}: expected a JSON object with a query id and documents")
    key, q_raw = _record_key(rec, _QID_KEYS)
    if key is None:
        raise fail(f"no query id: expected a key {' / '.join(_QID_KEYS)}, found {_keys(rec)}")
    q = _id(q_raw, f"the query id ({key})", fail)
    dkey, d_raw = _record_key(rec, _DOCID_KEYS)
    if dkey is not None:
        skey, s = _record_key(rec, ("score",))
        if skey is None:
            raise fail(f"query {q!r}: no score: expected a key 'score' beside {dkey!r}")
        d = _id(d_raw, f"the docid ({dkey})", fail)
        x = _number(s, f"the score of docid {d!r}", fail)
        rkey, r = _record_key(rec, ("rank",))
        rank = _to_float(r) if _is_number(r) else math.nan
        rows.add(q, d, x, line, rank)
        return
    lkey, docs = _record_key(rec, _LIST_KEYS)
    if lkey is None:
        raise fail(f"query {q!r}: no documents: expected a list under {' / '.join(_LIST_KEYS)}, "
                   f"or 'docid' with 'score'; found {_keys(rec)}")
    if not isinstance(docs, list) or isinstance(docs, _Obj):
        raise fail(f"query {q!r}: {lkey} is {_kind(docs)}: expected a list of docids")
    skey, scores = _record_key(rec, ("scores",))
    if skey is not None:
        if not isinstance(scores, list) or isinstance(scores, _Obj):
            raise fail(f"query {q!r}: scores is {_kind(scores)}: expected a list of numbers")
        if len(scores) != len(docs):
            raise fail(f"query {q!r}: {len(docs)} docids but {len(scores)} scores: expected one score per docid")
    if not docs:
        rows.empty(EMPTY_QUERY)
        return
    n = len(docs)

    def fail_at(i: int, problem: str) -> InputError:
        return InputError(name, f"query {q!r}: {problem}", line)

    docids = _ids(docs, lambda i: f"the docid at position {i + 1} of {lkey}", fail_at)
    if skey is not None:
        values = _numbers(scores, lambda i: f"the score of docid {docids[i]!r}", fail_at)
    else:
        values = np.arange(n, 0, -1, dtype=np.float64)
    rows.extend(q, docids, values, np.full(n, line), np.arange(1, n + 1, dtype=np.float64))


def _keys(rec: _Obj) -> str:
    names = [k for k, _ in rec]
    return ", ".join(repr(k) for k in names[:8]) + (" ..." if len(names) > 8 else "") if names else "no keys"


def _read_json_rows(path, record: Callable, what: str) -> tuple[_Rows, str]:
    data, name = _read_bytes(path)
    text = _decode_text(data, name)
    if not text.strip():
        raise InputError(name, "no data rows: the file is empty")
    obj = _json_loads(text, name)
    if isinstance(obj, _Obj):
        key, value = _record_key(obj, _QID_KEYS)
        if key is not None and not isinstance(value, _Obj):
            raise InputError(name, f"the JSON object has a {key!r} key, so it looks like one record: expected "
                                   f"{{qid: {{docid: {what}}}}}, a list of records, or one record per line "
                                   "in a .jsonl file", 1)
        rows = _from_nested(obj, name, what)
    elif isinstance(obj, list):
        rows = _Rows()
        for i, rec in enumerate(obj, 1):
            record(rec, rows, name, i)
    else:
        raise InputError(name, f"the JSON value is {_kind(obj)}: expected an object {{qid: {{docid: {what}}}}} "
                               "or a list of records")
    return rows, name


def _read_jsonl_rows(path, record: Callable) -> tuple[_Rows, str]:
    data, name = _read_bytes(path)
    text = _decode_text(data, name)
    rows = _Rows()
    lines = text.split("\n")
    if lines[-1] == "":  # the empty tail after a final newline is not a line
        lines.pop()
    for k, raw in enumerate(lines, 1):
        if not raw.strip(_WS):
            rows.counts.blank += 1
            continue
        record(_json_loads(raw, name, k), rows, name, k)
    return rows, name


def _require_rows(rows: _Rows, name: str) -> None:
    if not rows.qid and not rows.counts.read:
        raise InputError(name, "no data rows")


def _rows_to_run(rows: _Rows, name: str, duplicates: str, unit: str) -> Run:
    _require_rows(rows, name)
    counts = rows.finish_counts()
    q, d, v, r, line = rows.arrays()
    return _make_run(name, q, d, v, r, line, counts, duplicates, unit)


def _rows_to_qrels(rows: _Rows, name: str, unit: str) -> Qrels:
    _require_rows(rows, name)
    counts = rows.finish_counts()
    q, d, v, _, line = rows.arrays()
    return _make_qrels(name, q, d, v, line, counts, unit)


def read_run_json(path: str | os.PathLike, duplicates: str = "error") -> Run:
    """Read a JSON run ``{qid: {docid: score}}`` (or a list of run records); see the module docstring."""
    duplicates = _check_duplicates(duplicates)
    rows, name = _read_json_rows(path, _run_record, "score")
    return _rows_to_run(rows, name, duplicates, "record")


def read_qrels_json(path: str | os.PathLike) -> Qrels:
    """Read JSON qrels ``{qid: {docid: label}}`` (or a list of qrels records); see the module docstring."""
    rows, name = _read_json_rows(path, _qrels_record, "label")
    return _rows_to_qrels(rows, name, "record")


def read_run_jsonl(path: str | os.PathLike, duplicates: str = "error") -> Run:
    """Read a JSONL run: ranked-list records ``{"qid", "doc_ids", "scores"?}`` or flat records."""
    duplicates = _check_duplicates(duplicates)
    rows, name = _read_jsonl_rows(path, _run_record)
    return _rows_to_run(rows, name, duplicates, "line")


def read_qrels_jsonl(path: str | os.PathLike) -> Qrels:
    """Read JSONL qrels: RAG records ``{"qid", "gold_doc_ids", "graded_relevance"}`` or flat records.

    A gold id without a grade gets label 1; ``graded_relevance`` takes precedence over gold
    membership. See the module docstring for the full rules.
    """
    rows, name = _read_jsonl_rows(path, _qrels_record)
    return _rows_to_qrels(rows, name, "line")


def run_from_dict(run: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>", duplicates: str = "error") -> Run:
    """A validated Run from ``{qid: {docid: score}}``; the "line" of a problem is the record number."""
    duplicates = _check_duplicates(duplicates)
    rows = _from_nested(_mapping(run, source, "score"), source, "score")
    return _rows_to_run(rows, source, duplicates, "record")


def qrels_from_dict(qrels: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>") -> Qrels:
    """Validated Qrels from ``{qid: {docid: label}}``; the "line" of a problem is the record number."""
    rows = _from_nested(_mapping(qrels, source, "label"), source, "label")
    return _rows_to_qrels(rows, source, "record")


def _mapping(obj: Any, source: str, what: str) -> Any:
    if not isinstance(obj, Mapping):
        raise InputError(source, f"got {type(obj).__name__}: expected a mapping {{qid: {{docid: {what}}}}}")
    return obj


# --------------------------------------------------------------------------------------------
# DataFrames

_FRAME_QID = ("qid", "q_id", "query_id")
_FRAME_DOCID = ("docid", "doc_id")
_FRAME_SCORE = ("score",)
_FRAME_RANK = ("rank",)
_FRAME_LABEL = ("relevance", "label", "rel")


def _frame_column(df, names: tuple[str, ...], source: str, role: str, required: bool = True):
    found = [c for c in df.columns if isinstance(c, str) and c.lower() in names]
    if len(found) > 1:
        raise InputError(source, f"columns {', '.join(map(repr, found))} all name the {role}: expected one of them")
    if not found:
        if not required:
            return None
        raise InputError(source, f"no {role} column: expected one named {' / '.join(names)}; "
                                 f"the columns are {', '.join(map(repr, map(str, df.columns)))}")
    return df[found[0]]


def _frame_arrow(series, source: str, role: str) -> pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(source, f"column {series.name!r} ({role}) mixes value types ({e}): "
                                 "expected one type throughout") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = _as_array(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        i = int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))
        raise InputError(source, f"row {i + 1}: {role} ({series.name!r}) is missing (null or NaN)", i + 1)
    return arr


def _frame_ids(series, source: str, role: str) -> pa.Array:
    arr = _frame_arrow(series, source, role)
    if pa.types.is_integer(arr.type):
        return ac.cast(arr, pa.string())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr
    raise InputError(source, f"column {series.name!r} ({role}) holds {arr.type}: expected strings or integers")


def _frame_numbers(series, source: str, role: str) -> np.ndarray:
    arr = _frame_arrow(series, source, role)
    if pa.types.is_boolean(arr.type):
        raise InputError(source, f"column {series.name!r} ({role}) holds booleans: expected numbers")
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        try:
            arr = ac.cast(arr, _F64)
        except pa.ArrowInvalid:
            i = _first_bad_cast(arr)
            raise InputError(source, f"row {i + 1}: {role} {arr[i].as_py()!r} is not a number: "
                                     "expected a decimal number", i + 1) from None
    elif not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type)):
        raise InputError(source, f"column {series.name!r} ({role}) holds {arr.type}: expected numbers")
    values = ac.cast(arr, _F64).to_numpy(zero_copy_only=False)
    finite = np.isfinite(values)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InputError(source, f"row {i + 1}: {role} {values[i]!r} is not a finite number: "
                                 "expected a finite number", i + 1)
    return values


def _frame_rank(series, n: int) -> np.ndarray:
    if series is None:
        return np.full(n, np.nan)
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        arr = pa.array(series.astype(str))
    if isinstance(arr, pa.ChunkedArray):
        arr = _as_array(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        return ac.fill_null(ac.cast(arr, _F64), math.nan).to_numpy(zero_copy_only=False)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return _lenient_float(ac.fill_null(arr, "nan"))
    return np.full(n, np.nan)


def _check_frame(df, source: str) -> None:
    if not (hasattr(df, "columns") and hasattr(df, "iloc")):
        raise InputError(source, f"got {type(df).__name__}: expected a pandas DataFrame")


def run_from_frame(df, source: str = "<DataFrame>", duplicates: str = "error") -> Run:
    """A validated Run from a DataFrame with query id, docid, score and (optional) rank columns.

    Accepted column names (case-insensitive): qid / q_id / query_id, docid / doc_id, score, rank.
    The "line" of a problem is the 1-based row position. A rank that is not a number is NaN.
    """
    duplicates = _check_duplicates(duplicates)
    _check_frame(df, source)
    q = _frame_column(df, _FRAME_QID, source, "query id")
    d = _frame_column(df, _FRAME_DOCID, source, "docid")
    s = _frame_column(df, _FRAME_SCORE, source, "score")
    r = _frame_column(df, _FRAME_RANK, source, "rank", required=False)
    n = len(df)
    if n == 0:
        raise InputError(source, "no data rows")
    qid, docid = _frame_ids(q, source, "query id"), _frame_ids(d, source, "docid")
    score = _frame_numbers(s, source, "score")
    rank = _frame_rank(r, n)
    return _make_run(source, qid, docid, score, rank, np.arange(1, n + 1), ReadCounts(read=n, used=n),
                     duplicates, "row")


def qrels_from_frame(df, source: str = "<DataFrame>") -> Qrels:
    """Validated Qrels from a DataFrame with query id, docid and label columns.

    Accepted column names (case-insensitive): qid / q_id / query_id, docid / doc_id,
    relevance / label / rel. The "line" of a problem is the 1-based row position.
    """
    _check_frame(df, source)
    q = _frame_column(df, _FRAME_QID, source, "query id")
    d = _frame_column(df, _FRAME_DOCID, source, "docid")
    lab = _frame_column(df, _FRAME_LABEL, source, "relevance label")
    n = len(df)
    if n == 0:
        raise InputError(source, "no data rows")
    qid, docid = _frame_ids(q, source, "query id"), _frame_ids(d, source, "docid")
    label = _frame_numbers(lab, source, "relevance label")
    return _make_qrels(source, qid, docid, label, np.arange(1, n + 1), ReadCounts(read=n, used=n), "row")


# --------------------------------------------------------------------------------------------
# Dispatch

_FORMATS = ("trec", "json", "jsonl")


def _format_of(path: str, format: str | None) -> str:
    if format is not None:
        if format not in _FORMATS:
            raise ValueError(f"format {format!r}: expected one of {', '.join(_FORMATS)}")
        return format
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".json"):
        return "json"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    return "trec"


def _is_frame(obj: Any) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def load_run(source: Any, duplicates: str = "error", format: str | None = None, check_pairs: bool = True) -> Run:
    """A Run from a Run (returned as it is), a DataFrame, a ``{qid: {docid: score}}`` mapping or a
    path (``.json``, ``.jsonl`` / ``.ndjson``, optionally ``.gz``; anything else is TREC).
    ``format`` ("trec", "json", "jsonl") overrides the extension. ``check_pairs``: see
    :func:`read_run` (TREC files only; the other readers always check)."""
    if isinstance(source, Run):
        return source
    if _is_frame(source):
        return run_from_frame(source, duplicates=duplicates)
    if isinstance(source, Mapping):
        return run_from_dict(source, duplicates=duplicates)
    if isinstance(source, (str, bytes, os.PathLike)):
        fmt = _format_of(os.fsdecode(source), format)
        if fmt == "trec":
            return read_run(source, duplicates=duplicates, check_pairs=check_pairs)
        reader = {"json": read_run_json, "jsonl": read_run_jsonl}[fmt]
        return reader(source, duplicates=duplicates)
    raise TypeError(f"load_run: got {type(source).__name__}: expected a path, a DataFrame, a mapping or a Run")


def load_qrels(source: Any, format: str | None = None) -> Qrels:
    """Qrels from Qrels (returned as they are), a DataFrame, a ``{qid: {docid: label}}`` mapping or a
    path (``.json``, ``.jsonl`` / ``.ndjson``, optionally ``.gz``; anything else is TREC)."""
    if isinstance(source, Qrels):
        return source
    if _is_frame(source):
        return qrels_from_frame(source)
    if isinstance(source, Mapping):
        return qrels_from_dict(source)
    if isinstance(source, (str, bytes, os.PathLike)):
        fmt = _format_of(os.fsdecode(source), format)
        reader = {"trec": read_qrels, "json": read_qrels_json, "jsonl": read_qrels_jsonl}[fmt]
        return reader(source)
    raise TypeError(f"load_qrels: got {type(source).__name__}: expected a path, a DataFrame, a mapping or Qrels")
