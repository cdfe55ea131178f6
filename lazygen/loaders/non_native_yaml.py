"""The ``non_native`` section of a backend op list: IR-only ops with their own schema,
``opkind`` and properties, each checked (a schema that parses, an opkind and properties
that can reach generated code), with hints for the C++ spellings of torchgen's early
entries. Apart from ``backend_yaml.py``, which loads the sections of native operators.
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import Any

from lazygen.diagnostics import SchemaParseError
from lazygen.loaders.located_yaml import Collector
from lazygen.model.op_list import (
    NODE_PROPERTIES,
    OLD_NON_NATIVE_KEYS,
    NonNativeEntry,
)
from lazygen.model.schema import FunctionSchema, OperatorName

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPKIND = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$")


_NON_NATIVE_KEYS = frozenset({"func", "opkind", "properties"})


#: C++ spellings of schema types, as torchgen's early (2022) `non_native` entries wrote
#: them (PyTorch's own ts_native_functions.yaml did), with the schema type to write.
_CPP_TYPES = (
    ("std::shared_ptr<BackendData>", None),
    ("std::vector<int64_t>", "int[]"),
    ("optional<at::ScalarType>", "ScalarType?"),
    ("at::ScalarType", "ScalarType"),
    ("at::Scalar", "Scalar"),
    ("int64_t", "int"),
)


def non_native_section(data: dict, out: Collector) -> tuple[NonNativeEntry, ...]:
    raw = data.get("non_native")
    if raw is None:
        return ()
    key_line = out.doc.key_lines.get("non_native", 0)
    if not isinstance(raw, list):
        out.error(
            key_line,
            "section 'non_native' must be a list",
            "write one '- func: <schema>' entry per operator",
        )
        return ()
    lines = out.doc.nested_item_lines.get("non_native", ())
    entries: list[NonNativeEntry] = []
    seen: dict[OperatorName, int] = {}
    for index, item in enumerate(raw):
        line = lines[index] if index < len(lines) else key_line
        entry = _non_native_entry(item, out, line)
        if entry is None:
            continue
        if entry.func.name in seen:
            out.error(
                line,
                f"non_native {entry.func.name} declared twice (first at line {seen[entry.func.name]})",
                "delete or rename one of them",
            )
            continue
        seen[entry.func.name] = line
        entries.append(entry)
    return tuple(entries)


def _non_native_entry(item: Any, out: Collector, line: int) -> NonNativeEntry | None:
    if not isinstance(item, dict):
        out.error(line, "non_native entry is not a mapping", "write '- func: <schema>'")
        return None
    for key in sorted(str(k) for k in item if k in OLD_NON_NATIVE_KEYS):
        out.error(
            line,
            f"'{key}' is a key of torchgen's early (2022) non_native entries, since "
            "replaced by 'properties'",
            OLD_NON_NATIVE_KEYS[key],
        )
    unknown = sorted(str(k) for k in item if k not in _NON_NATIVE_KEYS | OLD_NON_NATIVE_KEYS.keys())
    if unknown:
        out.error(
            line,
            f"unknown key(s) in non_native entry: {', '.join(unknown)}",
            "allowed: func, opkind, properties",
        )
    func_text = item.get("func")
    if not isinstance(func_text, str):
        out.error(line, "non_native entry has no schema", "add 'func: <schema>'")
        return None
    try:
        func = FunctionSchema.parse(func_text.strip())
    except SchemaParseError as exc:
        out.error(line, f"non_native schema does not parse: {exc}", _schema_hint(func_text))
        return None
    for arg in func.arguments.all:
        if arg.default is not None and not _is_plain_default(arg.default):
            out.error(
                line,
                f"default {arg.default!r} of {func.name}'s argument {arg.name} is not a literal",
                "defaults must be literals (1, 0.5, [0, 1], 'mean') or names such as None, Mean",
            )
            return None
    opkind = item.get("opkind")
    if opkind is not None and not (isinstance(opkind, str) and _OPKIND.match(opkind)):
        out.error(
            line,
            f"opkind {opkind!r} is not a symbol",
            "use a name like 'ltc_cast' or 'aten::expand'",
        )
        return None
    raw_props = item.get("properties") or []
    if not isinstance(raw_props, list):
        out.error(line, "'properties' is not a list", "write one '- PropertyName' per line")
        return None
    props = []
    for prop in raw_props:
        if not isinstance(prop, str) or prop not in NODE_PROPERTIES:
            near = difflib.get_close_matches(str(prop), sorted(NODE_PROPERTIES), n=1)
            hint = (
                f"did you mean '{near[0]}'?"
                if near
                else "known: " + ", ".join(sorted(NODE_PROPERTIES))
            )
            out.error(line, f"unknown property {prop!r} on {func.name}", hint)
            continue
        props.append(prop)
    return NonNativeEntry(func, out.doc.location(line), opkind, frozenset(props))


def _schema_hint(text: str) -> str:
    """What to write instead of the C++ types early torchgen lists used in schemas."""
    found = []
    for cpp, schema in _CPP_TYPES:  # longest spellings first: each part of the text once
        if cpp in text:
            found.append((cpp, schema))
            text = text.replace(cpp, " ")
    if not found:
        return "fix the schema text"
    fixes = [f"{cpp} -> {schema}" for cpp, schema in found if schema]
    parts = [f"write schema types, as torchgen has read since 2022: {', '.join(fixes)}"] * bool(
        fixes
    )
    if any(schema is None for _, schema in found):
        parts.append(
            "a node holding BackendData is the runtime's own device data node: leave the "
            "entry out"
        )
    return "; ".join(parts)


def _is_plain_default(text: str) -> bool:
    """A literal or a bare named constant: nothing that could run when generated code loads."""
    if IDENTIFIER.match(text):
        return True
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True
