"""Every input format, through the readers, the public constructors and ``conformance eval``.

One small run and qrels (below) are written in each format the tool reads. Each reading must
give the same (query, document, value) rows, and the measures computed from them must equal
pytrec_eval's on the same rows (pytrec_eval is given the dicts directly, so it checks what was
read, not how). The command is run as a real process on each file.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from conformance import io as cio
from conformance.conventions import TREC_EVAL
from conformance.errors import InputError
from conformance.io import formats
from conformance.io.data import Qrels, Run
from conformance.measures import parse_measures
from conformance.reference import evaluate

ROOT = Path(__file__).resolve().parents[2]

# Three queries; scores distinct within each query and in float32 (pytrec_eval reads float32)
QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d9": 1}, "q2": {"d4": 1, "d5": 0}, "q3": {"d7": 3}}
RUN = {"q1": {"d1": 3.5, "d2": 2.25, "d3": 1.0, "d8": 0.5}, "q2": {"d5": 2.0, "d4": 1.5},
       "q3": {"d6": 0.75, "d7": 0.25}}
MEASURES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@5": "P_5"}


@functools.cache
def _pytrec_eval() -> dict[str, float]:
    """pytrec_eval's means on the input (the tests that read them declare the library)."""
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(QRELS, set(MEASURES.values()))
    per = ev.evaluate(RUN)
    return {m: float(np.mean([per[q][name] for q in per])) for m, name in MEASURES.items()}


def _rows(run: dict) -> list[tuple[str, str, float]]:
    return [(q, d, float(v)) for q, docs in run.items() for d, v in docs.items()]


def _frame(kind: str) -> pd.DataFrame:
    if kind == "run":
        return pd.DataFrame(_rows(RUN), columns=["qid", "docid", "score"])
    return pd.DataFrame(_rows(QRELS), columns=["qid", "docid", "relevance"])


