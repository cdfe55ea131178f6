"""``LoweringContext``: what a node's ``lower()`` calls to build a backend's graph.

Generated ``lower()`` methods (and hand-written ``lower_<name>`` functions) speak only this
interface, so every backend implements it once and reuses every generated lowering. The
values a context hands out (``ctx.tensor(v)``...) are the backend's own: TorchScript
``torch._C.Value``s, ``torch.fx.Node``s, or anything else that ``call`` accepts back.

The contract, per argument kind (in schema order; keyword-only arguments by name):

=============================  =======================================================
``Tensor``                     ``ctx.tensor(v)``; a wrapped Python number given where a
                               tensor is expected (``add(x, 2)``) is a ``ScalarData``
                               value: it must become a 0-dim tensor of
                               ``ctx.number_dtype(v)`` (eager's wrapped-number promotion)
``Tensor?`` / ``Tensor[]`` /   ``ctx.optional_tensor(v)``, ``ctx.tensor_list(vs)``,
``Tensor?[]``                  ``ctx.optional_tensor_list(vs)``
``Scalar`` / ``Scalar?``       ``ctx.scalar(v)``, ``ctx.optional_scalar(v)``: a graph input
                               (a 0-dim tensor) read as a number, never a constant
``SymInt`` / ``SymInt[]``      ``ctx.symint(v)``, ``ctx.symint_list(vs)`` (symint mode): a
                               ``SymInt`` is a graph input read as an int; each int of a
                               ``SymInt[]`` is a ``SizeConstant`` node lowered before its
                               users as ``ctx.constant(int)`` (``ctx.values[v]``)
``Generator?``                 ``ctx.generator(v)``: a ``torch.Generator`` graph input
any attribute                  ``ctx.constant(value)``
=============================  =======================================================

then ``ctx.call(op, args, kwargs, num_outputs)``, where ``op`` names the exact overload
(``"aten::add.Tensor"``; ``"aten::relu"`` for a default overload; a non-native op's
``opkind``), ``args`` are the positional and ``kwargs`` the keyword-only arguments in
schema order. An op returning ``Tensor[]`` is called with ``num_outputs=1`` and its one
result split with ``ctx.unpack_list(result, count)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from .errors import LazygenRuntimeError, LazyGraphError
from .ir import Node, ScalarData, Value, wrapped_number_dtype


class LoweringContext(ABC):
    """Maps IR values to one backend graph under construction.

    A backend subclasses it and implements the abstract methods; the graph executor feeds
    nodes in post-order: ``add_parameter`` for every graph input (``node.is_input``),
    ``lower_node`` for every other node, then ``set_graph_outputs``."""

    def __init__(self, device: torch.device | str | None = None) -> None:
        """An empty graph whose data lives on ``device`` (the CPU by default)."""
        #: Where the graph's data lives. An attribute naming the lazy device
        #: (``torch.device("lazygen")``) means this device in the graph.
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.values: dict[Value, Any] = {}
        self.parameters: list[Node] = []  # input nodes, in graph input order
        self.node: Node | None = None  # the node being lowered

    # Inputs and results ------------------------------------------------------------------

    @abstractmethod
    def parameter(self, node: Node) -> Any:
        """A new graph input for ``node`` (``DeviceData``, ``ScalarData``, or a generator
        input when ``getattr(node, "is_generator", False)``); the executor feeds them in
        this order."""

    def add_parameter(self, node: Node) -> Any:
        """Make ``node`` the next graph input (through ``parameter``), record it in
        ``parameters`` and map its value; the executor calls it for every input node."""
        value = self.parameter(node)
        self.parameters.append(node)
        self.values[Value(node, 0)] = value
        return value

    def lower_node(self, node: Node) -> None:
        """Lower one node through its generated (or hand-written) ``lower()``."""
        self.node = node
        try:
            outputs = node.lower(self)
        except LazyGraphError:
            raise
        except Exception as error:
            raise LazyGraphError("lowering", node, error) from error
        self.set_outputs(node, outputs)

    def set_outputs(self, node: Node, outputs) -> None:
        """Map ``node``'s outputs to the backend values its ``lower()`` returned, one per
        output; a count that differs from the node's shapes is a lowering error."""
        if len(outputs) != len(node.shapes):
            raise LazyGraphError(
                "lowering",
                node,
                LazygenRuntimeError(
                    f"lower() returned {len(outputs)} values for {len(node.shapes)}"
                ),
            )
        for index, output in enumerate(outputs):
            self.values[Value(node, index)] = output

    @abstractmethod
    def set_graph_outputs(self, outputs: list[Value]) -> None:
        """Make these values the graph's results, in this order."""

    # One method per argument kind ---------------------------------------------------------

    @abstractmethod
    def tensor(self, v: Value) -> Any:
        """A ``Tensor`` argument: the backend value already mapped to ``v``; a wrapped
        Python number (``is_wrapped_number(v)``) becomes a 0-dim tensor of
        ``number_dtype(v)``."""

    def optional_tensor(self, v: Value | None) -> Any:
        """A ``Tensor?`` argument: ``tensor(v)``, or the constant None when absent."""
        return self.constant(None) if v is None else self.tensor(v)

    @abstractmethod
    def tensor_list(self, vs) -> Any:
        """A ``Tensor[]`` argument: one backend list of ``tensor(v)`` for each ``v``."""

    @abstractmethod
    def optional_tensor_list(self, vs) -> Any:
        """A ``Tensor?[]`` argument (``index``'s indices): a backend list whose entries are
        ``tensor(v)`` or None."""

    @abstractmethod
    def scalar(self, v: Value) -> Any:
        """A ``Scalar`` argument: ``v`` is a graph input holding a 0-dim tensor; the result
        is read as a Python number inside the graph (never baked in as a constant, so
        changing values do not recompile)."""

    def optional_scalar(self, v: Value | None) -> Any:
        """A ``Scalar?`` argument: ``scalar(v)``, or the constant None when absent."""
        return self.constant(None) if v is None else self.scalar(v)

    @abstractmethod
    def symint(self, v: Value) -> Any:
        """A ``SymInt`` argument in symint mode: a graph input read as an int."""

    @abstractmethod
    def symint_list(self, vs) -> Any:
        """A ``SymInt[]`` argument in symint mode: a backend list of ints, each the value
        of its ``SizeConstant`` node (lowered as ``constant(int)`` before its users)."""

    def generator(self, v: Value) -> Any:
        """A random op's generator: its graph input (see ``rt.generator``)."""
        return self.values[v]

    @abstractmethod
    def constant(self, value) -> Any:
        """An attribute: None, bool, int, float, complex, str, ``torch.dtype`` / ``layout``
        / ``memory_format`` / ``device``, or lists and tuples of them."""

    @abstractmethod
    def call(self, op: str, args: list, kwargs: dict, num_outputs: int) -> list:
        """Apply ``op`` (see the module docstring); one backend value per output."""

    @abstractmethod
    def unpack_list(self, value: Any, count: int) -> list:
        """The ``count`` tensors of a ``Tensor[]`` result."""

    def value_list(self, items: list) -> Any:
        """A ``Tensor[]`` argument made of backend values this context handed out (a
        hand-written lowering stacking per-step results); a Python list by default."""
        return list(items)

    # Helpers for implementations ------------------------------------------------------------

    def number_dtype(self, v: Value) -> torch.dtype:
        """The dtype a wrapped Python number (a ``ScalarData`` used as a ``Tensor``
        argument of the node being lowered) must have so that type promotion treats it as
        eager treats a wrapped number."""
        natural = v.node.shapes[0].dtype
        others = []
        if self.node is not None:
            for operand in self.node.inputs():
                if type(operand.node) is not ScalarData and operand.node.shapes:
                    shape = operand.node.shapes[operand.index]
                    others.append((shape.dtype, len(shape.sizes)))
        return wrapped_number_dtype(natural, others)


def is_wrapped_number(v: Value) -> bool:
    """A Python number given where a tensor is expected (see ``number_dtype``)."""
    return type(v.node) is ScalarData


_overloads: dict[str, Any] = {}


def overload_of(op: str):
    """``torch.ops.<ns>.<name>.<overload>`` for ``"ns::name.overload"`` (``"ns::name"``: the
    default overload), or None when torch has no such op (a non-native ``opkind``)."""
    found = _overloads.get(op)
    if found is None and op not in _overloads:
        namespace, sep, rest = op.partition("::")
        name, _, overload = rest.partition(".")
        try:
            packet = getattr(getattr(torch.ops, namespace), name) if sep else None
            found = None if packet is None else getattr(packet, overload or "default")
        except (AttributeError, RuntimeError):
            found = None
        _overloads[op] = found
    return found
