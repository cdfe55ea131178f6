"""``FXLoweringContext``: the ``LoweringContext`` that builds a ``torch.fx.Graph`` of aten
overloads, of the ``fx`` backend, which the ``inductor`` backend compiles
(its own lowerings of some ops: ``backends/inductor/op_lowerings.py``).

Graph inputs are placeholders in ``LoweringContext.parameters`` order: device data, wrapped
scalars (0-dim tensors) and generators. A ``Scalar`` argument reads its 0-dim tensor with
``aten._local_scalar_dense`` inside the graph, so the value is data, never a constant: the
GraphModule run as Python reads the number each run, and Inductor turns it into an unbacked
symbol of the compiled code (see ``compile.py``). Every ``call_function`` target is a
``torch.ops`` overload, the form Inductor and ``make_fx`` speak.
"""

from __future__ import annotations

import keyword
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from ... import state
from ...graph.dynamic import HiddenSizes
from ...ir import ScalarData, SizeConstant, Value
from ...lowering_context import (
    LoweringContext,
    fixed_number,
    op_string,
    overload_of,
    takes_contiguous_inputs,
)
from ...op_registry import base_name, overload_name
from ...state import settings

#: ``meta`` key of a placeholder saying what it receives ("data", "scalar", "generator").
INPUT_KIND = "lazygen_input"
#: ``meta`` key of a call node naming the IR node it was lowered from (error reports).
IR_NODE = "lazygen_node"
#: ``meta`` key of a scalar placeholder read as a ``SymInt`` (a size, a start): Inductor
#: compiles a graph for all sizes with it as a size symbol (``compile.py``).
READ_AS_SIZE = "lazygen_size"
#: The call reading a scalar graph input as a number (``_local_scalar_dense``): the nodes the
#: Inductor backend's size analysis looks for (``inductor/compile.py``, ``trace.py``).
SCALAR_READ = torch.ops.aten._local_scalar_dense.default

#: Ops whose one ``SymInt[]`` argument equals their result's sizes (once ``-1``s resolve).
SIZE_IS_RESULT_SHAPE = frozenset({"view_copy", "expand_copy", "empty.memory_format"})

#: A lowering for an op torch has no overload for (a non-native ``opkind``):
#: ``(ctx, op, args, kwargs, num_outputs) -> list of fx nodes`` (``op`` as ``ctx.call`` got it).
OpLowering = Callable[["FXLoweringContext", str, list, dict, int], list]


class UnsupportedOpError(NotImplementedError):
    """An op with no ``torch.ops`` overload and no lowering registered for it (the executor
    reports it as a ``LazyGraphError`` naming the IR node's op)."""


