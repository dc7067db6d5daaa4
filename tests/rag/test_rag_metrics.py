"""conformance rag: the generation metrics, the judges, the diagnoses, the slices, the bootstrap
and the correlations, each on hand-computed cases (the arithmetic is in the comments) or
against scipy and scikit-learn called live."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest

from conformance.rag import bootstrap, correlation, diagnosis, text
from conformance.rag.harness import evaluate_variants
from conformance.rag.judges import (CallableJudge, OverlapJudge, RelevanceTask, SupportTask, load_callable_judge,
                                    read_verdicts)


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------------------------
# text rules


def test_claims_and_tokens():
    assert text.tokens("Uploads abort after 3 failed parts.") == ["uploads", "abort", "3", "failed", "parts"]
    assert text.claims("It is. The bucket holds 3.5 GB. Done!") == ["The bucket holds 3.5 GB.", "Done!"]
    # "It is." holds only function words: no claim; "3.5" has no space after its point
    assert text.contains("They abort after Three failed parts.", "three failed parts")
    assert not text.contains("They abort after threefold failed parts.", "three failed parts")
    assert text.contains("About 12,400 people live there.", "12,400")


# --------------------------------------------------------------------------------------------
# faithfulness, relevance, correctness through the harness


CONTEXT = "Multipart uploads abort after three failed parts. Deleted buckets are kept for 30 days."


def _one_query(tmp_path, answer, gold_answer="three failed parts", query="when do multipart uploads abort"):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"qid": "q1", "query": query, "gold_doc_ids": ["d1"], "gold_answer_substring": gold_answer}])
    out = write_jsonl(tmp_path / "out.jsonl", [
        {"qid": "q1", "retrieved": [{"doc_id": "d1", "score": 1.0, "text": CONTEXT}], "answer": answer}])
    return evaluate_variants(gold, {"v": out}, [1], resamples=20).variants[0].generation


def test_fully_supported_answer_scores_one(tmp_path):
    # both claims: every content token is in the context -> grade 2 each -> 2/2 supported
    g = _one_query(tmp_path, "Multipart uploads abort after three failed parts. Deleted buckets are kept for 30 days.")
    assert g.faithfulness[0] == 1.0
    assert g.faithfulness_graded[0] == 1.0
    assert g.correctness[0] == 1.0


def test_answer_with_no_overlap_scores_zero(tmp_path):
    # "The moon is made of cheese." tokens moon, made, cheese: none in the context -> 0/1
    g = _one_query(tmp_path, "The moon is made of cheese.")
    assert g.faithfulness[0] == 0.0
    assert g.faithfulness_graded[0] == 0.0
    assert g.correctness[0] == 0.0
    # relevance: question tokens multipart, uploads, abort; the answer has none -> 0/3
    assert g.relevance[0] == 0.0


def test_partly_supported_answer_scores_its_fraction(tmp_path):
    # claim 1: fully supported (grade 2); claim 2: moon/cheese unsupported (0);
    # claim 3: "Deleted buckets vanish instantly": deleted, buckets in context, vanish, instantly
    # not -> 2/4 = 0.5 -> grade 1 (partly). Binary: 2 of 3 supported; graded (2 + 0 + 1) / 6.
    g = _one_query(tmp_path, "Multipart uploads abort after three failed parts. The moon is made of cheese. "
                             "Deleted buckets vanish instantly.")
    assert g.n_claims[0] == 3
    assert g.grades[0] == [2, 0, 1]
    assert g.faithfulness[0] == pytest.approx(2 / 3, abs=1e-15)
    assert g.faithfulness_graded[0] == pytest.approx(3 / 6, abs=1e-15)
    # relevance: the answer's tokens beyond the question's (multipart, uploads, abort) are
    # three, failed, parts, moon, made, cheese, deleted, buckets, vanish, instantly (10; "after"
    # is a stopword); the one passage holds three, failed, parts, deleted, buckets (5) -> 5/10
    assert g.relevance[0] == 0.5


def test_empty_answer_has_no_faithfulness_and_no_correctness_without_gold(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"qid": "q1", "query": "abort threshold", "gold_doc_ids": ["d1"]}])
    out = write_jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [{"doc_id": "d1", "text": CONTEXT}],
                                                 "answer": ""}])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    g = r.variants[0].generation
    assert math.isnan(g.faithfulness[0]) and math.isnan(g.correctness[0])
    assert r.variants[0].diagnoses.diagnosis == ["no_answer"]
    assert r.table["all"]["v"]["faithfulness"].interval.n == 0  # left out of the mean, counted
    assert any("gold_answer_substring" in w for w in r.warnings)


def test_overlap_judge_thresholds_are_the_documented_ones():
    j = OverlapJudge()
    # 4 of 5 tokens found = 0.8 -> grade 2; 3 of 5 = 0.6 -> 1; 2 of 5 = 0.4 -> 0
    ctx = ("alpha beta gamma delta",)
    res = j.support_many([SupportTask(("alpha beta gamma delta omega.", "alpha beta gamma psi omega.",
                                       "alpha beta chi psi omega."), ctx)])
    assert res[0].scores == [0.8, 0.6, 0.4]
    assert res[0].grades == [2, 1, 0]


# --------------------------------------------------------------------------------------------
# a judge plugged in as a callable


class CountingJudge:
    """Grade 1 for every claim that mentions 'parts', 0 otherwise; relevance 0.25 always."""

    def support(self, claims, context):
        return [1 if "parts" in c else 0 for c in claims]

    def relevance(self, question, answer):
        return 0.25


class BrokenJudge:
    def support(self, claims, context):
        return ["yes"] * len(claims)

    def relevance(self, question, answer):
        return 1.5


def test_callable_judge_plugs_in(tmp_path, monkeypatch):
    mod = tmp_path / "my_judges.py"
    mod.write_text("from tests.rag.test_rag_metrics import CountingJudge, BrokenJudge\n"
                   "counting = CountingJudge()\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    judge = load_callable_judge("my_judges:counting")
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"qid": "q1", "query": "abort", "gold_doc_ids": ["d1"], "gold_answer_substring": "three"}])
    out = write_jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [{"doc_id": "d1", "text": CONTEXT}],
                                                 "answer": "Three failed parts. The moon."}])
    r = evaluate_variants(gold, {"v": out}, [1], judge=judge, resamples=20)
    g = r.variants[0].generation
    # grades [1, 0]: binary 1/2; graded (1 + 0) / 4
    assert g.grades[0] == [1, 0]
    assert g.faithfulness[0] == 0.5 and g.faithfulness_graded[0] == 0.25
    assert g.relevance[0] == 0.25
    assert r.judge == {"name": "my_judges:counting", "settings": {"callable": "my_judges:counting"}}


def test_a_judge_answer_that_cannot_be_read_is_recorded_not_counted(tmp_path):
    judge = CallableJudge("broken", BrokenJudge())
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"qid": "q1", "query": "abort", "gold_doc_ids": ["d1"]}])
    out = write_jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [{"doc_id": "d1", "text": CONTEXT}],
                                                 "answer": "Three failed parts."}])
    r = evaluate_variants(gold, {"v": out}, [1], judge=judge, resamples=20)
    g = r.variants[0].generation
    assert math.isnan(g.faithfulness[0]) and math.isnan(g.relevance[0])
    assert "verdict 1 is 'yes'" in g.support_error[0]
    assert "outside [0, 1]" in g.relevance_error[0]
    assert r.table["all"]["v"]["faithfulness"].interval.n == 0
    assert any("could not give 1 support" in w for w in r.warnings)


def test_read_verdicts_is_strict():
    assert read_verdicts([True, False, 1, 2, 0], 5) == ([2, 0, 1, 2, 0], None)
    assert read_verdicts([1, 2], 3)[0] is None
    assert read_verdicts([0.5], 1)[0] is None
    assert read_verdicts([3], 1)[0] is None
    assert read_verdicts("1", 1)[0] is None


# --------------------------------------------------------------------------------------------
# diagnoses and slices


def test_each_diagnosis(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"qid": "q1", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three", "query_class": "a"},
        {"qid": "q2", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three", "query_class": "a"},
        {"qid": "q3", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three", "query_class": "b"},
        {"qid": "q4", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three", "query_class": "b"},
        {"qid": "q5", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three", "query_class": "b"},
        {"qid": "q6", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three"},
        {"qid": "q7", "query": "abort threshold multipart", "gold_doc_ids": ["d1"], "gold_answer_substring": "three"},
    ])
    d1 = {"doc_id": "d1", "text": "The multipart abort threshold is three failed parts."}
    d9 = {"doc_id": "d9", "text": "Billing happens monthly."}
    good = "The multipart abort threshold is three failed parts."
    out = write_jsonl(tmp_path / "out.jsonl", [
        {"qid": "q1", "retrieved": [d9], "answer": "Billing happens monthly."},            # not_retrieved
        {"qid": "q2", "retrieved": [d9, d1], "answer": "The multipart abort threshold is failed parts."},  # ranked_low
        {"qid": "q3", "retrieved": [d1, d9], "answer": "The moon is made of cheese."},     # unsupported
        {"qid": "q4", "retrieved": [d1, d9], "answer": "Billing happens monthly."},        # off_topic
        {"qid": "q5", "retrieved": [d1], "answer": "The multipart abort threshold is failed parts."},  # incorrect
        {"qid": "q6", "retrieved": [d1], "answer": good},                                  # ok
    ])
    r = evaluate_variants(gold, {"v": out}, [1, 2], resamples=20)
    d = r.variants[0].diagnoses
    assert d.diagnosis == ["not_retrieved", "ranked_low", "unsupported", "off_topic", "incorrect", "ok", "missing"]
    # q1's answer is supported by its context (billing, happens, monthly) but off the question
    # and wrong: every flag is kept
    assert d.flags[0] == ["not_retrieved", "off_topic", "incorrect"]
    assert d.first_relevant.tolist()[:2] == [0, 2] and d.first_nonrelevant.tolist()[1] == 1
    # slices: a = q1, q2; b = q3, q4, q5; (none) = q6, q7
    assert list(r.slices) == ["all", "a", "b", "(none)"]
    assert r.slices["b"].tolist() == [False, False, True, True, True, False, False]
    # hit_rate@1 per slice: a: q1 0, q2 0 -> 0; b: 1, 1, 1 -> 1; (none): q6 1 (q7 has no output)
    assert r.table["a"]["v"]["hit_rate@1"].interval.estimate == 0.0
    assert r.table["b"]["v"]["hit_rate@1"].interval.estimate == 1.0
    assert r.table["(none)"]["v"]["hit_rate@1"].interval.n == 1
    assert any("1 of 7 gold queries have no output" in w for w in r.warnings)


# --------------------------------------------------------------------------------------------
# bootstrap


def test_bootstrap_of_a_constant_difference_is_that_constant():
    a = np.array([[0.3], [0.5], [0.9], [0.1]])
    b = a - 0.25
    iv = bootstrap.paired_intervals(a, b, 500, 0)[0]
    # every resample's mean difference is 0.25 (to rounding)
    assert iv.estimate == pytest.approx(0.25, abs=1e-15)
    assert iv.low == pytest.approx(0.25, abs=1e-12) and iv.high == pytest.approx(0.25, abs=1e-12)
    assert iv.p_above == 1.0 and iv.n == 4


def test_bootstrap_of_two_values_has_the_known_distribution():
    # n = 2 values {0, 1}: a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4
    # (sd sqrt(1/8) = 0.35355), and P(mean > 0) = 3/4. A difference's interval is
    # 0.5 +- t_1 sqrt(2/1) sd = 0.5 +- 12.7062 * 1.41421 * 0.35355 = 0.5 +- 6.3531: two queries
    # tell almost nothing (the plain percentile interval said [0, 1])
    iv = bootstrap.paired_intervals(np.array([[0.0], [1.0]]), np.zeros((2, 1)), 20000, 1)[0]
    assert iv.low == pytest.approx(0.5 - 6.3531, abs=0.1) and iv.high == pytest.approx(0.5 + 6.3531, abs=0.1)
    assert iv.p_above == pytest.approx(0.75, abs=0.015)  # binomial sd sqrt(3/16/20000) = 0.003


def test_bootstrap_interval_width_matches_the_standard_error():
    # 400 values, half 0 and half 1: the mean's standard error is sqrt(0.25 / 400) = 0.025, so
    # the 95% interval is about 0.5 +- 1.96 * 0.025 = [0.451, 0.549]
    values = np.array([[0.0], [1.0]] * 200)
    iv = bootstrap.mean_intervals(values, 4000, 3)[0]
    assert iv.estimate == 0.5
    assert iv.low == pytest.approx(0.451, abs=0.006) and iv.high == pytest.approx(0.549, abs=0.006)


def test_bootstrap_leaves_out_queries_without_a_value():
    a = np.array([[1.0], [np.nan], [3.0]])
    b = np.array([[0.0], [5.0], [1.0]])
    iv = bootstrap.paired_intervals(a, b, 100, 0)[0]
    assert iv.n == 2 and iv.estimate == 1.5  # (1 - 0 + 3 - 1) / 2


# --------------------------------------------------------------------------------------------
# correlation


@pytest.mark.requires_library("sklearn")
def test_coefficients_equal_scipy_and_resampled_ones_equal_the_expanded_sample():
    st = importlib.import_module("scipy.stats")
    rng = np.random.default_rng(7)
    for n in (3, 17, 60):
        x = rng.integers(0, 6, n).astype(float)
        y = x * 0.3 + rng.integers(0, 4, n)
        assert correlation.pearson(x, y) == pytest.approx(st.pearsonr(x, y)[0], abs=1e-12)
        assert correlation.spearman(x, y) == pytest.approx(st.spearmanr(x, y)[0], abs=1e-12)
        assert correlation.kendall(x, y) == pytest.approx(st.kendalltau(x, y)[0], abs=1e-12)
        W = correlation.bootstrap_weights(n, 6, rng)
        got = correlation.coefficients(x, y, W)
        for b in range(6):
            idx = np.repeat(np.arange(n), W[b].astype(int))
            xs, ys = x[idx], y[idx]
            if np.ptp(xs) == 0 or np.ptp(ys) == 0:
                assert math.isnan(got["kendall"][b])
                continue
            assert got["spearman"][b] == pytest.approx(st.spearmanr(xs, ys)[0], abs=1e-12)
            assert got["kendall"][b] == pytest.approx(st.kendalltau(xs, ys)[0], abs=1e-12)
            assert got["pearson"][b] == pytest.approx(st.pearsonr(xs, ys)[0], abs=1e-12)


def test_constant_input_has_no_correlation():
    assert correlation.spearman([1, 1, 1], [1, 2, 3]) is None
    assert correlation.kendall([1, 2], [5, 5]) is None
    assert correlation.pearson([1], [2]) is None


@pytest.mark.requires_library("sklearn")
def test_kappa_equals_scikit_learn():
    metrics = importlib.import_module("sklearn.metrics")
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 3, 200))
    assert correlation.kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b), abs=1e-12)
    assert correlation.kappa(np.ones(5, int), np.ones(5, int)) is None  # p_e = 1


def test_the_metric_answer_quality_is_built_from_ranks_first(tmp_path):
    """Answer quality is made from nDCG@3 by construction (4 x nDCG@3, a 0-4 score; scaling by a
    power of two is exact, so no two values merge or part): nDCG@3 must rank first, with a
    Spearman correlation of 1, ahead of P@3, R@1 and the rest."""
    rng = np.random.default_rng(11)
    gold, outs = [], []
    docs = [f"d{i}" for i in range(12)]
    for q in range(60):
        rel = list(rng.choice(docs, size=3, replace=False))
        grades = {d: int(g) for d, g in zip(rel, rng.integers(1, 4, 3))}
        gold.append({"qid": f"q{q:02d}", "query": "question words here", "gold_doc_ids": rel,
                     "graded_relevance": grades})
        ranked = list(rng.permutation(docs))[:6]
        outs.append({"qid": f"q{q:02d}", "retrieved": [{"doc_id": d, "text": "x"} for d in ranked],
                     "answer": "An answer."})
    g = write_jsonl(tmp_path / "gold.jsonl", gold)
    o = write_jsonl(tmp_path / "out.jsonl", outs)
    first = evaluate_variants(g, {"v": o}, [1, 3], resamples=50, by=None)
    ndcg3 = next(m for m in first.measures if m.text == "nDCG@3")
    values = first.variants[0].retrieval[ndcg3].lower
    quality_file = tmp_path / "quality.txt"
    quality_file.write_text("".join(f"q{i:02d} {float(4 * v)!r}\n" for i, v in enumerate(values)))
    from conformance.rag.inputs import read_quality

    r = evaluate_variants(g, {"v": o}, [1, 3], resamples=300, by=None, correlate=True,
                          quality=read_quality(str(quality_file)))
    best = r.study.candidates[r.study.overall.rows[0].candidate]
    assert best.measure == "nDCG@3", [r.study.candidates[x.candidate].name for x in r.study.overall.rows[:5]]
    assert r.study.overall.rows[0].estimate["spearman"] == pytest.approx(1.0, abs=1e-12)
    p_at_3 = next(x for x in r.study.overall.rows if r.study.candidates[x.candidate].measure == "P@3")
    assert p_at_3.estimate["spearman"] < 0.99
    assert "nDCG@3" in r.study.overall.sentence


def test_the_harness_refuses_bad_options(tmp_path):
    from conformance.errors import ConformanceError
    from conformance.rag.harness import parse_ks, parse_variants

    with pytest.raises(ConformanceError, match="not an integer"):
        parse_ks("1,x")
    with pytest.raises(ConformanceError, match="positive"):
        parse_ks("0,3")
    with pytest.raises(ConformanceError, match="NAME=FILE"):
        parse_variants(["nofile"])
    with pytest.raises(ConformanceError, match="given twice"):
        parse_variants(["a=x", "a=y"])


def test_diagnosis_labels_follow_the_qrels_join(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"qid": "q1", "gold_doc_ids": ["d1", "d2"], "graded_relevance": {"d2": 0}, "query": "x"}])
    out = write_jsonl(tmp_path / "out.jsonl", [{"qid": "q1", "retrieved": [
        {"doc_id": "d2", "text": "a"}, {"doc_id": "d7", "text": "b"}, {"doc_id": "d1", "text": "c"}], "answer": ""}])
    from conformance.rag.inputs import read_gold, read_outputs

    labels = diagnosis.list_labels(read_gold(gold), read_outputs(out, "v"))
    # d2 graded 0 (the grade wins over gold membership), d7 unjudged, d1 gold without grade: 1
    assert labels[0] == 0.0 and math.isnan(labels[1]) and labels[2] == 1.0


def test_relevance_of_a_question_without_content_tokens_is_an_error_not_a_zero():
    res = OverlapJudge().relevance_many([RelevanceTask("what is it", "anything")])
    assert res[0].score is None and "no content token" in res[0].error


def test_kendall_through_the_few_values_route_equals_scipy_and_the_pairwise_route():
    import scipy.stats as stats  # scipy comes with the peers (scikit-learn); missing, the test fails
    rng = np.random.default_rng(4)
    x = np.round(rng.random(300), 2)
    for y in ((rng.random(300) < x).astype(float), rng.integers(1, 6, 300).astype(float)):
        got = correlation.kendall(x, y)
        assert got == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
        W = correlation.bootstrap_weights(300, 5, np.random.default_rng(0))
        fast = correlation.coefficients(x, y, W, ("kendall",))["kendall"]
        for b in range(5):  # the expanded sample, through scipy
            xe, ye = np.repeat(x, W[b].astype(int)), np.repeat(y, W[b].astype(int))
            assert fast[b] == pytest.approx(stats.kendalltau(xe, ye).statistic, abs=1e-12)
