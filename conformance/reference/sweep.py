"""The sweep: every combination of the convention values that can change a measure, evaluated
with the work shared between combinations (the engine of ``conformance check-paper``).

It lives beside the reference because it is the reference: it hands the reference's own
``rank`` and ``FORMULAS`` pre-sorted rows and a :class:`Context` subclass, so every
combination's value equals ``evaluate()`` under that combination. One idea at ~730 lines: the
shared-work engine (``_Engine``, ``_SweepContext``, ``_Whole``) and the grids it fills
(:class:`Sweep`, :class:`Grid`) cannot be read apart. Per-query reported values are matched
cell by cell while the grid is filled: they are any objects with ``measure``, ``qid``, ``lo``
and ``hi`` (``conformance.paper.Reported``).

Which values are tried. Every named value of every axis a measure reads is either tried or
shown, on this input or on every input, unable to change what the sweep finds:

- the axis records' ``swept`` values (gathered in :data:`SWEPT_VALUES`) are tried, less those
  ``Facts.domains`` proves equal on this input to one kept: ``negative_labels=keep`` without a
  negative label, ``label_type=int_truncate`` without a fractional one, ``label_type=float32``
  without a label that float32 cannot hold (0.3; 0.5 it holds), ``query_set=qrels``
  without a judged query missing from the run, ``run_all`` without a run query lacking
  judgments, ``qrels_strict`` (which refuses such a query) without a judged query missing from
  the run, ``identical_ids=drop`` without a document named like its query,
  ``nonpositive_scores=not_relevant`` without a score <= 0; the formula key
  (``sweep_keys.formula_key``) makes further values one where the formula cannot tell them apart
  (``ideal=judged_to_list`` where no list is shorter than its ideal cut, orderings that cannot
  differ, a depth no list reaches or, outside ``ideal=retrieved``, none of the top-k lists a
  measure with a cutoff reads (``_Engine.reads_depth``), a threshold the gains do not read,
  the graded scope where every label below the threshold is 0 (``_Engine.gain_reading``));
- ``relevance_threshold``: one threshold per class of the input's labels (a threshold L makes
  the labels >= L relevant; thresholds between the same two labels select the same
  documents): 0 and the negative ones where labels there exist, then 1 .. the largest label
  (the distinct labels above 30); ``depth``: none, plus 1000 and 100 when some list is longer;
- the values of :data:`UNTRIED_VALUES` are never tried, each with its reason (a value that
  refuses some inputs and equals a swept one on all others, or gives no number); the axes with
  no swept values keep the vocabulary default. The tests hold every value any library entry's
  profile uses to this list.

Each measure is swept over the axes its family reads (``Family.axes`` of
``conformance.measures``, checked against the reference by the tests); the others cannot change
it. Axes a measure name fixes (``P(rel=2)@5``) are not swept for that measure. Each axis's
``stage`` (``axis.STAGES``) orders the loop (the stages that decide the ranked rows
outermost) and makes the aggregate-stage axes selections of per-query values computed once.

Sharing work. Evaluating each combination with ``evaluate()`` would cost thousands of
evaluations. The sweep instead builds ``Prepared`` once and:

1. sorts the run once, by query then score narrowed to float32 (the coarsest order every
   ordering refines), and then hands the reference's ``rank`` rows already in that order, so
   each of the (tie rule x score precision) orderings costs a sort of tied rows only, and
   one sort serves every combination under which the rule's tie keys read the same
   (``ranking.tie_keys_read``: every threshold and depth; every label reading under a rule that
   reads no label; ``rank(..., sorted_as=...)``);
2. ranks, for a measure whose cutoff is k, only each query's *prefix*: the rows whose float32
   score is at least the k-th highest (whole tie groups, so ``ties=average`` sees the same
   groups). Every ordering places exactly these rows in its top k, so the measure reads only
   them; ``Ranked`` pieces of the prefix equal the reference's own pieces of those rows;
3. masks, under ``nonpositive_scores=not_relevant``, the labels of the rows scored <= 0 (as
   the score precision reads them) where the binary measures rank them, as ``evaluate`` does,
   keeping the whole, unmasked list's R for ``ideal=retrieved``;
4. takes what a prefix cannot see (under ``ideal=retrieved``: the relevant count and the ideal
   DCG of the whole, depth-cut list) from one pass over the whole list per ordering (or none,
   without a depth cut: the whole list's labels do not depend on the order), and serves it to
   the reference's formulas through a :class:`Context` subclass (``_SweepContext``);
5. shares the ideal DCG: the judged one (and ``k_slots``'s, at a cutoff) between every
   context with the same gains and discount; the whole lists' (``ideal=retrieved``) between
   every cut list whose rows holding its largest gains are equal (a digest of them);
6. treats ``empty_query`` and ``query_set`` as aggregation only: per-query values are computed
   once over every judged query, and each (empty rule, query set) pair is a mean over a
   selection of them, as ``Evaluation.aggregate`` takes it; aggregation reads nothing but
   the per-query values and empty queries, so combinations whose formulas give equal ones
   share their aggregates whole (``mean=micro`` sums numerators and denominators, which the
   per-query values do not hold: its cells of the ratio families sum the reference's own
   ``RATIO_PARTS`` per query, or are evaluated by ``evaluate`` where a per-query reported
   value is matched; every other family's refuse it);
7. aliases orderings that cannot differ on this input: float32 is float64 when narrowing merges
   no scores; every tie rule is one when no two scores of a query are equal; and beyond those,
   orderings whose ``Ranked`` rows are equal (ties among equal labels, say) share their formula
   results (``sweep_keys.content_key``: a digest of every array a formula reads, the tie rule
   itself only where a formula names it; lists of more than ``DIGEST_ROWS`` rows in all keep
   their ordering instead, as a digest would cost more there than it saves, and so does a rule
   a formula names where float32 merges no scores, as no other ordering can share with it);
8. bounds memory: combinations are visited with the axes that select a ``Ranked`` outermost
   (their stages, ``_loop_rank``), so each ``Ranked`` is used in one stretch and only ``RANKED_CACHE`` of
   them are kept (a whole-list ``Ranked`` of 1M rows is ~50-90 MB).

Cost, measured by ``benchmarks/bench_paper.py`` (1,000 queries x 1,000 documents, CPU time,
against one evaluation of the first measure): the nDCG@10 sweep (248,832 combinations) ~3.6
single evaluations; AP (51,840; whole lists, ranked per tie rule, depth and threshold) ~15-16,
most of it in ``rank`` over the whole lists; nDCG@10 + AP + P@10 together ~24-26. The formula
groups are found without building each combination: each part of the formula key is read over
its own axes' values alone and broadcast over the others (:meth:`Sweep._formula_groups`); each
group's block of aggregation cells is filled once (the cells of a plain result as arrays), and
the means of equal-shaped results are taken as the rows of one array (:func:`aggregate_rows`);
each ``Ranked`` keeps its cuts and discounts for every context that reads it (``Ranked.cut``,
``Ranked.discounts``).

The measures' own arithmetic is always the reference's (``FORMULAS`` over ``rank`` output), so
every combination's value equals ``evaluate()`` with that combination; the tests check a sample
of combinations, on generated inputs, value for value.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from conformance.axis import RANKING_STAGES, STAGES, geometric_floor
from conformance.conventions import AXES, Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.evaluate import micro_mean, missing_score_zero, round_half_even
from conformance.reference.formulas import FORMULAS, RATIO_PARTS
from conformance.reference.prepare import Prepared
from conformance.reference.sweep_engine import BASE, SWEPT_VALUES, _Engine
from conformance.reference.sweep_keys import content_key, formula_key, key_parts


class PerQueryValue(Protocol):
    """A reported per-query value, as the sweep reads it (``conformance.paper.Reported``)."""

    measure: Measure
    qid: str | None
    lo: float
    hi: float


# The named values the sweep never tries, and why none can change what it finds: a value that
# refuses some inputs and on every other input equals a swept value, or one no number can come
# from. Every other named value of every axis is tried (``swept``) where the input lets it
# differ (``Facts.domains``); the tests hold every library entry's profile to this.
UNTRIED_VALUES: dict[tuple[str, Any], str] = {
    ("empty_query", "raise"): "refuses a query with nothing relevant; without one every rule agrees",
    ("empty_query", "nan"): "the mean is NaN, which no paper reports",
    ("negative_labels", "raise"): "refuses a negative label; without one it is unjudged",
    ("label_type", "raise"): "refuses a fractional label; without one it is float",
    ("query_set", "raise"): "refuses query sets that differ; equal sets make it run",
    ("query_set", "run_strict"): "refuses a run query without judgments; without one it is run",
    ("single_document", "raise"): "refuses a one-document list; without one it is score",
    ("duplicates", "keep"): "the run is read validated, no document listed twice: every policy agrees",
    ("duplicates", "first"): "as duplicates=keep",
    ("duplicates", "last"): "as duplicates=keep",
    ("duplicates", "set"): "as duplicates=keep",
    ("duplicates", "keep_counted"): "as duplicates=keep",
    ("query_set", "qrels_strict"): "differs from qrels only where a judged query missing from "
                                   "the run is empty for the measure; no library profile uses it, "
                                   "and its shared aggregation is not yet proved against evaluate",
    ("ties", "unspecified"): "a range over the orders of tied documents, not one number: an entry "
                             "whose profile leaves ties unspecified is judged by its own range "
                             "(undecided, '?', unless run live)",
}
BATCH_VALUES = 1 << 21  # per-query values aggregated at once (16 MB of doubles)
DEPTHS = (1000, 100)  # swept beside "none" when some list is longer
MAX_THRESHOLDS = 30  # above this largest label, only the distinct label values are thresholds

def _loop_rank(axis: str) -> int:
    """Loop order of the sweep, from each axis's stage (``axis.STAGES``): the axes of the
    stages that decide the ranked rows outermost, in stage order (the gains before the
    threshold, since the binary scope makes nDCG's Ranked independent of the threshold; the
    depth cut last of them, since a depth at or beyond a measure's reach shares the Ranked of
    no depth), so each Ranked is used in one stretch; the formulas' own axes after them."""
    stage = AXES[axis].stage
    return STAGES.index(stage) if stage in RANKING_STAGES else len(STAGES)


