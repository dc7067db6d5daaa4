"""What a measure is: its family, its cutoff, the conventions its name fixes, and its names.

Each measure family is one :class:`Family` record in :data:`FAMILIES`: what it computes (meaning
and formula text), how it aggregates over queries, its cutoff rule, whether it is graded, binary
or a count, whether it is bounded by 1, the axis groups it reads (so the axes it reads are
derived from the axis records of ``conformance.conventions``), and its spellings in ir_measures,
trec_eval and ranx syntax (:class:`Name`). Every other table of families (the name parser below,
the paper sweep's axes, the report, the adapters' name maps) is derived from these records.

A :class:`Measure` says nothing about how it is computed (that is ``conformance.reference`` and
the library adapters). Names are read in ir_measures syntax (``nDCG@10``, ``P(rel=2)@5``),
trec_eval syntax (``ndcg_cut_10``, ``P_5``) and ranx syntax (``ndcg_burges@10``, ``map@100-l2``);
``Measure.text`` keeps the spelling the user gave so output keys match what was asked for.

This module is one idea at about 750 lines: the records and the reader of the names they
declare, which cannot be understood apart.

Adding a family: its record below, its formula in ``conformance.reference.formulas`` and its
tests; an adapter that computes it adds it to the adapter's own support.
"""

from __future__ import annotations

import math as _math
import re as _re
from dataclasses import dataclass, field
from typing import Any

from conformance.conventions import _close_matches
from conformance.conventions import AXES as _AXES
from conformance.conventions import ConventionError as _ConventionError
from conformance.conventions import Conventions, format_value
from conformance.errors import ConformanceError

SYNTAXES = ("ir_measures", "trec_eval", "ranx")

# trec_eval's cutoff lists when a cutoff measure is named without parameters (``-m P``).
TREC_DEFAULT_CUTOFFS = "5,10,15,20,30,100,200,500,1000"


@dataclass(frozen=True)
class Name:
    """One spelling of a family in one syntax, and what that spelling allows.

    ``syntax``: "ir_measures" (``NAME@k``, ``NAME(key=value,...)``), "trec_eval" (``NAME`` or,
    with ``cut``, ``NAME_k`` and ``NAME.k,k``; ``gains``: ``NAME.1=3,2=9``) or "ranx"
    (``NAME@k``, ``NAME-lN``). ``cutoff`` narrows the family's cutoff rule for this spelling
    ("none", "optional", "required"; default: the family's; a trec_eval ``cut`` name is
    "required"). ``native``: the library of that syntax computes the family under this name
    (False for families conformance spells in ir_measures syntax that ir_measures lacks).
    ``fixed``: axes the spelling itself sets (ranx's ``_burges``: exponential gain). ``alias``:
    a second spelling that is read but not written. ``bare_error``: why the bare name is refused.
    ``default_cutoffs``: what trec_eval reads a bare cut name as. ``read``: the parser reads
    the spelling (False for a library's name whose meaning differs from the family's).
    """

    text: str
    syntax: str
    cut: bool = False
    gains: bool = False
    cutoff: str | None = None
    native: bool = True
    fixed: tuple[tuple[str, Any], ...] = ()
    alias: bool = False
    bare_error: str = ""
    default_cutoffs: str = ""
    read: bool = True

    def rule(self, family: "Family") -> str:
        """The cutoff rule of the library's measure under this name."""
        if self.cutoff is not None:
            return self.cutoff
        if self.cut:
            return "required"
        return "none" if self.syntax == "trec_eval" else family.cutoff


@dataclass(frozen=True)
class Family:
    """One measure family: what it is, never who computes it.

    ``kind``: "graded" (reads gains), "binary" (reads relevant / not relevant) or "count".
    ``cutoff``: "none" (takes no @k), "optional" or "required". ``aggregate``: "mean" or "sum"
    over the queries. ``bounded``: every value lies in [0, 1] (a reported number above 1 is then
    a percentage). ``groups``: the axis groups it reads (``conventions.GROUPS``);
    ``axes_named``: axes of the group "named" that it reads. ``parameters``: the measure
    parameters besides the cutoff (T's ``alpha``). ``reach``: how far down each list the
    family reads: "cutoff" (the top k, the whole list without a cutoff), "twice_cutoff" (the top
    2k) or "whole" (every document whatever the cutoff).
    """

    name: str
    meaning: str
    formula: str
    kind: str
    cutoff: str
    groups: tuple[str, ...]
    names: tuple[Name, ...] = ()
    aggregate: str = "mean"
    bounded: bool = True
    axes_named: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    reach: str = "cutoff"

    @property
    def takes_cutoff(self) -> bool:
        return self.cutoff != "none"

    @property
    def needs_cutoff(self) -> bool:
        return self.cutoff == "required"

    @property
    def axes(self) -> tuple[str, ...]:
        """Every axis whose value can change this family's values, in axis order."""
        return tuple(a.name for a in _AXES.values()
                     if a.group in self.groups or a.name in self.axes_named)

    def name_in(self, syntax: str, cutoff: int | None) -> Name | None:
        """The native spelling a library of ``syntax`` computes this family under at ``cutoff``
        (None: the library has no such measure)."""
        for n in self.names:
            if n.syntax != syntax or not n.native or n.alias:
                continue
            rule = n.rule(self)
            if (cutoff is None and rule != "required") or (cutoff is not None and rule != "none"):
                return n
        return None


