"""Side environments: a library that cannot be installed beside the others gets a virtual
environment of its own, and its entries run there, in their isolation worker.

A library whose newest release pins what the other entries cannot share (RecTools 0.19.0:
numpy<2 and pandas<3, where the rest need numpy 2 and pandas 3) is not dropped: it is installed
into an environment of its own, and an entry declares it (``Entry.environment = "rectools"``).
Every call to such an entry (importing the library, evaluating, its version) is made in its
worker, whose interpreter is that environment's python; nothing imports the library in this
process.

What each environment installs is declared once, here, as data (:data:`ENVIRONMENTS`): the
library's pinned requirements, and whether the CPU build of torch goes first
(``distribution.TORCH``: an unpinned torch resolves to a multi-gigabyte CUDA build). Beside them
pip installs the package's own requirements (``distribution.core_requirements``: numpy, pandas,
pyarrow, click, rich, jinja2), resolved to versions the library admits, and not the package
itself: the worker's ``PYTHONPATH`` is one directory holding a link to this process's
``conformance`` package (:func:`interpreter`), so the environment's numpy is the one imported,
whether the package runs from a checkout, an editable install or a wheel.

Where: ``$CONFORMANCE_ENVS/<name>`` when that variable is set, else
``${XDG_CACHE_HOME:-~/.cache}/conformance/envs/<name>``; a venv made by ``python -m venv``
from the interpreter running this module, so it has the same Python.

States (:meth:`Environment.state`):

- ``missing``: no environment at that place; its entries report themselves not available,
  with the one command that makes it (:meth:`Environment.create_command`);
- ``ready``: made by :func:`create` for exactly the requirements declared now, by this
  Python version (its record, ``conformance-environment.json``, says so);
- ``stale``: made for other requirements or another Python; entries report it as missing,
  and ``create`` makes it anew;
- ``broken``: a folder without the record (a creation that failed or was stopped).

``conformance env create NAME ...`` / ``--all`` calls :func:`create` (idempotent: a ready
environment is left as it is), ``conformance env list`` lists them.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from conformance.distribution import TORCH, core_requirements
from conformance.errors import ConformanceError

RECORD = "conformance-environment.json"  # what create installed, written last


@dataclass(frozen=True)
class Environment:
    """One side environment: its name, the library's pinned requirements, why it cannot live
    beside the others, whether the CPU build of torch is installed first, and what is installed
    last without its dependencies (``no_deps``: a library whose declared dependencies go far
    beyond what its measured module imports, those imports being in ``requirements``)."""

    name: str
    requirements: tuple[str, ...]
    why: str
    torch: bool = False
    no_deps: tuple[str, ...] = ()
    # requirements of the package's own that this environment pins otherwise, each replacing
    # the package's requirement of the same name (RecBole 1.2.1 calls np.float, which numpy
    # removed in 1.24, the package's own floor); the worker's code is tested on them there
    core_pins: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return root() / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def wanted(self) -> dict:
        """What a ready environment's record holds: the pip commands' requirements, in order,
        and the Python that made it."""
        steps = []
        if self.torch:
            steps.append(TORCH.split()[2:])  # "pip install torch==X": its requirement
        pinned = {_requirement_name(r) for r in self.core_pins}
        core = [r for r in core_requirements() if _requirement_name(r) not in pinned]
        steps.append([*self.requirements, *self.core_pins, *core])
        if self.no_deps:
            steps.append(["--no-deps", *self.no_deps])
        return {"python": f"{sys.version_info[0]}.{sys.version_info[1]}", "steps": steps}

    def record(self) -> dict | None:
        try:
            return json.loads((self.path / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def state(self) -> str:
        if not self.path.exists():
            return "missing"
        rec = self.record()
        if rec is None or not self.python.exists():
            return "broken"
        return "ready" if {k: rec.get(k) for k in ("python", "steps")} == self.wanted() else "stale"

    def create_command(self) -> str:
        return f"conformance env create {self.name}"

    def site_packages(self) -> Path | None:
        found = sorted((self.path / "lib").glob("python*/site-packages"))
        return found[0] if found else None


ENVIRONMENTS: dict[str, Environment] = {e.name: e for e in (
    # rectools 0.19.0 (the newest) declares numpy<2 and pandas<3 on Python 3.11 (its wheel's
    # Requires-Dist); its metrics need neither torch nor its extras. pyarrow from 25 declares no
    # numpy bound but refuses numpy 1 on import ("pyarrow requires NumPy 2.0 or newer"), and pip,
    # reading only the declared bounds, takes the newest: 24 is the last that imports beside 1.26
    Environment("rectools", ("rectools==0.19.0", "pyarrow<25"),
                why="rectools 0.19.0 requires numpy<2 and pandas<3"),
    # lenskit 2025.8.1 (the newest release Python 3.11 takes; later ones need 3.12) declares
    # pandas<3 and torch (its wheel's Requires-Dist)
    Environment("lenskit", ("lenskit==2025.8.1",),
                why="lenskit 2025.8.1 requires pandas<3 and torch", torch=True),
    # recommenders 1.2.1 declares pandas<3 and a dependency set (jupyter's notebook,
    # transformers, cornac 2, lightgbm, locust, nltk, scikit-surprise, ...) far beyond what
    # recommenders.evaluation.python_evaluation imports: numpy, pandas, scikit-learn (and the
    # package's own constants and pandas_df_utils, which import numpy and pandas)
    Environment("recommenders", ("pandas>=2,<3", "scikit-learn>=1.2,<2"),
                why="recommenders 1.2.1 requires pandas<3; its python_evaluation imports only "
                    "numpy, pandas and scikit-learn", no_deps=("recommenders==1.2.1",)),
    # recbole 1.2.1 (the newest) calls np.float in MRR, MAP and NDCG (metrics.py), an alias
    # numpy 1.24 removed, and pins colorama==0.4.4 and colorlog==4.7.2; it declares torch,
    # ray, tensorboard, plotly, thop and more, of which recbole.evaluator imports torch (and,
    # through recbole.utils, torch.utils.tensorboard, pandas, texttable, colorlog, colorama)
    # and scikit-learn. pyarrow from 25 refuses numpy 1 on import
    Environment("recbole", ("scikit-learn", "scipy", "tensorboard", "texttable",
                            "colorlog==4.7.2", "colorama==0.4.4", "pyarrow<25"),
                why="recbole 1.2.1's MRR, MAP and NDCG call np.float, removed in numpy 1.24; "
                    "it pins colorama==0.4.4 and needs torch",
                torch=True, core_pins=("numpy==1.23.5",), no_deps=("recbole==1.2.1",)),
    # torchrec 1.9.2 (the newest) declares torchmetrics==1.0.3 (1.9 is the others') and
    # fbgemm-gpu, the CUDA build; torchrec.metrics imports the package, which loads fbgemm_gpu's
    # operators. fbgemm-gpu-cpu 1.9.0 is built for another torch (an undefined symbol of
    # torch.autograd at load, on torch 2.13.0); 1.8.0 loads there
    Environment("torchrec", ("torchmetrics==1.0.3", "fbgemm-gpu-cpu==1.8.0", "tensordict", "tqdm",
                             "pyre-extensions"),
                why="torchrec 1.9.2 pins torchmetrics==1.0.3 and requires fbgemm-gpu (its CPU "
                    "build 1.8.0 is the one that loads on torch 2.13.0)",
                torch=True, no_deps=("torchrec==1.9.2",)),
)}


def _requirement_name(requirement: str) -> str:
    """The distribution a requirement names (``"numpy>=1.24"`` -> ``numpy``)."""
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def readme_table() -> str:
    """The README's table of side environments, made from :data:`ENVIRONMENTS` (a guard test
    holds the README to it)."""
    lines = ["| environment | installs (beside the package's own requirements) | why apart |",
             "|---|---|---|"]
    for e in ENVIRONMENTS.values():
        pins = ", ".join(f"`{r}`" for r in e.requirements)
        if e.torch:
            pins = f"`{TORCH.split()[2]}` (CPU) first, then {pins}"
        if e.core_pins:
            pins += ", " + ", ".join(f"`{r}`" for r in e.core_pins) + " (in place of the package's own)"
        if e.no_deps:
            pins += ", then " + ", ".join(f"`{r}`" for r in e.no_deps) + " without its dependencies"
        lines.append(f"| `{e.name}` | {pins} | {e.why} |")
    return "\n".join(lines) + "\n"


def root() -> Path:
    """The folder that holds the side environments (see the module docstring)."""
    given = os.environ.get("CONFORMANCE_ENVS")
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "conformance" / "envs"


def environment(name: str) -> Environment:
    """The environment declared under ``name``; an unknown name is the user's error."""
    if name not in ENVIRONMENTS:
        raise ConformanceError(f"unknown environment {name!r}: expected one of "
                               f"{', '.join(ENVIRONMENTS)}")
    return ENVIRONMENTS[name]


