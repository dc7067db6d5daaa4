"""The package's imports run one way, through its layers, with no circle.

Every module of ``conformance`` belongs to one layer; a module may import modules of its own
layer or of the layers below it, never above, and no set of modules may import each other in a
circle. Every import counts, including those inside functions (a lazy import is still a
dependency). The imports are read from the source (AST), so nothing is executed.

The package's ``__init__`` is the public API's facade: at module level it imports nothing of
the package (its names are loaded on first use), so ``import conformance.conventions`` stays as
light as the module it names; only the command line, which is built on that API, imports it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "conformance"

# Bottom to top. A module belongs to the first entry that equals its name or is a prefix of it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("vocabulary", ("conformance.errors", "conformance.axis", "conformance.conventions", "conformance.measures",
                    "conformance.parallel", "conformance.isolation", "conformance.outputs",
                    "conformance.distribution", "conformance.environments")),
    ("io", ("conformance.io",)),
    ("reference", ("conformance.reference",)),
    ("libs", ("conformance.libs",)),
    ("engines", ("conformance.profiles", "conformance.facts", "conformance.explain", "conformance.paper",
                 "conformance.runner", "conformance.run_text", "conformance.rag", "conformance.pipeline",
                 "conformance.statement", "conformance.spark_engine", "conformance.infer")),
    ("api", ("conformance.api", "conformance.testing")),
    ("report", ("conformance.report", "conformance.summary")),
    ("cli", ("conformance.cli",)),
]
FACADE = "conformance"


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


MODULES = _modules()


def _layer(module: str) -> int | None:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def _resolve(name: str) -> str | None:
    """The package module an imported name lives in (None: outside the package)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, module_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            # "from conformance import io" imports the module conformance.io
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for n in names:
            target = _resolve(n)
            if target is not None and target != module:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    # a module's import of its own package's __init__ (a parent) is not an edge of its own,
    # but an explicit import of the facade is (it is the top of the package)
    return {m: {t for t in _imports(m, p) if t == FACADE or not m.startswith(t + ".")}
            for m, p in MODULES.items() if m != FACADE}


def test_every_module_has_a_layer():
    lost = sorted(m for m in MODULES if m != FACADE and _layer(m) is None)
    assert not lost, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {lost}"


def test_no_import_runs_upward():
    upward = []
    for m, targets in _graph().items():
        for t in sorted(targets):
            if t == FACADE:
                if LAYERS[_layer(m)][0] != "cli":  # the command line is built on the public API
                    upward.append(f"{m} imports the facade {FACADE} (import the module that holds the name)")
            elif _layer(t) > _layer(m):
                upward.append(f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_no_import_circle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                x = stack.pop()
                on.discard(x)
                comp.append(x)
                if x == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(
        " <-> ".join(c) for c in circles)


def test_the_facade_imports_nothing_at_module_level():
    found = _imports(FACADE, MODULES[FACADE], module_level_only=True)
    assert not found, f"conformance/__init__.py imports {sorted(found)} at module level"


def _documented_layers() -> list[tuple[str, tuple[str, ...]]]:
    """docs/ARCHITECTURE.md's layer table (the rows under its ``| layer | modules |`` header):
    (layer, the modules as written, without a package's trailing ``/``), in the table's order."""
    lines = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| layer | modules |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        layer, modules = (c.strip() for c in line.strip("|").split("|")[:2])
        rows.append((layer, tuple(n.rstrip("/") for n in re.findall(r"`([^`]+)`", modules))))
    return rows


def test_the_architecture_map_names_every_layer_and_module():
    """The map a contributor reads is the table the test enforces: same layers, same order,
    same modules in each (a module moved between layers, or a new one, updates both)."""
    want = [(layer, tuple(p.removeprefix(FACADE + ".") for p in prefixes))
            for layer, prefixes in LAYERS]
    assert _documented_layers() == want, (
        "docs/ARCHITECTURE.md's layer table differs from LAYERS in tests/test_layers.py:\n"
        + "\n".join(f"| {layer} | {', '.join(f'`{m}`' for m in mods)} |" for layer, mods in want))


def test_long_modules_say_why_they_are_one_idea():
    """No module of the package over 900 lines; one over 600 states in its docstring why it is
    one idea ("One idea at about N lines: ..."), with N within 10% of its length, so the
    statement is renewed as the module grows."""
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) <= 900, f"{name}: {len(lines)} lines"
        if len(lines) <= 600:
            continue
        doc = ast.get_docstring(ast.parse("\n".join(lines))) or ""
        said = re.search(r"One idea at (?:about |~)(\d+)\s+lines", " ".join(doc.split()))
        assert said, f"{name}: {len(lines)} lines, and its docstring does not say why it is one idea"
        assert abs(int(said.group(1)) - len(lines)) <= 0.1 * len(lines), (
            f"{name}: its docstring says about {said.group(1)} lines; it has {len(lines)}")
