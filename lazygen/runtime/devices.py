"""The lazy devices of this process: one ``LazyDevice`` per index, each run by a backend.

``init()`` chooses the default backend; ``set_device_backend`` gives one index another
(``lazygen:0`` TorchScript, ``lazygen:1`` inductor). Devices sharing a backend share its
compile cache; different backends never share one.
"""

from __future__ import annotations

import os
import threading
import time
import weakref

import torch

from . import state
from .errors import LazygenRuntimeError
from .graph import GraphCache
from .state import settings

_MIN_PRUNE = 4096


class LazyDevice:
    """One lazy device (``lazygen:<index>``): its backend and that backend's compile cache,
    the torch device its data lives on (``backing``), live tensors and the sync lock."""

    def __init__(self, index: int, backend, cache: GraphCache) -> None:
        self.index = index
        self.torch_device = torch.device(settings.device_type, index)
        self.backend = backend
        self.cache = cache
        self.backing = backend.data_device(index)
        self.lock = threading.RLock()  # held while syncing
        # Weak references to live tensors in creation order: a graph's outputs, hence its
        # structure and hash, must not depend on set iteration order, or every step
        # compiles anew. Plain references without a callback (a callback is a Python call
        # per dead tensor, i.e. per traced op); dead ones are dropped when the list doubles
        # and at every sync of all live tensors.
        self.live: list[weakref.ref] = []
        self.prune_at = _MIN_PRUNE
        self.pending_nodes = 0
        self.in_flight: list = []  # launches.Launch of graphs still running, oldest first
        # Tensors the next sync of this device materialises first, in this order, whether
        # or not anyone reads them: results of collectives, which every process of a group
        # must run, in one order, even where its result is dropped (see ``executor.sync``).
        self.must_run: list = []  # tensor.LazyTensor
        # While a foreach op or a Dynamo capture traces: (kind, value) -> its graph input
        # (``tensor.shared_scalars``, ``tensor.fixed_scalars``; an ``ir.ScalarTable``).
        self.shared_scalars: dict | None = None
        # Captured graphs spliced into the pending graph since it last ran whole
        # (``graph.fragments``): while any is, a sync runs every pending tensor of the device,
        # so that a step's calls run as one program (``executor.sync``).
        self.spliced: set = set()
        # What the last whole step's sync found (``execution/step_plan.py``), or None.
        self.step_plan = None
        # Plans of the early-results split (``execution/split_plan.py``), most recently used
        # first, and the pair of graph keys the last generic split made.
        self.split_plans: list = []
        self.split_last: tuple | None = None

    def prune(self) -> None:
        """Drop references to dead tensors (in place: other threads may be appending)."""
        with self.lock:
            live = self.live
            n = len(live)
            live[:n] = [ref for ref in live[:n] if ref() is not None]
            self.prune_at = max(_MIN_PRUNE, 2 * len(live))

    def live_tensors(self) -> list:
        """Live (inner, ``tensor.LazyTensor``) tensors, oldest first."""
        self.prune()
        tensors = [ref() for ref in list(self.live)]
        return [t for t in tensors if t is not None]

    def __repr__(self) -> str:
        return f"LazyDevice({self.torch_device}, {self.backend.name}, data on {self.backing})"


_lock = threading.Lock()

#: Lazy devices a process has when neither ``LAZYGEN_DEVICE_COUNT`` nor
#: ``init(device_count=...)`` says otherwise. A lazy device costs nothing until a tensor
#: lands on it, and one host's multi-device programs (a rank per device index, as torchrun
#: lays out an 8-GPU node) need several.
DEFAULT_DEVICE_COUNT = 8


def _count_from_environment() -> int:
    text = os.environ.get("LAZYGEN_DEVICE_COUNT", "").strip()
    if not text:
        return DEFAULT_DEVICE_COUNT
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(
            f"lazygen: LAZYGEN_DEVICE_COUNT={text!r} is not a positive integer; set the number "
            "of lazy devices (lazygen:0 ... lazygen:<count-1>) the process offers"
        )
    return count


class Devices:
    """The lazy devices and their backends (a part of ``state.runtime``).

    ``init()`` fixes the devices, their backends and how many there are: live tensors hold
    the devices, so a reset keeps them (``on_reset``), emptying the backends' compile
    caches (in place: each device holds its cache) and making index 0 current again."""

    def __init__(self) -> None:
        self.devices: dict[int, LazyDevice] = {}
        self.default_backend = None
        self.backend_of_index: dict[int, object] = {}
        self.caches: dict[int, tuple[object, GraphCache]] = {}  # id(backend) -> (it, cache)
        self.current_index = 0
        self.count = _count_from_environment()

    def on_reset(self) -> Devices:
        for _, cache in self.caches.values():
            cache.clear()
        self.current_index = 0
        return self


