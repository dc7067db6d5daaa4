"""The answer of ``conformance check-paper``: the reproducing convention sets, the entries that
reproduce the reported values, the nearest miss, and a one-sentence verdict.

Checking a paper: which conventions reproduce the values a paper reports for a run.

Given qrels, a run and reported values (``nDCG@10=0.4312``, ``AP=27.10``), :func:`check_paper`
evaluates the reference over every combination of the convention values that can change those
measures (the *sweep*), and answers:

- the convention sets that reproduce every reported value at once (one toolkit made all the
  numbers), summarised as a few rows in which an axis whose every value works reads ``any``;
- which library entries reproduce them, and what every other entry gives instead;
- for a reported value that nothing reproduces, the nearest value the sweep found;
- a one-sentence verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from conformance.conventions import AXES, Conventions, TREC_EVAL10, format_value
from conformance.io.data import Qrels, Run
from conformance.measures import Measure
from conformance.paper.cover import distance_to_default, cover, row_text, table_lines
from conformance.paper.evidence import (NOT_NEEDED, TIE_ORDER, EntryCheck, EntryEvidence,
                                        gather_entries, judge_entries, ranged)
from conformance.paper.reported import PerQueryFile, Reported, ReportedError
from conformance.reference.prepare import Prepared
from conformance.reference.sweep import Grid, Sweep, reads


def ok_mask(grid: Grid, reported: Sequence[Reported]) -> np.ndarray:
    """Cells of ``grid`` that reproduce every value in ``reported`` (all of grid's measure)."""
    ok = ~grid.error
    for r in reported:
        if r.qid is None:
            ok &= (grid.hi >= r.lo) & (grid.lo <= r.hi)
    if grid.pq_total:
        ok &= grid.pq_hits == grid.pq_total
    return ok


def _phrase(axis: str, values: list) -> str:
    """The verdict's words for the values of ``axis`` that reproduce (the axis records')."""
    ax = AXES[axis]
    if len(values) == 1:
        return ax.phrase(values[0])
    texts = [format_value(v) for v in values]
    if ax.open_phrase and not any(t in ax.values for t in texts):
        return ax.open_phrase.format(" or ".join(texts))  # relevance from label 1 or 2
    if ax.open_phrase:
        return " or ".join(ax.phrase(v) for v in values)  # the whole run or the run cut to 100
    return f"{axis} " + " or ".join(texts)


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _num(v: float | None, digits: int = 4) -> str:
    if v is None or math.isnan(v):
        return "nan"
    return f"{v:.{digits}f}"


@dataclass
class Miss:
    """The swept combination nearest a reported measure that nothing reproduces: ``value`` (its
    aggregate), ``gap`` (signed distance from the rounding interval: > 0 above), the swept
    ``conventions`` (axis -> value), and for per-query values how many of ``queries`` matched."""

    metric: str
    value: float
    gap: float
    conventions: dict[str, Any]
    matched_queries: int | None = None
    queries: int | None = None


@dataclass
class PaperResult:
    """The answer of :func:`check_paper`. Public and stable (the HTML report reads them):

    - ``reported``: every :class:`Reported` value (aggregates, then per-query ones);
      ``aggregates`` the aggregates only;
    - ``sweep``: the :class:`Sweep` (``sweep.grids[measure]``: a :class:`Grid` of that measure's
      values over its own axes; ``sweep.domains[axis]``: the values swept; ``sweep.facts``);
    - ``axes``: the swept axes of the reported measures, in vocabulary order; ``joint_ok``: a
      boolean array over them (shape ``[len(sweep.domains[a]) for a in axes]``), True where the
      combination reproduces every reported value; ``lookup(conv)`` reads it for one
      ``Conventions``;
    - ``rows`` / ``consistent_conventions``: a few rows covering exactly the True cells (axis ->
      value indices or None for any / axis -> public text, ``"any"``, a value or a list);
      ``truncated`` when more than 1,000 rows would be needed;
    - ``per_metric_count``: measure text -> combinations reproducing that measure's values alone;
    - ``entries``: one :class:`EntryCheck` per library entry (``metrics[measure text]`` an
      :class:`EntryMetric`: live value, profile range, errors, ``reproduces``);
      ``consistent_libraries`` / ``inconsistent_libraries`` the issue's summaries;
    - ``misses``: a :class:`Miss` per reported measure that no combination reproduces;
    - ``verdict``: the plain sentence; ``to_dict()`` / ``dumps()`` the JSON; ``render()`` the text.
    """

    reported: list[Reported]
    per_query_file: PerQueryFile | None
    sweep: Sweep
    axes: list[str]
    joint_ok: np.ndarray
    rows: list[dict]
    truncated: bool
    per_metric_count: dict[str, int]
    entries: list[EntryCheck]
    misses: list[Miss]
    verdict: str = ""
    # the reference under the user's own conventions (check-paper --profile / --set): {"profile",
    # "set", "metrics": {measure text: {"low", "high", "error", "reproduces"}}}; None: not asked
    own: dict | None = None

    @property
    def reproducible(self) -> bool:
        """Some swept convention set reproduces every reported value, or a library entry does
        under the profiles it declares for each measure (check-paper exits 0; else 1)."""
        return bool(self.joint_ok.any()) or bool(_by_measure_profiles(self.entries))

    @property
    def aggregates(self) -> list[Reported]:
        return [r for r in self.reported if r.qid is None]

    @property
    def consistent_conventions(self) -> list[dict[str, Any]]:
        doms = [self.sweep.domains[a] for a in self.axes]
        return [row_text(r, self.axes, doms) for r in self.rows]

    @property
    def consistent_libraries(self) -> list[str]:
        return [e.name for e in self.entries if e.consistent]

    @property
    def inconsistent_libraries(self) -> dict[str, dict[str, float | None]]:
        out = {}
        for e in self.entries:
            if e.consistent:
                continue
            out[e.name] = {k: (None if not m.supported else m.value) for k, m in e.metrics.items()}
        return out

    def lookup(self, conv: Conventions) -> bool | None:
        """Does the swept combination ``conv`` reproduce every reported value? None when a value
        of ``conv`` on a swept axis lies outside the sweep."""
        # an axis the input collapses to one value is in no grid's shape: the values it stands
        # for are equivalent on this input, but a value the sweep never tries (trectools'
        # query_set=run_all) is outside it
        for m in self.sweep.grids:
            fixed = {a for a, _ in m.overrides}
            # an axis the family reads that is never swept holds its default: another value is
            # outside the sweep (sweep.UNTRIED_VALUES)
            if any(AXES[a].swept == () and getattr(conv, a) != AXES[a].default
                   for a in set(m.record.axes) - fixed):
                return None
            for a in reads(m) - fixed:
                swept = AXES[a].swept
                if a not in self.axes and swept and getattr(conv, a) not in swept:
                    return None
        idx = []
        for a in self.axes:
            v = getattr(conv, a)
            dom = self.sweep.domains[a]
            if v not in dom:
                return None
            idx.append(dom.index(v))
        return bool(self.joint_ok[tuple(idx)]) if self.axes else bool(self.joint_ok)

    def to_dict(self) -> dict:
        def clean(v):
            if isinstance(v, float) and math.isnan(v):
                return None
            return v

        details = {
            "axes": {a: [format_value(v) for v in self.sweep.domains[a]] for a in self.axes},
            "combinations": int(self.joint_ok.size),
            "consistent_combinations": int(self.joint_ok.sum()),
            "per_metric_consistent_combinations": dict(sorted(self.per_metric_count.items())),
            "rows_truncated": self.truncated,
            "libraries": {e.name: e.to_dict() for e in self.entries},
            "nearest_misses": [
                {"metric": x.metric, "value": clean(x.value), "gap": clean(x.gap),
                 "conventions": {a: format_value(v) for a, v in x.conventions.items()},
                 **({"matched_queries": x.matched_queries, "queries": x.queries}
                    if x.queries is not None else {})}
                for x in self.misses
            ],
            "queries": {"scored": self.sweep.facts.scored_queries,
                        "qrels_only": self.sweep.facts.qrels_only_queries,
                        "run_only": self.sweep.facts.run_only_queries},
        }
        if self.per_query_file is not None:
            details["per_query"] = self.per_query_file.to_dict()
        if self.own is not None:
            details["own_conventions"] = {
                "profile": self.own["profile"], "set": self.own["set"],
                "metrics": {k: {**v, "low": clean(v["low"]), "high": clean(v["high"])}
                            for k, v in sorted(self.own["metrics"].items())}}
        return {
            "reported": [r.to_dict() for r in self.aggregates],
            "consistent_conventions": self.consistent_conventions,
            "consistent_libraries": sorted(self.consistent_libraries),
            "inconsistent_libraries": {k: {m: clean(v) for m, v in d.items()}
                                       for k, d in sorted(self.inconsistent_libraries.items())},
            "verdict": self.verdict,
            "details": details,
        }

    def dumps(self) -> str:
        import json

        return json.dumps(self.to_dict(), sort_keys=True, indent=2, allow_nan=False) + "\n"

    def render(self, max_rows: int = 12) -> str:
        """The plain-text answer the command line prints."""
        lines: list[str] = []
        lines.append("reported")
        width = max([len(r.metric) for r in self.aggregates] + [6])
        for r in self.aggregates:
            shown = f"{r.printed}{'%' if r.percent and not r.printed.endswith('%') else ''}"
            lines.append(f"  {r.metric:<{width}}  {shown:<10} -> [{float(r.low):.{r.digits + 1}f}, "
                         f"{float(r.high):.{r.digits + 1}f}]")
        if self.per_query_file is not None:
            f = self.per_query_file.to_dict()
            lines.append(f"  {f['values']} per-query values from {f['source']}"
                         + (f" ({sum(f['ignored'].values())} lines of other measures skipped)"
                            if f["ignored"] else ""))
        lines.append("")
        n_ok, n_all = int(self.joint_ok.sum()), int(self.joint_ok.size)
        lines.append(f"convention sets that reproduce {'every reported value' if len(self.reported) > 1 else 'it'}: "
                     f"{n_ok:,} of {n_all:,} combinations swept")
        if self.rows:
            lines += table_lines(self.consistent_conventions, self.axes, max_rows)
            others = [a for a in ("gain", "discount", "ideal", "ties", "relevance_threshold", "depth")
                      if a not in self.axes]
            if others:
                lines.append(f"  (not read by these measures, or with one value on this input: {', '.join(others)})")
        else:
            lines.append("  none")
        for x in self.misses:
            conv = ", ".join(f"{a}={format_value(v)}" for a, v in x.conventions.items())
            if x.queries is not None:
                lines.append(f"  nearest for {x.metric} per query: {x.matched_queries} of {x.queries} "
                             f"queries match, with {conv}")
            else:
                lines.append(f"  nearest for {x.metric}: {_num(x.value)} ({x.gap:+.4f}) with {conv}")
        lines.append("")
        lines.append("library entries")
        name_w = max([len(e.name) for e in self.entries] + [5])
        for e in self.entries:
            parts = []
            for metric, m in e.metrics.items():
                if not m.supported:
                    parts.append(f"{metric} not computed")
                    continue
                v = m.value
                err = m.live_error if e.decided_by == "live" else m.profile_error
                if v is None:  # the error whole, on one line: a cut one can mislead
                    parts.append(f"{metric} error: {' '.join((err or 'no value').split())}")
                    continue
                if e.decided_by == "profile" and m.profile and m.profile[0] != m.profile[1]:
                    text = f"{_num(m.profile[0])}..{_num(m.profile[1])}"
                else:
                    text = _num(v)
                rs = [r for r in self.aggregates if r.metric == metric]
                if rs and not m.reproduces:
                    text += f" ({rs[0].gap(v):+.4f})"
                if m.agrees_with_profile is False:
                    text += " (live value differs from its declared profile: a finding)"
                if m.tie_range_covers:
                    text += " (another order of its tied documents would reproduce it)"
                parts.append(f"{metric} {text}")
            mark = "yes" if e.consistent else ("?  " if e.not_run == TIE_ORDER else "no ")
            if e.decided_by == "live":
                src = ""
            elif e.not_run == NOT_NEEDED:
                src = " [profile]"  # said once, below the list
            elif e.not_run == TIE_ORDER:
                src = " [tie order]"
            else:
                src = f" [profile; {e.not_run or 'library not run'}]"
            lines.append(f"  {mark} {e.name:<{name_w}}  " + "; ".join(parts) + src)
        if any(e.not_run == NOT_NEEDED for e in self.entries):
            lines.append("  [profile]: judged by the entry's declared profile; its library was not run, as "
                         "by that profile it cannot reproduce every value (the differential tests hold "
                         "each profile to its library)")
        undecided = [e.name for e in self.entries if e.not_run == TIE_ORDER]
        if undecided:
            lines.append("  [tie order]: by its declared profile some order of tied documents reproduces "
                         "the values, but the library's own order is unspecified, so only its run can "
                         f"tell; --libs {','.join(undecided)} runs it")
        if self.own is not None:
            own = ", ".join(f"{a}={v}" for a, v in self.own["set"].items())
            lines.append("")
            lines.append(f"your conventions ({self.own['profile']}{' with ' + own if own else ''})")
            for metric, v in self.own["metrics"].items():
                if v["error"] is not None:
                    lines.append(f"  no  {metric} error: {' '.join(v['error'].split())}")
                    continue
                text = _num(v["low"]) if v["low"] == v["high"] else f"{_num(v['low'])}..{_num(v['high'])}"
                rs = [r for r in self.aggregates if r.metric == metric]
                if rs and not v["reproduces"]:
                    text += f" ({rs[0].gap(v['low']):+.4f})"
                lines.append(f"  {'yes' if v['reproduces'] else 'no '} {metric} {text}")
        lines.append("")
        lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines) + "\n"


