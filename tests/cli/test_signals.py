"""Stop signals, closed outputs and whole files, through the real command line.

SIGTERM, SIGHUP and SIGINT (Ctrl-C) stop ``conformance run`` while real libraries work (a
trec_eval case slow enough to keep a one-shot child of the worker busy for seconds): the exit
status is 128 + the signal, the command stops within 2 s, no library worker or child of one
survives, and the ``--json`` file given is still the previous one, with no temporary file
beside it. ``conformance eval`` stops as quickly while it waits for its input; when the main
thread is stuck in a native call, the watchdog still ends the process within the deadline. A
signal inherited as ignored (``nohup``) stays ignored. A reader that goes away (``| head``)
ends the command quietly with 141; a closed stdout (``>&-``) discards what it would print.

Each command runs under a small wrapper that sets the signal dispositions a terminal gives
(a process started in the background by a non-interactive shell inherits SIGINT ignored, one
started under ``nohup`` SIGHUP) and then execs the real command, so the command itself starts
as a user's would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import outputs
from conformance.cli import STOP_DEADLINE

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
CORPUS = HERE / "adversarial"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process tree from Linux /proc")

# a terminal gives each stop signal its default disposition; the test run itself may have
# inherited one as ignored (started under nohup, or in the background of a script)
_EXEC = """
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_DFL)
if sys.argv[1] == "nohup":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _start(args: list[str], *, mode: str = "terminal", cwd: Path | None = None,
           stdout=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _EXEC, mode, "-m", "conformance.cli", *args],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, env=_env(), cwd=cwd)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _descendants(root: int) -> dict[int, int]:
    """pid -> depth below ``root`` of every living descendant."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None and st[0] not in ("Z", "X"):
                children.setdefault(st[1], []).append(int(entry.name))
    out, frontier, depth = {}, [root], 0
    while frontier:
        depth += 1
        frontier = [c for p in frontier for c in children.get(p, [])]
        out.update({c: depth for c in frontier})
    return out


def _gone(pid: int) -> bool:
    st = _stat(pid)
    return st is None or st[0] in ("Z", "X")


def _slow_case(folder: Path) -> tuple[Path, Path]:
    # a label of 10^5: trec_eval's ndcg gain table takes ~10 s to build, so the adapters run
    # pytrec_eval in a one-shot child of their worker for that long
    qrels, run = folder / "slow.qrels", folder / "slow.run"
    qrels.write_text("q1 0 d1 100000\nq1 0 d2 0\n")
    run.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    return qrels, run


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_signal_stops_run_at_once_and_leaves_nothing_behind(tmp_path, sig):
    data = tmp_path / "data"
    data.mkdir()
    qrels, run = _slow_case(data)
    outdir = tmp_path / "out"
    outdir.mkdir()
    previous = outdir / "out.json"
    previous.write_text("the previous report\n")
    proc = _start(["run", "--libs", "trec_eval,ir_measures,lightgbm", "--qrels", str(qrels),
                   "--run", str(run), "--json", str(previous), "--html", str(outdir / "r.html")])
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 240
    # wait until the libraries are at work: a worker's one-shot child (depth 3: the command
    # is depth 1 below the wrapper's pid, which exec made the command itself)
    while time.monotonic() < deadline and proc.poll() is None:
        tree = _descendants(proc.pid)
        seen.update(tree)
        if any(depth >= 2 for depth in tree.values()) and len(tree) >= 4:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    assert any(d >= 2 for d in seen.values()), f"no worker's child was ever seen: {seen}"
    time.sleep(0.2)
    seen.update(_descendants(proc.pid))
    started = time.monotonic()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 128 + sig, (proc.returncode, stderr)
    # the orderly stop, not the watchdog (which would end it at STOP_DEADLINE): ~0.1 s here
    assert took < STOP_DEADLINE < 2.0, f"stopping took {took:.2f} s"
    assert "Traceback" not in stderr and stderr.endswith(f"conformance: stopped by {sig.name}\n")
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline and not all(_gone(p) for p in seen):
        time.sleep(0.02)
    assert [p for p in seen if not _gone(p)] == [], "a worker or a worker's child survived"
    assert previous.read_text() == "the previous report\n"
    assert sorted(p.name for p in outdir.iterdir()) == ["out.json"]  # no partial file


def _fifo_eval(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, int]:
    """``eval`` reading a run from a pipe that has sent one line and stays open."""
    qrels, _ = _slow_case(tmp_path)
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    proc = _start(["eval", "--qrels", str(qrels), "--run", str(fifo)], mode=mode)
    writer = os.open(fifo, os.O_WRONLY)  # returns once the command has opened it to read
    os.write(writer, b"q1 Q0 d1 1 2.0 r\n")
    time.sleep(0.5)
    return proc, writer


def test_eval_stops_at_once_while_it_waits_for_input(tmp_path):
    proc, writer = _fifo_eval(tmp_path, "terminal")
    try:
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        os.close(writer)
    assert proc.returncode == 143, stderr
    assert took < STOP_DEADLINE, took
    assert stdout == "" and stderr.endswith("conformance: stopped by SIGTERM\n"), stderr


def test_a_signal_inherited_as_ignored_stays_ignored(tmp_path):
    proc, writer = _fifo_eval(tmp_path, "nohup")
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert proc.poll() is None, "nohup's SIGHUP stopped the command"
    os.write(writer, b"q1 Q0 d2 2 1.0 r\n")
    os.close(writer)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "P@10" in stdout and "Traceback" not in stderr


_STUCK = """
import ctypes, signal, sys, threading, time
sys.argv[1:] = ["stuck"]
import click
import conformance.cli as cli

