"""Properties of the reference that must hold on every input, checked on generated cases.

Each property runs a few hundred generated cases by default; ``CONFORMANCE_LONG_FUZZ=1`` raises
that to 5000. Cases are small (a few queries of up to 6 retrieved documents, scores drawn from a
few values so that ties are common, labels 0-3 or unjudged, plus judged documents the run missed)
and the conventions are drawn too. Document ids are shuffled against the listing order, so the
docid tie rules and the input-order tie rules see different orders.

The oracles here are relations, not values: the ideal order scores 1, monotonicity in k and in
swaps, bounds, agreement between tie rules, and, for ``ties=average`` and ``ties=unspecified``,
brute force over every permutation of every tied group (each order scored as a run with distinct
scores, all orders in one evaluation, one query per order).
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.errors import EvaluationError
from conformance.measures import FAMILIES, Measure
from conformance.reference import evaluate

LONG = os.environ.get("CONFORMANCE_LONG_FUZZ") == "1"
FUZZ = settings(
    max_examples=5000 if LONG else 300,
    deadline=None,
    database=None,  # no example database written into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOL = 1e-12
FIXED_TIES = ("docid_desc", "docid_asc", "input_order", "reverse_input", "pessimistic",
              "optimistic")
ALL_TIES = FIXED_TIES + ("average", "unspecified")


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Query:
    qid: str
    ret: list  # (docid, label or None for unjudged, score), in listing order
    unret: list  # (docid, label): judged, not retrieved

    def qrels_rows(self):
        rows = [(self.qid, d, lab) for d, lab, _ in self.ret if lab is not None]
        return rows + [(self.qid, d, lab) for d, lab in self.unret]

    def run_rows(self):
        return [(self.qid, d, s) for d, _, s in self.ret]


def inputs(queries, order=None):
    qs = queries if order is None else [queries[i] for i in order]
    return (Qrels.from_records([r for q in qs for r in q.qrels_rows()]),
            Run.from_records([r for q in qs for r in q.run_rows()]))


LABELS = st.sampled_from([None, 0, 0, 1, 1, 2, 3])


@st.composite
def queries_st(draw, qid="q", max_ret=6, scores=st.integers(0, 3), labels=LABELS,
               unique_scores=False, min_ret=0):
    n = draw(st.integers(min_ret, max_ret))
    n_unret = draw(st.integers(0, 2))
    names = draw(st.permutations([f"d{i}" for i in range(n + n_unret)]))
    if unique_scores:
        sc = [float(s) for s in draw(st.permutations(range(n)))]
    else:
        sc = [float(draw(scores)) for _ in range(n)]
    ret = [(names[i], draw(labels), sc[i]) for i in range(n)]
    unret = [(names[n + j], draw(st.integers(0, 3))) for j in range(n_unret)]
    q = Query(qid, ret, unret)
    if not q.qrels_rows():  # a query with no judgment is never scored: give it one
        q.unret.append((f"x{qid}", draw(st.integers(0, 3))))
    return q


@st.composite
def cases_st(draw, max_queries=3, **kw):
    n = draw(st.integers(1, max_queries))
    return [draw(queries_st(qid=f"q{i}", **kw)) for i in range(n)]


def conventions_st(ties=st.sampled_from(ALL_TIES), empty=st.sampled_from(["zero", "one", "skip"]),
                   depth=st.sampled_from([None, None, 1, 2, 3, 5]), **fixed):
    parts = dict(
        gain=st.sampled_from(["linear", "exponential", "0:0,1:1,2:3"]),
        discount=st.sampled_from(["log2", "jarvelin", "log:10", "jarvelin:3"]),
        ideal=st.sampled_from(["judged", "retrieved"]),
        k_beyond_list=st.sampled_from(["k", "min_k_n"]),
        ap_denominator=st.sampled_from(["relevant", "retrieved_relevant", "min_k_relevant", "k"]),
        empty_query=empty,
        ties=ties,
        relevance_threshold=st.sampled_from([1, 1, 2]),
        threshold_scope=st.sampled_from(["binary", "graded"]),
        depth=depth,
        rr_cutoff=st.sampled_from(["honour", "ignore"]),
        bpref_denominator=st.sampled_from(["min_r_n", "r"]),
        iprec_rank=st.sampled_from(["round", "floor_plus_0.9"]),
        rbp_gain=st.sampled_from(["binary", "label", "label_over_max"]),
        weights_horizon=st.sampled_from([None, 1000, 4]),
        residual_tail=st.sampled_from(["unjudged_only", "always"]),
    )
    parts.update({k: v if isinstance(v, st.SearchStrategy) else st.just(v)
                  for k, v in fixed.items()})
    return st.builds(Conventions, **parts)


# a value for each parameter without a default (every generated label is at most 4)
PARAMS = {"multiple": 0.6, "recall": 0.5, "p": 0.8, "max_rel": 4}


def measure(family, k=None, alpha=0.3):
    params = tuple((p.name, alpha if p.name == "alpha" else PARAMS[p.name])
                   for p in FAMILIES[family].parameters if p.default is None)
    return Measure(family, k, (), params=params)


def measures_for(family, ks=(1, 2, 3, 5, 8)):
    takes, needs = FAMILIES[family].takes_cutoff, FAMILIES[family].needs_cutoff
    out = [measure(family, k) for k in ks] if takes else []
    if not needs:
        out.append(measure(family))
    return out


def all_measures(ks=(1, 3, 5)):
    return [m for f in FAMILIES for m in measures_for(f, ks)]


BINARY = ["P", "R", "F1", "Success", "RR", "GranularRR", "AP", "Rprec", "T", "Fe", "NumRelRet", "NumRel",
          "MeanP"]
# every family whose record says its values lie in [0, 1]
NORMALISED = [f for f in FAMILIES if FAMILIES[f].bounded]


REFUSING_TIES = ("average", "unspecified")
# Families whose formulas (docstrings) refuse some tie groups, under both rules or under
# ties=average only (no closed-form expectation), and the C/W/L measures that need a horizon.
TIES_REFUSED = {f for f in FAMILIES if FAMILIES[f].ends == "none"} | {"AUROC", "FallOut"}
AVERAGE_REFUSED = {"ERR", "IPrec", "IPrecAvg", "RecallAtPrecision", "SetAP", "Bpref", "binG", "FallOut",
                   "Judged", "Unjudged", "RBP", "RBPResid", "SDCG", "INSQ"}
NEED_HORIZON = {"NERR10", "NERR11", "INST", "INSQ"}


def is_refusal(exc: EvaluationError, conv: Conventions) -> bool:
    """The documented refusal of ties=average / ties=unspecified: a cut splits a tied group
    where the order inside the group moves a denominator (formulas.Context.require_*), or a
    tied group a family cannot average (its docstring); and a C/W/L measure that weighs an
    endless list without a horizon."""
    text = str(exc)
    return (conv.ties in REFUSING_TIES and f"ties={conv.ties}" in text) or (
        conv.weights_horizon is None and "set weights_horizon=N" in text)


def may_refuse(m: Measure, conv: Conventions) -> bool:
    """Measures refused under average/unspecified whenever a cut splits a mixed tied group."""
    return m.family in ("Fe", "GranularRR") or (
        m.family == "AP" and m.cutoff is not None and conv.ap_denominator == "retrieved_relevant"
    ) or m.family in TIES_REFUSED or (conv.ties == "average" and m.family in AVERAGE_REFUSED) or (
        m.family in NEED_HORIZON and conv.weights_horizon is None)


def documented_refusal(m: Measure, conv: Conventions) -> bool:
    """Whether a refusal of m under conv is one the reference documents: a cut (k or depth)
    that moves a denominator (Fe; AP over retrieved relevant; anything over the retrieved ideal
    when the list is cut to a depth), a tie group a family's docstring refuses, a horizon."""
    cut = m.cutoff is not None or conv.depth is not None
    return m.family in ("Fe", "GranularRR") or (
        m.family == "AP" and conv.ap_denominator == "retrieved_relevant" and cut) or (
        conv.ideal == "retrieved" and conv.depth is not None) or (
        conv.ties in REFUSING_TIES and m.family in TIES_REFUSED) or (
        conv.ties == "average" and m.family in AVERAGE_REFUSED) or (
        m.family in NEED_HORIZON and conv.weights_horizon is None)


