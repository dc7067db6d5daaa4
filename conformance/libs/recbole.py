"""RecBole (side environment ``recbole``): the top-k metrics of ``recbole.evaluator``, computed
as RecBole's full-sort evaluation computes them, from a score matrix through its ``Collector``
and ``Evaluator``.

RecBole 1.2.1, the newest release, calls ``np.float`` in MRR, MAP and NDCG, an alias numpy
removed in 1.24, and pins ``colorama==0.4.4``: it lives in an environment of its own with numpy
1.23.5 (``conformance env create recbole``; ``conformance.environments``), and every call below
runs in its worker there (``Entry.environment``).

Translation: RecBole's trainer hands the collector, per batch of test users, the model's
float32 score matrix (users x items; the items a user saw in training set to -inf) and the
(row, item) pairs of the test interactions::

    collector = Collector(config)                  # config: metrics, topk [k], full sort
    collector.eval_batch_collect(scores, None, positive_u, positive_i)
    struct = collector.get_data_struct()           # "rec.topk": torch.topk hits, and R
    Evaluator(config).evaluate(struct)["ndcg@k"]   # the mean over the test users

The adapter builds that matrix from a run and its qrels: one row per test user (a judged user
with a label >= the threshold: RecBole's test split holds interactions, each a positive, so
its test users are the users with one), one column per item the user's run lists (its score;
a document listed twice keeps its last listing's score, as a matrix cell holds one), then the
user's relevant items the run does not list, at -inf (RecBole's own value for an item out of
the ranking), and then k padding columns, not relevant, at float32's lowest finite value: they
are the catalogue's remaining items, which rank below every listed item and above the
unlisted ones, so a list shorter than k ends with non-relevant positions (as the reference
reads a short list) and R counts every relevant item. The per-user values are the metric
class's own ``metric_info`` on ``used_info(struct)`` (what ``calculate_metric`` averages), at
column k; the mean is ``Evaluator.evaluate``'s, with ``metric_decimal_place`` 15 (RecBole's
default of 4 would round it).

=============  =============  =========================
measure        metric         ``metric_info``
=============  =============  =========================
nDCG@k         ``NDCG``       ``(pos_index, pos_len)``
AP@k           ``MAP``        ``(pos_index, pos_len)``
RR@k           ``MRR``        ``(pos_index)``
P@k            ``Precision``  ``(pos_index)``
R@k            ``Recall``     ``(pos_index, pos_len)``
Success@k      ``Hit``        ``(pos_index)``
=============  =============  =========================

Every top-k metric takes k: there is no measure without a cutoff. Not offered: ``GAUC``
(weighted per-user AUC over the whole catalogue, a family the reference does not have),
``ItemCoverage``, ``AveragePopularity``, ``GiniIndex``, ``ShannonEntropy``, ``TailPercentage``
(properties of the recommended items, not of the truth) and the value metrics (AUC, RMSE, ...).

Facts behind the profile (recbole 1.2.1, ``recbole/evaluator/collector.py``, ``metrics.py``,
``base_metric.py``; each confirmed live by ``tests/libs/test_recbole.py``):

- ranking: ``torch.topk(scores_tensor, max(topk))`` on the float32 matrix; equal scores come
  back in an order torch does not state, and it is not the matrix's column order (live: 300
  equal scores, indices 201, 197, 198, ...): ``ties=unspecified``, ``score_precision=float32``
  (live: scores 1 and 1 + 1e-9 tie);
- a hit is a 1 in ``pos_matrix`` (``pos_matrix[positive_u, positive_i] = 1``): gain 1 per
  relevant item (``gain=binary``); ``pos_len`` is the row's sum, the user's R;
- NDCG: ``1 / log2(rank + 1)`` (``discount=log2``) over an ideal of min(R, k) ones
  (``idcg_len``: ``ideal=judged``); live: relevant {a, f}, list c, a, e: NDCG@3 = (1 / log2 3)
  / (1 + 1 / log2 3) = 0.38685;
- MAP: the sum of precision at each hit up to k, over min(k, R) (``ranges[lens:] =
  ranges[lens - 1]``: ``ap_denominator=min_k_relevant``); live: that list, AP@3 = (1/2) / 2;
  relevant {a}, list a, c: AP@3 = 1;
- MRR: 1 / the first hit's rank, 0 when it is below k (``result[row, idx:]``,
  ``rr_cutoff=honour``); Precision: hits / k whatever the list's length
  (``np.arange(1, K + 1)``: ``k_beyond_list=k``; live: P@5 of c, a, e = 1/5); Recall: hits / R
  (uncapped); Hit: 1 when a hit is in the top k;
- users: the test users, each with a relevant item (``empty_query=skip``: a judged user
  without one is no test user); a test user the run does not list has a row of padding and
  unlisted items, and scores 0 in the mean (``query_set=qrels``; live: u2 relevant {x}, no
  recommendation: P@3 = 0, mean of u1's 1/3 and 0);
- a score beyond float32's range is +-inf in the matrix; +inf ranks first (ties among
  themselves, as in the reference's float32 reading), but -inf is RecBole's value for an item
  out of the ranking, which ranks below the padding with the unlisted items: the adapter
  refuses such a run (``known_failure``; asked anyway, qrels {u1: {a: 1}}, run {u1: a -1e39}
  gives P@1 = 0, where its profile gives 1).
"""

