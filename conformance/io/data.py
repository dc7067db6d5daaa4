"""Columnar, validated qrels and runs: what every reader produces and everything else consumes.

Query and document ids are stored dictionary-encoded: per row an integer code into a vocabulary
of unique id strings (``qids``, ``docids``). Qrels and run have their own vocabularies; the
reference joins them. ``line`` keeps each row's 1-based line in its source file (or its record
number for dicts, its row for tables), so later errors can still name it.

A value of these types built by a reader or a public constructor has passed validation at the
input boundary: scores are finite float64, labels are finite float64, and a run holds each
(query, document) pair at most once unless it was built with duplicates allowed on purpose
(``duplicates``: "error" refuses a repeat naming both lines, "first" / "last" keep one listing and
count each other one as ignored, "keep", "set" and "keep_counted" keep every listing: the
reference reads the repeats under those, :data:`EVERY_LISTING`). Qrels that judge one pair twice
keep the first line when the labels agree (the others counted as ignored, "duplicate judgment,
same label") and are refused naming both lines when they differ.

Public constructors (each checks its input as the readers do and raises
:class:`~conformance.errors.InputError` naming the row, record or line):

* ``Qrels.from_dict({qid: {docid: label}})``, ``Run.from_dict({qid: {docid: score}})``;
* ``Qrels.from_frame(df, qid=..., docid=..., label=...)``, ``Run.from_frame(df, qid=...,
  docid=..., score=..., rank=...)``: a pandas DataFrame, an Arrow table or a polars frame;
  columns found by name or alias when not given (:mod:`conformance.io.frames`);
* ``Qrels.from_file(path)``, ``Run.from_file(path)``: every format the readers take (TREC,
  JSON, JSONL, CSV, TSV, Parquet, Arrow IPC; :mod:`conformance.io.formats`);
* ``Qrels.from_lists(labels, doc_ids, group=..., qids=...)``, ``Run.from_lists(scores, ...)``:
  list-wise arrays, per query or flat with group sizes as LightGBM and XGBoost take them.

``from_records`` builds from (qid, docid, value) tuples without validation (for code that
produced the values itself, such as the edge-case corpus loader).

>>> qrels = Qrels.from_dict({"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}})
>>> run = Run.from_dict({"q1": {"d1": 0.9, "d2": 0.4}, "q2": {"d3": 0.2, "d4": 0.1}})
>>> len(qrels), len(run), run.present_qids().tolist()
(3, 4, ['q1', 'q2'])
>>> import pandas as pd
>>> frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc": ["a", "b"], "relevance": [1, 0],
...                       "prediction": [0.3, 0.7]})
>>> Qrels.from_frame(frame).to_dict()
{'q1': {'a': 1.0, 'b': 0.0}}
>>> Run.from_frame(frame).to_dict()
{'q1': {'a': 0.3, 'b': 0.7}}
>>> Run.from_lists([0.3, 0.7, 0.5], group=[2, 1]).to_dict()  # LightGBM's group sizes
{'0': {'0': 0.3, '1': 0.7}, '1': {'0': 0.5}}
>>> Qrels.from_lists([[3, 0], [1]], doc_ids=[["a", "b"], ["c"]], qids=["q1", "q2"]).to_dict()
{'q1': {'a': 3.0, 'b': 0.0}, 'q2': {'c': 1.0}}
>>> Run.from_dict({"q1": {"d1": float("nan")}})
Traceback (most recent call last):
...
conformance.errors.InputError: <dict>:1: record 1 (query 'q1'): the score of docid 'd1' nan is not a finite number: expected a finite number
"""

from __future__ import annotations

import contextlib

import os
from typing import Any, Iterable, Mapping

import numpy as np

from conformance.conventions import AXES
from conformance.errors import InputError
from conformance.io.columnar import DocList, DocWords, arrow_numpy, line_numbers
from conformance.io.parsed import DUPLICATE_DOCID, DUPLICATE_JUDGMENT, Parsed, ReadCounts

# The readers (and pyarrow, which they import) are imported by the constructors that need them,
# not here: the library adapters import these types without ever reading a file, and their
# worker processes start faster without pyarrow.


