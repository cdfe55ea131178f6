"""The lazy devices of this process: one ``LazyDevice`` per index, each run by a backend.

``init()`` chooses the default backend; ``set_device_backend`` gives one index another
(``lazygen:0`` TorchScript, ``lazygen:1`` inductor). Devices sharing a backend share its
compile cache; different backends never share one.
"""

from __future__ import annotations

import threading
import time

import torch

from .graph import GraphCache
from .tensor import LazyDevice

_devices: dict[int, LazyDevice] = {}
_lock = threading.Lock()
_default_backend = None
_backend_of_index: dict[int, object] = {}
_caches: dict[int, tuple[object, GraphCache]] = {}  # id(backend) -> (backend, its cache)
_current_index = 0


def configure(default_backend) -> None:
    """Set the backend of every index not given one explicitly (``init()`` does this)."""
    global _default_backend
    with _lock:
        _default_backend = default_backend


def set_device_backend(index: int, backend) -> None:
    """Run ``lazygen:<index>`` on ``backend`` (a ``Backend``); before its first tensor."""
    with _lock:
        device = _devices.get(index)
        if device is not None and device.backend is not backend:
            if _still_holds_tensors(device):
                raise RuntimeError(
                    f"lazygen: {device.torch_device} already holds tensors on backend "
                    f"{device.backend.name!r}; choose its backend before creating any"
                )
            del _devices[index]
        _backend_of_index[index] = backend


#: How long ``set_device_backend`` lets the autograd engine's device thread release tensors.
_RELEASE_GRACE_S = 0.2


def _still_holds_tensors(device: LazyDevice) -> bool:
    """Whether tensors live on ``device``. The autograd engine's device thread drops the
    last references of a backward's tensors just after ``backward()`` returned (see
    ``device.autograd_queue``): those are given a moment to go, so that switching an index's
    backend right after training on it does not fail by a race."""
    deadline = time.monotonic() + _RELEASE_GRACE_S
    while device.live_tensors():
        if time.monotonic() > deadline:
            return True
        time.sleep(0.005)
    return False


def backend_of(index: int):
    backend = _backend_of_index.get(index, _default_backend)
    if backend is None:
        raise RuntimeError("lazygen: call lazygen.runtime.init() before using the lazy device")
    return backend


def cache_of(backend) -> GraphCache:
    entry = _caches.get(id(backend))
    if entry is None or entry[0] is not backend:
        entry = _caches[id(backend)] = (backend, GraphCache())
    return entry[1]


def caches() -> list[GraphCache]:
    return [cache for _, cache in _caches.values()]


def get_device(index: int = 0) -> LazyDevice:
    device = _devices.get(index)
    if device is None:
        with _lock:
            device = _devices.get(index)
            if device is None:
                backend = backend_of(index)
                device = LazyDevice(index, backend, cache_of(backend))
                _devices[index] = device
    return device


def default_device() -> LazyDevice:
    return get_device(_current_index)


def all_devices() -> list[LazyDevice]:
    return list(_devices.values())


def device_count() -> int:
    return max(1, len(_devices), *(i + 1 for i in _backend_of_index))


def current_index() -> int:
    return _current_index


def set_current_index(index: int) -> None:
    global _current_index
    _current_index = index


def device_from(device) -> LazyDevice:
    """The ``LazyDevice`` of a ``device=`` argument (None: the current one)."""
    if device is None:
        return default_device()
    if isinstance(device, LazyDevice):
        return device
    device = torch.device(device)
    return get_device(device.index if device.index is not None else _current_index)
