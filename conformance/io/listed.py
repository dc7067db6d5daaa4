"""A recommender's top k as one row per user: a column of arrays whose order is the ranking.

The shapes recommender code writes: Spark's ``RankingEvaluator`` takes ``prediction:
array<double>`` (the ranked item ids) and ``label: array<double>`` (the relevant ones); ALS's
``recommendForAllUsers`` gives ``recommendations: array<struct<itemId, rating>>``; pandas frames
hold a column of lists or numpy arrays; Parquet and Arrow hold list columns.

Which column: a list column named as the docid (``item_id``, ``items``...), as a run's score
(``prediction``) or a qrels' label (``label``), or one of :data:`LIST_NAMES`
(``recommendations``, ``top_k``...); or the one given as the docid (``columns={"docid": ...}``,
``--columns docid=COLUMN``). Two such columns are ambiguous: refused, naming them.

What a row means:

* in a run, each element is one ranked item of that row's user (the query id column, found as
  :mod:`conformance.io.roles` says), ranked by its position: rank 1 first, the score the rank
  negated, as a rank-only table is read (``ReadCounts.ranked_lists`` names the column, and the
  command line says so);
* in qrels, each element is a relevant item, label 1;
* a list of structs: the item is the field named as a docid (``itemId``, ``item_id``...); the
  list's order is still the ranking (ALS lists by rating, descending), other fields unread.

Elements are strings or integers, or floats that are whole numbers (Spark's arrays of
doubles: 12.0 is the item "12", as an integer item id column reads); a null list, a null
element or a fractional float is refused naming the row (1-based). An empty list is a user
with nothing listed: counted as ignored ("query with no documents"), never dropped silently.
The explode is Arrow's flatten plus numpy's repeat: no Python loop over rows.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from conformance.errors import InputError
from conformance.io import kernels as ac
from conformance.io.columnar import arrow_numpy, numpy_arrow
from conformance.io.encode import as_array
from conformance.io.parsed import EMPTY_QUERY, Parsed, ReadCounts
from conformance.io.roles import ALIASES, find_columns, normal

# Names a column of ranked item lists goes by, besides the docid's, score's and label's aliases.
LIST_NAMES = ("recommendations", "recommended", "recs", "items", "item_ids", "itemids", "predictions",
              "predicted_items", "top_k", "topk", "ranking", "ranked_items", "doc_ids", "docids")
_RANK = "\x00rank"  # the synthesized rank column's name (no table can hold it)


def is_list(t: Any) -> bool:
    return t is not None and (pa.types.is_list(t) or pa.types.is_large_list(t)
                              or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t)
                              or pa.types.is_large_list_view(t))


def list_column(types: Mapping[str, Any], kind: str, given: Mapping[str, str] | None,
                source: str) -> str | None:
    """The list column (name -> Arrow type, None where not a list) holding the ranked items,
    or None when the table is flat."""
    lists = [n for n, t in types.items() if is_list(t)]
    if not lists:
        return None
    want = (given or {}).get("docid")
    if want is not None:
        hit = [n for n in lists if n == want] or [n for n in lists if normal(n) == normal(want)]
        return hit[0] if len(hit) == 1 else None
    role = "score" if kind == "run" else "label"
    names = set(LIST_NAMES) | set(sum(ALIASES["docid"], ())) | set(sum(ALIASES[role], ()))
    hits = [n for n in lists if normal(n) in names]
    if len(hits) > 1:
        raise InputError(source, f"columns {', '.join(map(repr, hits))} all hold lists of items: name the "
                                 "one to use with docid='COLUMN' (on the command line, --columns docid=COLUMN)")
    return hits[0] if hits else None


def other_columns(names: Sequence[str], column: str, given: Mapping[str, str] | None, source: str) -> str:
    """The query id column of a table whose items are in the list column ``column``."""
    ids = {k: v for k, v in (given or {}).items() if k == "qid"}
    return find_columns([n for n in names if n != column], ("qid",), ids, source)["qid"]


def _row(line: np.ndarray, i: int) -> int:
    return int(line[i])


def _items(flat: pa.Array, column: str, source: str, line: np.ndarray) -> pa.Array:
    """The elements as ids: a struct's item field, whole floats as integers."""
    if pa.types.is_struct(flat.type):
        fields = [flat.type.field(i).name for i in range(flat.type.num_fields)]
        name = find_columns(fields, ("docid",), None, f"{source}: column {column!r}'s elements")["docid"]
        flat = flat.field(name)
    flat = as_array(flat) if isinstance(flat, pa.ChunkedArray) else flat
    if pa.types.is_dictionary(flat.type):
        flat = flat.dictionary_decode()
    if pa.types.is_floating(flat.type):
        values = np.asarray(arrow_numpy(ac.fill_null(ac.cast(flat, pa.float64()), 0.0)), dtype=np.float64)
        whole = np.isfinite(values) & (values == np.trunc(values)) & (np.abs(values) <= 2.0**53)
        if not whole.all():
            i = int(np.argmin(whole))
            raise InputError(source, f"row {_row(line, i)}, column {column!r}: the item {float(values[i])!r} is not "
                                     "a whole number: expected item ids (strings, integers, or floats "
                                     "such as 12.0, read as 12)", _row(line, i))
        if flat.null_count:
            return flat  # the id check names the missing element
        flat = numpy_arrow(values.astype(np.int64))
    return flat


