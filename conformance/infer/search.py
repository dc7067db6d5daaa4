"""``conformance infer``: which convention sets a user's own metric function follows, found by
calling it on a few cases chosen one at a time.

The candidates are every cell of the measure's :class:`~conformance.infer.space.Space`. Each
step calls the function on the case of the pool (``conformance.infer.cases.pool``) that splits
the remaining candidates most evenly (the least expected number left, estimated on a seeded
sample of them), compares its answer with the reference's value under each remaining candidate
(``conformance.infer.table``) and keeps those it matches. It stops when no case of the pool
tells the remaining candidates apart (they are the answer), when none is left, or at the
budget of calls.

When none is left, the function follows no convention set of the space: the smallest case on
which it disagrees with every one of them is the finding, shrunk one document at a time while
it still disagrees with every one.

A value matches a candidate within ``tolerance`` (relative, and absolute below 1); a command's
printed number within half a unit of its last printed decimal; NaN matches a NaN value, and a
failure a candidate under which the reference refuses the case. A whole-run function that
returns ``{qid: value}`` is matched query by query (a query it leaves out counts as NaN; one
in only the qrels or only the run is not compared).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from conformance.conventions import format_value
from conformance.errors import ConformanceError
from conformance.infer.callers import Observation, caller
from conformance.infer.cases import Case, pool
from conformance.infer.space import Space, space_for
from conformance.infer.table import CaseTable
from conformance.measures import Measure, parse_measure
from conformance.paper.cover import table_lines

BUDGET = 100  # calls of the function at most
SAMPLE = 4000  # candidates a split is estimated on
CHUNK = 1 << 21  # cells matched at once over a whole space
TOLERANCE = 1e-9


@functools.lru_cache(maxsize=8)
def pool_tables(measure: Measure, signature: str, seed: int) -> tuple[CaseTable, ...]:
    """The pool's cases with their reference tables, once per process for a (measure,
    calling convention, seed): every function inferred for it shares them."""
    space = space_for(measure, signature)
    return tuple(CaseTable(c, space) for c in pool(measure.cutoff, signature, seed))


def matches(table: CaseTable, obs: Observation, idx: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    """Which cells ``idx`` give what the function did on ``table``'s case."""
    if obs.kind == "per_query":
        ok = np.ones(idx.shape[0], bool)
        for q in table.case.queries:
            if not (q.docs and q.labels):  # in one file only: no per-query value to compare
                continue
            v = obs.per_query.get(q.qid, math.nan)
            one = Observation("nan") if math.isnan(v) else Observation("value", v)
            ok &= matches(table.query(q.qid), one, idx, tolerance)
        return ok
    lo, hi, err = table.values(idx)
    if obs.kind == "error":
        return err
    if obs.kind == "nan":
        return ~err & np.isnan(lo)
    v = obs.value
    tol = 0.5 * 10.0 ** -obs.digits if obs.digits is not None else tolerance * max(1.0, abs(v))
    with np.errstate(invalid="ignore"):
        return ~err & (hi >= v - tol) & (lo <= v + tol)


def _over_space(table: CaseTable, obs: Observation, space: Space, cells: np.ndarray | None,
                tolerance: float) -> np.ndarray:
    """The cells among ``cells`` (None: the whole space) matching ``obs``.

    Matched once per class of alike cells, not once per cell: on each axis, values with equal
    keys in every table the observation is compared on (:meth:`CaseTable.alike`) give equal
    answers, so the classes' product is matched (in chunks) and spread back over the space."""
    tables = [table]
    if obs.kind == "per_query":
        tables += [table.query(q.qid) for q in table.case.queries if q.docs and q.labels]
    classes, reps = [], []
    for axis in space.axes:
        keys = list(zip(*(t.alike(axis) for t in tables)))
        first: dict = {}
        classes.append(np.array([first.setdefault(k, len(first)) for k in keys], np.int64))
        reps.append(np.array([keys.index(k) for k in first], np.int64))
    shape = tuple(r.size for r in reps)
    total = math.prod(shape)
    ok = np.zeros(total, bool)
    for start in range(0, total, CHUNK):
        flat = np.arange(start, min(total, start + CHUNK), dtype=np.int64)
        idx = (np.stack([r[i] for r, i in zip(reps, np.unravel_index(flat, shape))], axis=1)
               if shape else np.zeros((flat.size, 0), np.int64))
        ok[flat] = matches(table, obs, idx, tolerance)
    ok = ok.reshape(shape)[np.ix_(*classes)].ravel() if shape else np.repeat(ok, space.size)
    return np.flatnonzero(ok) if cells is None else cells[ok[cells]]


def _classes(table: CaseTable, idx: np.ndarray) -> np.ndarray:
    """Counts of the distinct answers the cells ``idx`` give on ``table``'s case."""
    lo, hi, err = table.values(idx)
    key = np.stack([err, np.isnan(lo), np.round(np.nan_to_num(lo), 9), np.round(np.nan_to_num(hi), 9)], axis=1)
    key[err, 1:] = 0
    return np.unique(key, axis=0, return_counts=True)[1]