def safe_measures(ms, conv):
    return [m for m in ms if not ((conv.ties in REFUSING_TIES and may_refuse(m, conv))
                                  or (m.family in NEED_HORIZON and conv.weights_horizon is None))]


def evaluate_or_refused(qrels, run, ms, conv):
    """The evaluation, or None when the tie rule refuses it (see ``is_refusal``)."""
    try:
        return evaluate(qrels, run, ms, conv)
    except EvaluationError as exc:
        if is_refusal(exc, conv):
            return None
        raise


def evaluate_each(qrels, run, ms, conv) -> dict:
    """m -> (per_query, upper, counted, qids), or None for a measure the tie rule refuses.

    Measures are evaluated together where possible and one by one after a refusal, so one
    refused measure does not hide the others."""
    out: dict = {}

    def take(ev, group):
        for m in group:
            out[m] = (ev.per_query[m], ev.upper[m], ev.counted[m], ev.qids)

    safe = safe_measures(ms, conv)
    singles = [m for m in ms if m not in safe]
    if safe:
        ev = evaluate_or_refused(qrels, run, safe, conv)
        if ev is not None:
            take(ev, safe)
        else:
            singles = ms
    for m in singles:
        ev = evaluate_or_refused(qrels, run, [m], conv)
        if ev is None:
            assert documented_refusal(m, conv), (m.text, conv)
            out[m] = None
        else:
            take(ev, [m])
    return out


