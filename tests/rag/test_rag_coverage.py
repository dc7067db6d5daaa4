"""Which queries a variant is scored on: outputs beyond the gold file, unanswerable gold queries
(the abstention rule), and gold queries a variant did not answer (``missing``). Every
expectation is computed by hand in the comments."""

from __future__ import annotations

import json

import pytest

from conformance.rag.harness import evaluate_variants
from conformance.rag.summary import render

PASSAGE = "Quindal is twinned with Vardried."


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _gold(n=4, unanswerable=()):
    out = []
    for i in range(1, n + 1):
        q = f"q{i}"
        if q in unanswerable:
            out.append({"qid": q, "query": "Which town is Zorbel twinned with?", "gold_doc_ids": [],
                        "gold_answer_substring": None})
        else:
            out.append({"qid": q, "query": "Which town is Quindal twinned with?", "gold_doc_ids": [f"d{i}"],
                        "gold_answer_substring": "Vardried"})
    return out


def _out(q, answer="Quindal is twinned with Vardried.", doc=None):
    return {"qid": q, "retrieved": [{"doc_id": doc or f"d{q[1:]}", "text": PASSAGE}], "answer": answer}


def test_outputs_beyond_the_gold_file_are_counted_listed_and_left_out(tmp_path):
    # the smoke-set workflow: the outputs cover q1..q6, the gold file q1..q2 (it crashed with
    # IndexError). q1 retrieves its gold document first, q2 does not: P@1 = (1 + 0) / 2.
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(2))
    out = write_jsonl(tmp_path / "out.jsonl", [_out("q1"), _out("q2", doc="d9")] + [_out(f"q{i}") for i in range(3, 7)])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.qids == ["q1", "q2"]
    assert r.table["all"]["v"]["P@1"].interval.estimate == 0.5
    assert r.table["all"]["v"]["P@1"].interval.n == 2
    assert r.variants[0].not_in_gold == 4
    assert any("4 output(s) have no gold (q3, q4, q5, q6): left out of every metric" in w for w in r.warnings)


