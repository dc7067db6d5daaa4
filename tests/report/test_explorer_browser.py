"""The explorer's arithmetic (``window.conformanceExplorer.evaluate`` in the report page, in a
real headless Chromium) against the Python reference, value for value, to 1e-12.

The reader's lists are arbitrary, so the page computes its values itself; these tests hold that
arithmetic to ``conformance.reference`` over the combinations the page offers (every library
entry's profile, under the gain switch, on random lists) and over random profiles drawing every
value of every axis the explorer offers (from the axis records). Where the page's data says the
explorer cannot compute a profile (``report.html.EXPLORER_COMPUTES``), and only there, the
answer must be "not computed". The page, the browser and the Python side of each comparison
are tests/report/test_browser.py's (the same Chromium requirement holds).
"""

from __future__ import annotations

import json
import math
import random

import pytest

from conformance.conventions import AXES, TREC_EVAL10, Conventions, format_value
from conformance.errors import EvaluationError
from conformance.io.data import Qrels, Run
from conformance.libs import all_entries
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.report import html as report_html
from tests.report.test_browser import (  # noqa: F401  (fixtures: browser, run_result, report_file, page)
    MEASURES, browser, list_subject, measure_at, page, reference_values, report_file, run_result, same)

pytestmark = pytest.mark.browser


def test_explorer_evaluate_equals_the_reference_on_random_lists(page):
    """240 random lists (grades 0..3, lengths 1..12, k 1..14), each under the profile of every
    library entry (all of them, not only the page's) for every measure it computes, and the
    graded ones also under the gain switch (linear, exponential): the combinations the page
    offers, each as the page holds it, through the page's own function. A value is the
    reference's, or "not computed" where the page's data says the explorer cannot compute the
    entry's profile (a value explorer.js is not declared to compute), and only there. The
    reference evaluates the lists that share a k as the queries of one run (its per-query values
    are each list's own value); a run that raises is halved until the refusing lists stand
    alone."""
    rng = random.Random(20240611)
    entries = all_entries()
    lists = []
    for _ in range(240):
        n = rng.randint(1, 12)
        lists.append(([rng.randint(0, 3) for _ in range(n)], rng.randint(1, 14)))
    jobs, wants = [], []
    not_computed: set[tuple[str, str]] = set()
    for k in sorted({k for _, k in lists}):
        group = [g for g, kk in lists if kk == k]
        # (conventions, what keeps the explorer from computing them) -> measure -> page profile
        by_conv: dict[tuple, dict[str, dict]] = {}
        for gain in ("declared", "linear", "exponential"):
            for e in entries:
                for mid, (family, at) in MEASURES.items():
                    m = measure_at(mid, k)
                    if not e.supports(m) or (gain != "declared" and m.family not in ("nDCG", "DCG")):
                        continue  # the gain switch changes only the graded measures
                    conv = m.conventions(e.profile(m))
                    # the entry's measure as the page holds it, switched as the page switches it
                    shown = report_html.explorer_measure_profile(conv, family, at)
                    if gain != "declared":
                        conv = conv.replace(gain=gain)
                        shown["gain"] = gain
                    if "not_here" in shown:
                        not_computed.add((e.name, mid))
                    key = (conv, tuple(shown.get("not_here", ())))
                    by_conv.setdefault(key, {}).setdefault(mid, shown)
        for (conv, not_here), shown_by_mid in by_conv.items():
            measures = [measure_at(mid, k) for mid in shown_by_mid]
            values = ([dict.fromkeys(measures, "not_here")] * len(group) if not_here
                      else batch_reference(group, measures, conv))
            for grades, vals in zip(group, values):
                for mid, shown in shown_by_mid.items():
                    jobs.append({"grades": grades, "k": k, "measure": mid, "profile": shown})
                    wants.append(vals[measure_at(mid, k)])
    assert len({(tuple(j["grades"]), j["k"]) for j in jobs}) >= 200
    gains = {j["profile"]["gain"] for j in jobs}
    assert {"linear", "exponential"} <= gains
    got = run_jobs(page, jobs)
    bad = [(j, g, w) for j, g, w in zip(jobs, got, wants) if not same(g, w)]
    assert not bad, bad[:5]
    assert len({j["profile"]["empty_query"] for j in jobs}) >= 4  # the 0/0 rules of the entries
    print(f"\n{len(jobs)} explorer values on {len(lists)} lists checked against the reference "
          f"({len(entries)} entries' profiles); not computed, as the page's data says: "
          f"{sorted(not_computed) or 'none'}")


_PREPARED: dict[tuple, Prepared] = {}