def same(a, b, tol=0.0):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


# --------------------------------------------------------------------------------------------
# nDCG of the ideal order is 1
# --------------------------------------------------------------------------------------------


@st.composite
def ideal_query(draw):
    """Every judged document retrieved, scored by its label: the ideal order under any tie rule
    (tied documents share a label, so their order does not change the DCG)."""
    labels = draw(st.lists(st.integers(0, 3), min_size=1, max_size=7))
    assume(any(labels))
    names = draw(st.permutations([f"d{i}" for i in range(len(labels))]))
    listing = draw(st.permutations(range(len(labels))))
    return Query("q", [(names[i], labels[i], float(labels[i])) for i in listing], [])


@FUZZ
@given(q=ideal_query(), conv=conventions_st(depth=st.just(None), threshold_scope=st.just("binary")),
       k=st.integers(1, 9))
def test_ndcg_of_the_ideal_order_is_one(q, conv, k):
    ms = [measure("nDCG"), measure("nDCG", k)]
    ev = evaluate(*inputs([q]), ms, conv)
    for m in ms:
        assert ev.per_query[m][0] == pytest.approx(1.0, abs=TOL), m.text
        assert ev.upper[m][0] == pytest.approx(1.0, abs=TOL), m.text


# --------------------------------------------------------------------------------------------
# Monotonicity in k
# --------------------------------------------------------------------------------------------


@FUZZ
@given(case=cases_st(), conv=conventions_st())
def test_recall_never_falls_as_k_grows(case, conv):
    ks = range(1, 10)
    ms = [measure("R", k) for k in ks] + [measure("R")]
    ev = evaluate_or_refused(*inputs(case), ms, conv)
    if ev is None:
        return
    for arrays in (ev.per_query, ev.upper):
        table = np.array([arrays[m] for m in ms])  # cutoff x query
        for j in range(table.shape[1]):
            col = table[:, j]
            if np.isnan(col).all():  # skipped (empty) query
                continue
            assert (np.diff(col) >= -TOL).all(), col


