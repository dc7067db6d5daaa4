"""Differential property tests: every library entry against the reference under its own profile.

For every entry of ``conformance.libs.all_entries()`` and every measure it supports from a fixed
list, generated cases (``tests/support/strategies.py``) must satisfy the contract of the design:

- the entry's per-query values equal ``conformance.reference.evaluate(qrels, run, [m],
  entry.profile(m))`` within ``entry.tolerance``, on the same query ids; under
  ``ties=unspecified`` the library's value lies in the reference's range [per_query, upper];
- or both refuse the case: the library's error is recorded in ``LibraryValues.error`` and the
  reference raises ``EvaluationError``;
- when the library reports its own mean, it equals the reference's aggregate.

Tolerance: ``|library - reference| <= tolerance * max(1, |reference|)``: the entry's tolerance is
absolute for values up to 1 (every normalised measure) and relative above (DCG sums), because a
float32 library's error grows with the magnitude of what it sums.

Each (entry, measure family, cutoff or not) is tested twice: on clean labels (0..4), and on cases
with at least one negative or fractional label on a retrieved document, which is where profiles
that refuse such labels (``negative_labels=raise``, ``label_type=raise``) must be seen to refuse.

A failure prints the smallest failing case hypothesis found, as Python that rebuilds it, with
both sides' values and the profile.

Examples per (entry, measure) group: ``CONFORMANCE_FUZZ_EXAMPLES`` (default 24: two thirds on
clean labels, one third on negative or fractional ones; a third of that for LightGBM, whose
calls go through a worker process; half for a library's later entries, its variants, see
``VARIANT``). Long fuzzing, N cases per entry, each checked on every
measure the entry supports (one cutoff drawn per case)::

    CONFORMANCE_FUZZ=10000 python -m pytest -s tests/properties/test_differential.py -k test_fuzz_entry

(``CONFORMANCE_FUZZ_FAMILIES=Bpref,ERR`` limits the long fuzz to those families.)

A library that is not installed FAILS its tests, unless named (library or entry name, comma
separated) in ``CONFORMANCE_ALLOW_MISSING``, e.g. ``CONFORMANCE_ALLOW_MISSING=torchmetrics``; then
its tests are reported as skipped, never as passed.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from conformance import isolation
from conformance.errors import EvaluationError
from conformance.libs import all_entries
from conformance.libs.base import Entry, LibraryValues, ask_library, longest_list
from conformance.measures import Measure
from conformance.reference import Evaluation, evaluate
from conformance.reference.prepare import Prepared

from conftest import require_available as _require_available
from strategies import Case, cases

# Examples per (entry, measure) group: two thirds on clean labels, one third on unusual ones.
# The default keeps CI small: about 14 groups per entry x 24 = a few hundred cases per entry.
# Each library's tests run on one worker, in file order (pytest -n 2 --dist loadgroup, a group
# per library): the tolerance-fit test reads the gaps the comparisons before it measured in the
# same process, and one library's isolation workers start once; the libraries spread over the
# workers.
def _grouped(e) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"differential-{e.library or e.name}")

EXAMPLES = int(os.environ.get("CONFORMANCE_FUZZ_EXAMPLES", "24"))
# Libraries whose every call is slow (LightGBM goes through a worker process, one call per
# query): their groups run EXAMPLES // SLOW[library] examples.
SLOW = {"lightgbm": 3}
CLEAN_EXAMPLES = max(1, EXAMPLES - EXAMPLES // 3)
UNUSUAL_EXAMPLES = max(1, EXAMPLES // 3)

# (family, takes a cutoff, parameters, axes the name fixes): the measures every entry is asked
# about. The parameters are the ones the libraries' names use most (RBP: ir_measures' 0.8,
# trec_eval's 0.9; the C/W/L gains over labels 0..4) and a second value where the formula has
# an edge (a recall level between trec_eval's two roundings, a multiple of R above 1).
_CWL4 = (("min_rel", 0), ("max_rel", 4))
FAMILIES = [
    ("nDCG", True), ("nDCG", False), ("DCG", True), ("DCG", False),
    ("AP", False), ("AP", True), ("RR", False), ("RR", True), ("GranularRR", False),
    ("GranularRR", True),
    ("P", True), ("R", True), ("R", False), ("Success", True), ("Rprec", False), ("F1", True),
    ("P", False), ("F1", False), ("F1", False, (("beta", 0.5),)), ("SetAP", False),
    ("RelP", True), ("RelP", False), ("Hits", True), ("Hits", False),
    ("AP", False, (), (("mean", "geometric"),)), ("Bpref", False),
    ("Bpref", False, (), (("mean", "geometric"),)), ("infAP", False),
    ("Judged", True), ("Judged", False), ("Unjudged", True),
    ("IPrec", False, (("recall", 0.3),)), ("IPrec", False, (("recall", 0.5),)), ("IPrecAvg", False),
    ("RprecMult", False, (("multiple", 0.6),)), ("RprecMult", False, (("multiple", 1.4),)),
    ("Utility", False), ("binG", False), ("G", False), ("nDCGRel", False), ("RnDCG", False),
    ("NumNonRelJudgedRet", False), ("ERR", True),
    ("RBP", False, (("p", 0.8),)), ("RBP", False, (("p", 0.9),)), ("RBPResid", False, (("p", 0.9),)),
    ("SDCG", True, _CWL4), ("NERR8", True, _CWL4), ("NERR9", True, _CWL4),
    ("NERR10", False, (("p", 0.9),) + _CWL4), ("NERR11", False, (("T", 1.0),) + _CWL4),
    ("INST", False, (("T", 1.0),) + _CWL4), ("INSQ", False, (("T", 1.0),) + _CWL4),
    ("BPM", True, (("T", 1.0),) + _CWL4),
    ("FallOut", True), ("FallOut", False), ("AUROC", False), ("AUROC", True),
    ("RecallAtPrecision", True, (("min_precision", 0.5),)), ("RecallAtPrecision", False),
    ("Rcap", True), ("Hole", True),
]
FAMILIES = [f + ((), ())[: 4 - len(f)] for f in FAMILIES]
# gdeval reads numeric query ids only: its groups draw those
NUMERIC_QIDS = {"ERR"}


def measure_of(family: str, k: int | None, params: tuple, overrides: tuple) -> Measure:
    return Measure(family, k, overrides, params=params)


def _label(family: str, with_cutoff: bool, params: tuple, overrides: tuple) -> str:
    text = ",".join(f"{a}={v}" for a, v in params + overrides)
    return family + (f"({text})" if text else "") + ("@k" if with_cutoff else "")
# Cutoffs: small ones, ones beyond every generated list (<= 15 documents), and 32 (XGBoost's
# plain ndcg is nDCG@32 and supports nothing else).
CUTOFFS = (1, 3, 5, 10, 20, 32)

ENTRIES = all_entries()
# Libraries whose every call costs a job on a JVM (Spark: about a second a job on a loaded
# two-core machine): checked by test_batched_entry, many cases per call, not one case a call.
BATCHED = {"spark"}


def _groups() -> list:
    out = []
    for e in ENTRIES:
        if e.library in BATCHED:
            continue
        for family, with_cutoff, params, overrides in FAMILIES:
            if with_cutoff:
                ks = tuple(k for k in CUTOFFS if e.supports(measure_of(family, k, params, overrides)))
                if not ks:
                    continue
            else:
                if not e.supports(measure_of(family, None, params, overrides)):
                    continue
                ks = (None,)
            spec = (family, params, overrides)
            out.append(pytest.param(e, spec, ks, marks=_grouped(e),
                                    id=f"{e.name}-{_label(family, with_cutoff, params, overrides)}"))
    return out


GROUPS = _groups()


def _entry_params(entries) -> list:
    return [pytest.param(e, id=e.name, marks=_grouped(e)) for e in entries]

# The default run (CI's) draws the same cases every time: its minimums of value comparisons and
# the ceilings on known failures are then facts about fixed cases, not a chance of a red build
# (torchmetrics:error refuses about 76% of RecallAtPrecision cases against its ceiling of 85%:
# 16 random cases exceed it about one run in five). Asking for more examples
# (CONFORMANCE_FUZZ_EXAMPLES) or the long fuzz (CONFORMANCE_FUZZ) draws new cases each run.
DERANDOMIZE = not (os.environ.get("CONFORMANCE_FUZZ_EXAMPLES") or os.environ.get("CONFORMANCE_FUZZ"))


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=DERANDOMIZE,
        deadline=None,  # library calls (a LightGBM worker's first start) vary a lot in time
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


@pytest.mark.parametrize("e", _entry_params(ENTRIES))
def test_entry_is_available(e: Entry) -> None:
    _require_available(e)
    assert e.version(), f"{e.name}: installed but its distribution {e.distribution!r} has no version"


def _close(a: float, b: float, tol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def _within(v: float, lo: float, hi: float, tol: float) -> bool:
    if math.isnan(v) or math.isnan(lo) or math.isnan(hi):
        return math.isnan(v) and math.isnan(lo) and math.isnan(hi)
    return lo - tol * max(1.0, abs(lo)) <= v <= hi + tol * max(1.0, abs(hi))


# The kinds of refusal, each read from the reference's message (its first pattern) and from a
# library's (its second), with the axis value that lifts the reference's refusal of that kind.
# Both sides refusing passes only when their reasons are of one kind: the same kind, or, on a
# case with two reasons (a negative label in a one-document list), the library's kind is one
# the reference also refuses once its own first reason is lifted. A library's text that names
# no kind of its own (a division by zero) is read as each kind in AMBIGUOUS.
REFUSAL_KINDS: dict[str, tuple[str, str, tuple[str, str]]] = {
    "negative label": (r"\(negative_labels=raise\)", r"negative", ("negative_labels", "keep")),
    # pytrec_eval: "Expected relevance to be integer."; XGBoost: "label_is_integer"; LightGBM:
    # "label should be int type"
    "fractional label": (r"\(label_type=raise", r"integer|int type", ("label_type", "float")),
    # pytrec_eval.parse_run's bare `assert object_id not in run[query_id]` (the only assert the
    # adapters reach, and only on such a run); trectools: "Duplicated docid in line N."
    "document listed twice": (r"listed twice", r"^AssertionError: $|Duplicated docid|twice",
                              ("duplicates", "first")),
    # sklearn's ndcg_score: "only meaningful when there is more than 1 document"; its
    # label-ranking metrics read a one-column array as another format ("Only (...) formats")
    "one-document list": (r"\(single_document=raise\)",
                          r"more than 1 document|'multilabel-indicator'",
                          ("single_document", "score")),
    # ranx: "Qrels and Run query ids do not match"; BEIR's and MTEB's metric functions look a
    # run query up in the qrels (KeyError naming it); MTEB divides by the queries it scored
    # (ZeroDivisionError when no run query is judged)
    "query sets differ": (r"query_set=(raise|\w+_strict)",
                          r"query ids do not match|^KeyError: '", ("query_set", "run")),
    "no relevant document": (r"empty_query=raise", r"no relevant|no positive|empty",
                             ("empty_query", "zero")),
}


# A library's text -> the kinds it may be. MTEB and BEIR divide by the queries they scored or
# by a query's relevant documents (ZeroDivisionError: which one, the text does not say); gdeval
# (ir_measures) exits with an error status on a judgment that is not an integer
# (bin/gdeval.pl: /^-?[0-9]+$/), its other deaths being known failures.
AMBIGUOUS = {
    r"^ZeroDivisionError": ("query sets differ", "no relevant document"),
    r"^CalledProcessError: Command '\['perl'": ("fractional label",),
    # a query the family cannot score (empty_query=raise's "empty"): torchmetrics' "a query with
    # no positive target" (no negative one, for FallOut); LlamaIndex's "expected ids must be
    # provided" (no relevant document)
    r"query with no (positive|negative) target|expected ids must be provided":
        ("no relevant document",),
    # XGBoost: "label must be either 0 or positive integer"
    r"label must be either 0 or positive integer": ("negative label", "fractional label"),
}


def refusal_kind(text: str, side: int) -> str | None:
    """The kind of a refusal's text (``side`` 0: the reference's message, 1: a library's)."""
    for kind, patterns in REFUSAL_KINDS.items():
        if re.search(patterns[side], text, flags=re.IGNORECASE):
            return kind
    return None


