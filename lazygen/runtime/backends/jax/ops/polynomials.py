"""Orthogonal polynomials of the jax backend's table (``torch.special``'s Chebyshev, shifted
Chebyshev, Hermite, Laguerre and Legendre polynomials of degree ``n``, a tensor): each by
its three-term recurrence, run in a ``lax.while_loop`` up to the largest degree with each
element stopping at its own, and torch's shortcuts kept so the numbers are torch's: a
negative degree is 0, the values at the interval's ends are closed forms, and Chebyshev
polynomials of high degree inside ``(-1, 1)`` are trigonometric (``cos(n acos x)``...).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import JAX_OPS


def _degree(n):
    """torch's integer degree: truncated; NaN and infinities are -1 (degree 0 result 0)."""
    finite = jnp.isfinite(n) if jnp.issubdtype(n.dtype, jnp.floating) else True
    return jnp.where(finite, n, -1).astype(jnp.int64)


def _recurrence(x, n, first, step):
    """``P_n(x)`` from ``P_0 = 1``, ``P_1 = first`` and ``P_{j+1} = step(j, x, P_j,
    P_{j-1})``, for every element's own ``n`` (at least 1)."""
    last = jnp.max(n) if n.size else 0

    def more(state):
        return state[0] < last

    def advance(state):
        j, p, q = state
        r = step(j.astype(x.dtype), x, q, p)
        active = j < n
        return j + 1, jnp.where(active, q, p), jnp.where(active, r, q)

    _, _, q = lax.while_loop(more, advance, (jnp.int64(1), jnp.ones_like(x), first))
    return q


def _chebyshev(first, ends, trigonometric, limit, shifted=False):
    """A Chebyshev polynomial: ``first`` (P_1 of ``t``), ``ends(t, n)`` its values at the
    interval's ends (None elsewhere), ``trigonometric(angle, n)`` its closed form used above
    degree ``limit`` inside the interval."""

    def impl(shapes, x, n):
        d = dt(shapes)
        x, n = jnp.broadcast_arrays(as_dtype(x, d), _degree(jnp.asarray(n)))
        t = x + x - 1 if shifted else x
        value = _recurrence(t, n, first(t), lambda j, x_, q, p: (t + t) * q - p)
        value = jnp.where(n == 0, 1, value)
        inside = (n > limit) & (jnp.abs(t) < 1)
        closed = trigonometric(jnp.arccos(jnp.where(inside, t, 0)), n.astype(d), t)
        value = jnp.where(inside, closed, value)
        end, at_end = ends(x, n)
        value = jnp.where(at_end, end, value)
        return jnp.where(n < 0, 0, value).astype(d)

    return impl


def _t_ends(shifted):
    def ends(x, n):
        if shifted:
            return jnp.where(x == 1, 1, jnp.where(n % 2 == 0, 1, -1)), (x == 1) | (x == 0)
        return jnp.where((x > 0) | (n % 2 == 0), 1, -1), jnp.abs(x) == 1

    return ends


def _u_ends(shifted):
    def ends(x, n):
        plus = (x == 1) if shifted else (x > 0)
        value = jnp.where(plus | (n % 2 == 0), n + 1, -(n + 1))
        return value, ((x == 1) | (x == 0)) if shifted else (jnp.abs(x) == 1)

    return ends


def _v_ends(shifted):
    def ends(x, n):
        plus = (x == 1) if shifted else (x > 0)
        odd = jnp.where(n % 2 == 0, 2 * n + 1, -(2 * n + 1))
        return jnp.where(plus, 1, odd), ((x == 1) | (x == 0)) if shifted else (jnp.abs(x) == 1)

    return ends


def _w_ends(shifted):
    def ends(x, n):
        plus = (x == 1) if shifted else (x > 0)
        return jnp.where(plus, 2 * n + 1, jnp.where(n % 2 == 0, 1, -1)), (
            ((x == 1) | (x == 0)) if shifted else (jnp.abs(x) == 1)
        )

    return ends


def _t_closed(angle, n, t):
    return jnp.cos(n * angle)


def _u_closed(angle, n, t):
    s = jnp.sin(angle)
    return jnp.where(s != 0, jnp.sin((n + 1) * angle) / s, (n + 1) * jnp.cos((n + 1) * angle) / t)


def _v_closed(angle, n, t):
    return jnp.cos((n + 0.5) * angle) / jnp.cos(angle / 2)


def _w_closed(angle, n, t):
    return jnp.sin((n + 0.5) * angle) / jnp.sin(angle / 2)


_VARIANTS = ((False, "special_", (6, 8, 8, 8)), (True, "special_shifted_", (6, 6, 6, 4)))
for _shift, _prefix, _limits in _VARIANTS:
    for _kind, _first, _ends, _closed, _limit in zip(
        "tuvw",
        (lambda t: t, lambda t: t + t, lambda t: t + t - 1, lambda t: t + t + 1),
        (_t_ends, _u_ends, _v_ends, _w_ends),
        (_t_closed, _u_closed, _v_closed, _w_closed),
        _limits,
        strict=True,
    ):
        JAX_OPS[f"{_prefix}chebyshev_polynomial_{_kind}"] = _chebyshev(
            _first, _ends(_shift), _closed, _limit, _shift
        )


def _simple(first, step, ends=None, limit=None):
    """Hermite, Laguerre and Legendre polynomials: 1 at degree 0, ``first`` at 1, then the
    recurrence; ``ends(x, n) -> (value, where)`` gives closed forms; with ``limit``, degrees
    above 128 (float32) or 512 (float64) are NaN, as torch's."""

    def impl(shapes, x, n):
        d = dt(shapes)
        x, n = jnp.broadcast_arrays(as_dtype(x, d), _degree(jnp.asarray(n)))
        value = jnp.where(n == 0, 1, _recurrence(x, n, first(x), step))
        if ends is not None:
            end, at_end = ends(x, n)
            value = jnp.where(at_end, end, value)
        if limit is not None:
            value = jnp.where(n > (128 if d == jnp.float32 else 512), jnp.nan, value)
        return jnp.where(n < 0, 0, value).astype(d)

    return impl


JAX_OPS["special_hermite_polynomial_h"] = _simple(
    lambda x: x + x, lambda j, x, q, p: (x + x) * q - (2 * j) * p, limit=True
)
JAX_OPS["special_hermite_polynomial_he"] = _simple(
    lambda x: x, lambda j, x, q, p: x * q - j * p, limit=True
)
JAX_OPS["special_laguerre_polynomial_l"] = _simple(
    lambda x: 1 - x,
    lambda j, x, q, p: (((j + j) + (1 - x)) * q - j * p) / (j + 1),
    ends=lambda x, n: (1, x == 0),
)
JAX_OPS["special_legendre_polynomial_p"] = _simple(
    lambda x: x,
    lambda j, x, q, p: ((j + j + 1) * x * q - j * p) / (j + 1),
    ends=_t_ends(False),
)
