"""Ids that reach a terminal or a table (issue 15.7): control characters never reach the
terminal raw, and a query named ``all`` is never read as the aggregate rows.

The rule (``conformance.cli.common.shown``): an id that holds a control or format character,
starts with a quote or is ``all`` is printed as a quoted literal with those characters escaped
(``'q\\x1b[31m'``, ``'a\\rb'``, ``'all'``); every other id as it is. The aggregate rows keep
trec_eval's bare ``all``. A quoted id cannot be forged by another id: a quote at the start of
an id is itself escaped.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from conformance.cli import main
from conformance.cli.common import shown

# qid -> judged documents; every run ranks d1 (score 2) above d2 (score 1)
QRELS = {
    "q\x1b[31mred": {"d1": 1, "d2": 0},
    "a\rb": {"d1": 1},
    "t\tx": {"d2": 1},
    "n\nall": {"d1": 1},
    "all": {"d1": 1, "d2": 1},
    "'all'": {"d1": 1},
    "rtl\u202eoverride": {"d1": 1},
    "plain": {"d1": 1},
}


@pytest.fixture()
def files(tmp_path):
    q, r = tmp_path / "q.json", tmp_path / "r.json"
    q.write_text(json.dumps(QRELS))
    r.write_text(json.dumps({k: {"d1": 2.0, "d2": 1.0} for k in QRELS}))
    return str(q), str(r)


def _eval(files, *extra):
    result = CliRunner().invoke(main, ["eval", "--qrels", files[0], "--run", files[1], "-m", "P@1,RR",
                                       "--per-query", *extra])
    assert result.exit_code == 0, result.stderr
    return result.stdout, result.stderr


def test_shown_escapes_control_and_format_characters_and_quotes_all():
    assert shown("plain") == "plain"
    assert shown("q\x1b[31mred") == "'q\\x1b[31mred'"
    assert shown("a\rb") == "'a\\rb'"
    assert shown("t\tx") == "'t\\tx'"
    assert shown("n\nall") == "'n\\nall'"
    assert shown("rtl\u202eoverride") == "'rtl\\u202eoverride'"
    assert shown("all") == "'all'"
    assert shown("'all'") == "'\\'all\\''"  # cannot pass for the query named all
    assert shown("back\\slash\x00") == "'back\\\\slash\\x00'"
    assert shown("ALL") == "ALL" and shown("all ") == "all "


def test_the_table_holds_no_control_character_and_one_all_row_per_measure(files):
    stdout, stderr = _eval(files)
    lines = stdout.split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    # 8 queries x 2 measures, then the 2 aggregate rows: the newline in "n\nall" made no row
    assert len(lines) == 8 * 2 + 2
    for line in lines:
        assert line.count("\t") == 2, repr(line)  # a tab in an id would shift the columns
        assert not any(ord(ch) < 32 and ch != "\t" for ch in line), repr(line)
        assert "\u202e" not in line
    ids = [line.split("\t")[1] for line in lines]
    assert ids.count("all") == 2 and ids[-2:] == ["all", "all"]
    assert ids.count("'all'") == 2 and ids.count("'\\'all\\''") == 2
    rows = {(line.split("\t")[0].strip(), line.split("\t")[1]): line.split("\t")[2] for line in lines}
    # t\tx judges only d2, ranked second: P@1 = 0, RR = 1/2
    assert rows[("P@1", "'t\\tx'")] == "0.0000" and rows[("RR", "'t\\tx'")] == "0.5000"
    # means over 8 queries: P@1 = 7/8 = 0.875, RR = (7 + 0.5)/8 = 0.9375
    assert rows[("P@1", "all")] == "0.8750" and rows[("RR", "all")] == "0.9375"
    assert "a query is named 'all'" in stderr


def test_csv_shows_the_same_ids(files):
    stdout, _ = _eval(files, "--format", "csv", "--quiet")
    rows = list(csv.reader(io.StringIO(stdout)))
    assert rows[0] == ["measure", "qid", "value"]
    ids = [r[1] for r in rows[1:]]
    assert ids.count("all") == 2 and "'all'" in ids and "'q\\x1b[31mred'" in ids
    assert not any(ch in stdout for ch in "\x1b\r\u202e")


def test_json_keeps_the_ids_as_they_are(files):
    """JSON quotes every id itself: the per-query keys are the ids read, unescaped."""
    stdout, _ = _eval(files, "--format", "json", "--quiet")
    doc = json.loads(stdout)
    assert set(doc["per_query"]) == set(QRELS)
    assert doc["per_query"]["all"]["P@1"] == 1.0 and doc["metrics"]["P@1"] == 0.875
