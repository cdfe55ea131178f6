"""The layering of docs/architecture.md, enforced over every import in ``lazygen/`` (module
level and inside functions alike; an import inside a function is still a dependency).

* The generator never imports the runtime and the runtime never imports the generator.
* In the runtime, imports go one way: ``backends/<name>`` -> ``backend``/``lowering`` ->
  the core. Nothing outside ``backends/`` imports a concrete backend, and no backend
  imports another: the op list they share is the backend-neutral ``builtin`` package.
* Generated code imports the runtime, never a concrete backend. It is scanned under the
  name it is installed as (``generated/builtin/`` is ``lazygen.runtime.builtin.generated``,
  see ``setup.py``), and the built-in op list's tables import it as a module, so the
  import graph sees op list -> generated code -> hand-written pieces -> core.
* The composition root (``lazygen/runtime/__init__.py``) may import the whole core, and
  finds backends by name only (``lazygen.runtime.backends.BUILTIN`` holds strings).
* The core has no import cycle, and no module imports itself back through a function.
* ``lazygen.conformance`` is a client of the runtime: it uses ``lazygen.runtime``'s public
  API only, and neither the runtime nor the generator imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
RUNTIME = "lazygen.runtime"
BACKENDS = "lazygen.runtime.backends"
GENERATOR = ("lazygen.model", "lazygen.loaders", "lazygen.lazy", "lazygen.render")
GENERATED = ROOT / "generated"
#: Generated source folders and the package each is installed as (``setup.py``).
GENERATED_PACKAGES = {"lazygen.runtime.builtin.generated": GENERATED / "builtin"}


def _module_name(path: Path) -> str:
    for package, folder in GENERATED_PACKAGES.items():
        if path.is_relative_to(folder):
            parts = (package, *path.relative_to(folder).with_suffix("").parts)
            break
    else:
        parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # ``from . import x`` imports the submodule x when it is one (the package
            # itself is then only its parent, already imported).
            submodules = [f"{target}.{a.name}" for a in node.names]
            submodules = [m for m in submodules if _exists(m)]
            if len(submodules) < len(node.names):
                found.append((target, node.lineno))
            found += [(m, node.lineno) for m in submodules]
    return found


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    for package, folder in GENERATED_PACKAGES.items():
        if module == package or module.startswith(package + "."):
            path = folder.joinpath(*module[len(package) :].split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _runtime_files() -> list[Path]:
    return sorted((PACKAGE / "runtime").rglob("*.py"))


def _backend_of(module: str) -> str | None:
    if module.startswith(BACKENDS + "."):
        return module[len(BACKENDS) + 1 :].split(".")[0]
    return None


def _scanned_files() -> list[Path]:
    """``lazygen/`` and the generated folders installed inside it."""
    generated = [p for folder in GENERATED_PACKAGES.values() for p in folder.rglob("*.py")]
    return sorted(PACKAGE.rglob("*.py")) + sorted(generated)


def _edges() -> list[tuple[str, str, int]]:
    edges = []
    for path in _scanned_files():
        source = _module_name(path)
        for target, line in _imports(path):
            if target == "lazygen" or target.startswith("lazygen."):
                edges.append((source, target, line))
    return edges


def test_the_scanner_sees_imports_inside_functions(tmp_path):
    """The scan must count function-level imports (they used to hide a cycle)."""
    module = PACKAGE / "runtime" / "execution" / "executor.py"
    names = {target for target, _ in _imports(module)}
    assert "lazygen.runtime.devices" in names
    hidden = ast.parse("def f():\n    from .tensor import x\n")
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(hidden))


def test_the_builtin_op_list_is_a_module_import():
    """The built-in tables reach their generated registration by an import the graph
    sees (not a string handed to importlib), and the registration reaches the
    hand-written package the same way: the op list's path is in the graph."""
    edges = {(s, t) for s, t, _ in _edges()}
    builtin = "lazygen.runtime.builtin"
    assert (f"{builtin}.tables", f"{builtin}.generated.registration") in edges
    assert (f"{builtin}.generated.registration", f"{builtin}.hand_written.kernels") in edges


