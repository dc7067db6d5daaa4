"""Every measure family of the reference against hand-computed and published values.

Expected values are written as the arithmetic that produces them (``(1 + 2/3 + 3/5) / 4``), worked
out by hand from the formulas in ``conformance/reference/formulas.py`` and DESIGN.md, or are
numbers published elsewhere (quoted with their source). None is produced by the code under test.

The main case (two queries, conventions at their defaults: linear gain, log2 discount, judged
ideal, divide by k, ties by docid descending, relevant iff label >= 1)::

    q1  rank: 1    2    3    4         5        judged, not retrieved: d6 (3), d7 (0)
        doc:  d1   d2   d3   d4        d5       R = 4 (d1, d3, d5, d6)
        lab:  1    0    2    unjudged  1
    q2  rank: 1    2    3                       R = 1 (e3)
        doc:  e1   e2   e3
        lab:  0    0    1
"""

from __future__ import annotations

import math
from math import log2

import pytest

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.errors import EvaluationError
from conformance.measures import FAMILIES, Measure
from conformance.reference import evaluate

TOL = 1e-12

QRELS_MAIN = [
    ("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q1", "d5", 1), ("q1", "d6", 3),
    ("q1", "d7", 0),
    ("q2", "e1", 0), ("q2", "e2", 0), ("q2", "e3", 1),
]
RUN_MAIN = [
    ("q1", "d1", 5.0), ("q1", "d2", 4.0), ("q1", "d3", 3.0), ("q1", "d4", 2.0), ("q1", "d5", 1.0),
    ("q2", "e1", 3.0), ("q2", "e2", 2.0), ("q2", "e3", 1.0),
]

# Ideal gains of q1 under the judged ideal: 3, 2, 1, 1, 0, 0.
IDCG_Q1 = 3 + 2 / log2(3) + 1 / log2(4) + 1 / log2(5)
IDCG3_Q1 = 3 + 2 / log2(3) + 1 / log2(4)
DCG_Q1 = 1 / log2(2) + 0 + 2 / log2(4) + 0 + 1 / log2(6)


def M(family, cutoff=None, alpha=None, params=(), **overrides):
    given = ((("alpha", alpha),) if alpha is not None else ()) + tuple(params)  # T's alpha
    return Measure(family, cutoff, tuple(overrides.items()), params=given)


EPS = 0.00001  # trec_eval's INFAP_EPSILON
# q1's positive ideal gains 3, 2, 1, 1: the ideal DCG down to each rank
I1, I2 = 3, 3 + 2 / log2(3)
I3, I4 = I2 + 1 / log2(4), I2 + 1 / log2(4) + 1 / log2(5)
DCG5_Q1 = 1 + 2 / log2(4) + 1 / log2(6)  # q1's DCG of its whole list (d1 1, d3 2, d5 1)
# C/W/L gains with max_rel=2: label / 2 (q1: d1 0.5, d2 0, d3 1, d4 0, d5 0.5; q2: e3 0.5)
SDCG3 = 1 + 1 / log2(3) + 1 / log2(4)  # sum over i <= 3 of 1/log2(i + 1)
INSQ4 = 1 + 4 / 9 + 1 / 4 + 4 / 25  # INSQ(T=1) continuation products over 4 ranks
INST4_Q1 = 1 + 0.36 + 0.36 * 25 / 49 + 0.36 * (25 / 49) ** 2
INST4_Q2 = 1 + 4 / 9 + 1 / 4 + 1 / 4 * 49 / 81
CWL2 = (("min_rel", 0), ("max_rel", 2))


