"""sentence-transformers: ``InformationRetrievalEvaluator.compute_metrics``, without a model.

Translation: the evaluator is built as a user builds it from a run and its qrels, then handed the
run's lists as the retrieval step would hand them::

    ev = InformationRetrievalEvaluator(
        queries={qid: qid for qid in the run's queries},
        corpus={docid: docid for docid in the run's documents},
        relevant_docs={qid: {docid with label >= 1}},          # sets: binary relevance
        accuracy_at_k=[k], precision_recall_at_k=[k], mrr_at_k=[k], ndcg_at_k=[k], map_at_k=[k],
        write_csv=False)
    ev.compute_metrics([[{"corpus_id": docid, "score": score}, ...] per ev.queries_ids])

``compute_metrics`` is the step of ``__call__`` after the model has scored the corpus; it
returns means only. Each query's value is the same call on an evaluator of that query alone;
the mean is the call on every query. Every listing of the run goes into its query's list (a
list of dicts can hold a document twice). When no query is left to evaluate, the library
divides by zero (``len(self.queries)``): no mean is asked for then.

=====================  ========================  ===============
measure                result key                conformance
=====================  ========================  ===============
accuracy@k             ``accuracy@k``            Success@k
precision@k            ``precision@k``           P@k
recall@k               ``recall@k``              R@k
MRR@k                  ``mrr@k``                 RR@k
NDCG@k                 ``ndcg@k``                nDCG(gain=binary)@k
MAP@k                  ``map@k``                 AP@k
=====================  ========================  ===============

Facts behind the profile (sentence-transformers 6.2.0,
``sentence_transformer/evaluation/information_retrieval.py``; each confirmed live by
``tests/libs/test_rag_libraries.py``):

- ``__init__`` keeps only queries ``in relevant_docs and len(relevant_docs[qid]) > 0``: a query
  with no relevant document is left out of every mean: ``empty_query=skip``; one not in the run
  is not asked (the adapter's queries are the run's): ``query_set=run``;
- ``compute_metrics`` sorts each list by ``(-score, corpus_id)``: ties by docid ascending
  (Python string order, code points = UTF-8 bytes), on the floats given (``float64``).
  (LIBRARIES.md's "heap / corpus order" is ``compute_all_metrics``' top-k selection before it,
  which this call does not run);
- relevance is set membership: binary. ``NDCG@k`` scores 1 for a listed relevant id, 0 otherwise
  (``gain=binary``), against an ideal of ``[1] * len(relevant)`` cut at k (``ideal=judged``),
  discount ``1 / log2(i + 2)`` for 0-based i;
- ``precision@k`` = hits in the top k / k (``k_beyond_list=k``); ``recall@k`` = hits / |rel|;
  ``MRR@k`` looks at the top k only; ``MAP@k`` = sum of precisions / ``min(k_val, |rel|)``
  (``ap_denominator=min_k_relevant``);
- a document listed twice is two hits (live: relevant a listed twice, R@2 = 2.0):
  ``duplicates=keep``;
- a label counts as relevant when the adapter puts it in the set, label >= 1: a fractional
  label is compared as it is (``label_type=float``), a negative one is never relevant.
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # ndcg: 1 if top_hit["corpus_id"] in query_relevant_docs else 0
    discount="log2",  # compute_dcg_at_k: relevances[i] / np.log2(i + 2)
    ideal="judged",  # true_relevances = [1] * len(query_relevant_docs), cut at k
    k_beyond_list="k",  # precisions_at_k: num_correct / k_val
    ap_denominator="min_k_relevant",  # sum_precisions / min(k_val, len(query_relevant_docs))
    empty_query="skip",  # __init__: only qids with len(relevant_docs[qid]) > 0
    ties="docid_asc",  # compute_metrics: sorted(..., key=lambda x: (-x["score"], x["corpus_id"]))
    relevance_threshold=1,  # the adapter's relevant_docs: label >= 1
    threshold_scope="binary",
    negative_labels="unjudged",  # never in the set: not relevant, not in the ideal
    label_type="float",  # labels compared as they are (0.5 is not relevant, 1.5 is)
    query_set="run",  # the adapter's queries are the run's
    depth=None,
    score_precision="float64",  # Python floats as given
    rr_cutoff="honour",  # MRR@k: enumerate(top_hits[0:k_val])
    rank_source="score",
    duplicates="keep",  # a list of dicts: every listing is a hit of its own
)

_KEYS = {"Success": "accuracy@k", "P": "precision@k", "R": "recall@k", "RR": "mrr@k",
         "nDCG": "ndcg@k", "AP": "map@k"}


class SentenceTransformersEntry(Entry):
    name = "sentence_transformers"
    library = "sentence_transformers"
    module = "sentence_transformers"
    distribution = "sentence-transformers"
    extra = "rag"
    # Tolerance: numpy and Python floats (double) over the labels as given: 1e-12
    tolerance = 1e-12
    description = "InformationRetrievalEvaluator.compute_metrics on the run's lists"

    support = Support(families=frozenset(_KEYS), cutoff="required")

    def profile(self, measure: Measure) -> Conventions:
        return PROFILE

    def default_profile(self) -> Conventions:
        return PROFILE

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        if not wanted:
            return out
        try:
            try:  # 6.x; 'sentence_transformers.evaluation' is the deprecated older path
                from sentence_transformers.sentence_transformer.evaluation import (
                    InformationRetrievalEvaluator)
            except ImportError:
                from sentence_transformers.evaluation import InformationRetrievalEvaluator

            relevant: dict[str, set[str]] = {}
            for q, d, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                                 qrels.label.tolist()):
                if lab >= 1:
                    relevant.setdefault(q, set()).add(d)
            lists: dict[str, list[dict]] = {}
            for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
                lists.setdefault(q, []).append({"corpus_id": d, "score": float(s)})
            corpus = {d: d for d in run.doc_ids().tolist()}
            ks = {f: sorted({m.cutoff for m in wanted if m.family == f}) or [1] for f in _KEYS}

            def metrics(qids: list[str]) -> tuple[list[str], dict]:
                ev = InformationRetrievalEvaluator(
                    queries={q: q for q in qids}, corpus=corpus, relevant_docs=relevant,
                    accuracy_at_k=ks["Success"], precision_recall_at_k=sorted(set(ks["P"] + ks["R"])),
                    mrr_at_k=ks["RR"], ndcg_at_k=ks["nDCG"], map_at_k=ks["AP"], write_csv=False)
                if not ev.queries_ids:
                    return [], {}
                return ev.queries_ids, ev.compute_metrics([lists[q] for q in ev.queries_ids])

            evaluated, mean = metrics(list(lists))
            per_query = {q: metrics([q])[1] for q in evaluated}
        except Exception as exc:  # the library's refusal is the result
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            return {**out, **{m: err for m in wanted}}
        for m in wanted:
            key = _KEYS[m.family]
            out[m] = LibraryValues(
                per_query={q: float(v[key][m.cutoff]) for q, v in per_query.items()},
                mean=float(mean[key][m.cutoff]) if mean else None)
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [SentenceTransformersEntry()]
