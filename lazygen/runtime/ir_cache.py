"""``ir_cache.reset()``: forget the nodes kept for reuse (``config.set_reuse_ir``) and cached shapes."""

from __future__ import annotations

from . import kernel_support
from .tracing import shape_inference


def reset() -> None:
    kernel_support.reset_ir_cache()
    shape_inference.clear_cache()
