"""What needs the rag extra (bm25s, the packaged all-MiniLM-L6-v2): the embedding judge and the
example's live rebuild. Like every test of a library, these FAIL when the extra is missing,
unless ``CONFORMANCE_ALLOW_MISSING`` names it (``rag``, or one of its modules): then they are
reported as skipped, never as passed (tests/conftest.py)."""

from __future__ import annotations

import json

import pytest
from conftest import allowed_missing

from conformance.rag import extra


@pytest.fixture(scope="module", autouse=True)
def need_extra():
    if not extra.available(extra.BM25_MODULES + extra.MINILM_MODULES):
        message = f"the rag extra is not installed ({extra.install()})"
        names = {"rag", *extra.BM25_MODULES, *extra.MINILM_MODULES}
        if allowed_missing() & names:
            pytest.skip(message + " (allowed by CONFORMANCE_ALLOW_MISSING)")
        pytest.fail(message + "; install it, or set CONFORMANCE_ALLOW_MISSING=rag to report "
                    "these tests as skipped")


def test_the_embedding_judge_scores_paraphrase_and_nonsense_apart():
    from conformance.rag.judge_embedding import EmbeddingJudge
    from conformance.rag.judges import RelevanceTask, SupportTask

    j = EmbeddingJudge()
    ctx = ("Multipart uploads abort after three failed parts. Deleted buckets are kept for 30 days.",)
    res = j.support_many([SupportTask(("Multipart uploads abort after three failed parts.",
                                       "The moon is made of green cheese."), ctx)])[0]
    # a claim that is a sentence of the context has cosine 1 with it (unit vectors)
    assert res.scores[0] == pytest.approx(1.0, abs=1e-5) and res.grades[0] == 2
    assert res.scores[1] < 0.3 and res.grades[1] == 0
    rel = j.relevance_many([RelevanceTask("when do multipart uploads abort", "Uploads abort after three failed parts."),
                            RelevanceTask("when do multipart uploads abort", "Bananas are yellow."),
                            RelevanceTask("when do multipart uploads abort", "")])
    assert rel[0].score > rel[1].score and rel[2].score == 0.0
    assert j.describe()["settings"]["grade_2_from"] == 0.75


def test_the_example_rebuilt_live_equals_the_committed_outputs(tmp_path):
    from conformance.rag.example import pipelines
    from conformance.rag.example.run import _same, committed

    paths = pipelines.write_outputs(tmp_path)
    for v, p in paths.items():
        assert _same(p, committed()[v]) == 0, v
    first = json.loads(paths["bm25"].read_text().splitlines()[0])
    assert len(first["retrieved"]) == pipelines.TOP