class FXLoweringContext(LoweringContext):
    """Maps IR values to nodes of one ``torch.fx.Graph`` under construction.

    ``op_lowerings`` maps op names that torch does not know (non-native ``opkind``s such as
    ``ltc_cast``) to functions building them from aten ops: the hook a backend author uses
    to run their own ops on this backend."""

    def __init__(
        self,
        device: torch.device | str | None = None,
        op_lowerings: dict[str, OpLowering] | None = None,
    ) -> None:
        super().__init__(device)
        self.graph = torch.fx.Graph()
        self.op_lowerings = op_lowerings or {}
        self._scalars: dict[Value, torch.fx.Node] = {}
        self._numbers: dict = {}

    # Inputs and results ------------------------------------------------------------------

    def parameter(self, node) -> torch.fx.Node:
        if getattr(node, "is_generator", False):
            kind = "generator"
        elif isinstance(node, ScalarData):
            kind = "scalar"
        else:
            kind = "data"
        placeholder = self.graph.placeholder(f"{kind}_{len(self.parameters)}")
        placeholder.meta[INPUT_KIND] = kind
        return placeholder

    def set_graph_outputs(self, outputs: list[Value]) -> None:
        """The results as one tuple (one entry per output, however many there are)."""
        self.graph.output(tuple(self.values[v] for v in outputs))

    @property
    def has_generators(self) -> bool:
        return any(getattr(node, "is_generator", False) for node in self.parameters)

    # One method per argument kind ---------------------------------------------------------

    def tensor(self, v: Value) -> torch.fx.Node:
        if isinstance(v.node, ScalarData):
            return self._number_as_tensor(v)
        return self.values[v]

    def tensor_list(self, vs) -> list:
        return [self.tensor(v) for v in vs]

    def optional_tensor_list(self, vs) -> list:
        return [None if v is None else self.tensor(v) for v in vs]

    def scalar(self, v: Value) -> torch.fx.Node | bool | int | float | complex:
        """The number a wrapped scalar's 0-dim tensor holds, read in the graph (one read per
        input however many ops use it); a ``FixedScalar``'s number as a constant (Inductor
        folds it into its kernels: no read per run, no unbacked symbol)."""
        number = fixed_number(v)
        if number is not None:
            return number
        node = self._scalars.get(v)
        if node is None:
            node = self.graph.call_function(
                torch.ops.aten._local_scalar_dense.default, (self.values[v],)
            )
            self._scalars[v] = node
        return node

    def symint(self, v: Value) -> torch.fx.Node | int:
        if type(v.node) is SizeConstant:
            return self.values[v]  # its constant
        number = fixed_number(v)
        if number is not None:
            return number
        self.values[v].meta[READ_AS_SIZE] = True
        return self.scalar(v)

    def symint_list(self, vs) -> list:
        """A size list that only restates the result's shape (``view_copy``, ``expand_copy``,
        ``empty``) is that shape, as constants: the graph key holds output shapes, so every
        graph with this key has it, and a compiler sees static sizes. Others are read, as
        are all of them in a graph compiled for all sizes (its shapes hide their sizes)."""
        node = self.node
        if node is not None and node.op_name in SIZE_IS_RESULT_SHAPE:
            sizes = node.shapes[0].sizes
            if type(sizes) is not HiddenSizes and len(sizes) == len(vs):
                return list(sizes)
        return [self.symint(v) for v in vs]

    def constant(self, value) -> Any:
        """Attributes are plain Python values in FX; the lazy device means the data
        device."""
        kind = type(value)
        if kind is torch.device and value.type == settings.device_type:
            return self.device
        if kind is tuple or kind is list or kind is torch.Size:
            return [self.constant(item) for item in value]
        return value

    def call(self, op, args: list, kwargs: dict, num_outputs: int) -> list:
        """An FX node calling the overload (``op``: an ``OpOverload`` or its string), or
        what ``op_lowerings`` builds for it."""
        op = op_string(op)
        lowering = self.op_lowerings.get(op)
        if lowering is not None:
            return lowering(self, op, list(args), dict(kwargs), num_outputs)
        target = overload_of(op)
        if target is None:
            raise UnsupportedOpError(
                f"{op} has no torch.ops overload and no lowering on this backend; "
                "register one with op_lowerings={op!r: fn} (see FXLoweringContext)"
            )
        if "." not in op.partition("::")[2]:  # no overload named: pick it as TorchScript does
            target, args, kwargs = resolve_overload(op, target, list(args), dict(kwargs))
        if keyword.iskeyword(overload_name(target)):
            target = _callable_by_name(target)
        if takes_contiguous_inputs(op):  # inputs may be aliasing views (lower_as_view)
            args = [self._contiguous(a) for a in args]
        node = self.graph.call_function(target, tuple(args), dict(kwargs))
        if self.node is not None:
            node.meta[IR_NODE] = self.node
        return [node] if num_outputs == 1 else self.unpack_list(node, num_outputs)

    def unpack_list(self, value: torch.fx.Node, count: int) -> list:
        return [self.graph.call_function(operator.getitem, (value, i)) for i in range(count)]

    # Helpers --------------------------------------------------------------------------

    def _contiguous(self, arg):
        """A tensor argument made contiguous (``aten.contiguous``: itself when it is);
        anything else as it is."""
        if (
            not isinstance(arg, torch.fx.Node)
            or arg.target is torch.ops.aten._local_scalar_dense.default
            or arg.meta.get(INPUT_KIND) == "generator"
        ):
            return arg
        return self.graph.call_function(torch.ops.aten.contiguous.default, (arg,))

    def _number_as_tensor(self, v: Value) -> torch.fx.Node:
        """A wrapped Python number: its 0-dim tensor input, cast to ``number_dtype``; a
        ``FixedScalar`` as a ``scalar_tensor`` of its number (a constant to Inductor)."""
        natural = v.node.shapes[0].dtype
        dtype = self.number_dtype(v)
        number = fixed_number(v)
        if dtype == natural and number is None:
            return self.values[v]
        node = self._numbers.get((v, dtype))
        if node is None:
            if number is None:
                node = self.graph.call_function(
                    torch.ops.aten._to_copy.default, (self.values[v],), {"dtype": dtype}
                )
            else:
                node = self.graph.call_function(
                    torch.ops.aten.scalar_tensor.default,
                    (number,),
                    {"dtype": dtype, "device": self.device},
                )
            self._numbers[(v, dtype)] = node
        return node


