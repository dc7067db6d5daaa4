"""``conformance run``: its JSON is stable (the same bytes across processes and hash seeds),
sorted, and has the schema of issue 4; the progress bar never reaches a pipe.

The run is a real subprocess with every library, live, over a few corpus cases chosen for
what could make output order or values wobble: tied scores (the libraries' sort orders), a
query missing from the run, empty queries (errors and skips), negative labels, docids compared
byte-wise, near-equal float32 scores, and a duplicate docid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.io.cases import default_directory
from run_screen import matrix_rows, silent_entries

ROOT = Path(__file__).resolve().parents[2]

FEW = ["ties-top-two", "ties-docid-numeric-vs-byte-order", "ties-all-tied",
       "query-missing-from-run", "graded-ten-no-relevant", "negative-labels",
       "scores-float32-near-one", "duplicate-docid-in-run", "one-document-list"]


def _few_cases(tmp_path: Path) -> Path:
    picked = []
    for path in sorted(default_directory().glob("*.json")):
        picked += [c for c in json.loads(path.read_text(encoding="utf-8"))["cases"]
                   if c["name"] in FEW]
    assert sorted(c["name"] for c in picked) == sorted(FEW)
    out = tmp_path / "cases"
    out.mkdir()
    (out / "few.json").write_text(json.dumps({"family": "few", "cases": picked}), encoding="utf-8")
    return out


def _run(cases: Path, out: Path, seed: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONHASHSEED=seed,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", "--libs", "all", "--cases", str(cases),
         "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def test_json_is_byte_identical_across_hash_seeds_and_has_the_schema(tmp_path):
    cases = _few_cases(tmp_path)
    procs = {seed: _run(cases, tmp_path / f"out{seed}.json", seed) for seed in ("0", "4242")}
    done = {seed: (p.communicate(timeout=900), p.returncode) for seed, p in procs.items()}
    for seed, ((stdout, stderr), code) in done.items():
        assert code in (0, 1), (seed, code, stderr)
        assert "Traceback" not in stderr
        # not a TTY: no progress bar on stderr (only the per-entry warnings, if any)
        assert all(line.startswith("conformance: warning:") for line in stderr.splitlines()), stderr
    (out_a, err_a), code_a = done["0"]
    (out_b, err_b), code_b = done["4242"]
    assert code_a == code_b and out_a == out_b
    text_a = (tmp_path / "out0.json").read_bytes()
    assert text_a == (tmp_path / "out4242.json").read_bytes()

    data = json.loads(text_a)
    # sorted keys, the canonical layout: re-dumping gives the same bytes
    assert text_a.decode() == json.dumps(data, sort_keys=True, indent=1, allow_nan=False) + "\n"
    assert set(data) == {"libraries", "comparisons", "summary"}
    from conformance.libs import all_entries

    assert sorted(data["libraries"]) == sorted(e.name for e in all_entries())
    for lib in data["libraries"].values():
        assert set(lib) == {"version", "available"}
        assert isinstance(lib["available"], bool)
        assert lib["version"] is None or isinstance(lib["version"], str)
        assert lib["available"] and lib["version"]  # every peer library is installed here
    assert {c["case"] for c in data["comparisons"]} == set(FEW)
    entries = set(data["libraries"])
    disagreements = explained = unexplained = 0
    for c in data["comparisons"]:
        assert {"case", "metric", "values", "errors", "explanations", "unexplained"} <= set(c)
        assert isinstance(c["case"], str) and isinstance(c["metric"], str)
        assert set(c["values"]) <= entries and set(c["errors"]) <= set(c["values"])
        for entry, v in c["values"].items():
            assert v is None or isinstance(v, (int, float)), (c["case"], entry)
            assert (v is None) >= (entry in c["errors"])  # an error has no value
        for e in c["explanations"]:
            assert len(e["between"]) == 2 and set(e["between"]) <= entries
            assert e["axes"] and all(isinstance(a, str) for a in e["axes"])
        explained += len(c["explanations"])
        unexplained += len(c["unexplained"])
        disagreements += len(c["explanations"]) + sum("between" in u for u in c["unexplained"])
    assert data["summary"] == {"comparisons": len(data["comparisons"]),
                               "disagreements": disagreements, "explained": explained,
                               "unexplained": unexplained}
    assert code_a == (1 if unexplained else 0)
    # the terminal summary ends with the same counts
    s = data["summary"]
    ran = sum(lib["available"] for lib in data["libraries"].values())
    assert out_a.rstrip().endswith(
        f"{s['comparisons']} case x measure comparisons by {ran} entries; {s['disagreements']} "
        f"disagreeing pairs examined, {s['explained']} of them explained by conventions; "
        f"{s['unexplained']} unexplained findings")
    # the answer first: the same line opens the output of several cases
    assert out_a.startswith(out_a.rstrip().rsplit("\n", 1)[-1] + "\n")
    # issue 25: the first screen (50 lines) holds the summary and the class matrix, a line for
    # every entry that ran and a column for every measure family (the bound on the corpus's
    # line count: tests/cli/test_run_corpus.py)
    lines = out_a.splitlines()
    head = lines.index(next(x for x in lines if x.startswith("agreement classes:")))
    families = lines[head].split(":", 1)[1].split()
    key = next(i for i in range(head + 1, len(lines)) if lines[i].startswith("('=':"))
    rows = matrix_rows(lines, head, key)
    assert key <= 50, "the class matrix does not fit the first screen"
    silent = silent_entries(lines, key)
    assert sorted([n for names, _ in rows for n in names] + silent) == sorted(
        n for n, lib in data["libraries"].items() if lib["available"])
    assert all(len(marks) == len(families) for _, marks in rows)
    # the matrix says what the comparisons say: trec_eval is the base class of every family
    # it computes, and an entry that gave no value or error of a family shows '.'
    from conformance.run_text import family_of

    te = next(marks for names, marks in rows if "trec_eval" in names)
    assert set(te) <= {"=", "."} and "=" in te
    answered = {(n, family_of(c["metric"])) for c in data["comparisons"] for n in c["values"]}
    for names, marks in rows:
        for name in names:
            for fam, mark in zip(families, marks):
                assert (mark != ".") == ((name, fam) in answered), (name, fam, mark)
    for name in silent:  # named after the key: no value of any family shown
        assert not any((name, fam) in answered for fam in families), name


# --- entries asked for that cannot run (issues 25.3, 32.5) -------------------------------------

def _blocked_env(tmp_path: Path, module: str) -> dict:
    """A package named ``module`` first on the path whose import raises ImportError: the
    library is genuinely unimportable in this process and in every worker it starts, as
    when it is not installed, with nothing of the library's own code replaced."""
    blocker = tmp_path / "blocked" / module
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('blocked for this test')\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "blocked"), str(ROOT)]))


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    from bundled_example import QRELS, RUN

    return subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--qrels", QRELS,
                           "--run", RUN, "-m", "nDCG@10", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_named_entries_that_cannot_run_are_said_in_the_summary_and_the_exit_status(tmp_path):
    env = _blocked_env(tmp_path, "torchmetrics")
    r = _cli(env, "--libs", "trec_eval,torchmetrics")
    from conformance.cli.common import EXIT, SOME_NAMED_MISSING

    assert r.returncode == SOME_NAMED_MISSING == 4 and 4 in EXIT, r.stderr
    last = r.stdout.rstrip().rsplit("\n", 1)[-1]
    from conformance.api import select_entries

    n = len(select_entries("torchmetrics"))  # the library's entries; only trec_eval ran
    assert "by 1 entry;" in last
    assert f"{n} of {n + 1} entries could not run, {n} of them named in --libs" in last
    assert "every entry agrees" not in r.stdout
    assert "could not run: torchmetrics:" in r.stdout
    assert "Traceback" not in r.stderr


def test_libs_naming_only_unavailable_entries_is_refused(tmp_path):
    env = _blocked_env(tmp_path, "torchmetrics")
    r = _cli(env, "--libs", "torchmetrics")
    assert r.returncode == 2, (r.stdout, r.stderr)
    [line] = [ln for ln in r.stderr.splitlines() if ln.startswith("conformance: error:")]
    assert "--libs torchmetrics: no entry it selects can run here" in line
    assert r.stdout == ""
