"""The interpolated-precision, gain and user-model families (IPrec, binG, G, nDCGRel, RnDCG,
ERR, RBP, the C/W/L measures), fall-out, AUROC and recall at precision: one function per
family, in the notation of ``conformance.reference.formulas``, registered there in
``FORMULAS``.
"""

from __future__ import annotations

import numpy as np

from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference.context import Context, Result, _bincount, _never_empty, _safe_div
from conformance.reference.ranking import clamp_cutoff, discounts
from conformance.reference.segments import range_sums, segment_accumulate


def _round_half_up(x: np.ndarray) -> np.ndarray:
    """C's lround for x >= 0: halves away from zero (not numpy's half to even)."""
    f = np.floor(x)
    return f + (x - f >= 0.5)


def _iprec_levels(ctx: Context, m: Measure, levels: tuple[float, ...], what: str) -> list:
    """IPrec at each recall level, per query (see :func:`iprec`)."""
    if ctx.tie_rule == "average":
        ctx.refuse_tied(lambda g: g.rel, None, what)
    r = ctx.ranked
    R = ctx.R.astype(np.float64)
    at = np.flatnonzero(r.rel > 0)  # relevant rows, query by query
    q = ctx.query_of_rows()[at]
    count = _bincount(q, minlength=r.n_queries)
    cstart = np.cumsum(count) - count
    prec = (r.before(r.rel)[at] + 1.0) / r.pos[at]
    best = segment_accumulate(np.maximum, prec, cstart, count, reverse=True)
    out = []
    for level in levels:
        wanted = level * R
        c = _round_half_up(wanted) if ctx.conv.iprec_rank == "round" else np.floor(wanted + 0.9)
        c = np.maximum(c, 1.0)  # level 0 reads the precision at the first relevant document
        found = c <= count
        value = np.zeros(r.n_queries)
        idx = (cstart + c - 1).astype(np.int64)[found]
        value[found] = best[idx]
        out.append(value)
    return out


def iprec(ctx: Context, m: Measure) -> Result:
    """IPrec@x: the highest precision P@i over the ranks i at or below the c-th relevant
    document, c the relevant count level x asks for (``iprec_rank``: round(x R), trec_eval 10;
    floor(x R + 0.9), trec_eval 9), c = 0 read as 1; 0 when fewer than c relevant documents
    are retrieved. Empty when R = 0. Ties: the highest of ratios has no closed form under
    ``average`` (a tie group of relevant and non-relevant documents is refused); every P@i
    rises as relevant documents move up, so the relevance sorts are the ends of
    ``unspecified``."""
    return _iprec_levels(ctx, m, (m.param("recall"),), f"IPrec@{m.param('recall')}")[0], ctx.R == 0


def iprec_avg(ctx: Context, m: Measure) -> Result:
    """IPrecAvg: the mean of IPrec over ``recall_levels`` (trec_eval's 11pt_avg: 0, 0.1, ...,
    1). Empty when R = 0. Ties as IPrec."""
    levels = m.param("recall_levels")
    values = _iprec_levels(ctx, m, levels, "IPrecAvg")
    return np.sum(values, axis=0) / len(levels), ctx.R == 0


def bin_g(ctx: Context, m: Measure) -> Result:
    """binG = (1 / R) sum over retrieved relevant documents of 1 / log2(2 + c), c the
    non-relevant (or unjudged) documents ranked above it (trec_eval's binG). Empty when R = 0.
    Ties, ``average``: a relevant document of a group of b non-relevant ones, c before the
    group, has X uniform in 0..b of them above it: E = (H(c + b + 1) - H(c)) / (b + 1),
    H(m) = sum over j < m of 1 / log2(2 + j); a depth cut through a mixed group is refused.
    ``unspecified``: the relevance sorts (a term only falls as non-relevant ones move up)."""
    r = ctx.ranked
    R = ctx.R.astype(np.float64)
    nonrel = 1.0 - r.rel
    if ctx.tie_rule == "average":
        if r.splits_mixed_group(None).any():
            raise EvaluationError("binG under ties=average: the depth cut splits a tied group "
                                  "of relevant and non-relevant documents; choose another tie rule")
        first = r.group_start_rows()
        c = r.before(nonrel)[first]
        b = np.round(ctx.expected(nonrel, "binG") * r.group_size())
        top = int((c + b).max(initial=0.0)) + 2
        H = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(2.0 + np.arange(top)))])
        term = r.e_rel * (H[(c + b + 1).astype(np.int64)] - H[c.astype(np.int64)]) / (b + 1.0)
    else:
        term = r.rel / np.log2(2.0 + r.before(nonrel))
    return _safe_div(r.upto(term, None), R), R == 0


