"""Library entries as evidence for a reported value: each entry's live value and its profile's.

An entry reproduces the reported values when it computes every reported measure and each value
falls in its interval. The entry's value is the live library's when it is installed (its own
mean when it reports one, else the mean of its per-query values): that is the number the library
prints on this input. Without the library, its declared profile decides: the reference under the
profile (the range over tie orders under ``ties=unspecified``), within the entry's tolerance,
unless the entry declares that its library refuses this input for the measure
(``Entry.known_failure``): then the profile gives no value, as the library would give none.
Both are reported; a live value that its profile does not predict is flagged as a finding.

An entry may declare a different profile for each measure (implicit averages its ndcg and map
over users but its precision micro): ``EntryCheck.profiles_by_measure`` says how they differ,
so that a verdict can tell an entry whose values no single convention set holds from a library
the sweep does not describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from conformance.conventions import Conventions, format_value
from conformance.io.data import Qrels, Run
from conformance.errors import EvaluationError
from conformance.libs.base import longest_list
from conformance.measures import FAMILIES, Measure
from conformance.paper.reported import Reported
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.reference.sweep import aggregate


@dataclass
class EntryMetric:
    """One entry on one reported measure."""

    supported: bool
    profile: tuple[float, float] | None = None  # reference under the profile: [lo, hi]
    profile_error: str | None = None
    live: float | None = None  # the live library's value (its mean)
    live_error: str | None = None
    live_per_query: dict[str, float] | None = None
    profile_per_query: dict[str, tuple[float, float]] | None = None
    reproduces: bool = False
    agrees_with_profile: bool | None = None
    tie_range_covers: bool = False  # an order of tied documents other than the live one fits

    @property
    def value(self) -> float | None:
        """The value shown: the live one when the library ran, none when it ran and refused
        (its profile's number is not the library's), else the profile's (its low end)."""
        if self.live is not None:
            return self.live
        if self.live_error is not None:
            return None
        if self.profile is not None and not math.isnan(self.profile[0]):
            return self.profile[0]
        return None


@dataclass
class EntryCheck:
    """One library entry against the reported values: ``decided_by`` "live" (the installed
    library's own output) or "profile" (the reference under its declared profile);
    ``consistent`` when it computes every reported measure and reproduces every value."""

    name: str
    available: bool
    decided_by: str  # "live" or "profile"
    metrics: dict[str, EntryMetric]
    consistent: bool
    not_run: str | None = None  # why the live library was not run, when it was not
    # how the entry's declared profiles differ across the reported measures ("Rcap@3:
    # mean=micro"), or None when one profile serves them all
    profiles_by_measure: str | None = None

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        return {
            "available": self.available,
            "decided_by": self.decided_by,
            "not_run": self.not_run,
            "consistent": self.consistent,
            "profiles_by_measure": self.profiles_by_measure,
            "metrics": {
                k: {
                    "supported": e.supported,
                    "profile": None if e.profile is None else [num(e.profile[0]), num(e.profile[1])],
                    "profile_error": e.profile_error,
                    "live": num(e.live),
                    "live_error": e.live_error,
                    "reproduces": e.reproduces,
                    "agrees_with_profile": e.agrees_with_profile,
                    "tie_range_covers": e.tie_range_covers,
                }
                for k, e in sorted(self.metrics.items())
            },
        }


def _library_mean(lv) -> float | None:
    if lv.error is not None:
        return None
    if lv.mean is not None:
        return float(lv.mean)
    vals = list(lv.per_query.values())
    return float(np.mean(vals)) if vals else None


# the query sets that _profile_value selects from the shared evaluation (every judged query)
_SHARED_QUERY_SETS = ("run", "qrels", "raise")


def _shared_profile(conv: Conventions) -> Conventions:
    """The profile ``_reference_run`` evaluates for ``conv``: the aggregation axes opened up
    (every judged query, empty queries left out), so that profiles differing only in
    ``empty_query`` and ``query_set`` share one evaluation. Not under ``ties=unspecified``,
    where each order settles its own empty queries before the range is taken."""
    if conv.ties == "unspecified":
        return conv
    return conv.replace(empty_query="skip", query_set="qrels")


def _reference_run(prep: Prepared, measures: list[Measure], conv: Conventions):
    """``evaluate`` under ``_shared_profile(conv)``: the Evaluation or the error text."""
    try:
        return evaluate(prep, None, measures, _shared_profile(conv))
    except EvaluationError as exc:
        return str(exc)


