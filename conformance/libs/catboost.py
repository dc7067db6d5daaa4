"""CatBoost: its ranking metrics evaluated on given scores, through ``catboost.utils.eval_metric``.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, the
labels of the run's documents in listing order (0 when unjudged) and the run's scores, as one
group. The call, the one CatBoost users make to score fixed predictions with the library's own
metrics::

    catboost.utils.eval_metric(labels, scores, "NDCG:top=k", group_id=[0] * n, thread_count=1)

``eval_metric`` returns one number, the mean over the groups it is given (each group weighing 1,
no ``group_weight`` being passed). So one call per query gives that query's value, and one more
call over every query (contiguous group ids, one per query) gives CatBoost's own mean, reported
as ``LibraryValues.mean`` (the tests check it equals the mean of the per-query values), as the
LightGBM and XGBoost entries do.

==============  =================================  ======================================
measure         metric string                      entries
==============  =================================  ======================================
nDCG(@k)        ``NDCG`` (``:top=k``)              ``catboost`` (``type=Base``, the
                                                   default); ``catboost:exp``
                                                   (``type=Exp``); ``catboost:position``
                                                   (``denominator=Position``)
DCG(@k)         ``DCG`` (``:top=k``)               as nDCG
AP(@k)          ``MAP`` (``:top=k``)               ``catboost``
RR(@k)          ``MRR`` (``:top=k``)               ``catboost``
P@k, SetP       ``PrecisionAt`` (``:top=k``)       ``catboost``
R(@k)           ``RecallAt`` (``:top=k``)          ``catboost``
==============  =================================  ======================================

Without a cutoff no ``top`` is passed: its default -1 is the whole group. A relevance threshold
L other than 1 is passed as ``border=L - 0.5`` (the binary metrics' ``border``, default 0.5).

Not supported, and why:

- ``PFound`` (a cascade over the raw labels with decay 0.85), ``ERR`` (the raw label as the
  probability of relevance: labels [2, 0, 3, 1] give 1.5), ``FilteredDCG``, ``AverageGain`` and
  ``QueryAUC``: the reference has no family that computes them;
- labels between border and L (for L = 1: 0.5 < label < 1) in the binary metrics: CatBoost
  counts a document relevant when its label is above the border (``label > 0.5``), the
  reference when it reaches an integer L (``label >= 1``); no convention says "above 0.5", so
  such a case is refused (``known_failure``) rather than explained by a wrong threshold.
  Smallest case: label 0.7 with score 1, PrecisionAt:top=1 = 1, reference P@1 = 0
  (threshold 1) or 1 (threshold 0, which also counts a label of 0.3).

Facts behind the profile (CatBoost 1.2.10, ``catboost/libs/metrics/dcg.cpp``,
``doc_comparator.h``, ``precision_recall_at_k.cpp``, ``metric.cpp``; each confirmed live by
``tests/libs/test_catboost.py``):

- gain: ``type=Base`` (the default) uses the label itself, ``type=Exp`` 2^label - 1
  (``CalcDcgSorted``); discount ``1 / log2(i + 2)`` (``denominator=LogPosition``, the default),
  ``1 / (i + 1)`` with ``denominator=Position`` (``FillDcgDecay``; i from 0): 1 / rank
  (``discount=reciprocal``, in the list and in the ideal). Live: labels [0, 1], scores [2, 1]:
  NDCG:denominator=Position = (1/2) / 1 = 0.5, where the log2 discount gives 1/log2(3);
- ideal: ``CalcIDcg`` sorts the group's own labels (ideal=retrieved), cut at min(top, n); an
  ideal DCG <= 0 (no positive label, or negative labels outweighing the positive) gives nDCG 1
  (``CalcNdcg``: ``idcg > 0 ? dcg / idcg : 1``), counted in the mean;
- negative labels are gains like any other, in the list and in the ideal (labels [-1, 2, 0]:
  DCG = -1 + 2/log2(3));
- labels are float32 (``TConstArrayRef<float> target``): 0.3 is read as 0.30000001192092896;
- relevance in MAP, MRR, PrecisionAt, RecallAt: ``label > border``, border 0.5 by default;
- ties: ``CompareDocs`` orders by score descending, then by label *ascending*: relevant documents
  last among equal scores (ties=pessimistic), in every metric;
- scores are double (``TConstArrayRef<double> approx``): 1 and 1 + 1e-12 do not tie;
- PrecisionAt: relevant in the top min(top, n) / min(top, n) (k_beyond_list=min_k_n); without
  ``top``, the whole group;
- RecallAt: relevant in the top / relevant in the group, and 1 when the group has none;
- MAP: the sum of precisions at relevant ranks within top / min(relevant in the group, top)
  (ap_denominator=min_k_relevant over the group's own relevant documents); 0 without any;
- MRR: 1 / the rank of the first relevant document within top, 0 past it (rr_cutoff=honour) and
  0 when the group has none;
- the mean over groups is their arithmetic mean.
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import ranked_lists
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="linear",  # dcg.cpp CalcDcgSorted: type=Base (the default) uses the target itself
    # discount=log2 (the default): dcg.cpp FillDcgDecay, LogPosition: 1 / Log2(i + 2)
    ideal="retrieved",  # dcg.cpp CalcIDcg: the group's own targets sorted descending
    k_beyond_list="min_k_n",  # precision_recall_at_k.cpp CalcSampleSize: min(top, n) is divided by
    ap_denominator="min_k_relevant",  # CalcAveragePrecisionK: score / Min(hits, size)
    # empty_query=zero (the default) for DCG, AP, RR and P: no relevant document scores 0;
    # nDCG and R score 1 (EMPTY_ONE below)
    ties="pessimistic",  # doc_comparator.h CompareDocs: equal approx -> targetLeft < targetRight
    # relevance_threshold=1 (the default): border 0.5, target > border (integer labels: >= 1)
    # threshold_scope=binary (the default): NDCG and DCG take no border, every label is a gain
    negative_labels="keep",  # CalcDcgSorted: a negative target is a negative gain, in the ideal too
    label_type="float32",  # targets are TConstArrayRef<float>
    # negative_ideal=empty (the default): CalcNdcg: idcg > 0 ? dcg / idcg : 1
    # query_set=run (the default): the adapter's translation (_listwise)
    # score_precision=float64 (the default): approx is TConstArrayRef<double>
    # rr_cutoff=honour (the default): MRR:top=k is 0 past rank k (live)
    duplicates="keep",  # _listwise passes every listing: the library sees scores, not docids
)
# empty_query=one: for nDCG and R, CalcNdcg returns idcg > 0 ? dcg / idcg : 1 and
# CalcRecallAtK relevant != 0 ? ... : 1, so a group with nothing relevant scores 1 (live)
EMPTY_ONE = frozenset({"nDCG", "R"})
EXP_PROFILE = PROFILE.replace(
    gain="exponential",  # dcg.cpp CalcDcgSorted, type=Exp: pow(2, target) - 1
)
POSITION_PROFILE = PROFILE.replace(
    discount="reciprocal",  # dcg.cpp FillDcgDecay, denominator=Position: 1 / (i + 1), i from 0
)

_METRICS = {  # family -> CatBoost's metric name
    "nDCG": "NDCG", "DCG": "DCG", "AP": "MAP", "RR": "MRR", "P": "PrecisionAt", "R": "RecallAt",
}
_GRADED = frozenset({"nDCG", "DCG"})  # take type, no border
_BORDER = 0.5  # the binary metrics' default border: relevant when label > 0.5


class CatBoostEntry(Entry):
    library = "catboost"
    module = "catboost"
    distribution = "catboost"
    # Tolerance: CatBoost sums in double from float32 labels, which the profile reads as float32
    # (label_type), and double scores: double arithmetic alone
    tolerance = 1e-12

    def __init__(self, name: str, description: str, ndcg_type: str, profile: Conventions,
                 families: frozenset, denominator: str = "LogPosition"):
        self.name = name
        self.description = description
        self.ndcg_type = ndcg_type  # "Base" (CatBoost's default, not passed) or "Exp"
        self.denominator = denominator  # "LogPosition" (CatBoost's default, not passed) or "Position"
        self._profile = profile
        self.support = Support(families=families, free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        if measure.family in EMPTY_ONE:
            return self._profile.replace(empty_query="one")
        return self._profile

    def default_profile(self) -> Conventions:
        return self.profile(Measure("nDCG", 10))

    def free_axes(self, measure: Measure) -> frozenset:
        # the threshold is the binary metrics' border; NDCG and DCG take none
        return frozenset() if measure.family in _GRADED else self.support.free_axes

    def _border(self, measure: Measure) -> float:
        """The ``border`` for the measure's threshold L: label > L - 0.5 is label >= L on
        integer labels (0.5, CatBoost's default, for L = 1)."""
        return float(measure.conventions(self._profile).relevance_threshold) - _BORDER

    def metric(self, measure: Measure) -> str:
        params = []
        if measure.cutoff is not None:
            params.append(f"top={measure.cutoff}")
        if measure.family in _GRADED:
            if self.ndcg_type != "Base":
                params.append(f"type={self.ndcg_type}")
            if self.denominator != "LogPosition":
                params.append(f"denominator={self.denominator}")
        elif self._border(measure) != _BORDER:
            params.append(f"border={self._border(measure)!r}")
        name = _METRICS[measure.family]
        return name + (":" + ";".join(params) if params else "")

    # A label between the border and the threshold: no convention describes "label > 0.5"
    known_failure_shows = frozenset({"wrong_values"})
    known_failure_ceiling = {"*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """A binary measure on a list holding a label (as float32) strictly between the border
        and the threshold L: CatBoost counts it relevant (label > L - 0.5), the reference does
        not (label >= L), and no convention says "above L - 0.5". Smallest case: label 0.7,
        PrecisionAt:top=1 = 1, reference P@1 = 0."""
        if measure is None or measure.family in _GRADED or measure.family not in _METRICS:
            return None
        border = self._border(measure)
        threshold = border + _BORDER
        for x in ranked_lists(qrels, run):
            labels = x.labels.astype(np.float32)
            between = labels[(labels > border) & (labels < threshold)]
            if between.size:
                return (f"refused by the adapter: label {float(between[0])!r} of query {x.qid!r} "
                        f"is above CatBoost's border {border!r} and below the threshold "
                        f"{threshold:g}: no convention says relevance is label > {border!r}")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        lists = ranked_lists(qrels, run)
        if not lists:
            return LibraryValues()
        from catboost.utils import eval_metric

        metric = self.metric(measure)
        groups = [(x.labels, x.scores) for x in lists]
        per_query = {x.qid: _native(eval_metric, metric, [g]) for x, g in zip(lists, groups)}
        return LibraryValues(per_query=per_query, mean=_native(eval_metric, metric, groups))


def _native(eval_metric, metric: str, groups) -> float:
    """CatBoost's ``metric`` over the given groups (its mean over them when there are several)."""
    labels = np.concatenate([g[0] for g in groups])
    scores = np.concatenate([g[1] for g in groups])
    group_id = np.repeat(np.arange(len(groups)), [len(g[0]) for g in groups])
    (value,) = eval_metric(labels, scores, metric, group_id=group_id, thread_count=1)
    return float(value)


ENTRIES: list[Entry] = [
    CatBoostEntry("catboost", "eval_metric's NDCG, DCG (type=Base), MAP, MRR, PrecisionAt, "
                  "RecallAt on query groups (border 0.5)", "Base", PROFILE,
                  frozenset(_METRICS)),
    CatBoostEntry("catboost:exp", "eval_metric's NDCG and DCG with type=Exp (2^label - 1)",
                  "Exp", EXP_PROFILE, _GRADED),
    CatBoostEntry("catboost:position", "eval_metric's NDCG and DCG with denominator=Position "
                  "(1 / rank)", "Base", POSITION_PROFILE, _GRADED, denominator="Position"),
]
