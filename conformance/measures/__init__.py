"""What a measure is: its family, its cutoff, the conventions its name fixes, and its names.

Each measure family is one :class:`Family` record in :data:`FAMILIES`
(``conformance.measures.families``): what it computes (meaning and formula text), how it
aggregates over queries, its cutoff rule, whether it is graded, binary or a count, whether it
is bounded by 1, the axis groups it reads (so the axes it reads are derived from the axis
records of ``conformance.conventions``), and its spellings in ir_measures, trec_eval and ranx
syntax (:class:`Name`). Every other table of families (the name reader, the paper sweep's
axes, the report, the adapters' name maps) is derived from these records.

A :class:`Measure` (``.measure``) says nothing about how it is computed (that is
``conformance.reference`` and the library adapters). Names are read (``.parse``, with the
spellings the records declare gathered in ``.names``) in ir_measures syntax (``nDCG@10``,
``P(rel=2)@5``), trec_eval syntax (``ndcg_cut_10``, ``P_5``) and ranx syntax
(``ndcg_burges@10``, ``map@100-l2``); ``Measure.text`` keeps the spelling the user gave so
output keys match what was asked for.

The submodules import one way: ``families`` (the records) <- ``measure`` <- ``names`` <-
``parse``; this package re-exports their public names, which the rest of the tool imports
from here.

Adding a family: its record in ``families.py``, its formula in
``conformance.reference.formulas`` and its tests; an adapter that computes it adds it to the
adapter's own support.
"""

from conformance.measures.families import (FAMILIES, SYNTAXES, TREC_DEFAULT_CUTOFFS, Family, MeasureError,
                                           Name, Param, families_reading, format_param, listing)
from conformance.measures.measure import Measure
from conformance.measures.names import KNOWN_NAMES
from conformance.measures.parse import parse_measure, parse_measures

__all__ = ["FAMILIES", "KNOWN_NAMES", "SYNTAXES", "TREC_DEFAULT_CUTOFFS", "Family", "Measure", "MeasureError",
           "Name", "Param", "families_reading", "format_param", "listing", "parse_measure", "parse_measures"]
