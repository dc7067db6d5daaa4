"""The shared view every formula reads: :class:`Context` (one ordering of the run under one
convention set, with the judged side: relevant counts, the ideal and its cut) and the judged
ideal (:class:`JudgedIdeal`) shared by every context of an evaluation. The notation is
``conformance.reference.formulas``'; the stages the axes act in (``axis.STAGES``) that
the formulas read through a context are its methods: the ideal (``ideal_gains``, ``ideal_cut``,
``idcg``), the relevance universe (``R``, ``universe_labels``) and the denominators.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.reference.ranking import (Ranked, clamp_cutoff, discounts, ideal_dcg, ideal_dcg_at,
                                           ideal_discounts, ideal_sorted, range_sums, sorted_terms)


class JudgedIdeal:
    """The ideal DCG of the judged documents (``ideal=judged``) per query at each cutoff asked:
    one sort of the judgments for every cutoff, shared by every Context of one evaluation (the
    two halves of a two-thread evaluation ask for the same values of every query)."""

    def __init__(self, gain: np.ndarray, q: np.ndarray, n_queries: int, conv: Conventions,
                 sorted_gains: tuple | None = None, discounts_at: tuple | None = None) -> None:
        """``sorted_gains``: ``ideal_sorted(gain, q, n_queries)`` where already computed (the
        sort reads no convention: one serves every discount). ``discounts_at``: another
        JudgedIdeal's :meth:`discounts` under the same discount, used where its layout (each
        query's count) is this one's (another gain reading of the same judged rows)."""
        self._args = (gain, q, n_queries, conv)
        self._terms = None
        self._sorted = sorted_gains
        self._discounts = discounts_at
        self._at: dict[int | None, np.ndarray] = {}
        self._lock = threading.Lock()

    def sorted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each query's judged gains sorted descending: (gains, start, count)."""
        with self._lock:
            return self._sorted_locked()

    def _sorted_locked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._sorted is None:
            gain, q, n_queries, _ = self._args
            self._sorted = ideal_sorted(gain, q, n_queries)
        return self._sorted

    def _terms_locked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._terms is None:  # ideal_terms, from the one sort
            ideal = self._sorted_locked()
            self._terms = sorted_terms(ideal, self._args[3], self._discounts_locked()[1])
        return self._terms

    def discounts(self) -> tuple[np.ndarray, np.ndarray]:
        """(each query's count, the discount at each row of the ideal order): what
        ``discounts_at`` takes."""
        with self._lock:
            return self._discounts_locked()

    def _discounts_locked(self) -> tuple[np.ndarray, np.ndarray]:
        ideal = self._sorted_locked()
        if self._discounts is None or not np.array_equal(self._discounts[0], ideal[2]):
            self._discounts = ideal[2], ideal_discounts(ideal, self._args[3])
        return self._discounts

    def idcg(self, k: int | None) -> np.ndarray:
        with self._lock:  # the other half waits for the values instead of computing them again
            if k not in self._at:
                self._at[k] = ideal_dcg_at(self._terms_locked(), k)
            return self._at[k]

    def idcg_within(self, k: int | None, lengths: np.ndarray) -> np.ndarray:
        """Per query: the ideal DCG cut at min(k, its list's length) (``ideal=judged_to_list``)."""
        with self._lock:
            terms = self._terms_locked()
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
    # Under nonpositive_scores=not_relevant (binary measures): () -> R of the unmasked list,
    # since the masked documents still count among the relevant ones (ideal=retrieved only).
    list_R: Callable[[], np.ndarray] | None = None
    # Under it too: () -> the Context of the unmasked list (hit_weight=label's R)
    unmasked: Callable[[], "Context"] | None = None
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

    def expected(self, x: np.ndarray, what: str, within: int | None = None) -> np.ndarray:
        """``x`` per row, or under ``ties=average`` its mean over each row's tie group (a group
        a depth cut splits refused only where it starts in the top ``within``, when given:
        :meth:`Ranked.group_mean`)."""
        return self.ranked.group_mean(x, what, within) if self.tie_rule == "average" else x

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
        """Per row: expected gain times discount (read-only; kept by the ranking)."""
        return self.ranked.discounted_gains(self.conv)

    @property
    def R(self) -> np.ndarray:
        if self.conv.ideal == "retrieved":
            if self.list_R is not None:
                return self.list_R()
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
        """k (``k_beyond_list=k``), min(k, n) (``min_k_n``) or the rows in the top k
        (``rows_in_top``: :meth:`Ranked.cut`); n when there is no cutoff. Under
        ``duplicates=set`` n and min(k, n) count distinct documents (in the top k). Under
        ``ties=group_last`` and ``group_first`` too, min(k, n) is the list's length against k,
        not the rows a tied group leaves in the top k, which ``rows_in_top`` counts."""
        kk = self.ranked.n if k is None else np.minimum(self.ranked.n, clamp_cutoff(k))
        if k is not None and self.conv.k_beyond_list == "rows_in_top":
            kk = self.ranked.cut(k)
        if self.ranked.first is not None:
            kk = self.ranked.upto(self.ranked.first, k)
        if k is None or self.conv.k_beyond_list in ("min_k_n", "rows_in_top"):
            return kk.astype(np.float64)
        return np.full(self.ranked.n_queries, float(k))

    def label_weights(self, k: int | None) -> np.ndarray:
        """Per row: what it counts for where it is ranked under ``hit_weight=label``: its label
        as read, 0 when unjudged (under ``ties=average`` the mean over its tie group; a group
        a depth cut splits is refused only where it starts in the top ``k``, which the caller
        reads)."""
        lab = self.ranked.label
        return self.expected(np.where(np.isnan(lab), 0.0, lab), "hit_weight=label", within=k)

    def label_R(self) -> tuple[np.ndarray, np.ndarray]:
        """Under ``hit_weight=label``, per query: (R, the sum of the labels of the relevance
        universe; whether one of them is not 0). Under ``nonpositive_scores=not_relevant``
        the universe of ``ideal=retrieved`` is the unmasked list (``unmasked``)."""
        src = self.unmasked() if self.unmasked is not None and self.conv.ideal == "retrieved" else self
        labels, q = src.universe_labels()
        known = ~np.isnan(labels)
        labels, q = labels[known], q[known]
        n = self.ranked.n_queries
        return (_bincount(q, weights=labels, minlength=n),
                _bincount(q[labels != 0], minlength=n) > 0)

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


def _never_empty(ctx: Context, values: np.ndarray) -> Result:
    return values.astype(np.float64), np.zeros(values.size, bool)