# the duplicates values under which the reader keeps every listing: each is a convention of
# the evaluation about repeated rows (set: a document counts at its first listing; keep_counted:
# later relevant listings count in R), which dropping them at read would make "first" or "last"
EVERY_LISTING = frozenset({"keep", "set", "keep_counted"})


def check_duplicates(duplicates: str) -> str:
    """``duplicates`` as the ``duplicates`` axis reads it (one of its values)."""
    return AXES["duplicates"].parse(duplicates)


def _encode(ids: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-row int64 codes and the object array of distinct ids, sorted (``np.unique``)."""
    values = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=object)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    vocab, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64), vocab.astype(object)


class _Table:
    """Shared columns of Qrels and Run (see the module docstring).

    ``dcode``/``docids`` may be computed on first use: the TREC readers give the docids' word
    form (``doc_words``; or per-row strings, ``doc_strings``, an Arrow array) instead,
    since the reference never needs a docid vocabulary, and building one for millions of ids
    costs more than the whole evaluation. A dict keyed by strings gives its docids as they are
    (``doc_list``), their word form made only if asked for: a run joined to its qrels by
    dictionary lookups reads them only to order tied rows.
    """

    def __init__(self, qcode, qids, dcode, docids, line, source: str, counts: ReadCounts,
                 *, doc_strings=None, doc_words: DocWords | None = None,
                 doc_list: DocList | None = None) -> None:
        self.qcode, self.qids = qcode, qids
        self._dcode, self._docids = dcode, docids
        self.line, self.source, self.counts = line, source, counts
        self.doc_strings, self._doc_words, self.doc_list = doc_strings, doc_words, doc_list
        self.qid_strings = None  # the readers' Arrow copy of ``qids`` (same order), if any
        self.docid_strings = None  # and of ``docids``
        # set by the readers: True when (query, docid) pairs are known to be distinct
        self.distinct_pairs: bool | None = None

    @property
    def doc_words(self) -> DocWords | None:
        """The docids' word form: the readers', or made from ``doc_list`` on first use (None
        for ids over 128 bytes)."""
        if self._doc_words is None and self.doc_list is not None:
            return self.doc_list.words()
        return self._doc_words

    def _vocab(self) -> None:
        if self._dcode is None:
            from conformance.io.encode import factorize_arrow, to_object  # the readers' exact coding

            if len(self.qcode):
                if self.doc_strings is not None:
                    strings = self.doc_strings
                elif self.doc_list is not None:
                    strings = self.doc_list.strings()
                else:
                    strings = self.doc_words.strings()
                self._dcode, self.docid_strings = factorize_arrow(strings)
                self._docids = to_object(self.docid_strings)
            else:
                self._dcode, self._docids = np.zeros(0, np.int64), np.zeros(0, object)

    @property
    def dcode(self) -> np.ndarray:
        """int64 per row -> index into docids."""
        self._vocab()
        return self._dcode

    @dcode.setter
    def dcode(self, value) -> None:
        self._dcode = value

    @property
    def docids(self) -> np.ndarray:
        """Object array of the unique docid strings, in order of first appearance."""
        self._vocab()
        return self._docids

    @docids.setter
    def docids(self, value) -> None:
        self._docids = value

    def __len__(self) -> int:
        return int(self.qcode.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r}, {len(self)} rows, {len(self.qids)} queries)"

    def query_ids(self) -> np.ndarray:
        """Per-row query id strings (materialised: use on small inputs)."""
        return self.qids[self.qcode]

    def doc_ids(self) -> np.ndarray:
        return self.docids[self.dcode]

    def present_qids(self) -> np.ndarray:
        """The query ids that have at least one row, sorted."""
        if not len(self):
            return np.zeros(0, object)
        present = np.bincount(self.qcode, minlength=len(self.qids)) > 0
        return np.sort(self.qids[present])


class Qrels(_Table):
    """Judgments: ``label`` is float64 per row."""

    def __init__(self, qcode, qids, dcode, docids, line, source: str, counts: ReadCounts,
                 label=None, **docs) -> None:
        super().__init__(qcode, qids, dcode, docids, line, source, counts, **docs)
        self.label = np.zeros(0) if label is None else label

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, float]], source: str = "<qrels>") -> "Qrels":
        """From (qid, docid, label) tuples, not validated (the caller made the values)."""
        rows = list(records)
        qcode, qids = _encode([str(r[0]) for r in rows])
        dcode, docids = _encode([str(r[1]) for r in rows])
        n = len(rows)
        return cls(
            qcode, qids, dcode, docids, np.arange(1, n + 1), source,
            ReadCounts(read=n, used=n), np.array([float(r[2]) for r in rows], dtype=np.float64),
        )

    @classmethod
    def from_dict(cls, qrels: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>") -> "Qrels":
        """Validated qrels from ``{qid: {docid: label}}`` (ids strings or integers, labels
        numbers); the "line" of a problem is the record number (the pair's position).

        >>> Qrels.from_dict({"q1": {"d1": 1, "d2": 0}}).to_dict()
        {'q1': {'d1': 1.0, 'd2': 0.0}}
        """
        from conformance.io.jsonio import parse_mapping
        from conformance.io.records import plain_columns

        plain = plain_columns(qrels, source)
        if plain is not None:  # ids all strings: no coding, no repeat to settle
            return _from_plain(cls, plain, source, label=plain.values)
        return cls.from_parsed(parse_mapping(qrels, source, "label"))

    @classmethod
    def from_frame(cls, df: Any, *, qid: str | None = None, docid: str | None = None,
                   label: str | None = None, source: str = "<DataFrame>") -> "Qrels":
        """Validated qrels from a table (pandas, Arrow, polars) with query id, docid and label
        columns, each given by name or found by its aliases (``query_id``, ``doc_id``, ``doc``,
        ``item``, ``relevance``, ``rel``, ``rating``...; see :mod:`conformance.io.frames`).

        >>> import pandas as pd
        >>> df = pd.DataFrame({"user": [7, 7], "item": ["i1", "i2"], "rating": [5, 3]})
        >>> Qrels.from_frame(df).to_dict()
        {'7': {'i1': 5.0, 'i2': 3.0}}
        >>> Qrels.from_frame(df, label="nope")
        Traceback (most recent call last):
        ...
        conformance.errors.InputError: <DataFrame>: column 'nope' (given for the relevance label) is not a column: the columns are 'user', 'item', 'rating'
        """
        from conformance.io.frames import parse_frame

        return cls.from_parsed(parse_frame(df, "qrels", source, {"qid": qid, "docid": docid, "label": label}))

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, format: str | None = None,
                  columns: Mapping[str, str] | None = None, limits=None) -> "Qrels":
        """Validated qrels from a file in any format the readers take (``format`` names one:
        trec, json, jsonl, csv, tsv, parquet, arrow; else found from the name and content).
        ``columns``: role -> column name for tables; ``limits``: a
        :class:`~conformance.io.limits.Limits` (default: from the environment)."""
        from conformance.io.formats import parse_file

        return cls._from(lambda: parse_file(path, "qrels", format, columns, limits), path, format)

    @classmethod
    def from_lists(cls, labels: Any = None, doc_ids: Any = None, *, group: Any = None, qids: Any = None,
                   source: str = "<lists>") -> "Qrels":
        """Validated qrels from list-wise arrays: per query a list of labels (and of doc ids),
        or flat arrays with ``group`` sizes; doc ids default to positions, query ids to the
        query's index (see :mod:`conformance.io.frames`). With doc ids and no labels, every
        listed document is relevant (label 1).

        >>> Qrels.from_lists([2, 0, 1], group=[2, 1]).to_dict()
        {'0': {'0': 2.0, '1': 0.0}, '1': {'0': 1.0}}
        >>> Qrels.from_lists(doc_ids={"q1": ["d1", "d3"]}).to_dict()
        {'q1': {'d1': 1.0, 'd3': 1.0}}
        """
        from conformance.io.frames import parse_lists

        return cls.from_parsed(parse_lists(labels, doc_ids, group=group, qids=qids, kind="qrels", source=source))

    @classmethod
    def _from(cls, parse, path, format: str | None = None) -> "Qrels":
        try:
            with _shape_hint(path, "qrels", format):
                return cls.from_parsed(parse())
        except MemoryError as e:
            raise _no_memory(path, e) from None

    @classmethod
    def from_parsed(cls, p: Parsed) -> "Qrels":
        """Qrels from a reader's columns: the ids coded, repeated judgments settled."""
        from conformance.io.encode import encode_pairs, encode_words, to_object

        fast = encode_words(p.qid, p.docid)
        if fast is not None:
            qcode, qvocab, _strings, words = fast
            qrels = cls(qcode, to_object(qvocab), None, None, line_numbers(p.line), p.source, p.counts,
                        np.ascontiguousarray(p.value, dtype=np.float64), doc_words=words)
            qrels.distinct_pairs, qrels.qid_strings = True, qvocab
            return qrels
        qcode, qvocab, dcode, docids, dvocab, key, repeats = encode_pairs(p.qid, p.docid)
        qids = to_object(qvocab)
        label = np.ascontiguousarray(p.value, dtype=np.float64)
        line = np.asarray(p.line, dtype=np.int64)
        counts = p.counts
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
                    p.source,
                    f"conflicting judgments of docid {d!r} for query {q!r}: label {_num(label[r1])} on "
                    f"{p.unit} {line[r1]} and label {_num(label[r2])} on {p.unit} {line[r2]}: "
                    "expected one label per (query, docid)",
                    int(line[r2]),
                )
            keep = np.ones(key.size, bool)
            keep[order[repeat]] = False
            counts.ignore(DUPLICATE_JUDGMENT, int((~keep).sum()))
            qcode, dcode, label, line = qcode[keep], dcode[keep], label[keep], line[keep]
        return _with_strings(cls(qcode, qids, dcode, docids, line, p.source, counts, label), qvocab, dvocab)

    def to_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, d, l in zip(self.query_ids(), self.doc_ids(), self.label.tolist()):
            out.setdefault(q, {})[d] = l
        return out


class Run(_Table):
    """Ranked lists: ``score`` float64 per row, ``rank`` float64 per row (NaN if absent)."""

    def __init__(self, qcode, qids, dcode, docids, line, source: str, counts: ReadCounts,
                 score=None, rank=None, **docs) -> None:
        super().__init__(qcode, qids, dcode, docids, line, source, counts, **docs)
        self.score = np.zeros(0) if score is None else score
        self._rank = np.zeros(0) if rank is None else rank

    @property
    def rank(self) -> np.ndarray:
        """The rank column as float64. A reader may hand over Arrow's parsed column instead of
        numpy: it is converted here, on first use, since only ``rank_source=rank_column`` and
        the input warnings read it (on a 2M-row run the copy is 16 MB of fresh memory)."""
        if not isinstance(self._rank, np.ndarray):
            self._rank = np.asarray(arrow_numpy(self._rank), dtype=np.float64)
        return self._rank

    @classmethod
    def from_records(cls, records: Iterable[tuple], source: str = "<run>") -> "Run":
        """From (qid, docid, score) or (qid, docid, score, rank) tuples, in listing order, not
        validated (the caller made the values)."""
        rows = list(records)
        qcode, qids = _encode([str(r[0]) for r in rows])
        dcode, docids = _encode([str(r[1]) for r in rows])
        n = len(rows)
        score = np.array([float(r[2]) for r in rows], dtype=np.float64)
        rank = np.array([float(r[3]) if len(r) > 3 else np.nan for r in rows], dtype=np.float64)
        return cls(
            qcode, qids, dcode, docids, np.arange(1, n + 1), source,
            ReadCounts(read=n, used=n), score, rank,
        )

    @classmethod
    def from_dict(cls, run: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>",
                  duplicates: str = "error") -> "Run":
        """A validated run from ``{qid: {docid: score}}``, in listing order; the "line" of a
        problem is the record number.

        >>> Run.from_dict({"q1": {"d1": 2.5, "d2": 1}}).score.tolist()
        [2.5, 1.0]
        """
        from conformance.io.jsonio import parse_mapping
        from conformance.io.records import plain_columns

        duplicates = check_duplicates(duplicates)
        plain = plain_columns(run, source)
        if plain is not None:  # ids all strings: no coding, and no pair can repeat
            return _from_plain(cls, plain, source, score=plain.values,
                               rank=np.full(len(plain.docids), np.nan))
        return cls.from_parsed(parse_mapping(run, source, "score"), duplicates)

    @classmethod
    def from_frame(cls, df: Any, *, qid: str | None = None, docid: str | None = None,
                   score: str | None = None, rank: str | None = None, source: str = "<DataFrame>",
                   duplicates: str = "error") -> "Run":
        """A validated run from a table (pandas, Arrow, polars) with query id, docid and score
        columns (and, optionally, rank), each given by name or found by its aliases
        (``query_id``, ``user``, ``doc_id``, ``item``, ``prediction``...).

        >>> import pandas as pd
        >>> df = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["a", "b"], "sim": [0.2, 0.9]})
        >>> Run.from_frame(df, score="sim").to_dict()
        {'q1': {'a': 0.2, 'b': 0.9}}
        """
        from conformance.io.frames import parse_frame

        duplicates = check_duplicates(duplicates)
        given = {"qid": qid, "docid": docid, "score": score, "rank": rank}
        return cls.from_parsed(parse_frame(df, "run", source, given), duplicates)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, format: str | None = None,
                  columns: Mapping[str, str] | None = None, limits=None, duplicates: str = "error",
                  check_pairs: bool = True) -> "Run":
        """A validated run from a file in any format the readers take (see
        :meth:`Qrels.from_file`). ``check_pairs=False`` leaves the check for a docid listed
        twice in a query to :func:`settle_pairs` where the docids have a word form
        (``distinct_pairs`` is then None): the reference's join sees every repeat anyway."""
        from conformance.io.formats import parse_file

        duplicates = check_duplicates(duplicates)
        try:
            with _shape_hint(path, "run", format):
                return cls.from_parsed(parse_file(path, "run", format, columns, limits), duplicates,
                                       check_pairs)
        except MemoryError as e:
            raise _no_memory(path, e) from None

    @classmethod
    def from_lists(cls, scores: Any = None, doc_ids: Any = None, *, group: Any = None, qids: Any = None,
                   source: str = "<lists>", duplicates: str = "error") -> "Run":
        """A validated run from list-wise arrays: per query a list of scores (and of doc ids), or
        flat arrays with ``group`` sizes (see :meth:`Qrels.from_lists`). The rank is the
        position in the list; with doc ids and no scores the list order is the ranking.

        >>> import numpy as np
        >>> run = Run.from_lists(np.array([0.1, 0.9, 0.5]), group=[3])
        >>> run.to_dict(), run.rank.tolist()
        ({'0': {'0': 0.1, '1': 0.9, '2': 0.5}}, [1.0, 2.0, 3.0])
        >>> Run.from_lists(doc_ids=[["d3", "d1"]], qids=["q1"]).to_dict()
        {'q1': {'d3': 2.0, 'd1': 1.0}}
        """
        from conformance.io.frames import parse_lists

        duplicates = check_duplicates(duplicates)
        return cls.from_parsed(parse_lists(scores, doc_ids, group=group, qids=qids, kind="run", source=source),
                               duplicates)

    @classmethod
    def from_parsed(cls, p: Parsed, duplicates: str = "error", check_pairs: bool = True) -> "Run":
        """A run from a reader's columns: the ids coded, repeated listings settled by
        ``duplicates`` (see the module docstring)."""
        from conformance.io.encode import encode_pairs, encode_words, to_object

        rank = np.full(len(p.value), np.nan) if p.rank is None else p.rank
        fast = encode_words(p.qid, p.docid, check_pairs)
        if fast is not None:
            qcode, qvocab, _strings, words = fast
            run = cls(qcode, to_object(qvocab), None, None, line_numbers(p.line), p.source, p.counts,
                      np.ascontiguousarray(p.value, dtype=np.float64),
                      rank if not isinstance(rank, np.ndarray) else np.ascontiguousarray(rank, dtype=np.float64),
                      doc_words=words)
            run.distinct_pairs, run.qid_strings = (True if check_pairs else None), qvocab
            return run
        qcode, qvocab, dcode, docids, dvocab, key, repeats = encode_pairs(p.qid, p.docid)
        qids = to_object(qvocab)
        score = np.ascontiguousarray(p.value, dtype=np.float64)
        rank = np.ascontiguousarray(rank if isinstance(rank, np.ndarray) else arrow_numpy(rank), dtype=np.float64)
        line = np.asarray(p.line, dtype=np.int64)
        counts = p.counts
        if repeats and duplicates not in EVERY_LISTING:  # every listing stays, each its own row
            order = np.argsort(key, kind="stable")
            ks = key[order]
            repeat = np.zeros(key.size, bool)
            repeat[1:] = ks[1:] == ks[:-1]  # a later listing of the pair before it, in row order
            if duplicates == "error":
                later = order[repeat]
                r2 = int(later.min())
                r1 = int(order[np.searchsorted(ks, key[r2])])
                q, d = qids[qcode[r2]], docids[dcode[r2]]
                error = InputError(
                    p.source,
                    f"docid {d!r} is listed twice for query {q!r}, on {p.unit}s {line[r1]} and {line[r2]}: "
                    "expected each docid at most once per query (duplicates='first' or 'last' keeps one)",
                    int(line[r2]),
                )
                if d == "Q0":  # the second field's usual value as a docid: columns swapped?
                    from conformance.io.shapes import with_hint

                    error = with_hint(error, p.source, "run", "trec")
                raise error
            drop = np.zeros(key.size, bool)
            if duplicates == "first":
                drop[order[repeat]] = True
            else:  # last: drop every listing that has a later one
                drop[order[np.append(repeat[1:], False)]] = True
            keep = ~drop
            counts.ignore(DUPLICATE_DOCID, int(drop.sum()))
            qcode, dcode, score, rank, line = qcode[keep], dcode[keep], score[keep], rank[keep], line[keep]
        return _with_strings(cls(qcode, qids, dcode, docids, line, p.source, counts, score, rank), qvocab, dvocab)

    def to_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, d, s in zip(self.query_ids(), self.doc_ids(), self.score.tolist()):
            out.setdefault(q, {})[d] = s
        return out