# The axes that only select and average per-query values (computed once for all of them)
_AGGREGATION = tuple(a.name for a in AXES.values() if a.stage == "aggregate")

def reads(m: Measure) -> set[str]:
    """The swept axes whose value can change ``m`` (before removing the axes its name fixes):
    its family's axes (``Family.axes``), without an axis that needs a cutoff ``m`` lacks."""
    return {a for a in m.record.axes
            if (a in SWEPT_VALUES or AXES[a].swept is None)
            and not (AXES[a].with_cutoff_only and m.cutoff is None)}


@dataclass
class Facts:
    """What about the input decides which values are swept."""

    negative: bool
    fractional: bool
    qrels_only_queries: int
    run_only_queries: int
    longest_list: int
    thresholds: tuple[int, ...]
    scored_queries: int
    top_label: float = 0.0
    self_retrieval: bool = False  # some retrieved document is named like its query
    nonpositive: bool = False  # some retrieved document has a score <= 0 (as float64 or float32)
    narrowed32: bool = False  # some label is not a float32 number (0.3; an integer past 2^24)


    def domains(self) -> dict[str, tuple]:
        d = {a: v for a, v in SWEPT_VALUES.items()}
        d["relevance_threshold"] = self.thresholds
        d["depth"] = (None,) + tuple(x for x in DEPTHS if self.longest_list > x)
        if not self.negative:
            d["negative_labels"] = ("unjudged",)
            d["negative_ideal"] = ("empty",)  # every gain >= 0: no ideal DCG below 0
        if not self.fractional:
            d["label_type"] = ("float",) + (("float32",) if self.narrowed32 else ())
        elif not self.narrowed32:  # fractional labels such as 0.5 are float32 numbers
            d["label_type"] = tuple(v for v in d["label_type"] if v != "float32")
        # run_all is run without run-only queries; qrels_strict is qrels without qrels-only
        # queries, and refuses run-only ones
        d["query_set"] = tuple(
            v for v in d["query_set"]
            if v == "run" or (v == "qrels" and self.qrels_only_queries)
            or (v == "run_all" and self.run_only_queries)
            or (v == "qrels_strict" and self.qrels_only_queries and not self.run_only_queries))
        if not self.self_retrieval:
            d["identical_ids"] = ("keep",)
        if not self.nonpositive:
            d["nonpositive_scores"] = ("rank",)
        return d


