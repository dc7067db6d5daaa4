"""Cornac (optional extra): the ranking metric classes of ``cornac.metrics``.

Translation: what ``cornac.eval_methods.base_method.ranking_eval`` hands each metric, built from a
run and its qrels. For each user (query) present in both the run and the qrels:

- ``gt_pos``: the user's positive items, the judged documents whose label reaches the threshold
  (``ranking_eval``'s ``pos_items``: ``rating >= rating_threshold``, default 1.0), as item indices;
- ``pd_rank``: the run's documents for the user, ordered as ``Recommender.rank`` orders a
  model's scores (``item_indices[item_scores.argsort()[::-1]]``), as item indices;

then, per measure and user, one call::

    NDCG(k=k).compute(gt_pos=gt_pos, pd_rank=pd_rank)      # k=-1 without a cutoff
    MAP().compute(item_indices=item_indices, pd_scores=item_scores, gt_pos=gt_pos)
    AUC().compute(item_indices=item_indices, pd_scores=item_scores, gt_pos=gt_pos)

(``item_indices``, ``item_scores``: the run's documents for the user and their scores, as
``ranking_eval`` hands ``MAP`` and ``AUC`` the candidate items and the model's scores of them.
``ranking_eval`` also hands ``AUC`` ``gt_neg``, every item not positive for the user; among the
candidates those are the ones not in ``gt_pos``, what ``AUC`` takes when ``gt_neg`` is None.)

A user with no positive item is skipped, as ``ranking_eval`` skips it (``if
len(test_pos_items) == 0: continue``), so it is in no per-user table and in no mean.

==================  ============================================
measure             class (``k=-1`` without a cutoff)
==================  ============================================
nDCG(@k)            ``NDCG(k)``
P(@k)               ``Precision(k)``
R(@k)               ``Recall(k)``
Success(@k)         ``HitRatio(k)``
F1(@k)              ``FMeasure(k)`` (beta = 1 only)
RR                  ``MRR()`` (no cutoff: the class takes none)
AP                  ``MAP()`` (no cutoff: the class takes none)
AUROC               ``AUC()`` (no cutoff: the class takes none)
==================  ============================================

Not supported, and why: ``NCRR`` is no family of its own: it is nDCG with a 1/rank discount,
offered by the entry ``cornac:ncrr`` (below).

Facts behind the profile (cornac 3.0.1, ``cornac/metrics/ranking.py`` and
``cornac/models/recommender.py``; each confirmed live by ``tests/libs/test_cornac.py``):

- nDCG: ``dcg_score`` takes ``np.isin(pd_rank[:k], gt_pos)`` as the relevance of each rank and
  gain ``2**rel - 1``, so binary gain; discount ``log2(rank + 1)``; the ideal is
  ``dcg_score(gt_pos, gt_pos, k)``: min(k, R) relevant slots, R counting positives not ranked
  (``ideal=judged`` with binary gain); live: positives {a, f}, list c, a, e: nDCG@3 =
  (1/log2 3) / (1 + 1/log2 3) = 0.38685;
- Precision: ``tp / tp_fp`` with ``tp_fp = self.k`` when k > 0, even when the list is shorter
  (``k_beyond_list=k``; live: P@5 of that list = 0.2); with k = -1, the list's length (P over
  the whole list, 1/3);
- Recall: ``tp / len(gt_pos)``, R counting positives not ranked (live: R@3 = 0.5);
- HitRatio: 1.0 when some positive is in the top k, else 0.0;
- FMeasure: 2 P R / (P + R) of those two, 0 when both are 0 (live: F1@5 = 0.2857);
- MAP (AP's profile, ``MAP_PROFILE``): ``rankdata(-pd_scores, "max")`` gives every member of
  a tied group the group's last rank, and ``rankdata`` again among the positives the count of
  positives through it (``ties=group_last``): live, items n, r1, r2 with one score and r1, r2
  positive, (2/3 + 2/3) / 2 = 0.66667, where the order n, r1, r2 gives 0.58333; n above the
  tie of r1 and r2 also 0.66667, which no order of the two gives; it averages over the
  positives in the candidate list (``ap_denominator=retrieved_relevant``): positives 1, 2, 7,
  list 0, 1, 2 in score order, (1/2 + 2/3) / 2 = 0.58333, 7 not counted. A user none of whose
  positives is in the list gets the mean of no value, NaN (inside ``ranking_eval`` every
  candidate item is scored, so it cannot happen there): the entry refuses such a case
  (``known_failure``), as for MRR;
- AUC (AUROC's profile, ``AUC_PROFILE``): over the candidate list, the share of (positive,
  negative) pairs with the positive scored strictly higher (``ui_scores > uj_scores``), so a
  tied pair counts 0, the order that ranks relevant documents last in a tie
  (``ties=pessimistic``): live, scores 2, 1, 1 with positives at the two tied items 0.0, with
  positives at 2 and one tied 1 (the other tied 1 negative) 0.5, and scores 1, 1 with one
  positive 0.0; a document listed twice is counted at each listing (``np.isin`` over the
  candidates): live, a positive listed at 2 and 0.5 around a negative at 1, 0.5. A user with
  no positive in the list or no negative in it divides 0 pairs by 0, NaN (live; the reference
  gives such a user 0): the entry refuses such a case (``known_failure``), as for MAP;
- MRR: 1 / the rank of the first positive in the whole ranking; it has no cutoff. When no
  positive is ranked at all it raises ValueError ("No matched between ground-truth items and
  recommendations"): inside ``ranking_eval`` it cannot (every candidate item is ranked), but a
  top-k list meets it; the entry refuses such a case (``known_failure``) rather than score it;
- a document listed twice is counted at each listing (``np.isin`` per rank): live, positive
  {a}, list a, a, b: nDCG@3 = 1.6309 and P@3 = 2/3 (``duplicates=keep``);
- ties: ``Recommender.rank`` orders by ``argsort()[::-1]``, numpy's default (unstable)
  quicksort reversed: no rule for tied scores (``ties=unspecified``, the reference's range);
- scores float64, as the model's scores are passed to ``argsort``;
- NCRR (entry ``cornac:ncrr``, its nDCG, ``NCRR_PROFILE``): ``NCRR(k).compute(gt_pos, pd_rank)``
  sums 1 / rank over the positives in ``pd_rank[:k]`` (the whole ranking with k = -1), binary
  gain over a 1/rank discount (``discount=reciprocal``), and divides by the sum of 1 / i for i
  up to ``min(len(gt_pos), len(pd_rank[:k]))``: the judged ideal cut at min(k, n)
  (``ideal=judged_to_list``); 0.0 when no positive is ranked. Live: positives {a, f}, list
  c, a, e: (1/2) / (1 + 1/2) = 1/3, with k = -1, 3 or 5; positives {a, b, c}, list z, a, k = 5:
  (1/2) / (1 + 1/2) = 1/3 (the judged ideal would give (1/2) / (1 + 1/2 + 1/3)); four
  positives, list a, z, b, c: NCRR@2 = 1 / (1 + 1/2), NCRR = (1 + 1/3 + 1/4) / (1 + 1/2 + 1/3
  + 1/4) = 0.76; positive {a}, list a, a, b: NCRR@3 = 1.5 (``duplicates=keep``);
- users: ``ranking_eval`` scores the test users (here: the run's users that have judgments) and
  skips one with no positive item (``empty_query=skip``).
"""