@state.memo
def _callable_by_name(overload):
    """A function calling ``overload``, for overloads named by a Python keyword
    (``random.from``): the GraphModule's generated code cannot spell
    ``torch.ops.aten.random.from``. Only random ops have one, which Inductor never
    compiles (see ``backend.py``). One per overload (a memo)."""

    def function(*args, **kwargs):
        return overload(*args, **kwargs)

    name = f"{base_name(overload)}_{overload_name(overload)}_overload"
    function.__name__ = function.__qualname__ = name
    return function


# Overloads of ops named without one ------------------------------------------------------
#
# Hand-written lowerings and non-native nodes may name an op without its overload
# (``aten::squeeze`` with a dim) and pass keyword-only arguments positionally, as
# TorchScript nodes take them. The overload is the first whose schema binds the arguments.


def resolve_overload(op: str, default, args: list, kwargs: dict) -> tuple[Any, list, dict]:
    packet = default.overloadpacket
    names = ["default"] + [n for n in packet.overloads() if n != "default"]
    for name in names:
        overload = getattr(packet, name, None)
        if overload is None:
            continue
        bound = _bind(overload._schema, args, kwargs)
        if bound is not None:
            return overload, *bound
    raise UnsupportedOpError(f"no overload of {op} takes these arguments: {args!r} {kwargs!r}")


def _bind(schema, args: list, kwargs: dict) -> tuple[list, dict] | None:
    positional = [a for a in schema.arguments if not a.kwarg_only]
    keyword = [a for a in schema.arguments if a.kwarg_only]
    if len(args) > len(positional) + len(keyword):
        return None
    extra = args[len(positional) :]
    args = args[: len(positional)]
    kwargs = dict(kwargs)
    for argument, value in zip(keyword, extra, strict=False):
        kwargs[argument.name] = value
    names = {a.name for a in schema.arguments}
    if not set(kwargs) <= names:
        return None
    for argument, value in zip(positional, args, strict=False):
        if not _fits(argument.type, value):
            return None
    for argument in positional[len(args) :]:
        if not argument.has_default_value() and argument.name not in kwargs:
            return None
    return args, kwargs


_INT_LIKE = (int, torch.dtype, torch.layout, torch.memory_format)


def _fits(kind, value) -> bool:
    """Whether ``value`` (an FX node, a list, a constant) can be an argument of JIT type
    ``kind``: enough to tell overloads apart (tensor vs number vs list)."""
    if isinstance(kind, torch.OptionalType):
        return value is None or _fits(kind.getElementType(), value)
    if value is None:
        return False
    is_node = isinstance(value, torch.fx.Node)
    is_number_node = is_node and value.target is torch.ops.aten._local_scalar_dense.default
    if isinstance(kind, torch.TensorType):
        return is_node and not is_number_node
    if isinstance(kind, torch.ListType):
        return isinstance(value, (list, tuple))
    if is_node and not is_number_node or isinstance(value, (list, tuple)):
        return False
    if isinstance(kind, torch.IntType) or str(kind) == "SymInt":
        # ScalarType, Layout and MemoryFormat are ints to the JIT
        return is_number_node or type(value) in _INT_LIKE
    if isinstance(kind, torch.BoolType):
        return type(value) is bool
    return True
