"""Special functions of the jax backend's table (``torch.special`` and its aten ops):
``jax.scipy.special``'s where JAX has the function, and the orthogonal polynomials by
their three-term recurrences with torch's shortcuts. Bessel functions (``bessel_j0``...:
``jax.scipy.special.bessel_jn`` returned NaN where torch's Cephes approximations give
numbers), the modified ones of the second kind and Airy's ``Ai`` are not in JAX: they run
eagerly."""

from __future__ import annotations

from types import MappingProxyType

import jax.numpy as jnp
import jax.scipy.special as sp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import JAX_OPS, op

_UNARY = MappingProxyType(
    {
        "i0": sp.i0,
        "special_i0e": sp.i0e,
        "special_i1": sp.i1,
        "special_i1e": sp.i1e,
        "special_modified_bessel_i0": sp.i0,
        "special_modified_bessel_i1": sp.i1,
        "lgamma": sp.gammaln,
        "special_ndtri": sp.ndtri,
        "special_log_ndtr": sp.log_ndtr,
        "special_erfcx": sp.erfcx,
    }
)


def _unary(fn):
    return lambda shapes, x: fn(as_dtype(x, dt(shapes)))


for _name, _fn in _UNARY.items():
    JAX_OPS[_name] = _unary(_fn)


@op("erfinv")
def _erfinv(shapes, x):
    """JAX's ``erfinv`` refined by one Newton step. XLA's single-precision polynomial is up
    to 64 ulp off near +-1 (torch's: half an ulp), and the gradient ``sqrt(pi)/2 *
    exp(erfinv(x)**2)`` magnifies that (15x eager's error at x = -0.9987). The step's
    residual ``erf(y) - x`` is taken through ``erfc`` in the tails, where ``1 - |x|`` is
    exact and ``erf(y)`` would cancel: at most 4.5 ulp over [-1, 1] in float32."""
    x = as_dtype(x, dt(shapes))
    y = sp.erfinv(x)
    ax, ay = jnp.abs(x), jnp.abs(y)
    residual = jnp.where(ax > 0.5, jnp.sign(y) * ((1 - ax) - sp.erfc(ay)), sp.erf(y) - x)
    step = residual * (jnp.sqrt(jnp.pi) / 2).astype(y.dtype) * jnp.exp(y * y)
    return jnp.where(jnp.isfinite(y), y - step, y)  # +-1 (infinite) and NaN as they are


@op("special_spherical_bessel_j0")
def _spherical_j0(shapes, x):
    x = as_dtype(x, dt(shapes))
    safe = jnp.where(x == 0, 1, x)
    return jnp.where(x == 0, 1, jnp.sin(safe) / safe).astype(x.dtype)


def _digamma(x):
    """torch's digamma: -inf / inf at -0 / +0, NaN at the other poles (negative integers)."""
    pole = (x < 0) & (x == jnp.trunc(x))
    zero = jnp.copysign(jnp.asarray(jnp.inf, x.dtype), -x)
    return jnp.where(x == 0, zero, jnp.where(pole, jnp.nan, sp.digamma(x)))


def _trigamma(x):
    """torch's trigamma: the reflection ``pi^2 / sin(pi x)^2`` below 1/2 (finite wherever
    ``sin`` rounds away from 0), six recurrence steps, then the asymptotic series."""
    sign = jnp.where(x < 0.5, -1.0, 1.0).astype(x.dtype)
    reflected = jnp.where(x < 0.5, -((jnp.pi / jnp.sin(jnp.pi * x)) ** 2), 0).astype(x.dtype)
    y = jnp.where(x < 0.5, 1 - x, x)
    total = reflected
    for _ in range(6):
        total = total + 1 / (y * y)
        y = y + 1
    inverse = 1 / (y * y)
    tail = 1 + 1 / (2 * y) + inverse * (1 / 6 - inverse * (1 / 30 - inverse * (1 / 42)))
    return sign * (total + tail / y)


@op("digamma")
def _digamma_op(shapes, x):
    return _digamma(as_dtype(x, dt(shapes)))


def _hurwitz_zeta(s, q):
    """``sum((q + k) ** -s for k >= 0)`` for an integer ``s``, negative ``q`` included (as
    torch's Cephes zeta sums it): the terms up to where ``q + k`` is positive added one by
    one, JAX's zeta (defined for positive ``q``) for the rest."""
    shift = jnp.maximum(jnp.ceil(-q), 0)
    last = jnp.max(shift) if q.size else 0

    def add(state):
        k, total = state
        term = jnp.where(k < shift, (q + k) ** -s, 0)
        return k + 1, total + term

    _, head = lax.while_loop(
        lambda st: st[0] < last, add, (jnp.zeros((), q.dtype), jnp.zeros_like(q))
    )
    return head + sp.zeta(s, q + shift)


@op("polygamma")
def _polygamma(shapes, n, x):
    """torch's: digamma, trigamma, then ``(-1)^(n+1) n! zeta(n + 1, x)``, infinite at the
    poles (0 and the negative integers)."""
    x = as_dtype(x, dt(shapes))
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    pole = (x <= 0) & (x == jnp.trunc(x))
    sign = 1.0 if n % 2 else -1.0
    zeta = _hurwitz_zeta(jnp.asarray(n + 1.0, x.dtype), jnp.where(pole, 1, x))
    value = sign * jnp.exp(sp.gammaln(n + 1.0)) * zeta
    return jnp.where(pole, sign * jnp.inf, value).astype(x.dtype)


def _binary(fn):
    def impl(shapes, a, b):
        d = dt(shapes)
        return fn(as_dtype(a, d), as_dtype(b, d))

    return impl


for _name, _fn in {
    "igamma": sp.gammainc,
    "igammac": sp.gammaincc,
    "special_zeta": sp.zeta,
}.items():
    JAX_OPS[_name] = _binary(_fn)
