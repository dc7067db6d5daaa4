"""The explanation engine (``conformance.explain``).

What is checked:

- every single-axis case of the corpus is explained by exactly its axis: for each of its
  metrics, two convention sets that differ on the case's axis (two of its compared values, the
  rest at the case's base) give disagreeing values, and ``compare`` attributes the disagreement
  to that axis alone, with both values. To make the minimal-subset search do work, the second
  side's declared profile also differs on decoy axes that, by their definitions, the measure
  does not read (``rr_cutoff`` outside RR, ``ap_denominator`` outside AP): the explanation must
  leave them out, and the self-check must find the second side faithful to its profile. The
  number of cases checked is the number of single-axis cases, and every metric of every one of
  them yields a disagreement;
- the per-case memo (``Reference``) gives exactly what a fresh evaluation gives, joint
  (``prefetch``) or one measure at a time, including where a convention refuses the input for
  some measures only;
- a class of agreeing entries is explained from a member that matches its own profile, and a
  class with none is reported unexplained without a search.

The "libraries" here are the reference under stated conventions: what is under test is the
attribution, and the expected answer (the case's axis) comes from the corpus data.
"""

from __future__ import annotations

import itertools

import pytest

from conformance.io.cases import load_cases
from conformance.conventions import format_value
from conformance.explain import Reference, agree, compare, predict
from conformance.libs.base import LibraryValues
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.errors import EvaluationError

CORPUS = load_cases()
SINGLE = [c for c in CORPUS if c.single_axis is not None]
TOL = 1e-12

# Axes a measure family never reads, by the axes' definitions (DESIGN.md): the RR cutoff rule
# only concerns RR@k, the AP denominator only AP.
_DECOY_VALUES = {"rr_cutoff": ("honour", "ignore"),
                 "ap_denominator": ("relevant", "min_k_relevant")}


def decoys(family: str, axis: str) -> list[str]:
    out = []
    if family != "RR" and axis != "rr_cutoff":
        out.append("rr_cutoff")
    if family != "AP" and axis != "ap_denominator":
        out.append("ap_denominator")
    return out


def point_outputs(prep: Prepared, measure, conv) -> list[LibraryValues]:
    """What a library following ``conv`` may return: the value (both ends of the range under
    ties=unspecified), or the error."""
    try:
        ev = evaluate(prep, None, [measure], conv)
    except EvaluationError as exc:
        return [LibraryValues(error=str(exc))]
    keep = ev.counted[measure]
    q = ev.qids[keep].tolist()
    lo = LibraryValues(per_query=dict(zip(q, ev.per_query[measure][keep].tolist())))
    hi = LibraryValues(per_query=dict(zip(q, ev.upper[measure][keep].tolist())))
    return [lo] if lo.per_query == hi.per_query else [lo, hi]


def test_single_axis_cases_are_explained_by_exactly_their_axis():
    checked_cases = 0
    checked = 0
    for case in SINGLE:
        axis = case.single_axis
        base = case.conventions()
        prep = Prepared(case.qrels, case.run)
        ref = Reference(prep)
        for m in case.measures:
            found = False
            for v1, v2 in itertools.permutations(case.compared_values(), 2):
                conv_a = base.replace(**{axis: v1})
                conv_b = base.replace(**{axis: v2})
                extra = decoys(m.family, axis)
                declared_b = conv_b.replace(**{
                    d: next(v for v in _DECOY_VALUES[d] if v != getattr(conv_b, d))
                    for d in extra})
                assert set(conv_a.differing_axes(declared_b)) == {axis, *extra}
                for got_a, got_b in itertools.product(point_outputs(prep, m, conv_a),
                                                      point_outputs(prep, m, conv_b)):
                    if agree(got_a, got_b, TOL):
                        continue
                    c = compare(case.name, ref, m, {"A": (conv_a, TOL, got_a),
                                                    "B": (declared_b, TOL, got_b)})
                    where = f"{case.name} / {m.text}: {axis} {format_value(v1)} -> {format_value(v2)}"
                    assert c.unexplained == [], where
                    assert c.classes == [["A"], ["B"]], where
                    (e,) = c.explanations
                    assert e.between == ("A", "B"), where
                    assert e.axes == [axis], where
                    assert e.switched == {axis: (format_value(v1), format_value(v2))}, where
                    found = True
                    checked += 1
            assert found, f"{case.name} / {m.text}: no two values of {axis} disagree"
        checked_cases += 1
    assert checked_cases == len(SINGLE) == 61
    assert checked >= sum(len(c.measures) for c in SINGLE)


