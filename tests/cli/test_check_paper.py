"""``conformance check-paper`` as a paper reader uses it (issue 16.4, 16.6): the exit status says
whether anything reproduces the values; only the libraries the verdict rests on are run live;
library errors are shown whole; ``--profile`` / ``--set`` judge the user's own conventions and
read the run under their duplicates rule.

Live libraries (trec_eval through pytrec_eval, scikit-learn, LightGBM) on the bundled example;
expected values from pytrec_eval and LightGBM themselves or by hand.
"""

from __future__ import annotations

import json
import pytest
from click.testing import CliRunner

from conformance import check_paper
from conformance.cli import main
from conformance.paper.evidence import NOT_NEEDED, TIE_ORDER
from bundled_example import QRELS, RUN, trec_eval_mean

pytestmark = [pytest.mark.requires_library(n) for n in ("trec_eval", "sklearn", "lightgbm", "ranx")]



def _trec_eval() -> float:
    return trec_eval_mean("ndcg_cut_10")


def invoke(*args):
    return CliRunner().invoke(main, ["check-paper", "--qrels", QRELS, "--run", RUN, "--quiet", *args])


def test_exit_status_says_whether_any_convention_set_reproduces_the_values():
    reproduced = invoke("--reported", f"nDCG@10={_trec_eval():.4f}", "--libs", "trec_eval")
    assert reproduced.exit_code == 0, reproduced.output
    # every entry is judged, whatever --libs names: trec_eval is among those reproducing it
    assert "trec_eval, ir_measures" in reproduced.stdout and "reproduce it" in reproduced.stdout
    # no convention set gives 0.0123 (the sweep's nearest is far above)
    missed = invoke("--reported", "nDCG@10=0.0123", "--libs", "trec_eval")
    assert missed.exit_code == 1, missed.output
    assert "is not reproducible under any convention set swept" in missed.stdout


def test_only_the_entries_the_verdict_rests_on_are_run_live():
    value = round(_trec_eval(), 4)
    result = check_paper(QRELS, RUN, f"nDCG@10={value:.4f}", libs="all")
    by_name = {e.name: e for e in result.entries}
    # reproducing by their profile: confirmed by the live library
    for name in ("trec_eval", "ir_measures"):
        assert by_name[name].decided_by == "live" and by_name[name].consistent
    # lightgbm's exponential gain gives another number: judged by its profile, and says why
    lgb = by_name["lightgbm"]
    assert lgb.decided_by == "profile" and lgb.not_run == NOT_NEEDED and not lgb.consistent
    # ranx leaves the order of tied documents unspecified, and some order reproduces the value:
    # only its own run can tell, so it is undecided (never called consistent) unless named
    rx = by_name["ranx"]
    assert rx.decided_by == "profile" and rx.not_run == TIE_ORDER and not rx.consistent
    assert rx.metrics["nDCG@10"].profile[0] < value < rx.metrics["nDCG@10"].profile[1]
    # (keras-rs shuffles tied documents at random, torchrec:exp's sort is unstable: undecided
    # too, and named in the same hint)
    assert "?   ranx" in result.render()
    assert "--libs ranx,ranx:make_comparable,keras_rs,torchrec:exp runs it" in result.render()
    from conformance.report.html import render_paper

    page = render_paper(result)
    row = page[page.index('data-entry="ranx"'):][:600]
    assert ">tie order</small>" in row and '<td class="verdict-cell">?</td>' in row
    # named by the user: run live although its profile misses, or only a tie order would do
    named = check_paper(QRELS, RUN, f"nDCG@10={value:.4f}", libs="trec_eval,lightgbm,ranx")
    decided = {e.name: e.decided_by for e in named.entries}
    assert decided["lightgbm"] == decided["ranx"] == "live"


def test_a_library_error_is_shown_whole(tmp_path):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\n")
    run.write_text("q1 Q0 a 1 1.0 r\n")  # one document: sklearn's ndcg_score refuses it
    r = CliRunner().invoke(main, ["check-paper", "--qrels", str(qrels), "--run", str(run), "--quiet",
                                  "--reported", "nDCG@10=1.0", "--libs", "sklearn"])
    assert r.exit_code == 0, r.output
    assert ("Computing NDCG is only meaningful when there is more than 1 document. Got 1 instead."
            in r.stdout)


def test_profile_and_set_judge_the_users_own_conventions(tmp_path):
    out = tmp_path / "answer.json"
    r = invoke("--reported", f"nDCG@10={_trec_eval():.4f}", "--libs", "trec_eval",
               "--profile", "lightgbm", "--json", str(out))
    assert r.exit_code == 0, r.output
    assert "your conventions (lightgbm)" in r.stdout
    own = json.loads(out.read_text())["details"]["own_conventions"]
    from conformance.io import load_qrels, load_run
    from conformance.libs import entry
    from conformance.measures import parse_measure

    m = parse_measure("nDCG@10")
    live = entry("lightgbm").evaluate(load_qrels(QRELS), load_run(RUN), [m])[m].mean
    assert own["profile"] == "lightgbm" and own["metrics"]["nDCG@10"]["low"] == pytest.approx(live, abs=1e-12)
    assert own["metrics"]["nDCG@10"]["reproduces"] is False  # lightgbm's 0.6306 is not trec_eval's


