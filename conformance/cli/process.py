"""The process around a command: signals, closed outputs and the exit (:func:`console`).

Signals and closed outputs: SIGINT (Ctrl-C), SIGTERM and SIGHUP stop any command the same way:
the work unwinds (library workers are killed, an output file being written is left as it was),
one line ``conformance: stopped by SIGTERM`` goes to stderr, and the exit status is 128 + the
signal's number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), never 1, which ``run`` gives
for an unexplained disagreement. A signal the process inherited as ignored (``nohup``, a
background job of a non-interactive shell) stays ignored. When stdout's reader goes away
(``| head -1``) the command ends quietly with exit status 141 (128 + SIGPIPE, what a program
killed by SIGPIPE reports); with stdout closed (``>&-``) what it would print is discarded, as
with ``>/dev/null``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from conformance.cli.common import BROKEN_PIPE, State, discard_stdout, main, stopped
from conformance.errors import Stopped

_signalled: list[int] = []  # the stop signal received, if any (see ``_stop_on_signals``)
STOP_DEADLINE = 1.5  # seconds the orderly stop may take before the process leaves at once


def _stop_on_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP raise ``Stopped`` in the main thread, so that each unwinds
    the work as Ctrl-C does (the runner kills its workers, an output being written is removed).
    A signal inherited as ignored stays ignored; one that comes while the first is handled is
    ignored, so the stopping itself is not cut short.

    Python runs a handler only between bytecodes of the main thread, so a signal that comes
    while the main thread sits in a long native call would wait for that call. So the signal is
    also written, at once, to a wakeup pipe (``signal.set_wakeup_fd``) that a watchdog thread
    reads: if the process is still here ``STOP_DEADLINE`` seconds after the first stop signal,
    the watchdog kills the library workers, removes the output being written and leaves with
    the same status."""

    def stop(signum, frame):
        if _signalled:
            return
        _signalled.append(signum)
        raise Stopped(signum)

    handled = set()

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)  # no SIGHUP on Windows
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, stop)
            handled.add(int(sig))
    if handled:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        threading.Thread(target=_leave_after_deadline, args=(wake_read, handled),
                         name="stop-deadline", daemon=True).start()


def _leave_after_deadline(wake_read: int, handled: set[int]) -> None:
    while True:
        signum = os.read(wake_read, 1)[0]
        if signum in handled:
            break
    time.sleep(STOP_DEADLINE)
    for name, cleanup in (("conformance.isolation", "kill_all"),
                          ("conformance.outputs", "discard_partial")):
        module = sys.modules.get(name)  # only what this command imported has work to undo
        if module is not None:
            getattr(module, cleanup)()
    if not State.told:
        os.write(2, f"conformance: stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def _open_std_streams() -> None:
    """A closed stdin, stdout or stderr (``>&-``) becomes /dev/null: what would be printed is
    discarded, and no pipe the command opens can take the descriptor's number."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            setattr(sys, name, open(fd, mode, closefd=False))
        if getattr(sys, name) is None:  # closed at start, its number since taken by a file
            setattr(sys, name, open(os.devnull, mode))


def console() -> None:
    """The ``conformance`` console script: :func:`main` with the signal and closed-output
    handling of the module docstring, and after a successful ``eval``, an exit that skips the
    interpreter's teardown.

    At exit Python frees every object and module one by one; after ``eval`` on a 2M-row run
    that took ~0.1 s of a ~2 s command, spent releasing arrays the process is about to give
    back whole. ``eval`` starts no process or thread that outlives it and holds no file open for
    writing, so after flushing stdout and stderr nothing is lost by leaving at once. Every other
    command, and every error, closes the library workers (together, cleanly) and exits the
    usual way.
    """
    _open_std_streams()  # first: the signals' wakeup pipe must not take a closed stream's number
    _stop_on_signals()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt as exc:  # a stop signal outside any command
        code = stopped(exc)
    if _signalled and code != 128 + _signalled[0]:  # Click took it for an Abort ("Aborted!")
        code = stopped(Stopped(_signalled[0]))
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # the reader went away at the last write
        discard_stdout()
        if code in (0, 1, None):
            code = BROKEN_PIPE
    if State.evaluated and code in (0, None):
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(0)
    isolation = sys.modules.get("conformance.isolation")  # imported only where workers ran
    if isolation is not None:
        try:
            # idle workers end cleanly (in parallel, as long as a worker's own exit takes,
            # under a second); when stopping, they are killed at once
            isolation.close_all(grace=0 if _signalled else isolation.CLOSE_GRACE)
        except KeyboardInterrupt as exc:  # a stop signal while closing: the rest were killed
            code = stopped(exc)
    if _signalled:  # everything is undone: leave without the interpreter's slow teardown
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)
    sys.exit(code)