def _facts(prep: Prepared) -> Facts:
    lab = prep.qrels_label
    negative = bool((lab < 0).any())
    fractional = bool((lab != np.trunc(lab)).any())
    narrowed32 = bool((lab.astype(np.float32).astype(np.float64) != lab).any())
    top = float(lab.max()) if lab.size else 0.0
    # a threshold L makes the labels >= L relevant: the thresholds below 1 that change which
    # labels those are (0 when some label is in (-1, 0]: every judged document relevant; the
    # negative ones under negative_labels=keep), then 1 .. the largest label
    below = {int(math.ceil(x)) for x in np.unique(lab).tolist() if x < 1}
    if top <= MAX_THRESHOLDS:
        thresholds = tuple(sorted(below | set(range(1, max(1, int(math.floor(top))) + 1))))
    else:
        distinct = {int(math.ceil(x)) for x in np.unique(lab).tolist()}
        thresholds = tuple(sorted(distinct | {1}))
    n = np.bincount(prep.run_q, minlength=prep.n_queries) if prep.run_q.size else np.zeros(1, int)
    return Facts(
        negative=negative,
        fractional=fractional,
        narrowed32=narrowed32,
        qrels_only_queries=int((prep.in_qrels & ~prep.in_run).sum()),
        run_only_queries=int((prep.in_run & ~prep.in_qrels).sum()),
        longest_list=int(n.max()) if n.size else 0,
        thresholds=thresholds,
        scored_queries=int((prep.in_qrels & prep.in_run).sum()),
        top_label=top,
        self_retrieval=bool(prep.identical_rows.any()) if prep.run_q.size else False,
        nonpositive=_nonpositive(prep.run_score),
    )


def _nonpositive(score: np.ndarray) -> bool:
    """Some score is <= 0 as a double or as a float32 (``nonpositive_scores`` reads the score as
    sorted, after ``score_precision``)."""
    with np.errstate(over="ignore", under="ignore"):
        return bool(score.size) and bool((score <= 0).any() or (score.astype(np.float32) <= 0).any())


def _swept(base: Conventions, settings: dict[str, Any]) -> Conventions:
    """``base.replace(**settings)`` for values taken from the sweep's domains, which are already
    the stored values ``Conventions`` validation would produce: the sweep builds thousands."""
    conv = object.__new__(Conventions)
    conv.__dict__.update(base.__dict__)
    conv.__dict__.update(settings)
    return conv


