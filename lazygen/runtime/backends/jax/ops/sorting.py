"""Order-based ops of the jax backend's table: values with their indices along a dim
(``max.dim``, ``sort``, ``topk``, ``kthvalue``, medians, running maxima), searches in sorted
sequences; apart because each returns positions as well as values, with torch's rules for
ties and NaN (NaN sorts above every number; a running maximum keeps the latest tie).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op


def _keep(values, indices, dim, keepdim):
    if keepdim:
        return values, indices
    return jnp.squeeze(values, dim), jnp.squeeze(indices, dim)


def _extreme(pick, x, dim, keepdim):
    if x.ndim == 0:
        return x, jnp.zeros((), jnp.int64)
    dim %= x.ndim
    index = jnp.expand_dims(pick(x, axis=dim), dim).astype(jnp.int64)
    return _keep(jnp.take_along_axis(x, index, axis=dim), index, dim, keepdim)


@op("max.dim")
def _max_dim(shapes, x, dim, keepdim=False):
    return _extreme(jnp.argmax, x, dim, keepdim)  # NaN: the first NaN, as torch


@op("min.dim")
def _min_dim(shapes, x, dim, keepdim=False):
    return _extreme(jnp.argmin, x, dim, keepdim)


def _order(x, dim, descending):
    """Stable sorting permutation along ``dim``; NaN above every number (torch's order)."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.argsort(x, axis=dim, stable=True, descending=descending)
    nan = jnp.isnan(x)
    # descending: NaN first, then numbers from the largest; ties in input order either way
    number = jnp.where(nan, 0, x)
    keys = (~nan, -number) if descending else (nan, number)
    iota = lax.broadcasted_iota(jnp.int64, x.shape, dim)
    return lax.sort((*keys, iota), dimension=dim, num_keys=2, is_stable=True)[-1]


def _sorted(x, dim, descending):
    if x.ndim == 0:
        return x, jnp.zeros((), jnp.int64)
    dim %= x.ndim
    index = _order(x, dim, descending).astype(jnp.int64)
    return jnp.take_along_axis(x, index, axis=dim), index


@op("sort")
def _sort(shapes, x, dim=-1, descending=False):
    return _sorted(x, dim, descending)


@op("sort.stable")
def _sort_stable(shapes, x, *, stable=None, dim=-1, descending=False):
    return _sorted(x, dim, descending)


@op("topk")
def _topk(shapes, x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - aten's name
    values, index = _sorted(x, dim, largest)
    if x.ndim == 0:
        return values, index
    dim %= x.ndim
    return lax.slice_in_dim(values, 0, k, axis=dim), lax.slice_in_dim(index, 0, k, axis=dim)


@op("kthvalue")
def _kthvalue(shapes, x, k, dim=-1, keepdim=False):
    values, index = _sorted(x, dim, False)
    if x.ndim == 0:
        return values, index
    dim %= x.ndim
    picked = (lax.slice_in_dim(t, k - 1, k, axis=dim) for t in (values, index))
    return _keep(*picked, dim, keepdim)


def _median(x, dim, ignore_nan):
    """The lower median along ``dim`` and its index: of the numbers only (``ignore_nan``;
    NaN when there are none), else NaN wherever the dim holds one."""
    values, index = _sorted(x, dim, False)
    nan = jnp.isnan(x) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.zeros(x.shape, bool)
    count = x.shape[dim] - jnp.sum(nan, axis=dim, keepdims=True)
    if ignore_nan:
        middle = jnp.maximum(count - 1, 0) // 2
    else:  # NaN sorts last: a dim holding one has the first NaN as its median
        middle = jnp.where(count < x.shape[dim], count, (x.shape[dim] - 1) // 2)
    middle = middle.astype(jnp.int64)
    return jnp.take_along_axis(values, middle, dim), jnp.take_along_axis(index, middle, dim)


def _median_impl(ignore_nan: bool):
    def all_(shapes, x):
        values, _ = _median(jnp.reshape(x, (-1,)), 0, ignore_nan)
        return jnp.reshape(values, ())

    def along(shapes, x, dim, keepdim=False):
        if x.ndim == 0:
            return x, jnp.zeros((), jnp.int64)
        dim %= x.ndim
        return _keep(*_median(x, dim, ignore_nan), dim, keepdim)

    return all_, along


for _name, _ignore in (("median", False), ("nanmedian", True)):
    _all, _along = _median_impl(_ignore)
    op(_name)(_all)
    op(f"{_name}.dim")(_along)


def _running(better):
    """``cummax`` / ``cummin``: the running extreme and the latest index reaching it; a NaN
    stays the extreme from where it appears (torch's rule)."""

    def combine(a, b):
        (va, ia), (vb, ib) = a, b
        take_b = better(vb, va) | (vb == va)
        if jnp.issubdtype(va.dtype, jnp.floating):
            take_b = jnp.isnan(vb) | (~jnp.isnan(va) & take_b)
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    def impl(shapes, x, dim):
        if x.ndim == 0:
            return x, jnp.zeros((), jnp.int64)
        dim %= x.ndim
        index = lax.broadcasted_iota(jnp.int64, x.shape, dim)
        return lax.associative_scan(combine, (x, index), axis=dim)

    return impl


op("cummax")(_running(jnp.greater))
op("cummin")(_running(jnp.less))


@op("logcumsumexp")
def _logcumsumexp(shapes, x, dim):
    x = as_dtype(x, dt(shapes))
    if x.ndim == 0:
        return x
    return lax.cumlogsumexp(x, axis=dim % x.ndim)


def _search(sorted_sequence, values, right: bool, out_int32: bool):
    side = "right" if right else "left"
    if sorted_sequence.ndim <= 1:
        found = jnp.searchsorted(sorted_sequence, values, side=side)
    else:  # one sorted row per leading index
        lead = sorted_sequence.shape[:-1]
        rows = jnp.reshape(sorted_sequence, (-1, sorted_sequence.shape[-1]))
        queries = jnp.reshape(values, (rows.shape[0], -1))
        found = jax.vmap(lambda r, q: jnp.searchsorted(r, q, side=side))(rows, queries)
        found = jnp.reshape(found, lead + values.shape[len(lead) :])
    return found.astype(jnp.int32 if out_int32 else jnp.int64)


@op("searchsorted.Tensor", "searchsorted.Scalar")
def _searchsorted(shapes, seq, values, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        seq = jnp.take_along_axis(seq, sorter, axis=-1)
    return _search(seq, jnp.asarray(values), right or side == "right", out_int32)


@op("bucketize.Tensor", "bucketize.Scalar")
def _bucketize(shapes, x, boundaries, *, out_int32=False, right=False):
    return _search(boundaries, jnp.asarray(x), right, out_int32)


@op("mode")
def _mode(shapes, x, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and
    the index of its last occurrence, as torch's CPU kernel returns them."""
    if x.ndim == 0:
        return x, jnp.zeros((), jnp.int64)
    dim %= x.ndim
    moved = jnp.moveaxis(x, dim, -1)
    counts = jnp.sum(moved[..., :, None] == moved[..., None, :], axis=-1)
    frequent = counts == jnp.max(counts, axis=-1, keepdims=True)
    value = jnp.min(jnp.where(frequent, moved, jnp.inf if _floating(x) else _largest(x)), -1)
    positions = jnp.arange(moved.shape[-1])
    last = jnp.max(jnp.where(moved == value[..., None], positions, -1), axis=-1)
    value, last = jnp.expand_dims(value, -1), jnp.expand_dims(last, -1).astype(jnp.int64)
    return _keep(jnp.moveaxis(value, -1, dim), jnp.moveaxis(last, -1, dim), dim, keepdim)


def _floating(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.floating)


def _largest(x):
    return True if x.dtype == jnp.bool_ else jnp.iinfo(x.dtype).max