@contextlib.contextmanager
def _shape_hint(path, kind: str, format: str | None):
    """A reader's error on a file, with what the file looks like when that is not a ``kind``'s
    shape (``conformance.io.shapes``): read only once a reader has refused it."""
    try:
        yield
    except InputError as exc:
        from conformance.io.formats import _extension
        from conformance.io.shapes import with_hint
        from conformance.io.text import FileProblem

        if isinstance(exc, FileProblem):
            raise
        name = os.fsdecode(path)
        raise with_hint(exc, name, kind, format or _extension(name)) from None


def settle_pairs(run: Run, duplicates: str = "error") -> Run:
    """The duplicate check that ``Run.from_file(..., check_pairs=False)`` left out: the run
    itself when no (query, docid) pair repeats, else what the reader would have returned under
    ``duplicates`` (the repeats dropped and counted) or raised (the two lines of the first
    repeat). Runs already checked are returned as they are."""
    if run.distinct_pairs is not None or run.doc_words is None:
        return run
    from conformance.io import kernels as ac
    from conformance.io.columnar import numpy_arrow
    from conformance.io.encode import pairs_may_repeat

    if not pairs_may_repeat(run.qcode, len(run.qids), run.doc_words):
        run.distinct_pairs = True
        return run
    qid = ac.take(run.qid_strings, numpy_arrow(run.qcode))
    parsed = Parsed(run.source, qid, run.doc_words.strings(), run.score, run.line, run.counts, "line",
                    rank=run._rank)
    return Run.from_parsed(parsed, check_duplicates(duplicates))


def _from_plain(cls, plain, source: str, **values):
    """A table of ``records.Plain`` columns: the query ids coded as the readers code them (in
    order of first appearance, here the listing order), the docids kept as strings
    (``doc_list``), the pairs known to be distinct."""
    from conformance.io.columnar import arrow_strings

    qids = np.empty(len(plain.qids), dtype=object)
    qids[:] = plain.qids
    qcode = np.repeat(np.arange(len(plain.qids), dtype=np.int64), plain.lengths)
    table = cls(qcode, qids, None, None, plain.line, source, plain.counts,
                doc_list=DocList(plain.docids), **values)
    table.distinct_pairs, table.qid_strings = True, arrow_strings(plain.qids)
    return table


def _with_strings(table, qvocab, dvocab):
    """``table`` holding the Arrow copies of its vocabularies (the reference joins on them)."""
    table.qid_strings, table.docid_strings = qvocab, dvocab
    return table


def _num(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _no_memory(path, exc: MemoryError) -> InputError:
    from conformance.io.limits import not_enough_memory

    return InputError(os.fsdecode(path), not_enough_memory(exc))
