"""Schemas of operators that native_functions.yaml only names in an `autogen:` list.

`autogen: zero, zero.out` on `zero_` asks the codegen for a functional and an out= variant
that appear nowhere else in the file. Backends list such operators (`zero`, `random.from`)
like any other, so the catalogue derives their schemas with the same rules ATen uses:
mutated inputs become returns of the functional variant, and out= variants gain one
`Tensor(x!) out` argument per tensor return.
"""

from __future__ import annotations

import string

from lazygen.diagnostics import SchemaParseError
from lazygen.model.schema import (
    Argument,
    Arguments,
    FunctionSchema,
    OperatorName,
    Return,
    SchemaKind,
)
from lazygen.model.types import Annotation
from lazygen.model.types import BaseTy as _BaseTy

_TENSOR_OPTION_NAMES = ("dtype", "layout", "device", "pin_memory")


def derive_schema(parent: FunctionSchema, name: OperatorName) -> FunctionSchema:
    """The schema of the autogen variant `name` of `parent`."""
    if name.overload == "out" or name.overload.endswith("_out"):
        return _out_variant(parent, name)
    return _functional_variant(parent, name)


def _strip(arg: Argument) -> Argument:
    return Argument(arg.name, arg.type, arg.default, None)


def _signature_arguments(parent: FunctionSchema) -> Arguments:
    """Inputs without alias annotations, out= arguments or tensor options."""
    kwarg_only = parent.arguments.kwarg_only
    names = tuple(a.name for a in kwarg_only)
    if all(n in names for n in _TENSOR_OPTION_NAMES):
        kwarg_only = tuple(a for a in kwarg_only if a.name not in _TENSOR_OPTION_NAMES)
    return Arguments(
        tuple(_strip(a) for a in parent.arguments.positional),
        tuple(_strip(a) for a in kwarg_only),
    )


def _functional_variant(parent: FunctionSchema, name: OperatorName) -> FunctionSchema:
    if parent.kind() is SchemaKind.functional:
        raise SchemaParseError(f"{parent.name} is already functional; cannot derive {name}")
    returned = {r.annotation for r in parent.returns if r.annotation is not None}
    mutated = [
        a
        for a in parent.arguments.positional + parent.arguments.out
        if a.is_write and a.annotation not in returned
    ]
    mutated.sort(key=lambda a: (a.name != "self",))
    returns = tuple(Return(r.type, r.name, None) for r in parent.returns)
    returns += tuple(Return(a.type, f"{a.name}_out", None) for a in mutated)
    return FunctionSchema(name, _signature_arguments(parent), returns)


def _out_variant(parent: FunctionSchema, name: OperatorName) -> FunctionSchema:
    kind = parent.kind()
    if kind is SchemaKind.inplace:
        self_arg = parent.arguments.self_arg
        if self_arg is None:
            raise SchemaParseError(f"in-place {parent.name} has no self to turn into out=")
        positional = tuple(_strip(a) if a is self_arg else a for a in parent.arguments.positional)
        out = Argument("out", self_arg.type, None, self_arg.annotation)
        arguments = Arguments(positional, parent.arguments.kwarg_only, (out,))
        return FunctionSchema(name, arguments, parent.returns)
    returns, out_args = _out_arguments(parent)
    if kind is SchemaKind.mutable:
        base = parent.arguments
        arguments = Arguments(base.positional, base.kwarg_only, base.out + out_args)
    else:
        base = _signature_arguments(parent)
        arguments = Arguments(base.positional, base.kwarg_only, out_args)
    return FunctionSchema(name, arguments, returns)


def _out_arguments(parent: FunctionSchema) -> tuple[tuple[Return, ...], tuple[Argument, ...]]:
    used = {s for a in parent.arguments.all if a.annotation for s in a.annotation.alias_set}
    free = [c for c in string.ascii_lowercase if c not in used]
    plain_tensors = all(str(r.type) == _BaseTy.Tensor.value for r in parent.returns)
    returns: list[Return] = []
    out_args: list[Argument] = []
    for i, r in enumerate(parent.returns):
        if not r.type.is_tensor_like():
            returns.append(r)
            continue
        name = "out" if len(parent.returns) == 1 else f"out{i}"
        arg = Argument(name, r.type, None, Annotation((free[i],), True))
        out_args.append(arg)
        if plain_tensors:
            returns.append(Return(arg.type, None, arg.annotation))
    return tuple(returns), tuple(out_args)
