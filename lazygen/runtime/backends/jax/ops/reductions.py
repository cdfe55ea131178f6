"""Reductions of the jax backend's table (sums, means, extrema, norms, variances with a
correction, cumulative ops): apart because they share torch's dim rules (``reduce_dims``)
and its 0-dim conventions."""

from __future__ import annotations

import math
from types import MappingProxyType

import jax
import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op, reduce_dims

# Reductions ------------------------------------------------------------------------------


@op("sum", "sum.dim_IntList")
def _sum(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, (list, tuple, int)) and dim is not None:  # sum(x, dtype=)
        dim = None
    d = dt(shapes)
    return jnp.sum(as_dtype(x, d), axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("mean", "mean.dim")
def _mean(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, (list, tuple, int)) and dim is not None:
        dim = None
    d = dt(shapes)
    return jnp.mean(as_dtype(x, d), axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("prod", "prod.dim_int")
def _prod(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, int):
        dim = None
    d = dt(shapes)
    return jnp.prod(as_dtype(x, d), axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("amax")
def _amax(shapes, x, dim=(), keepdim=False):
    return jnp.max(x, axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("amin")
def _amin(shapes, x, dim=(), keepdim=False):
    return jnp.min(x, axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("max")
def _max_all(shapes, x):
    return jnp.max(x)


@op("min")
def _min_all(shapes, x):
    return jnp.min(x)


@op("all", "all.dim", "all.dims")
def _all(shapes, x, dim=None, keepdim=False):
    return jnp.all(x, axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("any", "any.dim", "any.dims")
def _any(shapes, x, dim=None, keepdim=False):
    return jnp.any(x, axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("argmax")
def _argmax(shapes, x, dim=None, keepdim=False):
    if dim is None or x.ndim == 0:
        return jnp.argmax(x.reshape(-1)).reshape((1,) * x.ndim if keepdim else ())
    return jnp.argmax(x, axis=dim, keepdims=keepdim)


@op("argmin")
def _argmin(shapes, x, dim=None, keepdim=False):
    if dim is None or x.ndim == 0:
        return jnp.argmin(x.reshape(-1)).reshape((1,) * x.ndim if keepdim else ())
    return jnp.argmin(x, axis=dim, keepdims=keepdim)


@op("cumsum")
def _cumsum(shapes, x, dim, dtype=None):
    return jnp.cumsum(as_dtype(x, dt(shapes)), axis=dim)


# More of the op list (reductions with a correction, norms, scatters into slices...) -------


@op("linalg_vector_norm")
def _vector_norm(shapes, x, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    d = dt(shapes)
    x = jnp.abs(x).astype(d)
    axes = reduce_dims(dim, x.ndim)
    if x.size == 0:  # every norm of nothing is 0 (torch raises for the inf norms itself)
        return jnp.zeros_like(jnp.sum(x, axis=axes, keepdims=keepdim))
    if isinstance(ord, (int, float)):  # a number known when lowering
        if ord == float("inf"):
            return jnp.max(x, axis=axes, keepdims=keepdim, initial=0.0)
        if ord == float("-inf"):
            return jnp.min(x, axis=axes, keepdims=keepdim)
        if ord == 0:
            return jnp.sum((x != 0).astype(d), axis=axes, keepdims=keepdim)
        if ord == 1:
            return jnp.sum(x, axis=axes, keepdims=keepdim)
        if ord == 2:
            return jnp.sqrt(jnp.sum(x * x, axis=axes, keepdims=keepdim))
        return jnp.sum(x**ord, axis=axes, keepdims=keepdim) ** (1.0 / ord)
    # a traced order (a graph input): every form, the one it names chosen
    p = jnp.asarray(ord, d)
    forms = [
        (p == jnp.inf, jnp.max(x, axis=axes, keepdims=keepdim, initial=0.0)),
        (p == -jnp.inf, jnp.min(x, axis=axes, keepdims=keepdim)),
        (p == 0, jnp.sum((x != 0).astype(d), axis=axes, keepdims=keepdim)),
        (p == 1, jnp.sum(x, axis=axes, keepdims=keepdim)),
        (p == 2, jnp.sqrt(jnp.sum(x * x, axis=axes, keepdims=keepdim))),
    ]
    result = jnp.sum(x**p, axis=axes, keepdims=keepdim) ** (1 / p)
    for chosen, value in reversed(forms):
        result = jnp.where(chosen, value, result)
    return result


def _real_or_complex(x, d):
    """``x`` in ``d``, or as it is when complex (a variance of complex values is real)."""
    return x if jnp.iscomplexobj(x) else as_dtype(x, d)


def _moments(x, dim, correction, keepdim):
    axes = reduce_dims(dim, x.ndim)
    n = math.prod(x.shape[a] for a in axes) if axes else 1
    mean = jnp.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    squares = (centred * jnp.conj(centred)).real  # |x - mean|^2, real for complex x
    c = 1 if correction is None else correction
    var = jnp.sum(squares, axis=axes, keepdims=keepdim) / jnp.maximum(n - c, 0)
    return var, (mean if keepdim else jnp.squeeze(mean, axis=axes))


@op("var.correction")
def _var(shapes, x, dim=None, *, correction=None, keepdim=False):
    return _moments(_real_or_complex(x, dt(shapes)), dim, correction, keepdim)[0]


@op("std.correction")
def _std(shapes, x, dim=None, *, correction=None, keepdim=False):
    return jnp.sqrt(_moments(_real_or_complex(x, dt(shapes)), dim, correction, keepdim)[0])


@op("var_mean.correction")
def _var_mean(shapes, x, dim=None, *, correction=None, keepdim=False):
    return _moments(as_dtype(x, dt(shapes, 1)), dim, correction, keepdim)


@op("std_mean.correction")
def _std_mean(shapes, x, dim=None, *, correction=None, keepdim=False):
    var, mean = _moments(as_dtype(x, dt(shapes, 1)), dim, correction, keepdim)
    return jnp.sqrt(var), mean


@op("logsumexp")
def _logsumexp(shapes, x, dim, keepdim=False):
    d = dt(shapes)
    return jax.nn.logsumexp(as_dtype(x, d), axis=reduce_dims(dim, jnp.ndim(x)), keepdims=keepdim)


@op("nansum")
def _nansum(shapes, x, dim=None, keepdim=False, dtype=None):
    d = dt(shapes)
    return jnp.nansum(as_dtype(x, d), axis=reduce_dims(dim, x.ndim), keepdims=keepdim)


@op("cumprod")
def _cumprod(shapes, x, dim, dtype=None):
    d = dt(shapes)
    if jnp.ndim(x) == 0:
        return as_dtype(x, d)
    return jnp.cumprod(as_dtype(x, d), axis=dim)


@op("histc")
def _histc(shapes, x, bins=100, min=0, max=0):  # noqa: A002 - aten's argument names
    """Counts in ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0;
    widened by 1 each way when that is one number); values at ``max`` count in the last
    bin, values outside none."""
    d = dt(shapes)
    x = jnp.reshape(x, (-1,)).astype(d)
    low, high = jnp.asarray(min, d), jnp.asarray(max, d)
    if x.size:
        data = (low == 0) & (high == 0)
        low, high = jnp.where(data, jnp.min(x), low), jnp.where(data, jnp.max(x), high)
    low, high = jnp.where(low == high, low - 1, low), jnp.where(low == high, high + 1, high)
    index = jnp.floor((x - low) * bins / (high - low)).astype(jnp.int64)
    index = jnp.where(x == high, bins - 1, index)
    inside = (x >= low) & (x <= high)
    return jnp.zeros((bins,), d).at[jnp.where(inside, index, bins)].add(1, mode="drop")


_SEGMENT_START = MappingProxyType({"sum": 0.0, "prod": 1.0, "max": -jnp.inf, "min": jnp.inf})


@op("segment_reduce")
def _segment_reduce(shapes, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                    unsafe=False, initial=None):  # fmt: skip
    """Reductions of consecutive segments along ``axis`` (given by ``lengths``, or by
    ``offsets`` into it), each starting from ``initial`` (a mean divides that sum by the
    length); an empty segment holds ``initial``, else torch's: 0 for a sum, 1 for a
    product, NaN for a mean, -inf / inf for a maximum / minimum. ``axis`` is the last dim
    of ``lengths``: its leading dims are the data's, each row with segments of its own."""
    d = dt(shapes)
    kind = "sum" if reduce == "mean" else reduce
    start = _SEGMENT_START[kind] if initial is None else initial

    def reduced(x, lengths):  # one row: segments along dim 0
        segment = _segment_of(x, lengths)
        at = jnp.full((lengths.shape[0], *x.shape[1:]), start, d).at[segment]
        out = {"sum": at.add, "prod": at.multiply, "max": at.max, "min": at.min}[kind](
            x, mode="drop"
        )
        if reduce != "mean":
            return out
        counts = jnp.reshape(lengths, (-1,) + (1,) * (x.ndim - 1)).astype(d)
        return jnp.where(counts > 0, out / counts, jnp.nan if initial is None else initial)

    return _per_row(reduced, as_dtype(data, d), _lengths(lengths, offsets), axis)


def _lengths(lengths, offsets):
    return offsets[..., 1:] - offsets[..., :-1] if lengths is None else lengths


def _segment_of(x, lengths):
    """Each element's segment along dim 0 (past the last: ``len(lengths)``)."""
    return jnp.searchsorted(jnp.cumsum(lengths), jnp.arange(x.shape[0]), side="right")


def _per_row(fn, *operands_and_axis):
    """``fn(data_row, lengths_row)`` mapped over ``lengths``' leading dims (the data's
    first ``axis`` dims); each row's segments along its dim 0. Operands before the lengths
    are data-shaped."""
    *data, lengths, axis = operands_and_axis
    for _ in range(axis % data[0].ndim):
        fn = jax.vmap(fn)
    return fn(*data, lengths)


@op("_segment_reduce_backward")
def _segment_reduce_backward(shapes, grad, output, data, reduce, *, lengths=None, offsets=None,
                             axis=0, initial=None):  # fmt: skip
    """The gradient of ``segment_reduce`` for ``data``: the pullback of the lowering above
    (a maximum's or minimum's gradient split evenly among the elements equal to it); a
    product's is the product of the segment's other elements (XLA differentiates no
    product scatter), as torch's kernel computes it."""
    d = dt(shapes)
    x, g = as_dtype(data, d), as_dtype(grad, d)
    if reduce == "prod":
        start = 1.0 if initial is None else initial
        prod = lambda x, g, lengths: _prod_backward(x, g, lengths, start)  # noqa: E731
        return _per_row(prod, x, g, _lengths(lengths, offsets), axis)

    def forward(x):
        return _segment_reduce(shapes, x, reduce, lengths=lengths, offsets=offsets, axis=axis,
                               initial=initial)  # fmt: skip

    return jax.vjp(forward, x)[1](g)[0]


def _prod_backward(x, g, lengths, start):
    """One row's gradient of a product: its segment's incoming gradient times the product
    of the segment's other elements (and ``initial``): the product of the nonzero ones over
    the element when the segment holds no zero, that product for its only zero, else 0."""
    count = lengths.shape[0]
    segment = _segment_of(x, lengths)
    product = jnp.full((count, *x.shape[1:]), start, x.dtype).at[segment]
    product = product.multiply(jnp.where(x == 0, 1, x), mode="drop")
    zeros = jnp.zeros(product.shape, jnp.int64).at[segment]
    zeros = zeros.add((x == 0).astype(jnp.int64), mode="drop")
    safe = jnp.clip(segment, 0, count - 1)  # an element past the segments: dropped above
    total, only_zero = product[safe], (zeros[safe] == 1) & (x == 0)
    others = jnp.where(zeros[safe] == 0, total / jnp.where(x == 0, 1, x), 0)
    others = jnp.where(only_zero, total, others)
    inside = (segment < count).reshape((-1,) + (1,) * (x.ndim - 1))
    return jnp.where(inside, g[safe] * others, 0)


@op("hash_tensor")
def _hash_tensor(shapes, x, dim=(), *, keepdim=False, mode=0):
    """torch's mode 0: the XOR of the elements' bits as float64 (floating types) or int64."""
    wide = jnp.float64 if jnp.issubdtype(x.dtype, jnp.floating) else jnp.int64
    bits = lax.bitcast_convert_type(x.astype(wide), jnp.uint64)
    axes = reduce_dims(dim, x.ndim)
    hashed = lax.reduce(bits, jnp.uint64(0), lax.bitwise_xor, axes)
    return jnp.expand_dims(hashed, axes) if keepdim else hashed
