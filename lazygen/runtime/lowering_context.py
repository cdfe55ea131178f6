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
                               (a 0-dim tensor) read as a number; a ``FixedScalar`` input
                               (``fixed_number(v)`` not None) may instead be that number,
                               compiled in (the graph key holds it)
``SymInt`` / ``SymInt[]``      ``ctx.symint(v)``, ``ctx.symint_list(vs)`` (symint mode): a
                               ``SymInt`` is a graph input read as an int; each int of a
                               ``SymInt[]`` is a ``SizeConstant`` node lowered before its
                               users as ``ctx.constant(int)`` (``ctx.values[v]``)
``Generator?``                 ``ctx.generator(v)``: a ``torch.Generator`` graph input
any attribute                  ``ctx.constant(value)``; a size traced as an input gives
                               it what ``symint`` returned: keep it (``graph/size_inputs``)
=============================  =======================================================

then ``ctx.call(op, args, kwargs, num_outputs)``, where ``op`` names the exact overload,
either as the ``torch._ops.OpOverload`` (``torch.ops.aten.add.Tensor``, what hand-written
lowerings should pass) or as its string (``"aten::add.Tensor"``; ``"aten::relu"`` for a
default overload; generated lowerings pass strings, and a non-native op's ``opkind`` has
no overload). ``args`` are the positional and ``kwargs`` the keyword-only arguments in
schema order. An op returning ``Tensor[]`` is called with ``num_outputs=1`` and its one
result split with ``ctx.unpack_list(result, count)``. A backend's ``call`` receives ``op``
as the lowering gave it and normalises it with ``op_string(op)`` / ``overload_of(op)``.

What a lowering may ask about the node being lowered (never ``ctx.node``'s internals):
``ctx.output_shapes()`` (a ``Shape(dtype, sizes)`` per output, None for one the op leaves
undefined), ``ctx.output_dtype(i)``, ``ctx.output_sizes(i)``; ``ctx.is_lazy_device(d)``:
whether a device attribute names the lazy device (``ctx.device``, where the data live).

Two rules every lowering and every ``call`` can rely on:

* **Views may alias.** Functionalization traces views as their ``*_copy`` ops
  (``t_copy``, ``transpose_copy.int``, ``permute_copy``, ``view_copy``, ``expand_copy``,
  ``slice_copy.Tensor``, ``select_copy.int``, ``diagonal_copy``, ``squeeze_copy*``,
  ``unsqueeze_copy``, ``alias_copy``, ``detach_copy``; the op fact ``view_copies``). A backend may
  lower them as the views they copy, returning a value that shares its input's storage:
  nothing writes in place inside a graph (mutation is functionalized) or to device data
  afterwards (the eager fallback copies what it mutates), so no one can tell a view from a
  copy by value. (The one write, ``ir.InputWrite``, lowered as ``aten::copy_`` into a graph
  input, is made only for backends that set ``Backend.writes_inputs``, runs after every
  other node, and only into an input that no op which may alias reads: the op fact ``may_alias``.) It should, where its kernels read strides: eager runs the view, and the
  next kernel picks its path from the layout it gets (lowering ``t_copy`` as a contiguous
  copy sends the next ``mm`` down another BLAS path, and ``multi_head_attention_forward``
  came out 9e-6 relative from eager). Graph results need not be contiguous: they are
  made so when read. Ops that are not views (``clone``, ``_to_copy``, ``copy``) keep
  their eager meaning, but may alias too for the same reason. The one duty aliasing
  brings: ops whose result depends on their input's strides, not only its values
  (``as_strided_copy``, ``as_strided_scatter``, ``_reshape_alias_copy``;
  the op fact ``stride_reading``), read a lazy tensor as contiguous, so a backend that aliases
  hands them a contiguous input (``as_strided_copy(t_copy(x))`` run on the view ``t(x)``
  reads the untransposed storage). Likewise ops whose kernels require contiguous inputs,
  which eager's composites make so with ``.contiguous()`` (a no-op on a lazy tensor:
  ``native_group_norm``, ``_embedding_bag*``, ``_pdist*``; the op fact ``contiguous_inputs``), get
  every tensor input contiguous.
