"""The readers as functions: one per format and shape, and ``load_run`` / ``load_qrels``, which
take anything a user holds.

Each function is the constructor of :mod:`conformance.io.data` that reads that input, under the
name the rest of the project (and its users) call it by:

* TREC files: ``read_run`` (``duplicates``, ``check_pairs``), ``read_qrels``;
* JSON and JSONL: ``read_run_json``, ``read_qrels_json``, ``read_run_jsonl``, ``read_qrels_jsonl``;
* CSV / TSV with a header row, Parquet, Arrow IPC: ``read_run_table``, ``read_qrels_table``
  (the format from the name or the content, ``columns`` for the column names);
* Python values: ``run_from_dict``, ``qrels_from_dict``, ``run_from_frame``, ``qrels_from_frame``;
* ``load_run`` / ``load_qrels``: a Run / Qrels is returned as it is; a DataFrame (or Arrow
  table) and a mapping go to the constructors above; a path to the reader its format calls for
  (:mod:`conformance.io.formats`: ``format`` names one, else the first bytes, the extension and
  the content decide).

``limits`` (a :class:`~conformance.io.limits.Limits`, default: from the environment) bounds what
reading a file may cost; ``columns`` maps roles (``qid``, ``docid``, ``score``, ``rank``,
``label``) to the column names of a table.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from conformance.io.data import Qrels, Run
from conformance.io.formats import check_format
from conformance.io.frames import is_frame
from conformance.io.limits import Limits


def read_run(path: str | os.PathLike, duplicates: str = "error", check_pairs: bool = True,
             limits: Limits | None = None) -> Run:
    """Read a TREC run file (``qid Q0 docid rank score tag`` per line; see
    :mod:`conformance.io.trec`). ``duplicates`` (a value of that axis) settles a
    docid listed twice for one query. ``check_pairs=False`` leaves that check to the caller when
    the docids have a word form (``run.distinct_pairs`` is then None, and
    :func:`~conformance.io.data.settle_pairs` does it)."""
    return Run.from_file(path, format="trec", duplicates=duplicates, check_pairs=check_pairs, limits=limits)


def read_qrels(path: str | os.PathLike, limits: Limits | None = None) -> Qrels:
    """Read a TREC qrels file (``qid iter docid relevance`` per line)."""
    return Qrels.from_file(path, format="trec", limits=limits)


def read_run_json(path: str | os.PathLike, duplicates: str = "error", limits: Limits | None = None) -> Run:
    """Read a JSON run ``{qid: {docid: score}}`` (or a list of run records; :mod:`conformance.io.jsonio`)."""
    return Run.from_file(path, format="json", duplicates=duplicates, limits=limits)


def read_qrels_json(path: str | os.PathLike, limits: Limits | None = None) -> Qrels:
    """Read JSON qrels ``{qid: {docid: label}}`` (or a list of qrels records)."""
    return Qrels.from_file(path, format="json", limits=limits)


def read_run_jsonl(path: str | os.PathLike, duplicates: str = "error", limits: Limits | None = None) -> Run:
    """Read a JSONL run: ranked lists ``{"qid", "doc_ids", "scores"?}``, lists of hits
    ``{"qid", "retrieved": [{"doc_id", "score"}]}`` or flat records."""
    return Run.from_file(path, format="jsonl", duplicates=duplicates, limits=limits)


def read_qrels_jsonl(path: str | os.PathLike, limits: Limits | None = None) -> Qrels:
    """Read JSONL qrels: RAG records ``{"qid", "gold_doc_ids", "graded_relevance"}`` or flat
    records. A gold id without a grade gets label 1; ``graded_relevance`` takes precedence over
    gold membership."""
    return Qrels.from_file(path, format="jsonl", limits=limits)


def read_run_table(path: str | os.PathLike, columns: Mapping[str, str] | None = None, duplicates: str = "error",
                   format: str | None = None, limits: Limits | None = None) -> Run:
    """Read a run from a CSV / TSV file with a header row, a Parquet or an Arrow IPC file
    (:mod:`conformance.io.tables`)."""
    return Run.from_file(path, format=format, columns=columns, duplicates=duplicates, limits=limits)


def read_qrels_table(path: str | os.PathLike, columns: Mapping[str, str] | None = None,
                     format: str | None = None, limits: Limits | None = None) -> Qrels:
    """Read qrels from a CSV / TSV file with a header row, a Parquet or an Arrow IPC file."""
    return Qrels.from_file(path, format=format, columns=columns, limits=limits)


def run_from_dict(run: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>", duplicates: str = "error") -> Run:
    """A validated Run from ``{qid: {docid: score}}``; the "line" of a problem is the record number."""
    return Run.from_dict(run, source, duplicates)


def qrels_from_dict(qrels: Mapping[Any, Mapping[Any, Any]], source: str = "<dict>") -> Qrels:
    """Validated Qrels from ``{qid: {docid: label}}``; the "line" of a problem is the record number."""
    return Qrels.from_dict(qrels, source)


def run_from_frame(df, source: str = "<DataFrame>", duplicates: str = "error", **columns: str) -> Run:
    """A validated Run from a DataFrame (or Arrow table) with query id, docid, score and
    (optional) rank columns, found by name (:mod:`conformance.io.frames`) or given
    (``qid="Query"``...). The "line" of a problem is the 1-based row position."""
    return Run.from_frame(df, source=source, duplicates=duplicates, **columns)


def qrels_from_frame(df, source: str = "<DataFrame>", **columns: str) -> Qrels:
    """Validated Qrels from a DataFrame (or Arrow table) with query id, docid and label columns."""
    return Qrels.from_frame(df, source=source, **columns)


def load_run(source: Any, duplicates: str = "error", format: str | None = None, check_pairs: bool = True,
             columns: Mapping[str, str] | None = None, limits: Limits | None = None) -> Run:
    """A Run from a Run (returned as it is), a DataFrame or Arrow table, a ``{qid: {docid:
    score}}`` mapping or a path in any format the readers take. ``check_pairs``: see
    :func:`read_run` (files only; the other inputs are always checked)."""
    check_format(format)
    if isinstance(source, Run):
        return source
    if is_frame(source):
        return Run.from_frame(source, duplicates=duplicates, **_given(columns, "score", "rank"))
    if isinstance(source, Mapping):
        return Run.from_dict(source, duplicates=duplicates)
    if isinstance(source, (str, bytes, os.PathLike)):
        return Run.from_file(source, format=format, columns=columns, limits=limits, duplicates=duplicates,
                             check_pairs=check_pairs)
    raise TypeError(f"load_run: got {type(source).__name__}: expected a path, a DataFrame, a mapping or a Run")


def load_qrels(source: Any, format: str | None = None, columns: Mapping[str, str] | None = None,
               limits: Limits | None = None) -> Qrels:
    """Qrels from Qrels (returned as they are), a DataFrame or Arrow table, a ``{qid: {docid:
    label}}`` mapping or a path in any format the readers take."""
    check_format(format)
    if isinstance(source, Qrels):
        return source
    if is_frame(source):
        return Qrels.from_frame(source, **_given(columns, "label"))
    if isinstance(source, Mapping):
        return Qrels.from_dict(source)
    if isinstance(source, (str, bytes, os.PathLike)):
        return Qrels.from_file(source, format=format, columns=columns, limits=limits)
    raise TypeError(f"load_qrels: got {type(source).__name__}: expected a path, a DataFrame, a mapping or Qrels")


def _given(columns: Mapping[str, str] | None, *roles: str) -> dict[str, str]:
    """The entries of ``columns`` for the id roles and ``roles`` (one mapping serves both files)."""
    return {k: v for k, v in (columns or {}).items() if k in ("qid", "docid") + roles}
