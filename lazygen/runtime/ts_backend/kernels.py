"""Hand-written (``supported``) kernels of the TS backend, named as the generator expects
(``name`` + ``_`` + ``overload`` in snake case). They run on inner ``LazyTensor``s.

Kernels without a lazy implementation yet run eagerly through the fallback; they exist by
name so the generated registration can refer to them.
"""

from __future__ import annotations

import torch

from .. import decompositions, executor
from .. import kernel_support as rt
from ..fallback import eager_fallback, kernel_for
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


class NativeBatchNormUpdate(Node):
    """``native_batch_norm`` in training mode, with the updated running statistics as outputs
    3 and 4. The aten op updates ``running_mean``/``running_var`` in place although its schema
    does not say so, so functionalization cannot see the update (and a graph would mutate
    its input data); this node computes the new statistics as values instead."""

    __slots__ = ()
    op_kind = "aten::native_batch_norm"
    op_name = "native_batch_norm"
    schema = (
        "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
        "Tensor, Tensor running_mean_out, Tensor running_var_out)"
    )

    def lower(self, ctx):
        return lowerings.lower_native_batch_norm_update(self, ctx)


def with_running_stats_update(kernel):
    """Wrap the ``native_batch_norm`` kernel: in training mode with running statistics, the
    statistics' lazy tensors are pointed at their updated values, as eager updates them."""

    def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
        if (
            not training
            or type(running_mean) is not LazyTensor
            or type(running_var) is not LazyTensor
        ):
            return kernel(input, weight, bias, running_mean, running_var, training, momentum, eps)
        rt.count("lazy::native_batch_norm")
        device = rt.device_of(input)
        operands = (
            rt.tensor(input, device),
            rt.optional_tensor(weight, device),
            rt.optional_tensor(bias, device),
            rt.tensor(running_mean, device),
            rt.tensor(running_var, device),
        )
        shapes = rt.infer_shapes(
            aten.native_batch_norm.default,
            (input, weight, bias, running_mean, running_var, training, momentum, eps),
            {},
        )
        shapes += (
            Shape(running_mean.dtype, running_mean._sizes),
            Shape(running_var.dtype, running_var._sizes),
        )
        node = rt.make_node(NativeBatchNormUpdate, operands, (momentum, eps), shapes)
        out, mean, invstd, new_mean, new_var = rt.wrap_tuple(node, device)
        running_mean._value = new_mean._value
        running_var._value = new_var._value
        return out, mean, invstd

    return native_batch_norm


#: Kernels the runtime wraps around whatever kernel is registered for the op.
WRAPPERS = {aten.native_batch_norm.default: with_running_stats_update}


def _eager(op):
    def kernel(*args, **kwargs):
        return eager_fallback(op, args, kwargs)

    return kernel


def _composite(op):
    """The op's composite kernel (under functionalization, reaching lazy kernels), built at
    the first call; the eager fallback when it has none."""
    built = []

    def kernel(*args, **kwargs):
        if not built:
            built.append(decompositions.composite_kernel(op, with_cpu_kernel=True) or _eager(op))
        return built[0](*args, **kwargs)

    return kernel


def _kernel(op):
    return kernel_for(op) or _eager(op)


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
        return _kernel(aten.expand_copy.default)(value, list(self._sizes))
    return clone(value)


def _dispatch(op, *args):
    """``op`` through its lazy (or runtime-built) kernel, else the eager fallback."""
    kernel = kernel_for(op)
    return kernel(*args) if kernel is not None else eager_fallback(op, args, {})


class ConjPhysical(Node):
    """aten::conj_physical: what the conjugate view of a lazy tensor lowers to."""

    __slots__ = ()
    op_kind = "aten::conj_physical"
    op_name = "conj_physical"
    schema = "conj_physical(Tensor self) -> Tensor"

    def lower(self, ctx):
        (self_,) = self.operands
        return ctx.call("aten::conj_physical", [ctx.tensor(self_)], 1)


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
    return _dispatch(aten.neg.default, self)


def native_dropout(input, p, train):
    """CPU eager's ``native_dropout`` as lazy ops: ``mask = bernoulli(input, 1 - p)``, ``input *
    mask * scale``, the mask as bool. The mask's ``bernoulli.p`` takes the generator operand
    (``rt.generator``), so it draws eager's numbers; ``aten::native_dropout`` has no
    ``generator`` argument and would draw from the live generator when the graph runs."""
    if input.numel() == 0:
        return clone(input), _dispatch(aten.empty_like.default, input)
    if train is False:
        return clone(input), _kernel(aten.ones_like.default)(input, dtype=torch.bool)
    p1m = 1.0 - p
    scale = 0.0 if p1m == 0 else 1.0 / p1m
    mask = _dispatch(aten.bernoulli.p, input, p1m)
    output = _dispatch(aten.mul.Tensor, _dispatch(aten.mul.Tensor, input, mask), scale)
    return output, _to_copy(mask, dtype=torch.bool)


def fill__scalar(self, value):
    return rt.inplace(self, _kernel(aten.fill.Scalar)(self, value)._value.node)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Random numbers come from the backing device's generator, as eager draws them; only
    ``self``'s metadata is read, so its pending IR is not synced."""
    data = torch.empty(self._sizes, dtype=self.dtype, device=self._device.backing)
    self.set_data(data.normal_(mean, std, generator=generator))
    return self


def _unsafe_view(self, size):
    return _kernel(aten.view_copy.default)(self, size)


def narrow_copy(self, dim, start, length):
    if start < 0:
        start += self._sizes[dim]
    return _kernel(aten.slice_copy.Tensor)(self, dim, start, start + length, 1)


max_pool3d_with_indices = _eager(aten.max_pool3d_with_indices.default)
max_pool3d_with_indices_backward = _eager(aten.max_pool3d_with_indices_backward.default)
block_diag = _composite(aten.block_diag.default)
diagonal_backward = _composite(aten.diagonal_backward.default)
slice_backward = _composite(aten.slice_backward.default)
pixel_shuffle = _composite(aten.pixel_shuffle.default)
pixel_unshuffle = _composite(aten.pixel_unshuffle.default)
select_backward = _composite(aten.select_backward.default)
_trilinear = _composite(aten._trilinear.default)
linalg_pinv_atol_rtol_tensor = _composite(aten.linalg_pinv.atol_rtol_tensor)
logsumexp_out = _eager(aten.logsumexp.out)

SUPPORTED = {
    aten._to_copy.default: _to_copy,
    aten._copy_from.default: _copy_from,
    aten._copy_from_and_resize.default: _copy_from_and_resize,
    aten.empty.memory_format: empty_memory_format,
    aten.empty_strided.default: empty_strided,
    aten.new_empty_strided.default: new_empty_strided,
    aten.clone.default: clone,
    aten.copy.default: copy,
    aten._conj.default: _conj,
    aten._conj_copy.default: _conj_copy,
    aten.conj_physical.default: _conj_copy,
    aten._neg_view.default: _neg_view,
    aten.lift.default: lift,
    aten.lift_fresh.default: lift_fresh,
}
