"""``conformance run --libs all`` on the bundled corpus, as a new user first sees it (issue 25):
at most 200 lines, the summary line first and last, and the class matrix (every entry that ran,
every measure family) within the first screen of 50 lines. Every entry is live and must be
installed: the corpus run is the one the README's first command makes."""

from __future__ import annotations

import pytest

from conformance.libs import all_entries
from conformance.run_text import render, summary_line
from run_screen import matrix_rows, silent_entries

# the worker that runs the report's corpus tests computes the corpus run once for both
pytestmark = [pytest.mark.xdist_group("corpus")] + [pytest.mark.requires_library(e.name) for e in all_entries()]

SCREEN = 50  # lines of a terminal's first screen
# 150 with 35 entries; the recommender entries (47 in all) add classes to every family's
# table, 168 lines on the corpus: the bound is on the answer's length, the screen's on its head
MAX_LINES = 200


def test_the_corpus_answer_fits_with_the_class_matrix_on_the_first_screen(corpus_result):
    lines = render(corpus_result).splitlines()
    assert len(lines) <= MAX_LINES, len(lines)
    assert lines[0] == lines[-1] == summary_line(corpus_result)
    assert "0 unexplained findings" in lines[0]
    head = next(i for i, x in enumerate(lines) if x.startswith("agreement classes:"))
    families = lines[head].split(":", 1)[1].split()
    ran = [e.name for e in corpus_result.entries if corpus_result.available[e.name]]
    assert len(ran) == len(all_entries())
    key = next(i for i in range(head + 1, len(lines)) if lines[i].startswith("('=':"))
    rows = matrix_rows(lines, head, key)
    assert key <= SCREEN, "the class matrix does not fit the first screen"
    assert all(len(line) <= 100 for line in lines[head:key])
    # an entry that gave no value of any family shown is named once, after the key; entries
    # next to each other with the same marks share a line
    silent = silent_entries(lines, key)
    assert [n for names, _ in rows for n in names] == [n for n in ran if n not in silent]
    # two neighbouring lines with the same marks are apart only when their names together
    # would not fit beside the columns in 100 characters
    columns = lines[head][len("agreement classes:"):].strip()
    for (x, a), (y, b) in zip(rows, rows[1:]):
        assert a != b or len(", ".join(x + y)) > 100 - len(columns) - 2, (x, y)
    assert all(len(marks) == len(families) for _, marks in rows)
    assert set(silent) <= set(ran) and len(silent) <= 3, silent
    assert {"nDCG", "AP", "RR", "P", "R"} <= set(families)
    # every letter in a column is a class line of that family's table below
    tables = "\n".join(lines[key:])
    for col, fam in enumerate(families):
        letters = {marks[col] for _, marks in rows} - {"=", "."}
        block = tables.split(f"\n{fam} (", 1)[1].split("\n\n", 1)[0]
        for letter in letters:
            assert f"\n  {letter}  apart by " in block or f"\n  {letter}  failed" in block, (fam, letter)
