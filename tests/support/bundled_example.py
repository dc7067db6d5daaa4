"""The bundled example (``conformance/examples/``: 3 queries, graded labels, a tie) and what
trec_eval itself, through pytrec_eval, gives on it: the expected values of the command-line
tests, obtained from the library, never from the code under test."""

from __future__ import annotations

from importlib import resources

EXAMPLES = resources.files("conformance") / "examples"
QRELS, RUN = str(EXAMPLES / "qrels.txt"), str(EXAMPLES / "run.txt")


def trec_eval_mean(measure: str = "ndcg_cut_10") -> float:
    """The mean of one pytrec_eval measure (``ndcg_cut_10``, ``map``) over the example."""
    import pytrec_eval

    qrels: dict = {}
    run: dict = {}
    for line in open(QRELS):
        q, _, d, rel = line.split()
        qrels.setdefault(q, {})[d] = int(rel)
    for line in open(RUN):
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    family = measure.rsplit("_", 1)[0] if measure[-1].isdigit() else measure
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {family}).evaluate(run)
    return sum(v[measure] for v in per_query.values()) / len(per_query)
