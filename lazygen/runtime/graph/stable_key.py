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

``digest`` runs at every graph's first compile in a process, warm or cold, over the whole
graph: ``_encode``'s recursion, one Python call per value, cost 5.7 ms for an encoder
training step's four graphs (1,312 nodes), marshal 2.0-2.2 ms (docs/benchmarks.md). So a
node's entry is made marshallable (its class by name, its shapes as ``(dtype name,
sizes)``) and written by ``marshal`` (format 2: no references, so the bytes follow the
values only, never which equal objects happen to be shared), which writes exact ``bool``,
``int``, ``float``, ``str``, ``bytes``, ``None``, tuples and lists with their types and
refuses every subclass (an enum, a ``Shape`` among the attributes), a ``SymInt`` and any
object: an entry it refuses is encoded by ``_encode`` instead, tagged apart, which encodes
or refuses it as before. A frozenset is written in its iteration order, which equal sets
may not share across processes: at worst a stored graph missed, never a wrong one read.
"""

from __future__ import annotations

import enum
import hashlib
import marshal

import torch

from .. import state
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
    try:
        body = marshal.dumps((tuple(context), _marshallable(key.entries)), _MARSHAL_VERSION)
    except _Unkeyable:
        return None
    return hashlib.sha256(body).hexdigest()


_MARSHAL_VERSION = 2  # the last format without references (3 added them)


def _marshallable(entries) -> tuple:
    """A graph key's ``(nodes, outputs)`` with each node entry ``(class, attrs, shapes,
    operands)`` as marshal writes it (``_node``), or as ``_encode`` text where marshal
    refuses it; a key of another layout as ``_encode`` text whole. Each form is tagged, so
    no two keys give the same bytes."""
    if not (type(entries) is tuple and len(entries) == 2 and type(entries[0]) is tuple):
        return ("E", _encoded(entries))
    nodes = []
    for entry in entries[0]:
        try:
            node = _node(entry)
            marshal.dumps(node, _MARSHAL_VERSION)
        except (ValueError, TypeError):  # unmarshallable, or not a 4-tuple
            node = ("E", _encoded(entry))
        nodes.append(node)
    outputs = entries[1]
    try:
        marshal.dumps(outputs, _MARSHAL_VERSION)
    except ValueError:
        outputs = ("E", _encoded(outputs))
    return ("G", tuple(nodes), outputs)


def _node(entry: tuple) -> tuple:
    """A node's entry in marshallable form, tagged ``"N"``: its class by qualified name,
    each shape as ``(dtype name, sizes)`` (``None`` stays), attributes and operands as they
    are (marshal refuses what they hold that it cannot write exactly)."""
    cls, attrs, shapes, operands = entry
    if not isinstance(cls, type):
        raise TypeError(cls)  # not a node class: the generic encoding
    return ("N", _class_name(cls), attrs, tuple(map(_shape, shapes)), operands)


def _shape(shape: Shape | None):
    if shape is None:
        return None
    if type(shape) is not Shape or type(shape.dtype) is not torch.dtype:
        raise TypeError(shape)
    return str(shape.dtype), shape.sizes


@state.memo
def _class_name(cls: type) -> str:
    """A node class's qualified name (a memo: the same ~30 classes recur in every graph)."""
    if cls in _SYMBOLIC:
        raise TypeError(cls)
    return _qualified(cls)


def _encoded(value) -> str:
    parts: list[str] = []
    _encode(value, parts)
    return "\x1f".join(parts)


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
