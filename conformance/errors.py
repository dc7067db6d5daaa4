"""The errors a user sees. Each names where the problem is and what it is; the CLI turns any of
them into one message on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import re


class ConformanceError(Exception):
    """Base of every error the tool reports to a user as bad input (exit status 2)."""


class InputError(ConformanceError):
    """Bad input data: ``source`` (a file name or '<dict>'), 1-based ``line`` if known, ``problem``."""

    def __init__(self, source: str, problem: str, line: int | None = None) -> None:
        self.source, self.problem, self.line = source, problem, line
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class Notice(UserWarning):
    """Something the user should hear while the work goes on (a FIFO with no writer yet): the
    command line prints it as one warning line, without the category's name."""


class EvaluationError(ConformanceError):
    """The conventions in force refuse this input (empty_query=raise, negative_labels=raise, ...)."""


class Stopped(KeyboardInterrupt):
    """A stop signal arrived (SIGINT, SIGTERM, SIGHUP; ``signum``). A KeyboardInterrupt, so
    that every signal unwinds the work as Ctrl-C does; the command's exit status is 128 +
    ``signum``."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signum)


_CLOCK = re.compile(r"\[\d{2}:\d{2}:\d{2}\] ")  # XGBoost: "[03:14:29] src/...: Check failed"
_TRACE = re.compile(r"\n\s*(Stack trace:|\[bt\] ).*", re.S)  # XGBoost's native stack trace
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{8,}\b")


def stable_error(text: str) -> str:
    """A library's error text without what changes from run to run, so identical input gives
    identical JSON and reports: XGBoost's time-of-day prefix and its native stack trace (load
    addresses), and any other long hex address (as "0x..."). The message itself is kept whole."""
    return _ADDRESS.sub("0x...", _TRACE.sub("", _CLOCK.sub("", text))).rstrip()
