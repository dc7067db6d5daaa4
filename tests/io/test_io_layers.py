"""The input package's imports run one way: every import of every module of ``conformance/io/``
(those inside functions too, read from the source with ``ast``) names a module above it in
``ORDER`` or the vocabulary below the package; none runs upward or in a circle. The modules
kept for old import paths only re-export from the package."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IO = ROOT / "conformance" / "io"

# Each module may import only those before it (the columnar helpers below the data types and
# the readers, the readers below the data types, which build what the readers parse).
ORDER = ["kernels", "columnar", "encode", "parsed", "limits", "text", "records", "roles", "listed", "shapes", "trec",
         "jsonio", "frames", "tables", "formats", "data", "readers", "seen", "cases"]
BELOW = {"conformance.errors", "conformance.conventions", "conformance.measures", "conformance.parallel"}
MOVED = {"data": "conformance.io.data", "cases": "conformance.io.cases", "arrow_compute": "conformance.io.kernels"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every conformance module ``path`` imports, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("conformance")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("conformance"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                # ``from conformance.io import kernels`` imports the module conformance.io.kernels
                is_module = (ROOT / Path(*sub.split("."))).with_suffix(".py").exists()
                out.append((node.lineno, sub if is_module else node.module))
    return out


def test_every_module_is_placed():
    modules = sorted(p.stem for p in IO.glob("*.py") if p.stem != "__init__")
    assert modules == sorted(ORDER)


@pytest.mark.parametrize("name", ORDER)
def test_imports_run_one_way(name):
    allowed = BELOW | {f"conformance.io.{m}" for m in ORDER[:ORDER.index(name)]}
    wrong = [(line, module) for line, module in _imports(IO / f"{name}.py") if module not in allowed]
    assert wrong == [], f"conformance/io/{name}.py imports upward or outside the layer: {wrong}"


def test_the_checker_sees_function_level_imports(tmp_path):
    # the test above must catch an upward import hidden in a function
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from conformance.io.data import Run\n    from conformance.io import trec\n")
    assert _imports(path) == [(2, "conformance.io.data"), (3, "conformance.io.trec")]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_modules_moved_into_the_package_are_gone(old):
    """``conformance.data``, ``conformance.cases`` and ``conformance.arrow_compute`` moved into
    ``conformance.io``; no shim keeps a second path to them."""
    assert not (ROOT / "conformance" / f"{old}.py").exists()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"conformance.{old}")
    assert importlib.import_module(MOVED[old]) is not None


def test_package_exports_resolve():
    import conformance.io as cio

    for name in cio.__all__:
        assert getattr(cio, name) is not None, name
    with pytest.raises(AttributeError):
        cio.no_such_name  # noqa: B018


def test_the_data_types_alone_import_no_pyarrow():
    # the library adapters import the data types; their workers need not pay for pyarrow
    code = "import sys, conformance.io.data; print('pyarrow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT),
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
