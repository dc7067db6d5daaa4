"""Microsoft Recommenders (side environment ``recommenders``): the ranking metrics of
``recommenders.evaluation.python_evaluation``.

Translation: the two frames a Recommenders user passes, built from a run and its qrels::

    rating_true = DataFrame(userID, itemID, rating)       # the judged documents whose label
                                                          # reaches the threshold (default 1)
    rating_pred = DataFrame(userID, itemID, prediction)   # the run's rows, in the run's order

then one call per measure, with the library's default ``relevancy_method="top_k"``::

    ndcg_at_k(rating_true, rating_pred, k=k, score_type=..., discfun_type="loge")

Every ``rating_true`` row is a relevant item to the library (``merge_ranking_true_pred`` merges
the top k with it and counts its rows as ``actual``), so the adapter passes only the judged
documents whose label reaches the threshold; the graded entries read their labels as gains.

The functions return one mean. Each user's value is the same call on that user's rows alone
(every function averages over users, so a frame of one user gives that user's value); the
entry's ``mean`` is the call on all the rows.

=================  ============================================================  ============
measure            call                                                          entry
=================  ============================================================  ============
nDCG@k             ``ndcg_at_k(k=k)`` (``score_type`` binary, raw, exp)          all three
nDCG               ``ndcg_at_k`` with k = max(longest list, largest R)           all three
P@k                ``precision_at_k(k=k)``                                       recommenders
R@k, R             ``recall_at_k(k=k)``; R with k = the longest list             recommenders
AP@k               ``map_at_k(k=k)`` (divides by min(k, R))                      recommenders
AP@k (over R), AP  ``map(k=k)`` (divides by R); AP with k = the longest list     recommenders
Rprec              ``r_precision_at_k`` with k = the user's R (its mean: k =     recommenders
                   the largest R)
=================  ============================================================  ============

Not supported, and why: ``P`` without a cutoff (``precision_at_k`` divides by k, so there is
no set precision), ``relevancy_method="by_threshold"`` (a library finding, below) and
``relevancy_method=None`` (it reads the prediction frame's row order and does not cut it at k:
``precision_at_k(k=1)`` of the list e, a, c with a relevant is 1.0, the hit at rank 2 counted
over k = 1; the caller is meant to pass its top k already, so there is no ranking of the run for
it to translate); the rating and diversity metrics (not ranking measures).

Facts behind the profiles (recommenders 1.2.1, ``recommenders/evaluation/python_evaluation.py``;
each confirmed live by ``tests/libs/test_recommenders.py``):

- the ranking: ``get_top_k_items`` sorts by ``[userID, prediction]`` (descending prediction)
  and numbers the rows with ``cumcount() + 1``; pandas sorts on two keys stably, so equal
  predictions keep the frame's order (``ties=input_order``; live, 40 tied items, the relevant
  one 18th: ``map_at_k`` = 1/18);
- users: P, R, MAP and r-precision divide by the users in both frames (``n_users =
  len(common_users)``), each scoring 0 without a hit (``query_set=run``); ``ndcg_at_k``
  merges the hits with the whole ``rating_true`` (``how="outer"``), so every user of it counts,
  one missing from the predictions scoring 0 (``query_set=qrels``; live: users u1 (a hit) and
  u2 (no prediction) give 0.5); a user with no relevant item is in no frame
  (``empty_query=skip``);
- nDCG: gain 1 per hit (``score_type="binary"``), the rating (``"raw"``: linear) or
  ``2**rating - 1`` (``"exp"``); discount ``1 / discfun(1 + rank)``, ``np.log`` by default or
  ``np.log2``: the base cancels in dcg / idcg (``discount=log2`` for both, within 1e-15 live);
  the ideal sorts the user's ``rating_true`` rows by rating and keeps ``head(k)``: min(k, R)
  slots of the judged relevant documents (``ideal=judged``); the ideal and the gains read only
  the labels that reach the threshold (``threshold_scope=graded``);
- P@k = hits in the top k / k, even when the list is shorter (``k_beyond_list=k``; live: P@5
  of c, a, e = 0.2); R@k = hits / R;
- ``map_at_k`` divides the sum of precisions at the hits by min(R, k)
  (``ap_denominator=min_k_relevant``), ``map`` by R (``ap_denominator=relevant``);
- a document predicted twice is two rows, each ranked and each merged with its truth row
  (``duplicates=keep`` for P, R, MAP; live: positives {a, f}, list a, a, c: P@3 = 2/3, R@3 =
  1.0, ``map_at_k`` = 1.0);
- scores are read as float64 (``score_precision=float64``);
- finding, refused by the adapter (``known_failure``): ``ndcg_at_k`` merges the hits with the
  whole ``rating_pred`` again (``df_hit.merge(rating_pred, on=[user, item])``), so a relevant
  document predicted m times, once in the top k, is m hit rows, each with the gain of every
  listing, and the ideal gets those rows too: live, positives {a, f}, list a, a, c, nDCG@3 =
  1.5307 (no duplicate rule gives above 1);
- finding, refused by the adapter: ``r_precision_at_k`` divides per-user hit counts by per-user
  R as two pandas Series and takes ``.mean()``, which skips NaN: a user with no hit in its top R
  (not in the first Series) is left out of the mean instead of scoring 0. Live: u1 relevant a
  ranked first, u2 relevant x and list y: 1.0, where the mean of the users' values is 0.5;
  and when no user has a hit in its top R but one has a hit in the top largest R (the call's
  k), the division is empty and its mean NaN (live: u1 relevant a, list b, a; u2 relevant x,
  z, list y: NaN, where both users score 0) (found by the 10,000-case long fuzz);
- finding (no entry calls it): ``relevancy_method="by_threshold"`` takes the top ``threshold``
  items (``top_k = threshold``, a count), and ``precision_at_k`` still divides by k, so values
  above 1 come out: live, one user, positives {a, b}, list a, b, ``precision_at_k(k=1,
  relevancy_method="by_threshold", threshold=2)`` = 2.0.

Environment: recommenders 1.2.1 requires pandas<3 (and, with its full dependency set,
jupyter, cornac, lightgbm, transformers and more); ``python_evaluation`` imports only numpy,
pandas and scikit-learn, so its environment installs the library without its dependencies
plus those three (``conformance.environments``).
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, FreeValues, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    # discount=log2 (the default): dcg = rel / discfun(1 + rank); np.log's base cancels
    # ideal=judged (the default): idcg over head(k) of the user's rating_true rows
    # k_beyond_list=k (the default): precision_at_k: (hit / k).sum() / n_users
    # ap_denominator=relevant (the default): map: rr / actual (AP@k: map_at_k, below)
    empty_query="skip",  # a user with no relevant item is in neither frame (adapter)
    ties="input_order",  # get_top_k_items: sort_values([user, prediction]) is stable on 2 keys
    # relevance_threshold=1 (the default): rating_true holds the labels >= 1 (adapter)
    threshold_scope="graded",  # labels below the threshold are not in rating_true at all
    # negative_labels=unjudged (the default): a label below the threshold is not passed
    # label_type=float (the default): the ratings are floats
    query_set="run",  # precision_at_k etc.: n_users = len(common_users)
    # score_precision=float64 (the default): prediction column float64
    # rank_source=score (the default): rank = cumcount after sorting by prediction
    duplicates="keep",  # each predicted row is ranked and merged with the truth
)
NDCG_PROFILE = PROFILE.replace(gain="binary", query_set="qrels")  # outer merge with rating_true
APK_PROFILE = PROFILE.replace(ap_denominator="min_k_relevant")  # map_at_k: / min(actual, k)

_FUNCTIONS = {"P": "precision_at_k", "R": "recall_at_k", "Rprec": "r_precision_at_k"}
_NDCG_SCORE = {"binary": "binary", "linear": "raw", "exponential": "exp"}


def python_evaluation(function: str, rating_true: list, rating_pred: list, **kwargs) -> float:
    """``recommenders.evaluation.python_evaluation.<function>(rating_true, rating_pred,
    **kwargs)`` on frames made from (user, item, rating) and (user, item, prediction) rows, as
    a float. Module-level, so a test can ask it of the environment's worker."""
    import pandas as pd
    from recommenders.evaluation import python_evaluation as pe

    true = pd.DataFrame(rating_true, columns=["userID", "itemID", "rating"])
    pred = pd.DataFrame(rating_pred, columns=["userID", "itemID", "prediction"])
    true = true.astype({"userID": object, "itemID": object, "rating": "float64"})
    pred = pred.astype({"userID": object, "itemID": object, "prediction": "float64"})
    return float(getattr(pe, function)(true, pred, **kwargs))