def group_prepared(group: list[list[int]]) -> Prepared:
    """The lists of ``group`` as the queries of one run (query i holds list i), built once per
    group: the conventions it is evaluated under do not change the input."""
    key = tuple(map(tuple, group))
    if key not in _PREPARED:
        qrels = Qrels.from_records([(f"q{i:03d}", f"d{p:02d}", float(g))
                                    for i, grades in enumerate(group) for p, g in enumerate(grades)])
        run = Run.from_records([(f"q{i:03d}", f"d{p:02d}", float(len(grades) - p))
                                for i, grades in enumerate(group) for p in range(len(grades))])
        _PREPARED[key] = Prepared(qrels, run)
    return _PREPARED[key]


def batch_reference(group: list[list[int]], measures: list[Measure], conv: Conventions) -> list[dict]:
    """reference_values of each list of ``group``, the lists evaluated as queries of one run.
    Lists the profile refuses outright (one document under single_document=raise; nothing
    relevant under empty_query=raise) are evaluated alone, so the rest stays one evaluation."""
    level = max(conv.relevance_threshold, 1)

    def refused(grades):
        return ((conv.single_document == "raise" and len(grades) == 1)
                or (conv.empty_query == "raise" and max(grades) < level))

    alone = {i for i, g in enumerate(group) if refused(g)}
    rest = [g for i, g in enumerate(group) if i not in alone]
    out: dict[int, dict] = {i: reference_values(list_subject(group[i]), measures, conv) for i in alone}
    if rest:
        try:
            ev = evaluate(group_prepared(rest), None, measures, conv)
        except EvaluationError:
            # a refusal the split did not foresee: halve until the refusing lists stand alone
            if len(rest) == 1:
                values = [reference_values(list_subject(rest[0]), measures, conv)]
            else:
                half = len(rest) // 2
                values = (batch_reference(rest[:half], measures, conv)
                          + batch_reference(rest[half:], measures, conv))
        else:
            row = {q: j for j, q in enumerate(ev.qids.tolist())}
            values = [{m: (float(ev.per_query[m][row[f"q{i:03d}"]]) if ev.counted[m][row[f"q{i:03d}"]]
                           else "skip") for m in measures} for i in range(len(rest))]
        it = iter(values)
        for i in range(len(group)):
            if i not in alone:
                out[i] = next(it)
    return [out[i] for i in range(len(group))]


# Parameterised values the random profiles try beside every named value of each axis the
# explorer offers: custom gain maps, Jarvelin and other log bases, thresholds 0..4, rounding to
# 0..5 places (halves like 1/2, 3/8 at 0..3 places take Python's half-to-even; "none" again, so
# that about a third of the profiles keep full precision).
OPEN_SAMPLES = {
    "gain": ["0:0,1:1,2:3,3:10", "1:0.5,3:2"],
    "discount": ["jarvelin:3", "log:10", "log:2.5"],
    "relevance_threshold": [0, 1, 2, 3, 4],
    "rounding": ["none", 0, 1, 2, 3, 5],
}


def explorer_choices() -> dict[str, list]:
    """Per axis the explorer offers, the stored values the random profiles draw from: every
    named value of its record, and the samples of its parameterised values."""
    out = {}
    for axis in report_html.EXPLORER_AXES:
        record = AXES[axis]
        assert record.parse_open is None or axis in OPEN_SAMPLES, (
            f"{axis}: give OPEN_SAMPLES a few of its parameterised values")
        out[axis] = [record.parse(v) for v in list(record.values) + OPEN_SAMPLES.get(axis, [])]
    return out


