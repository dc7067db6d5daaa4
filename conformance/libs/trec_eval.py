"""trec_eval, through its Python binding pytrec_eval-terrier: ``pytrec_eval.RelevanceEvaluator``.

Translation (``conformance.libs._nested``): the qrels become ``{qid: {docid: int label}}`` (a
fractional label is passed as the float it is, and pytrec_eval refuses it), the run
``{qid: {docid: float score}}``. One call per relevance level::

    pytrec_eval.RelevanceEvaluator(qrels, ["ndcg_cut.10", "P.5", ...], relevance_level=L)
        .evaluate(run)      # -> {qid: {"ndcg_cut_10": v, "P_5": v, ...}}

The per-query values are read back as returned; the mean is the binding's own
``pytrec_eval.compute_aggregated_measure`` (sum for ``num_*``, arithmetic mean otherwise).

The measure strings are the families' trec_eval names (``conformance.measures``), present in
``pytrec_eval.supported_measures`` (trec_eval 9: no rbp, rbp_resid or unj):

=================  ==========================================  ============================
measure            measure string                              result key
=================  ==========================================  ============================
nDCG, nDCG@k       ``ndcg``, ``ndcg_cut.k``                    ``ndcg``, ``ndcg_cut_k``
AP, AP@k           ``map``, ``map_cut.k``                      ``map``, ``map_cut_k``
P@k, R@k           ``P.k``, ``recall.k``                       ``P_k``, ``recall_k``
P, R, F1, RelP     ``set_P``, ``set_recall``, ``set_F.beta``,  ``set_P``, ``set_recall``,
(no cutoff)        ``set_relative_P``                          ``set_F``, ``set_relative_P``
RelP@k             ``relative_P.k``                            ``relative_P_k``
Success@k          ``success.k``                               ``success_k``
RR, RR@k           ``recip_rank``, ``recip_rank.k`` (k ignored) ``recip_rank``
Rprec, SetAP       ``Rprec``, ``set_map``                      the same
RprecMult(x)       ``Rprec_mult.x``                            ``Rprec_mult_x`` (%3.2f)
IPrec@x            ``iprec_at_recall.x``                       ``iprec_at_recall_x`` (%3.2f)
IPrecAvg(levels)   ``11pt_avg.levels`` (bare: the 11 levels)   ``11pt_avg``
Bpref, infAP, G,   ``bpref``, ``infAP``, ``G``, ``binG``,      the same
binG, nDCGRel,     ``ndcg_rel``, ``Rndcg``, ``utility``
RnDCG, Utility
AP, Bpref          ``gm_map``, ``gm_bpref``                    the same: log(max(v, 1e-5))
(mean=geometric)
NumQ ...           ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_nonrel_judged_ret``
=================  ==========================================  ============================

Measures whose keys would collide in one call (two recall levels that print alike, or two
``set_F`` or ``11pt_avg``: trec_eval keeps only the first parameters of a measure, and its key
names no parameter) go to separate calls.

A measure that fixes ``relevance_threshold`` (``P(rel=2)@5``) is computed with
``relevance_level`` = that threshold; pytrec_eval refuses 0 ("Argument relevance_level should be
positive.") and gives wrong values for negative levels (live: level -1 gives P_2 = 0 where every
document is relevant), so only thresholds >= 1 are supported. Nothing else is reachable: custom
gains (``ndcg.1=3,2=9``, ``G.1=3``) abort the whole process inside pytrec_eval (live: "malformed
pair parameters in '1'", then SIGSEGV); ``utility`` with coefficients prints "improper number of
coefficients" and returns 0.0 for every query (live: ``utility.2,-1,0,0``), so only its default
coefficients (1, -1, 0, 0) are supported, and no -N (collection size) exists; exponential gain,
DCG, F1@k and Success without a cutoff do not exist in trec_eval.

Isolation. Two inputs make pytrec_eval unsafe to call in our own process:

- a query whose judgments are all negative: trec_eval 9 then works past the end of its
  per-level tables. Live: qrels {q9: {d11: -1, d13: -2}} with two documents retrieved gives
  ``num_ret`` 0 (not 2), the same call repeated in one process hangs within a few hundred
  iterations, and qrels {q1: {d1: -2}, q2: {d1: 0}} with run {q2: {d1: 0}, q1: {d1: 0}} and
  ``recip_rank`` dies of SIGSEGV in a fresh process, every time;
- a large label: ndcg builds a gain table over every level from 0 to the largest label, in time
  quadratic in it (live: label 10^5 takes 10 s, 10^6 did not finish in 120 s), and a label of
  2^31 crashes the process or hangs.

For a large label the call runs alone, in a one-shot child process with a time limit
(``conformance.isolation.call(..., alone=True)``), and what it returns, or how it died, is the
library's result; the tool itself survives. A query whose
judgments are all negative is refused outright (``known_failure``): the numbers that come back,
when any do, are not the library's arithmetic but reads past the end of its tables. Smallest
case (differential tests): qrels {q1: {d1: -2}, q2: {d1: 0}}, run {q2: {d1: 0.0}, q1: {d1: 0.0}},
``recip_rank``: SIGSEGV; qrels {q9: {d11: -1, d13: -2}, q1: {a: 1, b: 0}}: q9's num_ret is 0
for 2 retrieved documents.

Facts behind the profile (pytrec_eval-terrier 0.5.11 = trec_eval 9.0.x C code; see also
``notes/trec_eval_semantics.md``; each confirmed live by ``tests/libs/test_trec_eval.py``):

- ties: score descending, then docno descending by byte-wise strcmp (``form_res_rels.c``,
  ``comp_sim_docno``); live: qrels {a:0, b:1}, both scored 1.0 -> P@1 = 1 (b first);
- scores: the binding stores each score as C ``float`` (trec_eval 9's ``TEXT_RESULTS.sim``), so
  1.0 and 1.0 + 1e-9 tie (live: they fall to the docno rule);
- labels: ``Expected relevance to be integer.`` (TypeError) for any non-int label, including
  2.0 and numpy integers; the adapter passes whole numbers as ``int``, so only a truly fractional
  label is refused: ``label_type=raise``;
- negative labels are "judged but not relevant at any level": gain 0, not in the ideal, not in
  num_rel (live: labels {a:-1, b:2, c:-3} ranked a, b, c give ndcg 0.6309 = ndcg of b alone);
- query set: only queries in both the run and the qrels come back (live), and the binding drops
  a query whose qrels dict is empty before trec_eval sees it (our Qrels never holds such a
  query: each query has at least one row);
- ``-l`` (relevance_level) moves the threshold of P, recall, map, map_cut, Rprec, recip_rank,
  success, num_rel and num_rel_ret, not of ndcg / ndcg_cut (live: level 2 on labels 1, 2, 3
  leaves ndcg at 0.78999, the value with every positive label as gain): ``threshold_scope=binary``;
  contrary to a comment in ir_measures' pytrec_eval provider, ``num_rel`` does follow it (live);
- ``recip_rank.k`` is accepted and ignored (live: RR 0.5 with the relevant document at rank 2 and
  k = 1): ``rr_cutoff=ignore``;
- ``P.k`` divides by k when fewer than k were retrieved; ``map`` and ``map_cut.k`` divide by
  num_rel; ``ndcg_cut.k`` cuts the ideal at k; the ideal holds every judged document with a
  positive label, retrieved or not (live: qrels {a:1, b:0, c:2, z:3}, run a > b > c ->
  ndcg_cut_3 0.4200);
- empty query (no relevant judged document): every measure is 0 and the query counts;
- duplicates: a dict cannot hold a document twice; pytrec_eval's own reader ``parse_run`` fails
  on it (AssertionError), and the adapter hands such a run to ``parse_run``, so the library's
  refusal is what is recorded;
- interpolated precision (iprec_at_recall, 11pt_avg) at level x asks for floor(x R + 0.9)
  relevant documents (trec_eval 9's rounding; ``iprec_rank=floor_plus_0.9``; live and in the
  published v9 outputs);
- ``gm_map`` and ``gm_bpref`` come back per query as log(max(v, 0.00001)) (trec_eval's
  MIN_GEO_MEAN); the adapter reads each back as exp of it, which is max(v, 0.00001), the
  value the reference gives under ``mean=geometric``; the binding's own aggregate for a gm_
  key is exp of the mean of the logs;
- ``set_F.x`` is (x + 1) P R / (x P + R): x is the F family's ``beta`` (live: set_F.0.5 on
  P = 1/2, R = 2/3 gives 0.5455).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from conformance import isolation
from conformance.conventions import TREC_EVAL, Conventions
from conformance.io.data import Qrels, Run
from conformance.libs import _pytrec_eval
from conformance.libs._nested import duplicate_pair, qrels_dict, run_dict
from conformance.libs.base import Entry, LibraryValues, Support, error_text
from conformance.measures import FAMILIES, Measure

# The binding is trec_eval 9's C code, so its profile is the trec_eval command line's
# (conventions.TREC_EVAL: every value there is seen in this code, and confirmed live by the tests)
# except where the binding differs: labels arrive as Python objects, not text read with atol.
# What the other axes rest on, value by value:
# gain=linear (the default): m_ndcg.c, no gain parameters given: the gain is the label
# discount=log2 (the default): m_ndcg.c: gain / log2(rank + 1)
# ideal=judged (the default): every qrels document with a positive label, retrieved or not (live: 0.4200)
# k_beyond_list=k (the default): m_P.c: P divides by k even when fewer were retrieved
# ap_denominator=relevant (the default): m_map.c, m_map_cut.c: divide by num_rel
# empty_query=zero (the default): every measure is 0 when num_rel = 0, and the query is averaged in
# ties=docid_desc (the default): form_res_rels.c comp_sim_docno: score desc, then strcmp(docno) desc
# relevance_threshold=1 (the default): relevance_level 1, leaving ndcg / ndcg_cut alone (live)
# negative_labels=unjudged (the default): a label < 0 is "in pool, not judged" (live)
# query_set=run (the default): only queries in both run and qrels come back (live); no -M
# rr_cutoff=ignore: m_recip_rank.c: recip_rank.k accepted and ignored (live: recip_rank.1 gives 0.5)
# score_precision=float32: scores stored as C float (live: 1 and 1+1e-9 tie)
# duplicates=error (the default): pytrec_eval.parse_run: `assert object_id not in run[query_id]`
PROFILE = TREC_EVAL.replace(
    label_type="raise",  # pytrec_eval.cpp: TypeError "Expected relevance to be integer." (live)
)

# Above this label, the call runs in a child process (see "Isolation" above).
ISOLATE_ABOVE = 10_000
ISOLATED_TIMEOUT = 60.0

# pytrec_eval-terrier 0.5.11's pytrec_eval.supported_measures (trec_eval 9's measures), the
# declared list when the binding is not importable; a test holds it to the live one.
SUPPORTED = frozenset({
    "11pt_avg", "G", "P", "Rndcg", "Rprec", "Rprec_mult", "binG", "bpref", "gm_bpref", "gm_map",
    "infAP", "iprec_at_recall", "map", "map_cut", "ndcg", "ndcg_cut", "ndcg_rel",
    "num_nonrel_judged_ret", "num_q", "num_rel", "num_rel_ret", "num_ret", "recall", "recip_rank",
    "relative_P", "relstring", "runid", "set_F", "set_P", "set_map", "set_recall",
    "set_relative_P", "success", "utility"})


def supported_measures() -> frozenset:
    try:
        import pytrec_eval
    except Exception:
        return SUPPORTED
    return frozenset(pytrec_eval.supported_measures)


def measure_string(m: Measure) -> tuple[str, str]:
    """(the string passed to pytrec_eval, the key its result comes back under), from the
    family's trec_eval name: ``ndcg_cut.10`` -> ``ndcg_cut_10``; ``recip_rank.10`` (accepted,
    the cutoff ignored) -> ``recip_rank``; ``map`` -> ``map``; ``Rprec_mult.0.2`` ->
    ``Rprec_mult_0.20``; ``11pt_avg.0.2,0.8`` -> ``11pt_avg``; ``gm_map`` -> ``gm_map``."""
    name, k = m.record.name_in("trec_eval", m.cutoff, m.overrides), m.cutoff
    f = m.record
    if name.each:
        value = m.param(name.each)
        return f"{name.text}.{value!r}", f"{name.text}_{value:3.2f}"
    if name.whole:
        value = m.param(name.whole)
        if value == f.parameter(name.whole).default:
            return name.text, name.text
        text = ",".join(repr(v) for v in value) if isinstance(value, tuple) else repr(value)
        return f"{name.text}.{text}", name.text
    if k is None:
        return name.text, name.text
    return f"{name.text}.{k}", (f"{name.text}_{k}" if name.cut else name.text)


def relevance_evaluate(qrels: dict, run: dict, strings: list[str], level: int) -> dict:
    """The call: ``{qid: {result key: value}}`` (a module-level function, so that a child
    process can be given it)."""
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, strings, relevance_level=level).evaluate(run)


def needs_isolation(qrels: Qrels) -> bool:
    """A label above ISOLATE_ABOVE, or a query all of whose labels are negative."""
    if not len(qrels):
        return False
    if float(qrels.label.max()) > ISOLATE_ABOVE:
        return True
    top = np.full(qrels.qids.size, -np.inf)
    np.maximum.at(top, qrels.qcode, qrels.label)
    return bool((top[np.unique(qrels.qcode)] < 0).any())


class TrecEvalEntry(Entry):
    name = "trec_eval"
    library = "trec_eval"
    module = "pytrec_eval"
    distribution = "pytrec-eval-terrier"
    # Tolerance: trec_eval computes in double from integer labels; only the sort key is float32
    # (score_precision): double arithmetic alone, 1e-12
    tolerance = 1e-12
    description = "pytrec_eval.RelevanceEvaluator (trec_eval 9 code), relevance_level per measure"

    # only the threshold is a parameter of the call (relevance_level, at least 1); any other
    # axis a name fixes must already be trec_eval's (ndcg with custom gains would abort the
    # process) or be fixed by the measure string itself (gm_map: the geometric mean). The
    # family parameters taken are those its measure strings carry (set_F.beta, Rprec_mult.x,
    # ...), but utility's coefficients, which come back as 0.0 (see the module docstring)
    support = Support(free_axes=frozenset({"relevance_threshold"}), min_threshold=1,
                      parameters=frozenset(n.each or n.whole for f in FAMILIES.values()
                                           for n in f.names if n.syntax == "trec_eval"
                                           and (n.each or n.whole)) - {"coefficients"})

    def names(self, measure: Measure) -> bool:
        name = measure.record.name_in("trec_eval", measure.cutoff, measure.overrides)
        return name is not None and name.text in supported_measures()

    def free_axes(self, measure: Measure) -> frozenset:
        name = measure.record.name_in("trec_eval", measure.cutoff, measure.overrides)
        return self.support.free_axes | {a for a, _ in name.fixed}

    def profile(self, measure: Measure) -> Conventions:
        return PROFILE

    # a listed query whose every judgment is negative (conformance.libs._pytrec_eval)
    known_failure_shows = _pytrec_eval.SHOWS
    known_failure_ceiling = _pytrec_eval.CEILING

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        return _pytrec_eval.refusal(qrels, run)

    def failure_evidence(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        return _pytrec_eval.evidence(qrels, run)

    def default_profile(self) -> Conventions:
        return PROFILE

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        """One RelevanceEvaluator per relevance level for all the measures at that level."""
        out: dict[Measure, LibraryValues] = {}
        by_level: dict[int, list[Measure]] = {}
        for m in measures:
            if not self.supports(m):
                out[m] = LibraryValues(error=f"{self.name} does not compute {m.text}")
            else:
                by_level.setdefault(m.conventions(PROFILE).relevance_threshold, []).append(m)
        if not by_level:
            return out
        failure = self.refusal(qrels, run)
        if failure is not None:
            err = LibraryValues(error=failure)
            return {**out, **{m: err for ms in by_level.values() for m in ms}}
        try:
            import pytrec_eval

            q = qrels_dict(qrels)
            dup = duplicate_pair(run)
            if dup is not None:
                # the dict cannot carry it: let the binding's own reader judge the listing
                pytrec_eval.parse_run(
                    f"{qid} Q0 {doc} 0 {score!r} run"
                    for qid, doc, score in zip(run.query_ids(), run.doc_ids(), run.score.tolist())
                )
            r = run_dict(run)
        except Exception as exc:
            err = LibraryValues(error=error_text(exc))
            return {**out, **{m: err for ms in by_level.values() for m in ms}}
        alone = needs_isolation(qrels)  # see "Isolation" above
        for level, ms in by_level.items():
            for batch in _batches(ms):
                strings = sorted({measure_string(m)[0] for m in batch})
                try:
                    result = isolation.call(relevance_evaluate, q, r, strings, level, alone=alone,
                                            timeout=ISOLATED_TIMEOUT)
                except isolation.Fault as fault:  # the library's death is the result
                    why = (" (its ndcg gain table grows with the square of the largest label)"
                           if fault.kind == "timed_out" else "")
                    err = LibraryValues(error=f"pytrec_eval {fault}{why}")
                    out.update({m: err for m in batch})
                    continue
                except Exception as exc:  # the library's refusal is the result
                    err = LibraryValues(error=error_text(exc))
                    out.update({m: err for m in batch})
                    continue
                for m in batch:
                    key = measure_string(m)[1]
                    per_query = {qid: float(vals[key]) for qid, vals in result.items()}
                    with warnings.catch_warnings():  # np.mean of no queries: NaN, as our aggregate
                        warnings.simplefilter("ignore", RuntimeWarning)
                        mean = pytrec_eval.compute_aggregated_measure(key, list(per_query.values()))
                    if key.startswith("gm_"):  # log(max(v, 1e-5)) per query: read back exp
                        per_query = {qid: math.exp(v) for qid, v in per_query.items()}
                    out[m] = LibraryValues(per_query=per_query, mean=float(mean))
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


def _batches(ms: list[Measure]) -> list[list[Measure]]:
    """The measures in calls whose result keys are distinct (see the module docstring): a
    measure joins the first call where its key is new or already stands for its own string."""
    batches: list[tuple[dict[str, str], list[Measure]]] = []
    for m in ms:
        string, key = measure_string(m)
        for by_key, batch in batches:
            if by_key.get(key, string) == string:
                by_key[key] = string
                batch.append(m)
                break
        else:
            batches.append(({key: string}, [m]))
    return [batch for _, batch in batches]


ENTRIES: list[Entry] = [TrecEvalEntry()]
