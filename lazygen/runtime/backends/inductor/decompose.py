"""Which decompositions a lazy graph is compiled with: Inductor's own table, as
``torch.compile`` applies it, plus the decompositions of the graph's ops that Inductor has
neither a lowering nor an entry in that table for.

A lazy graph holds ops as they reached the lazy device, below autograd. Some of them never
reach Inductor that way under ``torch.compile``: ``F.interpolate(mode="bilinear")`` arrives
as ``upsample_bilinear2d.default``, whose decomposition torch registers at the autograd key
(applied only when aot_autograd's trace passes that key) while Inductor's table lists the
``.vec`` overload Dynamo records. Inductor runs such an op as an extern kernel, unfused,
and refuses it outright where the environment variable ``CI`` is set ("make_fallback(...):
a decomposition exists, we should switch to it", ``torch/_inductor/lowering.py``). Adding
exactly those ops' decompositions (the ops Inductor's own check names) compiles them as
Inductor expects, whatever the environment or the dispatch state of the compile. Counted
as ``InductorExtraDecomposition`` (one per op), logged at ``LAZYGEN_DEBUG=1``.
"""

from __future__ import annotations

import torch
import torch.fx
from torch._decomp import get_decompositions

from ... import metrics
from ...op_registry import fallback_counter
from ...state import log


def decompositions_for(module: torch.fx.GraphModule) -> dict:
    """Inductor's decomposition table, with the decompositions of ``module``'s ops that
    would otherwise reach Inductor's lowering undecomposed although one exists."""
    # Imported when first compiling, as compile.py imports Inductor: torch._inductor is slow
    # to import, which the fx backend (same package) must not pay.
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.lowering import FALLBACK_ALLOW_LIST, lowerings

    table = select_decomp_table()
    missing = [
        node.target
        for node in module.graph.nodes
        if node.op == "call_function"
        and _expected_decomposed(node.target, table, lowerings, FALLBACK_ALLOW_LIST)
    ]
    extra = get_decompositions(missing) if missing else {}
    if not extra:
        return table
    metrics.count("InductorExtraDecomposition", len(extra))
    log(1, f"inductor: decomposing {sorted(map(str, extra))} as Inductor expects")
    return {**table, **extra}


def _expected_decomposed(target, table: dict, lowerings: dict, allowed) -> bool:
    """Inductor's own condition for refusing an op (``GraphLowering.call_function`` then
    ``make_fallback``): no lowering, not allowed as a fallback, not in the table, and a
    decomposition exists."""
    return (
        isinstance(target, torch._ops.OpOverload)
        and target not in lowerings
        and target not in table
        and fallback_counter(target) not in allowed
        and bool(get_decompositions([target]))
    )
