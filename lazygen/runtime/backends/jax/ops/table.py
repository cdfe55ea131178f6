"""The jax backend's op table and what its entries share: ``JAX_OPS`` (aten overload ->
implementation), the ``@op`` decorator that fills it, and the helpers every family of ops
uses (``sizes``, reduction dims, matmul precision; the output dtype ``dt`` and the cast
``as_dtype`` are torch's dtypes as JAX's: ``dtypes.py``).

Every implementation is called as ``impl(shapes, *args, **kwargs)`` with the aten schema's
arguments (tensors as JAX values, numbers as Python numbers or traced scalars, attributes
as Python values) and ``shapes``, the node's outputs as shape inference gave them. Results
are cast to those dtypes by the caller (``lowering.program_function``), so an
implementation computes in ``dt(shapes)``, the result's dtype, instead of re-implementing
torch's type promotion.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from jax import lax

JAX_OPS: dict[str, Callable] = {}


def op(*names: str, reads_sizes: bool = False, static_args: tuple[int, ...] = ()):
    """Register the decorated function under each table key (``add.Tensor``, ``relu``).

    Two facts about the op, for graphs compiled for all sizes (``graph/dynamic.py``), kept
    on the function as attributes the lowering reads (``lowering.JaxLoweringContext.call``):

    * ``reads_sizes``: the implementation takes its result's sizes from ``shapes`` (the
      sizes the graph was traced with) instead of from its operands and size arguments;
      a graph holding it is compiled for its own sizes (the lowering refuses it for all).
    * ``static_args``: positions of number arguments that decide a size (``arange``'s
      start, end and step): in a graph compiled for all sizes, each compiled variant holds
      their values, as it does the size lists'.
    """

    def register(fn):
        fn.reads_sizes = reads_sizes
        fn.static_args = tuple(static_args)
        for name in names:
            JAX_OPS[name] = fn
        return fn

    return register


def sizes(shapes, index: int = 0) -> tuple[int, ...]:
    """The sizes output ``index`` was traced with: only for ops registered with
    ``reads_sizes`` (the others derive sizes from their operands and arguments, so that
    one program serves every size)."""
    return tuple(shapes[index].sizes)


def rank(shapes, index: int = 0) -> int:
    """The number of dimensions of output ``index`` (known for every size: a graph
    compiled for all sizes hides the sizes, never their number)."""
    return len(shapes[index].sizes)


def reduce_dims(dim, ndim: int):
    """A reduction's dims: all for None or ``[]``, else normalised."""
    if ndim == 0:  # torch takes dim 0 and -1 of a 0-dim tensor: a no-op
        return ()
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return tuple(sorted(d % ndim for d in dim))


def along(fn):
    """``fn(x, dim, ...)`` taking a 0-dim ``x`` as torch does: as one element along dim 0."""

    def impl(shapes, x, dim, *args, **kwargs):
        if jnp.ndim(x) == 0:  # each of these ops gives a 0-dim result for a 0-dim input
            return jnp.reshape(fn(shapes, jnp.reshape(x, (1,)), 0, *args, **kwargs), ())
        return fn(shapes, x, dim, *args, **kwargs)

    impl.reads_sizes = fn.reads_sizes
    impl.static_args = fn.static_args
    return impl


# Linear algebra --------------------------------------------------------------------------

HIGHEST = lax.Precision.HIGHEST


def per_channel(v, ndim: int):
    """A per-channel vector shaped to broadcast over ``(N, C, ...)``."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))
