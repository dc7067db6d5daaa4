"""Explaining a disagreement between two library entries by the conventions that cause it.

For one case and one measure, each entry gave per-query values (or an error). Two entries
*agree* when they return the same queries with values within tolerance (absolute up to 1,
relative above: :func:`within`), or both fail. For each pair of disagreeing entries A and B, let
D be the axes on which their declared profiles differ.
The explanation is the smallest subset S of D such that the reference under A's profile with the
axes of S switched to B's values gives B's values (or fails where B failed), and B's profile with
S switched back gives A's values (the second half matters when a profile predicts a range, see
:func:`explain_pair`). Subsets are tried by size, then in axis order, so the first found is
minimal.

Before any pair is explained, each entry is checked against its own profile: an entry whose
values the reference does not reproduce under its profile is UNEXPLAINED, and so is a pair for
which no subset of D works. Those are findings: a wrong profile, a missing axis or a library bug.
A class of agreeing entries is represented by its first entry that matches its own profile; when
none does, its disagreements are UNEXPLAINED without a search (an explanation that starts from a
profile the library does not follow would name the wrong axes).

Cost. One case asks the reference for the same (conventions, measure) many times: every entry's
own-profile check, and every subset of every pair's search, for every measure. A
:class:`Reference` holds one case's predictions, memoised by the measure's effective conventions,
so each distinct convention set is evaluated once per case and measure, however many entries and
pairs ask for it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Sequence

from conformance.conventions import AXES, Conventions, format_value
from conformance.errors import EvaluationError, stable_error
from conformance.libs.base import LibraryValues
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared

# Beyond this many differing axes (of those the measure reads) the subset search would cost 2^n
# evaluations; none of our entry pairs come near it, and a pair that did would be reported
# rather than searched.
MAX_DIFFERING_AXES = 12


@dataclass
class Expected:
    """What the reference predicts under one convention set: per-query [lo, hi] (the range over
    tie orders, and under ``rounding=N`` every rounding a value at a half can take:
    ``Evaluation.reported_ranges``), or an error."""

    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str | None = None


def predict(prep: "Prepared | Reference", measure: Measure, conv: Conventions) -> Expected:
    """The reference's prediction for ``measure`` under ``conv`` (memoised when ``prep`` is a
    :class:`Reference`)."""
    if isinstance(prep, Reference):
        return prep.predict(measure, conv)
    try:
        ev = evaluate(prep, None, [measure], conv)
    except EvaluationError as exc:
        return Expected(error=str(exc))
    return Expected(ranges=ev.reported_ranges(measure))


class Reference:
    """The reference on one case: predictions memoised per (effective conventions, measure).

    The key is ``measure.conventions(conv)``, not ``conv``: the reference reads only the
    measure's effective conventions, so profiles that differ only on an axis the measure's name
    fixes share one evaluation. :meth:`prefetch` evaluates many measures under one convention
    set in one call (they share the ranking): the runner uses it for the entries' own profiles,
    which are asked for on every measure an entry supports. A miss in :meth:`predict` (the
    subsets of a search) evaluates the one measure asked for: evaluating the case's other
    measures too would mostly be wasted, since a search rarely visits the same subset twice.
    ``evaluations`` counts the reference calls actually made.
    """

    def __init__(self, prep: Prepared) -> None:
        self.prep = prep
        self._memo: dict[tuple[Conventions, Measure], Expected] = {}
        self.evaluations = 0

    def prefetch(self, measures: Sequence[Measure], conv: Conventions) -> None:
        """Memoise ``measures`` under ``conv`` in one reference call. When that call fails (a
        convention refuses the input for one measure), each is evaluated alone, so one
        measure's error never stands for another's."""
        todo = [m for m in dict.fromkeys(measures) if (m.conventions(conv), m) not in self._memo]
        if len(todo) > 1:
            self.evaluations += 1
            try:
                ev = evaluate(self.prep, None, todo, conv)
            except EvaluationError:
                pass
            else:
                for m in todo:
                    self._memo[(m.conventions(conv), m)] = Expected(ranges=ev.reported_ranges(m))
                return
        for m in todo:
            self.predict(m, conv)

    def predict(self, measure: Measure, conv: Conventions) -> Expected:
        key = (measure.conventions(conv), measure)
        hit = self._memo.get(key)
        if hit is None:
            self.evaluations += 1
            hit = self._memo[key] = predict(self.prep, measure, key[0])
        return hit


def matches(expected: Expected, got: LibraryValues, tol: float) -> bool:
    """Does an entry's output fall within the reference's prediction?"""
    if expected.error is not None or got.error is not None:
        return expected.error is not None and got.error is not None
    if set(expected.ranges) != set(got.per_query):
        return False
    for q, (lo, hi) in expected.ranges.items():
        v = got.per_query[q]
        if math.isnan(v) or math.isnan(lo):
            if not (math.isnan(v) and math.isnan(lo)):
                return False
            continue
        if v < lo - within(tol, lo) or v > hi + within(tol, hi):
            return False
    return True


def within(tol: float, value: float) -> float:
    """The margin ``tol`` allows around ``value``: absolute up to 1 (every normalised measure),
    relative above (a DCG sum), as the differential tests and the paper check compare; a sum of
    2^31 gains is 1e9, where 1e-12 absolute is below one double's spacing."""
    return tol * max(1.0, abs(value))


