"""Copies, casts, factories and views of the jax backend's table. JAX values are
immutable, so every view is a copy (the functionalization in front of the runtime has
already turned views into ``*_copy`` ops); apart because these ops move or make data and
compute nothing."""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op, rank, sizes

# Copies, casts, factories ---------------------------------------------------------------


@op("_to_copy", "clone", "alias_copy", "alias", "lift_fresh_copy", "detach_copy", "detach")
def _copy_as(shapes, x, *args, **kwargs):
    return as_dtype(x, dt(shapes))


@op("conj_physical")
def _conj_physical(shapes, x):
    return jnp.conj(as_dtype(x, dt(shapes)))


@op("copy")
def _copy(shapes, self, src, non_blocking=False):
    return jnp.broadcast_to(as_dtype(src, dt(shapes)), jnp.shape(self))


@op("fill.Scalar", "fill.Tensor")
def _fill(shapes, x, value):
    return jnp.full(jnp.shape(x), as_dtype(value, dt(shapes)))


# Factories take their sizes from their size argument (a list of ints: compiled in) or
# from the tensor they are like, never from ``shapes``: one program serves every size.


@op("zeros_like", "zero", "empty_like")
def _zeros_like(shapes, x, *args, **kwargs):
    return jnp.zeros(jnp.shape(x), dt(shapes))


@op("ones_like")
def _ones_like(shapes, x, *args, **kwargs):
    return jnp.ones(jnp.shape(x), dt(shapes))


@op("full_like")
def _full_like(shapes, x, fill_value, **kwargs):
    return jnp.full(jnp.shape(x), as_dtype(fill_value, dt(shapes)))


@op("zeros", "empty.memory_format", "empty_strided")
def _zeros(shapes, size, *args, **kwargs):
    return jnp.zeros(tuple(size), dt(shapes))


@op("ones")
def _ones(shapes, size, *args, **kwargs):
    return jnp.ones(tuple(size), dt(shapes))


@op("new_zeros", "new_empty", "new_empty_strided")
def _new_zeros(shapes, x, size, *args, **kwargs):
    return jnp.zeros(tuple(size), dt(shapes))


@op("new_ones")
def _new_ones(shapes, x, size, *args, **kwargs):
    return jnp.ones(tuple(size), dt(shapes))


@op("full")
def _full(shapes, size, fill_value, **kwargs):
    return jnp.full(tuple(size), as_dtype(fill_value, dt(shapes)))


@op("new_full")
def _new_full(shapes, x, size, fill_value, **kwargs):
    return jnp.full(tuple(size), as_dtype(fill_value, dt(shapes)))


@op("scalar_tensor")
def _scalar_tensor(shapes, value, **kwargs):
    return as_dtype(value, dt(shapes))


@op("arange.start_step", static_args=(0, 1, 2))
def _arange(shapes, start, end, step=1, **kwargs):
    if all(isinstance(v, (int, float)) for v in (start, end, step)):
        # numbers compiled in (always, in a graph compiled for all sizes: static_args):
        # torch's length, ceil((end - start) / step) in double
        n = max(math.ceil((float(end) - float(start)) / float(step)), 0)
    else:  # numbers read at run time, in a graph compiled for its own sizes
        n = sizes(shapes)[0]
    d = dt(shapes)
    if jnp.issubdtype(d, jnp.floating):
        return (jnp.asarray(start, jnp.float64) + jnp.arange(n) * step).astype(d)
    return (start + jnp.arange(n, dtype=jnp.int64) * step).astype(d)


# Views (as copies: every result is a new value) ------------------------------------------


@op("view_copy", "_unsafe_view", "reshape", "_reshape_alias_copy", "view")
def _view(shapes, x, size, *args):
    return jnp.reshape(x, tuple(size))  # a -1 in ``size``: jnp.reshape infers it as torch


@op(
    "squeeze_copy",
    "squeeze_copy.dim",
    "squeeze_copy.dims",
    "squeeze",
    "squeeze.dim",
    "squeeze.dims",
)
def _squeeze(shapes, x, dim=None):
    if x.ndim == 0:
        return x
    dims = range(x.ndim) if dim is None else [dim] if isinstance(dim, int) else dim
    return jnp.squeeze(x, tuple(d % x.ndim for d in dims if x.shape[d % x.ndim] == 1))


@op("unsqueeze_copy", "unsqueeze")
def _unsqueeze(shapes, x, dim):
    return jnp.expand_dims(x, dim % (x.ndim + 1))


@op("flatten_copy")
def _flatten(shapes, x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return jnp.reshape(x, (1,))
    start, end = start_dim % x.ndim, end_dim % x.ndim
    return jnp.reshape(x, x.shape[:start] + (-1,) + x.shape[end + 1 :])


@op("expand_copy", "expand")
def _expand(shapes, x, size, implicit=False):
    # torch's -1 keeps the size of x's dimension it lines up with (from the right)
    lead = len(size) - x.ndim
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return jnp.broadcast_to(x, target)


@op("permute_copy", "permute")
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


@op("chunk")
def _chunk(shapes, x, chunks, dim=0):
    dim %= x.ndim
    total = x.shape[dim]
    step = max(-(-total // chunks), 1)  # torch's chunk: pieces of ceil(size / chunks)
    starts = range(0, total, step) if total else [0]
    return [lax.slice_in_dim(x, o, min(o + step, total), axis=dim) for o in starts]


@op("slice_copy.Tensor", "slice.Tensor")
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
    out = jnp.zeros(tuple(input_sizes), dt(shapes))
    return lax.dynamic_update_index_in_dim(out, grad.astype(out.dtype), index, dim)


@op("slice_backward")
def _slice_backward(shapes, grad, input_sizes, dim, start, end, step):
    dim %= len(input_sizes)
    index = [slice(None)] * len(input_sizes)
    index[dim] = slice(start, end, step)
    out = jnp.zeros(tuple(input_sizes), dt(shapes))
    return out.at[tuple(index)].set(grad.astype(out.dtype))


@op("unbind_copy.int", "unbind.int")
def _unbind(shapes, x, dim=0):
    dim %= x.ndim
    return [lax.index_in_dim(x, i, dim, keepdims=False) for i in range(x.shape[dim])]


@op("split_copy.Tensor", "split_with_sizes_copy")
def _split(shapes, x, split=None, dim=0):
    dim %= x.ndim
    if not shapes:
        return []
    if rank(shapes) < x.ndim:  # unbind: one index each
        return [lax.index_in_dim(x, i, dim, keepdims=False) for i in range(len(shapes))]
    if isinstance(split, int):  # pieces of ``split`` (the last one shorter), at least one
        total = x.shape[dim]
        lengths = [min(split, total - o) for o in range(0, total, split)] if split else []
        lengths = lengths or [total]
    else:
        lengths = list(split)
    results, offset = [], 0
    for length in lengths:
        results.append(lax.slice_in_dim(x, offset, offset + length, axis=dim))
        offset += length
    return results


@op("cat")
def _cat(shapes, tensors, dim=0):
    d = dt(shapes)
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]  # torch's legacy
    if not kept:  # only legacy empty tensors: torch's result is one too
        return jnp.zeros((0,), d)
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


@op("diagonal_copy", "diagonal")
def _diagonal(shapes, x, offset=0, dim1=0, dim2=1):
    return jnp.diagonal(x, offset, dim1 % x.ndim, dim2 % x.ndim)


@op("repeat")
def _repeat(shapes, x, repeats):
    x = jnp.reshape(x, (1,) * (len(repeats) - x.ndim) + x.shape)
    return jnp.tile(x, repeats)
