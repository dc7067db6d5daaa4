"""implicit (optional extra): ``implicit.evaluation.ranking_metrics_at_k``'s ndcg, map and
precision.

Translation: ``ranking_metrics_at_k(model, train_user_items, test_user_items, K)`` scores a model
by calling its ``recommend(userids, user_items, N=K)``; here the model is the run. A
``RecommenderBase`` whose ``recommend`` returns each user's run documents, best score first
(numpy's default, unstable argsort: as implicit's own models' top-k, no tie rule), padded with
-1 to K, as an implicit model returns fewer than K items; ``train_user_items`` is empty (the run
is already what the user was recommended); ``test_user_items`` holds, for every judged user,
its documents whose label reaches the threshold (the library reads which items a row holds, not
their values). Users are rows and documents columns of one vocabulary each.

``ranking_metrics_at_k`` returns means only. Each user's value is the same call with a test
matrix holding that user's row alone (a user with no test item is skipped by the library, so
the call scores that user only); the library's mean is the call with every row.

===========================  ==========================================
measure                      key of ``ranking_metrics_at_k``'s result
===========================  ==========================================
nDCG@k                       ``ndcg``
AP@k                         ``map``
Rcap@k under ``mean=micro``  ``precision``
===========================  ==========================================

Not supported, and why: ``auc`` is AUC over the top K against every unseen item, which no
family computes. ``precision`` is not P@k: it divides by min(K, R), not K (below).

Facts behind the profile (implicit 0.7.3, ``implicit/evaluation.pyx``; each confirmed live by
``tests/libs/test_implicit.py``):

- a user whose test row is empty is skipped (``if test_indptr[u] == test_indptr[u+1]:
  continue``) and is in no mean (``empty_query=skip``); every other test user counts, one with
  no recommendation scoring 0 (``query_set=qrels``);
- ndcg: binary gain (a recommended item counts 1 when it is in the test row), discount
  ``1 / log2(rank + 1)`` (``cg``), ideal ``cg_sum[min(K, R) - 1]``: min(K, R) relevant slots,
  R counting test items not recommended (``ideal=judged``); live: relevant {a, f}, list c, a, e:
  ndcg@3 = (1/log2 3) / (1 + 1/log2 3) = 0.38685;
- map: precision at each hit summed, divided by min(K, R) (``ap_denominator=min_k_relevant``;
  live: that list, map@3 = (1/2) / 2 = 0.25);
- precision: the hits in the top K summed over the users, divided once by the sum of min(K, R)
  (``total`` += ``fmin(K, likes.size())``): the capped recall ``Rcap@k`` averaged micro
  (``mean=micro``); one user's call gives that user's hits / min(K, R), its ``Rcap@k``. Live:
  u1 relevant {a, f}, list c, a, e, and u2 relevant {x}, list x: per user 1/2 and 1, mean
  (1 + 1) / (2 + 1) = 2/3 where the users' mean is 3/4;
- a document recommended twice is two recommendations, each looked up in the test row
  (``duplicates=keep``);
- finding, refused by the adapter (``known_failure``): when a user's test items are the whole
  item catalogue, the auc that ``ranking_metrics_at_k`` always computes divides by the number of
  items outside the test row, 0, and the call raises ZeroDivisionError whatever metric is
  wanted (live: one user, items {a, b}, both test items: ZeroDivisionError; items {a, b, c}:
  ndcg 1.0). The adapter's catalogue is every document the qrels or the run names;
- scores: the adapter's model orders the run's float64 scores (``score_precision=float64``).
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # evaluation.pyx: ndcg += cg[i] when likes.find(ids[i]) (a hit counts 1)
    # discount=log2 (the default): evaluation.pyx: cg = 1.0 / np.log2(np.arange(2, K + 2))
    # ideal=judged (the default): evaluation.pyx: idcg = cg_sum[min(K, likes.size()) - 1]
    ap_denominator="min_k_relevant",  # evaluation.pyx: mean_ap += ap / fmin(K, likes.size())
    empty_query="skip",  # evaluation.pyx: `if test_indptr[u] == test_indptr[u+1]: continue`
    ties="unspecified",  # the model's top K (the adapter's model: numpy's unstable argsort)
    # relevance_threshold=1 (the default): the adapter's test row holds labels >= 1
    # threshold_scope=binary (the default): with binary gain every measure reads the threshold
    # negative_labels=unjudged (the default): a label below the threshold is not in the test row
    # label_type=float (the default): labels compared as they are (label >= threshold)
    query_set="qrels",  # every user with a test item counts; one the model gives nothing scores 0
    # depth=none (the default): the run's whole list is the model's recommendation, cut at K
    # score_precision=float64 (the default): the adapter's model sorts the float64 scores
    # rank_source=score (the default): the order comes from the scores
    duplicates="keep",  # evaluation.pyx: each of the K ids is looked up in likes
)

_KEYS = {"nDCG": "ndcg", "AP": "map", "Rcap": "precision"}
MICRO_PROFILE = PROFILE.replace(mean="micro")  # evaluation.pyx: precision = relevant / total, each summed over the users


def _model_class():
    from implicit.recommender_base import RecommenderBase

    class RunModel(RecommenderBase):
        """The run as an implicit model: ``recommend`` returns each user's run documents, best
        score first, padded with -1 (and score -inf) to N."""

        def __init__(self, lists: dict[int, np.ndarray]):
            self.lists = lists

        def recommend(self, userid, user_items, N=10, filter_already_liked_items=True,
                      filter_items=None, recalculate_user=False, items=None):
            users = np.atleast_1d(userid)
            ids = np.full((users.size, N), -1, dtype=np.int32)
            scores = np.full((users.size, N), -np.inf, dtype=np.float32)
            for row, u in enumerate(users.tolist()):
                top = self.lists.get(int(u), np.empty(0, dtype=np.int32))[:N]
                ids[row, :top.size] = top
                scores[row, :top.size] = np.arange(top.size, 0, -1)
            return (ids, scores) if np.ndim(userid) else (ids[0], scores[0])

        def fit(self, user_items, show_progress=True, callback=None):
            raise NotImplementedError("the run is not trained")

        def similar_items(self, *args, **kwargs):
            raise NotImplementedError

        def similar_users(self, *args, **kwargs):
            raise NotImplementedError

        def save(self, *args, **kwargs):
            raise NotImplementedError

    return RunModel


class ImplicitEntry(Entry):
    name = "implicit"
    library = "implicit"
    module = "implicit"
    distribution = "implicit"
    tolerance = 1e-12
    description = ("implicit.evaluation.ranking_metrics_at_k (ndcg, map, precision) with the run "
                   "as the model")

    # the threshold is the adapter's: its test row holds the documents whose label reaches it
    support = Support(families=frozenset(_KEYS), cutoff="required",
                      free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        return MICRO_PROFILE if measure.family == "Rcap" else PROFILE

    def default_profile(self) -> Conventions:
        return PROFILE

    # known_failure is checked, not trusted (Entry): ranking_metrics_at_k raises ZeroDivisionError;
    # the generated cases' catalogues are small, so the default differential run refused 9 of 80
    # clean cases and 10 of 40 with duplicate listings
    known_failure_shows = frozenset({"raises"})
    known_failure_ceiling = {"*": 0.4}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """A user whose test items are every item of the catalogue (every document the qrels or
        the run names): ``ranking_metrics_at_k`` computes its auc over the items not in the
        test row, of which there are none, and raises ZeroDivisionError for every metric.
        Smallest case: qrels {u1: {a: 1}}, run {u1: {a: 1.0}}."""
        if measure is None or not self.supports(measure) or not len(qrels):
            return None
        threshold = measure.conventions(self.profile(measure)).relevance_threshold
        catalogue = set(qrels.doc_ids().tolist()) | set(run.doc_ids().tolist())
        relevant: dict[str, set[str]] = {}
        for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                               qrels.label.tolist()):
            if label >= threshold:
                relevant.setdefault(q, set()).add(d)
        for q, docs in relevant.items():
            if docs == catalogue:
                return (f"refused by the adapter: every document of the inputs is a test item of "
                        f"user {q!r}, and implicit's ranking_metrics_at_k then divides by zero "
                        "(its auc over the items not in the test row) for every metric")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        from scipy.sparse import csr_matrix

        from implicit.evaluation import ranking_metrics_at_k

        threshold = measure.conventions(self.profile(measure)).relevance_threshold
        users: dict[str, int] = {}
        items: dict[str, int] = {}
        rows, cols = [], []
        for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                               qrels.label.tolist()):
            u = users.setdefault(q, len(users))
            item = items.setdefault(d, len(items))  # every named document is in the catalogue
            if label >= threshold:
                rows.append(u)
                cols.append(item)
        listed: dict[int, tuple[list[int], list[float]]] = {}
        for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
            item = items.setdefault(d, len(items))
            if q in users:  # a run user with no judgment has no test row: never scored
                ids, scores = listed.setdefault(users[q], ([], []))
                ids.append(item)
                scores.append(s)
        lists = {u: np.asarray(ids, dtype=np.int32)[np.argsort(-np.asarray(scores))]
                 for u, (ids, scores) in listed.items()}
        shape = (max(len(users), 1), max(len(items), 1))
        train = csr_matrix(shape, dtype=np.float64)
        model = _model_class()(lists)
        key, K = _KEYS[measure.family], int(measure.cutoff)

        def call(test_rows: list[int], test_cols: list[int]) -> float:
            test = csr_matrix((np.ones(len(test_rows)), (test_rows, test_cols)), shape=shape)
            return float(ranking_metrics_at_k(model, train, test, K=K, show_progress=False)[key])

        test_items: dict[int, list[int]] = {}
        for u, i in zip(rows, cols):
            test_items.setdefault(u, []).append(i)
        per_query = {q: call([u] * len(test_items[u]), test_items[u])
                     for q, u in users.items() if u in test_items}
        mean = call(rows, cols) if rows else None
        return LibraryValues(per_query=per_query, mean=mean)


ENTRIES: list[Entry] = [ImplicitEntry()]
