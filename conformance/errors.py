"""The errors a user sees. Each names where the problem is and what it is; the CLI turns any of
them into one message on stderr and exit status 2, never a traceback."""

from __future__ import annotations


class ConformanceError(Exception):
    """Base of every error the tool reports to a user as bad input (exit status 2)."""


class InputError(ConformanceError):
    """Bad input data: ``source`` (a file name or '<dict>'), 1-based ``line`` if known, ``problem``."""

    def __init__(self, source: str, problem: str, line: int | None = None) -> None:
        self.source, self.problem, self.line = source, problem, line
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class EvaluationError(ConformanceError):
    """The conventions in force refuse this input (empty_query=raise, negative_labels=raise, ...)."""
