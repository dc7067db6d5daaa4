"""ragas: the id-based, model-free context precision and recall, per query.

Translation: each query in both the run and the qrels becomes one sample: its retrieved ids are
the run's documents sorted by score descending (a stable sort: ties stay in listing order, as a
retriever returns equals), cut to the top k for a measure at k, and its reference ids are its
relevant documents (label >= 1); the metric's synchronous single-sample call scores it::

    IDBasedContextPrecision().single_turn_score(
        SingleTurnSample(retrieved_context_ids=[docid, ...], reference_context_ids=[docid, ...]))
    IDBasedContextRecall().single_turn_score(...)

No LLM, embedding or network is involved. ragas scores samples; a mean is what its
``evaluate`` over a dataset adds, which needs the rest of its pipeline: this entry reports
per-query values only.

==============================  =========================  ===========================
metric                          value                      conformance
==============================  =========================  ===========================
``IDBasedContextPrecision``     |set(ret) & ref| / |set(ret)|  P@k (the top k handed over)
``IDBasedContextRecall``        |ref & set(ret)| / |ref|       R, R@k
==============================  =========================  ===========================

Facts behind the profiles (ragas 0.4.3, ``ragas/metrics/_context_precision.py`` and
``_context_recall.py``; each confirmed live by ``tests/libs/test_ragas.py``):

- both compare sets of ids (``set(str(id) ...)``): a document listed twice counts once, and
  precision divides by the distinct documents handed over, min(k, n) of them:
  ``duplicates=set``, ``k_beyond_list=min_k_n``; which documents make the top k is the
  adapter's stable sort: ``ties=input_order``, on float64 scores;
- precision is 0 for a query whose reference is empty (hits 0 over a non-empty list):
  ``empty_query=zero``; recall is NaN there (``total_refs > 0 else np.nan``): the query has no
  value, and is left out of the per-query values, as ``empty_query=skip`` leaves it out;
- relevant is membership in the reference the adapter builds, label >= 1, compared as given:
  ``relevance_threshold=1``, ``label_type=float``, negative labels never relevant.
"""

from __future__ import annotations

import math
import os

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PRECISION_PROFILE = Conventions(
    duplicates="set",  # set(str(id) for id in retrieved_context_ids)
    k_beyond_list="min_k_n",  # / len(retrieved_ids_set): the distinct documents retrieved
    empty_query="zero",  # hits 0 / total_retrieved when the reference is empty
    ties="input_order",  # the adapter's stable sort by score, cut at k
    relevance_threshold=1,  # the adapter's reference ids: label >= 1
    label_type="float",
    negative_labels="unjudged",
    query_set="run",  # the adapter's samples: queries in both inputs
    score_precision="float64",
)
RECALL_PROFILE = PRECISION_PROFILE.replace(
    empty_query="skip",  # hits / total_refs if total_refs > 0 else np.nan
)

_METRICS = {"P": "IDBasedContextPrecision", "R": "IDBasedContextRecall"}

# ragas sends usage analytics from a background thread unless told not to; comparing a
# library's numbers is no reason to report on its user, so the adapter opts out before ragas
# is imported (a user who sets the variable keeps their own choice)
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")


class RagasEntry(Entry):
    name = "ragas"
    library = "ragas"
    module = "ragas"
    distribution = "ragas"
    extra = "ragas"
    # Tolerance: plain Python floats (double) over id sets: 1e-12
    tolerance = 1e-12
    description = "IDBasedContextPrecision (P) and IDBasedContextRecall (R), per sample"

    def profile(self, measure: Measure) -> Conventions:
        return RECALL_PROFILE if measure.family == "R" else PRECISION_PROFILE

    def default_profile(self) -> Conventions:
        return PRECISION_PROFILE

    support = Support(families=frozenset(_METRICS), needs_cutoff=frozenset({"P"}))

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        if not wanted:
            return out
        try:
            import warnings

            with warnings.catch_warnings():  # ragas.metrics' deprecation notice on import
                warnings.simplefilter("ignore", DeprecationWarning)
                from ragas import metrics
                from ragas.dataset_schema import SingleTurnSample

            judged: set[str] = set()
            reference: dict[str, list[str]] = {}
            for q, d, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                                 qrels.label.tolist()):
                judged.add(q)
                if lab >= 1:
                    reference.setdefault(q, []).append(d)
            rows: dict[str, list[tuple[str, float]]] = {}
            for q, d, score in zip(run.query_ids().tolist(), run.doc_ids().tolist(),
                                   run.score.tolist()):
                if q in judged:
                    rows.setdefault(q, []).append((d, float(score)))
            ranked = {q: [d for d, _ in sorted(r, key=lambda row: -row[1])] for q, r in rows.items()}
            for m in wanted:
                metric = getattr(metrics, _METRICS[m.family])()
                per_query = {}
                for q, ids in ranked.items():
                    ids = ids if m.cutoff is None else ids[:m.cutoff]
                    v = float(metric.single_turn_score(SingleTurnSample(
                        retrieved_context_ids=ids, reference_context_ids=reference.get(q, []))))
                    if not math.isnan(v):  # NaN: the query has no value (empty_query=skip)
                        per_query[q] = v
                out[m] = LibraryValues(per_query=per_query)
        except Exception as exc:  # the library's refusal is the result
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            out.update({m: err for m in wanted})
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [RagasEntry()]
