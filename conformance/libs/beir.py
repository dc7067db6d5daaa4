"""BEIR: ``beir.retrieval.evaluation.EvaluateRetrieval.evaluate`` and ``evaluate_custom``.

Translation (``conformance.libs._nested``): the qrels become ``{qid: {docid: int(label)}}``, as
BEIR's own reader makes them (``GenericDataLoader._load_qrels``: ``int(row[2])``, truncation
towards zero), and the run ``{qid: {docid: float score}}``, the shape BEIR's retrievers return.
A dict holds a document once per query, so a run that lists one twice is refused by the adapter
(``duplicates=error``). The calls::

    EvaluateRetrieval.evaluate(qrels, results, k_values, ignore_identical_ids=...)
        # -> ({"NDCG@k": mean}, {"MAP@k": mean}, {"Recall@k": mean}, {"P@k": mean})
    EvaluateRetrieval.evaluate_custom(qrels, results, k_values, metric="mrr" | "top_k_accuracy")
        # -> {"MRR@k": mean} / {"Accuracy@k": mean}

BEIR returns means only. Each query's value is what BEIR reports for that query alone (the
same call on the query's own qrels and results), so it is rounded too; the mean is one call on
everything. ``evaluate`` changes ``results`` in place (it pops identical ids), so every call gets
a fresh copy. When no query is in both inputs, ``evaluate`` divides by zero (``len(scores)``):
there is no mean to ask for, and none is reported.

=============================  ===================================================
entry                          call
=============================  ===================================================
``beir``                       ``evaluate(..., ignore_identical_ids=True)`` (BEIR's default)
``beir:keep_identical_ids``    ``evaluate(..., ignore_identical_ids=False)``
``beir:custom``                ``evaluate_custom(..., metric="mrr")`` (RR@k),
                               ``"top_k_accuracy"`` (Success@k), ``"recall_cap"`` (Rcap@k),
                               ``"hole"`` (Hole@k)
=============================  ===================================================

Facts behind the profiles (beir 2.2.0, ``beir/retrieval/evaluation.py`` and
``custom_metrics.py``; each confirmed live by ``tests/libs/test_rag_libraries.py``):

- ``evaluate`` is pytrec_eval (``ndcg_cut``, ``map_cut``, ``recall``, ``P`` at every k): the
  trec_eval profile (``conformance.libs.trec_eval``) for gain, discount, ideal, ties (docid
  descending), float32 scores, negative labels, the query set (queries in both inputs) and the
  empty query (0, counted);
- labels: ``int(label)`` as BEIR's reader does: ``label_type=int_truncate``;
- ``round(sum / len(scores), 5)`` for every mean: ``rounding=5``;
- ``ignore_identical_ids=True`` pops every result whose docid equals its query id before
  pytrec_eval sees the run; the qrels keep that judgment (live: qrels {q1: {q1: 1, d1: 1}},
  run {q1: {q1: 2.0}} gives Recall@3 0, not 0.5), and a query left with an empty dict is still
  scored, at 0 (live): ``identical_ids=drop``;
- ``evaluate_custom`` is BEIR's own Python, which runs no identical-id filter:
  ``sorted(doc_scores.items(), key=score, reverse=True)``, a stable sort, so ties keep the
  results' insertion order (the run's listing order): ``ties=input_order``, on Python floats
  (``score_precision=float64``); relevant is ``label > 0`` (on int labels, label >= 1);
  ``MRR@k`` looks at the top k only; each sum is divided by ``len(qrels)``, every judged query,
  one missing from the run counting 0, and a run query with no qrels raises KeyError
  (``qrels[query_id]``): ``query_set=qrels_strict``;
- ``recall_cap``: hits in the top k / min(|rel|, k), unguarded: a judged query with no relevant
  document raises ZeroDivisionError (``empty_query=raise``);
- ``hole``: documents of the top k that no qrels row names / k, summed over every run query and
  divided by ``len(qrels)``; it never looks a run query up in the qrels, so a run query without
  judgments is summed but not counted (live: qrels {q1: {d1: 1}}, run {q1: {d2: 1.0}, q2: {d3:
  1.0}} gives Hole@1 = 2.0). That is a library bug, refused with that case (``known_failure``);
  otherwise ``query_set=qrels_strict`` holds. Each query's value is the call on its results
  against a one-query qrels judging every judged document (the only thing ``hole`` reads of
  the qrels).
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import TREC_EVAL, Conventions
from conformance.io.data import Qrels, Run
from conformance.libs import _pytrec_eval
from conformance.libs._nested import duplicate_pair, int_qrels_dict, run_dict
from conformance.libs.base import Entry, LibraryValues, Support, error_text
from conformance.measures import Measure

PROFILE = TREC_EVAL.replace(
    label_type="int_truncate",  # GenericDataLoader._load_qrels: int(row[2]), as the adapter passes
    rounding=5,  # evaluation.py: round(... / len(scores), 5)
    identical_ids="drop",  # evaluate(ignore_identical_ids=True): results[qid].pop(qid)
    duplicates="error",  # a results dict holds each document once (the adapter refuses repeats)
)
KEEP_IDENTICAL_PROFILE = PROFILE.replace(identical_ids="keep")  # ignore_identical_ids=False
CUSTOM_PROFILE = PROFILE.replace(
    identical_ids="keep",  # custom_metrics.py has no identical-id filter
    ties="input_order",  # sorted(..., key=score, reverse=True) is stable: insertion order
    score_precision="float64",  # Python floats compared as they are
    # / len(qrels): every judged query, a missing one adds 0; qrels[query_id] raises KeyError
    # for a run query without judgments
    query_set="qrels_strict",
    rr_cutoff="honour",  # mrr: enumerate(top_hits[query_id][0:k])
)

_KEYS = {"nDCG": "NDCG@{}", "AP": "MAP@{}", "R": "Recall@{}", "P": "P@{}"}
_CUSTOM = {"RR": ("mrr", "MRR@{}"), "Success": ("top_k_accuracy", "Accuracy@{}"),
           "Rcap": ("recall_cap", "R_cap@{}"), "Hole": ("hole", "Hole@{}")}
# recall_cap divides by min(|rel|, k) unguarded: a query with no relevant document raises
RCAP_PROFILE = CUSTOM_PROFILE.replace(empty_query="raise")
# hole sums over every run query but divides by len(qrels): a library bug whenever a run query
# has no judgments (smallest case: qrels {q1: {d1: 1}}, run {q1: {d2: 1.0}, q2: {d3: 1.0}} gives
# Hole@1 = 2.0, where each query's share is 1); the adapter refuses such a case
HOLE_BUG = ("BEIR's hole sums over every run query but divides by len(qrels), so a run query "
            "without judgments inflates it (library bug; smallest case: qrels {q1: {d1: 1}}, run "
            "{q1: {d2: 1.0}, q2: {d3: 1.0}} gives Hole@1 = 2.0)")


class BeirEntry(Entry):
    library = "beir"
    module = "beir"
    distribution = "beir"
    extra = "rag"
    # Tolerance: pytrec_eval (or BEIR's own numpy code) computes in double from integer labels
    # and float64 scores: double arithmetic alone, 1e-12 (every float64 entry's bound; see the
    # differential tests' test_tolerance_fits_measured_gaps)
    tolerance = 1e-12

    def __init__(self, name: str, description: str, *, custom: bool, ignore_identical_ids: bool,
                 profile: Conventions):
        self.name, self.description = name, description
        self.custom, self.ignore_identical_ids = custom, ignore_identical_ids
        self._profile = profile

    @property
    def support(self) -> Support:
        return Support(families=frozenset(_CUSTOM if self.custom else _KEYS), cutoff="required")

    def profile(self, measure: Measure) -> Conventions:
        if self.custom and measure.family == "Rcap":
            return RCAP_PROFILE
        return self._profile

    def default_profile(self) -> Conventions:
        return self._profile

    # pytrec_eval's failure on a listed query whose judgments are all negative (conformance.
    # libs._pytrec_eval); custom: the Hole bug, wrong values on a run query without judgments
    # (or ZeroDivisionError when no query is judged), which a third of the generated cases
    # have (measured: up to 45% of a run's Hole cases)
    known_failure_shows = _pytrec_eval.SHOWS | {"raises"}
    known_failure_ceiling = {**_pytrec_eval.CEILING, "Hole": 0.7}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        if self.custom:
            if measure is not None and measure.family == "Hole" and len(run):
                judged = set(np.unique(qrels.query_ids()).tolist()) if len(qrels) else set()
                if set(np.unique(run.query_ids()).tolist()) - judged:
                    return HOLE_BUG
            return None
        # BEIR's int() first makes -0.5 a 0
        return _pytrec_eval.refusal(qrels, run, "inside BEIR", truncate=True)

    def failure_evidence(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        return None if self.custom else _pytrec_eval.evidence(qrels, run, truncate=True)

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        if not wanted:
            return out
        # a measure's own refusal first: it is the reason the tests expect (known_failure)
        refused = {m: self.refusal(qrels, run, m) for m in wanted}
        out.update({m: LibraryValues(error=why) for m, why in refused.items() if why is not None})
        wanted = [m for m in wanted if refused[m] is None]
        if not wanted:
            return out
        failure = self.refusal(qrels, run)
        if failure is None and duplicate_pair(run) is not None:
            q, d = duplicate_pair(run)
            failure = f"the run lists document {d!r} twice for query {q!r}; a results dict holds it once"
        if failure is not None:
            return {**out, **{m: LibraryValues(error=failure) for m in wanted}}
        try:
            from beir.retrieval.evaluation import EvaluateRetrieval

            q, r = int_qrels_dict(qrels), run_dict(run)
            ks = sorted({m.cutoff for m in wanted})
            if self.custom:
                out.update(self._custom(EvaluateRetrieval, q, r, ks, wanted))
            else:
                out.update(self._pytrec(EvaluateRetrieval, q, r, ks, wanted))
        except Exception as exc:  # the library's refusal is the result
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            out.update({m: err for m in wanted})
        return out

    def _pytrec(self, E, q, r, ks, wanted) -> dict[Measure, LibraryValues]:
        def call(qrels, results):
            fresh = {qid: dict(docs) for qid, docs in results.items()}  # evaluate pops in place
            merged: dict[str, float] = {}
            for part in E.evaluate(qrels, fresh, ks, ignore_identical_ids=self.ignore_identical_ids):
                merged.update(part)
            return merged

        both = [qid for qid in r if qid in q]
        per_query = {qid: call({qid: q[qid]}, {qid: r[qid]}) for qid in both}
        mean = call(q, r) if both else None
        out = {}
        for m in wanted:
            key = _KEYS[m.family].format(m.cutoff)
            out[m] = LibraryValues(per_query={qid: float(v[key]) for qid, v in per_query.items()},
                                   mean=None if mean is None else float(mean[key]))
        return out

    def _custom(self, E, q, r, ks, wanted) -> dict[Measure, LibraryValues]:
        out = {}
        for m in wanted:
            metric, key = _CUSTOM[m.family]
            key = key.format(m.cutoff)
            # hole reads of the qrels only the set of judged documents: each query's own
            # value is its results against one query judging every one of them
            annotated = {d: 1 for docs in q.values() for d in docs}
            try:  # one metric's refusal (recall_cap's ZeroDivisionError) is its own, not the others'
                per_query = {qid: float(E.evaluate_custom({qid: annotated if metric == "hole" else q[qid]},
                                                          {qid: r[qid]} if qid in r else {},
                                                          [m.cutoff], metric)[key])
                             for qid in q}
                # the whole call too, whatever the per-query calls gave: its refusal is the result
                mean = float(E.evaluate_custom(q, r, [m.cutoff], metric)[key])
            except Exception as exc:
                out[m] = LibraryValues(error=error_text(exc))
            else:
                out[m] = LibraryValues(per_query=per_query, mean=mean)
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [
    BeirEntry("beir", "EvaluateRetrieval.evaluate with ignore_identical_ids=True (its default)",
              custom=False, ignore_identical_ids=True, profile=PROFILE),
    BeirEntry("beir:keep_identical_ids", "EvaluateRetrieval.evaluate with ignore_identical_ids=False",
              custom=False, ignore_identical_ids=False, profile=KEEP_IDENTICAL_PROFILE),
    BeirEntry("beir:custom", "EvaluateRetrieval.evaluate_custom: mrr (RR@k), top_k_accuracy (Success@k)",
              custom=True, ignore_identical_ids=False, profile=CUSTOM_PROFILE),
]
