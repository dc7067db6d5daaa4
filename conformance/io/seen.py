"""Items a user has already seen, removed from that user's recommendations before measuring.

Every recommender library masks the items a user interacted with in training before ranking
(Cornac's ``exclude_unknowns``, implicit's ``filter_already_liked_items``, RecTools' and
Recommenders' ``remove_seen``): an evaluation of raw top-k lists that still hold them scores
another thing. :func:`read_seen` reads a training table through the same boundary as every
input: a CSV / TSV / Parquet / Arrow file whose user and item columns are found by name
(:mod:`conformance.io.roles`: ``user_id``, ``item_id``...; ``columns`` as for the other
inputs; no rating needed, other columns unread), a TREC qrels file, a DataFrame or Arrow table,
a ``{user: [items]}`` or ``{user: {item: value}}`` mapping, or :class:`~conformance.io.Qrels`.
A pair repeated in training (a user who bought an item twice) is one seen pair.

:func:`exclude_seen` returns the run without the rows whose (user, item) pair is seen, ranked
as before among what remains (a rank-only table's ranks keep their order; a position that the
removal empties is simply not there, as a library's masked top k closes up). Nothing goes
silently: the run's ``counts`` count each removed row as ignored ("seen in training") and keep
in ``counts.seen`` the training source, its distinct pairs and users, the rows removed and the
users they came from (the command line prints it; JSON output holds it under
``counts.run.seen``). Vectorized: the ids of both sides are dictionary-coded together and the
pairs matched as integers (``np.isin``).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any, Mapping

import numpy as np

from conformance.errors import InputError
from conformance.io.parsed import Parsed

SEEN = "seen in training"


class Seen:
    """A training table's distinct (user, item) pairs, as Arrow string arrays, and its name."""

    def __init__(self, source: str, qid, docid) -> None:
        self.source, self.qid, self.docid = source, qid, docid


def read_seen(source: Any, columns: Mapping[str, str] | None = None, limits=None) -> Seen:
    """The pairs of a training table (see the module docstring)."""
    from conformance.io.data import Qrels

    if isinstance(source, Seen):
        return source
    if isinstance(source, Qrels):
        q, d = _row_strings(source)
        return Seen(source.source, q, d)
    if isinstance(source, (str, bytes, os.PathLike)):
        from conformance.io.formats import parse_file

        ids = {k: v for k, v in (columns or {}).items() if k in ("qid", "docid")}
        parsed = parse_file(source, "pairs", None, ids or None, limits)
        return Seen(parsed.source, parsed.qid, parsed.docid)
    from conformance.io.frames import is_frame, parse_frame

    if is_frame(source):
        ids = {k: v for k, v in (columns or {}).items() if k in ("qid", "docid")}
        parsed = parse_frame(source, "pairs", "<training table>", ids)
        return Seen(parsed.source, parsed.qid, parsed.docid)
    if isinstance(source, Mapping):
        return _from_mapping(source)
    raise InputError("exclude_seen", f"got {type(source).__name__}: expected a path, a DataFrame, a "
                                     "{user: [items]} mapping or Qrels")


def _from_mapping(source: Mapping) -> Seen:
    """``{user: [items]}`` or ``{user: {item: value}}``, checked as a dict's ids are."""
    from conformance.io.data import Qrels

    as_dict = {}
    for user, items in source.items():
        if isinstance(items, Mapping):
            as_dict[user] = {item: 1 for item in items}
        elif isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
            raise InputError("<training dict>", f"user {user!r}: got {type(items).__name__}: expected a list "
                                                "of items or a {item: value} mapping")
        else:
            as_dict[user] = {item: 1 for item in items}
    qrels = Qrels.from_dict(as_dict, "<training dict>")
    q, d = _row_strings(qrels)
    return Seen(qrels.source, q, d)


def _row_strings(table) -> tuple[Any, Any]:
    """Per-row query id and docid strings of a Qrels or Run, as Arrow arrays."""
    from conformance.io import kernels as ac
    from conformance.io.columnar import arrow_strings, numpy_arrow

    qv = table.qid_strings if table.qid_strings is not None else arrow_strings(table.qids.tolist())
    q = ac.take(qv, numpy_arrow(np.asarray(table.qcode, dtype=np.int64)))
    if table.doc_words is not None:
        d = table.doc_words.strings()
    elif table.doc_list is not None:
        d = table.doc_list.strings()
    else:
        dv = table.docid_strings if table.docid_strings is not None else arrow_strings(table.docids.tolist())
        d = ac.take(dv, numpy_arrow(np.asarray(table.dcode, dtype=np.int64)))
    return q, d


def _codes(a, b) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of two id arrays in one vocabulary, and its size."""
    import pyarrow as pa

    from conformance.io import kernels as ac
    from conformance.io.columnar import arrow_numpy
    from conformance.io.encode import as_array

    a, b = as_array(a), as_array(b)
    if a.type != b.type:
        a, b = ac.cast(a, pa.large_string()), ac.cast(b, pa.large_string())
    coded = ac.dictionary_encode(as_array(pa.chunked_array([a, b])))
    codes = np.asarray(arrow_numpy(coded.indices), dtype=np.int64)
    return codes[:len(a)], codes[len(a):], len(coded.dictionary)


def exclude_seen(run, seen: Seen):
    """``run`` without its rows seen in training, counted (see the module docstring); the run
    itself, its counts saying 0 removed, when none is."""
    from conformance.io import kernels as ac
    from conformance.io.columnar import numpy_arrow
    from conformance.io.data import Run

    rq, rd = _row_strings(run)
    run_q, seen_q, nq = _codes(rq, seen.qid)
    run_d, seen_d, nd = _codes(rd, seen.docid)
    if nq * max(nd, 1) < 2**62:
        run_key, seen_key = run_q * nd + run_d, np.unique(seen_q * nd + seen_d)
    else:  # pragma: no cover - vocabularies beyond 2^31 ids each: the pairs as 16-byte rows
        pair = np.dtype((np.void, 16))
        run_key = np.ascontiguousarray(np.stack([run_q, run_d], 1)).view(pair).ravel()
        seen_key = np.unique(np.ascontiguousarray(np.stack([seen_q, seen_d], 1)).view(pair).ravel())
    drop = np.isin(run_key, seen_key)
    removed = int(drop.sum())
    # the counts of a copy: a Run the caller holds (and may evaluate again) keeps its own
    counts = dataclasses.replace(run.counts, reasons=dict(run.counts.reasons))
    counts.seen = {"source": seen.source, "pairs": int(seen_key.size),
                   "users": int(np.unique(seen_q).size), "removed": removed,
                   "users_with_removed": int(np.unique(run_q[drop]).size)}
    if not removed:
        same = copy.copy(run)
        same.counts = counts
        return same
    keep = numpy_arrow(~drop)
    counts.ignore(SEEN, removed)
    rank = run._rank if isinstance(run._rank, np.ndarray) else run.rank
    parsed = Parsed(run.source, ac.filter(rq, keep), ac.filter(rd, keep), run.score[~drop],
                    np.asarray(run.line)[~drop], counts, "line", rank=rank[~drop])
    out = Run.from_parsed(parsed, "keep", check_pairs=False)
    out.distinct_pairs = run.distinct_pairs
    return out
