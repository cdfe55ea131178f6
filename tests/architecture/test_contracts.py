"""The runtime's contracts are documented and its errors share one base class.

* Every method of ``LoweringContext`` and ``Backend`` (what a backend author implements or
  may override) has a docstring.
* The runtime raises ``LazygenRuntimeError`` (or a subclass), never a bare ``RuntimeError``
  (called or raised as the class).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import lazygen.runtime as lr
from lazygen.runtime.errors import LazygenRuntimeError, LazyGraphError

RUNTIME = Path(lr.__file__).resolve().parent


@pytest.mark.parametrize("contract", [lr.LoweringContext, lr.Backend], ids=lambda c: c.__name__)
def test_every_contract_method_is_documented(contract):
    undocumented = [
        name
        for name, member in vars(contract).items()
        if inspect.isfunction(member) and not (member.__doc__ or "").strip()
    ]
    assert not undocumented, f"{contract.__name__}: no docstring on {undocumented}"


def test_graph_errors_are_runtime_errors_of_lazygen():
    assert issubclass(LazyGraphError, LazygenRuntimeError)
    assert issubclass(LazygenRuntimeError, RuntimeError)


def bare_runtime_errors(source: str) -> list[int]:
    """Lines raising a bare ``RuntimeError``: called (``raise RuntimeError("...")``),
    raised as the class (``raise RuntimeError``), or through ``builtins.RuntimeError``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        named = getattr(node, "func", None) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Raise):
            named = node.exc
        if _names_runtime_error(named):
            lines.append(node.lineno)
    return sorted(set(lines))


def _names_runtime_error(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "RuntimeError"
    return isinstance(node, ast.Attribute) and node.attr == "RuntimeError"


@pytest.mark.parametrize(
    "source",
    [
        'raise RuntimeError("x")',
        "raise RuntimeError",
        "raise builtins.RuntimeError('x')",
        "error = RuntimeError('x')",
        "raise RuntimeError from None",
    ],
)
def test_the_scan_finds_each_bare_runtime_error(source):
    assert bare_runtime_errors(source), source


@pytest.mark.parametrize(
    "source",
    [
        "raise LazygenRuntimeError('x')",
        "except RuntimeError:\n    pass",
        "isinstance(e, RuntimeError)",
        "class E(RuntimeError):\n    pass",
    ],
)
def test_the_scan_leaves_catching_and_subclassing_alone(source):
    if source.startswith("except"):
        source = "try:\n    f()\n" + source
    assert not bare_runtime_errors(source), source


@pytest.mark.parametrize(
    "path", sorted(RUNTIME.rglob("*.py")), ids=lambda p: str(p.relative_to(RUNTIME))
)
def test_no_bare_runtime_error(path):
    lines = bare_runtime_errors(path.read_text())
    assert not lines, f"{path.name}: a bare RuntimeError at lines {lines} (use LazygenRuntimeError)"
