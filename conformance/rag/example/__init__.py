"""The bundled example of ``conformance rag --example``: a corpus and a gold file written for
this project from templates (``build``), three pipeline variants built by the example itself
(``pipelines``: BM25 through ``bm25s``; dense retrieval through the packaged all-MiniLM-L6-v2;
a hybrid of the two with a reranking step; one extractive generator for all three), and their
outputs, produced by that code and committed (``outputs/``), so the example runs with the core
install alone. ``run.prepare`` rebuilds the outputs live when the ``rag`` extra is installed.

The towns, rivers, festivals and numbers are invented; nothing is copied from any source.
"""
