"""Discrete Fourier transforms of the jax backend's table: torch's three primitives
(real to complex, complex to real, complex to complex) that every ``torch.fft`` function
decomposes into, with torch's normalisation codes (0: none, 1: by ``1/sqrt(n)``, 2: by
``1/n``, ``n`` the product of the transformed sizes of the signal)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..dtypes import dt
from .table import op


def _scaled(x, normalization: int, n: int):
    if normalization == 1:
        return x / math.sqrt(n)
    if normalization == 2:
        return x / n
    return x


@op("_fft_r2c")
def _fft_r2c(shapes, x, dim, normalization, onesided):
    axes = tuple(d % x.ndim for d in dim)
    n = math.prod(x.shape[a] for a in axes)
    out = jnp.fft.rfftn(x, axes=axes) if onesided else jnp.fft.fftn(x, axes=axes)
    return _scaled(out, normalization, n).astype(dt(shapes))


@op("_fft_c2c")
def _fft_c2c(shapes, x, dim, normalization, forward):
    axes = tuple(d % x.ndim for d in dim)
    n = math.prod(x.shape[a] for a in axes)
    # unnormalised either way: jnp's inverse divides by n, which is undone here
    out = jnp.fft.fftn(x, axes=axes) if forward else jnp.fft.ifftn(x, axes=axes) * n
    return _scaled(out, normalization, n).astype(dt(shapes))


@op("_fft_c2r")
def _fft_c2r(shapes, x, dim, normalization, last_dim_size):
    axes = tuple(d % x.ndim for d in dim)
    sizes = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    n = math.prod(sizes)
    out = jnp.fft.irfftn(x, s=sizes, axes=axes) * n  # unnormalised, as above
    return _scaled(out, normalization, n).astype(dt(shapes))
