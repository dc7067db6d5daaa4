"""ranx: ``ranx.evaluate`` on ``ranx.Qrels`` / ``ranx.Run`` objects.

Translation (``conformance.libs._nested``): the nested dicts ``{qid: {docid: label}}`` and
``{qid: {docid: score}}`` go into an empty ``Qrels()`` / ``Run()`` through their public
``add_multi(qids, docids, values)``, query by query in the inputs' order; then one call for
every measure::

    ranx.evaluate(qrels, run, ["ndcg@10", "precision@5-l2", ...], return_mean=False,
                  make_comparable=...)

``add_multi`` sorts exactly as the dict constructors do (``add_and_sort`` and ``create_and_sort``
both end in ``sort_dict_by_key`` and ``sort_dict_of_dict_by_value``) and truncates labels the same
way (``int()`` / ``np.array(dtype=int)``). It is used instead of ``Qrels(dict)`` / ``Run(dict)``
because those turn doc ids into numpy arrays of dtype ``<U{longest id}``, and numba compiles
``create_and_sort`` afresh for every such width (live: 60-110 s per new width on this machine,
then cached on disk), while ``add_multi`` passes Python strings: one compiled signature for every
input. (``Run({})`` also fails, on ``max()`` of nothing.)

The per-query values are read from ``run.scores[metric]`` and the mean from
``run.mean_scores[metric]``, where ``evaluate`` stores them itself (``save_results_in_run``), so
the query each value belongs to is ranx's own assignment. (``evaluate``'s return value changes
shape with the number of metrics: a bare array for one, a dict for several.)

==========================  =================================================================
entry                       call
==========================  =================================================================
``ranx``                    ``evaluate(qrels, run, metrics)``: query sets must be equal
``ranx:make_comparable``    ``evaluate(..., make_comparable=True)``: ``Run.make_comparable``
                            adds an empty list for every qrels query missing from the run
                            and removes run queries that have no qrels
==========================  =================================================================

=================  =========================================  ===========================
measure            metric                                     with ``gain=exponential``
=================  =========================================  ===========================
nDCG(@k), DCG(@k)  ``ndcg``, ``ndcg@k``, ``dcg``, ``dcg@k``   ``ndcg_burges``, ``dcg_burges``
AP(@k), RR(@k)     ``map``, ``map@k``, ``mrr``, ``mrr@k``
P(@k), F1(@k)      ``precision``, ``precision@k``, ``f1``, ``f1@k`` (bare: the whole list)
R(@k)              ``recall``, ``recall@k``
Success(@k)        ``hit_rate``, ``hit_rate@k``
Hits(@k)           ``hits``, ``hits@k``
Rprec, Bpref       ``r-precision``, ``bpref``
RBP(p)             ``rbp.DIGITS`` (p = 0.DIGITS, ``extract_metric_and_params``)
=================  =========================================  ===========================

A relevance threshold L other than 1 is the suffix ``-lL`` (``precision@5-l2``). For nDCG and DCG
that suffix also drops labels below L from the gains and the ideal, so it is only offered there
with ``threshold_scope=graded`` (the profile's value, which ranx's ``-l`` parsing in
``conformance.measures`` sets). Thresholds below 1 are not supported: ``-l0`` makes label 0
relevant and ``-l-1`` makes label -1 relevant with a negative gain (``clean_qrels`` keeps labels
>= L), which the ``negative_labels`` axis does not describe.

Facts behind the profile (ranx 0.3.21, each confirmed live by ``tests/libs/test_ranx.py``):

- gain: ``ndcg``/``dcg`` call ``_dcg(..., jarvelin=True)``, which despite the name is
  ``rel / log2(rank + 1)`` (linear gain, our ``log2`` discount, not our ``jarvelin`` discount);
  ``*_burges`` use ``(2^rel - 1) / log2(rank + 1)``;
- ideal: ``_idcg`` is ``_dcg`` of the qrels (sorted by label) against themselves: every judged
  document, retrieved or not, cut at k; live: the 0.4200 example;
- labels: ``Qrels.add_multi`` applies ``int()`` (the constructor ``np.array(labels, dtype=int)``):
  1.7 -> 1, -0.5 -> 0, -1.5 -> -1 (truncation towards zero);
- ``clean_qrels`` keeps labels >= L (L = 1 by default) for every metric, gains included:
  negative labels are never relevant, have gain 0 and are not in the ideal
  (``negative_labels=unjudged``), and with ``-lL`` labels below L leave nDCG/DCG too
  (``threshold_scope=graded``: live, ndcg-l2 on labels 1, 2, 3 is 0.6480, not trec_eval's
  0.7900); a label L or above keeps gain = label;
- empty query: every metric returns 0.0 when no judged label is >= L (``_ndcg`` sets an ideal
  of 0 to 1, so nDCG is 0 too), and the query counts in ranx's mean;
- ``precision@k`` = hits in top k / k, k kept when the list is shorter; ``map@k`` divides by the
  number of relevant judged documents R; ``r-precision`` is precision at R (divided by R);
  ``mrr@k`` only looks at the top k (``for i in range(k)``);
- ties: ``Run.add_multi`` (like ``Run.__init__``) sorts each query with numba's ``np.argsort`` on negated scores, a
  quicksort that is an insertion sort (stable) up to 15 documents and partitions beyond: live,
  15 tied documents keep their input order, 16 come out as 15, 14, ..., 1, 16 (1-based input
  positions), and 20 documents with 2 tied among them may also swap; never by doc id.
  So the order of ties is unspecified (the reference gives the range);
- scores: ``np.array(scores, dtype=float)``: float64 (live: 1.0 and 1.0 + 1e-12 do not tie);
- query set: ``evaluate`` asserts ``qrels.keys() == run.keys()`` ("Qrels and Run query ids do
  not match. Pass `make_comparable=True` ...", AssertionError): ``query_set=raise``; with
  ``make_comparable=True`` every qrels query is scored and one missing from the run scores 0
  (live): ``query_set=qrels``;
- duplicates: a dict keeps the last listing; so do ranx's own readers (``run_file_to_dict``,
  ``qrels_file_to_dict`` assign into a dict): ``duplicates=last``;
- ``bpref`` (metrics/bpref.py): R and N are the qrels' labels >= L and < L before
  ``clean_qrels``, so a negative label is a judged non-relevant document
  (``negative_labels=keep``; live: qrels {a: 1, n: -1}, n ranked above a: 0.0, where trec_eval
  gives 1.0); unjudged documents are dropped from the list; each relevant one scores 1 -
  min(non-relevant above, R) / min(R, N) (``bpref_denominator=min_r_n``, though the docstring
  writes R). Findings, refused by the adapter: with no judged non-relevant document (N = 0) a
  retrieved relevant one scores 1 - 0/0, NaN (live: qrels {a: 1}, run {a: 1.0, b: 0.5}: NaN,
  and numba's RuntimeWarning), where the formula's own limit (and trec_eval) is 1; and when
  some query has no relevant judged document (R = 0, a division by zero in ``_bpref``), every
  query of the evaluation scores 0 (live: qrels {q1: {a: 0}, q2: {b: 1, c: 0}}, run
  {q1: {a: 1.0}, q2: {b: 0.5, c: 0.1}}: q2 scores 0.0, not 1.0; without q1, 1.0);
- ``rbp.p`` (metrics/rank_biased_precision.py): (1 - p) sum of the labels of the documents
  labelled L or above, p^(i - 1) (``rbp_gain=label``; live: labels 2, 1, 3 ranked in that
  order, rbp.8 = 0.944, rbp.8-l2 = 0.784); the whole list, no horizon;
- ``hits@k``: the relevant documents in the top k, averaged over queries (family Hits);
  ``precision`` and ``f1`` without @k read the whole list (``fix_k``: k = the list's length),
  which is P and F1 without a cutoff (trec_eval's set_P and set_F); ranx's F1 has no beta;
- exponential gain (``_burges``) of a label of 1024 or more: 2^label overflows a double, and
  ndcg_burges gives NaN, dcg_burges inf (live: labels 1024, 0 ranked in order), where the
  reference gives nDCG 1 with its gains scaled (and refuses DCG): refused by the adapter.
"""

