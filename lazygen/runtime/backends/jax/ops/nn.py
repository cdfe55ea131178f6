"""Neural-network layers of the jax backend's table with their backward formulas:
softmax, layer normalisation, the negative log-likelihood loss, and
the neutral attention ops (``lazygen.runtime.ops.attention_op``: schemas and outputs): apart because
each is a multi-step formula of its own, not a single ``jax.numpy`` call."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import HIGHEST, op

# Normalisation and losses ----------------------------------------------------------------


@op("_softmax")
def _softmax(shapes, x, dim, half_to_float=False):
    return jax.nn.softmax(as_dtype(x, dt(shapes)), axis=dim)


@op("_log_softmax")
def _log_softmax(shapes, x, dim, half_to_float=False):
    return jax.nn.log_softmax(as_dtype(x, dt(shapes)), axis=dim)


@op("_softmax_backward_data")
def _softmax_backward(shapes, grad, output, dim, input_dtype):
    d = dt(shapes)
    grad, output = as_dtype(grad, d), as_dtype(output, d)
    return output * (grad - jnp.sum(grad * output, axis=dim, keepdims=True))


@op("_log_softmax_backward_data")
def _log_softmax_backward(shapes, grad, output, dim, input_dtype):
    d = dt(shapes)
    grad, output = as_dtype(grad, d), as_dtype(output, d)
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


# Attention: the neutral ops ``lazygen::attention`` / ``lazygen::attention_backward``
# (schemas and outputs in ``lazygen.runtime.ops.attention_op``) ---------------------------


def _attention_scores(query, key, mask, is_causal, scale):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = jnp.matmul(query, jnp.swapaxes(key, -1, -2), precision=HIGHEST) * scale
    if is_causal:
        length_q, length_k = query.shape[-2], key.shape[-2]
        allowed = jnp.tril(jnp.ones((length_q, length_k), jnp.bool_))
        scores = jnp.where(allowed, scores, -jnp.inf)
    if mask is not None:
        scores = scores + mask.astype(scores.dtype)
    return scores, scale


@op("lazygen::attention")
def _attention(shapes, query, key, value, attn_mask=None, is_causal=False, scale=None):
    d = dt(shapes)
    query, key, value = as_dtype(query, d), as_dtype(key, d), as_dtype(value, d)
    scores, _ = _attention_scores(query, key, attn_mask, is_causal, scale)
    logsumexp = jax.nn.logsumexp(scores, axis=-1)
    probs = jnp.exp(scores - logsumexp[..., None])
    output = jnp.matmul(probs, value, precision=HIGHEST)
    return output, logsumexp.astype(dt(shapes, 1))


@op("lazygen::attention_backward")
def _attention_backward(
    shapes, grad_out, query, key, value, out, logsumexp, attn_mask=None, is_causal=False,
    scale=None,
):  # fmt: skip
    d = dt(shapes)
    grad_out, query, key, value, out = (as_dtype(t, d) for t in (grad_out, query, key, value, out))
    scores, scale = _attention_scores(query, key, attn_mask, is_causal, scale)
    # The softmax recomputed from the scores and its row sum taken as sum(P * dP), not
    # from the forward's float32 logsumexp and sum(dO * O): both are equal in exact
    # arithmetic, but the rounded forward output cancels in sum(dO * O) and left the
    # gradients 2-7x further from a float64 run than eager's (OpInfo gradient samples).
    top = jnp.max(scores, axis=-1, keepdims=True)
    exps = jnp.exp(scores - jnp.where(jnp.isfinite(top), top, 0.0))
    probs = exps / jnp.sum(exps, axis=-1, keepdims=True)
    grad_value = jnp.matmul(jnp.swapaxes(probs, -1, -2), grad_out, precision=HIGHEST)
    grad_probs = jnp.matmul(grad_out, jnp.swapaxes(value, -1, -2), precision=HIGHEST)
    row = jnp.sum(probs * grad_probs, axis=-1, keepdims=True)
    grad_scores = probs * (grad_probs - row) * scale
    grad_query = jnp.matmul(grad_scores, key, precision=HIGHEST)
    grad_key = jnp.matmul(jnp.swapaxes(grad_scores, -1, -2), query, precision=HIGHEST)
    return grad_query, grad_key, grad_value
