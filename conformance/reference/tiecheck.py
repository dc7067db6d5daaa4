"""Whether the order of tied documents changes a measure, decided from one ranking.

Contract: for an evaluation under a rule that fixes the order of tied documents, or ranks them
by a rule (every ``ties`` value but ``unspecified``; ``rank`` hands :func:`find` the rows'
positions in its order before ``group_last`` or ``group_first`` gives a tied group its last or
first rank), :func:`changed`
gives, per query, whether the value differs between
the two orders ``ties=unspecified`` takes as its ends (``evaluate.END_RULES``): exactly the
queries whose ``[lo, hi]`` range is not one value. It reads only what :func:`rank` already
holds (the sorted order, the per-query starts, the label and the relevant count above each
row, and its gain function, which it applies to the labels of tied rows alone) and looks at
tied groups alone; no second ranking, no copy of the run.

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

from typing import Callable

import numpy as np


class TieGroups:
    """The tie groups of two rows or more of one ranking, before any depth cut, from the
    pairs of adjacent tied rows.

    A ranking only gathers what each pair reads of its own per-row arrays (``pair``, arrays of
    one length): ``row``, the pair's first sorted row (increasing); ``a`` and ``b``, the two
    labels; ``pooled_a`` and ``pooled_b``, the two pool states (where there is a pool); then,
    once the ranking is done (:meth:`finish`), ``before``, the relevant rows of the query above
    the pair. With them it keeps the queries that have rows and where each starts
    (``listed``, ``listed_start``) and its gain function (``gain_of``). Everything else (each
    group's query and first rank, whether its gains differ) is computed from those when first
    asked, once. The tie groups of rankings of disjoint queries (the evaluation's pieces) are
    taken as one by :meth:`joined` before anything is asked: the pieces are ranked in two
    threads, where each numpy call also waits its turn for the interpreter, so a piece does
    only what needs its own per-row arrays, and the rest is done once for all of them.
    """

    def __init__(self, n_queries: int, rows: int, threshold: float, pair: dict[str, np.ndarray],
                 listed: np.ndarray, listed_start: np.ndarray) -> None:
        # rows: the ranking's; relevant: a label of at least ``threshold`` (NaN never is)
        self.n_queries, self._rows, self._threshold, self._pair = n_queries, rows, threshold, pair
        self._listed, self._listed_start = listed, listed_start
        self._gain_of: Callable[[np.ndarray], np.ndarray] | None = None
        self._cache: dict[str, np.ndarray | None] = {}

    @classmethod
    def joined(cls, parts: list["TieGroups"]) -> "TieGroups":
        """The groups of ``parts``, finished tie groups of rankings of disjoint queries under
        one convention set (the evaluation's pieces, each over every query), as those of one
        ranking whose rows are theirs one after the other: a measure asks them its question
        once, not once a piece. No pair of one ranking continues a group of the one before (a
        ranking's last pair starts two rows or more before its end)."""
        if len(parts) == 1:
            return parts[0]
        offset = np.cumsum([0] + [p._rows for p in parts])
        pair = {name: np.concatenate([p._pair[name] + r if name == "row" else p._pair[name]
                                      for p, r in zip(parts, offset)])
                for name in parts[0]._pair}
        out = cls(parts[0].n_queries, int(offset[-1]), parts[0]._threshold, pair,
                  np.concatenate([p._listed for p in parts]),
                  np.concatenate([p._listed_start + r for p, r in zip(parts, offset)]))
        out._gain_of = parts[0]._gain_of
        return out

    def finish(self, relevant_before: np.ndarray, gain_of: Callable[[np.ndarray], np.ndarray] | None) -> None:
        """What the ranking computes after the order: the relevant rows above each pair (from
        its per-row count), and its gain function (``gain_of``: labels -> their gains, the
        ranking's own; None: gains are not compared). A gain is a function of the label
        alone, so a pair's gains are those of its two labels: compared when first asked, on
        the labels, not read from the per-row gains."""
        self._pair["before"] = relevant_before[self._pair["row"]]
        self._gain_of = gain_of

    @property
    def gains_compared(self) -> bool:
        return self._gain_of is not None

    def _once(self, name: str, make):
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def _opens(self) -> np.ndarray:
        """Per pair: it opens a group (it does not continue the previous pair's)."""
        def make():
            row = self._pair["row"]
            opens = np.ones(row.size, bool)
            opens[1:] = row[1:] != row[:-1] + 1
            return opens
        return self._once("opens", make)

    def _group(self) -> np.ndarray:
        """Per pair: its group."""
        return self._once("group", lambda: np.cumsum(self._opens()) - 1)

    def _of_groups(self, name: str) -> np.ndarray:
        """Per group: ``name`` of its first pair."""
        return self._once(name, lambda: self._pair[name][self._opens()])

    @property
    def n_groups(self) -> int:
        """How many groups (each opened by a pair)."""
        return self._of_groups("row").size

    def _placed(self) -> tuple[np.ndarray, np.ndarray]:
        """Per group: (its query, its query's first row). A group's query is the last of the
        queries with rows whose first row is at or before the group's: the groups are in row
        order, so each such start is placed among the groups' first rows (one search per
        query, not one per group) and its query repeated over the groups up to the next's."""
        def make():
            rows = self._of_groups("row")
            placed = np.searchsorted(rows, self._listed_start, side="left")  # the first: 0
            counts = np.empty(placed.size, np.int64)
            counts[:-1] = placed[1:] - placed[:-1]
            counts[-1:] = rows.size - placed[-1:]
            return np.repeat(self._listed, counts), np.repeat(self._listed_start, counts)
        return self._once("placed", make)

    @property
    def first(self) -> np.ndarray:
        """Per group: the 1-based rank of its first row."""
        return self._once("first", lambda: self._of_groups("row") - self._placed()[1] + 1)

    @property
    def before(self) -> np.ndarray:
        """Per group: the relevant rows of its query above it."""
        return self._of_groups("before")

    def queries(self) -> np.ndarray:
        """Per group: its query."""
        return self._placed()[0]

    @property
    def size(self) -> np.ndarray:
        """Per group: its rows."""
        return self._once("size", lambda: np.bincount(self._group(), minlength=self.n_groups) + 1)

    def _any(self, flags: np.ndarray) -> np.ndarray:
        """Per group: whether ``flags`` (per pair) holds for some pair of it."""
        out = np.zeros(self.n_groups, bool)
        out[self._group()[flags]] = True
        return out

    def per_query(self, hit: np.ndarray) -> np.ndarray:
        """Per query: whether some group in ``hit`` (a mask over groups) is one of its own."""
        out = np.zeros(self.n_queries, bool)
        out[self.queries()[hit]] = True
        return out

    def rel(self) -> np.ndarray:
        """Per group: its relevant rows."""
        def make():
            with np.errstate(invalid="ignore"):
                rel_a, rel_b = self._pair["a"] >= self._threshold, self._pair["b"] >= self._threshold
            closes = np.ones(rel_a.size, bool)  # the last pair of each group: its second row
            closes[:-1] = self._opens()[1:]
            return np.bincount(self._group(), weights=rel_a, minlength=self.n_groups) + rel_b[closes]
        return self._once("rel", make)

    def mixed(self) -> np.ndarray:
        """Per group: it holds relevant and non-relevant rows."""
        return self._once("mixed", lambda: (self.rel() > 0) & (self.rel() < self.size))

    def _labels_differ(self) -> np.ndarray:
        """Per pair: its two labels differ (NaN a value of its own)."""
        def make():
            a, b = self._pair["a"], self._pair["b"]
            return (a != b) & ~(np.isnan(a) & np.isnan(b))
        return self._once("labels_differ", make)

    def label_varied(self) -> np.ndarray:
        """Per group: unequal labels or pool states."""
        def make():
            differ = self._labels_differ()
            if "pooled_a" in self._pair:
                differ = differ | (self._pair["pooled_a"] != self._pair["pooled_b"])
            return self._any(differ)
        return self._once("label_varied", make)

    def gain_varied(self) -> np.ndarray | None:
        """Per group: unequal gains; None when gains are not compared. Equal labels have
        equal gains, so only the pairs of unequal labels are compared."""
        if not self.gains_compared:
            return None

        def make():
            at = np.flatnonzero(self._labels_differ())
            differ = self._gain_of(self._pair["a"][at]) != self._gain_of(self._pair["b"][at])
            out = np.zeros(self.n_groups, bool)
            out[self._group()[at[differ]]] = True
            return out
        return self._once("gain_varied", make)


def find(order: np.ndarray, start: np.ndarray, n: np.ndarray, primary: np.ndarray, pos: np.ndarray,
         labels: np.ndarray, pooled: np.ndarray | None, candidates: tuple | None,
         threshold: float) -> TieGroups:
    """The tie groups of the ranking ``order`` (rows sorted by query, then ``primary``):
    ``start`` and ``n`` per query its first sorted row and its rows; ``pos``, ``labels`` and
    ``pooled`` per sorted row; relevant: a label of at least ``threshold``.
    :meth:`TieGroups.finish` adds what the ranking computes later.

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
    pair = {"row": pairs, "a": labels[pairs], "b": labels[pairs + 1]}
    if pooled is not None:
        pair["pooled_a"], pair["pooled_b"] = pooled[pairs], pooled[pairs + 1]
    listed = np.flatnonzero(n)
    return TieGroups(start.size, order.size, threshold, pair, listed, start[listed])


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
    shifted = shifted or not tg.gains_compared  # no rule reads gains then
    out = np.zeros(tg.n_queries, bool)
    if tg.n_groups == 0:
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
