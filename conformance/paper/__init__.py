"""Checking a paper: which conventions reproduce the values a paper reports for a run.

Given qrels, a run and reported values (``nDCG@10=0.4312``, ``AP=27.10``), :func:`check_paper`
evaluates the reference over every combination of the convention values that can change those
measures (the sweep, ``conformance.reference.sweep``), and answers which convention sets
reproduce every value at once, which library entries reproduce them and what every other entry
gives, the nearest miss, and a one-sentence verdict.

- ``reported``: a printed number as the interval of values that print that way; trec_eval
  ``-q`` files of per-query values;
- ``cover``: the consistent combinations summarised as a few rows;
- ``evidence``: each library entry's live value and its profile's;
- ``answer``: the result, the verdict, and :func:`check_paper` itself.
"""

from conformance.paper.answer import Evidence, PaperResult, answer, check_paper, gather, ok_mask
from conformance.paper.cover import cover, row_text
from conformance.paper.reported import (MAX_DIGITS, PerQueryFile, Reported, ReportedError,
                                        parse_reported, read_reported_per_query, reported_value)
from conformance.reference.sweep import BASE, SWEPT_VALUES, Grid, Sweep, reads

__all__ = [
    "BASE", "MAX_DIGITS", "Evidence", "Grid", "PaperResult", "PerQueryFile", "Reported",
    "ReportedError", "SWEPT_VALUES", "Sweep", "answer", "check_paper", "cover", "gather",
    "ok_mask", "parse_reported", "read_reported_per_query", "reads", "reported_value", "row_text",
]
