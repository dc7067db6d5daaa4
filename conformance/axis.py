"""What an axis is: the :class:`Axis` record, the groups of measures an axis can change and the
stages of the computation it can act in, and the texts of its values (the parsers of open values
such as gain maps and log bases, and :func:`format_value`, their inverse).

The axes themselves, one record each, are :data:`conformance.conventions.AXES`; this module holds
what every record is made of, so that the records' module is the vocabulary and nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from conformance.errors import ConformanceError


class ConventionError(ConformanceError, ValueError):
    """An axis name or value that the vocabulary does not know."""


def _close_matches(word: str, possibilities: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The known names closest to an unknown one (``difflib``, imported only then: a few ms
    of every command otherwise)."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


# Which measures an axis can change, as a group name; each measure family lists the groups it
# reads (``conformance.measures.Family.groups``), so an axis is added without touching families.
GROUPS: dict[str, str] = {
    "input": "how the input itself is taken (every measure)",
    "aggregation": "which queries are scored and averaged (every measure)",
    "averaging": "how the per-query values are averaged (every measure averaged over queries)",
    "labels": "how relevance labels are read (every measure that reads labels)",
    "threshold": "which labels count as relevant (binary measures and relevant counts)",
    "ordering": "which document sits at which rank (every ranked measure)",
    "depth": "how much of each ranked list is kept (every measure of the ranked lists)",
    "ranked_relevance": "whether a document counts as relevant where it is ranked (binary measures)",
    "normalisation": "the denominators and their 0/0 (normalised measures)",
    "graded": "gains and discounts (DCG, nDCG)",
    "named": "read only by the families that name the axis (Family.axes_named)",
}

# Where in the computation an axis acts (``Axis.stage``), in the order the reference applies
# them: how the input is taken; how labels are read; which document sits at which rank; the
# gains; which documents count as relevant; how much of each list is kept (the depth cut comes
# after the gains and tie groups are formed, as ``ranking.rank`` applies it); then what the
# formulas read of the ranked rows: the discount, the ideal, the denominators, a family's own
# parameters; last how per-query values become one number. The stages up to ``cut`` decide the
# ranked rows themselves (``RANKING_STAGES``); the paper sweep loops over axes in stage order,
# so each ranking is built once and used in one stretch, and treats the aggregate stage as a
# selection of per-query values, computed once.
STAGES = ("input", "labels", "ordering", "gains", "relevance", "cut", "discount", "ideal",
          "denominator", "formula", "aggregate")
RANKING_STAGES = STAGES[:STAGES.index("cut") + 1]


@dataclass(frozen=True)
class Axis:
    """One axis: a choice that changes a measure's value, and everything said about it.

    ``values``: named value -> one-line meaning. ``parse_open`` turns the public text of a value
    outside that closed set (integers, gain maps, log bases) into the stored value, raising
    ConventionError on bad text; ``open_meaning`` describes such values. ``default`` is the
    stored value of :class:`Conventions`' default. ``group`` says which measures read the axis
    (:data:`GROUPS`). ``swept``: the stored values the paper sweep tries whatever the input
    (empty: not swept; ``None``: taken from the input by the sweep, as relevance thresholds are).
    ``phrases``: value -> the words a verdict uses for it; ``open_phrase`` formats an open value.
    ``explorer``: the report's explorer offers the axis (its list holds every judged document,
    in score order, without ties, so only axes that matter there are offered).
    ``explorer_idle``: why no value of an axis the explorer does not offer changes a number there.
    ``with_cutoff_only``: the axis changes a measure only when the measure has a cutoff.
    ``stage``: where in the computation it acts (:data:`STAGES`).
    """

    name: str
    meaning: str
    values: Mapping[str, str]
    default: Any
    group: str
    stage: str = ""
    parse_open: Callable[[str], Any] | None = None
    open_meaning: str = ""
    swept: tuple | None = ()
    phrases: Mapping[Any, str] = field(default_factory=dict)
    open_phrase: str = ""
    explorer: bool = False
    explorer_idle: str = ""
    with_cutoff_only: bool = False
    # named values stored as something other than their text ("none" -> None for depth)
    stored: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"axis {self.name!r}: stage {self.stage!r} is not one of {STAGES}")

    def parse(self, text: Any) -> Any:
        if not isinstance(text, str):
            text = format_value(text)
        text = text.strip()
        if text in self.values:
            return self.stored.get(text, text)
        if self.parse_open is not None:
            return self.parse_open(text)
        close = _close_matches(text, list(self.values), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConventionError(
            f"axis {self.name!r} has no value {text!r}: expected one of "
            f"{', '.join(self.values)}{(' or ' + self.open_meaning) if self.open_meaning else ''}{hint}"
        )

    def meaning_of(self, value: Any) -> str:
        """The one-line meaning of a stored value (an open value: the open meaning)."""
        return self.values.get(format_value(value)) or self.open_meaning

    def phrase(self, value: Any) -> str:
        """The words a verdict uses for one stored value."""
        if value in self.phrases:
            return self.phrases[value]
        if self.open_phrase and format_value(value) not in self.values:
            return self.open_phrase.format(format_value(value))
        return f"{self.name}={format_value(value)}"


def _parse_gain_map(text: str) -> str:
    """``"0:0,1:1,2:3"`` -> canonical text with labels sorted; gains may be fractional."""
    pairs = {}
    for part in text.split(","):
        label, sep, gain = part.partition(":")
        if not sep:
            label, sep, gain = part.partition("=")
        try:
            if not sep:
                raise ValueError
            lab, g = float(label), float(gain)
        except ValueError:
            raise ConventionError(
                f"gain {text!r}: expected 'linear', 'exponential' or a map such as '0:0,1:1,2:3'"
            ) from None
        if not (math.isfinite(lab) and math.isfinite(g)):
            raise ConventionError(f"gain {text!r}: labels and gains must be finite numbers")
        if lab in pairs and pairs[lab] != g:
            raise ConventionError(f"gain {text!r}: label {_num(lab)} is given two gains, {_num(pairs[lab])} "
                                  f"and {_num(g)}: expected one gain per label")
        pairs[lab] = g
    return ",".join(f"{_num(k)}:{_num(v)}" for k, v in sorted(pairs.items()))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _parse_discount(text: str) -> str:
    kind, sep, base = text.partition(":")
    if kind in ("jarvelin", "log") and sep:
        try:
            b = float(base)
        except ValueError:
            b = float("nan")
        if not (b > 1 and math.isfinite(b)):
            raise ConventionError(f"discount {text!r}: the base must be a number above 1")
        if kind == "log" and b == 2:
            return "log2"
        if kind == "jarvelin" and b == 2:
            return "jarvelin"
        return f"{kind}:{_num(b)}"
    raise ConventionError(
        f"discount {text!r}: expected 'log2', 'jarvelin', 'jarvelin:b' or 'log:b' (b > 1)"
    )


def discount_base(value: str) -> tuple[str, float]:
    """``"jarvelin:3"`` -> ("jarvelin", 3.0); ``"log2"`` -> ("log", 2.0)."""
    if value == "log2":
        return "log", 2.0
    if value == "jarvelin":
        return "jarvelin", 2.0
    kind, _, base = value.partition(":")
    return kind, float(base)


def _parse_geometric(text: str) -> str:
    """``geometric:1e-6`` -> the canonical text of a geometric mean with that floor."""
    kind, sep, floor = text.partition(":")
    if kind == "geometric" and sep:
        try:
            eps = float(floor)
        except ValueError:
            eps = float("nan")
        if not (math.isfinite(eps) and 0 < eps < 1):
            raise ConventionError(f"mean {text!r}: the floor must be a number above 0 and below 1")
        return "geometric" if eps == GEOMETRIC_FLOOR else f"geometric:{_num(eps)}"
    raise ConventionError(
        f"mean {text!r}: expected 'arithmetic', 'geometric' or 'geometric:EPS' (0 < EPS < 1)")


# trec_eval's MIN_GEO_MEAN (trec_eval.h): each query's value is raised to it before its log.
GEOMETRIC_FLOOR = 0.00001


def geometric_floor(value: str) -> float | None:
    """The floor of a ``mean`` value: ``"geometric"`` -> 1e-05; ``"arithmetic"`` and
    ``"micro"`` -> None."""
    if value in ("arithmetic", "micro"):
        return None
    _, _, floor = value.partition(":")
    return float(floor) if floor else GEOMETRIC_FLOOR


def _parse_int(axis: str, minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConventionError(f"axis {axis!r}: expected an integer, got {text!r}") from None
        if value < minimum:
            raise ConventionError(f"axis {axis!r}: expected an integer >= {minimum}, got {value}")
        return value

    return parse


def format_value(value: Any) -> str:
    """The public text of a stored value (inverse of Axis.parse)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        raise TypeError("boolean axis values do not exist")
    if isinstance(value, (int, float)):
        return _num(value) if isinstance(value, float) else str(value)
    return str(value)
