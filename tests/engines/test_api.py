"""The public API (``conformance/__init__.py``, ``conformance.api``): its README examples run
as written, its docstring examples hold, and its results are the hand-computed values.

Expected values are computed by hand below (the README's comments show the arithmetic).
"""

from __future__ import annotations

import doctest
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance import api, profiles

ROOT = Path(__file__).resolve().parents[2]


def _readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_has_python_examples():
    assert _readme_blocks(), "README.md has no ```python block to run"


@pytest.mark.parametrize("index", range(len(_readme_blocks())))
def test_readme_python_examples_run(index, tmp_path):
    # each block in a fresh interpreter, from an empty folder, as a reader would paste it
    code = _readme_blocks()[index]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("module", [api, profiles], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, verbose=False)
    assert tried > 0 and failures == 0


def test_import_conformance_loads_only_what_it_is_asked_for():
    code = ("import sys, conformance\n"
            "assert 'conformance.api' not in sys.modules and 'numpy' not in sys.modules\n"
            "conformance.evaluate\n"
            "assert 'conformance.api' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_public_name_resolves():
    for name in conformance.__all__:
        assert getattr(conformance, name) is not None
    with pytest.raises(AttributeError):
        conformance.no_such_name  # noqa: B018


QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d4": 1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}, "q2": {"d4": 0.5, "d5": 0.7}}


def test_evaluate_by_hand():
    r = conformance.evaluate(QRELS, RUN, ["nDCG@10", "AP"], profile="trec_eval")
    # q1: DCG 2/1 + 0 + 1/log2(4) = 2.5, ideal 2 + 1/log2(3); q2: d4 at rank 2: 1/log2(3)
    q1 = 2.5 / (2 + 1 / math.log2(3))
    q2 = 1 / math.log2(3)
    assert r.per_query["nDCG@10"] == pytest.approx({"q1": q1, "q2": q2}, abs=1e-15)
    assert r.mean["nDCG@10"] == pytest.approx((q1 + q2) / 2, abs=1e-15)
    assert r.mean["AP"] == pytest.approx(((1 + 2 / 3) / 2 + 0.5) / 2, abs=1e-15)
    assert r.conventions["AP"] == conformance.profile("trec_eval", "AP")
    assert r.queries == ["q1", "q2"]


def test_evaluate_overrides_and_names_that_fix_axes():
    # P(rel=2)@3: only d1 (label 2) is relevant in q1; q2 has no label >= 2: empty, scores 0
    r = conformance.evaluate(QRELS, RUN, "P(rel=2)@3,P@3", k_beyond_list="min_k_n")
    assert r.mean["P(rel=2)@3"] == pytest.approx((1 / 3 + 0) / 2)
    # P@3 over min(k, n): q1 2/3, q2 1/2
    assert r.mean["P@3"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert r.conventions["P@3"].k_beyond_list == "min_k_n"
    with pytest.raises(conformance.ConformanceError, match="unknown axis"):
        conformance.evaluate(QRELS, RUN, "P@3", no_such_axis=1)


def test_a_range_is_never_read_as_one_number():
    r = conformance.evaluate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1.0, "b": 1.0}}, "RR,P@1",
                             ties="unspecified")
    assert (r.low["RR"], r.high["RR"]) == (0.5, 1.0)
    assert (r.low["P@1"], r.high["P@1"]) == (0.0, 1.0)
    with pytest.raises(conformance.ConformanceError, match="range"):
        r.mean
    with pytest.raises(conformance.ConformanceError, match="range"):
        r.per_query
    frame = r.to_frame()
    assert list(frame.columns) == ["measure", "qid", "low", "high"]


def test_to_frame_holds_every_value():
    r = conformance.evaluate(QRELS, RUN, "P@2")
    frame = r.to_frame()
    assert list(frame.columns) == ["measure", "qid", "value"]
    assert len(frame) == 3  # two queries and the mean
    assert frame[frame.qid.isna()].value.tolist() == [0.5]


