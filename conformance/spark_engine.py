"""The reference on Spark: the same measures, under any conventions, on runs that do not fit
one machine.

Contract: for the same inputs, measures and conventions, every per-query value and every mean
is the single-machine reference's to the last bit (``conformance.reference.evaluate``), and bad
input gets the single-machine readers' one-line errors. How:

1. Read. A path's format is decided as the single-machine readers decide it
   (``conformance.io.formats.candidates``: the first bytes, the name, the first line). TREC
   text is read by Spark as lines (``spark.read.text``); so is CSV or TSV with a header row:
   the driver reads the header (its column names found by the readers' names and aliases, the
   line it is on), each data line is a row, and the query id is the header's query-id field of
   the line, parsed by Spark's CSV parser with the local reader's quoting (CSV: ``"`` doubled
   inside quotes; TSV: none). A ``.csv``/``.tsv`` file whose first line holds a number and
   names no column is read as TREC, as locally. Parquet, or a Spark DataFrame, is read as
   columns (qid, docid and score or label, by the same names and aliases). Any other format
   (JSON, JSONL, Arrow) is refused with the formats the engine reads. Each row carries its
   1-based line (row) in the input: Spark's ``monotonically_increasing_id`` orders a file's rows
   (the partition index in the high bits, the row within it in the low 33), and the counts of
   the partitions before a row's turn that into its line (one small job per input).
2. Partition by query. The qrels and run rows are unioned, repartitioned by query id and
   sorted within each partition by (query, input, line): the order inside a query is fixed
   explicitly, never left to Spark (no ``collect_list``).
3. Evaluate each partition with the package itself (``mapInArrow``: Arrow batches in, Arrow
   batches out, no RDD API, so Spark Connect runs it too): the partition's lines are parsed
   by the package's own readers (the same numbers, the same checks; CSV and TSV lines under
   their header), its queries evaluated by
   ``conformance.reference.evaluate`` under the conventions in force, one row out per query
   (its value, upper end and whether it counts in the mean, per measure). A reader's error
   comes out as a row naming the input and the line it has in the whole file.
4. Aggregate. The per-query rows (one per query, not per document) come back to the driver,
   sorted by query id as the reference sorts them, and the mean is the reference's own
   ``Evaluation.aggregate`` on them: a sum taken in Spark would add in another order and
   differ in the last bits. The first bad input (qrels first, then by line) is raised as the
   reader's ``InputError``. A query id that comes out of two partitions (Spark's reading of a
   line's query id and the package's disagreeing) is refused, never averaged twice.

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
        from conformance.distribution import pip_command

        raise ConformanceError(f"the Spark engine needs pyspark: {pip_command('spark')} "
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


ENGINE_FORMATS = ("trec", "csv", "tsv", "parquet")


def path_format(path: str, kind: int) -> tuple[str, str | None, int | None]:
    """How the engine reads the file at ``path``: (format, header, header line); the header and
    its line for CSV and TSV only. The format is the single-machine readers' choice."""
    from conformance.io import formats, tables
    from conformance.io.roles import find_columns

    if "://" in path:  # a remote path: by its name alone
        return ("parquet" if path.endswith(".parquet") else "trec"), None, None
    tried = formats.candidates(path)
    fmt = tried[0]
    if fmt not in ENGINE_FORMATS:
        raise InputError(path, f"the Spark engine reads {', '.join(ENGINE_FORMATS[:-1])} and "
                         f"{ENGINE_FORMATS[-1]} files; this one reads as {fmt}")
    if fmt not in ("csv", "tsv"):
        return fmt, None, None
    head = _text_head(path)
    try:
        names, line, _ = tables._header(head, path, fmt)
        find_columns(names, tables._roles("qrels" if kind == _QRELS else "run"), None, path)
    except InputError:
        if "trec" in tried:  # a first line holding a number, no column named: TREC, as locally
            return "trec", None, None
        raise
    header = head.split(b"\n")[line - 1].rstrip(b"\r").decode("utf-8")
    return fmt, header, line


