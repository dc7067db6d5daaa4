"""Rows from Python values (decoded JSON, or the user's own dicts and lists), checked one by one.

The JSON and JSONL readers and the dict constructors gather rows here (:class:`Rows`), which
become a :class:`~conformance.io.parsed.Parsed` like every other input. What a value must be:

* **Ids** (query and document): a string, or an integer (written in decimal: ``301`` is
  ``"301"``). Not a float (``301.0`` would not match ``"301"``), not a boolean, not null. A
  string holding a lone UTF-16 surrogate (JSON ``"\\ud800"`` not followed by a low surrogate)
  is not text: refused, naming the record and the field.
* **Scores and labels**: a number, not a string, not a boolean, and finite. An integer is taken
  exactly when a double holds it exactly (every integer up to 2^53 in size, and larger ones
  such as 10^20 that are a double's value); any other integer is refused, since rounding it
  could tie, or reorder, two documents the input tells apart; an integer beyond the range of
  a double is refused as such. Decimal numbers (``0.1``) are read as the nearest double, as
  every tool reads them.
* A nested mapping ``{qid: {docid: number}}`` is read in listing order; the "line" of a problem
  is the record number, the 1-based position of the (qid, docid) pair; a query with an empty
  mapping has no rows and is counted as one row read and ignored ("query with no documents").

A dict of dicts is read in one bulk pass over all its pairs (C-level iteration, the same checks
in bulk); one keyed by strings alone comes out as :class:`Plain` columns, its docids left as
Python strings (the data types keep them so, and turn them into bytes only when asked). Anything
else, and any dict with a problem, is read pair by pair, so a problem is named as a reader going
query by query meets it first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, compress
from typing import Any, Callable, Mapping

import numpy as np

from conformance.errors import InputError
from conformance.io.columnar import arrow_strings
from conformance.io.parsed import EMPTY_QUERY, Parsed, ReadCounts
from conformance.io.text import clip

EXACT_INTEGERS = 2**53  # every integer up to this size is a double's value


class Obj(list):
    """A JSON object as its (key, value) pairs, in order, repeated keys kept."""


def kind(v: Any) -> str:
    """What a value is, for a message: ``the string '3.0'``, ``an object``, ``null``..."""
    if isinstance(v, Obj):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return f"the string {clip(v, 40)!r}"
    if isinstance(v, bool):
        return f"the boolean {'true' if v else 'false'}"
    if v is None:
        return "null"
    if isinstance(v, int):
        return f"int {_digits(v)}"
    return f"{type(v).__name__} {v!r}"


def _digits(v: int) -> str:
    text = str(v)
    return text if len(text) <= 40 else f"{text[:20]}...{text[-6:]} ({len(text.lstrip('-'))} digits)"


def identifier(v: Any, what: str, fail: Callable[[str], InputError]) -> str:
    """An id as a string, or ``fail``'s error."""
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    raise fail(f"{what} is {kind(v)}: expected a string or an integer")


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _integer_problem(v: int) -> str | None:
    """Why the integer ``v`` cannot be a score or label, or None when a double holds it."""
    if -EXACT_INTEGERS <= v <= EXACT_INTEGERS:
        return None
    try:
        x = float(v)
    except OverflowError:
        return (f"{_digits(v)} is an integer beyond the range of a double (about 1.8e308): expected "
                "a number a double can hold")
    if int(x) != v:
        return (f"{_digits(v)} is an integer a double cannot hold exactly (it would read as {x!r}, "
                "and could tie with a neighbour): expected an integer of at most 2^53 in size, or a "
                "decimal number")
    return None


def number(v: Any, what: str, fail: Callable[[str], InputError]) -> float:
    """A score or label as a finite float, or ``fail``'s error (see the module docstring)."""
    if not is_number(v):
        raise fail(f"{what} is {kind(v)}: expected a number")
    if isinstance(v, (int, np.integer)):
        problem = _integer_problem(int(v))
        if problem is not None:
            raise fail(f"{what} {problem}")
    x = float(v)
    if not math.isfinite(x):
        raise fail(f"{what} {v!r} is not a finite number: expected a finite number")
    return x


def lenient_number(v: Any) -> float:
    """A rank: the number where it is one a double holds, else NaN (ranks are never errors)."""
    if not is_number(v):
        return math.nan
    try:
        x = float(v)
    except OverflowError:
        return math.nan
    return x if math.isfinite(x) else math.nan


