"""Ranges that name the lazy device's work in torch's profiler traces.

While ``torch.profiler.profile`` (or ``torch.autograd.profiler.profile``) records, the
executor wraps each graph's compilation, launch and run in a ``record_function`` range named
``<device>::compile``, ``<device>::launch`` or ``<device>::execute``, followed by the graph
(its hash, as the logs print it) and size, so a trace shows which graphs the device built
and ran and for how long, beside the aten ops that traced them. They are host ranges (CPU
events): torch records a device's own kernels through a native profiler plug-in (CUDA's
CUPTI; for PrivateUse1, ``torch::profiler::impl::registerPrivateUse1Methods``), which a
Python device cannot register. Outside a profiler a range costs one attribute read.
"""

from __future__ import annotations

import contextlib

import torch.autograd.profiler as _profiler

from ..state import settings

_NOTHING = contextlib.nullcontext()


def span(step: str, what: str):
    """A ``record_function`` range ``<device>::<step> (<what>)`` while a profiler records;
    otherwise a context that does nothing."""
    if not _profiler._is_profiler_enabled:
        return _NOTHING
    return _profiler.record_function(f"{settings.device_type}::{step} ({what})")


def graph_name(key, nodes: int) -> str:
    return f"graph {hash(key) & 0xFFFFFFFF:08x}, {nodes} nodes"