def library_kinds(text: str) -> tuple[str, ...]:
    """The kinds a library's refusal may be of (none: of no known kind)."""
    for pattern, kinds in AMBIGUOUS.items():
        if re.search(pattern, text):
            return kinds
    kind = refusal_kind(text, 1)
    return (kind,) if kind else ()


def _reference_refuses_as(kind: str | None, case: Case, m: Measure, conv, ref_error: str) -> bool:
    """Whether the reference, under ``conv``, refuses ``case`` for a reason of ``kind``: its own
    first reason, or one it gives once the reasons before it are lifted."""
    seen = []
    while True:
        own = refusal_kind(ref_error, 0)
        seen.append(own)
        if own is None or kind is None:
            return False
        if own == kind:
            return True
        axis, lifted = REFUSAL_KINDS[own][2]
        conv = conv.replace(**{axis: lifted})
        try:
            evaluate(case.qrels, case.run, [m], conv)
        except EvaluationError as exc:
            ref_error = str(exc)
        else:
            return False
        if len(seen) > len(REFUSAL_KINDS):
            return False


@dataclass
class Outcome:
    """What one comparison was: ``kind`` is "values" (at least one query's value compared),
    "no values" (both computed, no query to compare), "refused" (both refused, for reasons of
    the kind ``why``) or "known failure" (the entry's ``known_failure`` refused, ``why``);
    ``problem`` is None when the two sides agree."""

    kind: str
    why: str | None = None
    problem: str | None = None