# (measure, q1 value, q2 value), each by hand from the picture in the module docstring.
MAIN_EXPECTED = [
    (M("P", 1), 1 / 1, 0 / 1),
    (M("P", 3), 2 / 3, 1 / 3),
    (M("P", 5), 3 / 5, 1 / 5),  # q2 retrieved 3 < 5 documents: still divided by 5
    (M("P", 10), 3 / 10, 1 / 10),
    (M("R", 1), 1 / 4, 0 / 1),
    (M("R", 3), 2 / 4, 1 / 1),
    (M("R", 5), 3 / 4, 1 / 1),
    (M("R"), 3 / 4, 1 / 1),  # d6 is relevant but never retrieved
    (M("F1", 1), 2 * (1 / 1) * (1 / 4) / (1 / 1 + 1 / 4), 0.0),
    (M("F1", 3), 2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4), 2 * (1 / 3) * (1 / 1) / (1 / 3 + 1 / 1)),
    (M("F1", 5), 2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4), 2 * (1 / 5) * (1 / 1) / (1 / 5 + 1 / 1)),
    (M("Success", 1), 1.0, 0.0),
    (M("Success", 2), 1.0, 0.0),
    (M("Success", 3), 1.0, 1.0),
    (M("Success"), 1.0, 1.0),
    (M("RR"), 1 / 1, 1 / 3),
    (M("RR", 2), 1 / 1, 0.0),  # rr_cutoff=honour: e3 at rank 3 is beyond the cutoff
    (M("RR", 3), 1 / 1, 1 / 3),
    # q1 relevant at ranks 1, 3, 5; q2 at rank 3
    (M("GranularRR"), (1 / 1 + 1 / 3 + 1 / 5) / 3, (1 / 3) / 1),
    (M("GranularRR", 3), (1 / 1 + 1 / 3) / 2, (1 / 3) / 1),
    (M("GranularRR", 2), (1 / 1) / 1, 0.0),  # nothing relevant in q2's top 2: 0
    # Rcap@k = relevant in the top k / min(k, R): q1 R = 4 (d1 d3 d5 d6), top 3 d1 d2 d3 holds
    # 2; q2 R = 1 (e3), top 3 holds it; at k = 1: d1 relevant, e1 not
    (M("Rcap", 3), 2 / min(3, 4), 1 / min(3, 1)),
    (M("Rcap", 1), 1 / min(1, 4), 0 / min(1, 1)),
    # Hole@k = documents of the top k that no qrels row names / k: q1's top 5 holds d4; every
    # document of q2's list is judged (its k = 5 divides by k, as BEIR does)
    (M("Hole", 5), 1 / 5, 0 / 5),
    (M("Hole", 3), 0 / 3, 0 / 3),
    (M("AP"), (1 / 1 + 2 / 3 + 3 / 5) / 4, (1 / 3) / 1),
    (M("AP", 3), (1 / 1 + 2 / 3) / 4, (1 / 3) / 1),
    (M("AP", 2), (1 / 1) / 4, 0.0),
    # MeanP@k = (P@1 + ... + P@k) / k, P@n over n: q1 P@1..5 = 1, 1/2, 2/3, 2/4, 3/5; q2 (3
    # documents, past them P@n = 1/n) 0, 0, 1/3, 1/4, 1/5
    (M("MeanP", 1), 1 / 1, 0.0),
    (M("MeanP", 3), (1 + 1 / 2 + 2 / 3) / 3, (0 + 0 + 1 / 3) / 3),
    (M("MeanP", 5), (1 + 1 / 2 + 2 / 3 + 2 / 4 + 3 / 5) / 5, (0 + 0 + 1 / 3 + 1 / 4 + 1 / 5) / 5),
    (M("Rprec"), 2 / 4, 0 / 1),  # q1: d1 d2 d3 d4 hold 2 relevant; q2: e1 is not
    (M("DCG"), DCG_Q1, 1 / log2(4)),
    (M("DCG", 1), 1 / log2(2), 0.0),
    (M("DCG", 3), 1 / log2(2) + 0 + 2 / log2(4), 1 / log2(4)),
    (M("nDCG"), DCG_Q1 / IDCG_Q1, (1 / log2(4)) / 1),
    (M("nDCG", 1), 1 / 3, 0 / 1),
    (M("nDCG", 3), (1 + 2 / log2(4)) / IDCG3_Q1, (1 / log2(4)) / 1),
    # T(a)@K = ((1 - a) n_p - a n_n) / K; d4 (unjudged) counts as non-relevant
    (M("T", 3, alpha=0.25), (0.75 * 2 - 0.25 * 1) / 3, (0.75 * 1 - 0.25 * 2) / 3),
    (M("T", 5, alpha=0.5), (0.5 * 3 - 0.5 * 2) / 5, (0.5 * 1 - 0.5 * 2) / 5),
    (M("T", 10, alpha=0.5), (0.5 * 3 - 0.5 * 2) / 10, (0.5 * 1 - 0.5 * 2) / 10),
    (M("T", 1, alpha=0.0), (1.0 * 1 - 0 * 0) / 1, (1.0 * 0 - 0 * 1) / 1),
    # Fe@K = 2 n_K / (K + n_2K)
    (M("Fe", 1), 2 * 1 / (1 + 1), 0.0),
    (M("Fe", 2), 2 * 1 / (2 + 2), 0.0),
    (M("Fe", 3), 2 * 2 / (3 + 3), 2 * 1 / (3 + 1)),
    (M("Fe", 5), 2 * 3 / (5 + 3), 2 * 1 / (5 + 1)),
    (M("NumQ"), 1, 1),
    (M("NumRet"), 5, 3),
    (M("NumRel"), 4, 1),
    (M("NumRelRet"), 3, 1),
    # --- set measures: the whole list, n = 5 and 3 retrieved
    (M("P"), 3 / 5, 1 / 3),
    (M("F1"), 2 * 3 / (5 + 4), 2 * 1 / (3 + 1)),  # 2 x / (n + R)
    (M("F1", params=[("beta", 0.5)]), 1.5 * 3 / (0.5 * 4 + 5), 1.5 * 1 / (0.5 * 1 + 3)),
    (M("SetAP"), 3 ** 2 / (5 * 4), 1 ** 2 / (3 * 1)),
    (M("RelP", 3), 2 / min(3, 4), 1 / min(3, 1)),
    (M("RelP", 10), 3 / min(10, 4), 1 / min(10, 1)),
    (M("RelP"), 3 / min(5, 4), 1 / min(3, 1)),
    (M("Hits", 3), 2, 1),
    (M("Hits"), 3, 1),
    # P@c, c = floor(multiple R + 0.9): q1 c = 2 (d1 d2) and 8; q2 c = 1 (e1) and 2
    (M("RprecMult", params=[("multiple", 0.5)]), 1 / 2, 0 / 1),
    (M("RprecMult", params=[("multiple", 2.0)]), 3 / 8, 0 / 2),
    # a x + b (n - x) + c (R - x) + d (N + x - n - R)
    (M("Utility"), 3 - (5 - 3), 1 - (3 - 1)),
    (M("Utility", params=[("coefficients", (2.0, -1.0, -0.5, 0.25)), ("collection_size", 100)]),
     2 * 3 - 1 * 2 - 0.5 * 1 + 0.25 * (100 + 3 - 5 - 4), 2 * 1 - 1 * 2 - 0 + 0.25 * (100 + 1 - 3 - 1)),
    (M("NumNonRelJudgedRet"), 1, 2),  # d2; e1, e2 (d4 is unjudged)
    # bpref: q1 D = min(R, N) = min(4, 2); d1 has 0 judged non-relevant above, d3 and d5 one
    # (d2; d4 is unjudged); q2: e3 has two above, D = min(1, 2)
    (M("Bpref"), (1 + (1 - 1 / 2) + (1 - 1 / 2)) / 4, (1 - min(2, 1) / 1) / 1),
    (M("Bpref", bpref_denominator="r"), (1 + (1 - 1 / 4) + (1 - 1 / 4)) / 4, 0.0),
    # infAP: d1 at rank 1 scores 1; d3 (j = 2: 1 relevant, 1 non-relevant above); d5 (j = 4:
    # 2 relevant, 1 non-relevant, d4 not in the pool); q2: e3 (j = 2: 2 non-relevant above)
    (M("infAP"),
     (1 + (1 / 3 + (2 / 3) * (2 / 2) * ((1 + EPS) / (2 + 2 * EPS)))
      + (1 / 5 + (4 / 5) * (3 / 4) * ((2 + EPS) / (3 + 2 * EPS)))) / 4,
     1 / 3 + (2 / 3) * (2 / 2) * (EPS / (2 + 2 * EPS))),
    (M("Judged", 3), 3 / 3, 3 / 3),
    (M("Judged", 5), 4 / 5, 3 / 5),  # k_beyond_list=k: q2's 3 documents over 5
    (M("Judged"), 4 / 5, 3 / 3),
    (M("Unjudged", 5), 1 / 5, 0 / 5),
    (M("Unjudged", 10), 1 / 10, 0 / 10),
    # IPrec@x: c = round(x R) relevant documents (0 read as 1); the highest P@i at or below the
    # c-th: q1's relevant at ranks 1, 3, 5 (P 1, 2/3, 3/5); q2's at rank 3 (1/3)
    (M("IPrec", params=[("recall", 0.5)]), max(2 / 3, 3 / 5), 1 / 3),  # c = 2; c = round(0.5) = 1
    (M("IPrec", params=[("recall", 0.9)]), 0.0, 1 / 3),  # c = 4 > 3 retrieved; c = 1
    (M("IPrec", params=[("recall", 0.0)]), 1.0, 1 / 3),
    # q1 levels 0..1 ask for c = 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4 (round(4 x), 0 read as 1)
    (M("IPrecAvg"), (4 * 1 + 3 * (2 / 3) + 2 * (3 / 5) + 2 * 0) / 11, 1 / 3),
    # binG: 1/log2(2 + non-relevant above): d1 0, d3 1 (d2), d5 2 (d2, d4); e3 2
    (M("binG"), (1 / log2(2) + 1 / log2(3) + 1 / log2(4)) / 4, 1 / log2(4)),
    # G: costs C_i = 3, 5, 6, 7, 8 (max(ideal gain, 1)), gains so far S_i = 1, 1, 3, 3, 4;
    # terms at d1, d3, d5 over the ideal's positive gains 3 + 2 + 1 + 1; q2: C_3 = 3, S_3 = 1
    (M("G"), (1 / log2(2 + 3 - 1) + 2 / log2(2 + 6 - 3) + 1 / log2(2 + 8 - 4)) / 7,
     1 / log2(2 + 3 - 1)),
    # nDCGRel: d1, d3, d5 at DCG@i / IDCG@min(i, 4), one relevant unretrieved at DCG@5 / IDCG@4
    (M("nDCGRel"), (1 / I1 + 2 / I3 + DCG5_Q1 / I4 + DCG5_Q1 / I4) / 4, (1 / log2(4)) / 1),
    # RnDCG: q1's ideal gain changes below ranks 1 and 2 and falls to 0 below rank 4 (P);
    # q2's falls below rank 1 and n = 3 >= P + 2 adds DCG@3 / IDCG@1
    (M("RnDCG"), (1 / I1 + 1 / I2 + 2 / I4) / 3, (0 / 1 + (1 / log2(4)) / 1) / 2),
    # ERR: R = (2^g - 1) / 16: q1 1/16, 0, 3/16, 0, 1/16; q2 0, 0, 1/16
    (M("ERR", 3), 1 / 16 + (3 / 16) / 3 * (15 / 16), (1 / 16) / 3),
    (M("ERR"), 1 / 16 + (3 / 16) / 3 * (15 / 16) + (1 / 16) / 5 * (15 / 16) * (13 / 16), (1 / 16) / 3),
    # RBP(0.5) = 0.5 sum of g_i 0.5^(i - 1)
    (M("RBP", params=[("p", 0.5)]), 0.5 * (1 + 0.25 + 0.0625), 0.5 * 0.25),
    (M("RBP", params=[("p", 0.5)], rbp_gain="label"), 0.5 * (1 + 2 * 0.25 + 1 * 0.0625), 0.5 * 0.25),
    (M("RBP", params=[("p", 0.5)], rbp_gain="label_over_max"),
     0.5 * (1 / 3 + (2 / 3) * 0.25 + (1 / 3) * 0.0625), 0.5 * 0.25),  # q1's largest label 3
    (M("RBP", params=[("p", 0.5)], weights_horizon=4), 0.5 * (1 + 0.25) / (1 - 0.5 ** 4),
     0.5 * 0.25 / (1 - 0.5 ** 4)),
    # residual: d4 unjudged at rank 4, plus 0.5^n past the list; q2 all judged: 0
    (M("RBPResid", params=[("p", 0.5)]), 0.5 * 0.5 ** 3 + 0.5 ** 5, 0.0),
    (M("RBPResid", params=[("p", 0.5)], residual_tail="always"), 0.5 * 0.5 ** 3 + 0.5 ** 5, 0.5 ** 3),
    # C/W/L with gains label / 2
    (M("SDCG", 3, params=CWL2), (0.5 / log2(2) + 0 + 1 / log2(4)) / SDCG3, (0.5 / log2(4)) / SDCG3),
    # NERR8@3: C = 1 - g below rank 3: weights (1, 0.5, 0.5) / 2 and (1, 1, 1) / 3
    (M("NERR8", 3, params=CWL2), (0.5 * 1 + 0 * 0.5 + 1 * 0.5) / 2, 0.5 / 3),
    # NERR9@3: C_i = i / (i + 1) (1 - g_i): (1, 1/4, 1/6) and (1, 1/2, 1/3)
    (M("NERR9", 3, params=CWL2), (0.5 + 1 / 6) / (1 + 1 / 4 + 1 / 6), (0.5 / 3) / (1 + 1 / 2 + 1 / 3)),
    # NERR10(p=0.5) over 4 ranks: C = 0.5 (1 - g): weights (1, 1/4, 1/8, 0), (1, 1/2, 1/4, 1/16)
    (M("NERR10", params=[("p", 0.5), *CWL2], weights_horizon=4), (0.5 + 1 / 8) / (1 + 1 / 4 + 1 / 8),
     (0.5 / 4) / (1 + 1 / 2 + 1 / 4 + 1 / 16)),
    # NERR11(T=1) over 4 ranks: C_i = ((i + 1) / (i + 2))^2 (1 - g_i)
    (M("NERR11", params=[("T", 1.0), *CWL2], weights_horizon=4),
     (0.5 + 1 / 8) / (1 + 2 / 9 + 1 / 8), (0.5 / 4) / (1 + 4 / 9 + 1 / 4 + 2 / 25)),
    (M("INSQ", params=[("T", 1.0), *CWL2], weights_horizon=4), (0.5 + 1 / 4) / INSQ4, (0.5 / 4) / INSQ4),
    # INST(T=1): C_i = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = 1 - the gain so far
    (M("INST", params=[("T", 1.0), *CWL2], weights_horizon=4),
     (0.5 + 1 * 0.36 * 25 / 49) / INST4_Q1, (0.5 / 4) / INST4_Q2),
    # BPM(T=1)@3: go on while i < 3 and the gain so far is below 1: weights (1, 1, 1) / 3
    (M("BPM", 3, params=[("T", 1.0), *CWL2]), (0.5 + 1) / 3, 0.5 / 3),
    # fall-out: q1's non-relevant are d2, d7 (judged) and d4 (unjudged, retrieved)
    (M("FallOut", 3), 1 / 3, 2 / 2),
    (M("FallOut"), 2 / 3, 2 / 2),
    # AUROC: (relevant, non-relevant) pairs with the relevant first: q1 3 of 3 x 2; q2 none
    (M("AUROC"), 3 / 6, 0 / 2),
    (M("AUROC", 3), 1 / 2, 0 / 2),  # q1's top 3: d1 > d2, d2 > d3
    # the highest R@j with P@j >= 0.5: q1 at j = 3 (2/3, 1/2) or j = 5 (3/5, 3/4); q2 never
    (M("RecallAtPrecision", 3, params=[("min_precision", 0.5)]), 2 / 4, 0.0),
    (M("RecallAtPrecision", params=[("min_precision", 0.5)]), 3 / 4, 0.0),
]


