"""Calls in processes of their own: a persistent worker per key, and a one-shot isolated call.

A library that aborts, segfaults or hangs must cost one result, not the run; a library whose
state is global to its process (LightGBM's ``label_gain``) must never see another
configuration's. This module is the one way the tool runs code in another process:

- ``worker(key).call(fn, *args, timeout=T)``: ``fn(*args)`` in the persistent worker process
  for ``key`` (a library configuration), started on first use and reused by every later call
  with that key, so a library is imported once per key. One call at a time per worker. A
  worker found dead before a call is replaced silently; one that dies during a call makes the
  call fail, and the next call starts a fresh one. Inside the worker for ``key`` the same call
  runs ``fn`` directly: an adapter that needs its own process is not nested when the runner
  already runs it there.
- ``one_shot(fn, *args, timeout=T)``: ``fn(*args)`` in a fresh process that ends with the call,
  for input that can leave a library's process unusable.
- ``call(fn, *args, alone=..., timeout=T)``: ``fn(*args)`` here, or as a ``one_shot`` when
  ``alone`` is true: what an adapter writes where only some input needs a process of its own.

``fn`` and ``args`` are pickled: ``fn`` by reference (a module-level function, or a method of a
picklable object). ``payload=Payload(*values)`` carries large values (a case's qrels and run)
to a worker only when it does not hold them already; the worker keeps the last payload it was
sent and calls ``fn(*payload.values, *args)``.

What comes back is ``fn``'s return value, or one of two exceptions:

- :class:`Raised`: ``fn`` raised an exception; ``.text`` is ``"Type: message"``, what the
  exception gives in the process that raised it. The exception object stays there
  (unpickling it here could import its library here).
- :class:`Fault`: no answer. ``.kind`` is ``"died"`` (``.how``: ``"killed by signal SIGSEGV"``,
  ``"exit status 7"``), ``"timed_out"`` (``.seconds``: no answer within ``timeout`` seconds; the
  child's whole process group was killed, so what the library started goes too) or
  ``"stopped"`` (a :class:`Stop` covering the call was set). Callers phrase it for their reader.

Time-outs: ``None`` or 0 is no limit.

Ctrl-C and stop signals. An exception raised in the thread that waits for a child (Ctrl-C's
``KeyboardInterrupt`` arrives in the main thread) kills that child and propagates. Calls made
on other threads are stopped from outside with a :class:`Stop`: calls made inside
``with stop.covering():`` register their process with it, and ``stop.set()`` (from any thread)
kills those processes and refuses new calls (``Fault`` of kind ``"stopped"``), so every waiting
thread returns at once.

No orphan. Each child asks the kernel, before it reads its first request, to be sent SIGKILL
when its parent dies, however the parent dies, SIGKILL included (Linux ``prctl(2)``
``PR_SET_PDEATHSIG``, through ctypes); it exits at once when the parent is already gone by
then. The kernel sends that signal when the *thread* that started the child ends, not the
process, so children are started from the main thread or from one long-lived spawner thread,
never from a short-lived thread of a pool. Where ``prctl`` does not exist a thread of the child
polls its parent's pid instead (which a native call holding the GIL can delay). At exit every
worker is closed cleanly: its stdin closes, it leaves its loop, and one still alive after
``CLOSE_GRACE`` seconds is killed; workers are closed together, so that costs the grace once.

Children start with this process's interpreter and its ``sys.path`` as ``PYTHONPATH`` (they find
the package and a test's own modules), unless the worker was asked for with another interpreter
and path (``worker(key, python=..., path=...)``: a library installed in an environment of its
own, ``conformance.environments``), in a session of their own (a time-out kills the child's process group,
never ours, and a terminal's Ctrl-C reaches only this process, which stops them). A child's
stdout is its reply channel only: what a library prints, C-level included, goes to stderr,
which is discarded unless ``CONFORMANCE_DEBUG=1``.

Where it sits: the adapters (libs) declare their calls' isolation through it and the runner
(engines) runs every entry in a worker, so it lies below both and imports nothing of
conformance (``conformance.errors`` at most); it knows functions and pickles, not entries, measures
or cases.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator

CLOSE_GRACE = 5.0  # seconds a worker is given to leave its loop at exit before it is killed
ONE_SHOT_GRACE = 1.0  # the same for a one-shot child once it has answered
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_TOKENS = itertools.count(1)
_SERVING: str | None = None  # in a worker process: the key it serves


class Fault(Exception):
    """The child gave no answer: it died, timed out or was stopped (see the module docstring)."""

    def __init__(self, kind: str, how: str = "", seconds: float | None = None) -> None:
        self.kind, self.how, self.seconds = kind, how, seconds
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.kind == "died":
            return f"crashed ({self.how})"
        if self.kind == "timed_out":
            return f"did not finish within {self.seconds:g} s; its process was stopped"
        return "was stopped"


class Raised(Exception):
    """``fn`` raised in the child; ``text`` is ``"Type: message"`` as it read there."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