def test_generated_folders_are_installed_where_they_are_scanned():
    """The scan's name of each generated folder is the one the installed package has."""
    import importlib

    for package, folder in GENERATED_PACKAGES.items():
        module = importlib.import_module(package)
        assert Path(module.__file__).resolve().parent == folder.resolve(), package


def test_generator_and_runtime_never_import_each_other():
    wrong = [
        f"{s} -> {t} (line {n})"
        for s, t, n in _edges()
        if (s.startswith(RUNTIME) and t.startswith(GENERATOR))
        or (s.startswith(GENERATOR) and t.startswith(RUNTIME))
    ]
    assert not wrong, "\n".join(wrong)


def test_conformance_is_a_client_of_the_runtime():
    conformance = "lazygen.conformance"
    wrong = [
        f"{s} -> {t} (line {n})"
        for s, t, n in _edges()
        if (t.startswith(conformance) and s.startswith((RUNTIME, *GENERATOR)))
        or (s.startswith(conformance) and t.startswith(RUNTIME + ".") and t != RUNTIME)
    ]
    assert not wrong, "\n".join(wrong)


def test_spmd_is_a_client_of_the_runtime():
    """``lazygen.spmd`` (torch_xla's SPMD surface) speaks the runtime's neutral sharding
    hooks; neither the runtime nor the generator imports it."""
    spmd = "lazygen.spmd"
    wrong = [
        f"{s} -> {t} (line {n})"
        for s, t, n in _edges()
        if (t.startswith(spmd) and s.startswith((RUNTIME, *GENERATOR)))
        or (s.startswith(spmd) and t.startswith(BACKENDS))
    ]
    assert not wrong, "\n".join(wrong)


def test_only_backends_import_a_backend():
    wrong = []
    for source, target, line in _edges():
        backend = _backend_of(target)
        if backend is None or not source.startswith(RUNTIME):
            continue
        if _backend_of(source) == backend:
            continue
        wrong.append(f"{source} -> {target} (line {line})")
    assert not wrong, "core modules import a concrete backend:\n" + "\n".join(wrong)


def test_generated_code_imports_no_backend():
    """Generated kernels, nodes and registrations speak the core and the hand-written
    package (``lazygen.runtime.builtin.hand_written``), so every backend can trace with
    them."""
    wrong = []
    for path in sorted(GENERATED.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            wrong += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
                for name in names
                if name == BACKENDS or name.startswith(BACKENDS + ".")
            ]
    assert not wrong, "generated code imports a concrete backend:\n" + "\n".join(wrong)


def test_core_never_imports_the_composition_root():
    wrong = [
        f"{s} -> {t} (line {n})"
        for s, t, n in _edges()
        if s.startswith(RUNTIME + ".") and t == RUNTIME
    ]
    assert not wrong, "\n".join(wrong)


def test_core_imports_form_no_cycle():
    graph: dict[str, set[str]] = {}
    for source, target, _ in _edges():
        if source.startswith(RUNTIME + ".") and target.startswith(RUNTIME + "."):
            if _backend_of(source) or _backend_of(target):
                continue
            if source != target:
                graph.setdefault(source, set()).add(target)
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle in the runtime core: " + " -> ".join(cycle)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("path", _runtime_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_runtime_import_hides_in_a_function(path):
    """Imports of lazygen modules sit at module level: one inside a function dodges a cycle."""
    tree = ast.parse(path.read_text(), str(path))
    hidden = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            hidden += [inner.lineno for inner in ast.walk(node) if _imports_lazygen(inner)]
    assert not hidden, f"{path.name}: imports inside functions at lines {hidden}"


def _imports_lazygen(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("lazygen")
    if isinstance(node, ast.Import):
        return any(a.name.startswith("lazygen") for a in node.names)
    return False


def test_importing_the_runtime_changes_nothing_in_torch():
    """Wiring happens at init(), never as an import side effect."""
    import subprocess
    import sys

    code = (
        "import torch, lazygen.runtime, lazygen.runtime.backends.torchscript.backend\n"
        "assert torch._C._get_privateuse1_backend_name() == 'privateuseone'\n"
        "import torch._tensor_str as s; assert s._str.__module__ == 'torch._tensor_str'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