def agree(a: LibraryValues, b: LibraryValues, tol: float) -> bool:
    """Do two entries' outputs agree (same queries, values within tol, or both errors)?"""
    if a.error is not None or b.error is not None:
        return a.error is not None and b.error is not None
    if set(a.per_query) != set(b.per_query):
        return False
    for q, va in a.per_query.items():
        vb = b.per_query[q]
        if math.isnan(va) or math.isnan(vb):
            if not (math.isnan(va) and math.isnan(vb)):
                return False
        elif abs(va - vb) > within(tol, max(abs(va), abs(vb))):
            return False
    return True


@dataclass
class Explanation:
    between: tuple[str, str]
    axes: list[str] | None  # None: unexplained
    switched: dict[str, tuple[str, str]]  # axis -> (A's value, B's value)
    differing: list[str]  # all axes on which the two profiles differ

    def to_json(self) -> dict:
        return {
            "between": list(self.between),
            "axes": self.axes,
            "values": {a: list(v) for a, v in sorted(self.switched.items())},
        }


def explain_pair(prep: "Prepared | Reference", measure: Measure, name_a: str, prof_a: Conventions,
                 name_b: str, prof_b: Conventions, got_b: LibraryValues, tol: float,
                 got_a: LibraryValues | None = None) -> Explanation:
    """The smallest set of axes that, switched from A's profile to B's, gives B's output.

    With ``got_a`` the set must also work backwards: B's profile with those axes switched back
    to A's values gives A's output. That matters where a profile predicts a range
    (``ties=unspecified``): A's range may already hold B's value, and then switching any axis
    the measure ignores would "explain" the pair; going back from B's point to A's value needs
    the axis that actually separates them.
    """
    differing = prof_a.differing_axes(prof_b)
    # an axis the family does not read cannot change its value, so no smallest set holds it
    # (the named axes of the other families: two profiles differ on many of them)
    read = set(measure.record.axes)
    searched = [ax for ax in differing if ax in read]
    if len(searched) <= MAX_DIFFERING_AXES:
        for size in range(1, len(searched) + 1):
            for subset in itertools.combinations(searched, size):
                conv = prof_a.replace(**{ax: getattr(prof_b, ax) for ax in subset})
                if not matches(predict(prep, measure, conv), got_b, tol):
                    continue
                if got_a is not None:
                    back = prof_b.replace(**{ax: getattr(prof_a, ax) for ax in subset})
                    if not matches(predict(prep, measure, back), got_a, tol):
                        continue
                return Explanation(
                    (name_a, name_b), list(subset),
                    {ax: (format_value(getattr(prof_a, ax)), format_value(getattr(prof_b, ax)))
                     for ax in subset},
                    differing,
                )
    return Explanation((name_a, name_b), None, {}, differing)


@dataclass
class Comparison:
    """One case x measure: every entry's output, who agrees, and why the others differ."""

    case: str
    metric: str
    values: dict[str, float | None]  # entry -> its mean (None when it failed)
    per_query: dict[str, dict[str, float]]
    errors: dict[str, str]
    classes: list[list[str]]  # entries grouped by agreement, in entry order
    explanations: list[Explanation]
    unexplained: list[dict]
    tolerance: float
    known_failures: dict[str, str] = field(default_factory=dict)  # entry -> documented reason

    @property
    def disagreements(self) -> int:
        return len(self.explanations)

    def to_json(self) -> dict:
        return {
            "case": self.case,
            "metric": self.metric,
            "values": {k: _json_number(v) for k, v in sorted(self.values.items())},
            "errors": dict(sorted(self.errors.items())),
            "agreement": self.classes,
            "explanations": [e.to_json() for e in self.explanations if e.axes is not None],
            "unexplained": self.unexplained,
            "known_failures": dict(sorted(self.known_failures.items())),
        }


def _json_number(v: float | None):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def _mean(lv: LibraryValues) -> float | None:
    if lv.error is not None:
        return None
    if lv.mean is not None:
        return lv.mean
    vals = list(lv.per_query.values())
    return sum(vals) / len(vals) if vals else None


