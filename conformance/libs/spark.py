"""Spark (optional extra): ``pyspark.mllib.evaluation.RankingMetrics`` and
``pyspark.ml.evaluation.RankingEvaluator``, live on a local session.

Translation: Spark's ranking evaluators take one row per query holding two arrays (three with
the relevance array), never scores, so the adapter writes the rows a Spark user writes::

    prediction = the run's documents of the query, best first
    ground truth = its relevant documents (label >= 1)      # entry "spark"
                 = every judged document, and their labels  # entry "spark:relevance"

one row per run query (a run query with no judgment gets an empty ground truth: the left join
from the predictions a recommender evaluation writes). "Best first" is the reference's own
order: score descending, equal scores by document id byte-wise descending (``ties=docid_desc``);
Spark sees no score, so this order is the whole tie rule: a caller who builds the arrays in
another order gets the values of that order (``ties=input_order`` on a run listed that way).

The calls, for all rows of a case (or of a batch of cases, ``evaluate_batch``) at once::

    RankingMetrics over DataFrame(prediction array<string>, label array<string>[, relevance
    array<double>]): .precisionAt(k), .recallAt(k), .meanAveragePrecision,
    .meanAveragePrecisionAt(k), .ndcgAt(k)
    RankingEvaluator(metricName=..., k=k).evaluate(DataFrame(prediction array<double>,
    label array<double>))     # document ids numbered as doubles: the columns must be numeric

``RankingMetrics`` is the JVM object the Python class wraps, made by the call its constructor
makes (``callMLlibFunc("newRankingMetrics", df._jdf)``) on a DataFrame with a declared schema
instead of one inferred from a Python RDD (no Python worker, no inference job; a live test
checks the Python class gives the same means). Spark returns means only; each query's value
is Spark's own per-row function, the compiled body of the ``map`` each metric runs before
``mean()`` (``RankingMetrics.$anonfun$precisionAt$2(metrics, k, row)`` and its siblings), applied
through py4j to the very rows the metric maps (converted by Spark's own row functions:
``PythonMLLibAPI.$anonfun$newRankingMetrics$1``, ``RankingEvaluator.$anonfun$getMetrics$1``,
then ``RankingMetrics.$anonfun$rdd$1``); the adapter checks that the mean of those values is
the metric's own mean (within 1e-12) and fails the measure otherwise. A Spark release that
renames those functions makes every measure fail with the missing name, never a wrong number.

The session: ``local[2]``, one per process, started on first use (``session()``), in the
worker process the runner gives the library (both entries share it, so a run starts the JVM
once).

======================  =====================================  =============================
measure                 RankingMetrics                         RankingEvaluator metricName
======================  =====================================  =============================
P@k                     ``precisionAt(k)``                     ``precisionAtK``
R@k                     ``recallAt(k)``                        ``recallAtK``
AP                      ``meanAveragePrecision``               ``meanAveragePrecision``
AP@k                    ``meanAveragePrecisionAt(k)``          ``meanAveragePrecisionAtK``
nDCG@k                  ``ndcgAt(k)``                          ``ndcgAtK``
======================  =====================================  =============================

Facts behind the profiles (pyspark 4.3.0, ``mllib/evaluation/RankingMetrics.scala``,
``ml/evaluation/RankingEvaluator.scala``, ``mllib/api/python/PythonMLLibAPI.scala`` read as the
jar's bytecode; each confirmed live by ``tests/libs/test_spark.py``):

- a query whose ground truth is empty scores 0 and stays in the mean (every metric: ``if
  (labSet.nonEmpty) ... else 0.0``, then ``mean()`` over all rows): with the rows above,
  ``query_set=run_all`` and ``empty_query=zero``;
- P@k = hits in the top min(n, k) / k (``countRelevantItemRatio(pred, lab, k, k)``):
  ``k_beyond_list=k``; R@k = hits / |ground truth|: R;
- MAP divides the sum of precisions by |ground truth| (``averagePrecision(pred, labSet,
  max(n, R))`` divides by min(R, max(n, R)) = R): ``ap_denominator=relevant``; MAP@k by
  min(R, k): ``ap_denominator=min_k_relevant``;
- nDCG@k without relevance: gain 1 per ground-truth document, discount 1 / ln(i + 2) (the log's
  base cancels in the ratio: the ``log2`` discount within 1e-12), ideal min(k, R) ones:
  ``gain=binary`` over the judged ideal;
- every metric counts a document listed twice each time it is listed (``labSet.contains
  (pred(i))`` per position): ``duplicates=keep``;
- finding: PySpark drops the relevance array. ``RankingMetrics``' docstring says "Since 3.4.0,
  it supports ndcg evaluation with relevance value", but the JVM object its constructor makes
  comes from ``PythonMLLibAPI.newRankingMetrics``, which reads columns 0 and 1 of each row
  (``Tuple2(row.getSeq(0), row.getSeq(1))``) and never the third; ``RankingMetrics`` then
  calls every row binary (``rel.isEmpty``). Live: prediction [b, a], ground truth [a, b],
  relevance [3, 1], ``ndcgAt(2)`` = 1.0 (graded: 0.7098). So through PySpark, P, R, MAP and
  nDCG all read the ground truth as a set, and every judged document passed in it is
  relevant whatever its label, 0 and negative labels included: the ``spark:relevance`` profile
  is ``gain=binary`` with ``relevance_threshold`` at the axis' lowest value (-2^31: every
  label) and ``negative_labels=keep``;
- the Scala code's graded nDCG (reachable from the JVM, not from PySpark) builds its ideal
  DCG from the ground-truth array in the order the caller gives it (``lab(i)`` for i <
  |labSet|, no sort by relevance), so unsorted labels give nDCG above 1: live, through the
  per-row function with the relevance array, prediction [a], ground truth [b, a], relevance
  [1, 2], ``ndcgAt(1)`` = 3.0. No entry reaches that path (PySpark drops the array first);
- ``RankingEvaluator`` reads its two columns through ``getMetrics`` into the same
  ``RankingMetrics`` (relevance never read), so its profile is ``spark``'s; its columns must
  be numeric arrays of one type.
"""

