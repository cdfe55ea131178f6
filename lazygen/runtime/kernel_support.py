"""What generated kernels call (imported as ``rt``); see docs/architecture.md, "Kernel support".

Every function here is on the per-op hot path: keep them short.
"""

from __future__ import annotations

import warnings
from types import MappingProxyType

import torch

from . import op_facts, state
from .devices import LazyDevice, default_device, several_in_use
from .errors import LazygenRuntimeError
from .execution import executor
from .graph import dynamic, size_inputs
from .ir import (
    _SCALAR_DTYPES,
    DeviceData,
    Node,
    ScalarData,
    ScalarTable,
    Shape,
    SizeConstant,
    Value,
    scalar_dtype,
    scalar_shapes,
)
from .metrics import count
from .state import settings
from .tracing import dispatch, ir_reuse, random_inputs
from .tracing.fallback import eager_fallback
from .tracing.shape_inference import cached_shapes, compute_shapes, infer_shapes, shape_key
from .tracing.tensor import LazyTensor, device_data, new_lazy

__all__ = [
    "LazyTensor",
    "Shape",
    "Value",
    "count",
    "device_of",
    "eager_fallback",
    "generator",
    "infer_shapes",
    "inplace",
    "make_node",
    "node_class",
    "optional_scalar",
    "optional_tensor",
    "optional_tensor_list",
    "scalar",
    "shape_key",
    "symint",
    "symint_list",
    "tensor",
    "tensor_list",
    "trace",
    "TracedOp",
    "wrap",
    "wrap_list",
    "wrap_tuple",
]


_new_value = tuple.__new__  # Value(node, i) without the NamedTuple's Python-level __new__


def elsewhere(device) -> bool:
    """True when a `device=` option names another device than the lazy one."""
    return device is not None and torch.device(device).type != settings.device_type


def eager(op, args, kwargs):
    """The old name of ``eager_fallback`` (``tracing.fallback.eager_fallback``), which code
    generated before the rename calls: it still runs, with a deprecation warning saying to
    regenerate (``lazygen gen``)."""
    warnings.warn(
        "lazygen: kernel_support.eager is now kernel_support.eager_fallback; regenerate "
        "this backend's code with `lazygen gen` (or reinstall it) to use the new name",
        DeprecationWarning,
        stacklevel=2,
    )
    return eager_fallback(op, args, kwargs)


def node_class(op_name: str) -> type[Node]:
    """The IR node class of ``op_name`` in the installed kernel tables: how a hand-written
    kernel reaches a generated (e.g. non-native) node class without importing generated
    code, which does not exist yet when the generator checks the hand-written package."""
    try:
        return dispatch.INSTALLED_NODE_CLASSES[op_name]
    except KeyError:
        raise LookupError(
            f"lazygen: no IR node class {op_name!r} in the kernel tables of this process's "
            "backends; is it in the op list, and was the backend initialised?"
        ) from None


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


_new_object = object.__new__
_node_init = Node.__init__
_SCALAR_SHAPES_OF = MappingProxyType(
    {kind: scalar_shapes(dtype) for kind, dtype in _SCALAR_DTYPES.items()}
)


def scalar(value, device: LazyDevice) -> Value:
    """A Python number as a graph input (one per number: see ``tensor.shared_scalars`` for when
    equal numbers share one)."""
    shapes = _SCALAR_SHAPES_OF.get(type(value))
    if shapes is None:
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
    found = _SIZE_LISTS.get(key)
    if found is None:
        if len(_SIZE_LISTS) >= _SIZE_LISTS_MAX:
            _SIZE_LISTS.clear()
        found = _SIZE_LISTS[key] = tuple([Value(SizeConstant(v), 0) for v in key])
    return found


_SIZE_LISTS: dict[tuple[int, ...], tuple[Value, ...]] = {}
_SIZE_LISTS_MAX = 4096


class GeneratorData(Node):
    """The generator a random op draws from: a copy of the state the op's eager call would
    have started from. A graph input (a ``Generator?`` of the TorchScript graph), hashed by
    kind only, so the state never changes the graph; every run starts from the same state."""

    __slots__ = ("state", "device")
    op_kind = "prim::GeneratorData"
    op_name = "generator_data"
    is_input = True
    is_generator = True  # lowered as a ``Generator?`` graph input

    def __init__(self, state: torch.Tensor, device: torch.device) -> None:
        self.operands = ()
        self.attrs = ()
        self.shapes = ()
        self.state = state
        self.device = device
        self.source = None

    def materialize(self) -> torch.Generator:
        generator = torch.Generator(device=self.device)
        generator.set_state(self.state)
        return generator


