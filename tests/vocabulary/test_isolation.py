"""``conformance.isolation``: persistent workers per key and one-shot calls, in real child
processes (no library involved: the functions below are the children's work).

What is checked: values and exceptions come back; a payload is sent once per worker; a death
is a Fault naming the signal and the next call gets a fresh process; a time-out kills the
child's whole process group; the worker for a key runs that key's calls itself; a Stop ends
calls on other threads and refuses new ones; Ctrl-C in the waiting thread kills the child; no
child outlives its parent, whether the parent exits or is killed with SIGKILL, even a child
started from a thread that has since ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance import isolation
from conformance.isolation import Fault, Payload, Raised

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads process states from Linux /proc")


# --- what the children run (found by the children through PYTHONPATH) --------------------------


def _refuse() -> None:
    raise ValueError("refused by the callee")


class Counted:
    """Counts, in the process that unpickles it, how often it was unpickled."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __setstate__(self, state: dict) -> None:
        global UNPICKLED
        UNPICKLED += 1
        self.__dict__.update(state)


UNPICKLED = 0


def _payload_seen(counted: Counted, extra: int) -> tuple[int, int]:
    return counted.value + extra, UNPICKLED


def _nested_pids(key: str) -> tuple[int, int]:
    return os.getpid(), isolation.worker(key).call(os.getpid)


def _helper_then_hang(pid_file: str) -> None:
    """Start a helper process (as a library may), note its pid, then hang."""
    helper = subprocess.Popen(["sleep", "300"])
    Path(pid_file).write_text(str(helper.pid))
    time.sleep(300)


