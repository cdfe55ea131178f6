"""``torch.<device name>``: the device module torch expects of a PrivateUse1 backend, and the
hooks and device guard without which ``backward()`` and ``x.to(device)`` fail."""

from __future__ import annotations

import torch

from .. import devices, state
from ..execution import executor
from ..state import settings
from . import rng, streams
from .backward_errors import take_over_pending_error

_PRIVATE_USE1 = torch._C._autograd.DeviceType.PrivateUse1


def device_index(device) -> int:
    """The index a ``device`` argument names (CUDA's rules: an int is an index; a device or
    string without an index is the current one; another device type is an error)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if device is None:
        return devices.current_index()
    if isinstance(device, (str, torch.device)):
        device = torch.device(device)
        if not state.is_lazy_device(device):
            raise ValueError(
                f"lazygen: expected a {settings.device_type} device, got {device} (a device "
                f"index or '{settings.device_type}:<index>')"
            )
        return devices.current_index() if device.index is None else device.index
    raise TypeError(
        f"lazygen: expected a device index, a device or a device string, got {device!r}"
    )


class _DeviceContext:
    """``torch.<device name>.device(d)``: make ``d`` the current lazy device inside a ``with``
    block, like ``torch.cuda.device`` (torch's storage copies enter it; ``None`` or a
    negative index changes nothing)."""

    def __init__(self, device) -> None:
        self.index = -1 if device is None else device_index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = devices.current_index()
        if self.index >= 0:
            devices.set_current_index(self.index)
        return self

    def __exit__(self, *exc) -> bool:
        if self.index >= 0:
            devices.set_current_index(self.previous)
        return False


class DeviceModule:
    """What torch calls on ``torch.<device name>`` (``Module.to``, RNG helpers, autocast,
    serialization)."""

    device = _DeviceContext

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return devices.device_count()

    @staticmethod
    def current_device() -> int:
        return devices.current_index()

    @staticmethod
    def set_device(device) -> None:
        """As ``torch.cuda.set_device``: an index, ``"<device>:<i>"`` or a device; a negative
        index changes nothing; an index past ``device_count()`` raises."""
        index = device_index(device)
        if index >= 0:
            devices.set_current_index(index)

    # Random numbers: the backing device's generators (see ``rng``). torch's own helpers
    # (``torch.manual_seed``, ``fork_rng``, ``freeze_rng_state``) call these for PrivateUse1.
    manual_seed = staticmethod(rng.manual_seed)
    manual_seed_all = staticmethod(rng.manual_seed_all)
    seed = staticmethod(rng.seed)
    seed_all = staticmethod(rng.seed_all)
    initial_seed = staticmethod(rng.initial_seed)
    get_rng_state = staticmethod(rng.get_rng_state)
    set_rng_state = staticmethod(rng.set_rng_state)
    get_rng_state_all = staticmethod(rng.get_rng_state_all)
    set_rng_state_all = staticmethod(rng.set_rng_state_all)

    @staticmethod
    def synchronize(device=None) -> None:
        executor.mark_step(None if device is None else devices.device_from(device), wait=True)

    # Streams and events (see ``streams``: Python objects with CUDA's API).
    Stream = streams.Stream
    Event = streams.Event
    StreamContext = streams.StreamContext
    stream = staticmethod(streams.stream)
    current_stream = staticmethod(streams.current_stream)
    default_stream = staticmethod(streams.default_stream)
    set_stream = staticmethod(streams.set_stream)

    @staticmethod
    def get_amp_supported_dtype():
        return [torch.float16, torch.bfloat16]

    @staticmethod
    def name() -> str:
        return settings.device_type


class Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class Guard(torch._C._acc.DeviceGuard):
    """The lazy device's guard. torch calls ``type_`` from ``noexcept`` C++, also while an
    error raised in a backward node is unwinding (see ``backward_errors``)."""

    @staticmethod
    def type_():
        take_over_pending_error()
        return _PRIVATE_USE1
