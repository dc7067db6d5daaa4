"""Inferring the conventions of a user's own metric function (``conformance infer``).

- ``space``: the candidates, every convention set of the axes a measure reads that the calling
  convention can show;
- ``cases``: the seeded pool of small inputs the function may be called on;
- ``table``: one case's reference values under every candidate, read from the check-paper sweep;
- ``callers``: calling the function under a declared calling convention, and what it did;
- ``search``: the adaptive choice of cases, the consistent convention sets, the entries that
  share them, the smallest disagreeing case, and :func:`infer` itself.
"""

from conformance.infer.callers import Observation, caller, load
from conformance.infer.cases import Case, Query, pool
from conformance.infer.search import BUDGET, Inferred, Step, infer, matches
from conformance.infer.space import SIGNATURES, Space, space_for
from conformance.infer.table import CaseTable

__all__ = ["BUDGET", "Case", "CaseTable", "Inferred", "Observation", "Query", "SIGNATURES", "Space",
           "Step", "caller", "infer", "load", "matches", "pool", "space_for"]
