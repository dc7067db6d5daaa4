"""The trace of a value: for chosen queries, the per-row pieces the reference summed.

``evaluate(..., trace=queries)`` returns, beside the values, a :class:`Trace` per measure and
traced query, read from the very ``Ranked`` and ``Context`` the formula computed the value
from: the order (with its tie groups), each row's rank, document, label as read and as given,
gain, discount, discounted gain, relevance, AP and RR terms, the running sums; the ideal list
and where IDCG cuts it; the numerator and denominator the formula divided; the value. Nothing
here computes a value: the rows are slices of the reference's own arrays, the running sums
their cumulative sums, and the formula says (``Context.show``) which column it summed over how
many rows and what it divided by. The report's position tables render a trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance.reference.ranking import discounts, ideal_order

# The per-row columns a formula may name as the sum of its numerator (``Context.show(sums=)``),
# and what their sum over the top rows is called
COLUMNS = {"rel": "relevant documents", "discounted": "DCG", "ap_term": "sum of the AP terms",
           "rr_term": "1 / rank of the first relevant document", "p_first": "a relevant document found"}


@dataclass
class TraceRow:
    rank: int
    doc: str
    label: float | None  # the label as the conventions read it (None: unjudged)
    raw: float | None  # the label in the qrels (None: unjudged)
    gain: float  # the (expected, under ties=average) gain
    discount: float
    discounted: float  # gain x discount, as the reference sums it
    running: float  # running DCG (graded) or running precision (binary)
    rel: float  # 1/0, the expected relevance under ties=average
    rel_so_far: float
    ap_term: float  # (relevant here) x (precision here), its expectation under ties=average
    rr_term: float  # P(first relevant here) / rank
    p_first: float  # P(first relevant here)
    tie_group: int | None  # its tie group (equal scores) when the group has more than one row
    inside: bool  # among the rows the formula summed (rank <= its cut)


@dataclass
class IdealRow:
    rank: int
    doc: str
    label: float | None
    gain: float
    discount: float
    running: float
    inside: bool  # among the rows IDCG summed


@dataclass
class Trace:
    query: str
    tie_rule: str  # the order shown (one end of ties=unspecified: the one giving the low value)
    listed: int  # rows of the query before the depth cut
    rows: list[TraceRow] = field(default_factory=list)
    ideal: list[IdealRow] = field(default_factory=list)
    relevant: float = 0.0  # R, the relevant documents of the relevance universe
    sums: str | None = None  # the column whose sum over the top ``cut`` rows is the numerator
    cut: int = 0
    numerator: float | None = None
    denominator: float | None = None
    denominator_is: str = ""
    ideal_cut: int | None = None
    empty: bool = False  # 0/0: empty_query decides the value
    value: tuple[float, float] | None = None  # the reference's (low, high) after empty_query
    counted: bool = True


def _num(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def build(ctx, shown: dict, q: int, qid: str, values: np.ndarray, empty: np.ndarray,
          docs_of, raw_of, primary: np.ndarray, judged_docs, listed: int) -> Trace:
    """The trace of query ``q`` (its index among the scored queries) from the context and the
    pieces its formula showed. ``docs_of(rows)`` / ``raw_of(rows)``: docids and given labels of
    the rows ``rank`` was given; ``primary``: their sort key (tie groups are equal keys);
    ``judged_docs(rows)``: docids of the judged rows (``Context.judged_q``'s)."""
    r = ctx.ranked
    s, n = int(r.start[q]), int(r.n[q])
    at = slice(s, s + n)
    order = r.order[at]
    cut = int(shown["cut"][q]) if "cut" in shown else n
    t = Trace(qid, ctx.tie_rule, listed=listed)
    disc = discounts(r.pos[at], ctx.conv)
    dg = ctx.discounted_gains()[at]
    rel = r.e_rel[at]
    graded = shown.get("sums") == "discounted"
    running_dcg = np.cumsum(dg)
    rel_so_far = np.cumsum(rel)
    key = primary[order]
    group = np.concatenate([[0], np.cumsum(key[1:] != key[:-1])]) if n else np.zeros(0, int)
    sizes = np.bincount(group) if n else np.zeros(0, int)
    labels = r.label[at] if r.label is not None else np.full(n, np.nan)
    docs = docs_of(order)
    raws = raw_of(order)
    with np.errstate(divide="ignore", invalid="ignore"):
        rr = r.p_first[at] / r.pos[at]
    for i in range(n):
        t.rows.append(TraceRow(
            rank=int(r.pos[s + i]), doc=docs[i], label=_num(labels[i]), raw=_num(raws[i]),
            gain=float(r.e_gain[s + i]), discount=float(disc[i]), discounted=float(dg[i]),
            running=float(running_dcg[i] if graded else rel_so_far[i] / (i + 1)),
            rel=float(rel[i]), rel_so_far=float(rel_so_far[i]), ap_term=float(r.ap_term[s + i]),
            rr_term=float(rr[i]), p_first=float(r.p_first[s + i]),
            tie_group=int(group[i]) if sizes[group[i]] > 1 else None, inside=i < cut))
    t.cut = cut
    t.relevant = float(np.asarray(ctx.R)[q])
    t.sums = shown.get("sums")
    for name in ("numerator", "denominator"):
        if name in shown:
            setattr(t, name, float(np.asarray(shown[name])[q]))
    t.denominator_is = shown.get("denominator_is", "")
    t.empty = bool(empty[q])
    if "ideal_cut" in shown:
        t.ideal_cut = int(shown["ideal_cut"][q])
        t.ideal = _ideal(ctx, q, shown.get("ideal_k"), t.ideal_cut, docs_of, judged_docs, order,
                         labels)
    return t


def _ideal(ctx, q: int, k: int | None, cut: int, docs_of, judged_docs, order,
           labels) -> list[IdealRow]:
    """The ideal list of query ``q`` as the reference's ideal stage gives it
    (``Context.ideal_gains``), with the discounts of its ranks and the running ideal DCG. Its
    documents are named where the list is the query's judged or ranked documents sorted by
    gain (``ranking.ideal_order``); an ideal of other slots names none."""
    g_all, start, count = ctx.ideal_gains(k)
    g = g_all[int(start[q]):int(start[q]) + int(count[q])]
    r = ctx.ranked
    if ctx.conv.ideal == "retrieved":
        s, n = int(r.start[q]), int(r.n[q])
        source, labs, docs = r.gain[s:s + n], labels, docs_of(order)
    else:
        mine = np.flatnonzero(ctx.judged_q == q)
        source, labs = ctx.judged_gain[mine], ctx.judged_label[mine]
        docs = judged_docs(mine)
    by = ideal_order(source, np.zeros(source.size, np.int64))
    named = source.size == g.size and np.array_equal(source[by], g)  # the source, sorted
    pos = np.arange(1, g.size + 1)
    d = discounts(pos, ctx.conv) if g.size else np.zeros(0)
    running = np.cumsum(g * d)
    return [IdealRow(int(pos[i]), docs[int(by[i])] if named else "",
                     _num(labs[int(by[i])]) if named else None, float(g[i]), float(d[i]),
                     float(running[i]), i < cut) for i in range(g.size)]
