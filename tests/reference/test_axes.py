"""Every value of every convention axis changes the reference's number the way its meaning says.

For each axis of ``conformance.conventions.AXES`` there is one small case and, for every value of
the axis (named values, plus representative open values: custom gain maps, ``jarvelin:3``,
``log:10``, integer thresholds and depths), the hand-computed number of each measure, written as
arithmetic. Each (axis, value) pair is its own test id, and each test also checks that its
expected numbers differ from those of some other value of the same axis, so the case really
tells the values apart. ``RAISES`` marks a value under which evaluation must fail; a pair
``(lo, hi)`` is the range under ``ties=unspecified``.

Ties under ``average`` are also checked against a brute-force oracle written here: every
permutation of every tied group (``itertools.permutations``), each order scored by the plain
per-order formulas below, and the mean taken.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from math import log, log2, log10
from statistics import fmean
from typing import Any

import pytest

from conformance.conventions import AXES, Conventions
from conformance.io.data import Qrels, Run
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference import evaluate

TOL = 1e-12
RAISES = "raises"


def M(family, cutoff=None, alpha=None, params=(), **overrides):
    given = ((("alpha", alpha),) if alpha is not None else ()) + tuple(params)  # T's alpha
    return Measure(family, cutoff, tuple(overrides.items()), params=given)


def evaluate_rows(qrels_rows, run_rows, measures, conventions=Conventions()):
    return evaluate(Qrels.from_records(qrels_rows), Run.from_records(run_rows), measures, conventions)


@dataclass
class AxisCase:
    """One case for one axis: ``expected[value][i]`` is the aggregate of ``measures[i]``."""

    qrels: list
    run: list
    measures: list
    expected: dict[Any, Any]
    base: dict = field(default_factory=dict)  # other axes held fixed for this case


# Cases are documented in their comments: rank order, labels, then the arithmetic.
CASES: dict[str, AxisCase] = {
    # ranks: b (2), a (3), c (0), d (1); judged ideal gains sorted: 3, 2, 1, 0
    "gain": AxisCase(
        qrels=[("q", "a", 3), ("q", "b", 2), ("q", "c", 0), ("q", "d", 1)],
        run=[("q", "b", 4.0), ("q", "a", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)],
        measures=[M("DCG", 2), M("nDCG", 2)],
        expected={
            "linear": [2 + 3 / log2(3), (2 + 3 / log2(3)) / (3 + 2 / log2(3))],
            "exponential": [3 + 7 / log2(3), (3 + 7 / log2(3)) / (7 + 3 / log2(3))],
            # label 3 is not in the map: it keeps gain 3; label 2 -> 3
            "0:0,1:1,2:3": [3 + 3 / log2(3), (3 + 3 / log2(3)) / (3 + 3 / log2(3))],
            # label 2 -> 1, label 1 -> 2.5, label 3 keeps 3; ideal 3, 2.5, 1, 0
            "0:0,1:2.5,2:1": [1 + 3 / log2(3), (1 + 3 / log2(3)) / (3 + 2.5 / log2(3))],
            # labels >= 1 gain 1: b, a -> 1 + 1/log2(3); ideal 1, 1, 1, 0 gives the same at 2
            "binary": [1 + 1 / log2(3), 1.0],
        },
    ),
    # ranks: a (0), b (1), c (2), d (1); ideal 2, 1, 1, 0
    "discount": AxisCase(
        qrels=[("q", "a", 0), ("q", "b", 1), ("q", "c", 2), ("q", "d", 1)],
        run=[("q", "a", 4.0), ("q", "b", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)],
        measures=[M("DCG"), M("nDCG")],
        expected={
            # 1/log2(rank + 1)
            "log2": [
                0 + 1 / log2(3) + 2 / log2(4) + 1 / log2(5),
                (1 / log2(3) + 2 / log2(4) + 1 / log2(5)) / (2 + 1 / log2(3) + 1 / log2(4)),
            ],
            # 1 at ranks 1 and 2, then 1/log2(rank)
            "jarvelin": [
                0 + 1 + 2 / log2(3) + 1 / log2(4),
                (1 + 2 / log2(3) + 1 / log2(4)) / (2 + 1 + 1 / log2(3)),
            ],
            # 1 at ranks 1, 2 and 3 (log_3(3) = 1), then 1/log_3(rank)
            "jarvelin:3": [
                0 + 1 + 2 + 1 / (log(4) / log(3)),
                (1 + 2 + 1 / (log(4) / log(3))) / (2 + 1 + 1 + 0),
            ],
            # 1/log10(rank + 1): the base scales DCG and cancels out of nDCG
            "log:10": [
                0 + 1 / log10(3) + 2 / log10(4) + 1 / log10(5),
                (1 / log2(3) + 2 / log2(4) + 1 / log2(5)) / (2 + 1 / log2(3) + 1 / log2(4)),
            ],
            # 1/rank
            "reciprocal": [
                0 / 1 + 1 / 2 + 2 / 3 + 1 / 4,
                (1 / 2 + 2 / 3 + 1 / 4) / (2 / 1 + 1 / 2 + 1 / 3),
            ],
        },
    ),
    # ranks: a (1), b (0), c (2); z (3) judged, not retrieved
    "ideal": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("nDCG", 3), M("R"), M("AP")],
        expected={
            "judged": [2 / (3 + 2 / log2(3) + 1 / log2(4)), 2 / 3, (1 / 1 + 2 / 3) / 3],
            "retrieved": [2 / (2 + 1 / log2(3) + 0), 2 / 2, (1 / 1 + 2 / 3) / 2],
            # min(k = 3, n = 3) positions: the judged ideal here (see the test below that
            # tells the two apart)
            "judged_to_list": [2 / (3 + 2 / log2(3) + 1 / log2(4)), 2 / 3, (1 / 1 + 2 / 3) / 3],
            # three slots of the largest judged gain, 3; R and AP read the judged documents
            "k_slots": [2 / (3 * (1 + 1 / log2(3) + 1 / log2(4))), 2 / 3, (1 / 1 + 2 / 3) / 3],
        },
    ),
    # ranks: a (1); b (1) judged, not retrieved; R = 2, n = 1
    "k_beyond_list": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 1)],
        run=[("q", "a", 1.0)],
        measures=[M("P", 5), M("F1", 5), M("T", 5, alpha=0.5), M("Rprec"), M("Fe", 5)],
        expected={
            "k": [1 / 5, 2 * 1 / (5 + 2), (0.5 * 1 - 0.5 * 0) / 5, 1 / 2, 2 * 1 / (5 + 1)],
            "min_k_n": [1 / 1, 2 * 1 / (1 + 2), (0.5 * 1 - 0.5 * 0) / 1, 1 / 1, 2 * 1 / (1 + 1)],
            # an order: the rows in the top 5 are the list's one row, as min(k, n) (a rank
            # rule's top: test_group_first_...)
            "rows_in_top": [1 / 1, 2 * 1 / (1 + 2), (0.5 * 1 - 0.5 * 0) / 1, 1 / 1,
                            2 * 1 / (1 + 1)],
        },
    ),
    # ranks: a (label 2), b (0.5), c (1), d (unjudged); e (3) judged, not retrieved.
    # binary (threshold 1): a, c relevant where ranked, R = 3 (a, c, e);
    # label: each ranked document counts its label, R = 2 + 0.5 + 1 + 3 = 6.5
    "hit_weight": AxisCase(
        qrels=[("q", "a", 2), ("q", "b", 0.5), ("q", "c", 1), ("q", "e", 3)],
        run=[("q", "a", 4.0), ("q", "b", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)],
        measures=[M("P", 2), M("R", 2), M("P"), M("R"), M("P", 2, ideal="retrieved"),
                  M("R", 2, ideal="retrieved")],
        expected={
            "binary": [1 / 2, 1 / 3, 2 / 4, 2 / 3, 1 / 2, 1 / 2],
            # under ideal=retrieved R is the list's labels: 2 + 0.5 + 1 + 0 = 3.5
            "label": [(2 + 0.5) / 2, (2 + 0.5) / 6.5, (2 + 0.5 + 1 + 0) / 4, 3.5 / 6.5,
                      (2 + 0.5) / 2, (2 + 0.5) / 3.5],
        },
    ),
    # ranks: a (1), b (0), c (1); d (1) and e (1) judged, not retrieved; R = 4, n = 3
    "ap_denominator": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0), ("q", "c", 1), ("q", "d", 1), ("q", "e", 1)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("AP", 2), M("AP"), M("AP", 5)],
        expected={
            "relevant": [(1 / 1) / 4, (1 / 1 + 2 / 3) / 4, (1 / 1 + 2 / 3) / 4],
            "retrieved_relevant": [(1 / 1) / 1, (1 / 1 + 2 / 3) / 2, (1 / 1 + 2 / 3) / 2],
            "min_k_relevant": [(1 / 1) / min(2, 4), (1 / 1 + 2 / 3) / 4,  # no k: R
                               (1 / 1 + 2 / 3) / min(5, 4)],
            # k even past the list's 3 documents; no k: the list's length n = 3
            "k": [(1 / 1) / 2, (1 / 1 + 2 / 3) / 3, (1 / 1 + 2 / 3) / 5],
            # min(R = 4, the list cut at k): @2 two rows; no k and @5 the list's 3 rows
            "min_k_n_relevant": [(1 / 1) / min(4, 2), (1 / 1 + 2 / 3) / min(4, 3),
                                 (1 / 1 + 2 / 3) / min(4, min(5, 3))],
        },
    ),
    # q1: a (1) alone -> 1 on every measure; q2: b (0) alone, no relevant document
    "empty_query": AxisCase(
        qrels=[("q1", "a", 1), ("q2", "b", 0)],
        run=[("q1", "a", 1.0), ("q2", "b", 1.0)],
        measures=[M("AP"), M("nDCG"), M("P", 1)],
        expected={
            "zero": [(1 + 0) / 2] * 3,
            "one": [(1 + 1) / 2] * 3,
            "nan": [math.nan] * 3,
            "raise": RAISES,
            "skip": [1 / 1] * 3,
        },
    ),
    # all four tied at 1.0, listed c, a, d, b; only a is relevant
    #   docid_desc d c b a -> a at 4; docid_asc a b c d -> 1; input c a d b -> 2;
    #   reverse b d a c -> 3; average: a equally likely at each rank; pessimistic: label
    #   0 first (d c b), a last -> 4; optimistic: a first -> 1; group_last: all four at rank
    #   4, and the group ends past 2 and 3, so it is in neither top; group_first: all four at
    #   rank 1, the group in both tops whole (P@2 still over k = 2)
    "ties": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0), ("q", "c", 0), ("q", "d", 0)],
        run=[("q", "c", 1.0), ("q", "a", 1.0), ("q", "d", 1.0), ("q", "b", 1.0)],
        measures=[M("RR"), M("P", 2), M("Success", 3)],
        expected={
            "docid_desc": [1 / 4, 0 / 2, 0.0],
            "docid_asc": [1 / 1, 1 / 2, 1.0],
            "input_order": [1 / 2, 1 / 2, 1.0],
            "reverse_input": [1 / 3, 0 / 2, 1.0],
            "average": [(1 / 1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, (2 / 4) / 2, 3 / 4],
            "unspecified": [(1 / 4, 1 / 1), (0 / 2, 1 / 2), (0.0, 1.0)],
            "pessimistic": [1 / 4, 0 / 2, 0.0],
            "optimistic": [1 / 1, 1 / 2, 1.0],
            "group_last": [1 / 4, 0 / 2, 0.0],
            "group_first": [1 / 1, 1 / 2, 1.0],
        },
    ),
    # ranks: a (0), b (1), c (2)
    "relevance_threshold": AxisCase(
        qrels=[("q", "a", 0), ("q", "b", 1), ("q", "c", 2)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("RR"), M("P", 2), M("NumRel")],
        expected={
            0: [1 / 1, 2 / 2, 3],
            1: [1 / 2, 1 / 2, 2],
            2: [1 / 3, 0 / 2, 1],
            3: [0.0, 0.0, 0],  # no relevant document: empty, scored 0 (empty_query=zero)
        },
    ),
    # relevance_threshold = 2; ranks: a (1), b (2)
    "threshold_scope": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 2)],
        run=[("q", "a", 2.0), ("q", "b", 1.0)],
        measures=[M("nDCG"), M("P", 1)],
        base={"relevance_threshold": 2},
        expected={
            "binary": [(1 + 2 / log2(3)) / (2 + 1 / log2(3)), 0.0],
            "graded": [(0 + 2 / log2(3)) / (2 + 0), 0.0],  # label 1 < 2 gains 0
        },
    ),
    # ranks: a (-1), b (1), c (0)
    "negative_labels": AxisCase(
        qrels=[("q", "a", -1), ("q", "b", 1), ("q", "c", 0)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("DCG"), M("nDCG")],
        expected={
            "unjudged": [0 + 1 / log2(3) + 0, (1 / log2(3)) / 1],
            # ideal gains 1, 0, -1
            "keep": [-1 + 1 / log2(3) + 0, (-1 + 1 / log2(3)) / (1 + 0 - 1 / log2(4))],
            "raise": RAISES,
        },
    ),
    # ranks: b (2.0), a (1.7)
    "label_type": AxisCase(
        qrels=[("q", "a", 1.7), ("q", "b", 2.0)],
        run=[("q", "b", 2.0), ("q", "a", 1.0)],
        measures=[M("DCG"), M("P", 2)],
        expected={
            "float": [2 + 1.7 / log2(3), 2 / 2],
            # 1.7 as the nearest float32 number: 1.7000000476837158 (2.0 is exact)
            "float32": [2 + 1.7000000476837158 / log2(3), 2 / 2],
            "int_truncate": [2 + 1 / log2(3), 2 / 2],
            "raise": RAISES,
        },
    ),
    # judged: q1 {a: 1}, q2 {b: 1}; run: q1 -> a, q3 -> x (q3 is not judged)
    "query_set": AxisCase(
        qrels=[("q1", "a", 1), ("q2", "b", 1)],
        run=[("q1", "a", 1.0), ("q3", "x", 1.0)],
        measures=[M("P", 1), M("NumQ")],
        expected={
            "run": [1 / 1, 1],
            "qrels": [(1 + 0) / 2, 2],
            "qrels_strict": RAISES,  # q3 is in the run but not judged
            "run_all": [(1 + 0) / 2, 2],  # q1 and q3; q3 has no relevant document: 0
            "run_strict": RAISES,  # q3 is in the run but not judged
            "raise": RAISES,
        },
    ),
    # ranks: a (0), b (1), c (1)
    "depth": AxisCase(
        qrels=[("q", "a", 0), ("q", "b", 1), ("q", "c", 1)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("R"), M("NumRet"), M("AP")],
        expected={
            None: [2 / 2, 3, (1 / 2 + 2 / 3) / 2],
            1: [0 / 2, 1, 0.0],
            2: [1 / 2, 2, (1 / 2) / 2],
            3: [2 / 2, 3, (1 / 2 + 2 / 3) / 2],
        },
    ),
    # a (relevant) 1.0, b 1.0 + 1e-9; ties=docid_asc would put a first
    "score_precision": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0)],
        run=[("q", "a", 1.0), ("q", "b", 1.0 + 1e-9)],
        measures=[M("RR")],
        base={"ties": "docid_asc"},
        expected={
            "float64": [1 / 2],  # b scores higher
            "float32": [1 / 1],  # both narrow to 1.0f: a tie, broken by docid ascending
        },
    ),
    # ranks: a (0), b (1)
    "rr_cutoff": AxisCase(
        qrels=[("q", "a", 0), ("q", "b", 1)],
        run=[("q", "a", 2.0), ("q", "b", 1.0)],
        measures=[M("RR", 1), M("RR")],
        expected={
            "honour": [0.0, 1 / 2],
            "ignore": [1 / 2, 1 / 2],
        },
    ),
    # score says a, b; rank column says b (rank 1), a (rank 2); b is relevant
    "rank_source": AxisCase(
        qrels=[("q", "a", 0), ("q", "b", 1)],
        run=[("q", "a", 2.0, 2), ("q", "b", 1.0, 1)],
        measures=[M("RR"), M("P", 1)],
        expected={
            "score": [1 / 2, 0.0],
            "rank_column": [1 / 1, 1.0],
        },
    ),
    # ranks: c (0, score 2.0), a (1, score 1.0), b (1, score 0.0); R = 2 on the retrieved list
    # (ideal=retrieved, so R is counted on the list: b still counts there when masked)
    "nonpositive_scores": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 1), ("q", "c", 0)],
        run=[("q", "a", 1.0), ("q", "b", 0.0), ("q", "c", 2.0)],
        measures=[M("RR"), M("R", 3), M("AP"), M("nDCG")],
        expected={
            "rank": [1 / 2, 2 / 2, (1 / 2 + 2 / 3) / 2,
                     (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3))],
            # b (score 0.0) is not relevant at rank 3: R@3 = 1/2, AP = (1/2) / 2; nDCG unchanged
            "not_relevant": [1 / 2, 1 / 2, (1 / 2) / 2,
                             (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3))],
        },
        base={"ideal": "retrieved"},
    ),
    # q1 lists one document, a (1); q2 lists b (0), c (1)
    "single_document": AxisCase(
        qrels=[("q1", "a", 1), ("q2", "b", 0), ("q2", "c", 1)],
        run=[("q1", "a", 1.0), ("q2", "b", 2.0), ("q2", "c", 1.0)],
        measures=[M("nDCG"), M("RR")],
        expected={
            "score": [(1 + (1 / log2(3)) / 1) / 2, (1 / 1 + 1 / 2) / 2],
            "raise": RAISES,
        },
    ),
    # run lists a (3.0), b (2.0), a (1.0); a is relevant
    "duplicates": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)],
        measures=[M("RR"), M("NumRet"), M("AP")],
        expected={
            "error": RAISES,
            "first": [1 / 1, 2, (1 / 1) / 1],  # a keeps 3.0
            "last": [1 / 2, 2, (1 / 2) / 1],  # a keeps 1.0
            # both listings are documents: a at ranks 1 and 3
            "keep": [1 / 1, 3, (1 / 1 + 2 / 3) / 1],
            # three listings keep their ranks, a counts only at rank 1
            "set": [1 / 1, 3, (1 / 1) / 1],
            # as keep, and a's second listing is a second relevant document: R = 2
            "keep_counted": [1 / 1, 3, (1 / 1 + 2 / 3) / 2],
        },
    ),
    # AP: q1 1 (a first), q2 1/2 (c below b), q3 0 (its relevant d never retrieved)
    "mean": AxisCase(
        qrels=[("q1", "a", 1), ("q2", "b", 0), ("q2", "c", 1), ("q3", "d", 1), ("q3", "e", 0)],
        run=[("q1", "a", 1.0), ("q2", "b", 2.0), ("q2", "c", 1.0), ("q3", "e", 1.0)],
        measures=[M("AP")],
        expected={
            "arithmetic": [(1 + 1 / 2 + 0) / 3],
            "geometric": [(1 * (1 / 2) * 0.00001) ** (1 / 3)],  # 0 raised to trec_eval's floor
            "geometric:0.01": [(1 * (1 / 2) * 0.01) ** (1 / 3)],
            "geometric:0.1": [(1 * (1 / 2) * 0.1) ** (1 / 3)],
            "micro": RAISES,  # AP is no one ratio per query (tests/reference/test_micro_mean.py)
        },
    ),
    # ranks n1 (0), r1 (1), r2 (1); r3 (1) and n2 (0) judged, not retrieved: R = 3, N = 2;
    # r1 and r2 each have n1 above
    "bpref_denominator": AxisCase(
        qrels=[("q", "n1", 0), ("q", "r1", 1), ("q", "r2", 1), ("q", "r3", 1), ("q", "n2", 0)],
        run=[("q", "n1", 3.0), ("q", "r1", 2.0), ("q", "r2", 1.0)],
        measures=[M("Bpref")],
        expected={
            "min_r_n": [((1 - 1 / 2) + (1 - 1 / 2)) / 3],  # D = min(3, 2)
            "r": [((1 - 1 / 3) + (1 - 1 / 3)) / 3],  # D = R = 3
        },
    ),
    # ranks r (1), n (0), r (1); R = 4: level 0.3 asks for round(1.2) = 1 or floor(2.1) = 2
    # relevant documents; precision at them 1 and 2/3
    "iprec_rank": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0), ("q", "c", 1), ("q", "d", 1), ("q", "e", 1)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("IPrec", params=[("recall", 0.3)])],
        expected={"round": [max(1 / 1, 2 / 3)], "floor_plus_0.9": [2 / 3]},
    ),
    # ranks a (2), b (0): ERR = (2^2 - 1) / 2^g_max; a label above g_max is refused
    "err_max_grade": AxisCase(
        qrels=[("q", "a", 2), ("q", "b", 0)],
        run=[("q", "a", 2.0), ("q", "b", 1.0)],
        measures=[M("ERR")],
        expected={4: [3 / 16], 3: [3 / 8], 2: [3 / 4], 1: RAISES},
    ),
    # ranks a (2), b (0), c (1), p = 0.5: 0.5 (g_1 + 0.5 g_2 + 0.25 g_3)
    "rbp_gain": AxisCase(
        qrels=[("q", "a", 2), ("q", "b", 0), ("q", "c", 1)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("RBP", params=[("p", 0.5)])],
        expected={
            "binary": [0.5 * (1 + 0 + 0.25 * 1)],
            "label": [0.5 * (2 + 0 + 0.25 * 1)],
            "label_over_max": [0.5 * (2 / 2 + 0 + 0.25 * 1 / 2)],  # the largest label is 2
        },
    ),
    # the same, binary gains 1, 0, 1; over N ranks the weights 0.5 0.5^(i-1) / (1 - 0.5^N)
    "weights_horizon": AxisCase(
        qrels=[("q", "a", 2), ("q", "b", 0), ("q", "c", 1)],
        run=[("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        measures=[M("RBP", params=[("p", 0.5)])],
        expected={
            None: [0.5 * (1 + 0.25)],
            2: [0.5 * 1 / (1 - 0.5 ** 2)],  # rank 3 is past the horizon
            3: [0.5 * (1 + 0.25) / (1 - 0.5 ** 3)],
            1000: [0.5 * (1 + 0.25) / (1 - 0.5 ** 1000)],
        },
    ),
    # ranks a (1), b (0), every document judged: the residual is the tail 0.5^2, or nothing
    "residual_tail": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0)],
        run=[("q", "a", 2.0), ("q", "b", 1.0)],
        measures=[M("RBPResid", params=[("p", 0.5)])],
        expected={"unjudged_only": [0.0], "always": [0.5 ** 2]},
    ),
    # run lists q (3.0, relevant, the query's own id), b (2.0, 0), a (1.0, relevant); R = 2
    "identical_ids": AxisCase(
        qrels=[("q", "q", 1), ("q", "a", 1), ("q", "b", 0)],
        run=[("q", "q", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)],
        measures=[M("P", 1), M("R"), M("NumRet")],
        expected={
            "keep": [1 / 1, 2 / 2, 3],
            # q is removed from the list but stays judged: b first, a second, R still 2
            "drop": [0 / 1, 1 / 2, 2],
        },
    ),
    # q1: a (1), b (0), c (0) -> P@3 = 1/3; q2: d (0), no relevant document -> 0, counted;
    # the mean 1/6 = 0.1666..., rounded after averaging (not the mean of rounded values)
    "rounding": AxisCase(
        qrels=[("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 0), ("q2", "d", 0)],
        run=[("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0), ("q2", "d", 1.0)],
        measures=[M("P", 3)],
        expected={
            None: [1 / 6],
            2: [0.17],  # (0.33 + 0) / 2 would give 0.165
            5: [0.16667],
            0: [0.0],
        },
    ),
    # negative_labels=keep; judged a (-1), b (-2); ranks: b, a
    # DCG = -2 - 1 / log2(3); IDCG = -1 - 2 / log2(3) < 0
    "negative_ideal": AxisCase(
        qrels=[("q", "a", -1), ("q", "b", -2)],
        run=[("q", "b", 2.0), ("q", "a", 1.0)],
        measures=[M("nDCG")],
        expected={
            "empty": [0.0],  # empty query, empty_query=zero
            "divide": [(-2 - 1 / log2(3)) / (-1 - 2 / log2(3))],
        },
        base={"negative_labels": "keep"},
    ),
    # judged a (1, not retrieved), b (0); ranks: b (2.0), x (1.0, unjudged)
    "unretrieved": AxisCase(
        qrels=[("q", "a", 1), ("q", "b", 0)],
        run=[("q", "b", 2.0), ("q", "x", 1.0)],
        measures=[M("RR"), M("NumRet"), M("P", 3)],
        expected={
            "absent": [0.0, 2, 0 / 3],
            "appended": [1 / 3, 3, 1 / 3],  # a appended at rank 3 with score 0
        },
    ),
    # judged q1 {a: 1}, q2 {b: 1}; q1 ranks c (3.0), a (1.0); q2 ranks b (2.0)
    "batch": AxisCase(
        qrels=[("q1", "a", 1), ("q2", "b", 1)],
        run=[("q1", "c", 3.0), ("q1", "a", 1.0), ("q2", "b", 2.0)],
        measures=[M("RR"), M("NumQ"), M("R", 2)],
        expected={
            "per_query": [(1 / 2 + 1 / 1) / 2, 2, (1 / 1 + 1 / 1) / 2],
            # one ranking c, b, a (R = 2): first relevant at 2; top 2 holds b only
            "flattened": [1 / 2, 1, 1 / 2],
        },
    ),
}


def _pairs():
    for axis, case in CASES.items():
        for value in case.expected:
            yield pytest.param(axis, value, id=f"{axis}={value}")


def test_every_axis_and_named_value_is_covered():
    assert set(CASES) == set(AXES)
    for name, axis in AXES.items():
        stored = {AXES[name].parse(v) for v in axis.values}
        covered = set(CASES[name].expected)
        assert stored <= covered, f"{name}: values {stored - covered} have no case"
        if axis.parse_open is not None:  # an open axis: at least two non-named values
            assert len(covered - stored) >= 2, f"{name}: fewer than two open values"


def _differs(a, b) -> bool:
    if a == RAISES or b == RAISES:
        return a != b
    for x, y in zip(a, b):
        xs, ys = (x if isinstance(x, tuple) else (x, x)), (y if isinstance(y, tuple) else (y, y))
        for u, v in zip(xs, ys):
            if math.isnan(u) != math.isnan(v) or (not math.isnan(u) and abs(u - v) > 1e-9):
                return True
    return False


@pytest.mark.parametrize("axis, value", list(_pairs()))
def test_axis_value(axis, value):
    case = CASES[axis]
    others = [v for v in case.expected if v != value]
    assert any(_differs(case.expected[value], case.expected[o]) for o in others), (
        f"the {axis} case does not tell {value!r} from the other values"
    )
    conv = Conventions().replace(**case.base, **{axis: value})
    assert getattr(conv, axis) == value
    expected = case.expected[value]
    if expected == RAISES:
        with pytest.raises(EvaluationError):
            evaluate_rows(case.qrels, case.run, case.measures, conv)
        return
    ev = evaluate_rows(case.qrels, case.run, case.measures, conv)
    for m, want in zip(case.measures, expected):
        lo, hi = want if isinstance(want, tuple) else (want, want)
        got_lo, got_hi = ev.aggregate(m), ev.aggregate(m, upper=True)
        if math.isnan(lo):
            assert math.isnan(got_lo) and math.isnan(got_hi), m.text
        else:
            assert got_lo == pytest.approx(lo, abs=TOL), m.text
            assert got_hi == pytest.approx(hi, abs=TOL), m.text


def test_each_value_is_also_accepted_by_measure_overrides():
    # the same switch made per measure gives the same number as made on the conventions
    for axis, case in CASES.items():
        if axis in ("query_set",):  # the query set is one per evaluation, not per measure
            continue
        for value, expected in case.expected.items():
            if expected == RAISES:
                continue
            measures = [Measure(m.family, m.cutoff, m.overrides + ((axis, value),),
                                params=m.params)
                        for m in case.measures]
            ev = evaluate_rows(case.qrels, case.run, measures, Conventions().replace(**case.base))
            for m, want in zip(measures, expected):
                lo, hi = want if isinstance(want, tuple) else (want, want)
                got_lo, got_hi = ev.aggregate(m), ev.aggregate(m, upper=True)
                for got, w in ((got_lo, lo), (got_hi, hi)):
                    assert (math.isnan(got) and math.isnan(w)) or got == pytest.approx(
                        w, abs=TOL), f"{axis}={value} {m.text}"


# --------------------------------------------------------------------------------------------
# empty_query: per query and aggregate
# --------------------------------------------------------------------------------------------

EMPTY_QRELS = [("q1", "a", 1), ("q2", "b", 0), ("q3", "c", 1), ("q3", "d", 1)]
EMPTY_RUN = [("q1", "a", 1.0), ("q2", "b", 1.0), ("q3", "d", 2.0), ("q3", "c", 1.0), ("q3", "x", 0.5)]
# R@1: q1 1/1, q2 empty, q3 1/2


@pytest.mark.parametrize(
    "rule, q2_value, counted, mean",
    [
        ("zero", 0.0, True, (1 + 0 + 1 / 2) / 3),
        ("one", 1.0, True, (1 + 1 + 1 / 2) / 3),
        ("nan", math.nan, True, math.nan),
        ("skip", math.nan, False, (1 + 1 / 2) / 2),
    ],
)
def test_empty_query_per_query_and_mean(rule, q2_value, counted, mean):
    m = M("R", 1)
    ev = evaluate_rows(EMPTY_QRELS, EMPTY_RUN, [m], Conventions(empty_query=rule))
    assert ev.qids.tolist() == ["q1", "q2", "q3"]
    per = ev.per_query[m].tolist()
    assert per[0] == 1.0 and per[2] == pytest.approx(1 / 2, abs=TOL)
    assert (math.isnan(per[1]) and math.isnan(q2_value)) or per[1] == q2_value
    assert ev.counted[m].tolist() == [True, counted, True]
    assert set(ev.values(m)) == ({"q1", "q2", "q3"} if counted else {"q1", "q3"})
    agg = ev.aggregate(m)
    assert (math.isnan(agg) and math.isnan(mean)) or agg == pytest.approx(mean, abs=TOL)


def test_empty_query_raise_names_the_query():
    with pytest.raises(EvaluationError, match="q2"):
        evaluate_rows(EMPTY_QRELS, EMPTY_RUN, [M("R", 1)], Conventions(empty_query="raise"))


def test_empty_query_skip_with_every_query_empty_is_nan():
    m = M("AP")
    ev = evaluate_rows([("q", "a", 0)], [("q", "a", 1.0)], [m], Conventions(empty_query="skip"))
    assert math.isnan(ev.aggregate(m)) and ev.values(m) == {}


def test_empty_query_applies_to_dcg_only_when_the_ideal_is_zero():
    # q: a (0) retrieved, b (1) judged not retrieved: DCG = 0 but the ideal is 1, not empty
    m = M("DCG")
    ev = evaluate_rows([("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0)], [m],
                       Conventions(empty_query="one"))
    assert ev.aggregate(m) == 0.0
    ev = evaluate_rows([("q", "a", 0)], [("q", "a", 1.0)], [m], Conventions(empty_query="one"))
    assert ev.aggregate(m) == 1.0


def test_dcg_with_a_negative_ideal_is_the_plain_sum():
    # negative_labels=keep: a (-1) at rank 1, b (0) at rank 2. DCG = -1/log2(2) = -1; the
    # ideal (b, a) is 0 - 1/log2(3) < 0, which makes nDCG empty (0/0 read as zero) but not DCG.
    qrels = [("q", "a", -1), ("q", "b", 0)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    for ideal in ("judged", "retrieved"):
        conv = Conventions(negative_labels="keep", ideal=ideal, empty_query="one")
        ev = evaluate_rows(qrels, run, [M("DCG"), M("nDCG")], conv)
        assert ev.aggregate(M("DCG")) == pytest.approx(-1.0, abs=TOL)
        assert ev.aggregate(M("nDCG")) == 1.0
    # DCG@1 of the list (b, a) is 0 and its ideal at 1 is 0 too, yet the query has a gain
    # (-1): not empty, so empty_query=one does not apply; DCG@2 = 0 - 1/log2(3)
    run = [("q", "a", 1.0), ("q", "b", 2.0)]
    ev = evaluate_rows(qrels, run, [M("DCG", 1), M("DCG", 2)],
                       Conventions(negative_labels="keep", empty_query="one"))
    assert ev.aggregate(M("DCG", 1)) == 0.0
    assert ev.aggregate(M("DCG", 2)) == pytest.approx(-1 / log2(3), abs=TOL)


def test_dcg_whose_gains_cancel_is_not_empty():
    # Found by the long fuzz against scikit-learn's dcg_score. Labels 0.5 (c) and -1 (b) and an
    # unjudged a, all tied at 0: the ideal gains (0.5, 0, -1) give 0.5/1 + 0 - 1/log2(4) = 0
    # exactly, yet the query has gains, so it is not empty: under ties=average DCG@1 is the
    # group's mean gain (0.5 + 0 - 1)/3 = -1/6 at discount 1, which is what dcg_score returns,
    # not the empty_query value.
    qrels = [("q", "b", -1.0), ("q", "c", 0.5)]
    run = [("q", "a", 0.0), ("q", "b", 0.0), ("q", "c", 0.0)]
    conv = Conventions(negative_labels="keep", label_type="float", ties="average",
                       ideal="retrieved", empty_query="zero")
    ev = evaluate_rows(qrels, run, [M("DCG", 1)], conv)
    assert ev.aggregate(M("DCG", 1)) == pytest.approx(-1 / 6, abs=TOL)


# --------------------------------------------------------------------------------------------
# score_precision, rank_source, label_type, depth: further cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("precision, expected", [("float64", 1 / 2), ("float32", 1 / 1)])
def test_score_precision_large_scores(precision, expected):
    # 1e8 and 1e8 + 1 are distinct doubles but the same float32 (spacing 8 at 1e8)
    m = M("RR")
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1e8), ("q", "b", 1e8 + 1)]
    conv = Conventions(score_precision=precision, ties="docid_asc")
    assert evaluate_rows(qrels, run, [m], conv).aggregate(m) == pytest.approx(expected, abs=TOL)


def test_score_precision_float32_keeps_distinct_float32_scores_apart():
    # 1.0 and 1.0 + 1e-6 differ in float32 (spacing 1.2e-7): no tie, b first
    m = M("RR")
    run = [("q", "a", 1.0), ("q", "b", 1.0 + 1e-6)]
    conv = Conventions(score_precision="float32", ties="docid_asc")
    got = evaluate_rows([("q", "a", 1), ("q", "b", 0)], run, [m], conv).aggregate(m)
    assert got == pytest.approx(1 / 2, abs=TOL)


def test_rank_column_ties_fall_to_the_tie_rule():
    # a and b share rank 1; docid_desc puts b first, docid_asc a
    m = M("RR")
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 5.0, 1), ("q", "b", 0.0, 1)]
    base = Conventions(rank_source="rank_column")
    assert evaluate_rows(qrels, run, [m], base).aggregate(m) == pytest.approx(1 / 2, abs=TOL)
    got = evaluate_rows(qrels, run, [m], base.replace(ties="docid_asc")).aggregate(m)
    assert got == 1.0


def test_rank_column_missing_is_refused():
    with pytest.raises(EvaluationError, match="rank"):
        evaluate_rows([("q", "a", 1)], [("q", "a", 1.0)], [M("RR")],
                      Conventions(rank_source="rank_column"))


def test_duplicates_keep_the_listing_position_for_input_order():
    # a, b, a all at 1.0: first keeps a at listing 1 (a, b); last keeps a at listing 3 (b, a)
    m = M("RR")
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "a", 1.0)]
    base = Conventions(ties="input_order")
    assert evaluate_rows(qrels, run, [m], base.replace(duplicates="first")).aggregate(m) == 1.0
    got = evaluate_rows(qrels, run, [m], base.replace(duplicates="last")).aggregate(m)
    assert got == pytest.approx(1 / 2, abs=TOL)


def test_duplicates_keep_counted_counts_later_relevant_listings_in_r_and_the_ideal():
    counted = Conventions(duplicates="keep_counted")
    # relevant a and f; list a, b, a, a: a's two later listings make R = 2 + 2 = 4, and the
    # judged ideal four gains of 1; hits at ranks 1, 3, 4
    qrels = [("q", "a", 1), ("q", "f", 1)]
    run = [("q", "a", 4.0), ("q", "b", 3.0), ("q", "a", 2.0), ("q", "a", 1.0)]
    ev = evaluate_rows(qrels, run, [M("R", 4), M("AP", 4), M("nDCG", 4), M("P", 4)], counted)
    assert ev.aggregate(M("R", 4)) == pytest.approx(3 / 4, abs=TOL)
    assert ev.aggregate(M("AP", 4)) == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 4, abs=TOL)
    assert ev.aggregate(M("nDCG", 4)) == pytest.approx(
        (1 + 1 / log2(4) + 1 / log2(5)) / (1 + 1 / log2(3) + 1 / log2(4) + 1 / log2(5)), abs=TOL)
    assert ev.aggregate(M("P", 4)) == pytest.approx(3 / 4, abs=TOL)  # the hits are keep's
    # a listing past the cutoff counts in R too: list a, b, a at k = 2: R = 2, one hit
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)]
    ev = evaluate_rows([("q", "a", 1)], run, [M("R", 2), M("AP", 2), M("nDCG", 2)], counted)
    assert ev.aggregate(M("R", 2)) == pytest.approx(1 / 2, abs=TOL)  # keep: 1 / 1
    assert ev.aggregate(M("AP", 2)) == pytest.approx((1 / 1) / 2, abs=TOL)
    assert ev.aggregate(M("nDCG", 2)) == pytest.approx(1 / (1 + 1 / log2(3)), abs=TOL)  # keep: 1
    # a repeated document that is not relevant adds nothing: b, b, a with b judged 0: R = 1
    run = [("q", "b", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)]
    ev = evaluate_rows([("q", "a", 1), ("q", "b", 0)], run, [M("R", 3), M("AP", 3)], counted)
    assert ev.aggregate(M("R", 3)) == 1.0
    assert ev.aggregate(M("AP", 3)) == pytest.approx((1 / 3) / 1, abs=TOL)
    # the counted listing carries its label's gain into the ideal: a (2) listed twice, f (1):
    # ideal gains 2, 2, 1, so nDCG@2 = (2 + 2/log2 3) / (2 + 2/log2 3) = 1; keep's ideal 2, 1
    # gives (2 + 2/log2 3) / (2 + 1/log2 3)
    qrels, run = [("q", "a", 2), ("q", "f", 1)], [("q", "a", 2.0), ("q", "a", 1.0)]
    got = evaluate_rows(qrels, run, [M("nDCG", 2)], counted).aggregate(M("nDCG", 2))
    assert got == pytest.approx(1.0, abs=TOL)
    kept = evaluate_rows(qrels, run, [M("nDCG", 2)], Conventions(duplicates="keep"))
    assert kept.aggregate(M("nDCG", 2)) == pytest.approx(
        (2 + 2 / log2(3)) / (2 + 1 / log2(3)), abs=TOL)


def test_truncation_before_the_negative_check():
    # -0.5 truncates to 0 (trec_eval reads labels with atol): not negative, so no error
    m = M("P", 1)
    qrels = [("q", "a", -0.5), ("q", "b", 1)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    conv = Conventions(label_type="int_truncate", negative_labels="raise")
    assert evaluate_rows(qrels, run, [m], conv).aggregate(m) == 0.0
    with pytest.raises(EvaluationError):
        evaluate_rows(qrels, run, [m], conv.replace(label_type="float"))


def test_query_set_qrels_strict_scores_every_judged_query_when_the_run_has_no_other():
    # judged q1 {a: 1}, q2 {b: 1}; the run has q1 only: q2 counts 0, as under query_set=qrels
    m = M("P", 1)
    conv = Conventions(query_set="qrels_strict")
    got = evaluate_rows([("q1", "a", 1), ("q2", "b", 1)], [("q1", "a", 1.0)], [m], conv)
    assert got.aggregate(m) == pytest.approx((1 + 0) / 2, abs=TOL)


def test_ideal_judged_to_list_cuts_the_judged_ideal_at_the_list_length():
    # judged a, b, c (all 1); ranks: a (2.0), x (1.0, unjudged); nDCG@5, DCG = 1
    qrels = [("q", "a", 1), ("q", "b", 1), ("q", "c", 1)]
    run = [("q", "a", 2.0), ("q", "x", 1.0)]
    want = {
        "judged": 1 / (1 + 1 / log2(3) + 1 / log2(4)),  # three ones in the ideal
        "judged_to_list": 1 / (1 + 1 / log2(3)),  # min(5, n = 2) ones
        "retrieved": 1 / 1,  # the list's own labels 1, 0
    }
    for ideal, value in want.items():
        ev = evaluate_rows(qrels, run, [M("nDCG", 5)], Conventions(ideal=ideal))
        assert ev.aggregate(M("nDCG", 5)) == pytest.approx(value, abs=TOL), ideal


def test_ideal_k_slots_fills_every_position_up_to_k_whatever_the_query_has():
    # judged a, b (1); ranks: a (2.0), x (1.0, unjudged): DCG = 1 at any k
    qrels = [("q", "a", 1), ("q", "b", 1)]
    run = [("q", "a", 2.0), ("q", "x", 1.0)]
    conv = Conventions(ideal="k_slots")
    want = {
        M("nDCG", 5): 1 / (1 + 1 / log2(3) + 1 / log2(4) + 1 / log2(5) + 1 / log2(6)),  # 5 slots
        M("nDCG", 1): 1 / 1,
        M("nDCG"): 1 / (1 + 1 / log2(3)),  # no cutoff: n = 2 slots
    }
    for m, value in want.items():
        ev = evaluate_rows(qrels, run, [m], conv)
        assert ev.aggregate(m) == pytest.approx(value, abs=TOL), m.text
    # graded: the slots hold the largest judged gain (2 here, linear), never reached by a list
    # of one 2 and one 1
    graded = [("q", "a", 2), ("q", "b", 1)]
    ev = evaluate_rows(graded, [("q", "a", 2.0), ("q", "b", 1.0)], [M("nDCG", 3)], conv)
    assert ev.aggregate(M("nDCG", 3)) == pytest.approx(
        (2 + 1 / log2(3)) / (2 * (1 + 1 / log2(3) + 1 / log2(4))), abs=TOL)
    # nothing relevant: the slots hold gain 0, the query is empty (empty_query decides)
    none = evaluate_rows([("q", "a", 0)], run, [M("nDCG", 3)], conv.replace(empty_query="one"))
    assert none.aggregate(M("nDCG", 3)) == 1.0


def test_query_set_run_all_and_run_strict_leave_out_judged_queries_missing_from_the_run():
    # judged q1 {a: 1}, q2 {b: 1}; the run ranks a for q1 only
    qrels, run = [("q1", "a", 1), ("q2", "b", 1)], [("q1", "a", 1.0)]
    want = {"run_all": 1 / 1, "run_strict": 1 / 1, "qrels": (1 + 0) / 2, "qrels_strict": (1 + 0) / 2}
    for query_set, value in want.items():
        ev = evaluate_rows(qrels, run, [M("P", 1)], Conventions(query_set=query_set))
        assert ev.aggregate(M("P", 1)) == pytest.approx(value, abs=TOL), query_set


def test_duplicates_set_refuses_tie_rules_that_cannot_say_which_listing_is_first():
    qrels, run = [("q", "a", 1)], [("q", "a", 1.0), ("q", "b", 1.0), ("q", "a", 1.0)]
    for ties in ("average", "unspecified"):
        with pytest.raises(EvaluationError, match="duplicates=set"):
            evaluate_rows(qrels, run, [M("RR")], Conventions(duplicates="set", ties=ties))


def test_query_set_raise_accepts_equal_sets():
    m = M("P", 1)
    conv = Conventions(query_set="raise")
    got = evaluate_rows([("q1", "a", 1), ("q2", "b", 0)], [("q1", "a", 1.0), ("q2", "b", 1.0)],
                        [m], conv).aggregate(m)
    assert got == pytest.approx((1 + 0) / 2, abs=TOL)


def test_depth_cuts_before_the_ideal_is_built_only_under_retrieved():
    # ranks: a (0), b (2), c (1); depth 1 keeps a. judged ideal 2, 1 -> nDCG 0 but not empty;
    # retrieved ideal: the cut list holds only a (0) -> empty -> 0 under zero, 1 under one
    m = M("nDCG")
    qrels = [("q", "a", 0), ("q", "b", 2), ("q", "c", 1)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    conv = Conventions(depth=1, empty_query="one")
    assert evaluate_rows(qrels, run, [m], conv).aggregate(m) == 0.0
    assert evaluate_rows(qrels, run, [m], conv.replace(ideal="retrieved")).aggregate(m) == 1.0


# --------------------------------------------------------------------------------------------
# ties=average against a brute-force oracle over every order of every tied group
# --------------------------------------------------------------------------------------------


def oracle_measures(labels: list, R: int, ideal_gains: list, L: int = 1) -> dict[str, float]:
    """The plain per-order formulas for one fixed order (labels None = unjudged)."""
    rel = [lab is not None and lab >= L for lab in labels]
    gains = [0.0 if lab is None else float(lab) for lab in labels]

    def disc(i):  # 0-based position
        return 1 / log2(i + 2)

    out = {}
    first = next((i for i, r in enumerate(rel) if r), None)
    out["RR"] = 0.0 if first is None else 1 / (first + 1)
    out["RR@2"] = 0.0 if first is None or first >= 2 else 1 / (first + 1)
    hits, ap = 0, 0.0
    for i, r in enumerate(rel):
        if r:
            hits += 1
            ap += hits / (i + 1)
    out["AP"] = ap / R
    hits3, ap3 = 0, 0.0
    for i, r in enumerate(rel[:3]):
        if r:
            hits3 += 1
            ap3 += hits3 / (i + 1)
    out["AP@3"] = ap3 / R
    for k in (1, 2, 3, 4):
        out[f"Success@{k}"] = float(any(rel[:k]))
        out[f"P@{k}"] = sum(rel[:k]) / k
        out[f"R@{k}"] = sum(rel[:k]) / R
    dcg = sum(g * disc(i) for i, g in enumerate(gains))
    idcg = sum(g * disc(i) for i, g in enumerate(sorted(ideal_gains, reverse=True)))
    dcg3 = sum(g * disc(i) for i, g in enumerate(gains[:3]))
    idcg3 = sum(g * disc(i) for i, g in enumerate(sorted(ideal_gains, reverse=True)[:3]))
    out["DCG"], out["nDCG"], out["DCG@3"], out["nDCG@3"] = dcg, dcg / idcg, dcg3, dcg3 / idcg3
    return out


ORACLE_MEASURES = {
    "RR": M("RR"), "RR@2": M("RR", 2), "AP": M("AP"), "AP@3": M("AP", 3),
    **{f"Success@{k}": M("Success", k) for k in (1, 2, 3, 4)},
    **{f"P@{k}": M("P", k) for k in (1, 2, 3, 4)},
    **{f"R@{k}": M("R", k) for k in (1, 2, 3, 4)},
    "DCG": M("DCG"), "nDCG": M("nDCG"), "DCG@3": M("DCG", 3), "nDCG@3": M("nDCG", 3),
}


def brute_force_average(groups: list[list], R: int, ideal_gains: list) -> dict[str, float]:
    """Mean of the oracle over every order of every tied group (groups in score order)."""
    per_order = []
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        labels = [lab for g in choice for lab in g]
        per_order.append(oracle_measures(labels, R, ideal_gains))
    return {name: fmean(o[name] for o in per_order) for name in per_order[0]}


# Groups in score order; each entry a label (None = unjudged). Judged but not retrieved: u (2).
AVG_GROUPS = [
    [0],  # score 4
    [1, None, 2, 0],  # score 3: a tied group of 4, mixed relevance
    [1, 0],  # score 2
    [3],  # score 1
]
AVG_UNRETRIEVED = [2]


def _avg_case():
    qrels, run, ideal = [], [], []
    for gi, group in enumerate(AVG_GROUPS):
        for j, lab in enumerate(group):
            doc = f"g{gi}d{j}"
            run.append(("q", doc, float(len(AVG_GROUPS) - gi)))
            if lab is not None:
                qrels.append(("q", doc, lab))
                ideal.append(lab)
    for j, lab in enumerate(AVG_UNRETRIEVED):
        qrels.append(("q", f"unret{j}", lab))
        ideal.append(lab)
    R = sum(1 for lab in ideal if lab >= 1)
    return qrels, run, R, ideal


@pytest.mark.parametrize("name", list(ORACLE_MEASURES))
def test_average_matches_brute_force_over_all_orders(name):
    qrels, run, R, ideal = _avg_case()
    expected = brute_force_average(AVG_GROUPS, R, ideal)[name]
    m = ORACLE_MEASURES[name]
    got = evaluate_rows(qrels, run, [m], Conventions(ties="average")).aggregate(m)
    assert got == pytest.approx(expected, abs=1e-12)


def test_brute_force_oracle_agrees_with_hand_arithmetic():
    # the ties case of CASES: one relevant among four tied documents
    avg = brute_force_average([[1, 0, 0, 0]], 1, [1, 0, 0, 0])
    assert avg["RR"] == pytest.approx((1 / 1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, abs=TOL)
    assert avg["Success@3"] == pytest.approx(3 / 4, abs=TOL)
    assert avg["AP"] == pytest.approx((1 / 1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, abs=TOL)
    # two relevant among three tied: AP over the 6 orders (3 distinct label patterns x 2)
    #   1 1 0: (1 + 1) / 2;  1 0 1: (1 + 2/3) / 2;  0 1 1: (1/2 + 2/3) / 2
    avg = brute_force_average([[1, 1, 0]], 2, [1, 1, 0])
    assert avg["AP"] == pytest.approx(((1 + 1) / 2 + (1 + 2 / 3) / 2 + (1 / 2 + 2 / 3) / 2) / 3,
                                      abs=TOL)
    assert avg["RR"] == pytest.approx((1 + 1 + 1 / 2) / 3, abs=TOL)


@pytest.mark.parametrize("name", ["RR", "AP", "Success@1", "Success@2", "P@1", "nDCG"])
def test_average_two_relevant_among_three_tied(name):
    qrels = [("q", "a", 1), ("q", "b", 1), ("q", "c", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    expected = brute_force_average([[1, 1, 0]], 2, [1, 1, 0])[name]
    m = ORACLE_MEASURES[name]
    got = evaluate_rows(qrels, run, [m], Conventions(ties="average")).aggregate(m)
    assert got == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("name", ["P@1", "RR", "AP", "Success@1", "nDCG", "R@4"])
def test_average_with_depth_cut_inside_a_tied_group(name):
    # a (1) and b (0) tied at the top, depth 1. Average over the two orders of the whole run,
    # each order then cut to depth 1: (a) scores as a list holding only a, (b) as one holding b.
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    cut_orders = [oracle_measures([1], 1, [1, 0]), oracle_measures([0], 1, [1, 0])]
    expected = fmean(o[name] for o in cut_orders)  # e.g. P@1: (1 + 0) / 2
    m = ORACLE_MEASURES[name]
    got = evaluate_rows(qrels, run, [m], Conventions(ties="average", depth=1)).aggregate(m)
    assert got == pytest.approx(expected, abs=TOL)


def test_average_with_depth_and_retrieved_ideal_over_a_graded_tied_group():
    # a (1) and b (2) tied, depth 1, ideal=retrieved: both documents are relevant, but the cut
    # keeps one of them, and the ideal is built from the cut list. Order (a, b) keeps [a]:
    # nDCG = 1/1; order (b, a) keeps [b]: 2/2. Mean over the orders: (1 + 1) / 2.
    m = M("nDCG")
    qrels = [("q", "a", 1), ("q", "b", 2)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    conv = Conventions(ties="average", depth=1, ideal="retrieved")
    for rule in ("docid_desc", "docid_asc"):  # each order alone
        assert evaluate_rows(qrels, run, [m], conv.replace(ties=rule)).aggregate(m) == 1.0
    try:
        got = evaluate_rows(qrels, run, [m], conv).aggregate(m)
    except EvaluationError:  # refusing (the ideal is random) would also be consistent
        return
    assert got == pytest.approx((1 + 1) / 2, abs=TOL)


# --------------------------------------------------------------------------------------------
# ties=unspecified: the range must hold every order's value
# --------------------------------------------------------------------------------------------
# For Fe and AP@k over retrieved relevant documents the order that minimises the numerator is
# not the one that minimises the ratio; the reference may refuse such a case (EvaluationError
# naming ties=unspecified), but when it answers, the range must hold every order's value.


def range_or_refused(qrels, run, m):
    try:
        ev = evaluate_rows(qrels, run, [m], Conventions(ties="unspecified"))
    except EvaluationError as exc:
        assert "ties=unspecified" in str(exc)
        return None
    return ev.per_query[m][0], ev.upper[m][0]



def test_unspecified_range_fe_holds_every_order():
    # a (1), b (1), c (0) all tied; Fe@1 = 2 n_1 / (1 + n_2) per order:
    #   r r n -> 2/(1+2); r n r -> 2/(1+1) = 1; n r r -> 0. Range [0, 1].
    m = M("Fe", 1)
    qrels = [("q", "a", 1), ("q", "b", 1), ("q", "c", 0)]
    run = [("q", "a", 1.0), ("q", "c", 1.0), ("q", "b", 1.0)]
    # input order a, c, b is the order r n r
    got = evaluate_rows(qrels, run, [m], Conventions(ties="input_order")).aggregate(m)
    assert got == pytest.approx(2 * 1 / (1 + 1), abs=TOL)
    rng = range_or_refused(qrels, run, m)
    if rng is not None:
        assert rng == pytest.approx((0.0, 2 / (1 + 1)), abs=TOL)


def test_unspecified_range_ap_retrieved_relevant_holds_every_order():
    # d (1) at rank 1; c (0), b (1), a (0) tied below it. AP@3 with the retrieved-relevant
    # denominator, per order of ranks 2-3:  n n -> 1/1;  r n -> (1 + 1)/2;  n r -> (1 + 2/3)/2.
    # docid_desc gives d c b a = r n r n: (1 + 2/3) / 2. Range [(1 + 2/3)/2, 1].
    m = M("AP", 3, ap_denominator="retrieved_relevant")
    qrels = [("q", "d", 1), ("q", "b", 1), ("q", "a", 0), ("q", "c", 0)]
    run = [("q", "d", 2.0), ("q", "c", 1.0), ("q", "b", 1.0), ("q", "a", 1.0)]
    desc = evaluate_rows(qrels, run, [m]).aggregate(m)
    assert desc == pytest.approx((1 + 2 / 3) / 2, abs=TOL)
    rng = range_or_refused(qrels, run, m)
    if rng is not None:
        assert rng == pytest.approx(((1 + 2 / 3) / 2, 1.0), abs=TOL)


def test_unspecified_range_custom_gain_map_holds_every_order():
    # labels 0, 1, 2 tied, gains 0 -> 0, 1 -> 3, 2 -> 1 (not monotone in the label).
    # DCG per order is sum g_i / log2(i + 1): best 3, 1, 0; worst 0, 1, 3.
    m = M("DCG", gain="0:0,1:3,2:1")
    qrels = [("q", "a", 0), ("q", "b", 1), ("q", "c", 2)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    ev = evaluate_rows(qrels, run, [m], Conventions(ties="unspecified"))
    worst = 0 / log2(2) + 1 / log2(3) + 3 / log2(4)
    best = 3 / log2(2) + 1 / log2(3) + 0 / log2(4)
    assert (ev.per_query[m][0], ev.upper[m][0]) == pytest.approx((worst, best), abs=TOL)


@pytest.mark.parametrize("family", ["nDCG", "DCG"])
def test_unspecified_range_when_the_depth_cut_decides_emptiness(family):
    # a (1) and b (0) tied, depth 1, ideal=retrieved, empty_query=zero. Order (a, b) keeps [a]:
    # DCG = 1/1, ideal 1/1, nDCG = 1. Order (b, a) keeps [b]: ideal 0, the query is empty and
    # scores 0. Range [0, 1] (or a refusal naming ties=unspecified).
    m = M(family)
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    conv = Conventions(depth=1, ideal="retrieved", empty_query="zero")
    assert evaluate_rows(qrels, run, [m], conv.replace(ties="docid_asc")).aggregate(m) == 1.0
    assert evaluate_rows(qrels, run, [m], conv.replace(ties="docid_desc")).aggregate(m) == 0.0
    try:
        ev = evaluate_rows(qrels, run, [m], conv.replace(ties="unspecified"))
    except EvaluationError as exc:
        assert "ties=unspecified" in str(exc)
        return
    assert (ev.per_query[m][0], ev.upper[m][0]) == pytest.approx((0.0, 1.0), abs=TOL)


def test_unspecified_range_when_the_depth_cut_decides_the_retrieved_ideal():
    # a (1), b (2), c (1) tied, depth 2, ideal=retrieved: the ideal is built from the two kept
    # documents. Per order of the top two (gains):
    #   1 2 (a b, c b): nDCG = (1 + 2/log2(3)) / (2 + 1/log2(3)); nDCG@1 = 1/2
    #   2 1 (b a, b c): nDCG = 1; nDCG@1 = 2/2
    #   1 1 (a c, c a): nDCG = 1; nDCG@1 = 1/1
    qrels = [("q", "a", 1), ("q", "b", 2), ("q", "c", 1)]
    run = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    conv = Conventions(depth=2, ideal="retrieved")
    worst = {"nDCG": (1 + 2 / log2(3)) / (2 + 1 / log2(3)), "nDCG@1": 1 / 2}
    for m in (M("nDCG"), M("nDCG", 1)):
        # docid_desc keeps c, b: the order 1 2
        desc = evaluate_rows(qrels, run, [m], conv.replace(ties="docid_desc")).aggregate(m)
        assert desc == pytest.approx(worst[m.text], abs=TOL)
        try:
            ev = evaluate_rows(qrels, run, [m], conv.replace(ties="unspecified"))
        except EvaluationError as exc:
            assert "ties=unspecified" in str(exc)
            continue
        assert (ev.per_query[m][0], ev.upper[m][0]) == pytest.approx((worst[m.text], 1.0), abs=TOL)


def test_unspecified_range_of_ap_at_k_over_retrieved_relevant_when_the_cut_splits_a_group():
    # a (1) at rank 1, then b (1), c (0), d (0), e (0) tied at ranks 2-5; AP@3 divides by the
    # relevant documents found in the top 3. Orders of the group's two kept ranks:
    #   b at rank 2: (1/1 + 2/2) / 2 = 1;  b at rank 3: (1/1 + 2/3) / 2 = 5/6;
    #   b below rank 3: (1/1) / 1 = 1.  Range [5/6, 1].
    # A second query: x (0) at rank 1, then y (1), z (0), w (1) tied; AP@2: y or w at rank 2
    # gives (1/2) / 1, neither gives 0 (nothing found). Range [0, 1/2].
    qrels = [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 0), ("q1", "d", 0), ("q1", "e", 0),
             ("q2", "x", 0), ("q2", "y", 1), ("q2", "z", 0), ("q2", "w", 1)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q1", "d", 1.0),
           ("q1", "e", 1.0), ("q2", "x", 2.0), ("q2", "y", 1.0), ("q2", "z", 1.0),
           ("q2", "w", 1.0)]
    conv = Conventions(ties="unspecified", ap_denominator="retrieved_relevant")
    for m, want in ((M("AP", 3), [(5 / 6, 1.0), None]), (M("AP", 2), [None, (0.0, 1 / 2)])):
        ev = evaluate_rows(qrels, run, [m], conv)
        for i, w in enumerate(want):
            if w is not None:
                assert (ev.per_query[m][i], ev.upper[m][i]) == pytest.approx(w, abs=TOL)
    # under ties=average the expectation has no closed form: still refused
    with pytest.raises(EvaluationError):
        evaluate_rows(qrels, run, [M("AP", 3)], conv.replace(ties="average"))


def test_rounding_reports_both_roundings_of_a_value_at_a_half():
    """A library that rounds to 5 places reports a value at a half (P@64 with one relevant
    document: 1/64 = 0.015625) as 0.01562 or 0.01563 by the last bit of its own arithmetic
    (BEIR's AP of 0.634375 came out 0.63438 where the reference's rounded to 0.63437: found by
    the long fuzz). reported_ranges holds both; the value itself is Python's rounding; a value
    away from any half keeps one rounding."""
    from conformance.measures import Measure

    qrels = [("q1", "d0", 1), ("q2", "e0", 1)]
    run = [("q1", f"d{i}", 64.0 - i) for i in range(64)] + [("q2", f"e{i}", 3.0 - i) for i in range(3)]
    m = Measure("P", 64)
    ev = evaluate_rows(qrels, run, [m], Conventions(rounding=5))
    assert ev.values(m) == {"q1": round(1 / 64, 5), "q2": round(1 / 64, 5)}
    assert ev.reported_ranges(m) == {"q1": (0.01562, 0.01563), "q2": (0.01562, 0.01563)}
    assert ev.reported_aggregate(m) == (0.01562, 0.01563)
    m3 = Measure("P", 3)  # 1/3 and 1/3: no half in sight
    ev = evaluate_rows(qrels, run, [m3], Conventions(rounding=5))
    assert ev.reported_ranges(m3)["q2"] == (0.33333, 0.33333)
    assert ev.reported_ranges(m3) == {q: (v, v) for q, v in ev.values(m3).items()}


def test_rounding_rounds_each_query_as_python_does():
    """rounding=N: each query's value is round(v, N) (Python's, correctly rounded), including
    values whose scaled form sits at or near a half, where np.round alone can differ."""
    import numpy as np

    from conformance.reference.evaluate import round_half_even

    values = [0.015625, 2.675, 0.123455, 1 / 3, 2 / 3, 0.5, 1.5, 2.5, -0.125, 1e-9, 0.0]
    for places in range(7):
        got = round_half_even(np.array(values), places).tolist()
        assert got == [round(v, places) for v in values], places
    case = CASES["rounding"]
    ev = evaluate_rows(case.qrels, case.run, case.measures, Conventions(rounding=5))
    assert ev.values(case.measures[0]) == {"q1": 0.33333, "q2": 0.0}


def _values(qrels_rows, run_rows, texts, **conventions):
    from conformance.measures import parse_measure

    ev = evaluate_rows(qrels_rows, run_rows, [parse_measure(t) for t in texts],
                       Conventions(**conventions))
    return [float(ev.per_query[parse_measure(t)][0]) for t in texts]


def test_group_last_gives_every_tied_document_the_group_s_last_rank():
    # Cornac's MAP, live: n, r1, r2 with one score: each relevant document at rank 3 with 2
    # relevant through it, (2/3 + 2/3) / 2; the pessimistic order n, r1, r2: (1/2 + 2/3) / 2
    tied = [("u", "n", 1.0), ("u", "r1", 1.0), ("u", "r2", 1.0)]
    qrels = [("u", "n", 0), ("u", "r1", 1), ("u", "r2", 1)]
    rule = {"ap_denominator": "retrieved_relevant"}
    assert _values(qrels, tied, ["AP"], ties="group_last", **rule) == pytest.approx([2 / 3], abs=TOL)
    assert _values(qrels, tied, ["AP"], ties="pessimistic", **rule) == pytest.approx([7 / 12], abs=TOL)
    # r1 above a tie of n and r2 (Cornac, live: 0.83333): r1 1/1; r2 at rank 3 with 2 relevant
    # through it, 2/3; mean 5/6 (the order r1, n, r2 gives it too). n above the tie of r1 and
    # r2: both at rank 3, (2/3 + 2/3) / 2, where every order of the two gives (1/2 + 2/3) / 2
    split = [("u", "r1", 2.0), ("u", "n", 1.0), ("u", "r2", 1.0)]
    assert _values(qrels, split, ["AP"], ties="group_last", **rule) == pytest.approx([5 / 6], abs=TOL)
    above = [("u", "n", 2.0), ("u", "r1", 1.0), ("u", "r2", 1.0)]
    assert _values(qrels, above, ["AP"], ties="group_last", **rule) == pytest.approx(
        [(2 / 3 + 2 / 3) / 2], abs=TOL)
    for order in ("docid_desc", "docid_asc", "pessimistic", "optimistic"):
        assert _values(qrels, above, ["AP"], ties=order, **rule) == pytest.approx(
            [(1 / 2 + 2 / 3) / 2], abs=TOL)


# x (3.0, label 1); the tie {a (2), b (0), c (1)} at 2.0, ranks 2-4, so all three at 4; d (1.0,
# label 1) at 5. R = 4 (x, a, c, d).
GROUPED_QRELS = [("q", "x", 1), ("q", "a", 2), ("q", "b", 0), ("q", "c", 1), ("q", "d", 1)]
GROUPED_RUN = [("q", "x", 3.0), ("q", "a", 2.0), ("q", "b", 2.0), ("q", "c", 2.0), ("q", "d", 1.0)]


def test_group_last_reaches_ap_p_rr_and_ndcg_through_the_ranks():
    texts = ["AP", "P@2", "P@4", "P@5", "R@4", "RR", "nDCG", "DCG", "Success@1"]
    # AP: x 1/1; a and c at 4 with 3 relevant through it, 3/4 each; d 4/5: (1 + 3/2 + 4/5) / 4
    # DCG (linear gains): x 1/log2 2; a, b, c at 4: (2 + 0 + 1)/log2 5; d 1/log2 6
    dcg = 1.0 + 3 / log2(5) + 1 / log2(6)
    ideal = 2.0 + 1 / log2(3) + 1 / log2(4) + 1 / log2(5)  # gains 2, 1, 1, 1
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_last") == pytest.approx(
        [(1 + 3 / 2 + 4 / 5) / 4, 1 / 2, 3 / 4, 4 / 5, 3 / 4, 1.0, dcg / ideal, dcg, 1.0], abs=TOL)


def test_group_last_counts_a_group_in_the_top_k_only_if_it_ends_at_or_before_k():
    # the group ends at 4: past 2 and 3 it is in neither top, at 4 and on it is whole
    texts = ["P@3", "AP@3", "nDCG@3", "R@3", "Success@3", "P@4", "AP@4"]
    ideal3 = 2.0 + 1 / log2(3) + 1 / log2(4)
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_last") == pytest.approx(
        [1 / 3, (1 / 1) / 4, 1.0 / ideal3, 1 / 4, 1.0, 3 / 4, (1 + 3 / 4 + 3 / 4) / 4], abs=TOL)
    # P@3 under min_k_n still divides by min(3, n = 5), not by the one document left in the top
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["P@3"], ties="group_last",
                   k_beyond_list="min_k_n") == pytest.approx([1 / 3], abs=TOL)
    # the first relevant document in a group past k: n1 at 1, {n2, r} at rank 3
    qrels = [("q", "n1", 0), ("q", "n2", 0), ("q", "r", 1)]
    run = [("q", "n1", 2.0), ("q", "n2", 1.0), ("q", "r", 1.0)]
    assert _values(qrels, run, ["RR", "RR@2", "Success@2", "Success@3"],
                   ties="group_last") == pytest.approx([1 / 3, 0.0, 0.0, 1.0], abs=TOL)
    # under docid_desc the order r, n2 gives RR 1/2 and Success@2 1
    assert _values(qrels, run, ["RR", "Success@2"]) == pytest.approx([1 / 2, 1.0], abs=TOL)


def test_group_last_cuts_at_a_depth_the_group_that_ends_past_it():
    # depth 3: the group ending at 4 is cut whole, x alone is kept: AP 1/4, P@5 1/5, NumRet 1
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["AP", "P@5", "NumRet"], ties="group_last",
                   depth=3) == pytest.approx([1 / 4, 1 / 5, 1.0], abs=TOL)
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["AP", "NumRet"], ties="group_last",
                   depth=4) == pytest.approx([(1 + 3 / 4 + 3 / 4) / 4, 4.0], abs=TOL)


def test_group_last_refuses_a_tied_list_where_a_family_reads_positions():
    with pytest.raises(EvaluationError, match="ties=group_last"):
        _values(GROUPED_QRELS, GROUPED_RUN, ["Rprec"], ties="group_last")
    # without a tie every row has its own rank, as under any order: x a b c d, R = 4,
    # relevant in the top 4 = 3
    untied = [("q", d, float(5 - i)) for i, d in enumerate("xabcd")]
    assert _values(GROUPED_QRELS, untied, ["Rprec"], ties="group_last") == pytest.approx(
        [3 / 4], abs=TOL)


def test_group_last_refuses_only_a_tie_among_the_rows_a_cut_measure_reads():
    # the group ends at 4: past k = 1 (ERR@1 reads x alone), within k = 4. ERR@1 with x's
    # label 1 under the default err_max_grade 4: (2^1 - 1) / 2^4
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["ERR@1"], ties="group_last") == pytest.approx(
        [1 / 16], abs=TOL)
    with pytest.raises(EvaluationError, match="ties=group_last"):
        _values(GROUPED_QRELS, GROUPED_RUN, ["ERR@4"], ties="group_last")


def test_group_first_gives_every_tied_document_the_group_s_first_rank():
    # GROUPED: x at 1; the tie {a (2), b (0), c (1)} all at rank 2; d at 5. R = 4.
    texts = ["AP", "P@2", "P@4", "P@5", "R@2", "RR", "nDCG", "DCG", "Success@1"]
    # AP: x 1/1; a and c at 2 with 3 relevant through the group, 3/2 each; d 4/5:
    # (1 + 3/2 + 3/2 + 4/5) / 4. P@2: the group starts at 2, so x, a, b, c are in the top 2:
    # 3 relevant over k = 2. R@2: 3 of 4.
    # DCG (linear gains): x 1/log2 2; a, b, c at 2: (2 + 0 + 1)/log2 3; d 1/log2 6
    dcg = 1.0 + 3 / log2(3) + 1 / log2(6)
    ideal = 2.0 + 1 / log2(3) + 1 / log2(4) + 1 / log2(5)  # gains 2, 1, 1, 1
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_first") == pytest.approx(
        [(1 + 3 / 2 + 3 / 2 + 4 / 5) / 4, 3 / 2, 3 / 4, 4 / 5, 3 / 4, 1.0, dcg / ideal, dcg, 1.0],
        abs=TOL)


def test_group_first_puts_a_group_that_starts_by_k_in_the_top_k_whole():
    # k = 1: x alone (the group starts at 2); k = 2 and 3: x and the whole group, 4 rows
    texts = ["P@1", "P@2", "P@3", "R@3", "Success@1"]
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_first") == pytest.approx(
        [1 / 1, 3 / 2, 3 / 3, 3 / 4, 1.0], abs=TOL)
    # rows_in_top divides by the rows in the top: 1, 4, 4; min_k_n by min(k, n = 5)
    texts = ["P@1", "P@2", "P@3", "P@5"]
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_first",
                   k_beyond_list="rows_in_top") == pytest.approx([1 / 1, 3 / 4, 3 / 4, 4 / 5], abs=TOL)
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_first",
                   k_beyond_list="min_k_n") == pytest.approx([1 / 1, 3 / 2, 3 / 3, 4 / 5], abs=TOL)
    # under group_last the group (ranked 4) is out of the top 2 and 3: rows 1, then 4 at k = 5
    assert _values(GROUPED_QRELS, GROUPED_RUN, texts, ties="group_last",
                   k_beyond_list="rows_in_top") == pytest.approx([1 / 1, 1 / 1, 1 / 1, 4 / 5], abs=TOL)


def test_group_first_keeps_at_a_depth_the_group_that_starts_by_it():
    # depth 2: x and the group (first rank 2) are kept, d is not: NumRet 4, AP over R = 4
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["AP", "NumRet"], ties="group_first",
                   depth=2) == pytest.approx([(1 + 3 / 2 + 3 / 2) / 4, 4.0], abs=TOL)
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["NumRet"], ties="group_first",
                   depth=1) == pytest.approx([1.0], abs=TOL)


def test_group_first_refuses_a_tied_list_where_a_family_reads_positions():
    with pytest.raises(EvaluationError, match="ties=group_first"):
        _values(GROUPED_QRELS, GROUPED_RUN, ["Rprec"], ties="group_first")


def test_hit_weight_label_with_negative_labels_and_its_empty_queries():
    # q1 in score order: a (2), b (-1), c (0). negative_labels=keep: b takes away 1.
    # P@2 = (2 - 1) / 2; R (ideal=retrieved) = 2 - 1 + 0 = 1: R@2 = (2 - 1) / 1, R@1 = 2 / 1
    qrels = [("q1", "a", 2), ("q1", "b", -1), ("q1", "c", 0)]
    run = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0)]
    conv = dict(hit_weight="label", ideal="retrieved", negative_labels="keep")
    assert _values(qrels, run, ["P@2", "R@2", "R@1"], **conv) == pytest.approx(
        [1 / 2, 1 / 1, 2 / 1], abs=TOL)
    # negative_labels=unjudged: b counts 0; R = 2: R@2 = 2 / 2
    assert _values(qrels, run, ["P@2", "R@2"], **dict(conv, negative_labels="unjudged")) == (
        pytest.approx([2 / 2, 2 / 2], abs=TOL))
    # labels 1 and -1 cancel: R's sum is 0, R empty (skip: NaN); P is not empty (a label is
    # not 0): P@1 = 1 / 1. Labels all 0: P empty too (zero: 0)
    cancel = [("q1", "a", 1), ("q1", "b", -1)]
    ev = evaluate_rows(cancel, run, [M("P", 1), M("R", 1)],
                       Conventions(empty_query="skip", **conv))
    assert ev.per_query[M("P", 1)].tolist() == [1.0]
    assert math.isnan(ev.aggregate(M("R", 1)))
    zeros = [("q1", "a", 0)]
    ev = evaluate_rows(zeros, run, [M("P", 1)], Conventions(empty_query="skip", **conv))
    assert math.isnan(ev.aggregate(M("P", 1)))


def test_hit_weight_label_under_the_micro_mean_sums_the_labels_and_the_rows_in_the_top():
    # TorchRec's session precision and recall: q1 a (1), b tied with c (labels 0, 2) under
    # group_first, so at k = 2 all three are in the top; q2: x (0.5), y (0)
    qrels = [("q1", "a", 1), ("q1", "c", 2), ("q2", "x", 0.5)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "x", 1.0),
           ("q2", "y", 0.5)]
    conv = Conventions(hit_weight="label", ideal="retrieved", ties="group_first",
                       k_beyond_list="rows_in_top", mean="micro")
    ev = evaluate_rows(qrels, run, [M("P", 1), M("P", 2), M("R", 1)], conv)
    # P@1: q1 a alone (1 / 1), q2 x alone (0.5 / 1): micro (1 + 0.5) / (1 + 1)
    assert ev.aggregate(M("P", 1)) == pytest.approx((1 + 0.5) / 2, abs=TOL)
    # P@2: q1 a, b, c (1 + 0 + 2) / 3; q2 x, y (0.5 / 2): micro (3 + 0.5) / (3 + 2)
    assert ev.per_query[M("P", 2)].tolist() == pytest.approx([3 / 3, 0.5 / 2], abs=TOL)
    assert ev.aggregate(M("P", 2)) == pytest.approx((3 + 0.5) / (3 + 2), abs=TOL)
    # R@1: q1 1 of 3, q2 0.5 of 0.5: micro (1 + 0.5) / (3 + 0.5)
    assert ev.aggregate(M("R", 1)) == pytest.approx((1 + 0.5) / (3 + 0.5), abs=TOL)


def test_hit_weight_label_under_average_ties_refuses_a_depth_cut_group_only_in_the_top_k():
    # GROUPED: x (1) at 1, the tie {a (2), b (0), c (1)} at ranks 2-4, d (1) at 5. depth 3
    # cuts the group (two of its three rows kept, which two depends on the order). P@1 reads
    # x alone: 1 / 1. P@3 reads the cut group: refused
    conv = dict(hit_weight="label", ties="average", depth=3)
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["P@1"], **conv) == pytest.approx([1.0], abs=TOL)
    with pytest.raises(EvaluationError, match="depth cut splits"):
        _values(GROUPED_QRELS, GROUPED_RUN, ["P@3"], **conv)
    # without the cut, each row of the group counts its mean label (2 + 0 + 1) / 3 = 1:
    # P@3 = (1 + 1 + 1) / 3
    assert _values(GROUPED_QRELS, GROUPED_RUN, ["P@3"], hit_weight="label",
                   ties="average") == pytest.approx([1.0], abs=TOL)