from __future__ import annotations

import inspect

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # collector.py: pos_matrix[positive_u, positive_i] = 1: a test item is a 1
    # discount=log2 (the default): metrics.py NDCG: 1.0 / np.log2(ranks + 1)
    # ideal=judged (the default): metrics.py NDCG: idcg over min(pos_len, K) ranks
    ap_denominator="min_k_relevant",  # metrics.py MAP: sum_pre / ranges, ranges[lens:] = lens
    # k_beyond_list=k (the default): metrics.py Precision: cumsum / np.arange(1, K + 1)
    # rr_cutoff=honour (the default): metrics.py MRR: 1 / (idx + 1) from the first hit on
    empty_query="skip",  # the test split's users each hold a test interaction, a positive
    query_set="qrels",  # a test user the run does not list: a row of padding, scoring 0
    ties="unspecified",  # collector.py torch.topk: equal scores in an order torch does not state
    score_precision="float32",  # the model's score matrix is float32, as torch.topk reads it
    duplicates="last",  # one matrix cell per (user, item): the adapter keeps the last listing's score
    # relevance_threshold=1 (the default): the adapter's test interactions are the labels >= 1
)

# family -> RecBole's metric class (recbole.evaluator.metrics)
_CLASSES = {"nDCG": "NDCG", "AP": "MAP", "RR": "MRR", "P": "Precision", "R": "Recall",
            "Success": "Hit"}
_PAD = float(np.finfo(np.float32).min)  # the padding columns' score, below every listed item


def full_sort_input(qrels: Qrels, run: Run, threshold: float, k: int):
    """(test users, float32 score matrix, positive_u, positive_i) as RecBole's collector reads
    them (see the module docstring)."""
    relevant: dict[str, list[str]] = {}
    for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                           qrels.label.tolist()):
        if label >= threshold:
            relevant.setdefault(q, []).append(d)
    listed: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        if q in relevant:
            listed.setdefault(q, {})[d] = s  # a later listing replaces the earlier: one cell
    users = list(relevant)
    rows = []
    for u in users:
        items = listed.get(u, {})
        unlisted = [d for d in dict.fromkeys(relevant[u]) if d not in items]
        rows.append((list(items.items()), unlisted))
    width = max((len(a) + len(b) for a, b in rows), default=0) + k
    scores = np.full((len(users), width), _PAD, dtype=np.float32)
    pos_u, pos_i = [], []
    for r, (items, unlisted) in enumerate(rows):
        n = len(items)
        with np.errstate(over="ignore"):  # beyond float32's range: +-inf, as torch holds it
            scores[r, :n] = np.asarray([s for _, s in items], dtype=np.float64).astype(np.float32)
        scores[r, n:n + len(unlisted)] = -np.inf
        wanted = set(relevant[users[r]])
        hits = [c for c, (d, _) in enumerate(items) if d in wanted]
        pos_u += [r] * (len(hits) + len(unlisted))
        pos_i += hits + list(range(n, n + len(unlisted)))
    return users, scores, np.asarray(pos_u, dtype=np.int64), np.asarray(pos_i, dtype=np.int64)


