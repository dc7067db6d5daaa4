"""Hostile input through the real command line, and library faults that must not stop a run.

The corpus is ``tests/adversarial/`` (data files) and its manifest ``cases.json``: for each case
the command (``{A}`` stands for the corpus directory), its kind and its expected outcome:

- ``invalid``: exit status 2 and exactly one stderr line, ``conformance: error: FILE[:LINE]:
  ...PROBLEM...``, nothing on stdout;
- ``usage``: a bad argument (measure, axis, value, profile, library, option): exit status 2 and
  one message holding the problem;
- ``valid``: input in an unusual encoding or layout that changes nothing (BOM, CRLF, tabs and
  spaces, gzip, unicode ids...): the result (computed by hand in the manifest), the row counts,
  and no warning;
- ``unusual``: valid input that drops or reinterprets something: the result, the counts of rows
  read / used / ignored, and a warning saying what happened.

Every case runs in-process through Click's runner; a sample (``SUBPROCESS``) also runs as a real
``python -m conformance.cli`` process, and cases marked ``also_run`` also go through
``conformance run --qrels --run`` (same message for bad input; the library's value for good).
No output may hold "Traceback" or a Python warning.

The library-fault tests use test-only entries (below) whose worker really aborts, segfaults,
exits or sleeps, and one that kills the real trec_eval worker process from outside mid-run:
``conformance run`` must finish and record each fault for that entry and case in its JSON.

``CONFORMANCE_LONG_FUZZ=1`` runs the corpus-seeded reader fuzz with 20,000 examples (300 by
default).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import io as cio
from conformance import libs as L
from conformance.cli import main
from conformance.io.data import Qrels, Run
from conformance.errors import InputError
from conformance.libs.base import Entry, LibraryValues
from conformance.libs.trec_eval import PROFILE as TREC_PROFILE

HERE = Path(__file__).resolve().parents[1]
CORPUS = HERE / "adversarial"
ROOT = HERE.parent
CASES = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))
BY_NAME = {c["name"]: c for c in CASES}
LONG_FUZZ = os.environ.get("CONFORMANCE_LONG_FUZZ") == "1"
FUZZ_EXAMPLES = 20_000 if LONG_FUZZ else 300

# Run as real processes too: one of each family of problem, and every gzip case.
SUBPROCESS = {
    "run_truncated", "spreadsheet_header", "score_nan", "label_inf", "duplicate_conflicting",
    "empty_run", "undecodable_run", "mb_garbage_line", "corrupt_gz", "missing_file", "directory",
    "k_zero", "unknown_axis", "unknown_value", "run_unknown_lib", "bom_crlf", "unicode_ids",
    "mb_docid", "no_common_query", "k_huge", "cr_only", "fractional_labels_refused",
    "cutoff_beyond_int64", "exp_gain_label_1024", "exp_gain_dcg_overflow",
    "gzip_bomb_long_line", "gzip_bomb_nul", "dev_zero", "nul_file", "input_size_env", "long_line_env",
    "json_huge_int_score", "json_lone_surrogate_docid", "jsonl_qid_aliases_differ", "csv_ragged",
    "unknown_format", "json_exact_big_ints", "limit_env_not_a_size",
    "output_is_run", "paper_json_is_run", "two_outputs_one_file", "tol_nan", "timeout_zero",
    "rag_k_zero",
}
_NOT_INPUT = {"cases.json", "README.md"}
PY_WARNING = re.compile(r"\.py:\d+: \w*Warning")


def _args(case: dict) -> list[str]:
    return [a.replace("{A}", str(CORPUS)) for a in case["args"]]


def _cli(args: list[str], env: dict | None = None) -> tuple[int, str, str]:
    result = CliRunner(catch_exceptions=False).invoke(main, args, env=env)
    return result.exit_code, result.stdout, result.stderr


def _subprocess(args: list[str], extra_env: dict | None = None) -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(extra_env or {}))
    done = subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=str(ROOT))
    return done.returncode, done.stdout, done.stderr


def _no_traceback(stdout: str, stderr: str) -> None:
    for text in (stdout, stderr):
        assert "Traceback" not in text, text
        assert not PY_WARNING.search(text), text


def _check(case: dict, code: int, stdout: str, stderr: str) -> None:
    _no_traceback(stdout, stderr)
    assert code == case["exit"], (code, stderr)
    kind = case["kind"]
    if kind in ("invalid", "usage"):
        err = case["error"]
        problem = err["problem"].replace("{A}", str(CORPUS))
        assert problem in stderr, stderr
        assert stdout == ""
        assert len(stderr) < 2000, "the message quotes a clipped line, not the whole of it"
        if kind == "invalid":
            lines = stderr.splitlines()
            assert len(lines) == 1, stderr
            path = str(CORPUS / err["file"]) if err["file"] else str(CORPUS)
            where = f"{path}:{err['line']}: " if err["line"] is not None else f"{path}: "
            assert lines[0].startswith(f"conformance: error: {where}"), (lines[0], where)
        return
    doc = json.loads(stdout)
    for m, want in case["metrics"].items():
        got = doc["metrics"][m]
        if want is None:
            assert got is None, (m, got)
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (m, got, want)
    for what, (read, used, ignored) in case["counts"].items():
        c = doc["counts"][what]
        assert (c["read"], c["used"], c["ignored"]) == (read, used, ignored), (what, c)
        assert sum(c["ignored_reasons"].values()) == c["ignored"]
    if "queries" in case:
        assert doc["counts"]["queries"] == case["queries"]
    warnings = [line for line in stderr.splitlines() if line.startswith("conformance: warning: ")]
    assert len(warnings) == len(stderr.splitlines()), stderr  # JSON mode: stderr holds warnings only
    if kind == "valid":
        assert warnings == [], stderr
    else:
        assert warnings, "unusual input must be said"
        for fragment in case["warnings"]:
            assert any(fragment in w for w in warnings), (fragment, warnings)


def test_corpus_size_and_manifest_cover_every_file():
    files = sorted(p.name for p in CORPUS.iterdir() if p.is_file() and p.name not in _NOT_INPUT)
    assert len(files) >= 40
    named = set()
    for case in CASES:
        for a in case["args"]:
            if a.startswith("{A}/"):
                named.add(a[4:])
    unused = [f for f in files if f not in named]
    assert unused == [], f"corpus files no case uses: {unused}"
    kinds = {c["kind"] for c in CASES}
    assert kinds == {"invalid", "usage", "valid", "unusual"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_in_process(case):
    _check(case, *_cli(_args(case), case.get("env")))


@pytest.mark.parametrize("name", sorted(SUBPROCESS))
def test_case_as_a_process(name):
    _check(BY_NAME[name], *_subprocess(_args(BY_NAME[name]), BY_NAME[name].get("env")))


def _as_run_command(case: dict, json_out: Path) -> list[str]:
    args = _args(case)
    q, r = args[args.index("--qrels") + 1], args[args.index("--run") + 1]
    metrics = list(case.get("metrics", {})) or ["P@1"]
    return ["run", "--libs", "trec_eval", "--qrels", q, "--run", r, "-m", ",".join(metrics),
            "--json", str(json_out)]


RUN_CASES = [c for c in CASES if c.get("also_run")]


@pytest.mark.parametrize("case", RUN_CASES, ids=[c["name"] for c in RUN_CASES])
def test_case_through_conformance_run(case, tmp_path):
    out = tmp_path / "out.json"
    code, stdout, stderr = _cli(_as_run_command(case, out), case.get("env"))
    _no_traceback(stdout, stderr)
    if case["kind"] == "invalid":
        assert code == 2 and stdout == "", stderr
        path = str(CORPUS / case["error"]["file"]) if case["error"]["file"] else str(CORPUS)
        assert stderr.startswith(f"conformance: error: {path}") and stderr.count("\n") == 1, stderr
        assert case["error"]["problem"] in stderr
        assert not out.exists()
        return
    assert code == 0, stderr
    doc = json.loads(out.read_text())
    values = {c["metric"]: c["values"]["trec_eval"] for c in doc["comparisons"]}
    for m, want in case["metrics"].items():
        assert values[m] == (None if want is None else pytest.approx(want, rel=1e-12)), (m, values)
    for fragment in case.get("warnings", []):
        if "no query was scored" not in fragment:  # eval's own sentence about its means
            assert fragment in stderr, (fragment, stderr)


# ---------------------------------------------------------------------------------------------
# The exception boundary: a bug is one line, exit 3; the traceback only on request


def _crashing_script() -> str:
    # A real bug stand-in: the reference evaluation raises an exception no user input explains.
    return ("import conformance.cli as c\n"
            "def broken(*a, **k):\n    raise ZeroDivisionError('float division by zero')\n"
            "import conformance.pipeline as p\np.evaluate_inputs = broken\nc.main()\n")


def test_internal_error_is_one_line_exit_3_no_traceback():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CONFORMANCE_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", _crashing_script(), "eval", "--example"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("conformance: internal error: ZeroDivisionError: float division by zero")
    assert "report" in done.stderr and "CONFORMANCE_DEBUG=1" in done.stderr


def test_internal_error_traceback_under_conformance_debug():
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONFORMANCE_DEBUG="1")
    done = subprocess.run([sys.executable, "-c", _crashing_script(), "eval", "--example"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 3
    assert "Traceback (most recent call last)" in done.stderr and "in broken" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("conformance: internal error: ZeroDivisionError")


# ---------------------------------------------------------------------------------------------
# Library faults: a worker that aborts, segfaults, exits, hangs or is killed costs one result


class FaultyEntry(Entry):
    """A test-only entry: P@k computed by hand in ``_values`` for the one query of the fault
    case, after doing ``fault`` inside the worker process. Its profile is trec_eval's."""

    library = "faulty"
    module = "os"
    distribution = "pytest"
    description = "test-only entry that misbehaves in its worker"

    def __init__(self, fault: str) -> None:
        self.name = f"faulty:{fault}"
        self.fault = fault
        self.library = f"faulty_{fault}"  # one worker each, so one fault cannot mask another

    def supports(self, measure) -> bool:
        return measure.family == "P" and measure.cutoff is not None

    def profile(self, measure):
        return TREC_PROFILE

    def default_profile(self):
        return TREC_PROFILE

    def _evaluate(self, qrels, run, measure) -> LibraryValues:
        if self.fault == "abort":
            os.abort()
        elif self.fault == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif self.fault == "exit":
            os._exit(7)
        elif self.fault == "hang":
            time.sleep(3600)
        elif self.fault == "raise":
            raise ValueError("the library refuses")
        # "none": P@k of the corpus's good pair, by hand (see cases.json): q1 d1 is relevant
        # at rank 1, q2's first document is not
        return LibraryValues(per_query={"q1": 1.0, "q2": 0.0}, mean=0.5)


