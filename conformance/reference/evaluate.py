"""Evaluate measures under conventions: orchestration of prepare -> rank -> formulas -> aggregate.

Measures whose names fix some axes (``P(rel=2)@5``, ``ndcg_burges@10``) are grouped by their
effective conventions; each group shares one ordering of the run (two under
``ties=unspecified``: the worst and the best order of every tied group).

One idea at about 660 lines: the one path from prepared inputs to per-query values and their
aggregate, in named stages (the groups, the judged side, each group's rankings and formulas,
the aggregation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from conformance.axis import geometric_floor
from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.io.data import Qrels, Run
from conformance.measures import Measure
from conformance.parallel import each, query_halves, query_pieces
from conformance.reference.context import Context, JudgedIdeal
from conformance.reference.formulas import CURVES, FORMULAS, RATIO_PARTS
from conformance.reference.prepare import Prepared, scored_queries, transform_labels
from conformance.reference import tiecheck
from conformance.reference.ranking import exponential_shift, gains, rank
from conformance.reference.reshape import reshaped
from conformance.reference.trace import Trace
from conformance.reference.trace import build as build_trace


@dataclass
class Evaluation:
    """Per-query values of each measure over the scored queries ``qids`` (sorted).

    ``per_query[m]`` is the value (the lower end under ``ties=unspecified``), ``upper[m]`` the
    upper end (the same array otherwise), ``counted[m]`` the queries that enter the aggregate.
    Under ``mean=geometric`` each value is the query's value raised to the floor (what enters
    the logarithm); ``curve[m]``: the (lower, upper) aggregate of a family averaged as a curve
    (RecallAtPrecision), which is no function of the per-query values.
    """

    qids: np.ndarray
    per_query: dict[Measure, np.ndarray] = field(default_factory=dict)
    upper: dict[Measure, np.ndarray] = field(default_factory=dict)
    counted: dict[Measure, np.ndarray] = field(default_factory=dict)
    conventions: dict[Measure, Conventions] = field(default_factory=dict)
    curve: dict[Measure, tuple[float, float]] = field(default_factory=dict)
    # Under rounding=N: the values before rounding, (lower, upper), which the mean is taken of.
    unrounded: dict[Measure, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # evaluate(..., tie_check=True): per query, whether the order of its tied documents changes
    # the value (reference.tiecheck); None where only ties=unspecified can tell
    tie_changed: dict[Measure, np.ndarray | None] = field(default_factory=dict)
    # Asked for by evaluate(..., trace=queries): measure -> qid -> the pieces of its value
    traces: dict[Measure, dict[str, Trace]] = field(default_factory=dict)
    # Under mean=micro: per order of tied documents, each query's (numerator, denominator),
    # NaN numerators for the empty queries under empty_query=nan
    micro: dict[Measure, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)

    def aggregate(self, m: Measure, upper: bool = False) -> float:
        """Mean over counted queries (sum for the Num* counts; under ``mean=geometric`` the
        geometric mean, exp of the mean log); NaN when no query counts or a counted value is
        NaN (``empty_query=nan``). Under ``rounding=N`` the mean of the unrounded values,
        rounded to N places."""
        return self._aggregate(m, upper, rounded=True)

    def _aggregate(self, m: Measure, upper: bool, rounded: bool) -> float:
        if m in self.curve:
            return self.curve[m][1 if upper else 0]
        if m in self.micro:
            keep = self.counted[m]
            ends = [micro_mean(num[keep], den[keep]) for num, den in self.micro[m]]
            mean = max(ends) if upper else min(ends)
            if rounded and self.conventions[m].rounding is not None:
                mean = round(mean, self.conventions[m].rounding)
            return mean
        if m in self.unrounded:
            values = self.unrounded[m][1 if upper else 0][self.counted[m]]
        else:
            values = (self.upper if upper else self.per_query)[m][self.counted[m]]
        if m.aggregate == "sum":
            return float(values.sum())
        if not values.size:
            return float("nan")
        conv = self.conventions.get(m)
        if conv is not None and "averaging" in m.record.groups and conv.mean != "arithmetic":
            with np.errstate(invalid="ignore"):  # a NaN value gives a NaN mean, no warning
                mean = float(np.exp(np.log(values).mean()))
        else:
            mean = float(values.mean())
        if m in self.unrounded and rounded:
            mean = round(mean, self.conventions[m].rounding)
        return mean

    def values(self, m: Measure) -> dict[str, float]:
        """qid -> value for the counted queries."""
        keep = self.counted[m]
        return dict(zip(self.qids[keep].tolist(), self.per_query[m][keep].tolist()))

    def ranges(self, m: Measure) -> dict[str, tuple[float, float]]:
        keep = self.counted[m]
        return {
            q: (lo, hi)
            for q, lo, hi in zip(self.qids[keep].tolist(), self.per_query[m][keep].tolist(),
                                 self.upper[m][keep].tolist())
        }

    def reported_ranges(self, m: Measure) -> dict[str, tuple[float, float]]:
        """:meth:`ranges` as a library that rounds to N places (``rounding=N``) can report them:
        every rounding of a value within float64 noise (1e-12, relative above 1) of the
        unrounded one. Two exact implementations whose unrounded values differ in the last bit
        round a value at a half (AP = 0.634375) to 0.63437 and 0.63438: both are the rounding of
        the same number, and the range holds both. Without rounding, :meth:`ranges`."""
        if m not in self.unrounded:
            return self.ranges(m)
        places = self.conventions[m].rounding
        lo_u, hi_u = self.unrounded[m]
        keep = self.counted[m]
        lo = round_half_even(lo_u - _noise(lo_u), places)
        hi = round_half_even(hi_u + _noise(hi_u), places)
        return dict(zip(self.qids[keep].tolist(), zip(lo[keep].tolist(), hi[keep].tolist())))

    def reported_aggregate(self, m: Measure) -> tuple[float, float]:
        """(low, high) of the aggregate as a library that rounds it can report it (see
        :meth:`reported_ranges`); without rounding, the aggregate's two ends."""
        lo, hi = self.aggregate(m), self.aggregate(m, upper=True)
        if m not in self.unrounded or m in self.curve:
            return lo, hi
        places = self.conventions[m].rounding
        # the unrounded mean, then each rounding within float noise of it
        u_lo, u_hi = self._aggregate(m, False, rounded=False), self._aggregate(m, True, rounded=False)
        return (float(round_half_even(np.array([u_lo - _noise(u_lo)]), places)[0]),
                float(round_half_even(np.array([u_hi + _noise(u_hi)]), places)[0]))