_GRADED_GROUPS = ("input", "aggregation", "labels", "threshold", "ordering", "depth",
                  "normalisation", "graded")
_BINARY_GROUPS = ("input", "aggregation", "labels", "threshold", "ordering", "depth",
                  "ranked_relevance", "normalisation")
_EXP = (("gain", "exponential"),)


def _trec_bare(name: str, family: str, cutoffs: str = TREC_DEFAULT_CUTOFFS) -> str:
    return (
        f"trec_eval's bare {name!r} stands for {family} at its default cutoffs "
        f"{cutoffs}; name the cutoffs you want, such as {name}.5,10 or {name}_10"
    )


def _ir(text: str, **kw) -> Name:
    return Name(text, "ir_measures", **kw)


def _trec(text: str, **kw) -> Name:
    return Name(text, "trec_eval", **kw)


def _ranx(text: str, **kw) -> Name:
    return Name(text, "ranx", **kw)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "nDCG", "normalised discounted cumulative gain",
            "DCG@k / IDCG@k, the ideal DCG of the ideal source sorted by gain, cut at k",
            kind="graded", cutoff="optional", groups=_GRADED_GROUPS, axes_named=("negative_ideal",),
            names=(_ir("nDCG"), _ir("NDCG", alias=True),
                   _trec("ndcg", gains=True), _trec("ndcg_cut", cut=True),
                   _ranx("ndcg"), _ranx("ndcg_burges", fixed=_EXP)),
        ),
        Family(
            "DCG", "discounted cumulative gain", "sum over ranks i <= k of gain(i) x discount(i)",
            kind="graded", cutoff="optional", groups=_GRADED_GROUPS, bounded=False,
            names=(_ir("DCG", native=False), _ranx("dcg"), _ranx("dcg_burges", fixed=_EXP)),
        ),
        Family(
            "P", "precision", "relevant in the top k / k (or min(k, n) under k_beyond_list=min_k_n)",
            kind="binary", cutoff="required", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            names=(
                _ir("P", bare_error="P needs a cutoff, such as P@10; " + _trec_bare("P", "P")),
                _ir("Precision", alias=True, bare_error="Precision needs a cutoff, such as Precision@10"),
                _trec("P", cut=True, default_cutoffs=TREC_DEFAULT_CUTOFFS),
                _ranx("precision", bare_error=(
                    "ranx's bare 'precision' is precision over the whole list, which has no "
                    "equivalent here; give a cutoff, such as precision@10")),
            ),
        ),
        Family(
            "R", "recall", "relevant in the top k / R",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(
                _ir("R", cutoff="required"), _ir("Recall", alias=True),
                _trec("recall", cut=True, bare_error=(
                    "bare 'recall' is ambiguous: ranx reads it as recall over the whole list "
                    "(write R), trec_eval as recall at 5,10,15,20,30,100,200,500,1000 (write "
                    "recall.5,10,... or recall_100)")),
                _ranx("recall"),
            ),
        ),
        Family(
            "Rcap", "capped recall: recall whose denominator is at most k (BEIR's and MTEB's "
            "R_cap@k)",
            "relevant in the top k / min(k, R)",
            kind="binary", cutoff="required", groups=_BINARY_GROUPS,
            names=(_ir("Rcap", native=False, bare_error="Rcap needs a cutoff, such as Rcap@10"),
                   _ir("R_cap", alias=True, native=False,
                       bare_error="R_cap needs a cutoff, such as R_cap@10")),
        ),
        Family(
            "Hole", "the share of the top k that no judgment names (BEIR's and MTEB's Hole@k)",
            "documents in the top k judged for no query at all / k",
            # relevance and labels play no part: a document is annotated when any qrels row
            # names it, whatever its label or query
            kind="binary", cutoff="required",
            groups=("input", "aggregation", "ordering", "depth"),
            names=(_ir("Hole", native=False, bare_error="Hole needs a cutoff, such as Hole@10"),),
        ),
        Family(
            "F1", "harmonic mean of P@k and R@k", "2 P@k R@k / (P@k + R@k)",
            kind="binary", cutoff="required", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            names=(
                _ir("F1", native=False, bare_error="F1 needs a cutoff, such as F1@10"),
                _ranx("f1", bare_error=(
                    "ranx's bare 'f1' is F1 over the whole list, which has no equivalent here; "
                    "give a cutoff, such as f1@10")),
            ),
        ),
        Family(
            "Success", "1 if a relevant document is in the top k", "1 if relevant in the top k > 0",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("Success", cutoff="required"),
                   _trec("success", cut=True, default_cutoffs="1,5,10"),
                   _ranx("hit_rate")),
        ),
        Family(
            "RR", "reciprocal rank of the first relevant document",
            "1 / rank of the first relevant document (0 below rank k under rr_cutoff=honour)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("rr_cutoff",),
            # trec_eval accepts recip_rank.k and ignores k (rr_cutoff=ignore in its profile)
            names=(_ir("RR"), _ir("MRR", alias=True), _trec("recip_rank", cutoff="optional"),
                   _ranx("mrr")),
        ),
        Family(
            "GranularRR", "mean of 1/rank over every relevant document in the top k (LlamaIndex's "
            "granular MRR)",
            "sum of 1/rank over the relevant documents in the top k / their number (0 when none)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("GranularRR", native=False), _ir("granular_mrr", alias=True, native=False)),
        ),
        Family(
            "AP", "average precision", "sum of P@i at relevant ranks i <= k / D (ap_denominator)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("ap_denominator",),
            names=(_ir("AP"), _ir("MAP", alias=True),
                   _trec("map"), _trec("map_cut", cut=True), _ranx("map")),
        ),
        Family(
            "Rprec", "precision at rank R", "relevant in the top R / R",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            names=(_ir("Rprec"), _ir("RPrec", alias=True), _trec("Rprec"), _ranx("r-precision")),
            reach="whole",
        ),
        Family(
            "T", "((1 - alpha) n_p - alpha n_n) / K",
            "((1 - alpha) relevant - alpha non-relevant in the top K) / K",
            kind="binary", cutoff="required", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            parameters=("alpha",),
            names=(_ir("T", native=False, bare_error="T needs alpha and a cutoff, such as T(alpha=0.5)@10"),),
        ),
        Family(
            "Fe", "F1@K with R estimated as the relevant count in the top 2K",
            "2 n_K / (K + n_2K)",
            kind="binary", cutoff="required", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            names=(_ir("Fe", native=False, bare_error="Fe needs a cutoff, such as Fe@10"),),
            reach="twice_cutoff",
        ),
        Family(
            "NumQ", "number of queries", "1 per scored query, summed",
            kind="count", cutoff="none", groups=("input", "aggregation"), aggregate="sum",
            bounded=False, names=(_ir("NumQ"), _trec("num_q")), reach="whole",
        ),
        Family(
            "NumRet", "number of retrieved documents", "documents retrieved (after depth), summed",
            kind="count", cutoff="none", groups=("input", "aggregation", "depth"), aggregate="sum",
            bounded=False, names=(_ir("NumRet"), _trec("num_ret")), reach="whole",
        ),
        Family(
            "NumRel", "number of relevant judged documents",
            "judged documents with label >= L, summed",
            kind="count", cutoff="none", groups=("input", "aggregation", "labels", "threshold"),
            aggregate="sum", bounded=False, names=(_ir("NumRel"), _trec("num_rel")), reach="whole",
        ),
        Family(
            "NumRelRet", "number of relevant retrieved documents",
            "retrieved documents with label >= L (after depth), summed",
            kind="count", cutoff="none",
            groups=("input", "aggregation", "labels", "threshold", "ordering", "depth",
                    "ranked_relevance"),
            aggregate="sum", bounded=False,
            # ranx's per-query 'hits' is this count, but its mean is not this sum: the name is
            # the adapter's, never read as NumRelRet
            names=(_ir("NumRelRet"), _trec("num_rel_ret"), _ranx("hits", read=False)),
            reach="whole",
        ),
    ]
}


