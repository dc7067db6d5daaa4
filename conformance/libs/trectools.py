"""trectools: ``TrecEval``'s trec_eval-like measures, on the files a user hands it.

Translation: the run and the qrels are written as TREC files (``qid Q0 docid rank score tag``,
scores as ``repr`` of the float, ranks 1.. in listing order; ``qid 0 docid label``) and read by
trectools' own readers, ``TrecRun(path)`` and ``TrecQrel(path)``, then::

    TrecEval(run, qrels).get_precision(depth=k, per_query=True)   # P@k        "P@k"
                        .get_recall(depth=k, per_query=True)      # R@k        "R@k"
                        .get_reciprocal_rank(depth=k, ...)        # RR@k       "recip_rank@k"
                        .get_map(depth=k, ...)                    # AP@k       "MAP@k"
                        .get_ndcg(depth=k, ...)                   # nDCG@k     "NDCG@k"

each with its default ``trec_eval=True``, per query and again with ``per_query=False`` for the
mean. The mean is ``sum(per-query frame) / len(run.topics())``: a run query that the frame
lacks, or holds as NaN (no relevant document, or none retrieved), adds 0 to it, so that is its
per-query value here. An empty run has no topics and no mean is asked for (trectools returns
0.0 for MAP, NDCG and recip_rank there, and NaN, 0 / 0, for P and R).

Facts behind the profiles (trectools 0.0.50, ``trectools/trec_eval.py``, ``trec_run.py``,
``trec_qrel.py``; each confirmed live by ``tests/libs/test_trectools.py``):

- every mean divides by the run's topics: judged queries missing from the run are left out, a
  run query without judgments scores 0 and counts: ``query_set=run_all``, ``empty_query=zero``;
- relevant is ``rel > 0`` on the label as pandas parsed it (float): a label between 0 and 1 is
  relevant, which no integer ``relevance_threshold`` expresses, so the adapter refuses a case
  holding one on a binary measure (``known_failure``); labels >= 1 are relevant as under
  ``relevance_threshold=1``, ``label_type=float``;
- ``read_qrel`` drops every row with ``rel < 0``: ``negative_labels=unjudged``;
- P, R, RR, AP sort each query by ``(score desc, docid desc)`` (``trec_eval=True``): ties by
  docid descending, on float64 scores; nDCG does not sort again and keeps ``read_run``'s own
  order ``(score desc, docid asc)``: ``ties=docid_asc`` for nDCG alone;
- P@k divides by k (``k_beyond_list=k``); RR@k looks at the top k only (``rr_cutoff=honour``);
  AP@k divides by every relevant judged document (``ap_denominator=relevant``); nDCG@k has
  linear gain (``trec_eval=True``: ``rel * discount``), log2(rank + 1) discount, the ideal of
  the query's relevant judgments sorted by label and cut at k (``ideal=judged``);
- ``TrecRun``'s reader refuses a run that lists a document twice for a query
  (``validate_run_format``: ValueError "Duplicated docid"): ``duplicates=error``.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    gain="linear",  # get_ndcg(trec_eval=True): rel * discount
    discount="log2",  # 1 / np.log2(rank + 1)
    ideal="judged",  # perfect_ranking: the qrels' rel > 0 rows sorted by rel, head(depth)
    k_beyond_list="k",  # get_precision: hits / depth
    ap_denominator="relevant",  # get_map: / nrel_per_query (every relevant judgment)
    empty_query="zero",  # NaN per query, added as nothing to the sum: 0, counted
    ties="docid_desc",  # sort_values(["query", "score", "docid"], ascending=[True, False, False])
    relevance_threshold=1,  # rel > 0; labels in (0, 1) refused by the adapter (known_failure)
    threshold_scope="binary",  # nDCG's gain is rel for every rel > 0
    negative_labels="unjudged",  # read_qrel: qrels_data[rel >= 0]
    label_type="float",  # pandas' float column, compared as it is
    query_set="run_all",  # / len(self.run.topics())
    depth=None,
    score_precision="float64",  # pandas' float64 column
    rr_cutoff="honour",  # get_reciprocal_rank(depth=k): head(depth)
    rank_source="score",
    duplicates="error",  # validate_run_format: "Duplicated docid in line ..." (ValueError)
)
NDCG_PROFILE = PROFILE.replace(ties="docid_asc")  # get_ndcg keeps read_run's (score, docid asc)

# family -> (TrecEval method, result column)
_CALLS = {"P": ("get_precision", "P@{}"), "R": ("get_recall", "R@{}"),
          "RR": ("get_reciprocal_rank", "recip_rank@{}"), "AP": ("get_map", "MAP@{}"),
          "nDCG": ("get_ndcg", "NDCG@{}")}


class TrectoolsEntry(Entry):
    name = "trectools"
    library = "trectools"
    module = "trectools"
    distribution = "trectools"
    extra = "trectools"
    # Tolerance: pandas float64 over the files' labels and scores (written with repr, read back
    # exactly): double arithmetic alone, 1e-12
    tolerance = 1e-12
    description = "TrecEval's P, R, recip_rank, MAP and NDCG at depth k, on TrecRun / TrecQrel files"

    def profile(self, measure: Measure) -> Conventions:
        return NDCG_PROFILE if measure.family == "nDCG" else PROFILE

    def default_profile(self) -> Conventions:
        return PROFILE

    support = Support(families=frozenset(_CALLS), cutoff="required")

    # a label between 0 and 1 counts as relevant (wrong values under any integer threshold); the
    # generated cases draw 0.5 as one of their unusual labels (measured: up to 40% of a run)
    known_failure_shows = frozenset({"wrong_values"})
    known_failure_ceiling = {"*": 0.6}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        if measure is not None and measure.family == "nDCG":
            return None  # nDCG reads the label itself as its gain
        between = (qrels.label > 0) & (qrels.label < 1)
        if between.any():
            i = int(np.flatnonzero(between)[0])
            return (f"refused by the adapter: label {float(qrels.label[i])!r} of query "
                    f"{str(qrels.query_ids()[i])!r} is relevant to trectools (rel > 0), which no "
                    "integer relevance_threshold expresses")
        return None

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        wanted, out = self.split_supported(measures)
        ready = []
        for m in wanted:
            failure = self.refusal(qrels, run, m)
            if failure is not None:
                out[m] = LibraryValues(error=failure)
            else:
                ready.append(m)
        if not ready:
            return out
        try:
            from trectools import TrecEval, TrecQrel, TrecRun

            with tempfile.TemporaryDirectory() as tmp:
                run_path, qrels_path = os.path.join(tmp, "run"), os.path.join(tmp, "qrels")
                _write_run(run, run_path)
                _write_qrels(qrels, qrels_path)
                te = TrecEval(TrecRun(run_path), TrecQrel(qrels_path))
            written = set(run.query_ids().tolist())
            read = set(te.run.run_data["query"].tolist())
            if read != written:  # pandas' type inference renamed some ids (e.g. '01' -> '1')
                raise ValueError(f"trectools' reader read the run's query ids as {sorted(read)}")
            topics = [str(t) for t in te.run.topics()]
            for m in ready:
                method, column = _CALLS[m.family]
                column = column.format(m.cutoff)
                frame = getattr(te, method)(depth=m.cutoff, per_query=True)
                values = frame[column] if column in frame else frame.iloc[:, -1]
                got = {str(q): float(v) for q, v in values.items()}
                # the mean adds nothing for a run query the frame lacks or holds as NaN
                per_query = {q: (0.0 if q not in got or np.isnan(got[q]) else got[q]) for q in topics}
                # an empty run has no topics: get_map, get_ndcg and get_reciprocal_rank then
                # return 0.0 and the others 0 / 0; no mean is asked for
                mean = float(getattr(te, method)(depth=m.cutoff, per_query=False)) if topics else None
                out[m] = LibraryValues(per_query=per_query, mean=mean)
        except Exception as exc:  # the library's refusal is the result
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            out.update({m: err for m in ready})
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


def _write_run(run: Run, path: str) -> None:
    q, d, s = run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()
    rank: dict[str, int] = {}
    with open(path, "w", encoding="utf-8") as f:
        for qid, doc, score in zip(q, d, s):
            rank[qid] = rank.get(qid, 0) + 1
            f.write(f"{qid} Q0 {doc} {rank[qid]} {float(score)!r} conformance\n")


def _write_qrels(qrels: Qrels, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for qid, doc, lab in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                                 qrels.label.tolist()):
            f.write(f"{qid} 0 {doc} {float(lab)!r}\n")


ENTRIES: list[Entry] = [TrectoolsEntry()]
