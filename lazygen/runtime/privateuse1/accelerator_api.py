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

A process-wide effect (``accelerator_api`` in ``process.EFFECTS``;
``LAZYGEN_ACCELERATOR_API=0`` leaves torch's functions alone).
"""

from __future__ import annotations

import functools

import torch
import torch.accelerator
import torch.accelerator.memory

from .. import devices, executor
from ..errors import LazygenRuntimeError
from ..state import settings

#: Functions that read or reset allocator statistics, and CUDA's counterpart of each.
_STATISTICS = {
    "memory_stats": "memory_stats",
    "memory_allocated": "memory_allocated",
    "max_memory_allocated": "max_memory_allocated",
    "memory_reserved": "memory_reserved",
    "max_memory_reserved": "max_memory_reserved",
    "reset_accumulated_memory_stats": "reset_accumulated_memory_stats",
    "reset_peak_memory_stats": "reset_peak_memory_stats",
    "get_memory_info": "mem_get_info",
}

_originals: dict = {}


def _lazy_is_current() -> bool:
    current = torch.accelerator.current_accelerator()
    return current is not None and current.type == settings.device_type


def _backing() -> torch.device:
    return devices.default_device().backing


def _synchronize(device=None) -> None:
    if not _lazy_is_current():
        return _originals["synchronize"](device)
    index = None if device is None else torch.accelerator._utils._get_device_index(device)
    executor.mark_step(None if index is None else devices.device_from(index), wait=True)


def _empty_cache() -> None:
    if not _lazy_is_current():
        return _originals["empty_cache"]()
    if _backing().type == "cuda":
        torch.cuda.empty_cache()


def _empty_host_cache() -> None:
    if not _lazy_is_current():
        return _originals["empty_host_cache"]()


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

    _originals[name] = original
    return wrapper


def install() -> None:
    """Wrap the functions above (once per process)."""
    if _originals:
        return
    _originals["synchronize"] = torch.accelerator.synchronize
    _originals["empty_cache"] = torch.accelerator.memory.empty_cache
    _originals["empty_host_cache"] = torch.accelerator.memory.empty_host_cache
    wrappers = {
        "empty_cache": _empty_cache,
        "empty_host_cache": _empty_host_cache,
        **{name: _statistic(name) for name in _STATISTICS},
    }
    for name, wrapper in wrappers.items():
        setattr(torch.accelerator.memory, name, wrapper)
        if hasattr(torch.accelerator, name):
            setattr(torch.accelerator, name, wrapper)
    torch.accelerator.synchronize = _synchronize
