"""Kernels every lazy device needs, whatever its backend: creating tensors, moving them on
and off the device, copies, dtype conversion, and the conjugate/negative views (lazy tensors
carry no such bits). ``init()`` installs them ahead of the backend's own tables, which may
replace any of them.

They run on inner ``LazyTensor``s; the IR nodes they record lower through the
backend-neutral ``LoweringContext`` interface.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import kernel_support as rt
from ..devices import device_from
from ..dispatch import call
from ..dispatch.fallback import eager_fallback
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..ir import Node, Shape
from ..metrics import record_fallback
from ..sources import user_source
from ..state import settings
from ..tracing.tensor import LazyTensor, from_data, new_lazy

aten = torch.ops.aten


class ToCopy(Node):
    """aten::_to_copy within the lazy device (a dtype conversion)."""

    __slots__ = ()
    op_kind = "aten::_to_copy"
    op_name = "_to_copy"
    schema = (
        "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
        "device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? "
        "memory_format=None) -> Tensor"
    )

    def lower(self, ctx):
        (self_,) = self.operands
        (dtype,) = self.attrs
        none = ctx.constant(None)
        options = {"dtype": ctx.constant(dtype), "layout": none, "device": none}
        options |= {"pin_memory": none, "non_blocking": ctx.constant(False)}
        options["memory_format"] = none
        return ctx.call("aten::_to_copy", [ctx.tensor(self_)], options, 1)


class ConjPhysical(Node):
    """aten::conj_physical: what the conjugate view of a lazy tensor lowers to."""

    __slots__ = ()
    op_kind = "aten::conj_physical"
    op_name = "conj_physical"
    schema = "conj_physical(Tensor self) -> Tensor"

    def lower(self, ctx):
        (self_,) = self.operands
        return ctx.call("aten::conj_physical", [ctx.tensor(self_)], {}, 1)


def _device_type(device) -> str | None:
    return None if device is None else torch.device(device).type


def _to_copy(
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    target = _device_type(device)
    check_layout_arguments(self.shape, memory_format=memory_format)
    if type(self) is not LazyTensor:  # host -> lazy
        data = self.to(dtype=dtype if dtype is not None else self.dtype, copy=True)
        return from_data(data, device_from(device))
    if target is not None and target != settings.device_type:  # lazy -> host
        data = self._device.backend.from_data(_host_read(self, "aten::_to_copy", True), device)
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    if target is not None and _other_index(device, self):  # lazygen:i -> lazygen:j
        data = self._device.backend.from_data(_host_read(self, "aten::_to_copy", True))
        data = data.to(dtype, copy=True) if dtype is not None else data.clone()
        return from_data(data, device_from(device))
    rt.count("lazy::_to_copy")
    lazy_device = rt.device_of(self)
    dtype = self.dtype if dtype is None else dtype
    shapes = (Shape(dtype, self._sizes),)
    return rt.wrap(
        rt.make_node(ToCopy, (rt.tensor(self, lazy_device),), (dtype,), shapes), lazy_device
    )


def _copy_from(self, dst, non_blocking=False):
    """Copy ``self`` into ``dst``; one of them is lazy."""
    if type(dst) is LazyTensor:
        source = self
        if type(self) is LazyTensor:
            executor.sync([self])
            source = self._value.node.data
        data = torch.empty(dst._sizes, dtype=dst.dtype, device=dst._device.backing)
        data.copy_(source)
        dst.set_data(data)
        return dst
    dst.copy_(_host_read(self, "aten::copy_"))
    return dst


def _other_index(device, self: LazyTensor) -> bool:
    """Whether ``device`` (a lazy device) names another index than ``self``'s."""
    index = torch.device(device).index
    return index is not None and index != self._device.index


def _host_read(self: LazyTensor, op: str, native: bool = False):
    """The device data of ``self``, computed, for a copy off the device: the program reads
    its values (``.cpu()``, ``tolist()``, a host tensor's ``copy_``). Counted as
    ``TransferFromDevice`` even when nothing was pending (an argument's data): a Dynamo
    capture must not replay a graph built from the values one call read; listed among the
    host reads of ``metrics.fallback_report()`` as ``op``. ``native``: as the backend holds
    it (for ``Backend.from_data``), else as a torch tensor."""
    record_fallback(op, not self.is_materialized, user_source, host_read=True)
    executor.sync([self])
    rt.count("TransferFromDevice")
    node = self._value.node
    if native and not self._device.backend.torch_data:
        return node.native  # the backend's data, for its ``from_data``
    return node.data


def _copy_from_and_resize(self, dst):
    return _copy_from(self, dst)


def check_layout_arguments(size, stride=None, memory_format=None) -> None:
    """Raise eager's error for a memory format or strides eager refuses for ``size``.

    Lazy tensors keep contiguous strides, so these kernels ignore both; yet a memory format
    of the wrong rank (``channels_last`` of a 3-d tensor) or strides whose storage size
    overflows (a negative stride) are errors in eager, and must stay errors here rather than
    be silently accepted. The memory format is checked by eager's own meta kernel, only for
    the formats that can fail (the common calls cost nothing); strides as eager's CPU
    allocation checks them (its meta kernel does not)."""
    if memory_format in (torch.channels_last, torch.channels_last_3d):
        torch.empty(size, memory_format=memory_format, device="meta")
    if stride is None:
        return
    if len(stride) != len(size):
        raise LazygenRuntimeError(
            f"lazygen: mismatch in length of strides and shape: sizes {list(size)}, strides "
            f"{list(stride)}; give one stride per dimension"
        )
    if 0 not in size and any(st < 0 and sz > 1 for sz, st in zip(size, stride, strict=True)):
        raise LazygenRuntimeError(
            f"lazygen: Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}: strides must not be negative (flip() the tensor instead)"
        )