from __future__ import annotations

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="binary",  # ranking.py NDCG.dcg_score: gain = 2**np.isin(...).astype(int) - 1
    # discount=log2 (the default): dcg_score: np.log2(np.arange(len(ranked_scores)) + 2)
    # ideal=judged (the default): NDCG.compute: idcg = dcg_score(gt_pos, gt_pos, k), every positive
    # k_beyond_list=k (the default): MeasureAtK.compute: tp_fp = self.k if self.k > 0
    empty_query="skip",  # base_method.py ranking_eval: `if len(test_pos_items) == 0: continue`
    ties="unspecified",  # recommender.py Recommender.rank: item_scores.argsort()[::-1]
    # relevance_threshold=1 (the default): ranking_eval(rating_threshold=1.0): rating >= 1.0
    # threshold_scope=binary (the default): with binary gain every measure reads the threshold
    # negative_labels=unjudged (the default): a rating below the threshold is not positive
    # label_type=float (the default): ratings compared as floats (rating >= rating_threshold)
    # query_set=run (the default): the adapter's translation: users in both the run and the qrels
    # depth=none (the default): the whole ranking is passed
    # score_precision=float64 (the default): the scores are float64 into argsort
    # rank_source=score (the default): the order comes from the scores
    duplicates="keep",  # np.isin per rank: a document listed twice counts twice (live)
)
# MAP: the same, but its tie rule and its denominator
MAP_PROFILE = PROFILE.replace(
    ties="group_last",  # ranking.py MAP.compute: rank = rankdata(-pd_scores, "max")[relevant]
    # MAP.compute: (L / rank).mean() over the relevant items of item_indices, the list's own
    ap_denominator="retrieved_relevant",
)
# AUC: the same, but its tie rule
AUC_PROFILE = PROFILE.replace(
    ties="pessimistic",  # ranking.py AUC.compute: (ui_scores > uj_scores): a tied pair counts 0
)

