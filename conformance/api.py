"""The public Python API: what ``import conformance`` offers, and what the command line calls.

Inputs are taken as a user holds them: :class:`~conformance.io.Qrels` / :class:`Run` values,
``{qid: {docid: value}}`` dicts, DataFrames, or paths of any format the readers take. Every
input is validated once, here at the boundary; what is wrong is one
:class:`~conformance.errors.ConformanceError` naming where and what.

- :func:`evaluate`: measures under a named profile, with any axis overridden;
- :func:`profile`, :func:`entries`: the conventions of every library entry, per measure;
- :func:`compare`: the library entries beside the reference, every disagreement explained
  (what ``conformance run`` reports);
- :func:`check_paper`: which conventions and entries reproduce reported values (what
  ``conformance check-paper`` reports).

>>> import conformance
>>> qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
>>> run = {"q1": {"a": 0.9, "b": 0.8, "c": 0.1}}
>>> result = conformance.evaluate(qrels, run, "P@2,nDCG@3")
>>> result.mean["P@2"]
0.5
>>> round(result.mean["nDCG@3"], 4)
0.9502
>>> conformance.evaluate(qrels, run, "nDCG@3", gain="exponential").mean["nDCG@3"] > 0.95
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from conformance.conventions import AXES, ConventionError, Conventions
from conformance.errors import ConformanceError
from conformance.io import load_qrels, load_run
from conformance.libs.base import Entry
from conformance.measures import Measure, parse_measures
from conformance.profiles import entries, profile, select_entries

__all__ = ["Evaluated", "check_paper", "compare", "entries", "evaluate", "profile"]

# The measures compared when none are named (the command line's default for a user's files).
DEFAULT_COMPARE = "nDCG@10,nDCG,AP,RR,P@10,R@100"


def _measures(measures: str | Measure | Sequence[str | Measure]) -> list[Measure]:
    if isinstance(measures, Measure):
        return [measures]
    if isinstance(measures, str):
        return parse_measures(measures)
    out: list[Measure] = []
    for m in measures:
        out.extend([m] if isinstance(m, Measure) else parse_measures(m))
    return out


def _conventions(name: str | Conventions, m: Measure, overrides: dict[str, Any]) -> Conventions:
    base = name if isinstance(name, Conventions) else profile(name, m)
    unknown = [a for a in overrides if a not in AXES]
    if unknown:
        base.replace(**{unknown[0]: None})  # raises ConventionError naming the axis
    return base.replace(**{a: AXES[a].parse(v) for a, v in overrides.items()})


@dataclass
class Evaluated:
    """The result of :func:`evaluate`: per measure (keyed by the name as given) its mean and
    its per-query values over the scored queries.

    Under ``ties=unspecified`` a measure's value is the range from the worst to the best order
    of the tied documents: ``low`` and ``high`` hold its ends, and ``mean`` / ``per_query``
    refuse that measure rather than give one end silently. Elsewhere ``low == high`` and
    ``mean`` / ``per_query`` are the values. ``conventions`` are the ones each measure was
    computed under (its profile's, the overrides, and what its name fixes).
    """

    measures: list[Measure]
    conventions: dict[str, Conventions]
    low: dict[str, float]
    high: dict[str, float]
    per_query_low: dict[str, dict[str, float]]
    per_query_high: dict[str, dict[str, float]]
    queries: list[str] = field(default_factory=list)

    def ranged(self, name: str) -> bool:
        """Whether the measure's value is a range (ties=unspecified)."""
        return self.conventions[name].ties == "unspecified"

    def _single(self, table: dict[str, Any]) -> dict[str, Any]:
        ranged = [m.text for m in self.measures if self.ranged(m.text)]
        if ranged:
            raise ConformanceError(
                f"{', '.join(ranged)}: under ties=unspecified the value is a range; read "
                ".low and .high (or .per_query_low and .per_query_high)")
        return table

    @property
    def mean(self) -> dict[str, float]:
        return self._single(self.low)

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        return self._single(self.per_query_low)

    def to_frame(self):
        """A long pandas DataFrame: one row per (measure, query) and one per measure with qid
        ``None`` for the aggregate; columns ``measure, qid, value`` (``low, high`` instead of
        ``value`` when some measure is a range)."""
        import pandas as pd

        ranged = any(self.ranged(m.text) for m in self.measures)
        rows = []
        for m in self.measures:
            t = m.text
            for q, lo in self.per_query_low[t].items():
                rows.append((t, q, lo, self.per_query_high[t][q]))
            rows.append((t, None, self.low[t], self.high[t]))
        frame = pd.DataFrame(rows, columns=["measure", "qid", "low", "high"])
        if not ranged:
            frame = frame.drop(columns="high").rename(columns={"low": "value"})
        return frame


def evaluate(qrels: Any, run: Any, measures: str | Measure | Sequence[str | Measure],
             profile: str | Conventions = "trec_eval", **overrides: Any) -> Evaluated:
    """Measures of ``run`` against ``qrels`` under ``profile``, with axes overridden.

    ``profile``: a profile name (any library entry, or ``trec_eval10``: see
    :func:`conformance.profiles.names`) or a :class:`Conventions`. Each measure is computed
    under that profile's conventions for it, then ``overrides`` (``gain="exponential"``,
    ``ties="input_order"``), then the axes its own name fixes (``P(rel=2)@5``). Measures that
    share conventions share one ranking of the run.

    A relevant and a non-relevant document tied at the top: RR is 1 or 1/2 by the tie order,
    and under ``ties=unspecified`` the result says so instead of picking one:

    >>> import conformance
    >>> r = conformance.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 1.0}}, "RR",
    ...                          ties="unspecified")
    >>> r.low["RR"], r.high["RR"]
    (0.5, 1.0)

    trec_eval's own rule (document ids descending) puts b first:

    >>> conformance.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 1.0}}, "RR").mean
    {'RR': 0.5}
    """
    from conformance.reference import evaluate as reference_evaluate
    from conformance.reference.prepare import Prepared

    ms = list(dict.fromkeys(_measures(measures)))
    if not ms:
        raise ConformanceError("no measure given")
    convs = {m: m.conventions(_conventions(profile, m, overrides)) for m in ms}
    duplicates = {c.duplicates for c in convs.values()}
    if len(duplicates) > 1:
        raise ConventionError("the measures read a run with duplicates under different rules; "
                              "set duplicates= for the whole evaluation")
    q = load_qrels(qrels)
    r = load_run(run, duplicates=duplicates.pop())
    prep = Prepared(q, r)
    groups: dict[Conventions, list[Measure]] = {}
    for m in ms:
        groups.setdefault(convs[m], []).append(m)
    low, high, pq_low, pq_high, queries = {}, {}, {}, {}, set()
    for conv, group in groups.items():
        # the group's conventions already hold every override: measures add none of their own
        ev = reference_evaluate(prep, None, [Measure(m.family, m.cutoff, (), m.alpha) for m in group], conv)
        for m, plain in zip(group, [Measure(m.family, m.cutoff, (), m.alpha) for m in group]):
            t = m.text
            low[t], high[t] = ev.aggregate(plain), ev.aggregate(plain, upper=True)
            pq_low[t] = ev.values(plain)
            keep = ev.counted[plain]
            pq_high[t] = dict(zip(ev.qids[keep].tolist(), ev.upper[plain][keep].tolist()))
            queries.update(np.asarray(ev.qids).tolist())
    return Evaluated(ms, {m.text: convs[m] for m in ms}, low, high, pq_low, pq_high, sorted(queries))


def compare(qrels: Any, run: Any, measures: str | Sequence[str | Measure] = DEFAULT_COMPARE,
            libs: str | Sequence[str] = "all", *, tolerance: float | None = None,
            timeout: float | None = None, name: str = "input"):
    """Every library entry in ``libs`` beside the reference on ``run``, every disagreement
    explained: a :class:`~conformance.runner.RunResult` (values per entry, comparisons with
    their explanations, ``summary``), what ``conformance run --qrels --run`` reports.

    Each library runs in a worker process of its own (a library that crashes or hangs past
    ``timeout`` seconds is recorded as that entry's error); a library that cannot be used is
    listed as unavailable, with what happened in ``result.status``.
    """
    from conformance.runner import DEFAULT_TIMEOUT, Subject, isolate, run_entries

    chosen = select_entries(libs)
    subject = Subject(name, load_qrels(qrels), load_run(run, duplicates="error"), _measures(measures))
    return run_entries(isolate(chosen, DEFAULT_TIMEOUT if timeout is None else timeout), [subject],
                       tolerance)


def check_paper(qrels: Any, run: Any, reported: str | Sequence[str], *,
                libs: str | Sequence[str] = "all", live: bool = True, digits: int | None = None,
                percent: bool = True, per_query_file: Any = None):
    """Which convention sets and library entries reproduce the values a paper reported for
    ``run``: a :class:`~conformance.paper.PaperResult` (``verdict``, ``consistent_conventions``,
    the entries' values and gaps, the nearest miss), what ``conformance check-paper`` reports.

    ``reported``: ``"nDCG@10=0.4312"`` texts (their printed digits set the rounding interval;
    ``digits`` overrides them; values above 1 are percentages unless ``percent=False``).
    ``live``: call the installed libraries (else each entry's declared profile decides).
    ``per_query_file``: a trec_eval ``-q`` output (``measure qid value``) matched query by query.
    """
    from conformance.paper import check_paper as _check
    from conformance.paper import parse_reported, read_reported_per_query

    texts = [reported] if isinstance(reported, str) else list(reported)
    values = [parse_reported(t, digits=digits, percent=percent) for t in texts]
    per_query = None if per_query_file is None else read_reported_per_query(
        per_query_file, digits=digits, percent=percent)
    chosen: list[Entry] = select_entries(libs)
    return _check(load_qrels(qrels), load_run(run, duplicates="error"), values, entries=chosen,
                  live=live, per_query_file=per_query)
