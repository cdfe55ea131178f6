"""Autograd kernels of the TS backend (the backend yaml's ``autograd`` section), registered for
``AutogradPrivateUse1``. They run the forward below autograd and use aten's backward ops."""

from __future__ import annotations

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


class _NativeGroupNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, n, c, hxw, group, eps):
        with torch._C._AutoDispatchBelowAutograd():
            out, mean, rstd = aten.native_group_norm.default(
                input, weight, bias, n, c, hxw, group, eps
            )
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.args = (n, c, hxw, group)
        ctx.has = (weight is not None, bias is not None)
        ctx.mark_non_differentiable(mean, rstd)
        return out, mean, rstd

    @staticmethod
    def backward(ctx, grad_out, grad_mean, grad_rstd):
        input, weight, mean, rstd = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]]
        grad_input, grad_weight, grad_bias = aten.native_group_norm_backward.default(
            grad_out.contiguous(), input, mean, rstd, weight, *ctx.args, mask
        )
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    return _NativeGroupNorm.apply(input, weight, bias, N, C, HxW, group, eps)


AUTOGRAD = {
    aten.max_pool3d.default: max_pool3d,
    aten.native_group_norm.default: native_group_norm,
}