# NCRR (entry cornac:ncrr, as nDCG): PROFILE with its discount and its ideal
NCRR_PROFILE = PROFILE.replace(
    discount="reciprocal",  # ranking.py NCRR.compute: crr = np.sum(1.0 / rec_rank), rank from 1
    # NCRR.compute: icrr over 1..min(len(gt_pos), len(truncated_pd_rank)): the ideal cut at min(k, n)
    ideal="judged_to_list",
)

_CLASSES = {  # family -> (class in cornac.metrics, takes k)
    "nDCG": ("NDCG", True),
    "P": ("Precision", True),
    "R": ("Recall", True),
    "Success": ("HitRatio", True),
    "F1": ("FMeasure", True),
    "RR": ("MRR", False),
    "AP": ("MAP", False),
    "AUROC": ("AUC", False),
}
_PROFILES = {"AP": MAP_PROFILE, "AUROC": AUC_PROFILE}  # family -> profile, where it is not PROFILE

_NO_MATCH = {
    "RR": ("refused by the adapter: no positive item of user {qid!r} is in its ranking, on "
           "which cornac's MRR raises ValueError ('No matched between ground-truth items and "
           "recommendations') instead of scoring 0"),
    "AP": ("refused by the adapter: no positive item of user {qid!r} is in its ranking, on "
           "which cornac's MAP gives NaN (the mean over no positive) instead of scoring 0"),
    "AUROC": ("refused by the adapter: the ranking of user {qid!r} holds no positive item or no "
              "negative one, on which cornac's AUC gives NaN (0 pairs over 0) instead of "
              "scoring 0"),
}
_SCORED = frozenset({"AP", "AUROC"})  # the classes that read the candidates' scores


def _users(qrels: Qrels, run: Run, threshold: float) -> list[tuple]:
    """(user, gt_pos, pd_rank, item_indices, item_scores) for each user in both the run and the
    qrels that has a positive item, users in id order: item indices of one vocabulary of
    document ids, ``pd_rank`` in ``Recommender.rank``'s order of the run's scores,
    ``item_indices`` and ``item_scores`` in the run's order."""
    items: dict[str, int] = {}
    positives: dict[str, list[int]] = {}
    judged: set[str] = set()
    for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                           qrels.label.tolist()):
        judged.add(q)
        if label >= threshold:  # ranking_eval's pos_items: rating >= rating_threshold
            positives.setdefault(q, []).append(items.setdefault(d, len(items)))
    lists: dict[str, tuple[list[int], list[float]]] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        if q in judged:
            ids, scores = lists.setdefault(q, ([], []))
            ids.append(items.setdefault(d, len(items)))
            scores.append(s)
    out = []
    for q in sorted(lists):
        if q not in positives:
            continue  # ranking_eval: `if len(test_pos_items) == 0: continue`
        ids, scores = lists[q]
        item_indices, item_scores = np.asarray(ids), np.asarray(scores, dtype=np.float64)
        pd_rank = item_indices[item_scores.argsort()[::-1]]  # Recommender.rank, k=-1
        out.append((q, np.asarray(positives[q]), pd_rank, item_indices, item_scores))
    return out


