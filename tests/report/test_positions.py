"""The position tables are a view of the reference's trace: on generated cases (ties, unjudged
and negative labels, short lists, queries with nothing relevant or no judgment at all), under
every value of every axis a family reads, each table's own sums end at the reference's value.

Expected values: the reference's ``evaluate`` (its per-query value), and by hand for the drift
case below (qrels d1, d2, d3 all relevant, run d1 alone: under ``ideal=judged_to_list`` the
ideal is cut at the list's length, 1, so nDCG@5 = 1/1 = 1.0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.axis import geometric_floor
from conformance.conventions import AXES, Conventions
from conformance.errors import EvaluationError
from conformance.io.data import Qrels, Run
from conformance.measures import parse_measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.report.positions import position_table

GRADED = ("nDCG@3", "nDCG", "DCG@3", "nDCG@5")
BINARY = ("P@3", "R@3", "AP", "AP@3", "RR", "RR@2", "Rprec", "Success@2")

# open values tried beside each axis's named ones (an axis with no closed set of values)
OPEN = {"relevance_threshold": (0, 1, 2, 3), "depth": (2, 4), "rounding": (3,),
        "err_max_grade": (3,), "discount": ("log:3", "jarvelin:3"), "gain": ("0:0,1:3,2:1,3:7",)}


def axis_values(name: str) -> list:
    axis = AXES[name]
    out = [axis.parse(v) for v in axis.values]
    for v in OPEN.get(name, ()):
        out.append(axis.parse(str(v)))
    return out


def generated_cases(n: int, seed: int = 23):
    """Small cases: 3 queries, lists of 0 to 6 documents with integer scores (many ties),
    labels from -1 to 3 or unjudged, a query judged all 0 and a query missing from one side."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        qrels, run = {}, {}
        for qi in range(3):
            q = f"q{qi}"
            docs = [f"d{j}" for j in range(8)]
            judged = {}
            for d in docs:
                u = rng.random()
                if u < 0.35:
                    continue  # unjudged
                judged[d] = int(rng.integers(-1, 4))
            if qi == 2 and rng.random() < 0.5:
                judged = {d: 0 for d in judged}  # nothing relevant: 0/0 for most families
            listed = rng.permutation(docs)[: int(rng.integers(0, 7))]
            scores = {d: float(rng.integers(0, 3)) for d in listed}
            if judged:
                qrels[q] = judged
            if scores:
                run[q] = scores
        if not qrels or not run:
            continue
        yield Qrels.from_dict(qrels), Run.from_dict(run)


def _check(prep, measure_text, conv, queries):
    m = parse_measure(measure_text)
    try:
        ev = evaluate(prep, None, [m], m.conventions(conv))
    except EvaluationError:
        return 0
    ranges = ev.ranges(m)
    checked = 0
    for q in queries:
        if q not in ranges:
            continue
        t = position_table(prep, q, m, conv, "profile")
        if t.error or t.refused:
            continue
        value = t.table_value
        if value is None:  # 0/0: empty_query decides, the table says so
            continue
        lo = ranges[q][0]
        if math.isnan(lo):
            continue
        floor = geometric_floor(conv.mean)
        if floor is not None:  # what enters the geometric mean's logarithm (Evaluation)
            value = max(value, floor)
        if conv.rounding is not None:  # the reference rounds each value; the rows do not
            value = round(value, conv.rounding)
        assert value == pytest.approx(lo, abs=1e-12), (measure_text, q, conv, t.rows, t.ideal)
        checked += 1
    return checked


def _sweep(families):
    checked = 0
    for qrels, run in generated_cases(10):
        prep = Prepared(qrels, run)
        queries = ["q0", "q1", "q2"]
        for text in families:
            family = parse_measure(text).record
            for axis in family.axes:
                for value in axis_values(axis):
                    try:
                        conv = Conventions().replace(**{axis: value})
                    except Exception:
                        continue
                    checked += _check(prep, text, conv, queries)
    return checked


def test_graded_tables_end_at_the_reference_value_under_every_axis_value():
    assert _sweep(GRADED) > 1000


def test_binary_tables_end_at_the_reference_value_under_every_axis_value():
    assert _sweep(BINARY) > 1000


def test_the_judged_to_list_ideal_is_cut_at_the_list():
    """The drift case: the reference gives 1.0; a table that cut the judged ideal at
    min(k, |ideal|) showed IDCG 2.131 and 0.469."""
    prep = Prepared(Qrels.from_dict({"q1": {"d1": 1, "d2": 1, "d3": 1}}),
                    Run.from_dict({"q1": {"d1": 1.0}}))
    m = parse_measure("nDCG@5")
    conv = Conventions().replace(ideal="judged_to_list")
    assert evaluate(prep, None, [m], conv).values(m) == {"q1": 1.0}
    t = position_table(prep, "q1", m, conv, "p")
    assert t.idcg == 1.0
    assert t.table_value == 1.0


@pytest.mark.parametrize("rule, order", [("pessimistic", ["x", "d", "c", "e", "b", "a"]),
                                         ("optimistic", ["x", "a", "e", "b", "d", "c"])])
def test_a_label_tie_rule_shows_the_order_it_gives(rule, order):
    """x scores 2 (label 0); a (2), b (1), e (1), d (0), c (unjudged) tie: pessimistic is the
    label ascending, unjudged as 0, equal labels by docid descending (optimistic descending)."""
    prep = Prepared(Qrels.from_dict({"q": {"x": 0, "a": 2, "b": 1, "e": 1, "d": 0}}),
                    Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0,
                                         "x": 2.0}}))
    t = position_table(prep, "q", parse_measure("DCG"), Conventions(ties=rule), "p")
    assert [r.doc for r in t.rows] == order
    assert f"ties={rule}" in t.note