def compare(e: Entry, m: Measure, case: Case, lib: LibraryValues | None = None,
            prep: Prepared | None = None) -> str | None:
    """None when the entry and the reference agree on ``case``; otherwise a readable report.
    ``lib`` (the entry's values for ``m``) and ``prep`` (the case joined once) may be given when
    several measures of one case are compared."""
    return outcome(e, m, case, lib, prep).problem


def outcome(e: Entry, m: Measure, case: Case, lib: LibraryValues | None = None,
            prep: Prepared | None = None, trust_known: bool = True) -> Outcome:
    """The comparison of ``compare``, saying what was compared. ``trust_known=False``: the
    entry's ``known_failure`` is not consulted (the library was asked anyway)."""
    qrels, run = case.qrels, case.run
    conv = e.profile(m)
    if lib is None:
        lib = e.evaluate(qrels, run, [m])[m]
    ref: Evaluation | None = None
    ref_error: str | None = None
    try:
        ref = evaluate(prep, None, [m], conv) if prep is not None else evaluate(qrels, run, [m], conv)
    except EvaluationError as exc:
        ref_error = str(exc)

    problems: list[str] = []
    known = e.known_failure(qrels, run, m) if trust_known else None
    kind, why = "values", None
    if known is not None:  # a documented library failure: the entry must refuse, with that reason
        kind, why = "known failure", known
        if lib.error != known:
            problems.append(f"the entry should refuse this case ({known}) but gave {lib!r}")
    elif lib.error is not None and ref_error is not None:
        kinds = library_kinds(lib.error)
        why = next((k for k in kinds if _reference_refuses_as(k, case, m, conv, ref_error)), None)
        kind = "refused"
        if why is None:
            why = " or ".join(kinds) or None
            problems.append(
                f"both refuse the case, for reasons of different kinds: the library's "
                f"({why or 'of no known kind'}: {lib.error}), the reference's "
                f"({refusal_kind(ref_error, 0) or 'of no known kind'}: {ref_error})")
    elif lib.error is not None:
        problems.append(f"the library refused the case but the reference did not: {lib.error}")
    elif ref_error is not None:
        problems.append(f"the reference refused the case but the library did not: {ref_error}")
    else:
        assert ref is not None
        unspecified = conv.ties == "unspecified"
        if not (ref.qids.size == ref.per_query[m].size == ref.upper[m].size == ref.counted[m].size):
            raise AssertionError(
                f"reference returned {ref.per_query[m].size} values for {ref.qids.size} queries "
                f"on {m.text}:\n{case.dump()}"
            )
        # under rounding=N the range of roundings a value at a half can take (both ends, when
        # the unrounded value lies within float noise of it), which a range check reads
        rounded = m in ref.unrounded
        reported = ref.reported_ranges(m) if rounded else {}
        lo_all = dict(zip(ref.qids.tolist(), ref.per_query[m].tolist()))
        hi_all = dict(zip(ref.qids.tolist(), ref.upper[m].tolist()))
        lo_all.update({q: lo for q, (lo, _) in reported.items()})
        hi_all.update({q: hi for q, (_, hi) in reported.items()})
        unspecified = unspecified or rounded
        counted = set(ref.qids[ref.counted[m]].tolist())
        got = set(lib.per_query)
        if got != set(lo_all) and got != counted:
            problems.append(
                f"query ids differ: library {sorted(got)}, reference {sorted(lo_all)} "
                f"(counted in the mean: {sorted(counted)})"
            )
        compared = 0
        for q in sorted(got & set(lo_all)):
            v = lib.per_query[q]
            if q not in counted:  # left out of the mean (empty_query=skip): no value to match
                if not math.isnan(v):
                    problems.append(f"{q}: library {v!r}, but the reference leaves it out")
                continue
            compared += 1
            lo, hi = lo_all[q], hi_all[q]
            tol = e.tolerance_for(m, longest_list(run))
            if (not unspecified or lo == hi) and not (math.isnan(v) or math.isnan(lo)):
                # a float32 sum's tolerance grows with the list (tolerance_for): read under the
                # entry's own, as its gap grows too
                gaps = GAPS.setdefault(e.name, {}).setdefault(
                    e.tolerance if e.float32_sums else tol, [0.0, 0])
                gaps[0] = max(gaps[0], abs(v - lo) / max(1.0, abs(lo)))
                gaps[1] += 1
            ok = _within(v, lo, hi, tol) if unspecified else _close(v, lo, tol)
            if not ok:
                want = f"[{lo!r}, {hi!r}]" if unspecified else repr(lo)
                problems.append(f"{q}: library {v!r}, reference {want} (diff {v - lo:.3g})")
        kind = "values" if compared else "no values"
        if lib.mean is not None:
            agg_lo, agg_hi = ref.reported_aggregate(m)
            tol = e.tolerance_for(m, longest_list(run))
            ok = (_within(lib.mean, agg_lo, agg_hi, tol) if unspecified
                  else _close(lib.mean, agg_lo, tol))
            if not ok:
                problems.append(f"mean: library {lib.mean!r}, reference aggregate {agg_lo!r}"
                                + (f"..{agg_hi!r}" if unspecified else ""))
    if not problems:
        return Outcome(kind, why)

    if ref is not None:
        if conv.ties == "unspecified":
            ref_text = {q: (lo, hi) for q, lo, hi in zip(
                ref.qids.tolist(), ref.per_query[m].tolist(), ref.upper[m].tolist())}
        else:
            ref_text = dict(zip(ref.qids.tolist(), ref.per_query[m].tolist()))
        ref_text = f"{ref_text}, aggregate {ref.aggregate(m)!r}"
    else:
        ref_text = f"EvaluationError: {ref_error}"
    profile = ", ".join(f"{k}={v}" for k, v in conv.to_dict().items())
    return Outcome(kind, why, (
        f"\n{e.name} ({e.library} {e.version()}) disagrees with its profile on {m.text}:\n  "
        + "\n  ".join(problems)
        + f"\nlibrary:   per_query={lib.per_query}, mean={lib.mean!r}, error={lib.error!r}"
        + f"\nreference: {ref_text}"
        + f"\nprofile:   {profile}"
        + f"\ncase:\n{case.dump()}\n"
    ))


