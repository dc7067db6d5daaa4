"""``conformance correlate``: the correlation study (``study``) on metrics from a ``conformance
rag --json`` output, or from runs and their qrels, against the user's quality scores.

- A rag JSON (``"format": "conformance-rag/1"``) holds its candidates' per-observation values,
  its observations (variant, qid) and, per query, N_p and the slice: the study reads them back.
- Runs (TREC or JSONL, with ``--qrels``): each run is a variant named by its file name; every
  measure of ``retrieval.study_measures`` is evaluated under the profile and under each library
  entry's conventions, over the judged queries. With RAG JSONL qrels the slices of ``by`` come
  from the gold records.

The quality file's scores are matched to observations by (variant, qid), or by qid alone
when the file names no variant. Observations without a score, and scores that match no
observation, are counted in the warnings.
"""

from __future__ import annotations

import json
import os
from typing import Sequence

import numpy as np

from conformance.errors import ConformanceError, InputError
from conformance.measures import Measure
from conformance.rag import report_data, retrieval
from conformance.rag.inputs import Quality
from conformance.rag.study import (Candidate, Study, _relevant_counts, build_candidates, candidate_sources,
                                   run_study)


def _is_rag_json(path: str) -> bool:
    """Whether ``path`` is a conformance rag --json output (a JSON run is not)."""
    if not path.lower().endswith(".json"):
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return False  # the run reader names the problem
    return isinstance(doc, dict) and doc.get("format") == report_data.FORMAT


def correlate(sources: Sequence[str], quality: Quality, qrels_path: str | None = None,
              ks: Sequence[int] = (1, 3, 5, 10), profile: str = "trec_eval", by: str | None = "query_class",
              rank_by: str = "spearman", resamples: int = 1000, seed: int = 0) -> tuple[Study, list[str]]:
    rag = [s for s in sources if _is_rag_json(s)]
    if rag and (len(sources) > 1):
        raise ConformanceError("--metrics-from: give one conformance rag --json file, or one or more runs with --qrels")
    if rag:
        cands, obs, n_rel, slices = _from_rag_json(rag[0])
    else:
        if qrels_path is None:
            raise ConformanceError("--metrics-from RUN needs --qrels FILE (or give a conformance rag --json output)")
        cands, obs, n_rel, slices = _from_runs(sources, qrels_path, ks, profile, by)
    q = np.array([quality.lookup(v, qid) for v, qid in obs])
    warnings = []
    missing = int(np.isnan(q).sum())
    if missing:
        warnings.append(f"{missing} of {len(obs)} answers have no score in {quality.source}; they are left out")
    keys = set(obs) | {(None, qid) for _, qid in obs}
    unmatched = sum(1 for k in quality.scores if k not in keys)
    if unmatched:
        warnings.append(f"{unmatched} score(s) in {quality.source} match no (variant, query) of the metrics")
    qids = sorted({qid for _, qid in obs})
    index = {qid: i for i, qid in enumerate(qids)}
    cluster = np.array([index[qid] for _, qid in obs], dtype=np.int64)
    study = run_study(cands, q, cluster, n_rel, slices, f"scores from {quality.source}", rank_by, resamples, seed)
    return study, warnings


def _from_rag_json(path: str):
    name = os.fsdecode(path)
    try:
        with open(name, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise InputError(name, f"cannot read the conformance rag JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != report_data.FORMAT:
        raise InputError(name, f"not a conformance rag --json output (expected \"format\": \"{report_data.FORMAT}\")")
    try:
        obs = [(o["variant"], o["qid"]) for o in doc["observations"]]
        per_q = {(r["variant"], r["qid"]): r for r in doc["per_query"]}
        n_rel = np.array([per_q[o]["n_relevant"] for o in obs], dtype=np.float64)
        labels = [per_q[o]["slice"] for o in obs]
        cands = [Candidate(c["measure"], c["cutoff"], c["conventions"], c["axes"],
                           np.array([np.nan if x is None else x for x in c["values"]], dtype=np.float64),
                           c["same_as"]) for c in doc["candidates"]]
    except (KeyError, TypeError) as e:
        raise InputError(name, f"the conformance rag JSON lacks {e}: write it again with conformance rag --json") from None
    if any(c.values.size != len(obs) for c in cands):
        raise InputError(name, "a candidate's values do not match the observations: the file was edited")
    slices = {lab: np.array([x == lab for x in labels]) for lab in sorted({x for x in labels if x is not None})}
    return cands, obs, n_rel, slices


def _from_runs(paths: Sequence[str], qrels_path: str, ks, profile: str, by: str | None):
    from conformance import io as cio
    from conformance.libs import all_entries
    from conformance.reference.prepare import Prepared

    conv = retrieval.profile_conventions(profile, Measure("P", max(ks)))
    gold = None
    if qrels_path.lower().endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        from conformance.rag.inputs import read_gold

        gold = read_gold(qrels_path)
        qrels = gold.qrels
    else:
        qrels = cio.load_qrels(qrels_path)
    qids = sorted(qrels.present_qids().tolist())
    qarr = np.asarray(qids, dtype=object)
    measures = retrieval.study_measures(ks)
    entries = all_entries()
    variants = []
    names = []
    for p in paths:
        run = cio.load_run(p, duplicates="error")
        name = os.path.basename(p)
        if name in names:
            raise ConformanceError(f"--metrics-from: two runs are named {name!r}; rename one")
        names.append(name)
        prep = Prepared(qrels, run)
        variants.append((name, retrieval.under_entries(prep, measures, entries, qarr),
                         retrieval.evaluate_profile(prep, measures, profile, qarr)))
    sources, convs = candidate_sources(variants, measures, profile, len(qids))
    cands = build_candidates(measures, sources, convs)
    obs = [(n, q) for n in names for q in qids]
    n_rel = np.tile(_relevant_counts(qrels, qids, conv.relevance_threshold), len(names))
    slices = {}
    if gold is not None and by is not None:
        values = gold.field_values(by)
        labels = [str(values.get(q)) if values.get(q) is not None else None for q in qids] * len(names)
        slices = {lab: np.array([x == lab for x in labels]) for lab in sorted({x for x in labels if x is not None})}
    return cands, obs, n_rel, slices


def render(study: Study) -> str:
    from conformance.rag.summary import _study

    return "\n".join(_study(study)).lstrip("\n") + "\n"


def dumps(study: Study) -> str:
    doc = report_data._study(study)
    doc["candidates"] = [c.to_dict() for c in study.candidates]
    return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n"