FAULTS = ["abort", "segfault", "exit", "hang", "raise", "none"]


@pytest.fixture
def with_faulty_entries(monkeypatch):
    real = L.all_entries

    def entries():
        return real() + [FaultyEntry(f) for f in FAULTS]

    monkeypatch.setattr(L, "all_entries", entries)  # conformance.profiles reads it from L
    yield


def test_faulty_library_workers_do_not_stop_the_run(with_faulty_entries, tmp_path):
    out = tmp_path / "out.json"
    names = ",".join(["trec_eval"] + [f"faulty:{f}" for f in FAULTS])
    started = time.monotonic()
    code, stdout, stderr = _cli(["run", "--libs", names, "--qrels", str(CORPUS / "good.qrels"),
                                 "--run", str(CORPUS / "good.run"), "-m", "P@1,RR",
                                 # long enough for a worker to import on a loaded machine
                                 "--lib-timeout", "20", "--json", str(out), "--quiet"])
    took = time.monotonic() - started
    _no_traceback(stdout, stderr)
    assert code in (0, 1), stderr
    assert took < 120, "the hanging worker was stopped by --lib-timeout"
    doc = json.loads(out.read_text())
    (p1,) = [c for c in doc["comparisons"] if c["metric"] == "P@1"]
    errors = p1["errors"]
    assert p1["values"]["trec_eval"] == pytest.approx(0.5, abs=1e-12)  # the real library still ran
    assert p1["values"]["faulty:none"] == pytest.approx(0.5, abs=1e-12)
    assert "library worker died (killed by signal SIGABRT)" in errors["faulty:abort"]
    assert "library worker died (killed by signal SIGSEGV)" in errors["faulty:segfault"]
    assert "library worker died (exit status 7)" in errors["faulty:exit"]
    assert "library did not finish within 20 s (--lib-timeout)" in errors["faulty:hang"]
    assert errors["faulty:raise"] == "ValueError: the library refuses"
    assert set(errors) == {"faulty:abort", "faulty:segfault", "faulty:exit", "faulty:hang", "faulty:raise"}


