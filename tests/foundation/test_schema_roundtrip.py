"""Every schema in the installed native_functions.yaml prints back exactly as written."""

from __future__ import annotations

import pytest

import yaml
from lazygen.diagnostics import SchemaParseError
from lazygen.loaders.native_yaml import NativeSources
from lazygen.model.schema import FunctionSchema, OperatorName, SchemaKind
from lazygen.model.types import Annotation, ListType, OptionalType, parse_annotated_type


def test_every_installed_schema_round_trips():
    entries = yaml.load(
        NativeSources.default().native_functions.read_text(), Loader=yaml.CSafeLoader
    )
    texts = [e["func"] for e in entries]
    for text in texts:
        assert str(FunctionSchema.parse(text)) == text
    assert len(texts) > 2500


@pytest.mark.parametrize(
    "text, kind",
    [
        (
            "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            SchemaKind.functional,
        ),
        (
            "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
            SchemaKind.inplace,
        ),
        (
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
            SchemaKind.out,
        ),
        ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", SchemaKind.inplace),
        (
            "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min) -> Tensor",
            SchemaKind.mutable,
        ),
    ],
)
def test_schema_kind(text, kind):
    assert FunctionSchema.parse(text).kind() is kind


def test_parts_of_a_schema():
    schema = FunctionSchema.parse(
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"
    )
    assert schema.name == OperatorName("split", "Tensor")
    self_arg = schema.arguments.positional[0]
    assert self_arg.annotation == Annotation(("a",), False, ("*",))
    assert schema.arguments.positional[2].default == "0"
    assert isinstance(schema.returns[0].type, ListType)
    max_dim = FunctionSchema.parse(
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    )
    assert [r.name for r in max_dim.returns] == ["values", "indices"]


def test_annotated_list_and_optional_types():
    t, ann = parse_annotated_type("Tensor(a!)[]")
    assert isinstance(t, ListType) and ann.is_write
    t, ann = parse_annotated_type("Tensor?[]")
    assert isinstance(t, ListType) and isinstance(t.elem, OptionalType) and ann is None
    t, _ = parse_annotated_type("int[2]?")
    assert isinstance(t, OptionalType) and t.elem.size == 2


def test_operator_name_properties():
    assert OperatorName.parse("add_.Tensor").base == "add"
    assert OperatorName.parse("__iand__.Tensor").base == "__and__"
    assert not OperatorName.parse("__and__.Tensor").inplace
    assert OperatorName.parse("relu").overload_or_default == "default"


@pytest.mark.parametrize(
    "text",
    [
        "add(Tensor self",
        "add(Tensr self) -> Tensor",
        "add(Tensor self, Tensor self) -> Tensor",
        "add(Tensor(A) self) -> Tensor",
        "add(Tensor self, *, *, int x) -> Tensor",
        "add(Tensor self,, Tensor other) -> Tensor",
        "add.(Tensor self) -> Tensor",
        "add(Tensor  self) -> Tensor",
    ],
)
def test_malformed_schemas_raise_parse_errors(text):
    with pytest.raises(SchemaParseError):
        FunctionSchema.parse(text)
