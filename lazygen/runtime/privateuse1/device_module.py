"""``torch.<device name>``: the device module torch expects of a PrivateUse1 backend, and the
hooks and device guard without which ``backward()`` and ``x.to(device)`` fail."""

from __future__ import annotations

import torch

from .. import devices, executor
from ..state import settings
from . import streams
from .backward_errors import take_over_pending_error

_PRIVATE_USE1 = torch._C._autograd.DeviceType.PrivateUse1


class _DeviceContext:
    """``torch.<device name>.device(d)``: make ``d`` the current lazy device inside a ``with``
    block, like ``torch.cuda.device`` (torch's storage copies enter it; ``None`` or a
    negative index changes nothing)."""

    def __init__(self, device) -> None:
        if isinstance(device, (str, torch.device)):
            device = torch.device(device).index
        self.index = -1 if device is None else device
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
    # One order of work (see streams.py): FSDP2 asks for streams and events.
    Stream = streams.Stream
    Event = streams.Event
    stream = staticmethod(streams.stream)
    current_stream = staticmethod(streams.current_stream)
    default_stream = staticmethod(streams.default_stream)

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
    def set_device(index) -> None:
        if isinstance(index, torch.device):
            index = index.index
        devices.set_current_index(index if isinstance(index, int) else 0)

    # Random numbers of lazy tensors come from the data device's generator (fallback ops
    # and compiled graphs both run there), so the RNG API forwards to it. torch's own
    # helpers (e.g. `torch.testing._utils.freeze_rng_state`) call these for PrivateUse1.
    @staticmethod
    def _backing_rng():
        backing = devices.default_device().backing
        return torch.cuda if backing.type == "cuda" else torch.random

    @staticmethod
    def get_rng_state(device=None) -> torch.Tensor:
        return DeviceModule._backing_rng().get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device=None) -> None:
        DeviceModule._backing_rng().set_rng_state(state)

    @staticmethod
    def manual_seed(seed: int) -> None:
        # torch.manual_seed seeds the CPU generator and then calls this; a CPU data device
        # is therefore already seeded (and calling back would recurse).
        if devices.default_device().backing.type == "cuda":
            torch.cuda.manual_seed(seed)

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        DeviceModule.manual_seed(seed)

    @staticmethod
    def initial_seed() -> int:
        return DeviceModule._backing_rng().initial_seed()

    @staticmethod
    def synchronize(device=None) -> None:
        executor.mark_step(None if device is None else devices.device_from(device), wait=True)

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
