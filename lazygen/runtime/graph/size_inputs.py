"""Int attributes that are sizes, traced as size inputs under dynamic shapes.

An op's int attribute is a constant of its graph, and the graph key holds it: a graph
whose attribute changes compiles again. Some attributes are sizes: the end of the slice a
causal mask is cut to (``mask[:, :, :length]``: ``slice_copy``'s ``end`` is the sequence
length), a split's sizes, an embedding gradient's row count. With dynamic shapes on
(``dynamic.on()``), a graph compiled for all sizes serves every length, but such an
attribute keyed it by length all the same: GPT-2 over 16 lengths compiled a graph per
length until the recompile budget ran it uncompiled.

Here, in one place for every op, such an attribute becomes a size input of the graph, as
a ``SymInt`` operand is (``kernel_support.symint``):

* ``lift`` (called by ``kernel_support.make_node`` for every node, when dynamic shapes
  are on and the node's class has attributes its schema types ``SymInt``: generated
  ``Node.size_attrs``) turns each such int that equals a size of the node's tensors
  (operands or results; 0 and 1 excepted, as Dynamo specialises them) into a
  ``SizeArgument`` in the attributes (an ``int``: everything reading attributes as ints
  keeps working), appends one graph input per lifted int (a ``ScalarData``) as a last
  operand, a tuple, in the order the ``SizeArgument``s appear in the attributes, and
  makes the node of ``sized_class(cls)``, the class's own with a ``lower()`` of its own;
* ``generic_attrs`` hides their values from the size-generic key
  (``graph.generic_key``), so the lengths of such a graph share one key;
* that ``lower()`` (``_SizedNode``) lowers the node as its schema has it (the last operand
  left out), each ``SizeArgument`` its int, or, in the copy of a graph compiled for all
  sizes (``dynamic.hidden_sizes`` makes its nodes of ``sized_class(cls, hidden=True)``),
  the backend's value of its input read as a ``SymInt`` (``ctx.symint``): every lowering,
  generated or hand-written, receives it in the place of the int, and a backend's
  ``constant`` returns such a value as it is. A lowering that computes with it anyway
  fails on a backend whose values are not numbers, and the graph is compiled for its own
  sizes (``DynamicCompileFallback``), never wrong.
"""

from __future__ import annotations

import torch

from .. import state
from ..ir import Node, ScalarData, Value


class SizeArgument(int):
    """An int attribute traced as a size input (its graph input: the node's last operand)."""

    __slots__ = ()


