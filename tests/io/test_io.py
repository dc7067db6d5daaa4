"""Tests of the input boundary (conformance.io).

Expected values come from the test text itself (hand-written files), from an independent parser
(pytrec_eval's parse_run / parse_qrel, Arrow's dictionary_encode) or from counts made with awk on
the trec_eval test files (the commands are next to the numbers).
"""

from __future__ import annotations

import importlib
import atexit
import gzip
import json
import math
import os
import random
import shutil
import tempfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import io
from conformance.errors import InputError
from conformance.io import columnar, encode, trec
from conformance.io.data import Qrels, Run
from conformance.io.text import Text

PEERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "trec_eval")
LONG_FUZZ = os.environ.get("CONFORMANCE_LONG_FUZZ") == "1"
FUZZ_EXAMPLES = 20_000 if LONG_FUZZ else 300


def write(tmp_path, name: str, content: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


def rows(table) -> list[tuple]:
    """(qid, docid, value, line) per row, in stored order."""
    value = table.score if isinstance(table, Run) else table.label
    return list(zip(table.query_ids().tolist(), table.doc_ids().tolist(), value.tolist(), table.line.tolist()))


def expect_error(fn, *args, line, contains=(), **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.line == line, str(err)
    text = str(err)
    if args and isinstance(args[0], str):  # a path: the message starts with it
        assert err.source == args[0] and text.startswith(args[0] + (f":{line}: " if line else ": ")), text
    for fragment in contains:
        assert fragment in text, text
    return err


RUN_TEXT = "q1 Q0 d1 1 3.5 tag\nq1 Q0 d2 2 2.25 tag\nq2 Q0 d1 1 -1e-3 tag\n"
RUN_ROWS = [("q1", "d1", 3.5, 1), ("q1", "d2", 2.25, 2), ("q2", "d1", -0.001, 3)]
QRELS_TEXT = "q1 0 d1 2\nq1 0 d3 0\nq2 0 d1 -1\nq2 0 d9 0.5\n"
QRELS_ROWS = [("q1", "d1", 2.0, 1), ("q1", "d3", 0.0, 2), ("q2", "d1", -1.0, 3), ("q2", "d9", 0.5, 4)]


# ---------------------------------------------------------------------------------------------
# Clean files, exact values


def test_run_clean_exact_values(tmp_path):
    run = io.read_run(write(tmp_path, "r.txt", RUN_TEXT))
    assert rows(run) == RUN_ROWS
    assert run.rank.tolist() == [1.0, 2.0, 1.0]
    assert run.qids.tolist() == ["q1", "q2"]  # first appearance order
    assert run.docids.tolist() == ["d1", "d2"]
    assert run.qcode.dtype == np.int64 and run.dcode.dtype == np.int64
    assert run.qids.dtype == object and all(type(x) is str for x in run.docids)
    assert run.counts.to_dict() == {"read": 3, "used": 3, "ignored": 0, "comments": 0, "blank": 0,
                                    "ignored_reasons": {}}
    assert run.source.endswith("r.txt")


def test_qrels_clean_exact_values_negative_and_fractional_labels_valid(tmp_path):
    qrels = io.read_qrels(write(tmp_path, "q.txt", QRELS_TEXT))
    assert rows(qrels) == QRELS_ROWS
    assert qrels.counts.read == 4 and qrels.counts.used == 4


def test_unicode_ids(tmp_path):
    text = "späß Q0 文書-1 1 1.0 t\nspäß Q0 \u00a0x 2 0.5 t\n"  # NBSP is not a separator
    run = io.read_run(write(tmp_path, "u.txt", text))
    assert run.query_ids().tolist() == ["späß", "späß"]
    assert run.doc_ids().tolist() == ["文書-1", "\u00a0x"]


def test_non_numeric_rank_is_nan_not_an_error(tmp_path):
    run = io.read_run(write(tmp_path, "r.txt", "q1 Q0 d1 first 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d3 inf 0 t\n"))
    assert np.isnan(run.rank[0]) and run.rank[1] == 2.0 and run.rank[2] == math.inf
    assert run.counts.used == 3 and run.counts.ignored == 0


def test_extra_run_fields_ignored(tmp_path):
    run = io.read_run(write(tmp_path, "r.txt", "q1 Q0 d1 1 2.5 tag and more junk\nq1 Q0 d2 2 1.5 tag\n"))
    assert rows(run) == [("q1", "d1", 2.5, 1), ("q1", "d2", 1.5, 2)]


VARIANTS = {
    "tabs": "q1\tQ0\td1\t1\t3.5\ttag\nq1\tQ0\td2\t2\t2.25\ttag\nq2\tQ0\td1\t1\t-1e-3\ttag\n",
    "mixed_whitespace": "  q1 \t Q0\td1   1\t\t3.5 tag \nq1\x0bQ0\x0cd2 2 2.25 tag\t\nq2 Q0 d1 1 -1e-3 tag",
    "crlf": RUN_TEXT.replace("\n", "\r\n"),
    "bom": "\ufeff" + RUN_TEXT,
    "no_final_newline": RUN_TEXT.rstrip("\n"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_run_layout_variants_give_the_same_rows(tmp_path, variant):
    run = io.read_run(write(tmp_path, "r.txt", VARIANTS[variant]))
    assert rows(run) == RUN_ROWS


def test_fast_path_taken_only_on_clean_files():
    names = ["qid", "q0", "docid", "rank", "score", "tag"]

    def fast(text: str | bytes):
        return trec._fast_parse(Text("x", text if isinstance(text, bytes) else text.encode()), names, "score")

    assert fast(RUN_TEXT) is not None
    assert fast(VARIANTS["tabs"]) is not None
    assert fast(VARIANTS["no_final_newline"]) is not None
    for text in [
        VARIANTS["mixed_whitespace"],
        VARIANTS["crlf"],
        "# c\n" + RUN_TEXT,
        RUN_TEXT + "\n",  # blank line at the end
        RUN_TEXT.replace("q1 Q0 d2", "q1  Q0 d2"),  # doubled separator
        RUN_TEXT.replace("q1 Q0 d2", " q1 Q0 d2"),  # leading separator
        RUN_TEXT.replace("2.25 tag", "2.25 tag "),  # trailing separator
        RUN_TEXT.replace("q2 Q0 d1 1 -1e-3 tag", "q2 Q0 d1 -1e-3 tag"),  # 5 fields
        RUN_TEXT.replace("q2 Q0", "#q2 Q0"),  # a comment that has 6 fields
        "q1 Q0 d1  1.0 tag\n",  # 5 tokens that Arrow would see as 6 with an empty rank
        RUN_TEXT.replace("q1 Q0 d2 2", "q1 Q0 d2 second"),  # a rank that is not a number
        RUN_TEXT.replace("d2", "d\xe92").encode("latin-1"),  # not UTF-8
    ]:
        assert fast(text) is None, text


def test_general_path_equals_fast_path_on_the_same_rows(tmp_path):
    clean = io.read_run(write(tmp_path, "a.txt", RUN_TEXT))
    commented = io.read_run(write(tmp_path, "b.txt", "# header\n\n" + RUN_TEXT))
    assert [r[:3] for r in rows(clean)] == [r[:3] for r in rows(commented)]
    assert commented.line.tolist() == [3, 4, 5]
    assert commented.counts.comments == 1 and commented.counts.blank == 1


@pytest.mark.parametrize(
    "token",
    ["1", "+1", "-0", ".5", "5.", "1e5", "1E+05", "-.5e3", "1.e5", "0001.5", "1_0", "0x10", "1,5", "1e",
     "e5", "--1", "+", ".", "nan", "NaN", "inf", "-Infinity", "1e400", "abc", "١"],
)
def test_fast_and_general_paths_agree_on_numbers(tmp_path, token):
    """Arrow's number grammar rules both paths: same value or the same refusal, same line."""
    outcomes = []
    for name, prefix in (("fast.txt", ""), ("general.txt", "# comment\n")):
        path = write(tmp_path, name, prefix + f"q1 Q0 d0 1 1 t\nq1 Q0 d1 2 {token} t\n")
        try:
            run = io.read_run(path)
            outcomes.append(("ok", run.score[1]))
        except InputError as e:
            outcomes.append(("error", e.line - len(prefix.splitlines())))
    assert outcomes[0] == outcomes[1] or (
        outcomes[0][0] == "ok" and outcomes[1][0] == "ok" and math.isnan(outcomes[0][1]) and math.isnan(outcomes[1][1])
    ), outcomes


# ---------------------------------------------------------------------------------------------
# Comments, blank lines, '#' inside ids


def test_comments_and_blank_lines_counted_and_line_numbers_physical(tmp_path):
    text = "# a comment\n\nq1 Q0 d1 1 3 t\n   # indented comment\n \t \nq1 Q0 d#2 2 2 t\nq1 Q0 d3 3 1 t # not a comment\n"
    run = io.read_run(write(tmp_path, "r.txt", text))
    assert rows(run) == [("q1", "d1", 3.0, 3), ("q1", "d#2", 2.0, 6), ("q1", "d3", 1.0, 7)]
    assert run.counts.to_dict() == {"read": 3, "used": 3, "ignored": 0, "comments": 2, "blank": 2,
                                    "ignored_reasons": {}}


def test_docid_with_hash_is_data_in_qrels(tmp_path):
    qrels = io.read_qrels(write(tmp_path, "q.txt", "2024-1 0 msmarco_v2.1_doc_50_2286987788#13_3087841662 1\n"))
    assert qrels.doc_ids().tolist() == ["msmarco_v2.1_doc_50_2286987788#13_3087841662"]


def test_qid_starting_with_hash_is_a_comment(tmp_path):
    run = io.read_run(write(tmp_path, "r.txt", "#q1 Q0 d1 1 3 t\nq2 Q0 d1 1 3 t\n"))
    assert rows(run) == [("q2", "d1", 3.0, 2)] and run.counts.comments == 1


# ---------------------------------------------------------------------------------------------
# How the bytes are obtained: a regular file is memory-mapped, anything else read


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_named_pipe_read_like_a_file(tmp_path):
    import threading

    fifo = str(tmp_path / "run.fifo")
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as f:
            f.write(RUN_TEXT)

    writer = threading.Thread(target=feed)
    writer.start()
    run = io.read_run(fifo)
    writer.join()
    mapped = io.read_run(write(tmp_path, "r.txt", RUN_TEXT))
    assert rows(run) == rows(mapped) == RUN_ROWS


def _feed_slowly(fifo: str, pieces: list[str]):
    """A writer that sends ``pieces`` apart in time, as a program producing its run does: the
    first piece is all a reader that peeks at the start can see."""
    import threading
    import time

    def feed():
        with open(fifo, "w") as f:
            for piece in pieces:
                f.write(piece)
                f.flush()
                time.sleep(0.2)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


def _within(seconds: float, fn, *args):
    """``fn(*args)``, failing the test (not hanging it) when it has not returned in time."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(fn, *args).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"{fn.__name__} still reading after {seconds} s (waiting for a second writer?)")
    finally:
        pool.shutdown(wait=False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_stream_is_read_once_whatever_the_format_guessing_needs(tmp_path):
    # no extension, JSONL content: the format is guessed from the first bytes and two formats
    # may be tried, each reading from the start; a FIFO gives its bytes once (reopening it
    # waited for a second writer for ever)
    fifo = str(tmp_path / "run")
    os.mkfifo(fifo)
    lines = [json.dumps({"qid": "q1", "doc_ids": ["d1", "d2"], "scores": [3.5, 2.25]}) + "\n",
             json.dumps({"qid": "q2", "doc_ids": ["d1"], "scores": [-0.001]}) + "\n"]
    writer = _feed_slowly(fifo, lines)
    run = _within(30, io.load_run, fifo)
    writer.join(5)
    assert [r[:3] for r in rows(run)] == [r[:3] for r in RUN_ROWS]
    assert run.source == fifo

    # an error in a stream names the path the user gave, not a temporary copy
    fifo = str(tmp_path / "run.txt")
    os.mkfifo(fifo)
    writer = _feed_slowly(fifo, ["q1 Q0 d1 1 3.5 t\n", "q1 Q0 d2 2 x t\n"])
    err = expect_error(_within, 30, io.load_run, fifo, line=2, contains=("'x'",))
    writer.join(5)
    assert err.source == fifo and "conformance-input" not in str(err)


def test_mapped_file_names_the_bad_line(tmp_path):
    # the error paths take bytes methods the mapped text lacks: they must still name the line
    text = RUN_TEXT + "q9 Q0 d1 1 \xff 7\n"
    path = write(tmp_path, "r.txt", text.encode("latin-1"))
    if os.name == "posix":
        import mmap

        assert isinstance(Text.open(path).data, mmap.mmap)
    expect_error(io.read_run, path, line=4, contains=("not valid UTF-8",))
    path = write(tmp_path, "r2.txt", RUN_TEXT + "q9 Q0 d1 1 x t\n")
    expect_error(io.read_run, path, line=4, contains=("'x'", "not a number"))


# ---------------------------------------------------------------------------------------------
# gzip


def test_gz_read_transparently(tmp_path):
    path = write(tmp_path, "r.txt.gz", gzip.compress(("# c\n" + RUN_TEXT).encode()))
    run = io.read_run(path)
    assert [r[:3] for r in rows(run)] == [r[:3] for r in RUN_ROWS]
    assert run.line.tolist() == [2, 3, 4]
    qrels = io.read_qrels(write(tmp_path, "q.gz", gzip.compress(QRELS_TEXT.encode())))
    assert rows(qrels) == QRELS_ROWS


def test_gzip_magic_without_gz_name(tmp_path):
    assert rows(io.read_run(write(tmp_path, "r.txt", gzip.compress(RUN_TEXT.encode())))) == RUN_ROWS


# ids named, not drawn from the bytes: a gzip header holds the time it was written
@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(RUN_TEXT.encode(), mtime=0)[:-12],
                                     b"\x1f\x8b\x08\x00garbage-garbage"],
                         ids=["not-gzip", "truncated", "bad-stream"])
def test_corrupt_gz_is_input_error(tmp_path, content):
    path = write(tmp_path, "r.txt.gz", content)
    err = expect_error(io.read_run, path, line=None, contains=(path, "gzip"))
    assert err.source == path


# ---------------------------------------------------------------------------------------------
# Validation: each problem names the file, the physical line and the problem


def test_too_few_run_fields(tmp_path):
    path = write(tmp_path, "r.txt", "# c\nq1 Q0 d1 1 3 t\nq1 Q0 d2 2 t\n")
    err = expect_error(io.read_run, path, line=3, contains=("at least 6", "got 5", "qid Q0 docid rank score tag"))
    assert str(err).startswith(f"{path}:3: ")


def test_too_few_run_fields_in_clean_looking_file(tmp_path):
    path = write(tmp_path, "r.txt", "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d3 3\n")
    expect_error(io.read_run, path, line=3, contains=("got 4",))


@pytest.mark.parametrize("line,got", [("q1 0 d2 1 extra", 5), ("q1 0 d2", 3), ("q1", 1)])
def test_qrels_field_count(tmp_path, line, got):
    # trec_eval get_qrels.c refuses anything but 4 fields (trailing whitespace allowed)
    path = write(tmp_path, "q.txt", f"q1 0 d1 1 \t\n{line}\n")
    expect_error(io.read_qrels, path, line=2, contains=("expected 4", f"got {got}", "qid iter docid relevance"))


@pytest.mark.parametrize("prefix", ["", "# c\n"])
def test_non_numeric_score(tmp_path, prefix):
    path = write(tmp_path, "r.txt", prefix + "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 high t\n")
    expect_error(io.read_run, path, line=2 + len(prefix.splitlines()),
                 contains=(path, "score 'high'", "not a number"))


@pytest.mark.parametrize("prefix", ["", "\n"])
def test_non_numeric_label(tmp_path, prefix):
    path = write(tmp_path, "q.txt", prefix + "q1 0 d1 1\nq1 0 d2 R\n")
    expect_error(io.read_qrels, path, line=2 + len(prefix.splitlines()), contains=("label 'R'", "not a number"))


@pytest.mark.parametrize("token", ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999"])
@pytest.mark.parametrize("prefix", ["", "# c\n"])
def test_non_finite_score(tmp_path, token, prefix):
    path = write(tmp_path, "r.txt", prefix + f"q1 Q0 d1 1 3 t\nq1 Q0 d2 2 {token} t\n")
    expect_error(io.read_run, path, line=2 + len(prefix.splitlines()),
                 contains=(f"score {token!r}", "not a finite number"))


@pytest.mark.parametrize("token", ["nan", "inf", "-inf"])
def test_non_finite_label(tmp_path, token):
    path = write(tmp_path, "q.txt", f"q1 0 d1 1\nq1 0 d2 {token}\n")
    expect_error(io.read_qrels, path, line=2, contains=(f"label {token!r}", "not a finite number"))


def test_first_problem_reported_is_the_earliest_line_of_its_kind(tmp_path):
    path = write(tmp_path, "r.txt", "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 x t\nq1 Q0 d3 3 y t\n")
    expect_error(io.read_run, path, line=2, contains=("'x'",))


@pytest.mark.parametrize("prefix", ["", "# c\n"])
def test_duplicate_docid_error_names_both_lines(tmp_path, prefix):
    body = "q1 Q0 d1 1 3 t\nq2 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\nq1 Q0 d2 4 0 t\n"
    path = write(tmp_path, "r.txt", prefix + body)
    k = len(prefix.splitlines())
    expect_error(io.read_run, path, line=4 + k,
                 contains=("'d1'", "'q1'", f"lines {1 + k} and {4 + k}", "duplicates='first'"))


def test_duplicate_docid_first_and_last(tmp_path):
    path = write(tmp_path, "r.txt", "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\nq1 Q0 d1 4 0 t\n")
    first = io.read_run(path, duplicates="first")
    assert rows(first) == [("q1", "d1", 3.0, 1), ("q1", "d2", 2.0, 2)]
    assert first.counts.to_dict() == {"read": 4, "used": 2, "ignored": 2, "comments": 0, "blank": 0,
                                      "ignored_reasons": {"duplicate docid": 2}}
    last = io.read_run(path, duplicates="last")
    assert rows(last) == [("q1", "d2", 2.0, 2), ("q1", "d1", 0.0, 4)]
    assert last.counts.ignored == 2 and last.counts.used == 2
    with pytest.raises(ValueError):
        io.read_run(path, duplicates="newest")


def test_qrels_duplicate_same_label_kept_once_and_counted(tmp_path):
    path = write(tmp_path, "q.txt", "q1 0 d1 1\nq1 0 d2 0\nq1 1 d1 1\nq1 0 d1 1\n")
    qrels = io.read_qrels(path)
    assert rows(qrels) == [("q1", "d1", 1.0, 1), ("q1", "d2", 0.0, 2)]
    assert qrels.counts.to_dict() == {"read": 4, "used": 2, "ignored": 2, "comments": 0, "blank": 0,
                                      "ignored_reasons": {"duplicate judgment, same label": 2}}


def test_qrels_conflicting_labels_name_both_lines(tmp_path):
    path = write(tmp_path, "q.txt", "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\nq2 0 d2 0\nq1 0 d1 2\n")
    expect_error(io.read_qrels, path, line=5, contains=("'d1'", "'q1'", "label 1 on line 1", "label 2 on line 5"))


@pytest.mark.parametrize("content,fragment", [
    ("", "empty"), ("\n\n  \n", "no data rows"), ("# only\n# comments\n", "no data rows"), ("\ufeff", "empty"),
])
def test_no_data_rows(tmp_path, content, fragment):
    path = write(tmp_path, "r.txt", content)
    expect_error(io.read_run, path, line=None, contains=("no data rows", fragment, path))
    expect_error(io.read_qrels, path, line=None, contains=("no data rows",))


@pytest.mark.parametrize("prefix", [b"", b"# c\n"])
def test_undecodable_bytes(tmp_path, prefix):
    path = write(tmp_path, "r.txt", prefix + b"q1 Q0 d1 1 3 t\nq1 Q0 d\xff2 2 2 t\n")
    k = 1 if prefix else 0
    expect_error(io.read_run, path, line=2 + k, contains=("ff", "UTF-8", "column 8"))


def test_undecodable_bytes_in_a_comment(tmp_path):
    path = write(tmp_path, "q.txt", b"q1 0 d1 1\n# caf\xe9\n")
    expect_error(io.read_qrels, path, line=2, contains=("UTF-8",))


def test_missing_file_and_directory(tmp_path):
    missing = str(tmp_path / "nope.txt")
    expect_error(io.read_run, missing, line=None, contains=(missing, "no such file"))
    expect_error(io.read_qrels, str(tmp_path), line=None, contains=("directory",))
    expect_error(io.load_run, str(tmp_path / "nope.json"), line=None, contains=("no such file",))


# ---------------------------------------------------------------------------------------------
# The trec_eval test files (counts made with awk; see each comment)

# awk 'NF>0 && $1 !~ /^#/' FILE | wc -l   and   awk '$1 ~ /^#/' FILE | wc -l
PEER_COUNTS = {
    ("results.test", "run"): (1500, 0),
    ("results.trunc", "run"): (584, 0),
    ("results.comment.test", "run"): (30100, 0),
    ("qrels.test", "qrels"): (3681, 0),
    ("qrels.rel_level", "qrels"): (3681, 0),
    ("qrels.comment.test", "qrels"): (5890, 0),
    ("qrels.test.with-comments", "qrels"): (3681, 3),
}


@pytest.mark.parametrize("name,kind", sorted(PEER_COUNTS))
def test_trec_eval_files_row_counts(name, kind):
    path = os.path.join(PEERS, name)
    table = io.read_run(path) if kind == "run" else io.read_qrels(path)
    data_rows, comments = PEER_COUNTS[(name, kind)]
    assert len(table) == data_rows
    assert table.counts.read == table.counts.used == data_rows
    assert table.counts.comments == comments and table.counts.blank == 0


def test_trec_eval_results_trunc_details():
    run = io.read_run(os.path.join(PEERS, "results.trunc"))
    # awk '{print $1}' results.trunc | sort | uniq -c  ->  500 301, 84 303
    q, n = np.unique(run.query_ids(), return_counts=True)
    assert dict(zip(q.tolist(), n.tolist())) == {"301": 500, "303": 84}
    # line 1: "301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at"
    assert rows(run)[0] == ("301", "FBIS3-27619", 2.138276, 1)
    assert run.rank[0] == 99.0


def test_trec_eval_rel_level_labels():
    qrels = io.read_qrels(os.path.join(PEERS, "qrels.rel_level"))
    # awk '{print $4}' qrels.rel_level | sort | uniq -c
    labels, n = np.unique(qrels.label, return_counts=True)
    assert dict(zip(labels.tolist(), n.tolist())) == {-1.0: 304, 0.0: 2818, 1.0: 462, 2.0: 14, 3.0: 77, 4.0: 6}


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("name", ["results.test", "results.comment.test"])
def test_trec_eval_runs_match_pytrec_eval_parser(name):
    pytrec_eval = importlib.import_module("pytrec_eval")
    path = os.path.join(PEERS, name)
    with open(path) as f:
        expected = pytrec_eval.parse_run(f)
    assert io.read_run(path).to_dict() == {q: dict(d) for q, d in expected.items()}


@pytest.mark.requires_library("trec_eval")
@pytest.mark.parametrize("name", ["qrels.test", "qrels.rel_level", "qrels.comment.test"])
def test_trec_eval_qrels_match_pytrec_eval_parser(name):
    pytrec_eval = importlib.import_module("pytrec_eval")
    path = os.path.join(PEERS, name)
    with open(path) as f:
        expected = pytrec_eval.parse_qrel(f)
    assert io.read_qrels(path).to_dict() == {q: {d: float(v) for d, v in docs.items()} for q, docs in expected.items()}


def test_trec_eval_multi_group_qrels_conflict():
    # qrels.123 judges each (qid, docid) once per judgment group (column 2): as plain qrels the
    # labels conflict. grep -n CR93E-1860 qrels.123 -> lines 5 (label 0) and 3686 (label 3)
    expect_error(io.read_qrels, os.path.join(PEERS, "qrels.123"), line=3686,
                 contains=("'CR93E-1860'", "label 0 on line 5", "label 3 on line 3686"))


# ---------------------------------------------------------------------------------------------
# Large input: the sort-based dictionary encoding through the public reader


def test_large_run_matches_a_plain_python_parse(tmp_path):
    rng = random.Random(7)
    lines = []
    for q in range(120):
        docs = rng.sample(range(400_000), 1000)
        for r, d in enumerate(docs, 1):
            lines.append(f"q{q} Q0 D{d:x}{'x' * (d % 13)} {r} {rng.uniform(-5, 5):.6f} run")
    text = "\n".join(lines) + "\n"
    run = io.read_run(write(tmp_path, "big.txt", text))
    expected: dict[str, dict[str, float]] = {}
    for line in lines:
        q, _, d, _, s, _ = line.split()
        expected.setdefault(q, {})[d] = float(s)
    assert run.to_dict() == expected
    assert len(run.docids) == len({line.split()[2] for line in lines})
    assert run.line.tolist() == list(range(1, len(lines) + 1))
    # the same rows laid out so that only the general path can read them
    messy = "# header\n" + "\n".join(line.replace(" ", " \t ", 2) for line in lines) + "\r\n"
    run2 = io.read_run(write(tmp_path, "big2.txt", messy))
    assert run2.to_dict() == expected
    assert run2.line.tolist() == list(range(2, len(lines) + 2))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789+-.eEinfatyINFATY_x ", min_size=1, max_size=7), min_size=1, max_size=30))
def test_rank_number_pattern_matches_arrow_cast(tokens):
    """The rank column's fallback pattern accepts exactly what Arrow's cast reads."""
    matched = pc.match_substring_regex(pa.array(tokens), columnar.NUMBER).to_pylist()
    for token, ok in zip(tokens, matched):
        try:
            pc.cast(pa.array([token]), pa.float64())
            readable = True
        except pa.ArrowInvalid:
            readable = False
        assert ok == readable, token
    expected = []
    for token in tokens:
        try:
            expected.append(pc.cast(pa.array([token]), pa.float64())[0].as_py())
        except pa.ArrowInvalid:
            expected.append(math.nan)
    got = columnar.lenient_float(pa.array(tokens)).tolist()
    assert [x if not math.isnan(x) else "nan" for x in got] == [x if not math.isnan(x) else "nan" for x in expected]


# ---------------------------------------------------------------------------------------------
# The factorizer against Arrow's dictionary_encode


def _reference_encode(values: list[str]):
    enc = pc.dictionary_encode(pa.array(values, pa.string()))
    return enc.indices.to_numpy().astype(np.int64).tolist(), enc.dictionary.to_pylist()


ids = st.text(alphabet=st.sampled_from(["a", "b", "\x00", "é", "#", "0", "z"]), min_size=0, max_size=20)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ids, min_size=1, max_size=200), hash_bits=st.sampled_from([None, 0, 1, 3, 8]))
def test_factorize_sort_matches_arrow(values, hash_bits):
    codes, vocab = encode.factorize(pa.array(values, pa.string()), method="sort", hash_bits=hash_bits)
    ref_codes, ref_vocab = _reference_encode(values)
    assert codes.tolist() == ref_codes and vocab.tolist() == ref_vocab


def test_factorize_long_ids_and_chunked_input():
    values = ["x" * 70 + str(i % 50) for i in range(300)] + ["short", "", "short"]
    chunked = pa.chunked_array([pa.array(values[:100]), pa.array(values[100:])])
    codes, vocab = encode.factorize(chunked, method="sort")
    assert (codes.tolist(), vocab.tolist()) == _reference_encode(values)
    sliced = pa.array(["zz", "a", "b", "a"] * 3).slice(3, 7)
    codes, vocab = encode.factorize(sliced, method="sort", hash_bits=2)
    assert (codes.tolist(), vocab.tolist()) == _reference_encode(sliced.to_pylist())


def _chunked(values: list[str], cuts: list[int], offset: int) -> pa.ChunkedArray:
    """``values`` in chunks cut at ``cuts`` (empty chunks allowed), each a slice of a longer
    array (a non-zero Arrow offset, as the CSV reader's chunks may have)."""
    bounds = [0] + sorted(min(c, len(values)) for c in cuts) + [len(values)]
    chunks = []
    for a, b in zip(bounds, bounds[1:]):
        pad = ["pad"] * offset
        chunks.append(pa.array(pad + values[a:b] + pad, pa.string()).slice(offset, b - a))
    return pa.chunked_array(chunks, pa.string())


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.tuples(ids, st.integers(1, 30)), min_size=1, max_size=40),
       cuts=st.lists(st.integers(0, 600), max_size=4), offset=st.integers(0, 3))
def test_factorize_runs_matches_arrow(groups, cuts, offset):
    """Ids listed in groups (the same id may come back in a later group) code as Arrow's hash
    table codes them, whatever the chunking; too many groups decline (None)."""
    values = [v for v, size in groups for _ in range(size)]
    column = _chunked(values, cuts, offset)
    out = encode.factorize_runs(column)
    changes = sum(1 for a, b in zip(values, values[1:]) if a != b)
    if out is None:  # declined only when not worth it: a group starts at each change and chunk
        assert (changes + column.num_chunks) * 16 > len(values)
        return
    codes, vocab = out
    assert (codes.tolist(), vocab.to_pylist()) == _reference_encode(values)


def test_factorize_picks_runs_for_grouped_qids_and_falls_back_when_not_grouped():
    grouped = [f"q{i}" for i in range(1000) for _ in range(100)]  # a run: 100 rows a query
    codes, vocab = encode.factorize(_chunked(grouped, [12345, 50000], 0))
    assert (codes.tolist(), vocab.tolist()) == _reference_encode(grouped)
    assert encode.factorize_runs(pa.array(grouped)) is not None
    interleaved = [f"q{i % 1000}" for i in range(100_000)]  # few ids, never two alike in a row
    assert encode.factorize_runs(pa.array(interleaved)) is None
    codes, vocab = encode.factorize(pa.array(interleaved))
    assert (codes.tolist(), vocab.tolist()) == _reference_encode(interleaved)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ids, max_size=60), cuts=st.lists(st.integers(0, 60), max_size=3),
       offset=st.integers(0, 3))
def test_empty_and_comment_checks_match_arrow(values, cuts, offset):
    """The fast reader's in-place checks of a parsed column against Arrow's kernels."""
    column = _chunked(values, cuts, offset)
    has_empty = pc.min(pc.binary_length(column)).as_py() == 0 if values else False
    assert trec._has_empty(column) == has_empty
    if not has_empty:
        assert trec._starts_with_hash(column) == pc.any(pc.starts_with(column, "#")).as_py() if values else True


def test_fast_read_keeps_the_rank_column_until_it_is_used(tmp_path):
    path = write(tmp_path, "r.txt", "q1 Q0 a 3 2.5 t\nq1 Q0 b 1e1 1.5 t\nq2 Q0 a -0 9 t\n")
    run = io.read_run(path)
    assert isinstance(run._rank, pa.ChunkedArray)  # the fast reader's column, not copied yet
    assert run.rank.tolist() == [3.0, 10.0, 0.0] and run.rank.dtype == np.float64
    assert isinstance(run._rank, np.ndarray)


# ---------------------------------------------------------------------------------------------
# JSON


def test_run_json_dict_of_dicts(tmp_path):
    path = write(tmp_path, "r.json", json.dumps({"q2": {"b": 1.5, "a": 2}, "q1": {"a": -3}}))
    run = io.read_run_json(path)
    assert rows(run) == [("q2", "b", 1.5, 1), ("q2", "a", 2.0, 2), ("q1", "a", -3.0, 3)]
    assert np.isnan(run.rank).all()


def test_qrels_json_and_empty_query_counted(tmp_path):
    path = write(tmp_path, "q.json", '{"q1": {"d1": 1, "d2": 0}, "q2": {}, "q3": {"d1": 0.5}}')
    qrels = io.read_qrels_json(path)
    assert rows(qrels) == [("q1", "d1", 1.0, 1), ("q1", "d2", 0.0, 2), ("q3", "d1", 0.5, 4)]
    assert qrels.counts.to_dict() == {"read": 4, "used": 3, "ignored": 1, "comments": 0, "blank": 0,
                                      "ignored_reasons": {"query with no documents": 1}}


@pytest.mark.parametrize("value,fragment", [('"1.5"', "the string '1.5'"), ("true", "boolean"),
                                            ("null", "null"), ("NaN", "not a finite number"),
                                            ("1e999", "not a finite number"), ("[1]", "a list")])
def test_json_bad_values_name_the_record(tmp_path, value, fragment):
    path = write(tmp_path, "r.json", '{"q1": {"d1": 1, "d2": 2}, "q2": {"d1": ' + value + "}}")
    expect_error(io.read_run_json, path, line=3, contains=(fragment, "record 3", "'q2'", path))


def test_json_repeated_key_is_a_duplicate(tmp_path):
    path = write(tmp_path, "r.json", '{"q1": {"d1": 1, "d2": 2, "d1": 3}}')
    expect_error(io.read_run_json, path, line=3, contains=("records 1 and 3",))
    assert rows(io.read_run_json(path, duplicates="last")) == [("q1", "d2", 2.0, 2), ("q1", "d1", 3.0, 3)]
    qpath = write(tmp_path, "q.json", '{"q1": {"d1": 1, "d2": 2, "d1": 3}}')
    expect_error(io.read_qrels_json, qpath, line=3, contains=("label 1 on record 1", "label 3 on record 3"))


@pytest.mark.parametrize("content,line,fragment", [
    ('{"q1": {"d1": 1,}}', 1, "not valid JSON"),
    ('{\n"q1": {"d1": 1},\n"q2": [1, 2]\n}', 2, "record 2 (query 'q2'): the value is a list: expected an object"),
    ("[1, 2]", 1, "the record is int 1"),
    ('"text"', None, "expected an object"),
    ('{"qid": "q1", "doc_ids": ["a"]}', 1, "looks like one record"),
    ("{}", None, "no data rows"),
    ("", None, "no data rows"),
])
def test_json_structure_errors(tmp_path, content, line, fragment):
    expect_error(io.read_run_json, write(tmp_path, "r.json", content), line=line, contains=(fragment,))


def test_json_list_of_records(tmp_path):
    path = write(tmp_path, "r.json", json.dumps([{"qid": "q1", "doc_ids": ["a", "b"], "scores": [2, 1]},
                                                 {"query_id": 7, "docid": "c", "score": 0.5, "rank": 3}]))
    run = io.read_run_json(path)
    assert rows(run) == [("q1", "a", 2.0, 1), ("q1", "b", 1.0, 1), ("7", "c", 0.5, 2)]
    assert run.rank.tolist() == [1.0, 2.0, 3.0]


def test_json_undecodable(tmp_path):
    expect_error(io.read_run_json, write(tmp_path, "r.json", b'{"q1":\n {"d\xff": 1}}'), line=2, contains=("UTF-8",))


# ---------------------------------------------------------------------------------------------
# JSONL


def test_qrels_jsonl_rag_shape(tmp_path):
    lines = [
        {"qid": "q1", "query": "who?", "gold_doc_ids": ["d1", "d3", "d4"], "graded_relevance": {"d1": 3, "d3": 0, "d9": 2}},
        {"qid": "q2", "gold_doc_ids": ["d2"]},
        {"query_id": "q3", "graded_relevance": {"d5": 1.5}},
        {"qid": "q4", "gold_doc_ids": []},
        {"qid": "q1", "docid": "d7", "relevance": -1},
    ]
    text = json.dumps(lines[0]) + "\n\n" + "\n".join(json.dumps(x) for x in lines[1:]) + "\n"
    qrels = io.read_qrels_jsonl(write(tmp_path, "q.jsonl", text))
    assert rows(qrels) == [
        ("q1", "d1", 3.0, 1), ("q1", "d3", 0.0, 1), ("q1", "d4", 1.0, 1), ("q1", "d9", 2.0, 1),
        ("q2", "d2", 1.0, 3), ("q3", "d5", 1.5, 4), ("q1", "d7", -1.0, 6),
    ]
    assert qrels.counts.to_dict() == {"read": 8, "used": 7, "ignored": 1, "comments": 0, "blank": 1,
                                      "ignored_reasons": {"record with no judged documents": 1}}


def test_qrels_jsonl_duplicates_across_records(tmp_path):
    same = '{"qid": "q1", "gold_doc_ids": ["d1", "d1"]}\n{"qid": "q1", "graded_relevance": {"d1": 1}}\n'
    qrels = io.read_qrels_jsonl(write(tmp_path, "a.jsonl", same))
    assert rows(qrels) == [("q1", "d1", 1.0, 1)] and qrels.counts.ignored == 2
    conflict = '{"qid": "q1", "gold_doc_ids": ["d1"]}\n{"qid": "q2", "gold_doc_ids": ["d1"]}\n{"qid": "q1", "graded_relevance": {"d1": 2}}\n'
    expect_error(io.read_qrels_jsonl, write(tmp_path, "b.jsonl", conflict), line=3,
                 contains=("label 1 on line 1", "label 2 on line 3"))


@pytest.mark.parametrize("record,fragment", [
    ('{"gold_doc_ids": ["d1"]}', "no query id"),
    ('{"qid": "q1"}', "no judged documents"),
    ('{"qid": "q1", "gold_doc_ids": "d1"}', "expected a list"),
    ('{"qid": "q1", "gold_doc_ids": [1.5]}', "expected a string or an integer"),
    ('{"qid": "q1", "graded_relevance": {"d1": "high"}}', "expected a number"),
    ('{"qid": "q1", "graded_relevance": {"d1": 1, "d1": 2}}', "grades docid 'd1' twice"),
    ('{"qid": null, "gold_doc_ids": ["d1"]}', "null"),
    ('{"qid": "q1", "docid": "d1"}', "no label"),
    ('["q1", "d1", 1]', "expected a JSON object"),
    ('{"qid": "q1", "gold_doc_ids": ["d1"]', "not valid JSON"),
])
def test_qrels_jsonl_errors_name_the_line(tmp_path, record, fragment):
    path = write(tmp_path, "q.jsonl", '{"qid": "q0", "gold_doc_ids": ["d0"]}\n\n' + record + "\n")
    expect_error(io.read_qrels_jsonl, path, line=3, contains=(fragment, path))


def test_run_jsonl_shapes(tmp_path):
    text = (
        '{"qid": "q1", "doc_ids": ["a", "b", "c"], "scores": [0.5, 0.9, 0.1]}\n'
        '{"qid": "q2", "retrieved_doc_ids": ["c", "a"]}\n'
        '{"qid": "q3", "docid": "z", "score": 4}\n'
        '{"qid": "q4", "doc_ids": []}\n'
    )
    run = io.read_run_jsonl(write(tmp_path, "r.jsonl", text))
    assert rows(run) == [("q1", "a", 0.5, 1), ("q1", "b", 0.9, 1), ("q1", "c", 0.1, 1),
                         ("q2", "c", 2.0, 2), ("q2", "a", 1.0, 2), ("q3", "z", 4.0, 3)]
    assert run.rank[:5].tolist() == [1.0, 2.0, 3.0, 1.0, 2.0] and np.isnan(run.rank[5])
    assert run.counts.ignored == 1 and run.counts.reasons == {"query with no documents": 1}


@pytest.mark.parametrize("record,fragment", [
    ('{"qid": "q1", "doc_ids": ["a", "b"], "scores": [1]}', "2 docids but 1 scores"),
    ('{"qid": "q1", "doc_ids": ["a"], "scores": [NaN]}', "not a finite number"),
    ('{"qid": "q1", "doc_ids": ["a", "a"]}', "listed twice"),
    ('{"qid": "q1", "docid": "a"}', "no score"),
    ('{"qid": "q1", "documents": ["a"]}', "no documents"),
])
def test_run_jsonl_errors(tmp_path, record, fragment):
    expect_error(io.read_run_jsonl, write(tmp_path, "r.jsonl", "\n" + record), line=2, contains=(fragment,))


# ---------------------------------------------------------------------------------------------
# DataFrames


def test_frames_with_each_accepted_name():
    run = io.run_from_frame(pd.DataFrame({"Q_ID": [1, 1, 2], "doc_id": ["a", "b", "a"], "score": [1, 0.5, 2],
                                          "rank": ["1", "x", "1"], "other": [0, 0, 0]}))
    assert rows(run) == [("1", "a", 1.0, 1), ("1", "b", 0.5, 2), ("2", "a", 2.0, 3)]
    assert run.rank[0] == 1.0 and np.isnan(run.rank[1])
    qrels = io.qrels_from_frame(pd.DataFrame({"query_id": ["q1"], "docid": ["d1"], "relevance": [2]}))
    assert rows(qrels) == [("q1", "d1", 2.0, 1)]
    for label_name in ("label", "rel"):
        q = io.qrels_from_frame(pd.DataFrame({"qid": ["q"], "docid": ["d"], label_name: [1]}))
        assert q.label.tolist() == [1.0]
    cat = io.qrels_from_frame(pd.DataFrame({"qid": pd.Categorical(["q", "r"]), "docid": ["d", "d"], "rel": [1, 0]}))
    assert cat.query_ids().tolist() == ["q", "r"]


@pytest.mark.parametrize("frame,line,fragment", [
    (pd.DataFrame({"qid": ["q"], "docid": ["d"]}), None, "no score column"),
    (pd.DataFrame({"qid": ["q"], "query_id": ["q"], "docid": ["d"], "score": [1]}), None, "all name the query id"),
    (pd.DataFrame({"qid": [1.0], "docid": ["d"], "score": [1]}), None, "expected strings or integers"),
    (pd.DataFrame({"qid": ["q", None], "docid": ["d", "e"], "score": [1, 2]}), 2, "missing"),
    (pd.DataFrame({"qid": ["q", "q"], "docid": ["d", "e"], "score": [1, np.inf]}), 2, "not a finite number"),
    (pd.DataFrame({"qid": ["q", "q"], "docid": ["d", "e"], "score": ["1", "x"]}), 2, "'x' is not a number"),
    (pd.DataFrame({"qid": ["q", "q"], "docid": ["d", "d"], "score": [1, 2]}), 2, "rows 1 and 2"),
    (pd.DataFrame({"qid": ["q"], "docid": ["d"], "score": [True]}), None, "booleans"),
    (pd.DataFrame({"qid": ["q", 1], "docid": ["d", "e"], "score": [1, 2]}), None, "mixes value types"),
    (pd.DataFrame({"qid": [], "docid": [], "score": []}), None, "no data rows"),
])
def test_run_frame_errors(frame, line, fragment):
    expect_error(io.run_from_frame, frame, line=line, contains=(fragment, "<DataFrame>"))


def test_qrels_frame_errors():
    # "grade" names the label now (frames.ALIASES): a column no alias names is refused
    expect_error(io.qrels_from_frame, pd.DataFrame({"qid": ["q"], "docid": ["d"], "stars": [1]}), line=None,
                 contains=("relevance / label / rel", "'stars'"))
    expect_error(io.qrels_from_frame, pd.DataFrame({"qid": ["q", "q"], "docid": ["d", "d"], "rel": [1, 0]}),
                 line=2, contains=("label 1 on row 1", "label 0 on row 2"))


# ---------------------------------------------------------------------------------------------
# Dispatch


def test_load_dispatch(tmp_path):
    assert rows(io.load_run(write(tmp_path, "r.json", '{"q1": {"d1": 1}}'))) == [("q1", "d1", 1.0, 1)]
    assert rows(io.load_run(write(tmp_path, "r.json.gz", gzip.compress(b'{"q1": {"d1": 1}}')))) == [("q1", "d1", 1.0, 1)]
    assert rows(io.load_run(write(tmp_path, "r.jsonl", '{"qid": "q1", "doc_ids": ["d1"]}'))) == [("q1", "d1", 1.0, 1)]
    assert rows(io.load_run(write(tmp_path, "run", RUN_TEXT))) == RUN_ROWS
    assert rows(io.load_run(write(tmp_path, "r.trec.gz", gzip.compress(RUN_TEXT.encode())))) == RUN_ROWS
    assert rows(io.load_run(write(tmp_path, "x.data", '{"q1": {"d1": 1}}'), format="json")) == [("q1", "d1", 1.0, 1)]
    assert rows(io.load_qrels(write(tmp_path, "q.ndjson", '{"qid": "q1", "gold_doc_ids": ["d"]}'))) == [("q1", "d", 1.0, 1)]
    assert rows(io.load_qrels(write(tmp_path, "q.txt", QRELS_TEXT))) == QRELS_ROWS
    assert rows(io.load_qrels({"q1": {"d1": 2}})) == [("q1", "d1", 2.0, 1)]
    assert rows(io.load_run({"q1": {"d1": 2}})) == [("q1", "d1", 2.0, 1)]
    frame = pd.DataFrame({"qid": ["q"], "docid": ["d"], "score": [1.0]})
    assert rows(io.load_run(frame)) == [("q", "d", 1.0, 1)]
    run = io.load_run(write(tmp_path, "r2.txt", RUN_TEXT))
    assert io.load_run(run) is run
    dup = write(tmp_path, "dup.txt", "q Q0 d 1 1 t\nq Q0 d 2 0 t\n")
    assert len(io.load_run(dup, duplicates="first")) == 1
    with pytest.raises(TypeError):
        io.load_run(42)
    numpy_values = io.load_run({np.int64(7): {"d1": np.float32(0.5), 3: np.float64(2.0)}})
    assert rows(numpy_values) == [("7", "d1", 0.5, 1), ("7", "3", 2.0, 2)]
    expect_error(io.load_run, {"q1": {"d1": 1.0, "d2": np.bool_(True)}}, line=2, contains=("record 2", "expected a number"))
    expect_error(io.load_qrels, {"q1": {"d1": "x"}}, line=1, contains=("<dict>", "expected a number"))


# ---------------------------------------------------------------------------------------------
# Fuzzing: any bytes give a parse or an InputError, never another exception

_FUZZ_DIR = tempfile.mkdtemp(prefix="conformance-io-fuzz-")
atexit.register(shutil.rmtree, _FUZZ_DIR, True)
_READERS = [io.read_run, io.read_qrels, io.read_run_json, io.read_qrels_json, io.read_run_jsonl, io.read_qrels_jsonl]


def _parse_or_input_error(reader, data: bytes, name: str = "f") -> None:
    path = os.path.join(_FUZZ_DIR, name)
    with open(path, "wb") as f:
        f.write(data)
    try:
        table = reader(path)
    except InputError as e:
        assert e.source == path and str(e).startswith(path)
        assert e.line is None or (isinstance(e.line, int) and e.line >= 1)
        return
    assert isinstance(table, (Run, Qrels)) and len(table) >= 1
    c = table.counts
    assert c.used == len(table) and c.read == c.used + c.ignored and sum(c.reasons.values()) == c.ignored
    assert table.line.min() >= 1 and np.all(np.isfinite(table.score if isinstance(table, Run) else table.label))


_FUZZ_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_FUZZ_SETTINGS
@given(data=st.binary(max_size=300), reader=st.sampled_from(_READERS))
def test_fuzz_random_bytes(data, reader):
    _parse_or_input_error(reader, data)


_TOKENS = st.sampled_from(["q1", "q2", "Q0", "0", "d1", "d#2", "1", "2.5", "-1", "nan", "inf", "1e400", "x",
                           "", "#", "é", "\x00", "\xa0", "1_0", "{", "}", '"qid"', ":", ","])
_SEPS = st.sampled_from([" ", "\t", "  ", "\r", "\x0b", "\x0c", " \t "])
_LINE = st.lists(_TOKENS, min_size=0, max_size=8).flatmap(
    lambda toks: st.lists(_SEPS, min_size=len(toks), max_size=len(toks)).map(
        lambda seps: "".join(t + s for t, s in zip(toks, seps))))


@_FUZZ_SETTINGS
@given(lines=st.lists(_LINE, min_size=0, max_size=12), end=st.sampled_from(["\n", "\r\n"]),
       bom=st.booleans(), reader=st.sampled_from([io.read_run, io.read_qrels]))
def test_fuzz_token_lines(lines, end, bom, reader):
    data = ("\ufeff" if bom else "") + end.join(lines)
    _parse_or_input_error(reader, data.encode("utf-8"))


VALID_RUN_LINES = RUN_TEXT.splitlines() + ["q2 Q0 d3 2 0.5 tag", "# comment", "", "q3\tQ0\td#4\t1\t7\tt"]


@_FUZZ_SETTINGS
@given(st.data())
def test_fuzz_mutated_valid_files(data):
    lines = list(VALID_RUN_LINES)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop_field", "dup_line", "byte", "delete", "swap", "nan", "hash"]))
        line = lines[i]
        if op == "drop_field" and line.split():
            parts = line.split()
            del parts[data.draw(st.integers(0, len(parts) - 1))]
            lines[i] = " ".join(parts)
        elif op == "dup_line":
            lines.insert(i, line)
        elif op == "byte":
            pos = data.draw(st.integers(0, len(line)))
            b = data.draw(st.sampled_from(["\xff", "\r", "#", "\t", " ", "\x00", "é", "\n"]))
            lines[i] = line[:pos] + b + line[pos:]
        elif op == "delete":
            del lines[i]
            if not lines:
                lines = [""]
        elif op == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "nan":
            lines[i] = line.replace("3.5", "nan").replace("0.5", "inf")
        else:
            lines[i] = "#" + line
    text = "\n".join(lines)
    raw = text.encode("utf-8").replace("\xff".encode("utf-8"), b"\xff")  # a real undecodable byte
    gz = data.draw(st.booleans())
    payload = gzip.compress(raw) if gz else raw
    for reader in (io.read_run, io.read_qrels):
        _parse_or_input_error(reader, payload, "m.gz" if gz else "m.txt")
    for duplicates in ("first", "last"):
        _parse_or_input_error(lambda p: io.read_run(p, duplicates=duplicates), payload, "m.gz" if gz else "m.txt")


# ---------------------------------------------------------------------------------------------
# Large inputs: the docid words, the query coding and the duplicate check run in two threads
@pytest.mark.parametrize("duplicates", ["error", "first", "last", "keep", "set", "keep_counted"])
@pytest.mark.parametrize("repeats", [0, 1, 3])
def test_settle_pairs_is_the_readers_own_check(tmp_path, duplicates, repeats):
    """read_run(check_pairs=False) then settle_pairs gives what read_run gives: the same rows,
    ranks and counts, or the same error naming the same two lines."""
    lines = [f"q{q} Q0 d{d} {d} {10 - d} t" for q in (3, 1, 2) for d in range(4)]
    if repeats >= 1:
        lines.append("q1 Q0 d2 7 0.5 t")  # d2 again in q1, listed apart from its first listing
    if repeats >= 3:
        lines += ["q2 Q0 d0 8 0.25 t", "q1 Q0 d2 9 0.75 t"]  # and d2 a third time
    path = write(tmp_path, "r.txt", "\n".join(lines) + "\n")

    def outcome(read):
        try:
            run = read()
        except InputError as e:
            return str(e)
        return rows(run), run.rank.tolist(), run.counts.to_dict()

    direct = outcome(lambda: io.read_run(path, duplicates))
    deferred = io.read_run(path, duplicates, check_pairs=False)
    assert deferred.distinct_pairs is None and len(deferred) == len(lines)
    assert outcome(lambda: io.settle_pairs(deferred, duplicates)) == direct
    if repeats and duplicates == "error":
        assert "listed twice" in direct and "lines 7 and 13" in direct  # q1 d2: line 7
    if not repeats:
        assert io.settle_pairs(io.read_run(path, check_pairs=False)).distinct_pairs is True


@pytest.mark.parametrize("duplicates", ["keep", "set", "keep_counted"])
def test_the_rules_about_repeated_rows_read_every_listing(tmp_path, duplicates):
    """set and keep_counted say how the evaluation counts a repeated listing, so the reader
    keeps every one, as under keep (dropping one would make the rule first or last)."""
    path = write(tmp_path, "r.txt", "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\n")
    listed = [("q", "a", 3.0, 1), ("q", "b", 2.0, 2), ("q", "a", 1.0, 3)]
    assert rows(io.read_run(path, duplicates)) == listed
    assert rows(io.settle_pairs(io.read_run(path, duplicates, check_pairs=False), duplicates)) == listed


# (conformance.parallel); forced here on small files, the outcome must be that of one thread


@pytest.mark.parametrize("dup_at", [None, 1, 5])
def test_reading_in_two_threads_equals_one(tmp_path, monkeypatch, dup_at):
    from conformance import parallel

    lines = [f"q{q} Q0 d{d} {d} {10 - d} t" for q in (3, 1, 2) for d in range(4)]
    if dup_at is not None:  # repeat row dup_at's docid later in its own query
        q, _, d, *_ = lines[dup_at].split()
        where = (dup_at // 4) * 4 + 3
        lines[where] = f"{q} Q0 {d} 9 0.5 t"
    path = write(tmp_path, "r.txt", "\n".join(lines) + "\n")
    outcomes = []
    for split in (True, False):
        monkeypatch.setattr(parallel, "MIN_ROWS", 2 if split else 1 << 62)
        monkeypatch.setattr(parallel, "two_cores", lambda: True)
        if split:
            assert len(parallel.query_halves(np.repeat([0, 1, 2], 4), 3)) == 2
        try:
            run = io.read_run(path)
        except InputError as e:
            outcomes.append(str(e))
        else:
            outcomes.append((rows(run), run.qcode.tolist(), run.doc_words.hash().tolist()))
    assert outcomes[0] == outcomes[1]
    if dup_at is not None:
        assert "listed twice" in outcomes[0] and f"lines {dup_at + 1} and {where + 1}" in outcomes[0]


# ---------------------------------------------------------------------------------------------
# Limits: a line, an input, binary content (conformance.io.limits, conformance.io.text)


def _limits(line=None, size=None):
    from conformance.io.limits import Limits

    return Limits(max_input_bytes=size, max_line_bytes=line)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("long_line", [1, 3, 6])
def test_a_line_over_the_limit_is_named(tmp_path, gz, long_line, monkeypatch):
    from conformance.io import text

    monkeypatch.setattr(text, "_PIECE", 64)  # gzip output in pieces much shorter than a line
    monkeypatch.setattr(text, "_FIRST_PIECE", 16)
    lines = [f"q{i} Q0 d{i} 1 1.0 tag" for i in range(6)]
    lines[long_line - 1] = f"q1 Q0 {'d' * 150} 1 1.0 tag"  # 6 + 150 + 10 = 166 bytes without its \n
    data = ("\n".join(lines) + "\n").encode()
    path = write(tmp_path, "r.txt.gz" if gz else "r.txt", gzip.compress(data) if gz else data)
    err = expect_error(io.read_run, path, line=long_line, contains=("the line is", "over the limit of 100 bytes"),
                       limits=_limits(line=100))
    # the exact length where the whole line was seen; "longer than" where it was refused sooner
    assert "166 bytes long" in str(err) or "longer than 100 bytes" in str(err)
    assert len(io.read_run(path, limits=_limits(line=166))) == 6  # at the limit: read


def test_an_input_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path):
    data = RUN_TEXT.encode() * 100
    path = write(tmp_path, "r.txt", data)
    expect_error(io.read_run, path, line=None, contains=(f"the file ({len(data):,} bytes) is larger than 1 KiB",),
                 limits=_limits(size=1024))
    gz = write(tmp_path, "r.txt.gz", gzip.compress(data))
    expect_error(io.read_run, gz, line=None, contains=("the decompressed input is larger than 1 KiB",),
                 limits=_limits(size=1024))
    assert len(io.read_run(path, limits=_limits(size=len(data)), duplicates="first")) == 3  # the same 3 rows 100 times


@pytest.mark.parametrize("content,fragment,line", [
    (b"\x00" * 100, "a binary file, not text: 100 NUL bytes in its first 100 bytes", None),
    (b"\xff\xfeq\x001\x00", "starts with a UTF-16 byte order mark (ff fe)", 1),
    (b"PK\x03\x04rest", "this is a zip archive", None),
    (b"\x01\x02\x03\x04\x05\x06\x07\x08 q1 Q0 d1 1 1 t\n", "NUL or control bytes", None),
])
def test_binary_content_is_refused_from_its_first_bytes(tmp_path, content, fragment, line):
    path = write(tmp_path, "r.txt", content)
    for reader in (io.read_run, io.read_qrels, io.read_run_jsonl, io.read_qrels_json):
        expect_error(reader, path, line=line, contains=(fragment,))


def test_text_with_a_stray_nul_is_still_text(tmp_path):
    path = write(tmp_path, "r.txt", RUN_TEXT.replace("d2", "d\x002"))
    assert io.read_run(path).doc_ids().tolist() == ["d1", "d\x002", "d1"]


@pytest.mark.parametrize("text,want", [("64M", 64 << 20), ("4G", 4 << 30), ("1.5k", 1536), ("100", 100),
                                       ("2 GiB", 2 << 30), ("0", None), ("none", None)])
def test_sizes(text, want):
    from conformance.io.limits import parse_size

    assert parse_size(text, "--x") == want


@pytest.mark.parametrize("text", ["", "lots", "-1", "1e3", "0.5"])
def test_sizes_refused(text):
    from conformance.io.limits import LimitError, parse_size

    with pytest.raises(LimitError):
        parse_size(text, "--x")