def test_set_duplicates_first_reads_a_run_listing_a_docid_twice(tmp_path):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\n")
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d1 3 1.0 r\nq1 Q0 d3 4 0.5 r\n")
    args = ["check-paper", "--qrels", str(qrels), "--run", str(run), "--quiet", "--libs", "trec_eval",
            "--reported", "AP=0.8333"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "listed twice" in refused.stderr
    read = CliRunner().invoke(main, args + ["--set", "duplicates=first"])
    # by hand: d1 (rel) at 1, d2 at 2, d3 (rel) at 3: AP = (1 + 2/3) / 2 = 0.8333
    assert read.exit_code == 0, read.output
    assert "yes AP 0.8333" in read.stdout and "yes trec_eval" in read.stdout


def test_naming_entries_in_libs_runs_them_and_keeps_every_other_entry_judged():
    """Issue 25.3: following the answer's own hint (``--libs ranx,ranx:make_comparable runs
    it``) runs those entries live; it does not narrow the table to them, so trec_eval and
    ir_measures, which reproduce the value, still do and the verdict still names them."""
    value = round(_trec_eval(), 4)
    hinted = invoke("--reported", f"nDCG@10={value:.4f}", "--libs", "ranx,ranx:make_comparable")
    assert hinted.exit_code == 0, hinted.output
    doc = check_paper(QRELS, RUN, f"nDCG@10={value:.4f}", libs="ranx,ranx:make_comparable")
    by_name = {e.name: e for e in doc.entries}
    from conformance.libs import all_entries

    assert set(by_name) == {e.name for e in all_entries()}
    assert by_name["ranx"].decided_by == by_name["ranx:make_comparable"].decided_by == "live"
    for name in ("trec_eval", "ir_measures"):
        assert by_name[name].consistent
    assert "no library entry reproduces" not in hinted.stdout
    [verdict] = [ln for ln in hinted.stdout.splitlines() if ln.startswith("verdict: ")]
    assert "trec_eval, ir_measures" in verdict and verdict.endswith("reproduce it.")
    # lightgbm's exponential gain: named by its library, run live though its profile misses
    lgb = check_paper(QRELS, RUN, f"nDCG@10={value:.4f}", libs="lightgbm")
    decided = {e.name: e.decided_by for e in lgb.entries}
    assert decided["lightgbm"] == decided["lightgbm:linear_gain"] == "live"
    assert {e.name for e in lgb.entries if e.consistent} >= {"trec_eval", "ir_measures"}


# Spark MLlib's RankingMetricsSuite ("Ranking metrics: map, ndcg", mllib/src/test/scala/org/apache/
# spark/mllib/evaluation/RankingMetricsSuite.scala): three queries, the third with no ground truth,
# which Spark scores 0 and keeps in the mean; the values are the suite's own asserted numbers
# (absTol 1e-5, so five decimals are read).
_SPARK_RUNS = {"q1": [1, 6, 2, 7, 8, 3, 9, 10, 4, 5], "q2": [4, 1, 5, 6, 2, 7, 3, 8, 9, 10],
               "q3": [1, 2, 3, 4, 5]}
_SPARK_RELEVANT = {"q1": [1, 2, 3, 4, 5], "q2": [1, 2, 3]}
_SPARK_REPORTED = {
    "P@1": 1 / 3, "P@2": 1 / 3, "P@3": 1 / 3, "P@4": 0.75 / 3, "P@5": 0.8 / 3, "P@10": 0.8 / 3,
    "P@15": 8 / 45, "AP": 0.355026, "AP@1": 0.333334, "AP@2": 0.25, "AP@3": 0.24074,
    "nDCG@3": 1 / 3, "nDCG@5": 0.328788, "nDCG@10": 0.487913, "nDCG@15": 0.487913,
    "R@1": 1 / 15, "R@2": 8 / 45, "R@3": 11 / 45, "R@4": 11 / 45, "R@5": 16 / 45, "R@10": 2 / 3,
    "R@15": 2 / 3,
}


def _spark_fixture(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"{q} 0 d{d} 1\n" for q, ds in _SPARK_RELEVANT.items() for d in ds))
    run.write_text("".join(f"{q} Q0 d{d} {i + 1} {len(ds) - i} spark\n"
                           for q, ds in _SPARK_RUNS.items() for i, d in enumerate(ds)))
    return str(qrels), str(run)


