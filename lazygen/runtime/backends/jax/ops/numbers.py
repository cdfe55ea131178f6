"""Ops on how numbers are represented, in the jax backend's table: complex numbers from
and to their parts (``complex``, ``polar``, ``view_as_real``...), sign bits, neighbouring
floats, mantissa and exponent; apart because each reads or builds a number's parts rather
than computing with its value."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op


@op("complex")
def _complex(shapes, real, imag):
    return lax.complex(*jnp.broadcast_arrays(real, imag)).astype(dt(shapes))


@op("polar")
def _polar(shapes, magnitude, angle):
    real, imag = jnp.broadcast_arrays(magnitude * jnp.cos(angle), magnitude * jnp.sin(angle))
    return lax.complex(real, imag).astype(dt(shapes))


@op("angle")
def _angle(shapes, x):
    if jnp.iscomplexobj(x):
        return jnp.angle(x).astype(dt(shapes))
    x = as_dtype(x, dt(shapes))  # torch: pi for negative numbers, NaN kept, else 0
    return jnp.where(jnp.isnan(x), x, jnp.where(x < 0, jnp.pi, 0).astype(x.dtype))


@op("view_as_real_copy", "view_as_real")
def _view_as_real(shapes, x):
    return jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)


@op("view_as_complex_copy", "view_as_complex")
def _view_as_complex(shapes, x):
    return lax.complex(x[..., 0], x[..., 1])


@op("signbit")
def _signbit(shapes, x):
    return jnp.signbit(x)


@op("nextafter")
def _nextafter(shapes, x, other):
    d = dt(shapes)
    return jnp.nextafter(as_dtype(x, d), as_dtype(other, d))


@op("frexp.Tensor")
def _frexp(shapes, x):
    mantissa, exponent = jnp.frexp(x)
    return mantissa, exponent.astype(dt(shapes, 1))
