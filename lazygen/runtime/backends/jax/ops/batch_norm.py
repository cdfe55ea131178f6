"""Batch normalisation of the jax backend's table, computed as torch's CPU kernels compute
it, step for step, so that training follows eager's running statistics.

Why step for step: with a batch of 2 and a 1x1 plane (a ResNet's last downsample), each
channel normalises two numbers, whose normalised values are +-1 whatever they are; the
input gradient is then a difference of nearly equal terms, all rounding error, and a
formula that is equal in exact arithmetic but rounds elsewhere sends the weights, and the
running statistics after them, somewhere else. A textbook float32 formula (two-pass
variance, ``rsqrt``, the unbiased variance as ``var * n / (n - 1)``) left a ResNet-style
model's running variance 1.6e-3 from eager's at step 3 where a 1-ulp change of eager's
start moves it 2.8e-4 (``tests/runtime/backends/test_jax_batch_norm.py``). torch's kernels
(``aten/src/ATen/native/cpu/batch_norm_kernel.cpp``, ``Normalization.cpp``), for float32
data, which this follows (JAX's 64-bit mode is on: ``dtypes.enable_x64``):

* statistics: the sum in float64, the mean rounded to float32; the squared float32
  deviations summed in float64, rounded to float32 (``var_sum``); ``invstd = 1 / sqrt(var_sum
  / n + eps)``, the division in float32, the rest in float64, rounded;
* running statistics: ``m * mean + (1 - m) * running`` in float32 (``m``, the momentum, as
  float32); the variance's ``m * (var_sum / (n - 1))`` term in float64;
* output ``x * alpha + beta`` with ``alpha = invstd * weight``, ``beta = bias - mean * alpha``
  (float32; evaluation mode: ``invstd = 1 / sqrt(running_var + eps)`` in float32);
* input gradient ``(dy - sum(dy) / n - (x - mean) * k) * invstd * weight`` with ``k =
  dot * invstd * invstd / n`` and ``dot = sum((x - mean) * dy)`` (sums in float64).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..dtypes import as_dtype, dt
from .table import op, per_channel


def _accumulator(dtype):
    """The dtype torch's CPU kernels sum ``dtype`` in (``acc_type``): float64 for float32."""
    return jnp.float64 if dtype in (jnp.float32, jnp.float64) else jnp.float32


def _plane_axes(x) -> tuple[int, ...]:
    return (0, *range(2, x.ndim))


def _statistics(x, eps):
    """``(mean, var_sum, invstd, n)`` as torch's kernel computes them (module docstring)."""
    axes = _plane_axes(x)
    acc = _accumulator(x.dtype)
    n = math.prod(x.shape[a] for a in axes)
    mean = (jnp.sum(x.astype(acc), axis=axes) / n).astype(x.dtype)
    deviation = x - per_channel(mean, x.ndim)
    var_sum = jnp.sum((deviation * deviation).astype(acc), axis=axes).astype(x.dtype)
    var = (var_sum / n).astype(acc)
    invstd = jnp.where((var == 0) & (eps == 0), 0, 1 / jnp.sqrt(var + eps)).astype(x.dtype)
    return mean, var_sum, invstd, n


def _affine(x, mean, invstd, weight, bias):
    """``x * alpha + beta`` (``alpha = invstd * weight``, ``beta = bias - mean * alpha``)."""
    alpha = invstd if weight is None else invstd * weight.astype(x.dtype)
    beta = -mean * alpha if bias is None else bias.astype(x.dtype) - mean * alpha
    return x * per_channel(alpha, x.ndim) + per_channel(beta, x.ndim)


def _evaluate(x, weight, bias, running_mean, running_var, eps):
    invstd = 1 / jnp.sqrt(running_var.astype(x.dtype) + jnp.asarray(eps, x.dtype))
    return _affine(x, running_mean.astype(x.dtype), invstd, weight, bias)


def _running(running_mean, running_var, mean, var_sum, n, momentum):
    """The updated running mean and variance (module docstring)."""
    m = jnp.asarray(momentum, running_mean.dtype)
    new_mean = m * mean.astype(m.dtype) + (1 - m) * running_mean
    unbiased = (var_sum / max(n - 1, 1)).astype(running_var.dtype)
    acc = _accumulator(running_var.dtype)
    new_var = m.astype(acc) * unbiased.astype(acc) + ((1 - m) * running_var).astype(acc)
    return new_mean, new_var.astype(running_var.dtype)


@op("_native_batch_norm_legit_functional")
def _batch_norm_functional(
    shapes, x, weight, bias, running_mean, running_var, training, momentum, eps
):
    x = as_dtype(x, dt(shapes))
    if not training:
        out = _evaluate(x, weight, bias, running_mean, running_var, eps)
        empty = jnp.zeros((0,), x.dtype)
        return out, empty, empty, running_mean, running_var
    mean, var_sum, invstd, n = _statistics(x, eps)
    out = _affine(x, mean, invstd, weight, bias)
    new_mean, new_var = _running(running_mean, running_var, mean, var_sum, n, momentum)
    return out, mean, invstd, new_mean, new_var


@op("native_batch_norm")
def _batch_norm(shapes, x, weight, bias, running_mean, running_var, training, momentum, eps):
    x = as_dtype(x, dt(shapes))
    if training or running_mean is None:
        mean, _, invstd, _ = _statistics(x, eps)
        return _affine(x, mean, invstd, weight, bias), mean, invstd
    empty = jnp.zeros((0,), x.dtype)
    return _evaluate(x, weight, bias, running_mean, running_var, eps), empty, empty


@op("native_batch_norm_backward")
def _batch_norm_backward(
    shapes, grad, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps, mask
):  # fmt: skip
    d = dt(shapes)
    x, grad = as_dtype(x, d), as_dtype(grad, d)
    acc = _accumulator(d)
    axes = _plane_axes(x)
    if train:
        mean, invstd = save_mean.astype(d), save_invstd.astype(d)
    else:
        mean = running_mean.astype(d)
        invstd = (1 / jnp.sqrt(running_var.astype(acc) + eps)).astype(d)
    w = jnp.ones(x.shape[1], d) if weight is None else weight.astype(d)
    deviation = x - per_channel(mean, x.ndim)
    total = jnp.sum(grad.astype(acc), axis=axes)
    dot = jnp.sum((deviation * grad).astype(acc), axis=axes)
    dx = dw = db = None
    if mask[0] and train:
        n = math.prod(x.shape[a] for a in axes)
        k = dot.astype(d) * invstd * invstd / n
        grad_mean = (total / n).astype(d)
        dx = grad - per_channel(grad_mean, x.ndim) - deviation * per_channel(k, x.ndim)
        dx = dx * per_channel(invstd, x.ndim) * per_channel(w, x.ndim)
    elif mask[0]:
        dx = grad * per_channel(invstd * w, x.ndim)
    if mask[1]:
        dw = (dot * invstd.astype(acc)).astype(d)
    if mask[2]:
        db = total.astype(d)
    return dx, dw, db