def _note_pid_and_hang(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(300)


def _one_shot_in_a_worker(pid_file: str) -> None:
    isolation.one_shot(_note_pid_and_hang, pid_file)


# --- helpers ------------------------------------------------------------------------------------


def _gone(pid: int) -> bool:
    """No such process, or a zombie waiting for its (new) parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait_gone(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if not _gone(p)]
        if not alive:
            return []
        time.sleep(0.02)
    return [p for p in pids if not _gone(p)]


def _wait_for_file(path: Path, within: float = 60) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


# --- tests --------------------------------------------------------------------------------------


def test_a_worker_answers_and_keeps_its_process():
    w = isolation.worker("test-basic")
    first = w.call(os.getpid)
    assert first != os.getpid()
    assert w.call(os.getpid) == first == w.pid
    assert w.call(divmod, 17, 5) == (3, 2)


def test_an_exception_comes_back_as_its_type_and_message():
    with pytest.raises(Raised) as raised:
        isolation.worker("test-basic").call(_refuse)
    assert raised.value.text == "ValueError: refused by the callee"
    assert isolation.worker("test-basic").call(os.getpid)  # the worker lives on


def test_a_payload_is_sent_once_per_worker():
    w = isolation.worker("test-payload")
    w.kill()
    one, two = Payload(Counted(1)), Payload(Counted(10))
    # the worker unpickles a payload only when it is sent: once, however many calls use it
    assert [w.call(_payload_seen, 5, payload=one) for _ in range(3)] == [(6, 1)] * 3
    assert w.call(_payload_seen, 5, payload=two) == (15, 2)
    assert w.call(_payload_seen, 0, payload=one) == (1, 3)  # it holds only the last one
    w.kill()  # a fresh worker holds nothing: the payload is sent again
    assert w.call(_payload_seen, 0, payload=one) == (1, 1)


def test_a_death_names_the_signal_and_the_next_call_gets_a_fresh_process():
    w = isolation.worker("test-death")
    before = w.call(os.getpid)
    with pytest.raises(Fault) as fault:
        w.call(os.abort)
    assert (fault.value.kind, fault.value.how) == ("died", "killed by signal SIGABRT")
    assert _gone(before)
    after = w.call(os.getpid)
    assert after != before
    with pytest.raises(Fault) as fault:
        w.call(os._exit, 7)
    assert (fault.value.kind, fault.value.how) == ("died", "exit status 7")
    assert str(fault.value) == "crashed (exit status 7)"


def test_a_worker_killed_between_calls_is_replaced_silently():
    w = isolation.worker("test-killed-idle")
    before = w.call(os.getpid)
    os.kill(before, signal.SIGKILL)
    assert _wait_gone([before], 5) == []
    assert w.call(os.getpid) not in (before, None)


def test_a_time_out_kills_the_child_and_what_it_started(tmp_path):
    w = isolation.worker("test-timeout")
    pid_file = tmp_path / "helper.pid"
    started = time.monotonic()
    with pytest.raises(Fault) as fault:
        w.call(_helper_then_hang, str(pid_file), timeout=2)
    took = time.monotonic() - started
    assert fault.value.kind == "timed_out" and fault.value.seconds == 2
    assert 2 <= took < 30, took
    assert _wait_gone([int(_wait_for_file(pid_file))], 5) == [], "the helper outlived the time-out"
    assert w.proc is None
    assert w.call(os.getpid)  # and the key gets a fresh worker


def test_the_worker_for_a_key_runs_that_keys_calls_itself():
    outer, inner = isolation.worker("test-nested").call(_nested_pids, "test-nested")
    assert outer == inner  # no second process for the same key
    outer, other = isolation.worker("test-nested").call(_nested_pids, "test-nested-other")
    assert outer != other


def test_a_one_shot_runs_in_a_fresh_process_that_ends_with_the_call():
    pids = [isolation.one_shot(os.getpid) for _ in range(2)]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert _wait_gone(pids, 5) == []
    with pytest.raises(Raised, match="ValueError: refused by the callee"):
        isolation.one_shot(_refuse)
    with pytest.raises(Fault) as fault:
        isolation.one_shot(os.kill, 0, signal.SIGSEGV)  # its own process group: itself
    assert fault.value.how == "killed by signal SIGSEGV"
    assert isolation.call(os.getpid) == os.getpid()  # not alone: here
    assert isolation.call(os.getpid, alone=True) != os.getpid()


def test_a_stop_ends_calls_on_other_threads_and_refuses_new_ones(tmp_path):
    stop = isolation.Stop()
    outcome: list = []
    pid_file = tmp_path / "hang.pid"

    def caller() -> None:
        with stop.covering():
            try:
                isolation.worker("test-stop").call(_note_pid_and_hang, str(pid_file))
            except Fault as fault:
                outcome.append(fault.kind)

    t = threading.Thread(target=caller)
    t.start()
    pid = int(_wait_for_file(pid_file))
    started = time.monotonic()
    stop.set()
    t.join(10)
    assert not t.is_alive() and outcome == ["stopped"]
    assert time.monotonic() - started < 2
    assert _wait_gone([pid], 2) == []
    with stop.covering(), pytest.raises(Fault) as fault:
        isolation.worker("test-stop").call(os.getpid)
    assert fault.value.kind == "stopped" and isolation.worker("test-stop").proc is None
    assert isolation.worker("test-stop").call(os.getpid)  # outside the stop: works


def test_ctrl_c_while_waiting_kills_the_child(tmp_path):
    pid_file = tmp_path / "hang.pid"
    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then installs no handler: give this one Python's, as a terminal's would.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt() -> None:
        _wait_for_file(pid_file)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            isolation.worker("test-ctrl-c").call(_note_pid_and_hang, str(pid_file))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _wait_gone([int(pid_file.read_text())], 2) == []
    assert isolation.worker("test-ctrl-c").proc is None


_PARENT = """
import os, sys, threading, time
sys.path.insert(0, {tests!r})
from conformance import isolation
import test_isolation as t

out = {out!r}
pids = []
# started from a thread that then ends: the worker must outlive that thread, not the process
th = threading.Thread(target=lambda: pids.append(isolation.worker("a").call(os.getpid)))
th.start(); th.join()
time.sleep(0.3)
assert isolation.worker("a").call(os.getpid) == pids[0], "the worker died with its thread"
pids.append(isolation.worker("b").call(os.getpid))
with open(out + ".workers", "w") as fh:
    fh.write(" ".join(map(str, pids)))
if sys.argv[1] == "hang":  # a worker busy in a call that runs a hanging one-shot child
    isolation.worker("b").call(t._one_shot_in_a_worker, out + ".grandchild")
"""


def _parent(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "pids"
    script = _PARENT.format(tests=str(Path(__file__).resolve().parent), out=str(out))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", script, mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


def test_no_child_outlives_a_parent_killed_with_sigkill(tmp_path):
    parent, out = _parent(tmp_path, "hang")
    try:
        workers = [int(p) for p in _wait_for_file(Path(f"{out}.workers")).split()]
        grandchild = int(_wait_for_file(Path(f"{out}.grandchild")))
    except AssertionError:
        parent.kill()
        raise AssertionError(parent.communicate())
    pids = [*workers, grandchild]
    assert not any(_gone(p) for p in pids)
    parent.kill()  # SIGKILL: no handler, no atexit, nothing of the parent runs
    parent.wait()
    assert _wait_gone(pids, 2) == [], "a child outlived its SIGKILLed parent"


def test_workers_are_closed_cleanly_at_exit(tmp_path):
    parent, out = _parent(tmp_path, "exit")
    stdout, stderr = parent.communicate(timeout=120)
    assert parent.returncode == 0, stderr
    workers = [int(p) for p in Path(f"{out}.workers").read_text().split()]
    assert _wait_gone(workers, 2) == []
