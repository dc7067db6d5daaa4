"""Choosing a judge: the judge a name, ``module:name``, an endpoint URL or a Judge stands for.

Apart from ``conformance.rag.judges`` because it names every judge, and two of them (the HTTP
and the embedding judge) are built on that module.
"""

from __future__ import annotations

from conformance.errors import ConformanceError
from conformance.rag.judges import Judge, OverlapJudge, load_callable_judge

BUILT_IN = ("overlap", "embedding")


def make_judge(spec: str | Judge | None = None, url: str | None = None, model: str | None = None,
               timeout: float = 60.0, workers: int = 4) -> Judge:
    """The judge a name, ``module:name``, an endpoint URL or a Judge stands for."""
    if isinstance(spec, Judge):
        return spec
    if url is not None:
        from conformance.rag.judge_http import HTTPJudge

        return HTTPJudge(url, model=model or "default", timeout=timeout, workers=workers)
    if spec is None or spec == "overlap":
        return OverlapJudge()
    if spec == "embedding":
        from conformance.rag.judge_embedding import EmbeddingJudge

        return EmbeddingJudge()
    if ":" in spec:
        return load_callable_judge(spec)
    raise ConformanceError(f"--judge {spec!r}: unknown judge: expected one of {', '.join(BUILT_IN)}, "
                           "module:name, or --judge-url URL")
