"""What a dict-based library (pytrec_eval, ranx, ir_measures) is given: nested dictionaries.

``{qid: {docid: label}}`` for the qrels and ``{qid: {docid: score}}`` for the run, built the way a
user builds them from a run and its qrels, in the inputs' row order:

- a label that is a whole number is passed as a Python ``int`` (these libraries' readers produce
  ints, and pytrec_eval refuses anything else); a fractional label is passed as the ``float`` it
  is, so what the library does with it (truncate, use, refuse) is the library's own doing;
- scores are Python ``float`` (float64), unchanged;
- a dict holds one value per (query, document): :func:`duplicate_pair` finds a run that lists a
  document twice for one query, which such a dict cannot carry (each adapter says what its
  library's own reader does then).
"""

from __future__ import annotations

import math

import numpy as np

from conformance.io.data import Qrels, Run


def label_value(label: float) -> int | float:
    """``2.0`` -> ``2``; ``1.5`` -> ``1.5`` (passed on as it is)."""
    return int(label) if math.isfinite(label) and float(label).is_integer() else float(label)


def qrels_dict(qrels: Qrels) -> dict[str, dict[str, int | float]]:
    out: dict[str, dict[str, int | float]] = {}
    for q, d, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(), qrels.label.tolist()):
        out.setdefault(q, {})[d] = label_value(lab)
    return out


def int_qrels_dict(qrels: Qrels) -> dict[str, dict[str, int]]:
    """``{qid: {docid: int(label)}}``: each label truncated towards zero, as BEIR's
    ``GenericDataLoader`` and MTEB's retrieval evaluator take the labels (``int(label)``)."""
    out: dict[str, dict[str, int]] = {}
    for q, d, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(), qrels.label.tolist()):
        out.setdefault(q, {})[d] = int(lab)
    return out


def run_dict(run: Run) -> dict[str, dict[str, float]]:
    """Later listings of a (query, document) pair replace earlier ones (see ``duplicate_pair``),
    and take their place in the dict's order too: each document stands where its last listing
    stands, which is what ``duplicates=last`` describes for a library that breaks ties in the
    dict's order (ir_measures' cwl_eval). Assigning into a dict alone, as the libraries' own
    readers do, would keep the first listing's place with the last listing's score."""
    out: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        docs = out.setdefault(q, {})
        docs.pop(d, None)
        docs[d] = float(s)
    return out


def duplicate_pair(run: Run) -> tuple[str, str] | None:
    """The first (query, document) the run lists twice, or None."""
    if len(run) < 2:
        return None
    key = run.qcode.astype(np.int64) * max(int(run.docids.size), 1) + run.dcode
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    if same.size == 0:
        return None
    row = int(order[same[0]])
    return str(run.qids[run.qcode[row]]), str(run.docids[run.dcode[row]])


def max_abs_label(qrels: Qrels) -> float:
    return float(np.abs(qrels.label).max()) if len(qrels) else 0.0