# The largest relative gap |library - reference| / max(1, |reference|) seen on values compared
# exactly (not a range), and how many, per entry and tolerance applied, over this process's
# comparisons: what test_tolerance_fits_measured_gaps holds each tolerance to.
GAPS: dict[str, dict[float, list]] = {}


# Entries with few groups (XGBoost, LightGBM: one measure family) get more examples per group,
# so that every entry sees about PER_ENTRY cases in the default run.
PER_ENTRY = 240


# An entry after the first of its library (ranx:make_comparable after ranx, recommenders:exp
# after recommenders) is the same adapter with one option changed: in the default run its groups
# run 1/VARIANT of the examples, unless the entry declares a share of known failures for the
# family (that share is read on SHARE_MIN_CASES cases or more). The long fuzz gives every entry
# the same count.
VARIANT = 2
_FIRST_OF_LIBRARY: dict[str, str] = {}
for _e in ENTRIES:
    _FIRST_OF_LIBRARY.setdefault(_e.library or _e.name, _e.name)


def _examples(e: Entry, n: int, family: str | None = None) -> int:
    """Examples per group of entry ``e`` for a share ``n`` of EXAMPLES: raised so that the
    entry's groups add up to PER_ENTRY, divided by SLOW for libraries called through a worker,
    and by VARIANT for a library's later entries."""
    groups = sum(1 for p in GROUPS if p.values[0] is e) or 1
    n = max(n, round(PER_ENTRY * n / EXAMPLES / groups))
    if (_FIRST_OF_LIBRARY[e.library or e.name] != e.name and family is not None
            and e.ceiling_for(family) == 0.0):
        n //= VARIANT
    return max(1, n // SLOW.get(e.library, 1))


@dataclass
class Tally:
    """What one run of generated cases compared, for one entry and one family: the outcomes
    by kind (refusals by the kind of their reason), and the cases ``known_failure`` refused
    (a few kept, to ask the library on them)."""

    cases: int = 0
    outcomes: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    known: list = field(default_factory=list)
    known_count: int = 0

    def add(self, o: Outcome, m: Measure, case: Case) -> None:
        self.cases += 1
        self.outcomes[o.kind] += 1
        if o.kind == "refused":
            self.refused[o.why or "of no known kind"] += 1
        if o.kind == "known failure" and o.problem is None:
            self.known_count += 1
            if len(self.known) < KNOWN_KEPT:
                self.known.append((m, case))

    def text(self) -> str:
        refused = ", ".join(f"{k} {n}" for k, n in sorted(self.refused.items()))
        return (f"{self.outcomes['values']} value comparisons, "
                f"{self.outcomes['no values']} with no query to compare, "
                f"{sum(self.refused.values())} both refusing ({refused or 'none'}), "
                f"{self.known_count} known failures, of {self.cases}")


# Known failures asked of the library, per family and run: the refused cases kept, in order,
# until one shows the declared failure (each such call may start a process: about 0.5 s). One
# must: a failure that is undefined behaviour (pytrec_eval reading past its tables) or a
# coincidence of values (a value that a threshold does not change on this case) does not show
# on every case, but shows on one of a few.
KNOWN_KEPT = 3
KNOWN_TIMEOUT = 60.0
# The share ceiling is read on runs of at least this many cases (fewer say little about a share).
SHARE_MIN_CASES = 12


def confirm_known_failure(e: Entry, m: Measure, case: Case) -> str | None:
    """Ask the library on a case ``e.known_failure`` refuses: None when it does what
    ``e.known_failure_shows`` declares (raises, dies, or gives values its profile does not),
    else the problem. A library declared able to die is asked in a process of its own."""
    shows = e.known_failure_shows
    qrels, run = case.qrels, case.run
    if e.failure_evidence(qrels, run, m) is not None:  # seen by the call made to show it
        return None
    seen: str
    try:
        if "dies" in shows:
            lib = isolation.one_shot(ask_library, e, qrels, run, [m], timeout=KNOWN_TIMEOUT)[m]
        else:
            lib = ask_library(e, qrels, run, [m])[m]
    except isolation.Fault as fault:
        seen, what = "dies", f"its process {fault}"
    except isolation.Raised as exc:
        seen, what = "raises", exc.text
    else:
        if lib.error is not None:
            seen, what = ("dies" if "crashed" in lib.error or "did not finish" in lib.error
                          else "raises"), lib.error
        else:
            problem = outcome(e, m, case, lib, trust_known=False).problem
            seen, what = ("wrong_values", problem) if problem else ("", f"values {lib.per_query}")
    if seen in shows or ("rounding" in shows and not seen):
        return None
    return (f"\n{e.name}: known_failure refuses this case ({e.known_failure(qrels, run, m)}), "
            f"declaring that the library {' or '.join(sorted(shows)) or 'fails'} there, but "
            f"asked anyway on {m.text} it {seen or 'gave its profile' + chr(39) + 's values'}: "
            f"{what}\ncase:\n{case.dump()}\n")


def check_tally(e: Entry, label: str, t: Tally, minimum: int, share: bool = True) -> list[str]:
    """The run's own failures: too few value comparisons, too large a share refused by
    known_failure (``share``: read on this run), a declared failure the library does not show
    on any of the refused cases kept."""
    problems = []
    if t.outcomes["values"] < minimum:
        problems.append(f"{e.name} {label}: {t.outcomes['values']} value comparisons, fewer "
                        f"than the minimum {minimum} ({t.text()})")
    family = label.split("(")[0].split("@")[0]
    ceiling = e.ceiling_for(family)
    if share and t.cases >= SHARE_MIN_CASES and t.known_count > ceiling * t.cases:
        problems.append(f"{e.name} {label}: known_failure refused {t.known_count} of {t.cases} "
                        f"cases, above its declared ceiling {ceiling:.0%} ({t.text()})")
    asked = []
    for m, case in t.known:
        asked.append(confirm_known_failure(e, m, case))
        if asked[-1] is None:
            break
    if asked and None not in asked:
        problems.append(f"{e.name} {label}: the declared failure shows on none of the "
                        f"{len(asked)} refused cases asked:" + "".join(asked))
    return problems


# The fewest value-carrying comparisons one group's clean-label run must make in the default
# run (of CLEAN_EXAMPLES or more cases, each with a query in both inputs by construction): a
# fifth of the cases its entry does not declare it may refuse (known_failure_ceiling), 3 of 16
# where it declares none. Measured, the fewest is ranx's Bpref, 4 of 16 (ranx refuses unequal
# query sets, and its bpref known failure a query with no relevant judged document); most groups
# compare values on 12 or more of 16. torchmetrics:error's RecallAtPrecision, which may refuse
# 85% (its float32 mean at min_precision), compares 2 of 16 and must compare 1.
def minimum_values(cases: int, ceiling: float = 0.0) -> int:
    return max(1, int(cases * (1 - ceiling)) // 5)


def _check(e: Entry, spec: tuple, ks: tuple, examples: int, minimum: int | None = None,
           share: bool = True, **case_options) -> Tally:
    """Run the group's generated cases; ``minimum``: the fewest value comparisons required
    (None: the run's share of minimum_values); ``share``: hold known_failure's share of the
    cases to its ceiling."""
    family, params, overrides = spec
    if family in NUMERIC_QIDS:
        case_options["numeric_qids"] = True
    tally = Tally()
    n = _examples(e, examples, family)

    @_settings(n)
    @given(k=st.sampled_from(ks), case=cases(**case_options))
    def check(k, case: Case) -> None:
        m = measure_of(family, k, params, overrides)
        note(case.dump())
        o = outcome(e, m, case)
        if o.problem is not None:
            pytest.fail(o.problem, pytrace=False)
        tally.add(o, m, case)

    check()
    label = _label(family, ks != (None,), params, overrides)
    family_name = label.split("(")[0].split("@")[0]
    problems = check_tally(e, label, tally,
                           minimum_values(n, e.ceiling_for(family_name)) if minimum is None else minimum,
                           share)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    return tally


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_clean_labels(e: Entry, spec: tuple, ks: tuple) -> None:
    _require_available(e)
    _check(e, spec, ks, CLEAN_EXAMPLES)


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_negative_or_fractional_labels(e: Entry, spec: tuple, ks: tuple) -> None:
    """Refusals are the point here (a profile that refuses such labels must be seen to); the
    values still compared are not counted against a minimum, and a known failure on such labels
    is refused on many of these cases by construction (its share is read on the other runs)."""
    _require_available(e)
    _check(e, spec, ks, UNUSUAL_EXAMPLES, minimum=0, share=False, negative=True, fractional=True,
           require_unusual=True)


# Cases of the no-shared-query family per entry, each checked on every measure it supports.
NO_SHARED_EXAMPLES = max(1, EXAMPLES // 3)


@pytest.mark.parametrize("e", _entry_params(ENTRIES))
def test_no_shared_query(e: Entry) -> None:
    """Cases whose run and qrels share no query: a family of its own, since there is no value
    to compare (both sides give no query, or refuse for reasons of one kind). Each case is
    checked on every measure the entry supports, one cutoff drawn per case."""
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]

    @_settings(max(1, NO_SHARED_EXAMPLES // SLOW.get(e.library, 1)))
    @given(k=st.sampled_from(ks), numeric=st.booleans(), data=st.data())
    def check(k: int, numeric: bool, data) -> None:
        case = data.draw(cases(shared=False, numeric_qids=numeric))
        note(case.dump())
        measures = _fuzz_measures(e, k)
        libs = e.evaluate(case.qrels, case.run, measures)
        prep = Prepared(case.qrels, case.run)
        for m in measures:
            o = outcome(e, m, case, libs[m], prep)
            if o.problem is not None:
                pytest.fail(o.problem, pytrace=False)

    check()


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_duplicate_listings(e: Entry, spec: tuple, ks: tuple) -> None:
    """Runs that may list a document twice for one query (a RAG retriever's chunks): the entry
    keeps, collapses or refuses them as its profile's ``duplicates`` says."""
    _require_available(e)
    _check(e, spec, ks, UNUSUAL_EXAMPLES, minimum=0, duplicates=True)


# The long fuzz: CONFORMANCE_FUZZ=N runs N generated cases per entry, each case checked on every
# measure the entry supports (one cutoff drawn per case), a third on clean labels, a third with a
# negative or fractional label, a third with documents listed twice; half of them with numeric
# query ids. Unset or 0: skipped (reported as skipped, not as passed).
FUZZ = int(os.environ.get("CONFORMANCE_FUZZ", "0") or 0)
# CONFORMANCE_FUZZ_FAMILIES=Bpref,ERR,...: the long fuzz asks about these families only
FUZZ_FAMILIES = set(filter(None, os.environ.get("CONFORMANCE_FUZZ_FAMILIES", "").split(",")))


def _fuzz_measures(e: Entry, k: int) -> list[Measure]:
    out = []
    for family, with_cutoff, params, overrides in FAMILIES:
        if FUZZ_FAMILIES and family not in FUZZ_FAMILIES:
            continue
        m = measure_of(family, k if with_cutoff else None, params, overrides)
        if e.supports(m) and m not in out:
            out.append(m)
    return out


def _spec(m: Measure) -> str:
    """The family of the fuzz a measure belongs to: its name with the cutoff as ``@k``."""
    return re.sub(r"@\d+$", "@k", m.text)


# The fewest value-carrying comparisons each entry-family pair must make in the long run: a
# tenth of its cases (a third of them are clean, and on most of those both sides give values;
# the other two thirds carry a negative or fractional label, or a document listed twice, which
# many profiles refuse). The default run's minimum is minimum_values.
def long_minimum(cases: int) -> int:
    return max(1, cases // 10)


def _print_tallies(tag: str, e: Entry, cases: int, tallies: dict[str, Tally]) -> None:
    """The summary a long run's log gives: per family, what was compared."""
    print(f"\n{tag} {e.name}: {cases} cases; by family (value comparisons, "
          "no query to compare, both refusing by kind, known failures):")
    for spec, t in sorted(tallies.items()):
        print(f"{tag} {e.name} | {spec} | {t.text()}")


def _hold_to_long_minimum(e: Entry, tallies: dict[str, Tally]) -> None:
    problems = [p for spec, t in sorted(tallies.items())
                for p in check_tally(e, spec, t, long_minimum(t.cases))]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.mark.skipif(not FUZZ, reason="long fuzz: set CONFORMANCE_FUZZ=N (cases per entry)")
@pytest.mark.parametrize("e", _entry_params(e for e in ENTRIES if e.library not in BATCHED))
def test_fuzz_entry(e: Entry) -> None:
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]
    counts = {"cases": 0}
    tallies: dict[str, Tally] = {}

    @settings(max_examples=FUZZ, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(k=st.sampled_from(ks), numeric=st.booleans(), data=st.data())
    def check(k: int, numeric: bool, data) -> None:
        # half the cases with numeric query ids (gdeval reads no other)
        case = data.draw(st.one_of(
            cases(numeric_qids=numeric),
            cases(negative=True, fractional=True, require_unusual=True, numeric_qids=numeric),
            cases(duplicates=True, numeric_qids=numeric)))
        note(case.dump())
        counts["cases"] += 1
        if counts["cases"] % 500 == 0:  # progress of a long run, read from its log
            print(f"FUZZ {e.name}: {counts['cases']} cases so far", flush=True)
        measures = _fuzz_measures(e, k)
        qrels, run = case.qrels, case.run
        libs = e.evaluate(qrels, run, measures)
        prep = Prepared(qrels, run)
        for m in measures:
            o = outcome(e, m, case, libs[m], prep)
            if o.problem is not None:
                if not counts.get("failed"):  # shrinking a long run can take many minutes
                    counts["failed"] = 1
                    print(f"FUZZ {e.name}: first failing case (before shrinking):{o.problem}",
                          flush=True)
                pytest.fail(o.problem, pytrace=False)
            tallies.setdefault(_spec(m), Tally()).add(o, m, case)

    try:
        check()
    finally:
        _print_tallies("FUZZ", e, counts["cases"], tallies)
    _hold_to_long_minimum(e, tallies)


# The batched check: per entry of a BATCHED library, BATCHES batches of BATCH cases each, every
# batch one call of ``entry.evaluate_batch`` (one DataFrame, a job per measure), every case
# checked on every measure the entry supports at the batch's cutoff, a third each on clean
# labels, negative or fractional ones, and documents listed twice. CONFORMANCE_FUZZ=N raises
# it to at least N cases per entry (N=1000: 50 batches). Each family's comparisons are tallied
# as the long fuzz's are, and held to the same minimum (a tenth of its cases carry values),
# in the default run (the same 40 cases every time) and in the long one.
BATCH = 20
BATCHES = max(2, -(-FUZZ // BATCH))


@pytest.mark.parametrize("e", _entry_params(e for e in ENTRIES if e.library in BATCHED))
def test_batched_entry(e: Entry) -> None:
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]
    counts = {"cases": 0}
    tallies: dict[str, Tally] = {}

    @settings(max_examples=BATCHES, deadline=None, database=None, print_blob=True,
              derandomize=DERANDOMIZE,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(k=st.sampled_from(ks), data=st.data())
    def check(k: int, data) -> None:
        batch = data.draw(st.lists(st.one_of(
            cases(), cases(negative=True, fractional=True, require_unusual=True),
            cases(duplicates=True)), min_size=BATCH, max_size=BATCH))
        measures = _fuzz_measures(e, k)
        answers = e.evaluate_batch([(c.qrels, c.run) for c in batch], measures)
        for case, libs in zip(batch, answers):
            counts["cases"] += 1
            prep = Prepared(case.qrels, case.run)
            for m in measures:
                o = outcome(e, m, case, libs[m], prep)
                if o.problem is not None:
                    pytest.fail(o.problem, pytrace=False)
                tallies.setdefault(_spec(m), Tally()).add(o, m, case)

    try:
        check()
    finally:
        _print_tallies("BATCHED", e, counts["cases"], tallies)
    _hold_to_long_minimum(e, tallies)


def test_groups_cover_every_available_entry() -> None:
    """An entry that supports none of the measures above would be silently untested."""
    tested = {p.values[0].name for p in GROUPS} | {
        e.name for e in ENTRIES if e.library in BATCHED and any(_fuzz_measures(e, k) for k in CUTOFFS)}
    untested = [e.name for e in ENTRIES if e.name not in tested]
    assert not untested, f"entries supporting none of {FAMILIES}: {untested}"


def test_tolerance_check_can_fail() -> None:
    """The comparison itself: a value off by more than the tolerance is a disagreement."""
    assert _close(0.5, 0.5 + 1e-13, 1e-12)
    assert not _close(0.5, 0.5 + 1e-11, 1e-12)
    assert _close(30.0, 30.0 + 1e-11, 1e-12)  # relative above 1
    assert not _close(float("nan"), 0.0, 1e-6)
    assert _within(0.7, 0.5, 0.75, 1e-12) and not _within(0.8, 0.5, 0.75, 1e-12)


def test_missing_library_fails_unless_allowed(monkeypatch) -> None:
    """conftest.require_available: a missing library fails, or skips only when allowed."""

    class Missing(Entry):
        name, library, module = "nolib:x", "nolib", "conformance_no_such_module"

    monkeypatch.delenv("CONFORMANCE_ALLOW_MISSING", raising=False)
    with pytest.raises(pytest.fail.Exception):
        _require_available(Missing())
    monkeypatch.setenv("CONFORMANCE_ALLOW_MISSING", "other,nolib")
    with pytest.raises(pytest.skip.Exception):
        _require_available(Missing())


# A tolerance may be at most TOLERANCE_RATIO times the largest gap measured under it. A gap
# below GAP_FLOOR is read as GAP_FLOOR: two double computations of one formula in different
# orders part by a few units of 2^-52 on these short sums (measured: up to 4.4e-16), and
# 1e-12, every float64 entry's tolerance, is 1,000 times 1e-15.
TOLERANCE_RATIO = 1000
GAP_FLOOR = 1e-15
# Exactly compared values an entry needs before its gaps are read; run alone (-k), the test
# measures on generated cases of its own until it has them, or gives up after GAP_CASES.
GAP_VALUES = 30
GAP_CASES = 60


@pytest.mark.parametrize("e", _entry_params(ENTRIES))
def test_tolerance_fits_measured_gaps(e: Entry) -> None:
    """No tolerance hides a disagreement it does not need to: each tolerance an entry applies is
    at most TOLERANCE_RATIO times the largest gap measured under it (this module's groups ran
    first, in file order; the test measures on its own cases when they did not)."""
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]

    def measured() -> int:
        return sum(n for _, n in GAPS.get(e.name, {}).values())

    if measured() < GAP_VALUES:
        @_settings(max(1, GAP_CASES // SLOW.get(e.library, 1)))
        @given(k=st.sampled_from(ks), data=st.data())
        def measure(k: int, data) -> None:
            case = data.draw(st.one_of(cases(), cases(negative=True, fractional=True,
                                                      require_unusual=True)))
            measures = _fuzz_measures(e, k)
            libs = e.evaluate(case.qrels, case.run, measures)
            for m in measures:
                o = outcome(e, m, case, libs[m])
                if o.problem is not None:
                    pytest.fail(o.problem, pytrace=False)

        measure()
    assert measured() >= min(GAP_VALUES, 1), f"{e.name}: no value compared exactly"
    loose = {tol: (gap, n) for tol, (gap, n) in GAPS[e.name].items()
             if tol > TOLERANCE_RATIO * max(gap, GAP_FLOOR)}
    assert not loose, (
        f"{e.name}: tolerances more than {TOLERANCE_RATIO} times the largest gap measured under "
        "them: " + "; ".join(f"{tol:.3g} (largest gap {gap:.3g} over {n} values)"
                             for tol, (gap, n) in sorted(loose.items())))