def test_explorer_evaluate_equals_the_reference_under_random_profiles(page):
    """300 random lists, each under a profile drawing every axis the explorer offers from all
    its values (the axis records: every named value, and samples of the parameterised ones),
    every value on a measure that reads it at least once. A value is the reference's to 1e-12,
    or "not computed" where EXPLORER_COMPUTES leaves the profile's value out. Each profile is
    also tried as the page would hold it were the last named value of every offered axis new
    (left out of EXPLORER_COMPUTES, as a value added to an axis is): the measures that read
    such a value then say "not computed", the others keep the reference's value."""
    rng = random.Random(7)
    choices = explorer_choices()
    unstated = {a: (named[:-1], pattern) for a, (named, pattern) in report_html.EXPLORER_COMPUTES.items()}
    jobs, wants = [], []
    # (axis, value text) -> how the values read on a measure that reads the axis came out
    seen: dict[tuple[str, str], set] = {}
    for _ in range(300):
        n = rng.randint(1, 12)
        grades = [rng.randint(0, 3) for _ in range(n)]
        k = rng.randint(1, 14)
        conv = TREC_EVAL10.replace(**{a: rng.choice(v) for a, v in choices.items()})
        values = reference_values(list_subject(grades), [measure_at(mid, k) for mid in MEASURES], conv)
        for mid, (family, at) in MEASURES.items():
            for declared in (True, False):
                shown = report_html.explorer_measure_profile(
                    conv, family, at, report_html.EXPLORER_COMPUTES if declared else unstated)
                want = "not_here" if "not_here" in shown else values[measure_at(mid, k)]
                jobs.append({"grades": grades, "k": k, "profile": shown, "measure": mid})
                wants.append(want)
                if declared:
                    kind = want if isinstance(want, str) else "nan" if math.isnan(want) else "value"
                    for axis in report_html.explorer_uses(family, at):
                        seen.setdefault((axis, format_value(getattr(conv, axis))), set()).add(kind)
    got = run_jobs(page, jobs)
    bad = [(j, g, w) for j, g, w in zip(jobs, got, wants) if not same(g, w)]
    assert not bad, bad[:5]
    # every value of every offered axis was compared with the reference as a number, or is
    # one the explorer is declared not to compute and read "not computed"
    for axis, values in choices.items():
        for value in values:
            text = format_value(value)
            if report_html.explorer_computes(axis, value):
                assert "value" in seen.get((axis, text), set()), (axis, text, seen.get((axis, text)))
            else:
                assert seen.get((axis, text)) == {"not_here"}, (axis, text, seen.get((axis, text)))
    # and the values left out of the declaration read "not computed" where a measure reads them
    left_out = [j for j, w in zip(jobs[1::2], wants[1::2]) if w == "not_here"]
    for axis, (named, _) in report_html.EXPLORER_COMPUTES.items():
        if named:
            assert any(f"{axis}={named[-1]}" in j["profile"]["not_here"] for j in left_out), axis
    outcomes = {w if isinstance(w, str) else ("nan" if math.isnan(w) else "value") for w in wants}
    assert outcomes == {"raise", "skip", "nan", "value", "not_here"}  # every kind of answer
    print(f"\n{len(jobs)} explorer values on 300 random lists and profiles checked against the "
          f"reference or the declared 'not computed' ({len(left_out)} of them with a value left out)")


def test_explorer_sums_a_list_as_the_reference_does(page):
    """explorer.js sums a list's terms in the reference's order (reference.segments.range_sums),
    bit for bit, so that rounding=N at a decimal half reads the same number: on 400 random
    lists of 1..300 terms (the pairwise blocks of 8 and the halves above 128), each summed over
    its top m, against range_sums over the same terms. The order matters on these terms: a
    left-to-right loop differs from range_sums on many of them."""
    import numpy as np

    from conformance.reference.segments import range_sums

    rng = random.Random(11)
    cases = []
    for _ in range(400):
        n = rng.randint(1, 300)
        terms = [rng.random() * rng.choice([1.0, 1e-3, 1e3]) for _ in range(n)]
        cases.append((terms, rng.randint(0, n)))
    got = page.evaluate("""(text) => JSON.stringify(JSON.parse(text).map(
      ([terms, m]) => window.conformanceExplorer.sumTop(terms, m)))""", json.dumps(cases))
    got = json.loads(got)
    want = [float(range_sums(np.array(t), np.array([0]), np.array([m]))[0]) for t, m in cases]
    assert got == want
    assert sum(1 for (t, m), w in zip(cases, want) if sum_in_order(t[:m]) != w) > 100


def sum_in_order(terms: list[float]) -> float:
    total = 0.0
    for x in terms:
        total += x
    return total


def run_jobs(page, jobs: list[dict]) -> list:
    """Evaluate jobs with window.conformanceExplorer.evaluate; NaN and infinities come back as text.

    The jobs go in and the values come back as one JSON text each way: playwright validates a
    structured argument node by node, which took most of this test's time on tens of thousands
    of jobs. JSON carries a double exactly (JavaScript prints the shortest text that reads back
    as the same double, as Python's json reads it)."""
    out = json.loads(page.evaluate("""(text) => JSON.stringify(JSON.parse(text).map(j => {
      const r = window.conformanceExplorer.evaluate(j.grades, j.k, j.profile)[j.measure];
      if (r.outcome !== 'value') return r.outcome;
      return Number.isFinite(r.value) ? r.value : String(r.value);
    }))""", json.dumps(jobs, allow_nan=False)))
    return [float(v) if v in ("NaN", "Infinity", "-Infinity") else v for v in out]