class _HiddenSize:
    """What the size-generic key holds instead of a lifted attribute's value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<size input>"


HIDDEN = _HiddenSize()


def sizes_of(results, operands) -> set[int]:
    """The sizes of a node's result shapes and its tensor operands' shapes, 0 and 1 left
    out (None entries skipped)."""
    found: set[int] = set()
    for shape in (*results, *operands):
        if shape is not None:
            found.update(shape.sizes)
    found.discard(0)
    found.discard(1)
    return found


def _operand_shapes(operands) -> list:
    shapes = []
    for operand in operands:
        values = operand if type(operand) is tuple or type(operand) is list else (operand,)
        for value in values:
            if type(value) is Value and value.node.shapes:
                shapes.append(value.node.shapes[value.index])
    return shapes


def _marked(cls: type[Node], attrs: tuple, sizes: set[int], mark) -> tuple[tuple, list[int]]:
    """``attrs`` with each int of a ``size_attrs`` slot found in ``sizes`` replaced by
    ``mark(int)``, and those ints in order."""
    found: list[int] = []
    new = list(attrs)
    for slot in cls.size_attrs:
        value = attrs[slot]
        if type(value) is int:
            if value in sizes:
                new[slot] = mark(value)
                found.append(value)
        elif type(value) is tuple and any(type(v) is int and v in sizes for v in value):
            found.extend(v for v in value if type(v) is int and v in sizes)
            new[slot] = tuple([mark(v) if type(v) is int and v in sizes else v for v in value])
    return tuple(new), found


def lift(cls: type[Node], operands: tuple, attrs: tuple, shapes, device) -> tuple:
    """``(cls, operands, attrs)`` of a node with its size attributes that equal a size of
    its tensors as size inputs (see the module docstring); as given if none does.
    ``device``: the node's ``LazyDevice``; each input is a ``ScalarData`` on its backing
    device, or its number table's kind (a ``FixedScalar`` in a Dynamo capture, whose
    numbers are constants: ``kernel_support.symint`` does the same)."""
    sizes = sizes_of(shapes, _operand_shapes(operands))
    new, lifted = _marked(cls, attrs, sizes, SizeArgument)
    if not lifted:
        return cls, operands, attrs
    table = device.shared_scalars
    kind = ScalarData if table is None else table.node_type
    inputs = tuple([Value(kind(v, torch.int64, device.backing), 0) for v in lifted])
    return sized_class(cls), (*operands, inputs), new


def hide_sizes(cls: type[Node], attrs: tuple, sizes: set[int]) -> tuple:
    """``attrs`` with the values ``lift`` would make size inputs hidden: what tells, with
    dynamic shapes off, that two graphs differ in sizes only (``graph.generic_key``)."""
    return _marked(cls, attrs, sizes, lambda v: HIDDEN)[0]


def has_size_arguments(attrs: tuple) -> bool:
    """Whether ``attrs`` hold a ``SizeArgument`` (then the node's last operand is its
    size inputs)."""
    for a in attrs:
        if type(a) is SizeArgument or (type(a) is tuple and SizeArgument in map(type, a)):
            return True
    return False


def generic_attrs(attrs: tuple) -> tuple:
    """``attrs`` with each ``SizeArgument``'s value hidden (the size-generic key's)."""
    return tuple([_generic(a) for a in attrs])


def _generic(a):
    if type(a) is SizeArgument:
        return HIDDEN
    if type(a) is tuple:
        return tuple([HIDDEN if type(v) is SizeArgument else v for v in a])
    return a


class _SizedNode(Node):
    """The ``lower()`` of a node whose attributes hold ``SizeArgument``s (see the module
    docstring); mixed into ``sized_class(cls)`` ahead of ``cls``."""

    __slots__ = ()
    #: The node class of the op (``cls``), whose ``lower()`` lowers the schema's view.
    node_class: type[Node] = Node
    #: Whether this is the copy of a graph compiled for all sizes (sizes read as inputs).
    hidden = False

    def lower(self, ctx) -> list:
        *operands, inputs = self.operands
        feed = iter(inputs)
        hidden, symint = self.hidden, ctx.symint

        def value(a):
            if type(a) is SizeArgument:
                return symint(next(feed)) if hidden else int(a)
            if type(a) is tuple:
                return tuple([value(v) for v in a])
            return a

        view = object.__new__(self.node_class)
        view.operands = tuple(operands)
        view.attrs = tuple([value(a) for a in self.attrs])
        view.shapes, view.source = self.shapes, self.source
        ctx.node = view  # what the lowering may ask about (its shapes, its operands)
        return self.node_class.lower(view, ctx)


def sized_class(cls: type[Node], hidden: bool = False) -> type[Node]:
    """``cls`` for nodes with attributes traced as size inputs (``hidden``: in the copy of
    a graph compiled for all sizes); one class per op, made on first use."""
    if issubclass(cls, _SizedNode):
        cls = cls.node_class
    return _sized_class(cls, hidden)


@state.process_memo  # one class per op for the process: graphs and their keys hold it
def _sized_class(cls: type[Node], hidden: bool) -> type[Node]:
    namespace = {"__slots__": (), "node_class": cls, "hidden": hidden}
    namespace.update(__module__=cls.__module__, __qualname__=cls.__qualname__)
    return type(cls.__name__, (_SizedNode, cls), namespace)


def hidden_copy(node: Node, operands: tuple) -> Node:
    """The copy of a node with attributes traced as size inputs, reading ``operands``, in
    the copy of a graph compiled for all sizes (its lowering reads them as inputs)."""
    copy = object.__new__(sized_class(type(node), hidden=True))
    copy.operands, copy.attrs, copy.shapes, copy.source = operands, node.attrs, (), node.source
    return copy


def is_sized(node: Node) -> bool:
    """Whether ``node`` has attributes traced as size inputs."""
    return isinstance(node, _SizedNode)
