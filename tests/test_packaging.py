"""The package as a user installs it: its distribution name, extras pip matches, the install hints,
the version declared once, and a wheel and sdist that carry every file the package reads.

The wheel is built from a copy of the package's sources with the installed setuptools (no
download, ``python -m build --no-isolation``); that it installs and runs outside the checkout is
``scripts/wheel-test.sh``'s job, which ``.ci/run`` runs after the tests.
"""

from __future__ import annotations

import email
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import conformance
from conformance import distribution as D
from conformance.libs import all_entries

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
# extras that are not peer libraries of an entry
NOT_PEERS = {"test", "everything"}


def _requirement_name(requirement: str) -> str:
    return D.normal_name(re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0])


def test_the_distribution_is_the_name_the_hints_use():
    assert PYPROJECT["project"]["name"] == D.DISTRIBUTION == "ranking-conformance"
    # the command keeps its name
    assert PYPROJECT["project"]["scripts"] == {"conformance": "conformance.cli:console"}


def test_extras_are_named_as_pip_matches_them():
    # pip 23.2 matches an extra only by the wheel metadata's normalised spelling
    assert sorted(EXTRAS) == sorted(D.normal_name(x) for x in EXTRAS)
    assert {"trec-eval", "ir-measures", "everything"} <= set(EXTRAS)


def test_everything_holds_every_peer_of_every_extra():
    everything = {r.replace(" ", "") for r in EXTRAS["everything"]}
    for name, requirements in EXTRAS.items():
        if name in NOT_PEERS:
            continue
        missing = [r for r in requirements if r.replace(" ", "") not in everything]
        assert not missing, f"the everything extra lacks {missing} of the {name} extra"
    # and nothing of its own: each of its requirements comes from some library's extra
    peers = {r.replace(" ", "") for name, rs in EXTRAS.items() if name not in NOT_PEERS for r in rs}
    assert everything <= peers, sorted(everything - peers)


def test_every_entry_is_installed_by_its_extra_and_by_everything():
    names = {_requirement_name(r) for r in EXTRAS["everything"]}
    for e in all_entries():
        if e.environment is not None:  # installed apart: the next test
            continue
        extra = D.normal_name(e.extra or e.library)
        assert extra in EXTRAS, (e.name, extra)
        assert D.normal_name(e.distribution) in {_requirement_name(r) for r in EXTRAS[extra]}, e.name
        assert D.normal_name(e.distribution) in names, e.name


def test_an_entry_installed_apart_is_installed_by_its_environment_and_no_extra():
    from conformance.environments import ENVIRONMENTS

    apart = [e for e in all_entries() if e.environment is not None]
    assert apart, "no entry runs in a side environment"
    peers = {_requirement_name(r) for name, rs in EXTRAS.items() if name != "test" for r in rs}
    for e in apart:
        env = ENVIRONMENTS[e.environment]
        assert D.normal_name(e.distribution) in {_requirement_name(r)
                                                 for r in (*env.requirements, *env.no_deps)}
        # beside the others it cannot be installed: no extra may pull it into this environment
        assert D.normal_name(e.distribution) not in peers, e.name
        assert e.install_command() == f"conformance env create {env.name}"


def test_hints_from_a_checkout_name_the_editable_install():
    assert D.checkout() == ROOT
    assert D.pip_command("ranx") == 'pip install -e ".[ranx]"'
    # an old spelling is printed as pip matches it
    assert D.pip_command("trec_eval", "pytrec-eval-terrier") == 'pip install -e ".[trec-eval]"'
    # no extra of that name: the library's own distribution
    assert D.pip_command("fake_absent", "fake-absent-dist") == "pip install fake-absent-dist"


def test_hints_from_a_wheel_name_the_distribution(monkeypatch):
    monkeypatch.setattr(D, "checkout", lambda: None)
    monkeypatch.setattr(D, "extras", lambda: frozenset({"ranx", "mteb", "trec-eval"}))
    assert D.pip_command("ranx") == 'pip install "ranking-conformance[ranx]"'
    assert D.pip_command("ir_measures", "ir-measures") == "pip install ir-measures"
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    # an extra that needs torch, while torch is absent: the CPU build first
    assert D.pip_command("mteb") == 'pip install torch==2.13.0 && pip install "ranking-conformance[mteb]"'
    assert D.pip_command("trec-eval") == 'pip install "ranking-conformance[trec-eval]"'


def test_the_version_is_declared_once():
    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "conformance.distribution.__version__"
    assert conformance.__version__ == D.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", D.__version__)
    # nowhere else in the package
    for path in (ROOT / "conformance").rglob("*.py"):
        if path.name != "distribution.py":
            assert f'"{D.__version__}"' not in path.read_text(encoding="utf-8"), path
    # the changelog has the version's section
    assert re.search(rf"^## {re.escape(D.__version__)}\b", (ROOT / "CHANGELOG.md").read_text(
        encoding="utf-8"), re.MULTILINE)


def test_version_command_prints_the_version_and_the_commit():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "--version"], cwd=ROOT.parent,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, timeout=60)
    if commit.returncode != 0:  # not a git work tree: the version alone
        assert done.stdout == f"conformance {D.__version__}\n"
        return
    assert re.fullmatch(rf"conformance {re.escape(D.__version__)} \(commit "
                        rf"{commit.stdout.strip()}(, modified)?\)\n", done.stdout), done.stdout


# --- the built wheel and sdist ------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(source copy, wheel, sdist), built from a copy so that the checkout gets no build/ or
    egg-info/; the wheel is built from the sdist, as ``python -m build`` does by default."""
    if importlib.util.find_spec("build") is None:
        pytest.fail("the build package is not installed (the test extra installs it)")
    top = tmp_path_factory.mktemp("dist")
    src = top / "src"
    src.mkdir()
    for name in ("pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "conformance", src / "conformance",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = top / "out"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                           str(src)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return src, wheel, sdist


def _package_files(src: Path) -> set[str]:
    return {p.relative_to(src).as_posix() for p in (src / "conformance").rglob("*") if p.is_file()}


def test_the_wheel_carries_every_file_of_the_package(built):
    # every file under conformance/ (the corpus, the examples, the report's templates and static
    # files, the rag example and its outputs, the modules) is one the package may read
    src, wheel, _ = built
    assert wheel.name == f"ranking_conformance-{D.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = email.message_from_bytes(z.read(
            f"ranking_conformance-{D.__version__}.dist-info/METADATA"))
    expected = _package_files(src)
    assert any(not f.endswith(".py") for f in expected)
    missing = sorted(expected - names)
    assert not missing, f"files of the package missing from the wheel: {missing}"
    assert meta["Name"] == "ranking-conformance" and meta["Version"] == D.__version__
    assert set(meta.get_all("Provides-Extra")) == set(EXTRAS)
    assert "pytrec-eval-terrier>=0.5.6; extra == \"trec-eval\"" in meta.get_all("Requires-Dist")


def test_the_sdist_carries_the_package_and_its_notes(built):
    src, _, sdist = built
    top = f"ranking_conformance-{D.__version__}"
    with tarfile.open(sdist) as t:
        names = {n.removeprefix(top + "/") for n in t.getnames()}
    missing = sorted((_package_files(src) | {"pyproject.toml", "README.md", "CHANGELOG.md"}) - names)
    assert not missing, f"files missing from the sdist: {missing}"