def _differing(conventions: dict[str, Any]) -> str:
    """``axis=value`` for the axes where ``conventions`` leave trec_eval's defaults."""
    parts = [f"{a}={format_value(v)}" for a, v in conventions.items() if v != getattr(TREC_EVAL10, a)]
    return ", ".join(parts) or "trec_eval's defaults"


def _verdict(result: PaperResult) -> str:
    sw = result.sweep
    shown = [f"{r.metric} = {r.printed}{'%' if r.percent and not r.printed.endswith('%') else ''}"
             for r in result.aggregates]
    if result.per_query_file is not None or any(r.qid is not None for r in result.reported):
        shown.append("the per-query values")
    what = _join(shown)
    plural = len(shown) > 1 or shown == ["the per-query values"]
    libs = [e for e in result.entries if e.consistent]
    te = next((e for e in result.entries if e.name == "trec_eval"), None)

    def default_clause() -> str:
        if te is None or te.consistent:
            return ""
        for metric, m in te.metrics.items():
            if m.supported and m.value is not None and not m.reproduces:
                return f"trec_eval's default gives {_num(m.value)} for {metric}"
        return ""

    def constraints(row: dict, skip: set[str]) -> list[str]:
        return [_phrase(a, [sw.domains[a][i] for i in row[a]]) for a in result.axes
                if row[a] is not None and a not in skip]

    if result.joint_ok.any():
        verb = "are" if plural else "is"
        # what every consistent combination shares
        common, common_axes = [], set()
        for ax, a in enumerate(result.axes):
            dom = sw.domains[a]
            present = np.flatnonzero(np.moveaxis(result.joint_ok, ax, 0).reshape(len(dom), -1).any(axis=1))
            if len(present) < len(dom):
                common.append(_phrase(a, [dom[i] for i in present]))
                if len(result.rows) > 1 and all(
                        row[a] is not None and list(row[a]) == list(present) for row in result.rows):
                    common_axes.add(a)
        if len(result.rows) == 1:
            cons = constraints(result.rows[0], set())
            text = f"{what} {verb} reproducible " + (
                f"with {_join(cons)}" if cons else "under every convention set swept")
        else:
            # axes every row pins to the same values, then what tells the rows apart
            alternatives = [_join(constraints(row, common_axes)) or "nothing more" for row in result.rows]
            shared = constraints(result.rows[0], set(result.axes) - common_axes)
            text = f"{what} {verb} reproducible"
            if shared:
                text += f" with {_join(shared)}"
            if len(alternatives) <= 3:
                text += (", and " if shared else " with ") + "either " + " or ".join(alternatives)
            else:
                text += f" ({len(alternatives)} families of convention sets; see the table)"
        if libs:
            text += f"; {_join([e.name for e in libs])} {'reproduces' if len(libs) == 1 else 'reproduce'} "
            text += "them" if plural else "it"
        else:
            text += "; no library entry reproduces " + ("them" if plural else "it")
        d = default_clause()
        if d:
            text += f"; {d}"
        return text + "."
    # nothing reproduces every value
    alone = [m for m, n in result.per_metric_count.items() if n > 0]
    if len(result.per_metric_count) > 1 and len(alone) == len(result.per_metric_count):
        text = (f"no single convention set reproduces {what} together, although each value alone "
                "is reproducible (the numbers may come from different tools or settings)")
    else:
        parts = []
        for x in result.misses:
            if x.queries is not None:
                parts.append(f"for {x.metric} at most {x.matched_queries} of {x.queries} per-query "
                             f"values match ({_differing(x.conventions)})")
            else:
                parts.append(f"the nearest {x.metric} is {_num(x.value)}, {abs(x.gap):.4f} "
                             f"{'above' if x.gap > 0 else 'below'} ({_differing(x.conventions)})")
        text = (f"{what} {'are' if plural else 'is'} not reproducible under any convention set swept"
                + ("; " + "; ".join(parts) if parts else ""))
    described = _by_measure_profiles(libs)
    for e in described:
        text += (f"; {e.name} reproduces {'them' if plural else 'it'} under the profile it "
                 f"declares for each measure ({e.profiles_by_measure})")
    others = [e for e in libs if e not in described]
    if others:
        text += (f"; yet {_join([e.name for e in others])} {'gives' if len(others) == 1 else 'give'} "
                 f"{'them' if plural else 'it'} (a library the sweep does not describe: a finding)")
    d = default_clause()
    if d:
        text += f"; {d}"
    return text + "."


