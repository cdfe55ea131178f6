"""Indexing ops of the jax backend's table: gathers and scatters (``index_select``,
``gather``, ``index``, ``index_put``, ``scatter*``, ``slice_scatter``, ``as_strided``...):
apart because they read or write data by index rather than compute it."""

from __future__ import annotations

from types import MappingProxyType

import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op, sizes

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


# Advanced indexing (integer index tensors; ``refusals.py`` refuses boolean masks, whose
# result sizes depend on the data, except where ``index_put`` writes through one) ---------


def _index_tuple(indices) -> tuple:
    """torch's ``Tensor?[]`` indices as a numpy-style index: None is a full slice; numpy's
    rules for separated index tensors (their dimension moves first) are torch's too."""
    return tuple(slice(None) if i is None else i for i in indices)


@op("index.Tensor", "_unsafe_index.Tensor")
def _index(shapes, x, indices):
    return x[_index_tuple(indices)]


def _mask_put(x, mask, values, accumulate):
    """``x[mask] = values`` for a boolean ``mask`` over ``x``'s leading dimensions and
    ``values`` that broadcast over the rest (``refusals.py`` refuses other masks)."""
    mask = jnp.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
    if accumulate:
        return x + jnp.where(mask, values, jnp.zeros((), x.dtype))
    return jnp.where(mask, values, x)


@op("index_put", "_unsafe_index_put", "_index_put_impl")
def _index_put(shapes, x, indices, values, accumulate=False, unsafe=False):
    d = dt(shapes)
    x, values = as_dtype(x, d), as_dtype(values, d)
    if len(indices) == 1 and indices[0] is not None and indices[0].dtype == jnp.bool_:
        return _mask_put(x, indices[0], values, accumulate)
    where = x.at[_index_tuple(indices)]
    return where.add(values) if accumulate else where.set(values)


# as_strided: positions in the input's row-major storage (a lazy value is contiguous) ---


def _strided_positions(size, stride, storage_offset):
    """The flat storage position of each element of an ``as_strided`` view."""
    position = jnp.asarray(storage_offset or 0, jnp.int64)
    for d, (n, s) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[d] = n
        position = position + jnp.arange(n, dtype=jnp.int64).reshape(shape) * s
    return jnp.broadcast_to(position, tuple(size))


@op("as_strided_copy", "as_strided")
def _as_strided(shapes, x, size, stride, storage_offset=None):
    return jnp.reshape(x, (-1,))[_strided_positions(size, stride, storage_offset)]


@op("as_strided_scatter")
def _as_strided_scatter(shapes, x, src, size, stride, storage_offset=None):
    d = dt(shapes)
    flat = jnp.reshape(as_dtype(x, d), (-1,))
    where = _strided_positions(size, stride, storage_offset)
    return flat.at[where].set(as_dtype(src, d)).reshape(x.shape)


# Scatters along a dim (torch's index may be smaller than ``src``: its leading part is read)


def _scatter_at(x, dim, index):
    """``x.at[...]`` of the positions ``scatter(x, dim, index, ...)`` writes."""
    where = [lax.broadcasted_iota(jnp.int64, index.shape, d) for d in range(index.ndim)]
    where[dim] = index
    return x.at[tuple(where)]


def _leading(src, index):
    if jnp.ndim(src) == 0:
        return src
    return src[tuple(slice(0, n) for n in index.shape)]


_AT = MappingProxyType(
    {"add": "add", "sum": "add", "multiply": "multiply", "prod": "multiply", "amax": "max",
     "amin": "min", "mean": "add", None: "set"}
)  # fmt: skip


