"""The lazy device's entry among Dynamo's device interfaces.

``torch._dynamo.device_interface.get_interface_for_device(<device>)`` is how Dynamo, Inductor
and their helpers ask a device for its streams, events, current index and properties
(compiling code that uses streams, ``torch._dynamo.utils`` stream bookkeeping). For the lazy
device it raised ``NotImplementedError: No interface for device lazygen``. ``register()``
adds one, answered by the device module (``torch.<device>``: ``devices``, ``streams``).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

from .. import devices, process
from ..state import settings
from . import streams
from .accelerator_api import supported_dtypes
from .device_module import DeviceModule, device_index


def _properties(device=None) -> SimpleNamespace:
    index = devices.check_index(device_index(device))
    backing = devices.get_device(index).backing
    return SimpleNamespace(name=f"{settings.device_type}:{index} (data on {backing})", index=index)


class _LazyDeviceAnswers:
    """What Dynamo's device interface answers for the lazy device (see the module
    docstring): the class ``register`` derives from Dynamo's ``DeviceInterface``, kept at
    module level because none of it needs ``torch._dynamo``, which only the base class does
    (and is imported when registering)."""

    device = DeviceModule.device
    Event = streams.Event
    Stream = streams.Stream

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            DeviceModule.set_device(device)

        @staticmethod
        def current_device() -> int:
            return DeviceModule.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return _properties(device)

    current_device = staticmethod(DeviceModule.current_device)
    set_device = staticmethod(DeviceModule.set_device)
    device_count = staticmethod(DeviceModule.device_count)
    is_available = staticmethod(DeviceModule.is_available)
    synchronize = staticmethod(DeviceModule.synchronize)
    stream = staticmethod(streams.stream)
    current_stream = staticmethod(streams.current_stream)
    set_stream = staticmethod(streams.set_stream)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = devices.current_index()
        devices.set_current_index(device)
        return previous

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        previous = devices.current_index()
        if device >= 0:
            devices.set_current_index(device)
        return previous

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return 0

    @classmethod
    def get_device_properties(cls, device=None):
        return _properties(device)

    @staticmethod
    def get_compute_capability(device=None) -> str:
        return ""  # no compute capability: the backing device runs the graphs

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_dtype_supported(dtype, including_emulation: bool = False) -> bool:
        return dtype in supported_dtypes()

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False


def register() -> None:
    """Register the interface once ``torch._dynamo`` is imported (``process.when_imported``):
    torch imports it at the first optimizer step; ``init()`` must not pay its ~1.2 s."""
    process.when_imported("torch._dynamo", _register)


def _register(dynamo) -> None:
    """Register the interface under the device type and each ``<type>:<index>``."""
    device_interface = importlib.import_module(f"{dynamo.__name__}.device_interface")

    class LazyDeviceInterface(_LazyDeviceAnswers, device_interface.DeviceInterface):
        """Dynamo's view of the lazy device (see the module docstring)."""

    name = settings.device_type
    device_interface.register_interface_for_device(name, LazyDeviceInterface)
    for index in range(devices.device_count()):
        device_interface.register_interface_for_device(f"{name}:{index}", LazyDeviceInterface)
