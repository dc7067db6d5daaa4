"""Running library entries beside the reference over cases: the engine of ``conformance run``.

Every available entry evaluates every case once (all the case's measures in one call), then each
case x measure is compared and explained (``explain.compare``). An entry that is not installed is
listed as unavailable; an entry that fails on a case has its error recorded for that case.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

from conformance.conventions import Conventions
from conformance.data import Qrels, Run
from conformance.explain import Comparison, Reference, compare
from conformance.libs.base import Entry, LibraryValues
from conformance.measures import Measure
from conformance.reference.prepare import Prepared


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

    def to_json(self) -> dict:
        return {
            "libraries": {
                e.name: {"version": self.versions[e.name], "available": self.available[e.name]}
                for e in sorted(self.entries, key=lambda e: e.name)
            },
            "comparisons": [c.to_json() for c in self.comparisons],
            "summary": self.summary,
        }

    def dumps(self) -> str:
        """Stable JSON: sorted keys, no timestamps; the same input gives the same bytes."""
        return json.dumps(self.to_json(), sort_keys=True, indent=1, allow_nan=False) + "\n"


def _evaluate_group(entries: list[Entry], subject: Subject,
                    cancelled: threading.Event) -> dict[str, dict[Measure, LibraryValues]]:
    """One library's entries on one case, in order (they share one worker process)."""
    out = {}
    for e in entries:
        if cancelled.is_set():
            break
        wanted = [m for m in subject.measures if e.supports(m)]
        if wanted:
            out[e.name] = e.evaluate(subject.qrels, subject.run, wanted)
    return out


def _groups(live: list[Entry]) -> dict[str, list[Entry]]:
    """Entries by the worker process that runs them. Entries evaluated in this process (not
    isolated: tests and the library API) form one group, so they never run two at a time:
    LightGBM's label_gain, for one, is process-global."""
    groups: dict[str, list[Entry]] = {}
    for e in live:
        groups.setdefault(getattr(e, "worker_key", None) or "", []).append(e)
    return groups


def availability(entries: list[Entry]) -> dict[str, bool]:
    """``available()`` of every entry, the libraries asked at the same time: each worker
    imports its library to answer, and torch or ranx take seconds to import."""
    groups = _groups(entries)
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        answers = dict(zip(groups, pool.map(lambda g: [e.available() for e in g], groups.values())))
    return {e.name: ok for key, group in groups.items() for e, ok in zip(group, answers[key])}


def run_entries(
    entries: list[Entry],
    subjects: Iterable[Subject],
    tolerance: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Evaluate every case with every available entry and compare.

    Each library's worker process works through the cases in order on a thread of its own, so
    the libraries run at the same time (on as many cores as there are) and a slow one (ranx's
    first numba compile) does not hold up the others; this thread computes the reference for a
    case while the libraries work on it and compares a case once every library has answered.
    Results do not depend on that timing: comparisons are made and listed in case order.
    """
    subjects = list(subjects)
    available = availability(entries)
    result = RunResult(entries, available, {e.name: (e.version() if available[e.name] else None)
                                            for e in entries})
    live = [e for e in entries if available[e.name]]
    by_name = {e.name: e for e in live}
    groups = _groups(live)
    pools = {key: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"lib-{key or 'local'}")
             for key in groups}
    cancelled = threading.Event()
    try:
        pending = [{key: pools[key].submit(_evaluate_group, group, subject, cancelled)
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
            _compare_subject(result, subject, prep, live, by_name, outputs, tolerance)
            if progress is not None:
                progress(subject.name)
    except BaseException:
        # Ctrl-C, or a bug: stop now, not when the libraries' current calls end (up to
        # --lib-timeout): nothing more is started, and the workers are killed, which ends
        # their calls at once
        cancelled.set()
        for group in groups.values():  # the entries of a group share one worker
            stop = getattr(group[0], "stop_worker", None)
            if stop is not None:
                stop()
        raise
    finally:
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
    return result


def _compare_subject(result: RunResult, subject: Subject, prep: Reference, live: list[Entry],
                     by_name: dict[str, Entry], outputs: dict[str, dict[Measure, LibraryValues]],
                     tolerance: float | None) -> None:
    for m in subject.measures:
        per_entry = {
            e.name: (e.profile(m), e.tolerance_for(m), outputs[e.name][m])
            for e in live
            if e.name in outputs and m in outputs[e.name]
        }
        # a documented library failure (Entry.known_failure) that did fail is expected
        known = {n: reason for n in per_entry if per_entry[n][2].error is not None
                 and (reason := by_name[n].known_failure(subject.qrels, subject.run, m))}
        if per_entry:
            result.comparisons.append(compare(subject.name, prep, m, per_entry, tolerance, known))
