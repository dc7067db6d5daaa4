"""Whether the order of tied documents changes a measure, decided from one ranking.

Contract: for an evaluation under a rule that fixes the order of tied documents, or ranks them
by a rule (every ``ties`` value but ``unspecified``; ``rank`` hands :func:`find` the rows'
positions in its order before ``group_last`` or ``group_first`` gives a tied group its last or
first rank), :func:`changed`
gives, per query, whether the value differs between
the two orders ``ties=unspecified`` takes as its ends (``evaluate.END_RULES``): exactly the
queries whose ``[lo, hi]`` range is not one value. It reads only what :func:`rank` already
holds (the sorted order, the scores, the ranks, the relevance and gain of each row) and looks
at tied groups alone; no second ranking, no copy of the run.

Why it is exact. The two end orders sort each tie group (equal query and sort key) by what
the family's value rises with, then by document id; rows outside tie groups keep their rank.
So a group whose rows are equal in that key is ordered alike at both ends, and then:

- ``gain_positions`` (DCG, nDCG; ends ``gain``), under a strictly decreasing discount
  (``log2``): the value differs when some group whose gains differ starts within the reach
  (cutoff, depth): the rearrangement inequality is strict for unequal gains at strictly
  decreasing positive weights.
- ``relevance_positions`` (AP; ends ``label``, a denominator the order cannot change): some
  group of mixed relevance starts within the reach; its relevant documents are earlier, or more
  of them inside the cut, at the optimistic end.
- ``first_relevant`` (RR): the first group holding a relevant document is of mixed relevance
  and starts within the reach (RR is 1 / the rank of its first relevant document).
- ``count`` (P, R, NumRelRet: counts in the top k): a group of mixed relevance straddles the
  cut (rows on both sides of it); ``count_first`` (Success): the same with no relevant document
  above the group and room at the pessimistic end for only non-relevant ones inside the cut.

Each family names its proof in its record (``Family.tie_proof``). Relevance is monotone in the
label key only for a threshold above 0 (unjudged sorts as label 0), so the rules apply under
``relevance_threshold > 0`` and the plain conventions listed in :func:`_rules_apply`. Any other
family or convention gets the one test that holds for all: a tie group whose rows carry equal
labels (and pool state) is ordered alike at both ends, so no such group within the depth means
no change; otherwise :func:`changed` returns None and the caller evaluates under ``ties=unspecified`` (``statement.tied_queries``).
"""

from __future__ import annotations


import numpy as np