_NUMBER_TYPES = {int, float}


def numbers(values: list, what: Callable[[int], str], fail: Callable[[int, str], InputError]) -> np.ndarray:
    """Numbers -> finite float64, checked in bulk; ``fail(i, problem)`` names element i."""
    types = set(map(type, values))
    if not types <= _NUMBER_TYPES:  # type() is exact, so bool is not let through
        for i, v in enumerate(values):
            if not is_number(v):
                raise fail(i, f"{what(i)} is {kind(v)}: expected a number")
    try:
        out = np.array(values, dtype=np.float64)
    except OverflowError:  # an integer beyond the double range: named below
        out = None
    if out is None or (types != {float} and np.abs(out).max(initial=0) >= EXACT_INTEGERS):
        for i, v in enumerate(values):  # a rare input: the integers past 2^53 are checked alone
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                problem = _integer_problem(int(v))
                if problem is not None:
                    raise fail(i, f"{what(i)} {problem}")
    if out is None:
        out = np.array([float(v) for v in values], dtype=np.float64)
    finite = np.isfinite(out)
    if not finite.all():
        i = int(np.argmin(finite))
        raise fail(i, f"{what(i)} {values[i]!r} is not a finite number: expected a finite number")
    return out


def identifiers(values: list, what: Callable[[int], str], fail: Callable[[int, str], InputError]) -> list[str]:
    if set(map(type, values)) <= {str}:  # one C pass (a generator over 200k ids: ~40 ms)
        return values
    return [identifier(v, what(i), lambda p, _i=i: fail(_i, p)) for i, v in enumerate(values)]


class Rows:
    """Rows gathered from Python values, before encoding (kept as per-record chunks)."""

    def __init__(self, source: str) -> None:
        self.source = source
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

    def parsed(self, unit: str) -> Parsed:
        """The rows as columns; InputError when there are none, or an id is not text."""
        if not len(self.qid) and not self.counts.read:
            raise InputError(self.source, "no data rows")
        self.counts.read += self.n
        self.counts.used += self.n

        def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        line = cat(self.line, np.int64)
        qid, docid = self._strings(self.qid, "query id", line), self._strings(self.docid, "docid", line)
        return Parsed(self.source, qid, docid, cat(self.value, np.float64), line, self.counts, unit,
                      rank=cat(self.rank, np.float64))

    def _strings(self, values, field: str, line: np.ndarray):
        if not isinstance(values, list):  # already Arrow strings (``_bulk``'s query ids)
            return values
        try:
            return arrow_strings(values)
        except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): find the first
            for i, v in enumerate(values):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as e:
                    bad = "\\u" + format(ord(v[e.start]), "04x")
                    raise InputError(
                        self.source,
                        f"the {field} {clip(v, 40)!r} holds a lone surrogate "
                        f"({bad}), which is not a character: expected text (a JSON \\u escape of a "
                        "surrogate must pair a high one with a low one)", int(line[i])) from None
            raise


class _Refused(Exception):
    """The bulk path met a value it does not take: the per-query path names the problem."""


def _gather(obj: Any) -> tuple[list, list, list, list, np.ndarray, bool] | None:
    """A dict of dicts in one pass over all pairs: the keys and values of every query chained
    into lists (C iteration, no Python code per pair), validated in bulk by the same
    ``identifiers`` / ``numbers``: (query ids, each query's dict, docids, values as float64,
    whether every id was a ``str`` as given). None for anything else, or at the first problem,
    so that the per-query path reports the problem a reader going query by query meets first."""
    if type(obj) is not dict:
        return None
    docs = list(obj.values())
    if not all(type(d) is dict for d in docs):
        return None

    def refuse(i: int, problem: str):
        raise _Refused

    keys, chained = list(obj.keys()), list(chain.from_iterable(docs))
    try:
        qids = identifiers(keys, lambda i: "a query id", refuse)
        docids = identifiers(chained, lambda i: "the docid", refuse)
        values = numbers(list(chain.from_iterable(map(dict.values, docs))), lambda i: "", refuse)
    except _Refused:
        return None
    return qids, docs, docids, values, np.fromiter(map(len, docs), np.int64, len(docs)), (
        qids is keys and docids is chained)


def _record_lines(lengths: np.ndarray) -> np.ndarray:
    """Each pair's record number: a query's records follow those of the queries before it (an
    empty query is one record)."""
    empty = lengths == 0
    skipped = np.cumsum(empty) - empty  # empty queries before each query
    line = np.arange(1, int(lengths.sum()) + 1, dtype=np.int64)
    line += np.repeat(skipped, lengths)
    return line


