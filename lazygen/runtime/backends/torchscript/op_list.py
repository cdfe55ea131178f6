"""The kernel tables of lazygen's built-in op list (``yaml/ts_backend.yaml``, generated into
``lazygen.generated.ts_backend``): what the TorchScript backend traces with, and every
other backend that lowers aten ops (the inductor backend shares it)."""

from __future__ import annotations

from ...backend import KernelTables
from . import kernels

REGISTRATION = "lazygen.generated.ts_backend.registration"


def kernel_tables() -> KernelTables:
    return KernelTables.from_module(REGISTRATION, kernels.WRAPPERS)
