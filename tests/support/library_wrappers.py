"""The libraries' own functions wrapped in infer's calling conventions, nothing more: each
wrapper converts the arguments and calls the library."""

import numpy as np


def sklearn_ndcg(scores, labels, k):
    from sklearn.metrics import ndcg_score

    return ndcg_score(np.asarray([labels]), np.asarray([scores]), k=k)


def ranx_ndcg(qrels, run, k):
    from ranx import Qrels, Run, evaluate

    return evaluate(Qrels(qrels), Run(run), f"ndcg@{k}")


def pytrec_eval_ndcg(qrels, run, k):
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(run)
    return {q: v[f"ndcg_cut_{k}"] for q, v in per_query.items()}
