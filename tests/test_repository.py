"""The repository stands alone: its tests read nothing outside it.

A user's clone has only the repository. Test data lives under ``tests/data/`` (trec_eval's own
test files, with their origin in ``tests/data/trec_eval/README.md``); a test that reaches for a
folder beside the clone fails at collection in a fresh clone, so this guard fails first.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Paths that climb out of the repository: the steering folder beside a clone, or two ".." parts
# joined from a test file's folder.
_OUTSIDE = re.compile(r"\.\./shared\b|[\"']\.\.[\"']\s*,\s*[\"']\.\.[\"']")
_PARENTS = re.compile(r"parents\[(\d+)\]")


def test_no_test_reads_outside_the_repository():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        # Path(__file__).parents[depth] is the repository root: any higher index is outside it
        depth = len(path.relative_to(ROOT).parts) - 1
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OUTSIDE.search(line) or any(int(k) > depth for k in _PARENTS.findall(line)):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "tests reach outside the repository:\n" + "\n".join(offenders)


def test_trec_eval_data_is_in_the_repository():
    data = TESTS / "data" / "trec_eval"
    for name in ("qrels.test", "results.test", "results.trunc", "qrels.rel_level", "out.test",
                 "out.test.aq", "out.test.aql", "out.test.meas_params", "README.md"):
        assert (data / name).is_file(), f"tests/data/trec_eval/{name} is missing"


def test_no_test_skips_a_missing_library_silently():
    # pytest.importorskip reports a missing peer library as a skip that reads like a pass; a test
    # that calls a library declares it with the requires_library marker (conftest.py), which
    # fails unless CONFORMANCE_ALLOW_MISSING names the library
    offenders = [f"{path.relative_to(ROOT)}:{number}"
                 for path in sorted(TESTS.rglob("*.py")) if path != Path(__file__).resolve()
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if "importorskip(" in line]
    assert offenders == [], offenders


def test_the_tests_have_one_conftest():
    # pytest imports every conftest.py as the module ``conftest``: a second one takes that name
    # for the whole run, and ``from conftest import ...`` in a test reads whichever came last
    # (under xdist, test_differential found tests/infer's). Helpers for tests live in
    # tests/support, which the root conftest puts on the path.
    assert sorted(p.relative_to(ROOT).as_posix() for p in TESTS.rglob("conftest.py")) == ["tests/conftest.py"]
