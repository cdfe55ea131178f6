"""The operands of a traced op: each argument of a generated kernel as an IR value.

Tensors become their IR value (a host 0-dim tensor or ``Tensor?[]`` index is uploaded as
device data), Python numbers graph inputs (``ScalarData``; ``FixedScalar`` where a capture
makes them constants), sizes shared ``SizeConstant``s (graph inputs of their own with
dynamic shapes). Part of the generated-code contract (``kernel_support``); on the hot path.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import state
from ..devices import LazyDevice, default_device
from ..errors import LazygenRuntimeError
from ..graph import dynamic
from ..ir import (
    _SCALAR_DTYPES,
    DeviceData,
    ScalarData,
    ScalarTable,
    SizeConstant,
    Value,
    scalar_dtype,
    scalar_shapes,
)
from ..tracing.tensor import LazyTensor, device_data

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
        if len(lists) >= _SIZE_LISTS_MAX:
            lists.clear()
        found = lists[key] = tuple([Value(SizeConstant(v), 0) for v in key])
    return found


class SizeLists(dict):
    """The size lists traced in this run as shared ``SizeConstant`` values (a part of the
    runtime object: a reset makes a new, empty one): ints -> values, bounded by
    ``_SIZE_LISTS_MAX`` (emptied when full). ``symint_list`` reaches it by subscript
    (``state.runtime.parts[SizeLists]``), as cheap as the global it replaces."""

    __slots__ = ()


_SIZE_LISTS_MAX = 4096