from __future__ import annotations

import math
import os

from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    # discount=log2 (the default): 1 / math.log(i + 2); the base cancels in dcg / maxDcg
    # ideal=judged (the default): maxDcg over min(k, |labSet|) positions of the ground truth
    # k_beyond_list=k (the default): countRelevantItemRatio(pred, lab, k, k): hits / k
    # ap_denominator=relevant (the default): averagePrecision(.., max(n, R)): / min(R, max(n, R))
    # empty_query=zero (the default): "Empty ground truth set" -> 0.0, kept in mean()
    # ties=docid_desc (the default): the adapter's order of the prediction array (no scores)
    # relevance_threshold=1 (the default): the adapter's ground truth is the labels >= 1
    query_set="run_all",  # one row per run query; no judgment -> empty ground truth -> 0
    duplicates="keep",  # labSet.contains(pred(i)) at every position: each listing counts
)
# ndcgAt without relevance: gain 1 per ground-truth document (dcg += 1 / log(i + 2))
NDCG_PROFILE = PROFILE.replace(gain="binary")
# meanAveragePrecisionAt(k): precSum / math.min(lab.size, k)
APK_PROFILE = PROFILE.replace(ap_denominator="min_k_relevant")
# spark:relevance: every judged document is in the ground truth and PySpark drops the labels,
# so every judged document is relevant, whatever its label (see the finding above)
# relevance_threshold=-2147483648: the ground truth array holds every judged docid, label 0 too
# negative_labels=keep: a docid judged -1 is in that array as well, so it counts as relevant
EVERY_LABEL = -(2 ** 31)  # the lowest relevance_threshold the axis takes


def _family_profile(base: Conventions, measure: Measure) -> Conventions:
    if measure.family == "nDCG":
        return base.replace(gain="binary")
    if measure.family == "AP" and measure.cutoff is not None:
        return base.replace(ap_denominator="min_k_relevant")
    return base


# family, takes a cutoff -> (RankingMetrics method, its per-row function, RankingEvaluator name)
_CALLS = {
    ("P", True): ("precisionAt", "$anonfun$precisionAt$2", "precisionAtK"),
    ("R", True): ("recallAt", "$anonfun$recallAt$2", "recallAtK"),
    ("AP", False): ("meanAveragePrecision", "$anonfun$meanAveragePrecision$1", "meanAveragePrecision"),
    ("AP", True): ("meanAveragePrecisionAt", "$anonfun$meanAveragePrecisionAt$2",
                   "meanAveragePrecisionAtK"),
    ("nDCG", True): ("ndcgAt", "$anonfun$ndcgAt$2", "ndcgAtK"),
}
MAX_K = 2 ** 31 - 1  # k is a JVM int

_SESSION = None


