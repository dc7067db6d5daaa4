"""The per-query lists handed to list-wise libraries (sklearn, LightGBM, XGBoost, torchmetrics):
built with dicts on small inputs and with a pandas merge on large ones; both must give the same
lists, which are checked here against hand-made cases and against each other."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import io as cio
from conformance.libs import _listwise


def _lists(built):
    return [(r.qid, r.labels.tolist(), r.scores.tolist()) for r in built]


def test_hand_made_case():
    # q10 sorts before q9 (by string); q3 has no judgment and is left out; d9 of q9 is
    # unjudged (0.0); qrels-only q7 has no list; labels kept as given (negative, fractional)
    qrels = cio.qrels_from_dict({"q9": {"d1": 2, "d2": -1}, "q10": {"d5": 0.5}, "q7": {"d1": 1}})
    run = cio.run_from_dict({"q9": {"d2": 3.0, "d9": 2.0, "d1": 1.0}, "q10": {"d5": 0.0},
                             "q3": {"d1": 1.0}})
    want = [("q10", [0.5], [0.0]), ("q9", [-1.0, 0.0, 2.0], [3.0, 2.0, 1.0])]
    assert _lists(_listwise._build_small(qrels, run)) == want
    assert _lists(_listwise._build_large(qrels, run)) == want
    for r in _listwise._build_small(qrels, run):
        assert not r.labels.flags.writeable and not r.scores.flags.writeable


qids = st.sampled_from(["q1", "q2", "q9", "q10", "Q1"])
docids = st.sampled_from(["d1", "d2", "d9", "d10", "é", "d1x"])


@settings(max_examples=200, deadline=None)
@given(judged=st.dictionaries(st.tuples(qids, docids), st.sampled_from([-1.0, 0.0, 0.5, 1.0, 3.0]),
                              max_size=12),
       listed=st.lists(st.tuples(qids, docids, st.sampled_from([0.0, 1.0, 1.0, 2.5, -3.0])),
                       min_size=1, max_size=20))
def test_small_and_large_builds_agree(judged, listed):
    if not judged:
        judged = {("q1", "d1"): 1.0}
    qrels = cio.qrels_from_frame(pd.DataFrame(
        [{"qid": q, "docid": d, "relevance": v} for (q, d), v in judged.items()]))
    # duplicates=keep: torchmetrics sees a docid listed twice as two documents
    run = cio.run_from_frame(pd.DataFrame([{"qid": q, "docid": d, "score": s} for q, d, s in listed]),
                             duplicates="keep")
    assert _lists(_listwise._build_small(qrels, run)) == _lists(_listwise._build_large(qrels, run))
