"""Hypothesis generator of small (Qrels, Run) cases for the differential tests.

Every case is built with ``Qrels.from_records`` / ``Run.from_records``, as a user's input would
be, and is small (1-4 queries, 1-15 retrieved documents per query) so that a failure shrinks to
something readable. The generator aims at the places where conventions part:

- ties: scores drawn from a small pool, so equal scores are common; near-ties that collapse in
  float32 (1.0 and 1.0 + 1e-9, 1e8 and 1e8 + 1) sit in the pool too;
- labels 0..4; optionally negative (-1, -2) and fractional (0.5, 1.5, 2.25, 0.3) labels;
- unjudged retrieved documents, judged documents never retrieved, queries with no relevant
  document (all labels 0), one-document lists, lists shorter than the cutoffs tested (up to 20);
- document ids whose byte order differs from their numeric order (``d10`` < ``d9``), and query
  ids likewise (``q10`` < ``q9``; with ``numeric_qids``, ``10`` < ``9``: gdeval, which
  ir_measures' ERR and nDCG(dcg='exp-log2')@k go through, reads only numeric query ids);
- queries only in the run and queries only in the qrels;
- run rows listed in an arbitrary order (not by score), since input order breaks ties for some
  libraries;
- documents whose id is a query id (``q1``, ``q2``), so a query may retrieve itself (BEIR drops
  such documents by default);
- float32 cosine similarities: values in [-1, 1] that are exact float32 numbers, and float64
  neighbours that tie with them once narrowed to float32 (dense retrievers score in float32).

With ``duplicates=True`` a query's list may repeat a document (with its own score), as a RAG
retriever's list of chunks can; otherwise the run never lists a document twice for one query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from conformance.io.data import Qrels, Run

QIDS = ["q1", "q2", "q9", "q10"]
NUMERIC_QIDS = ["1", "2", "9", "10"]
DOCIDS = [f"d{i}" for i in range(1, 21)]  # d1 d10 d11 ... d19 d2 d20 d3 ... in byte order
DOCIDS += ["q1", "q2"]  # documents named like queries: self-retrieval

# Scores: equal scores are frequent; 1.0 / 1.0+1e-9 and 1e8 / 1e8+1 are distinct in float64 but
# equal once narrowed to float32; -1.0 and 0.0 exercise signs.
SCORE_POOL = [0.0, 0.5, 1.0, 1.0 + 1e-9, 2.0, 3.0, -1.0, 1e8, 1e8 + 1.0]
# Cosine similarities as a float32 model gives them, and float64 values equal to them in float32.
_COSINES = [float(np.float32(x)) for x in (0.8372, 0.7165, 0.5013, -0.1275)]
COSINE_POOL = _COSINES + [c + 1e-9 for c in _COSINES[:2]]
CLEAN_LABELS = [0.0, 1.0, 2.0, 3.0, 4.0]
NEGATIVE_LABELS = [-1.0, -2.0]
# 0.3 is no float32 number: a library that reads labels as float32 (XGBoost) is seen to
FRACTIONAL_LABELS = [0.5, 1.5, 2.25, 0.3]

# How a query takes part: in both inputs (most of the time), only in the run, only in the qrels.
ROLES = ["both", "both", "both", "both", "run_only", "qrels_only"]


@dataclass(frozen=True)
class Case:
    """A generated case: the records (kept for printing a failure) and the built inputs."""

    qrels_records: tuple[tuple[str, str, float], ...]
    run_records: tuple[tuple[str, str, float], ...]

    @property
    def qrels(self) -> Qrels:
        return Qrels.from_records(self.qrels_records)

    @property
    def run(self) -> Run:
        return Run.from_records(self.run_records)

    def dump(self) -> str:
        """The case as Python a reader can paste to reproduce it."""
        q = ",\n    ".join(repr(r) for r in self.qrels_records)
        r = ",\n    ".join(repr(r) for r in self.run_records)
        return (
            f"qrels = Qrels.from_records([\n    {q}\n])\n"
            f"run = Run.from_records([\n    {r}\n])"
        )


def _label_pool(negative: bool, fractional: bool) -> list[float]:
    return CLEAN_LABELS + (NEGATIVE_LABELS if negative else []) + (FRACTIONAL_LABELS if fractional else [])


@st.composite
def cases(
    draw,
    *,
    negative: bool = False,
    fractional: bool = False,
    require_unusual: bool = False,
    max_queries: int = 4,
    max_docs: int = 15,
    numeric_qids: bool = False,
    duplicates: bool = False,
    shared: bool = True,
) -> Case:
    """A (qrels, run) case.

    ``shared`` (the default): at least one query is in both inputs, so that the case has a value
    to compare, and half the time every query is; ``shared=False``: none is (each query is only in the run or only in the qrels),
    the family of cases with nothing to compare.

    ``negative`` / ``fractional`` allow negative and non-integer labels; with ``require_unusual``
    at least one judged document carries such a label: three times in four a retrieved document
    of a query in both inputs (so an entry whose profile refuses such labels must refuse the case,
    and the reference too), otherwise any judged document (perhaps one a list-wise library never
    sees).
    """
    pool = _label_pool(negative, fractional)
    unusual = [x for x in pool if x < 0 or x != int(x)]
    score = st.one_of(
        st.sampled_from(SCORE_POOL),
        st.sampled_from(COSINE_POOL),
        st.integers(0, 4).map(float),
        st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64),
    )
    pool_qids = NUMERIC_QIDS if numeric_qids else QIDS
    qids = draw(st.lists(st.sampled_from(pool_qids), min_size=1, max_size=max_queries, unique=True))
    if shared and draw(st.booleans()):  # half the time one query set, as most inputs have
        roles = ["both"] * len(qids)
    else:
        roles = [draw(st.sampled_from(ROLES if shared else ROLES[-2:])) for _ in qids]
    if shared and "both" not in roles:
        roles[draw(st.integers(0, len(roles) - 1))] = "both"

    run_blocks: list[list[tuple[str, str, float]]] = []
    qrels_records: list[tuple[str, str, float]] = []
    visible: list[int] = []  # qrels rows of judged retrieved documents of queries in both inputs
    doc = st.sampled_from(DOCIDS)
    for qid, role in zip(qids, roles):
        retrieved: list[str] = []
        if role != "qrels_only":
            retrieved = draw(st.lists(doc, min_size=1, max_size=max_docs, unique=True))
            listed = retrieved
            if duplicates and draw(st.booleans()):  # some documents listed again
                again = draw(st.lists(st.sampled_from(retrieved), min_size=1, max_size=3))
                at = draw(st.permutations(range(len(retrieved) + len(again))))
                listed = [(retrieved + again)[i] for i in at]
            scores = draw(st.lists(score, min_size=len(listed), max_size=len(listed)))
            run_blocks.append([(qid, d, s) for d, s in zip(listed, scores)])
        if role == "run_only":
            continue
        no_relevant = draw(st.integers(0, 3)) == 0  # one query in four has no relevant document
        labels = [x for x in pool if x < 1] if no_relevant else pool
        # None: the retrieved document is not judged (about one in four)
        judged_labels = draw(st.lists(st.sampled_from([None] + labels + labels + labels),
                                      min_size=len(retrieved), max_size=len(retrieved)))
        if require_unusual and role == "both" and all(x is None for x in judged_labels):
            judged_labels[0] = labels[0]
        for d, label in zip(retrieved, judged_labels):
            if label is not None:
                if role == "both":
                    visible.append(len(qrels_records))
                qrels_records.append((qid, d, label))
        # judged documents the run did not retrieve (a qrels-only query needs at least one)
        extra = draw(st.lists(doc, min_size=1 if role == "qrels_only" else 0,
                              max_size=3 if role == "both" else 5, unique=True))
        extra = [d for d in extra if d not in retrieved]
        extra_labels = draw(st.lists(st.sampled_from(labels), min_size=len(extra), max_size=len(extra)))
        qrels_records.extend((qid, d, label) for d, label in zip(extra, extra_labels))

    if require_unusual:
        if not shared:
            raise ValueError("require_unusual needs a query in both inputs (shared=True)")
        if not unusual:
            raise ValueError("require_unusual needs negative or fractional labels allowed")
        # Mostly on a document the libraries see (then a refusing profile must refuse), sometimes
        # on any judged document, which list-wise libraries never see when it is not retrieved.
        anywhere = draw(st.integers(0, 3)) == 0
        rows = list(range(len(qrels_records))) if anywhere else visible
        row = draw(st.sampled_from(rows))
        q, d, _ = qrels_records[row]
        qrels_records[row] = (q, d, draw(st.sampled_from(unusual)))

    # queries listed in any order; each query's rows stay in their drawn order
    blocks = draw(st.permutations(run_blocks)) if run_blocks else []
    run_records = tuple(r for block in blocks for r in block)
    return Case(tuple(qrels_records), run_records)