def master() -> str:
    """The master the entries' local session uses: ``local[2]``."""
    return "local[2]"


def session():
    """This process's Spark session for the entries (started on first use, reused after)."""
    global _SESSION
    if _SESSION is None or _SESSION.sparkContext._jsc is None:
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
        _SESSION = (SparkSession.builder.master(master()).appName("conformance-entries")
                    .config("spark.ui.enabled", "false")
                    .config("spark.sql.shuffle.partitions", "2")
                    .getOrCreate())
        _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_session() -> None:
    """Stop this process's session (the tests stop theirs)."""
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None


def spark_rows(qrels: Qrels, run: Run, every_judged: bool) -> list[tuple[str, list, list, list]]:
    """(query id, prediction, ground truth, relevance) per run query, in the order the run
    first lists its queries: the prediction best first (score descending, then document id
    byte-wise descending: Python's str order is code-point order, which UTF-8 byte order
    keeps); the ground truth in qrels order, with ``every_judged`` every judged document and its
    label, else the documents labelled 1 or more and no relevance."""
    truth: dict[str, tuple[list, list]] = {}
    for q, d, label in zip(qrels.query_ids().tolist(), qrels.doc_ids().tolist(),
                           qrels.label.tolist()):
        if every_judged or label >= 1:
            ids, rel = truth.setdefault(q, ([], []))
            ids.append(d)
            rel.append(float(label))
    lists: dict[str, list] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        lists.setdefault(q, []).append((d, s))
    rows = []
    for q, docs in lists.items():
        docs.sort(key=lambda x: x[0], reverse=True)  # doc id descending, then (stable) score
        docs.sort(key=lambda x: x[1], reverse=True)
        ids, rel = truth.get(q, ([], []))
        rows.append((q, [d for d, _ in docs], list(ids), list(rel) if every_judged else []))
    return rows


