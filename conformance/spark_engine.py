"""The reference on Spark: the same measures, under any conventions, on runs that do not fit
one machine.

Contract: for the same inputs, measures and conventions, every per-query value and every mean
is the single-machine reference's to the last bit (``conformance.reference.evaluate``), and bad
input gets the single-machine readers' one-line errors. How:

1. Read. A path of TREC text (any name but ``.parquet``) is read by Spark as lines
   (``spark.read.text``); a ``.parquet`` path, or a Spark DataFrame, as columns (qid, docid and
   score or label, found by the readers' names and aliases). Each row carries its 1-based line
   (row) in the input: Spark's ``monotonically_increasing_id`` orders a file's rows (the
   partition index in the high bits, the row within it in the low 33), and the counts of the
   partitions before a row's turn that into its line (one small job per input).
2. Partition by query. The qrels and run rows are unioned, repartitioned by query id and
   sorted within each partition by (query, input, line): the order inside a query is fixed
   explicitly, never left to Spark (no ``collect_list``).
3. Evaluate each partition with the package itself (``mapInArrow``: Arrow batches in, Arrow
   batches out, no RDD API, so Spark Connect runs it too): the partition's lines are parsed
   by the package's own readers (the same numbers, the same checks), its queries evaluated by
   ``conformance.reference.evaluate`` under the conventions in force, one row out per query
   (its value, upper end and whether it counts in the mean, per measure). A reader's error
   comes out as a row naming the input and the line it has in the whole file.
4. Aggregate. The per-query rows (one per query, not per document) come back to the driver,
   sorted by query id as the reference sorts them, and the mean is the reference's own
   ``Evaluation.aggregate`` on them: a sum taken in Spark would add in another order and
   differ in the last bits. The first bad input (qrels first, then by line) is raised as the
   reader's ``InputError``.

A query's value depends only on that query's rows under every convention the reference has,
except those that look across queries: families averaged as a curve (RecallAtPrecision) and
``query_set=raise`` (both inputs' query sets compared), which the engine refuses, as it does
``rounding`` (the mean of the unrounded values, which the per-query rows do not carry).

The session: ``spark_session(master)``: the active one if there is one, else a new one on
``master``, else ``CONFORMANCE_SPARK_MASTER``, else ``local[*]``. pyspark is imported only
when this module's functions run.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import ConformanceError, InputError
from conformance.measures import Measure

DEFAULT_MASTER = "local[*]"
ENV_MASTER = "CONFORMANCE_SPARK_MASTER"
_LOW_BITS = 33  # monotonically_increasing_id: partition index << 33 | row within the partition
_QRELS, _RUN = 0, 1


def spark_session(master: str | None = None):
    """The active Spark session, or a new one on ``master`` (default: ``$CONFORMANCE_SPARK_MASTER``,
    else ``local[*]``)."""
    try:
        from pyspark.sql import SparkSession
    except ModuleNotFoundError as exc:
        raise ConformanceError('the Spark engine needs pyspark: pip install "conformance[spark]" '
                               "(and Java 17 or later)") from exc
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or os.environ.get(ENV_MASTER) or DEFAULT_MASTER
    return (SparkSession.builder.master(master).appName("conformance")
            .config("spark.ui.showConsoleProgress", "false").getOrCreate())


def _is_dataframe(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "schema") and hasattr(x, "sparkSession")


def _numbered(df, F):
    """``df`` with its 1-based row order as column ``line`` (see the module docstring)."""
    df = df.withColumn("_mid", F.monotonically_increasing_id())
    df = df.withColumn("_part", F.shiftright(F.col("_mid"), _LOW_BITS))
    counts = {r["_part"]: r["n"] for r in df.groupBy("_part").agg(F.count("*").alias("n")).collect()}
    offsets, total = {}, 0
    for part in sorted(counts):
        offsets[part] = total
        total += counts[part]
    spark = df.sparkSession
    table = spark.createDataFrame(list(offsets.items()) or [(0, 0)], "_part long, _offset long")
    low = F.col("_mid").bitwiseAND(F.lit((1 << _LOW_BITS) - 1))
    return (df.join(F.broadcast(table), "_part")
            .withColumn("line", F.col("_offset") + low + F.lit(1))
            .drop("_mid", "_part", "_offset"))


_FRAME_COLUMNS = {  # role -> names a column may have (the readers' usual spellings first)
    "qid": ("qid", "query_id", "query", "user", "user_id", "topic"),
    "docid": ("docid", "doc_id", "docno", "doc", "item", "item_id", "pid"),
    "score": ("score", "sim", "prediction", "rating", "value"),
    "label": ("label", "relevance", "rel", "rating", "grade", "value"),
}


def _column(df, role: str, source: str) -> str:
    lower = {c.lower(): c for c in df.columns}
    for name in _FRAME_COLUMNS[role]:
        if name in lower:
            return lower[name]
    raise InputError(source, f"no {role} column: the columns are "
                     + ", ".join(repr(c) for c in df.columns))


def _rows(spark, source: Any, kind: int, F):
    """One input as rows (kind, qid, line, text, docid, value, source)."""
    name = source if isinstance(source, str) else "<DataFrame>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path) and "://" not in path:
            raise InputError(path, "no such file")
        if path.endswith(".parquet"):
            df = spark.read.parquet(path)
        else:
            lines = _numbered(spark.read.text(path), F)
            # the query id is the first whitespace-separated field (TREC run and qrels)
            qid = F.split(F.trim(F.col("value")), r"\s+").getItem(0)
            return lines.select(F.lit(kind).alias("kind"), qid.alias("qid"), "line",
                                F.col("value").alias("text"), F.lit(None).cast("string").alias("docid"),
                                F.lit(None).cast("double").alias("value"), F.lit(path).alias("source"))
    elif _is_dataframe(source):
        df = source
    else:
        raise ConformanceError("the Spark engine takes paths (TREC text, Parquet) or Spark DataFrames")
    df = _numbered(df, F)
    role = "label" if kind == _QRELS else "score"
    q, d, v = (_column(df, r, name) for r in ("qid", "docid", role))
    return df.select(F.lit(kind).alias("kind"), F.col(q).cast("string").alias("qid"), "line",
                     F.lit(None).cast("string").alias("text"), F.col(d).cast("string").alias("docid"),
                     F.col(v).cast("double").alias("value"), F.lit(name).alias("source"))


def _result_schema(measures: Sequence[Measure]) -> str:
    cols = ["qid string", "error_source string", "error_line long", "error_problem string",
            "error_kind int"]
    for i, _ in enumerate(measures):
        cols += [f"v{i} double", f"u{i} double", f"c{i} boolean"]
    return ", ".join(cols)


_LINES = re.compile(r"\b(lines?) (\d+)( and )?(\d+)?")


def _relined(problem: str, lines: np.ndarray) -> str:
    """A reader's problem text with the chunk's line numbers ("on lines 1 and 2") turned into
    the whole input's."""
    def sub(m):
        a = str(int(lines[int(m.group(2)) - 1]))
        if m.group(4):
            return f"{m.group(1)} {a}{m.group(3)}{int(lines[int(m.group(4)) - 1])}"
        return f"{m.group(1)} {a}"

    return _LINES.sub(sub, problem)