def evaluate_rows(qrels_rows, run_rows, measures, conventions=Conventions()):
    return evaluate(Qrels.from_records(qrels_rows), Run.from_records(run_rows), measures, conventions)


def _id(entry):
    return entry[0].text


def test_main_case_covers_every_family_with_and_without_cutoffs():
    families = {m.family for m, _, _ in MAIN_EXPECTED}
    assert families == set(FAMILIES)
    for fam, record in FAMILIES.items():
        takes, needs = record.takes_cutoff, record.needs_cutoff
        forms = {m.cutoff is None for m, _, _ in MAIN_EXPECTED if m.family == fam}
        if takes:
            assert False in forms, f"{fam} has no example with a cutoff"
        if not needs:
            assert True in forms, f"{fam} has no example without a cutoff"


@pytest.mark.parametrize("entry", MAIN_EXPECTED, ids=_id)
def test_main_case_per_query(entry):
    m, q1, q2 = entry
    ev = evaluate_rows(QRELS_MAIN, RUN_MAIN, [m])
    assert ev.qids.tolist() == ["q1", "q2"]
    assert ev.values(m) == pytest.approx({"q1": q1, "q2": q2}, abs=TOL)
    # no ties here: the upper end of the range is the value itself
    assert ev.upper[m].tolist() == pytest.approx([q1, q2], abs=TOL)


