"""The measures, each over all scored queries at once.

Each function takes a :class:`Context` (one ordering of the run under one convention set) and a
:class:`~conformance.measures.Measure`, and returns ``(values, empty)``: per-query values and the
mask of queries on which the measure is 0/0. ``evaluate`` then applies ``empty_query`` to the
masked queries. Notation, per query: k the cutoff (the whole list when absent), n the number of
documents retrieved (after ``depth``), kk = min(k, n), rel_i 1 if the document at rank i is
relevant (label >= L, ``relevance_threshold``), g_i its gain, d_i the discount at rank i.

R is the number of relevant documents in the *relevance universe*: every judged document of the
query under ``ideal=judged``, only the retrieved list under ``ideal=retrieved`` (libraries that
see only the list cannot know of anything else). A query with R = 0 (for DCG and nDCG: an ideal
DCG of 0) is *empty*. Under ``ties=average`` every rel_i and g_i below is its expected value over
the orders of its tie group (see ``ranking``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference.ranking import (Ranked, discounts, ideal_dcg, ideal_dcg_at, ideal_terms,
                                           range_sums)


class JudgedIdeal:
    """The ideal DCG of the judged documents (``ideal=judged``) per query at each cutoff asked:
    one sort of the judgments for every cutoff, shared by every Context of one evaluation (the
    two halves of a two-thread evaluation ask for the same values of every query)."""

    def __init__(self, gain: np.ndarray, q: np.ndarray, n_queries: int, conv: Conventions) -> None:
        self._args = (gain, q, n_queries, conv)
        self._terms = None
        self._at: dict[int | None, np.ndarray] = {}
        self._lock = threading.Lock()

    def idcg(self, k: int | None) -> np.ndarray:
        with self._lock:  # the other half waits for the values instead of computing them again
            if k not in self._at:
                if self._terms is None:
                    self._terms = ideal_terms(*self._args)
                self._at[k] = ideal_dcg_at(self._terms, k)
            return self._at[k]

    def idcg_within(self, k: int | None, lengths: np.ndarray) -> np.ndarray:
        """Per query: the ideal DCG cut at min(k, its list's length) (``ideal=judged_to_list``)."""
        with self._lock:
            if self._terms is None:
                self._terms = ideal_terms(*self._args)
            terms = self._terms
        contrib, start, n = terms
        return range_sums(contrib, start, np.minimum(n, lengths if k is None else np.minimum(lengths, k)))

Result = tuple[np.ndarray, np.ndarray]


@dataclass
class Context:
    conv: Conventions
    ranked: Ranked
    tie_rule: str
    R_judged: np.ndarray  # per query: relevant judged documents (label >= L)
    judged_gain: np.ndarray  # per qrels row of scored queries: gain
    judged_q: np.ndarray  # per qrels row of scored queries: query index
    _idcg: dict = field(default_factory=dict)
    # Under ties=unspecified: the context of the same rows grouped into tie groups (average),
    # used only to tell whether a cut splits a tied group.
    tie_groups: object = None
    # Under nonpositive_scores=not_relevant (binary measures): R of the unmasked list, since
    # the masked documents still count among the relevant ones (ideal=retrieved only).
    list_R: np.ndarray | None = None
    _gain_discount: object = None  # per row: e_gain * discount (shared by DCG and nDCG at any k)
    # the judged ideal, shared with the other Contexts of the evaluation (built here if not)
    judged_ideal: JudgedIdeal | None = None
    # () -> the Ranked of the same rows in the same order whose "relevant" rows are the
    # documents no qrels row names (Hole); set by evaluate
    unannotated: object = None

    def discounted_gains(self) -> np.ndarray:
        if self._gain_discount is None:
            r = self.ranked
            d = discounts(r.pos, self.conv)
            d *= r.e_gain  # x * y is y * x: the same values as e_gain * discounts
            self._gain_discount = d
        return self._gain_discount

    @property
    def R(self) -> np.ndarray:
        if self.conv.ideal == "retrieved":
            if self.list_R is not None:
                return self.list_R
            self.require_fixed_count(None, "ideal=retrieved with a depth cut")
            return self.ranked.upto(self.ranked.rel, None)
        return self.R_judged

    def idcg(self, k: int | None) -> np.ndarray:
        if k not in self._idcg:
            r = self.ranked
            if self.conv.ideal == "retrieved":
                self.require_fixed_gains(None, "ideal=retrieved with a depth cut")
                q = np.repeat(np.arange(r.n_queries), r.n)
                self._idcg[k] = ideal_dcg(r.gain, q, r.n_queries, self.conv, k)
            else:
                if self.judged_ideal is None:
                    self.judged_ideal = JudgedIdeal(self.judged_gain, self.judged_q, r.n_queries, self.conv)
                if self.conv.ideal == "judged_to_list":
                    self._idcg[k] = self.judged_ideal.idcg_within(k, r.n)
                else:
                    self._idcg[k] = self.judged_ideal.idcg(k)
        return self._idcg[k]

    def has_gain(self) -> np.ndarray:
        """Per query: whether some document of the ideal source (the judged documents, or the
        ranked list under ideal=retrieved) has a nonzero gain."""
        n = self.ranked.n_queries
        if self.conv.ideal == "retrieved":
            # which documents a depth cut keeps decides it, as it decides the retrieved ideal
            self.require_fixed_gains(None, "ideal=retrieved with a depth cut")
            g, q = self.ranked.gain, np.repeat(np.arange(n), self.ranked.n)
        else:
            g, q = self.judged_gain, self.judged_q
        nonzero = (g != 0) & ~np.isnan(g)
        return np.bincount(q[nonzero], minlength=n) > 0

    def list_denominator(self, k: int | None) -> np.ndarray:
        """k (``k_beyond_list=k``) or min(k, n) (``min_k_n``); n when there is no cutoff. Under
        ``duplicates=set`` n and min(k, n) count distinct documents (in the top k)."""
        kk = self.ranked.cut(k)
        if self.ranked.first is not None:
            kk = self.ranked.upto(self.ranked.first, k)
        if k is None or self.conv.k_beyond_list == "min_k_n":
            return kk.astype(np.float64)
        return np.full(self.ranked.n_queries, float(k))

    def relevant_in_top(self, k: int | None) -> np.ndarray:
        return self.ranked.upto(self.ranked.e_rel, k)

    def require_fixed_gains(self, k: int | None, what: str) -> None:
        """Refuse when, under ``ties=average``, the gains kept in the top k are random (a cut
        through a tied group of unequal gains) and feed a denominator (the retrieved ideal)."""
        grouped = self.ranked if self.tie_rule == "average" else (
            self.tie_groups().ranked if self.tie_groups is not None else None)
        if grouped is not None and grouped.splits_varied_group(k).any():
            raise EvaluationError(
                f"{what} under ties={self.conv.ties}: the cut splits a tied group of unequal "
                "gains, so the ideal depends on the order inside the group (no closed-form "
                "expectation, no proven worst and best order); choose another tie rule"
            )

    def require_fixed_count(self, k: int | None, what: str) -> None:
        """Refuse when, under ``ties=average`` or ``unspecified``, the relevant count in the top
        k depends on the order inside a tied group and sits in a denominator: the expectation
        of a ratio has no closed form, and the extreme orders of the numerator need not be
        those of the ratio."""
        grouped = self.ranked if self.tie_rule == "average" else (
            self.tie_groups().ranked if self.tie_groups is not None else None)
        if grouped is not None and grouped.splits_mixed_group(k).any():
            raise EvaluationError(
                f"{what} under ties={self.conv.ties}: the cut at "
                f"{k if k is not None else 'depth'} splits a tied group of relevant and "
                "non-relevant documents, so the denominator depends on the order inside the "
                "group (no closed-form expectation, no proven worst and best order); choose "
                "another tie rule"
            )


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0)


