"""Copies, casts, factories and views of the jax backend's table. JAX values are
immutable, so every view is a copy (the functionalization in front of the runtime has
already turned views into ``*_copy`` ops); apart because these ops move or make data and
compute nothing."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from .table import as_dtype, dt, op, sizes

# Copies, casts, factories ---------------------------------------------------------------


@op("_to_copy", "clone", "alias_copy", "lift_fresh_copy", "detach_copy")
def _copy_as(shapes, x, *args, **kwargs):
    return as_dtype(x, dt(shapes))


@op("conj_physical")
def _conj_physical(shapes, x):
    return jnp.conj(as_dtype(x, dt(shapes)))


@op("copy")
def _copy(shapes, self, src, non_blocking=False):
    return jnp.broadcast_to(as_dtype(src, dt(shapes)), sizes(shapes))


@op("fill.Scalar", "fill.Tensor")
def _fill(shapes, x, value):
    return jnp.full(sizes(shapes), as_dtype(value, dt(shapes)))


@op("zeros_like", "new_zeros")
def _zeros_like(shapes, *args, **kwargs):
    return jnp.zeros(sizes(shapes), dt(shapes))


@op("ones_like", "new_ones")
def _ones_like(shapes, *args, **kwargs):
    return jnp.ones(sizes(shapes), dt(shapes))


@op("empty_like", "empty.memory_format", "new_empty", "empty_strided", "new_empty_strided")
def _empty(shapes, *args, **kwargs):
    return jnp.zeros(sizes(shapes), dt(shapes))


@op("full", "full_like")
def _full(shapes, size_or_self, fill_value, **kwargs):
    return jnp.full(sizes(shapes), as_dtype(fill_value, dt(shapes)))


@op("new_full")
def _new_full(shapes, x, size, fill_value, **kwargs):
    return jnp.full(sizes(shapes), as_dtype(fill_value, dt(shapes)))


@op("scalar_tensor")
def _scalar_tensor(shapes, value, **kwargs):
    return as_dtype(value, dt(shapes))


@op("zeros", "zero")
def _zeros(shapes, *args, **kwargs):
    return jnp.zeros(sizes(shapes), dt(shapes))


@op("ones")
def _ones(shapes, *args, **kwargs):
    return jnp.ones(sizes(shapes), dt(shapes))


@op("arange.start_step")
def _arange(shapes, start, end, step=1, **kwargs):
    n = sizes(shapes)[0]
    d = dt(shapes)
    if jnp.issubdtype(d, jnp.floating):
        return (jnp.asarray(start, jnp.float64) + jnp.arange(n) * step).astype(d)
    return (start + jnp.arange(n, dtype=jnp.int64) * step).astype(d)


# Views (as copies: every result is a new value) ------------------------------------------


@op(
    "view_copy",
    "_unsafe_view",
    "reshape",
    "squeeze_copy",
    "squeeze_copy.dim",
    "squeeze_copy.dims",
    "unsqueeze_copy",
    "unsqueeze",
    "_reshape_alias_copy",
    "view_copy.default",
    "flatten_copy",
)
def _reshape(shapes, x, *args, **kwargs):
    return jnp.reshape(x, sizes(shapes))


@op("expand_copy")
def _expand(shapes, x, size, implicit=False):
    return jnp.broadcast_to(x, sizes(shapes))


@op("permute_copy")
def _permute(shapes, x, dims):
    return jnp.transpose(x, [d % max(x.ndim, 1) for d in dims])


@op("t_copy", "t")
def _t(shapes, x):
    return x.T if x.ndim == 2 else x


@op("transpose_copy.int", "transpose.int")
def _transpose(shapes, x, dim0, dim1):
    return jnp.swapaxes(x, dim0, dim1) if x.ndim else x


@op("select_copy.int", "select.int")
def _select(shapes, x, dim, index):
    dim %= x.ndim
    return lax.index_in_dim(x, index % x.shape[dim], dim, keepdims=False)


@op("slice_copy.Tensor")
def _slice(shapes, x, dim=0, start=None, end=None, step=1):
    dim %= x.ndim
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


@op("narrow_copy", "narrow")
def _narrow(shapes, x, dim, start, length):
    dim %= x.ndim
    if start < 0:
        start += x.shape[dim]
    return lax.slice_in_dim(x, start, start + length, axis=dim)


@op("select_backward")
def _select_backward(shapes, grad, input_sizes, dim, index):
    dim %= len(input_sizes)
    index %= input_sizes[dim]
    out = jnp.zeros(sizes(shapes), dt(shapes))
    return lax.dynamic_update_index_in_dim(out, grad.astype(out.dtype), index, dim)


@op("slice_backward")
def _slice_backward(shapes, grad, input_sizes, dim, start, end, step):
    dim %= len(input_sizes)
    index = [slice(None)] * len(input_sizes)
    index[dim] = slice(start, end, step)
    out = jnp.zeros(sizes(shapes), dt(shapes))
    return out.at[tuple(index)].set(grad.astype(out.dtype))


@op("unbind_copy.int", "unbind.int")
def _unbind(shapes, x, dim=0):
    dim %= x.ndim
    return [lax.index_in_dim(x, i, dim, keepdims=False) for i in range(x.shape[dim])]


@op("split_copy.Tensor", "split_with_sizes_copy", "chunk")
def _split(shapes, x, split=None, dim=0):
    dim %= x.ndim
    results, offset = [], 0
    for shape in shapes:
        if len(shape.sizes) < x.ndim:  # unbind: one index each
            results.append(lax.index_in_dim(x, offset, dim, keepdims=False))
            offset += 1
            continue
        length = shape.sizes[dim]
        results.append(lax.slice_in_dim(x, offset, offset + length, axis=dim))
        offset += length
    return results


@op("cat")
def _cat(shapes, tensors, dim=0):
    d = dt(shapes)
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]  # torch's legacy
    if not kept:
        return jnp.zeros(sizes(shapes), d)
    return jnp.concatenate([as_dtype(t, d) for t in kept], axis=dim)


@op("stack")
def _stack(shapes, tensors, dim=0):
    d = dt(shapes)
    return jnp.stack([as_dtype(t, d) for t in tensors], axis=dim)


@op("constant_pad_nd")
def _constant_pad(shapes, x, pad, value=0):
    config = [(0, 0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        config[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1], 0)
    return lax.pad(x, jnp.asarray(value, x.dtype), config)


@op("tril")
def _tril(shapes, x, diagonal=0):
    return jnp.tril(x, diagonal)


@op("triu")
def _triu(shapes, x, diagonal=0):
    return jnp.triu(x, diagonal)


@op("flip")
def _flip(shapes, x, dims):
    return jnp.flip(x, axis=tuple(dims))


@op("roll")
def _roll(shapes, x, shifts, dims=()):
    if not dims:
        return jnp.roll(x.reshape(-1), shifts).reshape(x.shape)
    return jnp.roll(x, shifts, axis=tuple(dims))


@op("diagonal_copy")
def _diagonal(shapes, x, offset=0, dim1=0, dim2=1):
    return jnp.diagonal(x, offset, dim1 % x.ndim, dim2 % x.ndim)


@op("repeat")
def _repeat(shapes, x, repeats):
    x = jnp.reshape(x, (1,) * (len(repeats) - x.ndim) + x.shape)
    return jnp.tile(x, repeats)