def _identity(reduce: str, dtype):
    """The value a reduction starts from where ``include_self`` is false."""
    if reduce in ("sum", "mean"):
        return jnp.zeros((), dtype)
    if reduce == "prod":
        return jnp.ones((), dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        low, high = -jnp.inf, jnp.inf
    else:
        low, high = jnp.iinfo(dtype).min, jnp.iinfo(dtype).max
    return jnp.asarray(low if reduce == "amax" else high, dtype)


def _scattered(shapes, x, dim, index, src, reduce=None, include_self=True, at=_scatter_at):
    """``x`` with ``src`` written, or reduced, at the positions ``at(x, dim, index)``; a
    mean divides by how many values each position got (``x``'s own counted with
    ``include_self``), integers by floor division as torch does."""
    d = dt(shapes)
    x, src = as_dtype(x, d), as_dtype(src, d)
    if jnp.size(index) == 0:  # torch takes an empty index of any number of dimensions
        return x  # (gather's backward scatters so) and writes nothing
    if x.ndim == 0:
        flat = _scattered(shapes, x.reshape(1), 0, jnp.reshape(index, (-1,)),
                          jnp.reshape(src, (-1,)), reduce, include_self, at)  # fmt: skip
        return flat.reshape(())
    dim %= x.ndim
    if not include_self:
        x = at(x, dim, index).set(_identity(reduce, d))
    result = getattr(at(x, dim, index), _AT[reduce])(src)
    if reduce != "mean":
        return result
    counts = at(jnp.full(x.shape, int(include_self), d), dim, index).add(1)
    if jnp.issubdtype(d, jnp.floating):
        return result / jnp.maximum(counts, 1)
    return jnp.floor_divide(result, jnp.maximum(counts, 1))


@op("scatter.src", "scatter.value")
def _scatter(shapes, x, dim, index, src):
    return _scattered(shapes, x, dim, index, _leading(src, index))


@op("scatter.reduce", "scatter.value_reduce")
def _scatter_reduce_legacy(shapes, x, dim, index, src, *, reduce):
    return _scattered(shapes, x, dim, index, _leading(src, index), reduce)


@op("scatter_add")
def _scatter_add(shapes, x, dim, index, src):
    return _scattered(shapes, x, dim, index, _leading(src, index), "sum")


@op("scatter_reduce.two")
def _scatter_reduce(shapes, x, dim, index, src, reduce, *, include_self=True):
    return _scattered(shapes, x, dim, index, _leading(src, index), reduce, include_self)


def _index_at(x, dim, index):
    """``x.at[...]`` of the slices ``index_add(x, dim, index, ...)`` writes."""
    return x.at[(slice(None),) * dim + (jnp.reshape(index, (-1,)),)]


@op("index_add")
def _index_add(shapes, x, dim, index, source, *, alpha=1):
    source = as_dtype(source, dt(shapes)) * as_dtype(alpha, dt(shapes))
    return _scattered(shapes, x, dim, index, source, "sum", at=_index_at)


@op("index_copy")
def _index_copy(shapes, x, dim, index, source):
    return _scattered(shapes, x, dim, index, source, at=_index_at)


@op("index_reduce")
def _index_reduce(shapes, x, dim, index, source, reduce, *, include_self=True):
    return _scattered(shapes, x, dim, index, source, reduce, include_self, at=_index_at)


@op("put")
def _put(shapes, x, index, source, accumulate=False):
    d = dt(shapes)
    flat = jnp.reshape(as_dtype(x, d), (-1,)).at[jnp.reshape(index, (-1,))]
    values = jnp.reshape(as_dtype(source, d), (-1,))
    return (flat.add(values) if accumulate else flat.set(values)).reshape(jnp.shape(x))


@op("take")
def _take(shapes, x, index):
    return jnp.reshape(x, (-1,))[index]


@op("masked_scatter")
def _masked_scatter(shapes, x, mask, source):
    """``source``'s leading elements, in order, where ``mask`` is true (its running count
    says which element each true position takes)."""
    d = dt(shapes)
    x, mask = jnp.broadcast_arrays(as_dtype(x, d), mask)
    if jnp.size(source) == 0:  # nothing to take: torch requires the mask to be all false
        return x
    flat = jnp.reshape(mask, (-1,))
    taken = jnp.cumsum(flat) - 1
    values = jnp.reshape(as_dtype(source, d), (-1,))[jnp.clip(taken, 0, None)]
    return jnp.where(mask, jnp.reshape(values, x.shape), x)


@op("nonzero_static")
def _nonzero_static(shapes, x, *, size, fill_value=-1):
    if x.ndim == 0:  # torch: one row of no coordinates when the number is nonzero
        return jnp.zeros((size, 0), jnp.int64)
    if x.size == 0:  # jnp.nonzero pads an empty array's rows with 0, torch with fill_value
        return jnp.full((size, x.ndim), fill_value, jnp.int64)
    found = jnp.nonzero(x, size=size, fill_value=fill_value)
    return jnp.stack(found, axis=1).astype(jnp.int64)


# Results sized by the data (their sizes, read on the host by the lazy device's shape
# inference, are in the graph's key: a graph compiled for its own sizes) ------------------


@op("nonzero", reads_sizes=True)
def _nonzero(shapes, x):
    count = sizes(shapes)[0]
    if x.ndim == 0:
        return jnp.zeros((count, 0), jnp.int64)
    return jnp.stack(jnp.nonzero(x, size=count), axis=1).astype(jnp.int64)


@op("masked_select", reads_sizes=True)
def _masked_select(shapes, x, mask):
    x, mask = jnp.broadcast_arrays(x, mask)
    where = jnp.nonzero(jnp.reshape(mask, (-1,)), size=sizes(shapes)[0])
    return jnp.reshape(x, (-1,))[where]


@op("diagonal_scatter")
def _diagonal_scatter(shapes, x, src, offset=0, dim1=0, dim2=1):
    d = dt(shapes)
    x, src = as_dtype(x, d), as_dtype(src, d)
    dim1, dim2 = dim1 % x.ndim, dim2 % x.ndim
    count = src.shape[-1]
    steps = jnp.arange(count)
    rows, columns = (steps - min(offset, 0)), (steps + max(offset, 0))
    moved = jnp.moveaxis(x, (dim1, dim2), (-2, -1))
    moved = moved.at[..., rows, columns].set(src)
    return jnp.moveaxis(moved, (-2, -1), (dim1, dim2))
