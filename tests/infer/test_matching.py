"""Matching an observation over a whole space by classes of alike cells
(``search._over_space``) selects exactly the cells that matching each cell alone selects.

The per-cell answer is ``search.matches`` on every cell of the space, unravelled one by one:
the definition the class product must reproduce, on every case of the pool, for every kind of
observation (a value a cell gives, an error, a NaN, per-query values), whole and on a subset.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.infer.callers import Observation
from conformance.infer.search import _over_space, matches, pool_tables
from conformance.measures import parse_measure


def observations(table, rng) -> list[Observation]:
    space = table.space
    lo, _, _ = table.values(space.unravel(rng.integers(0, space.size, 6)))
    out = [Observation("error"), Observation("nan")]
    out += [Observation("value", float(v)) for v in lo if not math.isnan(v)][:3]
    out.append(Observation("value", 0.123456))  # a value no cell is expected to give
    qids = [q.qid for q in table.case.queries if q.docs and q.labels]
    if table.space.signature == "run" and qids and not math.isnan(lo[0]):
        out.append(Observation("per_query", per_query={q: float(lo[0]) for q in qids}))
    return out


@pytest.mark.parametrize("measure, signature, sample", [
    ("P@5", "ranked", None), ("nDCG@5", "ranked", None),  # every cell of the space
    ("RR", "run", 60_000),  # 4.4 million cells: a sample of them
])
def test_classes_of_alike_cells_match_exactly_the_cells_matched_one_by_one(measure, signature, sample):
    rng = np.random.default_rng(5)
    tables = pool_tables(parse_measure(measure), signature, 0)
    space = tables[0].space
    cells = (np.arange(space.size, dtype=np.int64) if sample is None
             else np.sort(rng.choice(space.size, sample, replace=False)))
    subset = np.sort(rng.choice(cells, cells.size // 3, replace=False))
    seen = set()
    for table in tables[::1 if sample is None else 6]:
        for obs in observations(table, rng):
            one_by_one = cells[matches(table, obs, space.unravel(cells))]
            if sample is None:
                assert np.array_equal(_over_space(table, obs, space, None, 1e-9), one_by_one), (
                    table.case.number, obs)
            assert np.array_equal(_over_space(table, obs, space, cells, 1e-9), one_by_one), (
                table.case.number, obs)
            assert np.array_equal(_over_space(table, obs, space, subset, 1e-9),
                                  np.intersect1d(subset, one_by_one)), (table.case.number, obs)
            seen.add((obs.kind, 0 < one_by_one.size < cells.size))
    # the cases split the space: some observations match part of it, not all or nothing
    assert ("value", True) in seen
    if signature == "run":
        assert any(kind == "per_query" for kind, _ in seen)
