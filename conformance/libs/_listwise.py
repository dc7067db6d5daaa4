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

from conformance.data import Qrels, Run


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


def _build(qrels: Qrels, run: Run) -> tuple[RankedList, ...]:
    import pandas as pd  # here, not at the top: the parent of the library workers never joins

    rows = pd.DataFrame(
        {"q": run.query_ids(), "d": run.doc_ids(), "score": run.score, "order": np.arange(len(run))}
    )
    judged = pd.DataFrame({"q": qrels.query_ids(), "d": qrels.doc_ids(), "label": qrels.label})
    # many_to_one: a (query, document) judged twice would silently duplicate run rows
    joined = rows.merge(judged, on=["q", "d"], how="left", validate="many_to_one")
    joined = joined[joined["q"].isin(set(qrels.query_ids().tolist()))]
    joined = joined.sort_values(["q", "order"], kind="stable")
    out = []
    for qid, group in joined.groupby("q", sort=True):
        labels = group["label"].fillna(0.0).to_numpy(dtype=np.float64, copy=True)
        scores = group["score"].to_numpy(dtype=np.float64, copy=True)
        labels.flags.writeable = False
        scores.flags.writeable = False
        out.append(RankedList(str(qid), labels, scores))
    return tuple(out)


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
