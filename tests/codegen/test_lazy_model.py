"""The LazyArgument / LazyIrSchema rules, node names, defaults and the plan's decisions."""

from __future__ import annotations

import pytest

from lazygen.lazy import ArgKind, LazyIrSchema, UnsupportedArgument, classify, node_class_name
from lazygen.lazy.defaults import python_default
from lazygen.lazy.ir_schema import NATIVE_DEFAULTS, NON_NATIVE_DEFAULTS, resolve_properties
from lazygen.model.schema import FunctionSchema, OperatorName
from lazygen.model.types import parse_type


@pytest.mark.parametrize(
    ("text", "symint", "constants", "kind"),
    [
        ("Tensor", False, False, ArgKind.tensor),
        ("Tensor?", False, False, ArgKind.optional_tensor),
        ("Tensor[]", False, False, ArgKind.tensor_list),
        ("Tensor?[]", False, False, ArgKind.optional_tensor_list),
        ("Scalar", False, False, ArgKind.scalar),
        ("Scalar?", False, False, ArgKind.optional_scalar),
        ("Scalar", False, True, ArgKind.attribute),
        ("Scalar?", False, True, ArgKind.attribute),
        ("SymInt", True, False, ArgKind.symint),
        ("SymInt[]", True, False, ArgKind.symint_list),
        ("SymInt", False, False, ArgKind.attribute),
        ("SymInt[]", False, False, ArgKind.attribute),
        ("SymInt?", True, False, ArgKind.attribute),
        ("int", False, False, ArgKind.attribute),
        ("int[2]", False, False, ArgKind.attribute),
        ("int[1]?", False, False, ArgKind.attribute),
        ("float", False, False, ArgKind.attribute),
        ("float[]?", False, False, ArgKind.attribute),
        ("bool", False, False, ArgKind.attribute),
        ("bool[3]", False, False, ArgKind.attribute),
        ("str?", False, False, ArgKind.attribute),
        ("ScalarType?", False, False, ArgKind.attribute),
        ("Layout?", False, False, ArgKind.attribute),
        ("Device?", False, False, ArgKind.attribute),
        ("MemoryFormat?", False, False, ArgKind.attribute),
        ("Generator?", False, False, ArgKind.generator),
    ],
)
def test_classify(text, symint, constants, kind):
    assert classify(parse_type(text), symint=symint, scalars_as_constants=constants) is kind


@pytest.mark.parametrize("text", ["Dimname", "Storage", "Stream", "Dimname[]"])
def test_unsupported_types(text):
    with pytest.raises(UnsupportedArgument):
        classify(parse_type(text), symint=False, scalars_as_constants=False)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("bitwise_and.Tensor", "BitwiseAndTensor"),
        ("add.Tensor", "AddTensor"),
        ("_softmax", "Softmax"),
        ("sum.dim_IntList", "SumDimIntlist"),
        ("native_layer_norm", "NativeLayerNorm"),
    ],
)
def test_node_class_names(name, cls):
    assert node_class_name(OperatorName.parse(name)) == cls


def test_schema_slots_and_order():
    func = FunctionSchema.parse(
        "f.x(Tensor self, int[2] k, Scalar s, *, Tensor? w=None, float eps=1e-05, "
        "Generator? generator=None) -> (Tensor, Tensor)"
    )
    ir = LazyIrSchema(func, NATIVE_DEFAULTS, symint=False)
    assert [a.name for a in ir.operands] == ["self", "s", "w", "generator"]
    assert [a.slot for a in ir.operands] == [0, 1, 2, 3]
    assert ir.operands[-1].is_generator and ir.operands[-1].call == "generator"
    assert [a.name for a in ir.attributes] == ["k", "eps"]
    assert [a.name for a in ir.keyword] == ["w", "eps", "generator"]
    assert ir.num_outputs == 2 and not ir.returns_list
    assert ir.op_kind == "aten::f" and ir.node_name == "FX" and ir.snake_name == "f_x"
    assert not ir.lowering_hand_written and ir.reuse == "default"


def test_properties_groups():
    props = resolve_properties(NON_NATIVE_DEFAULTS, frozenset({"ShapeCompute", "Lower"}))
    assert props == {"ShapeCompute", "Lower", "CanBeReused"}
    ir = LazyIrSchema(
        FunctionSchema.parse("scalar(Scalar value, ScalarType type) -> Tensor"),
        resolve_properties(
            NON_NATIVE_DEFAULTS, frozenset({"TreatScalarsAsConstants", "CanBeReusedDeclOnly"})
        ),
        symint=True,
        opkind="at::prim::Constant",
        native=False,
    )
    assert ir.operands == () and len(ir.attributes) == 2
    assert ir.op_kind == "prim::Constant" and ir.lowering_hand_written
    assert ir.reuse == "hand_written"


@pytest.mark.parametrize(
    ("type_text", "default", "python"),
    [
        ("int[2]", "1", "(1, 1)"),
        ("int[2]", "[]", "()"),
        ("int[1]", "[-2, -1]", "(-2, -1)"),
        ("int", "Mean", "1"),
        ("str", "'none'", '"none"'),
        ("MemoryFormat?", "contiguous_format", "torch.contiguous_format"),
        ("ScalarType?", "long", "torch.int64"),
        ("float", "1e-05", "1e-05"),
        ("float", "2", "2.0"),
        ("float?", "0", "0.0"),
        ("float[2]", "1", "(1.0, 1.0)"),
        ("float[]", "[1, 2.5]", "(1.0, 2.5)"),
        ("int", "2", "2"),
        ("Scalar", "1", "1"),
        ("bool?", "None", "None"),
    ],
)
def test_python_defaults(type_text, default, python):
    assert python_default(parse_type(type_text), default) == python