def precision(ctx: Context, m: Measure) -> Result:
    """P@k = (relevant in top k) / k.

    With ``k_beyond_list=min_k_n`` the denominator is min(k, n); a query that retrieved
    nothing then scores 0 (0/0 read as nothing found). Empty when R = 0.
    """
    val = _safe_div(ctx.relevant_in_top(m.cutoff), ctx.list_denominator(m.cutoff))
    return val, ctx.R == 0


def recall(ctx: Context, m: Measure) -> Result:
    """R@k = (relevant in top k) / R; R without a cutoff uses the whole list. Empty when R = 0."""
    R = ctx.R
    return _safe_div(ctx.relevant_in_top(m.cutoff), R.astype(float)), R == 0


def capped_recall(ctx: Context, m: Measure) -> Result:
    """Rcap@k = (relevant in top k) / min(k, R): recall that a list of k can reach in full (BEIR's
    and MTEB's R_cap@k). Empty when R = 0."""
    R = ctx.R.astype(float)
    return _safe_div(ctx.relevant_in_top(m.cutoff), np.minimum(R, float(m.cutoff))), R == 0


def hole(ctx: Context, m: Measure) -> Result:
    """Hole@k = (documents in the top k that no qrels row names, for any query) / k, k itself
    even when the list is shorter (BEIR's and MTEB's Hole@k). Labels, relevance and the query's
    own judgments play no part; never empty. Under ``average`` ties: the expected share; under
    ``unspecified``: the range over the orders of tied documents."""
    r = ctx.unannotated()
    return r.upto(r.e_rel, m.cutoff) / float(m.cutoff), np.zeros(r.n_queries, bool)


