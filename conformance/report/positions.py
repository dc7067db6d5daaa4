"""Position-by-position tables: how one query's value is built under one convention set.

A table is a view of the reference's trace (``evaluate(..., trace=[query])``,
``conformance.reference.trace``): the query's ranked list as the profile orders and labels it,
each row's gain, discount, discounted gain and running DCG (graded measures) or relevance,
relevant so far, running precision and AP term (binary ones), the ideal list with its running
IDCG and where IDCG cuts it, the numerator and denominator the formula divided, and the
reference's value. Nothing here orders, labels, sums or divides: the rows, the ideal, the cut
and the denominator are the reference's; the formula's words are the ``Family`` record's.

``table_value`` reads the rows back (the running sum at the formula's cut, over the
denominator the trace names), so a test can hold the rows to the value they are said to make.
Under ``ties=unspecified`` the order shown is the end whose value is the query's low end;
under ``average`` the tied rows carry the expected pieces the reference sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.measures import Measure
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.reference.trace import COLUMNS, IdealRow, Trace, TraceRow

# The rows of a table are the trace's own rows
Position = TraceRow
IdealPosition = IdealRow

# Rows shown in full at the top of a table; of a longer list, also the row at the cutoff, up to
# KEEP_ROWS rows that add to the value further down, and the last row.
HEAD_ROWS = 12
KEEP_ROWS = 30


@dataclass
class PositionTable:
    query: str
    profile_name: str
    measure: str
    measure_family: str
    graded: bool
    cutoff: int | None
    n: int  # documents ranked (after depth)
    rows: list[TraceRow] = field(default_factory=list)
    ideal: list[IdealRow] = field(default_factory=list)
    hidden: int = 0  # rows not shown between the head and the last row
    ideal_hidden: int = 0
    relevant: int = 0  # R of the profile's relevance universe
    dcg: float | None = None  # DCG@k from the rows (graded)
    idcg: float | None = None  # IDCG@k from the ideal (graded)
    reference: tuple[float, float] | None = None  # the reference's per-query value (lo, hi)
    counted: bool = True  # False when empty_query=skip leaves the query out
    note: str = ""
    refused: str | None = None  # the reference's error under this profile (rows still shown)
    how: str = ""  # how the value is formed from the rows, in one line
    error: str | None = None
    trace: Trace | None = None

    @property
    def table_value(self) -> float | None:
        """The value the rows give: the sum of the trace's column over the rows the formula
        summed, over the denominator it names (for nDCG the ideal's running sum at its cut);
        None on a 0/0 query (empty_query decides) or when the formula shows no sum."""
        t = self.trace
        if t is None or t.empty or t.sums is None:
            return None
        inside = [r for r in self.rows if r.inside]
        if t.sums in ("rel", "discounted"):  # their running sums are in the rows
            last = inside[-1] if inside else None
            num = 0.0 if last is None else (last.running if t.sums == "discounted"
                                            else last.rel_so_far)
        else:
            num = math.fsum(getattr(r, t.sums) for r in inside)
        den = t.denominator
        if t.ideal_cut is not None:
            den = self.idcg
        if den == 1.0:
            return num
        return num / den if den else 0.0


def position_table(prep: Prepared, query: str, measure: Measure, conv: Conventions,
                   profile_name: str) -> PositionTable:
    """The table of ``query`` under ``conv`` (the measure's own overrides applied here:
    ``measure.conventions(conv)``)."""
    conv = measure.conventions(conv)
    table = PositionTable(query, profile_name, measure.text, measure.family,
                          measure.record.kind == "graded", measure.cutoff, 0)
    if query not in set(prep.qids.tolist()):
        table.error = f"query {query!r} is in neither the run nor the qrels"
        return table
    trace = _trace(table, prep, query, measure, conv)
    if trace is None:
        return table
    _fill(table, trace, measure, conv)
    return table


def _trace(table: PositionTable, prep: Prepared, query: str, measure: Measure,
           conv: Conventions) -> Trace | None:
    """The reference's trace of the query; when the profile refuses the input, the trace with
    the labels as given (what the refusal is about), else None with the error set."""
    try:
        traces = evaluate(prep, None, [measure], conv, trace=[query]).traces.get(measure, {})
    except EvaluationError as exc:
        table.refused = str(exc)
        try:
            shown_as = conv.replace(label_type="float", negative_labels="keep")
            traces = evaluate(prep, None, [measure], shown_as, trace=[query]).traces[measure]
        except EvaluationError:
            table.error = table.refused
            return None
        table.note = "labels shown as given: this profile refuses one of them"
    if query not in traces:
        table.counted = False
        table.note = f"the query is not scored under query_set={conv.query_set}"
        return None
    return traces[query]


def _fill(table: PositionTable, t: Trace, measure: Measure, conv: Conventions) -> None:
    table.trace = t
    table.rows, table.ideal, table.n = t.rows, t.ideal, len(t.rows)
    table.relevant = int(t.relevant)
    if table.refused is None:
        table.reference, table.counted = t.value, t.counted
    if table.graded:
        inside = [r for r in t.rows if r.inside]
        table.dcg = inside[-1].running if inside else 0.0
        if t.ideal_cut is not None:
            table.idcg = t.ideal[t.ideal_cut - 1].running if t.ideal_cut > 0 else 0.0
    notes = [table.note] if table.note else []
    if any(r.tie_group is not None for r in t.rows):
        if conv.ties == "unspecified":
            notes.append(f"ties=unspecified: the value is a range over the orders of each tied "
                         f"group; the order shown ({t.tie_rule}) gives its low end")
        elif conv.ties in ("pessimistic", "optimistic"):
            notes.append(f"ties={conv.ties}: tied rows are shown as the rule orders them, the "
                         f"{'lower' if conv.ties == 'pessimistic' else 'higher'} label first "
                         "(unjudged as label 0), equal labels by docid descending")
        elif conv.ties == "average":
            notes.append("ties=average: rows of a tied group carry the group's mean gain and "
                         "relevance, the expected value over its orders")
    if t.listed > len(t.rows):
        notes.append(f"depth={conv.depth}: the run is cut to its first {conv.depth} documents "
                     f"({t.listed - len(t.rows)} more are never scored)")
    table.note = "; ".join(notes)
    table.how = _how(measure, conv, t)


def _f(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else f"{x:.4f}"


def _how(m: Measure, conv: Conventions, t: Trace) -> str:
    """One line: the family's formula (its record's words) and the numbers it divides here."""
    words = f"{m.text}: {m.record.formula}"
    if t.empty:
        return f"{words}; 0/0 here (nothing relevant): empty_query={conv.empty_query} decides"
    if t.sums is None:
        return words
    den = t.denominator
    where = f"{COLUMNS[t.sums]} over the top {t.cut} rows = {_f(t.numerator)}"
    if t.denominator_is == "1":
        return f"{words}; here {where}"
    return f"{words}; here {where}, / {t.denominator_is} = {_f(den)}"


def shown(items: list, cutoff: int | None, keep=None) -> tuple[list, int]:
    """The rows a table shows: all when few; else the first ``HEAD_ROWS``, the row at the
    cutoff, the rows ``keep`` selects (relevant or gaining rows: where the value comes from,
    at most ``KEEP_ROWS`` of them) and the last row. Hidden rows become ``None`` gaps (one per
    run of hidden rows); the second value counts the hidden rows."""
    n = len(items)
    if n <= HEAD_ROWS + 2:
        return list(items), 0
    want = set(range(HEAD_ROWS)) | {n - 1}
    if cutoff is not None and cutoff <= n:
        want.add(cutoff - 1)
    if keep is not None:
        extra = [i for i in range(HEAD_ROWS, n) if keep(items[i])][:KEEP_ROWS]
        want.update(extra)
    out: list = []
    prev = -1
    for i in sorted(want):
        if i > prev + 1:
            out.append(None)
        out.append(items[i])
        prev = i
    return out, n - len(want)
