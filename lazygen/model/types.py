"""The type language of operator schemas: base types, optionals, lists, alias annotations.

Every class parses its own text (`parse`) and prints it back exactly (`__str__`), so
`str(T.parse(s)) == s` holds for every type in native_functions.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from lazygen.diagnostics import SchemaParseError


class BaseTy(Enum):
    """The named base types a schema may use."""

    Tensor = "Tensor"
    Scalar = "Scalar"
    ScalarType = "ScalarType"
    SymInt = "SymInt"
    SymBool = "SymBool"
    int = "int"
    float = "float"
    bool = "bool"
    str = "str"
    Layout = "Layout"
    Device = "Device"
    DeviceIndex = "DeviceIndex"
    MemoryFormat = "MemoryFormat"
    Generator = "Generator"
    Dimname = "Dimname"
    DimVector = "DimVector"
    QScheme = "QScheme"
    Storage = "Storage"
    Stream = "Stream"
    GraphModule = "GraphModule"


_BASE_BY_NAME = {member.value: member for member in BaseTy}


@dataclass(frozen=True, slots=True)
class BaseType:
    """A non-composite type such as `Tensor` or `int`."""

    name: BaseTy

    def __str__(self) -> str:
        return self.name.value

    def base(self) -> BaseType:
        return self

    def is_tensor_like(self) -> bool:
        return self.name is BaseTy.Tensor


@dataclass(frozen=True, slots=True)
class OptionalType:
    """`T?`: the value may be None."""

    elem: Type

    def __str__(self) -> str:
        return f"{self.elem}?"

    def base(self) -> BaseType:
        return self.elem.base()

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()


@dataclass(frozen=True, slots=True)
class ListType:
    """`T[]` or `T[N]` (a fixed size that also accepts a single value)."""

    elem: Type
    size: int | None = None

    def __str__(self) -> str:
        return f"{self.elem}[{'' if self.size is None else self.size}]"

    def base(self) -> BaseType:
        return self.elem.base()

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()


Type = BaseType | OptionalType | ListType

_LIST_SUFFIX = re.compile(r"^(.*)\[(\d*)\]$")


def parse_type(text: str) -> Type:
    """Parse a type without alias annotation (`Tensor?[]`, `int[2]`, `ScalarType?`)."""
    if text.endswith("?"):
        return OptionalType(parse_type(text[:-1]))
    match = _LIST_SUFFIX.match(text)
    if match:
        size = int(match.group(2)) if match.group(2) else None
        return ListType(parse_type(match.group(1)), size)
    base = _BASE_BY_NAME.get(text)
    if base is None:
        raise SchemaParseError(f"unknown type {text!r}")
    return BaseType(base)


def unwrap_optional(t: Type) -> Type:
    """`T?` -> `T`; anything else unchanged."""
    return t.elem if isinstance(t, OptionalType) else t


_ANNOTATION = re.compile(r"^([a-z])((?:\|[a-z])*)(!?)(?: -> (\*|[a-z](?:\|[a-z])*))?$")


@dataclass(frozen=True, slots=True)
class Annotation:
    """An alias annotation such as `a`, `a!`, `a|b` or `a -> *`.

    `alias_set` names the storage the value may share; `is_write` marks it mutated;
    `alias_set_after` is what it may alias after the call (`*`: anything).
    """

    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> Annotation:
        match = _ANNOTATION.match(text)
        if match is None:
            raise SchemaParseError(f"malformed alias annotation {text!r}")
        alias_set = (match.group(1),) + tuple(filter(None, match.group(2).split("|")))
        after = tuple(match.group(4).split("|")) if match.group(4) else ()
        annotation = Annotation(alias_set, match.group(3) == "!", after)
        if annotation.is_write and len(alias_set) > 1:
            raise SchemaParseError(f"a written alias set must have one member: {text!r}")
        return annotation

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            text += " -> " + "|".join(self.alias_set_after)
        return text


_ANNOTATED_TYPE = re.compile(r"^(\w+)\(([^)]*)\)(.*)$")


def parse_annotated_type(text: str) -> tuple[Type, Annotation | None]:
    """Parse `Tensor(a!)[]`-style text into the type and its annotation.

    The annotation always follows the base type name, before any `?` or `[]` suffix.
    """
    match = _ANNOTATED_TYPE.match(text)
    if match is None:
        return parse_type(text), None
    base, annotation, suffix = match.groups()
    return parse_type(base + suffix), Annotation.parse(annotation)


def format_annotated_type(t: Type, annotation: Annotation | None) -> str:
    """Inverse of `parse_annotated_type`."""
    text = str(t)
    if annotation is None:
        return text
    base = str(t.base())
    return f"{base}({annotation}){text[len(base):]}"
