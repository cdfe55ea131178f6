"""Recording one op, from a generated kernel's arguments to its lazy results: the
generated-code contract's hot path (``kernel_support``), in the order a kernel calls it.

* **Operands**: each argument as an IR value. Tensors become their IR value (a host 0-dim
  tensor or ``Tensor?[]`` index is uploaded as device data), Python numbers graph inputs
  (``ScalarData``; ``FixedScalar`` where a capture makes them constants), sizes shared
  ``SizeConstant``s (graph inputs of their own with dynamic shapes).
* **The node**: ``make_node`` (or the last step's equal node, ``ir_reuse``) and the fast
  path of generated kernels (``TracedOp``, ``trace``), with the graph cut past
  ``max_pending_nodes``.
* **The results**: ``wrap*`` and ``inplace``.

Every function here runs once or more per traced op: keep them short.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import state
from ..devices import Devices, LazyDevice, default_device
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..graph import dynamic, size_inputs
from ..ir import (
    _SCALAR_DTYPES,
    DeviceData,
    Node,
    ScalarData,
    ScalarTable,
    SizeConstant,
    Value,
    scalar_dtype,
    scalar_shapes,
)
from ..metrics import count
from ..state import settings
from ..tracing import ir_reuse
from ..tracing.output_shapes import ShapeCache, cached_shapes, compute_shapes
from ..tracing.tensor import LazyTensor, device_data, new_lazy

_new_value = tuple.__new__  # Value(node, i) without the NamedTuple's Python-level __new__
_new_object = object.__new__


def upload(t: torch.Tensor, device: LazyDevice) -> Value:
    """Device data holding a copy of host tensor ``t`` (the caller may change ``t`` later)."""
    if not device.backend.torch_data:  # its data may share t's memory (DLPack)
        return device_data(t.clone(), device)
    data = device.backend.to_data(t, device.backing)
    if data is t:
        data = t.clone()
    return Value(DeviceData(data), 0)


def device_of(*tensors) -> LazyDevice:
    for t in tensors:
        if type(t) is LazyTensor:
            return t._device
        if type(t) in (list, tuple):
            for item in t:
                if type(item) is LazyTensor:
                    return item._device
    return default_device()


def tensor(t, device: LazyDevice) -> Value:
    if type(t) is LazyTensor:
        if t._device is not device:
            raise _other_device(t, device)
        return t._value
    if isinstance(t, torch.Tensor):
        if t.dim() == 0 and t.device.type == "cpu":
            return upload(t, device)
        raise LazygenRuntimeError(
            f"Expected all tensors to be on the same device, but found {t.device} and "
            f"{device.torch_device}: input tensor is not a lazy tensor: a {t.device} "
            f"{str(t.dtype).replace('torch.', '')}{list(t.shape)} tensor; move it with "
            f".to('{device.torch_device}') (0-dim CPU tensors are taken as they are)"
        )
    # A Python number where a tensor is expected (e.g. a wrapped scalar operand).
    return scalar(t, device)


def _other_device(t: LazyTensor, device: LazyDevice) -> LazygenRuntimeError:
    """Eager's error for an op mixing tensors of two devices (``lazygen:0`` and ``:1``)."""
    return LazygenRuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{device.torch_device} and {t._device.torch_device}! Move one with "
        f".to('{device.torch_device}')"
    )


def optional_tensor(t, device: LazyDevice) -> Value | None:
    return None if t is None else tensor(t, device)


def tensor_list(ts, device: LazyDevice) -> tuple[Value, ...]:
    return tuple([tensor(t, device) for t in ts])


def optional_tensor_list(ts, device: LazyDevice) -> tuple[Value | None, ...]:
    """`Tensor?[]` operands are the indices of indexing ops, which, as on CUDA, may live on
    the host: host index tensors are uploaded as device data."""
    return tuple([None if t is None else _index(t, device) for t in ts])


def _index(t, device: LazyDevice) -> Value:
    if isinstance(t, torch.Tensor) and type(t) is not LazyTensor and t.device.type == "cpu":
        return upload(t, device)
    return tensor(t, device)


_SCALAR_SHAPES_OF = MappingProxyType(
    {kind: scalar_shapes(dtype) for kind, dtype in _SCALAR_DTYPES.items()}
)


def scalar(value, device: LazyDevice) -> Value:
    """A Python number as a graph input (one per number: see ``tensor.shared_scalars`` for when
    equal numbers share one)."""
    try:  # a subscript: a mapping proxy's ``get`` is a method call, ~30 ns more
        shapes = _SCALAR_SHAPES_OF[type(value)]
    except KeyError:
        if isinstance(value, torch.Tensor):
            return tensor(value, device)
        return _new_value(Value, (ScalarData(value, scalar_dtype(value), device.backing), 0))
    shared = device.shared_scalars
    if shared is not None:
        return _shared_scalar(value, device, shared)
    node = _new_object(ScalarData)  # ScalarData(...) without its Python-level __init__
    node.value = value
    node.device = device.backing
    node.shapes = shapes
    return _new_value(Value, (node, 0))


def _shared_scalar(value, device: LazyDevice, shared: ScalarTable) -> Value:
    kind = type(value)
    if kind is complex or (kind is float and (value != value or value == 0.0)):
        key = None  # as keys, -0.0 == 0.0 and nan != nan: built every time
    else:
        key = (kind, value)  # the kind keeps True, 1 and 1.0 apart
        found = shared.get(key)
        if found is not None:
            return found
    node = shared.node_type(value, _SCALAR_DTYPES[kind], device.backing)
    result = _new_value(Value, (node, 0))
    if key is not None:
        shared[key] = result
    return result


def optional_scalar(value, device: LazyDevice) -> Value | None:
    return None if value is None else scalar(value, device)


def symint(value, device: LazyDevice) -> Value:
    """A ``SymInt`` (a start, an index) as a graph input; a ``FixedScalar`` where the
    numbers are the graph's constants (``tensor.fixed_scalars``)."""
    shared = device.shared_scalars
    node_type = ScalarData if shared is None else shared.node_type
    return Value(node_type(int(value), torch.int64, device.backing), 0)


def symint_list(values, device: LazyDevice) -> tuple[Value, ...]:
    """A size or stride list as shared ``SizeConstant`` values (one dict lookup per list
    seen before). A single ``SymInt`` (``symint``) stays a graph input: starts and
    offsets change from step to step (``data[i : i + n]``) where sizes do not.

    With dynamic shapes on (``config.set_dynamic_shapes``, ``graph.dynamic.on()``), each int is a graph input of
    its own instead, never shared: a graph's structure then does not depend on which sizes
    happen to be equal, and one compiled graph serves every size (``graph/dynamic.py``)."""
    if dynamic.on():
        backing = device.backing
        return tuple([Value(ScalarData(int(v), torch.int64, backing), 0) for v in values])
    key = tuple([int(v) for v in values])
    try:  # a subscript, no call: see ``SizeLists``
        lists = state.runtime.parts[SizeLists]
    except KeyError:
        lists = state.part(SizeLists)
    found = lists.get(key)
    if found is None:
        found = lists.keep(key, tuple([Value(SizeConstant(v), 0) for v in key]))
    return found


class SizeLists(state.BoundedMemo):
    """The size lists traced in this run as shared ``SizeConstant`` values (a part of the
    runtime object: a reset makes a new, empty one): ints -> values, bounded by ``limit``
    (emptied when full). ``symint_list`` reaches it by subscript
    (``state.runtime.parts[SizeLists]``), as cheap as the global it replaces."""

    __slots__ = ()
    limit = 4096


# The node and its results.

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
