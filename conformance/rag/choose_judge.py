"""Choosing a judge: the judge a name, ``module:name``, an endpoint URL or a Judge stands for.

Apart from ``conformance.rag.judges`` because it names every judge, and two of them (the HTTP
and the embedding judge) are built on that module.
"""

from __future__ import annotations

from conformance.errors import ConformanceError
from conformance.rag.judges import CallableJudge, Judge, OverlapJudge, RelevanceTask, load_callable_judge

BUILT_IN = ("overlap", "embedding")


def make_judge(spec: "str | Judge | object | None" = None, url: str | None = None, model: str | None = None,
               timeout: float = 60.0, workers: int = 4, stopwords: str = "en") -> Judge:
    """The judge a name, ``module:name``, an endpoint URL, a Judge, or a user's object stands
    for. Through the API ``spec`` may also be any object with ``support(claims, context)`` and
    ``relevance(question, answer)`` (a :class:`~conformance.rag.judges.CallableJudge` wraps
    it), or a plain function ``support(claims, context)``, whose answers' relevance is then the
    overlap judge's."""
    if isinstance(spec, Judge):
        return spec
    if url is not None:
        from conformance.rag.judge_http import HTTPJudge

        return HTTPJudge(url, model=model or "default", timeout=timeout, workers=workers)
    if spec is None or spec == "overlap":
        return OverlapJudge(stopwords=stopwords)
    if not isinstance(spec, str):
        name = getattr(spec, "__qualname__", None) or type(spec).__qualname__
        if callable(getattr(spec, "support", None)) and callable(getattr(spec, "relevance", None)):
            return CallableJudge(name, spec)
        if callable(spec):
            return CallableJudge(name, _SupportOnly(spec, OverlapJudge(stopwords=stopwords)))
        raise ConformanceError(f"judge {name}: expected a Judge, an object with support() and relevance(), "
                               "a function support(claims, context), or a judge's name")
    if spec == "embedding":
        from conformance.rag.judge_embedding import EmbeddingJudge

        return EmbeddingJudge()
    if ":" in spec:
        return load_callable_judge(spec)
    raise ConformanceError(f"--judge {spec!r}: unknown judge: expected one of {', '.join(BUILT_IN)}, "
                           "module:name, or --judge-url URL")


class _SupportOnly:
    """A user's support function, with the overlap judge's relevance beside it."""

    def __init__(self, support, overlap: OverlapJudge) -> None:
        self.support = support
        self._overlap = overlap

    def relevance(self, question: str, answer: str) -> float:
        r = self._overlap.relevance_many([RelevanceTask(question, answer)])[0]
        if r.score is None:
            raise ValueError(r.error)
        return r.score
