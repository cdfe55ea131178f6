"""``torch.accelerator``'s memory and synchronisation functions for the lazy device.

Where no CUDA device exists, the lazy device is torch's current accelerator, and
``torch.accelerator.empty_cache()``, ``memory_allocated()``, ``memory_stats()``... ask its
C++ ``DeviceAllocator``, which a Python PrivateUse1 backend cannot register: they failed
with torch's "device_allocator INTERNAL ASSERT FAILED ... Allocator for lazygen is not a
DeviceAllocator", and ``synchronize()`` with "Backend doesn't support synchronizing all
streams". Training loops call ``empty_cache()`` and ``synchronize()`` between steps.

``install()`` wraps them (in ``torch.accelerator`` and ``torch.accelerator.memory``); each
wrapper changes nothing unless the current accelerator is the lazy device:

* ``synchronize()`` waits for the device's graphs, as ``torch.<device>.synchronize()``;
* ``empty_cache()``/``empty_host_cache()``: the lazy device caches no memory of its own
  (no-ops; with a CUDA backing device, ``empty_cache()`` empties CUDA's cache);
* the statistics (``memory_stats()`` and the ``memory_*``/``reset_*``/``get_memory_info``
  that read or reset them) are the backing device's when it is CUDA, else a clear error:
  device data lives in host memory, which no allocator of torch's counts.

The device-index functions (``device_count``, ``current_device_index``, ``set_device_index``,
``device_index``, ``get_device_capability``) ask the C++ device guard, which torch 2.13 lets
a Python device answer only with its type: they reported one device and index 0 whatever
was set, and the capability query raised. The wrappers answer from ``devices`` (the lazy
devices, the current index) and validate indices as CUDA does.

A process-wide effect (``accelerator_api`` in ``process.EFFECTS``;
``LAZYGEN_ACCELERATOR_API=0`` leaves torch's functions alone).
"""

from __future__ import annotations

import functools
from types import MappingProxyType

import torch
import torch.accelerator
import torch.accelerator.memory

from .. import devices
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..state import settings
from . import patches
from .device_module import device_index as _index_of

#: Functions that read or reset allocator statistics, and CUDA's counterpart of each.
_STATISTICS = MappingProxyType(
    {
        "memory_stats": "memory_stats",
        "memory_allocated": "memory_allocated",
        "max_memory_allocated": "max_memory_allocated",
        "memory_reserved": "memory_reserved",
        "max_memory_reserved": "max_memory_reserved",
        "reset_accumulated_memory_stats": "reset_accumulated_memory_stats",
        "reset_peak_memory_stats": "reset_peak_memory_stats",
        "get_memory_info": "mem_get_info",
    }
)


def _original(name: str):
    """``torch.accelerator.<name>`` as torch defined it."""
    return patches.original(torch.accelerator, name)


def _lazy_is_current() -> bool:
    current = torch.accelerator.current_accelerator()
    return current is not None and current.type == settings.device_type


def _backing() -> torch.device:
    return devices.default_device().backing


def _synchronize(device=None) -> None:
    if not _lazy_is_current():
        return _original("synchronize")(device)
    index = None if device is None else torch.accelerator._utils._get_device_index(device)
    executor.mark_step(None if index is None else devices.device_from(index), wait=True)


def _device_count() -> int:
    if not _lazy_is_current():
        return _original("device_count")()
    return devices.device_count()


def _current_device_index() -> int:
    if not _lazy_is_current():
        return _original("current_device_index")()
    return devices.current_index()


def _set_device_index(device, /) -> None:
    if not _lazy_is_current():
        return _original("set_device_index")(device)
    index = _index_of(device)
    if index >= 0:
        devices.set_current_index(index)


class _DeviceIndex:
    """``torch.accelerator.device_index(i)``: the current lazy device is ``i`` inside the
    block (``None`` changes nothing)."""

    def __init__(self, device: int | None, /) -> None:
        self.original = None if _lazy_is_current() else _original("device_index")(device)
        self.index = device
        self.previous = -1

    def __enter__(self) -> None:
        if self.original is not None:
            return self.original.__enter__()
        if self.index is not None:
            self.previous = devices.current_index()
            _set_device_index(self.index)

    def __exit__(self, *exc_info) -> None:
        if self.original is not None:
            return self.original.__exit__(*exc_info)
        if self.index is not None:
            devices.set_current_index(self.previous)


def _get_device_capability(device=None, /) -> dict:
    if not _lazy_is_current():
        return _original("get_device_capability")(device)
    index = devices.check_index(_index_of(device))
    backing = devices.get_device(index).backing
    if backing.type == "cuda":
        return _original("get_device_capability")(backing)
    return {"supported_dtypes": supported_dtypes()}


def supported_dtypes() -> list[torch.dtype]:
    """The dtypes of a lazy device with a CPU backing: every dtype eager's CPU kernels take."""
    return sorted(_CPU_DTYPES, key=str)


_CPU_DTYPES = frozenset(
    {
        getattr(torch, name)
        for name in [
            "bool",
            "uint8",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint16",
            "uint32",
            "uint64",
            "float16",
            "bfloat16",
            "float32",
            "float64",
            "complex32",
            "complex64",
            "complex128",
        ]
    }
)


def _empty_cache() -> None:
    if not _lazy_is_current():
        return patches.original(torch.accelerator.memory, "empty_cache")()
    if _backing().type == "cuda":
        torch.cuda.empty_cache()


def _empty_host_cache() -> None:
    if not _lazy_is_current():
        return patches.original(torch.accelerator.memory, "empty_host_cache")()


def _statistic(name: str):
    original = getattr(torch.accelerator.memory, name)

    @functools.wraps(original)
    def wrapper(device_index=None, /):
        if not _lazy_is_current():
            return original(device_index)
        backing = _backing()
        if backing.type == "cuda":
            return getattr(torch.cuda, _STATISTICS[name])(backing)
        device = settings.device_type
        raise LazygenRuntimeError(
            f"lazygen: torch.accelerator.{name}() has no answer for the {device} device: its "
            f"data lives on the backing device ({backing}), whose host memory no torch "
            "allocator counts. Measure the process's memory instead (e.g. psutil), or run "
            "with LAZYGEN_BACKING_DEVICE=cuda, where these report CUDA's allocator"
        )

    return wrapper


def install() -> None:
    """Wrap the functions above (once per process)."""
    if patches.replaced(torch.accelerator, "synchronize"):
        return
    wrappers = {
        "empty_cache": _empty_cache,
        "empty_host_cache": _empty_host_cache,
        **{name: _statistic(name) for name in _STATISTICS},
    }
    for name, wrapper in wrappers.items():
        patches.replace(torch.accelerator.memory, name, wrapper)
        if hasattr(torch.accelerator, name):
            patches.replace(torch.accelerator, name, wrapper)
    patches.replace(torch.accelerator, "synchronize", _synchronize)
    for name, wrapper in (
        ("device_count", _device_count),
        ("current_device_index", _current_device_index),
        ("current_device_idx", _current_device_index),
        ("set_device_index", _set_device_index),
        ("set_device_idx", _set_device_index),
        ("device_index", _DeviceIndex),
        ("get_device_capability", _get_device_capability),
    ):
        patches.replace(torch.accelerator, name, wrapper)
