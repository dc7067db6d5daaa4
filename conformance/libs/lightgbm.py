"""LightGBM: the native ``ndcg`` metric evaluated on given scores, without training.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, the
labels of the run's documents in listing order (0 when unjudged) and the run's scores. The call,
the one LightGBM users make to evaluate a fixed ranking with the library's own metric::

    params = {"objective": "none", "metric": "ndcg", "eval_at": [k], "num_threads": 1,
              "verbose": -1}            # plus "label_gain": [...] for lightgbm:linear_gain
    ds = lightgbm.Dataset(zeros((n, 1)), label=labels, group=[n], init_score=scores,
                          params=params)
    lightgbm.Booster(params, ds).eval_train()   # zero boosting rounds: predictions = init_score

One call per query gives that query's value; one more call over every query (``group`` = the
list lengths) gives LightGBM's own mean, reported as ``LibraryValues.mean`` (the tests check it
equals the mean of the per-query values).

Isolation. ``label_gain`` lives in process-global state (``DCGCalculator::label_gain_``, a static
set by every ``NDCGMetric`` constructor): a second Booster built with another ``label_gain``
silently changes the gains a Booster already built uses at its next ``eval_train`` (live: labels
[2, 0, 3], scores [3, 2, 1], ndcg@2 is 0.33735 with the default gains, and 0.22490 after a
linear-gain Booster was built in the same process). So each entry declares ``own_process``:
its calls run in a persistent worker process of its own (``conformance.isolation``, keyed by
the entry's name), which only ever holds one ``label_gain``. LightGBM prints its fatal errors
on stdout and stderr, which a worker discards; the same text is in the exception it raises,
which is what we record.

Facts behind the profile (LightGBM 4.7.0, ``src/metric/rank_metric.hpp`` ``NDCGMetric`` and
``src/metric/dcg_calculator.cpp``; each confirmed live by ``tests/libs/test_lightgbm.py``):

- gain: ``label_gain[label]``; default ``DefaultLabelGain`` 2^i - 1 for i = 0..30 (exponential);
  ``lightgbm:linear_gain`` passes [0, 1, ..., 30] (linear, same length so the same labels are
  accepted). A label >= len(label_gain) raises ("Label 31 is not less than the number of label
  mappings (31)"): no axis describes that bound; our cases use labels 0..4;
- discount: ``discount_[i] = 1 / log2(2 + i)``;
- ideal: ``CalMaxDCG`` from the labels of the group itself (the list), cut at min(k, n);
- k beyond the list: ``CalDCG``/``CalMaxDCG`` cut k to n, so nDCG@k = nDCG@n;
- empty query: ``NDCGMetric::Eval`` scores a group whose max DCG is <= 0 as 1, counted in the
  mean ("if all doc in this query are all negative, let its NDCG=1");
- ties: ``CalDCG`` uses ``std::stable_sort`` on score descending: input order;
- scores are ``double`` (``init_score``): float64;
- labels: ``CheckLabel`` raises on non-integer labels ("label should be int type") and on
  negative ones ("Label should be non-negative"). Labels are float32 inside LightGBM, so a label
  within float32 rounding of an integer (1 + 1e-9) passes as that integer.
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import ranked_lists
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

# Axes no nDCG value depends on (ap_denominator, k_beyond_list, rr_cutoff, relevance_threshold,
# threshold_scope) keep the vocabulary defaults.
PROFILE = Conventions(
    gain="exponential",  # DCGCalculator::DefaultLabelGain: label_gain[i] = (1 << i) - 1, i < 31
    # discount=log2 (the default): DCGCalculator::Init: discount_[i] = 1.0 / std::log2(2.0 + i)
    ideal="retrieved",  # NDCGMetric::Init: CalMaxDCG over the group's own labels
    empty_query="one",  # NDCGMetric::Eval: inverse_max_dcgs_[i][0] <= 0 -> result += 1
    ties="input_order",  # DCGCalculator::CalDCG: std::stable_sort by score descending
    negative_labels="raise",  # DCGCalculator::CheckLabel: Log::Fatal "Label should be non-negative"
    label_type="raise",  # DCGCalculator::CheckLabel: Log::Fatal "label should be int type"
    # query_set=run (the default): the adapter's translation (_listwise): queries in both run and qrels
    # depth=none (the default): the whole group is scored
    # score_precision=float64 (the default): init_score and the metric's scores are double
    # rank_source=score (the default)
    duplicates="keep",  # _listwise passes every listing: the library sees scores, not docids
)
LINEAR_PROFILE = PROFILE.replace(
    gain="linear",  # label_gain=[0, 1, ..., 30]: gain = label for every label LightGBM accepts
)
_TABLE_LENGTH = 31  # DefaultLabelGain's length: labels 0..30
_LINEAR_GAIN = list(range(_TABLE_LENGTH))  # as long as the default table, so the same labels are accepted


class LightGBMEntry(Entry):
    library = "lightgbm"
    module = "lightgbm"
    distribution = "lightgbm"
    # Tolerance: LightGBM's DCGCalculator computes in double; its labels are integers
    # (label_type=raise), exact in its float32 label array, and the float32 scores only order
    # the documents (score_precision): double arithmetic alone, 1e-12
    tolerance = 1e-12
    own_process = True  # label_gain is process-global (see "Isolation")

    def __init__(self, name: str, description: str, label_gain: list[float] | None,
                 profile: Conventions):
        self.name = name
        self.description = description
        self.label_gain = label_gain  # None: LightGBM's default table, not passed
        self._profile = profile

    # eval_at needs a cutoff; LightGBM has no whole-list nDCG
    support = Support(families=frozenset({"nDCG"}), cutoff="required")

    def profile(self, measure: Measure) -> Conventions:
        return self._profile

    def default_profile(self) -> Conventions:
        return self._profile

    # LightGBM raises on a label beyond its gain table; no generated label is above 4
    known_failure_shows = frozenset({"raises"})
    known_failure_ceiling = {"*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """LightGBM refuses a label at or above the length of its gain table (31 entries, by
        default and in our linear table): "Label 31 is not less than the number of label
        mappings (31)". No convention describes a bound on labels, so it is declared here and
        the library is still called (it raises by itself)."""
        top = max((float(x.labels.max()) for x in ranked_lists(qrels, run) if x.labels.size),
                  default=0.0)
        if top >= _TABLE_LENGTH:
            return f"LightGBM accepts labels below {_TABLE_LENGTH} (its label_gain table's length)"
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        lists = ranked_lists(qrels, run)
        if not lists:
            return LibraryValues()
        import lightgbm

        groups = [(x.labels, x.scores) for x in lists]
        values = [_native_ndcg(lightgbm, measure.cutoff, [g], self.label_gain) for g in groups]
        mean = _native_ndcg(lightgbm, measure.cutoff, groups, self.label_gain)
        return LibraryValues(per_query={x.qid: v for x, v in zip(lists, values)}, mean=mean)


ENTRIES: list[Entry] = [
    LightGBMEntry("lightgbm", "native ndcg metric, default label_gain (2^i - 1)", None, PROFILE),
    LightGBMEntry("lightgbm:linear_gain", "native ndcg metric, label_gain=[0, 1, 2, ...]",
                  _LINEAR_GAIN, LINEAR_PROFILE),
]


def _native_ndcg(lightgbm, k: int, groups, label_gain) -> float:
    """LightGBM's ndcg@k over the given groups (its mean over them when there are several)."""
    labels = np.concatenate([g[0] for g in groups])
    scores = np.concatenate([g[1] for g in groups])
    params = {"objective": "none", "metric": "ndcg", "eval_at": [k], "num_threads": 1,
              "verbose": -1}
    if label_gain is not None:
        params["label_gain"] = label_gain
    ds = lightgbm.Dataset(np.zeros((labels.size, 1)), label=labels,
                          group=[len(g[0]) for g in groups], init_score=scores, params=params)
    booster = lightgbm.Booster(params=params, train_set=ds)
    results = booster.eval_train()  # [(data name, metric name, value, higher is better, ...)]
    (result,) = results
    if result[1] != f"ndcg@{k}":
        raise RuntimeError(f"LightGBM returned {result[1]!r}, expected ndcg@{k}")
    return float(result[2])
