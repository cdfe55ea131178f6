"""The kernel tables of lazygen's built-in op list (``yaml/builtin.yaml``, generated into
``generated``): what the TorchScript backend traces with, and every other built-in backend
that lowers aten ops (inductor, fx and jax share it)."""

from __future__ import annotations

from .. import state
from ..backend_interface import KernelTables
from .generated import registration
from .hand_written import kernels


@state.process_memo
def kernel_tables() -> KernelTables:
    """One object per process: backends sharing it (``set_device_backend``) install it
    once, so its wrapped kernels are not mistaken for another backend's."""
    return KernelTables.from_module(registration, kernels.WRAPPERS)
