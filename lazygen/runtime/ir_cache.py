"""``ir_cache.reset()``: forget the nodes kept by IR reuse and cached shapes.

IR reuse is ``tracing.ir_reuse``, switched on by ``config.set_reuse_ir``. The module and
setting keep ``torch._lazy``'s names (``torch._lazy.ir_cache.reset``,
``config.set_reuse_ir``) so LTC code runs unchanged; inside lazygen the feature is "IR
reuse" (``ir_reuse``).
"""

from __future__ import annotations

from .tracing import ir_reuse, output_shapes


def reset() -> None:
    """Forget cached IR nodes and shape inferences (as ``torch._lazy.ir_cache.reset``)."""
    ir_reuse.reset()
    output_shapes.clear_cache()
