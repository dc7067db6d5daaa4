"""The data of a ``conformance rag`` result, as one JSON document (``--json``) and for the report.

``to_dict(result)`` holds everything the text summary and the HTML report show; ``dumps``
writes it with sorted keys, no timestamp and NaN as null, so identical input gives identical
bytes. Top-level keys:

- ``format``: ``"conformance-rag/1"``; ``settings``: cutoffs, profile and its conventions, the
  judge(s) and their settings, ``graded``, ``by``, ``context_k``, the bootstrap and the
  diagnosis thresholds;
- ``gold``: its source, query count and row counts; ``variants``: per variant its source, the
  gold queries it answered, records for queries not in the gold file, judge errors;
- ``metrics``: the table's metrics in order (``kind`` retrieval or generation);
- ``table``: slice (``all`` first) -> ``queries`` and per variant per metric
  ``{estimate, low, high, n}`` (the mean over its n queries and its 95% bootstrap interval);
- ``spreads``: per variant per retrieval metric, its mean under each library entry's
  conventions, the two ends and the entries at each, the entries that refuse the input;
- ``comparisons``: per pair of variants (``a`` minus ``b``), per metric, the paired bootstrap
  interval of the difference and the fraction of resamples above 0;
- ``per_query``: one row per (variant, gold query): slice, N_p, diagnosis, flags, a one-line
  detail, the retrieval metrics under the profile, the generation metrics with the claims, the
  judge's grades and errors, the first retrieved ids and the answer;
- ``candidates`` and ``observations``: the correlation study's inputs, each candidate metric's
  value per observation (``conformance correlate --metrics-from`` reads them back);
- ``correlation`` (with ``--correlate``), ``judge_agreement`` (with ``--compare-judge``);
- ``answer_length``: answer length against faithfulness (``conformance.rag.length``);
  ``missing``: what a query without output counted as (``fail`` or ``skip``);
- ``notes`` and ``warnings``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from conformance.rag import diagnosis as diag
from conformance.rag.study import COEFFICIENTS

FORMAT = "conformance-rag/1"
SHOWN_DOCS = 10


def _num(v: Any) -> Any:
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else v


def _interval(iv) -> dict:
    return {k: (_num(v) if k != "n" else v) for k, v in iv.to_dict().items()}


def to_dict(result) -> dict[str, Any]:
    metric_names = result.metric_names
    retrieval_names = {m.text for m in result.measures}
    doc: dict[str, Any] = {
        "format": FORMAT,
        "settings": {
            "ks": result.ks,
            "profile": result.profile_name,
            "conventions": result.conventions.to_dict(),
            "conventions_by_measure": _differences(result),
            "judge": result.judge,
            "compare_judge": result.compare_judge,
            "graded": result.graded,
            "by": result.by,
            "context_k": result.context_k,
            "bootstrap": {"resamples": result.resamples, "seed": result.seed, "level": 0.95,
                          "unit": "query"},
            "diagnosis": {"k": max(result.ks), "unsupported_below": diag.UNSUPPORTED_BELOW,
                          "off_topic_below": diag.OFF_TOPIC_BELOW,
                          "relevance_threshold": result.conventions.relevance_threshold},
        },
        "gold": {"source": result.gold.source, "queries": len(result.qids),
                 "counts": result.gold.qrels.counts.to_dict()},
        "variants": [{"name": v.name, "source": v.source, "answered": v.answered,
                      "not_in_gold": v.not_in_gold, "judge_errors": v.generation.errors(),
                      "unsorted_lists": v.outputs.unsorted} for v in result.variants],
        "metrics": [{"name": n, "kind": "retrieval" if n in retrieval_names else "generation"}
                    for n in metric_names],
        "table": {label: {"queries": int(result.slices[label].sum()),
                          "variants": {v: {m: _interval(c.interval) for m, c in row.items()}
                                       for v, row in cells.items()}}
                  for label, cells in result.table.items()},
        "spreads": {v: {m: _spread(c.spread) for m, c in row.items() if c.spread is not None}
                    for v, row in result.table["all"].items()},
        "comparisons": [{"a": a, "b": b, "metrics": {m: _interval(iv) for m, iv in d.items()}}
                        for (a, b), d in result.comparisons.items()],
        "per_query": _per_query(result),
        "judge_agreement": result.judge_agreement,
        "answer_length": result.length_table,
        "missing": result.missing,
        "correlation": _study(result.study) if result.study is not None else None,
        "notes": result.notes,
        "warnings": result.warnings,
    }
    doc["candidates"] = [dict(c.to_dict(), values=[_num(x) for x in c.values.tolist()])
                         for c in result.candidates]
    doc["observations"] = [{"variant": v.name, "qid": q} for v in result.variants for q in result.qids]
    return doc


def _differences(result) -> dict[str, dict[str, str]]:
    """Per table measure, the axes on which the profile's conventions for it (its name's own
    overrides applied) differ from ``settings.conventions``."""
    from conformance.rag.retrieval import profile_conventions

    base = result.conventions.to_dict()
    out = {}
    for m in result.measures:
        own = m.conventions(profile_conventions(result.profile_name, m)).to_dict()
        diff = {a: v for a, v in own.items() if v != base[a]}
        if diff:
            out[m.text] = diff
    return out


def _spread(s) -> dict:
    return {"low": _num(s.low), "high": _num(s.high), "low_entries": s.low_entries,
            "high_entries": s.high_entries,
            "entries": {e: [_num(lo), _num(hi)] for e, (lo, hi) in sorted(s.entries.items())},
            "refused": dict(sorted(s.refused.items())), "borrowed": sorted(s.borrowed)}


def slice_of(result, qi: int) -> str | None:
    for label, mask in result.slices.items():
        if label != "all" and mask[qi]:
            return label
    return None


def _per_query(result) -> list[dict]:
    from conformance.rag.study import _relevant_counts

    n_rel = _relevant_counts(result.gold.qrels, result.qids, result.conventions.relevance_threshold)
    rows = []
    gen_names = result.metric_names[len(result.measures):]
    for v in result.variants:
        g, d = v.generation, v.diagnoses
        for qi, q in enumerate(result.qids):
            o = v.outputs.records.get(q)
            row = {
                "variant": v.name,
                "qid": q,
                "query": result.gold.queries[q].query,
                "slice": slice_of(result, qi),
                "n_relevant": int(n_rel[qi]),
                "diagnosis": d.diagnosis[qi],
                "flags": d.flags[qi],
                "detail": diag.detail(d, g, qi),
                "first_relevant": int(d.first_relevant[qi]),
                "metrics": {m.text: _num(v.retrieval[m].lower[qi]) for m in result.measures},
                "generation": {name: _num(g.metric(name)[qi]) for name in gen_names},
                "claims": g.claims[qi],
                "grades": g.grades[qi],
                "support_error": g.support_error[qi],
                "relevance_error": g.relevance_error[qi],
                "retrieved": o.doc_ids[:SHOWN_DOCS] if o is not None else [],
                "answer": o.answer if o is not None else None,
            }
            if v.compared is not None:
                row["compared_grades"] = v.compared.grades[qi]
                row["compared_relevance"] = _num(v.compared.relevance[qi])
            rows.append(row)
    return rows


def _ranking(r) -> dict:
    return {
        "subset": r.subset,
        "sentence": r.sentence,
        "p_first": _num(r.p_first),
        "lead": None if r.lead is None else {"estimate": _num(r.lead[0]), "low": _num(r.lead[1]),
                                              "high": _num(r.lead[2])},
        "answers": r.full,
        "rows": [{"candidate": row.candidate, "n": row.n, "ranked": row.ranked,
                  **{c: {"estimate": _num(row.estimate[c]), "low": _num(row.low[c]),
                         "high": _num(row.high[c]), "undefined_resamples": row.undefined[c]}
                     for c in COEFFICIENTS}} for row in r.rows],
    }


def _study(s) -> dict:
    return {
        "quality": s.quality,
        "rank_by": s.rank_by,
        "resamples": s.resamples,
        "seed": s.seed,
        "observations": s.observations,
        "clusters": s.clusters,
        "candidate_names": [c.name for c in s.candidates],
        "overall": _ranking(s.overall),
        "buckets": [_ranking(b) for b in s.buckets],
        "slices": [_ranking(b) for b in s.slices],
    }


def dumps(result) -> str:
    return json.dumps(to_dict(result), sort_keys=True, indent=1, allow_nan=False) + "\n"


def plain(values: np.ndarray) -> list:
    return [_num(x) for x in np.asarray(values, np.float64).tolist()]
