"""Convolution and max pooling of the jax backend's table (``lax`` windowed ops):
apart because they translate torch's window arguments (stride, padding, dilation,
groups, pooling indices as flat positions in each input plane) to ``lax``'s."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import HIGHEST, op, per_channel

# Convolution ----------------------------------------------------------------------------


def _conv(x, w, stride, padding, dilation, groups):
    spatial = x.ndim - 2
    letters = "DHW"[-spatial:] if spatial else ""
    numbers = (f"NC{letters}", f"OI{letters}", f"NC{letters}")
    return lax.conv_general_dilated(
        x, w, tuple(stride), [(p, p) for p in padding], rhs_dilation=tuple(dilation),
        dimension_numbers=numbers, feature_group_count=groups, precision=HIGHEST,
    )  # fmt: skip


def _conv_transposed(x, w, stride, padding, dilation, output_padding, groups):
    """torch's transposed convolution as the gradient of a convolution: the input dilated
    by the stride, the kernel flipped and its in/out channels swapped per group, padded so
    that the output has torch's size ``(n - 1) * stride - 2 * pad + dilation * (k - 1) +
    output_padding + 1``."""
    spatial = x.ndim - 2
    letters = "DHW"[-spatial:]
    kernel = w.shape[2:]
    w = w.reshape((groups, w.shape[0] // groups, w.shape[1]) + kernel)
    w = jnp.swapaxes(w, 1, 2).reshape((groups * w.shape[2], w.shape[1]) + kernel)
    w = jnp.flip(w, axis=tuple(range(2, w.ndim)))
    pads = [
        (d * (k - 1) - p, d * (k - 1) - p + o)
        for k, p, d, o in zip(kernel, padding, dilation, output_padding, strict=True)
    ]
    return lax.conv_general_dilated(
        x, w, (1,) * spatial, pads, lhs_dilation=tuple(stride), rhs_dilation=tuple(dilation),
        dimension_numbers=(f"NC{letters}", f"OI{letters}", f"NC{letters}"),
        feature_group_count=groups, precision=HIGHEST,
    )  # fmt: skip


def _conv_any(stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return lambda x, w: _conv_transposed(
            x, w, stride, padding, dilation, output_padding, groups
        )
    return lambda x, w: _conv(x, w, stride, padding, dilation, groups)


@op("convolution")
def _convolution(
    shapes, x, w, bias, stride, padding, dilation, transposed, output_padding, groups
):  # fmt: skip
    d = dt(shapes)
    conv = _conv_any(stride, padding, dilation, transposed, output_padding, groups)
    out = conv(as_dtype(x, d), as_dtype(w, d))
    if bias is not None:
        out = out + per_channel(as_dtype(bias, d), out.ndim)
    return out


@op("convolution_backward")
def _convolution_backward(
    shapes, grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
    groups, mask,
):  # fmt: skip
    d = x.dtype
    conv = _conv_any(stride, padding, dilation, transposed, output_padding, groups)
    _, pullback = jax.vjp(conv, x, w)
    dx, dw = pullback(grad.astype(d))
    db = jnp.sum(grad, axis=(0, *range(2, grad.ndim))) if mask[2] else None
    return (dx if mask[0] else None), (dw if mask[1] else None), db


# Max pooling with torch's indices (flat positions in each input plane) -------------------


def _pooled_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil: bool):
    """torch's output size of one pooled dimension (``pooling_output_shape``)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil else 0)
    out = span // stride + 1
    if ceil and (out - 1) * stride >= size + pad:  # the last window starts in the padding
        out -= 1
    return out


def _pool_config(x, spatial, kernel_size, stride, padding, dilation, ceil_mode):
    pick = lambda v, i: v[i] if len(v) > 1 else v[0]  # noqa: E731 - torch repeats one value
    kernel = [pick(kernel_size, i) for i in range(spatial)]
    stride = [pick(stride, i) for i in range(spatial)] if stride else kernel
    padding = [pick(padding, i) for i in range(spatial)]
    dilation = [pick(dilation, i) for i in range(spatial)]
    pads = []
    for i in range(spatial):
        size = x.shape[x.ndim - spatial + i]
        out = _pooled_size(size, kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        needed = (out - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1
        pads.append((padding[i], needed - size - padding[i]))
    return kernel, stride, dilation, pads


def _max_pool(spatial, x, kernel_size, stride, padding, dilation, ceil_mode):
    kernel, stride, dilation, pads = _pool_config(
        x, spatial, kernel_size, stride, padding, dilation, ceil_mode
    )
    plane = x.shape[x.ndim - spatial :]
    index = jnp.arange(math.prod(plane), dtype=jnp.int64).reshape(plane)
    index = jnp.broadcast_to(index, x.shape)
    low = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    lead = [(0, 0, 0)] * (x.ndim - spatial)
    config = lead + [(lo, hi, 0) for lo, hi in pads]
    xp = lax.pad(x, jnp.asarray(low, x.dtype), config)
    ip = lax.pad(index, jnp.asarray(-1, jnp.int64), config)

    def better(a, b):
        (va, ia), (vb, ib) = a, b
        take_b = (vb > va) | (jnp.isnan(vb) & ~jnp.isnan(va)) | ((vb == va) & (ib < ia) & (ib >= 0))
        take_b = take_b | (ia < 0)
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    ones = (1,) * (x.ndim - spatial)
    values, indices = lax.reduce_window(
        (xp, ip), (jnp.asarray(low, x.dtype), jnp.asarray(-1, jnp.int64)), better,
        ones + tuple(kernel), ones + tuple(stride), "VALID",
        window_dilation=ones + tuple(dilation),
    )  # fmt: skip
    return values, indices


@op("max_pool2d_with_indices")
def _max_pool2d(shapes, x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return _max_pool(2, x, kernel_size, stride, padding, dilation, ceil_mode)


@op("max_pool3d_with_indices")
def _max_pool3d(shapes, x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return _max_pool(3, x, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool_backward(spatial, shapes, grad, x, indices):
    """The gradient scattered to the positions ``indices`` name in each input plane."""
    lead = x.shape[: x.ndim - spatial]
    plane = math.prod(x.shape[x.ndim - spatial :])
    rows = math.prod(lead)
    flat_grad = grad.reshape(rows, -1).astype(dt(shapes))
    flat_index = indices.reshape(rows, -1)
    out = jnp.zeros((rows, plane), dt(shapes))
    out = out.at[jnp.arange(rows)[:, None], flat_index].add(flat_grad)
    return out.reshape(x.shape)


@op("max_pool2d_with_indices_backward")
def _max_pool2d_backward(shapes, grad, x, kernel, stride, padding, dilation, ceil, indices):
    return _max_pool_backward(2, shapes, grad, x, indices)


@op("max_pool3d_with_indices_backward")
def _max_pool3d_backward(shapes, grad, x, kernel, stride, padding, dilation, ceil, indices):
    return _max_pool_backward(3, shapes, grad, x, indices)
