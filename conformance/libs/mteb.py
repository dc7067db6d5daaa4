"""MTEB: the retrieval metric functions of ``mteb._evaluators.retrieval_metrics``, no model.

Translation (``conformance.libs._nested``): the qrels become ``{qid: {docid: int(label)}}`` (the
int labels MTEB's datasets hold and pytrec_eval requires) and the run ``{qid: {docid: score}}``,
the shape MTEB's search returns. A dict holds a document once per query, so a run that lists
one twice is refused by the adapter (``duplicates=error``). The calls::

    calculate_retrieval_scores(results, qrels, k_values)     # entry "mteb"
        # .ndcg {"NDCG@k"}, .map {"MAP@k"}, .recall {"Recall@k"}, .precision {"P@k"},
        # .hit_rate {"HitRate@k"}: pytrec_eval; .mrr {"MRR@k"}: mteb's own mrr()
    recall_cap(qrels, results, k_values)                     # entry "mteb:metrics"
    hole(qrels, results, k_values)                           #   per-query lists, no mean

``calculate_retrieval_scores`` returns means; each query's value is the same call on that query
alone. ``recall_cap`` and ``hole`` return one value per run query in the results' order (MTEB's
task code averages them elsewhere), so that entry reports per-query values only. An empty run
makes ``calculate_retrieval_scores`` divide by zero (``len(scores)``): no mean is asked for then.
``top_k_accuracy`` is not an entry: it appends 1.0 for a query with a hit and nothing for one
without, so its list does not say which query a value belongs to.

Facts behind the profiles (mteb 2.26, ``mteb/_evaluators/retrieval_metrics.py``; each confirmed
live by ``tests/libs/test_mteb.py``):

- the pytrec_eval measures are trec_eval's (``conformance.libs.trec_eval``: gain, discount,
  judged ideal, ties docid descending on float32 scores, 0 for an empty query) with
  ``round(sum / len(scores), 5)``: ``rounding=5``; labels ``int()``: ``label_type=int_truncate``;
  MTEB keeps documents named like their query (``ignore_identical_ids`` False by default):
  ``identical_ids=keep``;
- ``mrr`` and ``recall_cap`` look up ``qrels[query_id]`` for every run query: one without
  judgments raises KeyError, and as ``calculate_retrieval_scores`` calls ``mrr`` too, so does
  the whole call; judged queries missing from the run are not scored: ``query_set=run_strict``;
- ``mrr``, ``recall_cap`` and ``hole`` sort ``doc_scores.items()`` themselves, on the Python
  floats given (``score_precision=float64``); since the fix of mteb issue #5092 the key is
  ``(score, doc id)`` descending: ``ties=docid_desc``; before it a stable sort by score alone
  kept ties in dict insertion order: ``ties=input_order``. Which one the installed mteb does is
  read once from it, on a two-document tie (``_tie_rule``); ``MRR@k``'s mean is
  ``sum / len`` unrounded (``rounding=none``); relevant is ``label > 0``;
- ``recall_cap``: hits in the top k / min(|rel|, k), ``None`` when that is 0: the query has no
  value (``empty_query=skip``; NaN here);
- ``hole``: documents of the top k no qrels row names (any query, any label) / k, every run
  query, judged or not (``query_set=run_all``).
"""

from __future__ import annotations

import math
from functools import lru_cache


from conformance.conventions import TREC_EVAL, Conventions
from conformance.io.data import Qrels, Run
from conformance.libs import _pytrec_eval
from conformance.libs._nested import duplicate_pair, int_qrels_dict, run_dict
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PYTREC_PROFILE = TREC_EVAL.replace(
    label_type="int_truncate",  # int labels, as MTEB's datasets and pytrec_eval hold them
    rounding=5,  # parse_metrics_from_scores: round(sum / len(scores), 5)
    duplicates="error",  # a results dict holds each document once (the adapter refuses repeats)
    query_set="run_strict",  # mrr(): qrels[query_id] for every run query
)


def own_profile(ties: str) -> Conventions:
    """The profile of mteb's own Python (mrr, recall_cap, hole) under the installed tie rule."""
    return PYTREC_PROFILE.replace(ties=ties, score_precision="float64", rounding=None,
                                  rr_cutoff="honour")  # enumerate(top_hits[query_id][0:k])


@lru_cache(maxsize=1)
def _tie_rule() -> str:
    """The tie rule of the installed mteb's own sorts: q's relevant document a is inserted
    before b, both scored 1.0; MRR@1 is 1 when ties keep insertion order, 0 when the doc id
    descending puts b first."""
    try:
        from mteb._evaluators.retrieval_metrics import mrr
    except Exception:  # not installed: the current rule (the entry reports itself unavailable)
        return "docid_desc"
    return "input_order" if mrr({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}, [1])["MRR@1"][0] == 1.0 else "docid_desc"