def _prefix_sums(ctx: Context, x: np.ndarray) -> np.ndarray:
    r = ctx.ranked
    return segment_accumulate(np.add, x, r.start, r.n)


def _ideal_positive(ctx: Context):
    """The ideal source's positive gains, as trec_eval's gain tables walk them (largest
    first, stopping at the first gain <= 0): (gains sorted, start, count, P the positive
    ones per query)."""
    g, start, n = ctx.ideal_gains()
    q = np.repeat(np.arange(n.size), n)
    P = _bincount(q[g > 0], minlength=n.size)
    return g, start, n, P


def g_measure(ctx: Context, m: Measure) -> Result:
    """G (trec_eval's experimental normalised gain): sum over ranks i of g_i / log2(2 + C_i -
    S_i), S_i the gain in the top i, C_i the sum over ranks j <= i of max(I_j, 1), I_j the
    ideal's j-th positive gain (0 past them); divided by the sum of the ideal's positive gains.
    Empty when that sum is 0. Ties: no closed form and no proven ends: a tie group of unequal
    gains is refused under ``average`` and ``unspecified``."""
    ctx.refuse_tied(lambda g: g.gain, None, "G")
    r = ctx.ranked
    g, istart, icount, P = _ideal_positive(ctx)
    q = ctx.query_of_rows()
    at = istart[q] + r.pos - 1
    inside = r.pos <= P[q]
    ideal = np.where(inside, g[np.minimum(at, max(g.size - 1, 0))] if g.size else 0.0, 0.0)
    cost = _prefix_sums(ctx, np.maximum(ideal, 1.0))
    got = _prefix_sums(ctx, r.gain)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(r.gain != 0, r.gain / np.log2(2.0 + cost - got), 0.0)
    total = range_sums(np.where(g > 0, g, 0.0), istart, icount)
    return _safe_div(r.upto(term, None), total), total <= 0


def _dcg_prefix(ctx: Context) -> np.ndarray:
    """Per row: DCG of its query's list down to it, summed in list order."""
    return _prefix_sums(ctx, ctx.discounted_gains())


def _ideal_prefix(ctx: Context):
    """(per ideal row: the ideal DCG of its query down to it over the positive gains, start,
    count, P)."""
    g, istart, icount, P = _ideal_positive(ctx)
    q = np.repeat(np.arange(icount.size), icount)
    pos = np.arange(g.size) - istart[q] + 1
    terms = np.where(g > 0, g, 0.0) * discounts(pos, ctx.conv)
    return segment_accumulate(np.add, terms, istart, icount), istart, icount, P


def ndcg_rel(ctx: Context, m: Measure) -> Result:
    """nDCGRel (trec_eval's ndcg_rel): (1 / P) (sum over retrieved documents of positive gain,
    at rank i, of DCG@i / IDCG@min(i, P) + (P - their number) DCG@n / IDCG@P), P the documents
    of positive gain in the ideal source; IDCG sums the positive gains only. Empty when P = 0
    (or the sum is not positive: trec_eval reports 0 then). Ties: refused as G's."""
    ctx.refuse_tied(lambda g: g.gain, None, "nDCGRel")
    r = ctx.ranked
    dcg_at = _dcg_prefix(ctx)
    iprefix, istart, icount, P = _ideal_prefix(ctx)
    q = ctx.query_of_rows()
    Pq = P[q]
    ideal_at = np.where(Pq > 0, iprefix[np.maximum(istart[q] + np.minimum(r.pos, Pq) - 1, 0)]
                        if iprefix.size else 0.0, 0.0)
    positive = r.gain > 0
    per_row = np.where(positive, _safe_div(dcg_at, ideal_at), 0.0)
    found = _bincount(q[positive], minlength=r.n_queries)
    last = np.where(r.n > 0, dcg_at[np.maximum(r.start + r.n - 1, 0)] if dcg_at.size else 0.0, 0.0)
    ideal_all = np.where(P > 0, iprefix[np.maximum(istart + P - 1, 0)] if iprefix.size else 0.0, 0.0)
    total = r.upto(per_row, None) + (P - found) * _safe_div(last, ideal_all)
    value = np.where(total > 0, _safe_div(total, P.astype(np.float64)), 0.0)
    return value, P == 0


