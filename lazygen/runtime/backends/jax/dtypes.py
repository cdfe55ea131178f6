"""torch dtypes as JAX's, and JAX's 64-bit mode.

torch tensors are int64 and float64 wherever a program makes them so (indices, labels,
``arange``, a double model), and a graph's results must have the dtypes shape inference
promised; JAX holds 64-bit arrays only with its ``jax_enable_x64`` switch, which is
process-wide. The backend turns it on when it is made (``enable_x64``) and says so in
``lazygen.runtime.process``'s sense: it is documented in docs/jax-backend.md. Every lowering
gives its result dtype explicitly, so JAX's default dtypes (float64 for Python floats under
x64) never decide a result's dtype.
"""

from __future__ import annotations

from types import MappingProxyType

import jax
import jax.numpy as jnp
import torch

_TO_JAX = MappingProxyType(
    {
        torch.float32: jnp.float32,
        torch.float64: jnp.float64,
        torch.float16: jnp.float16,
        torch.bfloat16: jnp.bfloat16,
        torch.int8: jnp.int8,
        torch.int16: jnp.int16,
        torch.int32: jnp.int32,
        torch.int64: jnp.int64,
        torch.uint8: jnp.uint8,
        torch.uint16: jnp.uint16,
        torch.uint32: jnp.uint32,
        torch.uint64: jnp.uint64,
        torch.bool: jnp.bool_,
        torch.complex64: jnp.complex64,
        torch.complex128: jnp.complex128,
    }
)

#: torch dtypes a graph on this backend can hold (others are refused: see ``refusals.py``).
SUPPORTED = frozenset(_TO_JAX)


def to_jax(dtype: torch.dtype):
    """JAX's dtype for a torch dtype; a ``TypeError`` naming it for one JAX lacks."""
    try:
        return _TO_JAX[dtype]
    except KeyError:
        raise TypeError(f"lazygen: the jax backend has no dtype for torch's {dtype}") from None


def enable_x64() -> None:
    """Turn on JAX's 64-bit mode (process-wide; idempotent)."""
    if not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
