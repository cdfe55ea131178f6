"""Matrix products of the jax backend's table (``mm``, ``addmm`` and its batched and
vector forms): apart because they share the precision torch's CPU kernels have
(``HIGHEST``) and addmm's ``beta``/``alpha`` rule (``_addmm_tail``)."""

from __future__ import annotations

import jax.numpy as jnp

from .table import HIGHEST, as_dtype, dt, op


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
