"""The hypothesis space of ``conformance infer``: every convention set a user's function could
follow for one measure, as a grid over the axes that measure reads.

A calling convention (:data:`SIGNATURES`) decides which axes the function can show at all: a
function given a ranked list of document ids never sees a score, so the tie rule, the score
precision and the reading of scores <= 0 cannot be told from its values; one given one query
never shows how queries are averaged. Those axes are left out of its space (and named in the
report), the others take:

- the values the check-paper sweep tries (``sweep_engine.SWEPT_VALUES``);
- ``relevance_threshold`` 0, 1 and 2; ``depth`` none, 100 and 1000;
- the values that are behaviours rather than numbers, since a function that raises or returns
  NaN shows them: ``empty_query`` nan and raise, ``negative_labels``, ``label_type``,
  ``query_set`` and ``single_document`` raise, and ``ties`` unspecified (the range over every
  order of tied documents);
- less ``mean=micro`` for a family that is not one ratio per query (``formulas.RATIO_PARTS``):
  the reference refuses it there on every input, so no function can be following it (a third
  of nDCG's space).

>>> from conformance.measures import parse_measure
>>> space = space_for(parse_measure("nDCG@10"), "ranked")
>>> "ties" in space.axes, "gain" in space.axes
(False, True)
>>> space.values["empty_query"]
('zero', 'one', 'skip', 'nan', 'raise')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.conventions import AXES, Conventions
from conformance.measures import Measure
from conformance.reference.formulas import RATIO_PARTS
from conformance.reference.sweep import reads
from conformance.reference.sweep_engine import SWEPT_VALUES

# calling convention -> what the function is given, as the report says it
SIGNATURES: dict[str, str] = {
    "ranked": "fn(ranked_doc_ids, relevance_dict, k): one query, the documents in ranked order "
              "and {docid: label} of the judged ones",
    "arrays": "fn(scores, labels, k): one query, two numpy arrays in input order, every "
              "document judged",
    "run": "fn(qrels_dict, run_dict, k): {qid: {docid: label}} and {qid: {docid: score}}, "
           "returning the mean or {qid: value}",
    "shell": "a shell command with {qrels}, {run} and {k} in it, reading TREC files and "
             "printing the mean",
}

# axes a calling convention cannot show, and why (the report names them)
HIDDEN: dict[str, dict[str, str]] = {
    "ranked": {
        "ties": "the function is given an order, not scores",
        "score_precision": "the function is given an order, not scores",
        "nonpositive_scores": "the function is given an order, not scores",
        "query_set": "the function sees one query",
        "mean": "the function sees one query",
        "identical_ids": "the function is not given the query's id",
    },
    "arrays": {
        "query_set": "the function sees one query",
        "mean": "the function sees one query",
        "identical_ids": "the function is not given document or query ids",
    },
    "run": {},
    "shell": {},
}

# values that are a behaviour (an error, a NaN, a range), beyond the swept ones
BEHAVIOURS: dict[str, tuple] = {
    "empty_query": ("nan", "raise"),
    "negative_labels": ("raise",),
    "label_type": ("raise",),
    "query_set": ("raise",),
    "single_document": ("raise",),
    "ties": ("unspecified",),
}
THRESHOLDS = (0, 1, 2)
DEPTHS = (None, 100, 1000)
# the axis a raise value refuses on, and the value it equals on every input it accepts (as
# sweep.UNTRIED_VALUES says of each)
RAISE_EQUALS = {"negative_labels": "unjudged", "label_type": "float", "query_set": "run",
                "single_document": "score"}


@dataclass(frozen=True)
class Space:
    """The grid of convention sets: ``axes`` in vocabulary order, ``values[axis]`` the values
    tried on it; a cell is one value index per axis (flat: C order over ``shape``)."""

    measure: Measure
    signature: str
    axes: tuple[str, ...]
    values: dict[str, tuple]
    hidden: dict[str, str]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.values[a]) for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def column(self, axis: str) -> int:
        return self.axes.index(axis)

    def index_of(self, axis: str, value: Any) -> int | None:
        vals = self.values[axis]
        return vals.index(value) if value in vals else None

    def unravel(self, flat: np.ndarray) -> np.ndarray:
        """(n, len(axes)) value indices of flat cell numbers."""
        if not self.axes:
            return np.zeros((flat.size, 0), np.int64)
        return np.stack(np.unravel_index(flat, self.shape), axis=1)

    def cell(self, conv: Conventions) -> int | None:
        """The flat cell of ``conv`` (its values on this space's axes); None when a value of it
        is not in the space."""
        idx = []
        for a in self.axes:
            i = self.index_of(a, getattr(conv, a))
            if i is None:
                return None
            idx.append(i)
        return int(np.ravel_multi_index(idx, self.shape)) if idx else 0

    def outside(self, conv: Conventions) -> list[str]:
        """``axis=value`` for each value of ``conv`` this space does not hold."""
        from conformance.conventions import format_value

        return [f"{a}={format_value(getattr(conv, a))}" for a in self.axes
                if self.index_of(a, getattr(conv, a)) is None]


def space_for(measure: Measure, signature: str) -> Space:
    """The space of ``measure`` under calling convention ``signature`` (see the module)."""
    if signature not in SIGNATURES:
        raise ValueError(f"unknown calling convention {signature!r}: one of {', '.join(SIGNATURES)}")
    fixed = {a for a, _ in measure.overrides}
    hidden = HIDDEN[signature]
    read = reads(measure) | {"single_document"}
    axes = tuple(a for a in AXES if a in read and a not in fixed and a not in hidden)
    values: dict[str, tuple] = {}
    for a in axes:
        if a == "relevance_threshold":
            values[a] = THRESHOLDS
        elif a == "depth":
            values[a] = DEPTHS
        else:
            values[a] = tuple(SWEPT_VALUES.get(a, (AXES[a].default,))) + BEHAVIOURS.get(a, ())
        if a == "mean" and measure.family not in RATIO_PARTS:
            values[a] = tuple(v for v in values[a] if v != "micro")
    return Space(measure, signature, axes, values,
                 {a: why for a, why in hidden.items() if a in read and a not in fixed})
