"""Shared test setup: a library that is not installed FAILS the tests that need it; the
helpers of ``tests/support/`` are importable from every test folder.

A test module that calls a real library declares it::

    pytestmark = pytest.mark.requires_library("lightgbm")   # an entry name of conformance.libs

Before each of its tests, the entry's library is imported; when that fails the test fails,
unless the library or entry is named (comma separated) in ``CONFORMANCE_ALLOW_MISSING``, e.g.
``CONFORMANCE_ALLOW_MISSING=torchmetrics``: then the test is reported as skipped, never as
passed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The tests mirror the package (tests/reference/, tests/io/, tests/libs/, ...); their shared
# helpers and generators live in tests/support/, importable by name from every folder
SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))


def allowed_missing() -> set[str]:
    return {s.strip() for s in os.environ.get("CONFORMANCE_ALLOW_MISSING", "").split(",")
            if s.strip()}


def require_available(e) -> None:
    """Fail (or, when allowed, skip) unless entry ``e``'s library imports."""
    if e.available():
        return
    if e.library in allowed_missing() or e.name in allowed_missing():
        pytest.skip(f"{e.name}: library {e.module!r} is not installed (allowed by "
                    "CONFORMANCE_ALLOW_MISSING)")
    pytest.fail(f"{e.name}: library {e.module!r} is {e.import_status().describe()}; install it, "
                f"or set CONFORMANCE_ALLOW_MISSING={e.library} to report it as skipped")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "requires_library(name): the test calls the library of entry `name`; it "
        "fails when the library is missing, unless CONFORMANCE_ALLOW_MISSING names it")


def pytest_runtest_setup(item) -> None:
    for mark in item.iter_markers("requires_library"):
        from conformance.libs import entry

        require_available(entry(mark.args[0]))


@pytest.fixture(scope="session")
def corpus_result():
    """What ``conformance run --libs all`` computes: every entry that can run here, over the
    whole bundled corpus. Computed once for the session (the HTML report's tests and the text
    answer's read it); a test that needs every entry declares them (``requires_library``)."""
    from conformance.io.cases import load_cases
    from conformance.libs import all_entries
    from conformance.runner import Subject, run_entries

    subjects = [Subject(c.name, c.qrels, c.run, c.measures, c.description) for c in load_cases()]
    return run_entries([e for e in all_entries() if e.available()], subjects)
