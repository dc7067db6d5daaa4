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

The families are one function each (``FORMULAS``), over the notation above and the shared
:class:`~conformance.reference.context.Context`: the set, rank and trec_eval families here,
the interpolated-precision, gain and user-model families in ``formulas_graded``.
One idea at about 620 lines: one function per family over one shared notation.
"""


from __future__ import annotations

import functools
import math

import numpy as np

from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference.context import Context, Result, _bincount, _never_empty, _safe_div
from conformance.reference.ranking import Ranked, clamp_cutoff
from conformance.reference.segments import range_sums
from conformance.reference.formulas_graded import (_CWL, auroc, bin_g, cwl, err, fall_out,
                                                   g_measure, iprec, iprec_avg, ndcg_rel, rbp,
                                                   rbp_resid, recall_at_precision,
                                                   recall_at_precision_curve, rndcg)


def precision_parts(ctx: Context, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    """P@k's numerator and denominator per query: relevant in top k (under
    ``hit_weight=label`` the labels there summed), and k (min(k, n) under
    ``k_beyond_list=min_k_n``, the rows in the top k under ``rows_in_top``; n without a
    cutoff)."""
    if ctx.conv.hit_weight == "label":
        return ctx.ranked.upto(ctx.label_weights(m.cutoff), m.cutoff), ctx.list_denominator(m.cutoff)
    num, den = ctx.relevant_in_top(m.cutoff), ctx.list_denominator(m.cutoff)
    ctx.show(sums="rel", cut=ctx.ranked.cut(m.cutoff), numerator=num, denominator=den,
             denominator_is="n" if m.cutoff is None else (
                 "min(k, n)" if ctx.conv.k_beyond_list == "min_k_n" else "k"))
    return num, den


def precision(ctx: Context, m: Measure) -> Result:
    """P@k = (relevant in top k) / k.

    With ``k_beyond_list=min_k_n`` the denominator is min(k, n); a query that retrieved
    nothing then scores 0 (0/0 read as nothing found). Empty when R = 0; under
    ``hit_weight=label`` (the labels in the top k summed) when every label of the relevance
    universe is 0.
    """
    if ctx.conv.hit_weight == "label":
        return _safe_div(*precision_parts(ctx, m)), ~ctx.label_R()[1]
    return _safe_div(*precision_parts(ctx, m)), ctx.R == 0


def recall_parts(ctx: Context, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    """R@k's numerator and denominator per query: relevant in top k, and R (under
    ``hit_weight=label`` the labels in the top k summed, and the universe's labels summed)."""
    if ctx.conv.hit_weight == "label":
        return ctx.ranked.upto(ctx.label_weights(m.cutoff), m.cutoff), ctx.label_R()[0]
    R = ctx.R
    num = ctx.relevant_in_top(m.cutoff)
    ctx.show(sums="rel", cut=ctx.ranked.cut(m.cutoff), numerator=num, denominator=R,
             denominator_is="R")
    return num, R.astype(float)


def recall(ctx: Context, m: Measure) -> Result:
    """R@k = (relevant in top k) / R; R without a cutoff uses the whole list. Empty when R = 0
    (under ``hit_weight=label`` R is the labels' sum, and a sum of 0 is empty)."""
    num, den = recall_parts(ctx, m)
    return _safe_div(num, den), (den == 0) if ctx.conv.hit_weight == "label" else ctx.R == 0