def evaluate(
    qrels: Qrels | Prepared,
    run: Run | None,
    measures: Sequence[Measure],
    conventions: Conventions,
    tie_check: bool = False,
    trace: Sequence[str] = (),
) -> Evaluation:
    """Per-query values and aggregates of ``measures`` under ``conventions``.

    ``qrels`` may be a :class:`Prepared` (then ``run`` is None) so that many convention sets
    share one join. ``tie_check``: also fill ``Evaluation.tie_changed`` from the same ranking
    (under a rule that fixes the tie order). Raises EvaluationError where a convention refuses
    the input. ``trace``: queries whose pieces (``conformance.reference.trace``) come back in
    ``traces``, from the same arithmetic as the values (a scored query only).
    """
    prep = qrels if isinstance(qrels, Prepared) else Prepared(qrels, run)
    groups: dict[Conventions, list[Measure]] = {}
    for m in measures:
        groups.setdefault(m.conventions(conventions), []).append(m)
    result: Evaluation | None = None
    for conv, group in groups.items():
        part = _evaluate_group(reshaped(prep, conv), group, conv, tie_check, tuple(trace))
        if result is None:
            result = part
        else:  # the query set is fixed by query_set, which measure names cannot override
            if not np.array_equal(result.qids, part.qids):
                raise EvaluationError("measures in one evaluation disagree on the query set")
            for d in ("per_query", "upper", "counted", "conventions", "curve", "unrounded",
                      "tie_changed", "traces", "micro"):
                getattr(result, d).update(getattr(part, d))
    if result is None:
        shaped = reshaped(prep, conventions)
        result = Evaluation(shaped.qids[scored_queries(shaped, conventions)])
    return result


