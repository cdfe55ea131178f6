"""torch.distributed on the lazy device: a c10d backend and collectives as graph nodes.

``install()`` (called by ``lazygen.runtime.init()``) registers the c10d backend named after
the lazy device (``dist.init_process_group("lazygen")`` or ``"cpu:gloo,lazygen:lazygen"``)
and returns the lazy kernels of torch's functional collectives, which record IR nodes
lowered into the step's graph (or, on a backend that cannot run them in a graph, cut it:
see ``collectives.py``). Nothing is registered on import.

Graph cuts a collective caused are counted as ``DistributedGraphCut`` in
``lazygen.runtime.metrics``; collectives recorded in a graph as ``lazy::all_reduce``...
"""

from __future__ import annotations

import torch.distributed as dist

from .. import state
from . import collectives, groups, nodes

if dist.is_available():  # torch builds without distributed support still import lazygen
    from . import fsdp, process_group
    from .process_group import LazyProcessGroup, register_c10d_backend

__all__ = [
    "LazyProcessGroup",
    "available",
    "collectives",
    "fsdp",
    "groups",
    "install",
    "nodes",
    "process_group",
    "register_c10d_backend",
]


class _Libraries(list):
    """The collectives' ``torch.library`` registrations: torch dispatches through them, so
    they are held for the process (``state.for_process``)."""


def available() -> bool:
    return dist.is_available()


def install() -> dict:
    """Register the c10d backend; the collectives' lazy kernels (empty when torch has no
    distributed support)."""
    if not available():
        return {}
    process_group.register_c10d_backend()
    libraries = state.for_process(_Libraries)
    if not libraries:
        libraries.extend(collectives.register_device_kernels())
    return collectives.kernels()