def test_worker_restarts_after_a_crash_and_the_next_case_is_evaluated():
    from conformance.isolation import worker
    from conformance.runner import IsolatedEntry
    from conformance.measures import parse_measures

    qrels = cio.read_qrels(CORPUS / "good.qrels")
    run = cio.read_run(CORPUS / "good.run")
    (p1,) = parse_measures("P@1")
    crash = IsolatedEntry(FaultyEntry("abort"), timeout=60)
    fine = IsolatedEntry(FaultyEntry("none"), timeout=60)
    fine.inner.library = crash.inner.library  # the same worker serves both, in turn
    assert "SIGABRT" in crash.evaluate(qrels, run, [p1])[p1].error
    assert fine.evaluate(qrels, run, [p1])[p1].per_query == {"q1": 1.0, "q2": 0.0}
    assert worker(crash.inner.library).proc.poll() is None  # a fresh, live worker


class ImportCrashEntry(FaultyEntry):
    """A library whose import kills its process: availability is asked of the worker, so the
    crash costs that library (reported unavailable), not the run."""

    def import_status(self):
        os.abort()


class SlowFirstCaseEntry(FaultyEntry):
    """Correct P@k on the good pair, but slow on the first case it sees in its worker: the other
    libraries finish their cases first."""

    seen = False

    def _evaluate(self, qrels, run, measure) -> LibraryValues:
        if not SlowFirstCaseEntry.seen:
            SlowFirstCaseEntry.seen = True
            time.sleep(1.5)
        return super()._evaluate(qrels, run, measure)


