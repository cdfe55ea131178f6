"""Reductions of the jax backend's table (sums, means, extrema, norms, variances with a
correction, cumulative ops): apart because they share torch's dim rules (``reduce_dims``)
and its 0-dim conventions."""

from __future__ import annotations

import math
from types import MappingProxyType

import jax
import jax.numpy as jnp
from jax import lax

from .table import as_dtype, dt, op, reduce_dims

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
    product, NaN for a mean, -inf / inf for a maximum / minimum."""
    d = dt(shapes)
    data = jnp.moveaxis(as_dtype(data, d), axis % data.ndim, 0)
    if lengths is None:
        lengths = offsets[..., 1:] - offsets[..., :-1]
    lengths = jnp.reshape(lengths, (-1,))
    count = lengths.shape[0]
    ends = jnp.cumsum(lengths)
    segment = jnp.searchsorted(ends, jnp.arange(data.shape[0]), side="right")
    kind = "sum" if reduce == "mean" else reduce
    start = _SEGMENT_START[kind] if initial is None else initial
    at = jnp.full((count, *data.shape[1:]), start, d).at[segment]
    out = {"sum": at.add, "prod": at.multiply, "max": at.max, "min": at.min}[kind](
        data, mode="drop"
    )
    if reduce == "mean":
        counts = jnp.reshape(lengths, (-1,) + (1,) * (data.ndim - 1)).astype(d)
        out = jnp.where(counts > 0, out / counts, jnp.nan if initial is None else initial)
    return jnp.moveaxis(out, 0, axis % data.ndim)


@op("hash_tensor")
def _hash_tensor(shapes, x, dim=(), *, keepdim=False, mode=0):
    """torch's mode 0: the XOR of the elements' bits as float64 (floating types) or int64."""
    wide = jnp.float64 if jnp.issubdtype(x.dtype, jnp.floating) else jnp.int64
    bits = lax.bitcast_convert_type(x.astype(wide), jnp.uint64)
    axes = reduce_dims(dim, x.ndim)
    hashed = lax.reduce(bits, jnp.uint64(0), lax.bitwise_xor, axes)
    return jnp.expand_dims(hashed, axes) if keepdim else hashed