def empty_memory_format(
    size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    check_layout_arguments(size, memory_format=memory_format)
    dev = device_from(device)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    return from_data(torch.empty(size, dtype=dtype, device=dev.backing), dev)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    check_layout_arguments(size, stride)
    return empty_memory_format(size, dtype=dtype, device=device)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    check_layout_arguments(size, stride)
    return empty_memory_format(
        size, dtype=self.dtype if dtype is None else dtype, device=device or self.device
    )


def clone(self, *, memory_format=None):
    """IR values are immutable: a clone shares the value."""
    check_layout_arguments(self._sizes, memory_format=memory_format)
    rt.count("lazy::clone")
    return LazyTensor(self._value, self._device)


def _pin_memory(self, device=None):
    """As for a CUDA tensor: only host tensors can be pinned (torch's own kernel, reached
    through the eager fallback, asked the accelerator for a pinned allocator and failed
    with a message about ``PrivateUse1HooksInterface``)."""
    raise LazygenRuntimeError(
        f"lazygen: cannot pin a {settings.device_type} tensor: only dense CPU tensors can be "
        "pinned; pin the CPU tensor before moving it (lazy device data needs no pinning)"
    )


def lift(self):
    return self if type(self) is LazyTensor else from_data(self, rt.device_of())


def lift_fresh(self):
    return lift(self)


def copy(self, src, non_blocking=False):
    """``copy`` (functionalization's form of ``copy_``): ``src`` cast to ``self``'s dtype and
    broadcast to its sizes."""
    device = self._device
    if type(src) is not LazyTensor:  # a host tensor: copied now (the caller may change it)
        data = torch.empty(self._sizes, dtype=self.dtype, device=device.backing)
        data.copy_(src)  # casts and broadcasts
        return from_data(data, device)
    value = src
    if value.dtype != self.dtype:
        value = _to_copy(value, dtype=self.dtype)
    if value._sizes != self._sizes:
        return call(aten.expand_copy.default, value, list(self._sizes))
    return clone(value)


def _conj(self):
    """Lazy tensors carry no conjugate bit: the conjugate view is a conjugated value."""
    if not self.dtype.is_complex:
        return clone(self)
    rt.count("lazy::_conj")
    device = self._device
    shapes = (Shape(self.dtype, self._sizes),)
    return rt.wrap(rt.make_node(ConjPhysical, (rt.tensor(self, device),), (), shapes), device)


def _conj_copy(self):
    return _conj(self)


def _neg_view(self):
    """Lazy tensors carry no negative bit: the negative view is a negated value."""
    return call(aten.neg.default, self)


def detach_copy(self):
    """The detached tensor holds the input's value: IR is immutable, so two tensors may
    share one value, and a node would be traced, hashed, lowered and run for nothing.
    Every backend gets it, whatever its op list: autograd and optimizers detach on every
    step, and through the eager fallback each detach cut the step's graph (a 4-op list's
    MLP step: 22 compiles and 65 executions in 5 steps instead of 2 and 5)."""
    if type(self) is not LazyTensor:
        return eager_fallback(aten.detach_copy.default, (self,), {})
    rt.count("lazy::detach_copy")
    return new_lazy(self._value, self._device)


def alias_copy(self):
    """An alias of an immutable value is the value (see ``detach_copy``)."""
    if type(self) is not LazyTensor:
        return eager_fallback(aten.alias_copy.default, (self,), {})
    rt.count("lazy::alias_copy")
    return new_lazy(self._value, self._device)


def _unsafe_view(self, size):
    """``_unsafe_view`` as ``view_copy`` (lazy if the op list has it, else as any missing op).

    Functionalization hands ``_unsafe_view`` (used by ``matmul``, ``kron``, ``linear`` on
    3-D input...) to the inner tensor as it is. Its composite kernel must never run there:
    it makes the alias below the dispatcher, copying the functional wrapper's dispatch keys
    onto a plain tensor, and syncing that tensor crashed the process (SIGSEGV)."""
    return call(aten.view_copy.default, self, size)


DEVICE_KERNELS = MappingProxyType(
    {
        aten._to_copy.default: _to_copy,
        aten._copy_from.default: _copy_from,
        aten._copy_from_and_resize.default: _copy_from_and_resize,
        aten.empty.memory_format: empty_memory_format,
        aten.empty_strided.default: empty_strided,
        aten.new_empty_strided.default: new_empty_strided,
        aten.clone.default: clone,
        aten._pin_memory.default: _pin_memory,
        aten.copy.default: copy,
        aten._conj.default: _conj,
        aten._conj_copy.default: _conj_copy,
        aten.conj_physical.default: _conj_copy,
        aten._neg_view.default: _neg_view,
        aten.lift.default: lift,
        aten.lift_fresh.default: lift_fresh,
        aten.detach_copy.default: detach_copy,
        aten.alias_copy.default: alias_copy,
        aten._unsafe_view.default: _unsafe_view,
    }
)
