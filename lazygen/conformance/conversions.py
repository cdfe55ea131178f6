"""Conversion cases: a dtype or memory-format conversion of a tensor, followed by views of
the result and in-place ops through them.

OpInfo samples start from tensors of the sample's dtype and layout, so they rarely reach
what real models do to lazy tensors between ops: ``.half()``, ``.bool()``, ``.long()``,
``channels_last``, then slicing, transposing and writing in place through the view. On a
functionalized lazy device each step re-wraps or aliases a functional tensor, and several
of these crashed the process (issue #23). Each case here is shaped like an OpInfo entry
(``name``, ``sample_inputs``, ``__call__``), so ``classify.run_entry`` classifies it the same
way: lazily and eagerly, compared. A case returns the converted tensor and its view, so
writes through the view must show in both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.testing import make_tensor
from torch.testing._internal.opinfo.core import SampleInput

#: Target dtype names -> dtypes (float32 too: ``.to`` of the same dtype returns the input).
TARGETS = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "complex64": torch.complex64,
    "int64": torch.int64,
    "int32": torch.int32,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
SHAPE = (2, 3, 4, 5)


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.to(memory_format=torch.channels_last)


def _permuted(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 3, 1)


#: Layout changes applied before the dtype conversion (which keeps strides).
FORMATS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "contiguous": lambda x: x,
    "channels_last": _channels_last,
    "permuted": _permuted,
}


def _slice_add(y):
    v = y[..., 1:3]
    v.add_(torch.ones_like(v))
    return y, v


def _transpose_fill(y):
    v = y.transpose(-1, -2)
    v[0].fill_(1)
    return y, v


def _flatten_zero(y):
    v = y.flatten()
    v[:5].zero_()
    return y, v


def _unsqueeze_copy(y):
    v = y.unsqueeze(0)[:, :1]
    v.copy_(torch.zeros_like(v))
    return y, y[:1].expand_as(y).contiguous()


def _diagonal_mul(y):
    v = y.diagonal(dim1=-2, dim2=-1)
    v.mul_(v)
    return y, v


def _select_then_view(y):
    y[1].add_(torch.ones_like(y[1]))
    return y, y.permute(3, 2, 1, 0)[..., :1]


def _detach_zero(y):
    d = y.detach()
    d[0, 0].zero_()
    return y, d.unfold(-1, 2, 1)


#: View-and-in-place chains run on the converted tensor.
CHAINS: dict[str, Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]] = {
    "slice_add_": _slice_add,
    "transpose_fill_": _transpose_fill,
    "flatten_zero_": _flatten_zero,
    "unsqueeze_copy_": _unsqueeze_copy,
    "diagonal_mul_": _diagonal_mul,
    "select_add_then_permute": _select_then_view,
    "detach_zero_then_unfold": _detach_zero,
}


@dataclass(frozen=True)
class ConversionCase:
    """``x`` (float input) -> layout ``format`` -> ``.to(target)`` -> ``chain``."""

    target: str
    format: str
    chain: str
    variant_test_name: str = ""

    @property
    def name(self) -> str:
        return f"to.{self.target}.{self.format}.{self.chain}"

    def sample_inputs(self, device, dtype: torch.dtype, requires_grad: bool = False):
        """One sample of ``SHAPE`` in ``dtype`` (values that survive integer casts)."""
        low, high = (None, None) if dtype == torch.bool else (-9, 9)
        x = make_tensor(SHAPE, dtype=dtype, device=device, low=low, high=high)
        if requires_grad and (dtype.is_floating_point or dtype.is_complex):
            x.requires_grad_()
        return [SampleInput(x)]

    def __call__(self, x: torch.Tensor):
        y = FORMATS[self.format](x).to(TARGETS[self.target])
        if y is x or y._base is x:  # `.to` of the same dtype: work on a copy, as a model
            y = y.clone()  # would, and keep the input intact for the comparison
        return CHAINS[self.chain](y)

    @staticmethod
    def gradcheck_wrapper(op, *args, **kwargs):
        return op(*args, **kwargs)


@functools.cache
def conversion_cases(grad: bool = False) -> tuple[ConversionCase, ...]:
    """Every target x format x chain; with ``grad`` only floating targets (an integer
    result has no gradient)."""
    return tuple(
        ConversionCase(target, layout, chain)
        for target, dtype in TARGETS.items()
        if not grad or dtype.is_floating_point or dtype.is_complex
        for layout in FORMATS
        for chain in CHAINS
    )
