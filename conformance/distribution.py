"""What this package is as something a user installs: its distribution's name, its version, the
source tree it runs from (if any), and the one pip command that adds an extra.

The distribution is ``ranking-conformance`` (the package index's ``conformance`` is another
project); the import name and the command stay ``conformance``. Every printed install hint is
:func:`pip_command`'s:

- run from a checkout (the folder above the package holds the ``pyproject.toml`` that declares
  :data:`DISTRIBUTION`: an editable install or ``PYTHONPATH``), ``pip install -e ".[EXTRA]"``;
- run from an installed wheel, ``pip install "ranking-conformance[EXTRA]"``;
- an extra that needs torch is preceded by the CPU build's install (:data:`TORCH`) while torch
  is not importable: an unpinned torch resolves to a multi-gigabyte CUDA build;
- a library with no extra of its name in the package (the declared extras: the checkout's
  ``pyproject.toml``, else the installed metadata) is named by its own distribution.

Extra names are printed normalised (PEP 685: lowercase, runs of ``-_.`` as one hyphen), the only
spelling that every pip matches against a wheel's metadata (pip 23.2 ignores ``trec_eval``
where the wheel says ``trec-eval``; pip 26.3 matches both).

:func:`version_text` is what ``conformance --version`` prints: the version (declared once, as
``__version__`` here, which ``pyproject.toml`` reads and ``conformance.__version__`` names) and, from a checkout that is a git
work tree, its commit.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

DISTRIBUTION = "ranking-conformance"
TORCH = "pip install torch==2.13.0"
# the extras whose libraries import torch (pyproject.toml says so beside each)
NEEDS_TORCH = frozenset({"torchmetrics", "rag", "mteb", "keras-rs", "everything"})

_PACKAGE = Path(__file__).resolve().parent


def normal_name(name: str) -> str:
    """A distribution's or extra's name as PEP 503 / PEP 685 compare it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def checkout() -> Path | None:
    """The source tree the package runs from, or None when it runs from an installed wheel."""
    root = _PACKAGE.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    declared = re.search(r'^name\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return root if declared and normal_name(declared.group(1)) == DISTRIBUTION else None


@lru_cache(maxsize=1)
def extras() -> frozenset[str]:
    """The extras the package declares, normalised."""
    root = checkout()
    if root is not None:
        try:
            import tomllib
        except ImportError:  # Python 3.10: the installed metadata says the same
            tomllib = None
        if tomllib is not None:
            project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
            return frozenset(normal_name(x) for x in project.get("optional-dependencies", {}))
    import importlib.metadata  # ~10 ms (email parsing): not on the path of a command that never asks

    try:
        declared = importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    return frozenset(normal_name(x) for x in declared)


@lru_cache(maxsize=1)
def core_requirements() -> tuple[str, ...]:
    """The package's own requirements (``[project] dependencies``: no extra's), as declared:
    what a side environment (``conformance.environments``) installs beside its library so that
    the package imports there."""
    root = checkout()
    if root is not None:
        try:
            import tomllib
        except ImportError:  # Python 3.10: the installed metadata says the same
            tomllib = None
        if tomllib is not None:
            project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
            return tuple(project.get("dependencies", []))
    import importlib.metadata

    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    return tuple(r for r in declared if "extra ==" not in r.replace("extra==", "extra =="))


def pip_command(extra: str, distribution: str | None = None) -> str:
    """The command that adds ``extra`` of this package (see the module docstring); a name the
    package declares no extra for is installed as ``distribution``, its library's own."""
    extra = normal_name(extra)
    if extra not in extras() and distribution is not None:
        return f"pip install {distribution}"
    if checkout() is not None:
        command = f'pip install -e ".[{extra}]"'
    else:
        command = f'pip install "{DISTRIBUTION}[{extra}]"'
    if extra in NEEDS_TORCH and importlib.util.find_spec("torch") is None:
        command = f"{TORCH} && {command}"
    return command


def version_text() -> str:
    """``conformance VERSION``, with ``(commit HASH)`` from a git checkout (``, modified`` when
    its work tree differs from the commit)."""
    text = f"conformance {__version__}"
    root = checkout()
    if root is None or not (root / ".git").exists():
        return text
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return text
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):  # no git: the version alone
        return text
    modified = ", modified" if dirty.returncode == 0 and dirty.stdout.strip() else ""
    return f"{text} (commit {commit.stdout.strip()}{modified})"
