"""The Spark engine gives the single-machine reference's values to the last bit, and its errors.

Generated runs with ties, unjudged documents, queries only in one input, queries with no
relevant judgment and documents listed twice, written as TREC files; every per-query value and
every mean must be bit-identical to ``conformance.pipeline.evaluate`` on the same files (the
expected values come from the single-machine path, which its own tests hold to hand-computed
and published numbers). One local session (``local[2]``) for the module.
"""

from __future__ import annotations

import random

import pytest

from conformance import pipeline, spark_engine
from conformance.errors import ConformanceError, InputError
from conformance.measures import parse_measures

pytestmark = pytest.mark.requires_library("spark")


@pytest.fixture(scope="module", autouse=True)
def session():
    s = spark_engine.spark_session("local[2]")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def _write(tmp_path, seed: int, duplicates: bool = False):
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    for q in range(40):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(60)}" for _ in range(rng.randrange(1, 25))]
        if not duplicates:
            docs = list(dict.fromkeys(docs))
        in_run, in_qrels = q % 10 != 3, q % 10 != 7  # some queries in one input only
        if in_run:
            for rank, d in enumerate(docs, 1):
                score = rng.choice([1.0, 0.5, 0.25, round(rng.random(), 2)])  # many ties
                run_lines.append(f"{qid} Q0 {d} {rank} {score!r} t")
        if in_qrels:
            judged = {f"d{rng.randrange(60)}" for _ in range(rng.randrange(1, 12))}
            for d in sorted(judged):  # some retrieved, some not; the rest unjudged
                label = 0 if q % 10 == 5 else rng.choice([0, 0, 1, 2, 3])  # q*5: none relevant
                qrels_lines.append(f"{qid} 0 {d} {label}")
    qrels, run = tmp_path / f"qrels{seed}.txt", tmp_path / f"run{seed}.txt"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    run.write_text("\n".join(run_lines) + "\n")
    return str(qrels), str(run)


def _identical(qrels, run, measures, profile="trec_eval", overrides=None, spark_inputs=None):
    """Spark on ``spark_inputs`` (default: the same files) against the local path on the files."""
    local = pipeline.evaluate(qrels, run, measures, profile, overrides)
    spark = spark_engine.run(*(spark_inputs or (qrels, run)), measures, profile, overrides,
                             partitions=3)
    for m in measures:
        ev = local.evaluations[m]
        keep = ev.counted[m]
        assert spark.evaluation.qids.tolist() == ev.qids.astype(str).tolist()
        assert spark.evaluation.per_query[m].tobytes() == ev.per_query[m].tobytes(), m.text
        assert spark.evaluation.upper[m].tobytes() == ev.upper[m].tobytes(), m.text
        assert spark.evaluation.counted[m].tolist() == keep.tolist(), m.text
        assert repr(spark.mean(m)) == repr(local.mean(m)), m.text  # every digit
    return spark


MEASURES = parse_measures("nDCG@10,nDCG,AP,RR,P@5,R@100,Bpref,P(rel=2)@5,ndcg_burges@10")


def test_trec_files_bit_identical_under_trec_eval(tmp_path):
    qrels, run = _write(tmp_path, 1)
    _identical(qrels, run, MEASURES)


def test_other_conventions_and_duplicates_kept_first(tmp_path):
    qrels, run = _write(tmp_path, 2, duplicates=True)
    overrides = {"ties": "unspecified", "query_set": "qrels", "duplicates": "first",
                 "empty_query": "skip"}
    _identical(qrels, run, parse_measures("nDCG@10,AP,RR,P@5"), "trec_eval", overrides)


def test_spark_dataframes(session, tmp_path):
    qrels, run = _write(tmp_path, 3)
    cols = lambda line: line.split()  # noqa: E731
    q_rows = [(c[0], c[2], float(c[3])) for c in map(cols, open(qrels).read().splitlines())]
    r_rows = [(c[0], c[2], float(c[4])) for c in map(cols, open(run).read().splitlines())]
    q_df = session.createDataFrame(q_rows, "qid string, docid string, label double")
    r_df = session.createDataFrame(r_rows, "qid string, docid string, score double")
    _identical(qrels, run, parse_measures("nDCG@10,AP,P@5"), spark_inputs=(q_df, r_df))


