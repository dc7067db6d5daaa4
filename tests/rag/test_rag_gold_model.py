"""The gold model and the CI hooks: answer aliases, abstentions, conflicting gold, answer length
against faithfulness, ``ranked_low`` only when the answer is wrong, ``evaluate_pipeline`` with
a worker pool and per-query errors, and ``--fail-under``. Expectations are worked by hand."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

import pytest

from conformance.errors import InputError
from conformance.rag.harness import evaluate_pipeline, evaluate_variants
from conformance.rag.inputs import read_gold
from conformance.rag.summary import render

PASSAGE = "Quindal is twinned with Vardried."
QUESTION = "Which town is Quindal twinned with?"


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _out(q, answer, docs=("d1",)):
    return {"qid": q, "retrieved": [{"doc_id": d, "text": PASSAGE if d == "d1" else "Ostrand has a harbour."}
                                    for d in docs], "answer": answer}


def test_a_list_of_acceptable_answers_is_read_as_aliases(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": "q1", "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": ["Vardried", "Vardrid"]},
        {"qid": "q2", "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": ["Vardried", "Vardrid"]},
        {"qid": "q3", "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": ["Vardried", "Vardrid"]}])
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "It is Vardrid."), _out("q2", "Vardried."),
                                             _out("q3", "Ostrand.")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.variants[0].generation.correctness.tolist() == [1.0, 1.0, 0.0]


def test_an_empty_alias_list_is_refused(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [{"qid": "q1", "gold_doc_ids": ["d1"], "gold_answer_substring": []}])
    with pytest.raises(InputError, match="g.jsonl:1: .*non-empty list of acceptable answers"):
        read_gold(gold)


def test_conflicting_gold_for_one_query_is_refused_naming_both_lines(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": "q1", "query": QUESTION, "gold_doc_ids": ["d1"]},
        {"qid": "q2", "query": QUESTION, "gold_doc_ids": ["d2"]},
        {"qid": "q1", "query": QUESTION, "gold_doc_ids": ["d7"]}])
    with pytest.raises(InputError) as e:
        read_gold(gold)
    assert "g.jsonl:3: query 'q1' has gold documents on lines 1 and 3" in str(e.value)


def test_an_abstention_on_an_answerable_query_is_labelled_abstained_not_unsupported(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": "q1", "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": "Vardried"}])
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "The documents say nothing about Quindal's twin town.")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20)
    assert r.variants[0].diagnoses.diagnosis == ["abstained"]
    assert r.variants[0].generation.correctness.tolist() == [0.0]


def test_ranked_low_is_blamed_only_when_the_answer_is_wrong(tmp_path):
    # both queries read the distractor d9 first and the gold d1 second; q1's answer is
    # right (ok), q2's is wrong (ranked_low)
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": q, "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": "Vardried"} for q in ("q1", "q2")])
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "Quindal is twinned with Vardried.", ("d9", "d1")),
                                             _out("q2", "Quindal is twinned with Ostrand.", ("d9", "d1"))])
    r = evaluate_variants(gold, {"v": out}, [2], resamples=20)
    assert r.variants[0].diagnoses.diagnosis == ["ok", "ranked_low"]


def _length_case(tmp_path):
    """Two answers: a short supported one and the same with an unsupported sentence added."""
    long_answer = ("Quindal is twinned with Vardried. "
                   "Harbour cranes lift grain barrels onto river ships every misty autumn morning.")
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": q, "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": "Vardried"} for q in ("q1", "q2")])
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "Quindal is twinned with Vardried."), _out("q2", long_answer)])
    return evaluate_variants(gold, {"v": out}, [1], resamples=20)


def test_answer_length_against_faithfulness_is_reported(tmp_path):
    # q1: "Quindal is twinned with Vardried." 3 content tokens, faithfulness 1 (bin 1-10);
    # q2: 3 + 12 = 15 content tokens in two claims, the first supported, the second not -> 0.5 (bin 11-20)
    r = _length_case(tmp_path)
    t = r.length_table["variants"]["v"]
    assert r.length_table["bins"][:2] == ["1-10", "11-20"]
    assert t["bins"][0] == {"n": 1, "faithfulness": 1.0}
    assert t["bins"][1] == {"n": 1, "faithfulness": 0.5}
    assert "answer length (content tokens) against faithfulness" in render(r)


def test_answer_length_is_shown_in_the_html_report_as_a_table_and_a_plot(tmp_path):
    # the case above: bin 1-10 holds one answer at 1.0, bin 11-20 one at 0.5, the rest none
    from conformance.report import rag_html

    page = rag_html.render(_length_case(tmp_path))
    section = page[page.index('<section id="answer-length">'):]
    section = section[:section.index("</section>")]
    table = section[section.index('id="length-table"'):section.index("</table>")]
    cells = re.findall(r'<td class="num" data-n="(\d+)">([^<]*) <small>', table)
    assert cells == [("1", "1.000"), ("1", "0.500"), ("0", "-"), ("0", "-"), ("0", "-")]
    # the plot: one point per bin with answers; faithfulness 1 at the top of the plot area, 0.5
    # half way down it; the three empty bins have no point, so the line runs over the first two
    g = rag_html.LENGTH_PLOT
    top, bottom = g["top"], g["h"] - g["bottom"]
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="3.5" data-bin="([^"]+)"', section)
    assert [(b, float(cy)) for _, cy, b in points] == [("1-10", top), ("11-20", (top + bottom) / 2)]
    assert float(points[0][0]) < float(points[1][0])
    assert len(re.findall(r"<polyline ", section)) == 1
    assert '<a href="#answer-length">' in page


def _gold4(tmp_path):
    return write_jsonl(tmp_path / "g.jsonl", [
        {"qid": f"q{i}", "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": "Vardried"}
        for i in range(1, 5)])


def test_evaluate_pipeline_runs_a_worker_pool_and_records_each_failure(tmp_path):
    gold = _gold4(tmp_path)
    threads = set()
    calls = []
    lock = threading.Lock()

    def pipeline(question):
        with lock:
            calls.append(question)
            n = len(calls)
            threads.add(threading.get_ident())
        if n == 2:
            raise RuntimeError("the generator timed out")
        if n == 3:
            return "not a mapping"
        return {"retrieved": [{"doc_id": "d1", "text": PASSAGE}], "answer": "Quindal is twinned with Vardried."}

    r = evaluate_pipeline(pipeline, gold, [1], workers=2, resamples=20)
    assert len(calls) == 4  # the run went on past the failures
    d = r.variants[0].diagnoses.diagnosis
    assert sorted(d) == ["error", "error", "ok", "ok"]
    errors = r.variants[0].outputs.errors
    assert len(errors) == 2 and any("RuntimeError: the generator timed out" in e for e in errors.values())
    # correctness: two right, two failures -> 2/4, even with missing="skip"
    assert r.table["all"]["pipeline"]["correctness"].interval.estimate == 0.5
    r = evaluate_pipeline(_failing_every_other(), gold, [1], workers=1, resamples=20, missing="skip")
    assert r.table["all"]["pipeline"]["correctness"].interval.estimate == 0.5


def _failing_every_other():
    state = {"n": 0}

    def pipeline(question):
        state["n"] += 1
        if state["n"] % 2 == 0:
            raise ValueError("boom")
        return {"retrieved": [{"doc_id": "d1", "text": PASSAGE}], "answer": "Vardried."}

    return pipeline


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "conformance.cli", "rag", *args], capture_output=True, text=True,
                          timeout=300)


def test_fail_under_exits_4_naming_each_miss_and_0_when_met(tmp_path):
    gold = _gold4(tmp_path)
    # correctness: q1, q2 right, q3, q4 wrong -> 0.5
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "Vardried."), _out("q2", "Vardried."),
                                             _out("q3", "Ostrand."), _out("q4", "Ostrand.")])
    base = ["--qrels", gold, "--variant", f"v={out}", "--bootstrap", "20", "--quiet"]
    r = _cli(*base, "--fail-under", "correctness=0.8", "--fail-under", "P@1=0.5")
    assert r.returncode == 4, r.stderr
    assert "fail-under: variant v: correctness 0.5000 < 0.8" in r.stderr
    assert "P@1" not in r.stderr  # P@1 = 1.0 meets 0.5
    r = _cli(*base, "--fail-under", "correctness=0.5")
    assert r.returncode == 0, r.stderr
    r = _cli(*base, "--fail-under", "nonsense=1")
    assert r.returncode == 2 and "no metric 'nonsense'" in r.stderr


def test_judge_repeat_reports_the_self_consistency_of_one_judge(tmp_path):
    # the overlap judge asked twice gives the same verdicts: agreement 1.0 over the 2 claims
    gold = write_jsonl(tmp_path / "g.jsonl", [
        {"qid": q, "query": QUESTION, "gold_doc_ids": ["d1"], "gold_answer_substring": "Vardried"} for q in ("q1", "q2")])
    out = write_jsonl(tmp_path / "o.jsonl", [_out("q1", "Quindal is twinned with Vardried."),
                                             _out("q2", "Quindal is twinned with Ostrand.")])
    r = evaluate_variants(gold, {"v": out}, [1], resamples=20, judge_repeat=2)
    a = r.judge_agreement
    assert a["claims"] == 2 and a["verdict_agreement"] == 1.0
    assert r.compare_judge["name"] == "overlap (second run)"
