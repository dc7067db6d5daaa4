"""The measure families: one :class:`Family` record per family, with its parameters
(:class:`Param`) and its spellings (:class:`Name`), in :data:`FAMILIES`.

A record says what the family computes (meaning and formula text), how it aggregates over
queries, its cutoff rule, whether it is graded, binary or a count, whether it is bounded by 1,
the axis groups it reads (so the axes it reads are derived from the axis records of
``conformance.conventions``), and its spellings in ir_measures, trec_eval and ranx syntax.
Every other table of families (the name reader in ``conformance.measures.names`` and
``.parse``, the paper sweep's axes, the report, the adapters' name maps) is derived from these
records. :func:`listing` is what ``conformance measures`` prints; :func:`families_reading` the
families an axis can change.

Adding a family: its record below, its formula in ``conformance.reference.formulas`` and its
tests; an adapter that computes it adds it to the adapter's own support. One idea at about 790
lines: the records are most of it, one per family.
"""

from __future__ import annotations

import math as _math
import re as _re
from dataclasses import dataclass
from functools import cached_property as _cached_property
from typing import Any

from conformance.conventions import AXES as _AXES
from conformance.errors import ConformanceError


SYNTAXES = ("ir_measures", "trec_eval", "ranx")


class MeasureError(ConformanceError, ValueError):
    """A metric name that cannot be read."""


