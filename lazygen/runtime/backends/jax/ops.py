"""The jax backend's op table: aten overloads of the built-in op list as ``jax.numpy`` /
``jax.lax`` code, one function per overload, registered with ``@op("name.overload")``.

Every implementation is called as ``impl(shapes, *args, **kwargs)`` with the aten schema's
arguments (tensors as JAX values, numbers as Python numbers or traced scalars, attributes
as Python values) and ``shapes``, the node's outputs as shape inference gave them. Results
are cast to those dtypes by the caller (``lowering.program_function``), so an
implementation computes in ``dt(shapes)``, the result's dtype, instead of re-implementing
torch's type promotion. Ops whose torch semantics JAX does not give (integer division by
zero raises in torch; the table has no entry, or ``refusals.py`` refuses the call) run
eagerly instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType

import jax
import jax.numpy as jnp
from jax import lax

from ... import state
from .dtypes import convert, to_jax

JAX_OPS: dict[str, Callable] = {}


def op(*names: str):
    """Register the decorated function under each table key (``add.Tensor``, ``relu``)."""

    def register(fn):
        for name in names:
            JAX_OPS[name] = fn
        return fn

    return register


def dt(shapes, index: int = 0):
    """The JAX dtype of output ``index``."""
    return to_jax(shapes[index].dtype)


def sizes(shapes, index: int = 0) -> tuple[int, ...]:
    return tuple(shapes[index].sizes)


def _as(x, dtype):
    return convert(x, dtype)


def _dims(dim, ndim: int):
    """A reduction's dims: all for None or ``[]``, else normalised."""
    if ndim == 0:  # torch takes dim 0 and -1 of a 0-dim tensor: a no-op
        return ()
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return tuple(sorted(d % ndim for d in dim))


def _along(fn):
    """``fn(x, dim, ...)`` taking a 0-dim ``x`` as torch does: as one element along dim 0."""

    def impl(shapes, x, dim, *args, **kwargs):
        if jnp.ndim(x) == 0:
            out = fn(shapes, jnp.reshape(x, (1,)), 0, *args, **kwargs)
            return jnp.reshape(out, sizes(shapes))
        return fn(shapes, x, dim, *args, **kwargs)

    return impl


# Elementwise ---------------------------------------------------------------------------

_UNARY = MappingProxyType(
    {
        "abs": jnp.abs,
        "neg": jnp.negative,
        "exp": jnp.exp,
        "exp2": jnp.exp2,
        "expm1": jnp.expm1,
        "log": jnp.log,
        "log2": jnp.log2,
        "log10": jnp.log10,
        "log1p": jnp.log1p,
        "sqrt": jnp.sqrt,
        "rsqrt": lax.rsqrt,
        "reciprocal": jnp.reciprocal,
        "sin": jnp.sin,
        "cos": jnp.cos,
        "tan": jnp.tan,
        "asin": jnp.arcsin,
        "acos": jnp.arccos,
        "atan": jnp.arctan,
        "sinh": jnp.sinh,
        "cosh": jnp.cosh,
        "tanh": jnp.tanh,
        "asinh": jnp.arcsinh,
        "acosh": jnp.arccosh,
        "atanh": jnp.arctanh,
        "sigmoid": jax.nn.sigmoid,
        "erf": jax.scipy.special.erf,
        "erfc": jax.scipy.special.erfc,
        "floor": jnp.floor,
        "ceil": jnp.ceil,
        "trunc": jnp.trunc,
        "frac": lambda x: x - jnp.trunc(x),
        "sign": jnp.sign,
        "sgn": jnp.sign,
        "relu": jax.nn.relu,
        "silu": jax.nn.silu,
        "square": jnp.square,
        "deg2rad": jnp.deg2rad,
        "rad2deg": jnp.rad2deg,
    }
)


def _unary(fn):
    return lambda shapes, x: fn(_as(x, dt(shapes)))


for _name, _fn in _UNARY.items():
    JAX_OPS[_name] = _unary(_fn)


@op("round")
def _round(shapes, x):
    return jnp.round(_as(x, dt(shapes)))  # half to even, as torch


@op("round.decimals")
def _round_decimals(shapes, x, decimals=0):
    scale = 10.0**decimals
    return jnp.round(_as(x, dt(shapes)) * scale) / scale


@op("logical_not")
def _logical_not(shapes, x):
    return jnp.logical_not(x)


@op("bitwise_not")
def _bitwise_not(shapes, x):
    return jnp.invert(_as(x, dt(shapes)))


@op("isnan")
def _isnan(shapes, x):
    return jnp.isnan(x)


@op("isinf")
def _isinf(shapes, x):
    return jnp.isinf(x)


@op("isneginf")
def _isneginf(shapes, x):
    return jnp.isneginf(x)


