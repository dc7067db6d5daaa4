"""Tables and arrays -> columns: DataFrames, Arrow tables, and list-wise arrays with group sizes.

A table (a pandas DataFrame, a pyarrow Table or RecordBatch, or anything with ``to_arrow()``
such as a polars DataFrame; the CSV / TSV / Parquet / Arrow readers end here too) gives each
role one column, found by name or given (:mod:`conformance.io.roles`).

Column contents: ids are strings or integers (an integer column becomes decimal strings; a float
id column such as 301.0 is refused, as it would not match "301"; an empty or missing id is
refused); numbers are integers, floats, decimals or numeric strings, finite, and integers beyond
2^53 only where a double holds them exactly (see :mod:`conformance.io.records`); a rank that is
not a number is NaN. The "line" of a problem is the row (1-based; the readers of files give the
line in the file).

List-wise arrays (:func:`parse_lists`), as learning-to-rank code holds them:

* flat arrays and group sizes: ``values=[3, 2, 0, 1, 0]``, ``group=[3, 2]`` (LightGBM's
  ``group``, XGBoost's ``group`` / ``qid`` runs): query i holds the next ``group[i]`` rows;
* or one sequence per query: ``[[3, 2, 0], [1, 0]]``, or a mapping ``{qid: [...]}``.

Query ids are ``qids`` when given, the mapping's keys, else the query's index as a decimal
string ("0", "1", ...). Docids are ``doc_ids`` when given (same shape as the values), else each
document's position in its query (0-based), zero-padded to one width ("00", "01", ... "11") so
that byte order, which tie rules by docid read, is position order. With doc ids and no values a
run is ranked in list order (position i of n scores n - i + 1) and qrels judge every listed
document relevant (label 1).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from conformance.errors import InputError
from conformance.io import kernels as ac
from conformance.io.columnar import arrow_numpy, arrow_strings, first_bad_cast, lenient_float, numpy_arrow
from conformance.io.encode import as_array
from conformance.io.parsed import Parsed, ReadCounts
from conformance.io.records import EXACT_INTEGERS, identifiers, numbers
from conformance.io.roles import PAIRS_ROLES, QRELS_ROLES, ROLE_NAMES, RUN_ROLES, find_columns

_F64 = pa.float64()


# --------------------------------------------------------------------------------------------
# Arrow columns -> checked arrays


def _row_of(line, i: int) -> int:
    return int(line[i])


def _at(line, i: int, unit: str, column: str) -> str:
    """Where a cell is, for a message whose prefix is the file and line (a table's rows are not
    lines of a file: they are named)."""
    return f"row {_row_of(line, i)}, column {column!r}" if unit == "row" else f"column {column!r}"


def _plain(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = as_array(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _is_text(t) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _missing(arr: pa.Array, column: str, what: str, source: str, line, unit: str) -> None:
    if arr.null_count:
        i = int(np.argmax(arrow_numpy(ac.is_null(arr))))
        raise InputError(source, f"{_at(line, i, unit, column)}: the {what} is missing (null or NaN)",
                         _row_of(line, i))


def id_column(arr, column: str, role: str, source: str, line, unit: str) -> pa.Array:
    """An id column as Arrow strings: integers written in decimal; empty, missing and float ids
    refused."""
    what = ROLE_NAMES[role]
    arr = _plain(arr)
    _missing(arr, column, what, source, line, unit)
    if pa.types.is_integer(arr.type):
        return ac.cast(arr, pa.string())
    if not _is_text(arr.type):
        also = " (a float id such as 301.0 would not match '301')" if pa.types.is_floating(arr.type) else ""
        raise InputError(source, f"column {column!r} ({what}) holds {arr.type}: expected strings or "
                                 f"integers{also}")
    if not pa.types.is_string(arr.type):  # large or view strings (pandas, polars): the readers' type
        try:
            arr = ac.cast(arr, pa.string())
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # over 2 GiB of id bytes
            arr = ac.cast(arr, pa.large_string())
    empty = arrow_numpy(ac.binary_length(arr)) == 0
    if empty.any():
        i = int(np.argmax(empty))
        raise InputError(source, f"{_at(line, i, unit, column)}: the {what} is empty", _row_of(line, i))
    return arr


def number_column(arr, column: str, role: str, source: str, line, unit: str) -> np.ndarray:
    """A score or label column as finite float64 (numeric strings are read as numbers)."""
    what = ROLE_NAMES[role]
    arr = _plain(arr)
    _missing(arr, column, what, source, line, unit)
    if pa.types.is_boolean(arr.type):
        raise InputError(source, f"column {column!r} ({what}) holds booleans: expected numbers")
    if _is_text(arr.type):
        try:
            arr = ac.cast(arr, _F64)
        except pa.ArrowInvalid:
            i = first_bad_cast(arr)
            raise InputError(source, f"{_at(line, i, unit, column)}: the {what} {arr[i].as_py()!r} is "
                                     "not a number: expected a decimal number such as 12.5",
                             _row_of(line, i)) from None
    elif pa.types.is_integer(arr.type):
        ints = arrow_numpy(arr)
        big = np.flatnonzero((ints > EXACT_INTEGERS) | (ints < -EXACT_INTEGERS)) if ints.size else ints
        for i in big[:1000].tolist():  # beyond 2^53: exact only where a double holds the integer
            v = int(ints[i])
            if int(float(v)) != v:
                raise InputError(source, f"{_at(line, i, unit, column)}: the {what} {v} is an integer "
                                         f"a double cannot hold exactly (it would read as {float(v)!r}): "
                                         "expected an integer of at most 2^53 in size, or a decimal number",
                                 _row_of(line, i))
        return ints.astype(np.float64)
    elif not (pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type)):
        raise InputError(source, f"column {column!r} ({what}) holds {arr.type}: expected numbers")
    values = np.asarray(arrow_numpy(ac.cast(arr, _F64)), dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InputError(source, f"{_at(line, i, unit, column)}: the {what} {values[i]!r} is not a "
                                 "finite number: expected a finite number", _row_of(line, i))
    return values


def rank_column(arr) -> np.ndarray:
    """The rank column, leniently: numbers as they are, anything else NaN."""
    arr = _plain(arr)
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type):
        return np.asarray(arrow_numpy(ac.fill_null(ac.cast(arr, _F64), float("nan"))), dtype=np.float64)
    if _is_text(arr.type):
        return np.asarray(lenient_float(ac.fill_null(arr, "nan")), dtype=np.float64)
    return np.full(len(arr), np.nan)


def parse_columns(columns: Mapping[str, Any], found: Mapping[str, str | None], kind: str, source: str,
                  line, unit: str, counts: ReadCounts | None = None) -> Parsed:
    """Arrow columns (column name -> array) of a table whose roles are ``found`` -> Parsed;
    ``kind``: "run" or "qrels"; ``line``: each row's line (or row number)."""
    n = len(line)
    if n == 0:
        raise InputError(source, "no data rows")
    qid = id_column(columns[found["qid"]], found["qid"], "qid", source, line, unit)
    docid = id_column(columns[found["docid"]], found["docid"], "docid", source, line, unit)
    role = "score" if kind == "run" else "label"
    counts = counts or ReadCounts(read=n, used=n)
    if kind == "pairs":  # a training table's interactions: the pairs alone are read
        value = np.zeros(n)
    elif kind == "run" and found.get("score") is None:
        # ranks and no scores (a recommender's top-k table): the rank is the order, rank 1
        # first, so the score is the rank negated and every library is given that order
        value = -number_column(columns[found["rank"]], found["rank"], "rank", source, line, unit)
        counts.score_from_rank = found["rank"]
    else:
        value = number_column(columns[found[role]], found[role], role, source, line, unit)
    rank = None
    if kind == "run":
        rank = rank_column(columns[found["rank"]]) if found.get("rank") else np.full(n, np.nan)
    return Parsed(source, qid, docid, value, line, counts, unit, rank=rank)


