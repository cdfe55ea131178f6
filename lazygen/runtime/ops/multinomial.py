"""``multinomial`` as lazy ops, drawing eager's numbers: sampling ``generate`` stays in the graph.

ATen has CPU and CUDA kernels of ``multinomial`` and no composite one, so on the lazy
device every call went through the eager fallback: transformers' sampling ``generate``
(``do_sample=True``) cut each token's graph there and synced the probabilities to the host.

ATen's ``multinomial`` (shared by CPU and CUDA) samples one index per row, or several
without replacement, by the exponential race: with ``q ~ Exp(1)`` drawn into a tensor of the
probabilities' shape and dtype, the samples are the indices of the largest ``p / q`` (the
``argmax`` along the last dimension for one sample, ``topk`` for several). ``exponential``
is a lazy random op that draws eager's numbers from the generator's state at the call, so
the same ops here draw exactly eager's samples under the same seed.

Before sampling, ATen reads the probabilities on the host (CPU and CUDA alike): an ``inf``,
``nan`` or negative element, or a row summing to zero, raises. The same checks here read
one value (a code for which error, if any), a sync as on CUDA. Sampling several with
replacement (a kernel of its own on each device), invalid arguments (ATen's own errors)
and empty inputs still run eagerly through the fallback.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import kernel_support as rt
from ..dispatch import call
from ..dispatch.fallback import eager_fallback
from ..errors import LazygenRuntimeError
from ..tracing.tensor import LazyTensor

aten = torch.ops.aten

#: ATen's limit on the categories ``multinomial`` samples from.
_MAX_CATEGORIES = 1 << 24

_BAD_VALUES = "probability tensor contains either `inf`, `nan` or element < 0"
_ZERO_SUM = "invalid multinomial distribution (sum of probabilities <= 0)"


def _takes_lazy_path(self, num_samples: int, replacement: bool) -> bool:
    """Whether ATen's exponential race samples this call and its arguments are valid; every
    other call runs eagerly, where ATen raises its own errors."""
    if type(self) is not LazyTensor or not self.dtype.is_floating_point:
        return False
    if self.dim() not in (1, 2) or self.numel() == 0:
        return False
    categories = self.shape[-1]
    if num_samples <= 0 or categories > _MAX_CATEGORIES:
        return False
    return num_samples == 1 or (not replacement and num_samples <= categories)


def _check_values(self: LazyTensor) -> None:
    """ATen's checks of the probabilities, in one host read of a code: bit 0 set for an
    ``inf``, ``nan`` or negative element (checked first, as ATen does), bit 1 for a row
    summing to zero."""
    finite_max = call(aten.lt.Scalar, call(aten.max.default, self), float("inf"))
    non_negative = call(aten.ge.Scalar, call(aten.min.default, self), 0)
    bad = call(aten.logical_not.default, call(aten.logical_and.default, finite_max, non_negative))
    sums = call(aten.sum.dim_IntList, self, [-1])
    zero_row = call(aten.any.default, call(aten.eq.Scalar, sums, 0))
    code = call(
        aten.add.Tensor,
        call(aten._to_copy.default, bad, dtype=torch.int64),
        call(aten._to_copy.default, zero_row, dtype=torch.int64),
        alpha=2,
    )
    error = int(code.item())
    if error:
        raise LazygenRuntimeError(_BAD_VALUES if error & 1 else _ZERO_SUM)


def multinomial(self, num_samples: int, replacement: bool = False, *, generator=None):
    """``aten::multinomial`` below functionalization (see the module docstring)."""
    if not _takes_lazy_path(self, num_samples, replacement):
        return eager_fallback(
            aten.multinomial.default,
            (self, num_samples, replacement),
            {"generator": generator},
        )
    rt.count("lazy::multinomial")
    _check_values(self)
    race = call(aten.exponential.default, self, 1.0, generator=generator)
    ratios = call(aten.div.Tensor, self, race)
    if num_samples == 1:
        return call(aten.argmax.default, ratios, -1, True)
    return call(aten.topk.default, ratios, num_samples)[1]


#: Below functionalization, on the inner lazy tensors.
MULTINOMIAL_KERNELS = MappingProxyType({aten.multinomial.default: multinomial})
