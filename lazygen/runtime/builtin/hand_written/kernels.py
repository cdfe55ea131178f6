"""Hand-written (``supported``) kernels of the built-in op list (``yaml/builtin.yaml``), named as the
generator expects (``name`` + ``_`` + ``overload`` in snake case). They run on inner
``LazyTensor``s and record nodes that lower through any ``LoweringContext``, so the inductor
backend and every other built-in one, which share this op list, use them too.

Kernels without a lazy implementation yet run eagerly through the fallback; they exist by
name so the generated registration can refer to them. The device kernels every backend
needs (``_to_copy``, ``clone``, ``empty``...) are the runtime's own; the op list names
them in ``supported``, so they are re-exported here.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from ... import kernel_support as rt
from ...dispatch import call, decompositions, kernel_for
from ...dispatch.fallback import eager_fallback
from ...errors import LazygenRuntimeError
from ...ops.device_copies import (  # noqa: F401  (the op list's `supported` names them)
    _copy_from,
    _copy_from_and_resize,
    _to_copy,
    _unsafe_view,
    clone,
    empty_memory_format,
    empty_strided,
    lift,
    lift_fresh,
    new_empty_strided,
)
from ...ops.device_copies import detach_copy as device_detach_copy
from ...ops.histc import integer_histc_first
from ...ops.recurrent_cells import (  # noqa: F401  (the op list's `supported` names them)
    _thnn_fused_gru_cell,
    _thnn_fused_gru_cell_backward,
    _thnn_fused_lstm_cell,
    _thnn_fused_lstm_cell_backward_impl,
)
from ...tracing.tensor import LazyTensor, new_lazy

aten = torch.ops.aten


def detach_shares_the_value(kernel):
    """Wrap the generated ``detach_copy`` kernel: on a lazy tensor, the kernel every backend
    gets (``ops.device_copies.detach_copy``: the input's value, no node)."""

    def detach_copy(self):
        return device_detach_copy(self) if type(self) is LazyTensor else kernel(self)

    return detach_copy


def identity_view_shares_the_value(kernel):
    """Wrap the ``view_copy`` kernel: a view to the input's own sizes (``-1`` standing for
    the one dimension left) is the input's value, as ``detach_copy``'s is."""

    def view_copy(self, size):
        if type(self) is LazyTensor and _same_sizes(self._sizes, size):
            rt.count("lazy::view_copy")
            return new_lazy(self._value, self._device)
        return kernel(self, size)

    return view_copy


def _same_sizes(sizes: tuple, size) -> bool:
    if len(size) != len(sizes):
        return False
    inferred = 0
    for requested, actual in zip(size, sizes, strict=True):
        if requested == -1:
            inferred += 1
        elif requested != actual:
            return False
    return inferred <= 1  # every other dimension equal: -1 stands for the input's own


def slice_scatter_checks_the_source(kernel):
    """Wrap ``slice_scatter``: eager's check that ``src`` has the slice's sizes, which the
    meta kernel lacks. Without it a mismatch failed only when the graph ran, and left the
    tensor scattered into carrying that error. Functionalization reaches this op when an
    ``out=`` tensor that is a strided view gets a result of another shape, which eager
    resizes in place (a view of a lazy tensor cannot be), so the error says what to do."""

    def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
        if type(self) is LazyTensor and type(src) is LazyTensor:
            wanted = list(self._sizes)
            d = dim % len(wanted) if wanted else 0
            if wanted:
                wanted[d] = len(range(*slice(start, end, step).indices(wanted[d])))
            if list(src._sizes) != wanted:
                raise LazygenRuntimeError(
                    f"expected src to have a size equal to the slice of self. src size = "
                    f"{list(src._sizes)}, slice size = {wanted} (lazygen: if this is an out= "
                    "tensor that is a view of another tensor, eager resizes the view in place, "
                    "which a view of a lazy tensor cannot do: pass an out= tensor of the "
                    "result's shape, or assign the result instead)"
                )
        return kernel(self, src, dim, start, end, step)

    return slice_scatter


#: Kernels the runtime wraps around whatever kernel is registered for the op.
WRAPPERS = MappingProxyType(
    {
        aten.detach_copy.default: detach_shares_the_value,
        aten.view_copy.default: identity_view_shares_the_value,
        aten.slice_scatter.default: slice_scatter_checks_the_source,
        # CPU kernels have no integer histc; CUDA's has (see ops.histc).
        aten.histc.default: integer_histc_first,
    }
)


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


def native_dropout(input, p, train):
    """CPU eager's dropout as lazy ops: ``mask = bernoulli(input, 1 - p)`` in the input's
    dtype, ``input * (mask / (1 - p))``, the mask as bool. The mask's ``bernoulli.p`` takes
    the generator operand (``rt.generator``), so it draws eager's numbers;
    ``aten::native_dropout`` has no ``generator`` argument and would draw from the live
    generator when the graph runs. The kept values' factor is rounded to the input's dtype
    before the product, as eager's CPU kernels (``native_dropout`` and ``F.dropout``'s
    composite alike) do: ``input * mask * scale`` rounds once, and a float16 or bfloat16
    dropout differed from eager in the last bit of a third of its values."""
    if input.numel() == 0:
        return clone(input), call(aten.empty_like.default, input)
    if train is False:
        return clone(input), _kernel(aten.ones_like.default)(input, dtype=torch.bool)
    p1m = 1.0 - p
    mask = call(aten.bernoulli.p, input, p1m)
    if p1m == 0:
        output = call(aten.mul.Tensor, input, mask)  # all dropped (eager: scale 0)
    else:
        output = call(aten.mul.Tensor, input, call(aten.div.Tensor, mask, p1m))
    return output, _to_copy(mask, dtype=torch.bool)


def fill__scalar(self, value):
    return rt.inplace(self, _kernel(aten.fill.Scalar)(self, value)._value.node)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Random numbers come from the backing device's generator, as eager draws them; only
    ``self``'s metadata is read, so its pending IR is not synced."""
    data = torch.empty(self._sizes, dtype=self.dtype, device=self._device.backing)
    self.set_data(data.normal_(mean, std, generator=generator))
    return self


def narrow_copy(self, dim, start, length):
    if start < 0:
        start += self._sizes[dim]
    return _kernel(aten.slice_copy.Tensor)(self, dim, start, start + length, 1)


max_pool3d_with_indices = _eager(aten.max_pool3d_with_indices.default)
max_pool3d_with_indices_backward = _eager(aten.max_pool3d_with_indices_backward.default)
block_diag = _composite(aten.block_diag.default)
pixel_shuffle = _composite(aten.pixel_shuffle.default)
pixel_unshuffle = _composite(aten.pixel_unshuffle.default)
_trilinear = _composite(aten._trilinear.default)
linalg_pinv_atol_rtol_tensor = _composite(aten.linalg_pinv.atol_rtol_tensor)
logsumexp_out = _eager(aten.logsumexp.out)