@FUZZ
@given(case=cases_st(), conv=conventions_st(k_beyond_list=st.just("k")))
def test_precision_times_k_never_falls_as_k_grows(case, conv):
    ks = list(range(1, 10))
    ms = [measure("P", k) for k in ks]
    ev = evaluate_or_refused(*inputs(case), ms, conv)
    if ev is None:
        return
    for arrays in (ev.per_query, ev.upper):
        table = np.array([arrays[m] * k for m, k in zip(ms, ks)])
        for j in range(table.shape[1]):
            col = table[:, j]
            if np.isnan(col).all():
                continue
            assert (np.diff(col) >= -TOL).all(), col


# --------------------------------------------------------------------------------------------
# Swaps
# --------------------------------------------------------------------------------------------


def _is_rel(label, conv):
    return label is not None and label >= conv.relevance_threshold


@FUZZ
@given(case=cases_st(unique_scores=True), conv=conventions_st(), data=st.data())
def test_reordering_two_non_relevant_documents_changes_no_binary_measure(case, conv, data):
    q = data.draw(st.sampled_from(case))
    nonrel = [i for i, (_, lab, _) in enumerate(q.ret) if not _is_rel(lab, conv)]
    assume(len(nonrel) >= 2)
    i, j = data.draw(st.permutations(nonrel))[:2]
    swapped = list(q.ret)
    (di, li, si), (dj, lj, sj) = swapped[i], swapped[j]
    swapped[i], swapped[j] = (di, li, sj), (dj, lj, si)
    case2 = [Query(x.qid, swapped, x.unret) if x is q else x for x in case]
    ms = [m for f in BINARY for m in measures_for(f, (1, 2, 3, 5))]
    before = evaluate(*inputs(case), ms, conv)
    after = evaluate(*inputs(case2), ms, conv)
    for m in ms:
        same(before.per_query[m], after.per_query[m], TOL)
        same(before.upper[m], after.upper[m], TOL)


@FUZZ
@given(case=cases_st(unique_scores=True), conv=conventions_st(), data=st.data())
def test_swapping_a_better_document_upward_never_lowers_ap_rr_ndcg(case, conv, data):
    q = data.draw(st.sampled_from(case))
    lab = [(-1 if l is None else l) for _, l, _ in q.ret]
    by_rank = sorted(range(len(q.ret)), key=lambda i: -q.ret[i][2])
    limit = len(by_rank) if conv.depth is None else min(conv.depth, len(by_rank))
    # positions inside the scored (depth-cut) list, so the list's label set does not change
    pairs = [(by_rank[a], by_rank[b]) for a in range(limit) for b in range(a + 1, limit)
             if lab[by_rank[b]] > lab[by_rank[a]]]
    assume(pairs)
    hi, lo = data.draw(st.sampled_from(pairs))  # hi ranked above lo, lo has the better label
    swapped = list(q.ret)
    (dh, lh, sh), (dl, ll, sl) = swapped[hi], swapped[lo]
    swapped[hi], swapped[lo] = (dh, lh, sl), (dl, ll, sh)
    case2 = [Query(x.qid, swapped, x.unret) if x is q else x for x in case]
    ms = [measure("AP"), measure("RR"), measure("nDCG"), measure("DCG")]
    for k in (1, 2, 3, 5):
        ms += [measure("RR", k), measure("nDCG", k), measure("DCG", k)]
        if conv.ap_denominator != "retrieved_relevant":
            # with that denominator a relevant document entering the top k can lower AP@k
            ms.append(measure("AP", k))
    before = evaluate(*inputs(case), ms, conv)
    after = evaluate(*inputs(case2), ms, conv)
    for m in ms:
        b, a = before.per_query[m], after.per_query[m]
        ok = np.isnan(b) & np.isnan(a) | (a >= b - TOL)
        assert ok.all(), (m.text, b, a)


