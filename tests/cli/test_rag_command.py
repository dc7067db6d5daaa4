"""``conformance rag`` and ``conformance correlate`` on the command line: bad records get one
line naming file, line and field with exit status 2; outputs never overwrite inputs; the
example runs; a missing extra names the pip command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conformance" / "rag" / "example"


def cli(*args, env=None, cwd=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          env=e, cwd=cwd, timeout=600)


def jsonl(path: Path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


GOLD = [{"qid": "q1", "query": "abort threshold", "gold_doc_ids": ["d1"], "gold_answer_substring": "three"},
        {"qid": "q2", "query": "bucket retention", "gold_doc_ids": ["d2"], "gold_answer_substring": "30 days"}]


@pytest.mark.parametrize("record, message", [
    ({"qid": "q1", "retrieved": [{"doc_id": "d1", "score": "x", "text": "t"}], "answer": "a"},
     "out.jsonl:2: query 'q1': retrieved[0]: score is the string 'x': expected a number"),
    ({"qid": "q1", "retrieved": [{"score": 1.0, "text": "t"}], "answer": "a"},
     "out.jsonl:2: query 'q1': retrieved[0]: no 'doc_id'"),
    ({"qid": "q1", "retrieved": [{"doc_id": "d1"}], "answer": "a"},
     "out.jsonl:2: query 'q1': retrieved[0]: doc_id 'd1' has no 'text'"),
    ({"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "t"}, {"doc_id": "d1", "text": "t"}], "answer": "a"},
     "out.jsonl:2: query 'q1': retrieved[1]: doc_id 'd1' is also retrieved[0]"),
    ({"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "t"}], "answer": 3},
     "out.jsonl:2: query 'q1': 'answer' is int 3: expected a string"),
    ({"qid": "q1", "retrieved": "d1", "answer": "a"},
     "out.jsonl:2: query 'q1': 'retrieved' is the string 'd1': expected a list"),
    ({"qid": "q2", "retrieved": [], "answer": "a"},
     "out.jsonl:2: query 'q2' has two records, on lines 1 and 2"),
])
def test_bad_output_records(tmp_path, record, message):
    gold = jsonl(tmp_path / "gold.jsonl", GOLD)
    out = jsonl(tmp_path / "out.jsonl", [{"qid": "q2", "retrieved": [], "answer": ""}, record])
    r = cli("rag", "--qrels", gold, "--variant", f"v={out}", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith("conformance: error: ") and message in lines[0].replace(str(tmp_path) + "/", ""), lines[0]


def test_bad_gold_records(tmp_path):
    gold = jsonl(tmp_path / "gold.jsonl", [GOLD[0], {"qid": "q2", "query": 5, "gold_doc_ids": ["d2"]}])
    out = jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [], "answer": ""}])
    r = cli("rag", "--qrels", gold, "--variant", f"v={out}")
    assert r.returncode == 2 and f"{gold}:2: query 'q2': 'query' is int 5" in r.stderr
    gold = jsonl(tmp_path / "gold2.jsonl", [{"qid": "q1", "query": "x", "gold_doc_ids": "d1"}])
    r = cli("rag", "--qrels", gold, "--variant", f"v={out}")
    assert r.returncode == 2 and f"{gold}:1:" in r.stderr and "gold_doc_ids" in r.stderr  # the io reader's error


def test_an_output_never_overwrites_an_input(tmp_path):
    gold = jsonl(tmp_path / "gold.jsonl", GOLD)
    out = jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [], "answer": ""}])
    before = Path(out).read_text()
    r = cli("rag", "--qrels", gold, "--variant", f"v={out}", "--json", out)
    assert r.returncode == 2 and f"--json {out}: that is the input {out}; an output never overwrites an input" in r.stderr
    assert Path(out).read_text() == before


def test_json_is_identical_for_identical_input(tmp_path):
    gold = jsonl(tmp_path / "gold.jsonl", GOLD)
    out = jsonl(tmp_path / "out.jsonl", [
        {"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "Abort after three parts."}],
         "answer": "The abort threshold is three parts."},
        {"qid": "q2", "retrieved": [{"doc_id": "d9", "text": "Other."}], "answer": "Other."}])
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for p in (a, b):
        r = cli("rag", "--qrels", gold, "--variant", f"v={out}", "--json", str(p), "--correlate", "--bootstrap", "50")
        assert r.returncode == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())
    assert doc["format"] == "conformance-rag/1"
    assert [row["diagnosis"] for row in doc["per_query"]] == ["ok", "not_retrieved"]


def test_correlate_reads_a_rag_json_and_runs(tmp_path):
    gold = jsonl(tmp_path / "gold.jsonl", GOLD)
    out = jsonl(tmp_path / "out.jsonl", [
        {"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "a"}, {"doc_id": "d3", "text": "b"}], "answer": "x"},
        {"qid": "q2", "retrieved": [{"doc_id": "d9", "text": "c"}, {"doc_id": "d2", "text": "d"}], "answer": "y"}])
    rag_json = tmp_path / "rag.json"
    assert cli("rag", "--qrels", gold, "--variant", f"v={out}", "--json", str(rag_json)).returncode == 0
    quality = tmp_path / "likert.txt"
    quality.write_text("q1 5\nq2 1\n")
    r = cli("correlate", "--metrics-from", str(rag_json), "--quality", str(quality), "--bootstrap", "50")
    assert r.returncode == 0, r.stderr
    assert "tracks answer quality best" in r.stdout
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d3 2 1.0 t\nq2 Q0 d9 1 2.0 t\nq2 Q0 d2 2 1.0 t\n")
    r = cli("correlate", "--metrics-from", str(run), "--qrels", gold, "--quality", str(quality), "--bootstrap", "50")
    assert r.returncode == 0, r.stderr
    assert "tracks answer quality best" in r.stdout
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 five\n")
    r = cli("correlate", "--metrics-from", str(rag_json), "--quality", str(bad))
    assert r.returncode == 2 and f"{bad}:1: the score 'five' is not a number" in r.stderr


def test_a_missing_extra_names_the_pip_command(tmp_path):
    """With sentence_transformers made unimportable (a package of that name on the path that
    raises ImportError), the embedding judge is refused with the install command, exit 2."""
    blocker = tmp_path / "blocked" / "sentence_transformers"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('blocked for this test')\n")
    gold = jsonl(tmp_path / "gold.jsonl", GOLD)
    out = jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [], "answer": ""}])
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "blocked"), str(ROOT)])}
    r = cli("rag", "--qrels", gold, "--variant", f"v={out}", "--judge", "embedding", env=env)
    assert r.returncode == 2, r.stderr
    assert "the embedding judge needs the rag extra" in r.stderr and 'pip install -e ".[rag]"' in r.stderr
    assert "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """`conformance rag --example --precomputed` once, with --html and --json, for the tests
    that read what it printed and wrote (one run takes a minute or more)."""
    out = tmp_path_factory.mktemp("rag-example")
    r = cli("rag", "--example", "--precomputed", "--html", str(out / "rag.html"),
            "--json", str(out / "rag.json"))
    return r, out


def test_the_example_runs_from_the_committed_outputs(example_run):
    r, out = example_run
    assert r.returncode == 0, r.stderr
    assert "committed variant outputs" in r.stderr
    assert r.stdout.startswith("conformance rag: 40 gold queries")
    for variant in ("bm25", "dense", "hybrid_rerank"):
        assert variant in r.stdout.splitlines()[3]
    assert "which retrieval metric tracks answer quality" in r.stdout
    assert (out / "rag.html").stat().st_size > 50_000
    doc = json.loads((out / "rag.json").read_text())
    assert sorted(doc["table"]) == ["all", "literal", "multi_topic", "paraphrased"]
    assert doc["settings"]["context_k"] == 3


def test_the_committed_example_table_is_what_the_command_prints(example_run):
    """reports/rag-example.txt was written by `conformance rag --example --precomputed
    --compare-judge embedding` (README): the retrieval rows, which need no extra, are
    reproduced here from the committed outputs."""
    r, _ = example_run
    assert r.returncode == 0, r.stderr
    committed = (ROOT / "reports" / "rag-example.txt").read_text(encoding="utf-8").splitlines()
    printed = r.stdout.splitlines()
    table = [line for line in committed if line.split(" ")[0] in ("P@1", "nDCG@10", "MRR", "AP", "correctness")]
    assert table and all(line in printed for line in table), table
