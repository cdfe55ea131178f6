"""Autograd kernels of the built-in op list (``yaml/builtin.yaml``'s ``autograd`` section),
registered for ``AutogradPrivateUse1``. They run the forward below autograd and use aten's backward ops.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

aten = torch.ops.aten


class _MaxPool3d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, self, kernel_size, stride, padding, dilation, ceil_mode):
        with torch._C._AutoDispatchBelowAutograd():
            output, indices = aten.max_pool3d_with_indices.default(
                self, kernel_size, stride, padding, dilation, ceil_mode
            )
        ctx.save_for_backward(self, indices)
        ctx.args = (kernel_size, stride, padding, dilation, ceil_mode)
        ctx.mark_non_differentiable(indices)
        return output, indices

    @staticmethod
    def backward(ctx, grad_output, grad_indices):
        self, indices = ctx.saved_tensors
        grad = aten.max_pool3d_with_indices_backward.default(grad_output, self, *ctx.args, indices)
        return grad, None, None, None, None, None


def max_pool3d_with_indices(
    self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False
):
    return _MaxPool3d.apply(self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _host(t):
    """The plain host tensor behind a functional wrapper of one."""
    if torch._is_functional_tensor(t):
        torch._sync(t)
        return torch._from_functional_tensor(t)
    return t


class _PackPaddedSequence(torch.autograd.Function):
    """``batch_sizes`` is a host tensor, as on every device: functionalization wraps every
    result of an op of lazy tensors, the host one too, and a functional wrapper has no data
    pointer, which ATen's RNN drivers (``lstm.data``...), ``_pad_packed_sequence`` and this
    op's backward read. Above functionalization (the autograd key) the wrapper comes off."""

    @staticmethod
    def forward(ctx, input, lengths, batch_first):
        with torch._C._AutoDispatchBelowAutograd():
            data, batch_sizes = aten._pack_padded_sequence.default(input, lengths, batch_first)
        batch_sizes = _host(batch_sizes)
        ctx.input_size = input.shape
        ctx.batch_first = batch_first
        ctx.batch_sizes = batch_sizes  # a host tensor: not saved through autograd
        ctx.mark_non_differentiable(batch_sizes)
        return data, batch_sizes

    @staticmethod
    def backward(ctx, grad_data, grad_batch_sizes):
        grad = aten._pack_padded_sequence_backward.default(
            grad_data, ctx.input_size, ctx.batch_sizes, ctx.batch_first
        )
        return grad, None, None


def _pack_padded_sequence(input, lengths, batch_first):
    return _PackPaddedSequence.apply(input, lengths, batch_first)


AUTOGRAD = MappingProxyType(
    {
        aten.max_pool3d.default: max_pool3d,
        aten._pack_padded_sequence.default: _pack_padded_sequence,
    }
)