_INT = _re.compile(r"[+-]?\d+")


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v

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
    parameters besides the cutoff (:class:`Param`; RBP's ``p``); ``at``: the parameter that
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
    ``reads_labels``: its formula reads each ranked row's label (``Ranked.label``), beyond its
    gain and relevance: so do AUROC and binG, whose expected values over tie groups refuse a
    depth cut through a group by its labels (without them every cut group was refused, and a
    measure's value depended on which other measures were evaluated with it).
    ``reads_pool``: it reads which rows are in the judgment pool (``Ranked.pooled``: a
    negative label under ``negative_labels=unjudged`` is pooled but unjudged; infAP).
    ``gains_read_threshold``: a graded family that reads the relevance threshold only through
    its gains (``threshold_scope=graded``, or ``gain=binary``), never through R.
    ``reads_annotation``: its formula ranks the rows by whether any qrels row names them
    (``Context.unannotated``: BEIR's Hole), not by relevance: a ranking of its own, which the
    one-ranking tie check and the sweep's shared contexts do not hold.
    ``tie_proof``: the proof by which one ranking tells whether the order of tied documents
    changes the value (``reference.tiecheck``, whose docstring states each): "gain_positions"
    (a tied group of unequal gains within the reach), "relevance_positions" (one of mixed
    relevance within the reach), "first_relevant" (the first group holding a relevant
    document is mixed), "count" (a mixed group straddles the cut), "count_first" ("count",
    with no relevant document above the group); "" (none proven: any group of unequal labels
    within the depth sends the question to an evaluation under ``ties=unspecified``).
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
    reads_labels: bool = False
    reads_pool: bool = False
    gains_read_threshold: bool = False
    reads_annotation: bool = False
    tie_proof: str = ""

    def __post_init__(self) -> None:
        if not self.ends:
            object.__setattr__(self, "ends", "gain" if self.kind == "graded" else "label")

    @property
    def takes_cutoff(self) -> bool:
        return self.cutoff != "none"

    @property
    def needs_cutoff(self) -> bool:
        return self.cutoff == "required"

    @_cached_property  # read once per combination by the sweep: made once per family
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
            gains_read_threshold=True,
            tie_proof="gain_positions",
        ),
        Family(
            "DCG", "discounted cumulative gain", "sum over ranks i <= k of gain(i) x discount(i)",
            kind="graded", cutoff="optional", groups=_GRADED_GROUPS, bounded=False,
            names=(_ir("DCG", native=False), _ranx("dcg"), _ranx("dcg_burges", fixed=_EXP)),
            gains_read_threshold=True,
            tie_proof="gain_positions",
        ),
        Family(
            "P", "precision",
            "relevant in the top k / k (or min(k, n) under k_beyond_list=min_k_n); without a "
            "cutoff, relevant retrieved / n (set precision)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            axes_named=("k_beyond_list", "hit_weight"),
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
            tie_proof="count",
        ),
        Family(
            "R", "recall", "relevant in the top k / R",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("hit_weight",),
            names=(
                _ir("R", cutoff="required"), _ir("Recall", alias=True), _ir("SetR", cutoff="none"),
                _trec("recall", cut=True, bare_error=(
                    "bare 'recall' is ambiguous: ranx reads it as recall over the whole list "
                    "(write R or SetR), trec_eval as recall at 5,10,15,20,30,100,200,500,1000 "
                    "(write recall.5,10,... or recall_100)")),
                _trec("set_recall"),
                _ranx("recall"),
            ),
            tie_proof="count",
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
            reads_annotation=True,
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
            tie_proof="count_first",
        ),
        Family(
            "RR", "reciprocal rank of the first relevant document",
            "1 / rank of the first relevant document (0 below rank k under rr_cutoff=honour)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS, axes_named=("rr_cutoff",),
            # trec_eval accepts recip_rank.k and ignores k (rr_cutoff=ignore in its profile)
            names=(_ir("RR"), _ir("MRR", alias=True), _trec("recip_rank", cutoff="optional"),
                   _ranx("mrr")),
            tie_proof="first_relevant",
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
            tie_proof="relevance_positions",
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
            # ordering: a rank rule (ties=group_last, group_first) cuts or keeps a tied group
            # whole at a depth, so the tie rule changes how many documents a depth leaves
            kind="count", cutoff="none", groups=("input", "aggregation", "ordering", "depth"),
            aggregate="sum", bounded=False, names=(_ir("NumRet"), _trec("num_ret")), reach="whole",
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
            tie_proof="count",
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
            reads_labels=True,
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
            reads_labels=True,
        ),
        Family(
            "infAP", "inferred average precision (Yilmaz & Aslam 2006)",
            "(1 / R) sum over retrieved relevant at rank i of 1/i + ((i - 1) / i) (p_i / (i - 1))"
            " (r_i + eps) / (r_i + nr_i + 2 eps), p_i the pooled documents above it, r_i and "
            "nr_i the judged relevant and non-relevant ones, eps = 0.00001",
            kind="binary", cutoff="none", groups=_BINARY_GROUPS, ends="none",
            names=(_ir("infAP"), _trec("infAP")),
            reach="whole",
            reads_labels=True, reads_pool=True,
        ),
        Family(
            "Judged", "the fraction of judged documents in the top k",
            "judged documents in the top k / min(k, n) (or / k under k_beyond_list=k)",
            kind="binary", cutoff="optional",
            groups=("input", "aggregation", "averaging", "labels", "ordering", "depth"),
            axes_named=("k_beyond_list",), ends="judged",
            names=(_ir("Judged"),),
            reads_labels=True,
        ),
        Family(
            "Unjudged", "the fraction of unjudged documents in the top k",
            "unjudged documents in the top k / k (or / min(k, n) under k_beyond_list=min_k_n)",
            kind="binary", cutoff="required",
            groups=("input", "aggregation", "averaging", "labels", "ordering", "depth"),
            axes_named=("k_beyond_list",), ends="judged",
            names=(_ir("Unjudged", native=False), _trec("unj", cut=True, default_cutoffs="5,10,20")),
            reads_labels=True,
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
            reads_labels=True,
        ),
        Family(
            "G", "normalised gain (trec_eval's experimental G)",
            "sum over ranks i of g_i / log2(2 + C_i - S_i), S_i the gain in the top i, C_i the "
            "sum over ranks j <= i of max(ideal gain at j, 1); divided by the sum of the ideal's "
            "positive gains",
            kind="graded", cutoff="none", groups=_GRADED_GROUPS, ends="none", bounded=False,
            names=(_ir("G", native=False), _trec("G", gains=True)), reach="whole",
            gains_read_threshold=True,
        ),
        Family(
            "nDCGRel", "nDCG averaged over the relevant documents",
            "(1 / P) (sum over retrieved documents of positive gain at rank i of nDCG@i + "
            "(P - those) nDCG@n), P the judged documents of positive gain, nDCG@i = DCG@i / "
            "IDCG@min(i, P)",
            kind="graded", cutoff="none", groups=_GRADED_GROUPS, ends="none", scale_free=True,
            names=(_ir("nDCGRel", native=False), _trec("ndcg_rel", gains=True)), reach="whole",
            gains_read_threshold=True,
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
            reads_labels=True,
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
            reads_labels=True,
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
            reads_labels=True,
        ),
        Family(
            "SDCG", "scaled DCG: DCG@k over the DCG of k fully relevant documents (C/W/L)",
            "sum over i <= k of g_i / log2(i + 1) / sum over i <= k of 1 / log2(i + 1), "
            "g = (clip(label, min_rel, max_rel) - min_rel) / (max_rel - min_rel)",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="label", names=(_ir("SDCG"),),
            reads_labels=True,
        ),
        Family(
            "NERR8", "not (but nearly) ERR, equation 8 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = 1 - g_i for i < k, 0 from k on (g as in SDCG)",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="none", names=(_ir("NERR8"),),
            reads_labels=True,
        ),
        Family(
            "NERR9", "not (but nearly) ERR, equation 9 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = i / (i + 1) (1 - g_i) for i < k, 0 from k on",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=_CWL, ends="none", names=(_ir("NERR9"),),
            reads_labels=True,
        ),
        Family(
            "NERR10", "not (but nearly) ERR, equation 10 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = p (1 - g_i)",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(Param(_P.name, _P.meaning, default=0.9, low=0.0, high=1.0,
                              open_low=True, open_high=True),) + _CWL,
            ends="none", names=(_ir("NERR10"),), reach="whole",
            reads_labels=True,
        ),
        Family(
            "NERR11", "not (but nearly) ERR, equation 11 of Azzopardi et al. 2021 (C/W/L)",
            "C/W/L with continuation C_i = ((i + 2T - 1) / (i + 2T))^2 (1 - g_i)",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("NERR11"),), reach="whole",
            reads_labels=True,
        ),
        Family(
            "INST", "INST (Moffat et al. 2015; C/W/L)",
            "C/W/L with continuation C_i = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - the "
            "gain in the top i",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("INST"),), reach="whole",
            reads_labels=True,
        ),
        Family(
            "INSQ", "INSQ (Moffat et al. 2012; C/W/L)",
            "C/W/L with continuation C_i = ((i + 2T - 1) / (i + 2T))^2",
            kind="graded", cutoff="none", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="label", names=(_ir("INSQ"),), reach="whole",
            reads_labels=True,
        ),
        Family(
            "BPM", "the static Bejeweled Player Model (Zhang et al. 2017; C/W/L)",
            "C/W/L with continuation C_i = 1 while i < k and the gain in the top i is below T, "
            "else 0",
            kind="graded", cutoff="required", groups=_LABEL_GROUPS, axes_named=("weights_horizon",),
            parameters=(_T_GAIN,) + _CWL, ends="none", names=(_ir("BPM"),),
            reads_labels=True,
        ),
        Family(
            "FallOut", "fall-out: the fraction of the non-relevant documents in the top k",
            "non-relevant in the top k / N, N the non-relevant documents of the ideal source "
            "(under ideal=judged: judged non-relevant and unjudged retrieved ones)",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("FallOut", native=False),), reach="whole",  # N: the whole list's
            reads_labels=True,
        ),
        Family(
            "AUROC", "area under the ROC curve of the top k",
            "the fraction of (relevant, non-relevant) pairs of the top k ranked relevant first; "
            "0 when the top k holds only one of the two",
            kind="binary", cutoff="optional", groups=_BINARY_GROUPS,
            names=(_ir("AUROC", native=False),),
            reads_labels=True,
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
        Family(
            "MeanP", "the mean of P@1..P@k (Elliot's MAP@k; not average precision, which sums "
            "precision at the relevant ranks only)",
            "(P@1 + P@2 + ... + P@k) / k, P@n = relevant in the top n / n, n even where the list "
            "is shorter than n",
            # P@n divides by n whatever the list's length (Elliot's precision: hits / n), so
            # k_beyond_list is not read; no library is known to divide by min(n, list length)
            # inside this mean
            kind="binary", cutoff="required", groups=_BINARY_GROUPS,
            names=(_ir("MeanP", native=False, bare_error="MeanP needs a cutoff, such as MeanP@10"),),
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

