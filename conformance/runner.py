"""Running library entries beside the reference over cases: the engine of ``conformance run``.

Every available entry evaluates every case once (all the case's measures in one call), then each
case x measure is compared and explained (``explain.compare``). An entry whose library cannot be
used is listed as unavailable, with what happened (``ImportStatus``); an entry that fails on a
case has its error recorded for that case.

Isolation. ``conformance run`` wraps every entry in an :class:`IsolatedEntry`, whose calls run
in the persistent worker process of the entry's ``worker_key`` (``conformance.isolation``: one
per library, or per entry where the library keeps process-global state), with a time limit
(``--lib-timeout``). The case's ``(qrels, run)`` is pickled once per case and sent to a worker
only when it does not hold it already (entries of one library share their worker), so a large
run is not copied per entry. Faults become results instead of crashes:

- the worker dies (os.abort, SIGSEGV, ``sys.exit`` inside the library, killed from outside):
  every measure of that entry on that case gets the error ``library worker died (killed by
  signal SIGABRT) ...`` or ``(exit status N)``; the next case starts a fresh worker;
- the worker does not answer within the time limit: its whole process group is killed and
  every measure gets ``library did not finish within T s``.

An exception raised inside the library is not a fault: ``Entry.evaluate`` records it per measure
in the worker, as it does in-process. An exception in the adapter around it (the entry's own
``evaluate`` raising) comes back as that entry's error for the case.

Whether a library can be used is asked of its worker too: it is imported there (once, where it
is needed), never in this process, so an import that crashes or hangs costs that library, not
the run, and is reported as such: crashed while importing (the signal), timed out while
importing (the limit), failed to import (the error) or not installed (the pip command).

Error texts hold no pid, address or time (``stable_error`` strips XGBoost's clock prefix and
native stack trace), so the JSON report stays byte-identical across runs.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from conformance import isolation
from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.errors import stable_error
from conformance.explain import Comparison, Reference, compare, within
from conformance.libs.base import Entry, ImportStatus, LibraryValues, longest_list, status_in_worker
from conformance.measures import Measure
from conformance.reference.prepare import Prepared

DEFAULT_TIMEOUT = 300.0  # seconds per entry and case; the corpus's slowest call takes ~2 s


@dataclass
class Subject:
    """One thing to compare on: a named case (from the corpus or the user's files)."""

    name: str
    qrels: Qrels
    run: Run
    measures: list[Measure]
    description: str = ""  # one sentence shown beside the case in reports (optional)


@dataclass
class RunResult:
    entries: list[Entry]
    available: dict[str, bool]
    versions: dict[str, str | None]
    comparisons: list[Comparison] = field(default_factory=list)
    # The subjects compared, in run order: the HTML report reads their qrels and runs to show
    # each disagreement position by position. Not part of to_json().
    subjects: list[Subject] = field(default_factory=list)
    # What importing each entry's library gave (why an unavailable one is). Not in to_json().
    status: dict[str, ImportStatus] = field(default_factory=dict)
    # The entry whose agreement class the others are labelled against (the profile the user
    # named, when it is an entry of the run; else trec_eval). Not in to_json().
    anchor: str = "trec_eval"
    # The reference under the user's own conventions (``run --profile/--set``), per (case,
    # measure text): {"profile", "set", "mean", "high", "per_query"}. Not in to_json().
    reference: dict[tuple[str, str], dict] = field(default_factory=dict)

    @property
    def summary(self) -> dict[str, int]:
        disagreements = sum(c.disagreements for c in self.comparisons)
        unexplained = sum(len(c.unexplained) for c in self.comparisons)
        explained = sum(
            1 for c in self.comparisons for e in c.explanations if e.axes is not None
        )
        return {
            "comparisons": len(self.comparisons),
            "disagreements": disagreements,
            "explained": explained,
            "unexplained": unexplained,
        }

    def table(self) -> list[dict]:
        """Per case x measure, every entry's value grouped into its agreement class: what
        ``conformance run`` shows first.

        One record per comparison, in run order: ``case``, ``metric`` and ``classes``, a list
        of ``{"entries": [...], "apart": {axis: value}, "base": bool, "explained": bool}``.
        Each entry is ``{"entry", "mean", "queries", "error"}``: its mean (None when it
        failed), the number of queries it gave a value for, and its error text (None when
        it has none). The base class is the one holding ``anchor`` (trec_eval unless the user
        named a profile; then trec_eval's class, then the first class, when the anchor is not
        among them); ``apart`` gives, for every other class, the axes that
        explain its difference from the base class, with this class's value of each (empty
        and ``explained`` False when no set of conventions explains it). Entries whose library
        failed as documented (``Entry.known_failure``) form a last class of their own, with
        ``known`` True.

        With the user's own conventions (``reference``), each record also has ``reference``:
        ``{"profile", "set", "mean", "high", "queries", "error", "class"}``, ``class`` the index
        of the class whose representative it agrees with query by query (None: none), ``error``
        why the conventions refuse this input (``single_document=raise``), else None.
        """
        rows = []
        for c in self.comparisons:
            base = next((cls for cls in c.classes if self.anchor in cls),
                        next((cls for cls in c.classes if "trec_eval" in cls),
                             c.classes[0] if c.classes else []))

            def entry(name: str) -> dict:
                return {"entry": name, "mean": c.values.get(name),
                        "queries": len(c.per_query.get(name) or {}),
                        "error": c.errors.get(name) or c.known_failures.get(name)}

            classes = []
            for cls in c.classes:
                apart: dict[str, str] = {}
                explained = True
                if cls is not base:
                    e = next((e for e in c.explanations
                              if {e.between[0] in base, e.between[1] in base} == {True, False}
                              and (e.between[0] in cls or e.between[1] in cls)), None)
                    explained = e is not None and e.axes is not None
                    if explained:
                        mine = 1 if e.between[1] in cls else 0
                        apart = {a: e.switched[a][mine] for a in e.axes}
                classes.append({"entries": [entry(n) for n in cls], "apart": apart,
                                "base": cls is base, "explained": explained, "known": False})
            if c.known_failures:
                classes.append({"entries": [entry(n) for n in c.known_failures], "apart": {},
                                "base": False, "explained": True, "known": True})
            row = {"case": c.case, "metric": c.metric, "classes": classes}
            ours = self.reference.get((c.case, c.metric))
            if ours is not None:
                row["reference"] = {
                    **{k: ours[k] for k in ("profile", "set", "mean", "high", "error")},
                    "queries": len(ours["per_query"]),
                    "class": None if ours["error"] is not None else next(
                        (i for i, cls in enumerate(c.classes)
                         if _agrees(ours["per_query"], c.per_query.get(cls[0]), c.tolerance)), None)}
            rows.append(row)
        return rows

    def to_json(self) -> dict:
        return {
            "libraries": {
                e.name: {"version": self.versions[e.name], "available": self.available[e.name]}
                for e in sorted(self.entries, key=lambda e: e.name)
            },
            "comparisons": [c.to_json() for c in self.comparisons],
            "summary": self.summary,
        }

    def __str__(self) -> str:
        """The answer ``conformance run`` prints (``conformance.run_text``)."""
        from conformance.run_text import render

        return render(self)

    __repr__ = __str__  # in a console too: the tables, not the fields

    def dumps(self) -> str:
        """Stable JSON: sorted keys, no timestamps; the same input gives the same bytes."""
        return json.dumps(self.to_json(), sort_keys=True, indent=1, allow_nan=False) + "\n"


def _agrees(ours: dict[str, float], theirs: dict[str, float] | None, tolerance: float) -> bool:
    """Whether two per-query value maps hold the same queries and values within ``tolerance``
    (``explain.within``: relative above 1; NaN agreeing with NaN only)."""
    if theirs is None or ours.keys() != theirs.keys():
        return False
    for q, v in ours.items():
        w = theirs[q]
        if v != v or w != w:
            if not (v != v and w != w):
                return False
        elif abs(v - w) > within(tolerance, max(abs(v), abs(w))):
            return False
    return True


def _evaluate_group(entries: list[Entry], subject: Subject,
                    stop: isolation.Stop) -> dict[str, dict[Measure, LibraryValues]]:
    """One library's entries on one case, in order (they share one worker process)."""
    out = {}
    with stop.covering():
        for e in entries:
            if stop.is_set():
                break
            wanted = [m for m in subject.measures if e.supports(m)]
            if wanted:
                out[e.name] = e.evaluate(subject.qrels, subject.run, wanted)
    return out


def _groups(live: list[Entry]) -> dict[str, list[Entry]]:
    """Entries by the worker process that runs them. Entries evaluated in this process (not
    isolated: tests and the library API) form one group, so they never run two at a time."""
    groups: dict[str, list[Entry]] = {}
    for e in live:
        groups.setdefault(e.worker_key if isinstance(e, IsolatedEntry) else "", []).append(e)
    return groups


def statuses(entries: list[Entry]) -> dict[str, ImportStatus]:
    """``import_status()`` of every entry, the libraries asked at the same time: each worker
    imports its library to answer, and torch or ranx take seconds to import. Ctrl-C or a stop
    signal meanwhile kills the workers at once."""
    groups = _groups(entries)
    stop = isolation.Stop()

    def ask(group: list[Entry]) -> list[ImportStatus]:
        with stop.covering():
            return [e.import_status() for e in group]

    pool = ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="import")
    try:
        answers = dict(zip(groups, pool.map(ask, groups.values())))
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return {e.name: status for key, group in groups.items()
            for e, status in zip(group, answers[key])}


