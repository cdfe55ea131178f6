"""Op names live in the op modules only (issue 42 item 2, issue 52): the core knows no op.

Where the core must treat some ops apart, the fact is declared where the op lives (the
``runtime/ops`` package: ``ops/facts.py`` or the op's own module; the built-in op list's
``runtime/builtin``) and read through the one registry, ``runtime/op_registry.py``, keyed by
the op; an op's spellings are converted in the same module, which names no op itself. The scan covers every module of ``lazygen/runtime`` and of
``lazygen/dynamo`` (the front end); the modules that may name ops are listed one by
one in ``OP_MODULES`` with the reason (an op's kernels, lowerings or facts), and each of them
must name one (a module that stops naming ops leaves the list); ``OP_PACKAGES`` are folders of
op modules (the jax backend's op families). Everywhere else it flags

* a string constant that is an aten op's schema name (``"aten::mm"``, ``"aten::sort.stable"``);
* a string constant that is a bare aten op name, with or without overload (``"addcdiv"``,
  ``"add.Tensor"``): not in docstrings, ``__all__``, ``__slots__`` or the attribute name of
  ``getattr``/``hasattr``, and not the few words listed in ``NOT_OPS`` (``"dot"``, Graphviz's
  format), each with what it means there;
* an attribute chain ``torch.ops.aten.<op>`` (or ``aten.<op>`` through an alias);
* a set, tuple, list or dict of two or more strings that are all aten op names (a table of
  bare names, ``{"ones_like", "zeros_like"}``).

Prose (docstrings, error messages) is not flagged: only whole strings that are a name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

import lazygen.runtime  # noqa: F401  (the ops package declares the facts on import)
from lazygen.runtime import op_registry

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "lazygen" / "runtime"
DYNAMO = ROOT / "lazygen" / "dynamo"
#: The modules that may name ops (relative to ``lazygen/runtime``; the front end's under
#: ``dynamo/``), by why.
OP_MODULES = {
    **dict.fromkeys(
        (
            "ops/__init__.py", "ops/attention.py", "ops/attention_op.py",
            "ops/attention_reference.py", "ops/batch_norm.py", "ops/device_copies.py",
            "ops/facts.py", "ops/fused_optimizers.py", "ops/grad_scaling.py", "ops/gru.py",
            "ops/histc.py", "ops/lstm.py", "ops/multinomial.py", "ops/recurrent_cells.py",
            "ops/recurrent_lowering.py",
        ),
        "the runtime's op-specific kernels and the facts about ops",
    ),
    **dict.fromkeys(
        (
            "builtin/hand_written/autograd.py", "builtin/hand_written/kernels.py",
            "builtin/hand_written/lowerings.py", "builtin/hand_written/shape_functions.py",
        ),
        "the built-in op list's hand-written pieces",
    ),
    **dict.fromkeys(
        (
            "privateuse1/autocast.py", "privateuse1/factories.py",
            "privateuse1/foreach_meta.py", "privateuse1/host_copy.py",
            "privateuse1/pinned_memory.py", "privateuse1/resize.py",
            "privateuse1/subclass_reentry.py",
            "distributed/fsdp.py",
        ),
        "kernels of particular ops at torch's dispatcher (PrivateUse1, FSDP2's fsdp:: ops)",
    ),
    **dict.fromkeys(
        (
            "backends/inductor/op_lowerings.py", "backends/fx/lowering.py",
            "backends/inductor/random_draws.py",
            "backends/jax/lowering.py", "backends/jax/refusals.py", "backends/torchscript/backend.py",
            "backends/torchscript/lowering.py", "backends/torchscript/passes.py",
        ),
        "a backend's lowerings and refusals, by op",
    ),
    **dict.fromkeys(
        ("dynamo/interpreter.py", "dynamo/layouts.py"),
        "the front end's handling of ops that Dynamo's graphs hold (substitutes, stride queries)",
    ),
}  # fmt: skip
#: Packages of op modules (the jax backend's op families): a module added there may name
#: ops without being listed.
OP_PACKAGES = {"backends/jax/ops/": "the jax backend's lowerings, one module per op family"}
#: Whole strings of core modules that spell an aten op's name but name something else there.
NOT_OPS = {
    ("debug.py", "dot"): "Graphviz's format of an IR dump",
    ("tracing/tensor.py", "data"): "the kind of a graph input in a dump",
    ("distributed/process_group.py", "sum"): "c10d's reduce kind",
    ("distributed/process_group.py", "min"): "c10d's reduce kind",
    ("distributed/process_group.py", "max"): "c10d's reduce kind",
    ("backends/inductor/direct.py", "is_inference"): "a keyword of Inductor's inner compile",
    ("privateuse1/tied_parameters.py", "to"): "torch.nn.Module.to, the method it wraps",
    ("op_registry.py", "_backward"): "the suffix of a backward op's name",
}
WHERE = (
    "declare the fact in lazygen/runtime/ops/facts.py (or the op's own runtime/ops/ module) "
    "with op_registry.declare, name it in op_registry.FACTS, and read it in the core with "
    "op_registry.get(<fact>)"
)

_SCHEMA = re.compile(r"aten::(\w+)(\.\w+)?")


def _aten_names() -> frozenset[str]:
    """Every aten op's name without overload, from the dispatcher."""
    names = torch._C._dispatch_get_all_op_names()
    return frozenset(n[6:].split(".")[0] for n in names if n.startswith("aten::"))


