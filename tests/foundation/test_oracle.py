"""Oracle: every parsed schema equals the schema the running torch registers.

Compared field by field (name, overload, argument names, types, fixed list sizes,
defaults, keyword-only, alias annotations, returns) after this normalisation:

* types are compared in torch's own spelling, which is what `Argument.real_type` prints:
  `T?` is `Optional[T]`, `T[]` is `List[T]`, `Scalar` is `number`, and `SymInt`,
  `SymBool`, `DeviceIndex` print as `int`, `bool`, `int`;
* defaults are compared as values: enum spellings (`Mean`, `contiguous_format`, `long`)
  become the numbers torch stores, a scalar default of a fixed-size list (`int[2] x=1`)
  is repeated, and float text is compared as a float;
* for list arguments (`Tensor(a!)[]`) torch's Python API exposes only the write flag of
  the alias annotation (the alias set sits on the element type), so only that flag is
  compared.
"""

from __future__ import annotations

import ast
import math

import pytest
import torch

from lazygen.loaders.native_yaml import load_catalogue
from lazygen.model.schema import Argument, Return
from lazygen.model.types import (
    Annotation,
    BaseType,
    ListType,
    OptionalType,
    Type,
    unwrap_optional,
)

_ENUM_DEFAULTS = {
    "Mean": 1,  # at::Reduction::Mean
    "contiguous_format": 0,  # c10::MemoryFormat::Contiguous
    "long": 4,  # c10::ScalarType::Long
}
_TORCH_TYPE_NAMES = {
    "Scalar": "number",
    "SymInt": "int",
    "SymBool": "bool",
    "DeviceIndex": "int",
    "Dimname": "str",
}


def torch_type_name(t: Type) -> str:
    if isinstance(t, OptionalType):
        return f"Optional[{torch_type_name(t.elem)}]"
    if isinstance(t, ListType):
        return f"List[{torch_type_name(t.elem)}]"
    assert isinstance(t, BaseType)
    return _TORCH_TYPE_NAMES.get(t.name.value, t.name.value)


def default_value(arg: Argument):
    text = arg.default
    if text in _ENUM_DEFAULTS:
        value = _ENUM_DEFAULTS[text]
    elif text in ("True", "False", "None"):
        value = {"True": True, "False": False, "None": None}[text]
    else:
        value = ast.literal_eval(text)
    size = arg.type.size if isinstance(arg.type, ListType) else None
    if size and not isinstance(value, list):
        value = [value] * size
    return value


def same_default(ours, theirs) -> bool:
    if isinstance(ours, float) or isinstance(theirs, float):
        return math.isclose(float(ours), float(theirs), rel_tol=1e-12)
    if isinstance(theirs, torch.memory_format | torch.dtype):
        return ours == theirs
    if isinstance(ours, list):
        return list(theirs) == ours
    return ours == theirs


def alias_of(annotation: Annotation | None, info, is_list: bool) -> str | None:
    """A mismatch message, or None when the annotation matches torch's alias info."""
    if is_list and annotation is not None and info is not None:
        same = info.is_write == annotation.is_write
        return None if same else f"({annotation}) vs write={info.is_write}"
    if annotation is None:
        return None if info is None or not (info.before_set or info.is_write) else "extra alias"
    if info is None:
        return f"torch has no alias info for ({annotation})"
    before = set(annotation.alias_set)
    after = set(annotation.alias_set_after) or before
    if info.before_set != before or info.after_set != after or info.is_write != annotation.is_write:
        return f"({annotation}) vs {info.before_set}->{info.after_set} write={info.is_write}"
    return None


def compare_value(ours: Argument | Return, theirs, kind: str) -> list[str]:
    problems = []
    if (ours.name or "") != (theirs.name or ""):
        problems.append(f"{kind} name {ours.name!r} vs {theirs.name!r}")
    ours_type = torch_type_name(ours.type)
    if ours_type != str(theirs.real_type):
        problems.append(f"{kind} {ours.name} type {ours_type} vs {theirs.real_type}")
    plain = unwrap_optional(ours.type)
    size = plain.size if isinstance(plain, ListType) else None
    if isinstance(ours, Argument) and size != theirs.N:
        problems.append(f"{kind} {ours.name} fixed size {size} vs {theirs.N}")
    alias = alias_of(ours.annotation, theirs.alias_info, isinstance(plain, ListType))
    if alias:
        problems.append(f"{kind} {ours.name} alias {alias}")
    return problems


def compare(f, schema) -> list[str]:
    problems = []
    if schema.name != f"aten::{f.name.name}" or schema.overload_name != f.name.overload:
        problems.append(f"name {schema.name}.{schema.overload_name}")
    args = f.func.arguments
    keyword = {a.name for a in args.kwarg_only + args.out}
    if len(args.all) != len(schema.arguments):
        return problems + [f"{len(args.all)} arguments vs {len(schema.arguments)}"]
    for ours, theirs in zip(args.all, schema.arguments, strict=True):
        problems += compare_value(ours, theirs, "argument")
        if (ours.name in keyword) != theirs.kwarg_only:
            problems.append(f"argument {ours.name} keyword-only differs")
        has_default = ours.default is not None
        if has_default != theirs.has_default_value():
            problems.append(f"argument {ours.name} default presence differs")
        elif has_default and not same_default(default_value(ours), theirs.default_value):
            problems.append(
                f"argument {ours.name} default {ours.default} vs {theirs.default_value}"
            )
    if len(f.func.returns) != len(schema.returns):
        return problems + [f"{len(f.func.returns)} returns vs {len(schema.returns)}"]
    for ours, theirs in zip(f.func.returns, schema.returns, strict=True):
        problems += compare_value(ours, theirs, "return")
    return problems


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def registered_schema(name):
    packet = getattr(torch.ops.aten, name.name, None)
    if packet is None or name.overload_or_default not in packet.overloads():
        return None
    return getattr(packet, name.overload_or_default)._schema


def test_every_registered_operator_matches_torch(catalogue):
    compared, unregistered, mismatches = 0, [], {}
    for f in catalogue:
        schema = registered_schema(f.name)
        if schema is None:
            unregistered.append(str(f.name))
            continue
        compared += 1
        problems = compare(f, schema)
        if problems:
            mismatches[str(f.name)] = problems
    print(
        f"\noracle: compared {compared} operators with torch's registered schemas; "
        f"{len(mismatches)} mismatches; {len(unregistered)} not registered by torch"
    )
    assert compared > 3000
    assert not mismatches, dict(list(mismatches.items())[:20])
    # Entries torch does not register are autogen out= variants of ops whose out= form
    # torch spells differently; they must stay few and must all be codegen-derived.
    assert len(unregistered) < 20, unregistered
    assert all(catalogue[n].generated for n in map(_parse_name, unregistered))


def test_registered_schema_text_normalises_identically(catalogue):
    """Torch's own parser, applied to our printed schema, gives torch's registered schema."""
    checked = 0
    for f in catalogue:
        schema = registered_schema(f.name)
        if schema is None:
            continue
        assert str(torch._C.parse_schema(f"aten::{f.func}")) == str(schema), f.name
        checked += 1
    assert checked > 3000


def _parse_name(text):
    from lazygen.model.schema import OperatorName

    return OperatorName.parse(text)
