"""Elementwise ops of the jax backend's table: unary and binary math, comparisons, clamps,
activations and their backward formulas, ``where``; apart because they share one shape
rule (broadcasting) and the wrappers ``_unary``/``_binary``/``_compare``."""

from __future__ import annotations

import math
from types import MappingProxyType

import jax
import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import JAX_OPS, op

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
    return lambda shapes, x: fn(as_dtype(x, dt(shapes)))


for _name, _fn in _UNARY.items():
    JAX_OPS[_name] = _unary(_fn)


@op("round")
def _round(shapes, x):
    return jnp.round(as_dtype(x, dt(shapes)))  # half to even, as torch


@op("round.decimals")
def _round_decimals(shapes, x, decimals=0):
    scale = 10.0**decimals
    return jnp.round(as_dtype(x, dt(shapes)) * scale) / scale


@op("logical_not")
def _logical_not(shapes, x):
    return jnp.logical_not(x)


@op("bitwise_not")
def _bitwise_not(shapes, x):
    return jnp.invert(as_dtype(x, dt(shapes)))


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
    return jax.nn.gelu(as_dtype(x, dt(shapes)), approximate=approximate == "tanh")


@op("gelu_backward")
def _gelu_backward(shapes, grad, x, approximate="none"):
    d = dt(shapes)
    x = as_dtype(x, d)
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x**3)
        t = jnp.tanh(inner)
        derivative = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    else:
        cdf = 0.5 * (1 + jax.scipy.special.erf(x / math.sqrt(2)))
        pdf = jnp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        derivative = cdf + x * pdf
    return as_dtype(grad, d) * derivative


@op("tanh_backward")
def _tanh_backward(shapes, grad, output):
    d = dt(shapes)
    output = as_dtype(output, d)
    return as_dtype(grad, d) * (1 - output * output)


@op("sigmoid_backward")
def _sigmoid_backward(shapes, grad, output):
    d = dt(shapes)
    output = as_dtype(output, d)
    return as_dtype(grad, d) * (1 - output) * output


@op("silu_backward")
def _silu_backward(shapes, grad, x):
    d = dt(shapes)
    x = as_dtype(x, d)
    s = jax.nn.sigmoid(x)
    return as_dtype(grad, d) * s * (1 + x * (1 - s))


@op("threshold_backward")
def _threshold_backward(shapes, grad, x, threshold):
    return jnp.where(x <= threshold, jnp.zeros((), dt(shapes)), as_dtype(grad, dt(shapes)))


@op("leaky_relu")
def _leaky_relu(shapes, x, negative_slope=0.01):
    x = as_dtype(x, dt(shapes))
    return jnp.where(x > 0, x, x * negative_slope)


@op("hardtanh")
def _hardtanh(shapes, x, min_val=-1, max_val=1):
    return jnp.clip(as_dtype(x, dt(shapes)), min_val, max_val)


def _binary(fn):
    def impl(shapes, a, b):
        d = dt(shapes)
        return fn(as_dtype(a, d), as_dtype(b, d))

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
    b = as_dtype(b, d)
    if not (type(alpha) in (int, float) and alpha == 1):
        b = b * as_dtype(alpha, d)
    return as_dtype(a, d) + b


@op("sub.Tensor", "sub.Scalar")
def _sub(shapes, a, b, alpha=1):
    d = dt(shapes)
    b = as_dtype(b, d)
    if not (type(alpha) in (int, float) and alpha == 1):
        b = b * as_dtype(alpha, d)
    return as_dtype(a, d) - b


@op("rsub.Tensor", "rsub.Scalar")
def _rsub(shapes, a, b, alpha=1):
    return _sub(shapes, b, a, alpha)


@op("div.Tensor", "div.Scalar")
def _div(shapes, a, b):
    d = dt(shapes)
    return as_dtype(a, d) / as_dtype(b, d)


@op("div.Tensor_mode", "div.Scalar_mode")
def _div_mode(shapes, a, b, rounding_mode=None):
    d = dt(shapes)
    a, b = as_dtype(a, d), as_dtype(b, d)
    if rounding_mode is not None and jnp.issubdtype(d, jnp.integer):  # exact, no float
        return jnp.floor_divide(a, b) if rounding_mode == "floor" else lax.div(a, b)
    q = a / b
    if rounding_mode == "trunc":
        return jnp.trunc(q)
    if rounding_mode == "floor":
        return jnp.floor(q)
    return q


@op("pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar")
def _pow(shapes, a, b):
    d = dt(shapes)
    if type(b) is int and b == 2:
        a = as_dtype(a, d)
        return a * a
    return jnp.power(as_dtype(a, d), as_dtype(b, d))


@op("remainder.Tensor", "remainder.Scalar")
def _remainder(shapes, a, b):
    d = dt(shapes)
    return jnp.remainder(as_dtype(a, d), as_dtype(b, d))


@op("fmod.Tensor", "fmod.Scalar")
def _fmod(shapes, a, b):
    d = dt(shapes)
    return jnp.fmod(as_dtype(a, d), as_dtype(b, d))


@op("xlogy.Tensor")
def _xlogy(shapes, a, b):
    d = dt(shapes)
    return jax.scipy.special.xlogy(as_dtype(a, d), as_dtype(b, d))


@op("lerp.Scalar", "lerp.Tensor")
def _lerp(shapes, start, end, weight):
    d = dt(shapes)
    start, end, weight = as_dtype(start, d), as_dtype(end, d), as_dtype(weight, d)
    diff = end - start
    # torch's formula: exact at both ends
    return jnp.where(jnp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


@op("addcmul")
def _addcmul(shapes, x, t1, t2, value=1):
    d = dt(shapes)
    return as_dtype(x, d) + as_dtype(value, d) * as_dtype(t1, d) * as_dtype(t2, d)


@op("addcdiv")
def _addcdiv(shapes, x, t1, t2, value=1):
    d = dt(shapes)
    return as_dtype(x, d) + as_dtype(value, d) * (as_dtype(t1, d) / as_dtype(t2, d))


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
    x = as_dtype(x, d)
    if min is not None:
        x = jnp.where(jnp.isnan(x), x, jnp.maximum(x, as_dtype(min, d)))
    if max is not None:
        x = jnp.where(jnp.isnan(x), x, jnp.minimum(x, as_dtype(max, d)))
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
    return jnp.where(condition, as_dtype(a, d), as_dtype(b, d))


@op("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(shapes, x, mask, value):
    d = dt(shapes)
    return jnp.where(mask, as_dtype(value, d), as_dtype(x, d))


@op("logaddexp")
def _logaddexp(shapes, a, b):
    d = dt(shapes)
    return jnp.logaddexp(as_dtype(a, d), as_dtype(b, d))


@op("fmax")
def _fmax(shapes, a, b):
    d = dt(shapes)
    return jnp.fmax(as_dtype(a, d), as_dtype(b, d))


@op("fmin")
def _fmin(shapes, a, b):
    d = dt(shapes)
    return jnp.fmin(as_dtype(a, d), as_dtype(b, d))


@op("heaviside")
def _heaviside(shapes, x, values):
    d = dt(shapes)
    x, values = as_dtype(x, d), as_dtype(values, d)
    return jnp.where(x == 0, values, (x > 0).astype(d))


@op("elu")
def _elu(shapes, x, alpha=1, scale=1, input_scale=1):
    d = dt(shapes)
    x = as_dtype(x, d)
    negative = alpha * (jnp.exp(x * input_scale) - 1)
    return scale * jnp.where(x > 0, x, negative)