def evaluate_at_once(entries: list[Entry], subject: Subject,
                     timeout: float | None = DEFAULT_TIMEOUT
                     ) -> tuple[dict[str, ImportStatus], dict[str, dict[Measure, LibraryValues]]]:
    """Each entry on ``subject``'s measures it supports, every library in a worker process of
    its own, all at the same time: (what importing each gave, the outputs of those that could
    be used). A library that crashes or hangs past ``timeout`` costs its own output (its
    ``LibraryValues.error`` says what happened), not the others'."""
    chosen = isolate(entries, timeout)
    status = statuses(chosen)
    groups = _groups([e for e in chosen if status[e.name].available])
    stop = isolation.Stop()
    pool = ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="lib")
    try:
        futures = [pool.submit(_evaluate_group, group, subject, stop) for group in groups.values()]
        outputs: dict[str, dict[Measure, LibraryValues]] = {}
        for f in futures:
            outputs.update(f.result())
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return status, outputs


def availability(entries: list[Entry]) -> dict[str, bool]:
    """Whether each entry can be used (``statuses``, asked of the workers at the same time)."""
    return {name: s.available for name, s in statuses(entries).items()}


def run_entries(
    entries: list[Entry],
    subjects: Iterable[Subject],
    tolerance: float | None = None,
    progress: Callable[[str], None] | None = None,
    named: Iterable[str] = (),
) -> RunResult:
    """Evaluate every case with every available entry and compare.

    ``named``: the entries the user asked about by name; every pair of them that disagrees
    is explained directly (``explain.compare``), not only through class representatives.

    Each library's worker process works through the cases in order on a thread of its own, so
    the libraries run at the same time (on as many cores as there are) and a slow one (ranx's
    first numba compile) does not hold up the others; this thread computes the reference for a
    case while the libraries work on it and compares a case once every library has answered.
    Results do not depend on that timing: comparisons are made and listed in case order.
    """
    subjects, named = list(subjects), list(named)
    status = statuses(entries)
    available = {name: s.available for name, s in status.items()}
    result = RunResult(entries, available, {e.name: (e.version() if available[e.name] else None)
                                            for e in entries}, status=status)
    live = [e for e in entries if available[e.name]]
    by_name = {e.name: e for e in live}
    groups = _groups(live)
    pools = {key: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"lib-{key or 'local'}")
             for key in groups}
    stop = isolation.Stop()
    try:
        pending = [{key: pools[key].submit(_evaluate_group, group, subject, stop)
                    for key, group in groups.items()} for subject in subjects]
        for subject, futures in zip(subjects, pending):
            result.subjects.append(subject)
            # one join and one memo of reference predictions per case, shared by every measure;
            # the reference is computed here while the libraries work on the case
            prep = Reference(Prepared(subject.qrels, subject.run))
            own: dict[Conventions, list[Measure]] = {}  # each entry's profile -> its measures
            for e in live:
                for m in subject.measures:
                    if e.supports(m):
                        own.setdefault(e.profile(m), []).append(m)
            for conv, measures in own.items():
                prep.prefetch(measures, conv)
            outputs: dict[str, dict[Measure, LibraryValues]] = {}
            for key in groups:
                outputs.update(futures[key].result())
            _compare_subject(result, subject, prep, live, by_name, outputs, tolerance, named)
            if progress is not None:
                progress(subject.name)
    except BaseException:
        # Ctrl-C, a stop signal, or a bug: stop now, not when the libraries' current calls
        # end (up to --lib-timeout): nothing more is started, and the processes of the calls
        # in flight are killed, which ends those calls at once
        stop.set()
        raise
    finally:
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
    return result