def _evaluate_group(prep: Prepared, measures: list[Measure], conv: Conventions,
                    tie_check: bool = False, trace: tuple[str, ...] = ()) -> Evaluation:
    scored = scored_queries(prep, conv)
    local = np.cumsum(scored) - 1  # global query index -> index among scored queries
    nq = int(scored.sum())
    traced = _traced(prep, scored, local, trace)

    # Which labels the evaluation reads, for the conventions that refuse some labels: the
    # whole qrels under the judged ideal; only the scored queries' ranked lists otherwise.
    kept = prep.kept_rows(conv.duplicates)
    if (conv.duplicates == "set" and conv.ties in ("average", "unspecified")
            and len(prep.kept_rows("first")) != prep.run_q.size):
        raise EvaluationError(
            f"duplicates=set under ties={conv.ties}: a document counts at its highest-ranked "
            "listing, which the order of tied listings decides; choose another tie rule")
    if conv.identical_ids == "drop":
        same = prep.identical_rows
        if same.any():  # the query keeps its place in the query set, with what is left
            kept = np.asarray(kept)
            kept = kept[~same[kept]]
    whole_run = kept is prep.run_order  # every row kept, in order
    if whole_run and scored[prep.in_run].all():
        # The usual case (no duplicate, every run query scored): the run's own arrays serve
        # as they are; selecting "all rows" would copy each of them (time and peak memory).
        rows = None
        run_seen = None

        def sel(a):
            return a
    else:
        in_scored = scored[prep.run_q] if whole_run else scored[prep.run_q[kept]]
        rows = kept[in_scored]
        del in_scored
        run_seen = np.zeros(prep.run_label.size, bool)
        run_seen[rows] = True

        def sel(a):
            return a[rows]
    # the qrels' labels are refused first, then the run's, then the unscaled gains
    jmask, jq, jlab, R_judged, shift, jgain, judged_ideal = _judged_side(prep, conv, scored, local, nq)
    run_labels = transform_labels(prep.run_label, conv, prep.run_source, run_seen, prep.run_line,
                                  origin=f"(from {prep.qrels_source}) ")
    if shift is not None:
        _refuse_unscaled(measures, conv, jlab)
    if conv.duplicates == "keep_counted":
        jq, jlab, R_judged, jgain, judged_ideal = _counted_listings(
            prep, conv, rows, run_labels, local, nq, (jq, jlab, R_judged, shift, jgain, judged_ideal))

    # run side: rows of scored queries, kept under the duplicates policy
    if conv.rank_source == "rank_column":
        primary = sel(prep.run_rank)
        if np.isnan(primary).any():
            raise EvaluationError(
                f"{prep.run_source}: rank_source=rank_column but line "
                f"{sel(prep.run_line)[np.isnan(primary)][0]} has no numeric rank"
            )
    elif conv.score_precision == "float32":
        with np.errstate(over="ignore"):  # beyond float32 range: +-inf, still ordered
            p32 = sel(prep.run_score).astype(np.float32)
        np.negative(p32, out=p32)  # negation is exact: -float32(x) == float32(-x)
        primary = p32.astype(np.float64)
        del p32
    else:
        primary = -sel(prep.run_score)
    # query index among the scored queries, per row
    q_rows = sel(prep.run_q) if nq == scored.size else local[sel(prep.run_q)]

    if conv.single_document == "raise" and q_rows.size:
        listed = np.bincount(q_rows, minlength=nq)
        if (listed == 1).any():
            raise EvaluationError(
                f"query {prep.qids[scored][listed == 1][0]!r} has a one-document list "
                "(single_document=raise)")

    # nonpositive_scores=not_relevant: binary measures see a document whose score (as sorted,
    # after score_precision) is <= 0 as not relevant at its rank (label read as unjudged); R
    # under ideal=retrieved is still counted on the unmasked list.
    masked_labels = None
    if conv.nonpositive_scores == "not_relevant":
        seen_score = sel(prep.run_score)
        if conv.score_precision == "float32":
            with np.errstate(over="ignore"):
                seen_score = seen_score.astype(np.float32).astype(np.float64)
        nonpositive = seen_score <= 0
        if nonpositive.any():
            masked_labels = np.where(nonpositive, np.nan, sel(run_labels))

    doc = prep.run_doc if rows is None else prep.run_doc[rows]
    keep_labels = bool(traced) or any(m.record.reads_labels or (
        conv.hit_weight == "label" and "hit_weight" in m.record.axes) for m in measures)
    pooled = None
    if any(m.record.reads_pool for m in measures):
        # judged with a negative label: in the pool but unjudged (trec_eval's RELVALUE_UNJUDGED)
        raw = sel(prep.run_label)
        with np.errstate(invalid="ignore"):
            pooled = (raw < 0) & (conv.negative_labels == "unjudged")

    tie_check = tie_check and conv.ties != "unspecified"  # its own range says it

    def results(part: slice | None) -> tuple[dict[Measure, list], dict]:
        """Each measure's (values, empty) per order, from the rows in ``part`` (all: None),
        and under ``tie_check`` each measure's ``tiecheck.changed``; for a piece (``part``),
        the tie groups it is read from instead, read once for all pieces (``_pieced``)."""
        def take(a):
            return a if part is None else a[part]

        cache: dict[tuple[str, bool], Context] = {}

        def context(tie_rule: str, masked: bool) -> Context:
            labels = masked_labels if masked else sel(run_labels)
            ranked = rank(take(q_rows), take(primary), take(doc), take(sel(prep.run_order)),
                          take(labels), nq, conv, tie_rule, keep_labels=keep_labels,
                          pooled=None if pooled is None else take(pooled), gain_shift=shift,
                          tie_groups=tie_check, keep_order=bool(traced))
            ctx = Context(conv, ranked, tie_rule, R_judged, jgain, jq, judged_ideal=judged_ideal,
                          judged_label=jlab)
            if masked and conv.ideal == "retrieved":
                # read only when a measure asks for R: the unmasked list's R may be refused
                # (a depth cut under ties=unspecified) where the measure never needed it
                ctx.list_R = lambda: cached(tie_rule).R
                ctx.unmasked = lambda: cached(tie_rule)
            ctx.unannotated = lambda: unannotated(tie_rule)
            return ctx

        holes: dict[str, object] = {}

        def unannotated(tie_rule: str):
            """The same rows ranked by the same rule, "relevant" where no qrels row names the
            document (Hole); the unspecified ends then order tied rows by that."""
            if tie_rule not in holes:
                hole = np.where(sel(prep.annotated_rows), 0.0, 1.0)
                # ties=pessimistic or optimistic is one order, the labels': the holes are read
                # where the labels put them; only the ends of unspecified order by the holes
                by_labels = take(sel(run_labels)) if conv.ties != "unspecified" else None
                holes[tie_rule] = rank(take(q_rows), take(primary), take(doc),
                                       take(sel(prep.run_order)), take(hole), nq,
                                       conv.replace(relevance_threshold=1), tie_rule,
                                       tie_labels=by_labels)
            return holes[tie_rule]

        def cached(tie_rule: str, masked: bool = False) -> Context:
            if (tie_rule, masked) not in cache:
                cache[tie_rule, masked] = context(tie_rule, masked)
                if conv.ties == "unspecified" and tie_rule != "average":
                    # Fe and AP@k over retrieved relevant have no proven extreme orders: they
                    # refuse when a cut splits a tied group, which the averaged grouping detects
                    cache[tie_rule, masked].tie_groups = lambda: cached("average", masked)
            return cache[tie_rule, masked]

        out = {}
        changed = {}
        try:
            for m in measures:
                if m in micro:
                    if m.family not in RATIO_PARTS:
                        raise EvaluationError(
                            f"{m.text}: mean=micro sums each query's numerator and denominator, "
                            f"which only {', '.join(RATIO_PARTS)} have; choose another mean")
                    if conv.empty_query == "one":
                        raise EvaluationError(
                            f"{m.text}: under mean=micro a query without relevant documents adds "
                            "its numerator and denominator, and none make it score 1 "
                            "(empty_query=one); choose another empty_query rule")
                masked = masked_labels is not None and "ranked_relevance" in m.record.groups
                if conv.ties == "unspecified":
                    # each family's two ends order tied documents by what its value rises with
                    contexts = [cached(t, masked) for t in END_RULES[m.record.ends]]
                else:
                    contexts = [cached(conv.ties, masked)]
                if traced:
                    shown[m] = []
                    out[m] = []
                    for ctx in contexts:
                        ctx.shown = {}
                        out[m].append(FORMULAS[m.family](ctx, m))
                        shown[m].append((ctx, ctx.shown))
                        ctx.shown = None
                else:
                    out[m] = [FORMULAS[m.family](ctx, m) for ctx in contexts]
                if m in micro:
                    micro[m] = [RATIO_PARTS[m.family](ctx, m) for ctx in contexts]
                if tie_check:
                    ties = contexts[0].ranked.ties
                    changed[m] = ties if part is not None else tiecheck.changed(
                        m, conv, ties, out[m][0][1], shifted=shift is not None)
                if m.family in CURVES:
                    curves[m] = [lambda counted, fill, ctx=ctx, m=m: CURVES[m.family](ctx, m, counted, fill)
                                 for ctx in contexts]
        finally:
            # ``cached`` refers to itself (and ``context`` to it), a cycle through ``cache``:
            # the rankings' per-row arrays would live on until the cyclic garbage collector
            # ran, through the next piece's ranking. Emptied, they go now (a curve keeps the
            # contexts it holds; a context asked for again is made again).
            cache.clear()
            holes.clear()
            if not traced and not curves:
                # No context outlives this call (nor a refusal), so the two functions go too:
                # their cycle held every array of the evaluation (and the join, when evaluate
                # made it) until the cyclic collector ran, ~60 MB a call on 2M rows for a
                # caller evaluating in a loop.
                del cached, context
        return out, changed

    curves: dict[Measure, list] = {}
    shown: dict[Measure, list] = {}  # under a trace: (context, pieces shown) per order
    # mean=micro: measure -> per order, (numerator, denominator) per query, filled by results
    micro: dict[Measure, list] = {m: [] for m in measures
                                  if conv.mean == "micro" and "averaging" in m.record.groups}
    halves = prep.run_halves if q_rows is prep.run_q else query_halves(q_rows, nq)
    if traced or micro or any(m.family in CURVES for m in measures):
        halves = [slice(None)]  # a curve (a micro average) is taken over every query at once
    if len(halves) == 2:
        # Two threads, one per half of the queries (``parallel``), each taking its half in
        # pieces of whole queries one after the other (``query_pieces``): a ranking's per-row
        # arrays are held for a piece at a time, not for a half (the evaluation's peak memory).
        # Every value is a function of its own query's rows (per-query sums are taken range by
        # range), so the result is the same, bit for bit, as one pass over all rows.
        def piece(rows: slice, first: bool) -> tuple:
            """A piece's results: the first piece's whole (its values of the queries no piece
            holds stand for every piece's), the others' at their own queries only."""
            out, changed = results(rows)
            if first:
                return None, out, changed
            owned = np.zeros(nq, bool)
            owned[q_rows[rows]] = True
            owned = np.flatnonzero(owned)
            return (owned, {m: [(v[owned], e[owned]) for v, e in orders] for m, orders in out.items()},
                    changed)

        def half(h: slice) -> list:
            return [piece(p, h is halves[0] and i == 0) for i, p in enumerate(query_pieces(q_rows, h))]

        try:
            done = [one for pieces in each(half, halves) for one in pieces]
        except EvaluationError:
            every, changed = results(None)  # a refusal names what one pass over all rows would name
        else:
            every, ties = _pieced(done)
            changed = {m: tiecheck.changed(m, conv, t, every[m][0][1], shifted=shift is not None)
                       for m, t in ties.items()}
    else:
        every, changed = results(None)

    out = Evaluation(prep.qids[scored])
    for m in measures:
        results_m = every[m]
        counted = np.ones(nq, bool)
        if m.aggregate != "sum":  # a mean or a curve: the empty queries settled first
            # each order settles its own 0/0 first: under ties=unspecified a depth cut can
            # make a query empty in one order and not in the other
            if conv.empty_query == "skip" and any(
                    not np.array_equal(results_m[0][1], e) for _, e in results_m[1:]):
                raise EvaluationError(
                    f"{m.text}: under ties=unspecified a query is empty in some orders of its "
                    "tied documents and not in others, so empty_query=skip cannot decide "
                    "whether it counts; choose another tie rule")
            if conv.query_set == "qrels_strict":
                results_m = [missing_score_zero(v, e, ~prep.in_run[scored]) for v, e in results_m]
            settled = []
            for values, empty in results_m:
                if empty.any():
                    values, counted = _apply_empty(values, empty, conv, m, prep.qids[scored])
                settled.append(values)
            floor = geometric_floor(conv.mean) if "averaging" in m.record.groups else None
            if floor is not None:
                settled = [np.maximum(v, floor, where=~np.isnan(v), out=v.copy()) for v in settled]
        else:
            settled = [v for v, _ in results_m]
        lo = np.minimum.reduce(settled)
        hi = np.maximum.reduce(settled)
        if conv.rounding is not None and m.aggregate == "mean":
            out.unrounded[m] = (lo, hi)
            lo, hi = round_half_even(lo, conv.rounding), round_half_even(hi, conv.rounding)
        out.per_query[m], out.upper[m], out.counted[m] = lo, hi, counted
        out.conventions[m] = conv
        if tie_check:
            out.tie_changed[m] = changed[m]
        if traced:
            out.traces[m] = _traces(prep, rows, jmask, q_rows, primary, traced, shown[m],
                                    results_m, settled, lo, hi, counted)
        if m in micro:
            if conv.query_set == "qrels_strict":  # a judged query missing from the run: 0 hits
                missing = ~prep.in_run[scored]
                micro[m] = [(np.where(missing, 0.0, num), den) for num, den in micro[m]]
            empty = results_m[0][1]
            if conv.empty_query == "nan" and empty.any():
                micro[m] = [(np.where(empty, np.nan, num), den) for num, den in micro[m]]
            out.micro[m] = micro[m]
        if m in curves:
            fill = {"zero": 0.0, "one": 1.0, "nan": np.nan}.get(conv.empty_query)
            ends = [f(counted, fill) for f in curves[m]]
            if conv.rounding is not None:  # a library rounds what it reports, here the curve's value
                ends = [round(v, conv.rounding) for v in ends]
            out.curve[m] = (min(ends), max(ends))
    return out