def rndcg(ctx: Context, m: Measure) -> Result:
    """RnDCG (trec_eval's Rndcg): the mean of DCG@min(b, n) / IDCG@b over the ranks b <= P at
    which the ideal gain changes (b = P always: the gain falls to 0 there) and, when n > P + 1,
    of DCG@n / IDCG@P. Empty when R = 0 (trec_eval's 0) or P = 0. Ties: refused as G's."""
    ctx.refuse_tied(lambda g: g.gain, None, "RnDCG")
    r = ctx.ranked
    dcg_at = _dcg_prefix(ctx)
    iprefix, istart, icount, P = _ideal_prefix(ctx)
    g, _, _, _ = _ideal_positive(ctx)
    iq = np.repeat(np.arange(icount.size), icount)
    ipos = np.arange(g.size) - istart[iq] + 1  # 1-based rank in the ideal
    # ranks b (1-based counts of documents above the change) where the gain changes, b < P
    change = np.zeros(g.size, bool)
    change[1:] = (g[1:] != g[:-1]) & (iq[1:] == iq[:-1])
    change &= ipos <= P[iq]  # ipos - 1 < P: the change lies inside the positive gains
    bq = np.concatenate([iq[change], np.flatnonzero(P > 0), np.flatnonzero((P > 0) & (r.n >= P + 2))])
    b = np.concatenate([ipos[change] - 1, P[P > 0], r.n[(P > 0) & (r.n >= P + 2)]]).astype(np.int64)
    dcg_b = np.where(r.n[bq] > 0, dcg_at[np.maximum(r.start[bq] + np.minimum(b, r.n[bq]) - 1, 0)]
                     if dcg_at.size else 0.0, 0.0)
    ideal_b = iprefix[istart[bq] + np.minimum(b, P[bq]) - 1] if b.size else np.zeros(0)
    values = _safe_div(dcg_b, ideal_b)
    count = _bincount(bq, minlength=r.n_queries)
    total = _bincount(bq, weights=values, minlength=r.n_queries)
    R = ctx.R
    return _safe_div(total, count.astype(np.float64)), (R == 0) | (P == 0)


def _universe_top(ctx: Context) -> np.ndarray:
    labels, q = ctx.universe_labels()
    top = np.full(ctx.ranked.n_queries, -np.inf)
    np.maximum.at(top, q, labels)
    return top


def err(ctx: Context, m: Measure) -> Result:
    """ERR@k (Chapelle et al. 2009; gdeval): sum over ranks i <= k of R_i / i x prod over j < i
    of (1 - R_j), R = (2^g - 1) / 2^g_max for a label g > 0 (``err_max_grade``), 0 for other
    labels and unjudged documents; the product is taken in list order. A label above g_max in
    the relevance universe is refused (gdeval dies on it). Empty when no label is positive.

    Ties: ``average`` has no closed form (the product couples the ranks): a tie group of
    unequal labels in the top k is refused. At the ends of ``unspecified`` the label sorts:
    swapping adjacent documents a above b changes ERR by (R_a - R_b)(1/i - 1/(i + 1)), so
    sorting tied documents by label maximises ERR, the reverse minimises it."""
    if ctx.tie_rule == "average":
        ctx.refuse_tied(lambda g: g.label, m.cutoff, f"ERR@{m.cutoff}")
    r = ctx.ranked
    top_grade = ctx.conv.err_max_grade
    labels, _ = ctx.universe_labels()
    if labels.size and float(labels.max()) > top_grade:
        raise EvaluationError(
            f"ERR: label {float(labels.max()):g} is above err_max_grade={top_grade}, so its "
            f"stopping probability (2^g - 1) / 2^{top_grade} would exceed 1 (gdeval refuses "
            "labels above 4); set err_max_grade to the largest grade")
    # only the top k is read: the running product over those rows alone
    kk = r.cut(m.cutoff)
    if m.cutoff is not None and int(kk.sum()) < r.pos.size:
        rows = np.flatnonzero(r.pos <= clamp_cutoff(m.cutoff))
    else:
        rows = slice(None)
    lab, pos = r.label[rows], r.pos[rows]
    start = np.cumsum(kk) - kk
    g = np.where(lab > 0, lab, 0.0)  # NaN compares False: 0
    stop = (np.exp2(g) - 1.0) / 2.0 ** top_grade
    go_on = segment_accumulate(np.multiply, 1.0 - stop, start, kk)
    decay = np.ones(stop.size)
    if stop.size:
        decay[1:] = go_on[:-1]
        decay[pos == 1] = 1.0
    term = stop * decay / pos
    return range_sums(term, start, kk), ~(_universe_top(ctx) > 0)


