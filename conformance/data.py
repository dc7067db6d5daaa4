"""Columnar, validated qrels and runs: what every reader produces and everything else consumes.

Query and document ids are stored dictionary-encoded: per row an integer code into a vocabulary
of unique id strings (``qids``, ``docids``, in no particular order). Qrels and run have their own
vocabularies; the reference joins them. ``line`` keeps each row's 1-based line in its source
file (or its record number for dicts and DataFrames), so later errors can still name it.

A value of these types has passed validation at the input boundary: scores are finite float64,
labels are finite float64, and a run holds each (query, document) pair at most once unless it was
built with duplicates allowed on purpose (``Run.duplicates_resolved`` says how they were settled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np


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
        }


def _encode(ids: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=object)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    vocab, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64), vocab.astype(object)


@dataclass
class _Table:
    qcode: np.ndarray  # int64 per row -> index into qids
    qids: np.ndarray  # object array of unique str
    dcode: np.ndarray  # int64 per row -> index into docids
    docids: np.ndarray  # object array of unique str
    line: np.ndarray  # int64 per row: 1-based source line (or record number)
    source: str
    counts: ReadCounts

    def __len__(self) -> int:
        return int(self.qcode.size)

    def query_ids(self) -> np.ndarray:
        """Per-row query id strings (materialised: use on small inputs)."""
        return self.qids[self.qcode]

    def doc_ids(self) -> np.ndarray:
        return self.docids[self.dcode]

    def present_qids(self) -> np.ndarray:
        """The query ids that have at least one row, sorted."""
        return np.sort(self.qids[np.unique(self.qcode)]) if len(self) else np.zeros(0, object)


@dataclass
class Qrels(_Table):
    label: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64 per row

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, float]], source: str = "<qrels>") -> "Qrels":
        """From (qid, docid, label) tuples. Validation is the caller's job (``io`` does it)."""
        rows = list(records)
        qcode, qids = _encode([str(r[0]) for r in rows])
        dcode, docids = _encode([str(r[1]) for r in rows])
        n = len(rows)
        return cls(
            qcode, qids, dcode, docids, np.arange(1, n + 1), source,
            ReadCounts(read=n, used=n), np.array([float(r[2]) for r in rows], dtype=np.float64),
        )

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, float]], source: str = "<qrels>") -> "Qrels":
        return cls.from_records(((q, d, l) for q, docs in qrels.items() for d, l in docs.items()), source)

    def to_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, d, l in zip(self.query_ids(), self.doc_ids(), self.label.tolist()):
            out.setdefault(q, {})[d] = l
        return out


@dataclass
class Run(_Table):
    score: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64 per row
    rank: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64 per row, NaN if absent

    @classmethod
    def from_records(
        cls, records: Iterable[tuple], source: str = "<run>"
    ) -> "Run":
        """From (qid, docid, score) or (qid, docid, score, rank) tuples, in listing order."""
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
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], source: str = "<run>") -> "Run":
        return cls.from_records(((q, d, s) for q, docs in run.items() for d, s in docs.items()), source)

    def to_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, d, s in zip(self.query_ids(), self.doc_ids(), self.score.tolist()):
            out.setdefault(q, {})[d] = s
        return out