def _chunk(table, kind: int, duplicates: str):
    """The package's own reading of one partition's rows of one input (a Run or Qrels), or the
    InputError, its line the whole input's."""
    import pyarrow.compute as pc

    from conformance.io.data import Qrels, Run

    rows = table.filter(pc.equal(table["kind"], kind))
    if rows.num_rows == 0:
        return None
    source = rows["source"][0].as_py()
    lines = rows["line"].to_numpy()
    try:
        if rows["text"].null_count < rows.num_rows:  # text lines: the TREC reader on them
            import tempfile

            text = "\n".join(rows["text"].to_pylist()) + "\n"
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
                f.write(text)
            try:
                if kind == _RUN:
                    return Run.from_file(f.name, format="trec", duplicates=duplicates)
                return Qrels.from_file(f.name, format="trec")
            finally:
                os.unlink(f.name)
        import pyarrow as pa

        frame = pa.table({"qid": rows["qid"], "docid": rows["docid"],
                          ("score" if kind == _RUN else "label"): rows["value"]})
        if kind == _RUN:
            return Run.from_frame(frame, source=source, duplicates=duplicates)
        return Qrels.from_frame(frame, source=source)
    except InputError as exc:
        line = int(lines[exc.line - 1]) if exc.line is not None else None
        return InputError(source, _relined(exc.problem, lines), line)