def families_reading(axis: str) -> tuple[str, ...]:
    """The families whose values ``axis`` can change (from the records)."""
    return tuple(f.name for f in FAMILIES.values() if axis in f.axes)


class MeasureError(ConformanceError, ValueError):
    """A metric name that cannot be read."""


@dataclass(frozen=True)
class Measure:
    """A measure: ``family`` at ``cutoff`` with measure-level convention ``overrides``.

    ``overrides`` are the axes the name itself fixes, whatever the profile says: ir_measures'
    ``rel=2`` and ranx's ``-l2`` fix ``relevance_threshold``; ``dcg='exp-log2'`` and ranx's
    ``ndcg_burges`` fix ``gain``; trec_eval's ``ndcg.1=3,2=9`` fixes a custom gain map.
    ``alpha`` is T's parameter. ``text`` is the name as the user wrote it; it does not take part
    in equality, so ``ndcg_cut_10`` and ``nDCG@10`` are the same measure.
    """

    family: str
    cutoff: int | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    alpha: float | None = None
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise MeasureError(f"unknown measure family {self.family!r}")
        if not self.text:
            object.__setattr__(self, "text", self.canonical)

    @property
    def aggregate(self) -> str:
        return FAMILIES[self.family].aggregate

    @property
    def record(self) -> Family:
        """The family's record."""
        return FAMILIES[self.family]

    @property
    def canonical(self) -> str:
        """ir_measures-style name, e.g. ``nDCG(gain=exponential)@10``; :func:`parse_measure`
        reads it back to an equal measure."""
        # A value holding a comma (a gain map) is quoted, so parse_measure reads the name back.
        params = [
            f"{k}='{v}'" if "," in format_value(v) else f"{k}={format_value(v)}"
            for k, v in self.overrides
        ]
        if self.alpha is not None:
            params.insert(0, f"alpha={self.alpha!r}")
        name = self.family + (f"({','.join(params)})" if params else "")
        return name + (f"@{self.cutoff}" if self.cutoff is not None else "")

    def conventions(self, base: Conventions) -> Conventions:
        """``base`` with this measure's own overrides applied."""
        return base.replace(**dict(self.overrides)) if self.overrides else base

    def __str__(self) -> str:
        return self.text



