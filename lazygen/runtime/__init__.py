"""lazygen's runtime: the ``lazygen`` device, lazy tensors, IR, graph executor, TS backend.

The user API mirrors ``torch._lazy``::

    import lazygen.runtime as lr
    lr.init()
    x = torch.randn(3, device="lazygen")
    lr.mark_step()
"""

from __future__ import annotations

import torch

from . import config, debug, executor, ir_cache, metrics
from .devices import init
from .errors import LazyGraphError
from .tensor import DEVICE_TYPE, inner

__all__ = [
    "LazyGraphError",
    "add_step_closure",
    "config",
    "debug",
    "device",
    "init",
    "ir_cache",
    "mark_step",
    "metrics",
    "sync",
    "to_cpu",
    "wait_device_ops",
]


def device(index: int = 0) -> torch.device:
    """The lazy device ``lazygen:<index>`` (initialising the runtime if needed)."""
    init()
    return torch.device(DEVICE_TYPE, index)


def mark_step(device: str = "", wait: bool = False) -> None:
    """Cut the trace: launch a graph materialising every live lazy tensor with pending IR,
    then run step closures. The graph runs while the program goes on tracing (reads of its
    results wait for it); ``wait=True`` returns only once it ran, raising any failure."""
    from .devices import device_from

    executor.mark_step(device_from(device) if device else None, wait=wait)


def wait_device_ops(devices=None) -> None:
    """Wait for every graph in flight (raising the first failure) and for CUDA work if any."""
    from .devices import device_from

    for name in devices or [None]:
        executor.wait_device_ops(device_from(name) if name else None)
    if torch.cuda.is_available() and config.settings.backing_device.startswith("cuda"):
        torch.cuda.synchronize()


def _inner_tensors(tensors) -> list:
    return [
        inner(t) for t in tensors if isinstance(t, torch.Tensor) and t.device.type == DEVICE_TYPE
    ]


def sync(tensors) -> None:
    """Materialise these lazy tensors (only what they need)."""
    executor.sync(_inner_tensors(tensors))


def to_cpu(tensors, devices=None) -> list[torch.Tensor]:
    """CPU copies of lazy tensors (one graph for all of them); other tensors pass through."""
    tensors = list(tensors)
    sync(tensors)
    return [t.to("cpu") if isinstance(t, torch.Tensor) else t for t in tensors]


def add_step_closure(closure, args=(), run_async: bool = False) -> None:
    """Run ``closure(*args)`` after the next ``mark_step``."""
    executor.add_step_closure(closure, args)