def _as_table(path, fmt: str, kind: str, gz: bool = False) -> str:
    """The TREC file at ``path`` rewritten as CSV or TSV with a header (a BOM, a blank line and
    CRLF ends in the CSV; in the CSV some query ids quoted, one holding the delimiter)."""
    import gzip

    sep = "," if fmt == "csv" else "\t"
    rows = [line.split() for line in open(path).read().splitlines()]
    if kind == "run":
        header, cells = ["query_id", "doc_id", "rank", "score"], [[r[0], r[2], r[3], r[4]] for r in rows]
    else:
        header, cells = ["qid", "docid", "relevance"], [[r[0], r[2], r[3]] for r in rows]
    if fmt == "csv":  # q1 becomes "q1,x" everywhere (quoted: the delimiter inside), q2 is quoted as is
        for c in cells:
            c[0] = {"q1": '"q1,x"', "q2": '"q2"'}.get(c[0], c[0])
    lines = [sep.join(header)] + [sep.join(c) for c in cells]
    if fmt == "csv":
        lines.insert(3, "")
    text = ("\ufeff" + "\r\n".join(lines) + "\r\n") if fmt == "csv" else "\n".join(lines) + "\n"
    out = f"{path}.{fmt}" + (".gz" if gz else "")
    if gz:
        with gzip.open(out, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        open(out, "w", encoding="utf-8", newline="").write(text)
    return out


@pytest.mark.parametrize("fmt,gz", [("csv", False), ("tsv", False), ("csv", True)])
def test_csv_and_tsv_files_bit_identical(tmp_path, fmt, gz):
    """Spark reads CSV and TSV with a header as the local readers do (their column names and
    aliases, quoting, blank lines, a BOM, gzip): the same per-query values and means as the
    local path on the same files, and as the TREC files they were written from."""
    qrels, run = _write(tmp_path, 4, duplicates=True)
    q_csv, r_csv = _as_table(qrels, fmt, "qrels", gz), _as_table(run, fmt, "run", gz)
    measures = parse_measures("nDCG@10,AP,RR,P@5,Bpref")
    spark = _identical(q_csv, r_csv, measures, overrides={"duplicates": "first"})
    local_trec = pipeline.evaluate(qrels, run, measures, "trec_eval", {"duplicates": "first"})
    for m in measures:  # the same numbers as from the TREC files (q1 is named "q1,x" in the CSV)
        assert repr(spark.mean(m)) == repr(local_trec.mean(m)), m.text
    if fmt == "csv":
        assert "q1,x" in spark.evaluation.qids.tolist()


@pytest.mark.parametrize("bad,line", [
    ("q2,dx,abc", 4),  # a score that is not a number
    ("q2,dx", 4),  # a field missing
    ('"q1,d1,0.1', 4),  # a quote never closed
])
def test_bad_csv_gets_the_local_readers_line(tmp_path, bad, line):
    qrels = tmp_path / "qrels.csv"
    run = tmp_path / "run.csv"
    qrels.write_text("qid,docid,label\nq1,d1,1\nq2,dx,0\n")
    run.write_text("qid,docid,score\nq1,d1,0.9\nq2,d2,0.8\n" + bad + "\nq3,d3,0.1\n")
    expected = _local_error(str(qrels), str(run))
    assert f":{line}:" in expected
    with pytest.raises(InputError) as got:
        spark_engine.run(str(qrels), str(run), parse_measures("AP"), partitions=2)
    assert str(got.value) == expected


def test_a_csv_without_a_known_column_and_a_json_file_are_refused_as_locally(tmp_path):
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("topic_name,page,verdict\nq1,d1,1\n")
    run = tmp_path / "run.csv"
    run.write_text("qid,docid,score\nq1,d1,0.9\n")
    expected = _local_error(str(qrels), str(run))
    with pytest.raises(InputError) as got:
        spark_engine.run(str(qrels), str(run), parse_measures("AP"))
    assert str(got.value) == expected
    good = tmp_path / "qrels-good.csv"
    good.write_text("qid,docid,label\nq1,d1,1\n")
    as_json = tmp_path / "run.json"
    as_json.write_text('{"q1": {"d1": 0.9}}')
    with pytest.raises(InputError) as got:
        spark_engine.run(str(good), str(as_json), parse_measures("AP"))
    assert str(got.value) == f"{as_json}: the Spark engine reads trec, csv, tsv and parquet files; this one reads as json"


@pytest.mark.parametrize("partitions", [2, 3, 4])
def test_query_ids_padded_with_whitespace_are_one_query_as_locally(tmp_path, partitions):
    """The local readers trim ASCII whitespace around ids, so " q1", "q1 " and "q1" are one
    query; Spark must put their lines in one partition. Before, the CSV's padded lines went to
    other partitions and were dropped there as queries without judgments: AP 0.5, not 1.0 (two
    relevant documents, both retrieved first). The TREC reader's fields are split on any
    whitespace: a line starting with a tab is q1's too."""
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("qid,docid,label\nq1,d1,1\nq1,d2,1\n")
    run = tmp_path / "run.csv"
    run.write_text("qid,docid,score\nq1,d1,0.9\n q1,d2,0.8\nq1 ,d3,0.7\n")
    _identical(str(qrels), str(run), parse_measures("AP,P@5"))
    assert pipeline.evaluate(str(qrels), str(run), parse_measures("AP")).mean(parse_measures("AP")[0]) == (1.0, 1.0)
    trec = tmp_path / "run.txt"
    trec.write_text("q1 Q0 d1 1 0.9 t\n\tq1 Q0 d2 2 0.8 t\n")
    _identical(str(qrels), str(trec), parse_measures("AP,P@5"))


def test_a_query_read_in_two_partitions_is_refused_not_averaged(tmp_path, monkeypatch):
    """The guard behind the trim above: with Spark's query-id key made to disagree with the
    package's reading (the untrimmed field, as before the fix), the engine refuses rather than
    score q1 on part of its lines."""
    from pyspark.sql import functions as F

    qrels = tmp_path / "qrels.csv"
    qrels.write_text("qid,docid,label\nq1,d1,1\nq1,d2,1\n")
    run = tmp_path / "run.csv"
    run.write_text("qid,docid,score\nq1,d1,0.9\n q1,d2,0.8\n")
    untrimmed = lambda header, fmt, kind, path, F: F.split(F.col("value"), ",").getItem(0)  # noqa: E731
    monkeypatch.setattr(spark_engine, "_csv_qid", untrimmed)
    refused = 0
    for partitions in (2, 3, 4, 5):
        try:
            got = spark_engine.run(str(qrels), str(run), parse_measures("AP"), partitions=partitions)
        except ConformanceError as exc:
            assert "read query 'q1' in two partitions" in str(exc)
            refused += 1
        else:  # " q1" and "q1" hashed to one partition: the value is right
            assert got.mean(parse_measures("AP")[0]) == (1.0, 1.0)
    assert refused, "no partition count split the query"


def _local_error(qrels, run) -> str:
    with pytest.raises(InputError) as local:
        pipeline.evaluate(qrels, run, parse_measures("AP"))
    return str(local.value)


@pytest.mark.parametrize("bad,line", [
    ("q2 Q0 dx 1 abc t", 3),  # a score that is not a number
    ("q1 Q0 d1 1 0.5", 3),  # too few fields
    ("q1 Q0 d1 9 0.1 t", 3),  # d1 listed twice for q1 (lines 1 and 3)
])
def test_bad_input_gets_the_local_readers_line(tmp_path, bad, line):
    qrels = tmp_path / "qrels.txt"
    run = tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 dx 0\n")
    run.write_text("q1 Q0 d1 1 0.9 t\nq2 Q0 d2 1 0.8 t\n" + bad + "\nq3 Q0 d3 1 0.1 t\n")
    expected = _local_error(str(qrels), str(run))
    assert f":{line}:" in expected
    with pytest.raises(InputError) as got:
        spark_engine.run(str(qrels), str(run), parse_measures("AP"), partitions=2)
    assert str(got.value) == expected


def test_missing_file_named_before_any_session(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(InputError) as got:
        spark_engine.run(str(qrels), missing, parse_measures("AP"))
    assert str(got.value) == _local_error(str(qrels), missing) == f"{missing}: no such file"


def test_pyspark_is_not_imported_with_the_package():
    import subprocess
    import sys

    code = ("import sys, conformance.spark_engine, conformance.api, conformance.cli.eval, "
            "conformance.libs.spark; from conformance.libs import all_entries; all_entries(); "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_api_and_command_take_the_engine(tmp_path):
    """``conformance.evaluate(..., engine="spark")`` and ``conformance eval --engine spark``
    give the local means to every digit (the command's JSON keeps full precision)."""
    import json

    from click.testing import CliRunner

    from conformance import api
    from conformance.cli import main

    qrels, run = _write(tmp_path, 4)
    local = api.evaluate(qrels, run, "nDCG@10,AP")
    spark = api.evaluate(qrels, run, "nDCG@10,AP", engine="spark")
    assert repr(spark.mean) == repr(local.mean)
    assert spark.per_query == local.per_query
    args = ["eval", "--qrels", qrels, "--run", run, "-m", "P@5,RR", "--format", "json", "--quiet"]
    runner = CliRunner()
    want = runner.invoke(main, args)
    got = runner.invoke(main, args + ["--engine", "spark"])
    assert want.exit_code == got.exit_code == 0, got.output
    assert json.loads(got.stdout)["metrics"] == json.loads(want.stdout)["metrics"]
