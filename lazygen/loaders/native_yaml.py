"""Load native_functions.yaml and tags.yaml into a `Catalogue`.

By default both files come from the installed torch (`torchgen/packaged/ATen/native/`),
so the schemas always match the torch that will run the generated backend. Every problem
is reported with the file and line of the entry; all problems of a file are collected
before raising.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lazygen.diagnostics import Diagnostic, LazygenError, Location, SchemaParseError
from lazygen.loaders.located_yaml import LocatedDocument, load_located
from lazygen.model.autogen import derive_schema
from lazygen.model.native_function import Catalogue, NativeFunction
from lazygen.model.schema import FunctionSchema, OperatorName

_KNOWN_KEYS = frozenset(
    {
        "func",
        "variants",
        "structured",
        "structured_delegate",
        "structured_inherits",
        "dispatch",
        "autogen",
        "tags",
        "python_module",
        "manual_cpp_binding",
        "manual_kernel_registration",
        "device_check",
        "device_guard",
        "category_override",
        "cpp_no_default_args",
        "precomputed",
        "use_const_ref_for_mutable_tensors",
        "ufunc_inner_loop",
    }
)
_VARIANTS = frozenset({"function", "method"})


def default_native_dir() -> Path:
    """`torchgen/packaged/ATen/native` of the installed torch, found without importing torch."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        raise LazygenError.at(
            None,
            "torch is not installed, so there is no default native_functions.yaml",
            "install torch==2.13.0 or pass --native-functions and --tags",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "packaged" / "ATen" / "native"


@dataclass(frozen=True, slots=True)
class NativeSources:
    """Where the catalogue comes from."""

    native_functions: Path
    tags: Path

    @staticmethod
    def default() -> NativeSources:
        root = default_native_dir()
        return NativeSources(root / "native_functions.yaml", root / "tags.yaml")


def load_tags(path: str | Path) -> frozenset[str]:
    """The tag names declared in tags.yaml."""
    doc = load_located(path, "tags.yaml")
    if not isinstance(doc.data, list):
        raise LazygenError.at(
            doc.location(1), "tags.yaml is not a list", "write one '- tag: <name>' entry per tag"
        )
    tags: set[str] = set()
    problems = []
    for line, entry in zip(doc.item_lines, doc.data, strict=True):
        if not isinstance(entry, dict) or not isinstance(entry.get("tag"), str):
            problems.append(
                Diagnostic(doc.location(line), "entry is not a tag", "write '- tag: <name>'")
            )
            continue
        tags.add(entry["tag"])
    if problems:
        raise LazygenError(problems)
    return frozenset(tags)


def load_catalogue(sources: NativeSources | None = None) -> Catalogue:
    """Parse native_functions.yaml (+ tags) into a `Catalogue`, autogen variants included."""
    sources = sources or NativeSources.default()
    doc = load_located(sources.native_functions, "native_functions.yaml")
    tags = load_tags(sources.tags)
    if not isinstance(doc.data, list):
        raise LazygenError.at(
            doc.location(1),
            "native_functions.yaml is not a list",
            "write one '- func: <schema>' entry per operator",
        )
    functions: list[NativeFunction] = []
    problems: list[Diagnostic] = []
    for line, entry in zip(doc.item_lines, doc.data, strict=True):
        try:
            functions.append(_parse_entry(entry, doc.location(line), tags))
        except _EntryError as exc:
            problems.append(Diagnostic(doc.location(line), str(exc), exc.hint))
    seen: dict[OperatorName, Location] = {}
    for f in functions:
        if f.name in seen:
            problems.append(
                Diagnostic(
                    f.location,
                    f"operator {f.name} declared twice (also at {seen[f.name]})",
                    "delete or rename one of them",
                )
            )
        seen[f.name] = f.location
    functions += _autogen_functions(functions, seen, problems)
    if problems:
        raise LazygenError(problems)
    return Catalogue(tuple(functions), tags, str(sources.native_functions))


class _EntryError(Exception):
    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def _parse_entry(entry: Any, location: Location, known_tags: frozenset[str]) -> NativeFunction:
    if not isinstance(entry, dict):
        raise _EntryError("entry is not a mapping", "each entry starts with '- func: <schema>'")
    unknown = sorted(set(entry) - _KNOWN_KEYS)
    if unknown:
        raise _EntryError(
            f"unknown key(s) {', '.join(map(str, unknown))}",
            "allowed: " + ", ".join(sorted(_KNOWN_KEYS)),
        )
    func_text = entry.get("func")
    if not isinstance(func_text, str):
        raise _EntryError("entry has no schema", "add 'func: <schema>'")
    try:
        func = FunctionSchema.parse(func_text)
    except SchemaParseError as exc:
        raise _EntryError(f"schema does not parse: {exc}", "fix the schema text") from None
    variants = frozenset(v.strip() for v in str(entry.get("variants", "function")).split(","))
    if not variants <= _VARIANTS:
        raise _EntryError(
            f"unknown variant(s) {sorted(variants - _VARIANTS)}", "use function and/or method"
        )
    tags = _as_list(entry.get("tags", []))
    bad_tags = sorted(set(tags) - known_tags)
    if bad_tags:
        raise _EntryError(f"unknown tag(s) {', '.join(bad_tags)}", "declare them in tags.yaml")
    dispatch = entry.get("dispatch") or {}
    if not isinstance(dispatch, dict):
        raise _EntryError("'dispatch' is not a mapping", "map dispatch keys to kernel names")
    pairs = tuple(
        (key.strip(), str(kernel))
        for keys, kernel in dispatch.items()
        for key in str(keys).split(",")
    )
    try:
        delegate = entry.get("structured_delegate")
        autogen = tuple(OperatorName.parse(n.strip()) for n in _as_list(entry.get("autogen", [])))
        return NativeFunction(
            func=func,
            location=location,
            variants=variants,
            structured=bool(entry.get("structured", False)),
            structured_delegate=OperatorName.parse(delegate) if delegate else None,
            structured_inherits=entry.get("structured_inherits"),
            dispatch=tuple(sorted(pairs)),
            autogen=autogen,
            tags=frozenset(tags),
            python_module=entry.get("python_module"),
            manual_cpp_binding=bool(entry.get("manual_cpp_binding", False)),
            device_check=entry.get("device_check"),
            device_guard=bool(entry.get("device_guard", True)),
        )
    except SchemaParseError as exc:
        raise _EntryError(str(exc), "fix the operator name") from None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise _EntryError(f"expected a list, got {value!r}", "write a list or a comma-separated string")


def _autogen_functions(
    functions: list[NativeFunction], seen: dict[OperatorName, Location], problems: list[Diagnostic]
) -> list[NativeFunction]:
    """The variants entries ask for with `autogen:` that the file does not spell out."""
    derived: list[NativeFunction] = []
    for parent in functions:
        for name in parent.autogen:
            if name in seen:
                continue
            try:
                func = derive_schema(parent.func, name)
            except SchemaParseError as exc:
                problems.append(
                    Diagnostic(parent.location, f"autogen {name}: {exc}", "fix the autogen list")
                )
                continue
            seen[name] = parent.location
            inherited = parent.tags & {"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"}
            derived.append(
                NativeFunction(
                    func=func,
                    location=parent.location,
                    dispatch=(("CompositeExplicitAutograd", str(name)),),
                    tags=frozenset({"generated"}) | inherited,
                    device_guard=False,
                    generated=True,
                )
            )
    return derived


def document_for(path: str | Path) -> LocatedDocument:
    """Load any YAML input with locations (exposed for tools and tests)."""
    return load_located(path, Path(path).name)
