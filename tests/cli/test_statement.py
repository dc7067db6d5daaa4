"""``conformance eval --statement`` and the tie warning (issue 16.3), on the bundled example
(3 queries, graded labels, a tie)."""

from __future__ import annotations

import importlib.metadata
import json

from click.testing import CliRunner

from conformance.cli import main


def _eval(*args):
    result = CliRunner().invoke(main, ["eval", "--example", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout, result.stderr


def _mean(measure: str, *settings: str) -> float:
    out, _ = _eval("-m", measure, "--format", "json", "--quiet", *[a for s in settings for a in ("--set", s)])
    return json.loads(out)["metrics"][measure]


def test_one_sentence_per_measure_naming_the_tool_and_version():
    out, _ = _eval("-m", "nDCG@10,P@10", "--statement")
    lines = out.rstrip("\n").split("\n")
    version = importlib.metadata.version("pytrec-eval-terrier")
    assert lines[-2].startswith(f"nDCG@10 as computed by trec_eval (pytrec-eval-terrier {version}): ")
    assert lines[-1].startswith(f"P@10 as computed by trec_eval (pytrec-eval-terrier {version}): ")
    assert lines[-3] == "" and "linear gain" in lines[-2] and "gain" not in lines[-1]
    assert lines[-2].endswith("; 1 of 3 queries have tied scores that change the value.")


def test_the_axes_named_are_those_that_change_the_value():
    out, _ = _eval("-m", "nDCG@10,P@10", "--statement", "--format", "json", "--quiet")
    statements = json.loads(out)["statements"]
    ndcg, p10 = statements["nDCG@10"], statements["P@10"]
    # exponential gain changes nDCG@10 here (labels 2 exist) and cannot change P@10
    assert ndcg["changing"]["gain"] == "linear" and "gain" not in p10["changing"]
    assert _mean("nDCG@10", "gain=exponential") != _mean("nDCG@10")
    # each axis left out of P@10's sentence: its other values give the same P@10
    assert "discount" not in p10["changing"] and _mean("P@10", "discount=jarvelin") == _mean("P@10")
    assert set(ndcg["changing"]).isdisjoint(ndcg["unchanged"])


def test_the_tied_queries_are_those_whose_range_is_not_one_value():
    out, _ = _eval("-m", "RR", "--statement", "--format", "json", "--quiet")
    tied = json.loads(out)["statements"]["RR"]["tied_queries"]
    out, _ = _eval("-m", "RR", "--set", "ties=unspecified", "--per-query", "--format", "json", "--quiet")
    ranges = [v["RR"] for v in json.loads(out)["per_query"].values()]
    assert tied == sum(lo != hi for lo, hi in ranges) == 1


def test_eval_warns_when_tied_scores_change_a_value():
    _, stderr = _eval("-m", "RR,P@10")
    warnings = [line for line in stderr.splitlines() if "tied scores" in line]
    assert warnings == ["conformance: warning: RR: 1 of 3 queries have tied scores whose order changes "
                        "the value (ties=docid_desc decides it; --set ties=unspecified gives each range)"]
    _, stderr = _eval("-m", "RR", "--quiet")
    assert stderr == ""
    _, stderr = _eval("-m", "RR", "--set", "ties=unspecified")
    assert "tied scores" not in stderr  # the range already says it


def test_json_without_statement_has_no_statements_key():
    out, _ = _eval("--format", "json", "--quiet")
    assert "statements" not in json.loads(out)