from __future__ import annotations

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs._nested import qrels_dict, run_dict
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    # gain=linear (the default): metrics/ndcg.py _dcg(jarvelin=True): weighted_hit_list / log2(i + 1)
    # discount=log2 (the default): metrics/ndcg.py: np.log2(np.arange(1, k + 1) + 1)
    # ideal=judged (the default): metrics/ndcg.py _idcg: _dcg(qrels, qrels, ...) over every judged doc
    # k_beyond_list=k (the default): metrics/precision.py _precision: _hits(...) / k
    # ap_denominator=relevant (the default): metrics/average_precision.py: sum / qrels.shape[0] (R)
    # empty_query=zero (the default): every metric: `if len(qrels) == 0: return 0.0` after clean_qrels
    ties="unspecified",  # numba quicksort in data_structures/common.py sort_dict_by_value (live)
    # relevance_threshold=1 (the default): extract_metric_and_params: rel_lvl = 1 unless -lN
    threshold_scope="graded",  # metrics/common.py clean_qrels drops labels < L from gains too
    # negative_labels=unjudged (the default): clean_qrels: labels < L (L >= 1) are dropped
    label_type="int_truncate",  # data_structures/qrels.py add_multi: map(int, x) (towards zero)
    query_set="raise",  # meta/evaluate.py check_keys: AssertionError unless the sets match
    # depth=none (the default): the whole list is scored
    # score_precision=float64 (the default): data_structures/run.py: np.array(x, dtype=float)
    # rr_cutoff=honour (the default): metrics/reciprocal_rank.py: for i in range(k)
    # rank_source=score (the default): a Run holds scores only
    duplicates="last",  # a dict (and ranx's file readers) keep the last listing
)
MAKE_COMPARABLE_PROFILE = PROFILE.replace(
    query_set="qrels",  # Run.make_comparable: empty results for missing qrels queries (score 0)
)
# Measures whose ranx metric reads the labels otherwise (see the module docstring)
BY_FAMILY = {
    "Bpref": {"negative_labels": "keep"},  # metrics/bpref.py: labels < L before clean_qrels
    "RBP": {"rbp_gain": "label"},  # metrics/rank_biased_precision.py: weighted_hit = the label
}