def f1(ctx: Context, m: Measure) -> Result:
    """F1@k = 2 P R / (P + R) = 2 x / (a + R), x relevant in top k and a P's denominator
    (k or min(k, n)); 0 when x = 0. Empty when R = 0."""
    R = ctx.R
    x = ctx.relevant_in_top(m.cutoff)
    return _safe_div(2.0 * x, ctx.list_denominator(m.cutoff) + R), R == 0


def success(ctx: Context, m: Measure) -> Result:
    """Success@k = 1 if a relevant document is in the top k, else 0 (under ``average``: the
    probability of that). Empty when R = 0."""
    return ctx.ranked.upto(ctx.ranked.p_first, m.cutoff), ctx.R == 0


def reciprocal_rank(ctx: Context, m: Measure) -> Result:
    """RR = 1 / (rank of the first relevant document), 0 when none is retrieved.

    RR@k is 0 when that rank is below k (``rr_cutoff=honour``) or ignores k (``ignore``, as
    trec_eval's recip_rank does). Empty when R = 0.
    """
    k = m.cutoff if ctx.conv.rr_cutoff == "honour" else None
    r = ctx.ranked
    if ctx.tie_rule == "average":  # p_first is spread over the first group's rows
        return r.upto(r.p_first / np.maximum(r.pos, 1), k), ctx.R == 0
    # Otherwise p_first is 1.0 on each query's first relevant row and 0.0 elsewhere, so the
    # sum over the top k is that one term: read from those rows alone (the same value as the
    # sum, to the bit: adding 0.0 to a positive number leaves it as it is).
    at = np.flatnonzero(r.p_first)
    if k is not None:
        at = at[r.pos[at] <= k]
    q = np.searchsorted(r.start + r.n, at, side="right")  # the query whose rows hold each one
    values = np.zeros(r.n_queries)
    values[q] = r.p_first[at] / r.pos[at]
    return values, ctx.R == 0


def granular_reciprocal_rank(ctx: Context, m: Measure) -> Result:
    """GranularRR@k = (sum over relevant ranks i <= k of 1/i) / (relevant documents in the top
    k): the mean reciprocal rank of every relevant document retrieved, where RR takes only the
    first (LlamaIndex's ``MRR(use_granular_mrr=True)``). 0 when none is in the top k. Empty when
    R = 0. Under ``average`` or ``unspecified`` ties, a cut through a tied group of mixed
    relevance makes the denominator random and is refused."""
    k = m.cutoff
    ctx.require_fixed_count(k, f"GranularRR@{k}" if k is not None else "GranularRR")
    r = ctx.ranked
    with np.errstate(divide="ignore", invalid="ignore"):
        num = r.upto(r.e_rel / np.maximum(r.pos, 1), k)
    return _safe_div(num, ctx.relevant_in_top(k)), ctx.R == 0


