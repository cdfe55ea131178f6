"""Safe, fast YAML loading that keeps the line of every entry and rejects duplicate keys.

PyYAML's C parser does the heavy lifting; we compose the node tree once, note where each
top-level entry starts, then construct plain Python values. Only safe loaders are ever
used: nothing in an input file can run code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from lazygen.diagnostics import Diagnostic, LazygenError, Location
from lazygen.model.schema import OperatorName

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Loader):  # type: ignore[misc, valid-type]
    """Safe loader that refuses duplicate mapping keys (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a mapping key must be a plain value, not {key!r}",
                    key_node.start_mark,
                ) from None
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True, slots=True)
class LocatedDocument:
    """A loaded YAML document plus the line of each top-level item / key."""

    path: str
    data: Any
    item_lines: tuple[int, ...]  # for a top-level sequence: line of each item
    key_lines: dict[str, int]  # for a top-level mapping: line of each key
    #: for a top-level mapping whose values are sequences: line of each of their items
    nested_item_lines: dict[str, tuple[int, ...]]

    def location(self, line: int = 0, column: int = 0) -> Location:
        return Location(self.path, line, column)


def read_text(path: str | Path, what: str) -> str:
    """Read a text file or raise a located error that says what to do."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LazygenError.at(
            Location(str(path)), f"{what} not found", "check the path or pass another one"
        ) from None
    except IsADirectoryError:
        raise LazygenError.at(
            Location(str(path)), f"{what} is a directory", "pass the path of the YAML file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LazygenError.at(
            Location(str(path)), f"cannot read {what}: {exc}", "check the file's permissions"
        ) from None


def load_located(path: str | Path, what: str, text: str | None = None) -> LocatedDocument:
    """Load one YAML document with line information; YAML errors become located errors."""
    source = str(path)
    if text is None:
        text = read_text(path, what)
    if "\t" in text:
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.lstrip(" ")
            if stripped.startswith("\t"):
                raise LazygenError.at(
                    Location(source, number, len(line) - len(stripped) + 1),
                    "tab character used for indentation",
                    "YAML indents with spaces only; replace the tab with spaces",
                )
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(source, mark.line + 1, mark.column + 1) if mark else Location(source)
        problem = exc.problem or exc.context or "invalid YAML"
        raise LazygenError.at(where, f"YAML syntax error: {problem}", "fix the YAML") from None
    except yaml.YAMLError as exc:
        raise LazygenError.at(Location(source), f"YAML error: {exc}", "fix the YAML") from None
    finally:
        loader.dispose()
    item_lines: tuple[int, ...] = ()
    key_lines: dict[str, int] = {}
    nested: dict[str, tuple[int, ...]] = {}
    if isinstance(node, yaml.SequenceNode):
        item_lines = tuple(item.start_mark.line + 1 for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            key_lines[key] = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.SequenceNode):
                nested[key] = tuple(item.start_mark.line + 1 for item in value_node.value)
    return LocatedDocument(source, data, item_lines, key_lines, nested)


class Collector:
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
