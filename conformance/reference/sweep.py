"""The sweep: every combination of the convention values that can change a measure, evaluated
with the work shared between combinations (the engine of ``conformance check-paper``).

It lives beside the reference because it is the reference: it hands the reference's own
``rank`` and ``FORMULAS`` pre-sorted rows and a :class:`Context` subclass, so every
combination's value equals ``evaluate()`` under that combination. One idea at ~730 lines: the
shared-work engine (``_Engine``, ``_SweepContext``, ``_Whole``) and the grids it fills
(:class:`Sweep`, :class:`Grid`) cannot be read apart. Per-query reported values are matched
cell by cell while the grid is filled: they are any objects with ``measure``, ``qid``, ``lo``
and ``hi`` (``conformance.paper.Reported``).

Swept values (each axis record's ``swept``, gathered in :data:`SWEPT_VALUES`); values that refuse the input (``raise``, ``nan``) are
never swept, since they cannot produce a reported number:

- ``gain`` linear/exponential, ``discount`` log2/jarvelin, ``ideal`` judged/retrieved,
  ``threshold_scope`` binary/graded (nDCG, DCG);
- ``ties`` docid_desc/docid_asc/input_order/reverse_input/average; ``score_precision``
  float64/float32;
- ``relevance_threshold`` 1 .. the largest label (the distinct labels above 30);
- ``depth`` none, plus 1000 and 100 when some list is longer;
- ``k_beyond_list`` (P, F1, Rprec, T, Fe), ``ap_denominator`` (AP), ``rr_cutoff`` (RR@k);
- ``empty_query`` zero/one/skip (mean measures); ``query_set`` run/qrels only when some judged
  query is missing from the run (otherwise the two agree);
- ``negative_labels`` unjudged/keep and ``label_type`` float/int_truncate only when the qrels
  hold negative or fractional labels;
- ``identical_ids`` keep/drop only when some retrieved document is named like its query (BEIR
  drops such documents by default): the engine then holds two presorted copies of the run, one
  without those rows;
- ``rounding`` none/5 (BEIR's and MTEB's means), aggregation only: the mean of the unrounded
  per-query values rounded, as ``Evaluation.aggregate`` takes it.

Each measure is swept over the axes its family reads (``Family.axes`` of
``conformance.measures``, checked against the reference by the tests); the others cannot change it. Axes a measure name fixes (``P(rel=2)@5``) are not
swept for that measure. ``rank_source`` (score), ``duplicates`` (error: the run is validated)
and every axis a measure does not read keep the vocabulary defaults.

Sharing work. Evaluating each combination with ``evaluate()`` would cost thousands of
evaluations. The sweep instead builds ``Prepared`` once and:

1. sorts the run once, by query then score narrowed to float32 (the coarsest order every
   ordering refines), and then hands the reference's ``rank`` rows already in that order, so
   each of the (tie rule x score precision) orderings costs a sort of tied rows only;
2. ranks, for a measure whose cutoff is k, only each query's *prefix*: the rows whose float32
   score is at least the k-th highest (whole tie groups, so ``ties=average`` sees the same
   groups). Every ordering places exactly these rows in its top k, so the measure reads only
   them; ``Ranked`` pieces of the prefix equal the reference's own pieces of those rows;
3. takes what a prefix cannot see (under ``ideal=retrieved``: the relevant count and the ideal
   DCG of the whole, depth-cut list) from one pass over the whole list per ordering (or none,
   without a depth cut: the whole list's labels do not depend on the order), and serves it to
   the reference's formulas through a :class:`Context` subclass (``_SweepContext``);
4. shares the judged ideal DCG between every context with the same gains and discount;
5. treats ``empty_query`` and ``query_set`` as aggregation only: per-query values are computed
   once over every judged query, and each (empty rule, query set) pair is a mean over a
   selection of them, as ``Evaluation.aggregate`` takes it;
6. aliases orderings that cannot differ on this input: float32 is float64 when narrowing merges
   no scores; every tie rule is one when no two scores of a query are equal;
7. bounds memory: combinations are visited with the axes that select a ``Ranked`` outermost
   (``_LOOP_FIRST``), so each ``Ranked`` is used in one stretch and only ``RANKED_CACHE`` of
   them are kept (a whole-list ``Ranked`` of 1M rows is ~50-90 MB).

Cost, measured by ``benchmarks/bench_paper.py`` (1,000 queries x 1,000 documents, CPU time):
the nDCG@10 sweep ~2.7 single evaluations; AP (whole lists, re-ranked per tie rule, depth and
threshold) ~8; nDCG@10 + AP + P@10 together ~11.

The measures' own arithmetic is always the reference's (``FORMULAS`` over ``rank`` output), so
every combination's value equals ``evaluate()`` with that combination; the tests check a sample
of combinations, on generated inputs, value for value.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from conformance.conventions import AXES, Conventions, geometric_floor
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.evaluate import round_half_even
from conformance.reference.formulas import FORMULAS, GAINS_READ_THRESHOLD, Context
from conformance.reference.prepare import Prepared, transform_labels
from conformance.reference.ranking import EXPONENTIAL_HEADROOM, Ranked, gains, ideal_dcg, rank, segments


class PerQueryValue(Protocol):
    """A reported per-query value, as the sweep reads it (``conformance.paper.Reported``)."""

    measure: Measure
    qid: str | None
    lo: float
    hi: float


# Swept values of the axes whose values do not depend on the input (the axis records' own).
SWEPT_VALUES: dict[str, tuple] = {a.name: a.swept for a in AXES.values() if a.swept}
DEPTHS = (1000, 100)  # swept beside "none" when some list is longer
MAX_THRESHOLDS = 30  # above this largest label, only the distinct label values are thresholds

# Loop order of the sweep: the axes that select a Ranked (labels, ordering, gains, threshold,
# depth) outermost; threshold_scope before relevance_threshold, since the binary scope makes
# nDCG's Ranked independent of the threshold; depth last of them, since a depth at or beyond a
# measure's reach shares the Ranked of no depth. Axes not listed (the formulas' own) come after.
_LOOP_FIRST = ("identical_ids", "label_type", "negative_labels", "rank_source", "score_precision", "ties", "gain",
               "threshold_scope", "relevance_threshold", "depth")
RANKED_CACHE = 2  # Ranked objects kept at once


def _loop_rank(axis: str) -> int:
    return _LOOP_FIRST.index(axis) if axis in _LOOP_FIRST else len(_LOOP_FIRST)


_AGGREGATION = ("empty_query", "query_set", "mean", "rounding")

# Where the sweep starts: the vocabulary defaults (trec_eval 10's command line).
BASE = Conventions()


def reads(m: Measure) -> set[str]:
    """The swept axes whose value can change ``m`` (before removing the axes its name fixes):
    its family's axes (``Family.axes``), without an axis that needs a cutoff ``m`` lacks."""
    return {a for a in m.record.axes
            if (a in SWEPT_VALUES or AXES[a].swept is None)
            and not (AXES[a].with_cutoff_only and m.cutoff is None)}


