"""What a list-wise library (scikit-learn, LightGBM, XGBoost) is given: one ranked list per query.

These libraries take, per query, an array of relevance labels and an array of scores of the same
length, and nothing else. The translation from a run and its qrels is the one a user writes:

- the queries are those present in both the run and the qrels (a query with no judgments at all
  cannot be labelled; one that is judged but not retrieved has no list to score). This is
  ``query_set=run``;
- each query's list is its run rows in the order the run lists them (the order matters to
  libraries that break ties by input position), with the run's scores as they are (float64);
- each document's label is its qrels label for that query, and 0 when the document is not judged;
- judged documents that were not retrieved are not in the list: the library cannot see them, so
  its ideal DCG is built from the list itself (``ideal=retrieved``).

Negative and fractional labels are passed through unchanged: what the library does with them is
part of its profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.io.data import Qrels, Run


@dataclass(frozen=True)
class RankedList:
    qid: str
    labels: np.ndarray  # float64, one per retrieved document, in run listing order
    scores: np.ndarray  # float64, aligned with labels


# The lists of the last few (qrels, run) pairs, by identity: every list-wise entry asks for the
# same pair once per measure, and the pandas join below costs far more than the libraries' own
# work on a small case. Entries hold the objects themselves, so an id is never reused while its
# lists are cached; the arrays are read-only so no adapter can change what the next one sees.
_CACHE_SIZE = 4
_cache: list[tuple[Qrels, Run, tuple[RankedList, ...]]] = []


def ranked_lists(qrels: Qrels, run: Run) -> tuple[RankedList, ...]:
    """The per-query lists a list-wise library is given, sorted by query id (cached per pair:
    treat the arrays as read-only)."""
    for i, (q, r, lists) in enumerate(_cache):
        if q is qrels and r is run:
            if i:
                _cache.insert(0, _cache.pop(i))
            return lists
    lists = _build(qrels, run)
    _cache.insert(0, (qrels, run, lists))
    del _cache[_CACHE_SIZE:]
    return lists


# Up to this many run + qrels rows, the lists are built with dicts: pandas' merge costs ~50 ms
# whatever the size (most of a small case's time in a list-wise library), dicts ~1 us a row.
_SMALL = 20_000


def _build(qrels: Qrels, run: Run) -> tuple[RankedList, ...]:
    """Each query that has a judgment, with the run's rows for it in listing order: the label of
    each document (0.0 when unjudged) and its score; queries ordered by id."""
    if len(run) + len(qrels) <= _SMALL:
        return _build_small(qrels, run)
    return _build_large(qrels, run)


def _ranked_list(qid: str, labels, scores) -> RankedList:
    labels = np.array(labels, dtype=np.float64)
    scores = np.array(scores, dtype=np.float64)
    labels.flags.writeable = False
    scores.flags.writeable = False
    return RankedList(str(qid), labels, scores)


def _build_small(qrels: Qrels, run: Run) -> tuple[RankedList, ...]:
    judged: dict[tuple[str, str], float] = {}
    for key in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(), qrels.label.tolist()):
        judged[key[:2]] = key[2]
    if len(judged) != len(qrels):  # the readers keep one row per pair; pandas would raise too
        raise ValueError("a (query, document) pair is judged twice in the qrels")
    judged_queries = {q for q, _ in judged}
    lists: dict[str, tuple[list, list]] = {}
    for q, d, score in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        if q in judged_queries:
            labels, scores = lists.setdefault(q, ([], []))
            labels.append(judged.get((q, d), 0.0))
            scores.append(score)
    return tuple(_ranked_list(q, *lists[q]) for q in sorted(lists))


def _build_large(qrels: Qrels, run: Run) -> tuple[RankedList, ...]:
    import pandas as pd  # here, not at the top: the parent of the library workers never joins

    rows = pd.DataFrame(
        {"q": run.query_ids(), "d": run.doc_ids(), "score": run.score, "order": np.arange(len(run))}
    )
    judged = pd.DataFrame({"q": qrels.query_ids(), "d": qrels.doc_ids(), "label": qrels.label})
    # many_to_one: a (query, document) judged twice would silently duplicate run rows
    joined = rows.merge(judged, on=["q", "d"], how="left", validate="many_to_one")
    joined = joined[joined["q"].isin(set(qrels.query_ids().tolist()))]
    joined = joined.sort_values(["q", "order"], kind="stable")
    return tuple(_ranked_list(qid, group["label"].fillna(0.0), group["score"])
                 for qid, group in joined.groupby("q", sort=True))


def parse_version(text: str | None) -> tuple[int, ...]:
    """``"3.0.3"`` -> (3, 0, 3); ``"3.1.0rc1"`` -> (3, 1, 0); unknown -> ()."""
    parts: list[int] = []
    for piece in (text or "").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts)
