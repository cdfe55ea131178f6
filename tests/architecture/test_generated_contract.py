"""Generated code reads only what docs/architecture.md's generated-code contract lists:
of the runtime's private names, the three ``LazyTensor`` slots of the fast path
(``_value``, ``_shape``, ``_device``); everything else is public (``rt.*``, ``Node``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = {"_value", "_shape", "_device"}
#: Generated trees: the built-in backend's and the golden record's.
TREES = [ROOT / "generated", ROOT / "tests" / "golden" / "basic" / "expected"]


#: Modules whose attributes are named after ops (``kernels._softmax``, the hand-written
#: package's ``kernels._to_copy``): op names may start with an underscore.
OP_NAMED = {"aten", "kernels", "autograd", "hand_written", "shape_functions"}


def _is_op_namespace(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in OP_NAMED
    return isinstance(node, ast.Attribute) and node.attr == "aten"


@pytest.mark.parametrize(
    "path",
    [p for tree in TREES for p in sorted(tree.rglob("*.py"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_generated_code_reads_only_the_contract(path):
    private = {
        node.attr
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not _is_op_namespace(node.value)
    }
    assert private <= CONTRACT, f"{path.name} reads {sorted(private - CONTRACT)}"


def test_the_contract_is_documented():
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert all(f"`t.{name}:" in text for name in CONTRACT)
