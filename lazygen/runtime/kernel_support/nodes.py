"""A traced op's node and its lazy results: ``make_node`` (or the last step's equal node,
``ir_reuse``), the fast path of generated kernels (``TracedOp``, ``trace``), the results
(``wrap*``, ``inplace``) and the graph cut past ``max_pending_nodes``. Part of the
generated-code contract (``kernel_support``); on the hot path."""

from __future__ import annotations

import torch

from .. import state
from ..devices import Devices, LazyDevice, default_device
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..graph import dynamic, size_inputs
from ..ir import Node, Value
from ..metrics import count
from ..state import settings
from ..tracing import ir_reuse
from ..tracing.output_shapes import ShapeCache, cached_shapes, compute_shapes
from ..tracing.tensor import LazyTensor, new_lazy
from .operands import _other_device

_new_value = tuple.__new__  # Value(node, i) without the NamedTuple's Python-level __new__
_new_object = object.__new__
_default_dtype = torch.get_default_dtype  # the shape cache's hit compares it (``ShapeCache``)
_node_init = Node.__init__


def make_node(cls, operands, attrs, shapes, device: LazyDevice | None = None) -> Node:
    """A node of ``cls``; under dynamic shapes, with its attributes that are sizes traced as
    size inputs (``graph/size_inputs.py``; ``device``: the node's, default the default one)."""
    if cls.size_attrs and dynamic.on():
        cls, operands, attrs = size_inputs.lift(
            cls, operands, attrs, shapes, device or default_device()
        )
    if settings.reuse_ir:
        return _reuse_or_make(cls, operands, attrs, shapes)
    if settings.record_source or cls.__init__ is not _node_init:
        return cls(operands, attrs, shapes)
    return _plain_node(cls, operands, attrs, shapes)


def _plain_node(cls, operands, attrs, shapes) -> Node:
    """``cls(operands, attrs, shapes)`` without Node.__init__'s Python frame (a class using
    Node's own ``__init__``, no source line recorded)."""
    node = _new_object(cls)
    node.operands = operands
    node.attrs = attrs
    node.shapes = shapes
    node.source = None
    return node


def _reuse_or_make(cls, operands, attrs, shapes) -> Node:
    """The last step's equal node (see ``ir_reuse``), else a new one reading its inputs
    through slots the next step can rebind."""
    node = ir_reuse.lookup(cls, operands, attrs, shapes)
    if node is None:
        node = cls(ir_reuse.own_inputs(operands), attrs, shapes)
        ir_reuse.remember(node)
    return node


class TracedOp:
    """What a generated kernel's fast path (``trace``) needs to know of its op, made once
    at import: the counter, the overload its shapes come from, the node class and how to
    compute shapes where no meta kernel does."""

    __slots__ = ("counter", "op", "node_class", "compute_fn", "cache_shapes", "plain_node")

    def __init__(self, counter: str, op, node_class: type[Node], compute_fn=None) -> None:
        self.counter = counter
        self.op = op
        self.node_class = node_class
        self.compute_fn = compute_fn
        # Data-dependent shapes (``nonzero``) are computed every time, never cached.
        self.cache_shapes = not getattr(compute_fn, "data_dependent", False)
        # Built by ``make_node``'s fast path whenever reuse and source lines are off: no
        # size attributes (dynamic shapes may lift them) and Node's own ``__init__``.
        self.plain_node = not node_class.size_attrs and node_class.__init__ is _node_init

    def __repr__(self) -> str:
        return f"TracedOp({self.counter!r})"


def trace(traced: TracedOp, key: tuple, args, kwargs, operands, attrs, device) -> LazyTensor:
    """The fast path of a generated single-output kernel whose tensor arguments are all lazy
    tensors: count, shapes, node and result. At thousands of ops per training step each
    Python call is a measurable share, so the common case (a cached shape, a plain node: no
    reuse, no source line, no size input) runs in this one frame plus ``new_lazy``: the
    counter (``metrics.count``), the device check (``several_in_use``), ``cached_shapes``,
    ``_plain_node`` and ``wrap`` are inlined, each a Python call of ~0.1 us a traced op
    (py-spy: 15% of a chain op). The result is made by ``new_lazy``, the one place that
    makes one.

    ``key`` is the shape-cache key the kernel built: ``traced`` first (it names the op and
    the way its shapes are computed), then each argument's ``_shape`` or ``shape_key``.
    ``args`` and ``kwargs`` are the call's, for computing shapes on a miss."""
    runtime = state.runtime
    try:  # ``count(traced.counter)``; its first call on a thread registers the counters
        counters = runtime.per_thread.counters
        counters[traced.counter] = counters.get(traced.counter, 0) + 1
    except AttributeError:
        count(traced.counter)
    parts = runtime.parts  # subscripts, not calls: a part not made yet is a KeyError
    try:  # ``several_in_use()``
        several = len(parts[Devices].devices) > 1
    except KeyError:
        several = False
    if several:
        for a in args:  # tensors of two lazy devices: eager's error (one is free)
            if type(a) is LazyTensor and a._device is not device:
                raise _other_device(a, device)
    if traced.cache_shapes:
        try:  # ``cached_shapes``' hit, inlined (its default dtype check too)
            cache = parts[ShapeCache]
            shapes = cache.get(key) if cache.default_dtype is _default_dtype() else None
        except KeyError:
            shapes = None
        if shapes is None:
            shapes = cached_shapes(key, traced.op, args, kwargs, traced.compute_fn)
    else:
        shapes = compute_shapes(traced.op, args, kwargs, traced.compute_fn)
    if traced.plain_node and not (settings.reuse_ir or settings.record_source):
        node = _new_object(traced.node_class)  # ``_plain_node``: make_node's checks done
        node.operands = operands
        node.attrs = attrs
        node.shapes = shapes
        node.source = None
    else:
        node = make_node(traced.node_class, operands, attrs, shapes, device)
    result = new_lazy(_new_value(Value, (node, 0)), device)  # ``wrap``
    device.pending_nodes += 1
    if device.pending_nodes > settings.max_pending_nodes:
        executor.cut(device)
    return result


def wrap(node: Node, device: LazyDevice) -> LazyTensor:
    result = new_lazy(_new_value(Value, (node, 0)), device)
    device.pending_nodes += 1
    if device.pending_nodes > settings.max_pending_nodes:
        executor.cut(device)
    return result


def wrap_tuple(node: Node, device: LazyDevice) -> tuple[LazyTensor | None, ...]:
    """One tensor per output; None for an output the op left undefined (shape None)."""
    result = tuple(
        [
            None if shape is None else new_lazy(Value(node, i), device)
            for i, shape in enumerate(node.shapes)
        ]
    )
    _traced(device)
    return result


def wrap_list(node: Node, device: LazyDevice) -> list[LazyTensor]:
    result = [new_lazy(Value(node, i), device) for i in range(len(node.shapes))]
    _traced(device)
    return result


def inplace(target: LazyTensor, node: Node) -> LazyTensor:
    if node.shapes[0].sizes != target._sizes:
        raise LazygenRuntimeError(
            f"lazygen: {node.op_name} would resize a lazy tensor from {list(target._sizes)} to "
            f"{list(node.shapes[0].sizes)}; lazy tensors cannot be resized in place"
        )
    target._value = Value(node, 0)
    _traced(target._device)
    return target


def _traced(device: LazyDevice) -> None:
    device.pending_nodes += 1
    if device.pending_nodes > settings.max_pending_nodes:
        executor.cut(device)
