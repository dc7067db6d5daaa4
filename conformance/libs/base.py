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

An entry whose library cannot be installed beside the others declares the side environment it
is installed in (``environment = "rectools"``, a name of ``conformance.environments``): its
worker's interpreter is that environment's python, and ``import_status`` and ``evaluate`` run
there wherever they are called from, so the library is never imported in this process;
``version`` reads the environment's metadata. While the environment is not ready the entry is
``not_created``, with the command that makes it.

Whether an entry can be used is an :class:`ImportStatus`: available, not installed (with the
pip command that adds it), or failed to import (the error); ``conformance.runner`` asks it of
the entry's worker and adds the two outcomes only another process can see: the import crashed
the process (the signal), or did not finish within the time limit.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
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
    - ``not_created``: the entry's side environment is not ready (``conformance.environments``);
      ``detail`` is the command that makes it;
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
            "not_created": f"not installed: its environment is not created ({self.detail} creates it)",
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


@dataclass(frozen=True)
class FreeValues:
    """Axis ``axis`` of family ``family``'s measures may be set by the name to one of
    ``values``, which the call takes as a parameter (``cutoff``: True only with a cutoff, False
    only without, None either): Recommenders' AP@k is ``map_at_k`` (min(k, R)) or ``map``
    (R)."""

    family: str
    axis: str
    values: frozenset
    cutoff: bool | None = None

    def applies(self, measure: Measure) -> bool:
        return (measure.family == self.family
                and (self.cutoff is None or self.cutoff == (measure.cutoff is not None)))


@dataclass(frozen=True)
class Support:
    """What an entry computes, declared; :meth:`Entry.supports` reads it (no adapter writes a
    ``supports`` of its own). A measure is supported when:

    - ``families``: its family is one of these (None: any family, ``Entry.names`` deciding);
    - ``cutoff``: "required" (only with a cutoff) or "any"; ``needs_cutoff`` / ``no_cutoff``:
      families that must / must not have one; ``cutoffs``: the only cutoffs taken, if any
      (XGBoost's plain ndcg is ndcg@32); ``least_cutoff`` / ``most_cutoff``: the bounds of a
      cutoff given (Spark's k is a JVM int);
    - ``parameters``: the family parameters the call takes, at any value; every other
      parameter of the measure is at its family's default (cornac's FMeasure is F1 with beta
      1), so a family whose parameter has no default (T's) is computed only by a library that
      takes it; None: any parameter, ``Entry.names`` deciding;
    - the library has a name for it (``Entry.names``, e.g. trec_eval's measure strings);
    - ``conventions``: every axis the measure's name sets is already the entry's profile's,
      except ``Entry.free_axes`` (by default ``free_axes``), which the call takes as a
      parameter (trec_eval's relevance_level), and ``free_values`` (an axis the call takes for
      one family, at the values it takes), and the threshold is at least ``min_threshold``;
      ``conventions=False``: the library's own routing decides (ir_measures' providers,
      through ``Entry.names``)."""

    families: frozenset | None = None
    cutoff: str = "any"
    needs_cutoff: frozenset = frozenset()
    no_cutoff: frozenset = frozenset()
    cutoffs: frozenset | None = None
    least_cutoff: int | None = None
    most_cutoff: int | None = None
    parameters: frozenset | None = frozenset()
    free_axes: frozenset = frozenset()
    free_values: tuple[FreeValues, ...] = ()
    min_threshold: int | None = None
    conventions: bool = True


def longest_list(run: Run) -> int:
    """The most documents any query of ``run`` lists (0 for an empty run)."""
    return int(np.bincount(run.qcode).max()) if len(run) else 0