def capped_recall_parts(ctx: Context, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    """Rcap@k's numerator and denominator per query: relevant in top k, and min(k, R)."""
    num = ctx.relevant_in_top(m.cutoff)
    den = np.minimum(ctx.R.astype(float), float(m.cutoff))
    ctx.show(sums="rel", cut=ctx.ranked.cut(m.cutoff), numerator=num, denominator=den,
             denominator_is="min(k, R)")
    return num, den


def capped_recall(ctx: Context, m: Measure) -> Result:
    """Rcap@k = (relevant in top k) / min(k, R): recall that a list of k can reach in full (BEIR's
    and MTEB's R_cap@k). Empty when R = 0."""
    return _safe_div(*capped_recall_parts(ctx, m)), ctx.R == 0


# The families that are one ratio per query, by their (numerator, denominator) per query:
# what mean=micro sums over the queries before dividing once.
RATIO_PARTS = {"P": precision_parts, "R": recall_parts, "Rcap": capped_recall_parts}


def hole(ctx: Context, m: Measure) -> Result:
    """Hole@k = (documents in the top k that no qrels row names, for any query) / k, k itself
    even when the list is shorter (BEIR's and MTEB's Hole@k). Labels, relevance and the query's
    own judgments play no part; never empty. Under ``average`` ties: the expected share; under
    ``unspecified``: the range over the orders of tied documents."""
    r = ctx.unannotated()
    return r.upto(r.e_rel, m.cutoff) / float(m.cutoff), np.zeros(r.n_queries, bool)


def f1(ctx: Context, m: Measure) -> Result:
    """F@k = (1 + beta) P R / (beta P + R) = (1 + beta) x / (beta R + a), x relevant in top k
    and a P's denominator (k or min(k, n); n without a cutoff: trec_eval's set_F and
    ir_measures' SetF, whose beta this is); 0 when x = 0. F1 (beta = 1) is 2 x / (a + R).
    Empty when R = 0. Ties: x is a sum of expected relevances, the denominator fixed."""
    R = ctx.R
    x = ctx.relevant_in_top(m.cutoff)
    beta = m.param("beta")
    if beta == 1.0:
        return _safe_div(2.0 * x, ctx.list_denominator(m.cutoff) + R), R == 0
    return _safe_div((1.0 + beta) * x, beta * R + ctx.list_denominator(m.cutoff)), R == 0


def success(ctx: Context, m: Measure) -> Result:
    """Success@k = 1 if a relevant document is in the top k, else 0 (under ``average``: the
    probability of that). Empty when R = 0."""
    value = ctx.ranked.upto(ctx.ranked.p_first, m.cutoff)
    ctx.show(sums="p_first", cut=ctx.ranked.cut(m.cutoff), numerator=value,
             denominator=np.ones(value.size), denominator_is="1")
    return value, ctx.R == 0


def reciprocal_rank(ctx: Context, m: Measure) -> Result:
    """RR = 1 / (rank of the first relevant document), 0 when none is retrieved.

    RR@k is 0 when that rank is below k (``rr_cutoff=honour``) or ignores k (``ignore``, as
    trec_eval's recip_rank does). Empty when R = 0.
    """
    k = m.cutoff if ctx.conv.rr_cutoff == "honour" else None
    r = ctx.ranked
    if ctx.tie_rule == "average":  # p_first is spread over the first group's rows
        values = r.upto(r.p_first / np.maximum(r.pos, 1), k)
        ctx.show(sums="rr_term", cut=r.cut(k), numerator=values,
                 denominator=np.ones(r.n_queries), denominator_is="1")
        return values, ctx.R == 0
    # Otherwise p_first is 1.0 on each query's first relevant row and 0.0 elsewhere, so the
    # sum over the top k is that one term: read from those rows alone (the same value as the
    # sum, to the bit: adding 0.0 to a positive number leaves it as it is).
    at = np.flatnonzero(r.p_first)
    if k is not None:
        at = at[r.pos[at] <= k]
    q = np.searchsorted(r.start + r.n, at, side="right")  # the query whose rows hold each one
    values = np.zeros(r.n_queries)
    values[q] = r.p_first[at] / r.pos[at]
    ctx.show(sums="rr_term", cut=r.cut(k), numerator=values, denominator=np.ones(r.n_queries),
             denominator_is="1")
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
    the relevant documents in the top k, ``min_k_relevant`` min(k, R), ``k`` k itself (n, the
    list's length, without a cutoff), ``min_k_n_relevant`` min(R, min(k, n)), R against the
    length of the list cut at k (min(n, R) without a cutoff; n counts distinct documents under
    ``duplicates=set``, as P's n does). Empty when R = 0; when D = 0 on a non-empty query
    (nothing relevant retrieved, or an empty list under ``k`` or ``min_k_n_relevant``) AP is 0.
    """
    k = m.cutoff
    num = ctx.ranked.upto(ctx.ranked.ap_term, k)
    R = ctx.R.astype(float)
    if ctx.conv.ap_denominator == "relevant":
        den, what = R, "R"
    elif ctx.conv.ap_denominator == "retrieved_relevant":
        if ctx.tie_rule in ("pessimistic", "optimistic") and ctx.tie_groups is not None:
            return _ap_retrieved_relevant_end(ctx, k), R == 0
        ctx.require_fixed_count(k, f"AP@{k} with ap_denominator=retrieved_relevant")
        den, what = ctx.relevant_in_top(k), "relevant in the top k"
    elif ctx.conv.ap_denominator == "k":
        # n without a cutoff (distinct documents under duplicates=set, as P's n)
        den, what = (ctx.list_denominator(None), "n") if k is None else (
            np.full(R.size, float(k)), "k")
    elif ctx.conv.ap_denominator == "min_k_n_relevant":
        r = ctx.ranked
        kept = r.cut(k) if r.first is None else r.upto(r.first, k)  # min(k, n)
        den, what = np.minimum(R, kept.astype(float)), "min(R, min(k, n))"
    else:
        den, what = (R, "R") if k is None else (np.minimum(R, float(k)), "min(k, R)")
    ctx.show(sums="ap_term", cut=ctx.ranked.cut(k), numerator=num, denominator=den,
             denominator_is=what)
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
    ctx.show(sums="rel", cut=kk, numerator=x, denominator=den,
             denominator_is="R" if ctx.conv.k_beyond_list == "k" else "min(R, n)")
    return _safe_div(x, den), R == 0


def range_upto(r: Ranked, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return range_sums(x, r.start, lengths.astype(np.int64))


def dcg(ctx: Context, m: Measure) -> Result:
    """DCG@k = sum over i <= k of g_i d_i (gain and discount by convention). Empty when no
    document of the ideal source has a nonzero gain, so that empty_query treats an all-zero
    query alike in DCG and nDCG. DCG itself is a plain sum with no 0/0: gains that cancel (an
    ideal DCG of exactly 0 from labels 0.5 and -1), a negative ideal (negative gains kept) or an
    ideal cut to 0 at k are not empty, and a negative sum stands (scikit-learn's dcg_score)."""
    r = ctx.ranked
    val = r.upto(ctx.discounted_gains(), m.cutoff)
    ctx.show(sums="discounted", cut=r.cut(m.cutoff), numerator=val,
             denominator=np.ones(val.size), denominator_is="1")
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
    if ctx.shown is not None:
        ctx.show(sums="discounted", cut=r.cut(m.cutoff), numerator=d, denominator=ideal,
                 denominator_is="IDCG@k", ideal_cut=ctx.ideal_cut(m.cutoff), ideal_k=m.cutoff)
    empty = ideal == 0 if ctx.conv.negative_ideal == "divide" else ideal <= 0
    return _safe_div(d, ideal), empty


def t_measure(ctx: Context, m: Measure) -> Result:
    """T(alpha)@K = ((1 - alpha) n_p - alpha n_n) / K, n_p relevant and n_n non-relevant
    (unjudged included) in the top K; K is min(K, n) under ``k_beyond_list=min_k_n``; 0 when
    nothing is retrieved under ``min_k_n``. Empty when R = 0."""
    alpha = m.param("alpha")
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


# --------------------------------------------------------------------------------------------
# The families trec_eval, ir_measures, ranx and torchmetrics compute beyond the classic ones.
# Each docstring says what the family does under ties=average (a closed form over the orders of
# each tie group, or a refusal) and at the two ends of ties=unspecified (Family.ends).
# --------------------------------------------------------------------------------------------


def hits(ctx: Context, m: Measure) -> Result:
    """Hits@k = relevant in the top k (the whole list without a cutoff), a count per query,
    averaged over queries (ranx's hits). Empty when R = 0. Ties: the expected count (average);
    relevance ends (unspecified)."""
    return ctx.relevant_in_top(m.cutoff), ctx.R == 0


def relative_precision(ctx: Context, m: Measure) -> Result:
    """RelP@k = relevant in the top k / min(k, R); without a cutoff k is n: relevant retrieved
    / min(n, R) (trec_eval's relative_P and set_relative_P). 0 when n = 0. Empty when R = 0.
    Ties: the numerator is a sum of expected relevances, the denominator fixed."""
    R = ctx.R
    k = ctx.ranked.cut(m.cutoff) if m.cutoff is None else np.full(R.size, float(clamp_cutoff(m.cutoff)))
    return _safe_div(ctx.relevant_in_top(m.cutoff), np.minimum(k.astype(float), R)), R == 0


def set_ap(ctx: Context, m: Measure) -> Result:
    """SetAP = x^2 / (n R), x the relevant documents retrieved (set precision times set
    recall; trec_eval's set_map). 0 when n = 0. Empty when R = 0. Ties: x is fixed unless a
    depth cut splits a tied group of relevant and non-relevant documents, which ``average``
    refuses (x is squared: its expectation is not the square of its mean); the value rises with
    x, so the relevance sorts are the ends of ``unspecified``."""
    if ctx.tie_rule == "average":
        ctx.require_fixed_count(None, "SetAP")
    R = ctx.R
    x = ctx.relevant_in_top(None)
    return _safe_div(x * x, ctx.ranked.n * R), R == 0


def rprec_mult(ctx: Context, m: Measure) -> Result:
    """RprecMult(multiple) = P@c with c = floor(multiple x R + 0.9) (trec_eval's Rprec_mult,
    in its double arithmetic): relevant in the top c / c, the list filled with non-relevant
    documents when shorter; 0 when c = 0. Empty when R = 0. Ties: the relevant count at a fixed
    c is a sum of expected relevances (average); relevance ends (unspecified)."""
    R = ctx.R
    c = np.floor(m.param("multiple") * R + 0.9)
    r = ctx.ranked
    x = range_sums(r.e_rel, r.start, np.minimum(r.n, c).astype(np.int64))
    return _safe_div(x, c), R == 0


def utility(ctx: Context, m: Measure) -> Result:
    """Utility(a, b, c, d) = a x + b (n - x) + c (R - x) + d (N + x - n - R), x relevant
    retrieved, N the collection size (trec_eval's -N, 0 unless given; then the last count can
    be negative, as in trec_eval). Never empty. Ties: x is a sum of expected relevances; it
    is monotone in the order, so the ends of unspecified are the relevance sorts."""
    a, b, c, d = m.param("coefficients")
    N = float(m.param("collection_size"))
    x = ctx.relevant_in_top(None)
    n = ctx.ranked.n.astype(np.float64)
    R = ctx.R.astype(np.float64)
    return _never_empty(ctx, a * x + b * (n - x) + c * (R - x) + d * (N + x - n - R))


def num_nonrel_judged_ret(ctx: Context, m: Measure) -> Result:
    """NumNonRelJudgedRet: retrieved documents (after ``depth``) judged with a label below the
    threshold (trec_eval's num_nonrel_judged_ret: num_ret - unjudged - num_rel_ret). Ties: only
    a depth cut through a tied group can change it; under ``average`` the count is the sum of
    each kept row's expected judged non-relevance; no order of tied relevant, judged
    non-relevant and unjudged documents is proven extreme for it, so ``unspecified`` refuses
    a depth cut through a tied group of unequal labels (as ``average`` does)."""
    jnonrel = ctx.judged() - ctx.ranked.rel
    g = ctx.grouped()
    if ctx.tie_rule != "average" and g is not None and ctx.conv.depth is not None:
        g.group_mean((~np.isnan(g.label)) & (g.rel == 0), f"{m.text} (ties={ctx.conv.ties})")
    return _never_empty(ctx, ctx.ranked.upto(ctx.expected(jnonrel, m.text), None))


def bpref(ctx: Context, m: Measure) -> Result:
    """Bpref = (1 / R) sum over retrieved relevant r of 1 - min(n_r, R) / D, n_r the judged
    non-relevant documents ranked above r (unjudged ones are skipped), N the judged non-relevant
    documents of the universe and D = min(R, N) (``bpref_denominator=min_r_n``, trec_eval) or R
    (``r``); a term is 1 when n_r = 0 (so D = 0 never divides). Empty when R = 0.

    Ties, ``average``: a relevant document of a tie group holding b judged non-relevant ones,
    with c ranked before the group, has a uniformly random number X in 0..b of them above it,
    so its expected term is 1 - E[min(c + X, R)] / D, with sum over x of min(c + x, R) =
    t c + t (t - 1) / 2 + (b + 1 - t) R, t = clip(R - c + 1, 0, b + 1). A depth cut through a
    tied group of relevant and non-relevant documents is refused. ``unspecified``: a relevant
    document's term only falls as non-relevant ones move above it: the relevance sorts."""
    R = ctx.R.astype(np.float64)
    N = ctx.N_judged_nonrel()
    D = np.minimum(R, N) if ctx.conv.bpref_denominator == "min_r_n" else R
    r = ctx.ranked
    jnonrel = ctx.judged() - r.rel
    before = r.before(jnonrel)
    if ctx.tie_rule == "average":
        if r.splits_mixed_group(None).any():
            raise EvaluationError(
                "bpref under ties=average: the depth cut splits a tied group of relevant and "
                "non-relevant documents; choose another tie rule")
        at = np.flatnonzero(r.e_rel > 0)  # rows of groups holding a relevant document
        first = r.group_start_rows()[at]
        c = before[first]
        b = np.round(ctx.expected(jnonrel, "bpref")[at] * r.group_size()[at])
    else:
        at = np.flatnonzero(r.rel > 0)  # the terms are the relevant rows'
        c = before[at]
        b = np.zeros(at.size)
    q = ctx.query_of_rows()[at]
    Rq = R[q]
    t = np.clip(Rq - c + 1.0, 0.0, b + 1.0)
    mean_min = (t * c + t * (t - 1.0) / 2.0 + (b + 1.0 - t) * Rq) / (b + 1.0)
    term = r.e_rel[at] * (1.0 - _safe_div(mean_min, D[q]))
    return _safe_div(_bincount(q, weights=term, minlength=r.n_queries), R), R == 0


INFAP_EPSILON = 0.00001  # trec_eval.h


def inf_ap(ctx: Context, m: Measure) -> Result:
    """infAP (Yilmaz & Aslam 2006, as trec_eval computes it): for the relevant document at
    rank i (j = i - 1 documents above it, r of them relevant, nr judged non-relevant, p in the
    pool but unjudged: judged with a negative label under ``negative_labels=unjudged``), the
    term is 1 when i = 1, else 1/i + (j/i) ((r + nr + p) / j) ((r + eps) / (r + nr + 2 eps)),
    eps = 0.00001; documents not in the qrels count in j only. Sum / R. Empty when R = 0.

    Ties: no closed form and no proven worst and best order (a term mixes ratios of the
    counts above it): a tie group holding documents of two kinds (relevant, judged
    non-relevant, pooled unjudged, not pooled) is refused under ``average`` and
    ``unspecified``."""
    r = ctx.ranked

    def kind(g: Ranked) -> np.ndarray:
        judged = ~np.isnan(g.label)
        return np.where(g.rel > 0, 3.0, np.where(judged, 2.0, np.where(g.pooled, 1.0, 0.0)))

    ctx.refuse_tied(kind, None, "infAP")
    at = np.flatnonzero(r.rel > 0)
    rel_b = r.before(r.rel)[at]
    judged_b = r.before(ctx.judged())[at]
    nonrel_b = judged_b - rel_b
    pool_b = r.before(r.pooled.astype(np.float64))[at]
    j = (r.pos[at] - 1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        later = (1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_b + nonrel_b + pool_b) / j)
                 * ((rel_b + INFAP_EPSILON) / (rel_b + nonrel_b + 2 * INFAP_EPSILON)))
    term = np.where(j == 0, 1.0, later)
    R = ctx.R
    total = _bincount(ctx.query_of_rows()[at], weights=term, minlength=r.n_queries)
    return _safe_div(total, R.astype(np.float64)), R == 0


def judged_at(ctx: Context, m: Measure) -> Result:
    """Judged@k = judged documents in the top k / min(k, n) (``k_beyond_list=min_k_n``,
    ir_measures' judged provider) or / k; without a cutoff, over the whole list. A document is
    judged when the qrels hold a label for it (a negative label under ``negative_labels=
    unjudged`` is not). 0 when nothing is retrieved. Never empty. Ties: the count is a sum of
    each row's expected judgedness (average); judged documents last / first (unspecified)."""
    judged = ctx.expected(ctx.judged(), f"Judged@{m.cutoff}")
    return _never_empty(ctx, _safe_div(ctx.ranked.upto(judged, m.cutoff),
                                       ctx.list_denominator(m.cutoff)))


def unjudged_at(ctx: Context, m: Measure) -> Result:
    """Unjudged@k = unjudged documents in the top k / k (``k_beyond_list=k``: trec_eval 10's
    unj, the missing ranks counted judged) or / min(k, n). Never empty. Ties as Judged."""
    unjudged = ctx.expected(1.0 - ctx.judged(), f"Unjudged@{m.cutoff}")
    return _never_empty(ctx, _safe_div(ctx.ranked.upto(unjudged, m.cutoff),
                                       ctx.list_denominator(m.cutoff)))


# H_n from this n on is the asymptotic series below: its first left-out term, 1 / (240 n^8), is
# under 1e-17 of H_n there
_HARMONIC_SERIES_FROM = 64
# H_0..H_63, each one rounding of the sum (math.fsum) rather than a running sum's 63
_HARMONIC_SMALL = np.array([math.fsum(1.0 / i for i in range(1, n + 1))
                            for n in range(_HARMONIC_SERIES_FROM)])


def harmonic(n: np.ndarray) -> np.ndarray:
    """H_n = 1 + 1/2 + ... + 1/n per entry of ``n`` (integers >= 0; H_0 = 0): summed below 64,
    from 64 on ln n + gamma + 1/(2n) - 1/(12n^2) + 1/(120n^4) - 1/(252n^6), so that a cutoff
    of any size costs no array of its length."""
    n = np.asarray(n, dtype=np.float64)
    big = np.maximum(n, _HARMONIC_SERIES_FROM)
    inv2 = 1.0 / (big * big)
    series = (np.log(big) + np.euler_gamma + 0.5 / big
              - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 / 252)))
    below = n < _HARMONIC_SERIES_FROM
    return np.where(below, _HARMONIC_SMALL[np.where(below, n, 0).astype(np.int64)], series)


def mean_precision(ctx: Context, m: Measure) -> Result:
    """MeanP@k = (P@1 + ... + P@k) / k, P@n = (relevant in the top n) / n, the divisor n even
    where the list is shorter than n (Elliot's MAP@k). Not average precision: every rank 1..k
    adds its precision, relevant or not.

    Summed per relevant document instead of per rank: the document at rank i <= k counts in
    P@i..P@k, so MeanP@k = (1/k) sum over i <= min(k, n) of rel_i (H_k - H_{i-1}), H the
    harmonic numbers; the ranks past a short list add its relevant count over each n up to k.
    Reads no k_beyond_list (P@n is over n). Empty when R = 0 (Elliot
    leaves such users out: empty_query=skip); k >= 1 so nothing else divides by 0. Ties: a sum
    of expected relevances times weights fixed by rank (average); the weights fall with the
    rank, so the relevance sorts are the ends of unspecified. No ``ctx.show``: the weight of a
    row depends on k and the ranks past a short list are no rows, so the value is no column of
    the trace summed over its rows (the table shows the rows, their running precision P@i,
    and the record's formula)."""
    k = clamp_cutoff(m.cutoff)
    r = ctx.ranked
    weight = harmonic(np.array([k]))[0] - harmonic(np.maximum(r.pos, 1) - 1)
    return r.upto(r.e_rel * weight, k) / float(k), ctx.R == 0


# The families whose formula reads a row's rank only through the per-row pieces (``Ranked.pos``
# as the rank, e_rel, e_gain, ap_term, p_first) and the top k through ``Ranked.cut``: a rank
# rule that gives tied rows one rank (``ties=group_last``, ``group_first``: ``SHARED_RANK_RULES``)
# reaches them through those pieces.
# The others read row positions or rows above a row (``before``, explicit lengths, per-rank
# tables) and refuse a list whose rows share a rank rather than give an order's value.
RANK_RULE_FAMILIES = frozenset({
    "P", "R", "Rcap", "Hole", "F1", "Success", "RR", "GranularRR", "AP", "DCG", "nDCG", "T",
    "Fe", "NumQ", "NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "Hits", "RelP",
    "SetAP", "Utility", "Judged", "Unjudged", "MeanP"})


SHARED_RANK_RULES = ("group_last", "group_first")


def _refusing_shared_ranks(formula):
    """``formula``, refusing under ``ties=group_last`` or ``group_first`` a list with a tied
    group (rows of one query sharing a rank) in the rows it reads (its top k; a group ranked
    past k is not among them, :meth:`Ranked.cut`): the family reads ranks other than through
    the per-row pieces."""
    @functools.wraps(formula)
    def checked(ctx: Context, m: Measure) -> Result:
        if ctx.tie_rule in SHARED_RANK_RULES:
            r = ctx.ranked
            shared = r.pos[1:] == r.pos[:-1]
            shared[r.start[(r.n > 0) & (r.start > 0)] - 1] = False  # a query's first row
            if m.cutoff is not None:
                shared &= r.pos[1:] <= clamp_cutoff(m.cutoff)
            if shared.any():
                raise EvaluationError(
                    f"{m.text} under ties={ctx.tie_rule}: a tied group shares one rank, and this "
                    "measure reads ranks as positions in an order; choose another tie rule")
        return formula(ctx, m)
    checked.__doc__ = formula.__doc__
    return checked


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
    "NumNonRelJudgedRet": num_nonrel_judged_ret,
    "Hits": hits,
    "RelP": relative_precision,
    "SetAP": set_ap,
    "RprecMult": rprec_mult,
    "Utility": utility,
    "Bpref": bpref,
    "infAP": inf_ap,
    "Judged": judged_at,
    "Unjudged": unjudged_at,
    "IPrec": iprec,
    "IPrecAvg": iprec_avg,
    "binG": bin_g,
    "G": g_measure,
    "nDCGRel": ndcg_rel,
    "RnDCG": rndcg,
    "ERR": err,
    "RBP": rbp,
    "RBPResid": rbp_resid,
    **{name: cwl for name in _CWL},
    "FallOut": fall_out,
    "AUROC": auroc,
    "RecallAtPrecision": recall_at_precision,
    "MeanP": mean_precision,
}
FORMULAS = {name: f if name in RANK_RULE_FAMILIES else _refusing_shared_ranks(f)
            for name, f in FORMULAS.items()}

# Families whose aggregate is computed from the whole evaluation (Family.aggregate "curve")
CURVES = {"RecallAtPrecision": recall_at_precision_curve}