class SparkEntry(Entry):
    library = "spark"
    module = "pyspark"
    distribution = "pyspark"
    tolerance = 1e-12  # float64 throughout; 1/ln(i+2) against 1/log2(i+2) differs in the last bits

    def __init__(self, name: str, description: str, *, evaluator: bool, every_judged: bool,
                 profile: Conventions):
        self.name = name
        self.description = description
        self.evaluator = evaluator
        self.every_judged = every_judged
        self._profile = profile

    # the calls of _CALLS, a cutoff of a JVM int; no axis is a parameter of a call
    support = Support(families=frozenset(f for f, _ in _CALLS),
                      needs_cutoff=frozenset(f for f, k in _CALLS if (f, not k) not in _CALLS),
                      no_cutoff=frozenset(f for f, k in _CALLS if not k and (f, True) not in _CALLS),
                      least_cutoff=1, most_cutoff=MAX_K)

    def profile(self, measure: Measure) -> Conventions:
        return _family_profile(self._profile, measure)

    def default_profile(self) -> Conventions:
        return self._profile

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        return self.evaluate_batch([(qrels, run)], measures, means=True)[0]

    def evaluate_batch(self, cases: list[tuple[Qrels, Run]], measures: list[Measure],
                       means: bool = False) -> list[dict[Measure, LibraryValues]]:
        """Every case's values of every measure, from one DataFrame holding all their rows:
        per-query values by Spark's per-row functions, and the metric's own mean over the
        whole batch, checked against them. ``means`` (one case only): the case's Spark mean
        as its ``mean``; a batch of several gives no mean per case."""
        wanted, rest = self.split_supported(measures)
        outs = [dict(rest) for _ in cases]
        if not wanted:
            return outs
        try:
            values = self._batch_values(cases, wanted, means)
        except Exception as exc:  # the library's failure (or its absence) is a result
            from conformance.libs.base import error_text

            for out in outs:
                out.update({m: LibraryValues(error=error_text(exc)) for m in wanted})
            return outs
        for out, case_values in zip(outs, values):
            out.update(case_values)
        return outs

    # ---- the calls ----------------------------------------------------------------------

    def _frame(self, spark, rows):
        """The DataFrame Spark evaluates, and its rows collected in the JVM (``Row`` objects)."""
        if self.evaluator:
            codes: dict[str, float] = {}

            def num(ids):
                return [codes.setdefault(d, float(len(codes))) for d in ids]

            data = [(num(p), num(g)) for _, p, g, _ in rows]
            df = spark.createDataFrame(data, "prediction array<double>, label array<double>")
        elif self.every_judged:
            data = [(p, g, r) for _, p, g, r in rows]
            df = spark.createDataFrame(
                data, "prediction array<string>, label array<string>, relevance array<double>")
        else:
            data = [(p, g) for _, p, g, _ in rows]
            df = spark.createDataFrame(data, "prediction array<string>, label array<string>")
        return df

    def _metrics(self, spark, df):
        """The JVM ``RankingMetrics`` Spark evaluates ``df`` with, and a function giving the
        library's mean of measure m over ``df``."""
        if self.evaluator:
            from pyspark.ml.evaluation import RankingEvaluator

            def mean(m: Measure, frame) -> float:
                ev = RankingEvaluator(predictionCol="prediction", labelCol="label",
                                      metricName=_CALLS[_key(m)][2], k=int(m.cutoff or 1))
                return float(ev.evaluate(frame))

            ev = RankingEvaluator(predictionCol="prediction", labelCol="label")
            ev._transfer_params_to_java()
            return ev._java_obj.getMetrics(df._jdf), mean
        from pyspark.mllib.common import callMLlibFunc

        def mean(m: Measure, frame) -> float:
            jm = callMLlibFunc("newRankingMetrics", frame._jdf)
            method = _CALLS[_key(m)][0]
            if m.cutoff is None:
                return float(getattr(jm, method)())
            return float(getattr(jm, method)(int(m.cutoff)))

        return callMLlibFunc("newRankingMetrics", df._jdf), mean

    def _batch_values(self, cases, measures, means):
        spark = session()
        jvm = spark._jvm
        per_case_rows = [spark_rows(q, r, self.every_judged) for q, r in cases]
        flat = [row for rows in per_case_rows for row in rows]
        out = [dict() for _ in cases]
        if not flat:  # an empty run: no row, no mean (Spark's mean() of nothing is NaN)
            for o in out:
                o.update({m: LibraryValues(per_query={}, mean=None) for m in measures})
            return out
        df = self._frame(spark, flat)
        jm, mean_of = self._metrics(spark, df)
        ranking = jvm.org.apache.spark.mllib.evaluation.RankingMetrics
        to_row = getattr(jvm.org.apache.spark.ml.evaluation.RankingEvaluator if self.evaluator
                         else jvm.org.apache.spark.mllib.api.python.PythonMLLibAPI,
                         "$anonfun$getMetrics$1" if self.evaluator
                         else "$anonfun$newRankingMetrics$1")
        to_triple = getattr(ranking, "$anonfun$rdd$1")
        jrows = df._jdf.collectAsList()
        triples = [to_triple(to_row(jrows.get(i))) for i in range(len(flat))]
        for m in measures:
            fn = getattr(ranking, _CALLS[_key(m)][1])
            args = () if m.cutoff is None else (int(m.cutoff),)
            values = [float(fn(jm, *args, t)) for t in triples]
            batch_mean = mean_of(m, df)
            own = math.fsum(values) / len(values)
            if not abs(batch_mean - own) <= 1e-12 * max(1.0, abs(own)):
                raise RuntimeError(f"Spark's mean of {m.text} is {batch_mean!r}, the mean of its "
                                   f"per-row values {own!r}: the per-row functions are not the "
                                   "metric's")
            start = 0
            for c, rows in enumerate(per_case_rows):
                mine = values[start:start + len(rows)]
                per_query = {q: v for (q, _, _, _), v in zip(rows, mine)}
                start += len(rows)
                # one case: the batch's mean is the case's own; several: no mean per case
                case_mean = batch_mean if means and len(cases) == 1 else None
                out[c][m] = LibraryValues(per_query=per_query, mean=case_mean)
        return out


def _key(m: Measure) -> tuple[str, bool]:
    return (m.family, m.cutoff is not None)


ENTRIES = [
    SparkEntry("spark", "mllib RankingMetrics; ground truth = the relevant documents (label >= 1)",
               evaluator=False, every_judged=False, profile=PROFILE),
    SparkEntry("spark:relevance", "mllib RankingMetrics with the relevance array (every judged "
               "document and its label; PySpark drops the labels)", evaluator=False,
               every_judged=True,
               profile=PROFILE.replace(relevance_threshold=EVERY_LABEL, negative_labels="keep")),
    SparkEntry("spark:evaluator", "ml RankingEvaluator; columns array<double>, ground truth = "
               "the relevant documents (label >= 1)", evaluator=True, every_judged=False,
               profile=PROFILE),
]
