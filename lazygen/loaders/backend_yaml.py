"""Load and validate a backend op list (`yaml/<backend>.yaml`) against a catalogue.

Every problem in the file is collected, with its line, before anything is raised, so a
user fixes all of them in one pass. Names and identifiers that end up in generated code
(backend name, opkinds, property names) are validated here, before they get near a
template.
"""

from __future__ import annotations

import difflib
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from lazygen import renamed
from lazygen.diagnostics import Diagnostic, LazygenError, Location, SchemaParseError
from lazygen.loaders.located_yaml import Collector, load_located
from lazygen.loaders.native_yaml import NativeSources
from lazygen.loaders.non_native_yaml import IDENTIFIER, non_native_section
from lazygen.model.native_function import Catalogue
from lazygen.model.op_list import (
    AUTOGRAD_CONFLICT_HINT,
    BOOLEAN_KEYS,
    CONFLICT_HINTS,
    EXCLUSIVE_SECTIONS,
    GENERATOR_KEYS,
    IGNORED_KEYS,
    OP_SECTIONS,
    SHARED_SECTIONS,
    SYMINT_HOSTS,
    TOP_LEVEL_KEYS,
    BackendOpList,
    NonNativeEntry,
    OpEntry,
)
from lazygen.model.schema import OperatorName

_NAMESPACE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$")


def load_backend(
    path: str | Path, catalogue: Catalogue, *, skip_unknown: bool = False
) -> BackendOpList:
    """Parse and validate the op list at `path`; raise `LazygenError` listing every problem.

    `skip_unknown`: operators the catalogue lacks (a list written for another torch) are
    left out and reported in one notice instead of one error each.
    """
    renamed.check_op_list_path(path)
    doc = load_located(path, "backend op list")
    out = Collector(doc, skip_unknown)
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
    non_native = non_native_section(data, out)
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


def _generator_key(key: str, out: Collector) -> None:
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


def _ignored_keys(data: dict, out: Collector) -> None:
    """torchgen's C++-only keys: type-checked as torchgen does, then noted as ignored."""
    for key, why in IGNORED_KEYS.items():
        if key not in data:
            continue
        line = out.doc.key_lines.get(key, 0)
        value = data[key]
        if key in BOOLEAN_KEYS and not isinstance(value, bool):
            out.error(line, f"'{key}' must be true or false, not {value!r}", f"write '{key}: true'")
            continue
        if key == "class_name" and not (isinstance(value, str) and IDENTIFIER.match(value)):
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


def _backend_name(data: dict, out: Collector) -> str:
    backend = data.get("backend")
    line = out.doc.key_lines.get("backend", 1)
    if backend is None:
        out.error(1, "missing 'backend: <Name>'", "name the backend, e.g. 'backend: Lazy'")
        return ""
    if not isinstance(backend, str) or not IDENTIFIER.match(backend):
        out.error(line, f"backend name {backend!r} is not an identifier", "use letters, digits, _")
        return ""
    return backend


def _op_section(name: str, data: dict, catalogue: Catalogue, out: Collector) -> tuple[OpEntry, ...]:
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
    item: Any, catalogue: Catalogue, out: Collector, line: int, section: str
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


def _check_membership(sections: dict[str, tuple[OpEntry, ...]], out: Collector) -> None:
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


def _hosted_symint(sections: dict[str, tuple[OpEntry, ...]], out: Collector) -> tuple[OpEntry, ...]:
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


def location_of(entry: OpEntry | NonNativeEntry) -> Location:
    """Where an entry was written (for messages from later pipeline stages)."""
    return entry.location
