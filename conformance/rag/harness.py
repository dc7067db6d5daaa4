"""The harness: pipeline variants over one gold file, side by side, per slice, per query.

``evaluate_variants(gold, variants, ks, ...)`` reads (or takes) the gold file and each
variant's outputs, and computes:

1. retrieval (``retrieval``): every table measure under the chosen profile (trec_eval by
   default), per query, and each measure's spread across the library entries' conventions;
2. generation (``generation``): faithfulness, answer relevance and correctness, the judge asked
   once for every variant (a second judge with ``compare_judge``, and their agreement);
3. the diagnosis of each query (``diagnosis``), at the largest cutoff;
4. the table: each metric's mean per variant with a bootstrap interval and its count, overall
   and per slice of the gold field ``by``; every pair of variants compared by paired
   bootstrap (``bootstrap``);
5. with ``correlate``, the correlation study (``study``) of every retrieval measure and
   convention with answer quality.

Every gold query is scored. A gold query a variant has no output for is ``missing``: by default
(``missing="fail"``) its generation scores count as 0, the floor of every judge, and the count
stands beside each mean; ``missing="skip"`` leaves it out of the generation means, and each
cell then says "over N of M queries". An output for a query the gold file does not have is left
out of every metric, counted and listed. A gold query with no relevant document is
unanswerable: it has no retrieval measure and its correctness follows the abstention rule
(``generation``). Every number is computed by the modules named
above; this module only arranges them.

``evaluate_pipeline(pipeline, gold, ks)`` runs a user's callable over the gold queries first:
``pipeline(question) -> {"retrieved": [{"doc_id", "score"?, "text"?}], "answer": str}``, the
record shape of a pipeline-output file without ``qid``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from conformance.conventions import Conventions, format_value
from conformance.errors import ConformanceError, InputError
from conformance.measures import Measure
from conformance.rag import bootstrap, diagnosis, retrieval
from conformance.rag.generation import GenerationScores, agreement, judge_variants
from conformance.rag.inputs import (Gold, Outputs, Quality, read_corpus, read_gold,
                                    read_outputs, run_of)
from conformance.rag.choose_judge import make_judge
from conformance.rag.judges import Judge
from conformance.reference.prepare import Prepared

DEFAULT_KS = (1, 3, 5, 10)
NO_SLICE = "(none)"
QUALITY_SOURCES = ("correctness", "faithfulness", "relevance")
# What a gold query a variant gave no output for counts as in the generation means.
MISSING_RULE = {"fail": "their generation scores count as 0 (a failure)",
                "skip": "left out of the generation means (--missing skip)"}


@dataclass
class VariantResult:
    name: str
    source: str
    outputs: Outputs
    retrieval: dict[Measure, retrieval.Values]  # under the chosen profile
    entries: retrieval.EntryValues  # under each library entry's conventions (study measures)
    generation: GenerationScores
    diagnoses: diagnosis.Diagnoses
    compared: GenerationScores | None = None  # the second judge's scores
    answered: int = 0
    not_in_gold: int = 0


@dataclass
class Cell:
    """One metric of one variant in one slice: mean, bootstrap interval, count."""

    interval: bootstrap.Interval
    spread: retrieval.Spread | None = None
    missing: int = 0  # queries of the slice the variant has no output for
    of: int = 0  # queries in the slice


@dataclass
class RagResult:
    gold: Gold
    ks: list[int]
    profile_name: str
    conventions: Conventions
    judge: dict[str, Any]
    compare_judge: dict[str, Any] | None
    graded: bool
    by: str | None
    context_k: int | None
    resamples: int
    seed: int
    qids: list[str]
    measures: list[Measure]  # table measures
    variants: list[VariantResult]
    slices: dict[str, np.ndarray]  # slice label -> mask over qids (overall first, as "all")
    table: dict[str, dict[str, dict[str, Cell]]]  # slice -> variant -> metric -> cell
    comparisons: dict[tuple[str, str], dict[str, bootstrap.Interval]]
    judge_agreement: dict | None
    study_measures: list[Measure] = field(default_factory=list)
    candidates: list = field(default_factory=list)  # study.Candidate: the study's inputs
    study: Any = None  # study.Study with correlate
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing: str = "fail"  # what a query without output counts as (MISSING_RULE)
    length_table: dict | None = None  # answer length against faithfulness (conformance.rag.length)
    judge_failures: dict | None = None  # {"asked", "failed"}: verdicts asked of the judge, and failed

    @property
    def metric_names(self) -> list[str]:
        return [m.text for m in self.measures] + generation_names(self.graded)


def generation_names(graded: bool) -> list[str]:
    return ["faithfulness_graded" if graded else "faithfulness", "relevance", "correctness"]


def _parse_variant(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise ConformanceError(f"--variant {text!r}: expected NAME=FILE, such as hybrid=out_hybrid.jsonl")
    return name.strip(), path.strip()


def parse_variants(texts: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in texts:
        name, path = _parse_variant(t)
        if name in out:
            raise ConformanceError(f"--variant {name!r} is given twice: expected one file per variant name")
        out[name] = path
    return out


def evaluate_variants(
    gold: Gold | str | os.PathLike,
    variants: Mapping[str, str | os.PathLike | Outputs],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    profile: str = "trec_eval",
    judge: str | Judge | None = None,
    judge_url: str | None = None,
    judge_model: str | None = None,
    compare_judge: str | Judge | None = None,
    graded: bool = False,
    by: str | None = "query_class",
    corpus: Mapping[str, str] | str | os.PathLike | None = None,
    context_k: int | None = None,
    correlate: bool = False,
    quality: str | Quality = "correctness",
    rank_by: str = "spearman",
    resamples: int = 1000,
    seed: int = 0,
    entries: Sequence | None = None,
    missing: str = "fail",
    judge_timeout: float = 60.0,
    judge_workers: int = 4,
    stopwords: str = "en",
    judge_repeat: int = 1,
    before_judging: Callable[[dict], None] | None = None,
) -> RagResult:
    """Evaluate pipeline variants (see the module docstring). ``by`` None: no slices;
    ``by="query_class"`` (the default) slices only when some gold query has that field."""
    ks = _check_ks(ks)
    if not variants:
        raise ConformanceError("no variant given: expected at least one --variant NAME=FILE")
    if resamples < 1:
        raise ConformanceError(f"--bootstrap must be at least 1, got {resamples}")
    if context_k is not None and context_k < 1:
        raise ConformanceError(f"--context-k must be a positive integer, got {context_k}")
    if missing not in MISSING_RULE:
        raise ConformanceError(f"--missing {missing!r}: expected fail or skip")
    if rank_by not in ("spearman", "pearson", "kendall"):
        raise ConformanceError(f"--rank-by {rank_by!r}: expected spearman, pearson or kendall")
    # the profile's conventions for the binary measures at the largest cutoff: the relevance
    # threshold of the diagnoses and of N_p, and the conventions shown (per-measure differences
    # are listed beside them)
    conv = retrieval.profile_conventions(profile, Measure("P", max(ks)))
    gold = gold if isinstance(gold, Gold) else read_gold(gold)
    if corpus is not None and not isinstance(corpus, Mapping):
        corpus = read_corpus(corpus)
    outputs = [v if isinstance(v, Outputs) else read_outputs(v, name, corpus) for name, v in variants.items()]
    if entries is None:
        from conformance.libs import all_entries

        entries = all_entries()
    judge_obj = make_judge(judge, url=judge_url, model=judge_model, timeout=judge_timeout, workers=judge_workers,
                           stopwords=stopwords)
    second = make_judge(compare_judge, stopwords=stopwords) if compare_judge is not None else None
    if second is None and judge_repeat > 1:
        # self-consistency: the same judge asked again (a fresh instance: no cache is shared)
        second = make_judge(judge, url=judge_url, model=judge_model, timeout=judge_timeout, workers=judge_workers,
                            stopwords=stopwords)
        second.name = f"{judge_obj.name} (second run)"

    qids = gold.qids
    qarr = np.asarray(qids, dtype=object)
    measures = retrieval.table_measures(ks)
    study_measures = retrieval.study_measures(ks)
    warnings: list[str] = []
    per_variant = []
    answerable = gold.answerable_qids
    unanswerable = ~np.isin(qarr, np.asarray(answerable, dtype=object))
    if unanswerable.any():
        warnings.append(f"{int(unanswerable.sum())} gold queries have no relevant document (unanswerable: "
                        f"{_listed(qarr[unanswerable].tolist())}): no retrieval measure for them; correctness by the "
                        "abstention rule (1 when the answer abstains, 0 when it answers)")
    for out in outputs:
        extra = sorted(q for q in out.records if q not in gold.queries)
        # the retrieval measures read the answerable gold queries' lists only: a list for a
        # query the gold file does not have, or has no relevant document for, has nothing to
        # score it against (it is counted and listed, never scored as 0)
        run = run_of(out.records, out.source, [q for q in answerable if q in out.records])
        prep = Prepared(gold.qrels, run)
        values = retrieval.blank(retrieval.evaluate_profile(prep, study_measures, profile, qarr), unanswerable)
        ev = retrieval.under_entries(prep, study_measures, entries, qarr)
        ev.values = {m: retrieval.blank(v, unanswerable) for m, v in ev.values.items()}
        answered = sum(1 for q in qids if q in out.records)
        not_in_gold = len(extra)
        per_variant.append((out, values, ev, answered, not_in_gold))
        if answered < len(qids):
            warnings.append(f"variant {out.name}: {len(qids) - answered} of {len(qids)} gold queries have no output "
                            f"(diagnosed missing; {MISSING_RULE[missing]}; retrieval measures follow the "
                            "profile's query_set)")
        if not_in_gold:
            warnings.append(f"variant {out.name}: {not_in_gold} output(s) have no gold ({_listed(extra)}): "
                            "left out of every metric")
        if out.unsorted:
            warnings.append(f"variant {out.name}: {out.unsorted} list(s) are not in descending score order: "
                            "retrieval measures rank by score, the diagnosis and the generator's context read "
                            "the list order")
    if before_judging is not None:
        from conformance.rag.generation import plan

        support_items, relevance_items = plan(gold, outputs, qids, context_k)
        estimate = {"support_items": len(support_items), "relevance_items": len(relevance_items),
                    "judges": [judge_obj.name] + ([second.name] if second is not None else [])}
        for j in [judge_obj] + ([second] if second is not None else []):
            if hasattr(j, "estimate"):
                estimate.setdefault("http", []).append(j.estimate(support_items, relevance_items))
        before_judging(estimate)  # may stop the run (a dry run)
    generation = judge_variants(judge_obj, gold, outputs, qids, context_k)
    compared = judge_variants(second, gold, outputs, qids, context_k) if second is not None else None
    threshold = conv.relevance_threshold
    k_diag = max(ks)
    results = []
    for out, values, ev, answered, not_in_gold in per_variant:
        gen = generation[out.name]
        d = diagnosis.diagnose(gold, out, gen, qids, k_diag, threshold)
        results.append(VariantResult(out.name, out.source, out, values, ev, gen, d,
                                     compared[out.name] if compared else None, answered, not_in_gold))
        errors = gen.errors()
        for kind, n in errors.items():
            if n:
                warnings.append(f"variant {out.name}: the judge could not give {n} {kind} verdict(s); "
                                "they are left out of the means (see the per-query errors)")
    no_text = sum(1 for g in gold.queries.values() if g.query is None)
    if no_text:
        warnings.append(f"{no_text} gold queries have no 'query' text: no answer relevance for them")
    # an unanswerable query needs no gold answer: the abstention rule scores its correctness
    no_answer = sum(1 for g in gold.queries.values() if g.gold_answer is None and g.answerable)
    if no_answer:
        warnings.append(f"{no_answer} gold queries have no 'gold_answer_substring': no correctness for them")

    slices = _slices(gold, qids, by)
    if by is not None and by != "query_class" and len(slices) == 1:
        warnings.append(f"--by {by}: no gold query has the field {by!r}; no slices")
    gen_names = generation_names(graded)
    table: dict[str, dict[str, dict[str, Cell]]] = {}
    for label, mask in slices.items():
        table[label] = {}
        for r in results:
            cols = _metric_columns(r, measures, gen_names, mask, missing)
            ivs = bootstrap.mean_intervals(cols, resamples, seed)
            n_missing = int((~r.generation.answered[mask]).sum())
            row = {}
            for (name, _), iv in zip(_named(measures, gen_names), ivs):
                sp = None
                if label == "all" and name in {m.text for m in measures}:
                    m = next(m for m in measures if m.text == name)
                    sp = retrieval.spread(r.entries, m)
                row[name] = Cell(iv, sp, n_missing, int(mask.sum()))
            table[label][r.name] = row
    comparisons = {}
    everything = slices["all"]
    for i, a in enumerate(results):
        for b in results[i + 1:]:
            ca = _metric_columns(a, measures, gen_names, everything, missing)
            cb = _metric_columns(b, measures, gen_names, everything, missing)
            ivs = bootstrap.paired_intervals(cb, ca, resamples, seed)  # b - a: later minus earlier
            comparisons[(b.name, a.name)] = {name: iv for (name, _), iv in zip(_named(measures, gen_names), ivs)}
    bootstrap.holm([iv for cells in comparisons.values() for iv in cells.values()])
    agree = None
    if compared is not None:
        agree = agreement(generation, compared, graded)

    notes = [
        "ranges: each retrieval measure's mean under every library entry's declared conventions "
        "(the reference evaluated under entry.profile(measure) on this input; the libraries themselves "
        "were not called)",
    ]
    borrowed = sorted({n for r in results for m in measures for n in r.entries.borrowed.get(m, [])})
    if borrowed:
        notes.append("T, Fe (and F1 where an entry has none): no library computes them; their range applies "
                     "each entry's P@k conventions")
    result = RagResult(gold, list(ks), profile, conv, judge_obj.describe(),
                       second.describe() if second is not None else None, graded, by, context_k,
                       resamples, seed, qids, measures, results, slices, table, comparisons, agree,
                       study_measures=study_measures, notes=notes, warnings=warnings, missing=missing)
    from conformance.rag import study

    from conformance.rag.length import length_table

    result.length_table = length_table(results, graded)
    asked = sum(sum(r.generation.asked.values()) for r in results)
    failed = sum(sum(r.generation.errors().values()) for r in results)
    result.judge_failures = {"asked": asked, "failed": failed}
    result.candidates = study.candidates_from_result(result)
    if correlate:
        result.study = study.study_from_result(result, quality, rank_by)
    return result


def _listed(ids: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(map(str, ids[:most]))
    return shown + (f", ... {len(ids) - most} more" if len(ids) > most else "")


def _check_ks(ks: Sequence[int]) -> list[int]:
    out = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
            raise ConformanceError(f"--k: cutoffs are positive integers, got {k!r}")
        if int(k) not in out:
            out.append(int(k))
    if not out:
        raise ConformanceError("--k: expected at least one cutoff, such as 1,3,5,10")
    return sorted(out)


def parse_ks(text: str) -> list[int]:
    ks = []
    for part in text.split(","):
        p = part.strip()
        try:
            ks.append(int(p))
        except ValueError:
            raise ConformanceError(f"--k {text!r}: {p!r} is not an integer; expected cutoffs such as 1,3,5,10") from None
    return _check_ks(ks)


def _slices(gold: Gold, qids: list[str], by: str | None) -> dict[str, np.ndarray]:
    out = {"all": np.ones(len(qids), bool)}
    if by is None:
        return out
    values = gold.field_values(by)
    if not values:
        return out
    labels = [format_value(values[q]) if q in values and values[q] is not None and not isinstance(values[q], bool)
              else (str(values[q]).lower() if q in values and isinstance(values[q], bool) else NO_SLICE)
              for q in qids]
    for label in sorted(set(labels), key=lambda x: (x == NO_SLICE, x)):
        out[label] = np.array([x == label for x in labels])
    return out


def _named(measures: list[Measure], gen_names: list[str]) -> list[tuple[str, Measure | None]]:
    return [(m.text, m) for m in measures] + [(g, None) for g in gen_names]


def _metric_columns(r: VariantResult, measures: list[Measure], gen_names: list[str], mask: np.ndarray,
                    missing: str = "fail") -> np.ndarray:
    """(queries in ``mask``) x (metrics): NaN where a query has no value; a generation metric
    of a query without output is 0 under ``missing="fail"`` (every judge's floor)."""
    gen = [r.generation.metric(g) for g in gen_names]
    failed = ~r.generation.answered
    if missing != "fail":  # a pipeline's error on a query is its failure under either rule
        failed &= np.isin(np.asarray(r.diagnoses.qids, dtype=object), np.asarray(list(r.outputs.errors), dtype=object))
    gen = [np.where(failed, 0.0, g) for g in gen]
    cols = [r.retrieval[m].lower for m in measures] + gen
    return np.stack(cols, axis=1)[mask] if cols else np.zeros((int(mask.sum()), 0))


# --------------------------------------------------------------------------------------------
# a user's callable pipeline


def evaluate_pipeline(pipeline: Callable[[str], Mapping[str, Any]], gold: Gold | str | os.PathLike,
                      ks: Sequence[int] = DEFAULT_KS, *, name: str | None = None, workers: int = 1,
                      **options) -> RagResult:
    """Run ``pipeline(question)`` over every gold query, ``workers`` calls at a time (a thread
    pool: the pipeline is called from several threads when ``workers`` > 1), and evaluate its
    outputs as one variant (``options`` as for :func:`evaluate_variants`).

    A query whose call raises, or returns something that is not a valid output record, is
    recorded with its reason (``Outputs.errors``, the diagnosis ``error``) and counts as that
    query's failure: its generation scores are 0 whatever ``missing`` says. The other queries
    are evaluated. A gold query without a ``query`` text is an error here (the pipeline needs a
    question)."""
    from concurrent.futures import ThreadPoolExecutor

    from conformance.rag.inputs import output_record

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConformanceError(f"workers must be a positive integer, got {workers!r}")
    gold = gold if isinstance(gold, Gold) else read_gold(gold)
    name = name or getattr(pipeline, "__name__", None) or "pipeline"
    source = f"<pipeline {name}>"
    corpus = options.get("corpus")
    if corpus is not None and not isinstance(corpus, Mapping):
        options["corpus"] = corpus = read_corpus(corpus)
    for q in gold.qids:
        g = gold.queries[q]
        if g.query is None:
            raise InputError(gold.source, f"query {q!r} has no 'query' text to give the pipeline", g.line)

    def one(q: str):
        try:
            rec = pipeline(gold.queries[q].query)
        except Exception as exc:  # the pipeline failing on one query is that query's failure
            return q, None, f"the pipeline raised {type(exc).__name__}: {exc}"
        if not isinstance(rec, Mapping):
            return q, None, f"the pipeline returned {type(rec).__name__}: expected a mapping with 'retrieved' and 'answer'"
        try:
            return q, output_record(source, None, {"qid": q, **{k: v for k, v in rec.items() if k != "qid"}}, corpus), None
        except InputError as exc:
            return q, None, f"the pipeline's output is not valid: {exc}"

    if workers == 1:
        done = [one(q) for q in gold.qids]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(one, gold.qids))
    records = {q: o for q, o, _ in done if o is not None}
    errors = {q: e for q, _, e in done if e is not None}
    from conformance.io.parsed import ReadCounts

    outputs = Outputs(name, source, records, run_of(records, source), ReadCounts(read=len(records), used=len(records)),
                      errors=errors)
    result = evaluate_variants(gold, {name: outputs}, ks, **options)
    if errors:
        result.warnings.append(f"variant {name}: the pipeline failed on {len(errors)} of {len(gold.qids)} queries "
                               f"({_listed(sorted(errors))}): each counts as a failure (diagnosis error)")
    return result