@cli.main.command("stuck")
def stuck():
    # the main thread in a native call that the signal does not interrupt (SIGTERM blocked in
    # it: the kernel hands the signal to another thread, and Python runs its handler only
    # when the main thread is back): only the watchdog can end the process in time
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    click.echo("ready", err=True)
    ctypes.CDLL(None).sleep(20)
    click.echo("the watchdog did not end the process", err=True)

cli.console()
"""


def test_the_watchdog_ends_a_process_stuck_in_a_native_call():
    proc = subprocess.Popen([sys.executable, "-c", _STUCK], stderr=subprocess.PIPE, text=True,
                            env=_env())
    assert proc.stderr.readline() == "ready\n"
    time.sleep(0.2)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 143, stderr
    assert STOP_DEADLINE <= took < 2.0, took
    assert stderr == "conformance: stopped by SIGTERM\n"


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    # eval: the reader closes its end before anything is written
    proc = _start(["eval", "--example", "-q", "--quiet"])
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 141 and stderr == "", stderr

    # run: the files are written whole before the summary meets the closed pipe
    out = tmp_path / "out.json"
    proc = _start(["run", "--libs", "trec_eval", "--qrels", str(CORPUS / "good.qrels"), "--run",
                   str(CORPUS / "good.run"), "--json", str(out), "--quiet"])
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 141 and stderr == "", stderr
    assert json.loads(out.read_text())["summary"]["comparisons"] > 0


def test_a_closed_stdout_discards_what_would_be_printed(tmp_path):
    out = tmp_path / "out.json"
    for args in (["eval", "--example"],
                 ["run", "--libs", "trec_eval", "--qrels", str(CORPUS / "good.qrels"), "--run",
                  str(CORPUS / "good.run"), "--json", str(out), "--quiet"]):
        command = " ".join(f"'{a}'" for a in [sys.executable, "-m", "conformance.cli", *args])
        done = subprocess.run(["sh", "-c", f"exec {command} >&-"], capture_output=True,
                              text=True, timeout=300, env=_env())
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert json.loads(out.read_text())["summary"]["comparisons"] > 0


# --- outputs.write_text: whole or not at all ----------------------------------------------------


def test_an_interrupted_write_leaves_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("previous")
    target.chmod(0o640)

    def interrupted(fd):
        raise KeyboardInterrupt  # Ctrl-C after the text went to the temporary file

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_text(target, "new " * 100_000)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    monkeypatch.undo()
    outputs.write_text(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions


def test_a_write_error_names_the_target_and_a_link_is_written_through(tmp_path):
    missing = tmp_path / "no such folder" / "out.json"
    with pytest.raises(OSError) as error:
        outputs.write_text(missing, "x")
    assert error.value.filename == str(missing)
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    outputs.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    outputs.write_text(missing, "made", make_parents=True)
    assert missing.read_text() == "made"
