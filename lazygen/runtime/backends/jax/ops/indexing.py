"""Indexing ops of the jax backend's table: gathers, embeddings and scatters into slices
(``index_select``, ``gather``, ``embedding``, ``slice_scatter``...): apart because they
read or write data by index rather than compute it."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from .table import as_dtype, dt, op

# Indexing --------------------------------------------------------------------------------


@op("index.Tensor")
def _index(shapes, x, indices):
    """``x[i0, i1, ...]`` with integer index tensors (None: the whole dimension): numpy's
    advanced indexing, which torch follows. Boolean masks are refused (their result's sizes
    depend on values: ``refusals.py``)."""
    return x[tuple(slice(None) if i is None else i for i in indices)]


@op("index_select")
def _index_select(shapes, x, dim, index):
    return jnp.take(x, index, axis=dim)


@op("gather")
def _gather(shapes, x, dim, index, sparse_grad=False):
    if index.size == 0:  # torch takes an empty index of any number of dimensions
        return jnp.zeros(index.shape, x.dtype)  # torch's result has the index's sizes
    if x.ndim == 0 or index.ndim == 0:
        return jnp.reshape(jnp.reshape(x, (-1,))[jnp.reshape(index, (-1,))], index.shape)
    dim %= x.ndim
    # torch's index may be smaller than x along the other dimensions (scatter's backward
    # gathers so): those positions are read from x's leading part
    x = x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))]
    return jnp.take_along_axis(x, index, axis=dim)


@op("embedding")
def _embedding(shapes, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return jnp.take(weight, indices, axis=0)


@op("embedding_dense_backward")
def _embedding_backward(shapes, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    d = dt(shapes)
    flat = indices.reshape(-1)
    rows = grad.reshape(flat.shape[0], -1).astype(d)
    if padding_idx >= 0:
        rows = jnp.where((flat == padding_idx)[:, None], jnp.zeros((), d), rows)
    if scale_grad_by_freq:
        counts = jnp.zeros((num_weights,), d).at[flat].add(1)
        rows = rows / counts[flat][:, None]
    return jnp.zeros((num_weights, rows.shape[1]), d).at[flat].add(rows)


@op("slice_scatter")
def _slice_scatter(shapes, x, src, dim=0, start=None, end=None, step=1):
    dim %= x.ndim
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    d = dt(shapes)
    return as_dtype(x, d).at[tuple(index)].set(as_dtype(src, d))


@op("select_scatter")
def _select_scatter(shapes, x, src, dim, index):
    dim %= x.ndim
    d = dt(shapes)
    return lax.dynamic_update_index_in_dim(
        as_dtype(x, d), as_dtype(src, d), index % x.shape[dim], dim
    )


@op("index_fill.int_Scalar", "index_fill.int_Tensor")
def _index_fill(shapes, x, dim, index, value):
    d = dt(shapes)
    x = as_dtype(x, d)
    if x.ndim == 0:
        return jnp.where(jnp.size(index) > 0, as_dtype(value, d), x)
    dim %= x.ndim
    where = [slice(None)] * x.ndim
    where[dim] = jnp.reshape(index, (-1,)) % x.shape[dim]
    return x.at[tuple(where)].set(as_dtype(value, d))