def _partition_function(measures: list[Measure], convs: dict[Measure, Conventions], duplicates: str):
    def evaluate_partition(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from conformance.errors import EvaluationError
        from conformance.io.data import Qrels, Run
        from conformance.reference import evaluate

        batches = list(batches)
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        if table.num_rows == 0:
            return
        qrels = _chunk(table, _QRELS, duplicates)
        run = _chunk(table, _RUN, duplicates)
        for kind, read in ((_QRELS, qrels), (_RUN, run)):
            if isinstance(read, InputError):
                yield _error_batch(measures, read, kind)
                return
        qrels = qrels if qrels is not None else Qrels.from_records([])
        run = run if run is not None else Run.from_records([])
        groups: dict[Conventions, list[Measure]] = {}
        for m in measures:
            groups.setdefault(convs[m], []).append(m)
        cols: dict[str, Any] = {}
        qids = None
        try:
            for conv, group in groups.items():
                ev = evaluate(qrels, run, group, conv)
                qids = ev.qids
                for m in group:
                    i = measures.index(m)
                    cols[f"v{i}"] = ev.per_query[m]
                    cols[f"u{i}"] = ev.upper[m]
                    cols[f"c{i}"] = ev.counted[m]
        except EvaluationError as exc:
            yield _error_batch(measures, InputError("", str(exc)), -1)
            return
        n = len(qids)
        out = {"qid": pa.array(qids.astype(str).tolist(), pa.string()),
               "error_source": pa.nulls(n, pa.string()), "error_line": pa.nulls(n, pa.int64()),
               "error_problem": pa.nulls(n, pa.string()), "error_kind": pa.nulls(n, pa.int32())}
        for i in range(len(measures)):
            out[f"v{i}"] = pa.array(np.asarray(cols[f"v{i}"], dtype=np.float64))
            out[f"u{i}"] = pa.array(np.asarray(cols[f"u{i}"], dtype=np.float64))
            out[f"c{i}"] = pa.array(np.asarray(cols[f"c{i}"], dtype=bool))
        yield pa.RecordBatch.from_pydict(out)

    return evaluate_partition


def _error_batch(measures, err: InputError, kind: int):
    import pyarrow as pa

    out = {"qid": pa.array([None], pa.string()), "error_source": pa.array([err.source]),
           "error_line": pa.array([err.line], pa.int64()), "error_problem": pa.array([err.problem]),
           "error_kind": pa.array([kind], pa.int32())}
    for i in range(len(measures)):
        out[f"v{i}"] = pa.array([None], pa.float64())
        out[f"u{i}"] = pa.array([None], pa.float64())
        out[f"c{i}"] = pa.array([None], pa.bool_())
    return pa.RecordBatch.from_pydict(out)


def evaluate(qrels: Any, run: Any, measures: Sequence[Measure], profile: str | Conventions = "trec_eval",
             overrides: Mapping[str, Any] | None = None, *, master: str | None = None,
             partitions: int | None = None):
    """The reference's :class:`~conformance.reference.evaluate.Evaluation` of ``measures`` on
    ``qrels`` and ``run`` (paths or Spark DataFrames), computed by Spark (see the module
    docstring); ``partitions``: how many query partitions (default: the session's default
    parallelism, at least 2)."""
    from pyspark.sql import functions as F

    from conformance.pipeline import conventions_for, one_duplicates_rule
    from conformance.reference.evaluate import Evaluation

    measures = list(dict.fromkeys(measures))
    convs = conventions_for(profile, measures, overrides)
    for m in measures:
        if m.aggregate == "curve" or convs[m].query_set == "raise" or convs[m].rounding is not None:
            raise ConformanceError(f"the Spark engine does not compute {m.text} under these "
                                   "conventions: its value looks across queries")
    duplicates = one_duplicates_rule(convs)
    for source in (qrels, run):  # before the session starts: the local readers' words
        if isinstance(source, (str, os.PathLike)) and "://" not in os.fspath(source) \
                and not os.path.exists(source):
            raise InputError(os.fspath(source), "no such file")
    spark = spark_session(master)
    rows = _rows(spark, qrels, _QRELS, F).unionByName(_rows(spark, run, _RUN, F))
    n = partitions or max(2, spark.sparkContext.defaultParallelism)
    ordered = rows.repartition(n, "qid").sortWithinPartitions("qid", "kind", "line")
    result = ordered.mapInArrow(_partition_function(measures, convs, duplicates),
                                _result_schema(measures))
    got = result.toArrow()
    errors = got.filter(got["error_problem"].is_valid())
    if errors.num_rows:
        first = sorted(errors.to_pylist(), key=lambda r: (r["error_kind"], r["error_line"] or 0))[0]
        if first["error_kind"] < 0:
            from conformance.errors import EvaluationError

            raise EvaluationError(first["error_problem"])
        raise InputError(first["error_source"], first["error_problem"], first["error_line"])
    qids = np.asarray(got["qid"].to_pylist(), dtype=object)
    order = np.argsort(qids.astype(str), kind="stable")
    ev = Evaluation(qids=qids.astype(str)[order])
    for i, m in enumerate(measures):
        ev.per_query[m] = got[f"v{i}"].to_numpy(zero_copy_only=False)[order]
        ev.upper[m] = got[f"u{i}"].to_numpy(zero_copy_only=False)[order]
        ev.counted[m] = got[f"c{i}"].to_numpy(zero_copy_only=False).astype(bool)[order]
        ev.conventions[m] = convs[m]
    return ev


class Result:
    """What :func:`run` gives: the shape of :class:`conformance.pipeline.Result` that the API's
    ``Evaluated`` and ``conformance eval`` read (means, per-query ranges), without the inputs
    (their rows stay in Spark): ``qrels`` and ``run`` are None, ``queries`` holds ``scored``
    only."""

    def __init__(self, measures: list[Measure], evaluation) -> None:
        self.measures = measures
        self.evaluation = evaluation
        self.conventions = {m: evaluation.conventions[m] for m in measures}
        self.evaluations = {m: evaluation for m in measures}
        self.qrels = self.run = None
        self.queries = {"scored": int(evaluation.qids.size)}

    def mean(self, m: Measure) -> tuple[float, float]:
        return self.evaluation.aggregate(m), self.evaluation.aggregate(m, upper=True)

    def per_query(self, m: Measure) -> dict[str, tuple[float, float]]:
        return self.evaluation.ranges(m)

    def ranged(self, m: Measure) -> bool:
        return self.conventions[m].ties == "unspecified"


def run(qrels: Any, run_: Any, measures: Sequence[Measure], profile: str | Conventions = "trec_eval",
        overrides: Mapping[str, Any] | None = None, *, master: str | None = None,
        partitions: int | None = None) -> Result:
    """:func:`evaluate` as a :class:`Result` (what ``conformance.evaluate(..., engine="spark")``
    and ``conformance eval --engine spark`` read)."""
    measures = list(dict.fromkeys(measures))
    return Result(measures, evaluate(qrels, run_, measures, profile, overrides, master=master,
                                     partitions=partitions))