class Payload:
    """Values sent to a worker once, however many calls use them (``payload=`` of ``call``)."""

    def __init__(self, *values: Any) -> None:
        self.values = values
        self.token = next(_TOKENS)
        self._blob: bytes | None = None
        self._lock = threading.Lock()

    @property
    def blob(self) -> bytes:
        with self._lock:  # pickled once, on first need (a worker serving its own key never needs it)
            if self._blob is None:
                self._blob = pickle.dumps(self.values, protocol=pickle.HIGHEST_PROTOCOL)
            return self._blob


def signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def serves(key: str) -> bool:
    """Whether this process is the worker for ``key``."""
    return _SERVING is not None and _SERVING == key


# --- stopping calls from another thread ---------------------------------------------------------

_local = threading.local()


class Stop:
    """A switch for the calls made under ``covering()``, on any number of threads: ``set()``
    kills their processes and makes every later call under it fail at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._running: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._lock:
            self._set = True
            kills = list(self._running.values())
        for kill in kills:
            kill()

    @contextlib.contextmanager
    def covering(self) -> Iterator[None]:
        """Calls made by this thread inside the block are stopped by ``set()``."""
        previous = getattr(_local, "stop", None)
        _local.stop = self
        try:
            yield
        finally:
            _local.stop = previous

    def _enter(self, kill: Callable[[], None]) -> int | None:
        with self._lock:
            if self._set:
                return None
            ident = next(self._ids)
            self._running[ident] = kill
            return ident

    def _leave(self, ident: int) -> None:
        with self._lock:
            self._running.pop(ident, None)


def _current_stop() -> Stop | None:
    return getattr(_local, "stop", None)


# --- starting children --------------------------------------------------------------------------

_spawns: queue.SimpleQueue = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawner_loop() -> None:
    while True:
        start, box, done = _spawns.get()
        try:
            box.append(start())
        except BaseException as exc:  # handed back to the thread that asked
            box.append(exc)
        done.set()


def _in_long_lived_thread(start: Callable[[], subprocess.Popen]) -> subprocess.Popen:
    """``start()`` on a thread that lives as long as this process (see "No orphan")."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return start()
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawner_loop, name="conformance-spawner",
                                        daemon=True)
            _spawner.start()
    box: list = []
    done = threading.Event()
    _spawns.put((start, box, done))
    done.wait()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


_LIVE: set[subprocess.Popen] = set()  # every child started and not yet reaped
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every child (and its process group) now, without waiting for any: for a process
    that must leave at once."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _start(key: str | None, python: str | None = None,
           path: tuple[str, ...] | None = None) -> subprocess.Popen:
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)] if path is None else list(path)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    debug = os.environ.get("CONFORMANCE_DEBUG") == "1"
    # an explicit path is the child's whole search path: -P (3.11+) keeps the working folder off
    # it, where another copy of the package could stand before the one the path links to
    safe = ["-P"] if path is not None and sys.version_info >= (3, 11) else []
    argv = [python or sys.executable, *safe, "-c",
            "import sys; from conformance.isolation import _serve; _serve(sys.argv[1], int(sys.argv[2]))",
            key if key is not None else "", str(os.getpid())]
    proc = _in_long_lived_thread(lambda: subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=None if debug else subprocess.DEVNULL, env=env,
        start_new_session=True,  # its own process group: a time-out kills all of it
    ))
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the child and its process group (what the library started), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    proc.wait()
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def _close_pipes(proc: subprocess.Popen) -> None:
    for f in (proc.stdin, proc.stdout):
        try:
            if f is not None:
                f.close()
        except OSError:  # a broken pipe while flushing: nothing left to tell
            pass


