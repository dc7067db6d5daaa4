"""A :class:`Measure`: a family at a cutoff, with the conventions its name fixes and the values
of its parameters. It says nothing about how it is computed (that is ``conformance.reference``
and the library adapters); ``conformance.measures.parse`` reads one from its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.conventions import Conventions, format_value
from conformance.measures.families import FAMILIES, Family, MeasureError, format_param


@dataclass(frozen=True)
class Measure:
    """A measure: ``family`` at ``cutoff`` with measure-level convention ``overrides``.

    ``overrides`` are the axes the name itself fixes, whatever the profile says: ir_measures'
    ``rel=2`` and ranx's ``-l2`` fix ``relevance_threshold``; ``dcg='exp-log2'`` and ranx's
    ``ndcg_burges`` fix ``gain``; trec_eval's ``ndcg.1=3,2=9`` fixes a custom gain map.
    ``params`` the values of the family's parameters (:class:`Param`), in the family's order,
    each one given: a parameter left out takes its default, and a parameter without a default
    must be given (``RBP`` needs ``p``). ``text`` is the name as the user wrote it; it does
    not take part in equality, so ``ndcg_cut_10`` and ``nDCG@10`` are the same measure.
    """

    family: str
    cutoff: int | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    text: str = field(default="", compare=False)
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise MeasureError(f"unknown measure family {self.family!r}")
        f = FAMILIES[self.family]
        given = dict(self.params)
        unknown = [k for k in given if f.parameter(k) is None]
        if unknown:
            raise MeasureError(f"{self.family} has no parameter {unknown[0]!r}")
        full = []
        for p in f.parameters:
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
        """The value of parameter ``name``."""
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

        params = []
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