@pytest.mark.parametrize("entry", MAIN_EXPECTED, ids=_id)
def test_main_case_aggregate(entry):
    m, q1, q2 = entry
    ev = evaluate_rows(QRELS_MAIN, RUN_MAIN, [m])
    if m.aggregate == "curve":
        return  # test_recall_at_precision_aggregates_the_curves
    expected = q1 + q2 if m.family.startswith("Num") else (q1 + q2) / 2
    assert ev.aggregate(m) == pytest.approx(expected, abs=TOL)


def test_recall_at_precision_aggregates_the_curves():
    """torchmetrics' RetrievalRecallAtFixedPrecision: P@j and R@j averaged over the queries
    first. j = 1..5 (the longest list): q1 P 1, 1/2, 2/3, 2/4, 3/5, R 1/4, 1/4, 2/4, 2/4, 3/4;
    q2 (3 documents, then P@j = 1/j) P 0, 0, 1/3, 1/4, 1/5, R 0, 0, 1, 1, 1. Means: P 1/2, 1/4,
    1/2, 3/8, 2/5; R 1/8, 1/8, 3/4, 3/4, 7/8. P >= 1/2 at j = 1 and 3: the highest R is 3/4
    (the mean of the per-query values, (3/4 + 0) / 2, would be 3/8); at P >= 0.4 also j = 5,
    7/8; with k_beyond_list=min_k_n q2's P past its end stays 1/3, so P@4 = (2/4 + 1/3) / 2 =
    5/12 and P@5 = (3/5 + 1/3) / 2 = 7/15, both above 0.41."""
    def agg(mp, **axes):
        m = M("RecallAtPrecision", params=[("min_precision", mp)], **axes)
        return evaluate_rows(QRELS_MAIN, RUN_MAIN, [m]).aggregate(m)

    assert agg(0.5) == pytest.approx(3 / 4, abs=TOL)
    assert agg(0.4) == pytest.approx(7 / 8, abs=TOL)
    assert agg(0.9) == 0.0  # no mean P@j reaches 0.9 (the highest is (1 + 0) / 2)
    assert agg(0.41, k_beyond_list="min_k_n") == pytest.approx(7 / 8, abs=TOL)  # 7/15 >= 0.41