def _reach(m: Measure, conv: Conventions) -> int | None:
    """How far down each list ``m`` reads under ``conv``; None: the whole list."""
    reach, k = m.record.reach, m.cutoff
    if k is None or reach == "whole":
        return None
    if m.family == "RR" and conv.rr_cutoff == "ignore":  # the cutoff is read and ignored
        return None
    return 2 * k if reach == "twice_cutoff" else k


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


    def domains(self) -> dict[str, tuple]:
        d = {a: v for a, v in SWEPT_VALUES.items()}
        d["relevance_threshold"] = self.thresholds
        d["depth"] = (None,) + tuple(x for x in DEPTHS if self.longest_list > x)
        if not self.negative:
            d["negative_labels"] = ("unjudged",)
        if not self.fractional:
            d["label_type"] = ("float",)
        if not self.qrels_only_queries:
            d["query_set"] = ("run",)
        if not self.self_retrieval:
            d["identical_ids"] = ("keep",)
        return d


def _facts(prep: Prepared) -> Facts:
    lab = prep.qrels_label
    negative = bool((lab < 0).any())
    fractional = bool((lab != np.trunc(lab)).any())
    top = float(lab.max()) if lab.size else 0.0
    if top <= MAX_THRESHOLDS:
        thresholds = tuple(range(1, max(1, int(math.floor(top))) + 1))
    else:
        distinct = {int(math.ceil(x)) for x in np.unique(lab).tolist() if x >= 1}
        thresholds = tuple(sorted(distinct | {1}))
    n = np.bincount(prep.run_q, minlength=prep.n_queries) if prep.run_q.size else np.zeros(1, int)
    return Facts(
        negative=negative,
        fractional=fractional,
        qrels_only_queries=int((prep.in_qrels & ~prep.in_run).sum()),
        run_only_queries=int((prep.in_run & ~prep.in_qrels).sum()),
        longest_list=int(n.max()) if n.size else 0,
        thresholds=thresholds,
        scored_queries=int((prep.in_qrels & prep.in_run).sum()),
        top_label=top,
        self_retrieval=bool(prep.identical_rows.any()) if prep.run_q.size else False,
    )


