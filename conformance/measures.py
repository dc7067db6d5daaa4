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

This module is one idea at about 1,450 lines: the records and the reader of the names they
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
class Param:
    """A measure parameter besides the cutoff: its name, meaning, default and allowed values.

    ``kind``: "number" (a float), "integer" or "numbers" (a comma list of floats, trec_eval's
    ``11pt_avg.0.2,0.5,0.8``; ``length`` fixes how many). ``default``: the value when the name
    leaves it out (None: it must be given; a spelling may give its own, ``Name.defaults``).
    ``low``/``high`` bound the value (``open_low``/``open_high``: the bound itself excluded).
    """

    name: str
    meaning: str
    kind: str = "number"
    default: Any = None
    low: float = -_math.inf
    high: float = _math.inf
    open_low: bool = False
    open_high: bool = False
    length: int | None = None

    def parse(self, text: str, measure: str) -> Any:
        """The stored value of ``text`` (floats; an int; a tuple of floats), or MeasureError."""
        t = _unquote(str(text)).strip()
        if self.kind == "numbers":
            parts = [x.strip() for x in t.strip("{}[]() ").split(",") if x.strip()]
            values = tuple(self._number(x, measure) for x in parts)
            if not values or (self.length is not None and len(values) != self.length):
                want = f"{self.length} numbers" if self.length else "one number or more"
                raise MeasureError(f"measure {measure!r}: {self.name} takes {want}, such as "
                                   f"{self.example}, got {t!r}")
            if self.length is None and len(set(values)) != len(values):
                raise MeasureError(f"measure {measure!r}: {self.name} lists a value twice: {t!r}")
            return values
        if self.kind == "integer":
            if not _INT.fullmatch(t):
                raise MeasureError(f"measure {measure!r}: {self.name} must be an integer, got {t!r}")
            value = int(t)
            self._check(value, measure)
            return value
        return self._number(t, measure)

    def _number(self, t: str, measure: str) -> float:
        try:
            value = float(t)
        except ValueError:
            value = _math.nan
        if not _math.isfinite(value):
            raise MeasureError(f"measure {measure!r}: {self.name} must be a number"
                               f"{self._range()}, got {t!r}")
        self._check(value, measure)
        return value

    def _check(self, value: float, measure: str) -> None:
        low_ok = value > self.low if self.open_low else value >= self.low
        high_ok = value < self.high if self.open_high else value <= self.high
        if not (low_ok and high_ok):
            raise MeasureError(f"measure {measure!r}: {self.name} must be a number{self._range()}, "
                               f"got {format_param(value)}")

    def _range(self) -> str:
        if self.low == -_math.inf and self.high == _math.inf:
            return ""
        if self.high == _math.inf:
            return f" {'above' if self.open_low else 'from'} {format_param(self.low)}"
        return (f" in {'(' if self.open_low else '['}{format_param(self.low)}, "
                f"{format_param(self.high)}{')' if self.open_high else ']'}")

    @property
    def example(self) -> str:
        if self.default is not None:
            return format_param(self.default)
        return {"number": "0.5", "integer": "1", "numbers": "0.2,0.5,0.8"}[self.kind]