def average_precision(ctx: Context, m: Measure) -> Result:
    """AP@k = sum over relevant ranks i <= k of P@i, divided by D.

    D by ``ap_denominator``: ``relevant`` R (trec_eval's map and map_cut_k), ``retrieved_relevant``
    the relevant documents in the top k, ``min_k_relevant`` min(k, R). Empty when R = 0; when
    D = 0 on a non-empty query (nothing relevant retrieved) AP is 0.
    """
    k = m.cutoff
    num = ctx.ranked.upto(ctx.ranked.ap_term, k)
    R = ctx.R.astype(float)
    if ctx.conv.ap_denominator == "relevant":
        den = R
    elif ctx.conv.ap_denominator == "retrieved_relevant":
        if ctx.tie_rule in ("pessimistic", "optimistic") and ctx.tie_groups is not None:
            return _ap_retrieved_relevant_end(ctx, k), R == 0
        ctx.require_fixed_count(k, f"AP@{k} with ap_denominator=retrieved_relevant")
        den = ctx.relevant_in_top(k)
    else:
        den = R if k is None else np.minimum(R, float(k))
    return _safe_div(num, den), R == 0


def _ap_retrieved_relevant_end(ctx: Context, k: int | None) -> np.ndarray:
    """AP@k over the relevant documents found in the top k, at one end of ``ties=unspecified``
    (the lowest value in the pessimistic context, the highest in the optimistic one).

    Where the cut at k falls inside a tied group (first rank p + 1, t of its n ranks in the top
    k, r relevant in it; c relevant ranked before it, summing S0 of precisions), j of the r
    relevant land in the top k, max(0, r - (n - t)) <= j <= min(r, t). For a given j the
    denominator c + j is fixed, so the sum is lowest with the j at the group's last kept ranks
    and the rest ranked pessimistically, highest with them first and the rest optimistically:
    AP = (S0 + sum_{m=1..j} (c + m) / rank_m) / (c + j) (0 when c + j = 0); the end is the
    min (max) over j. Elsewhere the count in the top k is fixed and the order of this context
    is already the extreme one. A Python loop over split queries only (each at most 15 x 15
    for generated cases; cost t^2 per split query)."""
    r = ctx.ranked
    num = r.upto(r.ap_term, k)
    den = ctx.relevant_in_top(k)
    values = _safe_div(num, den)
    grouped = ctx.tie_groups().ranked
    split = grouped.splits_mixed_group(k)
    if not split.any():
        return values
    low = ctx.tie_rule == "pessimistic"
    kk = grouped.cut(k)
    for q in np.flatnonzero(split):
        s = int(grouped.start[q])
        last = s + int(kk[q]) - 1
        g_last = int(grouped.group_last[last])  # rank of the group's last row
        ranks = grouped.pos[s:s + int(grouped.n[q])]
        in_group = grouped.group_last[s:s + int(grouped.n[q])] == g_last
        first = int(ranks[in_group].min())  # the group's first rank, p + 1
        p, n_g = first - 1, g_last - first + 1
        t = int(kk[q]) - p
        # e_rel is r / n on every row of the group (a depth cut may have dropped some rows)
        r_g = int(round(float(grouped.e_rel[last]) * n_g))
        before = slice(int(r.start[q]), int(r.start[q]) + p)
        c = int(round(float(r.rel[before].sum())))
        s0 = float(r.ap_term[before].sum())
        best = None
        for j in range(max(0, r_g - (n_g - t)), min(r_g, t) + 1):
            m = np.arange(1, j + 1, dtype=np.float64)
            at = p + (m if not low else (t - j + m))
            v = (s0 + float(((c + m) / at).sum())) / (c + j) if c + j else 0.0
            best = v if best is None else (min(best, v) if low else max(best, v))
        values[q] = best
    return values


def r_precision(ctx: Context, m: Measure) -> Result:
    """Rprec = (relevant in top R) / R: precision at rank R. With ``k_beyond_list=min_k_n`` the
    denominator is min(R, n). Empty when R = 0."""
    R = ctx.R
    r = ctx.ranked
    kk = np.minimum(r.n, R)
    x = range_upto(r, r.e_rel, kk)
    den = R.astype(float) if ctx.conv.k_beyond_list == "k" else kk.astype(float)
    return _safe_div(x, den), R == 0


