"""Library entries run in worker processes, so a library that aborts, segfaults or hangs costs one
result, not the run.

``conformance run`` wraps every entry in an :class:`IsolatedEntry`. Its ``evaluate`` pickles
``(entry, measures)`` to a persistent worker process (one per library, started on first use, so
each library is imported once) and reads back what ``entry.evaluate`` returned there. The case's
``(qrels, run)`` is pickled once per case and sent to a worker only when it does not hold it
already (entries of one library share their worker), so a large run is not copied per entry. Two faults become results instead of crashes:

- the worker dies (os.abort, SIGSEGV, ``sys.exit`` inside the library, killed from outside):
  every measure of that entry on that case gets the error ``library worker died (killed by
  signal SIGABRT) ...`` or ``(exit status N)``; the next case starts a fresh worker;
- the worker does not answer within ``timeout`` seconds (``--lib-timeout``): its whole process
  group is killed (grandchildren too: LightGBM's own workers, trec_eval's isolated child) and
  every measure gets ``library did not finish within T s``.

An exception raised inside the library is not a fault: ``Entry.evaluate`` records it per measure
in the worker, as it does in-process. An exception in the adapter around it (the entry's own
``evaluate`` raising) comes back as that entry's error for the case.

Error texts hold no pid, address or time (``stable_error`` strips XGBoost's clock prefix and
native stack trace), so the JSON report stays byte-identical across runs.

The worker finds the package (and any module defining a custom entry, such as a test's) through
the parent's ``sys.path``, passed as ``PYTHONPATH``. Its stdout is the reply pipe only: the
library's own prints (C-level too) go to stderr, which is discarded unless
``CONFORMANCE_DEBUG=1``. A worker reads requests until its stdin closes, so it ends when the
parent does, however the parent ends.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import threading
from typing import Any

from conformance.errors import stable_error
from conformance.libs.base import Entry, LibraryValues

DEFAULT_TIMEOUT = 300.0  # seconds per entry and case; the corpus's slowest call takes ~2 s


class WorkerFault(Exception):
    """The worker died or timed out; ``str`` is the text recorded for the entry and case."""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


class Worker:
    """One persistent process serving ``entry.evaluate`` requests, one at a time."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.proc: subprocess.Popen | None = None
        self.lock = threading.RLock()
        self.token: int | None = None  # the case data the live worker holds

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def _start(self) -> None:
        env = dict(os.environ)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        debug = os.environ.get("CONFORMANCE_DEBUG") == "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from conformance.libs._worker import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL,
            env=env, start_new_session=True,  # its own process group: a timeout kills it all
        )

    def call(self, request: Any, timeout: float | None) -> Any:
        """Send one request and return the reply; raise WorkerFault when the worker dies or
        overruns ``timeout`` (None or 0: no limit)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            proc = self.proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
            reply: list[Any] = []

            def exchange() -> None:
                # in a thread so the parent can stop waiting; a dead worker ends it with EOF
                try:
                    proc.stdin.write(len(payload).to_bytes(8, "little"))
                    proc.stdin.write(payload)
                    proc.stdin.flush()
                    reply.append(pickle.load(proc.stdout))
                except Exception:  # EOF, a broken pipe, a torn reply: the worker is gone
                    pass

            t = threading.Thread(target=exchange, daemon=True)
            t.start()
            t.join(timeout if timeout else None)
            if t.is_alive():
                self._kill(proc)  # the reader thread then sees EOF and ends
                t.join()
                self._close_pipes(proc)
                raise WorkerFault(f"library did not finish within {timeout:g} s (--lib-timeout); "
                                  "its worker process was stopped")
            if reply:
                return reply[0]
            code = proc.wait()
            self.proc = None
            try:  # what the dead worker started (trec_eval's child, LightGBM's worker) goes too
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._close_pipes(proc)
            how = f"killed by signal {_signal_name(-code)}" if code < 0 else f"exit status {code}"
            raise WorkerFault(f"library worker died ({how}) while evaluating this case")

    def _kill(self, proc: subprocess.Popen) -> None:
        self.proc = None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()

    @staticmethod
    def _close_pipes(proc: subprocess.Popen) -> None:
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except Exception:  # a broken pipe while flushing: nothing left to tell
                pass

    def kill(self) -> None:
        """Kill the worker now, whoever is waiting on it (that call then reports it died)."""
        proc = self.proc
        if proc is not None:
            self._kill(proc)

    def close(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            self.proc = None
            return
        try:
            proc.stdin.close()  # EOF: the worker's loop ends
            proc.wait(timeout=5)
        except Exception:
            self._kill(proc)
        self._close_pipes(proc)
        self.proc = None


_WORKERS: dict[str, Worker] = {}
# Cases pickled once for all entries: [qrels, run, token, pickled (qrels, run)], most recent
# last. Libraries run on threads of their own and may be at different cases, hence a few slots;
# each holds its qrels and run, so an identity check cannot match a new object at a reused id.
_PICKLED: list[list] = []
_PICKLED_SLOTS = 16
_TOKENS = iter(range(1, 1 << 62))
_NO_DATA = "RuntimeError: worker protocol: the case data was not sent"


_PICKLED_LOCK = threading.Lock()


def _payload(qrels, run) -> tuple[int, bytes]:
    with _PICKLED_LOCK:
        for slot in _PICKLED:
            if slot[0] is qrels and slot[1] is run:
                return slot[2], slot[3]
        slot = [qrels, run, next(_TOKENS), pickle.dumps((qrels, run), protocol=pickle.HIGHEST_PROTOCOL)]
        _PICKLED.append(slot)
        del _PICKLED[:-_PICKLED_SLOTS]
        return slot[2], slot[3]


def worker(key: str) -> Worker:
    if key not in _WORKERS:
        _WORKERS[key] = Worker(key)
    return _WORKERS[key]


@atexit.register
def close_all() -> None:
    for w in list(_WORKERS.values()):
        w.close()


class IsolatedEntry(Entry):
    """An entry whose ``evaluate`` runs in its library's worker process, with a time limit.

    Everything else (name, profile, supports, tolerance, availability) is the wrapped entry's.
    """

    def __init__(self, inner: Entry, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.inner, self.timeout = inner, timeout
        self._available: bool | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # Entry's class attributes would shadow __getattr__: forward them explicitly.
    name = property(lambda self: self.inner.name)
    library = property(lambda self: self.inner.library)
    module = property(lambda self: self.inner.module)
    distribution = property(lambda self: self.inner.distribution)
    tolerance = property(lambda self: self.inner.tolerance)
    description = property(lambda self: self.inner.description)

    def tolerance_for(self, measure) -> float:
        return self.inner.tolerance_for(measure)

    @property
    def worker_key(self) -> str:
        """The worker process this entry runs in: one per library, shared by its entries."""
        return self.inner.library or self.inner.name

    def stop_worker(self) -> None:
        """Kill this entry's worker process, if one is running (the run is being stopped)."""
        w = _WORKERS.get(self.worker_key)
        if w is not None:
            w.kill()

    def available(self) -> bool:
        """Whether the library imports, asked of its worker: the library is imported there (once,
        and where it is needed), never in this process, and a library whose import crashes
        its process is unavailable rather than fatal."""
        if self._available is None:
            w = worker(self.worker_key)
            try:
                with w.lock:
                    status, value = w.call(("available", None, None, self.inner, []), self.timeout)
            except WorkerFault:
                status, value = "error", None
            self._available = status == "ok" and value is True
        return self._available

    def version(self):
        return self.inner.version()

    def supports(self, measure):
        return self.inner.supports(measure)

    def profile(self, measure):
        return self.inner.profile(measure)

    def default_profile(self):
        return self.inner.default_profile()

    def known_failure(self, qrels, run, measure=None):
        return self.inner.known_failure(qrels, run, measure)

    def evaluate(self, qrels, run, measures):
        token, blob = _payload(qrels, run)
        w = worker(self.worker_key)
        try:
            with w.lock:
                # the case's data goes to a worker once, however many of its entries follow
                fresh = w.proc is None or w.proc.poll() is not None or w.token != token
                request = ("evaluate", token, blob if fresh else None, self.inner, list(measures))
                w.token = None  # unknown until the worker answers
                status, value = w.call(request, self.timeout)
                if status == "error" and value.startswith(_NO_DATA) and not fresh:
                    # the worker died and was restarted between the check and the call
                    status, value = w.call(request[:2] + (blob,) + request[3:], self.timeout)
                w.token = token
        except WorkerFault as fault:
            return {m: LibraryValues(error=str(fault)) for m in measures}
        if status == "error":
            return {m: LibraryValues(error=stable_error(value)) for m in measures}
        for v in value.values():
            if v.error is not None:
                v.error = stable_error(v.error)
        return value

    def __eq__(self, other) -> bool:
        other = other.inner if isinstance(other, IsolatedEntry) else other
        return self.inner == other

    def __hash__(self) -> int:
        return hash(self.inner)




