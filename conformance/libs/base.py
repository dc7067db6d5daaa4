"""What a library entry is: one configuration of one library that a user commonly runs.

An entry translates: it converts our validated input into the library's own call, calls it, and
reads the result back. It never redoes the library's arithmetic. Beside each adapter sits its
declared profile: the conventions under which ``conformance.reference`` gives the library's
numbers, measure by measure. Differential tests hold the two together.

Isolation is declared, not managed: ``own_process = True`` says the library keeps state global
to its process that differs between entries (LightGBM's ``label_gain``), so ``evaluate`` runs
in the persistent worker for the entry's ``worker_key`` (``conformance.isolation``), wherever it
is called from; a call that only some input makes unsafe goes through ``isolation.call(...,
alone=...)`` in the adapter. A library's failure in another process comes back as its
``"Type: message"`` text (``error_text``), exactly as in this one.

Whether an entry can be used is an :class:`ImportStatus`: available, not installed (with the
pip command that adds it), or failed to import (the error); ``conformance.runner`` asks it of
the entry's worker and adds the two outcomes only another process can see: the import crashed
the process (the signal), or did not finish within the time limit.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass, field

import numpy as np

from conformance import isolation
from conformance.conventions import Conventions
from conformance.distribution import pip_command
from conformance.io.data import Qrels, Run
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


@dataclass(frozen=True)
class ImportStatus:
    """What importing an entry's library gave. ``state`` and ``detail``:

    - ``available``: it imported;
    - ``not_installed``: no such module; ``detail`` is the pip command that adds it;
    - ``import_failed``: it raised while importing; ``detail`` is ``"Type: message"``;
    - ``import_crashed``: the import killed its process; ``detail`` says how
      (``killed by signal SIGSEGV``);
    - ``import_timed_out``: no answer within the time limit; ``detail`` is the limit in seconds.
    """

    state: str
    detail: str = ""

    @property
    def available(self) -> bool:
        return self.state == "available"

    def describe(self) -> str:
        """One phrase for a warning or a table: what happened."""
        return {
            "available": "available",
            "not_installed": f"not installed ({self.detail} adds it)",
            "import_failed": f"failed to import: {self.detail}",
            "import_crashed": f"crashed while importing ({self.detail})",
            "import_timed_out": f"timed out while importing (no answer within {self.detail} s)",
        }[self.state]


def install_command(library: str, distribution: str) -> str:
    """The pip command that adds ``library``: the package's extra of that name where the
    package declares one (pyproject.toml's optional-dependencies), else the library's own
    distribution (``conformance.distribution.pip_command``)."""
    return pip_command(library, distribution)


def error_text(exc: BaseException) -> str:
    """How a library's exception is recorded: ``"Type: message"``, the same whether it was
    raised here or in a child process (``isolation.Raised`` carries the child's text)."""
    if isinstance(exc, isolation.Raised):
        return exc.text
    return f"{type(exc).__name__}: {exc}"


# float32's unit roundoff
FLOAT32_UNIT = 2.0 ** -24


def longest_list(run: Run) -> int:
    """The most documents any query of ``run`` lists (0 for an empty run)."""
    return int(np.bincount(run.qcode).max()) if len(run) else 0


class Entry:
    """Base of every library entry. Subclasses set the class attributes and implement
    :meth:`supports`, :meth:`profile` and :meth:`_evaluate`."""

    name: str = ""  # public entry name, e.g. "lightgbm:linear_gain"
    library: str = ""  # the library, e.g. "lightgbm" (entries of one library share it)
    module: str = ""  # import name, e.g. "lightgbm"
    distribution: str = ""  # pip distribution whose version is reported, e.g. "lightgbm"
    extra: str = ""  # the package's extra that installs the library (default: its own name)
    tolerance: float = 1e-12  # 1e-12 for float64 libraries, 1e-6 for float32 ones
    description: str = ""  # one line: what configuration this is
    # True: the library computes its sums in float32 (see tolerance_for)
    float32_sums: bool = False
    # True: the library keeps process-global state that differs between entries, so Entry's
    # evaluate runs in a worker process serving this entry alone (see the module docstring)
    own_process: bool = False

    @property
    def worker_key(self) -> str:
        """The worker process this entry's calls run in; entries with one key share it (one per
        library, so it is imported once, unless ``own_process``)."""
        return self.name if self.own_process else (self.library or self.name)

    def install_command(self) -> str:
        """The pip command that adds this entry's library (its extra of the package)."""
        return install_command(self.extra or self.library or self.name, self.distribution)

    def import_status(self) -> ImportStatus:
        """Import the library in this process and say how that went."""
        try:
            importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (self.module == exc.name
                                         or self.module.startswith(exc.name + ".")):
                return ImportStatus("not_installed", self.install_command())
            return ImportStatus("import_failed", f"{type(exc).__name__}: {exc}")  # a dependency
        except Exception as exc:  # a broken install is unavailable, and says why
            return ImportStatus("import_failed", f"{type(exc).__name__}: {exc}")
        return ImportStatus("available")

    def available(self) -> bool:
        return self.import_status().available

    def version(self) -> str | None:
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    def tolerance_for(self, measure: Measure, longest: int = 0) -> float:
        """The tolerance of this entry's values of ``measure`` on lists of up to ``longest``
        documents: ``tolerance`` unless the library rounds some measures further (ir_measures'
        gdeval prints 5 decimals) or sums in float32 (``float32_sums``): a sum of n float32
        terms carries up to n - 1 roundings of 2^-24 relative to the sum of its terms (in any
        order; Higham's bound), and a normalised measure divides two such sums, so its
        tolerance is 2 n 2^-24 where n is the documents the measure reads (the cutoff, or the
        longest list). Measured, torchmetrics' nDCG of a 1,000-document list is off by up to
        1.1e-6 (5,000 documents: 2.3e-6), past the fixed 1e-6."""
        if not self.float32_sums:
            return self.tolerance
        n = longest if measure.cutoff is None else min(longest, int(min(measure.cutoff, 2 ** 31)))
        return max(self.tolerance, 2 * n * FLOAT32_UNIT)

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
        measure's ``error`` (its type and text), never raised. With ``own_process``, in the
        entry's own worker process."""
        if self.own_process and not isolation.serves(self.worker_key):
            try:
                return isolation.worker(self.worker_key).call(self.evaluate, qrels, run,
                                                              list(measures))
            except isolation.Fault as fault:
                error = f"{self.library or self.name} worker process {fault}"
            except isolation.Raised as exc:
                error = exc.text
            return {m: LibraryValues(error=error) for m in measures}
        out: dict[Measure, LibraryValues] = {}
        for m in measures:
            try:
                out[m] = self._evaluate(qrels, run, m)
            except Exception as exc:  # the library's own failure is a result, not a crash
                out[m] = LibraryValues(error=error_text(exc))
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        raise NotImplementedError

    def split_supported(self, measures: list[Measure]) -> tuple[list[Measure], dict[Measure, LibraryValues]]:
        """(the measures this entry computes, in order; an answer for each other one: the error
        that it does not), for an ``evaluate`` that calls the library once for all measures."""
        wanted = [m for m in measures if self.supports(m)]
        return wanted, {m: LibraryValues(error=f"{self.name} does not compute {m.text}")
                        for m in measures if m not in wanted}
