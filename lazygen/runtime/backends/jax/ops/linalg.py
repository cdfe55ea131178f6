"""Matrix products of the jax backend's table (``mm``, ``addmm`` and its batched and
vector forms): apart because they share the precision torch's CPU kernels have
(``HIGHEST``) and addmm's ``beta``/``alpha`` rule (``_addmm_tail``)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..dtypes import as_dtype, dt
from .table import HIGHEST, op


@op("mm", "bmm", "matmul")
def _mm(shapes, a, b):
    d = dt(shapes)
    return jnp.matmul(as_dtype(a, d), as_dtype(b, d), precision=HIGHEST)


@op("linear")
def _linear(shapes, x, weight, bias=None):
    d = dt(shapes)
    out = jnp.matmul(as_dtype(x, d), as_dtype(weight, d).T, precision=HIGHEST)
    return out if bias is None else out + as_dtype(bias, d)


@op("addmm")
def _addmm(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.matmul(as_dtype(a, d), as_dtype(b, d), precision=HIGHEST)
    if not (type(alpha) in (int, float) and alpha == 1):
        product = product * as_dtype(alpha, d)
    if type(beta) in (int, float):
        if beta == 0:  # torch ignores self (NaN included)
            return product
        return product + (as_dtype(x, d) if beta == 1 else as_dtype(x, d) * beta)
    return product + jnp.where(beta == 0, jnp.zeros((), d), as_dtype(x, d) * as_dtype(beta, d))


@op("dot", "vdot")
def _dot(shapes, a, b):
    d = dt(shapes)
    return jnp.dot(as_dtype(a, d), as_dtype(b, d), precision=HIGHEST)


@op("mv")
def _mv(shapes, a, b):
    d = dt(shapes)
    return jnp.matmul(as_dtype(a, d), as_dtype(b, d), precision=HIGHEST)


@op("baddbmm")
def _baddbmm(shapes, x, a, b, beta=1, alpha=1):
    return _addmm(shapes, x, a, b, beta=beta, alpha=alpha)


@op("addmv")
def _addmv(shapes, x, a, b, beta=1, alpha=1):
    return _addmm(shapes, x, a, b, beta=beta, alpha=alpha)


@op("addbmm")
def _addbmm(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.sum(jnp.matmul(as_dtype(a, d), as_dtype(b, d), precision=HIGHEST), axis=0)
    return _addmm_tail(d, x, product, beta, alpha)


@op("addr")
def _addr(shapes, x, a, b, beta=1, alpha=1):
    d = dt(shapes)
    product = jnp.outer(as_dtype(a, d), as_dtype(b, d))
    return _addmm_tail(d, x, product, beta, alpha)


def _addmm_tail(d, x, product, beta, alpha):
    """``beta * x + alpha * product`` as addmm computes it (``beta == 0`` ignores ``x``)."""
    if not (type(alpha) in (int, float, bool) and alpha == 1):
        product = product * as_dtype(alpha, d)
    if type(beta) in (int, float, bool):
        if beta == 0:
            return product
        return product + (as_dtype(x, d) if beta == 1 else as_dtype(x, d) * beta)
    return product + jnp.where(beta == 0, jnp.zeros((), d), as_dtype(x, d) * as_dtype(beta, d))


# Distances ------------------------------------------------------------------------------


def _distances(x1, x2, p):
    """``||x1[i] - x2[j]||_p`` over the last dim (p = 0: count of differences)."""
    diff = jnp.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return jnp.sum(diff != 0, axis=-1).astype(x1.dtype)
    if p == math.inf:
        return jnp.max(diff, axis=-1, initial=0)
    if p == 1:
        return jnp.sum(diff, axis=-1)
    if p == 2:
        return jnp.sqrt(jnp.sum(diff * diff, axis=-1))
    return jnp.sum(diff**p, axis=-1) ** (1.0 / p)


@op("_cdist_forward")
def _cdist(shapes, x1, x2, p, compute_mode=None):
    d = dt(shapes)
    return _distances(as_dtype(x1, d), as_dtype(x2, d), p)


def _distance_slopes(x1, x2, p, dist):
    """``d dist[i, j] / d x1[i]``, per element of the last dim: 0 where a difference (or the
    distance) is 0, as torch's backward gives it."""
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    dist = dist[..., None]
    if p == 0:
        return jnp.zeros_like(diff)
    if p == 1:
        return jnp.sign(diff)
    if p == math.inf:
        return jnp.sign(diff) * (jnp.abs(diff) == dist)
    safe = jnp.where(dist == 0, 1, dist)
    slope = jnp.sign(diff) * jnp.abs(diff) ** (p - 1) / safe ** (p - 1)
    return jnp.where((dist == 0) | (diff == 0), 0, slope)


@op("_cdist_backward")
def _cdist_backward(shapes, grad, x1, x2, p, cdist):
    """``x1``'s gradient over the broadcast batch; where there are no distances (an empty
    batch, no rows, no columns), zeros of ``x1``'s own shape, as torch's kernel returns."""
    d = dt(shapes)
    if 0 in (*grad.shape, x1.shape[-1]):
        return jnp.zeros(x1.shape, d)
    x1, x2, grad, cdist = (as_dtype(t, d) for t in (x1, x2, grad, cdist))
    return jnp.sum(grad[..., None] * _distance_slopes(x1, x2, p, cdist), axis=-2)


def _pairs(n: int):
    return jnp.triu_indices(n, k=1)


@op("_pdist_forward")
def _pdist(shapes, x, p=2.0):
    x = as_dtype(x, dt(shapes))
    rows, columns = _pairs(x.shape[0])
    return _distances(x, x, p)[rows, columns]


@op("_pdist_backward")
def _pdist_backward(shapes, grad, x, p, pdist):
    d = dt(shapes)
    x, grad, pdist = (as_dtype(t, d) for t in (x, grad, pdist))
    n = x.shape[0]
    rows, columns = _pairs(n)
    full_grad = jnp.zeros((n, n), d).at[rows, columns].set(grad)
    full_dist = jnp.zeros((n, n), d).at[rows, columns].set(pdist)
    full_dist = full_dist + full_dist.T
    slopes = full_grad[..., None] * _distance_slopes(x, x, p, full_dist)
    return jnp.sum(slopes, axis=1) - jnp.sum(slopes, axis=0)
