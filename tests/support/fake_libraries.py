"""Test-only entries of fake libraries, for tests/libs/test_library_status.py: a module of its own
that imports little, since every worker process asked about one of these entries imports it."""

from __future__ import annotations

from conformance.libs.base import Entry, LibraryValues
from conformance.libs.trec_eval import PROFILE as TREC_PROFILE

FAKE_MODULES = {
    "conformance_fake_slow": "import time\ntime.sleep(600)\n",
    "conformance_fake_crash": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "conformance_fake_raise": "raise ImportError('libfake.so.1: cannot open shared object file')\n",
    "conformance_fake_broken_dependency": "import conformance_fake_no_such_dependency\n",
    "conformance_fake_fine": "VALUE = 1\n",
}


class FakeEntry(Entry):
    """An entry of a fake library: P@k by hand on the corpus's good pair (q1 hit, q2 miss)."""

    description = "test-only entry of a fake library"

    def __init__(self, name: str, module: str, library: str | None = None) -> None:
        self.name, self.module = name, module
        self.library = library or name
        self.distribution = f"{name}-dist"

    def supports(self, measure) -> bool:
        return measure.family == "P" and measure.cutoff is not None

    def profile(self, measure):
        return TREC_PROFILE

    def default_profile(self):
        return TREC_PROFILE

    def _evaluate(self, qrels, run, measure):
        return LibraryValues(per_query={"q1": 1.0, "q2": 0.0}, mean=0.5)


def fakes() -> list[FakeEntry]:
    return [FakeEntry("fake_slow", "conformance_fake_slow"),
            FakeEntry("fake_crash", "conformance_fake_crash"),
            FakeEntry("fake_raise", "conformance_fake_raise"),
            FakeEntry("fake_dependency", "conformance_fake_broken_dependency"),
            FakeEntry("fake_absent", "conformance_fake_absent"),
            FakeEntry("fake_fine", "conformance_fake_fine")]