def format_param(value: Any) -> str:
    """The public text of a parameter value: ``0.8``, ``3``, ``0.2,0.5,0.8``."""
    if isinstance(value, tuple):
        return ",".join(format_param(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)  # 1.0, so that a number stays a number when read back
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Name:
    """One spelling of a family in one syntax, and what that spelling allows.

    ``syntax``: "ir_measures" (``NAME@k``, ``NAME(key=value,...)``), "trec_eval" (``NAME`` or,
    with ``cut``, ``NAME_k`` and ``NAME.k,k``; ``gains``: ``NAME.1=3,2=9``; ``each``: the named
    parameter read from ``NAME.x,y`` as one measure per value and from ``NAME_x``; ``whole``:
    the named parameter read from ``NAME.x,y`` as one value; ``pairs``: ``NAME.p=0.8``) or
    "ranx" (``NAME@k``, ``NAME-lN``; ``ranx_dot``: the named parameter from ``NAME.95`` as
    0.95). ``cutoff`` narrows the family's cutoff rule for this spelling ("none", "optional",
    "required"; default: the family's; a trec_eval ``cut`` name is "required"). ``native``: the
    library of that syntax computes the family under this name (False for families conformance
    spells in ir_measures syntax that ir_measures lacks). ``fixed``: axes the spelling itself
    sets (ranx's ``_burges``: exponential gain; trec_eval's ``gm_``: the geometric mean).
    ``defaults``: parameter values the spelling stands for when they are left out (trec_eval's
    ``rbp`` is p = 0.9, ir_measures' ``RBP`` p = 0.8). ``alias``: a second spelling that is read
    but not written. ``bare_error``: why the bare name is refused. ``default_cutoffs``: what
    trec_eval reads a bare cut (or ``each``) name as. ``read``: the parser reads the spelling
    (False for a library's name whose meaning differs from the family's).
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
    each: str = ""
    whole: str = ""
    pairs: bool = False
    ranx_dot: str = ""
    defaults: tuple[tuple[str, Any], ...] = ()

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
    over the queries, or "curve" (a value of the whole evaluation, not of the per-query values:
    ``conformance.reference.formulas.CURVES``). ``bounded``: every value lies in [0, 1] (a reported number above 1 is then
    a percentage). ``groups``: the axis groups it reads (``conventions.GROUPS``);
    ``axes_named``: axes of the group "named" that it reads. ``parameters``: the measure
    parameters besides the cutoff (:class:`Param`; T's ``alpha``); ``at``: the parameter that
    ``NAME@x`` sets instead of the cutoff (ir_measures' ``IPrec@0.5``: the recall level).
    ``reach``: how far down each list the family reads: "cutoff" (the top k, the whole list
    without a cutoff), "twice_cutoff" (the top 2k) or "whole" (every document whatever the
    cutoff). ``ends``: what orders tied documents at the two ends of ``ties=unspecified`` (the
    value can only rise as a document higher on that key moves up within its tie group, so the
    two sorts give the range): "label" (labels ascending / descending, so relevance too),
    "gain" (gains), "judged" (unjudged documents first / last) or "none" (no such order is
    proven: the family refuses a tie group that could change it). ``scale_free``: the value is
    unchanged when every gain of a query is multiplied by one positive number (so exponential
    gains beyond the range of a double are computed scaled).
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
    parameters: tuple[Param, ...] = ()
    reach: str = "cutoff"
    at: str | None = None
    ends: str = ""
    scale_free: bool = False

    def __post_init__(self) -> None:
        if not self.ends:
            object.__setattr__(self, "ends", "gain" if self.kind == "graded" else "label")

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

    def parameter(self, name: str) -> Param | None:
        return next((p for p in self.parameters if p.name == name), None)

    def name_in(self, syntax: str, cutoff: int | None,
                fixed: tuple[tuple[str, Any], ...] = ()) -> Name | None:
        """The native spelling a library of ``syntax`` computes this family under at ``cutoff``
        (None: the library has no such measure). ``fixed``: the axes the measure's own name
        fixes; a spelling that fixes some of them (trec_eval's ``gm_map``) is preferred, and a
        spelling that fixes an axis to another value is never chosen."""
        given = dict(fixed)
        best: Name | None = None
        for n in self.names:
            if n.syntax != syntax or not n.native or n.alias:
                continue
            if any(given.get(a, v) != v or a not in given for a, v in n.fixed):
                continue
            rule = n.rule(self)
            if (cutoff is None and rule != "required") or (cutoff is not None and rule != "none"):
                if best is None or len(n.fixed) > len(best.fixed):
                    best = n
        return best


_GRADED_GROUPS = ("input", "aggregation", "averaging", "labels", "threshold", "ordering", "depth",
                  "normalisation", "graded")
_BINARY_GROUPS = ("input", "aggregation", "averaging", "labels", "threshold", "ordering", "depth",
                  "ranked_relevance", "normalisation")
# Measures that read labels and the ranking but not the relevance threshold (ERR, C/W/L)
_LABEL_GROUPS = ("input", "aggregation", "averaging", "labels", "ordering", "depth",
                 "normalisation")
_EXP = (("gain", "exponential"),)
_GM = (("mean", "geometric"),)


def _trec_bare(name: str, family: str, cutoffs: str = TREC_DEFAULT_CUTOFFS) -> str:
    return (
        f"trec_eval's bare {name!r} stands for {family} at its default cutoffs "
        f"{cutoffs}; name the cutoffs you want, such as {name}.5,10 or {name}_10"
    )


def _trec_bare_each(name: str, family: str, param: str, values: str) -> str:
    first = values.split(",")[0]
    return (
        f"trec_eval's bare {name!r} stands for {family} at its default {param}s "
        f"{values}; name the ones you want, such as {name}.{first} or {name}_{first}"
    )


def _ir(text: str, **kw) -> Name:
    return Name(text, "ir_measures", **kw)


def _trec(text: str, **kw) -> Name:
    return Name(text, "trec_eval", **kw)


def _ranx(text: str, **kw) -> Name:
    return Name(text, "ranx", **kw)


# Parameters shared by several families
_P = Param("p", "the persistence: the probability of going on to the next rank",
           low=0.0, high=1.0, open_low=True, open_high=True)
_MAX_REL = Param("max_rel", "the label of full gain 1 (higher labels count as it)",
                 kind="integer")
_MIN_REL = Param("min_rel", "the label of gain 0 (lower labels count as it)", kind="integer",
                 default=0)
_T_GAIN = Param("T", "the total gain the user wants (gains scaled to [0, 1])", default=1.0,
                low=0.0, open_low=True)
_CWL = (_MIN_REL, _MAX_REL)
# ranx writes rbp.95 for p = 0.95, trec_eval rbp.p=0.95 (default 0.9), ir_measures RBP(p=0.95)
# (default 0.8)
_IPREC_LEVELS = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1"
_RPREC_MULTIPLES = "0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0"


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "nDCG", "normalised discounted cumulative gain",
            "DCG@k / IDCG@k, the ideal DCG of the ideal source sorted by gain, cut at k",
            kind="graded", cutoff="optional", groups=_GRADED_GROUPS, scale_free=True,
            axes_named=("negative_ideal",),
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
            "P", "precision",
            "relevant in the top k / k (or min(k, n) under k_beyond_list=min_k_n); without a "
            "cutoff, relevant retrieved / n (set precision)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            names=(
                _ir("P", cutoff="required",
                    bare_error="P needs a cutoff, such as P@10 (precision over the whole list "
                               "is SetP); " + _trec_bare("P", "P")),
                _ir("Precision", alias=True, cutoff="required",
                    bare_error="Precision needs a cutoff, such as Precision@10 (over the whole "
                               "list: SetP)"),
                _ir("SetP", cutoff="none"),
                _trec("P", cut=True, default_cutoffs=TREC_DEFAULT_CUTOFFS),
                _trec("set_P"),
                _ranx("precision"),
            ),
        ),
        Family(
            "R", "recall", "relevant in the top k / R",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(
                _ir("R", cutoff="required"), _ir("Recall", alias=True), _ir("SetR", cutoff="none"),
                _trec("recall", cut=True, bare_error=(
                    "bare 'recall' is ambiguous: ranx reads it as recall over the whole list "
                    "(write R or SetR), trec_eval as recall at 5,10,15,20,30,100,200,500,1000 "
                    "(write recall.5,10,... or recall_100)")),
                _trec("set_recall"),
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
            "F1", "F-measure, the weighted harmonic mean of P@k and R@k (F1 when beta = 1)",
            "(1 + beta) P@k R@k / (beta P@k + R@k); 0 when nothing relevant is in the top k",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("k_beyond_list",),
            parameters=(Param("beta", "the weight of recall against precision: trec_eval's and "
                                      "ir_measures' beta, the square of van Rijsbergen's",
                              default=1.0, low=0.0),),
            names=(
                _ir("F1", native=False, cutoff="required",
                    bare_error="F1 needs a cutoff, such as F1@10 (over the whole list: SetF)"),
                _ir("SetF", cutoff="none"),
                _trec("set_F", whole="beta"),
                _ranx("f1"),
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
                   _trec("map"), _trec("map_cut", cut=True), _trec("gm_map", fixed=_GM),
                   _ranx("map")),
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
            bounded=False,  # from -alpha (nothing relevant) to 1 - alpha
            parameters=(Param("alpha", "the weight of a non-relevant document", low=0.0, high=1.0),),
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
            names=(_ir("NumRelRet"), _trec("num_rel_ret")),
            reach="whole",
        ),
        Family(
            "NumNonRelJudgedRet", "number of judged non-relevant retrieved documents",
            "retrieved documents judged with a label below L (after depth), summed",
            kind="count", cutoff="none",
            groups=("input", "aggregation", "labels", "threshold", "ordering", "depth",
                    "ranked_relevance"),
            aggregate="sum", bounded=False, ends="none",
            names=(_ir("NumNonRelJudgedRet", native=False), _trec("num_nonrel_judged_ret")),
            reach="whole",
        ),
        Family(
            "Hits", "relevant documents in the top k",
            "relevant in the top k (the whole list without a cutoff), averaged over queries",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, bounded=False,
            names=(_ir("Hits", native=False), _ranx("hits")),
        ),
        Family(
            "RelP", "relative precision: precision over the best precision possible",
            "relevant in the top k / min(k, R); without a cutoff, relevant retrieved / min(n, R)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("RelP", native=False), _ir("SetRelP", cutoff="none"),
                   _trec("relative_P", cut=True, default_cutoffs=TREC_DEFAULT_CUTOFFS),
                   _trec("set_relative_P")),
        ),
        Family(
            "SetAP", "unranked set average precision",
            "relevant retrieved^2 / (n R): set precision times set recall",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS,
            names=(_ir("SetAP"), _trec("set_map")), reach="whole",
        ),
        Family(
            "RprecMult", "precision at a multiple of R",
            "P@c with c = floor(multiple x R + 0.9): relevant in the top c / c",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS,
            parameters=(Param("multiple", "the multiple of R, such as 0.2 or 2", low=0.0,
                              open_low=True),),
            names=(_ir("RprecMult", native=False),
                   _trec("Rprec_mult", each="multiple", default_cutoffs=_RPREC_MULTIPLES)),
            reach="whole",
        ),
        Family(
            "Utility", "set utility: a weighted sum of the contingency table",
            "a rel_ret + b nonrel_ret + c rel_not_ret + d nonrel_not_ret, with nonrel_not_ret "
            "= N + rel_ret - n - R (N the collection size)",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, bounded=False,
            parameters=(Param("coefficients", "a, b, c, d", kind="numbers", length=4,
                              default=(1.0, -1.0, 0.0, 0.0)),
                        Param("collection_size", "N, documents in the collection (trec_eval's "
                              "-N, 0 unless given)", kind="integer", default=0, low=0)),
            names=(_ir("Utility", native=False), _trec("utility", whole="coefficients")),
            reach="whole",
        ),
        Family(
            "Bpref", "binary preference",
            "(1 / R) sum over retrieved relevant r of 1 - min(n_r, R) / D, n_r the judged "
            "non-relevant documents ranked above r, D = min(R, N) (bpref_denominator)",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, axes_named=("bpref_denominator",),
            names=(_ir("Bpref"), _ir("BPref", alias=True), _trec("bpref"),
                   _trec("gm_bpref", fixed=_GM), _ranx("bpref")),
            reach="whole",
        ),
        Family(
            "infAP", "inferred average precision (Yilmaz & Aslam 2006)",
            "(1 / R) sum over retrieved relevant at rank i of 1/i + ((i - 1) / i) (p_i / (i - 1))"
            " (r_i + eps) / (r_i + nr_i + 2 eps), p_i the pooled documents above it, r_i and "
            "nr_i the judged relevant and non-relevant ones, eps = 0.00001",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, ends="none",
            names=(_ir("infAP"), _trec("infAP")),
            reach="whole",
        ),
        Family(
            "Judged", "the fraction of judged documents in the top k",
            "judged documents in the top k / min(k, n) (or / k under k_beyond_list=k)",
            kind="binary", cutoff="optional",
            groups=("input", "aggregation", "averaging", "labels", "ordering", "depth"),
            axes_named=("k_beyond_list",), ends="judged",
            names=(_ir("Judged"),),
        ),
        Family(
            "Unjudged", "the fraction of unjudged documents in the top k",
            "unjudged documents in the top k / k (or / min(k, n) under k_beyond_list=min_k_n)",
            kind="binary", cutoff="required",
            groups=("input", "aggregation", "averaging", "labels", "ordering", "depth"),
            axes_named=("k_beyond_list",), ends="judged",
            names=(_ir("Unjudged", native=False), _trec("unj", cut=True, default_cutoffs="5,10,20")),
        ),
        Family(
            "IPrec", "interpolated precision at a recall level",
            "the highest P@i over ranks i at or below the c-th relevant document, c the relevant "
            "count the level asks for (iprec_rank); 0 when fewer than c are retrieved",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, axes_named=("iprec_rank",),
            parameters=(Param("recall", "the recall level, from 0 to 1", low=0.0, high=1.0),),
            at="recall",
            names=(_ir("IPrec"),
                   _trec("iprec_at_recall", each="recall", default_cutoffs=_IPREC_LEVELS)),
            reach="whole",
        ),
        Family(
            "IPrecAvg", "interpolated precision averaged over recall levels (11-point average)",
            "the mean of IPrec at each level (default 0, 0.1, ..., 1)",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, axes_named=("iprec_rank",),
            parameters=(Param("recall_levels", "the recall levels, from 0 to 1", kind="numbers",
                              default=tuple(float(x) for x in _IPREC_LEVELS.split(",")),
                              low=0.0, high=1.0),),
            names=(_ir("IPrecAvg", native=False), _trec("11pt_avg", whole="recall_levels")),
            reach="whole",
        ),
        Family(
            "binG", "binary G: relevant documents discounted by the non-relevant ones above them",
            "(1 / R) sum over retrieved relevant of 1 / log2(2 + non-relevant ranked above)",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS,
            names=(_ir("binG", native=False), _trec("binG")), reach="whole",
        ),
        Family(
            "G", "normalised gain (trec_eval's experimental G)",
            "sum over ranks i of g_i / log2(2 + C_i - S_i), S_i the gain in the top i, C_i the "
            "sum over ranks j <= i of max(ideal gain at j, 1); divided by the sum of the ideal's "
            "positive gains",
            kind="graded", cutoff="none", groups=_GRADED_GROUPS, ends="none", bounded=False,
            names=(_ir("G", native=False), _trec("G", gains=True)), reach="whole",
        ),
        Family(
            "nDCGRel", "nDCG averaged over the relevant documents",
            "(1 / P) (sum over retrieved documents of positive gain at rank i of nDCG@i + "
            "(P - those) nDCG@n), P the judged documents of positive gain, nDCG@i = DCG@i / "
            "IDCG@min(i, P)",
            kind="graded", cutoff="none", groups=_GRADED_GROUPS, ends="none", scale_free=True,
            names=(_ir("nDCGRel", native=False), _trec("ndcg_rel", gains=True)), reach="whole",
        ),
        Family(
            "RnDCG", "nDCG averaged at the ranks where the ideal gain changes",
            "the mean of DCG@min(b, n) / IDCG@b over the ranks b <= P where the ideal gain "
            "changes, and b = n when n > P + 1 (P the judged documents of positive gain)",
            kind="graded", cutoff="none", groups=_GRADED_GROUPS, ends="none", scale_free=True,
            names=(_ir("RnDCG", native=False), _trec("Rndcg", gains=True)), reach="whole",
        ),
        Family(
            "ERR", "expected reciprocal rank (Chapelle et al. 2009)",
            "sum over ranks i <= k of R_i / i x prod over j < i of (1 - R_j), R = (2^g - 1) / "
            "2^g_max for a label g > 0 (err_max_grade), else 0",
            kind="graded", cutoff="optional", groups=_LABEL_GROUPS, axes_named=("err_max_grade",),
            # under ideal=retrieved its empty queries and refused labels are the whole list's
            ends="label", names=(_ir("ERR"),), reach="whole",
        ),
        Family(
            "RBP", "rank-biased precision (Moffat & Zobel 2008)",
            "(1 - p) sum over ranks i of g_i p^(i - 1), g_i by rbp_gain; over a horizon of N "
            "ranks the weights are divided by 1 - p^N (weights_horizon)",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS,
            axes_named=("rbp_gain", "weights_horizon"), parameters=(_P,), bounded=False,
            names=(_ir("RBP", defaults=(("p", 0.8),)),
                   _trec("rbp", pairs=True, defaults=(("p", 0.9),)),
                   # bare 'rbp' reads as trec_eval's (p = 0.9): ranx refuses it (ValueError)
                   _ranx("rbp", ranx_dot="p")),
            reach="whole",
        ),
        Family(
            "RBPResid", "the residual of rank-biased precision",
            "(1 - p) sum over unjudged ranks i of p^(i - 1), plus p^n for the ranks past the "
            "list (residual_tail: 0 in all when every retrieved document is judged)",
            kind="binary", cutoff="none",
            groups=("input", "aggregation", "averaging", "labels", "ordering", "depth"),
            axes_named=("residual_tail", "weights_horizon"), parameters=(_P,), ends="judged",
            names=(_ir("RBPResid", native=False, defaults=(("p", 0.8),)),
                   _trec("rbp_resid", pairs=True, defaults=(("p", 0.9),))),
            reach="whole",
        ),
        Family(
            "SDCG", "scaled DCG: DCG@k over the DCG of k fully relevant documents (C/W/L)",
            "sum over i <= k of g_i / log2(i + 1) / sum over i <= k of 1 / log2(i + 1), "
            "g = (clip(label, min_rel, max_rel) - min_rel) / (max_rel - min_rel)",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="label", names=(_ir("SDCG"),),
        ),
        Family(
            "NERR8", "not (but nearly) ERR, equation 8 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = 1 - g_i for i < k, 0 from k on (g as in SDCG)",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="none", names=(_ir("NERR8"),),
        ),
        Family(
            "NERR9", "not (but nearly) ERR, equation 9 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = i / (i + 1) (1 - g_i) for i < k, 0 from k on",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="none", names=(_ir("NERR9"),),
        ),
        Family(
            "NERR10", "not (but nearly) ERR, equation 10 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = p (1 - g_i)",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(Param(_P.name, _P.meaning, default=0.9, low=0.0, high=1.0,
                              open_low=True, open_high=True),) + _CWL,
            ends="none", names=(_ir("NERR10"),), reach="whole",
        ),
        Family(
            "NERR11", "not (but nearly) ERR, equation 11 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = ((i + 2T - 1) / (i + 2T))^2 (1 - g_i)",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("NERR11"),), reach="whole",
        ),
        Family(
            "INST", "INST (Moffat et al. 2015; C/W/L)",
            "C/W/L with continuation C_i = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - the "
            "gain in the top i",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("INST"),), reach="whole",
        ),
        Family(
            "INSQ", "INSQ (Moffat et al. 2012; C/W/L)",
            "C/W/L with continuation C_i = ((i + 2T - 1) / (i + 2T))^2",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="label", names=(_ir("INSQ"),), reach="whole",
        ),
        Family(
            "BPM", "the static Bejeweled Player Model (Zhang et al. 2017; C/W/L)",
            "C/W/L with continuation C_i = 1 while i < k and the gain in the top i is below T, "
            "else 0",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("BPM"),),
        ),
        Family(
            "FallOut", "fall-out: the fraction of the non-relevant documents in the top k",
            "non-relevant in the top k / N, N the non-relevant documents of the ideal source "
            "(under ideal=judged: judged non-relevant and unjudged retrieved ones)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("FallOut", native=False),), reach="whole",  # N: the whole list's
        ),
        Family(
            "AUROC", "area under the ROC curve of the top k",
            "the fraction of (relevant, non-relevant) pairs of the top k ranked relevant first; "
            "0 when the top k holds only one of the two",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("AUROC", native=False),),
        ),
        Family(
            "RecallAtPrecision", "the highest recall at a cutoff whose precision reaches a minimum",
            "max R@j over j <= k with P@j >= min_precision (0 if none); the aggregate is the "
            "same on the query-averaged P@j and R@j curves (torchmetrics)",
            kind="binary", cutoff="optional", axes_named=("k_beyond_list",), aggregate="curve",
            # the curve is averaged, never a query's value: the mean axis is not read
            groups=tuple(g for g in _BINARY_GROUPS if g != "averaging"),
            parameters=(Param("min_precision", "the precision to reach", default=0.0, low=0.0,
                              high=1.0),),
            names=(_ir("RecallAtPrecision", native=False),),
        ),
    ]
}


def listing() -> list[dict[str, Any]]:
    """Every family as the ``conformance measures`` command lists it, from the records: name,
    meaning, formula, kind, cutoff rule, aggregate, parameters (name -> default, None when it
    must be given), the axes it reads, and its spellings in each syntax (``native``: that
    library computes it under the name; else the spelling is conformance's own)."""
    rows = []
    for f in FAMILIES.values():
        rows.append({
            "family": f.name, "meaning": f.meaning, "formula": f.formula, "kind": f.kind,
            "cutoff": f.cutoff, "aggregate": f.aggregate,
            "parameters": {p.name: p.default for p in f.parameters},
            "axes": list(f.axes),
            "names": {syntax: [{"name": n.text, "native": n.native, "fixes": dict(n.fixed)}
                               for n in f.names if n.syntax == syntax and n.read]
                      for syntax in SYNTAXES},
        })
    return rows


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
    ``alpha`` is T's parameter; ``params`` the values of the family's other parameters
    (:class:`Param`), in the family's order, each one given: a parameter left out takes its
    default, and a parameter without a default must be given (``RBP`` needs ``p``). ``text`` is
    the name as the user wrote it; it does not take part in equality, so ``ndcg_cut_10`` and
    ``nDCG@10`` are the same measure.
    """

    family: str
    cutoff: int | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    alpha: float | None = None
    text: str = field(default="", compare=False)
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise MeasureError(f"unknown measure family {self.family!r}")
        f = FAMILIES[self.family]
        given = dict(self.params)
        unknown = [k for k in given if f.parameter(k) is None or k == "alpha"]
        if unknown:
            raise MeasureError(f"{self.family} has no parameter {unknown[0]!r}")
        full = []
        for p in f.parameters:
            if p.name == "alpha":
                continue
            value = given.get(p.name, p.default)
            if value is None:
                raise MeasureError(
                    f"{self.family} needs {p.name} ({p.meaning}), such as "
                    f"{self.family}({p.name}={p.example})")
            full.append((p.name, value))
        object.__setattr__(self, "params", tuple(full))
        if not self.text:
            object.__setattr__(self, "text", self.canonical)

    @property
    def aggregate(self) -> str:
        return FAMILIES[self.family].aggregate

    @property
    def record(self) -> Family:
        """The family's record."""
        return FAMILIES[self.family]

    def param(self, name: str) -> Any:
        """The value of parameter ``name`` (``alpha`` included)."""
        if name == "alpha":
            return self.alpha
        return dict(self.params)[name]

    @property
    def canonical(self) -> str:
        """ir_measures-style name, e.g. ``nDCG(gain=exponential)@10``; :func:`parse_measure`
        reads it back to an equal measure."""
        f = self.record
        # A value holding a comma (a gain map, a list of levels) is quoted, so parse_measure
        # reads the name back.
        def item(k: str, text: str) -> str:
            return f"{k}='{text}'" if "," in text else f"{k}={text}"

        params = [f"alpha={self.alpha!r}"] if self.alpha is not None else []
        at = ""
        for k, v in self.params:
            if k == f.at:
                at = "@" + format_param(v)
            elif v != f.parameter(k).default:
                params.append(item(k, format_param(v)))
        params += [item(k, format_value(v)) for k, v in self.overrides]
        name = _canonical_head(f, self.cutoff) + (f"({','.join(params)})" if params else "")
        return name + (f"@{self.cutoff}" if self.cutoff is not None else at)

    def conventions(self, base: Conventions) -> Conventions:
        """``base`` with this measure's own overrides applied."""
        return base.replace(**dict(self.overrides)) if self.overrides else base

    def __str__(self) -> str:
        return self.text


def _canonical_head(f: Family, cutoff: int | None) -> str:
    """The family's name, or (for P, F1 without a cutoff, whose ir_measures names need one)
    its ir_measures set spelling."""
    if cutoff is None:
        own = next((n for n in f.names if n.syntax == "ir_measures" and n.text == f.name), None)
        if own is not None and own.bare_error:
            other = next((n for n in f.names if n.syntax == "ir_measures" and not n.alias
                          and n.rule(f) == "none"), None)
            if other is not None:
                return other.text
    return f.name


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

    at: ``NAME@k`` (or ``NAME@x`` for the family's ``at`` parameter); params:
    ``NAME(key=value,...)``; under: trec_eval ``NAME_k``; dot: trec_eval ``NAME.params``, either
    "cutoffs" (``P.5,10``), "gains" (``ndcg.1=3,2=9``), "each" (``Rprec_mult.0.2,0.4``: one
    measure per value of parameter ``param``), "whole" (``11pt_avg.0.2,0.8``: one value of
    ``param``), "pairs" (``rbp.p=0.8``) or "ranx" (ranx's ``rbp.95``: ``param`` = 0.95);
    level: ranx's ``-lN`` suffix; bare: the name alone is allowed (else ``bare_error`` explains
    why not); fixed: overrides the name itself carries (ranx's ``_burges``); defaults: parameter
    values the spelling stands for.
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
    param: str = ""
    defaults: tuple[tuple[str, Any], ...] = ()


def _spec(f: Family, n: Name) -> _Name:
    param = ""
    if n.syntax == "ir_measures":
        flags = {"at": f.takes_cutoff or f.at is not None, "params": True}
    elif n.syntax == "ranx":
        flags = {"at": f.takes_cutoff, "level": True}
        if n.ranx_dot:
            flags["dot"], param = "ranx", n.ranx_dot
    elif n.cut:
        flags = {"under": True, "dot": "cutoffs"}
    elif n.each:
        flags, param = {"under": True, "dot": "each"}, n.each
    elif n.whole:
        flags, param = {"dot": "whole"}, n.whole
    elif n.pairs:
        flags = {"dot": "pairs"}
    else:
        flags = {"dot": "gains"} if n.gains else {}
    bare_error = n.bare_error
    if n.cut and not bare_error:
        bare_error = _trec_bare(n.text, f.name, n.default_cutoffs or TREC_DEFAULT_CUTOFFS)
    if n.each and not bare_error:
        bare_error = _trec_bare_each(n.text, f.name, n.each, n.default_cutoffs)
    bare = not (f.needs_cutoff or n.cut or n.each or n.bare_error)
    return _Name(f.name, bare=bare, bare_error=bare_error, fixed=n.fixed, param=param,
                 defaults=n.defaults, **flags)


def _merge(a: _Name, b: _Name, text: str) -> _Name:
    if a.family != b.family or a.fixed != b.fixed:
        raise AssertionError(f"spelling {text!r} names two different measures")
    dot = a.dot or b.dot
    if a.dot and b.dot and a.dot != b.dot:
        # rbp: trec_eval's rbp.p=0.95 and ranx's rbp.95, told apart by the '='
        if {a.dot, b.dot} != {"pairs", "ranx"}:
            raise AssertionError(f"spelling {text!r} has two .parameter forms")
        dot = "pairs_or_ranx"
    return _Name(a.family, a.at or b.at, a.params or b.params, a.under or b.under,
                 dot, a.level or b.level, a.bare and b.bare,
                 a.bare_error or b.bare_error, a.fixed, a.param or b.param,
                 a.defaults or b.defaults)


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
_DIVERSITY = ("is a diversity measure (pyndeval): it needs subtopic judgments, which "
              "conformance does not read")
_UNSUPPORTED: dict[str, str] = {
    "relstring": "relstring is not a measure conformance computes (it prints the relevance "
                 "labels of the top ranks as text)",
    "runid": "runid is not a measure",
    "Compat": "ir_measures' Compat (rank-biased overlap against an ideal) is not computed by "
              "conformance",
    "Accuracy": "ir_measures' Accuracy needs a run of positive and negative scores per query "
                "and is not computed by conformance",
    **{n: f"ir_measures' {n} {_DIVERSITY}" for n in
       ("alpha_nDCG", "alpha_DCG", "ERR_IA", "nERR_IA", "NRBP", "nNRBP", "AP_IA", "P_IA",
        "StRecall")},
    **{n: f"trec_eval's {n} needs a preference or judgment-group file (-R), which conformance "
          "does not read" for n in
       ("P_avgjg", "map_avgjg", "Rprec_mult_avgjg", "prefs_simp", "prefs_pair", "prefs_avgjg",
        "yaap")},
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


_ATOL = _re.compile(r"([+-]?\d+)(?:\.\d*)?")


def _trec_cutoff(text: str, measure: str) -> int:
    """A cutoff of a trec_eval list (``ndcg_cut.10,20,23.4``): read as trec_eval reads it, with
    C's ``atol``, so a fractional part is dropped (23.4 is 23, and prints as ndcg_cut_23)."""
    t = text.strip()
    m = _ATOL.fullmatch(t)
    return _cutoff(m.group(1) if m else t, measure)


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
        self.params: dict[str, Any] = {}

    def set_cutoff(self, k: int) -> None:
        if self.cutoff is not None and self.cutoff != k:
            raise MeasureError(f"measure {self.measure!r}: cutoff given twice ({self.cutoff} and {k})")
        self.cutoff = k

    def set_param(self, key: str, raw: str) -> None:
        spec = FAMILIES[self.family].parameter(key)
        value = spec.parse(raw, self.measure)
        if key in self.params and self.params[key] != value:
            raise MeasureError(f"measure {self.measure!r}: {key} given twice "
                               f"({format_param(self.params[key])} and {format_param(value)})")
        self.params[key] = value

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
        elif key == "dcg" and fam == "SDCG":
            if value != "log2":  # cwl_eval's scaled DCG has the log2 discount only
                raise MeasureError(f"measure {m!r}: SDCG takes dcg='log2' only, got {value!r}")
        elif key == "dcg":
            if "gain" not in FAMILIES[fam].axes:
                raise MeasureError(f"measure {m!r}: dcg= applies to nDCG and DCG only")
            if value == "exp-log2":
                self.override("gain", "exponential", "dcg='exp-log2'")
            elif value != "log2":
                raise MeasureError(f"measure {m!r}: dcg={value!r}: expected 'log2' or 'exp-log2'")
        elif key == "gains":
            if "gain" not in FAMILIES[fam].axes:
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
        elif key == "relative" and fam in ("P", "RelP"):
            # ir_measures' SetP(relative=True) is SetRelP: relevant retrieved / min(n, R)
            if value.lower() not in ("true", "false", "1", "0"):
                raise MeasureError(f"measure {m!r}: relative must be True or False, got {value!r}")
            if value.lower() in ("true", "1"):
                self.family = "RelP"
        elif FAMILIES[fam].parameter(key) is not None:
            self.set_param(key, value)
        elif key in _AXES:
            if key == "duplicates":
                raise MeasureError(
                    f"measure {m!r}: duplicates is settled when the run is read, for every measure "
                    "at once; set it for the whole evaluation (--set duplicates=...)"
                )
            self.override(key, self._axis(key, value), f"{key}=")
        else:
            close = _close_matches(key, list(_PARAMS) + list(_AXES)
                                   + [p.name for p in FAMILIES[fam].parameters], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            own = [p.name for p in FAMILIES[fam].parameters]
            raise MeasureError(
                f"measure {m!r}: unknown parameter {key!r}{hint} (parameters: "
                f"{', '.join(own + list(_PARAMS))}, judged_only (refused), or any axis: "
                f"{', '.join(_AXES)})"
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
        params = {**dict(spec.defaults if spec.family == fam else ()), **self.params}
        for p in FAMILIES[fam].parameters:
            if p.name != "alpha" and p.default is None and p.name not in params:
                form = (f"{fam}@{p.example}" if FAMILIES[fam].at == p.name
                        else f"{fam}({p.name}={p.example})")
                raise MeasureError(f"measure {m!r}: {fam} needs {p.name} ({p.meaning}), such as {form}")
        order = list(_AXES)
        overrides = tuple(sorted(self.overrides.items(), key=lambda kv: order.index(kv[0])))
        return Measure(fam, self.cutoff, overrides, self.alpha, text, tuple(params.items()))


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
    if not head_m or not (s[0].isalpha() or head_m.group(0) in _NAMES):
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
            if spec.dot == "each":  # Rprec_mult_0.20: the number goes on past the head
                frac = _re.match(r"\.\d*", rest)
                if frac:
                    under_k += frac.group(0)
                    rest = rest[frac.end():]
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
        if spec.dot == "each":
            b.set_param(spec.param, under_k)
        else:
            b.set_cutoff(_cutoff(under_k, measure))
    if rest.startswith("."):
        if spec.dot is None or under_k is not None:
            if head == "recip_rank":
                raise MeasureError(
                    f"measure {measure!r}: trec_eval accepts recip_rank.k but ignores k; write "
                    "recip_rank (no cutoff) or RR@k (reciprocal rank within the top k)"
                )
            raise MeasureError(f"measure {measure!r}: {head} takes no trec_eval .parameters")
        if level is not None and spec.dot not in ("ranx", "pairs_or_ranx"):
            raise MeasureError(f"measure {measure!r}: ranx's -l suffix does not combine with trec_eval .parameters")
        body = rest[1:]
        dot = spec.dot
        if dot == "pairs_or_ranx":
            dot = "pairs" if "=" in body else "ranx"
        if dot == "gains":
            b.override("gain", b._axis("gain", body), f"{head}.")
            return [b.build(spec, text.strip())]
        if dot == "whole":
            b.set_param(spec.param, body)
            return [b.build(spec, text.strip())]
        if dot == "pairs":
            for part in body.split(","):
                key, sep, value = part.partition("=")
                if not sep or FAMILIES[spec.family].parameter(key.strip()) is None:
                    own = ", ".join(p.name for p in FAMILIES[spec.family].parameters)
                    raise MeasureError(f"measure {measure!r}: expected {head}.NAME=VALUE with NAME "
                                       f"one of {own}, such as {head}.p=0.8; got {part!r}")
                b.set_param(key.strip(), value)
            return [b.build(spec, text.strip())]
        if dot == "ranx":  # ranx: rbp.95 is p = 0.95
            if not _re.fullmatch(r"\d+", body):
                raise MeasureError(f"measure {measure!r}: ranx reads {head}.DIGITS as 0.DIGITS, "
                                   f"such as {head}.95 for 0.95; got {body!r}")
            b.set_param(spec.param, "0." + body)
            rest = ""
        else:
            out = []
            values = body.split(",")
            if spec.dot == "each":
                parsed = [FAMILIES[spec.family].parameter(spec.param).parse(v, measure) for v in values]
                names = [f"{head}.{v.strip()}" for v in values]
            else:
                parsed = [_trec_cutoff(k, measure) for k in values]
                names = [f"{head}.{k}" for k in parsed]
            for value, name in zip(parsed, names):
                bk = _Builder(measure, spec.family)
                if spec.dot == "each":
                    bk.params[spec.param] = value
                else:
                    bk.set_cutoff(value)
                out.append(bk.build(spec, name if len(values) > 1 else text.strip()))
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
        at_param = FAMILIES[b.family].at
        if not spec.at:
            takes = FAMILIES[spec.family].takes_cutoff
            if not takes:
                raise MeasureError(f"measure {measure!r}: {spec.family} takes no cutoff")
            k = rest[1:].strip()
            alt = f"{head}_{k} or " if spec.under else ""
            raise MeasureError(f"measure {measure!r}: {head} takes no @k; write {alt}{spec.family}@{k}")
        if at_param is not None:  # IPrec@0.5: the recall level
            b.set_param(at_param, rest[1:])
        else:
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
    if not spec.bare and b.cutoff is None and not (spec.dot == "each" and b.params):
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
        if p[0].isalpha() or _head_of(p) in _NAMES:  # 11pt_avg starts with a digit
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

    Parameters of a family (``Family.parameters``) are read as ``NAME(p=0.8)``, after ``@`` for
    a family's ``at`` parameter (``IPrec@0.5``), in trec_eval's forms (``Rprec_mult.0.2,0.4``
    one measure each, ``Rprec_mult_0.20``, ``11pt_avg.0.2,0.8`` one list, ``rbp.p=0.95``) and
    ranx's ``rbp.95``; a spelling may stand for its library's defaults (trec_eval's ``rbp`` is
    p = 0.9, ir_measures' ``RBP`` p = 0.8). trec_eval's cutoff lists are read as trec_eval
    reads them, with C's ``atol``: ``ndcg_cut.23.4`` is nDCG@23. A cutoff may be any positive
    integer (``P@99999999999999999999``). Bare ranx ``precision`` and ``f1`` are P and F1 over
    the whole list (the set measures: trec_eval's set_P, set_F); ``hits@k`` is the family Hits.

    Refused on purpose, each with a message saying why and what to write instead:

    - a bare trec_eval cutoff name (``P``, ``ndcg_cut``, ``map_cut``, ``success``,
      ``iprec_at_recall``, ``Rprec_mult``): trec_eval reads it as its default cutoffs or levels;
      name them. Bare ``recall`` is also ambiguous (ranx: the whole list, trec_eval: nine
      cutoffs; write ``R`` or ``SetR`` for the former). ``recip_rank.10``: trec_eval accepts and
      ignores the 10.
    - ``judged_only=``: no convention drops unjudged documents from a ranking.
    - ``duplicates=`` inside a name: it is settled once when the run is read.
    - ``T`` without ``alpha``, and any parameter without a default left out (``IPrec`` needs its
      level, ``RBP`` its p, the C/W/L measures ``max_rel``).
    - ``rel=`` on nDCG/DCG (ir_measures has none; write the two axes explicitly).
    - a cutoff that is not a positive integer.
    - the names of measures that need more than a run and qrels (diversity measures, trec_eval's
      preference and judgment-group measures): ``_UNSUPPORTED`` says why.
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
