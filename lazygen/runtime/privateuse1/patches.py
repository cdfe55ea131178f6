"""torch's functions that lazygen replaces, and what they were: one table for the process.

The modules that make torch's Python functions work for lazy tensors (printing,
serialization, DLPack, the profiler, ``torch.accelerator``, ``Module.to``, Dynamo's meta
describer) replace them through ``wrap``/``replace`` and call what they replaced through
``original``. The table holds the invariant those modules used to hold one by one: a function
is replaced once per process (a second ``init()`` changes nothing, so no wrapper ever wraps
another of lazygen's), and its original stays reachable. torch keeps the wrappers for the
process, so the table outlives ``reset()``. Which replacements a user can turn off is
``process.py``'s list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import state


class _Originals(dict):
    """(id of the owner, attribute name) -> (the owner, what the attribute held before
    lazygen replaced it). By id: an owner need not be hashable; the entry keeps it alive.
    torch holds the wrappers for the process, so this is held for it too
    (``state.for_process``)."""


def wrap(owner: Any, name: str, make: Callable[[Any], Any]) -> bool:
    """Set ``owner.name`` to ``make(original)`` and keep the original; False (and nothing
    changes) when lazygen already replaced it."""
    key, originals = (id(owner), name), state.for_process(_Originals)
    if key in originals:
        return False
    original = getattr(owner, name)
    originals[key] = (owner, original)
    setattr(owner, name, make(original))
    return True


def replace(owner: Any, name: str, replacement: Any) -> bool:
    """``wrap`` with a replacement that finds the original itself (through ``original``)."""
    return wrap(owner, name, lambda _original: replacement)


def original(owner: Any, name: str) -> Any:
    """What ``owner.name`` held before lazygen replaced it."""
    return state.for_process(_Originals)[(id(owner), name)][1]


def replaced(owner: Any, name: str) -> bool:
    """Whether lazygen replaced ``owner.name`` in this process."""
    return (id(owner), name) in state.for_process(_Originals)
