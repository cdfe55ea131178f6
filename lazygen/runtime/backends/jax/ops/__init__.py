"""The jax backend's op table: aten overloads of the built-in op list as ``jax.numpy`` /
``jax.lax`` code, one function per overload, registered with ``@op("name.overload")``
(``table.py``) by the module of its family: ``activations``, ``batch_norm``, ``collectives``,
``conv_pool``, ``elementwise``, ``embeddings``, ``factorizations``, ``fft``, ``indexing``,
``linalg``, ``nn``, ``numbers``, ``polynomials``, ``pooling``, ``reductions``, ``sampling``,
``sorting``, ``special``, ``views``. Importing this package fills ``JAX_OPS``; ops it lacks
are lowered as torch's decompositions of them where those lower to it
(``../decomposed.py``).

Ops whose torch semantics JAX does not give (integer division by zero raises in torch; the
table has no entry, or ``refusals.py`` refuses the call) run eagerly instead.
"""

from __future__ import annotations

from . import (
    activations,
    batch_norm,
    collectives,
    conv_pool,
    elementwise,
    embeddings,
    factorizations,
    fft,
    indexing,
    linalg,
    nn,
    numbers,
    polynomials,
    pooling,
    reductions,
    sampling,
    sorting,
    special,
    views,
)
from .table import JAX_OPS, along

#: The families' modules, imported for their registrations.
FAMILIES = (
    activations, batch_norm, collectives, conv_pool, elementwise, embeddings, factorizations, fft,
    indexing, linalg, nn, numbers, polynomials, pooling, reductions, sampling, sorting, special,
    views,
)  # fmt: skip

# 0-dim inputs of ops along one dim (torch takes dim 0 or -1 of a 0-dim tensor)
for _name in (
    "_softmax", "_log_softmax", "cumsum", "index_select", "_softmax_backward_data",
    "_log_softmax_backward_data",
):  # fmt: skip
    JAX_OPS[_name] = along(JAX_OPS[_name])
