"""Tabular files -> columns: CSV and TSV with a header row, Parquet and Arrow IPC (through pyarrow).

Columns are found by name as :mod:`conformance.io.roles` says (aliases such as ``query_id``,
``doc_id``, ``relevance``, ``score``; or given, ``columns={"qid": "Query", ...}``, on the command
line ``--columns qid=Query,docid=Doc``). Other columns are ignored (and not read, where the format
allows).

CSV / TSV (``.csv``, ``.tsv``, ``.tab``, optionally ``.gz``): the first non-empty line is the
header; comma-separated (CSV, with ``"`` quoting and ``""`` for a quote inside a quoted field)
or tab-separated (TSV, no quoting: a ``"`` is data). Every cell is read as text and trimmed of
ASCII whitespace, then ids are checked and scores and labels read as numbers (``' 3'`` is 3;
an id ``' d1'`` is ``'d1'``, as whitespace never belongs to a TREC id). Empty lines are
skipped and counted; a line with another number of fields than the header, or a quoted field
running over a line end, is an error naming the line; line numbers are those of the file (the
header is line 1). The limits of :mod:`conformance.io.limits` apply as for every text input.

Parquet (``.parquet``, ``.pq``) and Arrow IPC (``.arrow``, ``.feather``, ``.ipc``: the file
format, Feather v2, or the stream format) are recognised by their first bytes whatever the
name. Only the role columns are read. The input-size limit applies to the file and, for
Parquet, to the uncompressed size its metadata declares. The "line" of a problem is the row
(1-based).
"""

from __future__ import annotations

import csv
import io as _stdio
import os
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from conformance.errors import InputError
from conformance.io import kernels as ac
from conformance.io.columnar import LazyRange, read_csv
from conformance.io.frames import parse_columns
from conformance.io.roles import PAIRS_ROLES, QRELS_ROLES, RUN_ROLES, find_columns
from conformance.io.limits import Limits
from conformance.io.parsed import Parsed, ReadCounts
from conformance.io.text import FileProblem, check_line_lengths, check_utf8, clip, read_bytes

DELIMITERS = {"csv": ",", "tsv": "\t"}


def _roles(kind: str) -> tuple[str, ...]:
    return {"run": RUN_ROLES, "pairs": PAIRS_ROLES}.get(kind, QRELS_ROLES)


def _header(data, name: str, fmt: str) -> tuple[list[str], int, int]:
    """The header's column names, its line number and the offset where the data begins."""
    pos, line = 0, 1
    while True:
        end = data.find(b"\n", pos)
        raw = bytes(data[pos:end if end >= 0 else len(data)])
        if raw.rstrip(b"\r"):
            break
        if end < 0:
            raise InputError(name, "no data rows: the file is empty")
        pos, line = end + 1, line + 1
    try:
        text = raw.rstrip(b"\r").decode("utf-8")
    except UnicodeDecodeError:
        check_utf8(data, name)
        raise
    names = _split(text, fmt)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(name, f"the header names the column {twice!r} twice: expected distinct column names", line)
    return [n.strip() for n in names], line, (end + 1 if end >= 0 else len(data))


def _split(text: str, fmt: str) -> list[str]:
    if fmt == "tsv":
        return text.split("\t")
    return next(csv.reader([text]))


def parse_csv(path: str | os.PathLike, kind: str, fmt: str, columns: Mapping[str, str] | None = None,
              limits: Limits | None = None) -> Parsed:
    """A CSV (``fmt="csv"``) or TSV file with a header row as the columns of a run or qrels."""
    limits = Limits.from_env() if limits is None else limits
    data, name = read_bytes(path, limits, lines=True)
    u8 = np.frombuffer(data, np.uint8) if len(data) else np.zeros(0, np.uint8)
    ends = np.flatnonzero(u8 == 10) + 1
    if len(data) and data[-1:] != b"\n":
        ends = np.append(ends, len(data))
    check_line_lengths(ends, name, limits)
    names, header_line, body = _header(data, name, fmt)
    found = find_columns(names, _roles(kind), columns, name)
    # each physical line after the header is a row, or an empty line (skipped and counted)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    content = ends - starts
    if ends.size:
        content -= u8[ends - 1] == 10  # without the line end: \n, or \r\n
        content -= (content > 0) & (u8[np.maximum(starts + content - 1, 0)] == 13)
    empty = content == 0
    rows = np.flatnonzero(~empty) + 1  # line numbers of non-empty lines
    rows = rows[rows > header_line]
    counts = ReadCounts(read=int(rows.size), used=int(rows.size), blank=int(empty[header_line:].sum()))
    if rows.size == 0:
        raise InputError(name, "no data rows: the file has only a header")
    used = [c for c in found.values() if c is not None]
    try:
        table = read_csv(
            data, body,
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=pcsv.ParseOptions(
                delimiter=DELIMITERS[fmt], quote_char='"' if fmt == "csv" else False,
                double_quote=fmt == "csv", escape_char=False, newlines_in_values=False,
                ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                include_columns=used, column_types={c: pa.string() for c in used}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False, check_utf8=True),
        )
    except pa.ArrowInvalid as e:
        raise _csv_error(data, name, fmt, len(names), header_line, e) from None
    if table.num_rows != rows.size:  # pragma: no cover - every row is a non-empty line
        raise InputError(name, f"read {table.num_rows} rows from {rows.size} non-empty lines: expected one "
                               "row per line")
    cells = {c: ac.ascii_trim_whitespace(table.column(c)) for c in used}
    line = LazyRange(header_line + 1, header_line + 1 + rows.size) if rows[-1] == header_line + rows.size \
        else rows.astype(np.int64)
    return parse_columns(cells, found, kind, name, line, "line", counts)