# --------------------------------------------------------------------------------------------
# DataFrames and Arrow tables


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a table this module reads (pandas, pyarrow, or one with to_arrow())."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return True
    return isinstance(obj, (pa.Table, pa.RecordBatch)) or (callable(getattr(obj, "to_arrow", None))
                                                            and hasattr(obj, "columns"))


def _pandas_column(series, column: str, what: str, source: str) -> pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except UnicodeEncodeError:
        for i, v in enumerate(series.tolist()):
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise InputError(source, f"row {i + 1}: the {what} ({column!r}) holds a lone surrogate, "
                                             "which is not a character: expected text", i + 1) from None
        raise
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(source, f"column {column!r} ({what}) mixes value types ({e}): "
                                 "expected one type throughout") from None
    return arr


def parse_frame(df: Any, kind: str, source: str, given: Mapping[str, str] | None = None) -> Parsed:
    """A DataFrame or Arrow table as the columns of a run (``kind="run"``), qrels or a training
    table's pairs (``"pairs"``); a table with a column of item lists, one row per user, as
    :mod:`conformance.io.listed` reads it."""
    roles = {"run": RUN_ROLES, "pairs": PAIRS_ROLES}.get(kind, QRELS_ROLES)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(df, pd.DataFrame):
        if kind != "pairs" and len(df):
            listed = _pandas_listed(df, kind, source, given)
            if listed is not None:
                return listed
        found = find_columns([str(c) for c in df.columns], roles, given, source)
        by_name = {str(c): c for c in df.columns}
        columns = {name: _pandas_column(df[by_name[name]], name, ROLE_NAMES[r], source)
                   for r, name in found.items() if name is not None}
        n = len(df)
    else:
        table = _arrow_table(df, source)
        if kind != "pairs" and any(_list_type(f.type) for f in table.schema):
            from conformance.io.listed import list_column, other_columns

            column = list_column({f.name: f.type for f in table.schema}, kind, given, source)
            if column is not None:
                return parse_listed(table, column, other_columns(table.column_names, column, given, source),
                                    kind, source)
        found = find_columns(table.column_names, roles, given, source)
        columns = {name: table.column(name) for name in found.values() if name is not None}
        n = table.num_rows
    return parse_columns(columns, found, kind, source, np.arange(1, n + 1, dtype=np.int64), "row")


