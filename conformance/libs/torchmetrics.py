"""torchmetrics (optional extra): the ``torchmetrics.retrieval`` metric classes.

Translation (``conformance.libs._listwise``): for each query in both the run and the qrels, its
retrieved documents in run listing order, the run's scores and each document's qrels label (0
when unjudged). The library sees nothing else: judged documents that were not retrieved and
queries judged but not retrieved do not exist for it. The call, for all queries at once::

    metric = RetrievalNormalizedDCG(top_k=k, empty_target_action=..., aggregation=capture)
    metric.update(preds, target, indexes)   # float64 scores, labels, query number per document
    metric.compute()

``preds`` are the scores as float64 tensors (the library narrows them to float32), ``indexes`` the
query's position among the sorted query ids. ``target`` is the label itself for
``RetrievalNormalizedDCG`` (graded), and ``label >= L`` (bool) for the others, which refuse
targets outside [0, 1] ("`target` must contain `binary` values"): binarising is the step every
user of these classes writes. ``aggregation`` is a callable that keeps the per-query tensor the
library hands it (one value per query, in ``indexes`` order, after ``empty_target_action``) and
returns the library's own ``_retrieval_aggregate(values, "mean")``: so one call gives both the
per-query values and the library's mean. Under ``empty_target_action='skip'`` the skipped
queries are missing from that tensor; each query is then also computed alone, and a query for
which the library calls no aggregation at all (``res`` empty) is the skipped one.

======================  ==================================================================
measure                 class (``top_k=k``; no cutoff: ``top_k=None``, the whole list)
======================  ==================================================================
nDCG, nDCG@k            ``RetrievalNormalizedDCG``
AP, AP@k                ``RetrievalMAP``
RR, RR@k                ``RetrievalMRR``
P@k                     ``RetrievalPrecision`` (``adaptive_k=True`` for torchmetrics:adaptive_k)
R, R@k                  ``RetrievalRecall``
Success, Success@k      ``RetrievalHitRate``
Rprec                   ``RetrievalRPrecision``
FallOut, FallOut@k      ``RetrievalFallOut``
AUROC                   ``RetrievalAUROC`` (``top_k=None``; see below)
RecallAtPrecision(p)@k  ``RetrievalRecallAtFixedPrecision(min_precision=p, max_k=k)``
======================  ==================================================================

Entries: one per ``empty_target_action`` ('neg', the default, scores 0; 'pos' 1; 'skip' leaves
the query out; 'error' raises ValueError), and ``torchmetrics:adaptive_k`` for P@k.

Facts behind the profiles (torchmetrics 1.9.0 on torch 2.13.0+cpu, ``functional/retrieval/*.py``
and ``retrieval/base.py``; each confirmed live by ``tests/libs/test_torchmetrics.py``):

- everything is float32: ``_check_retrieval_target_and_prediction_types`` returns
  ``preds.float()`` and a float ``target`` as float32; values come back as float32 tensors
  (tolerance 1e-6);
- nDCG: gain = the target (linear, fractional and negative labels used as they are), discount
  ``1 / log2(rank + 1)``, ideal = the same targets sorted (the list only), ties averaged by
  ``_tie_average_dcg`` (``torch.unique`` on the float32 scores: mean gain of the group times the
  sum of its discounts, cut at k); live: qrels {a:0, b:1} tied -> nDCG@1 0.5;
- every other metric orders documents with ``torch.topk`` (AP, RR, P) or
  ``torch.argsort(descending=True)`` (R, HitRate, RPrecision), neither stable nor by doc id: live
  on CPU, ``topk`` of 5 equal scores gives positions [2, 4, 3, 0, 1], ``argsort`` of 20 equal
  scores starts [10, 19, 18, ...]; so ties are unspecified (the reference gives the range). The
  claim "ties always averaged" holds for nDCG only;
- P@k divides by k even when the list is shorter (``adaptive_k=True``: by the list length when
  k exceeds it); AP divides by the relevant documents found in the top k; R and RPrecision count
  R as the relevant documents of the list (``target.sum()``); RR@k only looks at the top k;
- empty query: ``RetrievalMetric.compute`` applies ``empty_target_action`` when
  ``mini_target.sum()`` is 0 for the query, before any metric runs;
- AP, RR, P and R treat a document whose (float32) score is <= 0 as not relevant
  (``torch.where(preds > 0, target, 0)``) while it keeps its rank; R's denominator and the empty
  test still count it; HitRate, RPrecision and nDCG do not mask. The axis
  ``nonpositive_scores=not_relevant`` describes it (profile of AP, RR, P, R). Smallest case:
  one relevant document scored 0.0 (or -1.0): AP = RR = P@1 = R@1 = 0, Success@1 = Rprec =
  nDCG = 1; labels [1, 1] scored [1.0, -1.0]: R = 0.5;
- finding, refused by the adapter (profile ``negative_labels=raise`` for nDCG): nDCG calls a
  query empty when its labels *sum* to 0 (``not mini_target.sum()``), not when its ideal DCG is
  <= 0: labels [2, -2] ranked perfectly score 0 under 'neg' (the ideal is 0.738); and a list
  whose ideal DCG is negative is divided through: labels [-1, 0] tied score 1.2925, above 1.
  No convention gives either, so the adapter refuses a negative label in a list it would pass
  to ``RetrievalNormalizedDCG`` (labels of documents not retrieved never reach the library);
- under 'skip', when every query is skipped, the mean is 0.0 (``tensor(0.0)``), not undefined;
- AP@k orders by ``topk`` (unspecified ties) and divides by the relevant documents found in
  the top k: when the cut splits a tied group of relevant and non-relevant documents, the
  reference gives the range over the orders of that group (``formulas._ap_retrieved_relevant_end``);
- FallOut (fall_out.py): the non-relevant documents of the top k (``argsort``, unspecified
  ties) over those of the list (ideal=retrieved); its query is empty when the list holds no
  non-relevant document (``RetrievalFallOut.compute``: ``not (1 - mini_target).sum()``), and
  the class's own default ``empty_target_action`` is 'pos' (the entries pass theirs); no
  masking of scores <= 0;
- AUROC (auroc.py): ``binary_auroc`` of the float32 scores of the top k, so a tied pair of a
  relevant and a non-relevant document counts 1/2: ``ties=average``; 0 when the top k holds
  one class only; empty (``empty_target_action``) when the list holds no relevant document.
  Finding, refused by the adapter: ``binary_auroc`` reads a list holding a score outside
  [0, 1] as logits and applies a float32 sigmoid, which merges distinct scores (every score
  within about 3e-8 of 0 becomes 0.5, every score above about 17 becomes 1.0) and counts the
  pairs it merged 1/2 (live: scores 2.0, 4.7e-25 (relevant), 0.0 give 0.25, not 0.5). No
  convention gives that (torch's float32 sigmoid is not numpy's to the last bit), so the
  adapter refuses a list where the sigmoid may merge two distinct scores: their float32
  sigmoids (computed in double) within two float32 steps of each other.
  With ``top_k`` the top k is taken by ``topk`` (unspecified ties), which no profile describes
  when the cut splits a tied group: only AUROC without a cutoff is supported;
- RecallAtPrecision (precision_recall_curve.py): per query, P@j and R@j for j = 1..max_k
  (``max_k=None``: the longest list), R over the list's relevant documents, P@j over j past
  the list's end (``adaptive_k=False``); ``compute`` averages the curves over the queries
  (an empty query's curves are zeros under 'neg', ones under 'pos', left out under 'skip')
  and returns the highest mean recall whose mean precision reaches min_precision, and its k:
  a value of the whole evaluation, not a mean of per-query values (Family.aggregate
  "curve"). The per-query values are the same call on each query alone.
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._listwise import ranked_lists
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    # gain=linear (the default): ndcg.py _dcg_sample_scores: discount * target (nDCG only; others binary)
    # discount=log2 (the default): ndcg.py: 1.0 / log2(arange(n) + 2.0)
    ideal="retrieved",  # ndcg.py: _dcg_sample_scores(target, target, ...): the list's labels;
    # precision/recall/r_precision: R = target.sum(), the list's relevant documents
    # k_beyond_list=k (the default): precision.py: relevant / top_k, top_k kept unless adaptive_k
    ap_denominator="retrieved_relevant",  # average_precision.py: mean over relevant in the top k
    # empty_query=zero (the default): base.py compute: empty_target_action='neg' -> tensor(0.0), counted
    ties="unspecified",  # topk / argsort (live: neither stable nor by id); nDCG: see below
    # relevance_threshold=1 (the default): the adapter's target = label >= 1 for the binary metrics
    # threshold_scope=binary (the default): nDCG gets the raw labels whatever the threshold
    negative_labels="keep",  # nDCG: target used as it is (negative gain, in the ideal, live);
    # binary metrics: label >= L is False for them, as for any label below L
    # label_type=float (the default): nDCG: a float target stays float32 (live: 0.5, 1.5 used as is)
    # query_set=run (the default): the adapter's translation (_listwise): queries in both run and qrels
    # depth=none (the default): the whole list is given
    score_precision="float32",  # checks.py: preds.float()
    # rr_cutoff=honour (the default): reciprocal_rank.py: target[preds.topk(min(top_k, n))]
    # rank_source=score (the default)
    duplicates="keep",  # the adapter passes every run line: torchmetrics sees scores, not docids
)
NDCG_PROFILE = PROFILE.replace(
    ties="average",  # ndcg.py _tie_average_dcg: torch.unique groups (live: tied pair -> 0.5)
    # the adapter refuses a negative label in a list (see the docstring: the library's empty
    # test is "labels sum to 0" and it divides by a negative ideal DCG)
    negative_labels="raise",
)
# average_precision.py, reciprocal_rank.py, precision.py, recall.py:
# target = torch.where(preds > 0, target, 0) before ranking; R (recall) and the empty test
# (base.py) read the unmasked target. hit_rate.py, r_precision.py and ndcg.py do not mask.
MASKING_FAMILIES = {"AP", "RR", "P", "R"}
EMPTY_QUERY = {  # empty_target_action -> empty_query (base.py RetrievalMetric.compute)
    "neg": "zero",  # res.append(tensor(0.0))
    "pos": "one",  # res.append(tensor(1.0))
    "skip": "skip",  # nothing appended: left out of the aggregate
    "error": "raise",  # ValueError "`compute` method was provided with a query with no positive target."
}

_CLASSES = {
    "nDCG": "RetrievalNormalizedDCG",
    "AP": "RetrievalMAP",
    "RR": "RetrievalMRR",
    "P": "RetrievalPrecision",
    "R": "RetrievalRecall",
    "Success": "RetrievalHitRate",
    "Rprec": "RetrievalRPrecision",
    "FallOut": "RetrievalFallOut",
    "AUROC": "RetrievalAUROC",
    "RecallAtPrecision": "RetrievalRecallAtFixedPrecision",
}
# auroc.py: binary_auroc of the scores, a tied pair counting 1/2
AUROC_PROFILE = PROFILE.replace(ties="average")


class TorchmetricsEntry(Entry):
    library = "torchmetrics"
    module = "torchmetrics"
    distribution = "torchmetrics"
    # Tolerance: float32 throughout (targets, scores, sums): a few float32 roundings of 2^-24 on
    # a value up to 1, 1e-6, and more on long lists (float32_sums, Entry.tolerance_for)
    tolerance = 1e-6
    float32_sums = True  # ndcg.py, precision_recall_curve.py: sums of float32 tensors

    def __init__(self, name: str, description: str, *, action: str = "neg",
                 adaptive_k: bool = False):
        self.name = name
        self.description = description
        self.action = action
        self.adaptive_k = adaptive_k
        self.families = ("P",) if adaptive_k else tuple(_CLASSES)

    def _base_profile(self, family: str) -> Conventions:
        conv = {"nDCG": NDCG_PROFILE, "AUROC": AUROC_PROFILE}.get(family, PROFILE)
        # base.py RetrievalMetric.compute, by empty_target_action: 'neg' appends tensor(0.0)
        # (zero), 'pos' tensor(1.0) (one), 'skip' nothing (skip), 'error' raises (raise)
        conv = conv.replace(empty_query=EMPTY_QUERY[self.action])
        if family in MASKING_FAMILIES:
            # average_precision.py, reciprocal_rank.py, precision.py, recall.py:
            # torch.where(preds > 0, target, 0) before ranking (live: a relevant document scored
            # 0 counts as not relevant)
            conv = conv.replace(nonpositive_scores="not_relevant")
        if self.adaptive_k:
            conv = conv.replace(k_beyond_list="min_k_n")  # precision.py: adaptive_k and top_k > n
        return conv

    # every family's own cutoff rule is torchmetrics' (P needs k); AUROC takes none: topk's
    # unspecified ties choose the top k (see the module docstring)
    @property
    def support(self) -> Support:
        return Support(families=frozenset(self.families), no_cutoff=frozenset({"AUROC"}),
                       free_axes=frozenset({"relevance_threshold"}), min_threshold=1,
                       parameters=frozenset({"min_precision"}))

    def free_axes(self, measure: Measure) -> frozenset:
        # the threshold is the adapter's binarisation of the labels; nDCG reads them graded
        return frozenset() if measure.family == "nDCG" else self.support.free_axes

    def profile(self, measure: Measure) -> Conventions:
        return self._base_profile(measure.family)

    def default_profile(self) -> Conventions:
        return self._base_profile(self.families[0])

    def _metric(self, measure: Measure, aggregation):
        import torchmetrics.retrieval as tr

        kwargs = {"empty_target_action": self.action, "aggregation": aggregation}
        if measure.family == "RecallAtPrecision":
            kwargs.update(max_k=measure.cutoff, min_precision=float(measure.param("min_precision")))
        elif measure.family != "Rprec":
            kwargs["top_k"] = measure.cutoff
        if self.adaptive_k:
            kwargs["adaptive_k"] = True
        return getattr(tr, _CLASSES[measure.family])(**kwargs)

    def _call(self, measure: Measure, preds, target, indexes):
        """(the per-query tensor the library aggregated, or None if it aggregated nothing;
        the library's mean)."""
        from torchmetrics.retrieval.base import _retrieval_aggregate

        captured = []

        def aggregation(values, dim=None):
            captured.append(values.detach().clone())
            return _retrieval_aggregate(values, "mean", dim)

        metric = self._metric(measure, aggregation)
        metric.update(preds, target, indexes)
        result = metric.compute()
        if measure.family == "RecallAtPrecision":  # (max recall, its k): the recall
            result = result[0]
        mean = float(result)
        return (captured[0] if captured else None), mean

    # skip: a mean of 0.0 for no query (a wrong value); AUROC and RecallAtPrecision: values decided
    # by float32 rounding (wrong values where the rounding goes the other way). The ceiling:
    # under skip, a case none of whose queries has a relevant document (measured: up to 40% of
    # a run's clean cases). Under ``error`` the library may raise first, on an empty query the
    # same case holds (seen in the long fuzz: AUROC)
    known_failure_shows = frozenset({"wrong_values", "rounding", "raises"})
    # RecallAtPrecision's refusal (a mean P@j within float32 rounding of min_precision) covers
    # most short lists, whose P@j is often exactly 1/2: measured 76% of a long run's cases
    # under ``error`` (a finding: the refusal is wider than the rounding it guards against)
    known_failure_ceiling = {"RecallAtPrecision": 0.85, "*": 0.6}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """Under 'skip', when every query is skipped the library's mean is 0.0 (base.py:
        ``tensor(0.0)`` when nothing was aggregated), not undefined: refused (smallest case:
        qrels {q1: {d1: 0}}, run {q1: {d1: 0.0}}, any measure). AUROC: a list whose sigmoid
        may merge distinct scores (see the module docstring; smallest case: qrels {q2: {d3:
        1}}, run {q2: {d2: 2.0, d3: 4.7e-25, d1: 0.0}})."""
        if measure is None or not self.supports(measure):
            return None
        if measure.family == "RecallAtPrecision":
            level = measure.conventions(self._base_profile(measure.family)).relevance_threshold
            near = _precision_at_threshold(ranked_lists(qrels, run), level, measure.cutoff,
                                           float(measure.param("min_precision")), self.action)
            if near is not None:
                j, exact = near
                return (f"refused by the adapter: torchmetrics averages P@j over the queries in "
                        f"float32, and the mean P@{j} here is {exact!r}, within float32 rounding "
                        f"of min_precision={measure.param('min_precision')!r}: whether rank {j} "
                        "counts is decided by the rounding, and so by the order of the queries "
                        "(smallest case: four lists of six documents, relevant at ranks {1, 6}, "
                        "{1, 2, 3, 6}, {1, 2, 3, 4, 6} and {1}: mean P@6 is exactly 1/2, and "
                        "min_precision=0.5 gives 0.7625 in this query order, 1.0 in reverse)")
        if measure.family == "AUROC":
            merged = _sigmoid_merges(ranked_lists(qrels, run))
            if merged is not None:
                return (f"refused by the adapter: torchmetrics' AUROC reads the scores of query "
                        f"{merged!r} as logits, and their float32 sigmoid may merge distinct scores")
        if self.action != "skip":
            return None
        lists = ranked_lists(qrels, run)
        if not lists:
            return None
        level = measure.conventions(self._base_profile(measure.family)).relevance_threshold
        if measure.family == "nDCG":
            empty = all(float(i.labels.sum()) == 0 for i in lists)
        elif measure.family == "FallOut":  # empty: no non-relevant target
            empty = all((i.labels >= level).all() for i in lists)
        else:
            empty = all(not (i.labels >= level).any() for i in lists)
        if not empty:
            return None
        return ("refused by the adapter: every query would be skipped, and then "
                "torchmetrics returns a mean of 0.0 for no query at all")

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        import torch

        lists = ranked_lists(qrels, run)
        if not lists:
            return LibraryValues()  # nothing to score: the library is not called
        threshold = measure.conventions(self._base_profile(measure.family)).relevance_threshold
        if measure.family == "nDCG":
            negative = [(i.qid, float(v)) for i in lists for v in i.labels if v < 0]
            if negative:
                # refused here, not passed on: the library's nDCG of a list holding a negative
                # label is not a value any convention gives (see the module docstring)
                qid, v = negative[0]
                return LibraryValues(error=(
                    f"refused by the adapter: query {qid!r} has the negative label {v!r}; "
                    "torchmetrics' nDCG calls a list empty when its labels sum to 0 and divides "
                    "by a negative ideal DCG"))

        def tensors(items):
            preds = torch.cat([torch.tensor(i.scores, dtype=torch.float64) for i in items])
            if measure.family == "nDCG":
                target = torch.cat([torch.tensor(i.labels, dtype=torch.float64) for i in items])
            else:
                target = torch.cat([torch.tensor(i.labels >= threshold) for i in items])
            indexes = torch.cat([torch.full((i.scores.size,), n, dtype=torch.long)
                                 for n, i in enumerate(items)])
            return preds, target, indexes

        values, mean = self._call(measure, *tensors(lists))
        if self.action != "skip" and measure.family != "RecallAtPrecision":
            assert values is not None and values.numel() == len(lists)
            per_query = {item.qid: float(v) for item, v in zip(lists, values.tolist())}
            return LibraryValues(per_query=per_query, mean=mean)
        per_query = {}
        for item in lists:
            alone, value = self._call(measure, *tensors([item]))
            if alone is not None:  # None: the library skipped the query
                # the curve measure's value alone is its compute(); the others' the tensor
                per_query[item.qid] = value if measure.family == "RecallAtPrecision" else float(alone[0])
        return LibraryValues(per_query=per_query, mean=mean)


def _precision_at_threshold(lists, level: float, cutoff: int | None, min_precision: float,
                            action: str) -> tuple[int, float] | None:
    """(j, the exact mean P@j) for the first rank j whose mean precision over the queries, as
    RetrievalRecallAtFixedPrecision averages it (precision_recall_curve.py: P@j = relevant in
    the top j / j, padded past the end of a list; an empty list's curve all 0 under 'neg', all
    1 under 'pos', left out under 'skip'), lies within float32 rounding of ``min_precision``
    under either end order of tied documents; None when none does. The bound: the float32
    unit roundoff times the number of queries summed, four times over."""
    import numpy as np

    if not lists:
        return None
    K = cutoff if cutoff is not None else max(len(i.scores) for i in lists)
    ranks = np.arange(1, K + 1, dtype=np.float64)
    for relevant_first in (True, False):
        counts = np.zeros(K)
        counted = 0
        for i in lists:
            rel = np.asarray(i.labels) >= level
            if not rel.any():
                if action == "skip":
                    continue
                counted += 1
                if action == "pos":
                    counts += ranks  # P@j = 1 at every j
                continue
            scores = np.asarray(i.scores, dtype=np.float32)  # the library's preds.float()
            order = np.lexsort((~rel if relevant_first else rel, -scores))
            cum = np.cumsum(rel[order])[:K]
            counts += np.concatenate([cum, np.full(K - cum.size, cum[-1] if cum.size else 0)])
            counted += 1
        if not counted:
            return None
        mean = counts / (counted * ranks)
        margin = 4 * counted * 2.0 ** -24 * max(1.0, abs(min_precision))
        near = np.flatnonzero(np.abs(mean - min_precision) <= margin)
        if near.size:
            return int(near[0]) + 1, float(mean[near[0]])
    return None


def _sigmoid_merges(lists) -> str | None:
    """The first query whose list holds a score outside [0, 1] and two distinct float32 scores
    whose float32 sigmoids lie within two float32 steps of each other, or None."""
    import numpy as np

    for item in lists:
        s32 = np.unique(np.asarray(item.scores, dtype=np.float64).astype(np.float32))
        if s32.size < 2 or ((s32 >= 0) & (s32 <= 1)).all():
            continue
        with np.errstate(over="ignore"):
            sig = (1.0 / (1.0 + np.exp(-s32.astype(np.float64)))).astype(np.float32)
        gap = np.diff(sig)
        if (gap <= 2 * np.spacing(sig[:-1])).any():
            return item.qid
    return None


ENTRIES: list[Entry] = [
    TorchmetricsEntry("torchmetrics", "torchmetrics.retrieval metrics, empty_target_action='neg' (default)"),
    TorchmetricsEntry("torchmetrics:pos", "empty_target_action='pos'", action="pos"),
    TorchmetricsEntry("torchmetrics:skip", "empty_target_action='skip'", action="skip"),
    TorchmetricsEntry("torchmetrics:error", "empty_target_action='error'", action="error"),
    TorchmetricsEntry("torchmetrics:adaptive_k", "RetrievalPrecision(adaptive_k=True)",
                      adaptive_k=True),
]