def test_all_measures_in_one_call_match_the_table():
    ms = [m for m, _, _ in MAIN_EXPECTED]
    ev = evaluate_rows(QRELS_MAIN, RUN_MAIN, ms)
    for m, q1, q2 in MAIN_EXPECTED:
        assert ev.values(m) == pytest.approx({"q1": q1, "q2": q2}, abs=TOL), m.text


# --------------------------------------------------------------------------------------------
# Published numbers
# --------------------------------------------------------------------------------------------

# Relevance in rank order [3,2,0,2,0,3,0,1,0,1], scores 10..1 (the worked example used in many
# nDCG tutorials; printed to 3 decimals): P@5 0.600, R@5 0.500, RR 1.000, nDCG@5 0.717 (linear),
# 0.698 (exponential), nDCG 0.907 (linear).
PUB_LABELS = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
PUB_QRELS = [("q", f"doc{i:02d}", lab) for i, lab in enumerate(PUB_LABELS)]
PUB_RUN = [("q", f"doc{i:02d}", float(10 - i)) for i in range(10)]


def _dcg(gains):
    return sum(g / log2(i + 2) for i, g in enumerate(gains))


PUBLISHED = [
    (M("P", 5), 0.600, (1 + 1 + 0 + 1 + 0) / 5),
    (M("R", 5), 0.500, 3 / 6),  # 6 relevant (labels 3,2,2,3,1,1), 3 in the top 5
    (M("RR"), 1.000, 1 / 1),
    (
        M("nDCG", 5),
        0.717,
        (3 + 2 / log2(3) + 0 + 2 / log2(5) + 0)
        / (3 + 3 / log2(3) + 2 / log2(4) + 2 / log2(5) + 1 / log2(6)),
    ),
    (
        M("nDCG", 5, gain="exponential"),
        0.698,
        (7 + 3 / log2(3) + 0 + 3 / log2(5) + 0)
        / (7 + 7 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6)),
    ),
    (
        M("nDCG"),
        0.907,
        _dcg([3, 2, 0, 2, 0, 3, 0, 1, 0, 1]) / _dcg([3, 3, 2, 2, 1, 1, 0, 0, 0, 0]),
    ),
]


@pytest.mark.parametrize("entry", PUBLISHED, ids=_id)
def test_published_ten_document_example(entry):
    m, printed, arithmetic = entry
    assert round(arithmetic, 3) == printed  # the arithmetic reproduces the published figure
    value = evaluate_rows(PUB_QRELS, PUB_RUN, [m]).aggregate(m)
    assert value == pytest.approx(arithmetic, abs=TOL)
    assert round(value, 3) == printed


# scikit-learn's ndcg_score docstring: y_true [[10, 0, 0, 1, 5]], y_score [[.1, .2, .3, 4, 70]]
# -> 0.69569...; all scores tied ([[1, 1, 1, 1, 1]]) -> 0.69097... (tie-averaged). sklearn's
# ideal is the list's own labels, gains linear.
SK_TRUE = [10, 0, 0, 1, 5]
SK_SCORE = [0.1, 0.2, 0.3, 4.0, 70.0]
SK_CONV = Conventions(ideal="retrieved", ties="average")
SK_IDCG = 10 / log2(2) + 5 / log2(3) + 1 / log2(4)


def _sk_case(scores):
    qrels = [("q", f"s{i}", lab) for i, lab in enumerate(SK_TRUE)]
    run = [("q", f"s{i}", s) for i, s in enumerate(scores)]
    return qrels, run


def test_sklearn_docstring_ndcg():
    # order by score: 70 (5), 4 (1), .3 (0), .2 (0), .1 (10)
    arithmetic = (5 / log2(2) + 1 / log2(3) + 0 + 0 + 10 / log2(6)) / SK_IDCG
    assert round(arithmetic, 6) == 0.695694
    m = M("nDCG")
    value = evaluate_rows(*_sk_case(SK_SCORE), [m], SK_CONV).aggregate(m)
    assert value == pytest.approx(arithmetic, abs=TOL)
    assert round(value, 6) == 0.695694


def test_sklearn_docstring_ndcg_all_tied():
    # one tied group of 5: every rank gets the mean gain 16/5
    arithmetic = (16 / 5) * sum(1 / log2(i + 1) for i in range(1, 6)) / SK_IDCG
    assert round(arithmetic, 6) == 0.690979
    m = M("nDCG")
    value = evaluate_rows(*_sk_case([1.0] * 5), [m], SK_CONV).aggregate(m)
    assert value == pytest.approx(arithmetic, abs=TOL)
    assert round(value, 6) == 0.690979


