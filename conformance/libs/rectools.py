"""RecTools (side environment ``rectools``): the ranking and classification metrics of
``rectools.metrics`` on the two tables they read.

RecTools 0.19.0, the newest release, requires numpy<2 and pandas<3, so it cannot be installed
beside the other entries' libraries: it lives in an environment of its own
(``conformance env create rectools``; ``conformance.environments``), and every call below runs
in its worker there (``Entry.environment``).

Translation: RecTools reads a recommendation table and an interactions table, never scores::

    reco = DataFrame(user_id, item_id, rank)   # each run query's documents, rank 1, 2, ...
    interactions = DataFrame(user_id, item_id)  # each judged document with label >= threshold

The ranks are the run's order: score descending, equal scores by document id byte-wise
descending (the reference's own order, ``ties=docid_desc``); RecTools sees no score, so this
order is the whole tie rule (a caller who ranks tied items otherwise gets the values of that
order). Then, per measure, one call, e.g. ``NDCG(k=k).calc_per_user(reco, interactions)``, whose
per-user Series is the per-query values.

=============  ================================================  ====================
measure        call                                              entry
=============  ================================================  ====================
nDCG@k         ``NDCG(k)``                                       ``rectools``
nDCG@k         ``NDCG(k, divide_by_achievable=True)``            ``rectools:achievable``
AP@k           ``MAP(k)``                                        ``rectools``
AP@k           ``MAP(k, divide_by_k=True)``                      ``rectools:divide_by_k``
RR@k           ``MRR(k)``                                        ``rectools``
P@k            ``Precision(k)``                                  ``rectools``
R@k            ``Recall(k)``                                     ``rectools``
Success@k      ``HitRate(k)``                                    ``rectools``
=============  ================================================  ====================

Every metric takes k: there is no measure without a cutoff.

Not supported, and why: ``Precision(k, r_precision=True)`` is
hits / min(k, R) (not R-precision, which reads the top R), a capped recall the reference does not
have yet (live: relevant {a, b}, list a, c, b: ``Precision(3, r_precision=True)`` = 2 / 2);
``F1Beta`` is not offered yet (not held to the reference's F1 in a live test), ``Accuracy`` and
``MCC`` read a catalogue of items no run states; ``debias_config`` (down-sampling popular
items) is a convention no other library has.

Facts behind the profiles (rectools 0.19.0, ``rectools/metrics/ranking.py``,
``classification.py``, ``base.py``; each confirmed live by ``tests/libs/test_rectools.py``):

- users: every metric left-merges the recommendations onto the interactions (``base.py``
  ``merge_reco``: ``pd.merge(interactions, reco, how="left")``) and groups by user, so the
  users scored are the interactions' users: every judged user with a relevant item, one with
  no recommendation scoring 0 (``query_set=qrels``), and a judged user without a relevant item
  is in no table and no mean (``empty_query=skip``); live: relevant {a, f} for u1, u2 relevant
  {x} and no recommendation: P@3 of u2 = 0;
- NDCG: gain 1 per relevant item at rank <= k over ``log_at_base(rank + 1, log_base)`` (the
  base cancels in the ratio: ``discount=log2``); the ideal is ``discounted_gains.sum()`` over
  all k ranks, every one of them counted as relevant whatever the user's interactions
  (``ideal=k_slots``); live: relevant {a, f}, list c, a, e: NDCG@3 = (1/log2 3) / (1 + 1/log2 3
  + 1/2) = 0.29608; with ``divide_by_achievable=True`` the ideal has min(k, R) ranks
  (``stats["n_items"].clip(upper=self.k)``: ``ideal=judged``), the same list 0.38685;
- MAP: the sum of precision at each relevant rank <= k divided by the user's interaction count
  R (``MAP.fit``: ``n_relevant_items``; ``ap_denominator=relevant``); live: that list, AP@3 =
  (1/2) / 2 = 0.25; with ``divide_by_k=True`` by k (``sum_precisions / self.k``:
  ``ap_denominator=k``), (1/2) / 3 = 1/6;
- MRR: 1 / the first relevant rank <= k, else 0 (``rr_cutoff=honour``);
- Precision: hits in the top k / k (``confusion_df[TP] / self.k``) even when fewer than k items
  are recommended (``k_beyond_list=k``); live: P@5 of that list = 0.2; Recall: hits / R
  (``TP / LIKED``), live R@3 = 0.5; HitRate: 1 when some hit is in the top k;
- a relevant item recommended twice is two rows of the merge: the hits count both
  (``duplicates=keep`` for NDCG, MRR, Precision, HitRate; live: relevant {a}, list a, a, b:
  P@3 = 2/3, NDCG@3 = (1 + 1/log2 3) / (1 + 1/log2 3 + 1/2)); but MAP's ``n_relevant_items``,
  Recall's ``LIKED`` and ``divide_by_achievable``'s ``n_items`` count the merged rows too, so
  each later listing is one more relevant item in R, wherever it is in the table, in the top
  k or not (``duplicates=keep_counted``; live: that list, R@3 = 1.0 and AP@3 = 1.0 where keep
  gives 2.0 and 2.0; relevant {a, f}, list a, b, a, a: R = 2 + 2, R@4 = 3/4, AP@4 = (1 + 2/3 +
  3/4) / 4, achievable NDCG@4 over an ideal of 4 ranks; relevant {a}, list a, b, a: R@2 = 1/2,
  AP@2 = 1/2, achievable NDCG@2 = 1 / (1 + 1/log2 3), the listing past k counted; a repeated
  item that is not an interaction adds nothing: relevant {a}, list b, b, a: R@3 = 1).
  ``divide_by_k`` divides by k, not by those rows, so it keeps both listings
  (``duplicates=keep``; live: relevant {a}, list a, a, b: AP@3 = (1 + 2/2) / 3);
- the interactions are read as a set of (user, item) rows: no label reaches RecTools, so gain
  is binary (``gain=binary``) and the threshold is the adapter's (``relevance_threshold``).
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # ranking.py NDCG: (rank <= k).astype(int): an interaction counts 1
    # discount=log2 (the default): 1 / log_at_base(rank + 1, log_base); the base cancels
    ideal="k_slots",  # ranking.py NDCG: idcg = discounted_gains.sum() over ranks 1..k
    # k_beyond_list=k (the default): classification.py Precision: confusion_df[TP] / self.k
    # ap_denominator=relevant (the default): ranking.py MAP: sum_precisions / n_relevant_items
    empty_query="skip",  # base.py merge_reco: users come from interactions (relevant items only)
    # ties=docid_desc (the default): the adapter's ranks (score descending, then doc id descending)
    # relevance_threshold=1 (the default): the adapter's interactions hold the labels >= 1
    query_set="qrels",  # merge_reco: a left join from interactions; no recommendation -> 0
    # rr_cutoff=honour (the default): ranking.py MRR: ranks above k are NaN, then fillna(0)
    duplicates="keep",  # merge_reco: a repeated recommendation is a second merged row, each a hit
)
COUNTS_ROWS = PROFILE.replace(
    duplicates="keep_counted",  # MAP.fit n_relevant_items, calc_confusions LIKED: merged rows
    # per user (groupby size), one per listing of an interaction anywhere in reco: R + repeats
)
# NDCG(divide_by_achievable=True): idcg over stats["n_items"].clip(upper=k), min(k, R) ranks,
# n_items counting the merged rows as above (duplicates=keep_counted)
ACHIEVABLE = COUNTS_ROWS.replace(ideal="judged")
# MAP(divide_by_k=True): sum_precisions / self.k; the merged rows are not its denominator
OVER_K = PROFILE.replace(ap_denominator="k")

_CLASSES = {"nDCG": "NDCG", "AP": "MAP", "RR": "MRR", "P": "Precision", "R": "Recall",
            "Success": "HitRate"}  # family -> class in rectools.metrics


def tables(qrels: Qrels, run: Run, threshold: float):
    """(reco, interactions) as RecTools reads them (see the module docstring): pandas frames
    of string ids, ranks 1..n per user in the run's order."""
    import pandas as pd

    users, items, ranks = [], [], []
    lists: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        lists.setdefault(q, []).append((d, s))
    for q, docs in lists.items():
        docs.sort(key=lambda x: x[0], reverse=True)  # doc id descending (code points = UTF-8 bytes)
        docs.sort(key=lambda x: x[1], reverse=True)  # then score descending, stable
        for rank, (d, _) in enumerate(docs, start=1):
            users.append(q)
            items.append(d)
            ranks.append(rank)
    reco = pd.DataFrame({"user_id": pd.Series(users, dtype=object),
                         "item_id": pd.Series(items, dtype=object),
                         "rank": pd.Series(ranks, dtype="int64")})
    positive = [(q, d) for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                                              qrels.label.tolist()) if label >= threshold]
    interactions = pd.DataFrame({"user_id": pd.Series([q for q, _ in positive], dtype=object),
                                 "item_id": pd.Series([d for _, d in positive], dtype=object)})
    return reco, interactions