CASES_FOR_MEMO = ["graded-ten", "ties-top-two", "query-missing-from-run", "negative-labels",
                  "graded-ten-no-relevant", "deep-three-queries-1000-docs"]


@pytest.mark.parametrize("name", CASES_FOR_MEMO)
def test_reference_memo_is_a_fresh_evaluation(name):
    case = next(c for c in CORPUS if c.name == name)
    prep = Prepared(case.qrels, case.run)
    convs = [case.conventions()]
    for axis, values in (("empty_query", ["raise", "one", "skip"]), ("ties", ["unspecified"]),
                         ("query_set", ["raise", "qrels"]), ("negative_labels", ["raise"])):
        convs += [case.conventions().replace(**{axis: v}) for v in values]
    joint, alone = Reference(prep), Reference(prep)
    for conv in convs:
        joint.prefetch(case.measures, conv)
        for m in case.measures:
            fresh = predict(prep, m, conv)
            for memo in (joint.predict(m, conv), alone.predict(m, conv)):
                assert memo.error is None or fresh.error is not None
                assert (memo.error is None) == (fresh.error is None), (conv, m)
                assert memo.ranges.keys() == fresh.ranges.keys()
                for q in fresh.ranges:
                    assert memo.ranges[q] == pytest.approx(fresh.ranges[q], nan_ok=True,
                                                           rel=0, abs=0)
    # prefetch made the joint calls: asking again evaluates nothing
    before = joint.evaluations
    for conv in convs:
        for m in case.measures:
            joint.predict(m, conv)
    assert joint.evaluations == before


def test_some_measures_refuse_and_others_do_not():
    # empty_query=raise refuses the measures for which a query is empty, not the others: a
    # query with only grade-1 documents has no relevant document at threshold 2 (P(rel=2)@5)
    # but has some at threshold 1 (P@5)
    from conformance.io.data import Qrels, Run
    from conformance.measures import parse_measures

    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}})
    run = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}})
    prep = Prepared(qrels, run)
    p5, p5_rel2 = parse_measures("P@5,P(rel=2)@5")
    conv = load_cases()[0].conventions().replace(empty_query="raise")
    ref = Reference(prep)
    ref.prefetch([p5, p5_rel2], conv)
    assert ref.predict(p5_rel2, conv).error is not None
    assert ref.predict(p5, conv).error is None
    assert ref.predict(p5, conv).ranges == {"q1": (0.2, 0.2)}


def test_class_is_explained_from_a_faithful_member():
    case = next(c for c in CORPUS if c.name == "graded-ten")
    prep = Prepared(case.qrels, case.run)
    (m,) = [x for x in case.measures if x.text == "nDCG@5"]
    lin = case.conventions()
    exp = lin.replace(gain="exponential")
    (lin_out,) = point_outputs(prep, m, lin)
    (exp_out,) = point_outputs(prep, m, exp)
    assert not agree(lin_out, exp_out, TOL)
    # "liar" returns the linear-gain value but declares exponential gain: it agrees with "A",
    # which is the class's faithful member, so the pair is explained from "A"
    c = compare(case.name, prep, m, {"liar": (exp, TOL, lin_out), "A": (lin, TOL, lin_out),
                                     "B": (exp, TOL, exp_out)})
    assert c.classes == [["liar", "A"], ["B"]]
    assert [u["entry"] for u in c.unexplained] == ["liar"]
    (e,) = c.explanations
    assert e.between == ("A", "B") and e.axes == ["gain"]
    assert e.switched == {"gain": ("linear", "exponential")}
    # without "A", the class has no faithful member: unexplained, and said why
    c = compare(case.name, prep, m, {"liar": (exp, TOL, lin_out), "B": (exp, TOL, exp_out)})
    (e,) = c.explanations
    assert e.axes is None
    assert c.unexplained[1] == {"between": ["liar", "B"],
                                "reason": "liar does not match its own profile",
                                "differing_axes": []}


