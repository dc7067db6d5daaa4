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

This module is one idea at about 1,270 lines: one function per family (``FORMULAS``), each a
few dozen lines over the notation above and the shared :class:`Context`; apart, the families
would each need the notation restated.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference.ranking import (Ranked, clamp_cutoff, discounts, ideal_dcg, ideal_dcg_at,
                                           ideal_sorted, ideal_terms, range_sums,
                                           segment_accumulate)


class JudgedIdeal:
    """The ideal DCG of the judged documents (``ideal=judged``) per query at each cutoff asked:
    one sort of the judgments for every cutoff, shared by every Context of one evaluation (the
    two halves of a two-thread evaluation ask for the same values of every query)."""

    def __init__(self, gain: np.ndarray, q: np.ndarray, n_queries: int, conv: Conventions) -> None:
        self._args = (gain, q, n_queries, conv)
        self._terms = None
        self._sorted = None
        self._at: dict[int | None, np.ndarray] = {}
        self._lock = threading.Lock()

    def sorted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each query's judged gains sorted descending: (gains, start, count)."""
        with self._lock:
            if self._sorted is None:
                gain, q, n_queries, _ = self._args
                self._sorted = ideal_sorted(gain, q, n_queries)
            return self._sorted

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
    judged_label: np.ndarray | None = None  # per qrels row of scored queries: label (as judged_q)
    _judged: np.ndarray | None = None
    _query_of_rows: np.ndarray | None = None
    # Under a trace (``conformance.reference.trace``): what the formula just computed, by name
    # (per-query arrays, or the text naming a denominator); None: not tracing, nothing kept.
    shown: dict | None = None

    def show(self, **pieces) -> None:
        """Keep the pieces a formula computed its value from, for the trace: ``sums`` names
        the per-row column (``conformance.reference.trace.COLUMNS``) whose sum over each
        query's top ``cut`` rows is ``numerator``; ``denominator`` and ``denominator_is``
        (its name in the formula); ``ideal_cut``: the ideal rows IDCG sums. A no-op unless a
        trace asked for them."""
        if self.shown is not None:
            self.shown.update(pieces)

    def grouped(self) -> Ranked | None:
        """The ranking with its tied documents grouped (``ties=average``) when the order inside
        tie groups is not one fixed order: this ranking under ``average``, the averaged one at
        the ends of ``unspecified``; None under a rule that fixes the order."""
        if self.tie_rule == "average":
            return self.ranked
        return self.tie_groups().ranked if self.tie_groups is not None else None

    def refuse_tied(self, key, k: int | None, what: str) -> None:
        """Refuse when a tie group reaching into the top k (every group when k is None) holds
        rows whose ``key`` (Ranked -> per-row values) differ: a family with no closed-form
        expectation over the orders of such a group, and no proven worst and best order."""
        g = self.grouped()
        if g is None or g.pos.size == 0:
            return
        x = np.asarray(key(g), dtype=np.float64)
        x = np.where(np.isnan(x), -np.inf, x)  # unjudged is one value, not unequal to itself
        first = g.group_start_rows()
        begins = np.flatnonzero(first == np.arange(x.size))
        varied = np.minimum.reduceat(x, begins) != np.maximum.reduceat(x, begins)
        if k is not None:
            varied &= g.pos[begins] <= clamp_cutoff(k)
        if varied.any():
            raise EvaluationError(
                f"{what} under ties={self.conv.ties}: a tied group holds documents that count "
                "differently, and the value depends on their order inside it (no closed-form "
                "expectation, no proven worst and best order); choose another tie rule")

    def judged(self) -> np.ndarray:
        """Per row: 1.0 if its document is judged (a label that is not NaN), else 0.0 (computed
        once per ranking; read-only)."""
        if self._judged is None:
            self._judged = (~np.isnan(self.ranked.label)).astype(np.float64)
        return self._judged

    def expected(self, x: np.ndarray, what: str) -> np.ndarray:
        """``x`` per row, or under ``ties=average`` its mean over each row's tie group."""
        return self.ranked.group_mean(x, what) if self.tie_rule == "average" else x

    def N_judged_nonrel(self) -> np.ndarray:
        """Per query: judged documents below the relevance threshold in the relevance universe
        (the qrels under ideal=judged, the ranked list under ideal=retrieved)."""
        n = self.ranked.n_queries
        if self.conv.ideal == "retrieved":
            self.require_fixed_count(None, "ideal=retrieved with a depth cut")
            return self.ranked.upto(self.judged() - self.ranked.rel, None)
        lab = self.judged_label
        return _bincount(self.judged_q[lab < self.conv.relevance_threshold],
                           minlength=n).astype(np.float64)

    def universe_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels, query) of the judged documents of the relevance universe."""
        if self.conv.ideal == "retrieved":
            # which documents a depth cut keeps decides it (ERR's emptiness, RBP's largest
            # label), as it decides the retrieved ideal
            self.require_fixed_gains(None, "ideal=retrieved with a depth cut")
            r = self.ranked
            q = np.repeat(np.arange(r.n_queries), r.n)
            ok = ~np.isnan(r.label)
            return r.label[ok], q[ok]
        return self.judged_label, self.judged_q

    def ideal_gains(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ideal stage: each query's ideal list, its gains sorted descending (gains, start,
        count), under ``ideal``: the judged documents' gains (``judged``, ``judged_to_list``,
        whose cut :meth:`ideal_cut` adds), the ranked list's (``retrieved``), or k slots each
        holding the query's largest judged gain (``k_slots``; the list's length n of them
        without a cutoff). ``k``: the cutoff the ideal is asked for."""
        if self.conv.ideal == "retrieved":
            self.require_fixed_gains(None, "ideal=retrieved with a depth cut")
            r = self.ranked
            return ideal_sorted(r.gain, np.repeat(np.arange(r.n_queries), r.n), r.n_queries)
        if self.judged_ideal is None:
            self.judged_ideal = JudgedIdeal(self.judged_gain, self.judged_q, self.ranked.n_queries,
                                            self.conv)
        if self.conv.ideal == "k_slots":
            g, start, count = self.judged_ideal.sorted()
            top = np.where(count > 0, g[np.minimum(start, max(g.size - 1, 0))] if g.size else 0.0,
                           0.0)
            slots = (self.ranked.n if k is None
                     else np.full(count.size, clamp_cutoff(k), np.int64)).astype(np.int64)
            return np.repeat(top, slots), np.cumsum(slots) - slots, slots
        return self.judged_ideal.sorted()

    def query_of_rows(self) -> np.ndarray:
        """Per row: its query (computed once per ranking; read-only)."""
        if self._query_of_rows is None:
            r = self.ranked
            self._query_of_rows = np.repeat(np.arange(r.n_queries), r.n)
        return self._query_of_rows
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
                elif self.conv.ideal == "judged":
                    self._idcg[k] = self.judged_ideal.idcg(k)
                else:  # any other ideal: the DCG of its list (ideal_gains) at its cut
                    g, start, count = self.ideal_gains(k)
                    qs = np.repeat(np.arange(count.size), count)
                    pos = np.arange(g.size, dtype=np.int64) - start[qs] + 1
                    self._idcg[k] = range_sums(g * discounts(pos, self.conv), start,
                                               self.ideal_cut(k))
        return self._idcg[k]

    def ideal_cut(self, k: int | None) -> np.ndarray:
        """Per query: how many of the ideal's sorted gains IDCG@k sums: min(k, the ideal's
        size), and under ``ideal=judged_to_list`` at most the list's length too."""
        _, _, count = self.ideal_gains(k)
        cut = count if k is None else np.minimum(count, clamp_cutoff(k))
        if self.conv.ideal == "judged_to_list":
            cut = np.minimum(cut, self.ranked.n)
        return cut

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
        return _bincount(q[nonzero], minlength=n) > 0

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


