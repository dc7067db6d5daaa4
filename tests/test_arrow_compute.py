"""``conformance.arrow_compute`` calls Arrow's kernels without importing ``pyarrow.compute``:
each function must give what its ``pyarrow.compute`` namesake gives, and evaluating TREC files
must import neither ``pyarrow.compute`` (~50 ms) nor pandas (~0.5 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conformance import arrow_compute as ac

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


def test_eval_imports_neither_pyarrow_compute_nor_pandas(tmp_path):
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("".join(f"q{q} Q0 d{d} {d} {10 - d} t\n" for q in range(3) for d in range(5)))
    qrels.write_text("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(3) for d in range(0, 7, 2)))
    code = (
        "import sys\n"
        "from conformance.cli import main\n"
        f"main(['eval', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '--format', 'json',"
        " '-m', 'nDCG@10,AP,RR,P@10,R@100', '--per-query'], standalone_mode=False)\n"
        "print(sorted(m for m in ('pyarrow.compute', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