class Entry:
    """Base of every library entry. Subclasses set the class attributes (``support`` among
    them) and implement :meth:`profile` and :meth:`_evaluate`."""

    name: str = ""  # public entry name, e.g. "lightgbm:linear_gain"
    library: str = ""  # the library, e.g. "lightgbm" (entries of one library share it)
    module: str = ""  # import name, e.g. "lightgbm"
    distribution: str = ""  # pip distribution whose version is reported, e.g. "lightgbm"
    extra: str = ""  # the package's extra that installs the library (default: its own name)
    # What the library's arithmetic needs, argued beside each entry's value: 1e-12 where it
    # computes in double from inputs it reads exactly (1,000 times the gap of two double
    # computations of one formula, about 1e-15 on these sums), more where it reads or sums in
    # float32; the differential tests fail a tolerance above 1,000 times its measured gap
    tolerance: float = 1e-12
    description: str = ""  # one line: what configuration this is
    # True: the library computes its sums in float32 (see tolerance_for)
    float32_sums: bool = False
    # True: the library keeps process-global state that differs between entries, so Entry's
    # evaluate runs in a worker process serving this entry alone (see the module docstring)
    own_process: bool = False
    # The side environment (conformance.environments) the library is installed in, or None: this
    # one. Its calls then run in its worker, on that environment's python (module docstring)
    environment: str | None = None
    # What ``known_failure`` refuses, declared beside it and checked, not trusted: the
    # differential tests ask the library anyway on a sample of the refused cases and require
    # what is declared here.
    # - known_failure_shows: what the library does on such a case, any of "raises" (an
    #   exception), "dies" (killed by a signal, or no answer within the time limit; the test
    #   then asks it in a process of its own) and "wrong_values" (values its profile does not
    #   give), "rounding" (a value decided by float rounding the adapter cannot predict: the
    #   library may give the profile's value on the case, or another); empty: known_failure
    #   refuses nothing;
    # - known_failure_ceiling: the largest share of the generated cases of one family (in one
    #   test's run) that known_failure may refuse, family -> share, "*" for every other family.
    known_failure_shows: frozenset = frozenset()
    known_failure_ceiling: Mapping[str, float] = {}
    # True in the twin made by asking_the_library(): known_failure no longer stops the call
    _ask_anyway: bool = False

    @property
    def worker_key(self) -> str:
        """The worker process this entry's calls run in; entries with one key share it (one per
        library, so it is imported once, unless ``own_process``)."""
        return self.name if self.own_process else (self.library or self.name)

    def worker(self) -> isolation.Worker:
        """The worker process this entry's calls run in (``worker_key``), on its side
        environment's python when it has one."""
        if self.environment is None:
            return isolation.worker(self.worker_key)
        from conformance import environments

        python, path = environments.interpreter(self.environment)
        return isolation.worker(self.worker_key, python, path)

    def _elsewhere(self) -> bool:
        """Whether this entry's calls must go to its worker from this process."""
        return ((self.own_process or self.environment is not None)
                and not isolation.serves(self.worker_key))

    def environment_status(self) -> ImportStatus | None:
        """``not_created`` while the entry's side environment is not ready, with the command
        that makes it; None when it is ready or the entry has none."""
        if self.environment is None:
            return None
        from conformance import environments

        env = environments.environment(self.environment)
        return None if env.state() == "ready" else ImportStatus("not_created", env.create_command())

    def install_command(self) -> str:
        """The command that adds this entry's library: its extra of the package, or the one
        that makes its side environment."""
        if self.environment is not None:
            from conformance import environments

            return environments.environment(self.environment).create_command()
        return install_command(self.extra or self.library or self.name, self.distribution)

    def import_status(self) -> ImportStatus:
        """Import the library in this process and say how that went (an entry with a side
        environment: in its worker, ``status_in_worker``)."""
        if self.environment is not None and not isolation.serves(self.worker_key):
            return status_in_worker(self)
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
        if self.environment is not None and not isolation.serves(self.worker_key):
            from conformance import environments

            return environments.version(environments.environment(self.environment),
                                        self.distribution)
        import importlib.metadata  # ~10 ms: only where a version is asked for

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

    # what the entry computes (see Support); a property where it depends on the entry's options
    support: Support = Support()

    def supports(self, measure: Measure) -> bool:
        """Whether the entry computes ``measure``, as its ``support`` declares."""
        s = self.support
        family, k = measure.family, measure.cutoff
        if s.families is not None and family not in s.families:
            return False
        if k is None and (s.cutoff == "required" or family in s.needs_cutoff):
            return False
        if k is not None and family in s.no_cutoff:
            return False
        if s.cutoffs is not None and k not in s.cutoffs:
            return False
        if k is not None and ((s.least_cutoff is not None and k < s.least_cutoff)
                              or (s.most_cutoff is not None and k > s.most_cutoff)):
            return False
        if s.parameters is not None:
            record = measure.record
            if any(v != record.parameter(p).default for p, v in measure.params
                   if p not in s.parameters):
                return False
        if not self.names(measure):
            return False
        if not s.conventions:
            return True
        own = self.profile(measure)
        conv = measure.conventions(own)
        free = set(self.free_axes(measure))
        for fv in s.free_values:
            if fv.applies(measure):
                if getattr(conv, fv.axis) not in fv.values:
                    return False
                free.add(fv.axis)
        if set(conv.differing_axes(own)) - free:
            return False
        return s.min_threshold is None or conv.relevance_threshold >= s.min_threshold

    def names(self, measure: Measure) -> bool:
        """Whether the library has a name (a call) for ``measure``, beyond what ``support``
        declares: True unless the adapter says otherwise."""
        return True

    def free_axes(self, measure: Measure) -> frozenset:
        """The axes ``measure``'s name may set away from the profile (``Support.free_axes``)."""
        return self.support.free_axes

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
        refusal where the reference computes a value, provided the library, asked anyway
        (:meth:`asking_the_library`), does what ``known_failure_shows`` declares, and that no
        more than ``known_failure_ceiling`` of the cases are refused so."""
        return None

    def refusal(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """``known_failure``, as an adapter's ``evaluate`` consults it before calling the
        library: None in the twin made by :meth:`asking_the_library`."""
        return None if self._ask_anyway else self.known_failure(qrels, run, measure)

    def declined(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues | None:
        """The answer an adapter gives without calling its library, or None to call it: the
        entry does not compute ``measure``, or its declared failure applies (``refusal``)."""
        if not self.supports(measure):
            return LibraryValues(error=f"{self.name} does not compute {measure.text}")
        failure = self.refusal(qrels, run, measure)
        return None if failure is None else LibraryValues(error=failure)

    def asking_the_library(self) -> "Entry":
        """A copy of this entry that calls the library even where ``known_failure`` refuses:
        how the differential tests see the declared failure happen."""
        twin = copy.copy(self)
        twin._ask_anyway = True
        return twin

    def failure_evidence(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """On a case ``known_failure`` refuses, the declared failure seen by a call made to show
        it (pytrec_eval's miscount of retrieved documents), or None: the values the library
        gives for the measure are then the only evidence."""
        return None

    def ceiling_for(self, family: str) -> float:
        """The declared largest share of one family's cases ``known_failure`` may refuse."""
        return self.known_failure_ceiling.get(family, self.known_failure_ceiling.get("*", 0.0))

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        """Call the library for each supported measure. A library exception is recorded as the
        measure's ``error`` (its type and text), never raised. With ``own_process``, in the
        entry's own worker process."""
        if self._elsewhere():
            missing = self.environment_status()
            if missing is not None:
                return {m: LibraryValues(error=f"{self.name}: {missing.describe()}")
                        for m in measures}
            try:
                return self.worker().call(self.evaluate, qrels, run, list(measures))
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


def status_in_worker(entry: Entry, timeout: float | None = None) -> ImportStatus:
    """``entry.import_status()`` asked of its worker (``Entry.worker``), after its side
    environment's state: the import that kills the worker or does not answer within
    ``timeout`` seconds is an answer too. A stop (``isolation.Stop``) is not: it propagates."""
    missing = entry.environment_status()
    if missing is not None:
        return missing
    try:
        return entry.worker().call(entry.import_status, timeout=timeout)
    except isolation.Fault as fault:
        if fault.kind == "stopped":
            raise
        return (ImportStatus("import_crashed", fault.how) if fault.kind == "died"
                else ImportStatus("import_timed_out", f"{fault.seconds:g}"))
    except isolation.Raised as exc:  # the entry's own import_status raised
        return ImportStatus("import_failed", exc.text)


def ask_library(entry: Entry, qrels: Qrels, run: Run,
                measures: list[Measure]) -> dict[Measure, LibraryValues]:
    """``entry``'s values with its library called even where ``known_failure`` refuses (a
    module-level function, so that a child process can be given it)."""
    return entry.asking_the_library().evaluate(qrels, run, measures)
