"""Hand-written shape functions ``compute_shape_<name>`` for ops without a usable meta kernel.

Each takes the op's arguments (lazy tensors expose ``dtype`` and ``shape``) and returns a
list of ``Shape``. The generator reports which ones it requires.
"""

from __future__ import annotations

import torch

from ...errors import LazygenRuntimeError
from ...execution import executor
from ...ir import Shape
from ...tracing import output_shapes
from ...tracing.tensor import LazyTensor

__all__ = ["Shape"]


def compute_shape_glu_jvp(glu, x, dx, dim) -> list[Shape]:
    return [Shape(glu.dtype, tuple(glu.shape))]


def compute_shape_nonzero(self) -> list[Shape]:
    """Data-dependent: materialises ``self`` to count its non-zeros (never cached)."""
    if type(self) is LazyTensor:
        executor.sync([self])
        data = self._value.node.data
    else:
        data = self
    return [Shape(torch.int64, (int(torch.count_nonzero(data)), data.dim()))]


compute_shape_nonzero.data_dependent = True


def _materialise(t) -> torch.Tensor:
    """The values of ``t``: a lazy tensor is synced (a data-dependent shape needs them)."""
    if type(t) is LazyTensor:
        executor.sync([t])
        return t._value.node.data
    return t


def _is_mask(t) -> bool:
    return t is not None and t.dtype in (torch.bool, torch.uint8)


def compute_shape_index_tensor(self, indices) -> list[Shape]:
    """``self[indices]``. Integer indices fix the output shape by their shapes alone (the meta
    kernel, cached); a bool/uint8 mask contributes one dimension per its number of ``True``
    values, so only the masks are materialised (never cached)."""
    aten = torch.ops.aten
    if not any(_is_mask(i) for i in indices):
        return list(output_shapes.infer_shapes(aten.index.Tensor, (self, indices), {}))
    # A mask over dims d..d+k-1 acts as k long index tensors of length count_nonzero(mask).
    stand_ins = []
    dim = 0
    for index in indices:
        if not _is_mask(index):
            stand_ins.append(index)
            dim += 1
            continue
        for j, size in enumerate(index.shape):
            if dim + j >= self.dim() or self.shape[dim + j] != size:
                raise IndexError(
                    f"The shape of the mask {list(index.shape)} at index {j} does not match "
                    f"the shape of the indexed tensor {list(self.shape)} at index {dim + j}"
                )
        count = int(torch.count_nonzero(_materialise(index)))
        long_index = torch.empty((count,), dtype=torch.int64, device="meta")
        stand_ins.extend([long_index] * index.dim())
        dim += index.dim()
    return list(output_shapes.compute_shapes(aten.index.Tensor, (self, stand_ins), {}))


compute_shape_index_tensor.data_dependent = True


def compute_shape_masked_select(self, mask) -> list[Shape]:
    """Data-dependent: materialises ``mask`` to count the selected elements (never cached)."""
    if mask.dtype != torch.bool:
        raise LazygenRuntimeError("masked_select: expected BoolTensor for mask")
    sizes = torch.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    count = int(torch.count_nonzero(_materialise(mask).expand(sizes)))
    return [Shape(self.dtype, (count,))]


compute_shape_masked_select.data_dependent = True