ATEN = _aten_names()


def _runtime_files() -> list[Path]:
    """Every module of ``lazygen/runtime`` and of ``lazygen/dynamo`` (the front end)."""
    return sorted(RUNTIME.rglob("*.py")) + sorted(DYNAMO.rglob("*.py"))


def _rel(path: Path) -> str:
    """``tracing/tensor.py`` for a runtime module, ``dynamo/capture.py`` for the front end's."""
    if DYNAMO in path.parents:
        return "dynamo/" + path.relative_to(DYNAMO).as_posix()
    return path.relative_to(RUNTIME).as_posix()


def _path(relative: str) -> Path:
    if relative.startswith("dynamo/"):
        return DYNAMO / relative.removeprefix("dynamo/")
    return RUNTIME / relative


def _is_op_module(relative: str) -> bool:
    return relative in OP_MODULES or relative.startswith(tuple(OP_PACKAGES))


def _op_modules() -> list[str]:
    every = [_rel(p) for p in _runtime_files()]
    return sorted(set(OP_MODULES) | {r for r in every if r.startswith(tuple(OP_PACKAGES))})


def _core_files() -> list[Path]:
    return [p for p in _runtime_files() if not _is_op_module(_rel(p))]


def _chain(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _strings(nodes) -> list[str] | None:
    values = [n.value for n in nodes if isinstance(n, ast.Constant)]
    if len(values) != len(nodes) or not all(isinstance(v, str) for v in values):
        return None
    return values


def _not_names(tree: ast.AST) -> set[int]:
    """Ids of the string constants that are not code naming something: docstrings,
    ``__all__`` and ``__slots__`` entries, the attribute names given to ``getattr``/``hasattr``
    and the literal pieces of f-strings (``f"t{i}"``: prose around values).
    """
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.JoinedStr):
            skipped |= {id(v) for v in node.values if isinstance(v, ast.Constant)}
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("__all__", "__slots__") for t in node.targets
        ):
            skipped |= {id(n) for n in ast.walk(node.value)}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
        ):
            skipped.add(id(node.args[1]))
    return skipped


def _is_bare_name(value: str) -> bool:
    name, _, overload = value.partition(".")
    return name in ATEN and (not overload or overload.isidentifier())