def aggregate_rows(values: np.ndarray, empty: np.ndarray, rule: str, select: np.ndarray | None,
                   is_sum: bool, sets_differ: bool, query_set: str, what: str,
                   mean: str = "arithmetic") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The aggregate of each row of ``values`` (per-query values, a row per result; every row
    with the empty queries ``empty``), as ``evaluate`` + ``aggregate`` take it: (aggregates,
    the rows as aggregated, counted queries); raises EvaluationError where they would.
    ``mean``: the ``mean`` axis (the geometric mean raises each value to its floor first).
    A row's aggregate is that of the row alone, bit for bit: each row is reduced over its
    own contiguous values (the columns are selected by ``np.compress``, which lays them out row
    by row; a boolean index of the second axis would lay them out by column, and costs ten
    times as much made contiguous again)."""
    if query_set == "raise" and sets_differ:
        raise EvaluationError("query sets differ (query_set=raise)")
    if select is not None:
        values, empty = np.compress(select, values, axis=1), empty[select]
    counted = np.ones(values.shape[1], bool)
    if not is_sum and empty.any():
        if rule == "raise":
            raise EvaluationError(f"{what}: a query has no relevant document (empty_query=raise)")
        fill = {"zero": 0.0, "one": 1.0, "nan": np.nan, "skip": np.nan}[rule]
        values = np.where(empty, fill, values)
        if rule == "skip":
            counted = ~empty
    if is_sum:
        return values.sum(axis=1), values, counted
    floor = geometric_floor(mean)
    if floor is not None:  # as evaluate: each value raised to the floor, the mean of the logs
        values = np.maximum(values, floor, where=~np.isnan(values), out=values.copy())
    # as Evaluation.aggregate: the mean of the counted values (NaN when none counts)
    x = np.ascontiguousarray(values if counted.all() else np.compress(counted, values, axis=1))
    if not x.shape[1]:
        return np.full(values.shape[0], np.nan), values, counted
    if floor is None:
        return x.mean(axis=1), values, counted
    with np.errstate(invalid="ignore"):
        return np.exp(np.log(x).mean(axis=1)), values, counted


def aggregate(lo: np.ndarray, hi: np.ndarray, empty: np.ndarray, rule: str, select: np.ndarray | None,
              is_sum: bool, sets_differ: bool, query_set: str, what: str, mean: str = "arithmetic"):
    """(mean or sum lo, hi, per-query lo, hi, counted) as ``evaluate`` + ``aggregate`` give them,
    from per-query values over every judged query (:func:`aggregate_rows` of the one or two
    rows); raises EvaluationError where they would."""
    one = lo is hi  # a single order of ties: computed once
    means, rows, counted = aggregate_rows(lo[None] if one else np.stack([lo, hi]), empty, rule, select,
                                          is_sum, sets_differ, query_set, what, mean)
    a = float(means[0])
    return a, a if one else float(means[1]), rows[0], rows[0] if one else rows[1], counted


@dataclass(frozen=True)
class _ByEvaluate:
    """A combination the sweep leaves to ``evaluate`` (``ties=unspecified`` fixed by a name)."""

    conv: Conventions


@dataclass
class Grid:
    """One measure's values over its own swept axes: ``lo``/``hi`` aggregates (equal unless
    ``ties=unspecified``; NaN where the combination fails), ``error`` where ``evaluate`` would
    raise, ``pq_hits`` per-query reported values matched (when any were given)."""

    measure: Measure
    axes: list[str]
    domains: list[tuple]
    lo: np.ndarray
    hi: np.ndarray
    error: np.ndarray
    pq_hits: np.ndarray | None = None
    pq_total: int = 0

    def index(self, conv: Conventions) -> tuple[int, ...] | None:
        """The cell of ``conv`` (None when a value of it lies outside the swept domain)."""
        out = []
        for axis, dom in zip(self.axes, self.domains):
            v = getattr(conv, axis)
            if v not in dom:
                return None
            out.append(dom.index(v))
        return tuple(out)

    def conventions(self, idx: Sequence[int]) -> dict[str, Any]:
        return {a: d[i] for a, d, i in zip(self.axes, self.domains, idx)}


class Sweep:
    """Every swept combination's value of every measure (see the module docstring)."""

    def __init__(self, prep: Prepared, measures: Sequence[Measure],
                 per_query: Sequence[PerQueryValue] = (), progress: Callable[[str, int, int], None] | None = None):
        self.prep = prep
        self.facts = _facts(prep)
        self.domains = self.facts.domains()
        self.measures = list(dict.fromkeys(measures))
        k_top = max([m.cutoff for m in self.measures if m.record.kind == "graded" and m.cutoff] or [0]) or None
        self.engine = _Engine(prep, self.facts, k_top)
        # identical_ids -> the engine over the rows that value keeps
        self.engines = {"keep": self.engine}
        if "drop" in self.domains["identical_ids"]:
            self.engines["drop"] = _Engine(prep, self.facts, k_top, drop_identical=True)
        self.sets_differ = bool((prep.in_run != prep.in_qrels).any())
        self.grids: dict[Measure, Grid] = {}
        self.formula_calls = 0
        pq = {}
        for r in per_query:
            if r.qid is not None:
                pq.setdefault(r.measure, []).append(r)
        total = len(self.measures)
        for i, m in enumerate(self.measures):
            if progress:
                progress(f"sweeping {m.text}", i, total)
            self.grids[m] = self._sweep(m, pq.get(m, []))
        if progress:
            progress("swept", total, total)

    def _formulas(self, m: Measure, contexts: list, micro: bool) -> tuple[Any, Any]:
        """The reference's formula over each context: ((lo, hi, empty) per query, or None where
        it refuses; each context's ``RATIO_PARTS`` under ``micro``, else None)."""
        try:
            results = [FORMULAS[m.family](ctx, m) for ctx in contexts]
            self.formula_calls += len(results)
            values = [v for v, _ in results]
            found = ((values[0], values[0], results[0][1]) if len(values) == 1 else
                     (np.minimum.reduce(values), np.maximum.reduce(values), results[0][1]))
            return found, ([RATIO_PARTS[m.family](ctx, m) for ctx in contexts] if micro else None)
        except EvaluationError:
            return None, None

    def axes_of(self, m: Measure) -> list[str]:
        fixed = {a for a, _ in m.overrides}
        return [a for a in AXES if a in reads(m) and a not in fixed and len(self.domains[a]) > 1]

    def _sweep(self, m: Measure, pq: list[PerQueryValue]) -> Grid:
        eng = self.engine
        axes = self.axes_of(m)
        doms = [self.domains[a] for a in axes]
        shape = tuple(len(d) for d in doms)
        lo = np.full(shape, np.nan)
        hi = np.full(shape, np.nan)
        err = np.zeros(shape, bool)
        hits = np.zeros(shape, np.int64) if pq else None
        compute = [i for i, a in enumerate(axes) if a not in _AGGREGATION]
        agg = [i for i, a in enumerate(axes) if a in _AGGREGATION]
        overrides = dict(m.overrides)
        is_sum = m.aggregate == "sum"
        # per-query reported values: their positions among the judged queries
        where = {q: i for i, q in enumerate(eng.qids.tolist())}
        pq_pos = np.array([where.get(r.qid, -1) for r in pq], dtype=np.int64)
        pq_lo = np.array([r.lo for r in pq])
        pq_hi = np.array([r.hi for r in pq])
        formulas: dict[tuple, Any] = {}  # formula key -> (lo, hi, empty) or None (refused)
        by_content: dict[tuple, Any] = {}  # content key (_Engine.content_key) -> _formulas(...)
        aggregates: dict[tuple, Any] = {}  # (formula key or result, rule, query set, ...) -> (lo, hi, hits) or None
        # mean=micro of the ratio families: per formula key, each order's (numerator,
        # denominator) per query, summed over the cell's selection (see _micro_cell)
        micro_in = m.family in RATIO_PARTS and "micro" in (
            doms[axes.index("mean")] if "mean" in axes else (overrides.get("mean", BASE.mean),))
        parts: dict[tuple, Any] = {}
        # the per-query results seen, numbered: aggregation reads nothing else, so the
        # aggregates of equal results are shared across formula keys
        results_seen: dict[tuple, int] = {}
        # (result, empty rule, query set, mean) -> the unrounded aggregate: the rounding
        # cells round it
        means: dict[tuple, Any] = {}
        # axes that change the Ranked outermost, in stage order, so each Ranked is used
        # in one stretch of the loop (see _Engine._ranked)
        loop = sorted(range(len(compute)), key=lambda j: _loop_rank(axes[compute[j]]))
        # 1. each combination of the computing axes, visited in loop order: its formula group
        # (equal formula keys, equal formula results), numbered in order of first visit
        group_of, first = self._formula_groups(m, [axes[compute[j]] for j in loop],
                                               [doms[compute[j]] for j in loop])
        # the groups over the computing axes in ``compute`` order
        group_of = group_of.transpose(np.argsort(loop).astype(int))
        # 2. each group's block of aggregation cells, in order of first visit (so each Ranked
        # is still used in one stretch); groups whose per-query results are equal share one
        # block when no cell of it reads more than them
        ashape = tuple(shape[i] for i in agg)
        blocks: list[tuple[np.ndarray, ...]] = []
        block_of = np.empty(len(first), np.int64)
        by_result: dict[int, int] = {}
        results: list[tuple] = []  # the per-query results seen, by number
        # each aggregation cell's (index, empty rule, query set, mean, rounding): the same in
        # every block
        cells = []
        for aidx in itertools.product(*[range(n) for n in ashape]):
            chosen = {axes[i]: doms[i][j] for i, j in zip(agg, aidx)}
            cells.append((aidx,) + tuple(overrides.get(a, chosen.get(a, getattr(BASE, a)))
                                         for a in ("empty_query", "query_set", "mean", "rounding")))
        # the cells a plain result's block takes in batches (_aggregate_later), and the others
        batched = [c for c in cells if c[3] != "micro" and c[2] != "qrels_strict"]
        unbatched = [c for c in cells if c[3] == "micro" or c[2] == "qrels_strict"]
        # mean=micro outside the ratio families refuses in every block: marked at once
        refused = [c[0] for c in cells if c[3] == "micro"] if not micro_in else []
        if refused:
            cells = [c for c in cells if c[3] != "micro"]
            unbatched = [c for c in unbatched if c[3] != "micro"]
            refused_at = tuple(np.array(refused, np.int64).reshape(len(refused), len(ashape)).T)
        later: list[tuple] = []  # (block, result, some query empty) of the blocks batched
        for g, (fkey, conv) in enumerate(first):
            eng = self.engines[conv.identical_ids]
            if eng.by_evaluate(m, conv):  # see _Engine.by_evaluate
                formulas[fkey] = _ByEvaluate(conv)
            else:
                try:
                    contexts = eng.contexts(m, conv)
                except EvaluationError:
                    formulas[fkey] = None
                else:
                    # other orderings that give the same rows share the same results
                    ckey = (conv.identical_ids,) + content_key(fkey[1:], contexts)
                    if ckey not in by_content:
                        by_content[ckey] = self._formulas(m, contexts, micro_in)
                    formulas[fkey], parts[fkey] = by_content[ckey]
            found = formulas[fkey]
            rkey = None  # the number of the per-query result, where the block reads only it
            if isinstance(found, tuple):
                seen = (found[0].tobytes(), found[1].tobytes(), found[2].tobytes())
                rkey = results_seen.setdefault(seen, len(results_seen))
                if rkey == len(results):
                    results.append(found)
                if not micro_in:
                    if rkey in by_result:
                        block_of[g] = by_result[rkey]
                        continue
                    by_result[rkey] = len(blocks)
            block_of[g] = len(blocks)
            b_lo, b_hi = np.full(ashape, np.nan), np.full(ashape, np.nan)
            b_err = np.zeros(ashape, bool)
            b_hits = np.zeros(ashape, np.int64) if pq else None
            blocks.append((b_lo, b_hi, b_err) if b_hits is None else (b_lo, b_hi, b_err, b_hits))
            some_empty = isinstance(found, tuple) and bool(found[2].any())
            if refused:
                b_err[refused_at] = True
            own = cells
            if isinstance(found, tuple) and not pq and found[0] is found[1]:
                later.append((len(blocks) - 1, rkey, some_empty))  # its batched cells
                own = unbatched
            for aidx, rule, qset, mean, rnd in own:
                if found is None and not self.facts.run_only_queries:
                    b_err[aidx] = True
                    continue
                if mean == "micro":
                    # sums of each query's numerator and denominator, which the shared
                    # per-query values do not hold: their parts, for the ratio families
                    akey = (fkey, rule, qset, mean, rnd)
                    if akey not in aggregates:
                        if not micro_in or rule == "one":
                            aggregates[akey] = None
                        elif parts.get(fkey) is not None and not pq and qset in ("run", "qrels", "run_all"):
                            aggregates[akey] = self._micro_cell(parts[fkey], found[2], rule, qset, rnd)
                        else:
                            aggregates[akey] = self._evaluate_cell(m, conv, rule, qset, pq, mean, rnd)
                elif isinstance(found, _ByEvaluate):
                    akey = (fkey, rule, qset, mean, rnd)
                    if akey not in aggregates:
                        aggregates[akey] = self._evaluate_cell(m, conv, rule, qset, pq, mean, rnd)
                elif found is None:
                    # refused over every query the engine scores, run-only ones included: the
                    # cell's own query set may not hold the query that refuses, so its
                    # per-query values come from evaluate over that set (one per formula key)
                    scope = "run_all" if qset == "run_all" else "qrels"
                    if (fkey, scope) not in formulas:
                        formulas[fkey, scope] = self._per_query_by_evaluate(m, conv, scope)
                    alt = formulas[fkey, scope]
                    akey = (fkey, rule, qset, mean, None if is_sum else rnd)
                    if akey not in aggregates:
                        aggregates[akey] = None if alt is None else self._aggregate_cell(
                            alt, rule, qset, is_sum, m.text, pq_pos, pq_lo, pq_hi, mean, rnd)
                else:
                    # the empty rule only matters when some query is empty
                    akey = (("result", rkey), rule if some_empty else None, qset, mean,
                            None if is_sum else rnd)
                    if akey not in aggregates:
                        aggregates[akey] = self._aggregate_cell(found, rule, qset, is_sum, m.text,
                                                                pq_pos, pq_lo, pq_hi, mean, rnd,
                                                                means, akey[:4])
                done = aggregates[akey]
                if done is None:
                    b_err[aidx] = True
                    continue
                b_lo[aidx], b_hi[aidx] = done[0], done[1]
                if b_hits is not None:
                    b_hits[aidx] = done[2]
        self._aggregate_later(later, batched, ashape, results, blocks, is_sum, m.text)
        # 3. every cell from its combination's block: the grids seen with the aggregation
        # axes last, a block per combination of the computing axes
        at = block_of[group_of]
        for k, grid in enumerate((lo, hi, err) if hits is None else (lo, hi, err, hits)):
            np.transpose(grid, compute + agg)[...] = np.stack([b[k] for b in blocks])[at]
        return Grid(m, axes, doms, lo, hi, err, hits, len(pq))

    def _formula_groups(self, m: Measure, axes: list[str], doms: list[tuple]
                        ) -> tuple[np.ndarray, list[tuple[tuple, Conventions]]]:
        """The formula group of every combination of ``axes`` (the computing axes, in loop
        order): an array over their values, groups numbered in order of first visit (the
        combinations in C order), and each group's (key, first combination). Equal keys
        (``identical_ids`` and ``sweep_keys.formula_key``), one group.

        Each part of the key (``sweep_keys.key_parts``) is read on the combinations of the axes
        it reads alone, and broadcast over the others: a few hundred convention sets instead
        of one per combination (13,824 for nDCG@10). Only the groups' first combinations are
        built whole, and their keys read from ``formula_key`` itself."""
        shape = tuple(len(d) for d in doms)
        engines = "identical_ids" in axes  # the engine, and every part with it, reads it
        codes = np.zeros(shape, np.int64)
        for part in key_parts(m):
            read = set(part.reads) | ({"identical_ids"} if engines else set())
            own = [i for i, a in enumerate(axes) if a in read]
            values: dict[Any, int] = {}
            sub = np.empty([shape[i] for i in own], np.int64)
            for idx in itertools.product(*[range(shape[i]) for i in own]):
                conv = m.conventions(_swept(BASE, {axes[i]: doms[i][v] for i, v in zip(own, idx)}))
                # each engine reads its own input
                v = (conv.identical_ids, part.value(self.engines[conv.identical_ids], m, conv))
                sub[idx] = values.setdefault(v, len(values))
            spread = sub.reshape([shape[i] if i in own else 1 for i in range(len(axes))])
            # the codes so far and this part's, as one code per combination
            _, codes = np.unique(codes * len(values) + spread, return_inverse=True)
            codes = codes.reshape(shape)
        flat = codes.ravel()
        _, at = np.unique(flat, return_index=True)  # each code's first combination
        order = np.argsort(at, kind="stable")
        number = np.empty(at.size, np.int64)
        number[order] = np.arange(at.size)
        first = []
        for i in at[order].tolist():
            idx = np.unravel_index(i, shape) if shape else ()
            conv = m.conventions(_swept(BASE, {a: d[v] for a, d, v in zip(axes, doms, idx)}))
            key = formula_key(self.engines[conv.identical_ids], m, conv)
            first.append(((conv.identical_ids,) + key, conv))
        return number[flat].reshape(shape), first

    def _aggregate_later(self, later: list[tuple], batched: list[tuple], ashape: tuple[int, ...],
                         results: list[tuple], blocks: list[tuple], is_sum: bool, what: str) -> None:
        """Fill the ``batched`` cells (index, empty rule, query set, mean, rounding) of the
        blocks left for later (``later``: block, result, some query empty): each (result,
        empty rule, query set, mean) aggregated once: the results with the same empty queries
        stacked as the rows of one array (at most ``BATCH_VALUES`` values at a time), which
        :func:`aggregate_rows` reads under each (rule, query set, mean); then rounded per cell.
        Without an empty query every rule gives the same aggregate: the rule is then None."""
        if not later or not batched:
            return
        combos = list(dict.fromkeys((rule, qset, mean) for _, rule, qset, mean, _ in batched))
        plan = [(combos.index((rule, qset, mean)), None if is_sum else rnd)
                for _, rule, qset, mean, rnd in batched]
        flat = np.ravel_multi_index(tuple(np.array([c[0] for c in batched], np.int64).T), ashape) \
            if ashape else np.zeros(len(batched), np.int64)
        # the results by their empty queries (with whether some query is empty), in order
        by_empty: dict[bytes, tuple[dict[int, None], bool]] = {}
        for _, rkey, some_empty in later:
            by_empty.setdefault(results[rkey][2].tobytes(), ({}, some_empty))[0][rkey] = None
        means: dict[tuple, float | None] = {}
        for rows, some_empty in by_empty.values():
            rows = list(rows)
            empty = results[rows[0]][2]
            # no empty query: every rule gives the same aggregate (rule None)
            taken = dict.fromkeys((rule if some_empty else None, qset, mean) for rule, qset, mean in combos)
            step = max(1, BATCH_VALUES // max(1, empty.size))
            for i in range(0, len(rows), step):
                part = rows[i:i + step]
                stacked = np.stack([results[r][0] for r in part])  # read, never written, by each
                for rule, qset, mean in taken:
                    select, _ = self.engine.selection(qset)
                    try:
                        got = aggregate_rows(stacked, empty, rule or "zero", select, is_sum,
                                             self.sets_differ, qset, what, mean)[0].tolist()
                    except EvaluationError:
                        got = [None] * len(part)
                    for r, a in zip(part, got):
                        means[r, rule, qset, mean] = a
        for b, rkey, some_empty in later:
            found = [means[rkey, rule if some_empty else None, qset, mean] for rule, qset, mean in combos]
            # as Evaluation.aggregate: rounded last (None: refused)
            cell = [found[c] if found[c] is None or rnd is None else round(found[c], rnd) for c, rnd in plan]
            refused = np.array([a is None for a in cell])
            value = np.array([np.nan if a is None else a for a in cell], np.float64)
            blocks[b][0].flat[flat] = value
            blocks[b][1].flat[flat] = value
            blocks[b][2].flat[flat[refused]] = True

    def _per_query_by_evaluate(self, m: Measure, conv: Conventions, query_set: str = "qrels"):
        """(lo, hi, empty) per query of the engine, as its formulas give them, from ``evaluate``
        over the queries ``query_set`` scores (empty queries marked by ``empty_query=skip``;
        the engine's other queries, which no cell of this query set selects, hold 0); None
        where it refuses."""
        try:
            ev = evaluate(self.prep, None, [m], conv.replace(
                query_set=query_set, empty_query="skip", mean="arithmetic", rounding=None))
        except EvaluationError:
            return None
        empty = ~ev.counted[m] if m.aggregate != "sum" else np.zeros(ev.qids.size, bool)
        lo, hi = ev.per_query[m], ev.upper[m]
        qids = self.engine.qids
        if ev.qids.size == qids.size:
            return lo, hi, empty
        at = np.searchsorted(qids, ev.qids)

        def spread(v, dtype=float):
            o = np.zeros(qids.size, dtype)
            o[at] = v
            return o

        out = spread(lo)
        return out, out if hi is lo else spread(hi), spread(empty, bool)

    def _micro_cell(self, parts, empty: np.ndarray, rule: str, qset: str, rnd: int | None):
        """One ``mean=micro`` cell from each order's (numerator, denominator) per query, as
        ``evaluate`` + ``Evaluation.aggregate`` take it: the cell's query set selected, an empty
        query's numerator NaN under ``empty_query=nan``, left out under ``skip``, a refusal
        under ``raise``; the numerators' sum over the denominators' sum (``micro_mean``), the
        lowest and highest over the orders, rounded last. (lo, hi, 0)."""
        select, _ = self.engine.selection(qset)
        if select is not None:
            empty = empty[select]
        if rule == "raise" and empty.any():
            return None
        ends = []
        for num, den in parts:
            if select is not None:
                num, den = num[select], den[select]
            if rule == "nan" and empty.any():
                num = np.where(empty, np.nan, num)
            elif rule == "skip":
                num, den = num[~empty], den[~empty]
            ends.append(micro_mean(num, den))
        a, b = min(ends), max(ends)
        if rnd is not None:
            a, b = round(a, rnd), round(b, rnd)
        return a, b, 0

    def _evaluate_cell(self, m: Measure, conv: Conventions, rule: str, qset: str,
                       pq: list[PerQueryValue], mean: str = "arithmetic", rnd: int | None = None):
        """One cell by ``evaluate`` itself: (aggregate lo, hi, per-query values matched)."""
        try:
            ev = evaluate(self.prep, None, [m], conv.replace(empty_query=rule, query_set=qset,
                                                               mean=mean, rounding=rnd))
        except EvaluationError:
            return None
        ranges = ev.ranges(m)
        hits = sum(1 for r in pq if r.qid in ranges and r.meets(*ranges[r.qid]))
        return ev.aggregate(m), ev.aggregate(m, upper=True), hits

    def _aggregate_cell(self, found, rule, qset, is_sum, what, pq_pos, pq_lo, pq_hi,
                        mean: str = "arithmetic", rnd: int | None = None,
                        means: dict | None = None, key: tuple | None = None):
        """(aggregate lo, hi, per-query reported values matched) of one formula result under one
        (empty rule, query set, rounding); None where evaluate would refuse. ``means``: the
        unrounded aggregates already taken, by ``key`` (the result, empty rule, query set and
        mean, which decide them)."""
        select, sel_pos = self.engine.selection(qset)
        if means is not None and key in means:
            taken = means[key]
        else:
            taken = self._aggregate(found, rule, qset, is_sum, what, mean, select)
            if means is not None:
                means[key] = taken
        if taken is None:
            return None
        a, b, qlo, qhi, counted = taken
        if rnd is not None and not is_sum:  # as Evaluation.aggregate
            a, b = round(a, rnd), round(b, rnd)
        n_hits = 0
        if pq_pos.size:
            if rnd is not None and not is_sum:  # as evaluate's per-query values
                qlo, qhi = round_half_even(qlo, rnd), round_half_even(qhi, rnd)
            safe = np.maximum(pq_pos, 0)
            if select is not None:  # positions among the selected queries
                ok_q = (pq_pos >= 0) & select[safe]
                p = np.where(ok_q, sel_pos[safe], 0)
            else:
                ok_q = pq_pos >= 0
                p = safe
            if qlo.size:
                ok_q &= counted[p] & (qhi[p] >= pq_lo) & (qlo[p] <= pq_hi)
            else:
                ok_q &= False
            n_hits = int(ok_q.sum())
        return a, b, n_hits

    def _aggregate(self, found, rule, qset, is_sum, what, mean, select):
        """``aggregate`` of one formula result under (empty rule, query set, mean), unrounded;
        None where evaluate would refuse."""
        plo, phi, empty = found
        if qset == "qrels_strict" and not is_sum:  # as evaluate: missing from the run, 0
            missing = ~self.engine.in_run
            plo2, empty2 = missing_score_zero(plo, empty, missing)
            phi = plo2 if phi is plo else missing_score_zero(phi, empty, missing)[0]
            plo, empty = plo2, empty2
        try:
            return aggregate(plo, phi, empty, rule, select, is_sum, self.sets_differ, qset, what, mean)
        except EvaluationError:
            return None

    # -- the joint answer ---------------------------------------------------------------------

    def union_axes(self, measures: Iterable[Measure] | None = None) -> list[str]:
        """The swept axes of ``measures`` (default: every measure swept), in vocabulary order."""
        used = set()
        for m in (self.grids if measures is None else measures):
            used |= set(self.grids[m].axes)
        return [a for a in AXES if a in used]

    def broadcast(self, m: Measure, values: np.ndarray, axes: list[str]) -> np.ndarray:
        """``values`` (over m's axes) as an array over ``axes`` (singleton where m has none)."""
        g = self.grids[m]
        shape = [len(self.domains[a]) if a in g.axes else 1 for a in axes]
        perm = [g.axes.index(a) for a in axes if a in g.axes]
        return np.transpose(values, perm).reshape(shape)
