"""Which kernel handles which aten overload.

Kernels come from ``lazygen.runtime.ts_backend.kernels`` (hand-written ``supported``
kernels), the generated ``lazygen.generated.ts_backend.registration`` when it exists, and
``register_kernels`` (tests, other backends). ``config.set_force_fallback`` removes names
from the active table, so those ops reach the eager fallback.
"""

from __future__ import annotations

import importlib

from . import tensor as _tensor
from .config import settings
from .ir import Node

KERNELS: dict = {}
AUTOGRAD_KERNELS: dict = {}
NODE_CLASSES: dict[str, type[Node]] = {}

GENERATED_MODULE = "lazygen.generated.ts_backend.registration"


def register_kernels(kernels: dict, autograd_kernels=None, node_classes=None) -> None:
    """Add (or replace) kernels keyed by ``torch.ops.aten`` overload; refreshes dispatch."""
    KERNELS.update(kernels)
    if autograd_kernels:
        AUTOGRAD_KERNELS.update(autograd_kernels)
        from . import devices as device

        device.register_autograd_kernels(autograd_kernels)
    if node_classes:
        NODE_CLASSES.update(node_classes)
    refresh()


def unregister_kernels(ops) -> None:
    for op in ops:
        KERNELS.pop(op, None)
    refresh()


def forced(op) -> bool:
    forced = settings.force_fallback
    if not forced:
        return False
    name = op._schema.name.split("::", 1)[-1]
    overload = op._overloadname
    full = name if overload == "default" else f"{name}.{overload}"
    return name in forced or full in forced


def refresh() -> None:
    """Rebuild the table ``__torch_dispatch__`` reads."""
    active = {op: fn for op, fn in KERNELS.items() if not forced(op)}
    _tensor._active_kernels.clear()
    _tensor._active_kernels.update(active)
    from . import fallback

    fallback._no_decomposition.clear()


def load_generated(module_name: str = GENERATED_MODULE) -> bool:
    """Register a generated backend's tables if its module is importable."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            return False
        raise
    register_kernels(
        getattr(module, "KERNELS", {}),
        getattr(module, "AUTOGRAD_KERNELS", {}),
        getattr(module, "NODE_CLASSES", {}),
    )
    return True


def load_defaults() -> None:
    from .ts_backend import autograd, kernels

    register_kernels(kernels.SUPPORTED, autograd.AUTOGRAD, {})
    load_generated()
    wrapped = {op: wrap(KERNELS[op]) for op, wrap in kernels.WRAPPERS.items() if op in KERNELS}
    register_kernels(wrapped)