# --------------------------------------------------------------------------------------------
# Reading measure names
# --------------------------------------------------------------------------------------------

# Families that accept ir_measures' ``rel=`` (and where ranx's ``-lN`` needs no second axis):
# every family whose relevant documents depend on the threshold, graded ones excepted.
_REL_FAMILIES = {f.name for f in FAMILIES.values() if "threshold" in f.groups and f.kind != "graded"}


@dataclass(frozen=True)
class _Name:
    """How one spelling may be used, merged over the syntaxes that share it (derived from the
    :class:`Name` records).

    at: ``NAME@k``; params: ``NAME(key=value,...)``; under: trec_eval ``NAME_k``; dot: trec_eval
    ``NAME.params``, either "cutoffs" (``P.5,10``) or "gains" (``ndcg.1=3,2=9``); level: ranx's
    ``-lN`` suffix; bare: the name alone is allowed (else ``bare_error`` explains why not);
    fixed: overrides the name itself carries (ranx's ``_burges``).
    """

    family: str
    at: bool = False
    params: bool = False
    under: bool = False
    dot: str | None = None
    level: bool = False
    bare: bool = True
    bare_error: str = ""
    fixed: tuple[tuple[str, Any], ...] = ()


def _spec(f: Family, n: Name) -> _Name:
    if n.syntax == "ir_measures":
        flags = {"at": f.takes_cutoff, "params": True}
    elif n.syntax == "ranx":
        flags = {"at": f.takes_cutoff, "level": True}
    elif n.cut:
        flags = {"under": True, "dot": "cutoffs"}
    else:
        flags = {"dot": "gains"} if n.gains else {}
    bare_error = n.bare_error
    if n.cut and not bare_error:
        bare_error = _trec_bare(n.text, f.name, n.default_cutoffs or TREC_DEFAULT_CUTOFFS)
    bare = not (f.needs_cutoff or n.cut or n.bare_error)
    return _Name(f.name, bare=bare, bare_error=bare_error, fixed=n.fixed, **flags)


def _merge(a: _Name, b: _Name, text: str) -> _Name:
    if a.family != b.family or a.fixed != b.fixed:
        raise AssertionError(f"spelling {text!r} names two different measures")
    return _Name(a.family, a.at or b.at, a.params or b.params, a.under or b.under,
                 a.dot or b.dot, a.level or b.level, a.bare and b.bare,
                 a.bare_error or b.bare_error, a.fixed)


def _spellings() -> dict[str, _Name]:
    """Every spelling the parser reads, in syntax order (ir_measures, trec_eval, ranx) and
    family order within a syntax; a spelling two syntaxes share is merged."""
    out: dict[str, _Name] = {}
    for syntax in SYNTAXES:
        for f in FAMILIES.values():
            for n in f.names:
                if n.syntax != syntax or not n.read:
                    continue
                spec = _spec(f, n)
                out[n.text] = _merge(out[n.text], spec, n.text) if n.text in out else spec
    return out


_NAMES: dict[str, _Name] = _spellings()

