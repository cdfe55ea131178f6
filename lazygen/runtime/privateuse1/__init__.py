"""The lazy device as torch sees it: PrivateUse1 renamed to the device name, its device
module, hooks and guard, the PrivateUse1 kernels (factories, copies, the backend fallback),
autocast with CUDA's policy, pinning of host tensors, ``torch.accelerator``'s memory,
synchronisation and device-index functions, seeding and device generators, streams and
events, Dynamo's device interface, ``resize_``, DLPack's refusal, the profiler's
``use_device``, printing, copying/serialisation and tied parameters as for CUDA tensors
(what differs from CUDA, and why: docs/device-contract.md).
``install(name)`` does it once per process; torch allows one PrivateUse1 backend per
process, so the name cannot change afterwards."""

from __future__ import annotations

import torch

from .. import process, state
from ..errors import LazygenRuntimeError
from . import (
    accelerator_api,
    autocast,
    backward_errors,
    backward_thread,
    compile_inputs,
    dlpack,
    dynamo_interface,
    factories,
    foreach_meta,
    host_copy,
    pinned_memory,
    printing,
    profiler,
    resize,
    rng,
    serialization,
    subclass_reentry,
    tied_parameters,
)
from .device_module import DeviceModule, Guard, Hooks


class _Registered:
    """What torch holds of the lazy device for the process (``state.for_process``): its
    ``torch.library`` registrations (torch dispatches through them) and the one device
    guard (registered at most once)."""

    __slots__ = ("libraries", "guards")

    def __init__(self) -> None:
        self.libraries: list = []
        self.guards: list = []


def reserve_autograd_queue() -> None:
    """Register the lazy device's guard ahead of ``install``, if PrivateUse1 is unclaimed.

    torch's autograd engine fixes its devices at the first backward() of the process
    (see ``autograd_queue``); a guard registered at import, rather than at init, keeps a
    script that imports lazygen first, trains an eager reference and then calls init()
    working. The guard alone changes nothing else torch does."""
    guards = state.for_process(_Registered).guards
    if not guards and torch._C._get_privateuse1_backend_name() == "privateuseone":
        _register_guard()


def _register_guard() -> None:
    if process.enabled("backward_errors"):
        backward_errors.install()
    if process.enabled("backward_thread"):
        backward_thread.install()
    guards = state.for_process(_Registered).guards
    guards.append(Guard())
    torch._C._acc.register_python_privateuseone_device_guard(guards[-1])


def install(name: str) -> None:
    """Make ``name`` a torch device type backed by lazygen (idempotent for one name)."""
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", name):
        raise LazygenRuntimeError(
            f"lazygen: PrivateUse1 is already taken by {current!r}; only one PrivateUse1 "
            f"backend can exist per process, so the lazy device cannot be named {name!r}"
        )
    if current != name:
        torch.utils.rename_privateuse1_backend(name)
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
        torch._register_device_module(name, DeviceModule)
        torch._C._acc.register_python_privateuseone_hook(Hooks())
        if not state.for_process(_Registered).guards:
            _register_guard()
    libraries = state.for_process(_Registered).libraries
    if not libraries:
        libraries.extend(factories.register())
        libraries.append(subclass_reentry.register())
        libraries.append(host_copy.register())
        if process.enabled("pinned_memory"):
            libraries.append(pinned_memory.register())
        libraries.append(foreach_meta.register())
        libraries.append(resize.register())
        dynamo_interface.register()
        libraries.extend(autocast.register())
        for name, module in (
            ("accelerator_api", accelerator_api),
            ("compile_inputs", compile_inputs),
            ("device_generators", rng),
            ("dlpack", dlpack),
            ("printing", printing),
            ("profiler", profiler),
            ("serialization", serialization),
            ("tied_parameters", tied_parameters),
        ):
            if process.enabled(name):
                module.install()
