"""Black's line splitting for the few statement shapes the templates print.

The templates lay code out exactly as black (stable style, 100 columns) would, so that
`formatting.format_module` has nothing to do on them. A statement is `indent prefix group
suffix`, where a `Group` is a bracketed, comma-separated list of parts (texts or nested
groups): a call's arguments, a `def`'s parameters, or a tuple / list / dict display.

`layout` prints such a statement on one line when it fits, else splits it at the group's
brackets as black's right-hand split does: the parts together on one indented line if they
fit there (never for a display of several parts, which black explodes one part a line,
with a magic trailing comma), else one part a line, each laid out recursively.
`assign` and `unpack` cover `name = value` and `a, b = value`.

Templates reach these as filters (see `environment.FILTERS`):
`{{ names | args | layout("    ", "rt.device_of") }}`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LINE_LENGTH = 100
INDENT = "    "


@dataclass(frozen=True, slots=True)
class Group:
    """`head part, part, ... tail`; `display` marks a tuple / list / dict display."""

    head: str
    parts: tuple[Part, ...]
    tail: str
    display: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))


Part = str | Group


def args(parts: Iterable[Part]) -> Group:
    """A call's arguments or a `def`'s parameters: `(a, b)`."""
    return Group("(", tuple(parts), ")")


def tuple_display(parts: Iterable[Part]) -> Group:
    """`(a, b)`, `(a,)` or `()`."""
    return Group("(", tuple(parts), ")", display=True)


def list_display(parts: Iterable[Part]) -> Group:
    return Group("[", tuple(parts), "]", display=True)


def dict_display(entries: Iterable[Part]) -> Group:
    """`{k: v, ...}` from entry texts `k: v`."""
    return Group("{", tuple(entries), "}", display=True)


def flat(part: Part) -> str:
    """A part on one line."""
    if isinstance(part, str):
        return part
    return part.head + _flat_parts(part) + part.tail


def _flat_parts(group: Group) -> str:
    text = ", ".join(flat(p) for p in group.parts)
    if group.display and group.head == "(" and len(group.parts) == 1:
        text += ","  # a one-element tuple
    return text


def layout(part: Part, indent: str = "", prefix: str = "", suffix: str = "") -> str:
    """`indent prefix part suffix`, split at `part`'s brackets as black does when too long.

    Returns the lines joined by newlines, without a trailing newline.
    """
    one = indent + prefix + flat(part) + suffix
    if len(one) <= LINE_LENGTH or isinstance(part, str) or not part.parts:
        return one
    inner = indent + INDENT
    body = inner + _flat_parts(part)
    lines = [indent + prefix + part.head]
    if len(body) <= LINE_LENGTH and (not part.display or len(part.parts) == 1):
        lines.append(body)
    else:
        lines.extend(layout(p, inner, "", ",") for p in part.parts)
    lines.append(indent + part.tail + suffix)
    return "\n".join(lines)


def assign(value: str, indent: str, name: str) -> str:
    """`name = value`: a too-long value goes in parentheses when it then fits on its line."""
    one = f"{indent}{name} = {value}"
    if len(one) > LINE_LENGTH and len(indent + INDENT + value) <= LINE_LENGTH:
        return _parenthesized(indent, name, value)
    return one


def unpack(value: str, indent: str, names: Iterable[str]) -> str:
    """`a, b = value`: the value in parentheses while the names fit on the first line
    (within 99 columns: black keeps room for the bracket), else the names one a line."""
    names = tuple(names)
    target = ", ".join(names)
    one = f"{indent}{target} = {value}"
    if len(one) <= LINE_LENGTH:
        return one
    if len(f"{indent}{target} = (") <= LINE_LENGTH - 1:
        return _parenthesized(indent, target, value)
    return layout(tuple_display(names), indent, "", f" = {value}")


def _parenthesized(indent: str, target: str, value: str) -> str:
    return f"{indent}{target} = (\n{indent}{INDENT}{value}\n{indent})"


def signature(params: Iterable) -> tuple[str, ...]:
    """Parameter texts (`name`, `name=default`) of objects with `name`, `keyword_only` and
    `default`, with `*` before the first keyword-only one."""
    out: list[str] = []
    for p in params:
        if p.keyword_only and "*" not in out:
            out.append("*")
        out.append(p.name if p.default is None else f"{p.name}={p.default}")
    return tuple(out)