class TieGroups:
    """The tie groups of two rows or more of one ranking, before any depth cut, from the
    pairs of adjacent tied rows; what a measure asks (relevant counts, unequal gains) is
    computed from the pairs' labels when first asked, once. Those of rankings of disjoint
    queries (the evaluation's pieces) are taken as one by :meth:`joined`."""

    def __init__(self, pairs: np.ndarray, pos: np.ndarray, labels: np.ndarray,
                 pooled: np.ndarray | None, start: np.ndarray, threshold: float, gain_of) -> None:
        opens = np.ones(pairs.size, bool)  # a pair that does not continue the previous one's group
        opens[1:] = pairs[1:] != pairs[:-1] + 1
        self._opens = opens
        self._group = np.cumsum(opens) - 1  # per pair: its group
        self.first_row = pairs[opens]  # per group: its first sorted row
        n = self.first_row.size
        self.first = pos[self.first_row]  # per group: 1-based rank of its first row
        self.size = np.bincount(self._group, minlength=n) + 1  # per group: rows
        self._a, self._b = labels[pairs], labels[pairs + 1]  # each pair's two labels
        self._pooled = None if pooled is None else pooled[pairs] != pooled[pairs + 1]
        self._start, self._threshold, self._gain_of = start, threshold, gain_of
        self.n_queries = start.size
        self.before: np.ndarray | None = None  # per group: relevant rows of its query above it
        self._cache: dict[str, np.ndarray | None] = {}

    @classmethod
    def joined(cls, parts: list["TieGroups"]) -> "TieGroups":
        """The groups of ``parts``, finished tie groups of rankings of disjoint queries under
        one convention set (the evaluation's pieces, each over every query), as those of one
        ranking: a measure asks them its question once, not once a piece. Each group keeps its
        query; its rows' positions, which are each ranking's own, are not kept."""
        if len(parts) == 1:
            return parts[0]
        one = object.__new__(cls)
        cat = np.concatenate
        one._opens = cat([p._opens for p in parts])  # a ranking's first pair opens a group
        one._group = np.cumsum(one._opens) - 1
        one.first_row = None
        for name in ("first", "size", "before", "_a", "_b"):
            setattr(one, name, cat([getattr(p, name) for p in parts]))
        one._pooled = None if parts[0]._pooled is None else cat([p._pooled for p in parts])
        one._start, one._threshold, one._gain_of = None, parts[0]._threshold, parts[0]._gain_of
        one.n_queries = parts[0].n_queries
        one._cache = {"query": cat([p.queries() for p in parts])}
        return one

    def finish(self, relevant_before: np.ndarray) -> None:
        """The relevant rows above each group, from the ranking's per-row count."""
        self.before = relevant_before[self.first_row]

    def _once(self, name: str, make):
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def _any(self, flags: np.ndarray) -> np.ndarray:
        out = np.zeros(self.first.size, bool)
        out[self._group[flags]] = True
        return out

    def queries(self) -> np.ndarray:
        """Per group: its query. Rows come query by query, each query's from its ``start``,
        so a group's query is the last whose start is at or before the group's first row (a
        query without rows starts where the next one does, before it)."""
        return self._once("query", lambda: np.searchsorted(self._start, self.first_row, side="right") - 1)

    def per_query(self, hit: np.ndarray) -> np.ndarray:
        """Per query: whether some group in ``hit`` (a mask over groups) is one of its own."""
        out = np.zeros(self.n_queries, bool)
        out[self.queries()[hit]] = True
        return out

    def rel(self) -> np.ndarray:
        """Per group: its relevant rows (a label of at least the threshold; NaN never is)."""
        def make():
            with np.errstate(invalid="ignore"):
                rel_a, rel_b = self._a >= self._threshold, self._b >= self._threshold
            closes = np.ones(rel_a.size, bool)  # the last pair of each group: its second row
            closes[:-1] = self._opens[1:]
            return np.bincount(self._group, weights=rel_a, minlength=self.first.size) + rel_b[closes]
        return self._once("rel", make)

    def mixed(self) -> np.ndarray:
        """Per group: it holds relevant and non-relevant rows."""
        return self._once("mixed", lambda: (self.rel() > 0) & (self.rel() < self.size))

    def label_varied(self) -> np.ndarray:
        """Per group: unequal labels (NaN a value of its own) or pool states."""
        def make():
            a, b = self._a, self._b
            differ = (a != b) & ~(np.isnan(a) & np.isnan(b))
            if self._pooled is not None:
                differ |= self._pooled
            return self._any(differ)
        return self._once("label_varied", make)

    def gain_varied(self) -> np.ndarray | None:
        """Per group: unequal gains; None when no gain function was given."""
        if self._gain_of is None:
            return None
        return self._once("gain_varied", lambda: self._any(self._gain_of(self._a) != self._gain_of(self._b)))


