"""keras-rs (optional extra): the ranking metrics of ``keras_rs.metrics`` on Keras 3's torch backend.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, its
retrieved documents' labels (0 when unjudged) as ``y_true`` and the run's scores as ``y_pred``,
one list at a time, for the per-query values::

    metric = keras_rs.metrics.NDCG(k=k, seed=0)   # shuffle_ties=True, dtype float32: the defaults
    metric.update_state(y_true[None, :], y_pred[None, :]);  metric.result()

(a fresh metric for each list, its shuffle seeded 0, so that the same input always gives the
same output: ties are still ordered by the shuffle, which the profile's ``ties=unspecified``
covers, but ``conformance run`` prints the same numbers every time);

and every list at once, padded with the label -1 (the library's padding: ``labels >= 0`` is its
mask), for the library's own mean. Keras reads its backend from ``KERAS_BACKEND`` when first
imported; the adapter sets it to ``torch`` unless it is already set (torch is the CPU backend
the package installs; TensorFlow and JAX are not needed).

==================  =========================================================
measure             class (``k=None`` without a cutoff: the whole list)
==================  =========================================================
nDCG(@k)            ``NDCG(k)``
AP(@k)              ``MeanAveragePrecision(k)``
RR(@k)              ``MeanReciprocalRank(k)``
P(@k)               ``PrecisionAtK(k)``
R(@k)               ``RecallAtK(k)``
==================  =========================================================

``DCG(k)`` is not offered: its values are unbounded float32 sums, whose error is relative to the
sum (live: 427.38134765625 for 427.38135155 on scikit-learn's docstring case), and the run
engine compares values within an absolute tolerance (``conformance.explain.matches``), so
every large DCG would be reported as an unexplained finding.

Facts behind the profile (keras-rs 0.4.0, keras 3.15.1, torch backend; ``keras_rs/src/metrics/``;
each confirmed live by ``tests/libs/test_keras_rs.py``):

- float32: the metrics' dtype is ``keras.backend.floatx()``, float32; ``update_state`` casts
  labels and scores to it (``score_precision=float32``, tolerance 1e-6, float32 sums);
- ties: ``sort_by_scores`` shuffles the list at random before ``top_k`` (``shuffle_ties=True``,
  the default), so tied documents come in any order (``ties=unspecified``; live: labels [0, 1]
  tied give MRR@1 0.0 or 1.0 from call to call);
- nDCG: ``default_gain_fn`` 2^y - 1 (``gain=exponential``), ``default_rank_discount_fn``
  1 / log2(rank + 1); the ideal sorts the list's own gains (``ideal=retrieved``), cut at k;
  live: labels [0, 1, 2, 0] scored 4, 3, 2, 1: nDCG@2 = (1/log2 3) / (3 + 1/log2 3) = 0.17377;
- binary metrics call a document relevant when ``y >= 1`` (``relevance_threshold=1``: a label
  of 0.5 is not relevant, 1.5 is);
- P@k: relevant in the top k / min(k, the list's valid length) (``k_beyond_list=min_k_n``;
  live: 2 relevant of 4, P@10 = 0.5); R@k and AP@k divide by the relevant documents of the whole
  list, cut or not (``ideal=retrieved`` with ``ap_denominator=relevant``; live: labels
  [0, 1, 2, 0], AP@2 = (1/2) / 2 = 0.25); RR@k only looks at the top k;
- a list without a relevant document scores 0 (``divide_no_nan``) and counts in the mean with
  the average list weight, 1 for unweighted lists (``get_list_weights``): ``empty_query=zero``;
- a label below 0 is padding (``valid_mask = y_true >= 0``): the document is taken out of the
  list (its score set below the list's minimum, its label to 0, and P's valid length shrinks;
  live: labels [-1, 1, 0] scored 3, 2, 1 give P@3 0.5 and RR 1.0). No axis says that, so the
  entry refuses a negative label in a list (``negative_labels=raise``);
- a document listed twice is two entries of ``y_true`` (``duplicates=keep``).

Findings:

- padding can outrank a real document: ``update_state`` sets a padded entry's score to
  ``min(y_pred) - keras.config.epsilon()`` (1e-7) in float32, which rounds back to the row's
  minimum once that is 2 or more in magnitude, and torch's ``topk`` does not keep the order the
  shuffle gives tied entries (padding last): live, labels [0, 0, 0, 1, 0, -1] scored
  [0, 0, 0, -2, 0, 0] give ``NDCG()`` 0.38685 (1/log2 6, the relevant document fifth) or
  0.35621 (1/log2 7: sixth, behind the padding) from call to call. The adapter pads its batch
  (for the mean) with a score well below every real one, where no tie can form;
- with ``shuffle_ties=False`` on the torch backend, ``sort_by_scores`` subtracts 1e-6 times
  each document's position from its score before ``top_k`` (a "stable offset" for torch's
  unstable ``topk``), which reorders distinct scores closer than that, against the
  documentation's "sorting in descending order" (so no entry runs it): live, labels [0, 1]
  scored [1.0, 1.0000005] give ``MeanReciprocalRank(k=1, shuffle_ties=False)`` 0.0, where the
  higher score is the relevant document (1.0 with the default shuffle).
"""