@pytest.mark.parametrize(
    "ties, expected",
    [("docid_desc", (1.0, 1.0)), ("docid_asc", (0.0, 0.0)), ("average", (0.5, 0.5)),
     ("unspecified", (0.0, 1.0))],
)
def test_ties_at_the_top(ties, expected):
    # qrels {a: 0, b: 1}, both scored 1.0: b before a by docid descending, a before b ascending
    m = M("P", 1)
    ev = evaluate_rows([("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 1.0)], [m],
                       Conventions(ties=ties))
    assert (ev.per_query[m][0], ev.upper[m][0]) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize(
    "ideal, printed, arithmetic",
    [
        # DCG@3 of a (1), b (0), c (2): 1 + 0 + 2/log2(4) = 2
        ("judged", 0.4200, 2 / (3 + 2 / log2(3) + 1 / log2(4))),  # ideal 3 (z), 2, 1
        ("retrieved", 0.7602, 2 / (2 + 1 / log2(3) + 0)),  # ideal 2, 1, 0
    ],
)
def test_relevant_document_not_retrieved(ideal, printed, arithmetic):
    assert round(arithmetic, 4) == printed
    m = M("nDCG", 3)
    qrels = [("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)]
    run = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    value = evaluate_rows(qrels, run, [m], Conventions(ideal=ideal)).aggregate(m)
    assert value == pytest.approx(arithmetic, abs=TOL)
    assert round(value, 4) == printed


@pytest.mark.parametrize(
    "cutoff, arithmetic",
    [
        # positives a, b, c, d; list a, z, b, c; binary gain over rank
        (2, 1 / (1 + 1 / 2)),  # a at 1; the ideal min(2, 4) slots
        (None, (1 + 1 / 3 + 1 / 4) / (1 + 1 / 2 + 1 / 3 + 1 / 4)),  # ideal n = 4 slots
        (10, (1 + 1 / 3 + 1 / 4) / (1 + 1 / 2 + 1 / 3 + 1 / 4)),  # cut at n = 4, not 10
    ],
)
def test_ncrr_is_ndcg_with_the_reciprocal_discount(cutoff, arithmetic):
    """Cornac's NCRR: binary gain, 1/rank discount, the judged ideal cut at min(k, n)."""
    m = M("nDCG", cutoff)
    qrels = [("q", d, 1) for d in "abcd"]
    run = [("q", "a", 4.0), ("q", "z", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    conv = Conventions(gain="binary", discount="reciprocal", ideal="judged_to_list")
    value = evaluate_rows(qrels, run, [m], conv).aggregate(m)
    assert value == pytest.approx(arithmetic, abs=TOL)


# --------------------------------------------------------------------------------------------
# Edge cases of single families
# --------------------------------------------------------------------------------------------


def test_query_without_retrieved_documents_under_query_set_qrels():
    # q2 is judged but absent from the run: every measure scores it as an empty list
    qrels = [("q1", "a", 1), ("q2", "b", 1), ("q2", "c", 2)]
    run = [("q1", "a", 1.0)]
    ms = [M("P", 5), M("R"), M("RR"), M("AP"), M("nDCG", 10), M("DCG"), M("Success", 3),
          M("Rprec"), M("F1", 2), M("T", 2, alpha=0.5), M("Fe", 2), M("NumRet"), M("NumRel"),
          M("NumRelRet"), M("NumQ")]
    ev = evaluate_rows(qrels, run, ms, Conventions(query_set="qrels"))
    assert ev.qids.tolist() == ["q1", "q2"]
    expected_q2 = {"NumRel": 2.0, "NumQ": 1.0}
    for m in ms:
        assert ev.values(m)["q2"] == expected_q2.get(m.family, 0.0), m.text


def test_rprec_list_shorter_than_R():
    # R = 3, only 2 retrieved (both relevant): 2 / 3 (k_beyond_list=k), 2 / 2 (min_k_n)
    qrels = [("q", "a", 1), ("q", "b", 1), ("q", "c", 1)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    m = M("Rprec")
    assert evaluate_rows(qrels, run, [m]).aggregate(m) == pytest.approx(2 / 3, abs=TOL)
    got = evaluate_rows(qrels, run, [m], Conventions(k_beyond_list="min_k_n")).aggregate(m)
    assert got == pytest.approx(2 / 2, abs=TOL)


def test_measure_overrides_apply_to_one_measure_only():
    # q: a (1), b (2) in that order; P(rel=2)@1 = 0 while P@1 = 1 in the same call
    qrels = [("q", "a", 1), ("q", "b", 2)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    p1, p1_rel2 = M("P", 1), M("P", 1, relevance_threshold=2)
    ndcg, ndcg_exp = M("nDCG"), M("nDCG", gain="exponential")
    ev = evaluate_rows(qrels, run, [p1, p1_rel2, ndcg, ndcg_exp])
    assert ev.aggregate(p1) == 1.0
    assert ev.aggregate(p1_rel2) == 0.0
    assert ev.aggregate(ndcg) == pytest.approx((1 + 2 / log2(3)) / (2 + 1 / log2(3)), abs=TOL)
    assert ev.aggregate(ndcg_exp) == pytest.approx((1 + 3 / log2(3)) / (3 + 1 / log2(3)), abs=TOL)


def test_fe_refuses_a_random_denominator_under_average():
    # a tied group of one relevant and one non-relevant straddles K = 1: n_K is random
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 1.0), ("q", "b", 1.0)]
    with pytest.raises(EvaluationError, match="ties=average"):
        evaluate_rows(qrels, run, [M("Fe", 1)], Conventions(ties="average"))


def test_fe_under_average_when_the_counts_are_fixed():
    # group {a (1), b (1)} tied at the top, c (0) below: n_1 = 1 and n_2 = 2 in every order
    qrels = [("q", "a", 1), ("q", "b", 1), ("q", "c", 0)]
    run = [("q", "a", 2.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    m = M("Fe", 1)
    got = evaluate_rows(qrels, run, [m], Conventions(ties="average")).aggregate(m)
    assert got == pytest.approx(2 * 1 / (1 + 2), abs=TOL)


@pytest.mark.parametrize(
    "relevant, other, ties, expected",
    [
        ("d9", "d10", "docid_desc", 1 / 1),  # "d9" > "d10" byte-wise (not numerically)
        ("d9", "d10", "docid_asc", 1 / 2),
        ("Z", "a", "docid_asc", 1 / 1),  # "Z" (0x5A) < "a" (0x61): case matters
        ("Z", "a", "docid_desc", 1 / 2),
        ("\u00e9", "z", "docid_desc", 1 / 1),  # U+00E9 (bytes C3 A9) > "z" (0x7A)
        ("\u00e9", "z", "docid_asc", 1 / 2),
    ],
)
def test_docid_ties_are_bytewise(relevant, other, ties, expected):
    m = M("RR")
    qrels = [("q", relevant, 1), ("q", other, 0)]
    for run in ([("q", relevant, 1.0), ("q", other, 1.0)], [("q", other, 1.0), ("q", relevant, 1.0)]):
        got = evaluate_rows(qrels, run, [m], Conventions(ties=ties)).aggregate(m)
        assert got == pytest.approx(expected, abs=TOL)


def test_t_measure_alpha_bounds():
    # one relevant, one non-relevant in the top 2: T(a)@2 = ((1 - a) - a) / 2
    qrels = [("q", "a", 1), ("q", "b", 0)]
    run = [("q", "a", 2.0), ("q", "b", 1.0)]
    for alpha in (0.0, 0.3, 1.0):
        m = M("T", 2, alpha=alpha)
        got = evaluate_rows(qrels, run, [m]).aggregate(m)
        assert got == pytest.approx(((1 - alpha) * 1 - alpha * 1) / 2, abs=TOL)


def test_sum_measures_ignore_empty_query_rule():
    # q2 has no relevant document; counts are sums, never skipped or filled
    qrels = [("q1", "a", 1), ("q2", "b", 0)]
    run = [("q1", "a", 1.0), ("q2", "b", 1.0), ("q2", "c", 0.5)]
    ms = [M("NumQ"), M("NumRet"), M("NumRel"), M("NumRelRet")]
    for rule in ("zero", "one", "nan", "skip", "raise"):
        ev = evaluate_rows(qrels, run, ms, Conventions(empty_query=rule))
        assert [ev.aggregate(m) for m in ms] == [2, 1 + 2, 1 + 0, 1 + 0], rule


def test_ndcg_is_nan_free_when_everything_is_empty_under_zero():
    qrels = [("q", "a", 0)]
    run = [("q", "a", 1.0)]
    ms = [M("nDCG"), M("DCG"), M("AP"), M("RR")]
    ev = evaluate_rows(qrels, run, ms)
    for m in ms:
        assert ev.aggregate(m) == 0.0 and not math.isnan(ev.aggregate(m))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_no_scored_query_gives_empty_per_query_arrays(family):
    # the run's only query (q2) is not judged and the judged one (q1) is not in the run: under
    # query_set=run nothing is scored; a mean is NaN (no query counts), a sum is 0
    qrels = [("q1", "a", 1)]
    run = [("q2", "b", 1.0)]
    params = [(p.name, {"multiple": 0.5, "recall": 0.5, "p": 0.8, "max_rel": 2, "alpha": 0.5}[p.name])
              for p in FAMILIES[family].parameters if p.default is None]
    m = Measure(family, 2 if FAMILIES[family].needs_cutoff else None, (), params=tuple(params))
    axes = {"weights_horizon": 10} if family in ("NERR10", "NERR11", "INST", "INSQ") else {}
    ev = evaluate_rows(qrels, run, [m], Conventions(**axes))
    assert ev.qids.tolist() == []
    assert ev.per_query[m].shape == (0,)
    assert ev.upper[m].shape == (0,)
    assert ev.counted[m].shape == (0,)
    assert ev.values(m) == {}
    agg = ev.aggregate(m)
    if m.aggregate == "sum":
        assert agg == 0.0
    else:
        assert math.isnan(agg)


def test_hole_reads_the_judgments_of_every_query():
    """Hole counts a document as annotated when any qrels row names it, whatever its query or
    label (BEIR's ``annotated_corpus``): q2's top document d1 is judged only for q1, so q2's
    Hole@1 is 0 together with q1 and 1 alone."""
    qrels = [("q1", "d1", 0), ("q2", "e1", 1)]
    run = [("q1", "d1", 1.0), ("q2", "d1", 1.0)]
    m = M("Hole", 1)
    both = evaluate(Qrels.from_records(qrels), Run.from_records(run), [m], Conventions())
    alone = evaluate(Qrels.from_records(qrels[1:]), Run.from_records(run[1:]), [m], Conventions())
    assert both.per_query[m].tolist() == [0.0, 0.0]
    assert alone.per_query[m].tolist() == [1.0]


def test_recall_at_precision_keeps_a_mean_precision_exactly_at_the_threshold():
    """Four queries whose P@3 are 2/3, 2/3, 1/3 and 1/3: the mean is exactly 1/2, which the sum
    2/3 + 2/3 + 1/3 + 1/3 in floating point rounds to just below (found by the long fuzz
    against torchmetrics). By hand, relevant counts at j = 1, 2, 3: q1 (r, r, n; R 2) 1, 2, 2;
    q2 (r, n, r; R 2) 1, 1, 2; q3 (r, n, n; R 1) 1, 1, 1; q4 (r; R 1) 1, 1, 1. Mean P@j: 1, 5/8,
    6/12 = 1/2; mean R@j: 3/4, 7/8, 1. The highest mean R@j with mean P@j >= 1/2: 1, at j = 3."""
    assert (2 / 3 + 2 / 3 + 1 / 3 + 1 / 3) / 4 < 0.5  # the rounding the formula must not meet
    qrels = [("q1", "a1", 1), ("q1", "a2", 1), ("q2", "b1", 1), ("q2", "b3", 1),
             ("q3", "c1", 1), ("q4", "d1", 1)]
    run = [("q1", "a1", 3.0), ("q1", "a2", 2.0), ("q1", "a3", 1.0),
           ("q2", "b1", 3.0), ("q2", "b2", 2.0), ("q2", "b3", 1.0),
           ("q3", "c1", 3.0), ("q3", "c2", 2.0), ("q3", "c3", 1.0), ("q4", "d1", 1.0)]
    m = M("RecallAtPrecision", 3, params=[("min_precision", 0.5)])
    assert evaluate_rows(qrels, run, [m]).aggregate(m) == 1.0


def test_mean_precision_is_not_average_precision():
    """Elliot's MAP@k on [relevant, not relevant], R = 1, k = 2: (P@1 + P@2) / 2 = (1/1 + 1/2)
    / 2 = 0.75, where AP@2 (precision at the relevant rank only, over R) is 1/1 / 1 = 1."""
    qrels = [("u", "a", 1), ("u", "b", 0)]
    run = [("u", "a", 2.0), ("u", "b", 1.0)]
    meanp, ap = M("MeanP", 2), M("AP", 2)
    ev = evaluate_rows(qrels, run, [meanp, ap])
    assert ev.aggregate(meanp) == pytest.approx((1 / 1 + 1 / 2) / 2, abs=TOL)
    assert ev.aggregate(ap) == pytest.approx(1.0, abs=TOL)


def test_mean_precision_lists_shorter_than_k_and_users_without_relevant_items():
    """k = 4. u1 [b, a] (a relevant, R = 2 with c unretrieved): P@1..4 = 0, 1/2, 1/3, 1/4 (past
    the list each P@n still over n); u2 [d, e, f, g, h] (d, g relevant): P@1..4 = 1, 1/2, 1/3,
    2/4, h past k not read; u3 [x] judged, nothing relevant: 0/0, left out under skip (Elliot
    skips users without relevant items), 0 under zero."""
    qrels = [("u1", "a", 1), ("u1", "c", 1), ("u1", "b", 0),
             ("u2", "d", 1), ("u2", "g", 1), ("u2", "h", 1), ("u3", "x", 0)]
    run = [("u1", "b", 2.0), ("u1", "a", 1.0),
           ("u2", "d", 5.0), ("u2", "e", 4.0), ("u2", "f", 3.0), ("u2", "g", 2.0), ("u2", "h", 1.0),
           ("u3", "x", 1.0)]
    m = M("MeanP", 4)
    u1 = (0 + 1 / 2 + 1 / 3 + 1 / 4) / 4
    u2 = (1 + 1 / 2 + 1 / 3 + 2 / 4) / 4
    skip = evaluate_rows(qrels, run, [m], Conventions(empty_query="skip"))
    assert skip.values(m) == pytest.approx({"u1": u1, "u2": u2}, abs=TOL)
    assert skip.aggregate(m) == pytest.approx((u1 + u2) / 2, abs=TOL)
    zero = evaluate_rows(qrels, run, [m], Conventions(empty_query="zero"))
    assert zero.aggregate(m) == pytest.approx((u1 + u2 + 0) / 3, abs=TOL)


@pytest.mark.parametrize("k", [63, 64, 100, 1000])
def test_mean_precision_of_one_relevant_document_at_large_k(k):
    """[a], a relevant: P@n = 1/n for every n <= k, so MeanP@k = H_k / k, H_k summed here term
    by term (past 63 the formula takes H_k from its asymptotic series)."""
    m = M("MeanP", k)
    value = evaluate_rows([("u", "a", 1)], [("u", "a", 1.0)], [m]).aggregate(m)
    assert value == pytest.approx(math.fsum(1 / n for n in range(1, k + 1)) / k, rel=1e-14)


@pytest.mark.parametrize(
    "ties, expected",
    # b or c (one of them relevant) tied below a (not relevant), k = 3: the relevant one at rank
    # 2 gives P@1..3 = 0, 1/2, 1/3, at rank 3 0, 0, 1/3; c > b by docid descending
    [("docid_desc", ((1 / 2 + 1 / 3) / 3,) * 2), ("docid_asc", ((1 / 3) / 3,) * 2),
     ("average", (((1 / 2 + 1 / 3) / 3 + (1 / 3) / 3) / 2,) * 2),
     ("unspecified", ((1 / 3) / 3, (1 / 2 + 1 / 3) / 3))],
)
def test_mean_precision_under_ties(ties, expected):
    qrels = [("u", "a", 0), ("u", "b", 0), ("u", "c", 1)]
    run = [("u", "a", 2.0), ("u", "b", 1.0), ("u", "c", 1.0)]
    m = M("MeanP", 3)
    ev = evaluate_rows(qrels, run, [m], Conventions(ties=ties))
    assert (ev.per_query[m][0], ev.upper[m][0]) == pytest.approx(expected, abs=TOL)