def op_names_in(source: str, not_ops=frozenset()) -> list[tuple[int, str]]:
    """``(line, what)`` for each op name the rules above find in ``source`` (``not_ops``:
    the whole strings that name something else in this module)."""
    found = []
    tree = ast.parse(source)
    skipped = _not_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _SCHEMA.fullmatch(node.value)
            if match and match.group(1) in ATEN:
                found.append((node.lineno, repr(node.value)))
            elif (
                id(node) not in skipped and node.value not in not_ops and _is_bare_name(node.value)
            ):
                found.append((node.lineno, f"the bare op name {node.value!r}"))
        elif isinstance(node, ast.Attribute):
            chain = _chain(node)
            # Each chain once: its torch.ops.aten.<op> (or aten.<op>) part.
            direct = chain and chain[:3] == ["torch", "ops", "aten"] and len(chain) == 4
            aliased = chain and chain[0] == "aten" and len(chain) == 2 and chain[1] in ATEN
            if direct or aliased:
                found.append((node.lineno, ".".join(chain)))
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            names = _strings([e for e in elts if e is not None] if elts else [])
            if id(node) in skipped:
                continue
            if names and len(names) >= 2 and all(n in ATEN for n in names):
                found.append((node.lineno, f"a table of op names {names[:3]}..."))
    return found


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_op_name_in_the_core(path):
    relative = _rel(path)
    not_ops = {word for (module, word) in NOT_OPS if module == relative}
    found = op_names_in(path.read_text(), not_ops)
    rel = path.relative_to(ROOT)
    assert not found, "op names in a core module:\n" + "\n".join(
        f"{rel}:{line}: {what}: {WHERE}" for line, what in found
    )


@pytest.mark.parametrize(
    "source",
    [
        'X = "aten::mm"',
        'SLOW = frozenset({"aten::sort.stable"})',
        "OP = torch.ops.aten.reshape.default",
        "f = aten.zeros_like",
        'T = frozenset({"ones_like", "zeros_like"})',
        'M = {"norm": 1, "addmm": 2}',
        'if op._schema.name == "addcdiv":\n    pass',
        'SLOW = "add.Tensor"',
        'facts.get("x")["sort"]',
    ],
)
def test_the_scan_finds_each_form(source):
    assert op_names_in(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Lowered as ``aten::copy_``."""',
        "raise ValueError(\"pass torch.ops.aten.sort.stable or 'aten::sort'\")",
        'PREFIX = "aten::_foreach_"',
        'KINDS = ("device_data", "scalar")',
        "getattr(torch.ops, namespace)",
        '__all__ = ["trace", "inner"]',
        'dist = getattr(point, "dist", None)',
        'def f():\n    """addcdiv"""',
        'KIND = "not_an_op_name_at_all"',
        'names = [f"t{i}" for i in range(3)]',
    ],
)
def test_the_scan_leaves_prose_and_rules_alone(source):
    assert not op_names_in(source), source


def test_every_fact_the_core_reads_is_declared_in_the_ops_package():
    for fact in op_registry.FACTS:
        assert op_registry.declared_by(fact) == "lazygen.runtime.ops.facts", fact
        assert op_registry.get(fact), fact


def test_a_fact_has_one_home_and_a_known_name():
    with pytest.raises(ValueError, match="declared by lazygen.runtime.ops.facts and again"):
        op_registry.declare("host_reads", frozenset(), "somewhere.else")
    with pytest.raises(ValueError, match="not one the core reads"):
        op_registry.declare("no_such_fact", frozenset(), "somewhere.else")
    with pytest.raises(LookupError, match="never declared"):
        op_registry.get("no_such_fact")


@pytest.mark.parametrize("relative", sorted(OP_MODULES))
def test_every_listed_op_module_names_an_op(relative):
    """The list stays honest: a module that no longer names an op leaves it (and the scan
    then covers it)."""
    path = _path(relative)
    assert path.is_file(), f"{relative} is listed in OP_MODULES but does not exist"
    assert op_names_in(path.read_text()), f"{relative} names no op: take it out of OP_MODULES"


def test_the_scan_covers_every_runtime_module():
    scanned = {_rel(p) for p in _core_files()} | set(_op_modules())
    every = {_rel(p) for p in _runtime_files()}
    assert every <= scanned


def test_every_word_that_is_not_an_op_is_still_there():
    for module, word in NOT_OPS:
        source = _path(module).read_text()
        assert op_names_in(source) and not op_names_in(
            source, {word} | {w for (m, w) in NOT_OPS if m == module}
        ), (module, word)