def _list_type(t) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def parse_listed(table: pa.Table, column: str, qid_column: str, kind: str, source: str) -> Parsed:
    """A table of item lists, one row per user (:mod:`conformance.io.listed`), as columns."""
    from conformance.io.listed import explode, finish

    columns, found, line, counts = explode(table, column, qid_column, kind, source)
    return finish(parse_columns(columns, found, kind, source, line, "row", counts), column)


def _pandas_listed(df: Any, kind: str, source: str, given: Mapping[str, str] | None) -> Parsed | None:
    """A pandas frame with a column of lists (or arrays) of items, read by
    :mod:`conformance.io.listed`; None when no column holds lists."""
    if not any(df[c].dtype == object for c in df.columns):
        return None
    from conformance.io.listed import list_column, looks_listed, other_columns, pandas_lists

    by_name = {str(c): c for c in df.columns}
    types = {name: (pa.list_(pa.null()) if looks_listed(df[c]) else None) for name, c in by_name.items()}
    column = list_column(types, kind, given, source)
    if column is None:
        return None
    qid = other_columns(list(by_name), column, given, source)
    table = pa.table({qid: _pandas_column(df[by_name[qid]], qid, ROLE_NAMES["qid"], source),
                      column: pandas_lists(df[by_name[column]], column, source)})
    return parse_listed(table, column, qid, kind, source)


def _arrow_table(obj: Any, source: str) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    to_arrow = getattr(obj, "to_arrow", None)
    if callable(to_arrow):
        table = to_arrow()
        if isinstance(table, pa.Table):
            return table
    raise InputError(source, f"got {type(obj).__name__}: expected a pandas DataFrame or an Arrow table")


# --------------------------------------------------------------------------------------------
# List-wise arrays


def _is_flat(values: Any) -> bool:
    if isinstance(values, np.ndarray):
        return values.ndim == 1
    return not any(isinstance(v, (list, tuple, np.ndarray)) for v in itertools.islice(values, 1))


def _per_query(values: Any, doc_ids: Any, qids: Any, source: str) -> tuple[list, list | None, list]:
    """Per-query parts from a mapping or a sequence of sequences; qids from keys, ``qids`` or
    positions."""
    if isinstance(values, Mapping):
        keys = list(values)
        parts = [values[k] for k in keys]
        if isinstance(doc_ids, Mapping):
            missing = [k for k in keys if k not in doc_ids]
            if missing or len(doc_ids) != len(keys):
                raise InputError(source, "doc_ids and the values name different queries: expected the same keys")
            doc_parts = [doc_ids[k] for k in keys]
        else:
            doc_parts = list(doc_ids) if doc_ids is not None else None
        if qids is not None:
            raise InputError(source, "qids given with a mapping, whose keys are the query ids: give one of them")
        return parts, doc_parts, keys
    parts = list(values)
    if isinstance(doc_ids, Mapping):
        raise InputError(source, "doc_ids is a mapping but the values are a sequence: give both as mappings "
                                 "{qid: [...]}, or both as sequences")
    doc_parts = list(doc_ids) if doc_ids is not None else None
    keys = list(qids) if qids is not None else [str(i) for i in range(len(parts))]
    return parts, doc_parts, keys