_PYTREC_KEYS = {"nDCG": ("ndcg", "NDCG@{}"), "AP": ("map", "MAP@{}"), "R": ("recall", "Recall@{}"),
                "P": ("precision", "P@{}"), "Success": ("hit_rate", "HitRate@{}"),
                "RR": ("mrr", "MRR@{}")}
_OWN = {"Rcap": ("recall_cap", "R_cap_at_{}"), "Hole": ("hole", "Hole_at_{}")}


class MtebEntry(Entry):
    library = "mteb"
    module = "mteb"
    distribution = "mteb"
    extra = "mteb"
    # Tolerance: pytrec_eval and MTEB's numpy functions compute in double from integer labels:
    # double arithmetic alone, 1e-12 (its rounding to 5 decimals is the profile's rounding=5)
    tolerance = 1e-12

    def __init__(self, name: str, description: str, *, functions: bool):
        self.name, self.description, self.functions = name, description, functions

    def profile(self, measure: Measure) -> Conventions:
        if self.functions:
            own = own_profile(_tie_rule())
            if measure.family == "Rcap":
                return own.replace(empty_query="skip")  # recall_cap: None when min(|rel|, k) = 0
            return own.replace(query_set="run_all")  # hole: no qrels lookup
        if measure.family == "RR":
            return own_profile(_tie_rule())
        return PYTREC_PROFILE

    def default_profile(self) -> Conventions:
        return own_profile(_tie_rule()) if self.functions else PYTREC_PROFILE

    @property
    def support(self) -> Support:
        return Support(families=frozenset(_OWN if self.functions else _PYTREC_KEYS),
                       cutoff="required")

    # pytrec_eval's failure on a listed query whose judgments are all negative
    known_failure_shows = _pytrec_eval.SHOWS
    known_failure_ceiling = _pytrec_eval.CEILING

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        if self.functions:
            return None
        # int() first makes -0.5 a 0
        return _pytrec_eval.refusal(qrels, run, "inside MTEB", truncate=True)

    def failure_evidence(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        return None if self.functions else _pytrec_eval.evidence(qrels, run, truncate=True)

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        if not wanted:
            return out
        failure = self.refusal(qrels, run)
        if failure is None and duplicate_pair(run) is not None:
            q, d = duplicate_pair(run)
            failure = f"the run lists document {d!r} twice for query {q!r}; a results dict holds it once"
        if failure is not None:
            return {**out, **{m: LibraryValues(error=failure) for m in wanted}}
        q, r = int_qrels_dict(qrels), run_dict(run)
        ks = sorted({m.cutoff for m in wanted})
        for m in wanted:
            try:
                out[m] = self._own(q, r, m) if self.functions else None
            except Exception as exc:  # the library's refusal is the result
                out[m] = LibraryValues(error=f"{type(exc).__name__}: {exc}")
        if not self.functions:
            try:
                out.update(self._scores(q, r, ks, wanted))
            except Exception as exc:
                err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
                out.update({m: err for m in wanted})
        return out

    def _scores(self, q, r, ks, wanted) -> dict[Measure, LibraryValues]:
        from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores

        def call(results):
            return calculate_retrieval_scores(results, q, ks)

        if not r:  # len(scores) = 0: ZeroDivisionError; no mean of no query is asked for
            return {m: LibraryValues(per_query={}) for m in wanted}
        mean = call(r)
        per_query = {qid: call({qid: r[qid]}) for qid in r}
        out = {}
        for m in wanted:
            field, key = _PYTREC_KEYS[m.family]
            key = key.format(m.cutoff)
            out[m] = LibraryValues(
                per_query={qid: float(getattr(v, field)[key]) for qid, v in per_query.items()},
                mean=float(getattr(mean, field)[key]))
        return out

    def _own(self, q, r, m: Measure) -> LibraryValues:
        from mteb._evaluators import retrieval_metrics

        function, key = _OWN[m.family]
        values = getattr(retrieval_metrics, function)(q, r, [m.cutoff])[key.format(m.cutoff)]
        # one value per run query, in the results' order
        return LibraryValues(per_query={qid: (math.nan if v is None else float(v))
                                        for qid, v in zip(r, values)})

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [
    MtebEntry("mteb", "calculate_retrieval_scores: pytrec_eval's nDCG, MAP, recall, P, success "
              "(rounded to 5) and its own MRR@k", functions=False),
    MtebEntry("mteb:metrics", "its own recall_cap (Rcap@k) and hole (Hole@k), per query",
              functions=True),
]