# --------------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------------


@FUZZ
@given(case=cases_st(), conv=conventions_st())
def test_normalised_measures_lie_in_unit_interval(case, conv):
    ms = [m for f in NORMALISED for m in measures_for(f, (1, 2, 3, 5))]
    for m, res in evaluate_each(*inputs(case), ms, conv).items():
        if res is None:
            continue
        lo, hi, keep, _ = res
        for arr in (lo[keep], hi[keep]):
            assert ((arr >= -TOL) & (arr <= 1 + TOL)).all(), (m.text, arr)


# --------------------------------------------------------------------------------------------
# Ties
# --------------------------------------------------------------------------------------------


RANGE_MEASURES = all_measures((1, 2, 4))


@FUZZ
@given(case=cases_st(), conv=conventions_st(ties=st.just("unspecified")))
def test_unspecified_range_holds_every_fixed_tie_rule(case, conv):
    qrels, run = inputs(case)
    rng = evaluate_each(qrels, run, RANGE_MEASURES, conv)
    ms = [m for m in RANGE_MEASURES if rng[m] is not None]
    for m in ms:
        lo, hi, keep, _ = rng[m]
        assert (lo[keep] <= hi[keep] + TOL).all(), m.text
    for rule in FIXED_TIES + ("average",):
        fixed = evaluate_each(qrels, run, ms, conv.replace(ties=rule))
        for m in ms:
            if fixed[m] is None:
                continue
            lo, hi, keep, _ = rng[m]
            v = fixed[m][0]
            assert fixed[m][2].tolist() == keep.tolist(), (rule, m.text)
            lo, hi, v = lo[keep], hi[keep], v[keep]
            assert ((v >= lo - TOL) & (v <= hi + TOL)).all(), (rule, m.text, lo, v, hi)


@FUZZ
@given(case=cases_st(unique_scores=True), conv=conventions_st(ties=st.just("average")))
def test_average_with_unique_scores_equals_docid_desc(case, conv):
    ms = [m for m in all_measures()
          if not (m.family in NEED_HORIZON and conv.weights_horizon is None)]
    qrels, run = inputs(case)
    avg = evaluate(qrels, run, ms, conv)
    desc = evaluate(qrels, run, ms, conv.replace(ties="docid_desc"))
    for m in ms:
        same(avg.per_query[m], desc.per_query[m], TOL)
        same(avg.upper[m], desc.per_query[m], TOL)


def tie_orders(q: Query, conv: Conventions):
    """Every order of the retrieved list that permutes documents only within equal scores
    (scores as the conventions read them), as lists of (docid, label)."""
    groups: dict[float, list] = {}
    for d, lab, s in q.ret:
        key = float(np.float32(s)) if conv.score_precision == "float32" else s
        groups.setdefault(key, []).append((d, lab))
    ordered = [groups[s] for s in sorted(groups, reverse=True)]
    for choice in itertools.product(*(itertools.permutations(g) for g in ordered)):
        yield [x for g in choice for x in g]


def every_order_as_queries(q: Query, conv: Conventions) -> tuple[Qrels, Run, int]:
    """One query per tie order, each with distinct descending scores, sharing q's judgments."""
    qrels, run, n = [], [], 0
    judged = [(d, lab) for d, lab, _ in q.ret if lab is not None] + list(q.unret)
    for idx, order in enumerate(tie_orders(q, conv)):
        qid = f"p{idx:05d}"
        qrels += [(qid, d, lab) for d, lab in judged]
        run += [(qid, d, float(len(order) - r)) for r, (d, _) in enumerate(order)]
        n += 1
    return Qrels.from_records(qrels), Run.from_records(run), n


def _n_orders(q: Query) -> int:
    sizes: dict[float, int] = {}
    for _, _, s in q.ret:
        sizes[s] = sizes.get(s, 0) + 1
    return math.prod(math.factorial(n) for n in sizes.values())