def _by_measure_profiles(entries) -> list:
    """The entries that reproduce every value under profiles that differ by measure (one
    library call averaging some measures and micro-averaging another), each profile's value
    agreeing with the library's where it ran: described by the reference, measure by measure,
    where no single convention set holds them all."""
    return [e for e in entries if e.consistent and e.profiles_by_measure is not None
            and all(m.agrees_with_profile is not False for m in e.metrics.values())]


def _nearest(grid: Grid, reported: list[Reported]) -> Miss | None:
    """The cell of ``grid`` nearest to the reported values (largest gap smallest; then most
    per-query matches; then nearest the trec_eval defaults)."""
    valid = ~grid.error & ~np.isnan(grid.lo)
    if not valid.any():
        return None
    gap = np.zeros(grid.lo.shape)
    for r in reported:
        if r.qid is None:
            below = np.maximum(r.lo - grid.hi, 0.0)
            above = np.maximum(grid.lo - r.hi, 0.0)
            gap = np.maximum(gap, np.where(below > 0, below, above))
    score = np.where(valid, gap, np.inf)
    if grid.pq_total:
        hits = np.where(valid, grid.pq_hits, -1)
        best_hits = hits.max()
        score = np.where(hits == best_hits, score, np.inf)
    best = score.min()
    cands = [tuple(c) for c in np.argwhere(score == best).tolist()]
    c = min(cands, key=lambda c: (distance_to_default(c, grid.axes, grid.domains), c))
    v = float(grid.lo[c])
    agg = [r for r in reported if r.qid is None]
    g = agg[0].gap(v) if agg else 0.0
    if agg and g == 0.0 and not (agg[0].contains(v)):
        g = agg[0].gap(float(grid.hi[c]))
    return Miss(grid.measure.text, v, g, grid.conventions(c),
                int(grid.pq_hits[c]) if grid.pq_total else None,
                grid.pq_total if grid.pq_total else None)