# --- the persistent worker ----------------------------------------------------------------------


class Worker:
    """One child process serving calls for ``key``, one at a time (see the module docstring)."""

    def __init__(self, key: str | None, python: str | None = None,
                 path: tuple[str, ...] | None = None) -> None:
        self.key = key
        self.python, self.path = python, path  # the child's interpreter and PYTHONPATH
        self.proc: subprocess.Popen | None = None
        self._calls = threading.Lock()  # one request at a time
        self._state = threading.Lock()  # self.proc changes: start, kill
        self._held: int | None = None  # the payload token the live child holds

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None else None

    def call(self, fn: Callable, *args: Any, timeout: float | None = None,
             payload: Payload | None = None) -> Any:
        """``fn(*payload.values, *args)`` in this worker's process; raises Raised or Fault."""
        if self.key is not None and serves(self.key):
            return fn(*(payload.values if payload is not None else ()), *args)
        stop = _current_stop()
        with self._calls:
            if stop is not None and stop.is_set():
                raise Fault("stopped")
            with self._state:
                if self.proc is not None and self.proc.poll() is not None:
                    self._discard(self.proc)  # it died between calls
                if self.proc is None:
                    self.proc = _start(self.key, self.python, self.path)
                    self._held = None
                proc = self.proc
            ident = stop._enter(lambda: self._kill(proc)) if stop is not None else 0
            if ident is None:
                raise Fault("stopped")
            try:
                blob = payload.blob if payload is not None and self._held != payload.token else None
                request = (fn, args, payload.token if payload is not None else None, blob)
                reply = self._exchange(proc, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL),
                                       timeout)
            except Fault:
                if stop is not None and stop.is_set():
                    raise Fault("stopped") from None
                raise
            finally:
                if stop is not None:
                    stop._leave(ident)
            if payload is not None:
                self._held = payload.token
        status, value = reply
        if status == "raised":
            raise Raised(value)
        return value

    def _exchange(self, proc: subprocess.Popen, request: bytes, timeout: float | None):
        reply: list = []

        def exchange() -> None:
            # on a thread so that the caller can stop waiting; a dead child ends it with EOF
            try:
                proc.stdin.write(len(request).to_bytes(8, "little"))
                proc.stdin.write(request)
                proc.stdin.flush()
                reply.append(pickle.load(proc.stdout))
            except Exception:  # EOF, a broken pipe, a torn reply: the child is gone
                pass

        t = threading.Thread(target=exchange, name=f"conformance-call-{self.key}", daemon=True)
        t.start()
        try:
            t.join(timeout if timeout else None)
        except BaseException:  # Ctrl-C or a stop signal while waiting: the child goes too
            self._kill(proc)
            t.join()
            raise
        if t.is_alive():
            self._kill(proc)  # the exchange thread then sees EOF and ends
            t.join()
            raise Fault("timed_out", seconds=timeout)
        if reply:
            return reply[0]
        with self._state:
            if self.proc is proc:
                self.proc = None
        code = proc.poll()
        if code is None:  # the pipe broke but the process lives on: it cannot be talked to
            _kill_group(proc)
            code = proc.returncode
        else:
            _kill_group(proc)  # what it started (a one-shot child, a library's helper) goes too
        _close_pipes(proc)
        how = f"killed by signal {signal_name(-code)}" if code < 0 else f"exit status {code}"
        raise Fault("died", how=how)

    def _discard(self, proc: subprocess.Popen) -> None:
        _kill_group(proc)
        _close_pipes(proc)
        if self.proc is proc:
            self.proc = None

    def _kill(self, proc: subprocess.Popen) -> None:
        with self._state:
            if self.proc is proc:
                self.proc = None
        _kill_group(proc)
        _close_pipes(proc)

    def kill(self) -> None:
        """Kill the worker now, whoever is waiting on it (that call then fails)."""
        proc = self.proc
        if proc is not None:
            self._kill(proc)

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """End the worker cleanly: EOF on its stdin; killed if still alive after ``grace`` s."""
        _close_together([self], grace)


