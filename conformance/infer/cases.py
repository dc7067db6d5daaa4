"""The cases ``conformance infer`` may call a user's function on: small seeded inputs, each
built to separate some conventions (ties, unjudged and negative labels, lists shorter than k,
queries with no relevant document, fractional and large graded labels, one-document lists,
scores <= 0, long lists, queries in only one of qrels and run, a document named like its query).

A :class:`Case` is plain data: per query the retrieved documents with their scores in input
order, and the judged documents with their labels. What a calling convention may show decides
the pool (:func:`pool`): one-query cases for the per-query conventions, with distinct decreasing
scores where the function is given only an order, every document judged where it is given
labels aligned with scores; several queries for the whole-run conventions.

Ties are built as one tied pair per case, so that the two orders ``docid_asc`` and
``docid_desc`` give are every order of the tied documents: the range ``ties=unspecified``
stands for is then the range of those two values (``conformance.infer.table``).

>>> cases = pool(10, "ranked", seed=0)
>>> len(cases) > 20, cases[0].kind
(True, 'graded')
>>> sorted(cases[0].qrels()) == sorted(cases[0].run())
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Query:
    """``docs``: (docid, score) retrieved, in input order; ``labels``: (docid, label) judged."""

    qid: str
    docs: tuple[tuple[str, float], ...] = ()
    labels: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Case:
    """One input: its ``queries`` and the ``kind`` of convention it was built to separate."""

    kind: str
    queries: tuple[Query, ...]
    number: int = field(default=0, compare=False)

    @property
    def size(self) -> int:
        """Documents listed, retrieved or judged (what "smallest case" counts)."""
        return sum(len(q.docs) + len(q.labels) for q in self.queries)

    def qrels(self) -> dict[str, dict[str, float]]:
        return {q.qid: dict(q.labels) for q in self.queries if q.labels}

    def run(self) -> dict[str, dict[str, float]]:
        return {q.qid: dict(q.docs) for q in self.queries if q.docs}

    def only(self, qid: str) -> "Case":
        """The one-query case of ``qid`` (a whole-run function's per-query value is its value)."""
        return Case(self.kind, tuple(q for q in self.queries if q.qid == qid), self.number)

    def without(self, qid: str, docid: str) -> "Case | None":
        """This case with ``docid`` removed from query ``qid`` (None when no document would be
        retrieved or none judged: neither file can be empty)."""
        out = []
        for q in self.queries:
            if q.qid == qid:
                q = Query(q.qid, tuple(d for d in q.docs if d[0] != docid),
                          tuple(d for d in q.labels if d[0] != docid))
            if q.docs or q.labels:
                out.append(q)
        if not any(q.docs for q in out) or not any(q.labels for q in out):
            return None
        return Case(self.kind, tuple(out), self.number)

    def to_dict(self) -> dict:
        return {"case": self.number, "kind": self.kind, "size": self.size,
                "queries": [{"qid": q.qid, "retrieved": [[d, s] for d, s in q.docs],
                             "judged": [[d, float(v)] for d, v in q.labels]} for q in self.queries]}

    def text(self) -> str:
        """One line per query: ``qid: d1(0.9, rel 2) d2(0.8, unjudged) | judged only: d3 rel 1``."""
        lines = []
        for q in self.queries:
            lab = dict(q.labels)
            shown = [f"{d}({_n(s)}, {'rel ' + _n(lab[d]) if d in lab else 'unjudged'})" for d, s in q.docs]
            if len(shown) > SHOWN:  # a long list: its head, and where its relevant documents are
                rel = [f"{d} at {i + 1} rel {_n(lab[d])}" for i, (d, _) in enumerate(q.docs)
                       if i >= SHOWN and lab.get(d, 0) != 0]
                shown = shown[:SHOWN] + [f"... {len(q.docs)} in all" + (f" ({', '.join(rel)})" if rel else "")]
            extra = [f"{d} rel {_n(v)}" for d, v in q.labels if d not in dict(q.docs)]
            line = f"{q.qid}: " + (" ".join(shown) if shown else "(nothing retrieved)")
            if extra:
                line += " | judged, not retrieved: " + ", ".join(extra)
            lines.append(line)
        return "\n".join(lines)


SHOWN = 12  # documents of a list the text shows


def _n(v: float) -> str:
    return f"{v:g}" if float(v) != int(v) or abs(v) > 1e6 else str(int(v))


class _Builder:
    """Random one-query lists for one calling convention."""

    def __init__(self, signature: str, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.signature = signature
        self.ordered = signature == "ranked"  # the function sees the order only
        self.aligned = signature == "arrays"  # every document judged, none unretrieved

    def query(self, qid: str, labels: list, extra: list = (), scores: list | None = None,
              unjudged: int = 0) -> Query:
        """A query whose retrieved documents carry ``labels`` (None: unjudged) in input order,
        plus ``extra`` judged documents not retrieved; ``unjudged`` more unjudged documents
        mixed in. Scores decrease unless given; docids are shuffled so that docid order is not
        input order."""
        labels = list(labels)
        for _ in range(unjudged if not self.aligned else 0):
            labels.insert(int(self.rng.integers(0, len(labels) + 1)), None)
        if self.aligned:
            labels = [0 if v is None else v for v in labels]
            extra = ()
        n = len(labels) + len(extra)
        if self.aligned:
            width = len(str(n - 1))  # ids sort in input order: all the function has is the order
            names = [f"d{i:0{width}d}" for i in range(n)]
        else:
            names = [f"d{i + 1}" for i in self.rng.permutation(n)]
        if scores is None or self.ordered:
            scores = [float(len(labels) - i) for i in range(len(labels))]
        docs = tuple(zip(names, scores))
        judged = [(d, float(v)) for (d, _), v in zip(docs, labels) if v is not None]
        judged += [(d, float(v)) for d, v in zip(names[len(labels):], extra)]
        return Query(qid, docs, tuple(judged))

    def labels(self, n: int, top: int, p_rel: float = 0.5) -> list:
        out = []
        for _ in range(n):
            out.append(int(self.rng.integers(1, top + 1)) if self.rng.random() < p_rel else 0)
        return out


def _one_query_cases(k: int | None, signature: str, seed: int) -> list[tuple[str, Query]]:
    b = _Builder(signature, seed)
    kk = k or 10
    scored = signature != "ranked"
    out: list[tuple[str, Query]] = []

    def add(kind, q):
        out.append((kind, q))

    for i in range(3):
        add("graded", b.query("q1", b.labels(int(b.rng.integers(4, 9)), 3), extra=[2] if i == 0 else ()))
    for i in range(2):
        add("binary", b.query("q1", b.labels(int(b.rng.integers(3, 7)), 1)))
    # shorter than k, with relevant documents the list misses
    add("short list", b.query("q1", [1, 0, 2][: max(1, min(3, kk - 1))], extra=[1, 1]))
    add("short list", b.query("q1", [0, 1][: max(1, min(2, kk - 1))]))
    # longer than k, relevant documents beyond the cut
    n_long = kk + 5
    add("long list", b.query("q1", [0, 1] + [0] * (kk - 2) + [2, 1, 0, 3, 1][: n_long - kk]))
    add("long list", b.query("q1", [1] * (kk + 3)))
    add("unjudged", b.query("q1", [2, 0, 1], unjudged=2))
    add("unjudged", b.query("q1", [0, 1], extra=[1], unjudged=1))
    add("negative labels", b.query("q1", [-1, 2, 0, 1]))
    add("negative labels", b.query("q1", [1, -2, 0], extra=[-1]))
    add("fractional labels", b.query("q1", [0.5, 0, 1.5, 1]))
    add("fractional labels", b.query("q1", [0.3, 1, 0]))
    add("no relevant document", b.query("q1", [0, 0, 0]))
    add("no relevant document", b.query("q1", [0], unjudged=2))
    add("one document", b.query("q1", [1]))
    add("one document", b.query("q1", [0], extra=[1]))
    add("large labels", b.query("q1", [1, 4, 0, 3, 2]))
    add("large labels", b.query("q1", [0, 5, 1], extra=[3]))
    # long lists: a depth cut at 100 or 1000 drops relevant documents
    add("depth 100", b.query("q1", [0] * 110 + [1, 2], extra=()))
    add("depth 1000", b.query("q1", [1] + [0] * 1003 + [2, 1], extra=()))
    if scored:
        # one tied pair of unequal labels, docids against input order
        add("tie", b.query("q1", [0, 1, 2, 0], scores=[4.0, 3.0, 3.0, 1.0]))
        add("tie", b.query("q1", [2, 0, 1], scores=[2.0, 2.0, 1.0]))
        add("tie", b.query("q1", [1, 0, 0, 1], scores=[5.0, 4.0, 2.0, 2.0]))
        # distinct as doubles, one float32 number
        add("near tie", b.query("q1", [0, 1, 1], scores=[3.0, 1.0 + 1e-12, 1.0]))
        add("near tie", b.query("q1", [1, 0, 2], scores=[0.75, 0.5, 0.5 + 1e-12]))
        add("scores <= 0", b.query("q1", [0, 1, 1], scores=[1.0, 0.0, -1.0]))
        add("scores <= 0", b.query("q1", [1, 0, 2, 0], scores=[0.5, 0.2, -0.1, -0.3]))
    return out


def pool(k: int | None, signature: str, seed: int = 0) -> list[Case]:
    """Every case infer may call a function on, for cutoff ``k`` (None: the whole list) under
    calling convention ``signature``, in a fixed order for a fixed ``seed``; numbered from 1."""
    singles = _one_query_cases(k, signature, seed)
    cases: list[Case] = []
    if signature in ("ranked", "arrays"):
        cases = [Case(kind, (q,)) for kind, q in singles]
    else:
        b = _Builder(signature, seed + 1)
        rng = np.random.default_rng(seed + 2)
        # each single-query case once, beside a plain query
        for kind, q in singles:
            plain = b.query("q2", b.labels(4, 2, 0.6))
            cases.append(Case(kind, (q, plain)))
        # the queries of several kinds together: the mean over different queries
        for _ in range(4):
            picks = rng.choice(len(singles) - 2, size=3, replace=False)  # not the depth cases
            cases.append(Case("several queries", tuple(
                Query(f"q{j + 1}", singles[int(i)][1].docs, singles[int(i)][1].labels)
                for j, i in enumerate(picks))))
        # query sets that differ; a document named like its query
        judged_only = Query("q3", (), (("d1", 1.0), ("d2", 0.0)))
        cases.append(Case("query only judged", (b.query("q1", [1, 0, 2]), judged_only)))
        run_only = Query("q3", (("d1", 2.0), ("d2", 1.0)), ())
        cases.append(Case("query only in the run", (b.query("q1", [0, 1, 1]), run_only)))
        cases.append(Case("query only in the run", (b.query("q1", [0, 0, 0]), run_only,
                                                     b.query("q2", [1, 0]))))
        named = Query("q1", (("q1", 3.0), ("d1", 2.0), ("d2", 1.0)),
                      (("q1", 1.0), ("d1", 0.0), ("d2", 1.0)))
        cases.append(Case("document named like its query", (named, b.query("q2", [0, 1]))))
    return [Case(c.kind, c.queries, i + 1) for i, c in enumerate(cases)]
