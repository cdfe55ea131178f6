"""``ops.CORE_LOWERED_OPS`` lists every op the runtime itself hands a backend through
``ctx.call``: a backend author reads there what to lower or decline, instead of grepping
the runtime (issue #39 found them so)."""

from __future__ import annotations

import ast
import pathlib
import re

import torch

import lazygen.runtime as runtime
from lazygen.runtime import op_registry
from lazygen.runtime.ops import CORE_LOWERED_OPS
from lazygen.runtime.ops.gru import GRU_LAYERS
from lazygen.runtime.ops.lstm import LSTM_LAYERS

RUNTIME = pathlib.Path(runtime.__file__).parent
#: Where the runtime builds graph ops of its own (not the op list's nor a backend's).
SOURCES = [*sorted((RUNTIME / "ops").glob("*.py")), RUNTIME / "ir.py"]
SOURCES += [RUNTIME / "distributed" / "nodes.py"]
OP = re.compile(r"^(aten|_c10d_functional|lazygen)::[A-Za-z_0-9.]+$")
#: Calls that hand an op to the lowering context (``ctx.call`` and the helpers around it).
CALLERS = {"call", "op", "keywords", "_g"}


def _is_fact_lookup(node: ast.AST) -> bool:
    """``op_registry.get("<fact>")`` of a fact that names one op (``input_write``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and getattr(node.func.value, "id", "") == "op_registry"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(op_registry.get(node.args[0].value), torch._ops.OpOverload)
    )


def _called_ops(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["op"]:
            node = ast.Call(ast.Name("op"), [node.value], [])  # an op chosen, then called
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in CALLERS:
            continue
        for arg in node.args[:2]:  # the op, or one of the ops an expression picks
            for part in ast.walk(arg):
                if isinstance(part, ast.Constant) and OP.match(str(part.value)):
                    found.add(part.value)
                elif _is_fact_lookup(part):  # an op the core reads from the op facts
                    found.add(op_registry.op_string(op_registry.get(part.args[0].value)))
    return found


def test_every_op_the_runtime_lowers_on_its_own_is_listed():
    called = set().union(*(_called_ops(p) for p in SOURCES))
    assert {"aten::_to_copy", "aten::copy_", "_c10d_functional::all_reduce"} <= called
    missing = called - set(CORE_LOWERED_OPS)
    assert not missing, f"add these to lazygen.runtime.ops.CORE_LOWERED_OPS: {sorted(missing)}"


def test_the_list_names_only_ops_the_runtime_lowers():
    called = set().union(*(_called_ops(p) for p in SOURCES))
    assert not set(CORE_LOWERED_OPS) - called


def test_the_recurrent_nodes_are_declined_by_the_ops_the_guide_names():
    """The guide and ``CORE_LOWERED_OPS`` tell a backend how to decline the recurrent nodes:
    by refusing the layer op or a fused cell, the ops ``recurrent_tracing.declined`` asks
    about (``tests/runtime/ops/test_recurrent_refusals.py`` refuses each)."""
    guide = (RUNTIME.parents[1] / "docs" / "backend-guide.md").read_text()
    for kind in (LSTM_LAYERS, GRU_LAYERS):
        for op in (kind.op, *kind.cells):
            name = op._schema.name.split("::")[1]
            assert f"`{name}`" in guide, name
    assert len(LSTM_LAYERS.cells) == len(GRU_LAYERS.cells) == 2  # forward and backward cells
    assert "declines" in CORE_LOWERED_OPS["aten::sigmoid_backward"]
