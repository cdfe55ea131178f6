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

from ...errors import LazygenRuntimeError

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


def check_supported(dtype: torch.dtype) -> None:
    """Raise the user's error for a tensor of a dtype JAX has no array type for."""
    if dtype not in SUPPORTED:
        raise LazygenRuntimeError(
            f"lazygen: the jax backend cannot hold {dtype} tensors (JAX has no such array "
            "type, or converts to it differently from torch): keep this tensor on the CPU, "
            "convert it first (e.g. .to(torch.complex64) or .to(torch.float32)), or run on "
            "another backend (LAZYGEN_BACKEND=torchscript)"
        )


def to_jax(dtype: torch.dtype):
    """JAX's dtype for a torch dtype; a ``TypeError`` naming it for one JAX lacks."""
    try:
        return _TO_JAX[dtype]
    except KeyError:
        raise TypeError(f"lazygen: the jax backend has no dtype for torch's {dtype}") from None


#: Integer dtypes narrower than int32: torch's float -> int casts on the CPU go through a
#: 32-bit integer (the hardware's truncating conversion) and keep its low bits, so -62.5
#: becomes 194 as uint8; XLA's direct float -> uint8 saturates (0). ``convert`` imitates
#: torch's route.
_NARROW_INTEGERS = frozenset({jnp.dtype(t) for t in (jnp.int8, jnp.int16, jnp.uint8, jnp.uint16)})


def convert(x, dtype):
    """``x`` as JAX's ``dtype`` the way torch casts: a floating value to a narrow integer
    type wraps around (through int32) instead of saturating."""
    x = jnp.asarray(x)
    want = jnp.dtype(dtype)
    if x.dtype == want:
        return x
    if want in _NARROW_INTEGERS and jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.int32)
    return x.astype(want)


def enable_x64() -> None:
    """Turn on JAX's 64-bit mode (process-wide; idempotent)."""
    if not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)


# What op implementations (``ops/``) compute their results' dtypes with.


def dt(shapes, index: int = 0):
    """The JAX dtype of output ``index`` of a node (its ``shapes``, as shape inference gave them)."""
    return to_jax(shapes[index].dtype)


#: ``x`` in ``dtype`` as torch casts (floats to narrow integers wrap): the name the op
#: implementations use for ``convert``.
as_dtype = convert
