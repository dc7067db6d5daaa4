"""Per query and variant: which stage of the pipeline failed.

The retrieved list is read in the order the pipeline gave it (the order the generator saw); a
document is relevant when its gold label is at least the profile's ``relevance_threshold``.
With k the diagnosis cutoff (the largest ``--k``), the flags, in pipeline order:

1. ``not_retrieved``: no relevant document in the top k;
2. ``ranked_low``: a relevant document is in the top k, but the first one comes after the
   first non-relevant document (the generator read a distractor first), and the answer is
   wrong (correctness 0): a correct answer read past the distractor, so ranking is not blamed;
3. ``abstained``: the answer declines to answer (``conformance.rag.text.abstains``) although
   the gold file has a relevant document;
4. ``no_answer``: the answer holds no claim (empty, or nothing checkable);
5. ``unsupported``: faithfulness below ``unsupported_below`` (0.5): most claims are not
   supported by the context;
6. ``off_topic``: answer relevance below ``off_topic_below`` (0.3);
7. ``incorrect``: the gold answer substring is not in the answer.

An unanswerable gold query (no relevant document) has one flag of its own instead:
``answered_unanswerable`` when the answer does not abstain (the pipeline invented an answer the
documents cannot give); it is ``ok`` when the answer abstains.

A metric the judge could not give (recorded as an error) raises no flag. The diagnosis is the
first flag raised, ``ok`` when none is, ``missing`` when the variant has no output for the
query; every flag raised is kept too (a query can be both ``ranked_low`` and ``incorrect``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.rag.generation import GenerationScores
from conformance.rag.inputs import Gold, Outputs

FLAGS = ("not_retrieved", "ranked_low", "abstained", "no_answer", "unsupported", "off_topic", "incorrect",
         "answered_unanswerable")
DIAGNOSES = ("missing", "error") + FLAGS + ("ok",)
MEANINGS = {
    "missing": "the variant gave no output for the query",
    "error": "the pipeline failed on the query (evaluate_pipeline recorded why)",
    "not_retrieved": "no relevant document in the top k",
    "ranked_low": "relevant documents retrieved, the first after a non-relevant one, and the answer is wrong",
    "abstained": "the answer declines to answer, but the gold file has a relevant document",
    "no_answer": "the answer claims nothing",
    "unsupported": "the answer's claims are mostly not supported by the context",
    "off_topic": "the answer does not address the question",
    "incorrect": "the gold answer is not in the answer",
    "answered_unanswerable": "no document is relevant, yet the answer does not abstain",
    "ok": "no stage failed",
}
UNSUPPORTED_BELOW = 0.5
OFF_TOPIC_BELOW = 0.3


@dataclass
class Diagnoses:
    """Per gold query (sorted qids) of one variant."""

    diagnosis: list[str]
    flags: list[list[str]]
    first_relevant: np.ndarray  # 1-based rank of the first relevant document, 0 when none listed
    first_nonrelevant: np.ndarray  # 1-based rank of the first non-relevant document, 0 when none
    relevant_in_top_k: np.ndarray
    k: int
    qids: list[str] | None = None
    errors: dict[str, str] | None = None

    def counts(self) -> dict[str, int]:
        return {d: self.diagnosis.count(d) for d in DIAGNOSES}


def list_labels(gold: Gold, out: Outputs) -> np.ndarray:
    """The gold label of every row of ``out.run`` (its lists in order), NaN when unjudged.

    The (query, document) pairs of both sides are joined as one sorted array of string keys
    (``np.searchsorted``), not looked up one by one.
    """
    qrels, run = gold.qrels, out.run
    sep = "\x1f"
    judged = np.char.add(np.char.add(qrels.query_ids().astype(str), sep), qrels.doc_ids().astype(str))
    order = np.argsort(judged)
    judged_sorted = judged[order]
    rows = np.char.add(np.char.add(run.query_ids().astype(str), sep), run.doc_ids().astype(str))
    labels = np.full(rows.size, np.nan)
    if judged_sorted.size and rows.size:
        at = np.minimum(np.searchsorted(judged_sorted, rows), judged_sorted.size - 1)
        hit = judged_sorted[at] == rows
        labels[hit] = np.asarray(qrels.label, np.float64)[order[at[hit]]]
    return labels


def diagnose(gold: Gold, out: Outputs, gen: GenerationScores, qids: list[str], k: int,
             threshold: float, unsupported_below: float = UNSUPPORTED_BELOW,
             off_topic_below: float = OFF_TOPIC_BELOW) -> Diagnoses:
    n = len(qids)
    run = out.run
    labels = list_labels(gold, out)
    relevant = labels >= threshold  # NaN (unjudged) compares False
    # rows are in list order within each query (inputs builds the Run that way); rank = position
    gold_q = np.asarray(qids, dtype=str)
    row_q = run.query_ids().astype(str)
    q_row = np.minimum(np.searchsorted(gold_q, row_q), max(n - 1, 0))
    in_gold = gold_q[q_row] == row_q if n else np.zeros(row_q.size, bool)  # other queries: not scored
    q_row, relevant = q_row[in_gold], relevant[in_gold]
    rank = np.asarray(run.rank, np.float64)[in_gold].astype(np.int64)
    big = np.iinfo(np.int64).max

    def first(mask: np.ndarray) -> np.ndarray:
        at = np.full(n, big, np.int64)
        np.minimum.at(at, q_row[mask], rank[mask])
        return np.where(at == big, 0, at)

    first_rel = first(relevant)
    first_non = first(~relevant)
    in_top = np.bincount(q_row[relevant & (rank <= k)], minlength=n)

    answerable = np.array([gold.queries[q].answerable for q in qids], dtype=bool)
    answered = gen.answered
    ok = answered & answerable
    declined = gen.abstained & (gen.answer_tokens > 0)  # an empty answer is no_answer, not an abstention
    with np.errstate(invalid="ignore"):
        flags_by = {
            "not_retrieved": ok & (in_top == 0),
            "ranked_low": ok & (in_top > 0) & (first_non > 0) & (first_non < first_rel) & (gen.correctness == 0),
            "abstained": ok & declined,
            "no_answer": ok & ~declined & (gen.n_claims == 0),
            "unsupported": ok & (gen.faithfulness < unsupported_below),
            "off_topic": ok & (gen.relevance < off_topic_below),
            "incorrect": ok & ~gen.abstained & (gen.correctness == 0),
            "answered_unanswerable": answered & ~answerable & ~gen.abstained,  # empty abstains here
        }
    flags = [[f for f in FLAGS if flags_by[f][i]] for i in range(n)]
    errors = out.errors
    diagnosis = [("error" if qids[i] in errors else "missing") if not answered[i] else (flags[i][0] if flags[i] else "ok")
                 for i in range(n)]
    return Diagnoses(diagnosis, flags, first_rel, first_non, in_top, k, list(qids), dict(errors))


def detail(d: Diagnoses, gen: GenerationScores, i: int) -> str:
    """One line saying why query i got its diagnosis."""
    kind = d.diagnosis[i]
    if kind == "missing":
        return "no output"
    if kind == "error":
        return d.errors[d.qids[i]] if d.errors and d.qids else "the pipeline failed"
    if kind == "not_retrieved":
        where = f"first relevant at rank {d.first_relevant[i]}" if d.first_relevant[i] else "none in the list"
        return f"no relevant document in the top {d.k} ({where})"
    if kind == "ranked_low":
        return (f"first relevant at rank {d.first_relevant[i]}, after a non-relevant one at rank "
                f"{d.first_nonrelevant[i]}")
    if kind == "no_answer":
        return "the answer claims nothing"
    if kind == "unsupported":
        grades = gen.grades[i] or []
        supported = sum(1 for g in grades if g >= 1)
        return f"faithfulness {gen.faithfulness[i]:.2f} ({supported} of {len(grades)} claims supported)"
    if kind == "off_topic":
        return f"answer relevance {gen.relevance[i]:.2f}"
    if kind == "abstained":
        return "the answer abstains, but the gold file has a relevant document"
    if kind == "answered_unanswerable":
        return "no document is relevant to the query, yet the answer does not abstain"
    if kind == "incorrect":
        return "the gold answer substring is not in the answer"
    return "retrieved, ranked first, supported, on topic" + (", correct" if gen.correctness[i] == 1 else "")
