"""scikit-learn: ``sklearn.metrics.ndcg_score`` and ``dcg_score``, one call per query.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, the
labels of the run's documents in listing order (0 when unjudged) become ``y_true`` and the run's
scores ``y_score``, each a single row of shape (1, n). One call per query because sklearn needs
rectangular input and queries retrieve different numbers of documents (padding would add
documents); the value of a single-row call is that query's value. The library never sees judged
documents that were not retrieved, nor queries judged but not retrieved.

=======================  ============================================================
entry                    call
=======================  ============================================================
``sklearn``              ``ndcg_score(y_true, y_score, k=k)`` / ``dcg_score(..., k=k)``
``sklearn:ignore_ties``  the same with ``ignore_ties=True``
``sklearn:log_base10``   ``dcg_score(y_true, y_score, k=k, log_base=10)`` (DCG only: the
                         base cancels out of nDCG, and ``ndcg_score`` has no such parameter)
=======================  ============================================================

Measures: ``nDCG@k``, ``nDCG`` (k=None: the whole list), ``DCG@k``, ``DCG``.

Facts behind the profiles (scikit-learn 1.9.1, ``sklearn/metrics/_ranking.py``; each confirmed
live by ``tests/libs/test_sklearn.py``):

- gain: ``_dcg_sample_scores`` multiplies the discounts by ``y_true`` itself: linear gain, and a
  fractional label is used as it is;
- discount: ``1 / (log(rank + 1) / log(log_base))``, ``log_base=2`` unless given;
- ideal: ``_ndcg_sample_scores`` normalises by ``_dcg_sample_scores(y_true, y_true)``, the same
  row sorted by label: the retrieved list only;
- empty query: ``_ndcg_sample_scores`` sets nDCG to 0 where the ideal DCG is 0, and the row still
  counts in the mean (``np.average``);
- ties: by default ``_tie_averaged_dcg`` groups exactly equal float64 scores (``np.unique``) and
  gives each group its mean gain times the sum of its discounts (McSherry & Najork 2008); with
  ``ignore_ties=True`` the order is ``np.argsort(y_score)[:, ::-1]``, numpy's default
  (unstable) sort: on this machine's AVX2 build, tied documents come out in neither input nor
  reverse-input order once 4 or more tie, so the order of ties is unspecified;
- negative labels: ``ndcg_score`` raises ValueError ("should not be used on negative y_true
  values"); ``dcg_score`` has no check and uses them as negative gains;
- a one-document list raises in both (``ndcg_score``: "Computing NDCG is only meaningful when
  there is more than 1 document"; ``dcg_score``: ``type_of_target`` gives 'binary', which
  ``_check_dcg_target_type`` refuses). No axis of the vocabulary describes this yet.
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import ranked_lists
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

# Axes no nDCG/DCG value depends on (ap_denominator, k_beyond_list, rr_cutoff,
# relevance_threshold, threshold_scope) keep the vocabulary defaults.
NDCG_PROFILE = Conventions(
    # gain=linear (the default): _dcg_sample_scores: discount.dot(y_true ranked): gain = label
    # discount=log2 (the default): _dcg_sample_scores: 1 / (log(arange(n) + 2) / log(2))
    ideal="retrieved",  # _ndcg_sample_scores: normalizing_gain = _dcg_sample_scores(y_true, y_true)
    # empty_query=zero (the default): _ndcg_sample_scores: gain[all_irrelevant] = 0; np.average keeps the row
    ties="average",  # _tie_averaged_dcg (ignore_ties=False, the default)
    negative_labels="raise",  # ndcg_score: `if y_true.min() < 0: raise ValueError`
    # label_type=float (the default): live: y_true [[0.5, 1.5]] is 'continuous-multioutput', scored as is
    # query_set=run (the default): the adapter's translation (_listwise): queries in both run and qrels
    # depth=none (the default): the whole row is scored
    # score_precision=float64 (the default): check_array keeps float64; ties are exact float64 equality
    # rank_source=score (the default): only y_score orders the row
    # live: ndcg_score refuses a one-column row ("only meaningful when there is more than 1
    # document"), dcg_score too ("Only ... formats are supported. Got binary instead")
    single_document="raise",
    duplicates="keep",  # _listwise passes every listing: the library sees scores, not docids
)
DCG_PROFILE = NDCG_PROFILE.replace(
    negative_labels="keep",  # dcg_score: no sign check; live: y_true [[-1, 2]] tied gives 0.81546
)
# DCG has no 0/0: a query without relevant documents scores sum(0 * discount) = 0, which is
# what empty_query=zero gives for the reference's "ideal DCG is 0" case.


class SklearnEntry(Entry):
    library = "sklearn"
    module = "sklearn"
    distribution = "scikit-learn"
    # Tolerance: scikit-learn computes in float64 from the labels and scores as given: double
    # arithmetic alone, 1e-12
    tolerance = 1e-12

    def __init__(self, name: str, description: str, *, ignore_ties: bool = False,
                 log_base: float | None = None, families: tuple[str, ...] = ("nDCG", "DCG")):
        self.name = name
        self.description = description
        self.ignore_ties = ignore_ties
        self.log_base = log_base  # None: the library default (2), not passed
        self.families = families

    def _base_profile(self, family: str) -> Conventions:
        conv = NDCG_PROFILE if family == "nDCG" else DCG_PROFILE
        if self.ignore_ties:
            # np.argsort(y_score)[:, ::-1] with numpy's default unstable sort: live, ties of 4+
            # documents come out in a platform-dependent order (AVX2 x86-simd-sort here)
            conv = conv.replace(ties="unspecified")
        if self.log_base is not None:
            # _dcg_sample_scores: 1 / (log(rank + 1) / log(log_base))
            conv = conv.replace(discount=f"log:{self.log_base:g}")
        return conv

    # a name that fixes an axis (nDCG(gain=exponential)) is computable only if it agrees
    @property
    def support(self) -> Support:
        return Support(families=frozenset(self.families))

    def profile(self, measure: Measure) -> Conventions:
        return self._base_profile(measure.family)

    def default_profile(self) -> Conventions:
        return self._base_profile(self.families[0])

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        from sklearn.metrics import dcg_score, ndcg_score

        per_query: dict[str, float] = {}
        for item in ranked_lists(qrels, run):
            y_true, y_score = item.labels[None, :], item.scores[None, :]
            kwargs = {"k": measure.cutoff}
            if self.ignore_ties:
                kwargs["ignore_ties"] = True
            if measure.family == "nDCG":
                value = ndcg_score(y_true, y_score, **kwargs)
            else:
                if self.log_base is not None:
                    kwargs["log_base"] = self.log_base
                value = dcg_score(y_true, y_score, **kwargs)
            per_query[item.qid] = float(value)
        return LibraryValues(per_query=per_query)


ENTRIES: list[Entry] = [
    SklearnEntry("sklearn", "ndcg_score / dcg_score with their defaults (ties averaged)"),
    SklearnEntry("sklearn:ignore_ties", "ndcg_score / dcg_score with ignore_ties=True",
                 ignore_ties=True),
    SklearnEntry("sklearn:log_base10", "dcg_score with log_base=10", log_base=10,
                 families=("DCG",)),
]