def _judged_side(prep: Prepared, conv: Conventions, scored: np.ndarray, local: np.ndarray, nq: int):
    """The judged side of one convention set: relevant counts and ideal gains from the qrels of
    the scored queries (jmask, jq, jlab, R_judged, shift, jgain, and the judged ideal, one for
    every order and both halves).

    It depends on the qrels, the conventions, the query coding and the scored queries alone:
    a ``Prepared`` with a ``shared`` store (``api.Evaluator``'s, one for all its runs) keeps it
    for the next run with the same queries, so a training loop sorts the judgments for the ideal
    once. Kept arrays are made read-only: no later run can see one changed.
    """
    shared = getattr(prep, "shared", None)
    key = (conv, scored.tobytes())
    if shared is not None:
        if shared.get("qids") is None or not np.array_equal(shared["qids"], prep.qids):
            shared.clear()
            shared["qids"] = prep.qids
        elif key in shared:
            return shared[key]
    qrels_seen = (None if conv.ideal in ("judged", "judged_to_list")
                  else np.zeros(prep.qrels_label.size, bool))
    qrels_labels = transform_labels(prep.qrels_label, conv, prep.qrels_source, qrels_seen, prep.qrels_line)
    jmask = scored[prep.qrels_q] & ~np.isnan(qrels_labels)
    jq = local[prep.qrels_q[jmask]]
    jlab = qrels_labels[jmask]
    R_judged = np.bincount(jq[jlab >= conv.relevance_threshold], minlength=nq).astype(np.float64)
    # exponential gains of labels beyond 960 are scaled query by query (ranking.exponential_shift)
    shift = exponential_shift(jlab, jq, nq) if conv.gain == "exponential" else None
    jgain = gains(jlab, conv, shift=None if shift is None else shift[jq])
    side = (jmask, jq, jlab, R_judged, shift, jgain, JudgedIdeal(jgain, jq, nq, conv))
    if shared is not None:
        for a in side[:6]:
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
        shared[key] = side
    return side


