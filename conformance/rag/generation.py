"""The generation side: faithfulness, answer relevance and answer correctness, per query.

For a query with an answer a, its claims c_1..c_m (``conformance.rag.text.claims``), the
context C (the first ``context_k`` retrieved passages, all of them by default: what the
generator was given) and a judge's grades g_i in {0, 1, 2} for each claim against C:

- faithfulness = #{i: g_i >= 1} / m (the supported fraction; "partly supported" counts);
- graded faithfulness (``--graded``) = sum g_i / (2 m): 1 when every claim is fully supported,
  0.5 when every claim is partly supported;
- answer relevance = the judge's score for (question, a), in [0, 1];
- answer correctness = 1 when the gold answer substring (or one of its aliases, when the gold
  gives a list) occurs in the answer after normalisation (``conformance.rag.text.contains``),
  else 0.

An **unanswerable** gold query (no document judged relevant) is scored by the abstention rule:
correctness is 1 when the answer abstains (``conformance.rag.text.abstains``, or the record's
``abstained``) and 0 when it answers. An answer that abstains claims nothing and is not judged
(no faithfulness, no relevance); on an answerable query its correctness is 0.

What 0/0 and missing pieces give (each NaN, left out of every mean, and counted): an answer with
no claim (m = 0: nothing to check) has no faithfulness; a query without a ``query`` text has no
relevance; without ``gold_answer_substring`` no correctness; an item the judge could not answer
has no value for what it could not answer (its reason is kept). A query a variant has no
output for has none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from conformance.rag.inputs import Gold, Outputs
from conformance.rag.judges import Judge, RelevanceTask, SupportTask
from conformance.rag.text import claims as split_claims
from conformance.rag.text import abstains, contains, tokens

GENERATION_METRICS = ("faithfulness", "faithfulness_graded", "relevance", "correctness")


@dataclass
class GenerationScores:
    """Per gold query (sorted qids): the generation metrics and what the judge said."""

    faithfulness: np.ndarray
    faithfulness_graded: np.ndarray
    relevance: np.ndarray
    correctness: np.ndarray
    answered: np.ndarray  # the variant has an output for the query
    abstained: np.ndarray  # the answer declines to answer (``conformance.rag.text.abstains``)
    n_claims: np.ndarray
    answer_tokens: np.ndarray
    claims: list[list[str]] = field(default_factory=list)
    grades: list[list[int] | None] = field(default_factory=list)
    support_scores: list[list[float] | None] = field(default_factory=list)
    support_error: list[str | None] = field(default_factory=list)
    relevance_error: list[str | None] = field(default_factory=list)
    asked: dict[str, int] = field(default_factory=lambda: {"support": 0, "relevance": 0})  # items sent to the judge

    def metric(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def errors(self) -> dict[str, int]:
        return {"support": sum(e is not None for e in self.support_error),
                "relevance": sum(e is not None for e in self.relevance_error)}


def context_of(texts: Sequence[str], context_k: int | None) -> tuple[str, ...]:
    return tuple(texts if context_k is None else texts[:context_k])


def plan(gold: Gold, variants: Sequence[Outputs], qids: Sequence[str], context_k: int | None = None):
    """The items a judge would be asked: (support tasks, relevance tasks), as judge_variants asks."""
    support, relevance = [], []
    for out in variants:
        for q in qids:
            o = out.records.get(q)
            if o is None:
                continue
            declined = o.abstained if o.abstained is not None else abstains(o.answer)
            support.append(SupportTask(tuple([] if declined else split_claims(o.answer)), context_of(o.texts, context_k)))
            question = None if declined else gold.queries[q].query
            if question is not None:
                relevance.append(RelevanceTask(question, o.answer, context_of(o.texts, context_k)))
    return support, relevance


def judge_variants(judge: Judge, gold: Gold, variants: Sequence[Outputs], qids: Sequence[str],
                   context_k: int | None = None) -> dict[str, GenerationScores]:
    """Every variant's generation metrics, the judge asked once for all of them (one batch of
    support items and one of relevance items)."""
    support_tasks: list[SupportTask] = []
    relevance_tasks: list[RelevanceTask] = []
    where: list[tuple[int, int, bool]] = []  # (variant, query, has a relevance item)
    claim_lists: dict[tuple[int, int], list[str]] = {}
    for vi, out in enumerate(variants):
        for qi, q in enumerate(qids):
            o = out.records.get(q)
            if o is None:
                continue
            declined = o.abstained if o.abstained is not None else abstains(o.answer)
            cs = [] if declined else split_claims(o.answer)
            claim_lists[vi, qi] = cs
            support_tasks.append(SupportTask(tuple(cs), context_of(o.texts, context_k)))
            question = None if declined else gold.queries[q].query
            if question is not None:
                relevance_tasks.append(RelevanceTask(question, o.answer, context_of(o.texts, context_k)))
            where.append((vi, qi, question is not None))
    support = judge.support_many(support_tasks)
    relevance = iter(judge.relevance_many(relevance_tasks))

    n = len(qids)
    result = {}
    for vi, out in enumerate(variants):
        nan = lambda: np.full(n, np.nan)  # noqa: E731
        result[out.name] = GenerationScores(
            nan(), nan(), nan(), nan(), np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int64),
            np.zeros(n, np.int64),
            [[] for _ in range(n)], [None] * n, [None] * n, [None] * n, [None] * n)
    for (vi, qi, has_question), s in zip(where, support):
        g = result[variants[vi].name]
        o = variants[vi].records[qids[qi]]
        cs = claim_lists[vi, qi]
        g.answered[qi] = True
        g.asked["support"] += 1
        g.asked["relevance"] += int(has_question)
        g.abstained[qi] = declined = o.abstained if o.abstained is not None else abstains(o.answer)
        g.claims[qi] = cs
        g.n_claims[qi] = len(cs)
        g.answer_tokens[qi] = len(tokens(o.answer))
        g.grades[qi], g.support_scores[qi] = s.grades, s.scores
        if s.grades is None:
            g.support_error[qi] = s.error or "the judge gave no verdicts"
        elif cs:
            grades = np.asarray(s.grades, dtype=np.float64)
            g.faithfulness[qi] = float((grades >= 1).mean())
            g.faithfulness_graded[qi] = float(grades.sum() / (2 * len(cs)))
        if has_question:
            r = next(relevance)
            if r.score is None:
                g.relevance_error[qi] = r.error or "the judge gave no score"
            else:
                g.relevance[qi] = r.score
        gq = gold.queries[qids[qi]]
        if not gq.answerable:
            g.correctness[qi] = 1.0 if declined else 0.0  # the abstention rule
        elif gq.gold_answer is not None:
            aliases = (gq.gold_answer,) if isinstance(gq.gold_answer, str) else gq.gold_answer
            g.correctness[qi] = 0.0 if declined else float(any(contains(o.answer, a) for a in aliases))
    return result


def agreement(a: Mapping[str, GenerationScores], b: Mapping[str, GenerationScores], graded: bool) -> dict:
    """How two judges agree on the same answers: Cohen's kappa on the per-claim verdicts
    (supported or not; the three grades with ``graded``) where both gave one, and the
    correlation of their relevance scores (``conformance.rag.correlation``)."""
    from conformance.rag.correlation import kappa, pearson, spearman

    va, vb, ra, rb = [], [], [], []
    failed = {"support": 0, "relevance": 0}
    for name in a:
        ga, gb = a[name], b[name]
        for qi in range(ga.answered.size):
            if not ga.answered[qi]:
                continue
            if ga.grades[qi] is None or gb.grades[qi] is None:
                failed["support"] += 1
            else:
                va += ga.grades[qi]
                vb += gb.grades[qi]
            x, y = ga.relevance[qi], gb.relevance[qi]
            if np.isnan(x) or np.isnan(y):
                if ga.relevance_error[qi] or gb.relevance_error[qi]:
                    failed["relevance"] += 1
            else:
                ra.append(x)
                rb.append(y)
    va_, vb_ = np.asarray(va, np.int64), np.asarray(vb, np.int64)
    if not graded:
        va_, vb_ = (va_ >= 1).astype(np.int64), (vb_ >= 1).astype(np.int64)
    ra_, rb_ = np.asarray(ra, np.float64), np.asarray(rb, np.float64)
    return {
        "claims": int(va_.size),
        "verdict_agreement": float((va_ == vb_).mean()) if va_.size else None,
        "kappa": kappa(va_, vb_),
        "categories": "0, 1, 2" if graded else "supported (grade >= 1) or not",
        "relevance_pairs": int(ra_.size),
        "relevance_pearson": pearson(ra_, rb_),
        "relevance_spearman": spearman(ra_, rb_),
        "relevance_mean_difference": float((ra_ - rb_).mean()) if ra_.size else None,
        "not_comparable": failed,
    }