def _bulk(obj: Mapping, name: str) -> Rows | None:
    """``from_nested`` of a dict of dicts through :func:`_gather`; None for anything else
    (then the per-query path reads it)."""
    gathered = _gather(obj)
    if gathered is None:
        return None
    qids, _docs, docids, values, lengths, _plain = gathered
    rows = Rows(name)
    for _ in range(int((lengths == 0).sum())):
        rows.empty(EMPTY_QUERY)
    n = int(lengths.sum())
    try:  # each query's id once, repeated as Arrow takes (no Python string per row)
        rows.qid = arrow_strings(qids).take(np.repeat(np.arange(len(qids)), lengths))
    except UnicodeEncodeError:  # a lone surrogate: the per-query path names it
        return None
    rows.docid = docids
    rows.value, rows.line, rows.rank = [values], [_record_lines(lengths)], [np.full(n, np.nan)]
    rows.n = n
    return rows


@dataclass
class Plain:
    """A dict of dicts whose every query id and docid is a ``str`` (valid text), read and
    validated but not coded: what ``Qrels.from_dict`` / ``Run.from_dict`` build from without
    turning each docid into Arrow bytes. Its (query, docid) pairs are distinct, since the keys
    of a dict are; its rows come query by query, in listing order."""

    qids: list[str]  # the queries that have pairs, in listing order
    lengths: np.ndarray  # pairs of each of those queries
    docids: list[str]  # per row
    values: np.ndarray  # float64 per row, finite
    line: np.ndarray  # int64 record numbers
    counts: ReadCounts


def plain_columns(obj: Any, name: str) -> Plain | None:
    """``obj`` as :class:`Plain` columns, or None when it is not a dict of dicts keyed by
    ``str`` alone, or has a problem (then :func:`from_nested` reads it, naming the problem, or
    coding the integer ids), or has no pairs at all."""
    gathered = _gather(obj)
    if gathered is None or not gathered[5]:
        return None
    qids, _docs, docids, values, lengths, _plain = gathered
    n = int(lengths.sum())
    if not n:
        return None
    for ids in (qids, docids):
        text = "".join(ids)
        if not text.isascii():
            try:  # a lone surrogate is not text: the per-query path names it
                text.encode("utf-8")
            except UnicodeEncodeError:
                return None
    counts = ReadCounts()
    empty = int((lengths == 0).sum())
    counts.read = counts.used = n + empty
    counts.ignore(EMPTY_QUERY, empty)
    line = _record_lines(lengths)
    if empty:
        kept = lengths > 0
        qids, lengths = list(compress(qids, kept.tolist())), lengths[kept]
    return Plain(qids, lengths, docids, values, line, counts)


def from_nested(obj: Any, name: str, what: str) -> Rows:
    """``{qid: {docid: number}}`` (as Obj pairs or plain mappings) -> rows; record = pair index."""
    if not isinstance(obj, Obj):
        fast = _bulk(obj, name)
        if fast is not None:
            return fast
    rows = Rows(name)
    pairs = obj if isinstance(obj, Obj) else list(obj.items())
    record = 0  # records before this query's first
    for q_raw, docs in pairs:
        q = identifier(q_raw, "a query id", lambda p: InputError(name, f"record {record + 1}: {p}", record + 1))
        if isinstance(docs, Mapping) and not isinstance(docs, Obj):
            docs = list(docs.items())
        elif not isinstance(docs, Obj):
            raise InputError(name, f"record {record + 1} (query {q!r}): the value is {kind(docs)}: "
                                   f"expected an object {{docid: {what}}}", record + 1)
        if not docs:
            record += 1
            rows.empty(EMPTY_QUERY)
            continue

        def fail(i: int, problem: str, _base=record, _q=q) -> InputError:
            return InputError(name, f"record {_base + i + 1} (query {_q!r}): {problem}", _base + i + 1)

        docids = identifiers([d for d, _ in docs], lambda i: "the docid", fail)
        values = numbers([v for _, v in docs], lambda i, _d=docids: f"the {what} of docid {_d[i]!r}", fail)
        k = len(docids)
        rows.extend(q, docids, values, np.arange(record + 1, record + k + 1), np.full(k, np.nan))
        record += k
    return rows