def _rbp_weights(ctx: Context, p: float) -> tuple[np.ndarray, float]:
    """Per row: the RBP weight of its rank, (1 - p) p^(i - 1), or over a horizon of N ranks
    (1 - p) p^(i - 1) / (1 - p^N) up to N and 0 beyond; and the factor 1 / (1 - p^N)."""
    r = ctx.ranked
    # one weight per rank, read by every row at it
    table = (1.0 - p) * np.power(p, np.arange(int(r.n.max(initial=0)), dtype=np.float64))
    w = table[r.pos - 1]
    N = ctx.conv.weights_horizon
    if N is None:
        return w, 1.0
    scale = 1.0 / (1.0 - p ** N)
    return np.where(r.pos <= N, w * scale, 0.0), scale


def rbp(ctx: Context, m: Measure) -> Result:
    """RBP(p) = sum over ranks i of g_i (1 - p) p^(i - 1) (Moffat & Zobel 2008); over a horizon
    of N ranks (``weights_horizon``, cwl_eval's 1000) each weight is divided by 1 - p^N and
    ranks past N count 0. g_i by ``rbp_gain``: ``binary`` 1 when relevant; ``label`` the label
    when it is L or above (ranx); ``label_over_max`` the positive label over the largest label
    of the query when that exceeds 1, the threshold unread (trec_eval 10). Empty when no judged
    document has a positive gain. Ties: linear in each rank's expected gain (average; a depth
    cut through a tied group of unequal gains is refused); weights fall with the rank, so the
    label sorts are the ends of ``unspecified``."""
    r = ctx.ranked
    p = m.param("p")
    kind = ctx.conv.rbp_gain
    if kind == "binary":
        gain, empty = r.e_rel, ctx.R == 0
    else:
        lab = np.where(np.isnan(r.label), 0.0, r.label)
        if kind == "label":
            raw = np.where(lab >= ctx.conv.relevance_threshold, lab, 0.0)
            empty = ctx.R == 0
        else:
            top = _universe_top(ctx)
            scale = np.where(top > 1, top, 1.0)
            raw = np.maximum(lab, 0.0) / scale[ctx.query_of_rows()]
            empty = ~(top > 0)
        gain = ctx.expected(raw, f"RBP(p={p})")
    w, _ = _rbp_weights(ctx, p)
    return r.upto(gain * w, None), empty


def rbp_resid(ctx: Context, m: Measure) -> Result:
    """RBPResid(p): how much RBP could rise if every unjudged document were relevant and the
    list went on relevant: (1 - p) sum over unjudged ranks i of p^(i - 1), plus the weight of
    the ranks past the list, p^n (over a horizon of N: (p^n - p^N) / (1 - p^N), weights as in
    RBP). ``residual_tail=unjudged_only`` (trec_eval 10): 0 when every retrieved document is
    judged. Never empty. Ties: linear in each rank's expected unjudgedness (average); it only
    rises as unjudged documents move up, so those are the ends of ``unspecified``."""
    r = ctx.ranked
    p = m.param("p")
    unjudged = 1.0 - ctx.judged()
    w, scale = _rbp_weights(ctx, p)
    n = r.n.astype(np.float64)
    N = ctx.conv.weights_horizon
    if N is None:
        tail = np.power(p, n)
    else:
        tail = np.where(n < N, (np.power(p, n) - p ** N) * scale, 0.0)
    value = r.upto(ctx.expected(unjudged, f"RBPResid(p={p})") * w, None) + tail
    if ctx.conv.residual_tail == "unjudged_only":
        value = np.where(r.upto(unjudged, None) > 0, value, 0.0)
    return _never_empty(ctx, value)


# The C/W/L measures (cwl_eval, Azzopardi, Thomas & Moffat 2019): a user who has examined rank i
# goes on with probability C_i; the weight of rank i is prod over j < i of C_j, normalised to
# sum to 1 over the N ranks read; the value is the weighted sum of the gains. Each function
# below gives C for ranks 1..N: from the rank alone (one vector) or from the gains too (one row
# per query).
def _cwl_c_sdcg(i, g, cum, m):
    k = m.cutoff
    return np.where(i < k, np.log(i + 1.0) / np.log(i + 2.0), 0.0)