def _compare_subject(result: RunResult, subject: Subject, prep: Reference, live: list[Entry],
                     by_name: dict[str, Entry], outputs: dict[str, dict[Measure, LibraryValues]],
                     tolerance: float | None, named: list[str] = ()) -> None:
    longest = longest_list(subject.run)
    for m in subject.measures:
        per_entry = {
            e.name: (e.profile(m), e.tolerance_for(m, longest), outputs[e.name][m])
            for e in live
            if e.name in outputs and m in outputs[e.name]
        }
        # a documented library failure (Entry.known_failure) that did fail is expected
        known = {n: reason for n in per_entry if per_entry[n][2].error is not None
                 and (reason := by_name[n].known_failure(subject.qrels, subject.run, m))}
        if per_entry:
            result.comparisons.append(compare(subject.name, prep, m, per_entry, tolerance, known, named))


# --- entries in worker processes ----------------------------------------------------------------

# Cases pickled once for all entries, most recent last. Libraries run on threads of their own
# and may be at different cases, hence a few; each payload holds its qrels and run, so an
# identity check cannot match a new object at a reused id.
_PAYLOADS: list[isolation.Payload] = []
_PAYLOAD_SLOTS = 16
_PAYLOADS_LOCK = threading.Lock()


def _case_payload(qrels: Qrels, run: Run) -> isolation.Payload:
    with _PAYLOADS_LOCK:
        for p in _PAYLOADS:
            if p.values[0] is qrels and p.values[1] is run:
                return p
        p = isolation.Payload(qrels, run)
        _PAYLOADS.append(p)
        del _PAYLOADS[:-_PAYLOAD_SLOTS]
        return p