def _rows(qrels: Qrels, run: Run, threshold: float) -> tuple[list, list]:
    """(rating_true rows: the judged documents whose label reaches the threshold, in qrels
    order; rating_pred rows: the run's rows in the run's order)."""
    true = [(q, d, float(label)) for q, d, label in zip(
        qrels.query_ids().tolist(), qrels.doc_ids().tolist(), qrels.label.tolist())
        if label >= threshold]
    pred = [(q, d, float(s)) for q, d, s in zip(
        run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist())]
    return true, pred


def _by_user(rows: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for row in rows:
        out.setdefault(row[0], []).append(row)
    return out


def _ranked(pred: list) -> dict[str, list[str]]:
    """Each user's items in ``get_top_k_items``' order: prediction descending, ties in frame
    order (for ``known_failure``'s predicates only)."""
    out: dict[str, list[str]] = {}
    for u, rows in _by_user(pred).items():
        out[u] = [d for _, d, _ in sorted(rows, key=lambda r: -r[2])]
    return out


class RecommendersEntry(Entry):
    library = "recommenders"
    module = "recommenders.evaluation.python_evaluation"
    distribution = "recommenders"
    environment = "recommenders"
    tolerance = 1e-12  # float64 pandas sums; np.log against log2 differs in the last bits

    def __init__(self, name: str, score_type: str, description: str):
        self.name = name
        self.score_type = score_type  # ndcg_at_k's score_type
        self.description = description
        # gain=exponential: ndcg_at_k(score_type="exp") takes 2 ** rating - 1 as the gain (live)
        self._ndcg = NDCG_PROFILE.replace(gain={"binary": "binary", "raw": "linear",
                                                "exp": "exponential"}[score_type])

    @property
    def support(self) -> Support:
        # score_type changes ndcg_at_k only: the others are "recommenders"'; precision_at_k
        # divides by k (no set precision); AP@k is map_at_k (min(k, R)) or map (R)
        return Support(
            families=frozenset({"nDCG", "P", "R", "AP", "Rprec"} if self.score_type == "binary"
                               else {"nDCG"}),
            needs_cutoff=frozenset({"P"}), least_cutoff=1,
            free_axes=frozenset({"relevance_threshold"}),
            free_values=(FreeValues("AP", "ap_denominator",
                                    frozenset({"min_k_relevant", "relevant"}), cutoff=True),))

    def profile(self, measure: Measure) -> Conventions:
        if measure.family == "nDCG":
            return self._ndcg
        if measure.family == "AP" and measure.cutoff is not None:
            return APK_PROFILE
        return PROFILE

    def default_profile(self) -> Conventions:
        return self._ndcg

    # known_failure is checked, not trusted (Entry): both refusals are wrong values. The
    # differential's duplicate-listing cases list a relevant document twice most of the time:
    # nDCG without a cutoff (every listing in the top k) refused 26 of 40 of them; its clean
    # cases none. Rprec refuses wherever one user of several misses its top R
    known_failure_shows = frozenset({"wrong_values"})
    known_failure_ceiling = {"nDCG": 0.75, "Rprec": 0.75, "*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """nDCG on a relevant document listed twice by a user, one listing in the top k (the
        hits are merged with every listing); Rprec where some user has no hit in its top R
        while another has one (the mean skips the first), or where no user has one but some
        user has a hit in the top largest R (the mean of no value: NaN). Smallest cases: nDCG@2,
        qrels {u1: {a: 1}}, run {u1: a 2.0, a 1.0}; Rprec, qrels {u1: {a: 1}, u2: {x: 1}}, run
        {u1: a, u2: y}; Rprec, qrels {u1: {a: 1}, u2: {x: 1, z: 1}}, run {u1: b, a; u2: y}
        (u1 misses its top 1, holds a in its top 2)."""
        if measure is None or not self.supports(measure) or measure.family not in ("nDCG", "Rprec"):
            return None
        conv = measure.conventions(self.profile(measure))
        true, pred = _rows(qrels, run, conv.relevance_threshold)
        relevant = {u: {d for _, d, _ in rows} for u, rows in _by_user(true).items()}
        ranked = _ranked(pred)
        if measure.family == "nDCG":
            k = self._k(measure, true, pred)
            for u, items in ranked.items():
                top = set(items[:k]) & relevant.get(u, set())
                if any(items.count(d) > 1 for d in top):
                    return (f"refused by the adapter: user {u!r} lists a relevant document more "
                            "than once, and Recommenders' ndcg_at_k merges its hit with every "
                            "listing (a gain per pair; nDCG above 1)")
            return None
        scored = [u for u in ranked if u in relevant]
        zero = [u for u in scored if not set(ranked[u][:len(relevant[u])]) & relevant[u]]
        if zero and len(zero) < len(scored):
            return (f"refused by the adapter: user {zero[0]!r} has no relevant document in its "
                    "top R, and Recommenders' r_precision_at_k leaves such a user out of its "
                    "mean (pandas' mean skips the NaN of the division) instead of counting 0")
        # every user misses its top R: the mean is 0.0 only when no hit is in the call's top k
        # (the largest R: `if df_hit.shape[0] == 0: return 0.0`), else the mean of no value, NaN
        k_call = max((len(v) for v in relevant.values()), default=0)
        if zero and any(set(ranked[u][:k_call]) & relevant[u] for u in scored):
            return (f"refused by the adapter: no user has a relevant document in its top R, but "
                    f"user {next(u for u in scored if set(ranked[u][:k_call]) & relevant[u])!r} "
                    "has one in the top largest-R, and Recommenders' r_precision_at_k then "
                    "averages no value: NaN, where every user scores 0")
        return None

    def _k(self, measure: Measure, true: list, pred: list) -> int:
        """The k of the call: the cutoff, or (no cutoff) one that cuts nothing."""
        if measure.cutoff is not None:
            return int(measure.cutoff)
        longest = max((len(v) for v in _by_user(pred).values()), default=0)
        if measure.family == "nDCG":  # idcg keeps head(k) of the truth rows too
            most = max((len(v) for v in _by_user(true).values()), default=0)
            return max(longest, most, 1)
        return max(longest, 1)

    def _call(self, measure: Measure, conv: Conventions, true: list, pred: list, k: int) -> float:
        f = measure.family
        if f == "nDCG":
            return python_evaluation("ndcg_at_k", true, pred, k=k, score_type=self.score_type)
        if f == "AP":
            name = "map_at_k" if conv.ap_denominator == "min_k_relevant" else "map"
            return python_evaluation(name, true, pred, k=k)
        return python_evaluation(_FUNCTIONS[f], true, pred, k=k)

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        conv = measure.conventions(self.profile(measure))
        true, pred = _rows(qrels, run, conv.relevance_threshold)
        truth, preds = _by_user(true), _by_user(pred)
        if measure.family == "nDCG":
            users = list(truth)  # ndcg_at_k: every rating_true user, outer merge
        else:
            users = [u for u in truth if u in preds]  # common_users
        if not users:
            return LibraryValues(per_query={}, mean=None)
        k = self._k(measure, true, pred)
        per_query = {}
        for u in users:
            # Rprec: k = the user's R, so r_precision_at_k counts the hits in its top R
            ku = len(truth[u]) if measure.family == "Rprec" else k
            per_query[u] = self._call(measure, conv, truth[u], preds.get(u, []), ku)
        mean = self._call(measure, conv, true, pred,
                          max(len(v) for v in truth.values()) if measure.family == "Rprec" else k)
        return LibraryValues(per_query=per_query, mean=mean)


ENTRIES: list[Entry] = [
    RecommendersEntry("recommenders", "binary",
                      "python_evaluation's ranking metrics, relevancy_method='top_k' (nDCG: "
                      "score_type='binary')"),
    RecommendersEntry("recommenders:raw", "raw",
                      "python_evaluation.ndcg_at_k with score_type='raw' (the rating is the gain)"),
    RecommendersEntry("recommenders:exp", "exp",
                      "python_evaluation.ndcg_at_k with score_type='exp' (gain 2^rating - 1)"),
]
