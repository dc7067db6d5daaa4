"""The explorer's query picker: queries of the run's own input, as lists the explorer can edit.

``picker_queries(subjects)`` gives, for at most ``MAX_QUERIES`` queries that are both judged and
ranked (in subject order, then query id order), the query's ranked list as the explorer holds
it: documents in the run's order under trec_eval's rule (score descending, ties by document id
descending, byte-wise), each with its judged grade (an unjudged document grade 0), cut at
``MAX_DOCS``; then every relevant judged document (label >= 1) the cut or the run left out,
appended below it and marked with its true rank (None: not retrieved). The explorer's list is
the whole universe, so these documents count as ranked there: ``note`` says so.

Grades are the explorer's integers: a negative label is read as 0 (the unjudged reading) and a
fractional one truncated; ``changed`` counts the documents whose grade is not their label. A
document whose id equals the query id is left out (``named_like_query``), so identical_ids
cannot matter on the list. The run's rows of the picked queries are selected with numpy; the
per-document loop runs over at most MAX_QUERIES x (MAX_DOCS + relevant) rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MAX_QUERIES = 200
MAX_DOCS = 30


def _codes(names: np.ndarray, wanted: list[str]) -> np.ndarray:
    return np.flatnonzero(np.isin(names.astype(str), np.array(wanted, dtype=str)))


def _grade(label: float) -> int:
    return 0 if label < 0 else int(math.floor(label))


def picker_queries(subjects, max_queries: int = MAX_QUERIES, max_docs: int = MAX_DOCS) -> list[dict[str, Any]]:
    """[{case, qid, docs: [[docid, grade, true rank or None], ...], cut, appended, changed,
    named_like_query, retrieved}] for the first ``max_queries`` judged and ranked queries."""
    out: list[dict[str, Any]] = []
    for s in subjects or []:
        room = max_queries - len(out)
        if room <= 0:
            break
        run, qrels = s.run, s.qrels
        both = sorted(set(run.present_qids().tolist()) & set(qrels.present_qids().tolist()))[:room]
        if not both:
            continue
        rrows = np.flatnonzero(np.isin(run.qcode, _codes(run.qids, both)))
        jrows = np.flatnonzero(np.isin(qrels.qcode, _codes(qrels.qids, both)))
        rq = run.qids[run.qcode[rrows]].astype(str)
        rd = run.docids[run.dcode[rrows]].astype(str)
        _, dkey = np.unique(rd, return_inverse=True)
        _, qkey = np.unique(rq, return_inverse=True)
        order = np.lexsort((-dkey, -run.score[rrows], qkey))
        rq, rd = rq[order], rd[order]
        jq = qrels.qids[qrels.qcode[jrows]].astype(str).tolist()
        jd = qrels.docids[qrels.dcode[jrows]].astype(str).tolist()
        labels: dict[str, dict[str, float]] = {}
        for q, d, lab in zip(jq, jd, qrels.label[jrows].tolist()):
            labels.setdefault(q, {})[d] = lab
        starts = np.flatnonzero(np.r_[True, rq[1:] != rq[:-1]]) if rq.size else np.zeros(0, int)
        ends = np.r_[starts[1:], rq.size]
        for a, b in zip(starts.tolist(), ends.tolist()):
            q = str(rq[a])
            judged = labels.get(q, {})
            ranked = [d for d in rd[a:b].tolist() if d != q]
            named = (b - a) - len(ranked)
            docs, changed = [], 0
            for d in ranked[:max_docs]:
                lab = judged.get(d, 0.0)
                g = _grade(lab)
                changed += g != lab
                docs.append([d, g, None])
            rank_of = {d: i + 1 for i, d in enumerate(rd[a:b].tolist())}
            shown = {d for d, _, _ in docs}
            extra = sorted((d for d, lab in judged.items() if lab >= 1 and d not in shown and d != q),
                           key=lambda d: (rank_of.get(d, math.inf), d))
            for d in extra:
                lab = judged[d]
                g = _grade(lab)
                changed += g != lab
                docs.append([d, g, rank_of.get(d)])
            out.append({"case": s.name, "qid": q, "docs": docs, "retrieved": len(ranked),
                        "cut": len(ranked) > max_docs, "appended": len(extra),
                        "changed": changed, "named_like_query": named})
    return out