def _fault_text(fault: isolation.Fault, timeout: float | None) -> str:
    if fault.kind == "died":
        return f"library worker died ({fault.how}) while evaluating this case"
    if fault.kind == "timed_out":
        return (f"library did not finish within {timeout:g} s (--lib-timeout); "
                "its worker process was stopped")
    return "library call stopped (the run was interrupted)"


class IsolatedEntry:
    """An entry whose ``evaluate`` and ``import_status`` run in its worker process
    (``worker_key``), with a time limit.

    It holds the entry it wraps (``inner``) and is not one itself: everything the entry declares
    (name, profile, supports, tolerance, known failures, version, ...) is the wrapped entry's,
    asked of it in this process by attribute lookup, so no name is restated here and none can
    be answered by ``Entry``'s defaults instead of the wrapped entry's overrides. Only calling
    the library and importing it happen elsewhere.
    """

    def __init__(self, inner: Entry, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.inner, self.timeout = inner, timeout
        self._status: ImportStatus | None = None

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "timeout", "_status") or name.startswith("__"):
            raise AttributeError(name)  # not set yet (unpickling, copying): no recursion
        return getattr(self.inner, name)

    def available(self) -> bool:
        return self.import_status().available

    def import_status(self) -> ImportStatus:
        """Asked of the worker (once): the library is imported there, never here, and an import
        that kills its process or hangs makes the library unavailable rather than the run."""
        if self._status is None:
            # a stop is not an answer (the run is stopping): it propagates, nothing remembered
            self._status = status_in_worker(self.inner, self.timeout)
        return self._status

    def evaluate(self, qrels, run, measures):
        try:
            value = self.inner.worker().call(
                self.inner.evaluate, list(measures), payload=_case_payload(qrels, run),
                timeout=self.timeout)
        except isolation.Fault as fault:
            return {m: LibraryValues(error=_fault_text(fault, self.timeout)) for m in measures}
        except isolation.Raised as exc:
            return {m: LibraryValues(error=stable_error(exc.text)) for m in measures}
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
    """Each entry as an IsolatedEntry (one already isolated is kept)."""
    return [e if isinstance(e, IsolatedEntry) else IsolatedEntry(e, timeout) for e in entries]