def range_upto(r: Ranked, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    from conformance.reference.ranking import range_sums

    return range_sums(x, r.start, lengths.astype(np.int64))


def dcg(ctx: Context, m: Measure) -> Result:
    """DCG@k = sum over i <= k of g_i d_i (gain and discount by convention). Empty when no
    document of the ideal source has a nonzero gain, so that empty_query treats an all-zero
    query alike in DCG and nDCG. DCG itself is a plain sum with no 0/0: gains that cancel (an
    ideal DCG of exactly 0 from labels 0.5 and -1), a negative ideal (negative gains kept) or an
    ideal cut to 0 at k are not empty, and a negative sum stands (scikit-learn's dcg_score)."""
    r = ctx.ranked
    val = r.upto(ctx.discounted_gains(), m.cutoff)
    return val, ~ctx.has_gain()


def ndcg(ctx: Context, m: Measure) -> Result:
    """nDCG@k = DCG@k / IDCG@k, the ideal DCG of the ideal source (``ideal``) sorted by gain
    descending and cut at k. nDCG without a cutoff uses the whole list and the whole ideal.
    Empty when IDCG@k <= 0 (0/0; a negative ideal arises only under negative_labels=keep, and
    libraries that keep negative gains, such as XGBoost's linear gain, treat it as empty too).
    Under ``negative_ideal=divide`` a negative ideal divides like any other and only an ideal
    of exactly 0 is empty. Under ``ideal=judged_to_list`` the judged ideal is cut at min(k, n)."""
    r = ctx.ranked
    d = r.upto(ctx.discounted_gains(), m.cutoff)
    ideal = ctx.idcg(m.cutoff)
    empty = ideal == 0 if ctx.conv.negative_ideal == "divide" else ideal <= 0
    return _safe_div(d, ideal), empty


def t_measure(ctx: Context, m: Measure) -> Result:
    """T(alpha)@K = ((1 - alpha) n_p - alpha n_n) / K, n_p relevant and n_n non-relevant
    (unjudged included) in the top K; K is min(K, n) under ``k_beyond_list=min_k_n``; 0 when
    nothing is retrieved under ``min_k_n``. Empty when R = 0."""
    alpha = 0.5 if m.alpha is None else m.alpha
    npos = ctx.relevant_in_top(m.cutoff)
    nneg = ctx.ranked.cut(m.cutoff) - npos
    return _safe_div((1 - alpha) * npos - alpha * nneg, ctx.list_denominator(m.cutoff)), ctx.R == 0


def fe_measure(ctx: Context, m: Measure) -> Result:
    """Fe@K: F1@K with R estimated as the relevant count in the top 2K:
    2 n_K / (K + n_2K) (P's denominator K or min(K, n)); 0 when n_K = 0. Empty when R = 0."""
    k = m.cutoff
    ctx.require_fixed_count(k, f"Fe@{k}")
    ctx.require_fixed_count(2 * k, f"Fe@{k}")
    nk = ctx.relevant_in_top(k)
    n2k = ctx.relevant_in_top(2 * k)
    return _safe_div(2.0 * nk, ctx.list_denominator(k) + n2k), ctx.R == 0


def _never_empty(ctx: Context, values: np.ndarray) -> Result:
    return values.astype(np.float64), np.zeros(values.size, bool)


def num_q(ctx: Context, m: Measure) -> Result:
    """NumQ: 1 per scored query (summed)."""
    return _never_empty(ctx, np.ones(ctx.ranked.n_queries))


def num_ret(ctx: Context, m: Measure) -> Result:
    """NumRet: documents retrieved (after ``depth``)."""
    return _never_empty(ctx, ctx.ranked.n)


def num_rel(ctx: Context, m: Measure) -> Result:
    """NumRel: relevant judged documents (label >= L), retrieved or not."""
    return _never_empty(ctx, ctx.R_judged)


def num_rel_ret(ctx: Context, m: Measure) -> Result:
    """NumRelRet: relevant documents retrieved (after ``depth``)."""
    return _never_empty(ctx, ctx.ranked.upto(ctx.ranked.rel, None))


FORMULAS = {
    "P": precision,
    "R": recall,
    "Rcap": capped_recall,
    "Hole": hole,
    "F1": f1,
    "Success": success,
    "RR": reciprocal_rank,
    "GranularRR": granular_reciprocal_rank,
    "AP": average_precision,
    "Rprec": r_precision,
    "DCG": dcg,
    "nDCG": ndcg,
    "T": t_measure,
    "Fe": fe_measure,
    "NumQ": num_q,
    "NumRet": num_ret,
    "NumRel": num_rel,
    "NumRelRet": num_rel_ret,
}
