"""The sweep's shared-work engine: the join, the presorted rows, the prefixes and orderings
that every combination of conventions shares, and the reference's own :class:`Context` over
them (``_SweepContext``), so each combination's value is the reference's arithmetic on shared
intermediate values (see ``conformance.reference.sweep`` for what is shared and why).

One idea at about 770 lines: the engine (``_Engine``) and the two views of its rows it hands
the reference's formulas (``_SweepContext`` over a ranked prefix, ``_Whole`` for what only the
whole lists show) cannot be read apart.
"""

from __future__ import annotations

import dataclasses
import hashlib
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from conformance.conventions import AXES, Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference.context import Context, JudgedIdeal
from conformance.reference.prepare import Prepared, transform_labels
from conformance.reference.ranking import (EXPONENTIAL_HEADROOM, Ranked, gains, gains_key, ideal_dcg,
                                           ideal_dcg_at, ideal_sorted, rank, sorted_terms, tie_keys_read,
                                           tie_order)
from conformance.reference.segments import segments

# Swept values of the axes whose values do not depend on the input (the axis records' own).
SWEPT_VALUES: dict[str, tuple] = {a.name: a.swept for a in AXES.values() if a.swept}
RANKED_CACHE = 2  # Ranked objects kept at once
DIGEST_ROWS = 50_000  # the largest Ranked whose rows are digested to share formula results
# The tie rules a formula or the context tests by name (``ctx.tie_rule == ...``); every other
# rule acts only through the order of the rows it gives (guarded by the tests).
RULES_READ_BY_NAME = ("average", "pessimistic", "optimistic", "group_last", "group_first")
# Where the sweep starts: the vocabulary defaults (trec_eval 10's command line).
BASE = Conventions()


def _reach(m: Measure, conv: Conventions) -> int | None:
    """How far down each list ``m`` reads under ``conv``; None: the whole list."""
    reach, k = m.record.reach, m.cutoff
    if k is None or reach == "whole":
        return None
    if "rr_cutoff" in m.record.axes and conv.rr_cutoff == "ignore":  # read and ignored
        return None
    return 2 * k if reach == "twice_cutoff" else k


# What a Ranked under a rule that fixes the order is made of: ``rank`` derives its other
# arrays from these alone (every row its own tie group: group_last is pos, e_gain is gain,
# ap_term and p_first come from rel and pos; under ties=group_last and group_first the tie
# groups are the runs of equal pos, so the same holds)
_FIXED_ORDER_BASE = ("start", "n", "pos", "gain", "rel", "label", "pooled", "first")


def _feed(h, a: np.ndarray, prefix: bytes = b"") -> None:
    """Feed the digest ``h`` one array: ``prefix``, its dtype and shape, then its bytes."""
    a = np.ascontiguousarray(a)
    h.update(prefix + a.dtype.str.encode() + str(a.shape).encode())
    h.update(a.view(np.uint8) if a.size else b"")


def _content(ranked: Ranked, rule: str) -> bytes:
    """A digest of every per-row and per-query array of ``ranked`` a formula can read (all but
    ``order``, the trace's row numbers, and ``ties``, set only by ``evaluate``); under a rule
    other than ``average``, of the arrays the others derive from (``_FIXED_ORDER_BASE``)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(str(ranked.n_queries).encode())
    for f in dataclasses.fields(ranked):
        if f.name in ("n_queries", "order", "ties") or (
                rule != "average" and f.name not in _FIXED_ORDER_BASE):
            continue
        a = getattr(ranked, f.name)
        if a is None:
            h.update(b"|" + f.name.encode() + b":none")
        else:
            _feed(h, a, b"|" + f.name.encode())
    return h.digest()


def _coarse_key(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """int64 per row, ordered as (query, -score narrowed to float32): the coarsest order that
    every (score precision, tie rule) ordering refines."""
    with np.errstate(over="ignore"):
        p32 = (-score).astype(np.float32)
    p32 += np.float32(0.0)  # one bit pattern for zero
    u = p32.view(np.uint32).astype(np.int64)
    ordered = np.where(u >= 2**31, 2**32 - 1 - u, u + 2**31)
    return (q.astype(np.int64) << 32) | ordered


def _top_candidates(unjudged: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The rows, in their order, among which every list's k rows of largest label lie under
    ``_Whole._top``'s order: every judged row, and each list's first k unjudged rows (its
    unjudged rows all read as one label, and the stable sort keeps them in row order, so no
    later one comes before these). Every row where the rows are not grouped by query."""
    if q.size < 2 or not (q[1:] >= q[:-1]).all():
        return np.arange(q.size)
    seen = np.cumsum(unjudged)  # unjudged rows up to and including each row
    start, _ = segments(q, int(q[-1]) + 1)
    before = np.concatenate([[0], seen])[start][q]  # unjudged rows before the row's list
    return np.flatnonzero(~unjudged | (seen - before <= k))