def _profile_value(prep: Prepared, ev, m: Measure, conv: Conventions):
    """(aggregate lo, hi, per-query ranges) of ``m`` under ``conv`` from ``_reference_run``'s
    result (as ``evaluate(prep, None, [m], conv)`` would give them), or the error text."""
    if conv.ties == "unspecified" and not isinstance(ev, str):
        return ev.aggregate(m), ev.aggregate(m, upper=True), ev.ranges(m)
    if ({"empty_query", "query_set"} & {a for a, _ in m.overrides}
            or m.conventions(conv).ties == "unspecified"
            or conv.query_set not in _SHARED_QUERY_SETS or conv.rounding is not None):
        # the name fixes an aggregation axis or the tie rule, or the profile aggregates in a
        # way the shared evaluation does not (a refusal of run-only queries, every run query
        # averaged, rounding): nothing to share
        try:
            ev = evaluate(prep, None, [m], conv)
        except EvaluationError as exc:
            return str(exc)
        return ev.aggregate(m), ev.aggregate(m, upper=True), ev.ranges(m)
    if isinstance(ev, str):
        return ev
    sets_differ = bool((prep.in_run != prep.in_qrels).any())
    in_run = prep.in_run[prep.in_qrels]
    is_sum = m.aggregate == "sum"
    empty = ~ev.counted[m] if not is_sum else np.zeros(ev.qids.size, bool)
    select = in_run if conv.query_set == "run" else None
    try:
        a, b, qlo, qhi, counted = aggregate(ev.per_query[m], ev.upper[m], empty, conv.empty_query,
                                             select, is_sum, sets_differ, conv.query_set, m.text)
    except EvaluationError as exc:
        return str(exc)
    qids = ev.qids if select is None else ev.qids[select]
    per_q = {q: (x, y) for q, x, y, c in zip(qids.tolist(), qlo.tolist(), qhi.tolist(),
                                             counted.tolist()) if c}
    return a, b, per_q


@dataclass
class EntryEvidence:
    """What is known of one entry on the measures asked about, whatever values are reported:
    per measure, whether it computes it, the reference under its profile (aggregate lo, hi and
    per-query ranges, or the error text), and the live library's output (None: not run)."""

    name: str
    tolerance: float
    available: bool  # the live library was run
    supported: dict[Measure, bool]
    profile: dict[Measure, Any]
    live: dict[Measure, Any]
    not_run: str | None = None  # why the live library was not run (None: it was, or live=False)
    profiles_by_measure: str | None = None  # EntryCheck.profiles_by_measure


def gather_entries(prep: Prepared, qrels: Qrels, run: Run, measures: Sequence[Measure],
                   entries: Sequence, live: bool = True,
                   progress: Callable[[str, int, int], None] | None = None) -> list[EntryEvidence]:
    """Evaluate every entry's profile with the reference (one ``evaluate`` per distinct profile,
    aggregation axes apart) and run every installed library once on all its measures."""
    measures = list(dict.fromkeys(measures))
    plan: dict[tuple[str, Measure], Conventions] = {}
    wanted: dict[Conventions, list[Measure]] = {}
    for e in entries:
        for m in measures:
            if e.supports(m):
                p = e.profile(m)
                plan[(e.name, m)] = p
                ms = wanted.setdefault(_shared_profile(p), [])
                if m not in ms:
                    ms.append(m)
    runs = {}
    for i, (p, ms) in enumerate(wanted.items()):
        if progress:
            progress("library profiles", i, len(wanted))
        runs[p] = _reference_run(prep, ms, p)  # p is already shared
    values: dict[tuple[Conventions, Measure], Any] = {}
    for (name, m), p in plan.items():
        if (p, m) not in values:
            ev = runs[_shared_profile(p)]
            values[(p, m)] = _profile_value(prep, ev, m, p)
    out = []
    longest = longest_list(run)
    for i, e in enumerate(entries):
        if progress:
            progress(f"library {e.name}", i, len(entries))
        available = live and e.available()
        supported = [m for m in measures if e.supports(m)]
        got = e.evaluate(qrels, run, supported) if available and supported else {}
        # the loosest of its measures' tolerances on these lists (float32 sums grow with them)
        tolerance = max([e.tolerance] + [e.tolerance_for(m, longest) for m in supported])
        # judged by its profile, an entry whose library refuses this input gives no value
        refused = {} if available else {m: r for m in supported
                                         if (r := e.known_failure(qrels, run, m)) is not None}
        out.append(EntryEvidence(
            e.name, tolerance, available,
            {m: m in supported for m in measures},
            {m: refused[m] if m in refused else values[(plan[(e.name, m)], m)]
             for m in supported},
            {m: got.get(m) for m in supported} if available else {},
            profiles_by_measure=_profiles_by_measure({m: plan[(e.name, m)] for m in supported}),
        ))
    return out


def _profiles_by_measure(profiles: dict[Measure, Conventions]) -> str | None:
    """How one entry's profiles of several measures differ: for each measure whose profile is
    not the most common one, ``measure: axis=value`` on the axes its family reads where it
    differs from it; None when no measure's profile differs so."""
    if len(set(profiles.values())) < 2:
        return None
    counts: dict[Conventions, int] = {}
    for p in profiles.values():
        counts[p] = counts.get(p, 0) + 1
    common = max(counts, key=lambda p: counts[p])  # first of the most common, in measure order
    parts = []
    for m, p in profiles.items():
        axes = [a for a in p.differing_axes(common) if a in FAMILIES[m.family].axes]
        if axes:
            parts.append(f"{m.text}: " + ", ".join(f"{a}={format_value(getattr(p, a))}"
                                                   for a in axes))
    return "; ".join(parts) or None