def _text_head(path: str, size: int = 1 << 20) -> bytes:
    """The first ``size`` bytes of the text at ``path``, decompressed if gzip, without a BOM."""
    import gzip

    with open(path, "rb") as f:
        magic = f.read(2)
    with (gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")) as f:
        head = f.read(size)
    return head[3:] if head[:3] == b"\xef\xbb\xbf" else head


def _rows(spark, source: Any, kind: int, F, fmt: tuple | None = None):
    """One input as rows (kind, qid, line, text, docid, value, source); ``fmt``: the path's
    :func:`path_format`."""
    name = source if isinstance(source, str) else "<DataFrame>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path) and "://" not in path:
            raise InputError(path, "no such file")
        form, header, header_line = fmt or path_format(path, kind)
        if form == "parquet":
            df = spark.read.parquet(path)
        else:
            lines = _numbered(spark.read.text(path), F)
            if form == "trec":
                # the query id is the first whitespace-separated field (TREC run and qrels)
                qid = F.split(F.regexp_replace(F.col("value"), r"^\s+", ""), r"\s+").getItem(0)
            else:
                lines = lines.filter((F.col("line") > header_line) & (F.length("value") > 0))
                qid = _csv_qid(header, form, kind, path, F)
            return lines.select(F.lit(kind).alias("kind"), qid.alias("qid"), "line",
                                F.col("value").alias("text"), F.lit(None).cast("string").alias("docid"),
                                F.lit(None).cast("double").alias("value"), F.lit(path).alias("source"))
    elif _is_dataframe(source):
        df = source
    else:
        raise ConformanceError("the Spark engine takes paths (TREC text, CSV, TSV, Parquet) or Spark DataFrames")
    df = _numbered(df, F)
    role = "label" if kind == _QRELS else "score"
    q, d, v = (_column(df, r, name) for r in ("qid", "docid", role))
    return df.select(F.lit(kind).alias("kind"), F.col(q).cast("string").alias("qid"), "line",
                     F.lit(None).cast("string").alias("text"), F.col(d).cast("string").alias("docid"),
                     F.col(v).cast("double").alias("value"), F.lit(name).alias("source"))


def _csv_qid(header: str, fmt: str, kind: int, path: str, F):
    """The query-id field of a CSV or TSV line, by Spark's CSV parser under the local reader's
    quoting (``conformance.io.tables.parse_csv``)."""
    from conformance.io import tables
    from conformance.io.roles import find_columns

    names = [n.strip() for n in tables._split(header, fmt)]
    found = find_columns(names, tables._roles("qrels" if kind == _QRELS else "run"), None, path)
    schema = ", ".join(f"c{i} STRING" for i in range(len(names)))
    options = {"sep": tables.DELIMITERS[fmt], "mode": "PERMISSIVE"}
    options.update({"quote": '"', "escape": '"'} if fmt == "csv" else {"quote": "\u0000"})
    field = F.from_csv(F.col("value"), schema, options).getField(f"c{names.index(found['qid'])}")
    return F.regexp_replace(field, r"^\s+|\s+$", "")  # the local reader trims ASCII whitespace


def _result_schema(measures: Sequence[Measure]) -> str:
    cols = ["qid string", "read_only boolean", "error_source string", "error_line long",
            "error_problem string", "error_kind int"]
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


def _chunk(table, kind: int, duplicates: str, fmt: tuple | None):
    """The package's own reading of one partition's rows of one input (a Run or Qrels), or the
    InputError, its line the whole input's; ``fmt``: the input's :func:`path_format` (None for
    a DataFrame)."""
    import pyarrow.compute as pc

    from conformance.io.data import Qrels, Run

    rows = table.filter(pc.equal(table["kind"], kind))
    if rows.num_rows == 0:
        return None
    source = rows["source"][0].as_py()
    lines = rows["line"].to_numpy()
    try:
        if rows["text"].null_count < rows.num_rows:  # text lines: the local reader on them
            import tempfile

            form, header, header_line = fmt
            text = "\n".join(rows["text"].to_pylist()) + "\n"
            if header is not None:  # CSV / TSV: the lines under their header, which is line 1 here
                text = header + "\n" + text
                lines = np.concatenate([[header_line], lines])
            with tempfile.NamedTemporaryFile("w", suffix="." + form, delete=False, encoding="utf-8") as f:
                f.write(text)
            try:
                if kind == _RUN:
                    return Run.from_file(f.name, format=form, duplicates=duplicates)
                return Qrels.from_file(f.name, format=form)
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


def _partition_function(measures: list[Measure], convs: dict[Measure, Conventions], duplicates: str,
                        formats: dict[int, tuple | None]):
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
        qrels = _chunk(table, _QRELS, duplicates, formats[_QRELS])
        run = _chunk(table, _RUN, duplicates, formats[_RUN])
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
        # every query id read here, evaluated or not: the driver refuses one read in two partitions
        read = set(qrels.present_qids().astype(str).tolist()) | set(run.present_qids().astype(str).tolist())
        scored = qids.astype(str).tolist()
        only = sorted(read - set(scored))
        n, m = len(scored), len(only)
        out = {"qid": pa.array(scored + only, pa.string()),
               "read_only": pa.array([False] * n + [True] * m, pa.bool_()),
               "error_source": pa.nulls(n + m, pa.string()), "error_line": pa.nulls(n + m, pa.int64()),
               "error_problem": pa.nulls(n + m, pa.string()), "error_kind": pa.nulls(n + m, pa.int32())}
        for i in range(len(measures)):
            out[f"v{i}"] = pa.array(np.concatenate([np.asarray(cols[f"v{i}"], dtype=np.float64), np.full(m, np.nan)]))
            out[f"u{i}"] = pa.array(np.concatenate([np.asarray(cols[f"u{i}"], dtype=np.float64), np.full(m, np.nan)]))
            out[f"c{i}"] = pa.array(np.concatenate([np.asarray(cols[f"c{i}"], dtype=bool), np.zeros(m, bool)]))
        yield pa.RecordBatch.from_pydict(out)

    return evaluate_partition


def _error_batch(measures, err: InputError, kind: int):
    import pyarrow as pa

    out = {"qid": pa.array([None], pa.string()), "read_only": pa.array([None], pa.bool_()),
           "error_source": pa.array([err.source]),
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
    import pyarrow.compute as pc
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
    formats: dict[int, tuple | None] = {}
    for kind, source in ((_QRELS, qrels), (_RUN, run)):  # before the session starts: the local readers' words
        formats[kind] = None
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            if "://" not in path and not os.path.exists(path):
                raise InputError(path, "no such file")
            formats[kind] = path_format(path, kind)
    spark = spark_session(master)
    rows = _rows(spark, qrels, _QRELS, F, formats[_QRELS]).unionByName(_rows(spark, run, _RUN, F, formats[_RUN]))
    n = partitions or max(2, spark.sparkContext.defaultParallelism)
    ordered = rows.repartition(n, "qid").sortWithinPartitions("qid", "kind", "line")
    result = ordered.mapInArrow(_partition_function(measures, convs, duplicates, formats),
                                _result_schema(measures))
    got = result.toArrow()
    errors = got.filter(got["error_problem"].is_valid())
    if errors.num_rows:
        first = sorted(errors.to_pylist(), key=lambda r: (r["error_kind"], r["error_line"] or 0))[0]
        if first["error_kind"] < 0:
            from conformance.errors import EvaluationError

            raise EvaluationError(first["error_problem"])
        raise InputError(first["error_source"], first["error_problem"], first["error_line"])
    every = np.sort(np.asarray(got["qid"].to_pylist(), dtype=object).astype(str))
    twice = every[1:][every[1:] == every[:-1]]
    if twice.size:
        raise ConformanceError(f"the Spark engine read query {str(twice[0])!r} in two partitions: Spark's "
                               "reading of its query id and the package's disagree on some line")
    got = got.filter(pc.invert(got["read_only"]))
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
