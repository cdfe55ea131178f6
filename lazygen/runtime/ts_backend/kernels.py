"""Hand-written (``supported``) kernels of the TS backend, named as the generator expects
(``name`` + ``_`` + ``overload`` in snake case). They run on inner ``LazyTensor``s.

Kernels without a lazy implementation yet run eagerly through the fallback; they exist by
name so the generated registration can refer to them.
"""

from __future__ import annotations

import torch

from .. import executor
from .. import kernel_support as rt
from ..fallback import eager_fallback
from ..ir import Node, Shape
from ..tensor import DEVICE_TYPE, LazyTensor, from_data
from . import lowerings

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
        return lowerings.lower_to_copy(self, ctx)


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
    if type(self) is not LazyTensor:  # host -> lazy
        from ..devices import device_from

        data = self.to(dtype=dtype if dtype is not None else self.dtype, copy=True)
        return from_data(data, device_from(device))
    if target is not None and target != DEVICE_TYPE:  # lazy -> host
        executor.sync([self])
        return self._value.node.data.to(
            device=device, dtype=dtype if dtype is not None else self.dtype, copy=True
        )
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
    executor.sync([self])
    dst.copy_(self._value.node.data)
    return dst


def _copy_from_and_resize(self, dst):
    return _copy_from(self, dst)


def empty_memory_format(
    size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    from ..devices import device_from

    dev = device_from(device)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    return from_data(torch.empty(size, dtype=dtype, device=dev.backing), dev)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_memory_format(size, dtype=dtype, device=device)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return empty_memory_format(
        size, dtype=self.dtype if dtype is None else dtype, device=device or self.device
    )


def clone(self, *, memory_format=None):
    """IR values are immutable: a clone shares the value."""
    rt.count("lazy::clone")
    return LazyTensor(self._value, self._device)


def lift(self):
    return self if type(self) is LazyTensor else from_data(self, rt.device_of())


def lift_fresh(self):
    return lift(self)


def _eager(op):
    def kernel(*args, **kwargs):
        return eager_fallback(op, args, kwargs)

    return kernel


fill__scalar = _eager(aten.fill_.Scalar)
normal_ = _eager(aten.normal_.default)
_unsafe_view = _eager(aten._unsafe_view.default)
max_pool3d_with_indices = _eager(aten.max_pool3d_with_indices.default)
max_pool3d_with_indices_backward = _eager(aten.max_pool3d_with_indices_backward.default)
block_diag = _eager(aten.block_diag.default)
diagonal_backward = _eager(aten.diagonal_backward.default)
slice_backward = _eager(aten.slice_backward.default)
narrow_copy = _eager(aten.narrow_copy.default)
pixel_shuffle = _eager(aten.pixel_shuffle.default)
pixel_unshuffle = _eager(aten.pixel_unshuffle.default)
select_backward = _eager(aten.select_backward.default)
_trilinear = _eager(aten._trilinear.default)
linalg_pinv_atol_rtol_tensor = _eager(aten.linalg_pinv.atol_rtol_tensor)
logsumexp_out = _eager(aten.logsumexp.out)

SUPPORTED = {
    aten._to_copy.default: _to_copy,
    aten._copy_from.default: _copy_from,
    aten._copy_from_and_resize.default: _copy_from_and_resize,
    aten.empty.memory_format: empty_memory_format,
    aten.empty_strided.default: empty_strided,
    aten.new_empty_strided.default: new_empty_strided,
    aten.clone.default: clone,
    aten.lift.default: lift,
    aten.lift_fresh.default: lift_fresh,
}