* **Nodes with a reference decomposition.** Some nodes the runtime makes on its own are
  neutral ops of lazygen's (``lazygen::attention`` and ``lazygen::attention_backward``:
  ``ops/attention_op.py``), which a backend lowers in one of three ways: natively, as
  ``call("lazygen::attention", ...)`` like any op; refused (``Backend.refused_ops``), so
  they are never made on its devices; or decomposed, by naming them in ``decomposed_ops``
  (a class attribute of its context): their ``lower()`` then emits their reference
  decomposition into plain ATen ops (matmul, softmax, ...) through ``call`` instead.
* **Masked-off outputs.** An op with an ``output_mask`` (``native_layer_norm_backward``,
  ``convolution_backward``...) whose mask leaves an output off has ``None`` as that
  output's shape. ``call`` still returns one value per output (``num_outputs`` counts them
  all); a masked-off one may be anything (None, a dummy): nothing ever reads it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from . import op_registry, state
from .errors import LazygenRuntimeError, LazyGraphError
from .ir import FixedScalar, Node, ScalarData, Shape, Value, wrapped_number_dtype

# The lowering contract's converters of an op's spellings (defined in ``op_registry``).
from .op_registry import op_string as op_string
from .op_registry import overload_of

#: An op as ``ctx.call`` takes it: the ``torch.ops`` overload, or its ``"ns::name.overload"``
#: string (the only form a non-native ``opkind`` has).
Op = torch._ops.OpOverload | str