def _name(m: Measure, conv: Conventions) -> str | None:
    """ranx's name of ``m``'s family (the family records' ranx spelling at ``m``'s cutoff);
    under exponential gain, the spelling that fixes it (``ndcg_burges``); None: ranx has none."""
    f = m.record
    name = f.name_in("ranx", m.cutoff)
    if name is None:
        return None
    if f.kind == "graded" and conv.gain == "exponential":
        burges = [n for n in f.names if n.syntax == "ranx" and ("gain", "exponential") in n.fixed]
        return burges[0].text if burges else None
    return name.text


def _rbp_digits(p: float) -> str | None:
    """ranx's spelling of persistence p: 0.95 -> "95" (``rbp.95``), or None when p has no
    such spelling (ranx reads float("0." + digits))."""
    text = repr(float(p))
    return text[2:] if text.startswith("0.") and float("0." + text[2:]) == p else None


def metric_string(m: Measure, profile: Conventions = PROFILE) -> str:
    """The ranx metric for ``m``: ``ndcg_burges@10-l2``, ``rbp.95``."""
    conv = m.conventions(profile)
    name = _name(m, conv)
    if m.family == "RBP":
        name += "." + _rbp_digits(m.param("p"))
    if m.cutoff is not None:
        name += f"@{m.cutoff}"
    if conv.relevance_threshold != 1:
        name += f"-l{conv.relevance_threshold}"
    return name


