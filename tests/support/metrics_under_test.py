"""Metric functions written for the infer tests, each following known conventions (or, the
last, a bug no convention explains). Plain Python, as a team would write them."""

import math

import numpy as np


def trec_ndcg(ranked, rel, k):
    """trec_eval's ndcg_cut: linear gain, log2(rank + 1), the ideal from every judged document,
    negative labels ignored, a query with nothing relevant scores 0; a fractional label
    refused, as the trec_eval binding refuses it."""
    if any(float(v) != int(v) for v in rel.values()):
        raise ValueError("labels must be integers")
    dcg = sum(max(rel.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def tutorial_ap(ranked, rel, k):
    """AP as tutorials write it: the mean of the precisions at the relevant documents
    retrieved, so it divides by the relevant documents retrieved, not by every relevant one."""
    hits, precisions = 0, []
    for i, d in enumerate(ranked):
        if rel.get(d, 0) >= 1:
            hits += 1
            precisions.append(hits / (i + 1))
    return sum(precisions) / len(precisions) if precisions else 0.0


def precision_over_list(ranked, rel, k):
    """P@k that divides by the list's length when it is shorter than k."""
    top = ranked[:k]
    return sum(1 for d in top if rel.get(d, 0) >= 1) / len(top) if top else 0.0


def exp_ndcg_input_order(scores, labels, k):
    """nDCG@k with exponential gain (2^label - 1), tied scores kept in input order (a stable
    sort), the ideal from the labels given."""
    order = np.argsort(-scores, kind="stable")
    gains = 2.0 ** labels - 1
    disc = 1 / np.log2(np.arange(2, k + 2))
    dcg = float((gains[order][:k] * disc[:min(k, len(order))]).sum())
    ideal = np.sort(gains)[::-1][:k]
    idcg = float((ideal * disc[:ideal.size]).sum())
    return dcg / idcg if idcg > 0 else 0.0


def buggy_ndcg(ranked, rel, k):
    """nDCG@k with an off-by-one in the discount of the list but not of the ideal."""
    dcg = sum(rel.get(d, 0) / math.log2(i + 3) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0
