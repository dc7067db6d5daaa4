"""Whether the order of tied documents changes a measure, decided from one ranking.

Contract: for an evaluation under a rule that fixes the order of tied documents (every ``ties``
value but ``unspecified``), :func:`changed` gives, per query, whether the value differs between
the two orders ``ties=unspecified`` takes as its ends (``evaluate.END_RULES``): exactly the
queries whose ``[lo, hi]`` range is not one value. It reads only what :func:`rank` already
holds (the sorted order, the scores, the ranks, the relevance and gain of each row) and looks
at tied groups alone; no second ranking, no copy of the run.

Why it is exact. The two end orders sort each tie group (equal query and sort key) by what
the family's value rises with, then by document id; rows outside tie groups keep their rank.
So a group whose rows are equal in that key is ordered alike at both ends, and then:

- DCG, nDCG (ends ``gain``), under a strictly decreasing discount (``log2``): the value
  differs when some group whose gains differ starts within the reach (cutoff, depth): the
  rearrangement inequality is strict for unequal gains at strictly decreasing positive weights.
- AP (ends ``label``, a denominator the order cannot change): some group of mixed relevance
  starts within the reach; its relevant documents are earlier, or more of them inside the cut,
  at the optimistic end.
- RR: the first group holding a relevant document is of mixed relevance and starts within the
  reach (RR is 1 / the rank of its first relevant document).
- P, R, NumRelRet (counts in the top k): a group of mixed relevance straddles the cut (rows
  on both sides of it); Success: the same with no relevant document above the group and room
  at the pessimistic end for only non-relevant ones inside the cut.

Relevance is monotone in the label key only for a threshold above 0 (unjudged sorts as label
0), so the rules apply under ``relevance_threshold > 0`` and the plain conventions listed in
:func:`_rules_apply`. Any other family or convention gets the one test that holds for all: a
tie group whose rows carry equal labels (and pool state) is ordered alike at both ends, so
no such group within the depth means no change; otherwise :func:`changed` returns None and the
caller evaluates under ``ties=unspecified`` (``statement.tied_queries``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TieGroups:
    """The tie groups of two rows or more of one ranking, before any depth cut."""

    q: np.ndarray  # per group: query index
    first: np.ndarray  # per group: 1-based rank of its first row
    size: np.ndarray  # per group: rows
    rel: np.ndarray  # per group: relevant rows
    label_varied: np.ndarray  # per group: unequal labels (NaN its own value) or pool states
    gain_varied: np.ndarray | None = None  # per group: unequal gains (set by finish)
    before: np.ndarray | None = None  # per group: relevant rows of its query ranked above it
    _rows: np.ndarray | None = None  # sorted rows in tied groups
    _begins: np.ndarray | None = None  # index in _rows of each group's first row

    def finish(self, gain: np.ndarray, relevant_before: np.ndarray) -> None:
        """Gains and relevant-above counts, once the ranking has them (per sorted row)."""
        if self._rows is None:
            return
        g = gain[self._rows]
        self.gain_varied = np.minimum.reduceat(g, self._begins) != np.maximum.reduceat(g, self._begins)
        self.before = relevant_before[self._rows[self._begins]]
        self._rows = self._begins = None


def _empty() -> TieGroups:
    z = np.zeros(0, np.int64)
    return TieGroups(z, z, z, z, np.zeros(0, bool), np.zeros(0, bool), z)


def find(order: np.ndarray, primary: np.ndarray, pos: np.ndarray, rel: np.ndarray,
         labels: np.ndarray, pooled: np.ndarray | None, start: np.ndarray) -> TieGroups:
    """The tie groups of the ranking ``order`` (rows sorted by query then ``primary``): ``pos``,
    ``rel``, ``labels``, ``pooled`` per sorted row, ``start`` per query its first sorted row."""
    rows = order.size
    if rows < 2:
        return _empty()
    ps = primary[order]
    same = ps[1:] == ps[:-1]  # each sorted row ties with the one before it
    nan = np.isnan(ps)
    if nan.any():  # NaN keys sort together, and the tie keys order them
        same |= nan[1:] & nan[:-1]
    del ps, nan
    same &= pos[1:] != 1  # never across queries
    if not same.any():
        return _empty()
    tied = np.zeros(rows, bool)
    tied[1:] = same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    del tied
    begins = np.ones(at.size, bool)
    inner = at > 0
    begins[inner] = ~same[at[inner] - 1]
    b = np.flatnonzero(begins)
    first_rows = at[b]
    size = np.diff(np.append(b, at.size))
    r = np.add.reduceat(rel[at], b)
    lab = labels[at]
    key = np.where(np.isnan(lab), -np.inf, lab)
    varied = np.minimum.reduceat(key, b) != np.maximum.reduceat(key, b)
    if pooled is not None:
        p = pooled[at].astype(np.int8)
        varied |= np.minimum.reduceat(p, b) != np.maximum.reduceat(p, b)
    q = np.searchsorted(start, first_rows, side="right") - 1
    return TieGroups(q, pos[first_rows], size, r, varied, _rows=at, _begins=b)


POSITIONAL_GAIN = ("nDCG", "DCG")
COUNTS = ("P", "R", "NumRelRet", "Success")


def _rules_apply(m, conv, shifted: bool) -> bool:
    if (conv.rounding is not None or conv.mean != "arithmetic" or conv.duplicates == "set"
            or conv.batch != "per_query" or not conv.relevance_threshold > 0):
        return False
    if m.family in POSITIONAL_GAIN:
        return conv.discount == "log2" and conv.ideal in ("judged", "judged_to_list") and not shifted
    if m.family == "AP":
        return conv.ideal == "judged" and conv.ap_denominator != "retrieved_relevant"
    if m.family == "RR":
        return True
    if m.family in COUNTS:
        return conv.ideal == "judged"
    return False


def _min(*values):
    known = [v for v in values if v is not None]
    return min(known) if known else None


def changed(m, conv, ranked, empty: np.ndarray, shifted: bool = False) -> np.ndarray | None:
    """Per query of ``ranked`` (built with ``rank(..., tie_groups=True)``): whether the order of
    its tied documents changes ``m``'s value (see the module docstring); ``empty``: the queries
    the value is empty for (settled by ``empty_query`` alike in every order). None when only
    an evaluation under ``ties=unspecified`` can tell."""
    tg = ranked.ties
    if tg is None or m.family == "Hole":  # Hole orders ties by another key (annotated or not)
        return None
    out = np.zeros(ranked.n_queries, bool)
    if tg.q.size == 0:
        return out
    depth = conv.depth
    if not _rules_apply(m, conv, shifted):
        reach = np.inf if depth is None else depth
        if (tg.label_varied & (tg.first <= reach)).any():
            return None
        return out
    fam = m.family
    mixed = (tg.rel > 0) & (tg.rel < tg.size)
    if fam in POSITIONAL_GAIN or fam == "AP" or fam == "RR":
        k = m.cutoff if (fam != "RR" or conv.rr_cutoff == "honour") else None
        reach = _min(k, depth)
        within = np.ones(tg.q.size, bool) if reach is None else tg.first <= reach
        if fam in POSITIONAL_GAIN:
            hit = tg.gain_varied & within
        elif fam == "AP":
            hit = mixed & within
        else:
            hit = mixed & within & (tg.before == 0)
    else:
        cut = _min(m.cutoff, depth)
        if cut is None:  # the whole list counts: no order moves a document out of it
            return out
        inside = cut - tg.first + 1  # the group's rows inside the cut
        hit = mixed & (inside > 0) & (inside < tg.size)
        if fam == "Success":  # a relevant row inside the cut at both ends, or at neither
            hit &= (tg.before == 0) & (inside <= tg.size - tg.rel)
    out[tg.q[hit]] = True
    out &= ~empty
    return out
