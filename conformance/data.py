"""Kept so existing imports work; to be removed: the data types live in ``conformance.io.data``
and the columnar plumbing in ``conformance.io.columnar``."""

from conformance.io.columnar import (BLOCK_ROWS, DocWords, LazyRange, arrow_numpy, arrow_offsets,  # noqa: F401
                                     arrow_strings, line_numbers, numpy_arrow, pair_hash, row_blocks)
from conformance.io.data import Qrels, Run, settle_pairs  # noqa: F401
from conformance.io.parsed import ReadCounts  # noqa: F401
