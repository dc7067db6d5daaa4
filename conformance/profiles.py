"""Profiles by name: the conventions under which the reference gives a named tool's numbers.

A profile name is a library entry's name (``trec_eval``, ``sklearn``, ``lightgbm:linear_gain``,
... : ``conformance libs`` lists them), whose profile is the entry's declared one for each
measure, or the name of a program that is not a library entry but whose conventions are known
(:data:`COMMAND_LINE`: trec_eval's own command line). There is one lookup, always per measure,
because several libraries compute different measures under different conventions (torchmetrics'
AP masks documents scored <= 0, its nDCG does not)::

    >>> from conformance.profiles import profile
    >>> profile("trec_eval", "nDCG@10").ties
    'docid_desc'
    >>> profile("torchmetrics", "AP").nonpositive_scores, profile("torchmetrics", "nDCG@10").nonpositive_scores
    ('not_relevant', 'rank')

This module sits above ``conformance.libs`` (it reads the entries) so that the vocabulary below
never imports the adapters.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.conventions import TREC_EVAL10, ConventionError, Conventions, _close_matches
from conformance import libs
from conformance.libs.base import Entry
from conformance.measures import Measure, parse_measure


@dataclass(frozen=True)
class CommandLineProfile:
    """The conventions of a program the tool does not call, with what they rest on."""

    name: str
    conventions: Conventions
    description: str


COMMAND_LINE: dict[str, CommandLineProfile] = {
    p.name: p
    for p in [
        CommandLineProfile(
            "trec_eval10",
            TREC_EVAL10,
            "the trec_eval 10 command line: as the trec_eval entry (trec_eval 9 code through "
            "pytrec_eval-terrier), except that scores are kept as doubles (trec_eval 9 narrows "
            "them to float32, so near-equal scores tie there) and labels are read as text with "
            "atol, so a fractional label is truncated (the binding refuses it)",
        ),
    ]
}


def entries() -> list[Entry]:
    """Every library entry, installed or not, in a fixed order."""
    return libs.all_entries()


def names() -> list[str]:
    """Every profile name: the library entries' and :data:`COMMAND_LINE`'s."""
    return [e.name for e in libs.all_entries()] + list(COMMAND_LINE)


def entry_named(name: str) -> Entry | None:
    return next((e for e in libs.all_entries() if e.name == name), None)


def _entry_or_raise(name: str) -> Entry:
    e = entry_named(name)
    if e is None:
        known = names()
        close = _close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConventionError(f"unknown profile {name!r}{hint}: known profiles are {', '.join(known)}")
    return e


def _measure(measure: Measure | str) -> Measure:
    return parse_measure(measure) if isinstance(measure, str) else measure


def computes(name: str, measure: Measure | str) -> bool:
    """Whether profile ``name``'s library computes ``measure``'s family at its cutoff (the axes
    the measure's own name fixes aside: ``ndcg_burges@10`` is trec_eval's nDCG@10 with
    exponential gain). A command-line profile describes every measure."""
    if name in COMMAND_LINE:
        return True
    m = _measure(measure)
    e = _entry_or_raise(name)
    return e.supports(m) or e.supports(Measure(m.family, m.cutoff, (), params=m.params))


def computed(name: str) -> list[Measure]:
    """One measure per family that profile ``name``'s library computes, in the families' order:
    at k=10 where the family takes a cutoff and the library computes it there (else the whole
    list, else the first of a few common cutoffs: XGBoost's plain ``ndcg`` is nDCG@32 alone),
    with each parameter
    that has no default at its example value (``RBP(p=0.5)``). A command-line profile describes
    every family."""
    from conformance.measures import FAMILIES

    out = []
    for fam, rec in FAMILIES.items():
        needed = {p.name: p.parse(p.example, fam) for p in rec.parameters if p.default is None}
        for k in ((10, None, 1, 5, 20, 32, 100, 1000) if rec.takes_cutoff else (None,)):
            if rec.needs_cutoff and k is None:
                continue
            m = Measure(fam, k, (), params=tuple(needed.items()))
            if computes(name, m):
                out.append(m)
                break
    return out


def profile(name: str, measure: Measure | str) -> Conventions:
    """The conventions profile ``name`` computes ``measure`` under (before the axes the
    measure's own name fixes, which ``Measure.conventions`` applies).

    For a family the profile's library does not compute (:func:`computes` is False: trec_eval
    has no DCG), the library's conventions for its main measure (``Entry.default_profile``)
    stand in: they still say how it ranks, reads labels and averages. Raises ConventionError
    for an unknown name, listing every known one.
    """
    if name in COMMAND_LINE:
        return COMMAND_LINE[name].conventions
    m = _measure(measure)
    e = _entry_or_raise(name)
    return e.profile(m) if computes(name, m) else e.default_profile()


def select_entries(spec: str | list[str] | tuple[str, ...] = "all") -> list[Entry]:
    """The entries ``spec`` names: "all"; or entry names (``lightgbm:linear_gain``) and library
    names (every entry of that library), comma separated or as a list, in the order given.
    Raises ConventionError naming an unknown one."""
    every = libs.all_entries()
    names_ = _names_in(spec)
    if not names_:
        raise ConventionError("no library entry named: give 'all' or entry names such as trec_eval,sklearn")
    if names_ == ["all"]:
        return every
    chosen: list[Entry] = []
    for n in names_:
        matching = [e for e in every if e.name == n or (":" not in n and e.library == n)]
        if not matching:
            known = [e.name for e in every]
            close = _close_matches(n, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConventionError(f"unknown library entry {n!r}{hint}")
        chosen.extend(e for e in matching if e not in chosen)
    return chosen


def _names_in(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    names_ = [spec] if isinstance(spec, str) else list(spec)
    return [n.strip() for text in names_ for n in text.split(",") if n.strip()]


def named_entries(spec: str | list[str] | tuple[str, ...] = "all") -> list[str]:
    """The entries ``spec`` names by their own name (``sklearn``, ``lightgbm:linear_gain``),
    as opposed to those it selects through a library name or ``all``: the user asked about
    these, so ``conformance run`` explains each pair of them directly. A name that is both a
    library's and its default entry's (``sklearn``) counts as the entry."""
    every = {e.name for e in libs.all_entries()}
    return [n for n in dict.fromkeys(_names_in(spec)) if n in every]


def describe(name: str) -> str:
    """One line: what the profile is."""
    if name in COMMAND_LINE:
        return COMMAND_LINE[name].description
    return _entry_or_raise(name).description
