"""Which combinations of conventions share their formula results in the sweep: the formula key.

Two combinations with equal keys (:func:`formula_key`) give equal per-query values and empty
queries for a measure on the engine's input, so the sweep computes one of them. The key holds
the value of every axis the measure's family reads (``Family.axes``) outside the aggregate
stage, with the values that cannot differ on this input made one: orderings that cannot differ
(``_Engine.ordering``), a depth no list reaches or the measure's reach ignores
(``_Engine.reads_depth``), a threshold the gains do not read (``_Engine.gain_reading``),
``ideal=judged_to_list`` where no list is shorter than its ideal cut (``_Engine.lists_short``),
and float32's own masking of a score it rounds to 0.

The key is made of parts (:class:`KeyPart`, :func:`key_parts`), each declaring the axes it
reads, so that the sweep can read each part over the values of its own axes alone and
broadcast it over the others (``Sweep._formula_groups``) instead of building every
combination. A part that read an axis it does not declare would join combinations whose keys
differ: the tests compare the groups so found with those of every combination's own key.

:func:`content_key` refines a key once the contexts are built: orderings whose rankings hold
the same rows share their results.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from conformance.conventions import AXES, Conventions
from conformance.measures import FAMILIES, Measure
from conformance.reference.context import Context
from conformance.reference.sweep_engine import _Engine


@functools.lru_cache(maxsize=None)
def _key_axes(family: str) -> tuple[tuple[str, str], ...]:
    """(axis, stage) of each axis a family reads that its formula key holds: the aggregate
    stage's are selections of per-query values, and ``identical_ids`` chooses the engine."""
    return tuple((a, AXES[a].stage) for a in FAMILIES[family].axes
                 if AXES[a].stage != "aggregate" and a != "identical_ids")


class _Ordering(tuple):
    """An ordering's (tie rule, score precision, rank source) in a formula key."""


@dataclass(frozen=True)
class KeyPart:
    """One value of a formula key: the axes it reads (every other axis can take any value
    without changing it) and how an engine reads it from a measure's convention set."""

    reads: tuple[str, ...]
    value: Callable[[_Engine, Measure, Conventions], Any]


# What each part reads. The ordering: its stage's axes (``_Engine.ordering``). The depth: the
# reach (``rr_cutoff``), the ideal, the rank source and what leaves a combination to evaluate
# (``_Engine.by_evaluate``: the tie rule, the gain). The gain reading (``_Engine.gain_reading``):
# the gain, the scope, the threshold and the labels as read. The ideal: the labels as read and
# the depth (``_Engine.lists_short``).
_ORDERING_READS = tuple(a.name for a in AXES.values() if a.stage == "ordering")
_DEPTH_READS = ("depth", "rr_cutoff", "ideal", "rank_source", "ties", "gain")
_GAIN_READS = ("gain", "threshold_scope", "relevance_threshold", "label_type", "negative_labels")
_IDEAL_READS = ("ideal", "label_type", "negative_labels", "depth")
_MASKS32_READS = ("nonpositive_scores", "score_precision")


def _ordering(engine: _Engine, m: Measure, conv: Conventions) -> _Ordering:
    return _Ordering(engine.ordering(conv, conv.ties))


def _depth(engine: _Engine, m: Measure, conv: Conventions) -> int | None:
    return conv.depth if engine.reads_depth(m, conv) else None


def _scope(engine: _Engine, m: Measure, conv: Conventions) -> Any:
    return engine.gain_reading(m, conv)[0]


def _threshold(engine: _Engine, m: Measure, conv: Conventions) -> Any:
    return engine.gain_reading(m, conv)[1]


def _ideal(engine: _Engine, m: Measure, conv: Conventions) -> str:
    if conv.ideal == "judged_to_list" and not engine.lists_short(
            (conv.label_type, conv.negative_labels), m.cutoff, conv.depth):
        return "judged"
    return conv.ideal


def _masks32(engine: _Engine, m: Measure, conv: Conventions) -> str | None:
    """The ordering may make float32 one with float64 (it merges no scores), but a score that
    float32 rounds to 0 is masked as not relevant only under float32."""
    if (conv.nonpositive_scores == "not_relevant" and conv.score_precision == "float32"
            and engine.underflows32()):
        return "float32_masks"
    return None


def _as_read(axis: str) -> Callable[[_Engine, Measure, Conventions], Any]:
    def value(engine: _Engine, m: Measure, conv: Conventions) -> Any:
        return getattr(conv, axis)
    return value


@functools.lru_cache(maxsize=None)
def key_parts(m: Measure) -> tuple[KeyPart, ...]:
    """The parts of ``m``'s formula key, in order: one per axis ``m``'s family reads outside
    the aggregate stage (``_key_axes``), and the masking one float32 adds where the family
    reads ``nonpositive_scores``."""
    graded = m.record.kind == "graded"
    parts = []
    for a, stage in _key_axes(m.family):
        if stage == "ordering":  # one ordering for every axis of its stage
            parts.append(KeyPart(_ORDERING_READS, _ordering))
        elif a == "depth":
            parts.append(KeyPart(_DEPTH_READS, _depth))
        elif graded and a == "threshold_scope":
            parts.append(KeyPart(_GAIN_READS, _scope))
        elif graded and a == "relevance_threshold":
            parts.append(KeyPart(_GAIN_READS, _threshold))
        elif a == "ideal":
            parts.append(KeyPart(_IDEAL_READS, _ideal))
        else:
            parts.append(KeyPart((a,), _as_read(a)))
    if "nonpositive_scores" in m.record.axes:
        parts.append(KeyPart(_MASKS32_READS, _masks32))
    return tuple(parts)


def formula_key(engine: _Engine, m: Measure, conv: Conventions) -> tuple:
    """Equal keys, equal formula results (values and empty queries) for ``m`` on ``engine``'s
    input: (``m``, each part's value under ``conv``)."""
    return (m, tuple(part.value(engine, m, conv) for part in key_parts(m)))


def content_key(key: tuple, contexts: list[Context]) -> tuple:
    """Equal keys, equal formula results, like :func:`formula_key` (given), with its orderings
    replaced by what each context's ``Ranked`` holds: orderings that place equal labels
    differently, or that no list's ties tell apart, give equal rows, and the formulas read the
    rule itself only where it is named in ``sweep_engine.RULES_READ_BY_NAME``."""
    m, values = key
    return (m, tuple(v for v in values if not isinstance(v, _Ordering)),
            tuple(c.content for c in contexts))
