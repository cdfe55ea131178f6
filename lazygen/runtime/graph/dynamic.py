"""Dynamic dimensions: one compiled graph for every size of a step structure.

Tracing stays concrete: every lazy tensor has its sizes, shape inference is unchanged, and
data-dependent sizes keep working. Only the compiled artifact is made size-generic:

* With dynamic shapes on (``LAZYGEN_DYNAMIC_SHAPES=1``, ``init(dynamic_shapes=True)``,
  ``config.set_dynamic_shapes``, implied by ``mark_dynamic``, or switched on by the
  recompile budget: ``on()``), every int of a size list
  (``view_copy``'s size, ``expand_copy``'s...) is a graph input of its own
  (``kernel_support.symint_list``), as a ``SymInt`` already is, and so is every int
  attribute the schema types ``SymInt`` that equals a size of its node's tensors (a
  slice's end cut to a sequence length: ``size_inputs.py``). Sizes then reach a graph
  only as inputs, as node shapes, and as the int attributes that are not sizes.
* ``generic_key`` (``graph/__init__.py``, beside the exact key) is a graph's key with every
  shape reduced to its dtype and rank and the attributes traced as size inputs hidden. Other int attributes (``dim``, kernel sizes, a
  ``SymInt`` equal to no size) stay in it exactly, so a graph that depends on one compiles
  again when it changes.
* A graph is compiled for all sizes from a copy of it whose shapes hide their sizes
  (``hidden_sizes``): a lowering that reads a size (an unrolled recurrent layer, a view
  update narrowing by its source's shape) raises instead of compiling it in, and that
  graph is compiled for its own sizes after all (``DynamicCompileFallback``). So a
  size-generic graph computes with the sizes it is fed, by construction, on a backend
  whose compiled graphs hold nothing else about sizes (``Backend.size_generic``).

With dynamic shapes on, as with ``torch.compile(dynamic=True)``, every graph compiles for
all sizes from its first compile, and every later size reuses it (``graph/policy.py``).
Automatic dynamic shapes (the first size static, the second for all sizes) were measured
against it: a training step's graphs differ in their first steps (an optimizer creating
its state, a tensor kept from the first step), so GPT-2 over 16 lengths compiled 6 graphs
instead of 3 (docs/benchmarks.md). With dynamic shapes off, a graph reading a tensor
given to ``mark_dynamic`` compiles for all sizes too; the recompile budget switches
dynamic shapes on for a program whose sizes keep changing.
"""

from __future__ import annotations

import copy
import weakref

import torch

from .. import state
from ..errors import LazygenRuntimeError
from ..ir import DeviceData, FixedScalar, Node, ScalarData, Shape, Value
from ..state import settings
from . import size_inputs

# On or off ------------------------------------------------------------------------------


class Marks:
    """Dynamic shapes' state of the run (a part of ``state.runtime``): the recompile
    budget's switch and the nodes given to ``mark_dynamic``."""

    def __init__(self) -> None:
        #: Set when the recompile budget (``graph/policy.py``) turned dynamic shapes on for
        #: the rest of the run (until ``lr.reset()`` or ``config.set_dynamic_shapes``). Held
        #: here, not in ``settings``: settings are what the user set, written by the
        #: user-facing API only.
        self.switched_on = False
        #: IR nodes whose graphs compile for all sizes at once, with the dims.
        self.marked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def on() -> bool:
    """Whether sizes are traced as graph inputs: the user's setting, or the budget's switch."""
    if settings.dynamic_shapes:
        return True
    marks = state.runtime.parts.get(Marks)  # traced ops with size attributes ask
    return marks is not None and marks.switched_on


def switch_on() -> None:
    """Trace sizes as graph inputs from the next traced op on (the budget's decision)."""
    state.part(Marks).switched_on = True


def switch_off() -> None:
    """Forget the budget's switch (``config.set_dynamic_shapes``; a reset forgets it too)."""
    state.part(Marks).switched_on = False


# Compiling for all sizes ----------------------------------------------------------------------


class SizeHidden(LazygenRuntimeError):
    """A lowering read a size while its graph was compiled for all sizes."""


