"""The input conventions that change the run itself before it is joined to the qrels.

- ``unretrieved=appended``: every judged document of a run query that the run did not retrieve
  is added to that query's list with score 0, after the run's own rows (so it ties with the
  run's documents scored 0, in listing order after them). Code that feeds scikit-learn's
  ``ndcg_score`` from qrels and a run builds ``y_true`` / ``y_score`` this way. Judged queries
  missing from the run get no list.
- ``batch=flattened``: the run's queries become one query, named by the first run query id
  (byte order), whose list is every run row in listing order and whose judgments are those of
  the run's queries (the others are dropped). Each document is renamed ``query<US>docid``
  (unit separator, U+001F), so the same docid retrieved for two queries stays two documents,
  as two positions of a 2-D array are; a per-list function handed a 2-D batch
  (torchmetrics' functional ``retrieval_*``) scores it this way.

Both return a new :class:`Prepared` (the default values return ``prep`` itself); every other
convention is then applied to it as to any input. 0/0 and every refusal are the reference's.
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.io.parsed import ReadCounts
from conformance.reference.prepare import Prepared

SEPARATOR = "\x1f"


def reshaped(prep: Prepared, conv: Conventions) -> Prepared:
    """``prep`` under ``unretrieved`` and ``batch`` (itself when both are their defaults)."""
    if conv.unretrieved == "absent" and conv.batch == "per_query":
        return prep
    qrels, run = prep.inputs
    if conv.unretrieved == "appended":
        run = _appended(prep, run)
    if conv.batch == "flattened":
        qrels, run = _flattened(qrels, run)
    return Prepared(qrels, run)


def _appended(prep: Prepared, run: Run) -> Run:
    n_docs = max(int(max(prep.run_doc_code.max(initial=-1), prep.qrels_doc_code.max(initial=-1))) + 1, 1)
    retrieved = prep.run_q * n_docs + prep.run_doc_code
    judged = prep.qrels_q * n_docs + prep.qrels_doc_code
    add = prep.in_run[prep.qrels_q] & ~np.isin(judged, retrieved)
    n_add = int(add.sum())
    if not n_add:
        return run
    vocab = np.empty(len(prep._doc_vocab), dtype=object)
    vocab[:] = prep._doc_vocab.to_pylist()
    return Run(
        np.concatenate([prep.run_q, prep.qrels_q[add]]), prep.qids,
        np.concatenate([prep.run_doc_code, prep.qrels_doc_code[add]]), vocab,
        np.concatenate([np.asarray(run.line, dtype=np.int64), np.zeros(n_add, np.int64)]),
        run.source, ReadCounts(read=len(run) + n_add, used=len(run) + n_add),
        np.concatenate([np.asarray(run.score, dtype=np.float64), np.zeros(n_add)]),
        np.concatenate([np.asarray(run.rank, dtype=np.float64), np.full(n_add, np.nan)]))


def _flattened(qrels: Qrels, run: Run) -> tuple[Qrels, Run]:
    run_q = run.query_ids()
    if not run_q.size:
        return qrels, run
    name = np.array([min(run.qids[np.unique(run.qcode)].tolist())], dtype=object)
    run_docs = run_q + SEPARATOR + run.doc_ids()
    in_run = np.isin(qrels.query_ids(), run_q)
    qrels_docs = qrels.query_ids()[in_run] + SEPARATOR + qrels.doc_ids()[in_run]
    r_codes, r_vocab = _codes(run_docs)
    q_codes, q_vocab = _codes(qrels_docs)
    flat_run = Run(np.zeros(len(run), np.int64), name, r_codes, r_vocab, run.line, run.source,
                   ReadCounts(read=len(run), used=len(run)), run.score, run.rank)
    flat_qrels = Qrels(np.zeros(q_codes.size, np.int64), name, q_codes, q_vocab,
                       np.asarray(qrels.line)[in_run], qrels.source,
                       ReadCounts(read=int(in_run.sum()), used=int(in_run.sum())),
                       qrels.label[in_run])
    return flat_qrels, flat_run


def _codes(strings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vocab, codes = np.unique(strings.astype(str), return_inverse=True) if strings.size else (
        np.zeros(0, str), np.zeros(0, np.int64))
    out = np.empty(vocab.size, dtype=object)
    out[:] = vocab.tolist()
    return codes.astype(np.int64).reshape(-1), out