@pytest.mark.requires_library("ir_measures")
def test_an_err_disagreement_with_ir_measures_is_explained_by_its_axis():
    """ir_measures' ERR@20 (gdeval, called live) against an ERR that normalises by the largest
    grade of these qrels, 3, instead of gdeval's fixed 4 (Chapelle et al.'s g_max): the two
    disagree and the only axis that explains it is err_max_grade, though the second side's
    profile also differs on decoys ERR does not read (the relevance threshold, the gain).
    By hand, query 1 (labels 3, 0, 1 ranked): gdeval (7/16)/1 + (1/16)/3 (9/16) = 0.449219,
    over grade 3 (7/8)/1 + (1/8)/3 (1/8) = 0.880208."""
    from conformance.io.data import Qrels, Run
    from conformance.libs.ir_measures import IrMeasuresEntry
    from conformance.measures import parse_measure

    qrels = Qrels.from_records([("1", "a", 3.0), ("1", "b", 0.0), ("1", "c", 1.0),
                                ("2", "x", 2.0), ("2", "y", 0.0)])
    run = Run.from_records([("1", "a", 3.0), ("1", "b", 2.0), ("1", "c", 1.0),
                            ("2", "y", 2.0), ("2", "x", 1.0)])
    m = parse_measure("ERR@20")
    entry = IrMeasuresEntry()
    live = entry.evaluate(qrels, run, [m])[m]
    assert live.error is None and live.provider == "gdeval"
    assert live.per_query["1"] == pytest.approx(7 / 16 + (1 / 16) / 3 * (9 / 16), abs=5e-6)
    prep = Prepared(qrels, run)
    other_profile = entry.profile(m).replace(err_max_grade=3, relevance_threshold=2,
                                             gain="exponential")
    other = point_outputs(prep, m, other_profile)[0]
    assert other.per_query["1"] == pytest.approx(7 / 8 + (1 / 8) / 3 * (1 / 8), abs=TOL)
    c = compare("err", Reference(prep), m, {
        "ir_measures": (entry.profile(m), entry.tolerance_for(m), live),
        "other": (other_profile, TOL, other)})
    assert c.unexplained == []
    (e,) = c.explanations
    assert e.axes == ["err_max_grade"]
    assert e.switched == {"err_max_grade": ("4", "3")}


def test_the_tolerance_is_absolute_up_to_1_and_relative_above():
    from conformance.explain import Expected, matches

    # one double's spacing at 1.35e9 is 2.4e-7: a DCG sum of 2^31 - 1 gains, summed in another
    # order, is one spacing apart; 1e-12 absolute would call that a disagreement
    a, b = 1354911329.2004447, 1354911329.200445
    assert a != b and abs(a - b) < 1e-15 * b
    assert agree(LibraryValues(per_query={"q": a}), LibraryValues(per_query={"q": b}), TOL)
    assert matches(Expected(ranges={"q": (b, b)}), LibraryValues(per_query={"q": a}), TOL)
    # up to 1 the tolerance is absolute
    assert not agree(LibraryValues(per_query={"q": 0.5}),
                     LibraryValues(per_query={"q": 0.5 + 2e-12}), TOL)
    assert not matches(Expected(ranges={"q": (0.5, 0.5)}),
                       LibraryValues(per_query={"q": 0.5 + 2e-12}), TOL)
