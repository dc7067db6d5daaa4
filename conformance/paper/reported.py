"""Reported values: what a paper printed, as the interval of values that print that way.

The printed precision of a number sets its rounding interval: ``0.4312`` stands for any value in
[0.43115, 0.43125] (closed, since a value exactly half-way may be printed either way). A value
above 1 of a measure that is a fraction (everything but DCG and the Num* counts) is a percentage
unless ``percent=False``: ``27.10`` is 0.2710, interval [0.27095, 0.27105]; a trailing ``%``
always means a percentage. ``digits`` overrides the number of printed decimals (a paper that
printed 0.4300 but whose value reached you as 0.43). Per-query values (trec_eval ``-q`` lines,
``measure qid value``) each have their own interval and must be matched query by query: the
query must be scored and counted, and its value in the interval.
"""

from __future__ import annotations

import math
import re
import os
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from conformance.errors import ConformanceError, InputError
from conformance.measures import Measure, MeasureError, parse_measure


# More printed decimals than a float64 holds say nothing more (and keep Decimal in range).
MAX_DIGITS = 17

# Families whose values are not fractions: a number above 1 is never a percentage for them.


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


_PRINTED_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


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
    # Decimal also reads "1_0": a printed number is digits, a point and an exponent only
    if not _PRINTED_NUMBER.fullmatch(text):
        raise ReportedError(f"reported value {where!r}: {number.strip()!r} is not a number: expected "
                            "a decimal number as a paper prints it, such as 0.4312, 43.12 or 43.12%")
    if digits is not None and not 0 <= digits <= MAX_DIGITS:
        raise ReportedError(f"--digits must be between 0 and {MAX_DIGITS}, got {digits}")
    shown = max(0, -int(dec.as_tuple().exponent))
    if digits is None and shown > MAX_DIGITS:
        raise ReportedError(f"reported value {where!r}: more than {MAX_DIGITS} decimals")
    places = shown if digits is None else digits
    half = Decimal(5).scaleb(-places - 1)
    bounded = measure.record.bounded
    if explicit and not bounded:
        raise ReportedError(
            f"reported value {where!r}: {measure.family} is not a fraction, so it cannot be a percentage"
        )
    is_percent = bounded and (explicit or (percent and abs(dec) > 1))
    low, high = dec - half, dec + half
    if is_percent:
        dec, low, high = dec.scaleb(-2), low.scaleb(-2), high.scaleb(-2)
        places += 2
    if bounded and not 0 <= dec <= 1:
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
                            percent: bool = True, limits=None) -> PerQueryFile:
    """Read trec_eval ``-q`` output: ``measure qid value`` per line (whitespace-separated).

    ``all`` rows are aggregates. Lines of measures conformance does not compute (``bpref``,
    ``iprec_at_recall_0.00``...) and trec_eval's ``runid`` line are counted and skipped; a line
    with the wrong number of fields or a value that is not a number is an error naming the line.
    The file is read as every input is (``conformance.io.text.read_bytes``): bounded by
    ``limits`` (default: from the environment) in size and line length, so ``/dev/zero`` fails
    at once, naming the file.
    """
    from conformance.io.text import read_bytes

    source = os.fspath(path)
    data = bytes(read_bytes(path, limits, lines=True)[0])
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