def test_profile_is_per_measure_and_every_entry_has_one():
    assert conformance.profile("torchmetrics", "AP").nonpositive_scores == "not_relevant"
    assert conformance.profile("torchmetrics", "nDCG@10").nonpositive_scores == "rank"
    assert conformance.profile("trec_eval10", "AP").score_precision == "float64"
    for e in conformance.entries():
        assert isinstance(conformance.profile(e.name, "nDCG@10"), conformance.Conventions)
    with pytest.raises(conformance.ConformanceError, match="known profiles are"):
        conformance.profile("trec-eval", "AP")


def test_compare_and_check_paper_run_the_libraries(tmp_path):
    result = conformance.compare(QRELS, RUN, "nDCG@10,AP", libs="trec_eval,sklearn")
    assert result.summary["unexplained"] == 0
    assert {c.metric for c in result.comparisons} == {"nDCG@10", "AP"}
    answer = conformance.check_paper(QRELS, RUN, "AP=0.6667", libs="trec_eval", live=True)
    assert "reproducible" in answer.verdict and "trec_eval" in answer.verdict


def test_results_print_as_the_tables_the_commands_print():
    """Issue 25.3: ``print(conformance.compare(...))`` and its repr are the answer ``conformance
    run`` prints for the same files (the command run as a real process); an ``evaluate``
    result prints one line per measure with its hand-computed value."""
    import os

    from bundled_example import QRELS as qrels_file, RUN as run_file

    result = conformance.compare(qrels_file, run_file, "nDCG@10,AP", libs="trec_eval,sklearn",
                                 name=Path(run_file).name)
    text = str(result)
    assert repr(result) == text
    assert len(text) < 3000 and "Comparison(" not in text
    cli = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--qrels", qrels_file,
                          "--run", run_file, "-m", "nDCG@10,AP", "--libs", "trec_eval,sklearn"],
                         capture_output=True, text=True, cwd=str(ROOT),
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == text + "\n"
    assert text.startswith("nDCG@10 on run.txt: ")
    ev = conformance.evaluate({"q1": {"a": 2, "b": 0, "c": 1}}, {"q1": {"a": 0.9, "b": 0.8, "c": 0.1}},
                              "P@2,RR")
    assert repr(ev) == str(ev) == ("measure             value  queries\n"
                                   "P@2                0.5000  1\n"
                                   "RR                 1.0000  1")
    ranged = conformance.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 1.0}}, "RR",
                                  ties="unspecified")
    assert str(ranged).splitlines()[1].split() == ["RR", "0.5000", "to", "1.0000", "1"]


def test_the_evaluator_gives_what_evaluate_gives_for_each_run():
    # one qrels, read once; three runs, each as conformance.evaluate evaluates it alone
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1}}
    runs = [{"q1": {"a": 0.9, "b": 0.8, "c": 0.1}, "q2": {"d": 0.5, "e": 0.7}},
            {"q1": {"c": 3.0, "a": 2.0}, "q2": {"e": 1.0}},
            {"q1": {"a": 1.0, "b": 1.0}, "q3": {"x": 1.0}}]
    ev = conformance.Evaluator(qrels, "nDCG@3,AP,RR,P@2", profile="trec_eval", gain="exponential")
    for run in runs:
        got = ev.evaluate(run)
        alone = conformance.evaluate(qrels, run, "nDCG@3,AP,RR,P@2", profile="trec_eval", gain="exponential")
        assert got.mean == alone.mean and got.per_query == alone.per_query and got.counts == alone.counts
    # the hand-computed values of the first run: q2's d is at rank 2 (RR 1/2, AP 1/2)
    assert ev.evaluate(runs[0]).per_query["RR"] == {"q1": 1.0, "q2": 0.5}
    assert ev.evaluate(runs[0]).per_query["P@2"] == {"q1": 0.5, "q2": 0.5}


def test_the_evaluator_reports_a_bad_run_as_evaluate_does():
    ev = conformance.Evaluator({"q1": {"a": 1}}, "RR")
    with pytest.raises(conformance.InputError) as got:
        ev.evaluate({"q1": {"a": "high"}})
    with pytest.raises(conformance.InputError) as alone:
        conformance.evaluate({"q1": {"a": 1}}, {"q1": {"a": "high"}}, "RR")
    assert str(got.value) == str(alone.value)
