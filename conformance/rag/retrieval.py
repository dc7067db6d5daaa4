"""The retrieval side of ``conformance rag``: every measure under the chosen profile, and under
each library entry's declared conventions.

The measures at each cutoff k of ``--k``: ``P@k``, ``R@k``, ``hit_rate@k`` (Success@k: 1 when a
relevant document is in the top k), ``nDCG@k``, ``T(alpha=0.5)@k`` and ``Fe@k``; and without a
cutoff ``MRR`` (RR over the whole list) and ``AP``. The correlation study adds ``F1@k`` and
``T(alpha)@k`` for every alpha of :data:`ALPHA_GRID`. They are computed by
``conformance.reference.evaluate``, never here.

The range of a measure "across the library entries' conventions" is the reference evaluated
under each entry's declared profile for that measure, ``entry.profile(measure)`` with the
measure's own overrides, on this input; the libraries themselves are not called (their
agreement with their profiles is what ``conformance run`` and the differential tests check).
No library computes T or Fe, and some entries have no F1: for those the entry's conventions
for ``P@k`` are applied (marked ``borrowed``). An entry whose conventions refuse the input
(``query_set=raise`` when a variant answered only some gold queries, ``single_document=raise``
on a one-document list, ...) is recorded with its reason and left out of the range. Under
``ties=unspecified`` an entry gives the range from the worst to the best order of tied
documents; both ends enter the range.

Per-query values are aligned with the gold queries (sorted); a query a convention set does not
count has ``counted`` False (its value is NaN).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure, parse_measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared

ALPHA_GRID = (0.1, 0.25, 0.5, 0.75, 0.9)
TABLE_ALPHA = 0.5
BORROWED_FAMILIES = ("T", "Fe", "F1")


def table_measures(ks: Sequence[int]) -> list[Measure]:
    """The measures of the variant table, in display order."""
    names = []
    for k in ks:
        names += [f"P@{k}", f"R@{k}", f"hit_rate@{k}", f"nDCG@{k}", f"T(alpha={TABLE_ALPHA})@{k}", f"Fe@{k}"]
    names += ["MRR", "AP"]
    return _sorted_by_family([parse_measure(n) for n in names], ks)


def study_measures(ks: Sequence[int]) -> list[Measure]:
    """The measures the correlation study ranks: the table's, F1@k and T at every alpha."""
    out = list(table_measures(ks))
    have = {m.text for m in out}
    for k in ks:
        for name in [f"F1@{k}"] + [f"T(alpha={a})@{k}" for a in ALPHA_GRID]:
            if name not in have:
                out.append(parse_measure(name))
    return _sorted_by_family(out, ks)


_ORDER = ("P", "R", "Success", "nDCG", "F1", "Fe", "T", "RR", "AP")


def _sorted_by_family(measures: list[Measure], ks: Sequence[int]) -> list[Measure]:
    def key(m: Measure):
        return (_ORDER.index(m.family), m.cutoff or 0, m.params)  # T by its parameter

    return sorted(measures, key=key)


@dataclass
class Values:
    """One convention set's per-query values of one measure, aligned with the gold queries."""

    lower: np.ndarray
    upper: np.ndarray
    counted: np.ndarray

    def mean(self, upper: bool = False) -> float:
        v = (self.upper if upper else self.lower)[self.counted]
        return float(v.mean()) if v.size else float("nan")


@dataclass
class EntryValues:
    """Per measure, per library entry: its values, or why its conventions refuse the input."""

    values: dict[Measure, dict[str, Values]] = field(default_factory=dict)
    refused: dict[Measure, dict[str, str]] = field(default_factory=dict)
    borrowed: dict[Measure, list[str]] = field(default_factory=dict)  # entries using P@k's profile
    conventions: dict[Measure, dict[str, Conventions]] = field(default_factory=dict)


def entry_conventions(entry, m: Measure) -> tuple[Conventions, bool] | None:
    """The conventions under which ``entry`` computes ``m`` (and whether they are borrowed from
    its P@k), or None when it computes neither."""
    if entry.supports(m):
        return m.conventions(entry.profile(m)), False
    if m.family in BORROWED_FAMILIES and m.cutoff is not None:
        p = Measure("P", m.cutoff)
        if entry.supports(p):
            return m.conventions(entry.profile(p)), True
    return None


def profile_conventions(name: str, m: Measure) -> Conventions:
    """The conventions profile ``name`` computes ``m`` under (``conformance.profiles``: a library
    entry's declared profile for that measure, or a command-line profile such as trec_eval10),
    before the axes the measure's own name fixes."""
    from conformance.profiles import profile

    return profile(name, m)


