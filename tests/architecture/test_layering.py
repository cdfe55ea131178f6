"""The layering of docs/architecture.md, enforced over every import in ``lazygen/`` (module
level and inside functions alike; an import inside a function is still a dependency).

* The generator never imports the runtime and the runtime never imports the generator.
* In the runtime, imports go one way: ``backends/<name>`` -> ``backend``/``lowering`` ->
  the core. Nothing outside ``backends/`` imports a concrete backend, and no backend
  imports another (but its base: ``inductor`` builds on ``fx``): the op list they share is
  the backend-neutral ``builtin`` package.
* Generated code imports the runtime, never a concrete backend. It is scanned under the
  name it is installed as (``generated/builtin/`` is ``lazygen.runtime.builtin.generated``,
  see ``setup.py``; each torch release's tree in it, ``torch2_13/``, is that package when
  its torch is installed), and the built-in op list's tables import it as a module, so the
  import graph sees op list -> generated code -> hand-written pieces -> core.
* The composition root (``lazygen/runtime/__init__.py``) may import the whole core, and
  finds backends by name only (``lazygen.runtime.backends.BUILTIN`` holds strings).
* The core has no import cycle, and no module imports itself back through a function.
* Between the runtime's packages and top modules, imports go down the order that
  docs/architecture.md documents (its layer block, read here), function bodies included; every
  package and top module has a place in it.
* ``lazygen.dynamo`` uses the runtime through ``lazygen.runtime.capture_interface`` (and the
  public API), never its internal modules.
* ``lazygen.conformance`` is a client of the runtime: it uses ``lazygen.runtime``'s public
  API only, and neither the runtime nor the generator imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lazygen.runtime import torch_compat
from lazygen.torch_releases import tree_name, tree_release

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
RUNTIME = "lazygen.runtime"
BACKENDS = "lazygen.runtime.backends"
GENERATOR = ("lazygen.model", "lazygen.loaders", "lazygen.lazy", "lazygen.render")
GENERATED = ROOT / "generated"
#: Generated source folders and the package each is installed as (``setup.py``).
GENERATED_PACKAGES = {"lazygen.runtime.builtin.generated": GENERATED / "builtin"}


def _in_package(folder: Path, path: Path) -> tuple[str, ...]:
    """``path``'s parts in the generated package ``folder``: a release's tree is the package."""
    parts = path.relative_to(folder).with_suffix("").parts
    if len(parts) > 1 and tree_release(parts[0]):
        parts = parts[1:]
    return parts


def _module_name(path: Path) -> str:
    for package, folder in GENERATED_PACKAGES.items():
        if path.is_relative_to(folder):
            parts = (package, *_in_package(folder, path))
            break
    else:
        parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line."""
    return _imports_of(path, _module_name(path))


def _imports_of(path: Path, module: str) -> list[tuple[str, int]]:
    """Every module ``path`` (the source of ``module``) imports, absolute, with its line:
    at module level and inside functions alike (``ast.walk`` sees every statement)."""
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
            inside = module[len(package) :].split(".")[1:]
            if inside:  # a module of the package: in the installed torch's tree
                folder = folder / tree_name(torch_compat.RELEASE)
            path = folder.joinpath(*inside)
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


DOCS = ROOT / "docs" / "architecture.md"
LAYERS_MARK = "<!-- runtime layers:"


def documented_layers(text: str) -> list[tuple[str, ...]]:
    """The runtime's layers as docs/architecture.md lists them, top first: each line of the
    block after the marker names packages or top modules (``a, b | what they are``)."""
    lines = text[text.index(LAYERS_MARK) :].splitlines()[1:]
    assert lines[0].startswith("```"), "the layer block follows its marker"
    layers = []
    for line in lines[1:]:
        if line.startswith("```"):
            return layers
        names = line.split("|")[0]
        layers.append(tuple(n.strip() for n in names.split(",") if n.strip()))
    raise AssertionError("the layer block in docs/architecture.md is not closed")


def _unit(module: str) -> str | None:
    """The package or top module of ``lazygen.runtime`` that ``module`` belongs to (the
    composition root is ``lazygen.runtime`` itself)."""
    if module == RUNTIME:
        return RUNTIME
    if module.startswith(RUNTIME + "."):
        return module[len(RUNTIME) + 1 :].split(".")[0]
    return None


def layer_violations(edges, layers: list[tuple[str, ...]]) -> list[str]:
    """Imports between the runtime's units that do not go down the documented order."""
    rank = {name: len(layers) - i for i, names in enumerate(layers) for name in names}
    wrong = []
    for source, target, line in edges:
        a, b = _unit(source), _unit(target)
        if a is None or b is None or a == b:
            continue
        if a not in rank or b not in rank:
            missing = a if a not in rank else b
            wrong.append(f"{source} -> {target} (line {line}): {missing} is in no layer")
        elif rank[a] <= rank[b]:
            how = "up" if rank[a] < rank[b] else "sideways"
            wrong.append(f"{source} -> {target} (line {line}): {a} imports {b}, {how}")
    return wrong