def test_a_library_whose_import_crashes_is_unavailable_and_the_rest_run():
    from conformance.runner import isolate
    from conformance.measures import parse_measures
    from conformance.runner import Subject, run_entries

    qrels = cio.read_qrels(CORPUS / "good.qrels")
    run = cio.read_run(CORPUS / "good.run")
    crash = ImportCrashEntry("none")
    crash.name, crash.library = "faulty:import", "faulty_import"
    entries = isolate([crash, FaultyEntry("none"), L.entry("trec_eval")], timeout=60)
    doc = json.loads(run_entries(entries, [Subject("good", qrels, run, parse_measures("P@1"))]).dumps())
    assert doc["libraries"]["faulty:import"] == {"available": False, "version": None}
    assert doc["libraries"]["faulty:none"]["available"] and doc["libraries"]["trec_eval"]["available"]
    (p1,) = doc["comparisons"]
    assert p1["values"] == {"faulty:none": 0.5, "trec_eval": 0.5}  # hand value: q1 hit, q2 miss


def test_libraries_run_at_the_same_time_but_results_keep_case_order():
    """A library slow on the first case does not reorder anything: every case's comparisons
    come in case order, with the values each library gives on its own, in-process."""
    from conformance.runner import isolate
    from conformance.measures import parse_measures
    from conformance.runner import Subject, run_entries

    qrels = cio.read_qrels(CORPUS / "good.qrels")
    run = cio.read_run(CORPUS / "good.run")
    ms = parse_measures("P@1,P@2,RR")
    subjects = [Subject(f"case{i}", qrels, run, ms) for i in range(4)]
    slow = SlowFirstCaseEntry("none")
    slow.name, slow.library = "faulty:slow", "faulty_slow"
    isolated = run_entries(isolate([slow, L.entry("trec_eval"), L.entry("sklearn")], timeout=60),
                           subjects)
    local = run_entries([FaultyEntry("none"), L.entry("trec_eval"), L.entry("sklearn")], subjects)
    got = [(c["case"], c["metric"], c["values"]) for c in json.loads(isolated.dumps())["comparisons"]]
    want = [(c["case"], c["metric"], c["values"]) for c in json.loads(local.dumps())["comparisons"]]
    assert [g[:2] for g in got] == [(f"case{i}", m) for i in range(4) for m in ("P@1", "P@2", "RR")]
    for (case, metric, values), (_, _, expected) in zip(got, want):
        expected = {("faulty:slow" if k == "faulty:none" else k): v for k, v in expected.items()}
        assert values == expected, (case, metric)
    assert got[0][2]["faulty:slow"] == 0.5 and got[0][2]["trec_eval"] == 0.5