def full_sort_evaluate(metric: str, k: int, scores, positive_u, positive_i) -> tuple[list[float], float]:
    """RecBole's ``metric`` at ``k`` on a score matrix and its positives: (per-row values of the
    metric class's ``metric_info``, ``Evaluator.evaluate``'s mean). Module-level, so the worker
    and the tests can call it."""
    import torch
    from recbole.evaluator import Collector, Evaluator
    from recbole.evaluator.register import metrics_dict

    config = {"metrics": [metric], "topk": [k], "metric_decimal_place": 15,
              "eval_args": {"mode": "full"}, "device": torch.device("cpu")}
    collector = Collector(config)
    collector.eval_batch_collect(torch.from_numpy(np.asarray(scores, dtype=np.float32)), None,
                                 torch.from_numpy(np.asarray(positive_u, dtype=np.int64)),
                                 torch.from_numpy(np.asarray(positive_i, dtype=np.int64)))
    struct = collector.get_data_struct()
    means = Evaluator(config).evaluate(struct)
    cls = metrics_dict[metric.lower()](config)
    pos_index, pos_len = cls.used_info(struct)
    takes = len(inspect.signature(cls.metric_info).parameters)
    per_row = cls.metric_info(*(pos_index, pos_len)[:takes])
    return [float(v) for v in per_row[:, k - 1]], float(means[f"{metric.lower()}@{k}"])


def topk_order(scores, k: int) -> list[int]:
    """The column indices ``torch.topk`` gives for one row of float32 ``scores``, as RecBole's
    collector asks it: for the tests' facts about its tie order."""
    import torch

    row = torch.from_numpy(np.asarray([scores], dtype=np.float32))
    return [int(i) for i in torch.topk(row, k, dim=-1).indices[0]]


class RecboleEntry(Entry):
    library = "recbole"
    module = "recbole.evaluator"
    distribution = "recbole"
    environment = "recbole"
    tolerance = 1e-12  # float64 numpy on 0/1 hits; the mean rounded to 15 decimals
    support = Support(families=frozenset(_CLASSES), cutoff="required",
                      free_axes=frozenset({"relevance_threshold"}))

    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description

    def names(self, measure: Measure) -> bool:
        return measure.cutoff is not None and measure.cutoff >= 1 and not measure.params

    def profile(self, measure: Measure) -> Conventions:
        return PROFILE

    def default_profile(self) -> Conventions:
        return PROFILE

    # known_failure is checked, not trusted (Entry): the differential asks the library anyway
    known_failure_shows = frozenset({"wrong_values"})
    known_failure_ceiling = {"*": 0.0}  # the generated cases' scores stay far inside float32

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """A listed score float32 holds only as -inf: RecBole's value for an item out of the
        ranking (the seen items it masks), so the item ranks with the unlisted relevant ones,
        below the padding, not last in its list. Smallest case: qrels {u1: {a: 1}}, run {u1:
        a -1e39}: P@1 is 0, where the list's only item is relevant."""
        if not len(run):
            return None
        with np.errstate(over="ignore"):
            low = np.asarray(run.score, dtype=np.float64).astype(np.float32) <= _PAD
        if low.any():
            i = int(np.flatnonzero(low)[0])
            return (f"refused by the adapter: score {float(run.score[i])!r} of user "
                    f"{run.query_ids()[i]!r} is -inf (or the padding's lowest value) in float32, "
                    "RecBole's value for an item out of the ranking")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        k = int(measure.cutoff)
        threshold = float(measure.conventions(PROFILE).relevance_threshold)
        users, scores, positive_u, positive_i = full_sort_input(qrels, run, threshold, k)
        if not users:
            return LibraryValues(per_query={}, mean=None)
        per_row, mean = full_sort_evaluate(_CLASSES[measure.family], k, scores, positive_u,
                                           positive_i)
        return LibraryValues(per_query=dict(zip(users, per_row)), mean=mean)


ENTRIES: list[Entry] = [
    RecboleEntry("recbole", "recbole.evaluator NDCG, MAP, MRR, Precision, Recall, Hit through "
                 "its Collector and Evaluator on a full-sort score matrix from the run"),
]
