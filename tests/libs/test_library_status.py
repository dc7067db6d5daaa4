"""What a library's status says: available, not installed (with the pip command), failed to
import (the error), crashed while importing (the signal), timed out while importing (the
limit); and the adapter registry, which fails loudly on an adapter module it cannot import.

The libraries that misbehave are this test's own fixture: small modules written to a temporary
folder on the path (the workers find it through PYTHONPATH) that sleep, crash or raise when
imported. They are asked through real worker processes, and through the real command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from conformance import libs as L
from conformance.libs.base import Entry, ImportStatus, Support, install_command
from conformance.runner import isolate, statuses
from fake_libraries import FAKE_MODULES, FakeEntry, fakes as _fakes

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
CORPUS = HERE / "adversarial"
# seconds a worker may take to import a library: ample for one starting on a loaded machine,
# far below the fake slow import (600 s)
LIMIT = 10

@pytest.fixture
def fake_site(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "fake_site"
    folder.mkdir()
    for name, text in FAKE_MODULES.items():
        (folder / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_statuses_asked_of_workers_say_what_happened(fake_site):
    started = time.monotonic()
    got = statuses(isolate(_fakes(), timeout=LIMIT))
    took = time.monotonic() - started
    assert got["fake_slow"] == ImportStatus("import_timed_out", f"{LIMIT:g}")
    assert got["fake_crash"] == ImportStatus("import_crashed", "killed by signal SIGSEGV")
    assert got["fake_raise"] == ImportStatus(
        "import_failed", "ImportError: libfake.so.1: cannot open shared object file")
    # a library that is there but lacks a dependency is broken, not absent
    assert got["fake_dependency"] == ImportStatus(
        "import_failed", "ModuleNotFoundError: No module named 'conformance_fake_no_such_dependency'")
    assert got["fake_absent"] == ImportStatus("not_installed", "pip install fake_absent-dist")
    assert got["fake_fine"] == ImportStatus("available")
    assert took < 3 * LIMIT, "the libraries are asked at the same time, each with its own limit"
    assert got["fake_slow"].describe() == f"timed out while importing (no answer within {LIMIT:g} s)"
    assert got["fake_crash"].describe() == "crashed while importing (killed by signal SIGSEGV)"
    assert got["fake_absent"].describe() == "not installed (pip install fake_absent-dist adds it)"
    assert got["fake_raise"].describe().startswith("failed to import: ImportError: libfake.so.1")


def test_in_process_status_of_an_absent_or_broken_library(fake_site):
    by_name = {e.name: e for e in _fakes()}
    assert by_name["fake_absent"].import_status().state == "not_installed"
    assert by_name["fake_raise"].import_status().state == "import_failed"
    assert by_name["fake_dependency"].import_status().state == "import_failed"
    assert by_name["fake_fine"].import_status().available and by_name["fake_fine"].available()
    assert not by_name["fake_absent"].available()


def test_the_pip_command_names_the_extra_the_package_declares():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "ranx" in extras
    # run from this checkout: the editable install of the extra
    assert install_command("ranx", "ranx") == 'pip install -e ".[ranx]"'
    # no extra of that name: the library's own distribution
    assert install_command("fake_absent", "fake-absent-dist") == "pip install fake-absent-dist"
    # a real entry whose library is missing names its extra (the library's name, normalised)
    absent = FakeEntry("ranx_absent", "conformance_fake_absent", library="ranx")
    assert absent.import_status() == ImportStatus("not_installed", 'pip install -e ".[ranx]"')
    absent = FakeEntry("trec_eval_absent", "conformance_fake_absent", library="trec_eval")
    assert absent.import_status() == ImportStatus("not_installed", 'pip install -e ".[trec-eval]"')


_SHADOW = "raise ModuleNotFoundError(\"No module named 'mteb'\", name='mteb')\n"


def test_libs_prints_the_extra_of_an_install_command(tmp_path):
    # rich read '[mteb]' of 'pip install -e ".[mteb]"' as a style tag and printed
    # 'pip install -e "."'. A module named mteb that is not there, first on every worker's path:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "mteb.py").write_text(_SHADOW)
    env = dict(os.environ, COLUMNS="200",
               PYTHONPATH=os.pathsep.join([str(shadow), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "libs", "--lib-timeout", "120"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("\nprofiles", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("│ mteb ")]
    assert rows and all('pip install -e ".[mteb]"' in line for line in rows), rows
    assert 'mteb: not installed (pip install -e ".[mteb]" adds it)' in done.stdout.splitlines()


_LAUNCHER = """
import sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {fakes!r})
import conformance.libs as L
import fake_libraries

