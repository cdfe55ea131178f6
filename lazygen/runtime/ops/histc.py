"""``histc`` of integer tensors, as lazy ops with CUDA's semantics.

ATen's CPU kernel of ``histc`` takes floating-point inputs only; CUDA's takes integers too,
and libraries rely on it off the CPU: transformers' Mixtral counts tokens per expert with
``torch.histc`` on int32 expert ids on every device but cpu/mps. A lazy device runs its
graphs on CPU kernels (whatever the backend), so an integer ``histc`` recorded as one node
failed at the step's sync. ``integer_histc`` builds it from ops every kernel set has
(compare, integer division, ``scatter_add``), so it stays in the graph and never reads the
data on the host, with CUDA's semantics (``aten/src/ATen/native/cuda/SummaryOps.cu``):

* the result has the input's dtype and ``bins`` elements;
* ``min`` and ``max`` are converted to int64 (CUDA's accumulate type for integers, a C++
  conversion: a float bound is truncated toward zero);
* when they are equal (the default ``0, 0``) and the input is not empty, the range is the
  data's minimum and maximum; a range that is still one value widens to ``[v - 1, v + 1]``;
* elements outside ``[min, max]`` are not counted; an element ``v`` inside goes to bin
  ``(v - min) * bins // (max - min)`` in int64 arithmetic, the last bin including ``max``.

``integer_histc_first(kernel)`` wraps an op list's ``histc`` kernel: integer inputs take
this path, floating-point ones the wrapped kernel, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import kernel_support as rt
from ..dispatch import call
from ..errors import LazygenRuntimeError
from ..tracing.tensor import LazyTensor, from_data

aten = torch.ops.aten
_INT64 = torch.int64


def is_integer_histc(self) -> bool:
    """Whether ``self`` takes the integer path (CUDA's ``histc`` dispatches all integer types;
    bool is none of them)."""
    dtype = self.dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def _bound(value) -> int:
    """A ``Scalar`` bound as CUDA converts it for an integer input (to int64, truncating)."""
    if isinstance(value, torch.Tensor):
        value = value.item()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise LazygenRuntimeError(f"histc: range bound {value} is not finite")
    return int(value)


def _data_range(values: LazyTensor):
    """The data's minimum and maximum as 0-dim lazy int64 tensors, widened by one each way
    where they are equal (no host read: the range stays in the graph)."""
    low = call(aten.min.default, values)
    high = call(aten.max.default, values)
    same = call(aten._to_copy.default, call(aten.eq.Tensor, low, high), dtype=_INT64)
    return call(aten.sub.Tensor, low, same), call(aten.add.Tensor, high, same)


def integer_histc(self: LazyTensor, bins: int = 100, min=0, max=0) -> LazyTensor:
    """``histc`` of an integer lazy tensor (see the module docstring)."""
    if bins <= 0:
        raise LazygenRuntimeError("histc: bins must be > 0")
    rt.count("lazy::histc.integer")
    device = rt.device_of(self)
    values = call(aten._to_copy.default, self, dtype=_INT64)
    values = call(aten.view_copy.default, values, [-1])
    low, high = _bound(min), _bound(max)
    if low == high and self.numel() > 0:
        low, high = _data_range(values)
    else:
        if low == high:
            low, high = low - 1, high + 1
        if low > high:
            raise LazygenRuntimeError(
                f"histc: max must be larger than min (got min={min}, max={max})"
            )
        low = from_data(torch.tensor(low, dtype=_INT64), device)
        high = from_data(torch.tensor(high, dtype=_INT64), device)
    inside = call(
        aten.logical_and.default,
        call(aten.ge.Tensor, values, low),
        call(aten.le.Tensor, values, high),
    )
    offset = call(aten.mul.Scalar, call(aten.sub.Tensor, values, low), bins)
    index = call(
        aten.div.Tensor_mode, offset, call(aten.sub.Tensor, high, low), rounding_mode="floor"
    )
    index = call(aten.clamp.default, index, 0, bins - 1)  # the last bin includes max
    # Every element adds to a bin: 1 from those inside the range, 0 from the others.
    counted = call(aten._to_copy.default, inside, dtype=_INT64)
    counts = from_data(torch.zeros(bins, dtype=_INT64), device)
    counts = call(aten.scatter_add.default, counts, 0, index, counted)
    return call(aten._to_copy.default, counts, dtype=self.dtype)


def integer_histc_first(kernel: Callable) -> Callable:
    """Wrap an op list's ``histc`` kernel: integer lazy tensors take ``integer_histc``,
    everything else ``kernel``."""

    def histc(self, bins=100, min=0, max=0):
        if type(self) is LazyTensor and is_integer_histc(self):
            return integer_histc(self, bins, min, max)
        return kernel(self, bins, min, max)

    return histc
