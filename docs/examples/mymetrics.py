import math


def ndcg_at_k(ranked_doc_ids, relevance, k):
    """nDCG@k as many teams write it."""
    dcg = sum((2 ** relevance.get(d, 0) - 1) / math.log2(i + 2)
              for i, d in enumerate(ranked_doc_ids[:k]))
    ideal = sorted(relevance.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg
