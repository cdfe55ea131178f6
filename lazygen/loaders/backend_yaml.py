"""Load and validate a backend op list (`yaml/<backend>.yaml`) against a catalogue.

Every problem in the file is collected, with its line, before anything is raised, so a
user fixes all of them in one pass. Names and identifiers that end up in generated code
(backend name, opkinds, property names) are validated here, before they get near a
template.
"""

from __future__ import annotations

import ast
import difflib
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from lazygen import renamed
from lazygen.diagnostics import Diagnostic, LazygenError, Location, SchemaParseError
from lazygen.loaders.located_yaml import LocatedDocument, load_located
from lazygen.loaders.native_yaml import NativeSources
from lazygen.model.native_function import Catalogue
from lazygen.model.op_list import (
    AUTOGRAD_CONFLICT_HINT,
    BOOLEAN_KEYS,
    CONFLICT_HINTS,
    EXCLUSIVE_SECTIONS,
    GENERATOR_KEYS,
    IGNORED_KEYS,
    NODE_PROPERTIES,
    OLD_NON_NATIVE_KEYS,
    OP_SECTIONS,
    SHARED_SECTIONS,
    SYMINT_HOSTS,
    TOP_LEVEL_KEYS,
    BackendOpList,
    NonNativeEntry,
    OpEntry,
)
from lazygen.model.schema import FunctionSchema, OperatorName

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPKIND = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$")
_NAMESPACE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$")
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


class _Collector:
    """Accumulates diagnostics for one file, and the operators skipped as unknown."""

    def __init__(self, doc: LocatedDocument, skip_unknown: bool = False):
        self.doc = doc
        self.skip_unknown = skip_unknown
        self.problems: list[Diagnostic] = []
        self.notices: list[Diagnostic] = []
        self.skipped: list[tuple[str, int]] = []

    def error(self, line: int, message: str, hint: str = "") -> None:
        self.problems.append(Diagnostic(self.doc.location(line), message, hint))

    def notice(self, line: int, message: str, hint: str = "") -> None:
        self.notices.append(Diagnostic(self.doc.location(line), message, hint))

    def unknown(self, line: int, op: OperatorName, message: str, hint: str) -> None:
        """An operator this catalogue lacks: an error, or skipped with `skip_unknown`."""
        if self.skip_unknown:
            self.skipped.append((str(op), line))
        else:
            self.error(line, message, hint)


def load_backend(
    path: str | Path, catalogue: Catalogue, *, skip_unknown: bool = False
) -> BackendOpList:
    """Parse and validate the op list at `path`; raise `LazygenError` listing every problem.

    `skip_unknown`: operators the catalogue lacks (a list written for another torch) are
    left out and reported in one notice instead of one error each.
    """
    renamed.check_op_list_path(path)
    doc = load_located(path, "backend op list")
    out = _Collector(doc, skip_unknown)
    data = doc.data
    if data is None:
        raise LazygenError.at(
            doc.location(1), "backend op list is empty", "start with 'backend: <Name>'"
        )
    if not isinstance(data, dict):
        raise LazygenError.at(
            doc.location(1),
            "backend op list must be a mapping of sections",
            "use keys such as 'backend:', 'full_codegen:', 'supported:'",
        )
    for key in data:
        if key in GENERATOR_KEYS:
            _generator_key(str(key), out)
        elif key not in TOP_LEVEL_KEYS:
            near = difflib.get_close_matches(str(key), sorted(TOP_LEVEL_KEYS), n=1)
            hint = f"did you mean '{near[0]}'?" if near else f"known keys: {_known_keys()}"
            out.error(doc.key_lines.get(str(key), 0), f"unknown top-level key '{key}'", hint)
    backend = _backend_name(data, out)
    namespace = data.get("cpp_namespace")
    if namespace is not None and not (isinstance(namespace, str) and _NAMESPACE.match(namespace)):
        out.error(
            doc.key_lines.get("cpp_namespace", 0),
            f"cpp_namespace {namespace!r} is not a namespace",
            "write it like 'torch::lazy' or leave it out",
        )
    _ignored_keys(data, out)
    sections = {name: _op_section(name, data, catalogue, out) for name in OP_SECTIONS}
    _check_membership(sections, out)
    sections["symint"] = _hosted_symint(sections, out)
    non_native = _non_native_section(data, out)
    if out.problems:
        raise LazygenError(out.problems)
    if out.skipped:
        out.notices.append(skipped_notice(doc.location(0), out.skipped, catalogue.source))
    return BackendOpList(
        path=str(path),
        backend=backend,
        cpp_namespace=namespace,
        non_native=non_native,
        notices=tuple(out.notices),
        **sections,
    )


def _generator_key(key: str, out: _Collector) -> None:
    """A key of torch-mlir's op-list generator input, not of an op list."""
    out.error(
        out.doc.key_lines.get(key, 0),
        f"'{key}' is a key of torch-mlir's autogen_ltc_backend.yaml, not of an op list: "
        "torch-mlir's build_tools/autogen_ltc_backend.py turns that file into the op list "
        "torchgen reads (torchgen refuses it too)",
        f"{GENERATOR_KEYS[key]}, and name the backend with 'backend: <Name>'; or give lazygen "
        "the generated_native_functions.yaml that script writes",
    )


def skipped_notice(where: Location, skipped: list[tuple[str, int]], source: str) -> Diagnostic:
    """The one warning `--skip-unknown-ops` prints instead of an error per operator."""
    names = ", ".join(f"{name} (line {line})" if line else name for name, line in skipped)
    return Diagnostic(
        where,
        f"skipped {len(skipped)} operator(s) not in {catalogue_name(source)}: {names}",
        "--skip-unknown-ops is on; remove them from the list once no torch you build for has them",
    )


def catalogue_name(source: str) -> str:
    """How messages name a catalogue: the installed torch's, with its version (an operator
    missing from it is one this torch lacks), or the file given with --native-functions."""
    path = Path(source)
    try:
        if path.resolve() == NativeSources.default().native_functions.resolve():
            return f"torch {version('torch')}'s {path.name}"
    except (LazygenError, PackageNotFoundError, OSError):
        pass
    return path.name


def _ignored_keys(data: dict, out: _Collector) -> None:
    """torchgen's C++-only keys: type-checked as torchgen does, then noted as ignored."""
    for key, why in IGNORED_KEYS.items():
        if key not in data:
            continue
        line = out.doc.key_lines.get(key, 0)
        value = data[key]
        if key in BOOLEAN_KEYS and not isinstance(value, bool):
            out.error(line, f"'{key}' must be true or false, not {value!r}", f"write '{key}: true'")
            continue
        if key == "class_name" and not (isinstance(value, str) and _IDENTIFIER.match(value)):
            out.error(line, f"class_name {value!r} is not an identifier", "use letters, digits, _")
            continue
        if key == "extra_headers" and not (
            isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(h, str) for h in value))
        ):
            out.error(line, "'extra_headers' must be a header or a list of headers", "or omit it")
            continue
        out.notice(line, f"'{key}' is accepted and ignored: {why}", "")


def _known_keys() -> str:
    return ", ".join(sorted(TOP_LEVEL_KEYS))


def _backend_name(data: dict, out: _Collector) -> str:
    backend = data.get("backend")
    line = out.doc.key_lines.get("backend", 1)
    if backend is None:
        out.error(1, "missing 'backend: <Name>'", "name the backend, e.g. 'backend: Lazy'")
        return ""
    if not isinstance(backend, str) or not _IDENTIFIER.match(backend):
        out.error(line, f"backend name {backend!r} is not an identifier", "use letters, digits, _")
        return ""
    return backend


def _op_section(
    name: str, data: dict, catalogue: Catalogue, out: _Collector
) -> tuple[OpEntry, ...]:
    raw = data.get(name)
    if raw is None:
        return ()
    key_line = out.doc.key_lines.get(name, 0)
    if not isinstance(raw, list):
        out.error(key_line, f"section '{name}' must be a list of operator names", "use '- name'")
        return ()
    lines = out.doc.nested_item_lines.get(name, ())
    entries: list[OpEntry] = []
    seen: dict[OperatorName, int] = {}
    for index, item in enumerate(raw):
        line = lines[index] if index < len(lines) else key_line
        op = _resolve(item, catalogue, out, line, name)
        if op is None:
            continue
        if op in seen:
            report = out.notice if name == "symint" else out.error  # a set, for torchgen
            report(
                line,
                f"{op} is listed twice in '{name}' (first at line {seen[op]})",
                "delete one of the two entries",
            )
            continue
        seen[op] = line
        entries.append(OpEntry(op, out.doc.location(line)))
    return tuple(entries)


def _resolve(
    item: Any, catalogue: Catalogue, out: _Collector, line: int, section: str
) -> OperatorName | None:
    if not isinstance(item, str):
        out.error(
            line,
            f"entry in '{section}' is not an operator name: {item!r}",
            "write '- name' or '- name.overload'",
        )
        return None
    try:
        op = OperatorName.parse(item.strip())
    except SchemaParseError:
        namespace, colons, bare = item.strip().partition("::")
        hint = (
            f"write '{bare}': op lists name aten operators without their namespace"
            if colons and namespace == "aten"
            else "write 'name' or 'name.overload'"
        )
        out.error(line, f"'{item}' is not an operator name", hint)
        return None
    if op in catalogue:
        return op
    message, hint = _unknown_operator(op, catalogue)
    if section == "symint":  # torchgen does not look symint names up: no effect, noted
        out.notice(line, f"symint entry {op} has no effect: {message}", hint)
    elif not op.overload and catalogue.overloads(op.name):  # a name this torch has
        out.error(line, message, hint)
    else:
        out.unknown(
            line,
            op,
            message,
            f"{hint} A list written for another torch: pass --skip-unknown-ops",
        )
    return None


def _unknown_operator(op: OperatorName, catalogue: Catalogue) -> tuple[str, str]:
    """(message, hint) for an operator the catalogue lacks: a typo, or an operator renamed
    or removed since the list was written (older torch_xla and PyTorch lists name some)."""
    where = catalogue_name(catalogue.source)
    overloads = catalogue.overloads(op.name)
    if overloads and not op.overload:
        names = ", ".join(sorted(str(f.name) for f in overloads))
        return f"operator {op.name} has no default overload", f"name one: {names}"
    if overloads:
        names = ", ".join(sorted(f.name.overload or "<default>" for f in overloads))
        return f"operator {op.name} has no overload '{op.overload}' in {where}", (
            f"overloads: {names}."
        )
    pool = sorted({str(n) for n in catalogue.names()} | {n.name for n in catalogue.names()})
    near = difflib.get_close_matches(str(op), pool, n=3, cutoff=0.75)
    if near:
        hint = "did you mean " + " or ".join(f"'{n}'" for n in near) + "?"
    else:
        hint = f"search the catalogue with `lazygen ops --grep {op.name}`."
    return f"unknown operator '{op}' (not in {where}: misspelt, or renamed or removed)", hint


def _check_membership(sections: dict[str, tuple[OpEntry, ...]], out: _Collector) -> None:
    """Each pair of sections one operator is in must be a pair torchgen gives a meaning to."""
    homes: dict[OperatorName, list[str]] = {}
    for section in EXCLUSIVE_SECTIONS:
        for entry in sections[section]:
            earlier = homes.setdefault(entry.name, [])
            for first in earlier:
                pair = frozenset({first, section})
                if pair in SHARED_SECTIONS:
                    continue
                hint = CONFLICT_HINTS.get(pair, AUTOGRAD_CONFLICT_HINT)
                out.error(
                    entry.location.line,
                    f"{entry.name} is listed in both '{first}' and '{section}'",
                    hint,
                )
            earlier.append(section)


def _hosted_symint(
    sections: dict[str, tuple[OpEntry, ...]], out: _Collector
) -> tuple[OpEntry, ...]:
    """The `symint` entries some kernel section names; the others have no effect, and are
    noted (torchgen only looks a `symint` name up among the kernels it generates, so it
    accepts them silently: torch-mlir's list names `view`, which none of its sections do)."""
    hosted = {entry.name for section in SYMINT_HOSTS for entry in sections[section]}
    kept = []
    for entry in sections["symint"]:
        if entry.name in hosted:
            kept.append(entry)
            continue
        out.notice(
            entry.location.line,
            f"symint entry {entry.name} has no effect: no kernel section "
            "(full_codegen, supported, autograd) names it",
            "add it to one of them, or remove it from symint",
        )
    return tuple(kept)


def _non_native_section(data: dict, out: _Collector) -> tuple[NonNativeEntry, ...]:
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


def _non_native_entry(item: Any, out: _Collector, line: int) -> NonNativeEntry | None:
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
    if _IDENTIFIER.match(text):
        return True
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def location_of(entry: OpEntry | NonNativeEntry) -> Location:
    """Where an entry was written (for messages from later pipeline stages)."""
    return entry.location