def compare(case_name: str, prep: "Prepared | Reference", measure: Measure,
            outputs: dict[str, tuple[Conventions, float, LibraryValues]],
            tol_override: float | None = None, known: dict[str, str] | None = None,
            named: Sequence[str] = ()) -> Comparison:
    """Compare entries' outputs on one case and measure, and explain each disagreement.

    ``outputs``: entry name -> (its declared profile for this measure, its tolerance, output).
    Entries are processed in the order given. ``prep`` may be a :class:`Reference` shared by
    every measure of the case (then its memo is shared too). ``known``: entries that failed with
    a documented library failure (``Entry.known_failure``: entry -> reason). Such a failure is
    what the entry is declared to do, so it is neither a self-profile mismatch nor a
    disagreement to explain; the comparison lists it under ``known_failures``.

    Two classes are explained through their representatives (the first member whose profile
    the reference follows). ``named``: entries the user asked about by name; each pair of them
    in different classes whose members are not those representatives is explained directly
    too (an explanation of its own, so sklearn against trec_eval is said even when
    sklearn:ignore_ties stands for trec_eval's class).
    """
    ref = prep if isinstance(prep, Reference) else Reference(prep)
    known = dict(known or {})
    names = [n for n in outputs if n not in known]
    tol_of = {n: (tol_override if tol_override is not None else outputs[n][1]) for n in names}
    unexplained: list[dict] = []
    faithful: dict[str, bool] = {}
    for n in names:
        prof, _, got = outputs[n]
        exp = ref.predict(measure, prof)
        faithful[n] = matches(exp, got, tol_of[n])
        if not faithful[n]:
            unexplained.append({
                "entry": n,
                "reason": "does not match its own profile",
                "library": _describe(got),
                "reference": _describe_expected(exp),
            })

    classes: list[list[str]] = []
    for n in names:
        for cls in classes:
            rep = cls[0]
            if agree(outputs[rep][2], outputs[n][2], max(tol_of[rep], tol_of[n])):
                cls.append(n)
                break
        else:
            classes.append([n])

    def representative(cls: list[str]) -> str | None:
        # any member will do for the values (they agree); the search needs one whose profile
        # the reference follows
        return next((n for n in cls if faithful[n]), None)

    explanations: list[Explanation] = []
    for ca, cb in itertools.combinations(classes, 2):
        a, b = representative(ca), representative(cb)
        if a is None or b is None:
            a, b = a or ca[0], b or cb[0]
            stray = [c[0] for c, r in ((ca, representative(ca)), (cb, representative(cb)))
                     if r is None]
            differing = outputs[a][0].differing_axes(outputs[b][0])
            explanations.append(Explanation((a, b), None, {}, differing))
            unexplained.append({
                "between": [a, b],
                "reason": (f"{stray[0]} does not match its own profile" if len(stray) == 1
                           else f"{stray[0]} and {stray[1]} do not match their own profiles"),
                "differing_axes": differing,
            })
            continue
        tol = max(tol_of[a], tol_of[b])
        e = explain_pair(ref, measure, a, outputs[a][0], b, outputs[b][0], outputs[b][2], tol,
                         outputs[a][2])
        explanations.append(e)
        if e.axes is None:
            unexplained.append({
                "between": [a, b],
                "reason": "no set of differing axes turns one value into the other",
                "differing_axes": e.differing,
            })
    explained = {frozenset(e.between) for e in explanations}
    class_of = {n: i for i, cls in enumerate(classes) for n in cls}
    asked = [n for n in dict.fromkeys(named) if n in class_of and faithful[n]]
    for a, b in itertools.combinations(asked, 2):
        if class_of[a] == class_of[b] or frozenset((a, b)) in explained:
            continue
        e = explain_pair(ref, measure, a, outputs[a][0], b, outputs[b][0], outputs[b][2],
                         max(tol_of[a], tol_of[b]), outputs[a][2])
        explanations.append(e)
        if e.axes is None:
            unexplained.append({
                "between": [a, b],
                "reason": "no set of differing axes turns one value into the other",
                "differing_axes": e.differing,
            })
    return Comparison(
        case=case_name,
        metric=measure.text,
        values={n: _mean(outputs[n][2]) for n in outputs},
        per_query={n: dict(outputs[n][2].per_query) for n in outputs},
        errors={n: stable_error(outputs[n][2].error) for n in outputs
                if outputs[n][2].error is not None},
        classes=classes,
        explanations=explanations,
        unexplained=unexplained,
        tolerance=max(tol_of.values()) if tol_of else 0.0,
        known_failures=known,
    )




def _describe(got: LibraryValues) -> dict:
    if got.error is not None:
        return {"error": stable_error(got.error)}
    return {"per_query": {q: _json_number(v) for q, v in sorted(got.per_query.items())}}


def _describe_expected(exp: Expected) -> dict:
    if exp.error is not None:
        return {"error": exp.error}
    return {"per_query": {q: [_json_number(lo), _json_number(hi)] for q, (lo, hi) in sorted(exp.ranges.items())}}


__all__ = ["AXES", "Comparison", "Explanation", "Reference", "compare", "explain_pair", "predict", "matches", "agree"]