@dataclass
class Evidence:
    """Everything :func:`answer` needs that does not depend on the reported values: the sweep
    (with the per-query reported values, which it matches query by query) and the entries."""

    prep: Prepared
    sweep: Sweep
    entries: list[EntryEvidence]
    per_query: tuple[Reported, ...]


def gather(qrels: Qrels, run: Run, measures: Sequence[Measure], *, per_query: Sequence[Reported] = (),
           entries=None, live: bool = True, progress: Callable[[str, int, int], None] | None = None,
           prep: Prepared | None = None) -> Evidence:
    """Sweep ``measures`` and check ``entries`` (default: all) on (qrels, run); ``live``: also
    run the installed libraries. ``per_query``: the per-query reported values to match."""
    if prep is None:
        prep = Prepared(qrels, run)
    per_query = tuple(r for r in per_query if r.qid is not None)
    measures = list(dict.fromkeys(list(measures) + [r.measure for r in per_query]))
    sweep = Sweep(prep, measures, per_query, progress)
    if entries is None:
        from conformance.libs import all_entries

        entries = all_entries()
    found = gather_entries(prep, qrels, run, measures, entries, live=live, progress=progress)
    return Evidence(prep, sweep, found, per_query)


def answer(evidence: Evidence, reported: Sequence[Reported],
           per_query_file: PerQueryFile | None = None) -> PaperResult:
    """The answer for ``reported`` (aggregates, plus the per-query values given to
    :func:`gather`, which are always part of the question)."""
    reported = [r for r in reported if r.qid is None] + list(evidence.per_query)
    if not reported:
        raise ReportedError("no reported value given")
    sweep = evidence.sweep
    measures = list(dict.fromkeys(r.measure for r in reported))
    missing = [m.text for m in measures if m not in sweep.grids]
    if missing:
        raise ValueError(f"not swept: {', '.join(missing)}; pass them to gather()")
    axes = sweep.union_axes(measures)
    joint = np.ones([len(sweep.domains[a]) for a in axes], bool)
    per_metric_count: dict[str, int] = {}
    misses: list[Miss] = []
    for m in measures:
        rs = [r for r in reported if r.measure == m]
        ok = sweep.broadcast(m, ok_mask(sweep.grids[m], rs), axes)
        per_metric_count[m.text] = int(np.broadcast_to(ok, joint.shape).sum())
        joint &= ok
        if not ok.any():
            miss = _nearest(sweep.grids[m], rs)
            if miss is not None:
                misses.append(miss)
    rows, truncated = cover(joint, axes, [sweep.domains[a] for a in axes])
    checks = judge_entries(evidence.entries, reported)
    result = PaperResult(reported, per_query_file, sweep, axes, joint, rows, truncated,
                         per_metric_count, checks, misses)
    result.verdict = _verdict(result)
    return result


