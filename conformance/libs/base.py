"""What a library entry is: one configuration of one library that a user commonly runs.

An entry translates: it converts our validated input into the library's own call, calls it, and
reads the result back. It never redoes the library's arithmetic. Beside each adapter sits its
declared profile: the conventions under which ``conformance.reference`` gives the library's
numbers, measure by measure. Differential tests hold the two together.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass, field

from conformance.conventions import Conventions
from conformance.data import Qrels, Run
from conformance.measures import Measure


@dataclass
class LibraryValues:
    """What a library gave for one measure: per-query values, or the error it raised.

    ``per_query`` maps query id -> value for exactly the queries the library returned.
    ``mean`` is the library's own aggregate when it computes one (None otherwise).
    ``provider`` names who computed it inside a library that routes (ir_measures).
    """

    per_query: dict[str, float] = field(default_factory=dict)
    mean: float | None = None
    error: str | None = None
    provider: str | None = None


class Entry:
    """Base of every library entry. Subclasses set the class attributes and implement
    :meth:`supports`, :meth:`profile` and :meth:`_evaluate`."""

    name: str = ""  # public entry name, e.g. "lightgbm:linear_gain"
    library: str = ""  # the library, e.g. "lightgbm" (entries of one library share it)
    module: str = ""  # import name, e.g. "lightgbm"
    distribution: str = ""  # pip distribution whose version is reported, e.g. "lightgbm"
    tolerance: float = 1e-12  # 1e-12 for float64 libraries, 1e-6 for float32 ones
    description: str = ""  # one line: what configuration this is

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except Exception:  # a broken install is as unavailable as a missing one
            return False
        return True

    def version(self) -> str | None:
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    def tolerance_for(self, measure: Measure) -> float:
        """The tolerance of this entry's values of ``measure`` (``tolerance`` unless the
        library rounds some measures further: ir_measures' gdeval prints 5 decimals)."""
        return self.tolerance

    def supports(self, measure: Measure) -> bool:
        raise NotImplementedError

    def profile(self, measure: Measure) -> Conventions:
        """The declared conventions under which the reference gives this entry's value."""
        raise NotImplementedError

    def default_profile(self) -> Conventions:
        """The profile shown in tables: the one for the entry's main measure."""
        raise NotImplementedError

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """Why the library cannot be trusted on this input (a documented finding: it crashes,
        hangs or returns numbers no convention gives), or None. The entry then refuses the case
        with this reason instead of calling the library; the differential tests accept that
        refusal, and only it, where the reference computes a value."""
        return None

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        """Call the library for each supported measure. A library exception is recorded as the
        measure's ``error`` (its type and text), never raised."""
        out: dict[Measure, LibraryValues] = {}
        for m in measures:
            try:
                out[m] = self._evaluate(qrels, run, m)
            except Exception as exc:  # the library's own failure is a result, not a crash
                out[m] = LibraryValues(error=f"{type(exc).__name__}: {exc}")
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        raise NotImplementedError
