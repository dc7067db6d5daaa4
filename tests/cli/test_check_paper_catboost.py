"""``conformance check-paper --no-live`` on CatBoost's own unit test: the values it asserts are
reproduced, and the verdict names the entry whose declared profile gives them (no library is
run: the entries are judged by their profiles).
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from conformance.cli import main

# CatBoost's catboost/libs/metrics/ut/dcg_ut.cpp, TestNdcgDetails and TestDcgDetails (1.2.x): one
# group, approx {1.0, 1.0, 2.0}, target {1.0, 0.0, 2.0}; the two documents of score 1 tie, and
# CatBoost ranks the label 0 before the label 1. Asserted: CalcNdcg Base 0.9502344168, Exp
# 0.9639404333 (UNIT_ASSERT_DOUBLES_EQUAL, 1e-5); CalcDcg Base 2.5, Exp 3.5.
_APPROX = [1.0, 1.0, 2.0]
_TARGET = [1, 0, 2]


def _check(tmp_path, reported: dict[str, str]) -> str:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text("".join(f"q1 0 d{i} {t}\n" for i, t in enumerate(_TARGET)))
    r.write_text("".join(f"q1 Q0 d{i} 0 {s} catboost\n" for i, s in enumerate(_APPROX)))
    args = [a for name, v in reported.items() for a in ("--reported", f"{name}={v}")]
    out = CliRunner().invoke(main, ["check-paper", "--qrels", str(q), "--run", str(r), "--quiet",
                                    "--no-live", "--digits", "5", *args])
    assert out.exit_code == 0, out.output
    return out.stdout


def _row(stdout: str, name: str) -> list[str]:
    return next(line.split() for line in stdout.splitlines() if line.split()[1:2] == [name])


def _verdict_names(stdout: str, name: str) -> bool:
    verdict = next(line for line in stdout.splitlines() if line.startswith("verdict:"))
    return re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", verdict) is not None


@pytest.mark.parametrize("entry, other, reported", [
    ("catboost", "catboost:exp", {"nDCG": "0.95023", "DCG": "2.50000"}),
    ("catboost:exp", "catboost", {"nDCG": "0.96394", "DCG": "3.50000"}),
])
def test_catboost_dcg_unit_test_is_reproduced_by_its_entry(tmp_path, entry, other, reported):
    stdout = _check(tmp_path, reported)
    assert _verdict_names(stdout, entry)
    assert _row(stdout, entry)[0] == "yes"
    assert _row(stdout, other)[0] == "no"
    # the tie decides the value: ranked label 1 first, nDCG would be 1
    assert "pessimistic" in stdout
