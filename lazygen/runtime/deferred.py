"""Hand-written modules of a backend generated with ``--defer-hand-written``.

Such a backend is generated before its hand-written package is complete (torch_xla's op
list names hundreds of C++ kernels; a new backend's first list names kernels not yet
written). Its generated code reaches each hand-written module through a
``DeferredModule`` instead of an import, so the backend imports and runs whatever is
missing:

* a missing piece is a ``MissingHandWritten`` stub that raises, when called, an error
  naming the piece, its module and what to do;
* ``present(table)`` leaves the stubs out of a registration table, so an op whose kernel
  (``supported``) or autograd kernel is not written yet runs through the eager fallback
  instead of failing; so does a generated kernel whose shape function is missing
  (``requires``);
* a module that does not exist is an empty one; a module that fails to import raises its
  own error, as an import would (it is the user's code, and broken).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any, TypeVar

from .errors import LazygenRuntimeError

K = TypeVar("K")


class MissingHandWrittenError(LazygenRuntimeError):
    """A hand-written piece the backend was generated without was called."""


class MissingHandWritten:
    """Stands for ``module.name`` while it is not written: raises when called."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingHandWrittenError(
            f"{self.module}.{self.name} is not written: this backend was generated with "
            f"--defer-hand-written without it; define it in {self.module} and run "
            "`lazygen gen` again (`lazygen validate` prints the def to write)"
        )

    def __repr__(self) -> str:
        return f"<missing hand-written {self.module}.{self.name}>"


class DeferredModule:
    """A hand-written module whose missing attributes are ``MissingHandWritten`` stubs.

    The module is imported at the first attribute read (generated modules read theirs
    while they load, so an import error surfaces where an import would)."""

    __slots__ = ("_name", "_module", "_loaded")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self._loaded = False

    def _load(self) -> ModuleType | None:
        if not self._loaded:
            try:
                self._module = importlib.import_module(self._name)
            except ModuleNotFoundError as exc:
                if not (exc.name and (self._name + ".").startswith(exc.name + ".")):
                    raise  # the module exists and imports something that does not
            self._loaded = True
        return self._module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):  # protocol probes, not pieces
            raise AttributeError(name)
        module = self._load()
        value = getattr(module, name, None) if module is not None else None
        return MissingHandWritten(self._name, name) if value is None else value

    def __repr__(self) -> str:
        return f"<deferred hand-written module {self._name}>"


def deferred_module(name: str) -> DeferredModule:
    """The hand-written module ``name`` as a generated module of a deferred backend sees it."""
    return DeferredModule(name)


def requires(kernel: Any, *pieces: Any) -> Any:
    """``kernel``, or the first of the hand-written ``pieces`` it calls that is missing (a
    generated kernel whose op has no meta kernel calls its ``compute_shape_<op>``), so
    that ``present`` leaves it out and its op runs eagerly."""
    missing = [p for p in pieces if isinstance(p, MissingHandWritten)]
    return missing[0] if missing else kernel


def present(table: Mapping[K, Any]) -> dict[K, Any]:
    """``table`` without the entries whose kernel is not written (they fall back to eager)."""
    return {key: fn for key, fn in table.items() if not isinstance(fn, MissingHandWritten)}