def _counted_listings(prep: Prepared, conv: Conventions, rows: np.ndarray | None,
                      run_labels: np.ndarray, local: np.ndarray, nq: int, judged: tuple):
    """``duplicates=keep_counted``: the judged side (jq, jlab, R_judged, jgain, judged ideal)
    with one more judgment for every later listing of a relevant document among the evaluated
    run rows (``rows``; all when None), wherever in the list it is: the rows of a merge of the
    judgments with the recommendations. The listings themselves are all ranked, as under keep.

    Relevant {a, f}, list a, b, a, a: R = 2 + 2 listings = 4; R@4 = 3/4; AP@4 = (1/1 + 2/3 +
    3/4) / 4. A repeated document below the threshold adds nothing.
    """
    jq, jlab, R_judged, shift, jgain, judged_ideal = judged
    r = np.arange(prep.run_q.size) if rows is None else np.asarray(rows)
    with np.errstate(invalid="ignore"):  # NaN: unjudged, never relevant
        r = r[run_labels[r] >= conv.relevance_threshold]
    docs = prep.run_doc_code
    key = prep.run_q[r] * np.int64(int(docs.max(initial=-1)) + 1) + docs[r]
    order = np.argsort(key, kind="stable")
    later = np.zeros(r.size, bool)
    later[order[1:]] = key[order[1:]] == key[order[:-1]]  # a listing after one of the same pair
    extra = r[later]
    if not extra.size:
        return jq, jlab, R_judged, jgain, judged_ideal
    eq, elab = local[prep.run_q[extra]], run_labels[extra]
    jq, jlab = np.concatenate([jq, eq]), np.concatenate([jlab, elab])
    R_judged = R_judged + np.bincount(eq, minlength=nq)
    jgain = np.concatenate([jgain, gains(elab, conv, shift=None if shift is None else shift[eq])])
    return jq, jlab, R_judged, jgain, JudgedIdeal(jgain, jq, nq, conv)


