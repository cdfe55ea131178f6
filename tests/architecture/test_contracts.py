"""The runtime's contracts are documented and its errors share one base class.

* Every method of ``LoweringContext`` and ``Backend`` (what a backend author implements or
  may override) has a docstring.
* The runtime raises ``LazygenRuntimeError`` (or a subclass), never a bare ``RuntimeError``.
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


@pytest.mark.parametrize(
    "path", sorted(RUNTIME.rglob("*.py")), ids=lambda p: str(p.relative_to(RUNTIME))
)
def test_no_bare_runtime_error(path):
    calls = [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "RuntimeError"
    ]
    assert not calls, f"{path.name}: RuntimeError(...) at lines {calls} (use LazygenRuntimeError)"
