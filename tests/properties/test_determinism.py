"""The same input gives byte-identical JSON, run after run and whatever PYTHONHASHSEED is.

Each command runs as a separate process under three hash seeds (string hashing changes set and
dict-of-set iteration orders between them, which is what would leak into output). Inputs come
from the adversarial corpus: non-ASCII ids (hash order and byte order differ), ties, a query only
in one file, a label a library refuses (so the JSON holds an error text).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
A = HERE / "adversarial"
SEEDS = ["0", "1", "2718281"]


def _run(args: list[str], seed: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
    env.pop("CONFORMANCE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          timeout=600, env=env, cwd=str(cwd))


EVAL_INPUTS = {
    "unicode": ("qrels_unicode_docids.qrels", "run_unicode_docids.run", []),
    "ties_unspecified": ("good.qrels", "run_all_tied.run", ["--set", "ties=unspecified"]),
    "one_sided_queries": ("qrels_extra_query.qrels", "run_extra_query.run", ["--set", "query_set=qrels"]),
    "duplicates_json": ("qrels_duplicate_same_label.qrels", "run_empty_query.json", []),
}


@pytest.mark.parametrize("name", sorted(EVAL_INPUTS))
def test_eval_json_is_byte_identical_across_runs_and_hash_seeds(name, tmp_path):
    qrels, run, extra = EVAL_INPUTS[name]
    args = ["eval", "--qrels", str(A / qrels), "--run", str(A / run), "--format", "json",
            "--per-query", "-m", "nDCG@10,AP,RR,P@1,P(rel=2)@2,ndcg_cut_3,R@100", *extra]
    outputs = []
    for seed in SEEDS + SEEDS[:1]:  # the first seed twice: run to run, not only seed to seed
        done = _run(args, seed, tmp_path)
        assert done.returncode == 0, done.stderr.decode()
        outputs.append((done.stdout, done.stderr))
    assert len(outputs[0][0]) > 200
    assert all(o == outputs[0] for o in outputs), "eval output differs between runs or hash seeds"


RUN_INPUTS = {  # (qrels, run, entries); few entries: each run imports its libraries twice
    "unicode": ("qrels_unicode_docids.qrels", "run_unicode_docids.run", "trec_eval,sklearn"),
    # XGBoost's refusal text carries a wall clock and a native stack trace: stripped (the runs
    # below are seconds apart, so an unstripped clock would differ)
    "refused_labels": ("qrels_fractional_labels.qrels", "run_extra_query.run", "trec_eval,xgboost"),
}


@pytest.mark.parametrize("name", sorted(RUN_INPUTS))
def test_run_json_is_byte_identical_across_runs_and_hash_seeds(name, tmp_path):
    qrels, run, libs = RUN_INPUTS[name]
    blobs = []
    for i, seed in enumerate(SEEDS[:2] + SEEDS[:1]):
        out = tmp_path / f"out{i}.json"
        done = _run(["run", "--libs", libs, "--qrels", str(A / qrels), "--run",
                     str(A / run), "-m", "nDCG@10,nDCG@3,P@1,RR", "--json", str(out), "--quiet"],
                    seed, tmp_path)
        assert done.returncode in (0, 1), done.stderr.decode()
        blobs.append(out.read_bytes())
    if name == "refused_labels":  # both refuse a fractional label: error texts are in the JSON
        assert b"Expected relevance to be integer" in blobs[0]
        assert b"label must be either 0 or positive integer" in blobs[0]
        assert b"Stack trace" not in blobs[0] and not re.search(rb"\[\d\d:\d\d:\d\d\]", blobs[0])
    assert all(b == blobs[0] for b in blobs), "run JSON differs between runs or hash seeds"