def _write(tmp: Path, kind: str, fmt: str) -> Path:
    """The run (``kind="run"``) or the qrels in format ``fmt``; the file name tells the format."""
    data = RUN if kind == "run" else QRELS
    rows = _rows(data)
    if fmt == "trec":
        p = tmp / f"{kind}.txt"
        p.write_text("".join(f"{q} Q0 {d} {i + 1} {v} tag\n" if kind == "run" else f"{q} 0 {d} {int(v)}\n"
                             for i, (q, d, v) in enumerate(rows)))
    elif fmt == "trec.gz":
        p = tmp / f"{kind}.trec.gz"
        p.write_bytes(gzip.compress(_write(tmp, kind, "trec").read_bytes()))
    elif fmt == "json":
        p = tmp / f"{kind}.json"
        p.write_text(json.dumps(data))
    elif fmt == "jsonl-lists":  # {"qid", "doc_ids", "scores"} / {"qid", "gold_doc_ids", "graded_relevance"}
        p = tmp / f"{kind}.jsonl"
        if kind == "run":
            lines = [{"qid": q, "doc_ids": list(d), "scores": list(d.values())} for q, d in data.items()]
        else:
            lines = [{"qid": q, "query": "text", "gold_doc_ids": [k for k, v in d.items() if v > 0],
                      "graded_relevance": d} for q, d in data.items()]
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    elif fmt == "jsonl-hits":  # {"query_id", "retrieved": [{"doc_id", "score"}]}
        p = tmp / f"{kind}.ndjson"
        assert kind == "run"
        p.write_text("".join(json.dumps({"query_id": q, "retrieved": [{"doc_id": k, "score": v, "text": "..."}
                                                                       for k, v in d.items()]}) + "\n"
                             for q, d in data.items()))
    elif fmt == "jsonl-flat":
        p = tmp / f"{kind}-flat.jsonl"
        key = "score" if kind == "run" else "relevance"
        p.write_text("".join(json.dumps({"qid": q, "doc_id": d, key: v}) + "\n" for q, d, v in rows))
    elif fmt in ("csv", "tsv"):
        p = tmp / f"{kind}.{fmt}"
        _frame(kind).to_csv(p, sep="," if fmt == "csv" else "\t", index=False)
    elif fmt == "csv.gz":
        p = tmp / f"{kind}.csv.gz"
        p.write_bytes(gzip.compress(_frame(kind).to_csv(index=False).encode()))
    elif fmt == "parquet":
        p = tmp / f"{kind}.parquet"
        _frame(kind).to_parquet(p)
    elif fmt == "arrow":
        p = tmp / f"{kind}.arrow"
        feather.write_feather(pa.Table.from_pandas(_frame(kind), preserve_index=False), p)
    elif fmt == "arrow-stream":
        p = tmp / f"{kind}.arrows-data"  # no telling name: recognised by its first bytes
        table = pa.Table.from_pandas(_frame(kind), preserve_index=False)
        with pa.OSFile(str(p), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    else:  # pragma: no cover
        raise ValueError(fmt)
    return p


RUN_FORMATS = ["trec", "trec.gz", "json", "jsonl-lists", "jsonl-hits", "jsonl-flat", "csv", "tsv", "csv.gz", "parquet",
               "arrow", "arrow-stream"]
QRELS_FORMATS = ["trec", "trec.gz", "json", "jsonl-lists", "jsonl-flat", "csv", "tsv", "csv.gz", "parquet", "arrow",
                 "arrow-stream"]


def _values(qrels: Qrels, run: Run) -> dict[str, float]:
    ms = parse_measures(list(MEASURES))
    ev = evaluate(qrels, run, ms, TREC_EVAL)
    return {m.text: ev.aggregate(m) for m in ms}


def _same_rows(table, expected: dict) -> None:
    got = table.to_dict()
    assert {q: {d: float(v) for d, v in docs.items()} for q, docs in got.items()} == \
        {q: {d: float(v) for d, v in docs.items()} for q, docs in expected.items()}


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("fmt", RUN_FORMATS)
def test_run_format_through_the_reader(tmp_path, fmt):
    path = _write(tmp_path, "run", fmt)
    run = cio.load_run(path)
    assert run is not None and Run.from_file(path).to_dict() == run.to_dict()
    _same_rows(run, RUN)
    assert _values(Qrels.from_dict(QRELS), run) == pytest.approx(_pytrec_eval(), abs=1e-12)


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("fmt", QRELS_FORMATS)
def test_qrels_format_through_the_reader(tmp_path, fmt):
    path = _write(tmp_path, "qrels", fmt)
    qrels = cio.load_qrels(path)
    _same_rows(qrels, QRELS)
    assert _values(qrels, Run.from_dict(RUN)) == pytest.approx(_pytrec_eval(), abs=1e-12)


def _eval(qrels: Path, run: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "conformance.cli", "eval", "--qrels", str(qrels), "--run", str(run),
                           "-m", ",".join(MEASURES), "--format", "json", *extra],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("fmt", RUN_FORMATS)
def test_run_format_through_conformance_eval(tmp_path, fmt):
    done = _eval(_write(tmp_path, "qrels", "trec"), _write(tmp_path, "run", fmt))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["metrics"] == pytest.approx(_pytrec_eval(), abs=1e-12)


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("fmt", QRELS_FORMATS)
def test_qrels_format_through_conformance_eval(tmp_path, fmt):
    done = _eval(_write(tmp_path, "qrels", fmt), _write(tmp_path, "run", "trec"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["metrics"] == pytest.approx(_pytrec_eval(), abs=1e-12)


@pytest.mark.requires_library("trec_eval")
def test_columns_given_on_the_command_line(tmp_path):
    run = tmp_path / "r.csv"
    frame = _frame("run").rename(columns={"qid": "topic_number", "docid": "passage_key", "score": "bm25"})
    frame.to_csv(run, index=False)
    qrels = _write(tmp_path, "qrels", "trec")
    refused = _eval(qrels, run)
    assert refused.returncode == 2 and "no query id column" in refused.stderr and "--columns qid=" in refused.stderr
    done = _eval(qrels, run, "--columns", "qid=topic_number,docid=passage_key,score=bm25")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"] == pytest.approx(_pytrec_eval(), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# The public constructors


def test_from_frame_pandas_and_arrow_and_aliases():
    frame = pd.DataFrame({"Query ID": ["q1", "q1", "q2"], "doc": ["d1", "d3", "d4"], "relevance": [2, 1, 1],
                          "prediction": [0.9, 0.1, 0.5], "query": ["text", "text", "other"]})
    # "Query ID" is query_id (case, spaces); "query" (the question's text) is a looser name, unused
    qrels = Qrels.from_frame(frame)
    assert qrels.to_dict() == {"q1": {"d1": 2.0, "d3": 1.0}, "q2": {"d4": 1.0}}
    run = Run.from_frame(pa.Table.from_pandas(frame, preserve_index=False))
    assert run.to_dict() == {"q1": {"d1": 0.9, "d3": 0.1}, "q2": {"d4": 0.5}}
    by_name = Run.from_frame(frame, qid="query", score="relevance")  # given names win over aliases
    assert by_name.to_dict() == {"text": {"d1": 2.0, "d3": 1.0}, "other": {"d4": 1.0}}
    recsys = Qrels.from_frame(pd.DataFrame({"user": [1, 1], "item": [10, 11], "rating": [5, 3]}))
    assert recsys.to_dict() == {"1": {"10": 5.0, "11": 3.0}}


@pytest.mark.parametrize("frame,fragment", [
    (pd.DataFrame({"qid": ["q"], "docid": ["d"], "label": [1], "rel": [1]}), "all name the relevance label"),
    (pd.DataFrame({"a": ["q"], "b": ["d"], "c": [1]}), "no query id column: expected one named qid"),
    (pd.DataFrame({"qid": ["q"], "docid": [""], "label": [1]}), "the docid is empty"),
    (pd.DataFrame({"qid": ["q"], "docid": ["d"], "label": [2**53 + 1]}), "a double cannot hold exactly"),
    (pd.DataFrame({"qid": ["q"], "docid": pd.Series(["d\ud800"], dtype=object), "label": [1]}), "lone surrogate"),
])
def test_ambiguous_or_bad_frames_say_what_they_saw(frame, fragment):
    with pytest.raises(InputError) as info:
        Qrels.from_frame(frame)
    assert fragment in str(info.value)
    assert str(info.value).startswith("<DataFrame>")


def test_from_lists_flat_with_groups_as_lightgbm_holds_them():
    labels = np.array([2, 0, 1, 1, 0])
    scores = np.array([0.1, 0.9, 0.5, 0.3, 0.2])
    group = [3, 2]
    qrels, run = Qrels.from_lists(labels, group=group), Run.from_lists(scores, group=group)
    assert qrels.to_dict() == {"0": {"0": 2.0, "1": 0.0, "2": 1.0}, "1": {"0": 1.0, "1": 0.0}}
    assert run.rank.tolist() == [1.0, 2.0, 3.0, 1.0, 2.0]
    # by hand, query 0 ranks positions 1 (label 0), 2 (1), 0 (2): P@1 = 0, RR = 1/2;
    # query 1 ranks 0 (label 1) first: P@1 = 1, RR = 1. Means: P@1 = 0.5, RR = 0.75
    ms = parse_measures("P@1,RR")
    ev = evaluate(qrels, run, ms, TREC_EVAL)
    assert [ev.aggregate(m) for m in ms] == [0.5, 0.75]


def test_from_lists_per_query_and_positions_padded():
    run = Run.from_lists([[float(i) for i in range(11)]], qids=["q"])
    assert run.doc_ids().tolist()[:3] == ["00", "01", "02"] and run.doc_ids().tolist()[-1] == "10"
    gold = Qrels.from_lists(doc_ids={"q1": ["d3", "d1"]})
    assert gold.to_dict() == {"q1": {"d3": 1.0, "d1": 1.0}}
    ranked = Run.from_lists(doc_ids={"q1": ["d3", "d1", "d2"]})  # list order is the ranking
    assert ranked.to_dict() == {"q1": {"d3": 3.0, "d1": 2.0, "d2": 1.0}}


@pytest.mark.parametrize("kwargs,fragment", [
    ({"scores": [0.1, 0.2]}, "flat scores without group sizes"),
    ({"scores": [0.1, 0.2], "group": [3]}, "the group sizes add up to 3 but values holds 2"),
    ({"scores": [[0.1], [0.2, float("nan")]]}, "query '1', position 1: the score nan is not a finite number"),
    ({"scores": [[0.1, 0.2]], "doc_ids": [["a"]]}, "1 doc ids but 2 scores"),
    ({"scores": [[0.1], [0.2]], "qids": ["a"]}, "1 qids for 2 queries"),
    ({"scores": [[0.1, 0.2]], "doc_ids": [["a", "a"]]}, "listed twice"),
])
def test_from_lists_refusals(kwargs, fragment):
    with pytest.raises(InputError) as info:
        Run.from_lists(**kwargs)
    assert fragment in str(info.value)


# ---------------------------------------------------------------------------------------------
# Finding the format


def test_format_from_content_when_the_name_does_not_say(tmp_path):
    trec = _write(tmp_path, "run", "trec")
    for fmt, content in (("jsonl", _write(tmp_path, "run", "jsonl-lists").read_bytes()),
                         ("json", _write(tmp_path, "run", "json").read_bytes()),
                         ("csv", _write(tmp_path, "run", "csv").read_bytes()),
                         ("trec", trec.read_bytes())):
        p = tmp_path / f"no-extension-{fmt}"
        p.write_bytes(content)
        assert formats.candidates(str(p))[0] == fmt
        _same_rows(cio.load_run(p), RUN)
    parquet_as_run = tmp_path / "model.run"  # binary formats are known by their first bytes
    parquet_as_run.write_bytes(_write(tmp_path, "run", "parquet").read_bytes())
    assert formats.candidates(str(parquet_as_run)) == ["parquet"]
    _same_rows(cio.load_run(parquet_as_run), RUN)


def test_a_trec_file_under_a_spreadsheet_name_is_read_as_trec(tmp_path):
    tsv = tmp_path / "run.tsv"
    tsv.write_text(_write(tmp_path, "run", "trec").read_text().replace(" ", "\t"))
    assert formats.candidates(str(tsv)) == ["tsv", "trec"]
    _same_rows(cio.load_run(tsv), RUN)


def test_an_unrecognised_file_lists_each_format_tried(tmp_path):
    p = tmp_path / "scores.out"
    p.write_text("q1;d1;0.5\n")
    with pytest.raises(InputError) as info:
        cio.load_run(p)
    text = str(info.value)
    for fmt in ("as TREC, line 1: expected at least 6", "as TSV, no query id column", "as CSV, no query id column",
                "as JSONL, line 1: not valid JSON", "as JSON, line 1: not valid JSON"):
        assert fmt in text, text
    # a name that says the format gives that reader's error alone
    named = tmp_path / "scores.run"
    named.write_text("q1;d1;0.5\n")
    with pytest.raises(InputError) as info:
        cio.load_run(named)
    assert "tried" not in str(info.value) and "expected at least 6" in str(info.value)


def test_csv_line_numbers_skip_blank_lines_and_count_the_header(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("qid,docid,score\r\n\r\nq1,d1,1\r\nq1,d2,x\r\n")
    with pytest.raises(InputError) as info:
        cio.load_run(p)
    assert info.value.line == 4 and "'x' is not a number" in str(info.value)
    p.write_text("qid,docid,score\n\nq1, d1 ,1\nq1,d2,2\n\n")
    run = cio.load_run(p)
    assert run.to_dict() == {"q1": {"d1": 1.0, "d2": 2.0}} and run.line.tolist() == [3, 4]
    assert run.counts.blank == 2


def test_parquet_declared_size_is_checked_before_reading(tmp_path):
    from conformance.io.limits import Limits

    p = _write(tmp_path, "run", "parquet")
    with pytest.raises(InputError) as info:
        Run.from_file(p, limits=Limits(max_input_bytes=64))
    assert "larger than 64 bytes" in str(info.value)


def test_the_readme_input_format_examples_run():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Input formats", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]
    assert len(blocks) == 2
    for block in blocks:
        scope: dict = {}
        exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - the README's own examples
        assert isinstance(scope["run"], Run) and len(scope["run"]) > 0
    # the last block's values, by hand: query 0 holds positions 0-2, query 1 positions 0-1
    assert scope["qrels"].to_dict() == {"0": {"0": 2.0, "1": 0.0, "2": 1.0}, "1": {"0": 1.0, "1": 0.0}}
    assert scope["run"].to_dict() == {"q1": {"d3": 2.0, "d1": 1.0}}


def test_the_constructors_docstring_examples_run():
    import doctest

    import conformance.io.data

    result = doctest.testmod(conformance.io.data, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


@pytest.mark.requires_library("trec_eval")
def test_run_and_check_paper_take_the_input_options(tmp_path):
    from click.testing import CliRunner

    from conformance.cli import main

    run = tmp_path / "r.csv"
    _frame("run").rename(columns={"score": "bm25"}).to_csv(run, index=False)
    qrels = _write(tmp_path, "qrels", "parquet")
    out = tmp_path / "out.json"
    done = CliRunner().invoke(main, ["run", "--libs", "trec_eval", "--qrels", str(qrels), "--run", str(run),
                                     "-m", "P@5", "--columns", "score=bm25", "--json", str(out), "--quiet"])
    assert done.exit_code == 0, done.output
    (p5,) = json.loads(out.read_text())["comparisons"]
    assert p5["values"]["trec_eval"] == pytest.approx(_pytrec_eval()["P@5"], abs=1e-12)  # pytrec_eval's own P@5
    printed = f"P@5={_pytrec_eval()['P@5']:.4f}"
    done = CliRunner().invoke(main, ["check-paper", "--no-live", "--libs", "trec_eval", "--qrels", str(qrels),
                                     "--run", str(run), "--reported", printed, "--columns", "score=bm25", "--quiet"])
    assert done.exit_code == 0 and "trec_eval" in done.output, done.output
    refused = CliRunner().invoke(main, ["check-paper", "--no-live", "--qrels", str(qrels), "--run", str(run),
                                        "--reported", printed, "--max-line-bytes", "10"])
    assert refused.exit_code == 2 and "over the limit of 10 bytes a line" in refused.output


# --- wrong shapes say what the file looks like (issue 25.3) ------------------------------------

def _refusal(path, kind="run") -> str:
    with pytest.raises(InputError) as err:
        (Run if kind == "run" else Qrels).from_file(path)
    return str(err.value)


def test_qrels_given_as_the_run_is_named_so(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    text = _refusal(path)
    assert text.startswith(f"{path}:1: ") and "4 columns where TREC runs have 6" in text
    assert "is this a qrels file?" in text
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    assert "6 columns where TREC qrels have 4" in _refusal(path, "qrels")


def test_a_run_with_its_columns_swapped_is_named_so(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q1 d{i} Q0 {i} {10 - i}.0 t\n" for i in range(1, 5)))
    text = _refusal(path)
    assert "the third column holds 'Q0' in 4 rows" in text and "columns swapped?" in text
    assert "listed twice" in text  # the reader's own finding stays


def test_a_tsv_with_a_header_saved_as_txt_is_named_so(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("qid\tdocid\tscore\nq1\td1\t2.0\n")
    text = _refusal(path)
    assert "a header row and tabs: this looks like TSV" in text and "name the file .tsv" in text
    renamed = tmp_path / "run.tsv"
    renamed.write_text(path.read_text())
    assert Run.from_file(renamed).to_dict() == {"q1": {"d1": 2.0}}


def test_a_semicolon_csv_gets_a_delimiter_hint(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("qid;docid;score\nq1;d1;2.0\n")
    text = _refusal(path)
    assert "the header is split by ';', not ','" in text and "no query id column" in text


def test_a_well_shaped_file_with_a_bad_line_gets_no_shape_hint(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 x t\n")
    text = _refusal(path)
    assert "is not a number" in text and "columns" not in text.split("expected")[-1]


# --- rank-only recommendation tables (issue 25.3) ----------------------------------------------

@pytest.mark.parametrize("settings", [{}, {"rank_source": "rank_column"}])
def test_a_rank_only_table_is_ranked_by_its_ranks(tmp_path, settings):
    """A top-k table with user, item and rank columns and no score: the rank is the order, with
    or without rank_source=rank_column. By hand: the relevant i1 at rank 2 of 3 (listed first),
    so RR = 1/2 and P@1 = 0; u2's relevant i4 at rank 1, RR = 1."""
    import conformance

    run = tmp_path / "top.csv"
    run.write_text("user,item,rank\nu1,i1,2\nu1,i2,1\nu1,i3,3\nu2,i4,1\nu2,i5,2\n")
    qrels = tmp_path / "rel.csv"
    qrels.write_text("user,item,rating\nu1,i1,1\nu2,i4,1\n")
    got = conformance.evaluate(str(qrels), str(run), "RR,P@1", **settings)
    assert got.per_query["RR"] == {"u1": 0.5, "u2": 1.0}
    assert got.per_query["P@1"] == {"u1": 0.0, "u2": 1.0}
    assert Run.from_file(run).counts.score_from_rank == "rank"


def test_a_rank_only_table_is_said_on_the_command_line(tmp_path):
    run = tmp_path / "top.csv"
    run.write_text("user,item,rank\nu1,i1,2\nu1,i2,1\n")
    qrels = tmp_path / "rel.csv"
    qrels.write_text("user,item,rating\nu1,i1,1\n")
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "eval", "--qrels", str(qrels),
                        "--run", str(run), "-m", "RR"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert "0.5000" in r.stdout
    assert "no score column: the rank column 'rank' is the order" in r.stderr
    bare = tmp_path / "bare.csv"
    bare.write_text("user,item\nu1,i1\n")
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "eval", "--qrels", str(qrels),
                        "--run", str(bare), "-m", "RR"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 2 and "no score column" in r.stderr and "or a rank column" in r.stderr
