"""Piecewise activations of the jax backend's table and their backward formulas (hard
sigmoid and swish, shrinkage, softplus, mish, logit, gated linear units): written out
rather than decomposed (``decomposed.py``) because they are the layers of common models
(MobileNet's hardswish, GLU blocks) and, written out, serve a graph compiled for all sizes.
Each follows torch's CPU kernel, boundaries included (``hardswish``'s backward is
``x / 3 + 0.5`` on ``[-3, 3]``, 0 below, the gradient above)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dtypes import as_dtype, dt
from .table import op


def _cast(shapes, *values):
    d = dt(shapes)
    return [as_dtype(v, d) for v in values]


def _zero(x):
    return jnp.zeros((), x.dtype)


@op("hardsigmoid")
def _hardsigmoid(shapes, x):
    (x,) = _cast(shapes, x)
    return jnp.minimum(jnp.maximum(x + 3, 0), 6) / 6


@op("hardsigmoid_backward")
def _hardsigmoid_backward(shapes, grad, x):
    grad, x = _cast(shapes, grad, x)
    return jnp.where((x > -3) & (x < 3), grad / 6, _zero(grad))


@op("hardswish")
def _hardswish(shapes, x):
    (x,) = _cast(shapes, x)
    return x * jnp.minimum(jnp.maximum(x + 3, 0), 6) / 6


@op("hardswish_backward")
def _hardswish_backward(shapes, grad, x):
    grad, x = _cast(shapes, grad, x)
    inside = grad * (x / 3 + 0.5)
    return jnp.where(x < -3, _zero(grad), jnp.where(x <= 3, inside, grad))


@op("hardtanh_backward")
def _hardtanh_backward(shapes, grad, x, min_val, max_val):
    grad, x = _cast(shapes, grad, x)
    return jnp.where((x <= min_val) | (x >= max_val), _zero(grad), grad)


@op("leaky_relu_backward")
def _leaky_relu_backward(shapes, grad, x, negative_slope, self_is_result):
    grad, x = _cast(shapes, grad, x)
    return jnp.where(x > 0, grad, grad * negative_slope)


@op("elu_backward")
def _elu_backward(shapes, grad, alpha, scale, input_scale, is_result, self_or_result):
    grad, y = _cast(shapes, grad, self_or_result)
    if is_result:
        negative = grad * input_scale * (y + alpha * scale)
    else:
        negative = grad * input_scale * alpha * scale * jnp.exp(y * input_scale)
    return jnp.where(y <= 0, negative, grad * scale)


@op("threshold")
def _threshold(shapes, x, threshold, value):
    (x,) = _cast(shapes, x)
    return jnp.where(x <= threshold, as_dtype(value, x.dtype), x)


@op("hardshrink")
def _hardshrink(shapes, x, lambd=0.5):
    (x,) = _cast(shapes, x)
    return jnp.where((x >= -lambd) & (x <= lambd), _zero(x), x)


@op("hardshrink_backward", "softshrink_backward")
def _shrink_backward(shapes, grad, x, lambd):
    grad, x = _cast(shapes, grad, x)
    return jnp.where((x >= -lambd) & (x <= lambd), _zero(grad), grad)


@op("softshrink")
def _softshrink(shapes, x, lambd=0.5):
    (x,) = _cast(shapes, x)
    return jnp.where(x > lambd, x - lambd, jnp.where(x < -lambd, x + lambd, _zero(x)))


@op("softplus")
def _softplus(shapes, x, beta=1, threshold=20):
    (x,) = _cast(shapes, x)
    return jnp.where(x * beta > threshold, x, jnp.log1p(jnp.exp(x * beta)) / beta)


@op("softplus_backward")
def _softplus_backward(shapes, grad, x, beta, threshold):
    grad, x = _cast(shapes, grad, x)
    z = jnp.exp(x * beta)
    return jnp.where(x * beta > threshold, grad, grad * z / (z + 1))


@op("mish")
def _mish(shapes, x):
    (x,) = _cast(shapes, x)
    return x * jnp.tanh(jnp.log1p(jnp.exp(x)))


@op("mish_backward")
def _mish_backward(shapes, grad, x):
    grad, x = _cast(shapes, grad, x)
    t = jnp.tanh(jnp.log1p(jnp.exp(x)))
    return grad * (t + x * jax.nn.sigmoid(x) * (1 - t * t))


@op("logit")
def _logit(shapes, x, eps=None):
    (x,) = _cast(shapes, x)
    if eps is not None:
        x = jnp.clip(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


@op("logit_backward")
def _logit_backward(shapes, grad, x, eps=None):
    grad, x = _cast(shapes, grad, x)
    outside = (x < 0) | (x > 1) if eps is None else (x < eps) | (x > 1 - eps)
    fill = jnp.asarray(jnp.nan if eps is None else 0, grad.dtype)
    return jnp.where(outside, fill, grad / (x * (1 - x)))


@op("log_sigmoid_forward")
def _log_sigmoid(shapes, x):
    (x,) = _cast(shapes, x)
    out = jnp.minimum(x, 0) - jnp.log1p(jnp.exp(-jnp.abs(x)))
    return out, jnp.zeros_like(x)  # the buffer: CPU's kernel leaves it unread


@op("log_sigmoid_backward")
def _log_sigmoid_backward(shapes, grad, x, buffer):
    grad, x = _cast(shapes, grad, x)
    return grad * jax.nn.sigmoid(-x)


@op("glu")
def _glu(shapes, x, dim=-1):
    (x,) = _cast(shapes, x)
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


@op("glu_backward")
def _glu_backward(shapes, grad, x, dim):
    grad, x = _cast(shapes, grad, x)
    a, b = jnp.split(x, 2, axis=dim)
    gate = jax.nn.sigmoid(b)
    return jnp.concatenate([grad * gate, grad * a * gate * (1 - gate)], axis=dim)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@op("selu")
def _selu(shapes, x):
    (x,) = _cast(shapes, x)
    return _SELU_SCALE * jnp.where(x > 0, x, _SELU_ALPHA * jnp.expm1(x))