def _max_group(q: Query) -> int:
    sizes: dict[float, int] = {}
    for _, _, s in q.ret:
        sizes[s] = sizes.get(s, 0) + 1
    return max(sizes.values(), default=0)


AVERAGE_FAMILIES = ["P", "R", "nDCG", "DCG", "AP", "RR", "Success",
                    # the new families with a closed form under ties=average
                    "Hits", "RelP", "RprecMult", "Utility", "Bpref", "Judged", "Unjudged", "binG",
                    "RBP", "RBPResid", "SDCG", "INSQ", "FallOut", "AUROC", "F1", "SetAP", "MeanP"]


@pytest.mark.parametrize("family", AVERAGE_FAMILIES)
@FUZZ
@given(q=queries_st(max_ret=6, scores=st.integers(0, 2), min_ret=1),
       conv=conventions_st(ties=st.just("average"), ap_denominator=st.just("relevant"),
                           empty_query=st.just("zero")))
def test_average_equals_mean_over_all_tie_orders(family, q, conv):
    assume(_max_group(q) <= 5 and _n_orders(q) <= 720)
    ms = measures_for(family, (1, 2, 3, 5))
    avg = evaluate_or_refused(*inputs([q]), ms, conv)
    if avg is None:  # ideal=retrieved with a depth cut inside a mixed tied group, or a family
        # refusing a cut (depth or k) through a tied group it cannot average
        assert (conv.ideal == "retrieved" and conv.depth is not None) or family in (
            AVERAGE_REFUSED | TIES_REFUSED | NEED_HORIZON), (family, conv)
        return
    qrels, run, n = every_order_as_queries(q, conv)
    orders = evaluate(qrels, run, ms, conv.replace(ties="docid_desc"))
    assert orders.qids.size == n
    for m in ms:
        expected = float(np.mean(orders.per_query[m]))
        assert avg.per_query[m][0] == pytest.approx(expected, abs=1e-12), m.text


@pytest.mark.parametrize("family", list(FAMILIES))
@FUZZ
@given(q=queries_st(max_ret=6, scores=st.integers(0, 2), min_ret=1),
       conv=conventions_st(ties=st.just("unspecified"), empty_query=st.just("zero")))
def test_unspecified_range_holds_every_tie_order(family, q, conv):
    assume(_n_orders(q) <= 720)
    assume(not (family in NEED_HORIZON and conv.weights_horizon is None))
    ms = measures_for(family, (1, 2, 3, 5))
    rng = evaluate_each(*inputs([q]), ms, conv)
    qrels, run, n = every_order_as_queries(q, conv)
    orders = evaluate(qrels, run, ms, conv.replace(ties="docid_desc"))
    for m in ms:
        if rng[m] is None:  # refused (documented_refusal checked by evaluate_each)
            continue
        lo, hi = rng[m][0][0], rng[m][1][0]
        vals = orders.per_query[m]
        # the range is exactly [worst order, best order]
        assert (lo, hi) == pytest.approx((vals.min(), vals.max()), abs=1e-12), (m.text, q, conv)


def label_order(q: Query, rule: str) -> list:
    """q's retrieved list ordered as ties=pessimistic (optimistic) says, written here: score
    descending; among equal scores the label ascending (descending), an unjudged document read
    as label 0; among equal labels the docid descending (byte order: the ids are ASCII)."""
    sign = 1 if rule == "pessimistic" else -1
    by_docid = sorted(q.ret, key=lambda r: r[0], reverse=True)
    return sorted(by_docid, key=lambda r: (-r[2], sign * (0 if r[1] is None else r[1])))


@pytest.mark.parametrize("rule", ["pessimistic", "optimistic"])
@FUZZ
@given(q=queries_st(max_ret=7, scores=st.integers(0, 2)),
       conv=conventions_st(ties=st.just("docid_desc"), score_precision=st.just("float64")))
