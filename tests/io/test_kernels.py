"""``conformance.io.kernels`` calls Arrow's kernels without importing ``pyarrow.compute``:
each function must give what its ``pyarrow.compute`` namesake gives, and evaluating TREC files
must import neither ``pyarrow.compute`` (~50 ms) nor pandas (~0.5 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.io import kernels as ac
from conformance.io.columnar import arrow_numpy, arrow_strings, numpy_arrow

STRINGS = pa.array(["q1", "", "#c", "é", "q10", "  a b ", "q1", None, "3.5", "x"])
NUMBERS = pa.array([3, 1, None, 2, 3], pa.int64())
FLOATS = pa.array(["1", "2.5", "-3e2", ".5"])

CASES = [
    ("binary_length", (STRINGS,), {}),
    ("equal", (pc.binary_length(STRINGS), 0), {}),
    ("not_equal", (STRINGS.slice(1), STRINGS.slice(0, 9)), {}),
    ("starts_with", (STRINGS, "#"), {}),
    ("match_substring_regex", (STRINGS, r"^q[0-9]+$"), {}),
    ("ascii_trim_whitespace", (STRINGS,), {}),
    ("ascii_split_whitespace", (STRINGS,), {}),
    ("list_value_length", (pc.ascii_split_whitespace(STRINGS),), {}),
    ("if_else", (pa.array([True, False, True, False]), FLOATS, "nan"), {}),
    ("cast", (FLOATS, pa.float64()), {}),
    ("fill_null", (NUMBERS, -1), {}),
    ("is_null", (STRINGS,), {}),
    ("min", (NUMBERS,), {}),
    ("max", (NUMBERS,), {}),
    ("any", (pa.array([False, None, True]),), {}),
    ("count_distinct", (STRINGS,), {}),
    ("unique", (STRINGS,), {}),
    ("indices_nonzero", (pa.array([True, False, None, True]),), {}),
    ("dictionary_encode", (STRINGS,), {}),
    ("sort_indices", (STRINGS,), {}),
    ("index_in", (STRINGS,), {"value_set": pa.array(["q1", "x", "é"])}),
    ("take", (STRINGS, pa.array([2, 0, 0])), {}),
    ("filter", (STRINGS, pa.array([True, False] * 5)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_same_as_pyarrow_compute(name, args, kwargs):
    assert getattr(ac, name)(*args, **kwargs).equals(getattr(pc, name)(*args, **kwargs))


def test_ascii_rpad_pads_bytes():
    padded = ac.ascii_rpad(pa.array(["é", "ab"]), 8, padding="\x00")
    assert padded.equals(pc.ascii_rpad(pa.array(["é", "ab"]), 8, padding="\x00"))
    assert pc.binary_length(padded).to_pylist() == [8, 8]


def _lines(queries: int, docs: int, docid=lambda d: f"d{d}", rank=lambda d: d) -> str:
    return "".join(f"q{q} Q0 {docid(d)} {rank(d)} {docs - d} t\n" for q in range(queries) for d in range(docs))


# Each input takes another path through the readers and the reference: the fast reader, the
# general one (a comment, CR LF line ends, tabs beside spaces), the exact coding (a repeated
# docid, a repeated judgment, docids too long for the word form, a large run with a repeat),
# a rank column that is not all numbers, the docid tie order, the tie range.
IMPORT_CASES = {
    "fast": (_lines(3, 5), "", []),
    "comment": ("# a comment\n" + _lines(3, 5), "", []),
    "crlf": (_lines(3, 5).replace("\n", "\r\n"), "", []),
    "tabs and spaces": (_lines(3, 5).replace(" Q0 ", "\tQ0 ", 2), "", []),
    "repeated docid": (_lines(3, 5) + "q1 Q0 d2 9 0.5 t\n", "", ["--set", "duplicates=first"]),
    "repeated judgment": (_lines(3, 5), "q1 0 d2 2\n", []),
    "long docids": (_lines(3, 5, docid=lambda d: f"d{d}" + "x" * 200), "", ["--set", "ties=docid_asc"]),
    "large with a repeat": (_lines(2, 40_000) + "q1 Q0 d7 9 0.5 t\n", "", ["--set", "duplicates=last"]),
    "rank not a number": (_lines(3, 5, rank=lambda d: "-" if d == 2 else d), "", []),
    "tie range": (_lines(3, 5), "", ["--set", "ties=unspecified"]),
}


@pytest.mark.parametrize("case", IMPORT_CASES)
def test_eval_imports_neither_pyarrow_compute_nor_pandas(tmp_path, case):
    run_text, more_qrels, options = IMPORT_CASES[case]
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_bytes(run_text.encode())
    qrels.write_text("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(3) for d in range(0, 7, 2)) + more_qrels)
    code = (
        "import sys\n"
        "from conformance.cli import main\n"
        f"main(['eval', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '--format', 'json',"
        f" '-m', 'nDCG@10,AP,RR,P@10,R@100', '--per-query', *{options!r}], standalone_mode=False)\n"
        "print(sorted(m for m in ('pyarrow.compute', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


# The conversions between numpy, Python strings and Arrow that replace pa.array and to_numpy
# (which import pandas), against those two.

@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)), max_size=40),
       start=st.integers(0, 5), fill=st.integers(-9, 9))
def test_arrow_numpy_numbers_with_nulls_filled(values, start, fill):
    arr = pa.array(values, pa.int32()).slice(start)
    expected = [fill if v is None else v for v in arr.to_pylist()]
    assert arrow_numpy(arr, fill=fill).tolist() == expected
    assert arrow_numpy(pa.chunked_array([arr, arr]), fill=fill).tolist() == expected * 2


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.booleans(), max_size=40), start=st.integers(0, 11))
def test_arrow_numpy_booleans(values, start):
    arr = pa.array(values, pa.bool_()).slice(start)
    got = arrow_numpy(arr)
    assert got.dtype == np.bool_ and got.tolist() == arr.to_pylist()
    assert numpy_arrow(got).equals(arr)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.text(max_size=6), max_size=20))
def test_arrow_strings_and_numbers_from_python(values):
    assert arrow_strings(values).equals(pa.array(values, pa.string()))
    numbers = np.arange(len(values), dtype=np.int64) * 3 - 7
    assert numpy_arrow(numbers).equals(pa.array(numbers)) and numpy_arrow(numbers / 2).equals(pa.array(numbers / 2))


def test_eval_of_json_inputs_imports_no_pandas(tmp_path):
    """The JSON and JSONL readers build their Arrow columns without pa.array (pandas, ~0.6 s)."""
    import json

    run = tmp_path / "run.json"
    qrels = tmp_path / "qrels.jsonl"
    run.write_text(json.dumps({f"q{q}": {f"d{d}": 10 - d for d in range(5)} for q in range(3)}))
    qrels.write_text("".join(json.dumps({"qid": f"q{q}", "gold_doc_ids": ["d0", "d2"],
                                         "graded_relevance": {"d0": 2, "dé": 1}}) + "\n" for q in range(3)))
    code = (
        "import sys\n"
        "from conformance.cli import main\n"
        f"main(['eval', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '--format', 'json',"
        " '-m', 'nDCG@10,AP,RR'], standalone_mode=False)\n"
        "print(sorted(m for m in ('pyarrow.compute', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
