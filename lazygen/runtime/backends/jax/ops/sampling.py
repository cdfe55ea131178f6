"""Random ops of the jax backend's table (bernoulli, uniform, normal, random integers,
dropout): apart
because they draw from JAX keys made of the seeds the runtime passes as graph inputs
(``lazygen.runtime.tracing.random_inputs``), not from torch's generators."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dtypes import as_dtype, dt
from .table import op

# Random (seeds: ``lazygen.runtime.tracing.random_inputs``) ------------------------------------------


def _key(seed):
    return jax.random.key(jnp.asarray(seed, jnp.int64))


@op("bernoulli.p")
def _bernoulli_p(shapes, x, p=0.5, generator=None):
    draw = jax.random.bernoulli(_key(generator), p, jnp.shape(x))
    return draw.astype(dt(shapes))


@op("bernoulli")
def _bernoulli(shapes, x, generator=None):
    draw = jax.random.uniform(_key(generator), jnp.shape(x), x.dtype)
    return (draw < x).astype(dt(shapes))


@op("uniform")
def _uniform(shapes, x, low=0.0, high=1.0, generator=None):
    d = dt(shapes)
    return jax.random.uniform(_key(generator), jnp.shape(x), d, low, high)


def _integers(seed, shapes, x, low: int, high: int):
    """Integers uniform in ``[low, high)`` with ``x``'s sizes, in the result's dtype
    (``random_(from, to)`` draws integers for every dtype, floating ones included)."""
    draw = jax.random.randint(_key(seed), jnp.shape(x), low, high, jnp.int64)
    return draw.astype(dt(shapes))


@op("random.to")
def _random_to(shapes, x, to, generator=None):
    return _integers(generator, shapes, x, 0, to)


@op("random.from")
def _random_from(shapes, x, low, high=None, generator=None):
    # ``to=None`` (up to the dtype's largest value) is refused (``refusals.PREDICATES``).
    return _integers(generator, shapes, x, low, high)


@op("normal_functional")
def _normal(shapes, x, mean=0.0, std=1.0, generator=None):
    d = dt(shapes)
    return mean + std * jax.random.normal(_key(generator), jnp.shape(x), d)


@op("native_dropout_backward")
def _dropout_backward(shapes, grad, mask, scale):
    d = dt(shapes)
    return as_dtype(grad, d) * as_dtype(mask, d) * as_dtype(scale, d)


@op("native_dropout")
def _dropout(shapes, x, p, train=None, generator=None):
    d = dt(shapes)
    if train is False or p == 0:
        return as_dtype(x, d), jnp.ones(x.shape, jnp.bool_)
    keep = jax.random.bernoulli(_key(generator), 1 - p, x.shape)
    return jnp.where(keep, as_dtype(x, d) / (1 - p), jnp.zeros((), d)), keep


# Distributions drawn into a tensor's shape (``x.cauchy_()``...): torch's parameters


@op("cauchy")
def _cauchy(shapes, x, median=0.0, sigma=1.0, *, generator=None):
    d = dt(shapes)
    return median + sigma * jax.random.cauchy(_key(generator), jnp.shape(x), d)


@op("exponential")
def _exponential(shapes, x, lambd=1.0, *, generator=None):
    d = dt(shapes)
    return jax.random.exponential(_key(generator), jnp.shape(x), d) / lambd


@op("geometric")
def _geometric(shapes, x, p, *, generator=None):
    """Trials up to the first success, from 1 (torch's and JAX's convention)."""
    return jax.random.geometric(_key(generator), p, jnp.shape(x)).astype(dt(shapes))


@op("log_normal")
def _log_normal(shapes, x, mean=1.0, std=2.0, *, generator=None):
    d = dt(shapes)
    return jnp.exp(mean + std * jax.random.normal(_key(generator), jnp.shape(x), d))


@op("normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor")
def _normal_of(shapes, mean, std=1.0, *, generator=None):
    """A normal draw per element of the broadcast ``mean`` and ``std``."""
    d = dt(shapes)
    mean, std = as_dtype(mean, d), as_dtype(std, d)
    shape = jnp.broadcast_shapes(jnp.shape(mean), jnp.shape(std))
    return mean + std * jax.random.normal(_key(generator), shape, d)


@op("normal.float_float")
def _normal_sized(shapes, mean, std, size, *, generator=None, **options):
    d = dt(shapes)
    return mean + std * jax.random.normal(_key(generator), tuple(size), d)