@op("isposinf")
def _isposinf(shapes, x):
    return jnp.isposinf(x)


@op("isfinite")
def _isfinite(shapes, x):
    return jnp.isfinite(x)


@op("gelu")
def _gelu(shapes, x, approximate="none"):
    return jax.nn.gelu(_as(x, dt(shapes)), approximate=approximate == "tanh")


@op("gelu_backward")
def _gelu_backward(shapes, grad, x, approximate="none"):
    d = dt(shapes)
    x = _as(x, d)
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x**3)
        t = jnp.tanh(inner)
        derivative = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    else:
        cdf = 0.5 * (1 + jax.scipy.special.erf(x / math.sqrt(2)))
        pdf = jnp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        derivative = cdf + x * pdf
    return _as(grad, d) * derivative


@op("tanh_backward")
def _tanh_backward(shapes, grad, output):
    d = dt(shapes)
    output = _as(output, d)
    return _as(grad, d) * (1 - output * output)


@op("sigmoid_backward")
def _sigmoid_backward(shapes, grad, output):
    d = dt(shapes)
    output = _as(output, d)
    return _as(grad, d) * (1 - output) * output


@op("silu_backward")
def _silu_backward(shapes, grad, x):
    d = dt(shapes)
    x = _as(x, d)
    s = jax.nn.sigmoid(x)
    return _as(grad, d) * s * (1 + x * (1 - s))


@op("threshold_backward")
def _threshold_backward(shapes, grad, x, threshold):
    return jnp.where(x <= threshold, jnp.zeros((), dt(shapes)), _as(grad, dt(shapes)))


@op("leaky_relu")
def _leaky_relu(shapes, x, negative_slope=0.01):
    x = _as(x, dt(shapes))
    return jnp.where(x > 0, x, x * negative_slope)


@op("hardtanh")
def _hardtanh(shapes, x, min_val=-1, max_val=1):
    return jnp.clip(_as(x, dt(shapes)), min_val, max_val)


def _binary(fn):
    def impl(shapes, a, b):
        d = dt(shapes)
        return fn(_as(a, d), _as(b, d))

    return impl


for _name, _fn in {
    "mul": jnp.multiply,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "atan2": jnp.arctan2,
    "hypot": jnp.hypot,
    "copysign": jnp.copysign,
}.items():
    JAX_OPS[f"{_name}.Tensor"] = _binary(_fn)
    JAX_OPS[f"{_name}.Scalar"] = _binary(_fn)
    JAX_OPS[_name] = _binary(_fn)


@op("add.Tensor", "add.Scalar")
def _add(shapes, a, b, alpha=1):
    d = dt(shapes)
    b = _as(b, d)
    if not (type(alpha) in (int, float) and alpha == 1):
        b = b * _as(alpha, d)
    return _as(a, d) + b


@op("sub.Tensor", "sub.Scalar")
def _sub(shapes, a, b, alpha=1):
    d = dt(shapes)
    b = _as(b, d)
    if not (type(alpha) in (int, float) and alpha == 1):
        b = b * _as(alpha, d)
    return _as(a, d) - b


@op("rsub.Tensor", "rsub.Scalar")
def _rsub(shapes, a, b, alpha=1):
    return _sub(shapes, b, a, alpha)


@op("div.Tensor", "div.Scalar")
def _div(shapes, a, b):
    d = dt(shapes)
    return _as(a, d) / _as(b, d)


@op("div.Tensor_mode", "div.Scalar_mode")
def _div_mode(shapes, a, b, rounding_mode=None):
    d = dt(shapes)
    q = _as(a, d) / _as(b, d)
    if rounding_mode == "trunc":
        return jnp.trunc(q)
    if rounding_mode == "floor":
        return jnp.floor(q)
    return q


@op("pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar")
def _pow(shapes, a, b):
    d = dt(shapes)
    if type(b) is int and b == 2:
        a = _as(a, d)
        return a * a
    return jnp.power(_as(a, d), _as(b, d))


@op("remainder.Tensor", "remainder.Scalar")
def _remainder(shapes, a, b):
    d = dt(shapes)
    return jnp.remainder(_as(a, d), _as(b, d))


@op("fmod.Tensor", "fmod.Scalar")
def _fmod(shapes, a, b):
    d = dt(shapes)
    return jnp.fmod(_as(a, d), _as(b, d))


@op("xlogy.Tensor")
def _xlogy(shapes, a, b):
    d = dt(shapes)
    return jax.scipy.special.xlogy(_as(a, d), _as(b, d))