class LoweringContext(ABC):
    """Maps IR values to one backend graph under construction.

    A backend subclasses it and implements the abstract methods; the graph executor feeds
    nodes in post-order: ``add_parameter`` for every graph input (``node.is_input``),
    ``lower_node`` for every other node, then ``set_graph_outputs``.
    """

    #: The runtime's neutral ops (``"lazygen::attention"``, ``"lazygen::attention_backward"``)
    #: this context lowers as their reference decomposition into plain ops rather than
    #: through ``call`` (see "Nodes with a reference decomposition" above).
    decomposed_ops: frozenset[str] = frozenset()

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
        """A new graph input for ``node``; the executor feeds them in this order.

        ``node`` is a ``DeviceData``, a ``ScalarData``, or a generator input when
        ``getattr(node, "is_generator", False)``.
        """

    def add_parameter(self, node: Node) -> Any:
        """Make ``node`` the next graph input (through ``parameter``).

        Record it in ``parameters`` and map its value; the executor calls it for every input
        node.
        """
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

    def lower_nodes(self, order: list[Node]) -> None:
        """Lower a post-ordered graph's nodes.

        An input node becomes the next parameter (``add_parameter``), every other node goes
        through ``lower_node``.
        """
        for node in order:
            if node.is_input:
                self.add_parameter(node)
            else:
                self.lower_node(node)

    def lower_graph(self, order: list[Node], outputs: list[Value]) -> None:
        """Lower a whole post-ordered graph and make ``outputs`` its results.

        It uses ``lower_nodes``, then ``set_graph_outputs``.
        """
        self.lower_nodes(order)
        self.set_graph_outputs(outputs)

    def set_outputs(self, node: Node, outputs) -> None:
        """Map ``node``'s outputs to the backend values its ``lower()`` returned.

        One value per output; anything else (a bare value, another count) is a lowering
        error.
        """
        expected = len(node.shapes)
        if isinstance(outputs, torch.Tensor) or not isinstance(outputs, (list, tuple)):
            # A newcomer's `call` returning its one value (a register, a tensor) bare: a
            # tensor's len() is its first size, an int subclass has none.
            raise LazyGraphError(
                "lowering",
                node,
                LazygenRuntimeError(
                    f"lower() returned a {type(outputs).__name__}, not a list of one value "
                    f"per output ({expected}): LoweringContext.call returns such a list, "
                    "even for one output"
                ),
            )
        if len(outputs) != expected:
            raise LazyGraphError(
                "lowering",
                node,
                LazygenRuntimeError(
                    f"lower() returned {len(outputs)} values for {expected} outputs "
                    "(LoweringContext.call returns one value per output: num_outputs)"
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
        """A ``Tensor`` argument: the backend value already mapped to ``v``.

        A wrapped Python number (``is_wrapped_number(v)``) becomes a 0-dim tensor of
        ``number_dtype(v)``.
        """

    def optional_tensor(self, v: Value | None) -> Any:
        """A ``Tensor?`` argument: ``tensor(v)``, or the constant None when absent."""
        return self.constant(None) if v is None else self.tensor(v)

    @abstractmethod
    def tensor_list(self, vs) -> Any:
        """A ``Tensor[]`` argument: one backend list of ``tensor(v)`` for each ``v``."""

    @abstractmethod
    def optional_tensor_list(self, vs) -> Any:
        """A ``Tensor?[]`` argument (``index``'s indices).

        A backend list whose entries are ``tensor(v)`` or None.
        """

    @abstractmethod
    def scalar(self, v: Value) -> Any:
        """A ``Scalar`` argument: ``v`` is a graph input holding a 0-dim tensor.

        The result is read as a Python number inside the graph (a ``ScalarData`` never baked
        in as a constant, so changing values do not recompile). A ``FixedScalar``'s number
        is part of the graph key: a backend may return ``fixed_number(v)`` as a constant
        instead, and should where reading an input costs per run (it is fed either way).
        """

    def optional_scalar(self, v: Value | None) -> Any:
        """A ``Scalar?`` argument: ``scalar(v)``, or the constant None when absent."""
        return self.constant(None) if v is None else self.scalar(v)

    @abstractmethod
    def symint(self, v: Value) -> Any:
        """A ``SymInt`` argument in symint mode: a graph input read as an int."""

    @abstractmethod
    def symint_list(self, vs) -> Any:
        """A ``SymInt[]`` argument in symint mode: a backend list of ints.

        Each is the value of its ``SizeConstant`` node (lowered as ``constant(int)`` before
        its users).
        """

    def generator(self, v: Value) -> Any:
        """A random op's generator: its graph input (see ``rt.generator``)."""
        return self.values[v]

    @abstractmethod
    def constant(self, value) -> Any:
        """An attribute.

        It is None, bool, int, float, complex, str, ``torch.dtype`` / ``layout`` /
        ``memory_format`` / ``device``, or lists and tuples of them.
        """

    @abstractmethod
    def call(self, op: Op, args: list, kwargs: dict, num_outputs: int) -> list:
        """Apply ``op`` to ``args``/``kwargs`` made by the methods above.

        ``op`` is an ``OpOverload`` or its string (see the module docstring); normalise it
        with ``op_string``/``overload_of``. Returns one backend value per output, masked-off
        outputs included.
        """

    @abstractmethod
    def unpack_list(self, value: Any, count: int) -> list:
        """The ``count`` tensors of a ``Tensor[]`` result."""

    def constrain(self, value: Any, placement: Any) -> Any:
        """``value`` laid out as ``placement`` (a ``ShardingConstraint``); one device: as is."""
        return value

    def value_list(self, items: list) -> Any:
        """A ``Tensor[]`` argument made of backend values this context handed out.

        Used by a hand-written lowering stacking per-step results; a Python list by default.
        """
        return list(items)

    # What a lowering may ask about the node being lowered --------------------------------

    def output_shapes(self) -> tuple[Shape | None, ...]:
        """The node's outputs as shape inference gave them.

        One ``Shape(dtype, sizes)`` per output, None for an output a mask left undefined. A
        lowering needing the result's dtype (a cast) or sizes (a reshape) reads them here.
        """
        if self.node is None:
            raise LazygenRuntimeError(
                "lazygen: output_shapes() is for a node's lower(): no node is being lowered"
            )
        return tuple(self.node.shapes)

    def output_dtype(self, index: int = 0) -> torch.dtype:
        """The dtype of output ``index`` of the node being lowered."""
        return self._output(index).dtype

    def output_sizes(self, index: int = 0) -> tuple[int, ...]:
        """The sizes of output ``index`` of the node being lowered."""
        return tuple(self._output(index).sizes)

    def _output(self, index: int) -> Shape:
        """Output ``index``'s shape; an error naming the op's outputs when it has none."""
        shapes = self.output_shapes()
        if not 0 <= index < len(shapes) or shapes[index] is None:
            raise LazygenRuntimeError(
                f"lazygen: {self.node.op_kind} has no output {index} (its outputs: "
                f"{list(shapes)}; None is an output its mask left off)"
            )
        return shapes[index]

    def decomposes(self, op: str) -> bool:
        """Whether a node of the neutral op ``op`` lowers as its reference decomposition."""
        return op in self.decomposed_ops

    def is_lazy_device(self, device) -> bool:
        """Whether ``device`` is the lazy device, which in a graph means ``self.device``.

        ``device`` is a ``torch.device`` or its string, as a device attribute carries it.
        """
        return state.is_lazy_device(device)

    # Helpers for implementations ------------------------------------------------------------

    def number_dtype(self, v: Value) -> torch.dtype:
        """The dtype a wrapped Python number must have for eager's type promotion.

        The number is a ``ScalarData`` used as a ``Tensor`` argument of the node being
        lowered; with this dtype, type promotion treats it as eager treats a wrapped number.
        """
        natural = v.node.shapes[0].dtype
        others = []
        if self.node is not None:
            for operand in self.node.inputs():
                if not isinstance(operand.node, ScalarData) and operand.node.shapes:
                    shape = operand.node.shapes[operand.index]
                    others.append((shape.dtype, len(shape.sizes)))
        return wrapped_number_dtype(natural, others)


def fixed_number(v: Value) -> bool | int | float | complex | None:
    """The number of a ``FixedScalar`` input, as its 0-dim tensor holds it.

    A ``FixedScalar`` is a constant of the graph: the graph key holds it. None for any other
    value.
    """
    node = v.node
    if type(node) is not FixedScalar:
        return None
    return node.value


def is_wrapped_number(v: Value) -> bool:
    """A Python number given where a tensor is expected (see ``number_dtype``)."""
    return isinstance(v.node, ScalarData)


def takes_contiguous_inputs(op: Op) -> bool:
    """Whether a backend whose views alias must make ``op``'s tensor inputs contiguous.

    It must, before running it, when ``op`` has the op fact ``stride_reading`` (it reads
    strides) or ``contiguous_inputs`` (its kernels require them); see "Views may alias".
    This is the one rule every aliasing ``call`` applies.
    """
    return op_registry.has("stride_reading", op) or op_registry.has("contiguous_inputs", op)


def view_of(op: Op):
    """The view overload a ``*_copy`` op of the op fact ``view_copies`` copies.

    It serves a lowering that runs such ops as views (see "Views may alias"): ``t_copy`` ->
    ``torch.ops.aten.t.default``; ``view_copy`` -> ``reshape``, which takes any layout. None
    for every other op, and for ops of the op fact ``stride_reading``, whose inputs must be
    contiguous.
    """
    overload = overload_of(op)
    if overload is None:
        return None
    if not op_registry.has("view_copies", overload) or op_registry.has("stride_reading", overload):
        return None
    packet = op_registry.of("view_copy_views", overload)
    if packet is None:
        return op_registry.view_of_copy(overload)
    return getattr(packet, op_registry.overload_name(overload), None)