real = L.all_entries
L.all_entries = lambda: real() + fake_libraries.fakes()
from conformance.cli import console
console()
"""


def _cli(fakes: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = _LAUNCHER.format(tests=str(HERE / "support"), fakes=str(fakes))
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=600, env=env)


def test_conformance_run_and_libs_say_why_a_library_is_unavailable(fake_site, tmp_path):
    names = "trec_eval," + ",".join(e.name for e in _fakes())
    out = tmp_path / "out.json"
    done = _cli(fake_site, "run", "--libs", names, "--qrels", str(CORPUS / "good.qrels"),
                "--run", str(CORPUS / "good.run"), "-m", "P@1", "--lib-timeout", f"{LIMIT:g}",
                "--json", str(out), "--quiet")
    # 4: nothing unexplained, but entries named in --libs could not run (conformance run's exit codes)
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    warnings = done.stderr.splitlines()
    assert ("conformance: warning: fake_slow timed out while importing (no answer within "
            f"{LIMIT:g} s); raise --lib-timeout to wait longer; it is reported as unavailable") in warnings
    assert ("conformance: warning: fake_crash crashed while importing (killed by signal "
            "SIGSEGV); it is reported as unavailable") in warnings
    assert ("conformance: warning: fake_absent not installed (pip install fake_absent-dist adds "
            "it); it is reported as unavailable") in warnings
    assert any(w.startswith("conformance: warning: fake_raise failed to import: ImportError: "
                            "libfake.so.1") for w in warnings), warnings
    # the summary lists each unavailable entry with its reason
    assert "5 of 7 entries could not run, 5 of them named in --libs" in done.stdout
    for name in ("fake_slow", "fake_crash", "fake_raise", "fake_dependency", "fake_absent"):
        assert f"  could not run: {name}: " in done.stdout
    assert "  could not run: fake_crash: crashed while importing (killed by signal SIGSEGV)" in done.stdout
    doc = json.loads(out.read_text())
    assert doc["libraries"]["fake_slow"] == {"available": False, "version": None}
    (p1,) = doc["comparisons"]
    assert p1["values"] == {"trec_eval": 0.5, "fake_fine": 0.5}  # hand value: q1 hit, q2 miss

    done = _cli(fake_site, "libs", "--format", "json", "--lib-timeout", f"{LIMIT:g}")
    assert done.returncode == 0, done.stderr
    rows = {r["entry"]: r for r in json.loads(done.stdout)["entries"]}
    assert (rows["fake_slow"]["status"], rows["fake_slow"]["problem"]) == (
        "import_timed_out", f"timed out while importing (no answer within {LIMIT:g} s)")
    assert rows["fake_crash"]["status"] == "import_crashed"
    assert rows["fake_absent"]["problem"] == "not installed (pip install fake_absent-dist adds it)"
    assert rows["trec_eval"]["status"] == "available" and rows["trec_eval"]["problem"] is None
    assert rows["trec_eval"]["version"]

    done = _cli(fake_site, "libs", "--lib-timeout", f"{LIMIT:g}")
    assert done.returncode == 0, done.stderr
    assert "fake_crash: crashed while importing (killed by signal SIGSEGV)" in done.stdout.splitlines()


# --- the registry -------------------------------------------------------------------------------


def test_a_misspelt_adapter_module_fails_loudly(monkeypatch):
    monkeypatch.setattr(L, "_MODULES", L._MODULES + ["trec_evl"])
    with pytest.raises(L.AdapterImportError, match=r"conformance\.libs\.trec_evl .*cannot be imported"):
        L.all_entries()


def test_a_broken_adapter_module_fails_loudly(monkeypatch, tmp_path):
    (tmp_path / "broken_adapter_for_test.py").write_text("ENTRIES = [undefined_name]\n")
    monkeypatch.setattr(L, "__path__", [*L.__path__, str(tmp_path)])
    monkeypatch.setattr(L, "_MODULES", L._MODULES + ["broken_adapter_for_test"])
    with pytest.raises(L.AdapterImportError, match="NameError: name 'undefined_name'"):
        L.all_entries()
    monkeypatch.delitem(sys.modules, "conformance.libs.broken_adapter_for_test", raising=False)


_ABSENT = """
import importlib.abc, json, sys
BLOCKED = set(json.loads(sys.argv[1]))

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())
import conformance.libs as L
entries = L.all_entries()
print(json.dumps({"entries": [e.name for e in entries],
                  "imported": sorted(m for m in BLOCKED if m in sys.modules),
                  "status": {e.name: [e.import_status().state, e.import_status().detail]
                             for e in entries}}))
"""


def test_adapters_import_without_their_libraries():
    """Importing every adapter module imports no peer library; with every peer library absent,
    every entry is still listed and says it is not installed, with the command that adds it (an
    entry of a side environment asks its worker, whose environment the absence does not reach)."""
    entries = L.all_entries()
    libraries = sorted({e.module.split(".")[0] for e in entries})
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _ABSENT, json.dumps(libraries)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["entries"] == [e.name for e in entries]
    assert got["imported"] == []
    for e in entries:
        state, detail = got["status"][e.name]
        if e.environment is not None:  # imported by its worker, in its side environment
            assert state in ("available", "not_created"), (e.name, state, detail)
            continue
        assert state == "not_installed", (e.name, state, detail)
        assert detail.startswith("pip install "), detail

    # and without the blocker, importing the adapters still imports none of them
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json, sys
        import conformance.libs as L
        L.all_entries()
        print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
        """), json.dumps(libraries)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_every_entry_declares_what_it_computes():
    """Support is data: every entry's ``support`` is a Support record, and no adapter writes a
    ``supports`` of its own (Entry's reads the record)."""
    for e in L.all_entries():
        assert isinstance(e.support, Support), e.name
        assert type(e).supports is Entry.supports, f"{e.name} overrides supports()"
