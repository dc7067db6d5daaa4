"""LensKit (side environment ``lenskit``): the ranking metrics of ``lenskit.metrics``, measured
as ``RunAnalysis`` measures a run.

Translation: the two item-list collections LensKit's own evaluation hands ``RunAnalysis``,
built from a run and its qrels, keyed by ``user_id``::

    outputs = {user: ItemList(item_ids=docs, scores=scores).top_n()}   # every run user
    test    = {user: ItemList(item_ids=relevant docs, rating=labels)}  # label >= threshold

``top_n()`` is how LensKit's ``TopNRanker`` orders a scorer's items (score descending); the
metrics never re-sort. Then, per measure::

    result = RunAnalysis(metric).measure(outputs, test)
    result.list_metrics()               # per user (missing values filled with the default)
    result.list_summary().loc[label, "mean"]

==================  ==================================================  ===================
measure             metric                                              entry
==================  ==================================================  ===================
nDCG(@k), DCG(@k)   ``NDCG(n=k)``, ``DCG(n=k)`` (weight ``LogRankWeight  lenskit (binary),
                    ()``; ``offset=1`` in ``lenskit:offset``; ``gain=    lenskit:offset,
                    "rating"`` in ``lenskit:graded``)                    lenskit:graded
P@k, SetP           ``Precision(n=k)``, ``Precision()``                 lenskit
Rcap@k, R           ``Recall(n=k)`` (capped), ``Recall()``              lenskit
RR(@k)              ``RecipRank(n=k)``                                  lenskit
Success(@k)         ``Hit(n=k)``                                        lenskit
AP(@k)              ``ranking.AveragePrecision(n=k)``                   lenskit
RBP(p)              ``RBP(patience=p)`` (``normalize=False``)           lenskit
==================  ==================================================  ===================

Not supported, and why: ``RBP(normalize=True)`` divides by the weights of min(R, n) ranks,
which no axis names. ``R@k`` uncapped: ``Recall(n=k)`` is capped (``Rcap@k``).

Facts behind the profiles (lenskit 2025.8.1, ``lenskit/metrics/ranking/``: ``_dcg.py``,
``_weighting.py``, ``_pr.py``, ``_recip.py``, ``_hit.py``, ``_rbp.py``; ``lenskit/metrics/
bulk.py``; ``lenskit/data/items.py``; each confirmed live by ``tests/libs/test_lenskit.py``):

- ``LogRankWeight()`` weighs rank i by ``log(2) / log(max(i, 2))``: ranks 1 and 2 weigh 1, then
  1 / log2(i): ``discount=jarvelin`` (b = 2); ``offset=1`` weighs ``log(2) / log(i + 1)``:
  ``discount=log2``. Live: relevant {a, f}, list c, a, e: NDCG = 1 / 2 = 0.5 (default),
  0.38685 (``offset=1``);
- ``NDCG`` without ``gain``: every test item has gain 1 (``gain=binary``), the ideal
  ``fixed_dcg(min(n, len(test)))`` (``ideal=judged``); with ``gain="rating"``: the rating
  (``gain=linear``), the ideal the test ratings' ``nlargest(n)`` (``ideal=judged``); the
  test list holds only labels that reach the threshold (``threshold_scope=graded``);
- ``Precision``: hits / the length of the list cut at n (``k_beyond_list=min_k_n``; live: P@5
  of c, a, e = 1/3); ``Recall``: hits / min(R, n) (``Rcap@k``), hits / R without n;
- ``RecipRank(n)`` and ``Hit(n)`` read the list cut at n (``rr_cutoff=honour``);
- ``AveragePrecision(n)``: the precisions at the hits of the list cut at n, summed, divided by
  min(R, the length of that cut list) (``ap_denominator=min_k_n_relevant``). Live: relevant
  {a, b, e}, list c, a: (1/2) / min(3, 2) = 0.25 with no n and with n = 3 or 5 (R: 0.1667,
  min(k, R) at n = 3: 0.1667, the relevant retrieved: 0.5); list c, a, b, e at n = 2: the same
  0.25;
- ``RBP``: weights ``patience^(i-1)`` summed over the hits, divided by the series' sum
  1 / (1 - p) (``rbp_gain=binary``, endless weights);
- users: ``RunAnalysis.measure`` measures every output list; one with no test data gets an
  empty ``ItemList`` (most metrics return NaN on it); ``list_metrics()`` and
  ``list_summary()`` fill a missing value with the metric's ``default``, 0.0, so such a user
  scores 0 and counts in the mean (``query_set=run_all``, ``empty_query=zero``; live: u1 with
  NDCG 0.5 and u2 with no test item: mean 0.25). A judged user without an output list is not
  measured;
- ties: ``ItemList.top_n()`` keeps equal scores in the order the list holds them
  (``ties=input_order``; live, 300 tied items in order); ``ItemList`` stores scores as float32
  (``score_precision=float32``; live: scores 1 and 1 + 1e-9 tie);
- a document listed twice is two positions, each looked up in the test list (``recs.isin``:
  ``duplicates=keep``; live: relevant {a, f}, list a, a, c: NDCG = 1.0, P@3 = 2/3);
- finding, refused by the adapter (``known_failure``): ``DCG(gain="rating")`` on an output list
  with no test data raises KeyError ("test items have no field rating": ``RunAnalysis`` hands
  it ``ItemList([])``, which has no field, and ``_graded_dcg`` asks for it before anything
  else), which stops ``RunAnalysis.measure`` for the whole run; ``NDCG(gain="rating")`` returns
  NaN first (``len(test) == 0``). Live: one user, its only judged document labelled 0 and
  listed;
- finding, refused by the adapter (``known_failure``): ``AveragePrecision`` on an output list
  with no test item raises ZeroDivisionError (``ap_sum / min(len(test), len(recs))`` is 0.0 / 0
  in Python floats), which stops ``RunAnalysis.measure`` for the whole run. Live: u1 with test
  items and u2 with none.

Environment: lenskit 2025.8.1 (the newest release Python 3.11 takes) requires pandas<3 and
torch; its environment installs the CPU build of torch first (``conformance.environments``).
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # _dcg.py NDCG.measure_list: gain None -> _binary_dcg, fixed_dcg ideal
    discount="jarvelin",  # _weighting.py LogRankWeight: log(base) / log(maximum(ranks, 2))
    # ideal=judged (the default): fixed_dcg(min(n, len(test)))
    k_beyond_list="min_k_n",  # _pr.py Precision: ngood / len(truncated recs)
    empty_query="zero",  # bulk.py list_metrics(fill_missing=True): NaN -> default 0.0
    ties="input_order",  # items.py ItemList.top_n: argsort_descending keeps equal scores in order
    # relevance_threshold=1 (the default): the adapter's test lists hold labels >= 1
    threshold_scope="graded",  # labels below the threshold are not in the test list at all
    # negative_labels=unjudged (the default): such a label is not in the test list
    query_set="run_all",  # bulk.py RunAnalysis.measure: every output list, test or ItemList([])
    score_precision="float32",  # ItemList stores scores as float32
    # rr_cutoff=honour (the default): _recip.py RecipRank truncates at n first
    ap_denominator="min_k_n_relevant",  # _map.py: ap_sum / min(len(test), len(truncated recs))
    # rbp_gain=binary (the default): _rbp.py: np.sum(weights[good]) / series_sum
    duplicates="keep",  # recs.isin(test) per position
)
OFFSET_PROFILE = PROFILE.replace(discount="log2")  # LogRankWeight(offset=1): log(ranks + 1)
GRADED_PROFILE = PROFILE.replace(gain="linear")  # NDCG(gain="rating"): the rating is the gain

_BINARY = ("P", "Rcap", "R", "RR", "Success", "RBP", "AP")


def _metric(measure: Measure, entry: "LenskitEntry"):
    """The ``lenskit.metrics`` object for ``measure``."""
    from lenskit import metrics

    n = measure.cutoff
    f = measure.family
    if f in ("nDCG", "DCG"):
        weight = metrics.LogRankWeight(offset=1) if entry.offset else metrics.LogRankWeight()
        cls = metrics.NDCG if f == "nDCG" else metrics.DCG
        return cls(n, weight=weight, gain="rating" if entry.graded else None)
    if f == "P":
        return metrics.Precision(n)
    if f in ("Rcap", "R"):
        return metrics.Recall(n)
    if f == "RR":
        return metrics.RecipRank(n)
    if f == "Success":
        return metrics.Hit(n)
    if f == "RBP":
        return metrics.RBP(patience=float(measure.param("p")))
    if f == "AP":
        from lenskit.metrics.ranking import AveragePrecision  # not exported by lenskit.metrics

        return AveragePrecision(n)
    raise ValueError(f"no LensKit metric for {measure.text}")


def run_analysis(metric, outputs: dict, test: dict) -> tuple[dict[str, float], float]:
    """``RunAnalysis(metric).measure(outputs, test)`` on collections made from
    {user: (items, scores)} and {user: (items, ratings)}: (per-user values from
    ``list_metrics()``, the mean from ``list_summary()``). Module-level, so a test can ask it
    of the environment's worker."""
    import warnings

    import numpy as np
    from lenskit.data import ItemList, ItemListCollection
    from lenskit.metrics import RunAnalysis

    outs = ItemListCollection.from_dict(
        {u: ItemList(item_ids=list(ids), scores=np.asarray(s, dtype=np.float64)).top_n()
         for u, (ids, s) in outputs.items()}, key="user_id")
    truth = ItemListCollection.from_dict(
        {u: ItemList(item_ids=list(ids), rating=np.asarray(r, dtype=np.float64))
         for u, (ids, r) in test.items()}, key="user_id")
    with warnings.catch_warnings():  # 0/0 on a list without test items: NaN, then the default
        warnings.simplefilter("ignore")
        result = RunAnalysis(metric).measure(outs, truth)
        per_list = result.list_metrics()
        summary = result.list_summary()
    label = per_list.columns[0]
    per_user = {str(u): float(v) for u, v in per_list[label].items()}
    return per_user, float(summary.loc[label, "mean"])