@dataclass
class Step:
    """One call: the ``case``, what the function did (``observed``), and the candidates left."""

    case: Case
    observed: Observation
    remaining: int
    purpose: str = "split"  # split / finding (the shrinking of a disagreeing case)

    def to_dict(self) -> dict:
        return {"case": self.case.to_dict(), "observed": self.observed.to_dict(),
                "remaining": self.remaining, "purpose": self.purpose}


@dataclass
class Inferred:
    """The answer of :func:`infer`. ``space``: the candidates; ``consistent``: flat cells
    consistent with every case (sorted); ``steps``: every call; ``calls`` their number;
    ``stopped``: why the search ended; ``entries``: library entry -> "yes" / "no" / the
    values of its profile the space does not hold; ``finding``: the smallest case on which the
    function disagrees with every candidate, with what it did there (None when some candidate
    is consistent)."""

    space: Space
    consistent: np.ndarray
    steps: list[Step]
    stopped: str
    entries: dict[str, str]
    finding: Step | None = None
    function: str = ""
    rows: list[dict] = field(default_factory=list)
    truncated: bool = False

    @property
    def calls(self) -> int:
        return len(self.steps)

    @property
    def measure(self) -> str:
        return self.space.measure.text

    def contains(self, conventions) -> bool | None:
        """Is the convention set ``conventions`` (its values on the space's axes) consistent?
        None when one of its values is not in the space."""
        cell = self.space.cell(conventions)
        if cell is None:
            return None
        i = np.searchsorted(self.consistent, cell)
        return bool(i < self.consistent.size and self.consistent[i] == cell)

    @property
    def consistent_libraries(self) -> list[str]:
        return [n for n, v in self.entries.items() if v == "yes"]

    def table(self) -> list[dict[str, Any]]:
        """The consistent cells as rows: axis -> ``any``, a value, or a list of values."""
        out = []
        for row in self.rows:
            d = {}
            for a in self.space.axes:
                if row.get(a) is None:
                    d[a] = "any"
                else:
                    vals = [format_value(self.space.values[a][i]) for i in row[a]]
                    d[a] = vals[0] if len(vals) == 1 else vals
            out.append(d)
        return out

    def to_dict(self) -> dict:
        return {
            "function": self.function, "measure": self.measure, "calling": self.space.signature,
            "calls": self.calls, "stopped": self.stopped,
            "axes": {a: [format_value(v) for v in self.space.values[a]] for a in self.space.axes},
            "not_shown_by_the_calling_convention": dict(self.space.hidden),
            "candidates": self.space.size, "consistent_count": int(self.consistent.size),
            "consistent_conventions": self.table(), "rows_truncated": self.truncated,
            "libraries": dict(self.entries),
            "consistent_libraries": self.consistent_libraries,
            "finding": None if self.finding is None else self.finding.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
        }

    def dumps(self) -> str:
        import json

        return json.dumps(self.to_dict(), sort_keys=True, indent=2, allow_nan=False) + "\n"

    def render(self, max_rows: int = 12) -> str:
        """The plain-text answer the command line prints."""
        sp = self.space
        lines = [f"{self.function or 'function'} as {self.measure}, called as {sp.signature}: "
                 f"{self.calls} calls ({self.stopped})", ""]
        lines.append("cases")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i:>3}. case {s.case.number} ({s.case.kind}, {s.case.size} documents): "
                         f"{s.observed.shown()} -> {s.remaining:,} left"
                         + (" [shrinking the finding]" if s.purpose == "finding" else ""))
        lines.append("")
        n = int(self.consistent.size)
        lines.append(f"convention sets consistent with every case: {n:,} of {sp.size:,}")
        if n:
            lines += table_lines(self.table(), sp.axes, max_rows)
        else:
            lines.append("  none")
        if sp.hidden:
            lines.append(f"  not shown by this calling convention: {', '.join(sp.hidden)}")
        lines.append("")
        lines.append("library entries computing " + self.measure)
        yes = [k for k, v in self.entries.items() if v == "yes"]
        lines.append("  same conventions: " + (", ".join(yes) if yes else "none"))
        no = [k for k, v in self.entries.items() if v == "no"]
        if no:
            lines.append("  other conventions: " + ", ".join(no))
        out = [f"{k} ({v})" for k, v in self.entries.items() if v not in ("yes", "no")]
        if out:
            lines.append("  not comparable (values outside the space): " + ", ".join(out))
        if self.finding is not None:
            f = self.finding
            lines.append("")
            lines.append(f"finding: on this case the function gives {f.observed.shown()}, which no "
                         "convention set gives:")
            lines.extend("  " + t for t in f.case.text().splitlines())
        return "\n".join(lines) + "\n"


def _entries(space: Space, consistent: Inferred) -> dict[str, str]:
    from conformance.profiles import computes, entries, profile

    m = space.measure
    out = {}
    for e in entries():
        if not computes(e.name, m):
            continue
        conv = m.conventions(profile(e.name, m))
        outside = space.outside(conv)
        out[e.name] = ", ".join(outside) if outside else ("yes" if consistent.contains(conv) else "no")
    return out


