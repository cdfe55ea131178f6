"""Errors as values: every user mistake becomes a `Diagnostic` with a location.

The loaders and the generator collect diagnostics instead of raising on the first one, so
the CLI can print them all together and exit non-zero. Code that must stop raises
`LazygenError`, which carries the diagnostics; the CLI turns it into one line per
diagnostic and never shows a traceback for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """A place in an input file; `line` is 1-based, 0 when unknown."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if not self.line:
            return self.file
        if self.column:
            return f"{self.file}:{self.line}:{self.column}"
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in the user's input, with what to do about it."""

    location: Location | None
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}error: {self.message}{hint}"


class LazygenError(Exception):
    """A user-facing failure: one or more diagnostics, printed without a traceback."""

    def __init__(self, diagnostics: Diagnostic | Iterable[Diagnostic]):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = (diagnostics,)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    @classmethod
    def at(cls, location: Location | None, message: str, hint: str = "") -> LazygenError:
        """Build an error with a single diagnostic."""
        return cls(Diagnostic(location, message, hint))


class SchemaParseError(ValueError):
    """A schema string that does not parse; the loader adds the location."""