def _cwl_c_insq(i, g, cum, m):
    T = m.param("T")
    return ((i + 2.0 * T - 1.0) / (i + 2.0 * T)) ** 2.0


def _cwl_c_nerr8(i, g, cum, m):
    return np.where(i < m.cutoff, 1.0 - g, 0.0)


def _cwl_c_nerr9(i, g, cum, m):
    return np.where(i < m.cutoff, (1.0 * i / (i + 1.0)) * (1.0 - g), 0.0)


def _cwl_c_nerr10(i, g, cum, m):
    return m.param("p") * (1.0 - g)


def _cwl_c_nerr11(i, g, cum, m):
    T = m.param("T")
    return (((i + (2.0 * T) - 1.0) / (i + (2.0 * T))) ** 2.0) * (1.0 - g)


def _cwl_c_inst(i, g, cum, m):
    T = m.param("T")
    Ti = T - cum
    return ((i + T + Ti - 1.0) / (i + T + Ti)) ** 2.0


def _cwl_c_bpm(i, g, cum, m):
    return np.where((cum < m.param("T")) & (i < m.cutoff), 1.0, 0.0)


# family -> (continuation, reads the gains, reads only the top k)
_CWL = {
    "SDCG": (_cwl_c_sdcg, False, True),
    "INSQ": (_cwl_c_insq, False, False),
    "NERR8": (_cwl_c_nerr8, True, True),
    "NERR9": (_cwl_c_nerr9, True, True),
    "NERR10": (_cwl_c_nerr10, True, False),
    "NERR11": (_cwl_c_nerr11, True, False),
    "INST": (_cwl_c_inst, True, False),
    "BPM": (_cwl_c_bpm, True, True),
}
_CWL_BLOCK = 1 << 22  # cells of one (queries x ranks) block
_CWL_MAX_RANKS = 1_000_000  # the largest k of a top-k C/W/L measure walked past the lists


def _cwl_weights(c: np.ndarray) -> np.ndarray:
    """The C/W/L weights of continuation probabilities ``c`` (last axis: ranks 1..N), computed
    as cwl_eval does: [1, C_1, C_1 C_2, ...] over their sum."""
    u = np.ones(c.shape)
    u[..., 1:] = np.cumprod(c[..., :-1], axis=-1)
    return u / u.sum(axis=-1, keepdims=True)


