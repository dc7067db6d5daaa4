"""``Prepared.identical_rows`` (``identical_ids=drop``): on TREC files joined by their docid
words the rows are found in word form; the answer is the exact coding's, row by row."""

from __future__ import annotations

import numpy as np
import pytest

import conformance
from conformance.reference.prepare import Prepared

# By hand, per run row: q1's "q1" (yes), "a", "q2" (a query id, not this row's), the long
# query's own name (yes, 19 bytes: three words), a one-byte-shorter name, q2's "q2" (yes),
# "é" under a query named "é" (yes, two bytes), q3's "q".
RUN = ("q1 Q0 q1 1 3.0 r\nq1 Q0 a 2 2.0 r\nq1 Q0 q2 3 1.0 r\n"
       "longquery_name_here Q0 longquery_name_here 1 1 r\n"
       "longquery_name_here Q0 longquery_name_her 2 0.5 r\n"
       "q2 Q0 q2 1 1 r\n\u00e9 Q0 \u00e9 1 1 r\nq3 Q0 q 1 1 r\n")
WANT = [True, False, False, True, False, True, True, False]
QRELS = "q1 0 q1 1\nq1 0 a 1\nlongquery_name_here 0 x 1\nq2 0 q2x 1\n"
# docids of one word, query ids of three: no row can be identical but the short ones
SHORT_RUN = "longquery_name_here Q0 d1 1 1 r\nq1 Q0 q1 1 1 r\n"


# a query id over 128 bytes has no word form: the other queries' rows are still found
LONG_QUERY = "q" * 200
LONG_RUN = f"{LONG_QUERY} Q0 d1 1 1 r\nq1 Q0 q1 1 1 r\n"


@pytest.mark.parametrize("run_text, want", [(RUN, WANT), (SHORT_RUN, [False, True]),
                                            (LONG_RUN, [False, True])],
                         ids=["mixed", "one-word docids", "a query id past 128 bytes"])
def test_identical_rows_in_word_form_are_the_exact_coding_s(tmp_path, run_text, want):
    (tmp_path / "qrels").write_text(QRELS, encoding="utf-8")
    (tmp_path / "run").write_text(run_text, encoding="utf-8")
    prep = Prepared(conformance.io.load_qrels(str(tmp_path / "qrels")),
                    conformance.io.load_run(str(tmp_path / "run")))
    assert prep.joined_by_words
    by_words = prep.identical_rows
    assert by_words.tolist() == want
    prep._by_words = False  # the exact coding's answer, on the same rows
    del prep.__dict__["identical_rows"]
    assert np.array_equal(prep.identical_rows, by_words)
