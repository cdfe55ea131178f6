"""Which inputs of a jax graph XLA may take over (``jax.jit``'s ``donate_argnums``).

Apart from ``backend.py`` because both kinds of compiled graph use it: a graph compiled
for its own sizes donates an input a result of the same shape can take; one compiled for
all sizes (``all_sizes.py``), one a result of the same dtype and rank can take.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ... import metrics
from ...ir import Node, Value


def reusable(
    positions, order: list[Node], outputs: list[Value], any_sizes: bool = False
) -> frozenset[int]:
    """Of the input ``positions`` (in ``order``), those whose buffer a result of the same
    shape and dtype can take over (XLA warns of a donated buffer no result fits); with
    ``any_sizes``, of the same dtype and rank (the sizes are hidden: every size is served)."""

    def kind(shape):
        return (shape.dtype, len(shape.sizes)) if any_sizes else shape

    free: dict = {}
    for v in outputs:
        k = kind(v.node.shapes[v.index])
        free[k] = free.get(k, 0) + 1
    chosen = []
    for i in sorted(positions):
        k = kind(order[i].shapes[0])
        if free.get(k, 0) > 0:
            free[k] -= 1
            chosen.append(i)
    return frozenset(chosen)


def spare_live_inputs(inputs: list, donated: frozenset[int], dead) -> list:
    """``inputs`` with a copy in place of each donated input someone still reads (not in
    ``dead``): donation deletes the array passed, never one that lazygen hands out again."""
    live = donated - dead if dead else donated
    if not live:
        return inputs
    inputs = list(inputs)
    for i in live:
        data = inputs[i]
        if isinstance(data, jax.Array):
            inputs[i] = jnp.copy(data)
    metrics.count("JaxDonationCopies", len(live))
    return inputs
