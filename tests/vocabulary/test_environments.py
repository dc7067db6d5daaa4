"""Side environments (``conformance.environments``): where they live, their states, the worker on
a side environment's python, an entry whose environment is not created, and ``conformance env``.

The live tests use the installed ``rectools`` environment (``conformance env create rectools``,
which ``scripts/install-test.sh`` runs); they fail when it is not ready, as a missing library
fails its tests (``tests/conftest.py``). Every other test points ``CONFORMANCE_ENVS`` at a
temporary folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conformance import environments as E
from conformance import isolation
from conformance.cli import main
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, ImportStatus
from conformance.measures import parse_measure
from conformance.runner import isolate, statuses


class _Apart(Entry):
    """An entry installed in the rectools environment (never imported here: json stands in)."""

    name = library = "apart-test"
    module = distribution = "json"
    environment = "rectools"


def _ready(name: str = "rectools") -> E.Environment:
    env = E.environment(name)
    if env.state() != "ready":
        pytest.fail(f"environment {name} is {env.state()}: {env.create_command()} makes it")
    return env


@pytest.fixture
def nowhere(tmp_path, monkeypatch) -> Path:
    """No environment is created: CONFORMANCE_ENVS is an empty folder."""
    monkeypatch.setenv("CONFORMANCE_ENVS", str(tmp_path / "envs"))
    return tmp_path / "envs"


def test_the_place_is_conformance_envs_else_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CONFORMANCE_ENVS", str(tmp_path / "e"))
    assert E.environment("rectools").path == tmp_path / "e" / "rectools"
    monkeypatch.delenv("CONFORMANCE_ENVS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert E.root() == tmp_path / "cache" / "conformance" / "envs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert E.root() == Path.home() / ".cache" / "conformance" / "envs"


def test_an_environment_installs_its_pins_and_the_packages_own_requirements():
    env = E.environment("rectools")
    steps = env.wanted()["steps"]
    assert steps == [["rectools==0.19.0", "pyarrow<25", "numpy>=1.24", "pandas>=2.0", "pyarrow>=14",
                      "click>=8.1", "rich>=13", "jinja2>=3.1"]]  # pyproject.toml's dependencies, not restated
    assert not env.torch


def test_a_core_pin_replaces_the_packages_own_requirement_of_that_name():
    env = E.environment("recbole")
    steps = env.wanted()["steps"]
    assert steps[0] == ["torch==2.13.0"] and steps[-1] == ["--no-deps", "recbole==1.2.1"]
    assert "numpy==1.23.5" in steps[1] and "numpy>=1.24" not in steps[1]
    assert "pyarrow>=14" in steps[1]  # the package's other requirements stay
    assert E._requirement_name("scikit_learn>=1") == "scikit-learn"


def test_states_missing_broken_stale(nowhere):
    env = E.environment("rectools")
    assert env.state() == "missing"
    (env.path / "bin").mkdir(parents=True)
    (env.path / "bin" / "python").symlink_to(sys.executable)
    assert env.state() == "broken"  # no record: a creation that did not finish
    record = env.wanted()
    (env.path / E.RECORD).write_text(json.dumps(record))
    assert env.state() == "ready"
    record["steps"] = [["rectools==0.18.0"]]  # made for other pins
    (env.path / E.RECORD).write_text(json.dumps(record))
    assert env.state() == "stale"


def test_a_worker_on_the_side_environment_imports_its_numpy_not_ours():
    env = _ready()
    w = isolation.worker("test-side-numpy", *E.interpreter("rectools"))
    version, where, python, package = w.call(
        eval, "(__import__('numpy').__version__, __import__('numpy').__file__, "
              "__import__('sys').executable, __import__('conformance').__file__)")
    assert version.split(".")[0] == "1" and np.__version__.split(".")[0] == "2", (version, np.__version__)
    assert Path(where).resolve().is_relative_to(env.path.resolve())
    assert Path(python) == env.python
    # the package comes from this process's tree, through the worker's one-link PYTHONPATH
    assert (Path(package).resolve().parent
            == Path(E.__file__).resolve().parent)


@pytest.mark.parametrize("name", sorted(E.ENVIRONMENTS))
def test_every_environment_imports_the_packages_own_requirements(name):
    """pip resolves an environment from declared bounds only: pyarrow 25 and later declare no
    numpy bound but refuse numpy 1 on import, so the rectools environment once resolved to one
    that could not read a file. Each core requirement and the reader are imported there."""
    _ready(name)
    w = isolation.worker(f"test-side-core-{name}", *E.interpreter(name))
    modules = ("numpy", "pyarrow", "pyarrow.csv", "click", "rich", "jinja2", "conformance.io.trec")
    assert w.call(eval, f"[__import__('importlib').import_module(m).__name__ for m in {modules!r}]") == list(modules)


def test_numpy_2_payloads_reach_a_numpy_1_worker():
    _ready()
    w = isolation.worker("test-side-payload", *E.interpreter("rectools"))
    qrels = Qrels.from_records([("u1", "a", 2), ("u1", "b", 0)])
    payload = isolation.Payload(qrels)
    assert w.call(Qrels.to_dict, payload=payload) == {"u1": {"a": 2.0, "b": 0.0}}


def test_a_worker_key_has_one_interpreter():
    isolation.worker("test-side-one-python")
    with pytest.raises(ValueError):
        isolation.worker("test-side-one-python", "/nonexistent/python", ("/nowhere",))


def test_an_entry_whose_environment_is_not_created_says_the_command(nowhere):
    e = _Apart()
    want = ImportStatus("not_created", "conformance env create rectools")
    assert e.import_status() == want and not e.available()
    assert want.describe() == ("not installed: its environment is not created (conformance env "
                               "create rectools creates it)")
    assert e.install_command() == "conformance env create rectools"
    assert e.version() is None
    # the runner asks the same, and starts no process for it
    assert statuses(isolate([e])) == {"apart-test": want}
    m = parse_measure("P@1")
    out = e.evaluate(Qrels.from_records([("u", "a", 1)]), Run.from_records([("u", "a", 1.0)]), [m])
    assert out[m].error == "apart-test: " + want.describe()


def test_env_list_says_state_place_and_pins(nowhere):
    out = CliRunner().invoke(main, ["env", "list", "--format", "json"])
    assert out.exit_code == 0, out.output
    (row,) = [r for r in json.loads(out.output)["environments"] if r["name"] == "rectools"]
    assert row["state"] == "missing" and row["path"] == str(nowhere / "rectools")
    assert row["requirements"] == ["rectools==0.19.0", "pyarrow<25"]
    assert row["create"] == "conformance env create rectools"
    text = CliRunner().invoke(main, ["env", "list"]).output
    assert "rectools: missing; conformance env create rectools makes it" in text


@pytest.mark.parametrize("argv, message", [
    (["env", "create", "nope"], "unknown environment 'nope': expected one of rectools"),
    (["env", "create"], "give environment names or --all"),
    (["env", "create", "--all", "rectools"], "give environment names or --all"),
])
def test_env_create_bad_input_is_one_line_and_exit_2(nowhere, argv, message):
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 2
    assert message in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1
    assert not nowhere.exists()  # nothing was made


def test_env_create_leaves_a_ready_environment_as_it_is():
    env = _ready()
    before = (env.path / E.RECORD).stat().st_mtime_ns
    out = CliRunner().invoke(main, ["env", "create", "rectools"])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == f"rectools: ready at {env.path} (nothing to do)"
    assert (env.path / E.RECORD).stat().st_mtime_ns == before


def test_the_readme_states_the_declared_environments():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert E.readme_table() in readme, (
        "README.md's environments table differs from environments.readme_table(): paste its output")
    assert "conformance env create --all" in readme.split("```")[1]  # the first command


def test_install_test_creates_the_environments():
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-test.sh"
    assert "\nconformance env create --all\n" in script.read_text(encoding="utf-8")