@op("lerp.Scalar", "lerp.Tensor")
def _lerp(shapes, start, end, weight):
    d = dt(shapes)
    start, end, weight = _as(start, d), _as(end, d), _as(weight, d)
    diff = end - start
    # torch's formula: exact at both ends
    return jnp.where(jnp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


@op("addcmul")
def _addcmul(shapes, x, t1, t2, value=1):
    d = dt(shapes)
    return _as(x, d) + _as(value, d) * _as(t1, d) * _as(t2, d)


@op("addcdiv")
def _addcdiv(shapes, x, t1, t2, value=1):
    d = dt(shapes)
    return _as(x, d) + _as(value, d) * (_as(t1, d) / _as(t2, d))


def _compare(fn):
    def impl(shapes, a, b):
        a, b = jnp.asarray(a), jnp.asarray(b)
        common = jnp.result_type(a, b)
        return fn(a.astype(common), b.astype(common))

    return impl


for _name, _fn in {
    "eq": jnp.equal,
    "ne": jnp.not_equal,
    "lt": jnp.less,
    "le": jnp.less_equal,
    "gt": jnp.greater,
    "ge": jnp.greater_equal,
}.items():
    JAX_OPS[f"{_name}.Tensor"] = _compare(_fn)
    JAX_OPS[f"{_name}.Scalar"] = _compare(_fn)

for _name, _fn in {
    "logical_and": jnp.logical_and,
    "logical_or": jnp.logical_or,
    "logical_xor": jnp.logical_xor,
}.items():
    JAX_OPS[_name] = lambda shapes, a, b, _fn=_fn: _fn(a, b)

for _name, _fn in {
    "bitwise_and": jnp.bitwise_and,
    "bitwise_or": jnp.bitwise_or,
    "bitwise_xor": jnp.bitwise_xor,
}.items():
    JAX_OPS[f"{_name}.Tensor"] = _binary(_fn)
    JAX_OPS[f"{_name}.Scalar"] = _binary(_fn)


@op("clamp", "clamp.Tensor")
def _clamp(shapes, x, min=None, max=None):  # noqa: A002 - aten's argument names
    d = dt(shapes)
    x = _as(x, d)
    if min is not None:
        x = jnp.where(jnp.isnan(x), x, jnp.maximum(x, _as(min, d)))
    if max is not None:
        x = jnp.where(jnp.isnan(x), x, jnp.minimum(x, _as(max, d)))
    return x


@op("clamp_min", "clamp_min.Tensor")
def _clamp_min(shapes, x, min):  # noqa: A002
    return _clamp(shapes, x, min=min)


@op("clamp_max", "clamp_max.Tensor")
def _clamp_max(shapes, x, max):  # noqa: A002
    return _clamp(shapes, x, max=max)


@op("where.self")
def _where(shapes, condition, a, b):
    d = dt(shapes)
    return jnp.where(condition, _as(a, d), _as(b, d))


@op("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(shapes, x, mask, value):
    d = dt(shapes)
    return jnp.where(mask, _as(value, d), _as(x, d))


# Copies, casts, factories ---------------------------------------------------------------


@op("_to_copy", "clone", "alias_copy", "lift_fresh_copy", "detach_copy")
def _copy_as(shapes, x, *args, **kwargs):
    return _as(x, dt(shapes))


@op("conj_physical")
def _conj_physical(shapes, x):
    return jnp.conj(_as(x, dt(shapes)))


@op("copy")
def _copy(shapes, self, src, non_blocking=False):
    return jnp.broadcast_to(_as(src, dt(shapes)), sizes(shapes))


@op("fill.Scalar", "fill.Tensor")
def _fill(shapes, x, value):
    return jnp.full(sizes(shapes), _as(value, dt(shapes)))


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
    return jnp.full(sizes(shapes), _as(fill_value, dt(shapes)))


@op("new_full")
def _new_full(shapes, x, size, fill_value, **kwargs):
    return jnp.full(sizes(shapes), _as(fill_value, dt(shapes)))


@op("scalar_tensor")
def _scalar_tensor(shapes, value, **kwargs):
    return _as(value, dt(shapes))


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


@op("t_copy")
def _t(shapes, x):
    return x.T if x.ndim == 2 else x


@op("transpose_copy.int")
def _transpose(shapes, x, dim0, dim1):
    return jnp.swapaxes(x, dim0, dim1) if x.ndim else x


@op("select_copy.int")
def _select(shapes, x, dim, index):
    dim %= x.ndim
    return lax.index_in_dim(x, index % x.shape[dim], dim, keepdims=False)


@op("slice_copy.Tensor")
def _slice(shapes, x, dim=0, start=None, end=None, step=1):
    dim %= x.ndim
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


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


@op("unbind_copy.int")
def _unbind(shapes, x, dim=0):
    dim %= x.ndim
    return [lax.index_in_dim(x, i, dim, keepdims=False) for i in range(x.shape[dim])]


@op("split_copy.Tensor", "split_with_sizes_copy")
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
    return jnp.concatenate([_as(t, d) for t in kept], axis=dim)


@op("stack")
def _stack(shapes, tensors, dim=0):
    d = dt(shapes)
    return jnp.stack([_as(t, d) for t in tensors], axis=dim)


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


# Reductions ------------------------------------------------------------------------------


@op("sum", "sum.dim_IntList")
def _sum(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, (list, tuple, int)) and dim is not None:  # sum(x, dtype=)
        dim = None
    d = dt(shapes)
    return jnp.sum(_as(x, d), axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("mean", "mean.dim")
def _mean(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, (list, tuple, int)) and dim is not None:
        dim = None
    d = dt(shapes)
    return jnp.mean(_as(x, d), axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("prod", "prod.dim_int")
def _prod(shapes, x, dim=None, keepdim=False, dtype=None):
    if not isinstance(dim, int):
        dim = None
    d = dt(shapes)
    return jnp.prod(_as(x, d), axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("amax")
def _amax(shapes, x, dim=(), keepdim=False):
    return jnp.max(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("amin")
def _amin(shapes, x, dim=(), keepdim=False):
    return jnp.min(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("max")
def _max_all(shapes, x):
    return jnp.max(x)


@op("min")
def _min_all(shapes, x):
    return jnp.min(x)


@op("all", "all.dim", "all.dims")
def _all(shapes, x, dim=None, keepdim=False):
    return jnp.all(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("any", "any.dim", "any.dims")
def _any(shapes, x, dim=None, keepdim=False):
    return jnp.any(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("argmax")
def _argmax(shapes, x, dim=None, keepdim=False):
    if dim is None or x.ndim == 0:
        return jnp.argmax(x.reshape(-1)).reshape(sizes(shapes))
    return jnp.argmax(x, axis=dim, keepdims=keepdim)


@op("argmin")
def _argmin(shapes, x, dim=None, keepdim=False):
    if dim is None or x.ndim == 0:
        return jnp.argmin(x.reshape(-1)).reshape(sizes(shapes))
    return jnp.argmin(x, axis=dim, keepdims=keepdim)


@op("cumsum")
def _cumsum(shapes, x, dim, dtype=None):
    return jnp.cumsum(_as(x, dt(shapes)), axis=dim)


# Linear algebra --------------------------------------------------------------------------

_HIGHEST = lax.Precision.HIGHEST


@op("mm", "bmm", "matmul")
def _mm(shapes, a, b):
    d = dt(shapes)
    return jnp.matmul(_as(a, d), _as(b, d), precision=_HIGHEST)


@op("addmm")
def _addmm(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.matmul(_as(a, d), _as(b, d), precision=_HIGHEST)
    if not (type(alpha) in (int, float) and alpha == 1):
        product = product * _as(alpha, d)
    if type(beta) in (int, float):
        if beta == 0:  # torch ignores self (NaN included)
            return product
        return product + (_as(x, d) if beta == 1 else _as(x, d) * beta)
    return product + jnp.where(beta == 0, jnp.zeros((), d), _as(x, d) * _as(beta, d))


@op("dot", "vdot")
def _dot(shapes, a, b):
    d = dt(shapes)
    return jnp.dot(_as(a, d), _as(b, d), precision=_HIGHEST)


@op("mv")
def _mv(shapes, a, b):
    d = dt(shapes)
    return jnp.matmul(_as(a, d), _as(b, d), precision=_HIGHEST)


# Indexing --------------------------------------------------------------------------------


@op("index_select")
def _index_select(shapes, x, dim, index):
    return jnp.take(x, index, axis=dim)


@op("gather")
def _gather(shapes, x, dim, index, sparse_grad=False):
    if index.size == 0:  # torch takes an empty index of any number of dimensions
        return jnp.zeros(sizes(shapes), x.dtype)
    if x.ndim == 0 or index.ndim == 0:
        return jnp.reshape(jnp.reshape(x, (-1,))[jnp.reshape(index, (-1,))], sizes(shapes))
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
    return jnp.zeros(sizes(shapes), d).at[flat].add(rows)


# Normalisation and losses ----------------------------------------------------------------


@op("_softmax")
def _softmax(shapes, x, dim, half_to_float=False):
    return jax.nn.softmax(_as(x, dt(shapes)), axis=dim)


@op("_log_softmax")
def _log_softmax(shapes, x, dim, half_to_float=False):
    return jax.nn.log_softmax(_as(x, dt(shapes)), axis=dim)


@op("_softmax_backward_data")
def _softmax_backward(shapes, grad, output, dim, input_dtype):
    d = dt(shapes)
    grad, output = _as(grad, d), _as(output, d)
    return output * (grad - jnp.sum(grad * output, axis=dim, keepdims=True))


@op("_log_softmax_backward_data")
def _log_softmax_backward(shapes, grad, output, dim, input_dtype):
    d = dt(shapes)
    grad, output = _as(grad, d), _as(output, d)
    return grad - jnp.exp(output) * jnp.sum(grad, axis=dim, keepdims=True)


@op("native_layer_norm")
def _layer_norm(shapes, x, normalized_shape, weight, bias, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    stat = dt(shapes, 1)
    xf = x.astype(stat)
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=axes, keepdims=True)
    rstd = lax.rsqrt(var + eps)
    out = (xf - mean) * rstd
    if weight is not None:
        out = out * weight.astype(stat)
    if bias is not None:
        out = out + bias.astype(stat)
    return out.astype(dt(shapes)), mean, rstd


@op("native_layer_norm_backward")
def _layer_norm_backward(shapes, grad, x, normalized_shape, mean, rstd, weight, bias, mask):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    batch_axes = tuple(range(x.ndim - len(normalized_shape)))
    stat = mean.dtype
    n = math.prod(normalized_shape)
    xhat = (x.astype(stat) - mean) * rstd
    g = grad.astype(stat)
    gw = g * weight.astype(stat) if weight is not None else g
    dx = dw = db = None
    if mask[0]:
        dx = (rstd / n) * (
            n * gw
            - jnp.sum(gw, axis=axes, keepdims=True)
            - xhat * jnp.sum(gw * xhat, axis=axes, keepdims=True)
        )
    if mask[1] and weight is not None:
        dw = jnp.sum(g * xhat, axis=batch_axes)
    if mask[2] and bias is not None:
        db = jnp.sum(g, axis=batch_axes)
    return dx, dw, db


def _nll_parts(x, target, weight, ignore_index):
    """Per-element ``(-log p[target] * w, w)`` over the class axis (1, or 0 unbatched)."""
    axis = 1 if x.ndim > 1 else 0
    ignored = target == ignore_index
    safe = jnp.where(ignored, 0, target)
    picked = jnp.take_along_axis(x, jnp.expand_dims(safe, axis), axis=axis).squeeze(axis)
    w = jnp.ones_like(picked) if weight is None else jnp.take(weight, safe).astype(x.dtype)
    w = jnp.where(ignored, jnp.zeros((), x.dtype), w)
    return -picked * w, w, safe, axis


@op("nll_loss_forward")
def _nll_loss(shapes, x, target, weight, reduction, ignore_index):
    losses, w, _, _ = _nll_parts(x, target, weight, ignore_index)
    if reduction == 0:
        return losses, jnp.zeros((), x.dtype)
    total = jnp.sum(w)
    if reduction == 1:
        return jnp.sum(losses) / total, total
    return jnp.sum(losses), total


@op("nll_loss_backward")
def _nll_loss_backward(shapes, grad, x, target, weight, reduction, ignore_index, total_weight):
    _, w, safe, axis = _nll_parts(x, target, weight, ignore_index)
    scale = -w * (grad / total_weight if reduction == 1 else grad)
    out = jnp.zeros(x.shape, x.dtype)
    onehot = jax.nn.one_hot(safe, x.shape[axis], dtype=x.dtype, axis=axis)
    return out + onehot * jnp.expand_dims(scale.astype(x.dtype), axis)


# Random (seeds: ``lazygen.runtime.tracing.random_inputs``) ------------------------------------------


def _key(seed):
    return jax.random.key(jnp.asarray(seed, jnp.int64))


@op("bernoulli.p")
def _bernoulli_p(shapes, x, p=0.5, generator=None):
    draw = jax.random.bernoulli(_key(generator), p, sizes(shapes))
    return draw.astype(dt(shapes))


@op("bernoulli")
def _bernoulli(shapes, x, generator=None):
    draw = jax.random.uniform(_key(generator), sizes(shapes), x.dtype)
    return (draw < x).astype(dt(shapes))


@op("uniform")
def _uniform(shapes, x, low=0.0, high=1.0, generator=None):
    d = dt(shapes)
    return jax.random.uniform(_key(generator), sizes(shapes), d, low, high)


@op("normal_functional")
def _normal(shapes, x, mean=0.0, std=1.0, generator=None):
    d = dt(shapes)
    return mean + std * jax.random.normal(_key(generator), sizes(shapes), d)


@op("native_dropout_backward")
def _dropout_backward(shapes, grad, mask, scale):
    d = dt(shapes)
    return _as(grad, d) * _as(mask, d) * _as(scale, d)


@op("native_dropout")
def _dropout(shapes, x, p, train=None, generator=None):
    d = dt(shapes)
    if train is False or p == 0:
        return _as(x, d), jnp.ones(x.shape, jnp.bool_)
    keep = jax.random.bernoulli(_key(generator), 1 - p, x.shape)
    return jnp.where(keep, _as(x, d) / (1 - p), jnp.zeros((), d)), keep


# Attention (``lazygen.runtime.ops.attention``'s nodes, outputs as documented there) --------


def _attention_scores(query, key, mask, is_causal, scale):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = jnp.matmul(query, jnp.swapaxes(key, -1, -2), precision=_HIGHEST) * scale
    if is_causal:
        length_q, length_k = query.shape[-2], key.shape[-2]
        allowed = jnp.tril(jnp.ones((length_q, length_k), jnp.bool_))
        scores = jnp.where(allowed, scores, -jnp.inf)
    if mask is not None:
        scores = scores + mask.astype(scores.dtype)
    return scores, scale


@op("_scaled_dot_product_flash_attention_for_cpu")
def _attention(
    shapes, query, key, value, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None
):
    d = dt(shapes)
    query, key, value = _as(query, d), _as(key, d), _as(value, d)
    scores, _ = _attention_scores(query, key, attn_mask, is_causal, scale)
    logsumexp = jax.nn.logsumexp(scores, axis=-1)
    probs = jnp.exp(scores - logsumexp[..., None])
    output = jnp.matmul(probs, value, precision=_HIGHEST)
    return output, logsumexp.astype(dt(shapes, 1))


@op("_scaled_dot_product_flash_attention_for_cpu_backward")
def _attention_backward(
    shapes, grad_out, query, key, value, out, logsumexp, dropout_p=0.0, is_causal=False,
    attn_mask=None, scale=None,
):  # fmt: skip
    d = dt(shapes)
    grad_out, query, key, value, out = (_as(t, d) for t in (grad_out, query, key, value, out))
    scores, scale = _attention_scores(query, key, attn_mask, is_causal, scale)
    probs = jnp.exp(scores - logsumexp.astype(d)[..., None])
    grad_value = jnp.matmul(jnp.swapaxes(probs, -1, -2), grad_out, precision=_HIGHEST)
    grad_probs = jnp.matmul(grad_out, jnp.swapaxes(value, -1, -2), precision=_HIGHEST)
    row = jnp.sum(grad_out * out, axis=-1, keepdims=True)
    grad_scores = probs * (grad_probs - row) * scale
    grad_query = jnp.matmul(grad_scores, key, precision=_HIGHEST)
    grad_key = jnp.matmul(jnp.swapaxes(grad_scores, -1, -2), query, precision=_HIGHEST)
    return grad_query, grad_key, grad_value


# Batch normalisation ----------------------------------------------------------------------


def _batch_stats(x):
    axes = (0, *range(2, x.ndim))
    mean = jnp.mean(x, axis=axes)
    var = jnp.mean(jnp.square(x - _channel(mean, x.ndim)), axis=axes)
    return mean, var, math.prod(x.shape[a] for a in axes)


def _channel(v, ndim: int):
    """A per-channel vector shaped to broadcast over ``(N, C, ...)``."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _normalise(x, mean, invstd, weight, bias):
    out = (x - _channel(mean, x.ndim)) * _channel(invstd, x.ndim)
    if weight is not None:
        out = out * _channel(weight.astype(x.dtype), x.ndim)
    if bias is not None:
        out = out + _channel(bias.astype(x.dtype), x.ndim)
    return out


@op("_native_batch_norm_legit_functional")
def _batch_norm_functional(
    shapes, x, weight, bias, running_mean, running_var, training, momentum, eps
):
    d = dt(shapes)
    x = _as(x, d)
    if not training:
        invstd = lax.rsqrt(running_var.astype(d) + eps)
        out = _normalise(x, running_mean.astype(d), invstd, weight, bias)
        empty = jnp.zeros((0,), d)
        return out, empty, empty, running_mean, running_var
    mean, var, n = _batch_stats(x)
    invstd = lax.rsqrt(var + eps)
    out = _normalise(x, mean, invstd, weight, bias)
    new_mean = (1 - momentum) * running_mean + momentum * mean.astype(running_mean.dtype)
    unbiased = var * (n / max(n - 1, 1))
    new_var = (1 - momentum) * running_var + momentum * unbiased.astype(running_var.dtype)
    return out, mean, invstd, new_mean, new_var


@op("native_batch_norm")
def _batch_norm(shapes, x, weight, bias, running_mean, running_var, training, momentum, eps):
    d = dt(shapes)
    x = _as(x, d)
    if training or running_mean is None:
        mean, var, _ = _batch_stats(x)
        invstd = lax.rsqrt(var + eps)
        return _normalise(x, mean, invstd, weight, bias), mean, invstd
    invstd = lax.rsqrt(running_var.astype(d) + eps)
    empty = jnp.zeros((0,), d)
    return _normalise(x, running_mean.astype(d), invstd, weight, bias), empty, empty


@op("native_batch_norm_backward")
def _batch_norm_backward(
    shapes, grad, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps, mask
):  # fmt: skip
    d = dt(shapes)
    x, grad = _as(x, d), _as(grad, d)
    axes = (0, *range(2, x.ndim))
    if train:
        mean, invstd = save_mean.astype(d), save_invstd.astype(d)
    else:
        mean, invstd = running_mean.astype(d), lax.rsqrt(running_var.astype(d) + eps)
    w = jnp.ones(x.shape[1], d) if weight is None else weight.astype(d)
    xhat = (x - _channel(mean, x.ndim)) * _channel(invstd, x.ndim)
    sum_g = jnp.sum(grad, axis=axes)
    sum_gx = jnp.sum(grad * xhat, axis=axes)
    dx = dw = db = None
    if mask[0]:
        scale = _channel(w * invstd, x.ndim)
        if train:
            n = math.prod(x.shape[a] for a in axes)
            dx = scale * (grad - _channel(sum_g / n, x.ndim) - xhat * _channel(sum_gx / n, x.ndim))
        else:
            dx = grad * scale
    if mask[1]:
        dw = sum_gx
    if mask[2]:
        db = sum_g
    return dx, dw, db


# Convolution (not transposed: ``refusals.py`` refuses transposed ones) ----------------------


def _conv(x, w, stride, padding, dilation, groups):
    spatial = x.ndim - 2
    letters = "DHW"[-spatial:] if spatial else ""
    numbers = (f"NC{letters}", f"OI{letters}", f"NC{letters}")
    return lax.conv_general_dilated(
        x, w, tuple(stride), [(p, p) for p in padding], rhs_dilation=tuple(dilation),
        dimension_numbers=numbers, feature_group_count=groups, precision=_HIGHEST,
    )  # fmt: skip


@op("convolution")
def _convolution(
    shapes, x, w, bias, stride, padding, dilation, transposed, output_padding, groups
):  # fmt: skip
    d = dt(shapes)
    out = _conv(_as(x, d), _as(w, d), stride, padding, dilation, groups)
    if bias is not None:
        out = out + _channel(_as(bias, d), out.ndim)
    return out


@op("convolution_backward")
def _convolution_backward(
    shapes, grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
    groups, mask,
):  # fmt: skip
    d = x.dtype
    _, pullback = jax.vjp(lambda a, b: _conv(a, b, stride, padding, dilation, groups), x, w)
    dx, dw = pullback(grad.astype(d))
    db = jnp.sum(grad, axis=(0, *range(2, grad.ndim))) if mask[2] else None
    return (dx if mask[0] else None), (dw if mask[1] else None), db


# 0-dim inputs of ops along one dim (torch takes dim 0 or -1 of a 0-dim tensor)
for _name in (
    "_softmax", "_log_softmax", "cumsum", "index_select", "_softmax_backward_data",
    "_log_softmax_backward_data",
):  # fmt: skip
    JAX_OPS[_name] = _along(JAX_OPS[_name])


# Max pooling with torch's indices (flat positions in each input plane) -------------------


def _pool_config(x, kernel_size, stride, padding, dilation, out_sizes):
    spatial = len(out_sizes)
    pick = lambda v, i: v[i] if len(v) > 1 else v[0]  # noqa: E731 - torch repeats one value
    kernel = [pick(kernel_size, i) for i in range(spatial)]
    stride = [pick(stride, i) for i in range(spatial)] if stride else kernel
    padding = [pick(padding, i) for i in range(spatial)]
    dilation = [pick(dilation, i) for i in range(spatial)]
    pads = []
    for i in range(spatial):
        size = x.shape[x.ndim - spatial + i]
        needed = (out_sizes[i] - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1
        pads.append((padding[i], needed - size - padding[i]))
    return kernel, stride, dilation, pads


def _max_pool(shapes, spatial, x, kernel_size, stride, padding, dilation):
    out_sizes = sizes(shapes)[-spatial:]
    kernel, stride, dilation, pads = _pool_config(
        x, kernel_size, stride, padding, dilation, out_sizes
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
    return _max_pool(shapes, 2, x, kernel_size, stride, padding, dilation)


@op("max_pool3d_with_indices")
def _max_pool3d(shapes, x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return _max_pool(shapes, 3, x, kernel_size, stride, padding, dilation)


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


# More of the op list (reductions with a correction, norms, scatters into slices...) -------


@op("linalg_vector_norm")
def _vector_norm(shapes, x, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    d = dt(shapes)
    x = jnp.abs(x).astype(d)
    axes = _dims(dim, x.ndim)
    if x.size == 0:  # every norm of nothing is 0 (torch raises for the inf norms itself)
        return jnp.zeros(sizes(shapes), d)
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
    return x if jnp.iscomplexobj(x) else _as(x, d)


def _moments(x, dim, correction, keepdim):
    axes = _dims(dim, x.ndim)
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
    return _moments(_as(x, dt(shapes, 1)), dim, correction, keepdim)


@op("std_mean.correction")
def _std_mean(shapes, x, dim=None, *, correction=None, keepdim=False):
    var, mean = _moments(_as(x, dt(shapes, 1)), dim, correction, keepdim)
    return jnp.sqrt(var), mean


@op("logsumexp")
def _logsumexp(shapes, x, dim, keepdim=False):
    d = dt(shapes)
    return jax.nn.logsumexp(_as(x, d), axis=_dims(dim, jnp.ndim(x)), keepdims=keepdim)


@op("logaddexp")
def _logaddexp(shapes, a, b):
    d = dt(shapes)
    return jnp.logaddexp(_as(a, d), _as(b, d))


@op("nansum")
def _nansum(shapes, x, dim=None, keepdim=False, dtype=None):
    d = dt(shapes)
    return jnp.nansum(_as(x, d), axis=_dims(dim, x.ndim), keepdims=keepdim)


@op("cumprod")
def _cumprod(shapes, x, dim, dtype=None):
    d = dt(shapes)
    if jnp.ndim(x) == 0:
        return _as(x, d)
    return jnp.cumprod(_as(x, d), axis=dim)


@op("fmax")
def _fmax(shapes, a, b):
    d = dt(shapes)
    return jnp.fmax(_as(a, d), _as(b, d))


@op("fmin")
def _fmin(shapes, a, b):
    d = dt(shapes)
    return jnp.fmin(_as(a, d), _as(b, d))


@op("heaviside")
def _heaviside(shapes, x, values):
    d = dt(shapes)
    x, values = _as(x, d), _as(values, d)
    return jnp.where(x == 0, values, (x > 0).astype(d))


@op("elu")
def _elu(shapes, x, alpha=1, scale=1, input_scale=1):
    d = dt(shapes)
    x = _as(x, d)
    negative = alpha * (jnp.exp(x * input_scale) - 1)
    return scale * jnp.where(x > 0, x, negative)


@op("baddbmm")
def _baddbmm(shapes, x, a, b, beta=1, alpha=1):
    return _addmm(shapes, x, a, b, beta=beta, alpha=alpha)


@op("addmv")
def _addmv(shapes, x, a, b, beta=1, alpha=1):
    return _addmm(shapes, x, a, b, beta=beta, alpha=alpha)


@op("addbmm")
def _addbmm(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.sum(jnp.matmul(_as(a, d), _as(b, d), precision=_HIGHEST), axis=0)
    return _addmm_tail(d, x, product, beta, alpha)


@op("addr")
def _addr(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.outer(_as(a, d), _as(b, d))
    return _addmm_tail(d, x, product, beta, alpha)


def _addmm_tail(d, x, product, beta, alpha):
    """``beta * x + alpha * product`` as addmm computes it (``beta == 0`` ignores ``x``)."""
    if not (type(alpha) in (int, float, bool) and alpha == 1):
        product = product * _as(alpha, d)
    if type(beta) in (int, float, bool):
        if beta == 0:
            return product
        return product + (_as(x, d) if beta == 1 else _as(x, d) * beta)
    return product + jnp.where(beta == 0, jnp.zeros((), d), _as(x, d) * _as(beta, d))


@op("slice_scatter")
def _slice_scatter(shapes, x, src, dim=0, start=None, end=None, step=1):
    dim %= x.ndim
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    d = dt(shapes)
    return _as(x, d).at[tuple(index)].set(_as(src, d))


@op("select_scatter")
def _select_scatter(shapes, x, src, dim, index):
    dim %= x.ndim
    d = dt(shapes)
    return lax.dynamic_update_index_in_dim(_as(x, d), _as(src, d), index % x.shape[dim], dim)


@op("diagonal_copy")
def _diagonal(shapes, x, offset=0, dim1=0, dim2=1):
    return jnp.diagonal(x, offset, dim1 % x.ndim, dim2 % x.ndim)


@op("repeat")
def _repeat(shapes, x, repeats):
    x = jnp.reshape(x, (1,) * (len(repeats) - x.ndim) + x.shape)
    return jnp.tile(x, repeats)


@op("index_fill.int_Scalar", "index_fill.int_Tensor")
def _index_fill(shapes, x, dim, index, value):
    d = dt(shapes)
    x = _as(x, d)
    if x.ndim == 0:
        return jnp.where(jnp.size(index) > 0, _as(value, d), x)
    dim %= x.ndim
    where = [slice(None)] * x.ndim
    where[dim] = jnp.reshape(index, (-1,)) % x.shape[dim]
    return x.at[tuple(where)].set(_as(value, d))


state.once_per_process(__name__, ("JAX_OPS",), "filled at import by this module's registrations")