def explode(table: pa.Table, column: str, qid_column: str, kind: str, source: str):
    """The rows of ``table`` (one per user, its items in the list column ``column``) as the
    arguments of ``frames.parse_columns`` for a run (``kind="run"``: ranked by position) or
    qrels (label 1): (columns, found, line, counts). The caller sets
    ``counts.ranked_lists`` once parsed (see :func:`finish`)."""
    arr = as_array(table.column(column))
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        arr = ac.cast(arr, pa.large_list(arr.type.value_type))  # fixed-size lists and list views
    n = len(arr)
    if n == 0:
        raise InputError(source, "no data rows")
    if arr.null_count:
        i = int(np.argmax(arrow_numpy(ac.is_null(arr))))
        raise InputError(source, f"row {i + 1}, column {column!r}: the list of items is missing (null): "
                                 "expected a list of item ids (an empty list for none)", i + 1)
    lengths = np.asarray(arrow_numpy(ac.list_value_length(arr)), dtype=np.int64)
    parent = np.repeat(np.arange(n, dtype=np.int64), lengths)
    line = parent + 1
    if parent.size == 0:
        raise InputError(source, f"column {column!r}: every list of items is empty: expected at least one item")
    first = np.cumsum(lengths) - lengths
    position = (np.arange(parent.size, dtype=np.int64) - first[parent] + 1).astype(np.float64)
    items = _items(arr.flatten(), column, source, line)
    qid = ac.take(as_array(table.column(qid_column)), numpy_arrow(parent))
    empty = int((lengths == 0).sum())
    counts = ReadCounts(read=int(parent.size) + empty, used=int(parent.size) + empty)
    counts.ignore(EMPTY_QUERY, empty)
    if kind == "run":
        found = {"qid": qid_column, "docid": column, "score": None, "rank": _RANK}
        columns = {qid_column: qid, column: items, _RANK: numpy_arrow(position)}
    else:
        found = {"qid": qid_column, "docid": column, "label": _RANK}
        columns = {qid_column: qid, column: items, _RANK: numpy_arrow(np.ones(parent.size))}
    return columns, found, line, counts


def finish(parsed: Parsed, column: str) -> Parsed:
    """``parsed`` saying that its order is the list column's (not a rank column's)."""
    parsed.counts.score_from_rank = None
    parsed.counts.ranked_lists = column
    return parsed


def pandas_lists(series, column: str, source: str) -> pa.Array:
    """A pandas column of lists (or arrays) as an Arrow list array; a row whose elements are
    not of one type with the others' is named (found only once Arrow refused the column)."""
    try:
        return pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        pass
    kinds = {}
    for i, value in enumerate(series.tolist()):  # the error path only: find the row at fault
        if value is None:
            continue
        for v in list(value):
            k = "string" if isinstance(v, str) else "number" if isinstance(v, (int, float, np.number)) \
                else type(v).__name__
            if kinds.setdefault("first", (k, i))[0] != k:
                row = i + 1
                raise InputError(source, f"row {row}, column {column!r}: the list holds a {k} where row "
                                         f"{kinds['first'][1] + 1} holds a {kinds['first'][0]}: expected "
                                         "item ids of one type throughout", row)
    raise InputError(source, f"column {column!r}: not readable as lists of item ids: expected lists of "
                             "strings or integers")


def looks_listed(series) -> bool:
    """Whether a pandas column holds lists, tuples or arrays (its first non-null value does)."""
    if series.dtype != object:
        return False
    for v in series.head(64).tolist():
        if v is not None and not (isinstance(v, float) and v != v):
            return isinstance(v, (list, tuple, np.ndarray))
    return False