from __future__ import annotations

import os

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import ranked_lists
from conformance.libs.base import Entry, ImportStatus, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="exponential",  # ndcg.py: default_gain_fn = 2^y - 1 (nDCG only)
    # discount=log2 (the default): default_rank_discount_fn = 1 / log2(rank + 1)
    ideal="retrieved",  # ndcg.py: the ideal sorts the list's own gains; recall/MAP: relevant of the list
    k_beyond_list="min_k_n",  # precision_at_k.py: valid_list_length = min(k, valid entries)
    # ap_denominator=relevant (the default): mean_average_precision.py: total_relevance of the list
    # empty_query=zero (the default): divide_no_nan, list weight 1 (get_list_weights)
    ties="unspecified",  # ranking_metrics_utils.py sort_by_scores: shuffle_ties=True (random)
    # relevance_threshold=1 (the default): ops.greater_equal(y_true, 1)
    # threshold_scope=binary (the default): DCG/nDCG gains read every label
    negative_labels="raise",  # labels < 0 are padding (leave the list): refused by the adapter
    # label_type=float (the default): labels cast to float32 as they are (live: 0.5, 1.5)
    # query_set=run (the default): the adapter's translation (_listwise)
    # depth=none (the default): the whole list is given
    score_precision="float32",  # ranking_metric.py update_state: ops.cast(y_pred, self.dtype)
    # rr_cutoff=honour (the default): mean_reciprocal_rank.py: top k of sort_by_scores
    # rank_source=score (the default)
    duplicates="keep",  # every run row is an entry of y_true
)

_CLASSES = {
    "nDCG": "NDCG",
    "AP": "MeanAveragePrecision",
    "RR": "MeanReciprocalRank",
    "P": "PrecisionAtK",
    "R": "RecallAtK",
}


class KerasRsEntry(Entry):
    name = "keras_rs"
    library = "keras_rs"
    module = "keras_rs"
    distribution = "keras-rs"
    extra = "keras-rs"
    tolerance = 1e-6  # float32 throughout
    float32_sums = True
    description = "keras_rs.metrics ranking metrics (shuffle_ties=True seeded 0, float32; torch backend)"

    def import_status(self) -> ImportStatus:
        os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is first imported
        return super().import_status()

    support = Support(families=frozenset(_CLASSES))  # the threshold is the library's y >= 1

    def profile(self, measure: Measure) -> Conventions:
        return PROFILE

    def default_profile(self) -> Conventions:
        return PROFILE

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        lists = ranked_lists(qrels, run)
        for item in lists:
            if (item.labels < 0).any():
                # refused here, not passed on: a negative label is keras-rs' padding, which
                # takes the document out of the list (see the module docstring)
                v = float(item.labels[item.labels < 0][0])
                return LibraryValues(error=(
                    f"refused by the adapter: query {item.qid!r} has the negative label {v!r}, "
                    "which keras-rs reads as padding and takes out of the list"))
        if not lists:
            return LibraryValues()  # nothing to score: the library is not called
        os.environ.setdefault("KERAS_BACKEND", "torch")
        import keras_rs

        cls = getattr(keras_rs.metrics, _CLASSES[measure.family])
        per_query = {}
        for item in lists:
            # a fresh metric seeded 0 for each list: the shuffle of ties still decides their
            # order, but the same list always gets the same one (outputs are reproducible)
            metric = cls(k=measure.cutoff, seed=0)
            metric.update_state(item.labels[None, :], item.scores[None, :])
            per_query[item.qid] = float(metric.result())
        # the library's mean: every list in one batch, padded with its padding label -1 and a
        # score well below every real one (padding scored 0 can outrank a real document: see
        # the module docstring's findings)
        width = max(item.labels.size for item in lists)
        low = min(float(item.scores.min()) for item in lists)
        y_true = np.full((len(lists), width), -1.0)
        y_pred = np.full((len(lists), width), low - max(1.0, abs(low)))
        for row, item in enumerate(lists):
            y_true[row, :item.labels.size] = item.labels
            y_pred[row, :item.scores.size] = item.scores
        metric = cls(k=measure.cutoff, seed=0)
        metric.update_state(y_true, y_pred)
        return LibraryValues(per_query=per_query, mean=float(metric.result()))


ENTRIES: list[Entry] = [KerasRsEntry()]
