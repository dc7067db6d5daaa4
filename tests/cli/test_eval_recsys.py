"""``--exclude-seen`` on eval, run and check-paper, and the shipped interactions example
(conformance/examples/recsys_*), on the command line. Expected values are worked out by hand.

The example (ratings 1-5; relevant: rating >= 4 under --set relevance_threshold=4):

  user  training (seen)      test (rating)            top 5 (rank order)
  1     101, 102, 103        104 (5) 105 (2) 106 (4)  101 104 107 105 106
  2     104, 108             101 (4) 109 (3)          108 109 101 102 103
  3     105, 106             102 (5) 110 (4) 107 (1)  107 110 106 102 103

With the seen items removed: user 1 gets 104* 107 105 106*, user 2 109 101* 102 103, user 3
107 110* 102* 103 (* relevant).
  P@5:  2/5, 1/5, 2/5                    -> mean 1/3
  AP@5: (1 + 2/4)/2 = 0.75; (1/2)/1 = 0.5; (1/2 + 2/3)/2 = 0.58333 -> mean 0.61111
  RR:   1, 1/2, 1/2                      -> mean 0.66667
  nDCG@5 (binary gain): (1 + 1/log2 5)/(1 + 1/log2 3) = 0.87722; (1/log2 3)/1 = 0.63093;
        (1/log2 3 + 1/2)/(1 + 1/log2 3) = 0.69343 -> mean 0.73386
Without the removal, user 1's 104 and 106 sit at ranks 2 and 5: AP@5 (1/2 + 2/5)/2 = 0.45.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import conformance
from conformance.cli import main

EX = Path(conformance.__file__).parent / "examples"
TRAIN, TEST = str(EX / "recsys_train.csv"), str(EX / "recsys_test.csv")
RECS, TOP_K = str(EX / "recsys_recommendations.csv"), str(EX / "recsys_top_k.parquet")
MEASURES = "nDCG@5,AP@5,P@5,RR"
R3 = 1 / math.log2(3)
WANT = {
    "P@5": {"1": 0.4, "2": 0.2, "3": 0.4},
    "AP@5": {"1": 0.75, "2": 0.5, "3": (1 / 2 + 2 / 3) / 2},
    "RR": {"1": 1.0, "2": 0.5, "3": 0.5},
    "nDCG@5": {"1": (1 + 1 / math.log2(5)) / (1 + R3), "2": R3, "3": (R3 + 0.5) / (1 + R3)},
}


def invoke(*args: str):
    return CliRunner(catch_exceptions=False).invoke(main, list(args))


def assert_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("conformance: error: ") and "Traceback" not in result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.mark.parametrize("run", [RECS, TOP_K])
def test_the_shipped_example_with_seen_items_removed(run):
    r = invoke("eval", "--qrels", TEST, "--run", run, "--exclude-seen", TRAIN, "-m", MEASURES,
               "--set", "relevance_threshold=4", "--set", "gain=binary", "--per-query", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    for m, per_user in WANT.items():
        for u, v in per_user.items():
            assert doc["per_query"][u][m] == pytest.approx(v, abs=1e-12), (m, u)
        assert doc["metrics"][m] == pytest.approx(sum(per_user.values()) / 3, abs=1e-12)
    counts = doc["counts"]["run"]
    assert counts["ignored_reasons"] == {"seen in training": 3} and counts["used"] == 12
    # 7 training pairs of 3 users; one seen item in each user's top 5
    assert counts["seen"] == {"source": TRAIN, "pairs": 7, "users": 3, "removed": 3, "users_with_removed": 3}


def test_the_stderr_line_says_what_was_removed():
    r = invoke("eval", "--qrels", TEST, "--run", RECS, "--exclude-seen", TRAIN, "-m", "AP@5")
    assert r.exit_code == 0
    assert (f"conformance: --exclude-seen {TRAIN}: 7 training pairs of 3 users; 3 recommended items "
            "removed from 3 users of the run") in r.stderr.splitlines()
    assert "15 rows read, 12 used, 3 ignored (seen in training: 3)" in r.stderr
    # asked for, so not warned about again: the one warning is the rank column's
    warnings = [ln for ln in r.stderr.splitlines() if "warning:" in ln]
    assert len(warnings) == 1 and "the rank column 'rank' is the order" in warnings[0], warnings


def test_without_the_option_nothing_is_removed():
    r = invoke("eval", "--qrels", TEST, "--run", RECS, "-m", "AP@5", "--set", "relevance_threshold=4",
               "--per-query", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["per_query"]["1"]["AP@5"] == pytest.approx(0.45)
    assert "seen" not in doc["counts"]["run"]


def test_the_list_column_is_said_on_stderr():
    r = invoke("eval", "--qrels", TEST, "--run", TOP_K, "-m", "P@5")
    assert "the list column 'prediction' holds each user's ranking" in r.stderr


@pytest.mark.parametrize("text, fragments", [
    ("item_id,rating\n101,5\n", ["train.csv: no query id column", "the columns are 'item_id', 'rating'"]),
    ("user_id,item_id\n1,101\n2\n", ["train.csv:3: expected 2 comma-separated fields"]),
])
def test_a_bad_training_file_is_one_line(tmp_path, text, fragments):
    (tmp_path / "train.csv").write_text(text)
    r = invoke("eval", "--qrels", TEST, "--run", RECS, "--exclude-seen", str(tmp_path / "train.csv"))
    assert_user_error(r, *fragments)
    assert r.stdout == ""


def test_a_missing_training_file_is_one_line(tmp_path):
    assert_user_error(invoke("eval", "--qrels", TEST, "--run", RECS, "--exclude-seen",
                             str(tmp_path / "nope.csv")), "nope.csv: no such file")


def test_spark_and_the_corpus_refuse_it():
    assert_user_error(invoke("eval", "--engine", "spark", "--qrels", TEST, "--run", RECS, "--exclude-seen",
                             TRAIN), "--exclude-seen is the local engine's")
    assert_user_error(invoke("run", "--exclude-seen", TRAIN), "give it with --qrels and --run")


def test_run_writes_no_output_over_the_training_file(tmp_path):
    copy = tmp_path / "train.csv"
    copy.write_text(Path(TRAIN).read_text())
    r = invoke("run", "--libs", "trec_eval", "--qrels", TEST, "--run", RECS, "--exclude-seen", str(copy),
               "--json", str(copy))
    assert_user_error(r, "that is the input")
    assert copy.read_text() == Path(TRAIN).read_text()


def test_run_gives_every_entry_the_masked_lists():
    # trec_eval's own threshold is 1: every test item is relevant. Masked lists:
    #   user 1: 104* 107 105* 106* (R 3): (1 + 2/3 + 3/4)/3 = 0.80556
    #   user 2: 109* 101* (R 2): 1;  user 3: 107* 110* 102* (R 3): 1  -> mean 0.93519
    r = invoke("run", "--libs", "trec_eval", "--qrels", TEST, "--run", RECS, "--exclude-seen", TRAIN,
               "-m", "AP@5", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert "3 recommended items removed" in r.stderr
    doc = json.loads(r.stdout)
    (row,) = [t for t in doc["table"] if t["metric"] == "AP@5"]
    means = [e["mean"] for c in row["classes"] for e in c["entries"]]
    assert means == [pytest.approx(((1 + 2 / 3 + 3 / 4) / 3 + 1 + 1) / 3)]


def test_check_paper_reproduces_a_value_measured_with_seen_items_removed():
    """AP@5 = 0.6111 is the mean above (0.75, 0.5, 0.58333 -> 0.61111) with the seen items removed
    and relevance from rating 4: check-paper with --exclude-seen finds threshold 4 reproducing it;
    without the option the users' AP@5 are 0.45, 1/3 (101 at rank 3) and 0.5 (110 at rank 2, 102
    at rank 4): mean 0.42778, and 4 does not."""
    args = ["check-paper", "--qrels", TEST, "--run", RECS, "--reported", "AP@5=0.6111", "--no-live"]
    r = invoke(*args, "--exclude-seen", TRAIN)
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert (f"conformance: --exclude-seen {TRAIN}: 7 training pairs of 3 users; 3 recommended items "
            "removed from 3 users of the run") in r.stderr.splitlines()
    assert "relevance from label 4" in r.stdout, r.stdout
    plain = invoke(*args)
    assert "relevance from label 4" not in plain.stdout, plain.stdout


def test_check_paper_refuses_exclude_seen_naming_an_output():
    r = invoke("check-paper", "--qrels", TEST, "--run", RECS, "--reported", "AP@5=0.6111",
               "--no-live", "--exclude-seen", TRAIN, "--json", TRAIN)
    assert_user_error(r, "--json")
