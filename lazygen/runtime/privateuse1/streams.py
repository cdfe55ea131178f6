"""Streams and events of the lazy device, as device-agnostic torch code calls them
(``torch.<device name>.Stream``, ``.Event``, ``.stream(s)``, ``.current_stream()``).

FSDP2 overlaps its all-gathers and reduce-scatters with compute on separate streams and
orders them with events (``torch/distributed/fsdp/_fully_shard``). A lazy device has one
order of work: ops are recorded in program order and each graph runs after the ones
before it, its collectives inside it. So every stream of the lazy device is that one
order, ``wait_stream``/``wait_event`` have nothing to wait for, and an event is complete
once the graphs launched before it have run (``synchronize`` waits for them), as
``torch.cpu``'s stand-ins for device-agnostic code are.
"""

from __future__ import annotations

import contextlib
import threading

from .. import executor

_local = threading.local()


class Stream:
    """A stream of the lazy device: the device's one order of work (see the module)."""

    def __init__(self, device=None, priority: int = 0) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        """Work on ``stream`` is already ordered before later work: nothing to do."""

    def wait_event(self, event) -> None:
        """Events complete in order with the work: nothing to do."""

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        executor.wait_device_ops()


class Event:
    """An event of the lazy device: a point in its one order of work."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        self.enable_timing = enable_timing

    def record(self, stream=None):
        return self

    def wait(self, stream=None) -> None:
        """Later work already runs after the recorded point: nothing to do."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        executor.wait_device_ops()


_default = Stream()


def current_stream(device=None) -> Stream:
    return getattr(_local, "stream", _default)


def default_stream(device=None) -> Stream:
    return _default


@contextlib.contextmanager
def stream(selected):
    """Make ``selected`` the current stream inside the block (``None`` changes nothing)."""
    previous = current_stream()
    if selected is not None:
        _local.stream = selected
    try:
        yield selected
    finally:
        _local.stream = previous