def find(order: np.ndarray, primary: np.ndarray, pos: np.ndarray, labels: np.ndarray,
         pooled: np.ndarray | None, start: np.ndarray, candidates: tuple | None,
         threshold: float, gain_of=None) -> TieGroups:
    """The tie groups of the ranking ``order`` (rows sorted by query then ``primary``): ``pos``,
    ``labels``, ``pooled`` per sorted row, ``start`` per query its first sorted row;
    relevant: a label of at least ``threshold``; ``gain_of``: labels -> gains (None: gains not
    compared).

    ``candidates``: (the sorted positions i that may tie with i + 1, whether they are exactly
    the tied pairs): ``ranking.sort_order``'s, from the comparison of packed keys it makes
    anyway; None: every row is compared with the next. Past that, only the pairs of adjacent
    tied rows (a few percent of a run) are read, once each."""
    if order.size < 2:
        pairs = np.zeros(0, np.int64)
    elif candidates is not None:
        pairs, exact = candidates
        if not exact:
            a, b = primary[order[pairs]], primary[order[pairs + 1]]
            pairs = pairs[((a == b) | (np.isnan(a) & np.isnan(b))) & (pos[pairs + 1] != 1)]
    else:
        ps = primary[order]
        same = ps[1:] == ps[:-1]  # each sorted row ties with the next one
        if np.isnan(ps).any():  # NaN keys sort together, and the tie keys order them
            nan = np.isnan(ps)
            same |= nan[1:] & nan[:-1]
            del nan
        del ps
        same &= pos[1:] != 1  # never across queries
        pairs = np.flatnonzero(same)
        del same
    return TieGroups(pairs, pos, labels, pooled, start, threshold, gain_of)


def _rules_apply(m, conv, shifted: bool) -> bool:
    """Whether the family's proof (``Family.tie_proof``) holds under ``conv``: each needs a
    denominator the order cannot change, and the positional ones a strictly decreasing
    discount."""
    if (conv.rounding is not None or conv.mean != "arithmetic" or conv.duplicates == "set"
            or conv.batch != "per_query" or not conv.relevance_threshold > 0):
        return False
    proof = m.record.tie_proof
    if proof == "gain_positions":
        return conv.discount == "log2" and conv.ideal in ("judged", "judged_to_list") and not shifted
    if proof == "relevance_positions":
        return conv.ideal == "judged" and conv.ap_denominator != "retrieved_relevant"
    if proof == "first_relevant":
        return True
    if proof in ("count", "count_first"):
        return conv.ideal == "judged"
    return False


def _min(*values):
    known = [v for v in values if v is not None]
    return min(known) if known else None


def changed(m, conv, tg: TieGroups | None, empty: np.ndarray, shifted: bool = False) -> np.ndarray | None:
    """Per query: whether the order of its tied documents changes ``m``'s value (see the module
    docstring); ``tg``: the tie groups of the ranking ``m`` was computed from
    (``rank(..., tie_groups=True)``'s ``Ranked.ties``, or those of its pieces
    :meth:`TieGroups.joined`); ``empty``: the queries the value is empty for (settled by
    ``empty_query`` alike in every order). None when only an evaluation under
    ``ties=unspecified`` can tell."""
    if tg is None or m.record.reads_annotation:  # its ties are ordered by another key
        return None
    shifted = shifted or tg._gain_of is None  # gains not compared: no rule reads them
    out = np.zeros(tg.n_queries, bool)
    if tg.first.size == 0:
        return out
    depth = conv.depth
    if not _rules_apply(m, conv, shifted):
        reach = np.inf if depth is None else depth
        if (tg.label_varied() & (tg.first <= reach)).any():
            return None
        return out
    proof = m.record.tie_proof
    if proof in ("gain_positions", "relevance_positions", "first_relevant"):
        ignored = "rr_cutoff" in m.record.axes and conv.rr_cutoff == "ignore"
        reach = _min(None if ignored else m.cutoff, depth)
        hit = tg.gain_varied() if proof == "gain_positions" else tg.mixed()
        if reach is not None:
            hit = hit & (tg.first <= reach)
        if proof == "first_relevant":
            hit = hit & (tg.before == 0)
    else:
        cut = _min(m.cutoff, depth)
        if cut is None:  # the whole list counts: no order moves a document out of it
            return out
        inside = cut - tg.first + 1  # the group's rows inside the cut
        hit = tg.mixed() & (inside > 0) & (inside < tg.size)
        if proof == "count_first":  # a relevant row inside the cut at both ends, or at neither
            hit &= (tg.before == 0) & (inside <= tg.size - tg.rel())
    return tg.per_query(hit) & ~empty
