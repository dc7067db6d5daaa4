"""What a reader hands the data types: the columns of one input, and what happened to its rows.

Every reader (TREC, JSON, JSONL, CSV / TSV, Parquet, Arrow IPC, DataFrames, dicts, lists) ends in
a :class:`Parsed`: per row a query id and a docid (Arrow string arrays), one number (the score of
a run, the label of qrels: finite float64, checked by the reader), the rank column of a run (or
NaN), the row's line in its source, and the :class:`ReadCounts`. The data types
(``conformance.io.data``) then code the ids and settle repeated (query, docid) pairs: that part
is the same for every shape of input, so it is written once, there.

``unit`` names what ``line`` counts, as errors say it: ``"line"`` (a physical line of a text
file), ``"record"`` (the position of a (qid, docid) pair in a JSON object or a mapping) or
``"row"`` (a row of a table).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Reasons recorded in ReadCounts.
DUPLICATE_DOCID = "duplicate docid"
DUPLICATE_JUDGMENT = "duplicate judgment, same label"
EMPTY_QUERY = "query with no documents"
EMPTY_RECORD = "record with no judged documents"


@dataclass
class ReadCounts:
    """What happened to the rows of one input: nothing is dropped without being counted here."""

    read: int = 0  # data rows seen (comment and blank lines excluded)
    used: int = 0  # rows that reach evaluation
    ignored: int = 0  # rows read but not used (each reason counted in ``reasons``)
    comments: int = 0  # comment lines (#...)
    blank: int = 0  # blank lines
    reasons: dict[str, int] = field(default_factory=dict)
    extra_fields: int = 0  # used rows with fields past the layout's (those fields are ignored,
    # as trec_eval does; the CLI warns about them)
    score_from_rank: str | None = None  # a table with ranks and no scores: the rank column read
    # as the order (score = -rank); the CLI says so
    ranked_lists: str | None = None  # a column of item lists (one row per user): its order is
    # the ranking (conformance.io.listed); the CLI says so
    seen: dict | None = None  # what exclude_seen removed (conformance.io.seen), in to_dict too

    def ignore(self, reason: str, n: int) -> None:
        if n:
            self.ignored += n
            self.used -= n
            self.reasons[reason] = self.reasons.get(reason, 0) + n

    def to_dict(self) -> dict:
        return {
            "read": self.read,
            "used": self.used,
            "ignored": self.ignored,
            "comments": self.comments,
            "blank": self.blank,
            "ignored_reasons": dict(sorted(self.reasons.items())),
            **({"seen": dict(self.seen)} if self.seen is not None else {}),
        }


@dataclass
class Parsed:
    """One input's columns, validated row by row but not yet coded (see the module docstring).

    ``qid`` / ``docid``: Arrow string arrays (chunked or not); ``value``: float64 numpy, finite;
    ``rank``: float64 numpy, or Arrow's parsed float64 column (converted when first used), or
    None (no rank column: NaN); ``line``: int64 numpy or a ``LazyRange``.
    """

    source: str
    qid: Any
    docid: Any
    value: Any
    line: Any
    counts: ReadCounts
    unit: str
    rank: Any = None