class RanxEntry(Entry):
    library = "ranx"
    module = "ranx"
    distribution = "ranx"
    # Tolerance: ranx's numba kernels compute in float64 from float64 scores and integer labels:
    # double arithmetic alone, 1e-12
    tolerance = 1e-12

    def __init__(self, name: str, description: str, *, make_comparable: bool, profile: Conventions):
        self.name = name
        self.description = description
        self.make_comparable = make_comparable
        self._profile = profile

    # the threshold is the metric's rel_lvl (at least 1); a graded measure's gain is its name
    # (ndcg_burges); ranx's metrics take no parameter but rbp's p (F1 has no beta)
    support = Support(free_axes=frozenset({"relevance_threshold"}), min_threshold=1,
                      parameters=frozenset({"p"}))

    def names(self, measure: Measure) -> bool:
        if measure.family == "RBP" and _rbp_digits(measure.param("p")) is None:
            return False
        return _name(measure, measure.conventions(self.profile(measure))) is not None

    def free_axes(self, measure: Measure) -> frozenset:
        conv = measure.conventions(self.profile(measure))
        if measure.record.kind == "graded" and conv.gain == "exponential":
            return self.support.free_axes | {"gain"}
        return self.support.free_axes

    def profile(self, measure: Measure) -> Conventions:
        return self._profile.replace(**BY_FAMILY.get(measure.family, {}))

    # bpref: every query 0, or NaN (wrong values); a label of 1024 or more under exponential gain:
    # NaN or inf (no generated label is above 4). Bpref's ceiling: a case has a query with no
    # relevant judged document or no judged non-relevant one often (measured: up to 60% of a run)
    known_failure_shows = frozenset({"wrong_values"})
    known_failure_ceiling = {"Bpref": 0.8, "*": 0.0}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """ranx's bpref on a query with no relevant judged document (every query then scores
        0) or with no judged non-relevant one and a relevant one retrieved (NaN); see the module
        docstring. Smallest cases: qrels {q1: {a: 0}, q2: {b: 1, c: 0}}, run {q1: {a: 1.0}, q2:
        {b: 0.5, c: 0.1}}; qrels {q1: {a: 1}}, run {q1: {a: 1.0, b: 0.5}}."""
        if measure is None or not self.supports(measure):
            return None
        conv = measure.conventions(self.profile(measure))
        if measure.record.kind == "graded" and conv.gain == "exponential" and len(qrels) and (
                float(qrels.label.max()) >= 1024):
            return ("refused by the adapter: under exponential gain a label of 1024 or more has "
                    "a gain beyond a double: ranx's ndcg_burges gives NaN and dcg_burges inf "
                    "(live: labels 1024, 0)")
        if measure.family != "Bpref":
            return None
        level = conv.relevance_threshold
        q, r = qrels_dict(qrels), run_dict(run)
        if not self.make_comparable and set(q) != set(r):
            return None  # ranx refuses the case by itself ("query ids do not match")
        labels = {qid: {d: int(v) for d, v in docs.items()}  # ranx truncates (add_multi)
                  for qid, docs in q.items()}
        # a query whose bpref can be above 0: a relevant judged document retrieved
        scoring = any(v >= level and d in r.get(qid, {})
                      for qid, docs in labels.items() for d, v in docs.items())
        for qid, docs in labels.items():
            if scoring and not any(v >= level for v in docs.values()):
                return (f"refused by the adapter: query {qid!r} has no relevant judged document, "
                        "on which ranx's bpref divides by zero and scores every query 0")
            if all(v >= level for v in docs.values()) and any(d in docs for d in r.get(qid, {})):
                return (f"refused by the adapter: query {qid!r} has no judged non-relevant "
                        "document, on which ranx's bpref divides 0 by 0 (NaN)")
        return None

    def default_profile(self) -> Conventions:
        return self._profile

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        """One ``ranx.evaluate`` call for every supported measure."""
        out: dict[Measure, LibraryValues] = {}
        wanted: dict[Measure, str] = {}
        for m in measures:
            failure = self.refusal(qrels, run, m)
            if failure is not None:
                out[m] = LibraryValues(error=failure)
            elif self.supports(m):
                wanted[m] = metric_string(m, self.profile(m))
            else:
                out[m] = LibraryValues(error=f"{self.name} does not compute {m.text}")
        if not wanted:
            return out
        try:
            import ranx

            q, r = qrels_dict(qrels), run_dict(run)
            rq, rr = ranx.Qrels(), ranx.Run()
            if q:
                rq.add_multi(list(q), [list(d) for d in q.values()], [list(d.values()) for d in q.values()])
            if r:
                rr.add_multi(list(r), [list(d) for d in r.values()], [list(d.values()) for d in r.values()])
            metrics = sorted(set(wanted.values()))
            ranx.evaluate(rq, rr, metrics, return_mean=False, make_comparable=self.make_comparable)
        except Exception as exc:  # the library's refusal is the result
            err = LibraryValues(error=f"{type(exc).__name__}: {exc}")
            return {**out, **{m: err for m in wanted}}
        for m, metric in wanted.items():
            per_query = {str(qid): float(v) for qid, v in rr.scores[metric].items()}
            out[m] = LibraryValues(per_query=per_query, mean=float(rr.mean_scores[metric]))
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [
    RanxEntry("ranx", "ranx.evaluate on Qrels/Run objects (query sets must match)",
              make_comparable=False, profile=PROFILE),
    RanxEntry("ranx:make_comparable", "ranx.evaluate(..., make_comparable=True)",
              make_comparable=True, profile=MAKE_COMPARABLE_PROFILE),
]