def default_generator(device: torch.device) -> torch.Generator:
    """The generator eager uses for ``device`` when a random op is given none."""
    if device.type == "cpu":
        return torch.default_generator
    return torch.get_device_module(device.type).default_generators[device.index or 0]


def generator(gen, device: LazyDevice, op, args, kwargs) -> Value:
    """The ``Generator?`` operand of random op ``op``: a copy of the generator's state, after
    which the real generator (``gen``, else the backing device's default one) is advanced
    exactly as eager's call would advance it. The graph then draws eager's numbers. A
    backend whose ``random_numbers`` is ``"seed"`` gets a seed instead (``random_inputs``)."""
    if gen is None:
        gen = default_generator(device.backing)
    if device.backend.random_numbers == "seed":
        return random_inputs.seed_value(gen)
    state = gen.get_state()
    _advance(gen, op, args, kwargs)
    return _new_value(Value, (GeneratorData(state, gen.device), 0))


def _advance(gen: torch.Generator, op, args, kwargs) -> None:
    """Run ``op`` eagerly with generator ``gen``: on zero-filled stand-ins of the lazy inputs
    when its consumption is value-independent, else on their values (a sync)."""
    value_independent = op._schema.name in op_facts.get("value_independent_random")
    if not value_independent:
        count(f"RandomSync::{op._schema.name}")
        lazy = [a for a in (*args, *kwargs.values()) if type(a) is LazyTensor]
        executor.sync(lazy)

    def stand_in(a):
        if type(a) is LazyTensor:
            if value_independent:
                return torch.zeros(a._sizes, dtype=a.dtype, device=gen.device)
            return a._value.node.data
        if type(a) in (list, tuple):
            return type(a)(stand_in(x) for x in a)
        return a

    args = [stand_in(a) for a in args]
    kwargs = {k: stand_in(v) for k, v in kwargs.items()}
    if "device" in kwargs:  # factories (normal.float_float): made where the generator is
        kwargs["device"] = gen.device
    for index, argument in enumerate(op._schema.arguments):
        if argument.name == "generator":
            if index < len(args):
                args[index] = gen
            else:
                kwargs["generator"] = gen
            break
    with torch.no_grad():
        op(*args, **kwargs)


def make_node(cls, operands, attrs, shapes, device: LazyDevice | None = None) -> Node:
    """A node of ``cls``; under dynamic shapes, with its attributes that are sizes traced as
    size inputs (``graph/size_inputs.py``; ``device``: the node's, default the default one)."""
    if cls.size_attrs and dynamic.on():
        operands, attrs = size_inputs.lift(cls, operands, attrs, shapes, device or default_device())
    if settings.reuse_ir:
        return _reuse_or_make(cls, operands, attrs, shapes)
    if settings.record_source or cls.__init__ is not _node_init:
        return cls(operands, attrs, shapes)
    node = _new_object(cls)  # cls(...) without Node.__init__'s Python frame
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

    __slots__ = ("counter", "op", "node_class", "compute_fn", "cache_shapes")

    def __init__(self, counter: str, op, node_class: type[Node], compute_fn=None) -> None:
        self.counter = counter
        self.op = op
        self.node_class = node_class
        self.compute_fn = compute_fn
        # Data-dependent shapes (``nonzero``) are computed every time, never cached.
        self.cache_shapes = not getattr(compute_fn, "data_dependent", False)

    def __repr__(self) -> str:
        return f"TracedOp({self.counter!r})"


def trace(traced: TracedOp, key: tuple, args, kwargs, operands, attrs, device) -> LazyTensor:
    """The fast path of a generated single-output kernel whose tensor arguments are all lazy
    tensors: count, shapes, node and result in one frame (the general path makes one call
    per step; at thousands of ops per training step the calls are a measurable share).

    ``key`` is the shape-cache key the kernel built: ``traced`` first (it names the op and
    the way its shapes are computed), then each argument's ``_shape`` or ``shape_key``.
    ``args`` and ``kwargs`` are the call's, for computing shapes on a miss."""
    count(traced.counter)
    if several_in_use():  # tensors of two lazy devices: eager's error (one is free)
        for a in args:
            if type(a) is LazyTensor and a._device is not device:
                raise _other_device(a, device)
    if traced.cache_shapes:
        shapes = cached_shapes(key, traced.op, args, kwargs, traced.compute_fn)
    else:
        shapes = compute_shapes(traced.op, args, kwargs, traced.compute_fn)
    return wrap(make_node(traced.node_class, operands, attrs, shapes, device), device)


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


state.register(__name__, _SIZE_LISTS.clear, owns=("_SIZE_LISTS",))
