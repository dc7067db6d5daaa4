"""``conformance rag``: RAG pipeline variants evaluated from retrieval conventions to answer quality.

Public API::

    from conformance.rag import evaluate_pipeline, evaluate_variants

    result = evaluate_pipeline(my_pipeline, "gold.jsonl", ks=[1, 3, 5, 10], workers=4)
    result = evaluate_variants("gold.jsonl", {"base": "out_base.jsonl", "hybrid": "out_hybrid.jsonl"},
                               ks=[1, 3, 5, 10], correlate=True)
    print(render(result)); open("rag.json", "w").write(dumps(result))

``my_pipeline(question) -> {"retrieved": [{"doc_id", "score"?, "text"?}], "answer": str}``.

Modules, one job each: ``inputs`` (the gold file, pipeline outputs, corpus, quality scores),
``text`` (claims and tokens), ``judges`` / ``judge_http`` / ``judge_embedding`` (who decides
support and relevance), ``generation`` (faithfulness, relevance, correctness), ``retrieval``
(the reference under the profile and each library entry's conventions), ``diagnosis`` (which
stage failed), ``length`` (answer length against faithfulness), ``bootstrap`` (intervals of
means and paired differences), ``correlation``
(the coefficients), ``study`` (which metric tracks answer quality), ``harness`` (arranging it
all), ``report_data`` (the JSON), ``summary`` (the printed text), ``example`` (the bundled
example), ``extra`` (the optional packages).
"""

from conformance.rag.harness import RagResult, evaluate_pipeline, evaluate_variants
from conformance.rag.report_data import dumps, to_dict
from conformance.rag.summary import render

__all__ = ["RagResult", "evaluate_pipeline", "evaluate_variants", "dumps", "to_dict", "render"]