def check_paper(qrels: Qrels, run: Run, reported: Sequence[Reported], *, entries=None,
                live: bool = True, per_query_file: PerQueryFile | None = None,
                progress: Callable[[str, int, int], None] | None = None,
                prep: Prepared | None = None, confirm: Sequence[str] = ("trec_eval",),
                timeout: float | None = None) -> PaperResult:
    """Which convention sets and library entries reproduce ``reported`` on (qrels, run)?

    ``reported``: aggregates and per-query values (:func:`parse_reported`,
    :func:`read_reported_per_query`); ``per_query_file`` adds a file's values. ``entries``:
    library entries to check (default: all). Every entry is first judged by its declared
    profile (the reference under it; the differential tests hold each profile to its library).
    ``live``: then run, all at once and each in a worker process of its own, the libraries the
    verdict rests on: the entries whose profile reproduces the values, and those in ``confirm``
    (the entries the user named; trec_eval, whose value the verdict quotes). The others stay
    judged by their profile, and say so (``EntryCheck.not_run``).
    """
    from conformance.paper.evidence import confirm_live

    reported = list(reported)
    if per_query_file is not None:
        reported += [r for r in per_query_file.values if r not in reported]
    if not reported:
        raise ReportedError("no reported value given")
    if entries is None:
        from conformance.libs import all_entries

        entries = all_entries()
    evidence = gather(qrels, run, [r.measure for r in reported],
                      per_query=[r for r in reported if r.qid is not None], entries=entries,
                      live=False, progress=progress, prep=prep)
    if live:
        checks = [c for c in judge_entries(evidence.entries, reported) if c.consistent]
        exact = [c.name for c in checks if not ranged(c)]
        # reproducing only through some order of tied documents: the library's own order
        # decides, so it is run when named, and otherwise said to be undecided
        tie_order = [c.name for c in checks if ranged(c)]
        if progress:
            progress("libraries", 0, 1)
        confirm_live(evidence.entries, entries, exact + list(confirm), qrels, run,
                     list(evidence.sweep.grids), timeout, tie_order=tie_order)
    return answer(evidence, reported, per_query_file)