# Names the libraries know and we do not compute: a specific message instead of "unknown".
_UNSUPPORTED: dict[str, str] = {
    "hits": (
        "ranx's 'hits' is the number of relevant documents in the top k, averaged over queries; "
        "conformance has no such measure (NumRelRet is summed over queries and takes no cutoff); "
        "P@k times k gives the same count when the list holds at least k documents"
    ),
    "Judged": "ir_measures' Judged (the fraction of judged documents) is not computed by conformance",
    "bpref": "bpref is not computed by conformance",
    "Bpref": "Bpref is not computed by conformance",
    "BPref": "BPref is not computed by conformance",
    "rbp": "rank-biased precision is not computed by conformance",
    "RBP": "rank-biased precision is not computed by conformance",
    "infAP": "infAP is not computed by conformance",
    "ERR": "ERR is not computed by conformance",
    "IPrec": "interpolated precision is not computed by conformance",
    "iprec_at_recall": "interpolated precision is not computed by conformance",
    "11pt_avg": "11-point average precision is not computed by conformance",
    "gm_map": "the geometric mean of AP is not computed by conformance",
    "Rprec_mult": "Rprec_mult is not computed by conformance",
    "Rndcg": "Rndcg is not computed by conformance",
    "ndcg_rel": "ndcg_rel is not computed by conformance",
    "SetP": "set measures (SetP, SetR, SetF, SetAP) are not computed by conformance",
    "SetR": "set measures (SetP, SetR, SetF, SetAP) are not computed by conformance",
    "SetF": "set measures (SetP, SetR, SetF, SetAP) are not computed by conformance",
    "SetAP": "set measures (SetP, SetR, SetF, SetAP) are not computed by conformance",
    "set_P": "set measures are not computed by conformance",
    "set_recall": "set measures are not computed by conformance",
    "set_map": "set measures are not computed by conformance",
    "set_F": "set measures are not computed by conformance",
    "utility": "utility is not computed by conformance",
    "relstring": "relstring is not a measure conformance computes",
    "runid": "runid is not a measure",
}

KNOWN_NAMES: tuple[str, ...] = tuple(_NAMES)

# Parameters accepted in parentheses besides the axis names of conventions.AXES.
_PARAMS = ("rel", "dcg", "gains", "alpha", "cutoff")

_HEAD = _re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*")
_INT = _re.compile(r"[+-]?\d+")


def _cutoff(text: str, measure: str) -> int:
    """A cutoff: a positive integer of any size."""
    t = text.strip()
    if not t:
        raise MeasureError(f"measure {measure!r}: empty cutoff; expected a positive integer, such as @10")
    if not _INT.fullmatch(t):
        raise MeasureError(f"measure {measure!r}: cutoff {t!r} is not an integer; expected a positive integer")
    k = int(t)
    if k <= 0:
        raise MeasureError(f"measure {measure!r}: cutoff must be a positive integer, got {k}")
    return k


def _head_of(text: str) -> str:
    h = _HEAD.match(text)
    return h.group(0) if h else ""


def _unknown(head: str, measure: str) -> MeasureError:
    if head in _UNSUPPORTED:
        return MeasureError(
            f"measure {measure!r}: {_UNSUPPORTED[head]} (known names: {', '.join(KNOWN_NAMES)})"
        )
    pool: dict[str, list[str]] = {}
    for n in _NAMES:
        pool.setdefault(n.lower(), []).append(n)
    # Match case-insensitively, so 'Ndcg' still finds nDCG and ndcg.
    close = _close_matches(head.lower(), list(pool), n=3, cutoff=0.6)
    names = [n for c in close for n in pool[c]]
    hint = f"; did you mean {', '.join(names)}?" if names else ""
    return MeasureError(
        f"unknown measure {measure!r}{hint} (known names: {', '.join(KNOWN_NAMES)})"
    )


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside parentheses, braces, brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _matching_paren(text: str, start: int, measure: str) -> int:
    """Index of the ``)`` that closes the ``(`` at ``start``."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                if ch != ")":
                    break
                return i
    raise MeasureError(f"measure {measure!r}: unbalanced parentheses or quotes")


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v


def _parse_params(inner: str, measure: str) -> list[tuple[str, str]]:
    out = []
    if not inner.strip():
        return out
    for part in _split_top(inner):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise MeasureError(
                f"measure {measure!r}: parameter {part.strip()!r} is not key=value, such as rel=2 "
                "(quote a value that holds commas: gain='0:0,1:1,2:3')"
            )
        out.append((key, value.strip()))
    return out


def _gains_dict(text: str, measure: str) -> str:
    """ir_measures' ``gains={0:0,1:1,2:3}`` -> the gain axis' canonical map."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise MeasureError(f"measure {measure!r}: gains must be a map such as {{0:0,1:1,2:3}}, got {t!r}")
    try:
        return _AXES["gain"].parse(t[1:-1].replace(" ", ""))
    except _ConventionError as exc:
        raise MeasureError(f"measure {measure!r}: {exc}") from None