class HiddenSizes(tuple):
    """The sizes of a shape in a graph compiled for all sizes: its length (the rank) can be
    read, its entries cannot (each read raises ``SizeHidden``)."""

    __slots__ = ()

    def _hidden(self, *args):
        raise SizeHidden(
            "its lowering reads a tensor size, which a graph compiled for all sizes hides"
        )

    __getitem__ = __iter__ = __reversed__ = __contains__ = _hidden
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _hidden
    __add__ = __mul__ = __rmul__ = _hidden
    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"<{len(self)} sizes>"


def _hide(shape):
    return None if shape is None else Shape(shape.dtype, HiddenSizes((0,) * len(shape.sizes)))


def _operand(operand, copies):
    if type(operand) is Value:
        return Value(copies[operand.node], operand.index)
    if operand is None:
        return None
    return type(operand)(_operand(o, copies) for o in operand)


def _stand_in(node: Node, shapes) -> Node:
    """A graph input for the copy: its kind and hidden shape, never its data (a compiled
    graph kept in the cache must not keep a step's tensors alive, nor read a value)."""
    if type(node) is DeviceData:
        stand_in = DeviceData(None, None, shapes[0])
    elif isinstance(node, ScalarData):
        # A FixedScalar's value is part of the graph (its key holds it, a backend may
        # compile it in): the stand-in keeps it; a plain ScalarData's value is data.
        value = node.value if isinstance(node, FixedScalar) else None
        stand_in = type(node)(value, node.shapes[0].dtype, node.device)
        stand_in.shapes = shapes
    else:  # a generator, or a backend's own input kind
        stand_in = copy.copy(node)
        stand_in.shapes = shapes
    return stand_in


def hidden_sizes(order: list[Node], outputs: list[Value]) -> tuple[list[Node], list[Value]]:
    """A copy of the graph whose shapes hide their sizes (same classes, attributes and
    structure, in the same post-order, so the inputs are fed in the same order)."""
    copies: dict[Node, Node] = {}
    copied = []
    for node in order:
        shapes = tuple([_hide(s) for s in node.shapes])
        if node.is_input:
            twin = _stand_in(node, shapes)
        else:
            operands = tuple(_operand(o, copies) for o in node.operands)
            if size_inputs.is_sized(node):  # its lowering reads its size inputs
                twin = size_inputs.hidden_copy(node, operands)
            else:
                twin = node.with_operands(operands)
            twin.shapes = shapes
        copies[node] = twin
        copied.append(twin)
    return copied, [Value(copies[v.node], v.index) for v in outputs]


def _size_hidden(error: BaseException | None) -> SizeHidden | None:
    """The ``SizeHidden`` in ``error``'s chain (what caused it), or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, SizeHidden):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def refusal(error: BaseException) -> str:
    """Why a graph could not be compiled for all sizes, from the error its compile raised:
    the ``SizeHidden`` in its chain (a lowering's or a backend's own reason), else the
    error itself."""
    hidden = _size_hidden(error)
    if hidden is None:
        return repr(error)[:200]
    op = getattr(error, "op_name", None)  # the node whose lowering raised (LazyGraphError)
    return str(hidden) if op is None or op in str(hidden) else f"{op}: {hidden}"


# mark_dynamic -------------------------------------------------------------------------------


def mark(node: Node, dim: int) -> None:
    state.part(Marks).marked.setdefault(node, set()).add(dim)


def marked_dims(node: Node) -> set[int]:
    return state.part(Marks).marked.get(node, set())


def reads_marked(order: list[Node]) -> bool:
    """Whether a graph reads a node given to ``mark_dynamic``."""
    marked = state.part(Marks).marked
    if not marked:
        return False
    return any(node in marked for node in order)


def check_dim(tensor: torch.Tensor, dim: int) -> int:
    """``dim`` of ``tensor`` as a non-negative index, or a clear error."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"lazygen.mark_dynamic: dim must be an int, not {type(dim).__name__}")
    rank = tensor.dim()
    if not -rank <= dim < max(rank, 1) or rank == 0:
        raise IndexError(
            f"lazygen.mark_dynamic: dim {dim} is out of range for a tensor of "
            f"{rank} dimension(s) (sizes {list(tensor.shape)})"
        )
    return dim % rank
