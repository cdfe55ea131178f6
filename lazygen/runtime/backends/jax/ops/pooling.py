"""Average and adaptive pooling of the jax backend's table, with their backward formulas
(``jax.vjp`` of the forward: each pooling is linear in its input, or picks one element per
window); apart from ``conv_pool``'s max pooling because their windows are averaged
(torch's divisors: padding counted or not, a divisor override) or sized per output
(adaptive pooling: window ``i`` spans ``floor(i * n / out)`` to ``ceil((i + 1) * n / out)``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..dtypes import as_dtype, dt
from .conv_pool import _max_pool_backward, _pool_config
from .table import HIGHEST, op


def _avg_pool(spatial, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    kernel, stride, _, pads = _pool_config(x, spatial, kernel_size, stride, padding, [1], ceil_mode)
    lead = [(0, 0)] * (x.ndim - spatial)
    window = (1,) * (x.ndim - spatial) + tuple(kernel)
    strides = (1,) * (x.ndim - spatial) + tuple(stride)
    padded = lead + list(pads)
    # a concrete 0 (numpy's): JAX then knows the window sum, and differentiates it
    total = lax.reduce_window(x, np.zeros((), x.dtype), lax.add, window, strides, padded)
    if divisor:
        return total / divisor
    # torch's divisor: the window's elements inside the input, and inside the explicit
    # padding too with ``count_include_pad`` (never the overhang ``ceil_mode`` adds)
    plane = x.shape[x.ndim - spatial :]
    ones = jnp.ones(plane, x.dtype)
    if count_include_pad:
        explicit = [(p, p) for p in padding] if len(padding) > 1 else [(padding[0],) * 2] * spatial
        ones = jnp.pad(ones, explicit, constant_values=1)
        pads = [(lo - e[0], hi - e[1]) for (lo, hi), e in zip(pads, explicit, strict=True)]
    counts = lax.reduce_window(
        ones, np.zeros((), x.dtype), lax.add, tuple(kernel), tuple(stride), pads
    )
    return total / counts


def _avg_pool_op(spatial):
    def forward(shapes, x, kernel_size, stride=(), padding=(0,), ceil_mode=False,
                count_include_pad=True, divisor_override=None):  # fmt: skip
        x = as_dtype(x, dt(shapes))
        return _avg_pool(
            spatial, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override,
        )  # fmt: skip

    def backward(shapes, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                 divisor_override):  # fmt: skip
        x = as_dtype(x, dt(shapes))

        def pooled(a):
            return _avg_pool(
                spatial, a, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override,
            )  # fmt: skip

        return jax.vjp(pooled, x)[1](as_dtype(grad, x.dtype))[0]

    return forward, backward


for _n in (2, 3):
    _forward, _backward = _avg_pool_op(_n)
    op(f"avg_pool{_n}d")(_forward)
    op(f"avg_pool{_n}d_backward")(_backward)


# Adaptive pooling --------------------------------------------------------------------------


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _averaging(size: int, out: int, dtype):
    """``(out, size)``: row ``i`` averages adaptive window ``i``."""
    rows = [[0.0] * size for _ in range(out)]
    for i, (start, end) in enumerate(_windows(size, out)):
        for j in range(start, end):
            rows[i][j] = 1.0 / (end - start)
    return jnp.asarray(rows, dtype)


def _adaptive_avg(x, output_size):
    spatial = len(output_size)
    for k, out in enumerate(output_size):
        axis = x.ndim - spatial + k
        matrix = _averaging(x.shape[axis], out, x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, matrix, axes=([axis], [1]), precision=HIGHEST), -1, axis)
    return x


def _adaptive_avg_op(spatial):
    def forward(shapes, x, output_size):
        return _adaptive_avg(as_dtype(x, dt(shapes)), list(output_size))

    def backward(shapes, grad, x):
        x = as_dtype(x, dt(shapes))
        output_size = grad.shape[grad.ndim - spatial :]
        pooled = lambda a: _adaptive_avg(a, list(output_size))  # noqa: E731
        return jax.vjp(pooled, x)[1](as_dtype(grad, x.dtype))[0]

    return forward, backward


for _n in (2, 3):
    _forward, _backward = _adaptive_avg_op(_n)
    op(f"_adaptive_avg_pool{_n}d", f"adaptive_avg_pool{_n}d")(_forward)
    op(f"_adaptive_avg_pool{_n}d_backward")(_backward)


def _adaptive_max_axis(x, index, axis: int, out: int):
    """The max over each adaptive window of ``axis`` and the flat plane index it came from;
    the first of equal values, NaN above every number."""
    size = x.shape[axis]
    mask = jnp.zeros((out, size), bool)
    for i, (start, end) in enumerate(_windows(size, out)):
        mask = mask.at[i, start:end].set(True)
    moved = jnp.moveaxis(x, axis, -1)[..., None, :]  # (..., 1, size)
    moved_index = jnp.moveaxis(index, axis, -1)[..., None, :]
    low = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    candidates = jnp.where(mask, moved, jnp.asarray(low, x.dtype))
    pick = jnp.argmax(candidates, axis=-1)[..., None]  # the first maximum, or first NaN
    values = jnp.take_along_axis(candidates, pick, -1)[..., 0]
    indices = jnp.take_along_axis(jnp.broadcast_to(moved_index, candidates.shape), pick, -1)
    indices = indices[..., 0]
    return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices, -1, axis)


def _adaptive_max(x, output_size):
    spatial = len(output_size)
    plane = x.shape[x.ndim - spatial :]
    index = jnp.arange(math.prod(plane), dtype=jnp.int64).reshape(plane)
    index = jnp.broadcast_to(index, x.shape)
    for k in reversed(range(spatial)):
        x, index = _adaptive_max_axis(x, index, x.ndim - spatial + k, output_size[k])
    return x, index


for _n in (2, 3):
    op(f"adaptive_max_pool{_n}d")(
        lambda shapes, x, output_size: _adaptive_max(x, list(output_size))
    )
    op(f"adaptive_max_pool{_n}d_backward")(
        lambda shapes, grad, x, indices, _n=_n: _max_pool_backward(_n, shapes, grad, x, indices)
    )