def test_imports_follow_the_documented_order():
    layers = documented_layers(DOCS.read_text())
    wrong = layer_violations(_edges(), layers)
    assert not wrong, (
        "imports against the order of docs/architecture.md (move the code to where it "
        "belongs; a hidden import is no fix):\n" + "\n".join(wrong)
    )


def test_every_runtime_package_and_top_module_has_a_layer():
    listed = {name for names in documented_layers(DOCS.read_text()) for name in names}
    units = {RUNTIME}
    for path in (PACKAGE / "runtime").iterdir():
        if path.suffix == ".py" and path.name != "__init__.py":
            units.add(path.stem)
        elif (path / "__init__.py").is_file():
            units.add(path.name)
    assert units == listed, (
        f"not in docs/architecture.md's layers: {sorted(units - listed)}; "
        f"listed but gone: {sorted(listed - units)}"
    )


def test_the_order_scan_catches_an_import_up_sideways_and_unlisted():
    """The edges come from ``_imports``, which walks function bodies too (next test)."""
    layers = [("execution",), ("tracing", "graph"), ("state",)]
    edges = [
        (f"{RUNTIME}.tracing.fallback", f"{RUNTIME}.execution.executor", 2),  # up
        (f"{RUNTIME}.tracing.tensor", f"{RUNTIME}.graph", 3),  # sideways
        (f"{RUNTIME}.tracing.tensor", f"{RUNTIME}.state", 4),  # down: fine
        (f"{RUNTIME}.tracing.tensor", f"{RUNTIME}.tracing.ir_reuse", 5),  # own package
        (f"{RUNTIME}.newthing", f"{RUNTIME}.state", 6),  # in no layer
    ]
    wrong = layer_violations(edges, layers)
    assert len(wrong) == 3, wrong
    assert "tracing imports execution, up" in wrong[0]
    assert "tracing imports graph, sideways" in wrong[1]
    assert "newthing is in no layer" in wrong[2]


def test_the_layer_block_is_read_as_written():
    text = "x\n<!-- runtime layers: top first -->\n```text\n" "a, b | top\nc | bottom\n```\n"
    assert documented_layers(text) == [("a", "b"), ("c",)]


def test_the_scanner_sees_imports_inside_functions(tmp_path):
    """The scan must count function-level imports (they used to hide a cycle)."""
    module = PACKAGE / "runtime" / "execution" / "executor.py"
    names = {target for target, _ in _imports(module)}
    assert "lazygen.runtime.devices" in names
    path = tmp_path / "hidden.py"
    path.write_text("def f():\n    from ..execution import executor\n")
    found = [name for name, _ in _imports_of(path, f"{RUNTIME}.tracing.hidden")]
    assert found == [f"{RUNTIME}.execution.executor"]


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


#: What ``lazygen.dynamo`` may import of the runtime: the public API, the public ``metrics``
#: module, and the one interface module written for it.
DYNAMO_MAY_IMPORT = frozenset({RUNTIME, f"{RUNTIME}.metrics", f"{RUNTIME}.capture_interface"})


def dynamo_reaches_inside(edges) -> list[str]:
    """The imports of ``lazygen.dynamo`` that reach past the runtime's interface."""
    return [
        f"{s} -> {t} (line {n})"
        for s, t, n in edges
        if s.startswith("lazygen.dynamo") and t.startswith(RUNTIME) and t not in DYNAMO_MAY_IMPORT
    ]


def test_dynamo_uses_the_runtime_through_its_interface():
    wrong = dynamo_reaches_inside(_edges())
    assert not wrong, (
        "lazygen.dynamo imports runtime internals; add the name to "
        "lazygen/runtime/capture_interface.py and import it from there:\n" + "\n".join(wrong)
    )


def test_the_dynamo_scan_catches_an_internal_import():
    edges = [
        ("lazygen.dynamo.capture", f"{RUNTIME}.ops.facts", 3),
        ("lazygen.dynamo.capture", f"{RUNTIME}.capture_interface", 4),
        ("lazygen.dynamo.capture", RUNTIME, 5),
    ]
    assert dynamo_reaches_inside(edges) == [
        f"lazygen.dynamo.capture -> {RUNTIME}.ops.facts (line 3)"
    ]


#: Backends built on another one, which they may import: Inductor compiles the ``fx``
#: backend's GraphModules.
BASES = {"inductor": frozenset({"fx"})}


def test_only_backends_import_a_backend():
    wrong = []
    for source, target, line in _edges():
        backend = _backend_of(target)
        if backend is None or not source.startswith(RUNTIME):
            continue
        if _backend_of(source) == backend or backend in BASES.get(_backend_of(source), ()):
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