# the two orders of each family's tied documents under ties=unspecified (Family.ends); a
# family whose ends are "none" refuses the tied groups that could change it, in either order
END_RULES = {
    "label": ("pessimistic", "optimistic"),
    "gain": ("pessimistic_gain", "optimistic_gain"),
    "judged": ("unjudged_first", "judged_first"),
    "none": ("pessimistic", "optimistic"),
}


def micro_mean(num: np.ndarray, den: np.ndarray) -> float:
    """``mean=micro``: the numerators' sum over the denominators' sum of the counted queries;
    NaN when no query counts (or a numerator is NaN), 0 when the denominators sum to 0 (0/0
    read as nothing found, as each query's own ratio is)."""
    if not num.size:
        return float("nan")
    top, bottom = float(num.sum()), float(den.sum())
    if bottom == 0 and not np.isnan(top):
        return 0.0
    return top / bottom


def missing_score_zero(values: np.ndarray, empty: np.ndarray,
                       missing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``query_set=qrels_strict``: a judged query missing from the run (``missing``) scores 0,
    whatever its judgments (never empty)."""
    if not missing.any():
        return values, empty
    return np.where(missing, 0.0, values), empty & ~missing


def _traced(prep: Prepared, scored: np.ndarray, local: np.ndarray,
            trace: tuple[str, ...]) -> dict[str, int]:
    """qid -> index among the scored queries, for the traced queries that are scored."""
    out = {}
    for qid in trace:
        gi = int(np.searchsorted(prep.qids, qid))
        if gi < prep.qids.size and prep.qids[gi] == qid and scored[gi]:
            out[qid] = int(local[gi])
    return out


def _traces(prep, rows, jmask, q_rows, primary, traced, shown, results_m, settled, lo, hi,
            counted) -> dict[str, Trace]:
    """Each traced query's trace, from the order whose value is the query's low end."""
    vocab = prep._doc_vocab
    judged_rows = np.flatnonzero(jmask)

    def run_rows(order):
        return order if rows is None else rows[order]

    def docs_of(order):
        return vocab.take(prep.run_doc_code[run_rows(order)]).to_pylist()

    def raw_of(order):
        return prep.run_label[run_rows(order)]

    def judged_docs(mine):
        return vocab.take(prep.qrels_doc_code[judged_rows[mine]]).to_pylist()

    out = {}
    for qid, q in traced.items():
        ends = [v[q] for v in settled]
        j = min(range(len(ends)), key=lambda i: (np.isnan(ends[i]), ends[i]))
        ctx, pieces = shown[j]
        values, empty = results_m[j]
        t = build_trace(ctx, pieces, q, qid, values, empty, docs_of, raw_of, primary,
                        judged_docs, listed=int(np.count_nonzero(q_rows == q)))
        t.value, t.counted = (float(lo[q]), float(hi[q])), bool(counted[q])
        out[qid] = t
    return out


def _refuse_unscaled(measures: list[Measure], conv: Conventions, labels: np.ndarray) -> None:
    """Exponential gains beyond a double are computed scaled (ranking.exponential_shift), which
    only the families whose value a common factor of the gains cancels from can use."""
    for m in measures:
        if "gain" in m.record.axes and not m.record.scale_free:
            top = float(np.nanmax(labels))
            raise EvaluationError(
                f"{m.text}: under gain=exponential the label {top:g} has the gain 2^{top:g} - 1, "
                "beyond the largest double (about 2^1024); a normalised measure (nDCG) is "
                "computed with the gains scaled, since the scale cancels out, but this one "
                "cannot be")


def _noise(v):
    """The float64 noise an exact implementation's value may carry: 1e-12, relative above 1."""
    return 1e-12 * np.maximum(1.0, np.abs(v))


def _pieced(done: list) -> tuple[dict, dict]:
    """``results`` of the whole run from those of its pieces (``[(queries, every, ties)]``,
    the first piece's over every query, the others' over their own ``queries``): each query's
    values from the piece holding its rows (the first piece's for a query with no row, which
    every piece computes alike); and per measure the tie groups of every piece taken as one
    (``TieGroups.joined``; None where a piece has none), which hold each group's query."""
    (_, first, first_ties), rest = done[0], done[1:]
    every = {m: [(v.copy(), e.copy()) for v, e in orders] for m, orders in first.items()}
    for owned, out, _ in rest:
        for m, orders in out.items():
            for (v, e), (v2, e2) in zip(every[m], orders):
                v[owned] = v2
                e[owned] = e2
    joined: dict[tuple, object] = {}  # measures ranked alike share their pieces' groups
    ties = {}
    for m in first_ties:
        parts = [piece_ties[m] for _, _, piece_ties in done]
        if any(t is None for t in parts):
            ties[m] = None
            continue
        key = tuple(id(t) for t in parts)  # the pieces' groups live as long as ``done``
        if key not in joined:
            joined[key] = tiecheck.TieGroups.joined(parts)
        ties[m] = joined[key]
    return every, ties


def round_half_even(x: np.ndarray, places: int) -> np.ndarray:
    """Python's ``round(v, places)`` of every value (correctly rounded: half to even on the exact
    binary value). ``np.round`` scales by 10^places first, which can land on the other side of
    a half; the few values whose scaled form is near a half are rounded by ``round`` itself."""
    out = np.round(x, places)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * 10.0 ** places
        near = np.isfinite(scaled) & (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
    at = np.flatnonzero(near)
    if at.size:
        out[at] = [round(v, places) for v in x[at].tolist()]
    return out


def _apply_empty(values, empty, conv: Conventions, m: Measure, qids):
    """``empty_query`` applied to the queries masked ``empty``: (values, counted)."""
    rule = conv.empty_query
    counted = np.ones(values.size, bool)
    if rule == "raise":
        raise EvaluationError(
            f"{m.text}: query {qids[empty][0]!r} has no relevant document (empty_query=raise)"
        )
    fill = {"zero": 0.0, "one": 1.0, "nan": np.nan, "skip": np.nan}[rule]
    values = np.where(empty, fill, values)
    if rule == "skip":
        counted = ~empty
    return values, counted