class _Builder:
    """Collects what a name, its parameters and its suffixes say, and refuses contradictions."""

    def __init__(self, measure: str, family: str) -> None:
        self.measure, self.family = measure, family
        self.cutoff: int | None = None
        self.alpha: float | None = None
        self.overrides: dict[str, Any] = {}

    def set_cutoff(self, k: int) -> None:
        if self.cutoff is not None and self.cutoff != k:
            raise MeasureError(f"measure {self.measure!r}: cutoff given twice ({self.cutoff} and {k})")
        self.cutoff = k

    def override(self, axis: str, value: Any, via: str) -> None:
        old = self.overrides.get(axis, value)
        if old != value:
            raise MeasureError(
                f"measure {self.measure!r}: {via} sets {axis}={value} but {axis}={old} is also given"
            )
        self.overrides[axis] = value

    def param(self, key: str, raw: str) -> None:
        value = _unquote(raw)
        fam, m = self.family, self.measure
        if key == "judged_only":
            raise MeasureError(
                f"measure {m!r}: judged_only is not supported: conformance has no convention that "
                "drops unjudged retrieved documents from the ranking"
            )
        if key == "rel":
            if fam == "NumRet":  # ir_measures: NumRelRet is NumRet(rel=1)
                self.family = fam = "NumRelRet"
            if fam not in _REL_FAMILIES:
                raise MeasureError(
                    f"measure {m!r}: rel= applies to binary measures; for {fam} write "
                    "relevance_threshold=N,threshold_scope=graded to drop lower labels from the gains"
                )
            self.override("relevance_threshold", self._axis("relevance_threshold", value), "rel=")
        elif key == "dcg":
            if FAMILIES[fam].kind != "graded":
                raise MeasureError(f"measure {m!r}: dcg= applies to nDCG and DCG only")
            if value == "exp-log2":
                self.override("gain", "exponential", "dcg='exp-log2'")
            elif value != "log2":
                raise MeasureError(f"measure {m!r}: dcg={value!r}: expected 'log2' or 'exp-log2'")
        elif key == "gains":
            if FAMILIES[fam].kind != "graded":
                raise MeasureError(f"measure {m!r}: gains= applies to nDCG and DCG only")
            self.override("gain", _gains_dict(value, m), "gains=")
        elif key == "alpha":
            if fam != "T":
                raise MeasureError(f"measure {m!r}: alpha= is T's parameter; {fam} takes none")
            try:
                a = float(value)
            except ValueError:
                a = float("nan")
            if not (_math.isfinite(a) and 0.0 <= a <= 1.0):
                raise MeasureError(f"measure {m!r}: alpha must be a number from 0 to 1, got {value!r}")
            self.alpha = a
        elif key == "cutoff":
            self.set_cutoff(_cutoff(value, m))
        elif key in _AXES:
            if key == "duplicates":
                raise MeasureError(
                    f"measure {m!r}: duplicates is settled when the run is read, for every measure "
                    "at once; set it for the whole evaluation (--set duplicates=...)"
                )
            self.override(key, self._axis(key, value), f"{key}=")
        else:
            close = _close_matches(key, list(_PARAMS) + list(_AXES), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise MeasureError(
                f"measure {m!r}: unknown parameter {key!r}{hint} (parameters: "
                f"{', '.join(_PARAMS)}, judged_only (refused), or any axis: {', '.join(_AXES)})"
            )

    def _axis(self, axis: str, value: str) -> Any:
        try:
            return _AXES[axis].parse(value)
        except _ConventionError as exc:
            raise MeasureError(f"measure {self.measure!r}: {exc}") from None

    def build(self, spec: _Name, text: str) -> Measure:
        fam, m = self.family, self.measure
        takes, needs = FAMILIES[fam].takes_cutoff, FAMILIES[fam].needs_cutoff
        if self.cutoff is not None and not takes:
            raise MeasureError(f"measure {m!r}: {fam} takes no cutoff")
        if self.cutoff is None and needs:
            raise MeasureError(
                f"measure {m!r}: {spec.bare_error or fam + ' needs a cutoff, such as ' + fam + '@10'}"
            )
        if fam == "T" and self.alpha is None:
            raise MeasureError(f"measure {m!r}: T needs alpha, such as T(alpha=0.5)@10")
        order = list(_AXES)
        overrides = tuple(sorted(self.overrides.items(), key=lambda kv: order.index(kv[0])))
        return Measure(fam, self.cutoff, overrides, self.alpha, text)


def _parse_one(text: str) -> list[Measure]:
    """One comma-separated item (a trec_eval dotted item may still name several measures)."""
    measure = text
    s = text.strip()
    if not s:
        raise MeasureError("empty measure name")
    level: int | None = None
    pos = s.rfind("-l")
    if pos > 0 and ")" not in s[pos:]:
        raw = s[pos + 2:].strip()
        if _INT.fullmatch(raw):
            level = int(raw)
            s = s[:pos].rstrip()
        elif _head_of(s[:pos]) in _NAMES:
            raise MeasureError(f"measure {measure!r}: ranx's -l suffix needs an integer level, such as -l2")
    head_m = _HEAD.match(s)
    if not head_m:
        raise MeasureError(f"measure {measure!r}: a measure name starts with a letter, such as nDCG@10")
    head, rest = head_m.group(0), s[head_m.end():]
    under_k: str | None = None
    if head in _NAMES:
        spec = _NAMES[head]
    else:
        mu = _re.fullmatch(r"(.+?)_([+-]?\d+)", head)
        base = mu.group(1) if mu else ""
        if base in _NAMES and _NAMES[base].under:
            head, under_k = base, mu.group(2)
            spec = _NAMES[head]
        elif base == "recip_rank":
            raise MeasureError(
                f"measure {measure!r}: trec_eval's recip_rank has no cutoff; write RR@{mu.group(2)} "
                "for the reciprocal rank within the top k"
            )
        elif base in _NAMES:
            fam = _NAMES[base].family
            raise MeasureError(
                f"measure {measure!r}: {base} takes no _k cutoff; "
                + (f"write {base if _NAMES[base].at else fam}@{mu.group(2)}" if FAMILIES[fam].takes_cutoff else f"{fam} has no cutoff")
            )
        else:
            raise _unknown(head, measure)
    b = _Builder(measure, spec.family)
    for axis, value in spec.fixed:
        b.override(axis, value, head)
    if under_k is not None:
        b.set_cutoff(_cutoff(under_k, measure))
    if rest.startswith("."):
        if spec.dot is None or under_k is not None:
            if head == "recip_rank":
                raise MeasureError(
                    f"measure {measure!r}: trec_eval accepts recip_rank.k but ignores k; write "
                    "recip_rank (no cutoff) or RR@k (reciprocal rank within the top k)"
                )
            raise MeasureError(f"measure {measure!r}: {head} takes no trec_eval .parameters")
        if level is not None:
            raise MeasureError(f"measure {measure!r}: ranx's -l suffix does not combine with trec_eval .parameters")
        body = rest[1:]
        if spec.dot == "gains":
            b.override("gain", b._axis("gain", body), f"{head}.")
            return [b.build(spec, text.strip())]
        ks = [_cutoff(k, measure) for k in body.split(",")]
        out = []
        for k in ks:
            bk = _Builder(measure, spec.family)
            bk.set_cutoff(k)
            out.append(bk.build(spec, f"{head}.{k}" if len(ks) > 1 else text.strip()))
        return out
    if rest.startswith("("):
        if not spec.params:
            raise MeasureError(
                f"measure {measure!r}: {head} takes no (parameters); parameters go with the "
                "ir_measures names, such as nDCG(gain=exponential)@10"
            )
        if under_k is not None:
            raise MeasureError(f"measure {measure!r}: (parameters) do not combine with trec_eval's _k form")
        close = _matching_paren(rest, 0, measure)
        for key, value in _parse_params(rest[1:close], measure):
            b.param(key, value)
        rest = rest[close + 1:]
    if rest.startswith("@"):
        if under_k is not None:
            raise MeasureError(f"measure {measure!r}: cutoff given twice")
        if not spec.at:
            takes = FAMILIES[spec.family].takes_cutoff
            if not takes:
                raise MeasureError(f"measure {measure!r}: {spec.family} takes no cutoff")
            k = rest[1:].strip()
            alt = f"{head}_{k} or " if spec.under else ""
            raise MeasureError(f"measure {measure!r}: {head} takes no @k; write {alt}{spec.family}@{k}")
        b.set_cutoff(_cutoff(rest[1:], measure))
        rest = ""
    if rest:
        raise MeasureError(
            f"measure {measure!r}: cannot read {rest!r} after {head!r}; expected @k, (key=value,...), "
            "_k or .k,k"
        )
    if level is not None:
        if not spec.level or under_k is not None or "(" in s:
            raise MeasureError(
                f"measure {measure!r}: the -lN suffix is ranx syntax and goes with ranx names "
                "(such as ndcg@10-l2); elsewhere write rel=N, such as P(rel=2)@5"
            )
        b.override("relevance_threshold", b._axis("relevance_threshold", str(level)), "-l")
        if FAMILIES[spec.family].kind == "graded":
            # ranx's -lN removes judgments below N before computing gains and the ideal too.
            b.override("threshold_scope", "graded", "-l")
    if not spec.bare and b.cutoff is None:
        raise MeasureError(f"measure {measure!r}: {spec.bare_error}")
    return [b.build(spec, text.strip())]


def parse_measure(text: str) -> Measure:
    """Read one measure name (ir_measures, trec_eval or ranx syntax); see :func:`parse_measures`.

    A trec_eval item that names several measures (``P.5,10``) is refused here: it is not one.
    """
    if not isinstance(text, str):
        raise MeasureError(f"a measure name must be text, got {type(text).__name__}")
    try:
        items = _group_items(text)
    except MeasureError:
        items = [text]  # let _parse_one say what is wrong with it
    if len(items) > 1:
        raise MeasureError(
            f"{text.strip()!r} is a list of {len(items)} measures; read it with parse_measures"
        )
    out = _parse_one(text)
    if len(out) != 1:
        raise MeasureError(
            f"measure {text.strip()!r} names {len(out)} measures; read it with parse_measures"
        )
    return out[0]


def _group_items(text: str) -> list[str]:
    """Top-level comma pieces, with trec_eval's parameter lists put back together.

    A piece that does not start with a letter cannot be a name: it continues the trec_eval
    ``.params`` item before it (``ndcg_cut.5,10``, ``ndcg.1=3,2=9``).
    """
    items: list[str] = []
    for piece in _split_top(text):
        p = piece.strip()
        if not p:
            raise MeasureError(f"empty measure name in {text.strip()!r}")
        if p[0].isalpha():
            items.append(p)
            continue
        prev = items[-1] if items else ""
        h = _HEAD.match(prev)
        if h and prev[h.end():].startswith("."):
            items[-1] = prev + "," + p
            continue
        raise MeasureError(
            f"{p!r} in {text.strip()!r} is not a measure name; a bare number only continues a "
            "trec_eval parameter list, such as ndcg_cut.5,10"
        )
    return items


def parse_measures(text: str | list[str] | tuple[str, ...]) -> list[Measure]:
    """Read a comma-separated list of measure names, in any mix of three syntaxes.

    - ir_measures: ``nDCG@10``, ``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``, ``T(alpha=0.5)@10``,
      and any convention axis as a parameter: ``nDCG(gain=exponential,discount=jarvelin)@10``
      (quote values that hold commas: ``nDCG(gain='0:0,1:1,2:3')``).
    - trec_eval: ``ndcg_cut_10``, ``ndcg_cut.10``, ``P_5``, ``map``, ``recip_rank``,
      ``ndcg.1=3,2=9`` (a custom gain map), ``num_rel_ret``...
    - ranx: ``ndcg@10``, ``ndcg_burges@10``, ``mrr@10``, ``hit_rate@5``, ``r-precision``, and
      the ``-lN`` suffix (``ndcg@10-l2``).

    Commas inside parentheses, braces or quotes belong to the parameters. A comma-separated piece
    that does not start with a letter continues the trec_eval ``.params`` item before it, as in
    ``trec_eval -m``: ``"ndcg_cut.5,10,map"`` is nDCG@5, nDCG@10 and AP, spelled ``ndcg_cut.5``,
    ``ndcg_cut.10`` and ``map``; ``"ndcg.1=3,2=9,P_5"`` is one nDCG with gains 1:3,2:9 and P@5.
    ``text`` may also be a list of such strings. The same spelling twice is an error (output is
    keyed by spelling).

    What the names fix (``Measure.overrides``): ``rel=N`` and ranx's ``-lN`` fix
    ``relevance_threshold``; ranx's ``-lN`` on ``ndcg``/``dcg`` also fixes
    ``threshold_scope=graded``, because ranx drops judgments below N before computing gains and
    the ideal (checked live on ranx 0.3.21); ``dcg='exp-log2'``, ``_burges`` fix
    ``gain=exponential``; ``dcg='log2'`` is ir_measures' default and fixes nothing; ``gains={..}``
    and trec_eval's ``ndcg.1=3,2=9`` fix a custom gain map. Everything else is left to the profile.

    Refused on purpose, each with a message saying why and what to write instead:

    - a bare trec_eval cutoff name (``P``, ``ndcg_cut``, ``map_cut``, ``success``): trec_eval
      reads it as 9 (or 3) default cutoffs; name them. Bare ``recall`` is also ambiguous (ranx:
      the whole list). ``recip_rank.10``: trec_eval accepts and ignores the 10.
    - ranx's ``hits@k``: the mean count of relevant documents in the top k, a measure we lack.
    - ``judged_only=``: no convention drops unjudged documents from a ranking.
    - ``duplicates=`` inside a name: it is settled once when the run is read.
    - ``T`` without ``alpha`` (no default: a paper's T may use any alpha in [0, 1]).
    - ``rel=`` on nDCG/DCG (ir_measures has none; write the two axes explicitly).
    - a cutoff that is not a positive integer (trec_eval truncates ``23.4`` to 23; we refuse).
    """
    texts = [text] if isinstance(text, str) else list(text)
    out: list[Measure] = []
    seen: set[str] = set()
    for t in texts:
        if not isinstance(t, str):
            raise MeasureError(f"a measure name must be text, got {type(t).__name__}")
        if not t.strip():
            raise MeasureError("no measure given")
        for item in _group_items(t):
            for m in _parse_one(item):
                if m.text in seen:
                    raise MeasureError(f"measure {m.text!r} is listed twice")
                seen.add(m.text)
                out.append(m)
    return out
