"""Operator schemas: names, arguments, returns and whole function schemas.

Mirrors the JIT schema language used by native_functions.yaml. Each class parses its text
and prints it back exactly; `FunctionSchema.parse` asserts that round trip itself, so a
schema that would not print back unchanged is rejected instead of silently altered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from lazygen.diagnostics import SchemaParseError
from lazygen.model.types import (
    Annotation,
    BaseTy,
    BaseType,
    ListType,
    OptionalType,
    Type,
    format_annotated_type,
    parse_annotated_type,
)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_AUGMENTED_DUNDERS = frozenset(
    {"add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"}
)


@dataclass(frozen=True, slots=True, order=True)
class OperatorName:
    """`name.overload`; an empty overload is the default overload."""

    name: str
    overload: str = ""

    @staticmethod
    def parse(text: str) -> OperatorName:
        name, _, overload = text.partition(".")
        if not _IDENT.match(name) or (overload and not _IDENT.match(overload)):
            raise SchemaParseError(f"malformed operator name {text!r}")
        return OperatorName(name, overload)

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def is_dunder(self) -> bool:
        return len(self.name) > 4 and self.name.startswith("__") and self.name.endswith("__")

    @property
    def inplace(self) -> bool:
        """True for `add_` and augmented-assignment dunders such as `__iand__`."""
        if self.is_dunder:
            inner = self.name[2:-2]
            return inner.startswith("i") and inner[1:] in _AUGMENTED_DUNDERS
        return self.name.endswith("_")

    @property
    def base(self) -> str:
        """The name without the in-place marker: `add_` -> `add`, `__iand__` -> `__and__`."""
        if not self.inplace:
            return self.name
        if self.is_dunder:
            return f"__{self.name[3:-2]}__"
        return self.name[:-1]

    @property
    def overload_or_default(self) -> str:
        """The overload as `torch.ops` names it: `default` when empty."""
        return self.overload or "default"


@dataclass(frozen=True, slots=True)
class Argument:
    """One schema argument: type, name, optional default text and alias annotation."""

    name: str
    type: Type
    default: str | None = None
    annotation: Annotation | None = None

    @staticmethod
    def parse(text: str) -> Argument:
        type_text, _, rest = text.rpartition(" ") if "=" not in text else _split_default(text)
        name, _, default = rest.partition("=")
        if not type_text or not _IDENT.match(name):
            raise SchemaParseError(f"malformed argument {text!r}")
        arg_type, annotation = parse_annotated_type(type_text)
        return Argument(name, arg_type, default if "=" in rest else None, annotation)

    def __str__(self) -> str:
        text = f"{format_annotated_type(self.type, self.annotation)} {self.name}"
        return text if self.default is None else f"{text}={self.default}"

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


def _split_default(text: str) -> tuple[str, str, str]:
    """Split `Type name=default` at the space before the name (defaults may hold spaces)."""
    head, _, default = text.partition("=")
    type_text, _, name = head.rpartition(" ")
    return type_text, " ", f"{name}={default}"


@dataclass(frozen=True, slots=True)
class Return:
    """One return value, optionally named, with its alias annotation."""

    type: Type
    name: str | None = None
    annotation: Annotation | None = None

    @staticmethod
    def parse(text: str) -> Return:
        type_text, _, name = text.partition(" ")
        if name and not _IDENT.match(name):
            raise SchemaParseError(f"malformed return {text!r}")
        ret_type, annotation = parse_annotated_type(type_text)
        return Return(ret_type, name or None, annotation)

    def __str__(self) -> str:
        text = format_annotated_type(self.type, self.annotation)
        return f"{text} {self.name}" if self.name else text

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


@dataclass(frozen=True, slots=True)
class Arguments:
    """Arguments split as the schema writes them: positional, then after `*`.

    `out` holds the trailing keyword-only arguments that are written (`Tensor(a!) out`);
    `kwarg_only` the other keyword-only arguments.
    """

    positional: tuple[Argument, ...] = ()
    kwarg_only: tuple[Argument, ...] = ()
    out: tuple[Argument, ...] = ()

    def __post_init__(self) -> None:
        names = [a.name for a in self.all]
        if len(names) != len(set(names)):
            raise SchemaParseError(f"duplicate argument name in {names}")

    @staticmethod
    def parse(text: str) -> Arguments:
        positional: list[Argument] = []
        keyword: list[Argument] = []
        target = positional
        for part in split_top_level(text):
            if part == "*":
                if target is keyword:
                    raise SchemaParseError("'*' appears twice")
                target = keyword
                continue
            target.append(Argument.parse(part))
        if target is keyword and not keyword:
            raise SchemaParseError("'*' must be followed by keyword-only arguments")
        split = len(keyword)
        while split > 0 and keyword[split - 1].is_write:
            split -= 1
        return Arguments(tuple(positional), tuple(keyword[:split]), tuple(keyword[split:]))

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        keyword = self.kwarg_only + self.out
        if keyword:
            parts.append("*")
            parts.extend(str(a) for a in keyword)
        return ", ".join(parts)

    @property
    def all(self) -> tuple[Argument, ...]:
        """Every argument in schema order."""
        return self.positional + self.kwarg_only + self.out

    @property
    def self_arg(self) -> Argument | None:
        return next((a for a in self.positional if a.name == "self"), None)


class SchemaKind(Enum):
    """What a schema does with its results (see `FunctionSchema.kind`)."""

    functional = "functional"
    inplace = "inplace"
    out = "out"
    mutable = "mutable"
    scratch = "scratch"


_SCHEMA = re.compile(r"^([^(\s]+)\((.*)\) -> (.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """A whole operator schema: `name.overload(args) -> returns`."""

    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...]

    @staticmethod
    def parse(text: str) -> FunctionSchema:
        match = _SCHEMA.match(text)
        if match is None:
            raise SchemaParseError(f"not a schema (expected 'name(args) -> returns'): {text!r}")
        name = OperatorName.parse(match.group(1))
        arguments = Arguments.parse(match.group(2))
        returns_text = match.group(3)
        if returns_text.startswith("(") and returns_text.endswith(")"):
            returns = tuple(Return.parse(p) for p in split_top_level(returns_text[1:-1]))
        else:
            returns = (Return.parse(returns_text),)
        schema = FunctionSchema(name, arguments, returns)
        if str(schema) != text:
            raise SchemaParseError(f"schema does not print back unchanged: {text!r}")
        return schema

    def __str__(self) -> str:
        if len(self.returns) == 1:
            returns = str(self.returns[0])
        else:
            returns = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.name}({self.arguments}) -> {returns}"

    def kind(self) -> SchemaKind:
        """Functional, in-place (`add_`), out= (`add.out`), scratch, or mutable."""
        if self.name.inplace:
            return SchemaKind.inplace
        if self.arguments.out:
            if any(a.name.startswith("_scratch_") for a in self.arguments.out):
                return SchemaKind.scratch
            return SchemaKind.out
        if any(a.is_write for a in self.arguments.all):
            return SchemaKind.mutable
        return SchemaKind.functional

    def signature(self) -> tuple:
        """What functional, in-place and out variants share: base name and plain inputs."""
        inputs = tuple(
            (a.name, str(a.type), a.default)
            for a in self.arguments.positional + self.arguments.kwarg_only
        )
        return (self.name.base.removesuffix("_functional"), inputs)

    @property
    def tensor_like_returns(self) -> bool:
        return all(r.type.is_tensor_like() for r in self.returns)


def split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and string literals; strips each part."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    tail = text[start:].strip()
    if tail or parts:
        parts.append(tail)
    if any(not p for p in parts):
        raise SchemaParseError(f"empty item in {text!r}")
    return parts


TENSOR = BaseType(BaseTy.Tensor)
OPTIONAL_TENSOR = OptionalType(TENSOR)
TENSOR_LIST = ListType(TENSOR)