def isolate(entries: list[Entry], timeout: float | None = DEFAULT_TIMEOUT) -> list[Entry]:
    return [e if isinstance(e, IsolatedEntry) else IsolatedEntry(e, timeout) for e in entries]


# --- the worker side ----------------------------------------------------------------------------


def serve() -> None:
    """Worker main loop: length-prefixed pickled requests on stdin, pickled replies on the
    original stdout; ends at EOF."""
    reply_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # library prints must not reach the pipe
    sys.stdout = sys.stderr
    source = sys.stdin.buffer
    held: tuple = (None, None, None)  # (token, qrels, run) of the case last sent
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        body = source.read(int.from_bytes(head, "little"))
        try:
            kind, token, blob, entry, measures = pickle.loads(body)
            if kind == "available":  # importing the library here is the answer
                reply = ("ok", bool(entry.available()))
            else:
                if blob is not None:
                    held = (token, *pickle.loads(blob))
                if held[0] != token:
                    raise RuntimeError(_NO_DATA.split(": ", 1)[1])
                reply = ("ok", entry.evaluate(held[1], held[2], measures))
        except Exception as exc:  # the adapter's own failure is this entry's result
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps(("error", f"unpicklable result: {type(exc).__name__}: {exc}"))
        reply_out.write(data)
        reply_out.flush()