def test_ctrl_c_stops_a_run_at_once_even_while_a_library_hangs():
    """SIGINT while a library's call hangs: run_entries raises KeyboardInterrupt within seconds
    (not after --lib-timeout, here 300 s), and the hanging worker is killed."""
    import threading

    from conformance.isolation import worker
    from conformance.runner import isolate
    from conformance.measures import parse_measures
    from conformance.runner import Subject, run_entries

    qrels = cio.read_qrels(CORPUS / "good.qrels")
    run = cio.read_run(CORPUS / "good.run")
    subjects = [Subject(f"case{i}", qrels, run, parse_measures("P@1")) for i in range(3)]
    entries = isolate([FaultyEntry("hang"), FaultyEntry("none")], timeout=300)
    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))
    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then installs no handler: give this one Python's, as a terminal's would.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_entries(entries, subjects)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 60
    assert worker("faulty_hang").proc is None


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker's child")
def test_killing_the_real_trec_eval_worker_mid_run_is_recorded():
    """The real pytrec_eval worker is killed from outside (SIGKILL, as the OOM killer would)
    while it evaluates a slow case: the run finishes, that case records the death, and the next
    case gets a fresh worker. The slow case is a label of 10^5, for which the trec_eval adapter
    runs pytrec_eval in a child process of the worker for about 10 s (its ndcg gain table grows
    with the square of the largest label); seeing that child is seeing the worker mid-case."""
    import threading

    from conformance.isolation import worker
    from conformance.runner import isolate
    from conformance.measures import parse_measures
    from conformance.runner import Subject, run_entries

    slow_qrels = cio.qrels_from_dict({"q1": {"d1": 100_000, "d2": 0}}, source="slow")
    slow_run = cio.run_from_dict({"q1": {"d1": 2.0, "d2": 1.0}}, source="slow")
    qrels = cio.read_qrels(CORPUS / "good.qrels")
    run = cio.read_run(CORPUS / "good.run")
    ms = parse_measures("nDCG@10,P@1,RR")
    entries = isolate([L.entry("trec_eval")], timeout=300)
    w = worker("trec_eval")
    w.close()
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            proc = w.proc
            if proc is not None and _children(proc.pid):
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
            time.sleep(0.02)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    result = run_entries(entries, [Subject("killed", slow_qrels, slow_run, ms),
                                   Subject("after", qrels, run, ms)], None)
    t.join(1)
    assert killed, "the worker was never seen mid-case"
    doc = json.loads(result.dumps())
    errors = {(c["case"], c["metric"]): c["errors"].get("trec_eval") for c in doc["comparisons"]}
    values = {(c["case"], c["metric"]): c["values"].get("trec_eval") for c in doc["comparisons"]}
    for m in ("nDCG@10", "P@1", "RR"):
        assert "library worker died (killed by signal SIGKILL)" in errors[("killed", m)]
        assert errors[("after", m)] is None
    assert values[("after", "P@1")] == pytest.approx(0.5, abs=1e-12)
    assert values[("after", "RR")] == pytest.approx(0.75, abs=1e-12)
    assert w.proc is not None and w.proc.pid != killed[0]  # a fresh worker served "after"


