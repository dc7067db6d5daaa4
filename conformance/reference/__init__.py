"""The reference implementation: every measure under every convention, vectorized over queries.

Entry point::

    evaluate(qrels, run, measures, conventions) -> Evaluation

``Evaluation.qids`` are the scored queries (sorted), ``per_query[m]`` a float64 array aligned with
them, ``upper[m]`` the upper end of the range under ``ties=unspecified`` (equal to ``per_query``
otherwise), ``counted[m]`` which queries enter the aggregate (``empty_query=skip`` leaves some
out), and ``aggregate(m)`` the mean (or the sum for the Num* counts). A convention that refuses
the input (``empty_query=raise``, ``negative_labels=raise``, ``label_type=raise``,
``query_set=raise``) raises ``conformance.errors.EvaluationError``.
"""

from conformance.reference.evaluate import Evaluation, evaluate

__all__ = ["Evaluation", "evaluate"]