def _coarse_key(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """int64 per row, ordered as (query, -score narrowed to float32): the coarsest order that
    every (score precision, tie rule) ordering refines."""
    with np.errstate(over="ignore"):
        p32 = (-score).astype(np.float32)
    p32 += np.float32(0.0)  # one bit pattern for zero
    u = p32.view(np.uint32).astype(np.int64)
    ordered = np.where(u >= 2**31, 2**32 - 1 - u, u + 2**31)
    return (q.astype(np.int64) << 32) | ordered


class _Whole:
    """Per-query quantities of whole (depth-cut) lists that a prefix cannot see: the relevant
    count and the ideal DCG under ``ideal=retrieved``, and the reference's two refusals under
    ``ties=average``: a depth cut through a tied group of mixed relevance (for the count) or of
    unequal gains (for the ideal).

    ``labels``/``q``: every row of the cut lists (labels transformed, NaN unjudged). ``grouped``:
    conventions -> the reference's ``Ranked`` of the cut lists under ``ties=average`` (None when
    no cut can split a group: no depth cut, or another tie rule).
    """

    def __init__(self, labels: np.ndarray, q: np.ndarray, nq: int, k_top: int | None,
                 grouped: Callable[[Conventions], Ranked] | None = None) -> None:
        self.nq = nq
        self._labels, self._q = labels, q
        self._grouped = grouped
        self._R: dict[int, np.ndarray] = {}
        self._idcg: dict[tuple, np.ndarray] = {}
        self._mixed: dict[int, bool] = {}
        self._varied: dict[tuple, bool] = {}
        # the ideal DCG at k reads the k largest gains of each list; every swept gain is
        # non-decreasing in the label (unjudged = gain 0 = label 0), so the k_top largest
        # labels hold them
        if k_top is not None and labels.size:
            order = np.lexsort((-np.nan_to_num(labels, nan=0.0), q))
            qs = q[order]
            start, n = segments(qs, nq)
            pos = np.arange(qs.size) - start[qs]
            keep = order[pos < k_top]
            self._top_labels, self._top_q = labels[keep], q[keep]
        else:
            self._top_labels, self._top_q = labels, q

    def R(self, threshold: int) -> np.ndarray:
        if threshold not in self._R:
            rel = np.nan_to_num(self._labels, nan=-np.inf) >= threshold
            self._R[threshold] = np.bincount(self._q[rel], minlength=self.nq).astype(np.float64)
        return self._R[threshold]

    def require_fixed_count(self, tie_rule: str, conv: Conventions) -> None:
        """As ``Context.require_fixed_count(None, ...)`` on the whole list."""
        if tie_rule != "average" or self._grouped is None:
            return
        t = conv.relevance_threshold
        if t not in self._mixed:
            self._mixed[t] = bool(self._grouped(conv).splits_mixed_group(None).any())
        if self._mixed[t]:
            raise EvaluationError(
                "ideal=retrieved with a depth cut under ties=average: the cut at depth splits a "
                "tied group of relevant and non-relevant documents; choose another tie rule")

    def require_fixed_gains(self, tie_rule: str, conv: Conventions) -> None:
        """As ``Context.require_fixed_gains(None, ...)`` on the whole list."""
        if tie_rule != "average" or self._grouped is None:
            return
        key = _gain_key(conv)
        if key not in self._varied:
            self._varied[key] = bool(self._grouped(conv).splits_varied_group(None).any())
        if self._varied[key]:
            raise EvaluationError(
                "ideal=retrieved with a depth cut under ties=average: the cut splits a tied "
                "group of unequal gains; choose another tie rule")

    def has_gain(self, conv: Conventions) -> np.ndarray:
        """As ``Context.has_gain`` on the whole list: some document has a nonzero gain."""
        g = gains(np.nan_to_num(self._labels, nan=0.0), conv)
        nonzero = (g != 0) & ~np.isnan(g)
        return np.bincount(self._q[nonzero], minlength=self.nq) > 0

    def idcg(self, conv: Conventions, k: int | None) -> np.ndarray:
        key = (_gain_key(conv), conv.discount, k)
        if key not in self._idcg:
            g = gains(self._top_labels, conv)
            self._idcg[key] = ideal_dcg(g, self._top_q, self.nq, conv, k)
        return self._idcg[key]


def _gain_key(conv: Conventions) -> tuple:
    """The axes ``ranking.gains`` reads."""
    reads_threshold = conv.threshold_scope == "graded" or conv.gain == "binary"
    return (conv.gain, conv.threshold_scope, conv.relevance_threshold if reads_threshold else None)


@dataclass
class _SweepContext(Context):
    """The reference's :class:`Context` over a ranked prefix of each list.

    Under ``ideal=retrieved``, R and the ideal DCG are the whole list's, taken from ``whole``
    (None when ``ranked`` holds the whole lists: then the reference's own code runs). The judged
    ideal DCG comes from ``shared``, one per (labels, gains, discount, k) for every context.
    """

    whole: Any = None
    shared: Any = None
    gain_key: Any = None

    @property
    def R(self) -> np.ndarray:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_count(self.tie_rule, self.conv)
            return self.whole.R(self.conv.relevance_threshold)
        return Context.R.fget(self)

    def has_gain(self) -> np.ndarray:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_gains(self.tie_rule, self.conv)
            return self.whole.has_gain(self.conv)
        return Context.has_gain(self)

    def idcg(self, k: int | None) -> np.ndarray:
        if self.conv.ideal == "retrieved":
            if self.whole is None:
                return Context.idcg(self, k)
            self.whole.require_fixed_gains(self.tie_rule, self.conv)
            return self.whole.idcg(self.conv, k)
        key = (self.gain_key, self.conv.discount, k)
        if key not in self.shared:
            self.shared[key] = ideal_dcg(self.judged_gain, self.judged_q, self.ranked.n_queries,
                                         self.conv, k)
        return self.shared[key]


class _Engine:
    """Everything the sweep shares: the join, the presorted rows, prefixes, labels, orderings."""

    def __init__(self, prep: Prepared, facts: Facts, k_top: int | None,
                 drop_identical: bool = False) -> None:
        self.prep, self.facts, self.k_top = prep, facts, k_top
        scored = prep.in_qrels.copy()  # query_set=qrels: a superset of query_set=run
        self.scored = scored
        self.local = np.cumsum(scored) - 1
        self.nq = int(scored.sum())
        self.qids = prep.qids[scored]
        self.in_run = prep.in_run[scored]  # a query whose every row is dropped stays in the run
        rows = np.asarray(prep.kept_rows("error"))
        if drop_identical:  # identical_ids=drop: as evaluate, the rows named like their query go
            rows = rows[~prep.identical_rows[rows]]
        rows = rows[scored[prep.run_q[rows]]]
        q = self.local[prep.run_q[rows]]
        key = _coarse_key(q, prep.run_score[rows])
        order = np.argsort(key, kind="stable")
        self.rows, self.q, self.key = rows[order], q[order], key[order]
        self.start, self.n = segments(self.q, self.nq)
        self._prefix: dict[int | None, np.ndarray] = {}
        self._primary: dict[str, np.ndarray] = {}
        self._labels: dict[tuple, np.ndarray] = {}
        self._judged: dict[tuple, tuple] = {}
        self._R: dict[tuple, np.ndarray] = {}
        self._jgain: dict[tuple, np.ndarray] = {}
        # Ranked objects hold ~10 arrays per row: an unbounded cache of whole-list orderings
        # grew to 1.5 GB on 1,000 x 1,000. The sweep visits combinations with the axes that
        # change the Ranked outermost (_LOOP_FIRST), so each is used in one stretch and a small
        # LRU loses no reuse (rank_calls == distinct_rankings, checked by the tests).
        self._ranked: OrderedDict[tuple, Ranked] = OrderedDict()
        self.ranked_cache_size = RANKED_CACHE
        self.distinct_rankings: set[tuple] = set()
        self.ranked_builds = 0  # rank() calls of ranked(): equal to len(distinct_rankings)
        self._whole: dict[tuple, _Whole] = {}
        self._arrays: dict[tuple, tuple] = {}
        self._deeper: dict[tuple, bool] = {}
        self.shared_idcg: dict = {}
        self.rank_calls = 0
        self._ties_info()

    # -- orderings ----------------------------------------------------------------------------

    def _ties_info(self) -> None:
        """Which orderings can differ: ties under each precision, merges made by float32."""
        k, s = self.key, self.prep.run_score[self.rows]
        same32 = (k[1:] == k[:-1]) if k.size > 1 else np.zeros(0, bool)
        self.ties32 = bool(same32.any())
        if not self.ties32:
            self.ties64 = self.merges32 = False
            return
        # within float32-equal runs, compare the float64 scores
        tied = np.zeros(k.size, bool)
        tied[1:] |= same32
        tied[:-1] |= same32
        at = np.flatnonzero(tied)
        sub = at[np.lexsort((s[at], k[at]))]
        same_k = k[sub][1:] == k[sub][:-1]
        same_s = s[sub][1:] == s[sub][:-1]
        self.ties64 = bool((same_k & same_s).any())
        self.merges32 = bool((same_k & ~same_s).any())

    def ordering(self, conv: Conventions, tie_rule: str) -> tuple[str, str, str]:
        """(tie rule, score precision, rank source) of the Ranked this convention set can
        share: orderings that cannot differ on this input are one."""
        if conv.rank_source == "rank_column":
            return tie_rule, "rank", "rank_column"
        precision = conv.score_precision
        if precision == "float32" and not self.merges32:
            precision = "float64"
        ties = self.ties32 if precision == "float32" else self.ties64
        if not ties and tie_rule in SWEPT_VALUES["ties"]:
            tie_rule = "docid_desc"
        return tie_rule, precision, conv.rank_source

    def primary(self, precision: str) -> np.ndarray:
        if precision not in self._primary:
            if precision == "rank":
                p = self.prep.run_rank[self.rows]
                if np.isnan(p).any():
                    raise EvaluationError(
                        f"{self.prep.run_source}: rank_source=rank_column but line "
                        f"{self.prep.run_line[self.rows][np.isnan(p)][0]} has no numeric rank"
                    )
            else:
                score = self.prep.run_score[self.rows]
                if precision == "float32":
                    with np.errstate(over="ignore"):
                        score = score.astype(np.float32).astype(np.float64)
                p = -score
            self._primary[precision] = p
        return self._primary[precision]

    # -- rows -----------------------------------------------------------------------------------

    def prefix(self, k: int | None) -> np.ndarray:
        """Positions (in presorted order) of every row whose float32 score is at least the k-th
        highest of its query: each list's top k under any ordering, with whole tie groups."""
        if k is None or k >= max(self.facts.longest_list, 1):
            k = None
        if k not in self._prefix:
            if k is None:
                self._prefix[k] = np.arange(self.rows.size)
            else:
                last = np.where(self.n >= k, self.start + k - 1, 0)
                bound = np.where(self.n >= k, self.key[last] if self.key.size else 0,
                                 np.iinfo(np.int64).max)
                self._prefix[k] = np.flatnonzero(self.key <= bound[self.q])
        return self._prefix[k]

    def labels(self, lv: tuple[str, str]) -> np.ndarray:
        """Transformed label of every presorted row under (label_type, negative_labels)."""
        if lv not in self._labels:
            conv = BASE.replace(label_type=lv[0], negative_labels=lv[1])
            run_labels = transform_labels(self.prep.run_label, conv, self.prep.qrels_source)
            self._labels[lv] = run_labels[self.rows]
        return self._labels[lv]

    def judged(self, lv: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
        """(query index, transformed label) of every judged qrels row of a scored query."""
        if lv not in self._judged:
            conv = BASE.replace(label_type=lv[0], negative_labels=lv[1])
            lab = transform_labels(self.prep.qrels_label, conv, self.prep.qrels_source)
            jmask = self.scored[self.prep.qrels_q] & ~np.isnan(lab)
            self._judged[lv] = (self.local[self.prep.qrels_q[jmask]], lab[jmask])
        return self._judged[lv]

    def R_judged(self, lv, threshold: int) -> np.ndarray:
        key = (lv, threshold)
        if key not in self._R:
            jq, jlab = self.judged(lv)
            self._R[key] = np.bincount(jq[jlab >= threshold], minlength=self.nq).astype(np.float64)
        return self._R[key]

    def judged_gain(self, lv, conv: Conventions) -> tuple[tuple, np.ndarray]:
        gk = (lv,) + _gain_key(conv)
        if gk not in self._jgain:
            self._jgain[gk] = gains(self.judged(lv)[1], conv)
        return gk, self._jgain[gk]

    def _rank_args(self, k: int | None, precision: str, lv) -> tuple:
        key = (k, precision, lv)
        if key not in self._arrays:
            pos = self.prefix(k)
            rows = self.rows[pos]
            self._arrays[key] = (self.q[pos], self.primary(precision)[pos], self.prep.run_doc[rows],
                                 self.prep.run_order[rows], self.labels(lv)[pos])
        return self._arrays[key]

    def _prefix_deeper(self, k: int | None, depth: int | None) -> bool:
        """Does some prefix list hold more rows than ``depth`` (so the cut changes it)?"""
        if depth is None:
            return False
        key = (k, depth)
        if key not in self._deeper:
            longest = np.bincount(self.q[self.prefix(k)], minlength=self.nq).max(initial=0)
            self._deeper[key] = bool(longest > depth)
        return self._deeper[key]

    def ranked(self, lv, order: tuple[str, str, str], k: int | None, conv: Conventions,
               binary: bool) -> Ranked:
        """The reference's ``rank`` over the prefix ``k`` (None: whole lists)."""
        tie_rule, precision, _ = order
        depth = conv.depth if self._prefix_deeper(k, conv.depth) else None
        if binary:  # binary measures never read gains
            gain, scope = "linear", "binary"
        else:
            gain, scope = conv.gain, conv.threshold_scope
        key = (lv, order, k, depth, gain, scope, conv.relevance_threshold)
        if key in self._ranked:
            self._ranked.move_to_end(key)
        else:
            rconv = BASE.replace(gain=gain, threshold_scope=scope,
                                 relevance_threshold=conv.relevance_threshold, depth=depth)
            q, primary, doc, order_in_run, labels = self._rank_args(k, precision, lv)
            self.rank_calls += 1
            self.ranked_builds += 1
            self.distinct_rankings.add(key)
            while len(self._ranked) >= self.ranked_cache_size:
                self._ranked.popitem(last=False)
            self._ranked[key] = rank(q, primary, doc, order_in_run, labels, self.nq, rconv, tie_rule,
                                     keep_labels=True, pooled=self._pooled(k, lv))
        return self._ranked[key]

    def _pooled(self, k: int | None, lv) -> np.ndarray:
        """Per row of the prefix: judged with a negative label read as unjudged (infAP's pool)."""
        raw = self.prep.run_label[self.rows[self.prefix(k)]]
        with np.errstate(invalid="ignore"):
            return (raw < 0) & (lv[1] == "unjudged")

    def whole(self, lv, order: tuple[str, str, str], depth: int | None) -> _Whole:
        """The whole lists cut to ``depth``, for contexts over a shorter prefix."""
        if depth is None or not self._prefix_deeper(None, depth):
            key = (lv, None)
            if key not in self._whole:
                self._whole[key] = _Whole(self.labels(lv), self.q, self.nq, self.k_top)
            return self._whole[key]
        key = (lv, order, depth)
        if key not in self._whole:
            tie_rule, precision, _ = order
            q, primary, doc, order_in_run, labels = self._rank_args(depth, precision, lv)
            # rows in rank order: the row numbers ride through rank() as linear gains
            index = np.arange(q.size, dtype=np.float64)
            self.rank_calls += 1
            cut = rank(q, primary, doc, order_in_run, index, self.nq, BASE.replace(depth=depth),
                       tie_rule).gain.astype(np.int64)

            def grouped(conv: Conventions) -> Ranked:
                self.rank_calls += 1
                return rank(q, primary, doc, order_in_run, labels, self.nq,
                            BASE.replace(depth=depth, gain=conv.gain,
                                         threshold_scope=conv.threshold_scope,
                                         relevance_threshold=conv.relevance_threshold), "average")

            self._whole[key] = _Whole(labels[cut], q[cut], self.nq, self.k_top,
                                      grouped if tie_rule == "average" else None)
        return self._whole[key]

    @staticmethod
    def _threshold_idle(m: Measure, conv: Conventions) -> bool:
        """nDCG, DCG, G and nDCGRel read the relevance threshold only through their gains
        (``threshold_scope=graded``, or ``gain=binary``, whose gain is relevance); their refusals
        (``require_fixed_gains``) read gains too. (RnDCG also reads R: it is 0 without a relevant
        document, as in trec_eval.)"""
        return (m.family in GAINS_READ_THRESHOLD and conv.threshold_scope == "binary"
                and conv.gain != "binary")

    def formula_key(self, m: Measure, conv: Conventions) -> tuple:
        """Equal keys, equal formula results (values and empty queries) for ``m``: the axes
        ``m``'s formula reads, with orderings and depths that cannot differ on this input made
        one."""
        orders = (self.ordering(conv, conv.ties),)
        graded = m.record.kind == "graded"
        thr = conv.relevance_threshold
        if graded and self._threshold_idle(m, conv):
            thr = None
        depth = conv.depth if conv.depth is not None and self._prefix_deeper(None, conv.depth) else None
        # the family's own axes (bpref_denominator, err_max_grade, ...) from its record
        named = tuple(getattr(conv, a) for a in m.record.axes if AXES[a].group == "named")
        return (m, (conv.label_type, conv.negative_labels), orders, depth, thr,
                conv.gain if graded else None, conv.threshold_scope if graded else None,
                conv.discount if graded else None, conv.ideal, named)

    def contexts(self, m: Measure, conv: Conventions) -> list[Context]:
        """The reference context ``evaluate`` would build for ``m`` under ``conv`` (any tie rule
        but ``unspecified``, which the sweep leaves to ``evaluate`` itself)."""
        lv = (conv.label_type, conv.negative_labels)
        out = []
        for rule in [conv.ties]:
            order = self.ordering(conv, rule)
            if order[2] == "rank_column":
                # the rank column's order is not the presorted one: rank whole lists
                k, covers = None, True
            else:
                reach = _reach(m, conv)
                k = reach if conv.depth is None or reach is None else min(reach, conv.depth)
                if conv.depth is not None and k is None:
                    k = conv.depth
                covers = self.prefix(k).size == self.rows.size or (
                    conv.depth is not None and k is not None and k >= conv.depth)
            rconv = conv
            if m.record.kind == "graded" and self._threshold_idle(m, conv):
                rconv = conv.replace(relevance_threshold=1)
            ranked = self.ranked(lv, order, k, rconv, m.record.kind != "graded")
            whole = None if covers else self.whole(lv, order, conv.depth)
            gk, jgain = self.judged_gain(lv, conv)
            jq = self.judged(lv)[0]
            out.append(_SweepContext(conv, ranked, rule, self.R_judged(lv, conv.relevance_threshold),
                                     jgain, jq, judged_label=self.judged(lv)[1], whole=whole,
                                     shared=self.shared_idcg, gain_key=gk))
        return out


def _swept(base: Conventions, settings: dict[str, Any]) -> Conventions:
    """``base.replace(**settings)`` for values taken from the sweep's domains, which are already
    the stored values ``Conventions`` validation would produce: the sweep builds thousands."""
    conv = copy.copy(base)
    for axis, value in settings.items():
        object.__setattr__(conv, axis, value)
    return conv


def aggregate(lo: np.ndarray, hi: np.ndarray, empty: np.ndarray, rule: str, select: np.ndarray | None,
               is_sum: bool, sets_differ: bool, query_set: str, what: str, mean: str = "arithmetic"):
    """(mean or sum lo, hi, per-query lo, hi, counted) as ``evaluate`` + ``aggregate`` give them,
    from per-query values over every judged query; raises EvaluationError where they would.
    ``mean``: the ``mean`` axis (the geometric mean raises each value to its floor first)."""
    if query_set == "raise" and sets_differ:
        raise EvaluationError("query sets differ (query_set=raise)")
    if select is not None:
        lo, hi, empty = lo[select], hi[select], empty[select]
    one = lo is hi  # a single order of ties: compute once
    counted = np.ones(lo.size, bool)
    if not is_sum and empty.any():
        if rule == "raise":
            raise EvaluationError(f"{what}: a query has no relevant document (empty_query=raise)")
        fill = {"zero": 0.0, "one": 1.0, "nan": np.nan, "skip": np.nan}[rule]
        lo = np.where(empty, fill, lo)
        hi = lo if one else np.where(empty, fill, hi)
        if rule == "skip":
            counted = ~empty
    if is_sum:
        a = float(lo.sum())
        return a, a if one else float(hi.sum()), lo, hi, counted
    floor = geometric_floor(mean)
    if floor is not None:  # as evaluate: each value raised to the floor, the mean of the logs
        lo = np.maximum(lo, floor, where=~np.isnan(lo), out=lo.copy())
        hi = lo if one else np.maximum(hi, floor, where=~np.isnan(hi), out=hi.copy())
    # as Evaluation.aggregate: the mean of the counted values (NaN when none counts)
    x = lo[counted]
    if not x.size:
        return math.nan, math.nan, lo, hi, counted

    def average(v):
        if floor is None:
            return float(v.mean())
        with np.errstate(invalid="ignore"):
            return float(np.exp(np.log(v).mean()))

    a = average(x)
    return a, a if one else average(hi[counted]), lo, hi, counted


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
        aggregates: dict[tuple, Any] = {}  # (formula key, rule, query set) -> (lo, hi, hits) or None
        sel_pos = np.cumsum(eng.in_run) - 1
        # axes that change the Ranked outermost, in _LOOP_FIRST order, so each Ranked is used
        # in one stretch of the loop (see _Engine._ranked); cidx stays in ``compute`` order
        loop = sorted(range(len(compute)), key=lambda j: _loop_rank(axes[compute[j]]))
        for lidx in itertools.product(*[range(shape[compute[j]]) for j in loop]):
            cidx = [0] * len(compute)
            for j, v in zip(loop, lidx):
                cidx[j] = v
            conv = m.conventions(_swept(BASE, {axes[i]: doms[i][j] for i, j in zip(compute, cidx)}))
            eng = self.engines[conv.identical_ids]
            fkey = (conv.identical_ids,) + eng.formula_key(m, conv)
            scaled = conv.gain == "exponential" and self.facts.top_label > EXPONENTIAL_HEADROOM
            if conv.ties == "unspecified" or m.aggregate == "curve" or scaled or m.family == "Hole":
                # each tie order settles its own empty queries before the range is taken, and
                # some measures refuse what only the averaged grouping detects; a curve is
                # averaged over the whole evaluation; exponential gains beyond a double are
                # scaled by evaluate; Hole ranks the rows by annotation, which the engine's
                # contexts do not hold: no sharing here
                formulas[fkey] = _ByEvaluate(conv)
            elif fkey not in formulas:
                try:
                    results = [FORMULAS[m.family](ctx, m) for ctx in eng.contexts(m, conv)]
                    self.formula_calls += len(results)
                    if len(results) == 1:
                        values = results[0][0]
                        formulas[fkey] = (values, values, results[0][1])
                    else:
                        formulas[fkey] = (np.minimum.reduce([v for v, _ in results]),
                                          np.maximum.reduce([v for v, _ in results]), results[0][1])
                except EvaluationError:
                    formulas[fkey] = None
            found = formulas[fkey]
            cell = [0] * len(axes)
            for i, j in zip(compute, cidx):
                cell[i] = j
            for aidx in itertools.product(*[range(shape[i]) for i in agg]):
                for i, j in zip(agg, aidx):
                    cell[i] = j
                at = tuple(cell)
                if found is None:
                    err[at] = True
                    continue
                chosen = {axes[i]: doms[i][j] for i, j in zip(agg, aidx)}
                rule = overrides.get("empty_query", chosen.get("empty_query", BASE.empty_query))
                qset = overrides.get("query_set", chosen.get("query_set", BASE.query_set))
                mean = overrides.get("mean", chosen.get("mean", BASE.mean))
                rnd = overrides.get("rounding", chosen.get("rounding", BASE.rounding))
                if isinstance(found, _ByEvaluate):
                    akey = (fkey, rule, qset, mean, rnd)
                    if akey not in aggregates:
                        aggregates[akey] = self._evaluate_cell(m, found.conv, rule, qset, pq, mean, rnd)
                else:
                    # the empty rule only matters when some query is empty
                    akey = (fkey, rule if found[2].any() else None, qset, mean, None if is_sum else rnd)
                    if akey not in aggregates:
                        aggregates[akey] = self._aggregate_cell(found, rule, qset, is_sum, m.text,
                                                                pq_pos, pq_lo, pq_hi, sel_pos, mean, rnd)
                done = aggregates[akey]
                if done is None:
                    err[at] = True
                    continue
                lo[at], hi[at] = done[0], done[1]
                if hits is not None:
                    hits[at] = done[2]
        return Grid(m, axes, doms, lo, hi, err, hits, len(pq))

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

    def _aggregate_cell(self, found, rule, qset, is_sum, what, pq_pos, pq_lo, pq_hi, sel_pos,
                        mean: str = "arithmetic", rnd: int | None = None):
        """(aggregate lo, hi, per-query reported values matched) of one formula result under one
        (empty rule, query set, rounding); None where evaluate would refuse."""
        plo, phi, empty = found
        select = self.engine.in_run if qset == "run" else None
        try:
            a, b, qlo, qhi, counted = aggregate(plo, phi, empty, rule, select, is_sum,
                                                 self.sets_differ, qset, what, mean)
        except EvaluationError:
            return None
        if rnd is not None and not is_sum:  # as Evaluation.aggregate and evaluate's per-query values
            a, b = round(a, rnd), round(b, rnd)
            qlo, qhi = round_half_even(qlo, rnd), round_half_even(qhi, rnd)
        n_hits = 0
        if pq_pos.size:
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