# ---------------------------------------------------------------------------------------------
# Reader fuzz seeded by the corpus: any mutation of any corpus file parses or raises InputError
# (tests/io/test_io.py fuzzes random bytes, token lines and one valid run; this starts from every
# hostile file, qrels included, and mutates the gzip stream too)


def _plain(name: str) -> bytes:
    data = (CORPUS / name).read_bytes()
    if name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except Exception:  # a corrupt corpus .gz: fuzz its raw bytes
            pass
    return data[:4096] if len(data) > 4096 else data  # the 1 MB lines: their head is enough


_SEEDS = sorted(p.name for p in CORPUS.iterdir() if p.is_file() and p.name not in _NOT_INPUT)
_SEED_BYTES = {n: _plain(n) for n in _SEEDS}
_INSERTS = [b"\x00", b"\xff", b"\xe9", b"\r", b"\n", b"\r\n", b"\t", b" ", b"#", b"\xef\xbb\xbf",
            b"-", b"e", b".", b"9", b"nan", b"inf", b"1e400", b"\xe2\x80\x83", b"{", b'"', b"x" * 300]


def _mutate(data: bytes, draw) -> bytes:
    for _ in range(draw(st.integers(0, 5))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup_line", "splice", "truncate"]))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(pos, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
        elif op == "insert":
            data = data[:pos] + draw(st.sampled_from(_INSERTS)) + data[pos:]
        elif op == "delete":
            data = data[:pos] + data[pos + draw(st.integers(1, 40)):]
        elif op == "dup_line" and data:
            lines = data.split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = b"\n".join(lines)
        elif op == "splice":
            other = _SEED_BYTES[draw(st.sampled_from(_SEEDS))].split(b"\n")
            data = data[:pos] + other[draw(st.integers(0, len(other) - 1))] + b"\n" + data[pos:]
        elif op == "truncate":
            data = data[:pos]
    return data


def _check_reader(reader, path: Path, text: bytes | None) -> None:
    """``text``: the decompressed bytes when known (not for a damaged gzip stream)."""
    try:
        table = reader(path)
    except InputError as e:
        assert e.source == str(path) and str(e).startswith(str(path)), str(e)
        assert e.line is None or e.line >= 1
        # a JSON file's "line" is the record number (the pair's position), not a physical line
        json_record = str(path).endswith(".json")
        assert e.line is None or text is None or json_record or e.line <= text.count(b"\n") + 1, (e.line, str(e))
        return
    assert isinstance(table, (Run, Qrels)) and len(table) >= 1
    c = table.counts
    assert c.used == len(table) and c.read == c.used + c.ignored
    assert sum(c.reasons.values()) == c.ignored
    assert int(table.line.min()) >= 1
    if text is not None and not str(path).endswith((".json", ".jsonl")):
        assert int(table.line.max()) <= text.count(b"\n") + 1
    values = table.score if isinstance(table, Run) else table.label
    assert np.all(np.isfinite(values))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_corpus_files(data, tmp_path_factory):
    seed = data.draw(st.sampled_from(_SEEDS))
    text = _mutate(_SEED_BYTES[seed], data.draw)
    shape = data.draw(st.sampled_from(["trec", "gz", "gz_damaged", "json"] if seed.endswith(".json")
                                      else ["trec", "gz", "gz_damaged"]))
    payload = text
    suffix = ".txt"
    if shape == "json":
        suffix = ".json"
    elif shape.startswith("gz"):
        suffix = ".gz"
        payload = gzip.compress(text, mtime=0)
        if shape == "gz_damaged":
            payload = _mutate(payload, data.draw)
    path = tmp_path_factory.mktemp("fuzz") / f"f{suffix}"
    path.write_bytes(payload)
    if suffix == ".json":
        readers = [cio.read_run_json, cio.read_qrels_json]
    else:
        readers = [cio.read_run, cio.read_qrels, lambda p: cio.read_run(p, duplicates="last")]
    for reader in readers:
        _check_reader(reader, path, None if shape == "gz_damaged" else text)


def test_running_out_of_memory_is_exit_2_with_what_was_needed():
    """A real MemoryError (numpy refusing a 2^62-element array) inside the evaluation: exit 2,
    one line, what the input needed; not "a bug in conformance" (exit 3)."""
    script = ("import numpy as np, conformance.cli as c\n"
              "def huge(*a, **k):\n    return np.empty(2**62, np.uint8)\n"
              "import conformance.pipeline as p\np.evaluate_inputs = huge\nc.main()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script, "eval", "--example"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    # numpy asked for 4 EiB = 4.6e18 bytes = 4.6e9 GB
    assert done.stderr.startswith("conformance: error: not enough memory for this input (about 4611686018.4 GB "
                                  "needed"), done.stderr


# --- every input option is read bounded (issue 25.3) --------------------------------------------

def _bounded(args: list[str]) -> subprocess.CompletedProcess:
    """The command in a process whose address space is capped at 2 GiB: an input read whole
    without a bound (/dev/zero) fails there with MemoryError rather than with our one line."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          cwd=str(ROOT), preexec_fn=cap)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_reported_per_query_from_an_endless_file_fails_naming_it():
    from bundled_example import QRELS, RUN

    r = _bounded(["check-paper", "--qrels", QRELS, "--run", RUN, "--reported", "nDCG@10=0.5",
                  "--reported-per-query", "/dev/zero", "--libs", "trec_eval", "--quiet"])
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("conformance: error: /dev/zero: "), r.stderr
    _no_traceback(r.stdout, r.stderr)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_case_file_that_is_endless_fails_naming_it(tmp_path):
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    r = _bounded(["run", "--cases", str(tmp_path), "--libs", "trec_eval", "--quiet"])
    assert r.returncode == 2, r.stderr
    assert f"conformance: error: {tmp_path / 'zero.json'}: " in r.stderr
    _no_traceback(r.stdout, r.stderr)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_with_no_writer_is_said_and_read_once_one_comes(tmp_path):
    """Issue 25.3: a FIFO given as --run with no writer: one notice line on stderr (after a few
    seconds), and once a writer comes, the run is read and evaluated as a file would be."""
    import select

    from bundled_example import QRELS

    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "eval", "--qrels", QRELS,
                             "--run", str(fifo), "-m", "P@1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 120)
        assert ready, "no notice while waiting for a writer"
        line = proc.stderr.readline()
        assert line == (f"conformance: warning: {fifo}: a FIFO with no writer yet; waiting for "
                        "one to open it (Ctrl-C stops)\n")
        with open(fifo, "w") as w:  # the writer: q1's first document is D101 (label 3)
            w.write("q1 Q0 D101 1 2.0 t\nq1 Q0 D103 2 1.0 t\n")
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    # trec_eval's query set is the run's: q1 alone, its first document relevant
    assert out.split() == ["P@1", "all", "1.0000"], out
