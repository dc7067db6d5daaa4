"""``conformance infer`` on the command line: bad input is one line and exit 2; the answer's
exit status says whether some convention set is consistent; --json and --html are written."""

import json
import subprocess
import sys
from pathlib import Path

# the metric functions written for the tests (tests/support, on the tests' path)
SUPPORT = Path(__file__).parents[1] / "support"


def _infer(*args, cwd=SUPPORT):
    return subprocess.run([sys.executable, "-m", "conformance.cli", "infer", *args], cwd=str(cwd),
                          capture_output=True, text=True, timeout=600)


def test_bad_targets_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "two.py").write_text("def f(a, b):\n    return 1\n")
    for target, words in [("no_such_module:f", "cannot import 'no_such_module'"),
                          ("metrics_under_test:no_such", "has no 'no_such'"),
                          ("two:f", "cannot be called with three arguments"),
                          ("nocolon", "expected MODULE:FUNCTION")]:
        done = _infer(target, "--measure", "nDCG@10", cwd=tmp_path if target.startswith("two") else SUPPORT)
        assert done.returncode == 2, (target, done.stderr)
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_a_failing_shell_command_is_bad_input():
    done = _infer("false {qrels} {run}", "--calling", "shell", "--measure", "P@10")
    assert done.returncode == 2 and "exit status 1" in done.stderr and "Traceback" not in done.stderr


def test_a_shell_command_reading_trec_files(tmp_path):
    # P@k over TREC files, in another process: relevant = label >= 1, divided by k
    script = tmp_path / "p_at_k.py"
    script.write_text(
        "import sys\n"
        "qrels, run, k = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
        "rel = {}\n"
        "for line in open(qrels):\n"
        "    q, _, d, v = line.split(); rel[q, d] = float(v)\n"
        "lists = {}\n"
        "for line in open(run):\n"
        "    q, _, d, r, s, _ = line.split(); lists.setdefault(q, []).append((-float(s), d))\n"
        "qs = sorted(lists)\n"
        "vals = [sum(rel.get((q, d), 0) >= 1 for _, d in sorted(lists[q])[:k]) / k for q in qs]\n"
        "print(f'P_{k} all {sum(vals) / len(vals):.4f}')\n")
    out = tmp_path / "shell.json"
    done = _infer(f"{sys.executable} {script} {{qrels}} {{run}} {{k}}", "--calling", "shell",
                  "--measure", "P@10", "--budget", "40", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["consistent_conventions"]
    assert rows and all(r["k_beyond_list"] == "k" for r in rows)  # it divides by k


def test_json_and_html(tmp_path):
    out, page = tmp_path / "infer.json", tmp_path / "infer.html"
    done = _infer("metrics_under_test:buggy_ndcg", "--measure", "nDCG@10", "--json", str(out),
                  "--html", str(page))
    assert done.returncode == 1, done.stderr  # no convention set: a finding
    data = json.loads(out.read_text())
    assert data["consistent_count"] == 0 and data["finding"]["case"]["size"] == 2
    assert data["calls"] == len(data["steps"]) <= 100
    assert "Finding" in page.read_text() and "buggy_ndcg" in page.read_text()
    assert "finding: on this case" in done.stdout