def parse_lists(values: Any, doc_ids: Any, *, group: Any, qids: Any, kind: str, source: str) -> Parsed:
    """List-wise arrays (see the module docstring) as columns; ``kind``: "run" or "qrels"."""
    what = "score" if kind == "run" else "label"
    if values is None and doc_ids is None:
        raise InputError(source, f"nothing to read: give the {what}s, the doc ids, or both")
    if group is not None:
        sizes = np.asarray(group)
        if sizes.ndim != 1 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any():
            raise InputError(source, "group must be a list of query sizes (non-negative integers), as "
                                     "LightGBM's group")
        flat_values = None if values is None else values
        flat_docs = None if doc_ids is None else doc_ids
        n = int(sizes.sum())
        keys = list(qids) if qids is not None else [str(i) for i in range(sizes.size)]
        if len(keys) != sizes.size:
            raise InputError(source, f"{len(keys)} qids for {sizes.size} groups: expected one query id per group")
        for name, arr in (("values", flat_values), ("doc_ids", flat_docs)):
            if arr is not None and len(arr) != n:
                raise InputError(source, f"the group sizes add up to {n} but {name} holds {len(arr)}: expected "
                                         "one entry per document")
    else:
        if values is not None and _is_flat(values) and not isinstance(values, Mapping):
            raise InputError(source, f"flat {what}s without group sizes: give group=[size of query 0, ...], "
                                     f"or one list of {what}s per query")
        parts, doc_parts, keys = _per_query(values if values is not None else doc_ids,
                                            doc_ids if values is not None else None, qids, source)
        if values is None:
            doc_parts, parts = parts, None
        sizes = np.array([len(p) for p in (parts if parts is not None else doc_parts)], dtype=np.int64)
        if doc_parts is not None and parts is not None:
            if len(doc_parts) != len(parts):
                raise InputError(source, f"{len(doc_parts)} lists of doc ids for {len(parts)} lists of {what}s: "
                                         "expected one of each per query")
            doc_sizes = np.array([len(p) for p in doc_parts], dtype=np.int64)
            bad = np.flatnonzero(doc_sizes != sizes)
            if bad.size:
                i = int(bad[0])
                raise InputError(source, f"query {keys[i]!r}: {doc_sizes[i]} doc ids but {sizes[i]} {what}s: "
                                         "expected one per document")
        if len(keys) != sizes.size:
            raise InputError(source, f"{len(keys)} qids for {sizes.size} queries: expected one query id per list")
        flat_values = None if parts is None else _concat(parts)
        flat_docs = None if doc_parts is None else _concat(doc_parts)
    return _from_flat(flat_values, flat_docs, sizes, keys, kind, what, source)


def _concat(parts: list) -> Any:
    if parts and all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate([p.ravel() for p in parts]) if parts else np.zeros(0)
    return list(itertools.chain.from_iterable(parts))


def _from_flat(values, doc_ids, sizes: np.ndarray, keys: list, kind: str, what: str, source: str) -> Parsed:
    n = int(sizes.sum())
    starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    query_of = np.repeat(np.arange(sizes.size), sizes)
    position = np.arange(n) - np.repeat(starts, sizes)
    qid_text = identifiers([k for k in keys], lambda i: "a query id",
                           lambda i, p: InputError(source, f"query {i}: {p}"))

    def fail(i: int, problem: str) -> InputError:
        q = int(query_of[i])
        return InputError(source, f"query {qid_text[q]!r}, position {int(position[i])}: {problem}", i + 1)

    if n == 0:
        raise InputError(source, "no data rows")
    if doc_ids is None:
        width = len(str(int(sizes.max()) - 1))
        docs = [str(p).zfill(width) for p in position.tolist()]
    else:
        docs = identifiers(list(doc_ids.tolist() if isinstance(doc_ids, np.ndarray) else doc_ids),
                           lambda i: "the doc id", fail)
    if values is None:
        value = (np.repeat(sizes, sizes) - position).astype(np.float64) if kind == "run" else np.ones(n)
    elif isinstance(values, np.ndarray) and values.dtype != object:
        if values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.number):
            raise InputError(source, f"the {what}s are {values.dtype}: expected numbers")
        value = values.astype(np.float64)
        finite = np.isfinite(value)
        if not finite.all():
            i = int(np.argmin(finite))
            raise fail(i, f"the {what} {values[i]!r} is not a finite number: expected a finite number")
    else:
        value = numbers(list(values.tolist() if isinstance(values, np.ndarray) else values),
                        lambda i: f"the {what}", fail)
    qid = ac.take(arrow_strings(qid_text), numpy_arrow(query_of)) if n else arrow_strings([])
    rank = (position + 1).astype(np.float64) if kind == "run" else None
    return Parsed(source, qid, arrow_strings(docs), value, np.arange(1, n + 1, dtype=np.int64),
                  ReadCounts(read=n, used=n), "row", rank=rank)
