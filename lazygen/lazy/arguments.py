"""`LazyArgument`: how one schema argument appears in the lazy IR and in the kernel.

Every argument is one of: an IR operand (a value computed by the graph), a hashed
attribute (a constant baked into the node). A random op's `Generator?` is an operand too:
a graph input holding a copy of the generator's state (`rt.generator`). The rules are a
table from the argument's type to an `ArgKind`; nothing here formats code.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from enum import Enum

from lazygen.model.types import BaseTy, BaseType, ListType, OptionalType, Type


class ArgKind(Enum):
    """What an argument becomes; the value names the `rt.*`/`ctx.*` call for operands."""

    tensor = "tensor"
    optional_tensor = "optional_tensor"
    tensor_list = "tensor_list"
    optional_tensor_list = "optional_tensor_list"
    scalar = "scalar"
    optional_scalar = "optional_scalar"
    symint = "symint"
    symint_list = "symint_list"
    attribute = "attribute"
    generator = "generator"

    @property
    def is_operand(self) -> bool:
        return self is not ArgKind.attribute


#: Base types an attribute may have: hashable constants that TorchScript can embed.
ATTRIBUTE_BASES = frozenset(
    {
        BaseTy.int,
        BaseTy.SymInt,
        BaseTy.float,
        BaseTy.bool,
        BaseTy.str,
        BaseTy.ScalarType,
        BaseTy.Layout,
        BaseTy.Device,
        BaseTy.MemoryFormat,
        BaseTy.Scalar,
    }
)

_TENSOR = BaseType(BaseTy.Tensor)
_OPERAND_KINDS: dict[str, ArgKind] = {
    "Tensor": ArgKind.tensor,
    "Tensor?": ArgKind.optional_tensor,
    "Tensor[]": ArgKind.tensor_list,
    "Tensor?[]": ArgKind.optional_tensor_list,
    "Scalar": ArgKind.scalar,
    "Scalar?": ArgKind.optional_scalar,
}
_SYMINT_KINDS: dict[str, ArgKind] = {"SymInt": ArgKind.symint, "SymInt[]": ArgKind.symint_list}


class UnsupportedArgument(ValueError):
    """The argument's type has no lazy representation (e.g. `Dimname`, `Storage`)."""


def classify(t: Type, *, symint: bool, scalars_as_constants: bool) -> ArgKind:
    """The `ArgKind` of an argument of type `t` (see docs/architecture.md)."""
    text = str(t)
    if text in ("Generator?", "Generator"):
        return ArgKind.generator
    kind = _OPERAND_KINDS.get(text)
    if kind is not None:
        if kind in (ArgKind.scalar, ArgKind.optional_scalar) and scalars_as_constants:
            return ArgKind.attribute
        return kind
    if symint and text in _SYMINT_KINDS:
        return _SYMINT_KINDS[text]
    if _is_attribute_type(t):
        return ArgKind.attribute
    raise UnsupportedArgument(f"type {text} has no lazy IR representation")


def _is_attribute_type(t: Type) -> bool:
    if isinstance(t, OptionalType):
        return _is_attribute_type(t.elem)
    if isinstance(t, ListType):
        return not isinstance(t.elem, ListType) and _is_attribute_type(t.elem)
    return t.name in ATTRIBUTE_BASES


def is_list_type(t: Type) -> bool:
    """`T[]` or `T[]?`: the kernel turns the value into a tuple before hashing it."""
    inner = t.elem if isinstance(t, OptionalType) else t
    return isinstance(inner, ListType)


#: Names a generated function body uses for itself; arguments are renamed around them.
RESERVED_NAMES = frozenset({"rt", "aten", "torch", "ctx", "self"})


def python_name(name: str) -> str:
    """A Python identifier for an argument: keywords get a trailing underscore."""
    return f"{name}_" if keyword.iskeyword(name) or keyword.issoftkeyword(name) else name


@dataclass(frozen=True, slots=True)
class LazyArgument:
    """One schema argument as the lazy IR sees it."""

    name: str
    type: Type
    kind: ArgKind
    keyword_only: bool
    default: str | None
    #: Index into `Node.operands` or `Node.attrs`.
    slot: int | None

    @property
    def is_operand(self) -> bool:
        return self.kind.is_operand

    @property
    def is_attribute(self) -> bool:
        return self.kind is ArgKind.attribute

    @property
    def is_generator(self) -> bool:
        return self.kind is ArgKind.generator

    @property
    def is_list(self) -> bool:
        return is_list_type(self.type)

    @property
    def is_optional(self) -> bool:
        return isinstance(self.type, OptionalType)

    @property
    def ident(self) -> str:
        """The Python parameter name (the schema name unless it is a Python keyword)."""
        return python_name(self.name)

    @property
    def local(self) -> str:
        """A local variable name inside a node method (`self` -> `self_`)."""
        return f"{self.name}_" if self.name in RESERVED_NAMES else self.ident

    @property
    def dropped_at_one(self) -> bool:
        """A `Scalar` operand whose default is 1 (`add`'s `alpha`, `addcmul`'s `value`): a
        call passing the int 1 (the default, nearly every call) records no graph input
        for it (the operand is None) and lowers it as the constant 1. Eager's result is
        the same (an int 1 changes neither the values nor the promoted dtype), and a
        traced op saves making the input (~0.3 us, 5% of a traced `add`)."""
        return self.kind is ArgKind.scalar and self.default == "1"

    @property
    def call(self) -> str:
        """The `rt.*` / `ctx.*` method for this argument (`constant` for attributes)."""
        return "constant" if self.kind is ArgKind.attribute else self.kind.value