class RectoolsEntry(Entry):
    library = "rectools"
    module = "rectools"
    distribution = "rectools"
    environment = "rectools"
    tolerance = 1e-12  # float64 pandas and scipy arithmetic on ranks read exactly

    def __init__(self, name: str, profiles: dict[str, Conventions],
                 options: dict[str, dict] | None = None, description: str = "") -> None:
        """``profiles``: family -> profile, the families computed; ``options``: family -> the
        keyword arguments its class is made with beyond k."""
        self.name, self.description = name, description
        self.profiles, self.options = profiles, options or {}
        self.support = Support(families=frozenset(profiles), cutoff="required",
                               free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        return self.profiles.get(measure.family, PROFILE)

    def default_profile(self) -> Conventions:
        return next(iter(self.profiles.values()))

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        import rectools.metrics

        threshold = float(measure.conventions(self.profile(measure)).relevance_threshold)
        reco, interactions = tables(qrels, run, threshold)
        cls = getattr(rectools.metrics, _CLASSES[measure.family])
        metric = cls(k=int(measure.cutoff), **self.options.get(measure.family, {}))
        per_user = metric.calc_per_user(reco, interactions)
        return LibraryValues(per_query={str(u): float(v) for u, v in per_user.items()},
                             mean=float(per_user.mean()) if len(per_user) else None)


ENTRIES: list[Entry] = [
    RectoolsEntry("rectools", {"nDCG": PROFILE, "AP": COUNTS_ROWS, "RR": PROFILE, "P": PROFILE,
                               "R": COUNTS_ROWS, "Success": PROFILE},
                  description="rectools.metrics NDCG, MAP, MRR, Precision, Recall, HitRate "
                              "(defaults) on a rank table from the run"),
    RectoolsEntry("rectools:achievable", {"nDCG": ACHIEVABLE},
                  {"nDCG": {"divide_by_achievable": True}},
                  description="rectools.metrics NDCG(divide_by_achievable=True): ideal over "
                              "min(k, R) ranks"),
    RectoolsEntry("rectools:divide_by_k", {"AP": OVER_K}, {"AP": {"divide_by_k": True}},
                  description="rectools.metrics MAP(divide_by_k=True): AP over k"),
]