def _close_together(workers: list[Worker], grace: float) -> None:
    procs = []
    for w in workers:
        with w._state:
            proc, w.proc = w.proc, None
        if proc is None:
            continue
        try:
            proc.stdin.close()  # EOF: the child leaves its loop
        except OSError:
            pass
        procs.append(proc)
    deadline = time.monotonic() + grace
    try:
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    finally:  # Ctrl-C while waiting too: none is left behind
        for proc in procs:
            _kill_group(proc)  # nothing for one that ended, but its helpers go too
            _close_pipes(proc)


_WORKERS: dict[str, Worker] = {}
_WORKERS_LOCK = threading.Lock()


def worker(key: str, python: str | None = None, path: tuple[str, ...] | None = None) -> Worker:
    """The persistent worker for ``key`` (its process starts at its first call). ``python`` and
    ``path``: the interpreter the child runs and its whole ``PYTHONPATH`` (default: this
    process's interpreter and ``sys.path``); a key is served by one interpreter, so asking for
    a key's worker with another one is a bug (ValueError)."""
    with _WORKERS_LOCK:
        if key not in _WORKERS:
            _WORKERS[key] = Worker(key, python, path)
        w = _WORKERS[key]
    if (w.python, w.path) != (python, path):
        raise ValueError(f"worker {key!r} runs {w.python or sys.executable}, not {python}")
    return w


@atexit.register
def close_all(grace: float = CLOSE_GRACE) -> None:
    """Close every persistent worker, together (registered to run at exit)."""
    with _WORKERS_LOCK:
        workers = list(_WORKERS.values())
    _close_together(workers, grace)


def one_shot(fn: Callable, *args: Any, timeout: float | None = None) -> Any:
    """``fn(*args)`` in a fresh process that ends with the call; raises Raised or Fault."""
    child = Worker(None)
    try:
        return child.call(fn, *args, timeout=timeout)
    finally:
        child.close(ONE_SHOT_GRACE)


def call(fn: Callable, *args: Any, alone: bool = False, timeout: float | None = None) -> Any:
    """``fn(*args)`` in this process, or in a one-shot process when ``alone``."""
    if alone:
        return one_shot(fn, *args, timeout=timeout)
    return fn(*args)


# --- the child side -----------------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    except (OSError, AttributeError):  # not Linux: watch the parent's pid instead
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.2)
            os.killpg(os.getpgid(0), signal.SIGKILL)

        threading.Thread(target=watch, name="conformance-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)


class _Unpickler(pickle.Unpickler):
    """Requests as this child's libraries read them: a worker on a side environment's
    interpreter may hold numpy 1 where the parent holds numpy 2, whose pickles name its arrays'
    module ``numpy._core`` (numpy 1's ``numpy.core``); numpy 2 reads numpy 1's replies itself."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except ModuleNotFoundError:
            if module == "numpy._core" or module.startswith("numpy._core."):
                return super().find_class("numpy.core" + module[len("numpy._core"):], name)
            raise


def _loads(data: bytes) -> Any:
    import io

    return _Unpickler(io.BytesIO(data)).load()


def _serve(key: str, parent: int) -> None:
    """A child's main loop: length-prefixed pickled requests on stdin, pickled replies on the
    original stdout; ends at EOF."""
    global _SERVING
    _die_with_parent(parent)
    _SERVING = key or None
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library's prints must not reach the pipe
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    held_token: int | None = None
    held: tuple = ()
    while True:
        head = requests.read(8)
        if len(head) < 8:
            return
        body = requests.read(int.from_bytes(head, "little"))
        try:
            fn, args, token, blob = _loads(body)
            if blob is not None:
                held_token, held = token, _loads(blob)
            if token is not None and token != held_token:
                raise RuntimeError("isolation protocol: the payload was not sent")
            reply = ("ok", fn(*(held if token is not None else ()), *args))
        except Exception as exc:  # fn's own failure is the caller's result
            reply = ("raised", f"{type(exc).__name__}: {exc}")
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps(("raised", f"unpicklable result: {type(exc).__name__}: {exc}"))
        replies.write(data)
        replies.flush()