def _bincount(x: np.ndarray, weights: np.ndarray | None = None, minlength: int = 0) -> np.ndarray:
    """``np.bincount``, as floats when weighted even on no input (numpy gives int64 then)."""
    out = np.bincount(x, weights=weights, minlength=minlength)
    return out.astype(np.float64) if weights is not None else out


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0)


def precision(ctx: Context, m: Measure) -> Result:
    """P@k = (relevant in top k) / k.

    With ``k_beyond_list=min_k_n`` the denominator is min(k, n); a query that retrieved
    nothing then scores 0 (0/0 read as nothing found). Empty when R = 0.
    """
    num, den = ctx.relevant_in_top(m.cutoff), ctx.list_denominator(m.cutoff)
    ctx.show(sums="rel", cut=ctx.ranked.cut(m.cutoff), numerator=num, denominator=den,
             denominator_is="n" if m.cutoff is None else (
                 "min(k, n)" if ctx.conv.k_beyond_list == "min_k_n" else "k"))
    return _safe_div(num, den), ctx.R == 0


def recall(ctx: Context, m: Measure) -> Result:
    """R@k = (relevant in top k) / R; R without a cutoff uses the whole list. Empty when R = 0."""
    R = ctx.R
    num = ctx.relevant_in_top(m.cutoff)
    ctx.show(sums="rel", cut=ctx.ranked.cut(m.cutoff), numerator=num, denominator=R,
             denominator_is="R")
    return _safe_div(num, R.astype(float)), R == 0


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
    the relevant documents in the top k, ``min_k_relevant`` min(k, R). Empty when R = 0; when
    D = 0 on a non-empty query (nothing relevant retrieved) AP is 0.
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
}

# Families whose aggregate is computed from the whole evaluation (Family.aggregate "curve")
CURVES = {"RecallAtPrecision": recall_at_precision_curve}

# Families that read each row's label (Ranked.label) and, for infAP, the pool (Ranked.pooled)
# (AUROC and binG take expected values over tie groups, whose refusal of a depth cut reads the
# labels: without them every cut group was refused, and a measure's value depended on which
# other measures were evaluated with it)
READS_LABELS = frozenset({"NumNonRelJudgedRet", "Bpref", "infAP", "Judged", "Unjudged", "ERR",
                          "RBP", "RBPResid", "FallOut", "AUROC", "binG", *_CWL})
READS_POOL = frozenset({"infAP"})
# The graded families that read the relevance threshold only through their gains
# (threshold_scope=graded), never through R
GAINS_READ_THRESHOLD = frozenset({"nDCG", "DCG", "G", "nDCGRel"})