@pytest.mark.parametrize("profile", ["trec_eval", "ranx"])
def test_every_profile_survives_extra_outputs(tmp_path, profile):
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(2))
    out = write_jsonl(tmp_path / "out.jsonl", [_out("q1"), _out("q2"), _out("q7")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20, profile=profile)
    assert r.table["all"]["v"]["P@1"].interval.estimate == 1.0


def test_unanswerable_gold_queries_are_scored_by_the_abstention_rule(tmp_path):
    # q3 and q4 have no relevant document. q3's answer abstains (correct: 1), q4's answers
    # (a failure: 0); q1, q2 are answered correctly (1, 1). Correctness = (1+1+1+0)/4 = 0.75.
    # Retrieval is measured over q1, q2 only (P@1 = 1, n = 2).
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(4, unanswerable=("q3", "q4")))
    out = write_jsonl(tmp_path / "out.jsonl", [
        _out("q1"), _out("q2"),
        _out("q3", answer="The documents say nothing about Zorbel.", doc="d1"),
        _out("q4", answer="Zorbel is twinned with Vardried.", doc="d1")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.qids == ["q1", "q2", "q3", "q4"]  # none dropped
    row = r.table["all"]["v"]
    assert row["correctness"].interval.estimate == 0.75 and row["correctness"].interval.n == 4
    assert row["P@1"].interval.estimate == 1.0 and row["P@1"].interval.n == 2
    d = r.variants[0].diagnoses.diagnosis
    assert d[2] == "ok" and d[3] == "answered_unanswerable"


def test_an_unanswerable_query_is_not_said_to_lack_correctness(tmp_path):
    # q2 has no relevant document and no gold answer: its correctness comes from the abstention
    # rule, so the warning that a gold answer is missing (no correctness) must not count it;
    # and the diagnosis table keeps a space between "answered_unanswerable" and its count
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(2, unanswerable=("q2",)))
    out = write_jsonl(tmp_path / "out.jsonl", [_out("q1"), _out("q2", answer="Zorbel is twinned with Vardried.", doc="d1")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert not [w for w in r.warnings if "gold_answer_substring" in w], r.warnings
    assert r.table["all"]["v"]["correctness"].interval.estimate == 0.5  # (1 + 0) / 2
    row = [line for line in render(r).splitlines() if line.startswith("answered_unanswerable")]
    assert row and row[0].split() == ["answered_unanswerable", "1"], row


def test_an_unanswerable_query_without_output_is_kept_and_missing(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(2, unanswerable=("q2",)))
    out = write_jsonl(tmp_path / "out.jsonl", [_out("q1")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.qids == ["q1", "q2"]
    assert r.variants[0].diagnoses.diagnosis == ["ok", "missing"]


def test_an_explicit_abstained_field_wins_over_the_phrases(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(1, unanswerable=("q1",)))
    rec = _out("q1", answer="Nothing found.")
    rec["abstained"] = True
    out = write_jsonl(tmp_path / "out.jsonl", [rec])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.table["all"]["v"]["correctness"].interval.estimate == 1.0


# --------------------------------------------------------------------------------------------
# missing answers


def _skipping(tmp_path):
    # six gold queries; variant "all" answers every one, correct on q1..q3 and wrong on q4..q6
    # (correctness 3/6 = 0.5); variant "skip" answers q1..q3 only, correctly.
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold(6))
    wrong = "Quindal is twinned with Ostrand."
    every = write_jsonl(tmp_path / "all.jsonl", [_out(f"q{i}") for i in (1, 2, 3)]
                        + [_out(f"q{i}", answer=wrong) for i in (4, 5, 6)])
    skip = write_jsonl(tmp_path / "skip.jsonl", [_out(f"q{i}") for i in (1, 2, 3)])
    return gold, {"all": every, "skip": skip}


def test_a_skipped_query_counts_as_a_failure_by_default(tmp_path):
    gold, variants = _skipping(tmp_path)
    r = evaluate_variants(gold, variants, [1], resamples=20)
    # skip: (1 + 1 + 1 + 0 + 0 + 0) / 6 = 0.5, the same as "all"; before, 3/3 = 1.000
    cell = r.table["all"]["skip"]["correctness"]
    assert cell.interval.estimate == 0.5 and cell.interval.n == 6 and cell.missing == 3
    assert r.table["all"]["all"]["correctness"].interval.estimate == 0.5
    text = render(r)
    line = next(ln for ln in text.splitlines() if ln.startswith("correctness"))
    assert "0.500 (3 missing as 0)" in line
    # the paired difference skip - all is 0 on every query
    assert r.comparisons[("skip", "all")]["correctness"].estimate == 0.0


def test_missing_skip_keeps_the_old_mean_and_says_over_n_of_m_in_the_cell(tmp_path):
    gold, variants = _skipping(tmp_path)
    r = evaluate_variants(gold, variants, [1], resamples=20, missing="skip")
    cell = r.table["all"]["skip"]["correctness"]
    assert cell.interval.estimate == 1.0 and cell.interval.n == 3
    line = next(ln for ln in render(r).splitlines() if ln.startswith("correctness"))
    assert "1.000 over 3 of 6 queries" in line


def test_missing_refuses_an_unknown_rule(tmp_path):
    from conformance.errors import ConformanceError

    gold, variants = _skipping(tmp_path)
    with pytest.raises(ConformanceError, match="--missing 'drop'"):
        evaluate_variants(gold, variants, [1], resamples=20, missing="drop")


def test_the_command_takes_missing_skip(tmp_path):
    import subprocess
    import sys

    gold, variants = _skipping(tmp_path)
    args = [sys.executable, "-m", "conformance.cli", "rag", "--qrels", gold, "--bootstrap", "20", "--quiet"]
    args += [f"--variant={n}={p}" for n, p in variants.items()]
    default = subprocess.run(args, capture_output=True, text=True)
    skip = subprocess.run(args + ["--missing", "skip"], capture_output=True, text=True)
    assert default.returncode == 0 and skip.returncode == 0, default.stderr + skip.stderr
    assert "(3 missing as 0)" in default.stdout and "over 3 of 6 queries" in skip.stdout


# --------------------------------------------------------------------------------------------
# the K/N_p buckets


def test_every_cutoff_is_ranked_in_every_bucket_and_p_at_5_leads_each(tmp_path):
    """Answer quality is P@5 by construction (quality file = P@5 per query). Queries have
    N_p = 2, 4 or 8 relevant documents, so K = 5 falls in each bucket: K < N_p (N_p = 8),
    N_p <= K < 2 N_p (N_p = 4), K >= 2 N_p (N_p = 2). P@5 correlates 1.0 with itself in each
    bucket; before, each bucket ranked only the cutoff with the most answers (P@1 in K < N_p)."""
    import random

    from conformance.rag.inputs import read_quality

    rng = random.Random(3)
    docs = [f"d{i}" for i in range(30)]
    gold, outs = [], []
    for q in range(90):
        n_p = (2, 4, 8)[q % 3]
        rel = rng.sample(docs, n_p)
        gold.append({"qid": f"q{q:02d}", "query": "a question", "gold_doc_ids": rel})
        ranked = rng.sample(docs, 10)
        outs.append({"qid": f"q{q:02d}", "retrieved": [{"doc_id": d, "text": "x"} for d in ranked],
                     "answer": "An answer."})
    g = write_jsonl(tmp_path / "gold.jsonl", gold)
    o = write_jsonl(tmp_path / "out.jsonl", outs)
    # P@5 by hand: relevant documents among the first five retrieved, over 5
    quality = tmp_path / "quality.txt"
    quality.write_text("".join(
        f"{gq['qid']} {sum(d['doc_id'] in gq['gold_doc_ids'] for d in oq['retrieved'][:5]) / 5!r}\n"
        for gq, oq in zip(gold, outs)))
    r = evaluate_variants(g, {"v": o}, [1, 3, 5, 10], resamples=100, by=None, correlate=True,
                          quality=read_quality(str(quality)))
    for bucket in r.study.buckets:
        first = bucket.rows[0]
        assert r.study.candidates[first.candidate].measure == "P@5", bucket.sentence
        assert first.estimate["spearman"] == 1.0 and first.ranked
        assert "P@5" in bucket.sentence
        ranked_cutoffs = {r.study.candidates[x.candidate].cutoff for x in bucket.rows if x.ranked}
        assert 5 in ranked_cutoffs and len(ranked_cutoffs) >= 2, bucket.subset