def infer(fn: Callable | str, measure: str | Measure, calling: str = "ranked", *,
          budget: int = BUDGET, seed: int = 0, tolerance: float = TOLERANCE,
          progress: Callable[[int, int], None] | None = None) -> Inferred:
    """Which convention sets does ``fn`` follow for ``measure``?

    ``calling``: ``ranked`` (``fn(ranked_doc_ids, relevance_dict, k)``), ``arrays``
    (``fn(scores, labels, k)``), ``run`` (``fn(qrels_dict, run_dict, k)`` returning the mean or
    ``{qid: value}``) or ``shell`` (``fn`` a command with ``{qrels}``, ``{run}`` and ``{k}``
    that prints the mean). At most ``budget`` calls; the same ``seed``, the same cases.

    >>> def precision_at_k(ranked, rel, k):
    ...     return sum(1 for d in ranked[:k] if rel.get(d, 0) >= 1) / k
    >>> found = infer(precision_at_k, "P@10")
    >>> found.contains(conventions(k_beyond_list="k")), found.contains(conventions(k_beyond_list="min_k_n"))
    (True, False)
    """
    m = parse_measure(measure) if isinstance(measure, str) else measure
    space = space_for(m, calling)
    call = caller(fn, calling)
    name = fn if isinstance(fn, str) else f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', fn)}"
    tables = list(pool_tables(m, calling, seed))
    rng = np.random.default_rng(seed)
    steps: list[Step] = []
    used: set[int] = set()
    alive: np.ndarray | None = None  # None: every cell
    stopped = ""
    t = tables[0]  # a plain graded list every convention set scores: a failure there is misuse
    while True:
        obs = call(t.case, m.cutoff)
        if not steps and obs.kind == "error":
            raise ConformanceError(f"{name} fails on a plain ranked list every convention scores: {obs.text}")
        alive = _over_space(t, obs, space, alive, tolerance)
        used.add(t.case.number)
        steps.append(Step(t.case, obs, int(alive.size)))
        if progress:
            progress(len(steps), budget)
        if alive.size == 0:
            stopped = "no convention set is consistent"
            break
        if len(steps) >= budget:
            stopped = f"the budget of {budget} calls was reached"
            break
        t = _best_split(tables, used, alive, space, rng)
        if t is None:
            stopped = "no case of the pool tells the remaining convention sets apart"
            break
    result = Inferred(space, np.sort(alive), steps, stopped, {}, function=name)
    if alive.size == 0:
        result.finding = _finding(result, tables, call, m, tolerance, budget)
    else:
        from conformance.paper.cover import cover

        ok = np.zeros(space.size, bool)
        ok[alive] = True
        result.rows, result.truncated = cover(ok.reshape(space.shape), list(space.axes),
                                              [space.values[a] for a in space.axes])
    result.entries = _entries(space, result)
    return result


def conventions(**values):
    """The vocabulary defaults with ``values`` (a shorthand for examples and tests)."""
    from conformance.conventions import Conventions

    return Conventions().replace(**values)


def _best_split(tables, used, alive, space, rng) -> CaseTable | None:
    """The unused case whose answers split the remaining cells most evenly (None: none splits)."""
    sample = alive if alive.size <= SAMPLE else rng.choice(alive, SAMPLE, replace=False)
    idx = space.unravel(np.sort(sample))
    best, best_score = None, 1.0
    for t in tables:
        if t.case.number in used:
            continue
        counts = _classes(t, idx)
        score = float((counts.astype(np.float64) ** 2).sum()) / float(idx.shape[0]) ** 2
        if score < best_score - 1e-12:
            best, best_score = t, score
    if best is not None or alive.size <= SAMPLE:
        return best
    # the sample saw no split: look at every remaining cell before giving up
    idx = space.unravel(alive)
    for t in tables:
        if t.case.number not in used and _classes(t, idx).size > 1:
            return t
    return None


def _finding(result: Inferred, tables, call, m: Measure, tolerance: float, budget: int) -> Step | None:
    """The smallest case called on which the function disagrees with every cell, shrunk one
    document at a time (within the budget) while it still does."""
    space = result.space
    by_number = {t.case.number: t for t in tables}
    alone = [s for s in sorted(result.steps, key=lambda s: (s.case.size, s.case.number))
             if _over_space(by_number[s.case.number], s.observed, space, None, tolerance).size == 0]
    if not alone:
        return None
    best = alone[0]
    shrinking = True
    while shrinking and len(result.steps) < budget:
        shrinking = False
        for q in best.case.queries:
            for d in dict(q.docs) | dict(q.labels):
                smaller = best.case.without(q.qid, d)
                if smaller is None or len(result.steps) >= budget:
                    continue
                obs = call(smaller, m.cutoff)
                t = CaseTable(smaller, space)
                step = Step(smaller, obs, 0, "finding")
                result.steps.append(step)
                if _over_space(t, obs, space, None, tolerance).size == 0:
                    best, shrinking = step, True
                    break
            if shrinking:
                break
    return best
