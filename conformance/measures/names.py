"""The spellings of the measures, derived from the :class:`~conformance.measures.families.Name`
records: one :class:`_Name` per spelling, merged over the syntaxes that share it, in
:data:`_NAMES`; :data:`KNOWN_NAMES` lists them; :data:`_UNSUPPORTED` holds the names of other
tools' measures that are read only to be refused with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.measures.families import (FAMILIES, SYNTAXES, TREC_DEFAULT_CUTOFFS, Family, Name,
                                           _trec_bare, _trec_bare_each)

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