def cwl(ctx: Context, m: Measure) -> Result:
    """The C/W/L measures through cwl_eval (ir_measures' provider): gains g = (clip(label,
    min_rel, max_rel) - min_rel) / (max_rel - min_rel), negative labels first read as 0 and
    unjudged documents 0 (cwl_eval's worst case); ranks 1..N read (``weights_horizon``; a list
    shorter than N is filled with gain 0, a longer one cut), continuation C_i by family
    (Family.formula), weights prod over j < i of C_j normalised over the N ranks, the value the
    weighted sum of the gains. SDCG, NERR8, NERR9 and BPM read only the top k, so an endless
    horizon is the top k; INSQ, INST, NERR10 and NERR11 need a horizon N. Never empty.

    Ties: SDCG and INSQ weigh each rank by its position alone, so under ``average`` the value
    is linear in each rank's expected gain and the label sorts are the ends of
    ``unspecified``; in the others C depends on the gains: a tie group of unequal labels is
    refused under both rules."""
    f = m.record
    cont, reads_gains, top_only = _CWL[m.family]
    lo, hi = m.param("min_rel"), m.param("max_rel")
    if hi <= lo:
        raise EvaluationError(f"{m.text}: max_rel must be above min_rel (cwl_eval asserts it)")
    N = ctx.conv.weights_horizon
    if N is None:
        if not top_only:
            raise EvaluationError(
                f"{m.text}: {m.family} weighs every rank of an endless list, which has no closed "
                "form here; set weights_horizon=N (cwl_eval reads 1000 ranks)")
        # the weights are normalised over all k ranks, those past the list (gain 0) too: a
        # query's value depends on k, never on the other queries' list lengths
        N = int(clamp_cutoff(m.cutoff))
        if N > _CWL_MAX_RANKS and N > int(ctx.ranked.n.max(initial=0)):
            raise EvaluationError(
                f"{m.text}: the C/W/L weights are normalised over every one of the k ranks, past "
                f"the end of the list too; k above {_CWL_MAX_RANKS:,} ranks is not computed here "
                "(cwl_eval walks them one by one)")
    if f.ends == "none" or ctx.tie_rule == "average":
        if f.ends == "none" or reads_gains:
            ctx.refuse_tied(lambda g: g.label, None if not top_only else m.cutoff, m.text)
    r = ctx.ranked
    lab = np.where(np.isnan(r.label), 0.0, np.maximum(r.label, 0.0))
    gain = (np.clip(lab, lo, hi) - lo) / (hi - lo)
    keep = r.pos <= N
    ranks = np.arange(1, N + 1, dtype=np.float64)
    if not reads_gains:
        w = _cwl_weights(cont(ranks, None, None, m))
        g = ctx.expected(gain, m.text)
        return _never_empty(ctx, r.upto(np.where(keep, g * w[np.minimum(r.pos, N) - 1], 0.0), None))
    out = np.zeros(r.n_queries)
    q = ctx.query_of_rows()
    per_block = max(1, _CWL_BLOCK // N)
    for first in range(0, r.n_queries, per_block):
        last = min(first + per_block, r.n_queries)
        rows = keep & (q >= first) & (q < last)
        G = np.zeros((last - first, N))
        G[q[rows] - first, r.pos[rows] - 1] = gain[rows]
        C = cont(ranks[None, :], G, np.cumsum(G, axis=1), m)
        out[first:last] = (_cwl_weights(C) * G).sum(axis=1)
    return _never_empty(ctx, out)


def fall_out(ctx: Context, m: Measure) -> Result:
    """FallOut@k = non-relevant documents in the top k / N, N the non-relevant documents of the
    relevance universe: the list's (unjudged included) under ideal=retrieved, the judged
    non-relevant ones plus the unjudged retrieved under ideal=judged. Empty when N = 0
    (torchmetrics: no non-relevant target). Ties: the count is a sum of expected relevances
    (average); relevance sorts (unspecified)."""
    r = ctx.ranked
    kk = r.cut(m.cutoff).astype(np.float64)
    nonrel_top = kk - ctx.relevant_in_top(m.cutoff)
    if ctx.conv.ideal == "retrieved":
        N = r.n - ctx.R
    else:
        # the unjudged documents a depth cut keeps sit in the denominator: a cut through a tied
        # group of judged and unjudged ones is refused under average and unspecified
        g = ctx.grouped()
        if g is not None and ctx.conv.depth is not None:
            g.group_mean(~np.isnan(g.label), f"FallOut@{m.cutoff} (ties={ctx.conv.ties})")
        N = ctx.N_judged_nonrel() + r.upto(1.0 - ctx.judged(), None)
    return _safe_div(nonrel_top, N.astype(np.float64)), N == 0


def auroc(ctx: Context, m: Measure) -> Result:
    """AUROC@k: the fraction of (relevant, non-relevant) pairs of the top k in which the
    relevant document ranks first; 0 when the top k holds only one of the two (torchmetrics'
    RetrievalAUROC). Empty when R = 0. Ties: under ``average`` a tied pair counts 1/2 (what
    an AUROC of the scores gives): a relevant document with c non-relevant ones before its
    group of b counts b_top - c - b/2 pairs; a cut through a mixed group is refused (which
    documents are in the top k would be random). At the ends of ``unspecified``, the relevance
    sorts (a tied pair counts 0 and 1)."""
    k = m.cutoff
    ctx.require_fixed_count(k, f"AUROC@{k}")
    r = ctx.ranked
    kk = r.cut(k).astype(np.float64)
    a = ctx.relevant_in_top(k)
    b = kk - a
    nonrel = 1.0 - r.rel
    if ctx.tie_rule == "average":
        first = r.group_start_rows()
        c = r.before(nonrel)[first]
        bg = np.round(ctx.expected(nonrel, "AUROC") * r.group_size())
    else:
        c = r.before(nonrel)
        bg = np.zeros(c.size)
    q = ctx.query_of_rows()
    pairs = r.upto(r.e_rel * (b[q] - c - bg / 2.0), k)
    value = np.where((a > 0) & (b > 0), _safe_div(pairs, a * b), 0.0)
    return value, ctx.R == 0


def _pr_rows(ctx: Context, m: Measure):
    """Per row (ranks up to the cutoff): the relevant count down to it, its query, R."""
    r = ctx.ranked
    cum = r.before(r.rel) + r.rel
    q = ctx.query_of_rows()
    keep = r.pos <= clamp_cutoff(m.cutoff) if m.cutoff is not None else np.ones(r.pos.size, bool)
    return cum, q, keep


def recall_at_precision(ctx: Context, m: Measure) -> Result:
    """RecallAtPrecision(min_precision)@k: the highest R@j over j <= k (the whole list without
    a cutoff) with P@j >= min_precision, 0 when no j reaches it; R over the universe's R.
    Empty when R = 0. Ties: the highest of ratios has no closed form (``average`` refuses a
    tie group of relevant and non-relevant documents in the top k); every P@j and R@j rises as
    relevant documents move up, so the relevance sorts are the ends of ``unspecified``. The
    aggregate is not a mean of these values (see :func:`recall_at_precision_curve`)."""
    if ctx.tie_rule == "average":
        ctx.refuse_tied(lambda g: g.rel, m.cutoff, m.text)
    r = ctx.ranked
    R = ctx.R.astype(np.float64)
    cum, q, keep = _pr_rows(ctx, m)
    rec = _safe_div(cum, R[q])
    ok = keep & (cum / r.pos >= m.param("min_precision"))
    best = np.zeros(r.n_queries)
    np.maximum.at(best, q[ok], rec[ok])
    return best, R == 0


def recall_at_precision_curve(ctx: Context, m: Measure, counted: np.ndarray,
                              fill: float | None) -> float:
    """The aggregate of RecallAtPrecision, as torchmetrics' RetrievalRecallAtFixedPrecision
    computes it: the precision and recall curves P@j and R@j, j = 1..K (K the cutoff, or the
    longest list), averaged over the counted queries (an empty query's curves are all ``fill``
    under empty_query=zero or one), then the highest mean R@j whose mean P@j reaches
    min_precision; 0 when none does, NaN when no query counts. Past the end of a list, P@j is
    its relevant count over j (over n under ``k_beyond_list=min_k_n``) and R@j stays."""
    r = ctx.ranked
    R = ctx.R.astype(np.float64)
    K = int(clamp_cutoff(m.cutoff)) if m.cutoff is not None else int(r.n.max(initial=1))
    K = max(K, 1)
    empty = R == 0
    use = counted & ~empty
    cum, q, keep = _pr_rows(ctx, m)
    rows = keep & use[q]
    j = r.pos[rows] - 1
    R_sum = _bincount(j, weights=_safe_div(cum[rows], R[q[rows]]), minlength=K)[:K]
    # past the end of each list: relevant count over j (or over n), recall held
    total = r.upto(r.rel, None)
    short = use & (r.n < K)
    ends = r.n[short]
    at_end = _bincount(ends, weights=total[short], minlength=K + 1)[:K]  # by n, from rank n + 1
    ranks = np.arange(1, K + 1, dtype=np.float64)
    R_sum += np.cumsum(_bincount(ends, weights=_safe_div(total[short], R[short]),
                                   minlength=K + 1)[:K])
    n_counted = int(counted.sum())
    n_fill = int((counted & empty).sum())
    if n_counted == 0:
        return float("nan")  # no query counts: as a mean of nothing
    if n_fill and (fill is None or np.isnan(fill)):
        return float("nan")
    fill_sum = n_fill * fill if n_fill else 0.0
    if ctx.conv.k_beyond_list == "min_k_n":
        P_sum = _bincount(j, weights=cum[rows] / r.pos[rows], minlength=K)[:K]
        held = _bincount(ends, weights=_safe_div(total[short], ends.astype(np.float64)),
                           minlength=K + 1)[:K]
        P_mean = (P_sum + np.cumsum(held) + fill_sum) / n_counted
    else:
        # every query's P@j divides by j: the mean is (relevant counts summed) / (queries x j),
        # integers divided once, so a mean precision exactly at min_precision (2/3, 1/3, 1/3
        # and 2/3 at j = 3 average to 1/2) is not lost to the rounding of a sum of fractions
        counts = _bincount(j, weights=cum[rows], minlength=K)[:K] + np.cumsum(at_end)
        P_mean = (counts + fill_sum * ranks) / (n_counted * ranks)
    R_mean = (R_sum + fill_sum) / n_counted
    ok = P_mean >= m.param("min_precision")
    return float(R_mean[ok].max()) if ok.any() else 0.0