def _csv_error(data, name: str, fmt: str, width: int, header_line: int, exc: Exception) -> InputError:
    """The first line of the body whose field count is not the header's, named; or the UTF-8
    problem; or Arrow's own message."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        try:
            check_utf8(data, name)
        except InputError as e:
            return e
        text = bytes(data).decode("utf-8", "replace")
    what = "comma" if fmt == "csv" else "tab"
    for k, raw in enumerate(_stdio.StringIO(text, newline="\n"), 1):
        if k <= header_line:
            continue
        raw = raw.rstrip("\n").rstrip("\r")
        if not raw:
            continue
        if fmt == "csv" and raw.count('"') % 2:
            return InputError(name, f"a quoted field runs past the end of the line: expected each row on one "
                                    f"line: {clip(raw)!r}", k)
        got = len(_split(raw, fmt))
        if got != width:
            return InputError(name, f"expected {width} {what}-separated fields (as the header has), got {got}: "
                                    f"{clip(raw)!r}", k)
    return InputError(name, f"not readable as {fmt.upper()}: {clip(str(exc), 200)}")


# --------------------------------------------------------------------------------------------
# Parquet and Arrow IPC


def _check_size(path: str, limits: Limits, declared: int | None = None) -> None:
    size_limit = limits.max_input_bytes
    if size_limit is None:
        return
    size = os.path.getsize(path)
    if size > size_limit:
        raise FileProblem(path, limits.input_too_large(size, f"the file ({size:,} bytes)"))
    if declared is not None and declared > size_limit:
        raise FileProblem(path, limits.input_too_large(declared, f"the data it declares ({declared:,} bytes "
                                                                 "uncompressed)"))


def _open_error(path: str, what: str, exc: Exception) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return FileProblem(path, "no such file")
    if isinstance(exc, PermissionError):
        return FileProblem(path, "cannot read the file: permission denied")
    return InputError(path, f"not a readable {what} file: {clip(str(exc), 200)}")


def parse_parquet(path: str | os.PathLike, kind: str, columns: Mapping[str, str] | None = None,
                  limits: Limits | None = None) -> Parsed:
    """A Parquet file as the columns of a run or qrels."""
    import pyarrow.parquet as pq

    limits = Limits.from_env() if limits is None else limits
    name = os.fsdecode(path)
    if os.path.isdir(name):
        raise FileProblem(name, "is a directory: expected a file")
    try:
        meta = pq.ParquetFile(name)
        declared = sum(meta.metadata.row_group(i).total_byte_size for i in range(meta.metadata.num_row_groups))
        _check_size(name, limits, declared)
        schema = meta.schema_arrow
        listed = _listed(schema, kind, columns, name)
        if listed is not None:  # one row per user, its items in a list column
            from conformance.io.frames import parse_listed

            return parse_listed(meta.read(columns=sorted(set(listed))), listed[0], listed[1], kind, name)
        found = find_columns(schema.names, _roles(kind), columns, name)
        table = meta.read(columns=sorted({c for c in found.values() if c is not None}))
    except InputError:
        raise
    except (OSError, pa.ArrowException, ValueError) as e:
        raise _open_error(name, "Parquet", e) from None
    return _table_columns(table, found, kind, name)


def parse_arrow(path: str | os.PathLike, kind: str, columns: Mapping[str, str] | None = None,
                limits: Limits | None = None) -> Parsed:
    """An Arrow IPC file (or stream; Feather v2 is the file format) as the columns of a run or qrels."""
    limits = Limits.from_env() if limits is None else limits
    name = os.fsdecode(path)
    if os.path.isdir(name):
        raise FileProblem(name, "is a directory: expected a file")
    try:
        _check_size(name, limits)
        source = pa.memory_map(name)
        try:
            reader: Any = pa.ipc.open_file(source)
            schema = reader.schema
        except pa.ArrowInvalid:
            source.seek(0)
            reader = pa.ipc.open_stream(source)
            schema = reader.schema
        listed = _listed(schema, kind, columns, name)
        if listed is not None:
            from conformance.io.frames import parse_listed

            return parse_listed(reader.read_all().select(sorted(set(listed))), listed[0], listed[1], kind, name)
        found = find_columns(schema.names, _roles(kind), columns, name)
        table = reader.read_all().select(sorted({c for c in found.values() if c is not None}))
    except InputError:
        raise
    except (OSError, pa.ArrowException, ValueError) as e:
        raise _open_error(name, "Arrow IPC", e) from None
    return _table_columns(table, found, kind, name)


def _listed(schema, kind: str, columns, name: str) -> tuple[str, str] | None:
    """(the list column, the query id column) of a table of item lists; None for a flat one."""
    if kind == "pairs" or not any(pa.types.is_list(f.type) or pa.types.is_large_list(f.type)
                                  or pa.types.is_fixed_size_list(f.type) or pa.types.is_list_view(f.type)
                                  or pa.types.is_large_list_view(f.type) for f in schema):
        return None
    from conformance.io.listed import list_column, other_columns  # only for a table of lists

    column = list_column({f.name: f.type for f in schema}, kind, columns, name)
    return None if column is None else (column, other_columns(schema.names, column, columns, name))


def _table_columns(table: pa.Table, found, kind: str, name: str) -> Parsed:
    n = table.num_rows
    return parse_columns({c: table.column(c) for c in found.values() if c is not None}, found, kind, name,
                         LazyRange(1, n + 1), "row")