def _table() -> Devices:
    try:
        return state.runtime.parts[Devices]
    except KeyError:
        return state.part(Devices)


def set_device_count(count: int) -> None:
    """Offer ``count`` lazy devices (``init(device_count=...)``); indices already holding
    a device or a backend stay valid."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"lazygen: device_count must be a positive integer, got {count!r}")
    _table().count = count


def check_index(index: int) -> int:
    """``index`` if it names a lazy device of this process, else CUDA's error for an invalid
    device ordinal, saying how to have more devices."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"lazygen: a device index is an int, got {type(index).__name__}")
    if not 0 <= index < device_count():
        raise LazygenRuntimeError(
            f"lazygen: invalid device ordinal: {settings.device_type}:{index} does not exist; "
            f"this process has {device_count()} lazy devices (indices 0 to "
            f"{device_count() - 1}); set LAZYGEN_DEVICE_COUNT or "
            "init(device_count=...) for more"
        )
    return index


def configure(default_backend) -> None:
    """Set the backend of every index not given one explicitly (``init()`` does this)."""
    with _lock:
        _table().default_backend = default_backend


def default_backend():
    """The backend ``init()`` chose (None before ``init()``)."""
    return _table().default_backend


def set_device_backend(index: int, backend) -> None:
    """Run ``lazygen:<index>`` on ``backend`` (a ``Backend``); before its first tensor. An
    index at or past the device count is valid (the count grows to include it); a negative
    one or a non-int is an error here, rather than a device torch cannot name later."""
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise LazygenRuntimeError(
            f"lazygen: set_device_backend takes a device index, an int from 0 "
            f"({settings.device_type}:0), got {index!r}"
        )
    table = _table()
    with _lock:
        device = table.devices.get(index)
        if device is not None and device.backend is not backend:
            if _still_holds_tensors(device):
                raise LazygenRuntimeError(
                    f"lazygen: {device.torch_device} already holds tensors on backend "
                    f"{device.backend.name!r}; choose its backend before creating any"
                )
            del table.devices[index]
        table.backend_of_index[index] = backend


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
    table = _table()
    backend = table.backend_of_index.get(index, table.default_backend)
    if backend is None:
        raise LazygenRuntimeError(
            "lazygen: call lazygen.runtime.init() before using the lazy device"
        )
    return backend


def cache_of(backend) -> GraphCache:
    caches = _table().caches
    entry = caches.get(id(backend))
    if entry is None or entry[0] is not backend:
        entry = caches[id(backend)] = (backend, GraphCache())
    return entry[1]


def caches() -> list[GraphCache]:
    return [cache for _, cache in _table().caches.values()]


def get_device(index: int = 0) -> LazyDevice:
    try:  # ``_table()`` inlined: every traced op without a lazy operand comes here
        table = state.runtime.parts[Devices]
    except KeyError:
        table = state.part(Devices)
    device = table.devices.get(index)
    if device is None:
        with _lock:
            device = table.devices.get(index)
            if device is None:
                check_index(index)
                backend = backend_of(index)
                device = LazyDevice(index, backend, cache_of(backend))
                table.devices[index] = device
    return device


def backing_of(index: int) -> torch.device:
    """Where ``lazygen:<index>``'s data lives, without creating the device (a device that
    exists makes ops check their inputs' devices: ``several_in_use``)."""
    device = _table().devices.get(index)
    if device is not None:
        return device.backing
    return backend_of(check_index(index)).data_device(index)


def default_device() -> LazyDevice:
    return get_device(_table().current_index)


def several_in_use() -> bool:
    """Whether tensors may live on more than one lazy device (then ops check their inputs'
    devices; a one-device program skips the check)."""
    try:  # ``_table()`` inlined: every traced op asks
        return len(state.runtime.parts[Devices].devices) > 1
    except KeyError:
        return False


def all_devices() -> list[LazyDevice]:
    return list(_table().devices.values())


def device_count() -> int:
    table = _table()
    indices = [*table.devices, *table.backend_of_index]
    return max([table.count, *[i + 1 for i in indices]])


def current_index() -> int:
    return _table().current_index


def set_current_index(index: int) -> None:
    _table().current_index = check_index(index)


def device_from(device) -> LazyDevice:
    """The ``LazyDevice`` of a ``device=`` argument (None: the current one)."""
    if device is None:
        return default_device()
    if isinstance(device, LazyDevice):
        return device
    device = torch.device(device)
    index = device.index
    return get_device(index if index is not None else _table().current_index)
