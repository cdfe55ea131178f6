"""A graph's key as a digest that means the same in every process: what names a compiled
graph in lazygen's persistent store (``execution/graph_store.py``).

``GraphKey`` holds node classes, attributes, shapes and operand positions, compared by
Python equality and hashed with the process's hash: neither survives the process. The
digest encodes every part with its type (``True``, ``1`` and ``1.0`` stay apart; floats by
their exact ``repr``) and names classes by module and qualified name. What has no encoding
that means the same elsewhere (a tensor held as an attribute, a class made inside a
function, any object, a symbolic size: its name means nothing in another process) makes
the whole graph unkeyable: ``digest`` returns None and the graph is compiled as before,
never mistaken for another. ``encode`` gives the same encoding of any value (the output
shapes kept on disk are named by it: ``tracing/output_shapes.py``).
"""

from __future__ import annotations

import enum
import hashlib

import torch

from ..ir import Shape
from . import GraphKey

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_TORCH_NAMED = (torch.dtype, torch.device, torch.layout, torch.memory_format)
#: Symbolic values and their types: named by a symbol of this process's shape environment.
_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


class _Unkeyable(Exception):
    """A part of the key with no process-independent encoding."""


def digest(key: GraphKey, *context: str) -> str | None:
    """The sha256 of ``key`` and ``context`` (what else the compiled graph depends on), or
    None when a part of the key cannot be encoded."""
    parts: list[str] = list(context)
    try:
        _encode(key.entries, parts)
    except _Unkeyable:
        return None
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def encode(value) -> str | None:
    """``value`` as text that means the same in every process (see the module docstring), or
    None when a part of it has no such encoding."""
    parts: list[str] = []
    try:
        _encode(value, parts)
    except _Unkeyable:
        return None
    return "\x1f".join(parts)


def _encode(value, out: list[str]) -> None:
    kind = type(value)
    if kind in _PLAIN:
        out.append(f"{kind.__name__}:{value!r}")
    elif kind is tuple or kind is list:
        out.append(f"{'(' if kind is tuple else '['}{len(value)}")
        for item in value:
            _encode(item, out)
    elif kind is Shape:
        out.append("S")
        _encode(value.dtype, out)
        _encode(value.sizes, out)
    elif kind in _TORCH_NAMED:
        out.append(f"{kind.__name__}:{value}")
    elif isinstance(value, type):
        if value in _SYMBOLIC:  # ``(SymInt, "s0")``: a symbol of this process
            raise _Unkeyable(value)
        out.append(f"T:{_qualified(value)}")
    elif isinstance(value, enum.Enum):
        out.append(f"E:{_qualified(kind)}.{value.name}")
    elif kind is frozenset:
        encoded = []
        for item in value:
            one: list[str] = []
            _encode(item, one)
            encoded.append("\x1e".join(one))
        out.append(f"{{{len(value)}")
        out.extend(sorted(encoded))
    else:
        raise _Unkeyable(kind)


def _qualified(cls: type) -> str:
    name = cls.__qualname__
    if "<locals>" in name:  # made by a function: another call may make another class
        raise _Unkeyable(cls)
    return f"{cls.__module__}.{name}"
