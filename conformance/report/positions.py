"""Position-by-position tables: how one query's value is built under one convention set.

For a disagreement between two entries the report shows, for each of the two profiles, the
query's ranked list as that profile orders and labels it, and the running sums that end in the
value. For the graded measures (DCG, nDCG) a row holds: rank, document, label, gain, discount,
discounted gain (gain x discount), running DCG; beside it the ideal order with its running IDCG.
For the binary measures a row holds: rank, document, label, relevant?, relevant so far, running
precision (relevant so far / rank) and the AP term (the running precision at a relevant rank).

The tables are display, computed per query in plain Python from the same pieces the reference
uses (``transform_labels``, ``gains``, ``discounts``, the duplicates policy, the tie rules as
``conformance.reference.ranking`` documents them, the depth cut). Each table also carries the
reference's own per-query value (``evaluate``), so a reader sees the sums end where the
reference ends; the tests hold the two together.

Ties: ``average`` shows the tied rows in docid-descending order with expected relevance and gain
(the mean over the tie group), as the reference computes them; ``unspecified`` shows the worst
order (within ties, labels ascending), the lower end of the reference's range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared, transform_labels
from conformance.reference.ranking import discounts, gains


# Rows shown in full at the top of a table; of a longer list, also the row at the cutoff, up to
# KEEP_ROWS rows that add to the value further down, and the last row.
HEAD_ROWS = 12
KEEP_ROWS = 30


@dataclass
class Position:
    rank: int
    doc: str
    label: float | None  # the label as the profile reads it (None: unjudged)
    raw: float | None  # the label in the qrels (None: unjudged)
    gain: float  # expected gain under ties=average
    discount: float
    discounted: float
    running: float  # running DCG (graded) or running precision (binary)
    rel: float  # 1/0, expected relevance under ties=average
    rel_so_far: float
    ap_term: float  # running precision at a relevant rank (0 elsewhere)
    tie_group: int | None  # index of its tie group when the group has more than one row
    inside: bool  # rank <= cutoff


@dataclass
class IdealPosition:
    rank: int
    doc: str
    label: float
    gain: float
    discount: float
    running: float
    inside: bool


@dataclass
class PositionTable:
    query: str
    profile_name: str
    measure: str
    measure_family: str
    graded: bool
    cutoff: int | None
    n: int  # documents ranked (after depth)
    rows: list[Position] = field(default_factory=list)
    ideal: list[IdealPosition] = field(default_factory=list)
    hidden: int = 0  # rows not shown between the head and the last row
    ideal_hidden: int = 0
    relevant: int = 0  # R of the profile's relevance universe
    dcg: float | None = None  # DCG@k from the rows (graded)
    idcg: float | None = None  # IDCG@k from the ideal (graded)
    reference: tuple[float, float] | None = None  # the reference's per-query value (lo, hi)
    counted: bool = True  # False when empty_query=skip leaves the query out
    note: str = ""
    refused: str | None = None  # the reference's error under this profile (rows still shown)
    how: str = ""  # how the binary value is formed from the rows, in one line
    error: str | None = None

    @property
    def table_value(self) -> float | None:
        """The graded value the table's sums give (DCG@k, or DCG@k / IDCG@k; 0 when the ideal
        is 0, before empty_query applies)."""
        if not self.graded or self.dcg is None:
            return None
        if self.measure_family == "DCG":
            return self.dcg
        return self.dcg / self.idcg if self.idcg else 0.0


def _doc_bytes(doc: str) -> bytes:
    return doc.encode("utf-8")


def _order(rows: list[int], primary: np.ndarray, docs: dict[int, str], order_in_run: np.ndarray,
           labels: np.ndarray, tie_rule: str) -> list[int]:
    """Rows of one query in the order the reference ranks them under ``tie_rule`` (stable sorts
    from the least significant key up, as ``np.lexsort`` orders)."""
    out = sorted(rows, key=lambda r: order_in_run[r])
    if tie_rule in ("docid_desc", "average", "pessimistic", "optimistic"):
        out.sort(key=lambda r: _doc_bytes(docs[r]), reverse=True)
    elif tie_rule == "docid_asc":
        out.sort(key=lambda r: _doc_bytes(docs[r]))
    elif tie_rule == "reverse_input":
        out.sort(key=lambda r: -order_in_run[r])
    if tie_rule in ("pessimistic", "optimistic"):
        sign = 1.0 if tie_rule == "pessimistic" else -1.0
        out.sort(key=lambda r: sign * (0.0 if math.isnan(labels[r]) else labels[r]))
    out.sort(key=lambda r: primary[r])
    return out


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def position_table(prep: Prepared, query: str, measure: Measure, conv: Conventions,
                   profile_name: str) -> PositionTable:
    """The table of ``query`` under ``conv`` (the measure's own overrides already applied by the
    caller or here: ``measure.conventions(conv)``)."""
    conv = measure.conventions(conv)
    graded = measure.record.kind == "graded"
    table = PositionTable(query, profile_name, measure.text, measure.family, graded,
                          measure.cutoff, 0)
    try:
        ev = evaluate(prep, None, [measure], conv)
        ranges = ev.ranges(measure)
        if query in ranges:
            table.reference = ranges[query]
        else:
            table.counted = False
    except EvaluationError as exc:
        table.refused = str(exc)

    qi = int(np.searchsorted(prep.qids, query))
    if qi >= prep.qids.size or prep.qids[qi] != query:
        table.error = f"query {query!r} is in neither the run nor the qrels"
        return table
    try:
        kept = prep.kept_rows(conv.duplicates)
    except EvaluationError as exc:  # the run itself is refused: no order to show
        table.error = str(exc)
        return table
    try:
        run_labels = transform_labels(prep.run_label, conv, prep.qrels_source)
        qrels_labels = transform_labels(prep.qrels_label, conv, prep.qrels_source)
    except EvaluationError:
        # the profile refuses a label (table.refused says so): show the list with the labels
        # as they are, which is what the refusal is about
        shown_as = conv.replace(label_type="float", negative_labels="keep")
        run_labels = transform_labels(prep.run_label, shown_as, prep.qrels_source)
        qrels_labels = transform_labels(prep.qrels_label, shown_as, prep.qrels_source)
        table.note = "labels shown as given: this profile refuses one of them"
    rows = [int(r) for r in kept if prep.run_q[r] == qi]
    docs_vocab = prep._doc_vocab
    docs = {r: docs_vocab[int(prep.run_doc_code[r])].as_py() for r in rows}
    if conv.rank_source == "rank_column":
        primary = prep.run_rank
    else:
        score = prep.run_score
        if conv.score_precision == "float32":
            with np.errstate(over="ignore"):
                score = score.astype(np.float32).astype(np.float64)
        primary = -score
    tie_rule = "pessimistic" if conv.ties == "unspecified" else conv.ties
    ordered = _order(rows, primary, docs, prep.run_order, run_labels, tie_rule)
    # tie groups: equal primary keys (used by ties=average, marked for every rule)
    group_of: dict[int, int] = {}
    g = -1
    prev = None
    for r in ordered:
        if prev is None or primary[r] != primary[prev]:
            g += 1
        group_of[r] = g
        prev = r
    members: dict[int, list[int]] = {}  # tie group -> positions in ``ordered``
    for i, r in enumerate(ordered):
        members.setdefault(group_of[r], []).append(i)
    sizes = {grp: len(idx) for grp, idx in members.items()}
    if conv.ties == "unspecified" and any(v > 1 for v in sizes.values()):
        table.note = ("ties=unspecified: the value is a range over the orders of each tied "
                      "group; the worst order is shown (within ties, labels ascending)")
    if conv.depth is not None and len(ordered) > conv.depth:
        depth_cut = conv.depth
        table.note = (table.note + "; " if table.note else "") + (
            f"depth={conv.depth}: the run is cut to its first {conv.depth} documents "
            f"({len(ordered) - conv.depth} more are never scored)")
    else:
        depth_cut = len(ordered)

    labels = np.array([run_labels[r] for r in ordered], dtype=np.float64)
    gain = gains(labels, conv) if labels.size else np.zeros(0)
    rel = (np.nan_to_num(labels, nan=-np.inf) >= conv.relevance_threshold).astype(np.float64)
    e_gain, e_rel = gain.copy(), rel.copy()
    # per row: (offset t in its tie group, group size, relevant rows in the group, relevant
    # rows ranked before the group); every row is its own group unless ties=average
    group_pos: list[tuple[int, int, float, float]] = []
    before = 0.0
    for i in range(len(ordered)):
        group_pos.append((0, 1, float(rel[i]), before))
        before += float(rel[i])
    if conv.ties == "average":
        for idx in members.values():
            if len(idx) > 1:
                e_gain[idx] = gain[idx].sum() / len(idx)
                e_rel[idx] = rel[idx].sum() / len(idx)
                c = group_pos[idx[0]][3]
                for t, i in enumerate(idx):
                    group_pos[i] = (t, len(idx), float(rel[idx].sum()), c)
                table.note = ("ties=average: rows of a tied group carry the group's mean gain and "
                              "relevance, the expected value over its orders")
    n = depth_cut
    table.n = n
    pos = np.arange(1, n + 1)
    disc = discounts(pos, conv) if n else np.zeros(0)
    k = measure.cutoff if measure.cutoff is not None else n
    running = 0.0
    rel_so_far = 0.0
    out: list[Position] = []
    for i in range(n):
        r = ordered[i]
        dg = float(e_gain[i] * disc[i])
        running += dg
        # AP term: (relevant here) x (precision here); under ties=average its expectation over
        # the group's orders, (r/n)(c + 1 + t(r - 1)/(n - 1)) / rank (see reference.ranking)
        t, ng, rg, c = group_pos[i]
        inner = t * (rg - 1.0) / (ng - 1.0) if ng > 1 else 0.0
        ap = (rg / ng) * (c + 1.0 + inner) / (i + 1)
        rel_so_far += float(e_rel[i])
        lab = labels[i]
        raw = prep.run_label[r]
        out.append(Position(
            rank=i + 1,
            doc=docs[r],
            label=_num(lab),
            raw=_num(raw),
            gain=float(e_gain[i]),
            discount=float(disc[i]),
            discounted=dg,
            running=running if graded else rel_so_far / (i + 1),
            rel=float(e_rel[i]),
            rel_so_far=rel_so_far,
            ap_term=ap,
            tie_group=group_of[r] if sizes[group_of[r]] > 1 else None,
            inside=(i + 1) <= k,
        ))
    # the relevance universe and the ideal
    if conv.ideal == "retrieved":
        ideal_src = [(docs[ordered[i]], float(labels[i]), float(gain[i])) for i in range(n)
                     if not math.isnan(labels[i])]
        table.relevant = int(rel[:n].sum())
    else:
        jrows = [j for j in range(prep.qrels_q.size) if prep.qrels_q[j] == qi
                 and not math.isnan(qrels_labels[j])]
        jl = np.array([qrels_labels[j] for j in jrows], dtype=np.float64)
        jg = gains(jl, conv) if jl.size else np.zeros(0)
        ideal_src = [(docs_vocab[int(prep.qrels_doc_code[j])].as_py(), float(jl[t]), float(jg[t]))
                     for t, j in enumerate(jrows)]
        table.relevant = int((jl >= conv.relevance_threshold).sum())
    ideal_src.sort(key=lambda t: -t[2])
    if graded:
        ipos = np.arange(1, len(ideal_src) + 1)
        idisc = discounts(ipos, conv) if ideal_src else np.zeros(0)
        irun = 0.0
        kk = measure.cutoff if measure.cutoff is not None else len(ideal_src)
        for i, (doc, lab, gn) in enumerate(ideal_src):
            irun += gn * float(idisc[i])
            table.ideal.append(IdealPosition(i + 1, doc, lab, gn, float(idisc[i]), irun,
                                             (i + 1) <= kk))
        kk_list = min(k, n)
        table.dcg = out[kk_list - 1].running if kk_list > 0 else 0.0
        kk_ideal = min(kk, len(table.ideal))
        table.idcg = table.ideal[kk_ideal - 1].running if kk_ideal > 0 else 0.0
    table.rows = out
    if not graded:
        table.how = _how(measure, conv, out, table.relevant, n)
    return table


def _f(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4f}"


def _how(m: Measure, conv: Conventions, rows: list[Position], R: int, n: int) -> str:
    """One line saying how the rows make the value of a binary measure."""
    k = m.cutoff
    kk = n if k is None else min(k, n)
    at = "" if k is None else f"@{k}"
    x = rows[kk - 1].rel_so_far if kk > 0 else 0.0
    empty = f"; R = 0, so 0/0: empty_query={conv.empty_query} decides" if R == 0 else ""
    if m.family == "P":
        den = kk if conv.k_beyond_list == "min_k_n" else k
        why = f" (k_beyond_list={conv.k_beyond_list})" if k is not None and k > n else ""
        return f"P{at} = {_f(x)} relevant in the top {k} / {den}{why}{empty}"
    if m.family == "R":
        return f"R{at} = {_f(x)} relevant in the top {k if k else n} / R = {R}{empty}"
    if m.family == "AP":
        s = sum(r.ap_term for r in rows[:kk])
        if conv.ap_denominator == "relevant" or k is None and conv.ap_denominator != "retrieved_relevant":
            den, what = R, "R"
        elif conv.ap_denominator == "retrieved_relevant":
            den, what = x, "relevant retrieved" + ("" if k is None else f" in the top {k}")
        else:
            den, what = min(R, k), "min(k, R)"
        return (f"AP{at} = sum of AP terms {_f(s)} / {what} = {_f(den)} "
                f"(ap_denominator={conv.ap_denominator}){empty}")
    if m.family == "RR":
        first = next((r.rank for r in rows if r.rel == 1.0), None)
        if first is None:
            return f"no relevant document ranked: RR{at} = 0{empty}"
        text = f"first relevant document at rank {first}: 1/{first}"
        if k is not None:
            if conv.rr_cutoff == "ignore":
                text += f" (rr_cutoff=ignore: the cutoff {k} is ignored)"
            elif first > k:
                text += f", but it is below k = {k}: 0 (rr_cutoff=honour)"
        return text + empty
    if m.family == "Rprec":
        kk = min(R, n)
        x = rows[kk - 1].rel_so_far if kk > 0 else 0.0
        den = R if conv.k_beyond_list == "k" else kk
        return f"Rprec = {_f(x)} relevant in the top R = {R} / {den}{empty}"
    if m.family == "Success":
        return f"Success{at} = 1 if a relevant document is in the top {k if k else n}{empty}"
    return empty.lstrip("; ")


def shown(items: list, cutoff: int | None, keep=None) -> tuple[list, int]:
    """The rows a table shows: all when few; else the first ``HEAD_ROWS``, the row at the
    cutoff, the rows ``keep`` selects (relevant or gaining rows: where the value comes from,
    at most ``KEEP_ROWS`` of them) and the last row. Hidden rows become ``None`` gaps (one per
    run of hidden rows); the second value counts the hidden rows."""
    n = len(items)
    if n <= HEAD_ROWS + 2:
        return list(items), 0
    want = set(range(HEAD_ROWS)) | {n - 1}
    if cutoff is not None and cutoff <= n:
        want.add(cutoff - 1)
    if keep is not None:
        extra = [i for i in range(HEAD_ROWS, n) if keep(items[i])][:KEEP_ROWS]
        want.update(extra)
    out: list = []
    prev = -1
    for i in sorted(want):
        if i > prev + 1:
            out.append(None)
        out.append(items[i])
        prev = i
    return out, n - len(want)