class CornacEntry(Entry):
    name = "cornac"
    library = "cornac"
    module = "cornac"
    distribution = "cornac"
    tolerance = 1e-12
    description = "cornac.metrics ranking classes on what ranking_eval hands them (threshold 1.0)"

    # MRR takes no k; FMeasure takes no beta (F1 only); the threshold is ranking_eval's
    # rating_threshold
    support = Support(families=frozenset(_CLASSES),
                      no_cutoff=frozenset(f for f, (_, k) in _CLASSES.items() if not k),
                      free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        return _PROFILES.get(measure.family, PROFILE)

    def default_profile(self) -> Conventions:
        return PROFILE

    def _threshold(self, measure: Measure) -> float:
        return float(measure.conventions(self.profile(measure)).relevance_threshold)

    # known_failure is checked, not trusted (Entry): MRR raises ValueError on such a user, MAP
    # and AUC give NaN; the differential's clean cases were refused 1 of 16 on a random draw, 7 of 16
    # on CI's fixed one; AUC also gives NaN on a user whose list holds no negative, so it is
    # refused more: 10 of 16 on CI's fixed draw
    known_failure_shows = frozenset({"raises", "wrong_values"})
    known_failure_ceiling = {"RR": 0.6, "AP": 0.6, "AUROC": 0.7, "*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """MRR or MAP on a user none of whose positive items is ranked: cornac raises, or
        gives NaN; AUC on a user whose ranking holds no positive or no negative item: NaN (see
        the module docstring). Smallest cases: qrels {u1: {a: 1}}, run {u1: {b: 1.0}}; for AUC
        also run {u1: {a: 1.0}}."""
        if measure is None or measure.family not in _NO_MATCH or not self.supports(measure):
            return None
        for qid, gt_pos, pd_rank, _, _ in _users(qrels, run, self._threshold(measure)):
            hit = np.isin(pd_rank, gt_pos)
            if not hit.any() or (measure.family == "AUROC" and hit.all()):
                return _NO_MATCH[measure.family].format(qid=qid)
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        import cornac.metrics

        cls_name, takes_k = _CLASSES[measure.family]
        cls = getattr(cornac.metrics, cls_name)
        metric = cls(k=measure.cutoff if measure.cutoff is not None else -1) if takes_k else cls()
        users = _users(qrels, run, self._threshold(measure))
        if measure.family in _SCORED:  # MAP, AUC read the candidates' scores, not the ranking
            per_query = {qid: float(metric.compute(item_indices=items, pd_scores=scores,
                                                   gt_pos=gt_pos))
                         for qid, gt_pos, _, items, scores in users}
        else:
            per_query = {qid: float(metric.compute(gt_pos=gt_pos, pd_rank=pd_rank))
                         for qid, gt_pos, pd_rank, _, _ in users}
        # no mean: ranking_eval's (a plain sum over len) is not called, the metrics are
        return LibraryValues(per_query=per_query)


class CornacNCRREntry(CornacEntry):
    """``NCRR(k)`` on the same translation, offered as nDCG under ``NCRR_PROFILE``."""

    name = "cornac:ncrr"
    description = "cornac.metrics NCRR (1/rank discount, ideal cut at min(k, n)) as nDCG"
    support = Support(families=frozenset({"nDCG"}), free_axes=frozenset({"relevance_threshold"}))

    def profile(self, measure: Measure) -> Conventions:
        return NCRR_PROFILE

    def default_profile(self) -> Conventions:
        return NCRR_PROFILE

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        from cornac.metrics import NCRR

        metric = NCRR(k=measure.cutoff if measure.cutoff is not None else -1)
        return LibraryValues(per_query={
            qid: float(metric.compute(gt_pos=gt_pos, pd_rank=pd_rank))
            for qid, gt_pos, pd_rank, _, _ in _users(qrels, run, self._threshold(measure))})


ENTRIES: list[Entry] = [CornacEntry(), CornacNCRREntry()]
