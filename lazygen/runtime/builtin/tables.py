"""The kernel tables of lazygen's built-in op list (``yaml/ts_backend.yaml``, generated into
``lazygen.generated.ts_backend``): what the TorchScript backend traces with, and every
other backend that lowers aten ops (the inductor backend shares it)."""

from __future__ import annotations

import functools

from ..backend_interface import KernelTables
from . import kernels

REGISTRATION = "lazygen.generated.ts_backend.registration"


@functools.cache
def kernel_tables() -> KernelTables:
    """One object per process: backends sharing it (``set_device_backend``) install it
    once, so its wrapped kernels are not mistaken for another backend's."""
    return KernelTables.from_module(REGISTRATION, kernels.WRAPPERS)
