"""Hand-written shape functions ``compute_shape_<name>`` for ops without a usable meta kernel.

Each takes the op's arguments (lazy tensors expose ``dtype`` and ``shape``) and returns a
list of ``Shape``. The generator reports which ones it requires.
"""

from __future__ import annotations

import torch

from ..ir import Shape

__all__ = ["Shape"]


def compute_shape_glu_jvp(glu, x, dx, dim) -> list[Shape]:
    return [Shape(glu.dtype, tuple(glu.shape))]


def compute_shape_nonzero(self) -> list[Shape]:
    """Data-dependent: materialises ``self`` to count its non-zeros (never cached)."""
    from .. import executor
    from ..tensor import LazyTensor

    if type(self) is LazyTensor:
        executor.sync([self])
        data = self._value.node.data
    else:
        data = self
    return [Shape(torch.int64, (int(torch.count_nonzero(data)), data.dim()))]


compute_shape_nonzero.data_dependent = True