def evaluate_profile(prep: Prepared, measures: Sequence[Measure], name: str, qids: np.ndarray) -> dict[Measure, Values]:
    """Every measure under profile ``name`` (one evaluation per distinct convention set)."""
    groups: dict[Conventions, list[Measure]] = {}
    for m in measures:
        groups.setdefault(profile_conventions(name, m), []).append(m)
    out: dict[Measure, Values] = {}
    for conv, group in groups.items():
        out.update(evaluate_aligned(prep, group, conv, qids))
    return out


def evaluate_aligned(prep: Prepared, measures: Sequence[Measure], conv: Conventions,
                     qids: np.ndarray) -> dict[Measure, Values]:
    """The reference's values under ``conv``, aligned with ``qids`` (sorted). Raises
    EvaluationError where ``conv`` refuses the input."""
    ev = evaluate(prep, None, list(measures), conv)
    pos = np.searchsorted(qids, ev.qids)
    if ev.qids.size and (qids.size == 0 or not np.array_equal(qids[np.minimum(pos, qids.size - 1)], ev.qids)):
        raise ValueError("evaluate_aligned: the evaluation holds queries outside qids")  # callers restrict the run
    out = {}
    for m in measures:
        lo = np.full(qids.size, np.nan)
        hi = np.full(qids.size, np.nan)
        counted = np.zeros(qids.size, bool)
        lo[pos], hi[pos], counted[pos] = ev.per_query[m], ev.upper[m], ev.counted[m]
        lo[~counted] = np.nan
        hi[~counted] = np.nan
        out[m] = Values(lo, hi, counted)
    return out


def blank(values: dict, mask: np.ndarray) -> dict:
    """``values`` with the queries of ``mask`` not counted (NaN): for queries no measure applies to."""
    if not mask.any():
        return values
    out = {}
    for m, v in values.items():
        lo, hi, counted = v.lower.copy(), v.upper.copy(), v.counted.copy()
        lo[mask], hi[mask], counted[mask] = np.nan, np.nan, False
        out[m] = Values(lo, hi, counted)
    return out


def under_entries(prep: Prepared, measures: Sequence[Measure], entries: Iterable, qids: np.ndarray) -> EntryValues:
    """Every entry's values of every measure it (or its P@k) computes. Entries sharing a
    convention set share one evaluation."""
    out = EntryValues()
    by_conv: dict[Conventions, list[tuple[Measure, str]]] = {}
    for e in entries:
        for m in measures:
            found = entry_conventions(e, m)
            if found is None:
                continue
            conv, borrowed = found
            by_conv.setdefault(conv, []).append((m, e.name))
            out.conventions.setdefault(m, {})[e.name] = conv
            if borrowed:
                out.borrowed.setdefault(m, []).append(e.name)
    for conv, pairs in by_conv.items():
        group = list(dict.fromkeys(m for m, _ in pairs))
        try:
            values = evaluate_aligned(prep, group, conv, qids)
            failed: dict[Measure, str] = {}
        except EvaluationError:
            values, failed = {}, {}
            for m in group:  # one measure may refuse where the others do not
                try:
                    values.update(evaluate_aligned(prep, [m], conv, qids))
                except EvaluationError as exc:
                    failed[m] = str(exc)
        for m, name in pairs:
            if m in values:
                out.values.setdefault(m, {})[name] = values[m]
            else:
                out.refused.setdefault(m, {})[name] = failed[m]
    return out


@dataclass
class Spread:
    """The aggregate of one measure across entries' conventions: its ends and who sits there."""

    low: float
    high: float
    low_entries: list[str]
    high_entries: list[str]
    entries: dict[str, tuple[float, float]]  # entry -> (mean at the worst, at the best tie order)
    refused: dict[str, str]
    borrowed: list[str]


def spread(ev: EntryValues, m: Measure, decimals: int = 12) -> Spread | None:
    """None when no entry computes ``m``. Ends are compared after rounding to ``decimals`` so
    that the same value reached by different summation orders counts as one."""
    vals = ev.values.get(m, {})
    means = {name: (v.mean(), v.mean(upper=True)) for name, v in vals.items()}
    finite = {n: mm for n, mm in means.items() if not np.isnan(mm[0])}
    if not finite:
        if not means and not ev.refused.get(m):
            return None
        return Spread(float("nan"), float("nan"), [], [], means, dict(ev.refused.get(m, {})),
                      list(ev.borrowed.get(m, [])))
    low = min(lo for lo, _ in finite.values())
    high = max(hi for _, hi in finite.values())
    at_low = sorted(n for n, (lo, _) in finite.items() if round(lo, decimals) == round(low, decimals))
    at_high = sorted(n for n, (_, hi) in finite.items() if round(hi, decimals) == round(high, decimals))
    return Spread(low, high, at_low, at_high, means, dict(ev.refused.get(m, {})), list(ev.borrowed.get(m, [])))