# Why an entry's library was not run live (EntryEvidence.not_run)
NOT_NEEDED = "not run: by its declared profile it cannot reproduce every value"
TIE_ORDER = ("not run: by its declared profile some order of tied documents reproduces the "
             "values, and the library's own order is unspecified")


def ranged(check: "EntryCheck") -> bool:
    """Whether a profile's verdict rests on a range over tie orders (some reported measure's
    profile value is a range, not one number)."""
    return any(m.profile is not None and m.profile[0] != m.profile[1] for m in check.metrics.values())


def confirm_live(evidence: Sequence[EntryEvidence], entries: Sequence, confirm: Sequence[str],
                 qrels: Qrels, run: Run, measures: Sequence[Measure],
                 timeout: float | None = None, tie_order: Sequence[str] = ()) -> None:
    """Run the libraries of the entries named in ``confirm`` live, all at once, each in a
    worker process of its own, and record their outputs in ``evidence`` (in place); every
    other entry is marked as judged by its profile, with why its library was not run
    (``tie_order``: those whose profile reproduces the values only through some order of tied
    documents, which only the library's own run could settle)."""
    from conformance.runner import DEFAULT_TIMEOUT, Subject, evaluate_at_once

    by_name = {e.name: e for e in entries}
    wanted = [by_name[n] for n in dict.fromkeys(confirm) if n in by_name]
    subject = Subject("input", qrels, run, list(dict.fromkeys(measures)))
    status, outputs = evaluate_at_once(wanted, subject, DEFAULT_TIMEOUT if timeout is None else timeout)
    for ev in evidence:
        if ev.name not in status:
            ev.not_run = TIE_ORDER if ev.name in tie_order else NOT_NEEDED
        elif not status[ev.name].available:
            ev.not_run = f"not run: {status[ev.name].describe()}"
        else:
            got = outputs.get(ev.name, {})
            ev.available = True
            ev.live = {m: got.get(m) for m in ev.profile}


def judge_entries(evidence: Sequence[EntryEvidence], reported: Sequence[Reported]) -> list[EntryCheck]:
    """Which entries reproduce every reported value (see the module docstring)."""
    measures = list(dict.fromkeys(r.measure for r in reported))
    by_metric: dict[Measure, list[Reported]] = {}
    for r in reported:
        by_metric.setdefault(r.measure, []).append(r)
    out = []
    for ev in evidence:
        metrics: dict[str, EntryMetric] = {}
        consistent = True
        for m in measures:
            em = EntryMetric(supported=ev.supported.get(m, False))
            metrics[m.text] = em
            if not em.supported:
                consistent = False
                continue
            pv = ev.profile[m]
            if isinstance(pv, str):
                em.profile_error = pv
            else:
                em.profile = (pv[0], pv[1])
                em.profile_per_query = pv[2]
            if ev.available:
                lv = ev.live[m]
                em.live_error = lv.error
                em.live = _library_mean(lv)
                em.live_per_query = dict(lv.per_query) if lv.error is None else None
            ok = all(_entry_reproduces(em, r, ev.available, ev.tolerance) for r in by_metric[m])
            em.reproduces = ok
            consistent &= ok
            if ev.available and em.live is not None and em.profile is not None:
                t = ev.tolerance * max(1.0, abs(em.live))
                em.agrees_with_profile = bool(em.profile[0] - t <= em.live <= em.profile[1] + t)
                aggregates = [r for r in by_metric[m] if r.qid is None]
                if em.profile[0] != em.profile[1] and not ok and aggregates:
                    em.tie_range_covers = all(r.meets(em.profile[0], em.profile[1]) for r in aggregates)
            elif ev.available and em.live_error is not None:
                em.agrees_with_profile = em.profile_error is not None
        if ev.not_run == TIE_ORDER:  # undecided: some order would, the library's is unknown
            consistent = False
        out.append(EntryCheck(ev.name, ev.available, "live" if ev.available else "profile",
                              metrics, consistent, ev.not_run, ev.profiles_by_measure))
    return out


def _entry_reproduces(em: EntryMetric, r: Reported, live: bool, tol: float) -> bool:
    if live:
        if r.qid is None:
            return r.contains(em.live)
        v = (em.live_per_query or {}).get(r.qid)
        return r.contains(v)
    if r.qid is None:
        if em.profile is None:
            return False
        return r.meets(em.profile[0], em.profile[1], tol * max(1.0, abs(r.value)))
    rng = (em.profile_per_query or {}).get(r.qid)
    return rng is not None and r.meets(rng[0], rng[1], tol * max(1.0, abs(r.value)))