class _Whole:
    """Per-query quantities of whole (depth-cut) lists that a prefix cannot see: the relevant
    count and the ideal DCG under ``ideal=retrieved``, and the reference's two refusals under
    ``ties=average``: a depth cut through a tied group of mixed relevance (for the count) or of
    unequal gains (for the ideal).

    ``labels``/``q``: every row of the cut lists (labels transformed, NaN unjudged). ``grouped``:
    conventions -> the reference's ``Ranked`` of the cut lists under ``ties=average`` (None when
    no cut can split a group: no depth cut, or another tie rule). ``common``: (a ``_Whole`` of
    the rows that every ordering's cut holds alike, the queries whose cut is this ordering's
    own), so that the top rows of the lists cut alike are taken once (``_top``).
    ``in_rank_order``: () -> ``labels``/``q`` in rank order, where they are given in another
    (what ``universe`` returns is summed in its order, as ``evaluate`` sums it; everything else
    read here is the same in any order of each list's rows).
    """

    def __init__(self, labels: np.ndarray, q: np.ndarray, nq: int, k_top: int | None,
                 grouped: Callable[[Conventions], Ranked] | None = None,
                 shared: dict | None = None, common: tuple[_Whole, np.ndarray] | None = None,
                 in_rank_order: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.nq = nq
        self._labels, self._q = labels, q
        self._in_rank_order = in_rank_order
        self._grouped = grouped
        self._k_top = k_top
        self._common = common
        self._R: dict[int, np.ndarray] = {}
        self._idcg: dict[tuple, np.ndarray] = {}
        # the ideal DCGs of every _Whole of the engine, by a digest of the rows they read
        self._shared: dict = {} if shared is None else shared
        self._tops: dict[bool, tuple] = {}
        self._candidates: tuple | None = None  # _top_rows' candidate rows
        self._mixed: dict[int, bool] = {}
        self._varied: dict[tuple, bool] = {}

    def _top(self, unjudged_lowest: bool) -> tuple[np.ndarray, np.ndarray, bytes]:
        """(labels, query, digest of both) of each list's ``k_top`` rows of largest label,
        unjudged read as label 0 or, with ``unjudged_lowest``, below every label; equal labels
        (and 0 against unjudged) in one fixed order, so lists holding the same labels give the
        same rows. The ideal DCG at k <= k_top reads the k largest gains of each list: they
        are among these rows where the gain is non-decreasing in that order (``idcg``)."""
        if unjudged_lowest not in self._tops:
            if self._common is not None and self._k_top is not None:
                # the lists every ordering cuts alike from their common rows, the others from
                # this cut's own, each list's rows in the order a sort of all would give
                c_labels, c_q, _ = self._common[0]._top(unjudged_lowest)
                o_labels, o_q = self._top_rows(unjudged_lowest)
                q = np.concatenate([c_q, o_q])
                at = np.argsort(q, kind="stable")
                labels, q = np.concatenate([c_labels, o_labels])[at], q[at]
            else:
                labels, q = self._top_rows(unjudged_lowest)
            h = hashlib.blake2b(digest_size=16)
            for a in (labels, q):
                _feed(h, a)
            self._tops[unjudged_lowest] = (labels, q, h.digest())
            if len(self._tops) == 2:  # the candidates serve no other reading
                self._candidates = None
        return self._tops[unjudged_lowest]

    def _top_rows(self, unjudged_lowest: bool) -> tuple[np.ndarray, np.ndarray]:
        """``_top``'s rows of this cut's own lists (with ``common``: of the lists cut this
        ordering's own way), rows grouped by query: all of them without ``k_top``."""
        if self._candidates is None:  # the same for both readings of unjudged rows
            labels, q = self._labels, self._q
            if self._common is not None and self._k_top is not None:
                mine = self._common[1][q]
                labels, q = labels[mine], q[mine]
            nan = None
            if self._k_top is not None and labels.size:
                nan = np.isnan(labels)
                rows = _top_candidates(nan, q, self._k_top)
                labels, q, nan = labels[rows], q[rows], nan[rows]
            self._candidates = labels, q, nan
        labels, q, nan = self._candidates
        if self._k_top is not None and labels.size:
            value = np.where(nan, -np.inf if unjudged_lowest else 0.0, labels)
            order = np.lexsort((nan, -value, q))
            qs = q[order]
            start, _ = segments(qs, self.nq)
            keep = order[np.arange(qs.size) - start[qs] < self._k_top]
            labels, q = labels[keep], q[keep]
        return labels, q

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
        key = gains_key(conv)
        if key not in self._varied:
            self._varied[key] = bool(self._grouped(conv).splits_varied_group(None).any())
        if self._varied[key]:
            raise EvaluationError(
                "ideal=retrieved with a depth cut under ties=average: the cut splits a tied "
                "group of unequal gains; choose another tie rule")

    def universe(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels, query) of the judged rows of the whole lists (``Context.universe_labels``
        under ``ideal=retrieved``)."""
        if self._in_rank_order is not None:  # as evaluate reads them, in rank order
            self._labels, self._q = self._in_rank_order()
            self._in_rank_order = None
        known = ~np.isnan(self._labels)
        return self._labels[known], self._q[known]

    def has_gain(self, conv: Conventions) -> np.ndarray:
        """As ``Context.has_gain`` on the whole list: some document has a nonzero gain."""
        g = gains(self._labels, conv)  # an unjudged document gains 0 under every gain
        nonzero = (g != 0) & ~np.isnan(g)
        return np.bincount(self._q[nonzero], minlength=self.nq) > 0

    def idcg(self, conv: Conventions, k: int | None) -> np.ndarray:
        key = (gains_key(conv), conv.discount, k)
        if key not in self._idcg:
            # the top rows hold the k largest gains where the gain is non-decreasing in their
            # order: linear and exponential gains with unjudged read as label 0 (gain 0), but
            # not under the graded scope with a negative threshold (which gives the labels
            # below it gain 0, above the negative gains of those from it up to 0); binary gains
            # with unjudged lowest (under a threshold <= 0 label 0 gains 1, unjudged 0); other
            # gains (maps) read every row
            if conv.gain == "binary":
                top = self._top(True)
            elif conv.gain in ("linear", "exponential") and not (
                    conv.threshold_scope == "graded" and conv.relevance_threshold < 0):
                top = self._top(False)
            else:
                top = None
            if top is None or k is None or self._k_top is None or k > self._k_top:
                self._idcg[key] = ideal_dcg(gains(self._labels, conv), self._q, self.nq, conv, k)
            else:
                # equal rows, equal ideal DCGs: shared with the other cut lists holding them;
                # ideal_dcg's steps apart, so that one sort of the gains serves every discount
                # (the per-row terms are not kept: one array of the top rows per discount)
                labels, q, digest = top
                shared_key = (digest,) + key
                if shared_key not in self._shared:
                    sort_key = (digest, key[0], "sorted")
                    if sort_key not in self._shared:
                        self._shared[sort_key] = ideal_sorted(gains(labels, conv), q, self.nq)
                    self._shared[shared_key] = ideal_dcg_at(sorted_terms(self._shared[sort_key], conv), k)
                self._idcg[key] = self._shared[shared_key]
        return self._idcg[key]


@dataclass
class _SweepContext(Context):
    """The reference's :class:`Context` over a ranked prefix of each list.

    Under ``ideal=retrieved``, R and the ideal DCG are the whole list's, taken from ``whole``
    (None when ``ranked`` holds the whole lists: then the reference's own code runs). The judged
    ideal DCG comes from ``shared``, one per (labels, gains, discount, k) for every context,
    and ``k_slots``'s at a cutoff too.
    """

    whole: Any = None
    shared: Any = None
    gain_key: Any = None
    content: Any = None  # what the formulas read of this context's order (_Engine.contexts)

    @property
    def R(self) -> np.ndarray:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_count(self.tie_rule, self.conv)
            return self.whole.R(self.conv.relevance_threshold)
        return Context.R.fget(self)

    def universe_labels(self) -> tuple[np.ndarray, np.ndarray]:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_gains(self.tie_rule, self.conv)
            return self.whole.universe()
        return Context.universe_labels(self)

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
        # the reference's own judged ideal (and its judged_to_list cut), one per gains and
        # discount for every context, each cutoff summed once
        key = (self.gain_key, self.conv.discount)
        if key not in self.shared:
            # the gains sorted once for every discount, and the discounts of the ideal order
            # once per labels as read (gain_key[0]) and discount: every gain reading of the
            # same judged rows has their layout
            at_key = (self.gain_key[0], self.conv.discount, "discounts")
            ji = JudgedIdeal(self.judged_gain, self.judged_q, self.ranked.n_queries, self.conv,
                             self.shared.get((self.gain_key, "sorted")), self.shared.get(at_key))
            self.shared[self.gain_key, "sorted"] = ji.sorted()
            self.shared[at_key] = ji.discounts()
            self.shared[key] = ji
        self.judged_ideal = self.shared[key]
        if self.conv.ideal == "k_slots" and k is not None:
            # its ideal reads the judged gains, the discount and k alone (k slots of each
            # query's largest judged gain): one per those for every context
            slots = key + ("k_slots", k)
            if slots not in self.shared:
                self.shared[slots] = Context.idcg(self, k)
            self._idcg[k] = self.shared[slots]
        return Context.idcg(self, k)


class _Engine:
    """Everything the sweep shares: the join, the presorted rows, prefixes, labels, orderings."""

    def __init__(self, prep: Prepared, facts: Any, k_top: int | None,  # facts: sweep.Facts
                 drop_identical: bool = False) -> None:
        self.prep, self.facts, self.k_top = prep, facts, k_top
        # every query any swept query set scores: the judged ones (query_set=qrels, a superset
        # of run) and, when run_all is swept, the run's queries without judgments too
        scored = prep.in_qrels | prep.in_run if facts.run_only_queries else prep.in_qrels.copy()
        self.scored = scored
        self.in_qrels = prep.in_qrels[scored]
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
        # change the Ranked outermost (their stages, _loop_rank), so each is used in one stretch and a small
        # LRU loses no reuse (rank_calls == distinct_rankings, checked by the tests).
        self._ranked: OrderedDict[tuple, Ranked] = OrderedDict()
        # (prefix, score precision, tie rule, and what its tie keys read: ``tie_keys_read``)
        # -> the permutation ``rank`` gives those rows; as few kept as Ranked
        self._sorted: dict[tuple, np.ndarray] = {}
        self.ranked_cache_size = RANKED_CACHE
        self.distinct_rankings: set[tuple] = set()
        self.ranked_builds = 0  # rank() calls of ranked(): equal to len(distinct_rankings)
        # ranked key -> digest of what the Ranked holds (its own key beyond DIGEST_ROWS)
        self._content: dict[tuple, Any] = {}
        self._whole: dict[tuple, _Whole] = {}
        self._whole_idcg: dict = {}  # (digest of rows, gains, discount, k) -> ideal DCG
        # (labels as read, depth) -> the rows every ordering's cut holds alike (_Whole._top)
        self._cut_alike: dict[tuple, _Whole] = {}
        self._arrays: dict[tuple, tuple] = {}
        self._deeper: dict[tuple, bool] = {}
        self.shared_idcg: dict = {}
        self._selections: dict[str, tuple] = {}
        self._short: dict[tuple, bool] = {}
        self._underflows32: bool | None = None
        self.rank_calls = 0
        self._ties_info()

    def selection(self, query_set: str) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(mask over the engine's queries of those ``query_set`` scores, None: all; each
        query's position among the selected), as ``prepare.scored_queries`` selects them."""
        if query_set not in self._selections:
            if query_set == "run":
                mask = self.in_run & self.in_qrels
            elif query_set == "run_all":
                mask = self.in_run.copy()
            else:
                mask = self.in_qrels.copy()
            self._selections[query_set] = (None, None) if mask.all() else (
                mask, np.cumsum(mask) - 1)
        return self._selections[query_set]

    def lists_short(self, lv, k: int | None, depth: int | None) -> bool:
        """Is some list shorter than the judged ideal cut at k (min(k, judged documents))? Only
        then does ``ideal=judged_to_list`` (the ideal cut at min(k, n)) differ from ``judged``."""
        key = (lv, k, depth)
        if key not in self._short:
            count = np.bincount(self.judged(lv)[0], minlength=self.nq)
            need = count if k is None else np.minimum(count, k)
            n = self.n if depth is None else np.minimum(self.n, depth)
            self._short[key] = bool((n < need).any())
        return self._short[key]

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

    def labels(self, lv: tuple) -> np.ndarray:
        """Transformed label of every presorted row under (label_type, negative_labels), and
        under a third item, a score precision (:meth:`mask`), NaN (unjudged) for the rows
        whose score, as that precision sorts it, is <= 0, as ``evaluate`` masks them."""
        if len(lv) == 3:
            if lv not in self._labels:
                self._labels[lv] = np.where(self.nonpositive(lv[2]), np.nan, self.labels(lv[:2]))
            return self._labels[lv]
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
        gk = (lv,) + gains_key(conv)
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

    def _cut_inside_group(self, depth: int) -> np.ndarray:
        """Per query: its list is longer than ``depth`` and its rows at ``depth`` and
        ``depth + 1`` (presorted) share a float32 score, so a tie group may span the cut."""
        key = ("cut_inside_group", depth)
        if key not in self._arrays:
            long = self.n > depth
            at = self.start[long] + depth - 1
            inside = np.zeros(self.nq, bool)
            inside[long] = self.key[at] == self.key[at + 1]
            self._arrays[key] = inside
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

    def ranked_key(self, lv, order: tuple[str, str, str], k: int | None, conv: Conventions,
                   binary: bool) -> tuple:
        """What the ``Ranked`` of :meth:`ranked` is built from."""
        depth = conv.depth if self._prefix_deeper(k, conv.depth) else None
        if binary:  # binary measures never read gains
            gain, scope = "linear", "binary"
        else:
            gain, scope = conv.gain, conv.threshold_scope
        return (lv, order, k, depth, gain, scope, conv.relevance_threshold)

    def ranked(self, lv, order: tuple[str, str, str], k: int | None, conv: Conventions,
               binary: bool) -> Ranked:
        """The reference's ``rank`` over the prefix ``k`` (None: whole lists)."""
        return self.ranked_at(self.ranked_key(lv, order, k, conv, binary))

    def ranked_at(self, key: tuple) -> Ranked:
        """The ``Ranked`` of a :meth:`ranked_key`."""
        lv, order, k, depth, gain, scope, threshold = key
        tie_rule, precision, _ = order
        if key in self._ranked:
            self._ranked.move_to_end(key)
        else:
            rconv = BASE.replace(gain=gain, threshold_scope=scope,
                                 relevance_threshold=threshold, depth=depth)
            q, primary, doc, order_in_run, labels = self._rank_args(k, precision, lv)
            self.rank_calls += 1
            self.ranked_builds += 1
            self.distinct_rankings.add(key)
            while len(self._ranked) >= self.ranked_cache_size:
                self._ranked.popitem(last=False)
            # a rule sorts these rows one way under every threshold and depth, and every
            # label reading where it reads no label (tie_keys_read): sorted once, handed to each
            reads = tie_keys_read(tie_rule, rconv)
            sorts = (k, precision, tie_rule) + (() if reads is None else (lv,) + reads)
            if sorts not in self._sorted:
                while len(self._sorted) >= self.ranked_cache_size:
                    del self._sorted[next(iter(self._sorted))]
                self._sorted[sorts] = tie_order(q, primary, doc, order_in_run, self.nq, tie_rule, labels, rconv)
            known = self._sorted[sorts]
            self._ranked[key] = rank(q, primary, doc, order_in_run, labels, self.nq, rconv, tie_rule,
                                     keep_labels=True, pooled=self._pooled(k, lv), sorted_as=known)
            built = self._ranked[key]
            # a digest costs about one pass over the rows: on short lists far less than the
            # formula calls it can save, on long ones more than those it saves there (where
            # equal rows under two orderings are rare); there the ordering stands for itself.
            # So it does where no other ordering can share its results: a rule the formulas
            # read by name shares only with itself under the other score precision, which
            # is the same ordering unless float32 merges scores (``ordering``)
            digested = built.pos.size <= DIGEST_ROWS and (tie_rule not in RULES_READ_BY_NAME
                                                          or self.merges32)
            self._content[key] = _content(built, tie_rule) if digested else key
        return self._ranked[key]

    def _pooled(self, k: int | None, lv) -> np.ndarray:
        """Per row of the prefix: judged with a negative label read as unjudged (infAP's pool)."""
        key = ("pooled", k, lv[1] == "unjudged")
        if key not in self._arrays:
            raw = self.prep.run_label[self.rows[self.prefix(k)]]
            with np.errstate(invalid="ignore"):
                self._arrays[key] = (raw < 0) & (lv[1] == "unjudged")
        return self._arrays[key]

    def whole(self, lv, order: tuple[str, str, str], depth: int | None) -> _Whole:
        """The whole lists cut to ``depth``, for contexts over a shorter prefix."""
        if depth is None or not self._prefix_deeper(None, depth):
            key = (lv, None)
            if key not in self._whole:
                self._whole[key] = _Whole(self.labels(lv), self.q, self.nq, self.k_top,
                                          shared=self._whole_idcg)
            return self._whole[key]
        key = (lv, order, depth)
        if key not in self._whole:
            tie_rule, precision, _ = order
            q, primary, doc, order_in_run, labels = self._rank_args(depth, precision, lv)
            # A list whose rows at depth and depth + 1 (presorted) have two float32 scores is
            # cut alike by every ordering: its prefix rows are its cut. Only the others (the
            # lists whose cut may fall inside a tied group: float64 ties are float32 ties, and
            # the presort is by float32 score) are ranked, here and for the grouped ranking.
            inside = self._cut_inside_group(depth)
            own = np.flatnonzero(inside[q])
            alike = np.flatnonzero(~inside[q])

            # the engine holds the _Whole that holds these functions: they hold the engine
            # weakly, as a cycle would keep every array of the engine alive until the cyclic
            # garbage collector ran
            engine, nq = weakref.ref(self), self.nq

            def cut(rows: np.ndarray) -> np.ndarray:
                """The rows of ``rows`` the depth cuts, in rank order (their numbers ride
                through rank() as linear gains)."""
                engine().rank_calls += 1
                return rank(q[rows], primary[rows], doc[rows], order_in_run[rows],
                            rows.astype(np.float64), nq, BASE.replace(depth=depth), tie_rule,
                            tie_labels=labels[rows]).gain.astype(np.int64)

            def in_rank_order() -> tuple[np.ndarray, np.ndarray]:
                rows = cut(np.arange(q.size))
                return labels[rows], q[rows]

            # The grouped ranking answers one question: does the cut at depth split a tied
            # group (of mixed relevance, of unequal gains)? Only the lists cut their own way can.
            sub = own if tie_rule == "average" and own.size else None

            def grouped(conv: Conventions) -> Ranked:
                engine().rank_calls += 1
                return rank(q[sub], primary[sub], doc[sub], order_in_run[sub], labels[sub], nq,
                            BASE.replace(depth=depth, gain=conv.gain,
                                         threshold_scope=conv.threshold_scope,
                                         relevance_threshold=conv.relevance_threshold), "average")

            rows = np.concatenate([alike, cut(own)]) if own.size else alike
            rows = rows[np.argsort(q[rows], kind="stable")]  # grouped by query
            common = None
            if self.k_top is not None:
                if (lv, depth) not in self._cut_alike:
                    self._cut_alike[lv, depth] = _Whole(labels[alike], q[alike], self.nq, self.k_top)
                common = (self._cut_alike[lv, depth], inside)
            self._whole[key] = _Whole(labels[rows], q[rows], self.nq, self.k_top,
                                      None if sub is None else grouped,
                                      shared=self._whole_idcg, common=common,
                                      in_rank_order=in_rank_order)
        return self._whole[key]

    @staticmethod
    def _threshold_idle(m: Measure, conv: Conventions) -> bool:
        """nDCG, DCG, G and nDCGRel read the relevance threshold only through their gains
        (``threshold_scope=graded``, or ``gain=binary``, whose gain is relevance); their refusals
        (``require_fixed_gains``) read gains too. (RnDCG also reads R: it is 0 without a relevant
        document, as in trec_eval.)"""
        return (m.record.gains_read_threshold and conv.threshold_scope == "binary"
                and conv.gain != "binary")

    def gain_reading(self, m: Measure, conv: Conventions) -> tuple[str, Any]:
        """The (threshold scope, relevance threshold) as a graded family's gains read them, made
        one where two readings give every judged label the same gain (so the same values):

        - ``(binary, None)`` where the gains do not read the threshold (``_threshold_idle``),
          and under the graded scope with linear or exponential gains when every judged label
          below the threshold is 0 (the scope's zeroing then changes no gain);
        - the binary scope under ``gain=binary``, whose gain is relevance (the graded scope
          zeroes only labels already below the threshold);
        - the threshold 1 for a threshold below 1 under linear or exponential gains when every
          label from it up to 1 is 0 (gain 0 either way);
        - else the axes' own values.

        Other families: their own values."""
        scope, thr = conv.threshold_scope, conv.relevance_threshold
        if not m.record.gains_read_threshold:
            return scope, thr
        if self._threshold_idle(m, conv):
            return "binary", None
        if conv.gain == "binary":
            return "binary", thr
        if conv.gain not in ("linear", "exponential"):
            return scope, thr
        lv = (conv.label_type, conv.negative_labels)
        if scope == "graded":
            key = ("zero_below", lv, thr)
            if key not in self._short:
                below = self.judged(lv)[1]
                below = below[below < thr]
                self._short[key] = bool(((below == 0) & ~np.signbit(below)).all())
            if self._short[key]:
                return "binary", None
        if thr < 1:
            key = ("below", lv, thr)
            if key not in self._short:
                lab = self.judged(lv)[1]
                between = lab[(lab >= thr) & (lab < 1)]
                self._short[key] = bool((between == 0).all())
            if self._short[key]:
                return scope, 1
        return scope, thr

    def reads_depth(self, m: Measure, conv: Conventions) -> bool:
        """Can ``depth`` change ``m``'s formula results on this input? Not where no list
        reaches it, and not where ``m`` reads each list to a cutoff at or above the depth's
        reach alone: the ranked prefix the formulas read then holds no list longer than the
        depth (so the depth cuts nothing of it, and ``ranked_key`` leaves it out), the whole
        lists, the only other rows a depth cuts, are read under ``ideal=retrieved`` alone
        (``_SweepContext``), and no formula of a family with a cutoff reads the depth itself
        (a guard test holds this). A combination ``evaluate`` computes (``by_evaluate``) and
        the rank column's order, which ranks whole lists, keep their depth."""
        d = conv.depth
        if d is None or not self._prefix_deeper(None, d):
            return False
        reach = _reach(m, conv)
        return (reach is None or reach > d or conv.ideal == "retrieved"
                or conv.rank_source == "rank_column" or self.by_evaluate(m, conv)
                or self._prefix_deeper(reach, d))

    def by_evaluate(self, m: Measure, conv: Conventions) -> bool:
        """Is this combination left to ``evaluate`` itself (no shared contexts)? Under
        ``ties=unspecified`` each tie order settles its own empty queries before the range is
        taken, and some measures refuse what only the averaged grouping detects; a curve is
        averaged over the whole evaluation; exponential gains beyond a double are scaled by
        ``evaluate``; Hole ranks the rows by annotation, which the engine's contexts do not
        hold."""
        scaled = conv.gain == "exponential" and self.facts.top_label > EXPONENTIAL_HEADROOM
        return (conv.ties == "unspecified" or m.aggregate == "curve" or scaled
                or m.record.reads_annotation)

    def nonpositive(self, precision: str) -> np.ndarray:
        """Per presorted row: its score, as ``score_precision`` reads it, is <= 0."""
        key = ("nonpositive", precision)
        if key not in self._arrays:
            self._arrays[key] = self.primary(precision) >= 0  # the primary key is -score
        return self._arrays[key]

    def mask(self, m: Measure, conv: Conventions) -> str | None:
        """The score precision whose nonpositive scores mask ``m``'s labels where they are
        ranked (``nonpositive_scores=not_relevant``, the binary measures: ``evaluate`` reads
        those documents as not relevant), or None where nothing is masked."""
        if (conv.nonpositive_scores != "not_relevant" or "ranked_relevance" not in m.record.groups
                or not self.nonpositive(conv.score_precision).any()):
            return None
        return conv.score_precision

    def underflows32(self) -> bool:
        """Some score is positive as a double and <= 0 as a float32 (it underflows to 0)."""
        if self._underflows32 is None:
            s = self.prep.run_score[self.rows]
            with np.errstate(over="ignore"):
                self._underflows32 = bool(((s > 0) & (s.astype(np.float32) <= 0)).any())
        return self._underflows32

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
            if m.record.kind == "graded":
                scope, thr = self.gain_reading(m, conv)
                if (scope, thr) != (conv.threshold_scope, conv.relevance_threshold):
                    # readings the gains do not tell apart: one Ranked
                    rconv = conv.replace(threshold_scope=scope,
                                         relevance_threshold=1 if thr is None else thr)
            binary = m.record.kind != "graded"
            mask = self.mask(m, conv)
            ranked_lv = lv if mask is None else lv + (mask,)
            key = self.ranked_key(ranked_lv, order, k, rconv, binary)
            ranked = self.ranked_at(key)
            # the whole lists are never masked: R under ideal=retrieved counts the masked rows
            # only ideal=retrieved reads the whole lists (_SweepContext)
            whole = None if covers or conv.ideal != "retrieved" else self.whole(lv, order, conv.depth)
            gk, jgain = self.judged_gain(lv, conv)
            jq = self.judged(lv)[0]
            # the whole lists are kept for the sweep's life, so the object names them
            content = (rule if rule in RULES_READ_BY_NAME else "by_order",
                       self._content[key], whole)
            ctx = _SweepContext(conv, ranked, rule, self.R_judged(lv, conv.relevance_threshold),
                                jgain, jq, judged_label=self.judged(lv)[1], whole=whole,
                                shared=self.shared_idcg, gain_key=gk, content=content)
            if mask is not None and conv.ideal == "retrieved" and whole is None:
                # as evaluate: R (and hit_weight=label's sum of labels) is the unmasked list's,
                # which this order's cut decides
                ctx.unmasked = self._unmasked(ctx, lv, order, k, rconv, binary)
                ctx.list_R = lambda unmasked=ctx.unmasked: unmasked().R
                ctx.content += (order,)
            out.append(ctx)
        return out

    def _unmasked(self, ctx: _SweepContext, lv, order, k, rconv: Conventions,
                  binary: bool) -> Callable[[], _SweepContext]:
        """() -> ``ctx`` over the same rows unmasked (made when first asked). It holds what it
        reads of ``ctx``, not ``ctx``, which holds it: a cycle would keep the context's ranked
        rows alive until the cyclic garbage collector ran."""
        made: list[_SweepContext] = []
        fields = dict(conv=ctx.conv, tie_rule=ctx.tie_rule, R_judged=ctx.R_judged,
                      judged_gain=ctx.judged_gain, judged_q=ctx.judged_q,
                      judged_label=ctx.judged_label, shared=ctx.shared, gain_key=ctx.gain_key)

        def plain() -> _SweepContext:
            if not made:
                made.append(_SweepContext(ranked=self.ranked(lv, order, k, rconv, binary), **fields))
            return made[0]
        return plain