def _pip(env: Environment, requirements: list[str]) -> None:
    done = subprocess.run([str(env.python), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *requirements],
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = " | ".join(line.strip() for line in done.stderr.strip().splitlines()[-3:])
        raise ConformanceError(f"environment {env.name}: pip install {' '.join(requirements)} "
                               f"failed (exit status {done.returncode}): {tail}")


def create(env: Environment) -> str:
    """Make ``env`` ready (a ready one is left as it is; a stale or broken one is made anew) and
    say what was done, in one line. Its record is written last, so a creation that fails or is
    stopped leaves a broken environment, never a ready one."""
    before = env.state()
    if before == "ready":
        return f"{env.name}: ready at {env.path} (nothing to do)"
    start = time.monotonic()
    if before != "missing":
        shutil.rmtree(env.path)
    env.path.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run([sys.executable, "-m", "venv", str(env.path)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise ConformanceError(f"environment {env.name}: python -m venv {env.path} failed: "
                               f"{made.stderr.strip().splitlines()[-1:]}")
    wanted = env.wanted()
    for step in wanted["steps"]:
        _pip(env, step)
    (env.path / RECORD).write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    how = {"missing": "created", "stale": "made anew (its requirements changed)",
           "broken": "made anew (the last creation did not finish)"}[before]
    return (f"{env.name}: {how} at {env.path} in {time.monotonic() - start:.0f} s "
            f"({', '.join(wanted['steps'][-1])})")


def version(env: Environment, distribution: str) -> str | None:
    """The version of ``distribution`` installed in ``env`` (read from its metadata, nothing
    imported), or None."""
    import importlib.metadata

    site = env.site_packages()
    if site is None:
        return None
    found = next(iter(importlib.metadata.distributions(name=distribution, path=[str(site)])), None)
    return found.version if found is not None else None


_LINK_DIR: list[str] = []
_LINK_LOCK = threading.Lock()


def _package_link() -> str:
    """A directory of this process's holding one link, ``conformance``, to this process's
    package (removed at exit): a side environment's worker has it as its whole PYTHONPATH."""
    with _LINK_LOCK:
        if not _LINK_DIR:
            folder = tempfile.mkdtemp(prefix="conformance-package-")
            os.symlink(Path(__file__).resolve().parent, os.path.join(folder, "conformance"))
            atexit.register(shutil.rmtree, folder, True)
            _LINK_DIR.append(folder)
        return _LINK_DIR[0]


def interpreter(name: str) -> tuple[str, tuple[str, ...]]:
    """(python, PYTHONPATH) of a worker in environment ``name``: ``isolation.worker``'s
    ``python`` and ``path``."""
    return str(environment(name).python), (_package_link(),)