def test_label_tie_rules_are_the_order_written_out(rule, q, conv):
    """Every family under ties=pessimistic (optimistic) gives the value of the list re-listed,
    with distinct scores, in the order written out above."""
    ms = POOL
    got = evaluate_each(*inputs([q]), ms, conv.replace(ties=rule))
    listed = Query(q.qid, [(d, lab, float(len(q.ret) - i))
                           for i, (d, lab, _) in enumerate(label_order(q, rule))], q.unret)
    want = evaluate_each(*inputs([listed]), ms, conv)
    for m in ms:
        assert (got[m] is None) == (want[m] is None), m.text
        if got[m] is None:
            continue
        assert got[m][2].tolist() == want[m][2].tolist(), m.text
        assert got[m][0] == pytest.approx(want[m][0], abs=1e-12, nan_ok=True), (m.text, q, conv)


# --------------------------------------------------------------------------------------------
# Independence: of other measures, of query order, of other queries
# --------------------------------------------------------------------------------------------


POOL = all_measures((1, 2, 5))


@FUZZ
@given(case=cases_st(), conv=conventions_st(), data=st.data())
def test_measures_together_equal_measures_alone(case, conv, data):
    m1, m2 = data.draw(st.permutations(POOL))[:2]
    qrels, run = inputs(case)

    def run_eval(ms):
        try:
            return evaluate(qrels, run, ms, conv)
        except EvaluationError as exc:
            return str(exc)

    alone = {m: run_eval([m]) for m in (m1, m2)}
    together = run_eval([m1, m2])
    if isinstance(together, str):
        assert any(isinstance(v, str) for v in alone.values())
        return
    for m in (m1, m2):
        assert not isinstance(alone[m], str)
        assert together.qids.tolist() == alone[m].qids.tolist()
        same(together.per_query[m], alone[m].per_query[m])
        same(together.upper[m], alone[m].upper[m])
        assert together.counted[m].tolist() == alone[m].counted[m].tolist()


@FUZZ
@given(case=cases_st(max_queries=4), conv=conventions_st(query_set=st.sampled_from(["run", "qrels"])),
       data=st.data())
def test_query_order_in_the_input_does_not_matter(case, conv, data):
    order = data.draw(st.permutations(range(len(case))))
    ms = all_measures()
    a = evaluate_each(*inputs(case), ms, conv)
    b = evaluate_each(*inputs(case, order), ms, conv)
    for m in ms:
        if a[m] is None or b[m] is None:
            assert a[m] is None and b[m] is None, m.text
            continue
        assert a[m][3].tolist() == b[m][3].tolist()
        same(a[m][0], b[m][0])
        same(a[m][1], b[m][1])
        assert a[m][2].tolist() == b[m][2].tolist()


@FUZZ
@given(case=cases_st(max_queries=4), conv=conventions_st())
def test_all_queries_at_once_equal_each_query_alone(case, conv):
    ms = all_measures()
    together = evaluate_each(*inputs(case), ms, conv)
    alones = [evaluate_each(*inputs([q]), ms, conv) for q in case]
    for m in ms:
        if m.record.reads_annotation:
            # a document judged for any query is annotated for every query (BEIR's and MTEB's
            # definition): a query's Hole reads the other queries' judgments, by design
            # (test_hole_reads_the_judgments_of_every_query)
            continue
        if together[m] is None:  # refused: so is some query alone
            assert any(a[m] is None for a in alones), m.text
            continue
        lo, hi, counted, qids = together[m]
        for q, alone in zip(case, alones):
            assert alone[m] is not None, m.text
            a_lo, a_hi, a_counted, a_qids = alone[m]
            if q.qid not in qids.tolist():
                assert a_qids.tolist() == []
                continue
            j = qids.tolist().index(q.qid)
            assert a_qids.tolist() == [q.qid]
            same(lo[j:j + 1], a_lo, TOL)
            same(hi[j:j + 1], a_hi, TOL)
            assert counted[j] == a_counted[0]
