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
calls go through a worker process). Long fuzzing, N cases per entry, each checked on every
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

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from conformance.errors import EvaluationError
from conformance.libs import all_entries
from conformance.libs.base import Entry, LibraryValues, longest_list
from conformance.measures import Measure
from conformance.reference import Evaluation, evaluate
from conformance.reference.prepare import Prepared

from conftest import require_available as _require_available
from strategies import Case, cases

# Examples per (entry, measure) group: two thirds on clean labels, one third on unusual ones.
# The default keeps CI small: about 14 groups per entry x 24 = a few hundred cases per entry.
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
            out.append(pytest.param(e, spec, ks,
                                    id=f"{e.name}-{_label(family, with_cutoff, params, overrides)}"))
    return out


GROUPS = _groups()

def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,  # library calls (a LightGBM worker's first start) vary a lot in time
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


@pytest.mark.parametrize("e", ENTRIES, ids=[e.name for e in ENTRIES])
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


def compare(e: Entry, m: Measure, case: Case, lib: LibraryValues | None = None,
            prep: Prepared | None = None) -> str | None:
    """None when the entry and the reference agree on ``case``; otherwise a readable report.
    ``lib`` (the entry's values for ``m``) and ``prep`` (the case joined once) may be given when
    several measures of one case are compared."""
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
    known = e.known_failure(qrels, run, m)
    if known is not None:  # a documented library failure: the entry must refuse, with that reason
        if lib.error == known:
            return None
        problems.append(f"the entry should refuse this case ({known}) but gave {lib!r}")
    elif lib.error is not None and ref_error is not None:
        return None
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
        for q in sorted(got & set(lo_all)):
            v = lib.per_query[q]
            if q not in counted:  # left out of the mean (empty_query=skip): no value to match
                if not math.isnan(v):
                    problems.append(f"{q}: library {v!r}, but the reference leaves it out")
                continue
            lo, hi = lo_all[q], hi_all[q]
            tol = e.tolerance_for(m, longest_list(run))
            ok = _within(v, lo, hi, tol) if unspecified else _close(v, lo, tol)
            if not ok:
                want = f"[{lo!r}, {hi!r}]" if unspecified else repr(lo)
                problems.append(f"{q}: library {v!r}, reference {want} (diff {v - lo:.3g})")
        if lib.mean is not None:
            agg_lo, agg_hi = ref.reported_aggregate(m)
            tol = e.tolerance_for(m, longest_list(run))
            ok = (_within(lib.mean, agg_lo, agg_hi, tol) if unspecified
                  else _close(lib.mean, agg_lo, tol))
            if not ok:
                problems.append(f"mean: library {lib.mean!r}, reference aggregate {agg_lo!r}"
                                + (f"..{agg_hi!r}" if unspecified else ""))
    if not problems:
        return None

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
    return (
        f"\n{e.name} ({e.library} {e.version()}) disagrees with its profile on {m.text}:\n  "
        + "\n  ".join(problems)
        + f"\nlibrary:   per_query={lib.per_query}, mean={lib.mean!r}, error={lib.error!r}"
        + f"\nreference: {ref_text}"
        + f"\nprofile:   {profile}"
        + f"\ncase:\n{case.dump()}\n"
    )


# Entries with few groups (XGBoost, LightGBM: one measure family) get more examples per group,
# so that every entry sees about PER_ENTRY cases in the default run.
PER_ENTRY = 240


def _examples(e: Entry, n: int) -> int:
    """Examples per group of entry ``e`` for a share ``n`` of EXAMPLES: raised so that the
    entry's groups add up to PER_ENTRY, divided by SLOW for libraries called through a worker."""
    groups = sum(1 for p in GROUPS if p.values[0] is e) or 1
    n = max(n, round(PER_ENTRY * n / EXAMPLES / groups))
    return max(1, n // SLOW.get(e.library, 1))


def _check(e: Entry, spec: tuple, ks: tuple, examples: int, **case_options) -> None:
    family, params, overrides = spec
    if family in NUMERIC_QIDS:
        case_options["numeric_qids"] = True

    @_settings(_examples(e, examples))
    @given(k=st.sampled_from(ks), case=cases(**case_options))
    def check(k, case: Case) -> None:
        m = measure_of(family, k, params, overrides)
        note(case.dump())
        problem = compare(e, m, case)
        if problem is not None:
            pytest.fail(problem, pytrace=False)

    check()


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_clean_labels(e: Entry, spec: tuple, ks: tuple) -> None:
    _require_available(e)
    _check(e, spec, ks, CLEAN_EXAMPLES)


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_negative_or_fractional_labels(e: Entry, spec: tuple, ks: tuple) -> None:
    _require_available(e)
    _check(e, spec, ks, UNUSUAL_EXAMPLES, negative=True, fractional=True, require_unusual=True)


@pytest.mark.parametrize("e,spec,ks", GROUPS)
def test_duplicate_listings(e: Entry, spec: tuple, ks: tuple) -> None:
    """Runs that may list a document twice for one query (a RAG retriever's chunks): the entry
    keeps, collapses or refuses them as its profile's ``duplicates`` says."""
    _require_available(e)
    _check(e, spec, ks, UNUSUAL_EXAMPLES, duplicates=True)


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


@pytest.mark.skipif(not FUZZ, reason="long fuzz: set CONFORMANCE_FUZZ=N (cases per entry)")
@pytest.mark.parametrize("e", [e for e in ENTRIES if e.library not in BATCHED],
                         ids=[e.name for e in ENTRIES if e.library not in BATCHED])
def test_fuzz_entry(e: Entry) -> None:
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]
    counts = {"cases": 0, "comparisons": 0}

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
            counts["comparisons"] += 1
            fam = counts.setdefault("by_family", {})
            fam[m.family] = fam.get(m.family, 0) + 1
            problem = compare(e, m, case, libs[m], prep)
            if problem is not None:
                if not counts.get("failed"):  # shrinking a long run can take many minutes
                    counts["failed"] = 1
                    print(f"FUZZ {e.name}: first failing case (before shrinking):{problem}",
                          flush=True)
                pytest.fail(problem, pytrace=False)

    try:
        check()
    finally:
        print(f"\nFUZZ {e.name}: {counts['cases']} cases, {counts['comparisons']} comparisons; "
              f"by family: {dict(sorted(counts.get('by_family', {}).items()))}")


# The batched check: per entry of a BATCHED library, BATCHES batches of BATCH cases each, every
# batch one call of ``entry.evaluate_batch`` (one DataFrame, a job per measure), every case
# checked on every measure the entry supports at the batch's cutoff, a third each on clean
# labels, negative or fractional ones, and documents listed twice. CONFORMANCE_FUZZ=N raises
# it to at least N cases per entry (N=1000: 50 batches).
BATCH = 20
BATCHES = max(2, -(-FUZZ // BATCH))


@pytest.mark.parametrize("e", [e for e in ENTRIES if e.library in BATCHED],
                         ids=[e.name for e in ENTRIES if e.library in BATCHED])
def test_batched_entry(e: Entry) -> None:
    _require_available(e)
    ks = [k for k in CUTOFFS if _fuzz_measures(e, k)]
    counts = {"cases": 0, "comparisons": 0}

    @settings(max_examples=BATCHES, deadline=None, database=None, print_blob=True,
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
                counts["comparisons"] += 1
                problem = compare(e, m, case, libs[m], prep)
                if problem is not None:
                    pytest.fail(problem, pytrace=False)

    try:
        check()
    finally:
        print(f"\nBATCHED {e.name}: {counts['cases']} cases, {counts['comparisons']} comparisons")


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
