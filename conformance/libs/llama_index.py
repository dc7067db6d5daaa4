"""LlamaIndex: the ``RetrieverEvaluator`` metrics of ``llama_index.core.evaluation``.

Translation: for each query in both the run and the qrels, what a retriever hands the
evaluator: the ids of its nodes in rank order, here the run's documents sorted by score
descending (a stable sort: ties stay in listing order), cut to the top k for a measure at k
(the retriever's ``similarity_top_k``), and the expected ids, the judged documents with label
>= 1 (LlamaIndex's relevance is binary: an id is expected or not). Every listing is passed, so a
document may appear twice. Then, per query::

    HitRate().compute(expected_ids=expected, retrieved_ids=retrieved).score

=============================  ==============================================  ================
entry                          metric                                          measure
=============================  ==============================================  ================
``llama_index``                ``HitRate()``                                   Success(@k)
                               ``MRR()``                                       RR(@k)
                               ``Precision()``                                 P@k
                               ``Recall()``                                    R(@k)
                               ``AveragePrecision()``                          AP(@k)
                               ``NDCG()`` (mode linear)                        nDCG (no cutoff)
``llama_index:granular``       ``HitRate(use_granular_hit_rate=True)``         R(@k)
                               ``MRR(use_granular_mrr=True)``                  GranularRR(@k)
``llama_index:exponential``    ``NDCG(mode="exponential")``                    nDCG (no cutoff)
=============================  ==============================================  ================

The library gives no mean: each ``compute`` scores one query.

Facts behind the profiles (llama-index-core 0.14.25,
``llama_index/core/evaluation/retrieval/metrics.py``; each confirmed live by
``tests/libs/test_rag_libraries.py``):

- every metric raises ValueError ("Retrieved ids and expected ids must be provided") when the
  expected ids are empty: a query with no relevant document fails the evaluation
  (``empty_query=raise``);
- ``NDCG``: ``discounted_gain(rel=docid in expected_set)`` is 1 / log2(i + 1) for a hit in both
  modes (``rel == 1`` returns before the mode is read), so linear and exponential are one
  binary gain; the ideal is ``len(expected_ids)`` ones, every relevant document, *not* cut at
  the list length nor at k (LIBRARIES.md expected ``min(len(retrieved), len(expected))`` from a
  late-2024 fix; 0.14.25 does not have it). So nDCG without a cutoff is ours with
  ``ideal=judged``; for nDCG@k the ideal would stay uncut, which no axis describes yet, and it
  is not offered;
- ``AveragePrecision`` divides by ``len(expected_set)``: ``ap_denominator=relevant``; every
  listing of a relevant id counts (live: a listed twice gives AP 2.0 on one relevant document):
  ``duplicates=keep``; ``MRR`` is the first hit's 1/rank; ``HitRate`` any hit;
- ``Precision`` = |set(retrieved) & expected| / |set(retrieved)| and ``Recall`` =
  |set(retrieved) & expected| / |expected|: on a list without repeats, hits / min(k, n)
  (``k_beyond_list=min_k_n``) and hits / R. A repeated id counts once there and shrinks the
  denominator: a document counts once, at its highest-ranked listing, and precision's
  min(k, n) counts distinct documents (``duplicates=set`` in their profile);
- ``HitRate(use_granular_hit_rate=True)`` = every listing that is expected / |expected|: recall
  with repeats counted (``duplicates=keep``; it exceeds 1 then);
- ``MRR(use_granular_mrr=True)`` = the mean of 1/rank over every expected listing, 0 when none:
  the GranularRR family.
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._nested import duplicate_pair
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # discounted_gain: rel is `docid in expected_set`; 1 / log2(i + 1) on a hit
    discount="log2",
    ideal="judged",  # idcg over range(1, len(expected_ids) + 1): every relevant id, uncut
    k_beyond_list="min_k_n",  # Precision: / len(set(retrieved_ids)), the list given
    ap_denominator="relevant",  # AveragePrecision: total_precision / len(expected_set)
    empty_query="raise",  # every compute: ValueError when expected_ids is empty
    ties="input_order",  # the adapter's stable sort by score: a retriever's order of equals
    relevance_threshold=1,  # the adapter's expected_ids: label >= 1
    threshold_scope="binary",
    negative_labels="unjudged",  # never expected
    label_type="float",
    query_set="run",  # the adapter asks for the queries in both inputs
    depth=None,
    score_precision="float64",
    rr_cutoff="honour",  # the adapter cuts the list to k
    rank_source="score",
    duplicates="keep",  # HitRate, MRR, AP, NDCG count every listing
)
SET_PROFILE = PROFILE.replace(duplicates="set")  # Precision, Recall: set(retrieved_ids)

_CLASSES = {"Success": "HitRate", "RR": "MRR", "P": "Precision", "R": "Recall",
            "AP": "AveragePrecision", "nDCG": "NDCG"}
_GRANULAR = {"R": "HitRate", "GranularRR": "MRR"}
_SETS = {"P", "R"}
_NEEDS_CUTOFF = {"P"}
_NO_CUTOFF = {"nDCG"}


class LlamaIndexEntry(Entry):
    library = "llama_index"
    module = "llama_index.core"
    distribution = "llama-index-core"
    extra = "rag"
    # Tolerance: plain Python floats (double) over the ids and labels as given: 1e-12
    tolerance = 1e-12

    def __init__(self, name: str, description: str, classes: dict[str, str],
                 options: dict[str, dict], sets: frozenset = frozenset()):
        self.name, self.description = name, description
        self.classes, self.options = classes, options
        self.sets = sets  # families whose metric counts a set of retrieved ids

    def _base(self, family: str) -> Conventions:
        return SET_PROFILE if family in self.sets else PROFILE

    @property
    def support(self) -> Support:
        return Support(families=frozenset(self.classes), needs_cutoff=frozenset(_NEEDS_CUTOFF),
                       no_cutoff=frozenset(_NO_CUTOFF))

    def profile(self, measure: Measure) -> Conventions:
        return self._base(measure.family)

    def default_profile(self) -> Conventions:
        return PROFILE

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        if not wanted:
            return out
        try:
            from llama_index.core.evaluation.retrieval import metrics

            expected: dict[str, list[str]] = {}
            judged: set[str] = set()
            for q, d, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                                 qrels.label.tolist()):
                judged.add(q)
                if lab >= 1:
                    expected.setdefault(q, []).append(d)
            rows: dict[str, list[tuple[str, float]]] = {}
            for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
                if q in judged:
                    rows.setdefault(q, []).append((d, s))
            ranked = {q: [d for d, _ in sorted(r, key=lambda row: -row[1])] for q, r in rows.items()}
        except Exception as exc:
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            return {**out, **{m: err for m in wanted}}
        repeated = duplicate_pair(run)
        for m in wanted:
            if self._base(m.family).duplicates == "error" and repeated is not None:
                out[m] = LibraryValues(error=(
                    f"refused by the adapter: the run lists {repeated[1]!r} twice for query "
                    f"{repeated[0]!r}; {self.classes[m.family]} counts a set of ids, which no "
                    "duplicates convention describes"))
                continue
            try:
                metric = getattr(metrics, self.classes[m.family])(**self.options.get(m.family, {}))
                per_query = {}
                for q in sorted(ranked):
                    ids = ranked[q] if m.cutoff is None else ranked[q][:m.cutoff]
                    per_query[q] = float(metric.compute(expected_ids=expected.get(q, []),
                                                        retrieved_ids=ids).score)
                out[m] = LibraryValues(per_query=per_query)
            except Exception as exc:  # the library's refusal is the result
                out[m] = LibraryValues(error=f"{type(exc).__name__}: {exc}")
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [
    LlamaIndexEntry("llama_index", "HitRate, MRR, Precision, Recall, AveragePrecision, NDCG "
                    "(linear) over each query's top k", _CLASSES, {}, frozenset(_SETS)),
    LlamaIndexEntry("llama_index:granular", "HitRate(use_granular_hit_rate=True) as recall, "
                    "MRR(use_granular_mrr=True)", _GRANULAR,
                    {"R": {"use_granular_hit_rate": True}, "GranularRR": {"use_granular_mrr": True}}),
    LlamaIndexEntry("llama_index:exponential", 'NDCG(mode="exponential")', {"nDCG": "NDCG"},
                    {"nDCG": {"mode": "exponential"}}),
]
