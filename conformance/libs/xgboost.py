"""XGBoost: the native ``ndcg`` metrics evaluated on given scores, without training.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, the
labels of the run's documents in listing order (0 when unjudged) and the run's scores. The call,
the one XGBoost users make to evaluate a fixed ranking with the library's own metric::

    dm = xgboost.DMatrix(zeros((n, 1)), label=labels, base_margin=scores)
    dm.set_group([n])
    params = {"objective": "rank:ndcg", "eval_metric": "ndcg@k", "nthread": 1}
                                        # plus "ndcg_exp_gain": False for xgboost:linear_gain
    xgboost.Booster(params, [dm]).eval(dm)   # untrained: predictions = base_margin

and the value is read from the text ``[0]\teval-ndcg@k:0.69569404438130744`` (17 significant
digits: the double itself). One DMatrix per query gives per-query values; one more over every
query (``set_group`` with the list lengths) gives XGBoost's own mean (``LibraryValues.mean``).

=======================  ===================  =====================================
entry                    eval_metric          measure
=======================  ===================  =====================================
``xgboost``              ``ndcg@k``           nDCG@k, exponential gain (default)
``xgboost:ndcg-``        ``ndcg@k-``          nDCG@k, a query without relevance is 0
``xgboost:linear_gain``  ``ndcg@k``           nDCG@k with ``ndcg_exp_gain=False``
``xgboost:plain_ndcg``   ``ndcg``             nDCG@32 only: plain ``ndcg`` is not the
                                              whole list but the top 32
=======================  ===================  =====================================

Facts behind the profiles (XGBoost 3.2.0: ``src/metric/rank_metric.cc`` ``EvalNDCG``,
``src/common/ranking_utils.{h,cc}`` ``NDCGCache``, ``LambdaRankParam``; each confirmed live by
``tests/libs/test_xgboost.py``):

- gain: ``CalcDCGGain`` = 2^label - 1 when ``ndcg_exp_gain`` (default true), else the label;
  before 3.0.3 ``EvalNDCG`` did not read ``ndcg_exp_gain`` at all (fixed by dmlc/xgboost#11534,
  backported to 3.0.3), so ``ndcg_exp_gain=False`` changed nothing in the metric;
- discount: ``CalcDCGDiscount(i) = 1 / log2(i + 2)``;
- ideal: ``NDCGCache::InitOnCPU`` sorts the group's own labels: the list;
- cutoff: ``n = min(list length, TopK())``; plain ``ndcg`` has no ``@k``, and ``TopK()`` is then
  ``LambdaRankParam::DefaultK()`` = 32 (pair method ``topk`` is the default);
- empty query: ``inv_idcg <= 0`` -> 1, or 0 with the ``-`` suffix (``CalcInvIDCG`` gives 0 for an
  ideal DCG of 0, and a negative inverse for a negative ideal DCG, which only linear gain with
  negative labels can produce: XGBoost then also scores 1 / 0, unlike the reference);
- ties: ``common::ArgSort`` is a ``StableSort`` on score descending: input order;
- precision: labels and predictions (``base_margin``) are float32, so near-equal scores tie;
- labels: with exponential gain ``CheckNDCGLabels`` raises on negative or non-integer labels
  ("label must be either 0 or positive integer") and on labels above 31; linear gain checks
  nothing (negative gains are used as they are, fractional labels as float32 numbers).
"""

from __future__ import annotations

import functools

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import parse_version, ranked_lists
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

# Axes no nDCG value depends on (ap_denominator, k_beyond_list, rr_cutoff, relevance_threshold,
# threshold_scope) keep the vocabulary defaults.
PROFILE = Conventions(
    gain="exponential",  # ranking_utils.h CalcDCGGain: (1u << label) - 1 (ndcg_exp_gain default true)
    # discount=log2 (the default): ranking_utils.h CalcDCGDiscount: 1.0 / std::log2(idx + 2.0)
    ideal="retrieved",  # NDCGCache::InitOnCPU: idcg from the group's own labels sorted descending
    empty_query="one",  # EvalNDCG::Eval: inv_idcg <= 0.0 -> minus_ ? 0.0 : 1.0
    ties="input_order",  # common::ArgSort -> StableSort with std::greater<>
    negative_labels="raise",  # CheckNDCGLabels (exp gain): "label must be either 0 or positive integer"
    label_type="raise",  # CheckNDCGLabels (exp gain): |floor(v) - v| > 1e-6 refused
    # query_set=run (the default): the adapter's translation (_listwise): queries in both run and qrels
    # depth=none (the default): the cutoff is the measure's k; nothing else cuts the list
    score_precision="float32",  # base_margin and predictions are float32 (HostDeviceVector<float>)
    # rank_source=score (the default)
    duplicates="keep",  # _listwise passes every listing: the library sees scores, not docids
)
MINUS_PROFILE = PROFILE.replace(
    empty_query="zero",  # EvalNDCG::Eval: the "-" suffix sets minus_, so inv_idcg <= 0 -> 0
)
LINEAR_PROFILE = PROFILE.replace(
    gain="linear",  # EvalNDCG::Eval (ndcg_exp_gain=false): ndcg += discount * label * inv_idcg
    negative_labels="keep",  # CheckNDCGLabels checks nothing without exp gain; label used as gain
    # no integer check without exp gain; the label, stored as float32 (MetaInfo::labels,
    # HostDeviceVector<float>), is the gain
    label_type="float32",
)
# EvalNDCG::Configure reads ndcg_exp_gain only from 3.0.3 on (dmlc/xgboost#11534).
EXP_GAIN_PARAM_SINCE = (3, 0, 3)