def measure_lists(metric: str, recs: tuple, test: tuple, offset: int | None = None,
                  **kwargs) -> float:
    """``lenskit.metrics.ranking.<metric>(**kwargs).measure_list`` on one list ranked by
    ``top_n()`` and its test list, given as (items, scores) and (items, ratings); ``offset``:
    the metric's weight is ``LogRankWeight(offset=offset)``. For the tests' facts about a metric
    class, asked of the environment's worker."""
    import warnings

    import numpy as np
    from lenskit.data import ItemList
    from lenskit.metrics import LogRankWeight, ranking

    if offset is not None:
        kwargs["weight"] = LogRankWeight(offset=offset)
    ranked = ItemList(item_ids=list(recs[0]), scores=np.asarray(recs[1], dtype=np.float64)).top_n()
    truth = ItemList(item_ids=list(test[0]), rating=np.asarray(test[1], dtype=np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(getattr(ranking, metric)(**kwargs).measure_list(ranked, truth))


def analyse(metric: str, outputs: dict, test: dict, **kwargs) -> tuple[dict[str, float], float]:
    """:func:`run_analysis` with ``lenskit.metrics.ranking.<metric>(**kwargs)``: for the tests,
    asked of the environment's worker."""
    from lenskit.metrics import ranking

    return run_analysis(getattr(ranking, metric)(**kwargs), outputs, test)


def top_n_order(items: list, scores: list) -> list[str]:
    """The order ``ItemList(...).top_n()`` gives ``items`` with ``scores``."""
    import numpy as np
    from lenskit.data import ItemList

    il = ItemList(item_ids=list(items), scores=np.asarray(scores, dtype=np.float64))
    return [str(i) for i in il.top_n().ids()]


class LenskitEntry(Entry):
    library = "lenskit"
    module = "lenskit.metrics"
    distribution = "lenskit"
    environment = "lenskit"
    tolerance = 1e-12  # float64 weights and sums; the float32 scores only order the list

    def __init__(self, name: str, description: str, *, offset: bool = False,
                 graded: bool = False):
        self.name = name
        self.description = description
        self.offset = offset  # LogRankWeight(offset=1)
        self.graded = graded  # NDCG(gain="rating")
        self._profile = (OFFSET_PROFILE if offset else GRADED_PROFILE if graded else PROFILE)

    @property
    def support(self) -> Support:
        # Recall(n) is capped: Rcap@k, not R@k; RBP(patience=p)
        families = ("nDCG", "DCG") if (self.offset or self.graded) else ("nDCG", "DCG") + _BINARY
        return Support(families=frozenset(families), no_cutoff=frozenset({"R"}), least_cutoff=1,
                       parameters=frozenset({"p"}), free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        return self._profile

    def default_profile(self) -> Conventions:
        return self._profile

    # known_failure is checked, not trusted (Entry): graded DCG raises KeyError,
    # AveragePrecision ZeroDivisionError. The generated cases often hold a run query without a
    # relevant document: the differential's duplicate-listing run refused 17 of 20 of its DCG
    # cases, its clean-label run 5 of 16 AP and 7 of 16 AP@k cases
    known_failure_shows = frozenset({"raises"})
    known_failure_ceiling = {"DCG": 0.9, "AP": 0.9, "*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """Graded DCG, or AP, where some run user has no judged document reaching the threshold
        (see the module docstring). Smallest case: qrels {u1: {a: 0}}, run {u1: a}."""
        if measure is None or not self.supports(measure):
            return None
        if measure.family == "AP":
            raised = "AveragePrecision raises ZeroDivisionError on it (0.0 / min(0, n))"
        elif self.graded and measure.family == "DCG":
            raised = ("DCG(gain='rating') raises KeyError on the empty test list RunAnalysis "
                      "hands it ('test items have no field rating')")
        else:
            return None
        threshold = measure.conventions(self.profile(measure)).relevance_threshold
        relevant = {q for q, label in zip(qrels.query_ids().tolist(), qrels.label.tolist())
                    if label >= threshold}
        missing = sorted(set(run.query_ids().tolist()) - relevant)
        if missing:
            return (f"refused by the adapter: user {missing[0]!r} has no test item, and LensKit's "
                    f"{raised}")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        threshold = measure.conventions(self.profile(measure)).relevance_threshold
        test: dict[str, tuple[list, list]] = {}
        for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                               qrels.label.tolist()):
            if label >= threshold:
                ids, ratings = test.setdefault(q, ([], []))
                ids.append(d)
                ratings.append(float(label))
        outputs: dict[str, tuple[list, list]] = {}
        for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
            ids, scores = outputs.setdefault(q, ([], []))
            ids.append(d)
            scores.append(float(s))
        if not outputs:
            return LibraryValues(per_query={}, mean=None)
        per_query, mean = run_analysis(_metric(measure, self), outputs, test)
        return LibraryValues(per_query=per_query, mean=mean)


ENTRIES: list[Entry] = [
    LenskitEntry("lenskit", "lenskit.metrics through RunAnalysis (NDCG's default LogRankWeight: "
                 "ranks 1 and 2 weigh 1)"),
    LenskitEntry("lenskit:offset", "lenskit.metrics NDCG and DCG with LogRankWeight(offset=1): "
                 "1 / log2(rank + 1)", offset=True),
    LenskitEntry("lenskit:graded", "lenskit.metrics NDCG and DCG with gain='rating' (the label is "
                 "the gain)", graded=True),
]
