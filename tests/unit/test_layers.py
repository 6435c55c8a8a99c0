"""The code's shape holds: packages import only downward, no import cycle, no reach into another
module's private names, no `except ImportError` around Galene's own modules.

The layers are declared once, in pyproject.toml's `[tool.importlinter]` contract, and checked by
import-linter's `lint-imports` (function-level imports included). The rest is read here from the
source with `ast`, as the modules are written (nothing is imported or run)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "galene"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, str | None, int, ast.AST]]:
    """(module imported, name taken from it or None, line, node) of every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None, node.lineno, node) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.extend((module, alias.name, node.lineno, node) for alias in node.names)
    return out


def _resolve(module: str, taken: str | None) -> str | None:
    """The Galene module an import refers to (`from a import b` may name module `a.b`)."""
    if taken is not None and f"{module}.{taken}" in MODULES:
        return f"{module}.{taken}"
    return module if module in MODULES else None


def test_packages_import_only_downward():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter's lint-imports is missing: `make` installs the test extras")
    run = subprocess.run([lint, "--no-cache"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


def test_no_import_cycle_between_modules():
    # Every import counts, those inside functions too: a lazy import hides a cycle from start-up,
    # not from the reader.
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = set()
        for module, taken, _, _ in _imports(name, path):
            target = _resolve(module, taken)
            # (a module importing its own package's __init__ is no cycle worth the name)
            if target and target != name and not name.startswith(target + "."):
                targets.add(target)
        graph[name] = targets
    # Tarjan's strongly connected components, iteratively (no recursion limit to meet).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    counter = 0
    for start, children_of_start in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(children_of_start)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == [], f"import cycles: {cycles}"


def test_no_module_imports_another_modules_private_names():
    reaches = []
    for name, path in MODULES.items():
        for module, taken, line, _ in _imports(name, path):
            private = taken is not None and taken.startswith("_") and not taken.startswith("__")
            # (a private *module* may be imported by name)
            if module.startswith("galene") and private and _resolve(module, taken) != f"{module}.{taken}":
                reaches.append(f"{path.relative_to(ROOT)}:{line} imports {module}.{taken}")
    assert reaches == []


def test_no_import_error_guard_around_galene_modules():
    guarded = []
    for path in MODULES.values():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Try):
                continue
            catches = {
                getattr(h.type, "id", None) for h in node.handlers if isinstance(h.type, ast.Name)
            } | {
                getattr(e, "id", None)
                for h in node.handlers
                if isinstance(h.type, ast.Tuple)
                for e in h.type.elts
            }
            if not catches & {"ImportError", "ModuleNotFoundError"}:
                continue
            for inner in node.body:
                guarded.extend(
                    f"{path.relative_to(ROOT)}:{sub.lineno}" for sub in ast.walk(inner) if _imports_galene(sub)
                )
    assert guarded == []


def _imports_galene(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("galene")
    return isinstance(node, ast.Import) and any(a.name.startswith("galene") for a in node.names)