def test_spark_ranking_metrics_suite_is_reproduced_with_every_run_query_averaged(tmp_path):
    """Spark's values need query_set=run_all (the query without ground truth scored 0 and kept
    in the mean) and ap_denominator=min_k_relevant: the sweep tries every query set that can
    change the mean on this input, so it finds them."""
    qrels, run = _spark_fixture(tmp_path)
    reported = [a for name, v in _SPARK_REPORTED.items() for a in ("--reported", f"{name}={v:.6f}")]
    out = CliRunner().invoke(main, ["check-paper", "--qrels", qrels, "--run", run, "--quiet",
                                    "--no-live", "--digits", "5", *reported])
    assert out.exit_code == 0, out.output
    assert "run_all" in out.stdout
    assert "min_k_relevant" in out.stdout


# RecTools' own docstring example (rectools 0.19.0, rectools/metrics/ranking.py, the NDCG and MAP
# docstrings): four users, user 1 recommended only items it never interacted with; the values
# are the docstrings' printed per-user arrays, averaged here to the means a paper would report:
# NDCG(k=1) [0, 1, 1, 1]; NDCG(k=3) [0, 0.46927873, 0.70391809, 1]; MAP(k=1) [0, 1, 1/3, 1/3];
# MAP(k=3) [0, 1, 0.55555556, 1].
_RECTOOLS_RECO = {1: [7, 8], 2: [1, 2], 3: [1, 2, 3, 4], 4: [1, 2, 3]}
_RECTOOLS_INTERACTIONS = {1: [1, 2], 2: [1], 3: [1, 3, 4], 4: [1, 2, 3]}
_RECTOOLS_REPORTED = {"nDCG@1": 3 / 4, "nDCG@3": (0.46927873 + 0.70391809 + 1) / 4,
                      "AP@1": (1 + 2 / 3) / 4, "AP@3": (1 + 0.55555556 + 1) / 4}


def test_rectools_docstring_example_is_reproduced_by_its_k_slots_ideal(tmp_path):
    """RecTools' default NDCG divides by k ranks all counted relevant (ideal=k_slots): the sweep
    finds it, and the rectools entry's profile is the one that reproduces every value."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"u{u} 0 i{i} 1\n" for u, items in _RECTOOLS_INTERACTIONS.items()
                             for i in items))
    run.write_text("".join(f"u{u} Q0 i{i} {r + 1} {len(items) - r} rectools\n"
                           for u, items in _RECTOOLS_RECO.items() for r, i in enumerate(items)))
    reported = [a for name, v in _RECTOOLS_REPORTED.items() for a in ("--reported", f"{name}={v:.5f}")]
    out = CliRunner().invoke(main, ["check-paper", "--qrels", str(qrels), "--run", str(run),
                                    "--quiet", "--no-live", "--digits", "5", *reported])
    assert out.exit_code == 0, out.output
    assert "the ideal of k slots" in out.stdout
    assert "rectools reproduces them" in out.stdout
    row = next(line.split() for line in out.stdout.splitlines() if line.split()[1:2] == ["rectools"])
    assert row[0] == "yes"


def test_elliot_map_at_k_is_swept_as_the_mean_of_precisions(tmp_path):
    """Elliot's MAP@3 (the family MeanP@3), by hand: u1 [a, b, c], a relevant: P@1..3 = 1, 1/2,
    1/3, MeanP@3 = 11/18; u2 [d, e], e relevant: P@1..3 = 0, 1/2, 1/3 (over 3 past the list),
    5/18; u3 [f], nothing relevant. Elliot leaves u3 out: (11/18 + 5/18) / 2 = 4/9 = 0.4444,
    reproduced with empty_query=skip; 0.75, the AP@3 of u1 and u2 (1 and 1/2), is not."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("u1 0 a 1\nu1 0 b 0\nu2 0 e 1\nu3 0 f 0\n")
    run.write_text("u1 Q0 a 1 3 x\nu1 Q0 b 2 2 x\nu1 Q0 c 3 1 x\nu2 Q0 d 1 2 x\nu2 Q0 e 2 1 x\n"
                   "u3 Q0 f 1 1 x\n")

    def check(value):
        return CliRunner().invoke(main, ["check-paper", "--qrels", str(qrels), "--run", str(run),
                                         "--quiet", "--no-live", "--reported", f"MeanP@3={value}"])

    skipped = check(f"{4 / 9:.4f}")
    assert skipped.exit_code == 0, skipped.output
    assert "MeanP@3 = 0.4444 is reproducible with queries without relevant documents left out" in (
        skipped.stdout)
    average_precision = check(f"{(1 + 1 / 2) / 2:.4f}")
    assert average_precision.exit_code == 1, average_precision.output
    assert "is not reproducible under any convention set swept" in average_precision.stdout