class XGBoostEntry(Entry):
    library = "xgboost"
    module = "xgboost"
    distribution = "xgboost-cpu"
    # Tolerance: XGBoost evaluates in double (ranking_utils.h: double discounts, gains and sums)
    # from labels and scores read as float32. The scores only order the documents (their float32
    # ties are the profile's score_precision); a label enters the value. Under exponential gain
    # every label is an integer (label_type=raise), exact in float32 up to 2^24, so the value is
    # double arithmetic alone: 1e-12, as XGBoost's own tests assert (measured on the fuzz: gaps
    # up to 2.2e-16). Under linear gain a fractional label is the float32 number nearest it,
    # which the profile says (label_type=float32), so the value is again double arithmetic:
    # 1e-12. (The earlier tolerance of 2 * 2^-24 held only while the two sums of nDCG do not
    # cancel: labels 0.3, 0.3, 0.5, 0.5, -2, -1, 0 give nDCG@20 = -3.1544548 with a gap of 4.2e-7
    # from float64 labels, and 5e-15 from float32 ones; found by the long fuzz.)
    tolerance = 1e-12

    def __init__(self, name: str, description: str, *, minus: bool = False,
                 exp_gain: bool = True, plain: bool = False):
        self.name = name
        self.description = description
        self.minus = minus
        self.exp_gain = exp_gain
        self.plain = plain

    def version(self) -> str | None:
        return _installed_version()

    def _profile(self, version: str | None = None) -> Conventions:
        """The profile for XGBoost ``version`` (the installed one by default)."""
        conv = MINUS_PROFILE if self.minus else PROFILE
        honoured = parse_version(version or self.version()) >= EXP_GAIN_PARAM_SINCE
        if not self.exp_gain and honoured:
            conv = LINEAR_PROFILE
        return conv

    @property
    def support(self) -> Support:
        if self.plain:  # plain ndcg is ndcg@LambdaRankParam::DefaultK()
            return Support(families=frozenset({"nDCG"}), cutoffs=frozenset({32}))
        return Support(families=frozenset({"nDCG"}), cutoff="required")

    def profile(self, measure: Measure) -> Conventions:
        return self._profile()

    def default_profile(self) -> Conventions:
        return self._profile()

    def metric_name(self, measure: Measure) -> str:
        name = "ndcg" if self.plain else f"ndcg@{measure.cutoff}"
        return name + ("-" if self.minus else "")

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        import xgboost

        lists = ranked_lists(qrels, run)
        if not lists:
            return LibraryValues()
        metric = self.metric_name(measure)
        groups = [(x.labels, x.scores) for x in lists]
        per_query = {
            x.qid: self._native(xgboost, metric, [g]) for x, g in zip(lists, groups)
        }
        return LibraryValues(per_query=per_query, mean=self._native(xgboost, metric, groups))

    def _native(self, xgboost, metric: str, groups) -> float:
        labels = np.concatenate([g[0] for g in groups])
        scores = np.concatenate([g[1] for g in groups])
        # nthread=1: the default thread pool costs ~40 ms CPU per tiny DMatrix (measured), more
        # than the evaluation itself
        dm = xgboost.DMatrix(np.zeros((labels.size, 1)), label=labels, base_margin=scores,
                             nthread=1)
        dm.set_group([len(g[0]) for g in groups])
        params = {"objective": "rank:ndcg", "eval_metric": metric, "nthread": 1}
        if not self.exp_gain:
            params["ndcg_exp_gain"] = False
        text = xgboost.Booster(params, [dm]).eval(dm, name="eval")
        # "[0]\teval-ndcg@3:0.69569404438130744"
        for field in text.split("\t")[1:]:
            key, _, value = field.rpartition(":")
            if key == f"eval-{metric}":
                return float(value)
        raise RuntimeError(f"XGBoost's evaluation {text!r} has no eval-{metric}")


@functools.lru_cache(maxsize=1)
def _installed_version() -> str | None:
    # the package is published as xgboost-cpu (no CUDA) or xgboost; either is the library.
    # Cached: every supports()/profile() call reads it, and a metadata lookup costs ~4 ms.
    import importlib.metadata

    for dist in ("xgboost-cpu", "xgboost"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


ENTRIES: list[Entry] = [
    XGBoostEntry("xgboost", "native ndcg@k metric, exponential gain (default)"),
    XGBoostEntry("xgboost:ndcg-", "native ndcg@k- metric: a query without relevance scores 0",
                 minus=True),
    XGBoostEntry("xgboost:linear_gain", "native ndcg@k metric with ndcg_exp_gain=False",
                 exp_gain=False),
    XGBoostEntry("xgboost:plain_ndcg", "native plain ndcg metric, which is nDCG@32", plain=True),
]
