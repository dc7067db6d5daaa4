"""Checking a paper: which conventions reproduce the values a paper reports for a run.

Given qrels, a run and reported values (``nDCG@10=0.4312``, ``AP=27.10``), :func:`check_paper`
evaluates the reference over every combination of the convention values that can change those
measures (the *sweep*), and answers:

- the convention sets that reproduce every reported value at once (one toolkit made all the
  numbers), summarised as a few rows in which an axis whose every value works reads ``any``;
- which library entries reproduce them, and what every other entry gives instead;
- for a reported value that nothing reproduces, the nearest value the sweep found;
- a one-sentence verdict.

Reported values
===============

The printed precision of a number sets its rounding interval: ``0.4312`` stands for any value in
[0.43115, 0.43125] (closed, since a value exactly half-way may be printed either way). A value
above 1 of a measure that is a fraction (everything but DCG and the Num* counts) is a percentage
unless ``percent=False``: ``27.10`` is 0.2710, interval [0.27095, 0.27105]; a trailing ``%``
always means a percentage. ``digits`` overrides the number of printed decimals (a paper that
printed 0.4300 but whose value reached you as 0.43). Per-query values (trec_eval ``-q`` lines,
``measure qid value``) each have their own interval and must be matched query by query: the
query must be scored and counted, and its value in the interval.

The sweep
=========

Swept values (:data:`SWEPT_VALUES`); values that refuse the input (``raise``, ``nan``) are
never swept, since they cannot produce a reported number:

- ``gain`` linear/exponential, ``discount`` log2/jarvelin, ``ideal`` judged/retrieved,
  ``threshold_scope`` binary/graded (nDCG, DCG);
- ``ties`` docid_desc/docid_asc/input_order/reverse_input/average; ``score_precision``
  float64/float32;
- ``relevance_threshold`` 1 .. the largest label (the distinct labels above 30);
- ``depth`` none, plus 1000 and 100 when some list is longer;
- ``k_beyond_list`` (P, F1, Rprec, T, Fe), ``ap_denominator`` (AP), ``rr_cutoff`` (RR@k);
- ``empty_query`` zero/one/skip (mean measures); ``query_set`` run/qrels only when some judged
  query is missing from the run (otherwise the two agree);
- ``negative_labels`` unjudged/keep and ``label_type`` float/int_truncate only when the qrels
  hold negative or fractional labels.

Each measure is swept over the axes it reads (:data:`READS`, checked against the reference by
the tests); the others cannot change it. Axes a measure name fixes (``P(rel=2)@5``) are not
swept for that measure. ``rank_source`` (score), ``duplicates`` (error: the run is validated)
and every axis a measure does not read keep the vocabulary defaults.

Sharing work. Evaluating each combination with ``evaluate()`` would cost thousands of
evaluations. The sweep instead builds ``Prepared`` once and:

1. sorts the run once, by query then score narrowed to float32 (the coarsest order every
   ordering refines), and then hands the reference's ``rank`` rows already in that order, so
   each of the (tie rule x score precision) orderings costs a sort of tied rows only;
2. ranks, for a measure whose cutoff is k, only each query's *prefix*: the rows whose float32
   score is at least the k-th highest (whole tie groups, so ``ties=average`` sees the same
   groups). Every ordering places exactly these rows in its top k, so the measure reads only
   them; ``Ranked`` pieces of the prefix equal the reference's own pieces of those rows;
3. takes what a prefix cannot see (under ``ideal=retrieved``: the relevant count and the ideal
   DCG of the whole, depth-cut list) from one pass over the whole list per ordering (or none,
   without a depth cut: the whole list's labels do not depend on the order), and serves it to
   the reference's formulas through a :class:`Context` subclass (``_SweepContext``);
4. shares the judged ideal DCG between every context with the same gains and discount;
5. treats ``empty_query`` and ``query_set`` as aggregation only: per-query values are computed
   once over every judged query, and each (empty rule, query set) pair is a mean over a
   selection of them, as ``Evaluation.aggregate`` takes it;
6. aliases orderings that cannot differ on this input: float32 is float64 when narrowing merges
   no scores; every tie rule is one when no two scores of a query are equal;
7. bounds memory: combinations are visited with the axes that select a ``Ranked`` outermost
   (``_LOOP_FIRST``), so each ``Ranked`` is used in one stretch and only ``RANKED_CACHE`` of
   them are kept (a whole-list ``Ranked`` of 1M rows is ~50-90 MB).

Cost, measured by ``benchmarks/bench_paper.py`` (1,000 queries x 1,000 documents, CPU time):
the nDCG@10 sweep ~2.7 single evaluations; AP (whole lists, re-ranked per tie rule, depth and
threshold) ~8; nDCG@10 + AP + P@10 together ~11.

The measures' own arithmetic is always the reference's (``FORMULAS`` over ``rank`` output), so
every combination's value equals ``evaluate()`` with that combination; the tests check a sample
of combinations, on generated inputs, value for value.

Library entries
===============

An entry reproduces the reported values when it computes every reported measure and each value
falls in its interval. The entry's value is the live library's when it is installed (its own
mean when it reports one, else the mean of its per-query values): that is the number the library
prints on this input. Without the library, its declared profile decides: the reference under the
profile (the range over tie orders under ``ties=unspecified``), within the entry's tolerance.
Both are reported; a live value that its profile does not predict is flagged as a finding.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from conformance.conventions import AXES, TREC_EVAL10, Conventions, format_value
from conformance.data import Qrels, Run
from conformance.errors import ConformanceError, EvaluationError, InputError
from conformance.measures import Measure, MeasureError, parse_measure
from conformance.reference import evaluate
from conformance.reference.formulas import FORMULAS, Context
from conformance.reference.prepare import Prepared, transform_labels
from conformance.reference.ranking import Ranked, gains, ideal_dcg, rank, segments

# --------------------------------------------------------------------------------------------
# Reported values
# --------------------------------------------------------------------------------------------

# More printed decimals than a float64 holds say nothing more (and keep Decimal in range).
MAX_DIGITS = 17

# Families whose values are not fractions: a number above 1 is never a percentage for them.
UNBOUNDED = {"DCG", "NumQ", "NumRet", "NumRel", "NumRelRet"}


class ReportedError(ConformanceError):
    """A reported value that cannot be read (exit status 2 on the command line)."""


@dataclass(frozen=True)
class Reported:
    """One reported value: ``measure`` at ``qid`` (None: the aggregate over queries).

    ``value`` is the fraction (a percentage divided by 100), ``digits`` its decimal places in
    those units, ``low``/``high`` the exact rounding interval, ``lo``/``hi`` the same interval as
    floats: for any float v, ``lo <= v <= hi`` exactly when ``low <= v <= high``.
    """

    measure: Measure
    printed: str
    value: float
    digits: int
    percent: bool
    low: Decimal
    high: Decimal
    qid: str | None = None

    @property
    def metric(self) -> str:
        return self.measure.text

    @property
    def lo(self) -> float:
        return _float_at_least(self.low)

    @property
    def hi(self) -> float:
        return _float_at_most(self.high)

    def contains(self, v: float | None) -> bool:
        return v is not None and not math.isnan(v) and self.lo <= v <= self.hi

    def meets(self, lo: float, hi: float, tol: float = 0.0) -> bool:
        """Does the range [lo - tol, hi + tol] meet the interval?"""
        if math.isnan(lo) or math.isnan(hi):
            return False
        return hi + tol >= self.lo and lo - tol <= self.hi

    def gap(self, v: float) -> float:
        """Signed distance from the interval: > 0 above it, < 0 below, 0 inside."""
        if v > self.hi:
            return v - float(self.high)
        if v < self.lo:
            return v - float(self.low)
        return 0.0

    def to_dict(self) -> dict:
        out = {
            "metric": self.metric,
            "value": self.value,
            "digits": self.digits,
            "interval": [float(self.low), float(self.high)],
            "printed": self.printed,
            "percent": self.percent,
        }
        if self.qid is not None:
            out["qid"] = self.qid
        return out


def _float_at_least(x: Decimal) -> float:
    f = float(x)
    if Decimal(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def _float_at_most(x: Decimal) -> float:
    f = float(x)
    if Decimal(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def reported_value(measure: Measure, number: str, *, digits: int | None = None,
                   percent: bool = True, qid: str | None = None, where: str = "") -> Reported:
    """The :class:`Reported` for ``measure`` printed as ``number``.

    ``digits`` (decimal places as printed) overrides the precision the text shows. A value whose
    magnitude is above 1 is a percentage when ``percent`` and the measure is a fraction; a
    trailing ``%`` always is, and is refused for DCG and the counts.
    """
    where = where or f"{measure.text}={number}"
    text = number.strip()
    explicit = text.endswith("%")
    if explicit:
        text = text[:-1].strip()
    try:
        dec = Decimal(text)
    except InvalidOperation:
        raise ReportedError(f"reported value {where!r}: {number.strip()!r} is not a number") from None
    if not dec.is_finite():
        raise ReportedError(f"reported value {where!r}: the value must be a finite number")
    if digits is not None and not 0 <= digits <= MAX_DIGITS:
        raise ReportedError(f"--digits must be between 0 and {MAX_DIGITS}, got {digits}")
    shown = max(0, -int(dec.as_tuple().exponent))
    if digits is None and shown > MAX_DIGITS:
        raise ReportedError(f"reported value {where!r}: more than {MAX_DIGITS} decimals")
    places = shown if digits is None else digits
    half = Decimal(5).scaleb(-places - 1)
    bounded = measure.family not in UNBOUNDED
    if explicit and not bounded:
        raise ReportedError(
            f"reported value {where!r}: {measure.family} is not a fraction, so it cannot be a percentage"
        )
    is_percent = bounded and (explicit or (percent and abs(dec) > 1))
    low, high = dec - half, dec + half
    if is_percent:
        dec, low, high = dec.scaleb(-2), low.scaleb(-2), high.scaleb(-2)
        places += 2
    if bounded and abs(dec) > 1:
        raise ReportedError(
            f"reported value {where!r}: {measure.family} lies between 0 and 1 (or 0% and 100%), "
            f"but this is {number.strip()}"
        )
    return Reported(measure, number.strip(), float(dec), places, is_percent, low, high, qid)


def parse_reported(text: str, *, digits: int | None = None, percent: bool = True) -> Reported:
    """``"nDCG@10=0.4312"`` -> a :class:`Reported`. The value follows the last ``=``, so measure
    names with parameters work: ``P(rel=2)@5=0.31``."""
    name, sep, number = text.rpartition("=")
    if not sep or not name.strip() or not number.strip():
        raise ReportedError(
            f"reported value {text!r}: expected MEASURE=VALUE, such as nDCG@10=0.4312 or AP=27.10"
        )
    try:
        measure = parse_measure(name.strip())
    except MeasureError as exc:
        raise ReportedError(f"reported value {text!r}: {exc}") from None
    return reported_value(measure, number, digits=digits, percent=percent, where=text.strip())


@dataclass
class PerQueryFile:
    """What :func:`read_reported_per_query` read: the values, and every line it did not use."""

    values: list[Reported]
    source: str
    lines: int = 0
    ignored: dict[str, int] = field(default_factory=dict)  # reason -> lines
    unknown_measures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "lines": self.lines,
            "values": sum(1 for r in self.values if r.qid is not None),
            "aggregates": sum(1 for r in self.values if r.qid is None),
            "ignored": dict(sorted(self.ignored.items())),
            "unknown_measures": sorted(self.unknown_measures),
        }


def read_reported_per_query(path: str | os.PathLike, *, digits: int | None = None,
                            percent: bool = True) -> PerQueryFile:
    """Read trec_eval ``-q`` output: ``measure qid value`` per line (whitespace-separated).

    ``all`` rows are aggregates. Lines of measures conformance does not compute (``bpref``,
    ``iprec_at_recall_0.00``...) and trec_eval's ``runid`` line are counted and skipped; a line
    with the wrong number of fields or a value that is not a number is an error naming the line.
    """
    source = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        raw = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text (byte {data[exc.start]:#04x})",
                         data.count(b"\n", 0, exc.start) + 1) from None
    out = PerQueryFile([], source)
    parsed: dict[str, Measure | None] = {}
    unknown: set[str] = set()
    seen: set[tuple[Measure, str | None]] = set()
    for lineno, line in enumerate(raw, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        out.lines += 1
        fields = s.split()
        if len(fields) != 3:
            raise InputError(source, f"expected 3 fields 'measure qid value', found {len(fields)}", lineno)
        name, qid, number = fields
        if name == "runid":
            out.ignored["runid line"] = out.ignored.get("runid line", 0) + 1
            continue
        if name not in parsed:
            try:
                parsed[name] = parse_measure(name)
            except MeasureError:
                parsed[name] = None
        m = parsed[name]
        if m is None:
            unknown.add(name)
            out.ignored["measure conformance does not compute"] = (
                out.ignored.get("measure conformance does not compute", 0) + 1)
            continue
        try:
            r = reported_value(m, number, digits=digits, percent=percent,
                               qid=None if qid == "all" else qid, where=f"{name} {qid} {number}")
        except ReportedError as exc:
            raise InputError(source, str(exc), lineno) from None
        key = (m, r.qid)
        if key in seen:
            raise InputError(source, f"{name} for query {qid!r} is given twice", lineno)
        seen.add(key)
        out.values.append(r)
    out.unknown_measures = sorted(unknown)
    if not out.values:
        raise InputError(source, "no value of a measure conformance computes was found")
    return out


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------

# Swept values of the axes whose values do not depend on the input.
SWEPT_VALUES: dict[str, tuple] = {
    "gain": ("linear", "exponential"),
    "discount": ("log2", "jarvelin"),
    "ideal": ("judged", "retrieved"),
    "k_beyond_list": ("k", "min_k_n"),
    "ap_denominator": ("relevant", "retrieved_relevant", "min_k_relevant"),
    "empty_query": ("zero", "one", "skip"),
    "ties": ("docid_desc", "docid_asc", "input_order", "reverse_input", "average"),
    "threshold_scope": ("binary", "graded"),
    "score_precision": ("float64", "float32"),
    "rr_cutoff": ("honour", "ignore"),
    "negative_labels": ("unjudged", "keep"),
    "label_type": ("float", "int_truncate"),
    "query_set": ("run", "qrels"),
}
DEPTHS = (1000, 100)  # swept beside "none" when some list is longer
MAX_THRESHOLDS = 30  # above this largest label, only the distinct label values are thresholds

_ORDER = ("ties", "score_precision", "depth", "negative_labels", "label_type")
_BINARY_READS = ("relevance_threshold", "ideal", "empty_query")
# The axes each family reads, besides the ordering axes (_ORDER) and query_set. Checked against
# the reference by tests/test_paper.py: an axis left out here must not change evaluate().
READS: dict[str, tuple[str, ...]] = {
    "nDCG": ("gain", "discount", "ideal", "relevance_threshold", "threshold_scope", "empty_query"),
    "DCG": ("gain", "discount", "ideal", "relevance_threshold", "threshold_scope", "empty_query"),
    "P": _BINARY_READS + ("k_beyond_list",),
    "R": _BINARY_READS,
    "F1": _BINARY_READS + ("k_beyond_list",),
    "Success": _BINARY_READS,
    "RR": _BINARY_READS + ("rr_cutoff",),
    "GranularRR": _BINARY_READS,
    "AP": _BINARY_READS + ("ap_denominator",),
    "Rprec": _BINARY_READS + ("k_beyond_list",),
    "T": _BINARY_READS + ("k_beyond_list",),
    "Fe": _BINARY_READS + ("k_beyond_list",),
    "NumQ": (),
    "NumRet": ("depth",),
    "NumRel": ("relevance_threshold", "negative_labels", "label_type"),
    "NumRelRet": ("relevance_threshold", "ties", "score_precision", "depth", "negative_labels",
                  "label_type"),
}
# Loop order of the sweep: the axes that select a Ranked (labels, ordering, gains, threshold,
# depth) outermost; threshold_scope before relevance_threshold, since the binary scope makes
# nDCG's Ranked independent of the threshold; depth last of them, since a depth at or beyond a
# measure's reach shares the Ranked of no depth. Axes not listed (the formulas' own) come after.
_LOOP_FIRST = ("label_type", "negative_labels", "rank_source", "score_precision", "ties", "gain",
               "threshold_scope", "relevance_threshold", "depth")
RANKED_CACHE = 2  # Ranked objects kept at once


def _loop_rank(axis: str) -> int:
    return _LOOP_FIRST.index(axis) if axis in _LOOP_FIRST else len(_LOOP_FIRST)


_COUNTS = {"NumQ", "NumRet", "NumRel", "NumRelRet"}
_GRADED = {"nDCG", "DCG"}
_AGGREGATION = ("empty_query", "query_set")

# Where the sweep starts: the vocabulary defaults (trec_eval 10's command line).
BASE = Conventions()


def reads(m: Measure) -> set[str]:
    """The axes whose value can change ``m`` (before removing the axes its name fixes)."""
    axes = set(READS[m.family]) | {"query_set"}
    if m.family not in _COUNTS:
        axes |= set(_ORDER)
    if m.family == "RR" and m.cutoff is None:
        axes.discard("rr_cutoff")
    return axes


def _reach(m: Measure, conv: Conventions) -> int | None:
    """How far down each list ``m`` reads under ``conv``; None: the whole list."""
    f, k = m.family, m.cutoff
    if k is None or f in ("Rprec",) or f in _COUNTS:
        return None
    if f == "RR" and conv.rr_cutoff == "ignore":
        return None
    if f == "Fe":
        return 2 * k
    return k


@dataclass
class Facts:
    """What about the input decides which values are swept."""

    negative: bool
    fractional: bool
    qrels_only_queries: int
    run_only_queries: int
    longest_list: int
    thresholds: tuple[int, ...]
    scored_queries: int

    def domains(self) -> dict[str, tuple]:
        d = {a: v for a, v in SWEPT_VALUES.items()}
        d["relevance_threshold"] = self.thresholds
        d["depth"] = (None,) + tuple(x for x in DEPTHS if self.longest_list > x)
        if not self.negative:
            d["negative_labels"] = ("unjudged",)
        if not self.fractional:
            d["label_type"] = ("float",)
        if not self.qrels_only_queries:
            d["query_set"] = ("run",)
        return d


def _facts(prep: Prepared) -> Facts:
    lab = prep.qrels_label
    negative = bool((lab < 0).any())
    fractional = bool((lab != np.trunc(lab)).any())
    top = float(lab.max()) if lab.size else 0.0
    if top <= MAX_THRESHOLDS:
        thresholds = tuple(range(1, max(1, int(math.floor(top))) + 1))
    else:
        distinct = {int(math.ceil(x)) for x in np.unique(lab).tolist() if x >= 1}
        thresholds = tuple(sorted(distinct | {1}))
    n = np.bincount(prep.run_q, minlength=prep.n_queries) if prep.run_q.size else np.zeros(1, int)
    return Facts(
        negative=negative,
        fractional=fractional,
        qrels_only_queries=int((prep.in_qrels & ~prep.in_run).sum()),
        run_only_queries=int((prep.in_run & ~prep.in_qrels).sum()),
        longest_list=int(n.max()) if n.size else 0,
        thresholds=thresholds,
        scored_queries=int((prep.in_qrels & prep.in_run).sum()),
    )


def _coarse_key(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """int64 per row, ordered as (query, -score narrowed to float32): the coarsest order that
    every (score precision, tie rule) ordering refines."""
    with np.errstate(over="ignore"):
        p32 = (-score).astype(np.float32)
    p32 += np.float32(0.0)  # one bit pattern for zero
    u = p32.view(np.uint32).astype(np.int64)
    ordered = np.where(u >= 2**31, 2**32 - 1 - u, u + 2**31)
    return (q.astype(np.int64) << 32) | ordered


class _Whole:
    """Per-query quantities of whole (depth-cut) lists that a prefix cannot see: the relevant
    count and the ideal DCG under ``ideal=retrieved``, and the reference's two refusals under
    ``ties=average``: a depth cut through a tied group of mixed relevance (for the count) or of
    unequal gains (for the ideal).

    ``labels``/``q``: every row of the cut lists (labels transformed, NaN unjudged). ``grouped``:
    conventions -> the reference's ``Ranked`` of the cut lists under ``ties=average`` (None when
    no cut can split a group: no depth cut, or another tie rule).
    """

    def __init__(self, labels: np.ndarray, q: np.ndarray, nq: int, k_top: int | None,
                 grouped: Callable[[Conventions], Ranked] | None = None) -> None:
        self.nq = nq
        self._labels, self._q = labels, q
        self._grouped = grouped
        self._R: dict[int, np.ndarray] = {}
        self._idcg: dict[tuple, np.ndarray] = {}
        self._mixed: dict[int, bool] = {}
        self._varied: dict[tuple, bool] = {}
        # the ideal DCG at k reads the k largest gains of each list; every swept gain is
        # non-decreasing in the label (unjudged = gain 0 = label 0), so the k_top largest
        # labels hold them
        if k_top is not None and labels.size:
            order = np.lexsort((-np.nan_to_num(labels, nan=0.0), q))
            qs = q[order]
            start, n = segments(qs, nq)
            pos = np.arange(qs.size) - start[qs]
            keep = order[pos < k_top]
            self._top_labels, self._top_q = labels[keep], q[keep]
        else:
            self._top_labels, self._top_q = labels, q

    def R(self, threshold: int) -> np.ndarray:
        if threshold not in self._R:
            rel = np.nan_to_num(self._labels, nan=-np.inf) >= threshold
            self._R[threshold] = np.bincount(self._q[rel], minlength=self.nq).astype(np.float64)
        return self._R[threshold]

    def require_fixed_count(self, tie_rule: str, conv: Conventions) -> None:
        """As ``Context.require_fixed_count(None, ...)`` on the whole list."""
        if tie_rule != "average" or self._grouped is None:
            return
        t = conv.relevance_threshold
        if t not in self._mixed:
            self._mixed[t] = bool(self._grouped(conv).splits_mixed_group(None).any())
        if self._mixed[t]:
            raise EvaluationError(
                "ideal=retrieved with a depth cut under ties=average: the cut at depth splits a "
                "tied group of relevant and non-relevant documents; choose another tie rule")

    def require_fixed_gains(self, tie_rule: str, conv: Conventions) -> None:
        """As ``Context.require_fixed_gains(None, ...)`` on the whole list."""
        if tie_rule != "average" or self._grouped is None:
            return
        key = _gain_key(conv)
        if key not in self._varied:
            self._varied[key] = bool(self._grouped(conv).splits_varied_group(None).any())
        if self._varied[key]:
            raise EvaluationError(
                "ideal=retrieved with a depth cut under ties=average: the cut splits a tied "
                "group of unequal gains; choose another tie rule")

    def has_gain(self, conv: Conventions) -> np.ndarray:
        """As ``Context.has_gain`` on the whole list: some document has a nonzero gain."""
        g = gains(np.nan_to_num(self._labels, nan=0.0), conv)
        nonzero = (g != 0) & ~np.isnan(g)
        return np.bincount(self._q[nonzero], minlength=self.nq) > 0

    def idcg(self, conv: Conventions, k: int | None) -> np.ndarray:
        key = (_gain_key(conv), conv.discount, k)
        if key not in self._idcg:
            g = gains(self._top_labels, conv)
            self._idcg[key] = ideal_dcg(g, self._top_q, self.nq, conv, k)
        return self._idcg[key]


def _gain_key(conv: Conventions) -> tuple:
    """The axes ``ranking.gains`` reads."""
    return (conv.gain, conv.threshold_scope,
            conv.relevance_threshold if conv.threshold_scope == "graded" else None)


@dataclass
class _SweepContext(Context):
    """The reference's :class:`Context` over a ranked prefix of each list.

    Under ``ideal=retrieved``, R and the ideal DCG are the whole list's, taken from ``whole``
    (None when ``ranked`` holds the whole lists: then the reference's own code runs). The judged
    ideal DCG comes from ``shared``, one per (labels, gains, discount, k) for every context.
    """

    whole: Any = None
    shared: Any = None
    gain_key: Any = None

    @property
    def R(self) -> np.ndarray:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_count(self.tie_rule, self.conv)
            return self.whole.R(self.conv.relevance_threshold)
        return Context.R.fget(self)

    def has_gain(self) -> np.ndarray:
        if self.conv.ideal == "retrieved" and self.whole is not None:
            self.whole.require_fixed_gains(self.tie_rule, self.conv)
            return self.whole.has_gain(self.conv)
        return Context.has_gain(self)

    def idcg(self, k: int | None) -> np.ndarray:
        if self.conv.ideal == "retrieved":
            if self.whole is None:
                return Context.idcg(self, k)
            self.whole.require_fixed_gains(self.tie_rule, self.conv)
            return self.whole.idcg(self.conv, k)
        key = (self.gain_key, self.conv.discount, k)
        if key not in self.shared:
            self.shared[key] = ideal_dcg(self.judged_gain, self.judged_q, self.ranked.n_queries,
                                         self.conv, k)
        return self.shared[key]


class _Engine:
    """Everything the sweep shares: the join, the presorted rows, prefixes, labels, orderings."""

    def __init__(self, prep: Prepared, facts: Facts, k_top: int | None) -> None:
        self.prep, self.facts, self.k_top = prep, facts, k_top
        scored = prep.in_qrels.copy()  # query_set=qrels: a superset of query_set=run
        self.scored = scored
        self.local = np.cumsum(scored) - 1
        self.nq = int(scored.sum())
        self.qids = prep.qids[scored]
        self.in_run = prep.in_run[scored]
        rows = prep.kept_rows("error")
        rows = rows[scored[prep.run_q[rows]]]
        q = self.local[prep.run_q[rows]]
        key = _coarse_key(q, prep.run_score[rows])
        order = np.argsort(key, kind="stable")
        self.rows, self.q, self.key = rows[order], q[order], key[order]
        self.start, self.n = segments(self.q, self.nq)
        self._prefix: dict[int | None, np.ndarray] = {}
        self._primary: dict[str, np.ndarray] = {}
        self._labels: dict[tuple, np.ndarray] = {}
        self._judged: dict[tuple, tuple] = {}
        self._R: dict[tuple, np.ndarray] = {}
        self._jgain: dict[tuple, np.ndarray] = {}
        # Ranked objects hold ~10 arrays per row: an unbounded cache of whole-list orderings
        # grew to 1.5 GB on 1,000 x 1,000. The sweep visits combinations with the axes that
        # change the Ranked outermost (_LOOP_FIRST), so each is used in one stretch and a small
        # LRU loses no reuse (rank_calls == distinct_rankings, checked by the tests).
        self._ranked: OrderedDict[tuple, Ranked] = OrderedDict()
        self.ranked_cache_size = RANKED_CACHE
        self.distinct_rankings: set[tuple] = set()
        self.ranked_builds = 0  # rank() calls of ranked(): equal to len(distinct_rankings)
        self._whole: dict[tuple, _Whole] = {}
        self._arrays: dict[tuple, tuple] = {}
        self._deeper: dict[tuple, bool] = {}
        self.shared_idcg: dict = {}
        self.rank_calls = 0
        self._ties_info()

    # -- orderings ----------------------------------------------------------------------------

    def _ties_info(self) -> None:
        """Which orderings can differ: ties under each precision, merges made by float32."""
        k, s = self.key, self.prep.run_score[self.rows]
        same32 = (k[1:] == k[:-1]) if k.size > 1 else np.zeros(0, bool)
        self.ties32 = bool(same32.any())
        if not self.ties32:
            self.ties64 = self.merges32 = False
            return
        # within float32-equal runs, compare the float64 scores
        tied = np.zeros(k.size, bool)
        tied[1:] |= same32
        tied[:-1] |= same32
        at = np.flatnonzero(tied)
        sub = at[np.lexsort((s[at], k[at]))]
        same_k = k[sub][1:] == k[sub][:-1]
        same_s = s[sub][1:] == s[sub][:-1]
        self.ties64 = bool((same_k & same_s).any())
        self.merges32 = bool((same_k & ~same_s).any())

    def ordering(self, conv: Conventions, tie_rule: str) -> tuple[str, str, str]:
        """(tie rule, score precision, rank source) of the Ranked this convention set can
        share: orderings that cannot differ on this input are one."""
        if conv.rank_source == "rank_column":
            return tie_rule, "rank", "rank_column"
        precision = conv.score_precision
        if precision == "float32" and not self.merges32:
            precision = "float64"
        ties = self.ties32 if precision == "float32" else self.ties64
        if not ties and tie_rule in SWEPT_VALUES["ties"]:
            tie_rule = "docid_desc"
        return tie_rule, precision, conv.rank_source

    def primary(self, precision: str) -> np.ndarray:
        if precision not in self._primary:
            if precision == "rank":
                p = self.prep.run_rank[self.rows]
                if np.isnan(p).any():
                    raise EvaluationError(
                        f"{self.prep.run_source}: rank_source=rank_column but line "
                        f"{self.prep.run_line[self.rows][np.isnan(p)][0]} has no numeric rank"
                    )
            else:
                score = self.prep.run_score[self.rows]
                if precision == "float32":
                    with np.errstate(over="ignore"):
                        score = score.astype(np.float32).astype(np.float64)
                p = -score
            self._primary[precision] = p
        return self._primary[precision]

    # -- rows -----------------------------------------------------------------------------------

    def prefix(self, k: int | None) -> np.ndarray:
        """Positions (in presorted order) of every row whose float32 score is at least the k-th
        highest of its query: each list's top k under any ordering, with whole tie groups."""
        if k is None or k >= max(self.facts.longest_list, 1):
            k = None
        if k not in self._prefix:
            if k is None:
                self._prefix[k] = np.arange(self.rows.size)
            else:
                last = np.where(self.n >= k, self.start + k - 1, 0)
                bound = np.where(self.n >= k, self.key[last] if self.key.size else 0,
                                 np.iinfo(np.int64).max)
                self._prefix[k] = np.flatnonzero(self.key <= bound[self.q])
        return self._prefix[k]

    def labels(self, lv: tuple[str, str]) -> np.ndarray:
        """Transformed label of every presorted row under (label_type, negative_labels)."""
        if lv not in self._labels:
            conv = BASE.replace(label_type=lv[0], negative_labels=lv[1])
            run_labels = transform_labels(self.prep.run_label, conv, self.prep.qrels_source)
            self._labels[lv] = run_labels[self.rows]
        return self._labels[lv]

    def judged(self, lv: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
        """(query index, transformed label) of every judged qrels row of a scored query."""
        if lv not in self._judged:
            conv = BASE.replace(label_type=lv[0], negative_labels=lv[1])
            lab = transform_labels(self.prep.qrels_label, conv, self.prep.qrels_source)
            jmask = self.scored[self.prep.qrels_q] & ~np.isnan(lab)
            self._judged[lv] = (self.local[self.prep.qrels_q[jmask]], lab[jmask])
        return self._judged[lv]

    def R_judged(self, lv, threshold: int) -> np.ndarray:
        key = (lv, threshold)
        if key not in self._R:
            jq, jlab = self.judged(lv)
            self._R[key] = np.bincount(jq[jlab >= threshold], minlength=self.nq).astype(np.float64)
        return self._R[key]

    def judged_gain(self, lv, conv: Conventions) -> tuple[tuple, np.ndarray]:
        gk = (lv, conv.gain, conv.threshold_scope,
              conv.relevance_threshold if conv.threshold_scope == "graded" else None)
        if gk not in self._jgain:
            self._jgain[gk] = gains(self.judged(lv)[1], conv)
        return gk, self._jgain[gk]

    def _rank_args(self, k: int | None, precision: str, lv) -> tuple:
        key = (k, precision, lv)
        if key not in self._arrays:
            pos = self.prefix(k)
            rows = self.rows[pos]
            self._arrays[key] = (self.q[pos], self.primary(precision)[pos], self.prep.run_doc[rows],
                                 self.prep.run_order[rows], self.labels(lv)[pos])
        return self._arrays[key]

    def _prefix_deeper(self, k: int | None, depth: int | None) -> bool:
        """Does some prefix list hold more rows than ``depth`` (so the cut changes it)?"""
        if depth is None:
            return False
        key = (k, depth)
        if key not in self._deeper:
            longest = np.bincount(self.q[self.prefix(k)], minlength=self.nq).max(initial=0)
            self._deeper[key] = bool(longest > depth)
        return self._deeper[key]

    def ranked(self, lv, order: tuple[str, str, str], k: int | None, conv: Conventions,
               binary: bool) -> Ranked:
        """The reference's ``rank`` over the prefix ``k`` (None: whole lists)."""
        tie_rule, precision, _ = order
        depth = conv.depth if self._prefix_deeper(k, conv.depth) else None
        if binary:  # binary measures never read gains
            gain, scope = "linear", "binary"
        else:
            gain, scope = conv.gain, conv.threshold_scope
        key = (lv, order, k, depth, gain, scope, conv.relevance_threshold)
        if key in self._ranked:
            self._ranked.move_to_end(key)
        else:
            rconv = BASE.replace(gain=gain, threshold_scope=scope,
                                 relevance_threshold=conv.relevance_threshold, depth=depth)
            q, primary, doc, order_in_run, labels = self._rank_args(k, precision, lv)
            self.rank_calls += 1
            self.ranked_builds += 1
            self.distinct_rankings.add(key)
            while len(self._ranked) >= self.ranked_cache_size:
                self._ranked.popitem(last=False)
            self._ranked[key] = rank(q, primary, doc, order_in_run, labels, self.nq, rconv, tie_rule)
        return self._ranked[key]

    def whole(self, lv, order: tuple[str, str, str], depth: int | None) -> _Whole:
        """The whole lists cut to ``depth``, for contexts over a shorter prefix."""
        if depth is None or not self._prefix_deeper(None, depth):
            key = (lv, None)
            if key not in self._whole:
                self._whole[key] = _Whole(self.labels(lv), self.q, self.nq, self.k_top)
            return self._whole[key]
        key = (lv, order, depth)
        if key not in self._whole:
            tie_rule, precision, _ = order
            q, primary, doc, order_in_run, labels = self._rank_args(depth, precision, lv)
            # rows in rank order: the row numbers ride through rank() as linear gains
            index = np.arange(q.size, dtype=np.float64)
            self.rank_calls += 1
            cut = rank(q, primary, doc, order_in_run, index, self.nq, BASE.replace(depth=depth),
                       tie_rule).gain.astype(np.int64)

            def grouped(conv: Conventions) -> Ranked:
                self.rank_calls += 1
                return rank(q, primary, doc, order_in_run, labels, self.nq,
                            BASE.replace(depth=depth, gain=conv.gain,
                                         threshold_scope=conv.threshold_scope,
                                         relevance_threshold=conv.relevance_threshold), "average")

            self._whole[key] = _Whole(labels[cut], q[cut], self.nq, self.k_top,
                                      grouped if tie_rule == "average" else None)
        return self._whole[key]

    @staticmethod
    def _threshold_idle(conv: Conventions) -> bool:
        """nDCG and DCG read the relevance threshold only through their gains
        (``threshold_scope=graded``); their refusals (``require_fixed_gains``) read gains too."""
        return conv.threshold_scope == "binary"

    def formula_key(self, m: Measure, conv: Conventions) -> tuple:
        """Equal keys, equal formula results (values and empty queries) for ``m``: the axes
        ``m``'s formula reads, with orderings and depths that cannot differ on this input made
        one."""
        orders = (self.ordering(conv, conv.ties),)
        graded = m.family in _GRADED
        thr = conv.relevance_threshold
        if graded and self._threshold_idle(conv):
            thr = None
        depth = conv.depth if conv.depth is not None and self._prefix_deeper(None, conv.depth) else None
        return (m, (conv.label_type, conv.negative_labels), orders, depth, thr,
                conv.gain if graded else None, conv.threshold_scope if graded else None,
                conv.discount if graded else None, conv.ideal, conv.k_beyond_list,
                conv.ap_denominator, conv.rr_cutoff)

    def contexts(self, m: Measure, conv: Conventions) -> list[Context]:
        """The reference context ``evaluate`` would build for ``m`` under ``conv`` (any tie rule
        but ``unspecified``, which the sweep leaves to ``evaluate`` itself)."""
        lv = (conv.label_type, conv.negative_labels)
        out = []
        for rule in [conv.ties]:
            order = self.ordering(conv, rule)
            if order[2] == "rank_column":
                # the rank column's order is not the presorted one: rank whole lists
                k, covers = None, True
            else:
                reach = _reach(m, conv)
                k = reach if conv.depth is None or reach is None else min(reach, conv.depth)
                if conv.depth is not None and k is None:
                    k = conv.depth
                covers = self.prefix(k).size == self.rows.size or (
                    conv.depth is not None and k is not None and k >= conv.depth)
            rconv = conv
            if m.family in _GRADED and self._threshold_idle(conv):
                rconv = conv.replace(relevance_threshold=1)
            ranked = self.ranked(lv, order, k, rconv, m.family not in _GRADED)
            whole = None if covers else self.whole(lv, order, conv.depth)
            gk, jgain = self.judged_gain(lv, conv)
            jq = self.judged(lv)[0]
            out.append(_SweepContext(conv, ranked, rule, self.R_judged(lv, conv.relevance_threshold),
                                     jgain, jq, whole=whole, shared=self.shared_idcg, gain_key=gk))
        return out


def _swept(base: Conventions, settings: dict[str, Any]) -> Conventions:
    """``base.replace(**settings)`` for values taken from the sweep's domains, which are already
    the stored values ``Conventions`` validation would produce: the sweep builds thousands."""
    conv = copy.copy(base)
    for axis, value in settings.items():
        object.__setattr__(conv, axis, value)
    return conv


def _aggregate(lo: np.ndarray, hi: np.ndarray, empty: np.ndarray, rule: str, select: np.ndarray | None,
               is_sum: bool, sets_differ: bool, query_set: str, what: str):
    """(mean or sum lo, hi, per-query lo, hi, counted) as ``evaluate`` + ``aggregate`` give them,
    from per-query values over every judged query; raises EvaluationError where they would."""
    if query_set == "raise" and sets_differ:
        raise EvaluationError("query sets differ (query_set=raise)")
    if select is not None:
        lo, hi, empty = lo[select], hi[select], empty[select]
    one = lo is hi  # a single order of ties: compute once
    counted = np.ones(lo.size, bool)
    if not is_sum and empty.any():
        if rule == "raise":
            raise EvaluationError(f"{what}: a query has no relevant document (empty_query=raise)")
        fill = {"zero": 0.0, "one": 1.0, "nan": np.nan, "skip": np.nan}[rule]
        lo = np.where(empty, fill, lo)
        hi = lo if one else np.where(empty, fill, hi)
        if rule == "skip":
            counted = ~empty
    if is_sum:
        a = float(lo.sum())
        return a, a if one else float(hi.sum()), lo, hi, counted
    # as Evaluation.aggregate: the mean of the counted values (NaN when none counts)
    x = lo[counted]
    if not x.size:
        return math.nan, math.nan, lo, hi, counted
    a = float(x.mean())
    return a, a if one else float(hi[counted].mean()), lo, hi, counted


@dataclass(frozen=True)
class _ByEvaluate:
    """A combination the sweep leaves to ``evaluate`` (``ties=unspecified`` fixed by a name)."""

    conv: Conventions


@dataclass
class Grid:
    """One measure's values over its own swept axes: ``lo``/``hi`` aggregates (equal unless
    ``ties=unspecified``; NaN where the combination fails), ``error`` where ``evaluate`` would
    raise, ``pq_hits`` per-query reported values matched (when any were given)."""

    measure: Measure
    axes: list[str]
    domains: list[tuple]
    lo: np.ndarray
    hi: np.ndarray
    error: np.ndarray
    pq_hits: np.ndarray | None = None
    pq_total: int = 0

    def index(self, conv: Conventions) -> tuple[int, ...] | None:
        """The cell of ``conv`` (None when a value of it lies outside the swept domain)."""
        out = []
        for axis, dom in zip(self.axes, self.domains):
            v = getattr(conv, axis)
            if v not in dom:
                return None
            out.append(dom.index(v))
        return tuple(out)

    def conventions(self, idx: Sequence[int]) -> dict[str, Any]:
        return {a: d[i] for a, d, i in zip(self.axes, self.domains, idx)}


class Sweep:
    """Every swept combination's value of every measure (see the module docstring)."""

    def __init__(self, prep: Prepared, measures: Sequence[Measure],
                 per_query: Sequence[Reported] = (), progress: Callable[[str, int, int], None] | None = None):
        self.prep = prep
        self.facts = _facts(prep)
        self.domains = self.facts.domains()
        self.measures = list(dict.fromkeys(measures))
        k_top = max([m.cutoff for m in self.measures if m.family in _GRADED and m.cutoff] or [0]) or None
        self.engine = _Engine(prep, self.facts, k_top)
        self.sets_differ = bool((prep.in_run != prep.in_qrels).any())
        self.grids: dict[Measure, Grid] = {}
        self.formula_calls = 0
        pq = {}
        for r in per_query:
            if r.qid is not None:
                pq.setdefault(r.measure, []).append(r)
        total = len(self.measures)
        for i, m in enumerate(self.measures):
            if progress:
                progress(f"sweeping {m.text}", i, total)
            self.grids[m] = self._sweep(m, pq.get(m, []))
        if progress:
            progress("swept", total, total)

    def axes_of(self, m: Measure) -> list[str]:
        fixed = {a for a, _ in m.overrides}
        return [a for a in AXES if a in reads(m) and a not in fixed and len(self.domains[a]) > 1]

    def _sweep(self, m: Measure, pq: list[Reported]) -> Grid:
        eng = self.engine
        axes = self.axes_of(m)
        doms = [self.domains[a] for a in axes]
        shape = tuple(len(d) for d in doms)
        lo = np.full(shape, np.nan)
        hi = np.full(shape, np.nan)
        err = np.zeros(shape, bool)
        hits = np.zeros(shape, np.int64) if pq else None
        compute = [i for i, a in enumerate(axes) if a not in _AGGREGATION]
        agg = [i for i, a in enumerate(axes) if a in _AGGREGATION]
        overrides = dict(m.overrides)
        is_sum = m.aggregate == "sum"
        # per-query reported values: their positions among the judged queries
        where = {q: i for i, q in enumerate(eng.qids.tolist())}
        pq_pos = np.array([where.get(r.qid, -1) for r in pq], dtype=np.int64)
        pq_lo = np.array([r.lo for r in pq])
        pq_hi = np.array([r.hi for r in pq])
        formulas: dict[tuple, Any] = {}  # formula key -> (lo, hi, empty) or None (refused)
        aggregates: dict[tuple, Any] = {}  # (formula key, rule, query set) -> (lo, hi, hits) or None
        sel_pos = np.cumsum(eng.in_run) - 1
        # axes that change the Ranked outermost, in _LOOP_FIRST order, so each Ranked is used
        # in one stretch of the loop (see _Engine._ranked); cidx stays in ``compute`` order
        loop = sorted(range(len(compute)), key=lambda j: _loop_rank(axes[compute[j]]))
        for lidx in itertools.product(*[range(shape[compute[j]]) for j in loop]):
            cidx = [0] * len(compute)
            for j, v in zip(loop, lidx):
                cidx[j] = v
            conv = m.conventions(_swept(BASE, {axes[i]: doms[i][j] for i, j in zip(compute, cidx)}))
            fkey = eng.formula_key(m, conv)
            if conv.ties == "unspecified":
                # each tie order settles its own empty queries before the range is taken, and
                # some measures refuse what only the averaged grouping detects: no sharing here
                formulas[fkey] = _ByEvaluate(conv)
            elif fkey not in formulas:
                try:
                    results = [FORMULAS[m.family](ctx, m) for ctx in eng.contexts(m, conv)]
                    self.formula_calls += len(results)
                    if len(results) == 1:
                        values = results[0][0]
                        formulas[fkey] = (values, values, results[0][1])
                    else:
                        formulas[fkey] = (np.minimum.reduce([v for v, _ in results]),
                                          np.maximum.reduce([v for v, _ in results]), results[0][1])
                except EvaluationError:
                    formulas[fkey] = None
            found = formulas[fkey]
            cell = [0] * len(axes)
            for i, j in zip(compute, cidx):
                cell[i] = j
            for aidx in itertools.product(*[range(shape[i]) for i in agg]):
                for i, j in zip(agg, aidx):
                    cell[i] = j
                at = tuple(cell)
                if found is None:
                    err[at] = True
                    continue
                chosen = {axes[i]: doms[i][j] for i, j in zip(agg, aidx)}
                rule = overrides.get("empty_query", chosen.get("empty_query", BASE.empty_query))
                qset = overrides.get("query_set", chosen.get("query_set", BASE.query_set))
                if isinstance(found, _ByEvaluate):
                    akey = (fkey, rule, qset)
                    if akey not in aggregates:
                        aggregates[akey] = self._evaluate_cell(m, found.conv, rule, qset, pq)
                else:
                    # the empty rule only matters when some query is empty
                    akey = (fkey, rule if found[2].any() else None, qset)
                    if akey not in aggregates:
                        aggregates[akey] = self._aggregate_cell(found, rule, qset, is_sum, m.text,
                                                                pq_pos, pq_lo, pq_hi, sel_pos)
                done = aggregates[akey]
                if done is None:
                    err[at] = True
                    continue
                lo[at], hi[at] = done[0], done[1]
                if hits is not None:
                    hits[at] = done[2]
        return Grid(m, axes, doms, lo, hi, err, hits, len(pq))

    def _evaluate_cell(self, m: Measure, conv: Conventions, rule: str, qset: str,
                       pq: list[Reported]):
        """One cell by ``evaluate`` itself: (aggregate lo, hi, per-query values matched)."""
        try:
            ev = evaluate(self.prep, None, [m], conv.replace(empty_query=rule, query_set=qset))
        except EvaluationError:
            return None
        ranges = ev.ranges(m)
        hits = sum(1 for r in pq if r.qid in ranges and r.meets(*ranges[r.qid]))
        return ev.aggregate(m), ev.aggregate(m, upper=True), hits

    def _aggregate_cell(self, found, rule, qset, is_sum, what, pq_pos, pq_lo, pq_hi, sel_pos):
        """(aggregate lo, hi, per-query reported values matched) of one formula result under one
        (empty rule, query set); None where evaluate would refuse."""
        plo, phi, empty = found
        select = self.engine.in_run if qset == "run" else None
        try:
            a, b, qlo, qhi, counted = _aggregate(plo, phi, empty, rule, select, is_sum,
                                                 self.sets_differ, qset, what)
        except EvaluationError:
            return None
        n_hits = 0
        if pq_pos.size:
            safe = np.maximum(pq_pos, 0)
            if select is not None:  # positions among the selected queries
                ok_q = (pq_pos >= 0) & select[safe]
                p = np.where(ok_q, sel_pos[safe], 0)
            else:
                ok_q = pq_pos >= 0
                p = safe
            if qlo.size:
                ok_q &= counted[p] & (qhi[p] >= pq_lo) & (qlo[p] <= pq_hi)
            else:
                ok_q &= False
            n_hits = int(ok_q.sum())
        return a, b, n_hits

    # -- the joint answer ---------------------------------------------------------------------

    def union_axes(self, measures: Iterable[Measure] | None = None) -> list[str]:
        """The swept axes of ``measures`` (default: every measure swept), in vocabulary order."""
        used = set()
        for m in (self.grids if measures is None else measures):
            used |= set(self.grids[m].axes)
        return [a for a in AXES if a in used]

    def broadcast(self, m: Measure, values: np.ndarray, axes: list[str]) -> np.ndarray:
        """``values`` (over m's axes) as an array over ``axes`` (singleton where m has none)."""
        g = self.grids[m]
        shape = [len(self.domains[a]) if a in g.axes else 1 for a in axes]
        perm = [g.axes.index(a) for a in axes if a in g.axes]
        return np.transpose(values, perm).reshape(shape)


def ok_mask(grid: Grid, reported: Sequence[Reported]) -> np.ndarray:
    """Cells of ``grid`` that reproduce every value in ``reported`` (all of grid's measure)."""
    ok = ~grid.error
    for r in reported:
        if r.qid is None:
            ok &= (grid.hi >= r.lo) & (grid.lo <= r.hi)
    if grid.pq_total:
        ok &= grid.pq_hits == grid.pq_total
    return ok


# --------------------------------------------------------------------------------------------
# Summaries: covering the consistent cells with a few rows
# --------------------------------------------------------------------------------------------

def _distance_to_default(idx: Sequence[int], axes: list[str], domains: list[tuple]) -> int:
    return sum(1 for a, d, i in zip(axes, domains, idx) if d[i] != getattr(TREC_EVAL10, a))


def cover(ok: np.ndarray, axes: list[str], domains: list[tuple], limit: int = 1000) -> tuple[list[dict], bool]:
    """A few rows (axis -> set of value indices) whose union is the True cells of ``ok``.

    Axes along which ``ok`` does not change are ``any`` in every row. The rest is covered
    greedily: from the uncovered cell nearest the trec_eval defaults, a row grows one value at a
    time, axis by axis, while every cell it spans is True. Returns (rows, truncated).
    """
    if not ok.any():
        return [], False
    if ok.ndim == 0:
        return [{}], False
    free = [i for i in range(ok.ndim) if (ok == np.take(ok, [0], axis=i)).all()]
    reduced = ok[tuple(slice(0, 1) if i in free else slice(None) for i in range(ok.ndim))]
    cells = np.argwhere(reduced)
    keyed = sorted(map(tuple, cells.tolist()),
                   key=lambda c: (_distance_to_default(c, axes, domains), c))
    covered = np.zeros(reduced.shape, bool)
    rows: list[dict] = []
    truncated = False
    for c in keyed:
        if covered[c]:
            continue
        if len(rows) >= limit:
            truncated = True
            break
        sets = [[i] for i in c]
        changed = True
        while changed:
            changed = False
            for ax in range(reduced.ndim):
                if ax in free:
                    continue
                for v in range(reduced.shape[ax]):
                    if v in sets[ax]:
                        continue
                    trial = [s if j != ax else s + [v] for j, s in enumerate(sets)]
                    if reduced[np.ix_(*trial)].all():
                        sets[ax] = sorted(trial[ax])
                        changed = True
        covered[np.ix_(*sets)] = True
        row = {}
        for ax, a in enumerate(axes):
            if ax in free or len(sets[ax]) == len(domains[ax]):
                row[a] = None  # any
            else:
                row[a] = sets[ax]
        rows.append(row)
    return rows, truncated


def row_text(row: dict, axes: list[str], domains: list[tuple]) -> dict[str, Any]:
    """A covering row as public text: ``any``, one value, or a list of values."""
    out: dict[str, Any] = {}
    for ax, a in enumerate(axes):
        s = row[a]
        if s is None:
            out[a] = "any"
        elif len(s) == 1:
            out[a] = format_value(domains[ax][s[0]])
        else:
            out[a] = [format_value(domains[ax][i]) for i in s]
    return out


# --------------------------------------------------------------------------------------------
# Library entries
# --------------------------------------------------------------------------------------------

@dataclass
class EntryMetric:
    """One entry on one reported measure."""

    supported: bool
    profile: tuple[float, float] | None = None  # reference under the profile: [lo, hi]
    profile_error: str | None = None
    live: float | None = None  # the live library's value (its mean)
    live_error: str | None = None
    live_per_query: dict[str, float] | None = None
    profile_per_query: dict[str, tuple[float, float]] | None = None
    reproduces: bool = False
    agrees_with_profile: bool | None = None
    tie_range_covers: bool = False  # an order of tied documents other than the live one fits

    @property
    def value(self) -> float | None:
        """The value shown: the live one when the library ran, else the profile's (its low end)."""
        if self.live is not None:
            return self.live
        if self.profile is not None and not math.isnan(self.profile[0]):
            return self.profile[0]
        return None


@dataclass
class EntryCheck:
    """One library entry against the reported values: ``decided_by`` "live" (the installed
    library's own output) or "profile" (the reference under its declared profile);
    ``consistent`` when it computes every reported measure and reproduces every value."""

    name: str
    available: bool
    decided_by: str  # "live" or "profile"
    metrics: dict[str, EntryMetric]
    consistent: bool

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        return {
            "available": self.available,
            "decided_by": self.decided_by,
            "consistent": self.consistent,
            "metrics": {
                k: {
                    "supported": e.supported,
                    "profile": None if e.profile is None else [num(e.profile[0]), num(e.profile[1])],
                    "profile_error": e.profile_error,
                    "live": num(e.live),
                    "live_error": e.live_error,
                    "reproduces": e.reproduces,
                    "agrees_with_profile": e.agrees_with_profile,
                    "tie_range_covers": e.tie_range_covers,
                }
                for k, e in sorted(self.metrics.items())
            },
        }


def _library_mean(lv) -> float | None:
    if lv.error is not None:
        return None
    if lv.mean is not None:
        return float(lv.mean)
    vals = list(lv.per_query.values())
    return float(np.mean(vals)) if vals else None


def _shared_profile(conv: Conventions) -> Conventions:
    """The profile ``_reference_run`` evaluates for ``conv``: the aggregation axes opened up
    (every judged query, empty queries left out), so that profiles differing only in
    ``empty_query`` and ``query_set`` share one evaluation. Not under ``ties=unspecified``,
    where each order settles its own empty queries before the range is taken."""
    if conv.ties == "unspecified":
        return conv
    return conv.replace(empty_query="skip", query_set="qrels")


def _reference_run(prep: Prepared, measures: list[Measure], conv: Conventions):
    """``evaluate`` under ``_shared_profile(conv)``: the Evaluation or the error text."""
    try:
        return evaluate(prep, None, measures, _shared_profile(conv))
    except EvaluationError as exc:
        return str(exc)


def _profile_value(prep: Prepared, ev, m: Measure, conv: Conventions):
    """(aggregate lo, hi, per-query ranges) of ``m`` under ``conv`` from ``_reference_run``'s
    result (as ``evaluate(prep, None, [m], conv)`` would give them), or the error text."""
    if conv.ties == "unspecified" and not isinstance(ev, str):
        return ev.aggregate(m), ev.aggregate(m, upper=True), ev.ranges(m)
    if ({"empty_query", "query_set"} & {a for a, _ in m.overrides}
            or m.conventions(conv).ties == "unspecified"):
        try:  # the name fixes an aggregation axis or the tie rule: nothing to share
            ev = evaluate(prep, None, [m], conv)
        except EvaluationError as exc:
            return str(exc)
        return ev.aggregate(m), ev.aggregate(m, upper=True), ev.ranges(m)
    if isinstance(ev, str):
        return ev
    sets_differ = bool((prep.in_run != prep.in_qrels).any())
    in_run = prep.in_run[prep.in_qrels]
    is_sum = m.aggregate == "sum"
    empty = ~ev.counted[m] if not is_sum else np.zeros(ev.qids.size, bool)
    select = in_run if conv.query_set == "run" else None
    try:
        a, b, qlo, qhi, counted = _aggregate(ev.per_query[m], ev.upper[m], empty, conv.empty_query,
                                             select, is_sum, sets_differ, conv.query_set, m.text)
    except EvaluationError as exc:
        return str(exc)
    qids = ev.qids if select is None else ev.qids[select]
    per_q = {q: (x, y) for q, x, y, c in zip(qids.tolist(), qlo.tolist(), qhi.tolist(),
                                             counted.tolist()) if c}
    return a, b, per_q


@dataclass
class EntryEvidence:
    """What is known of one entry on the measures asked about, whatever values are reported:
    per measure, whether it computes it, the reference under its profile (aggregate lo, hi and
    per-query ranges, or the error text), and the live library's output (None: not run)."""

    name: str
    tolerance: float
    available: bool  # the live library was run
    supported: dict[Measure, bool]
    profile: dict[Measure, Any]
    live: dict[Measure, Any]


def gather_entries(prep: Prepared, qrels: Qrels, run: Run, measures: Sequence[Measure],
                   entries: Sequence, live: bool = True,
                   progress: Callable[[str, int, int], None] | None = None) -> list[EntryEvidence]:
    """Evaluate every entry's profile with the reference (one ``evaluate`` per distinct profile,
    aggregation axes apart) and run every installed library once on all its measures."""
    measures = list(dict.fromkeys(measures))
    plan: dict[tuple[str, Measure], Conventions] = {}
    wanted: dict[Conventions, list[Measure]] = {}
    for e in entries:
        for m in measures:
            if e.supports(m):
                p = e.profile(m)
                plan[(e.name, m)] = p
                ms = wanted.setdefault(_shared_profile(p), [])
                if m not in ms:
                    ms.append(m)
    runs = {}
    for i, (p, ms) in enumerate(wanted.items()):
        if progress:
            progress("library profiles", i, len(wanted))
        runs[p] = _reference_run(prep, ms, p)  # p is already shared
    values: dict[tuple[Conventions, Measure], Any] = {}
    for (name, m), p in plan.items():
        if (p, m) not in values:
            ev = runs[_shared_profile(p)]
            values[(p, m)] = _profile_value(prep, ev, m, p)
    out = []
    for i, e in enumerate(entries):
        if progress:
            progress(f"library {e.name}", i, len(entries))
        available = live and e.available()
        supported = [m for m in measures if e.supports(m)]
        got = e.evaluate(qrels, run, supported) if available and supported else {}
        out.append(EntryEvidence(
            e.name, e.tolerance, available,
            {m: m in supported for m in measures},
            {m: values[(plan[(e.name, m)], m)] for m in supported},
            {m: got.get(m) for m in supported} if available else {},
        ))
    return out


def judge_entries(evidence: Sequence[EntryEvidence], reported: Sequence[Reported]) -> list[EntryCheck]:
    """Which entries reproduce every reported value (see the module docstring)."""
    measures = list(dict.fromkeys(r.measure for r in reported))
    by_metric: dict[Measure, list[Reported]] = {}
    for r in reported:
        by_metric.setdefault(r.measure, []).append(r)
    out = []
    for ev in evidence:
        metrics: dict[str, EntryMetric] = {}
        consistent = True
        for m in measures:
            em = EntryMetric(supported=ev.supported.get(m, False))
            metrics[m.text] = em
            if not em.supported:
                consistent = False
                continue
            pv = ev.profile[m]
            if isinstance(pv, str):
                em.profile_error = pv
            else:
                em.profile = (pv[0], pv[1])
                em.profile_per_query = pv[2]
            if ev.available:
                lv = ev.live[m]
                em.live_error = lv.error
                em.live = _library_mean(lv)
                em.live_per_query = dict(lv.per_query) if lv.error is None else None
            ok = all(_entry_reproduces(em, r, ev.available, ev.tolerance) for r in by_metric[m])
            em.reproduces = ok
            consistent &= ok
            if ev.available and em.live is not None and em.profile is not None:
                t = ev.tolerance * max(1.0, abs(em.live))
                em.agrees_with_profile = bool(em.profile[0] - t <= em.live <= em.profile[1] + t)
                aggregates = [r for r in by_metric[m] if r.qid is None]
                if em.profile[0] != em.profile[1] and not ok and aggregates:
                    em.tie_range_covers = all(r.meets(em.profile[0], em.profile[1]) for r in aggregates)
            elif ev.available and em.live_error is not None:
                em.agrees_with_profile = em.profile_error is not None
        out.append(EntryCheck(ev.name, ev.available, "live" if ev.available else "profile",
                              metrics, consistent))
    return out


def _entry_reproduces(em: EntryMetric, r: Reported, live: bool, tol: float) -> bool:
    if live:
        if r.qid is None:
            return r.contains(em.live)
        v = (em.live_per_query or {}).get(r.qid)
        return r.contains(v)
    if r.qid is None:
        if em.profile is None:
            return False
        return r.meets(em.profile[0], em.profile[1], tol * max(1.0, abs(r.value)))
    rng = (em.profile_per_query or {}).get(r.qid)
    return rng is not None and r.meets(rng[0], rng[1], tol * max(1.0, abs(r.value)))


# --------------------------------------------------------------------------------------------
# The answer
# --------------------------------------------------------------------------------------------

_PHRASES: dict[str, dict[Any, str]] = {
    "gain": {"linear": "linear gain", "exponential": "exponential gain (2^rel - 1)"},
    "discount": {"log2": "the 1/log2(rank+1) discount", "jarvelin": "Jarvelin's discount (none before rank 2)"},
    "ideal": {"judged": "the judged ideal", "retrieved": "the ideal of the retrieved list"},
    "k_beyond_list": {"k": "P@k over k", "min_k_n": "P@k over min(k, list length)"},
    "ap_denominator": {"relevant": "AP over all relevant documents",
                       "retrieved_relevant": "AP over the relevant documents retrieved",
                       "min_k_relevant": "AP over min(k, R)"},
    "empty_query": {"zero": "queries without relevant documents scoring 0",
                    "one": "queries without relevant documents scoring 1",
                    "skip": "queries without relevant documents left out"},
    "ties": {"docid_desc": "ties by docid descending", "docid_asc": "ties by docid ascending",
             "input_order": "ties in input order", "reverse_input": "ties in reverse input order",
             "average": "tied documents averaged"},
    "threshold_scope": {"binary": "every positive label in the gains",
                        "graded": "labels below the threshold dropped from the gains"},
    "score_precision": {"float64": "float64 scores", "float32": "scores narrowed to float32"},
    "rr_cutoff": {"honour": "RR@k honouring k", "ignore": "RR@k ignoring k"},
    "negative_labels": {"unjudged": "negative labels as unjudged", "keep": "negative labels kept as gains"},
    "label_type": {"float": "fractional labels as they are", "int_truncate": "labels truncated to integers"},
    "query_set": {"run": "only the run's queries averaged", "qrels": "every judged query averaged"},
}


def _phrase(axis: str, values: list) -> str:
    if axis == "relevance_threshold":
        if len(values) == 1:
            return f"relevance from label {values[0]}"
        return "relevance from label " + " or ".join(str(v) for v in values)
    if axis == "depth":
        words = ["the whole run" if v is None else f"the run cut to {v}" for v in values]
        return " or ".join(words)
    table = _PHRASES.get(axis, {})
    if len(values) == 1:
        return table.get(values[0], f"{axis}={format_value(values[0])}")
    return f"{axis} " + " or ".join(format_value(v) for v in values)


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
            table = self.consistent_conventions
            shown_axes = [a for a in self.axes if any(row[a] != "any" for row in table)]
            anys = [a for a in self.axes if a not in shown_axes]
            if shown_axes:
                cells = [[", ".join(v) if isinstance(v, list) else v for v in (row[a] for a in shown_axes)]
                         for row in table[:max_rows]]
                widths = [max(len(a), *(len(c[i]) for c in cells)) for i, a in enumerate(shown_axes)]
                lines.append("  " + "  ".join(a.ljust(w) for a, w in zip(shown_axes, widths)).rstrip())
                for c in cells:
                    lines.append("  " + "  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
                if len(table) > max_rows:
                    lines.append(f"  ... {len(table) - max_rows} more rows (see --json)")
            if anys:
                lines.append(f"  any value works for: {', '.join(anys)}")
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
                if v is None:
                    parts.append(f"{metric} error: {(err or 'no value')[:60]}")
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
            mark = "yes" if e.consistent else "no "
            src = "" if e.decided_by == "live" else " [profile; library not run]"
            lines.append(f"  {mark} {e.name:<{name_w}}  " + "; ".join(parts) + src)
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
    plural = len(shown) > 1
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
    if libs:
        text += (f"; yet {_join([e.name for e in libs])} {'gives' if len(libs) == 1 else 'give'} "
                 f"{'them' if plural else 'it'} (a library the sweep does not describe: a finding)")
    d = default_clause()
    if d:
        text += f"; {d}"
    return text + "."


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
    c = min(cands, key=lambda c: (_distance_to_default(c, grid.axes, grid.domains), c))
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
                prep: Prepared | None = None) -> PaperResult:
    """Which convention sets and library entries reproduce ``reported`` on (qrels, run)?

    ``reported``: aggregates and per-query values (:func:`parse_reported`,
    :func:`read_reported_per_query`); ``per_query_file`` adds a file's values. ``entries``:
    library entries to check (default: all); ``live``: also run the installed libraries.
    """
    reported = list(reported)
    if per_query_file is not None:
        reported += [r for r in per_query_file.values if r not in reported]
    if not reported:
        raise ReportedError("no reported value given")
    evidence = gather(qrels, run, [r.measure for r in reported],
                      per_query=[r for r in reported if r.qid is not None], entries=entries,
                      live=live, progress=progress, prep=prep)
    return answer(evidence, reported, per_query_file)


__all__ = [
    "BASE", "Evidence", "Grid", "PaperResult", "PerQueryFile", "READS", "Reported",
    "ReportedError", "SWEPT_VALUES", "Sweep", "answer", "check_paper", "gather", "parse_reported",
    "read_reported_per_query", "reported_value",
]
