"""Streams and events of the lazy device: ``torch.<device>.Stream``/``Event``, the current
stream, and the device's entry in Dynamo's device interfaces.

torch's own ``torch.Stream``/``torch.Event`` of a PrivateUse1 device ask the C++ device
guard, and torch 2.13 lets a Python-registered guard (``torch._C._acc.DeviceGuard``) answer
only its device type: ``torch.Stream(device="lazygen:1").device_index`` is 0, every event
id is 0, and ``Event.synchronize``/``query``/``elapsed_time`` raise "Backend doesn't support
...". Making those work needs native code: a guard whose ``getDevice``/``setDevice``/
``exchangeDevice``/``getStream``/``getNewStream``/``record``/``block``/``queryEvent``/
``synchronizeEvent``/``elapsedTime`` torch can call, i.e. a pybind trampoline for those
virtuals of ``c10::impl::DeviceGuardImplInterface`` (torch exposes only ``type_``), or a
C++ extension, which lazygen does not ship (no compile step at install).

So the lazy device's streams are Python objects with CUDA's API, offered where code asks
the device for them (``torch.get_device_module(device)``, as FSDP2 and Dynamo do):

* one execution queue per lazy device: its graphs run in the order they are launched, so
  every stream of a device is ordered with every other (``wait_stream``/``wait_event``
  need not wait), and ``synchronize()`` on a stream, an event or the device waits for the
  device's graphs, as ``torch.<device>.synchronize()`` does (running pending IR first);
* ``query()`` waits for the graphs already launched and answers True;
* an event with ``enable_timing=True`` runs the device's pending IR and waits for it when
  recorded, so ``start.elapsed_time(end)`` is the wall time of the device work between the
  two records (a timed record cuts the graph there, as ``mark_step`` would).
"""

from __future__ import annotations

import itertools
import time
from types import MappingProxyType

import torch

from .. import devices, state
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..state import settings


class _StreamIds:
    """Stream ids, unique for the process (0 is each device's default stream): torch and
    Dynamo hold the streams handed out, beyond a reset (``state.for_process``)."""

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids = itertools.count(1)


def _device(device) -> torch.device:
    """The lazy device of a ``device=`` argument (None: the current one)."""
    if device is None:
        index = devices.current_index()
    elif isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        device = torch.device(device)
        if not state.is_lazy_device(device):
            raise ValueError(f"lazygen: expected a {settings.device_type} device, got {device}")
        index = devices.current_index() if device.index is None else device.index
    return torch.device(settings.device_type, devices.check_index(index))


def _wait(device: torch.device) -> None:
    executor.mark_step(devices.device_from(device), wait=True)


class Stream:
    """A stream of a lazy device (CUDA's ``torch.cuda.Stream`` API). ``priority`` is kept
    and reported; streams of one device are ordered (see the module docstring)."""

    def __init__(self, device=None, priority: int = 0, *, _stream_id: int | None = None):
        self.device = _device(device)
        self.priority = priority
        if _stream_id is None:
            _stream_id = next(state.for_process(_StreamIds).ids)
        self.stream_id = _stream_id

    @property
    def device_index(self) -> int:
        return self.device.index

    @property
    def device_type(self) -> str:
        return self.device.type

    def query(self) -> bool:
        """Whether the device's launched graphs have finished: always True, after waiting for
        them (a run cannot be polled; a caller spinning on ``query()`` must not spin for
        good). Pending IR is not launched by a query, as on CUDA nothing unsubmitted is."""
        executor.wait_device_ops(devices.device_from(self.device))
        return True

    def synchronize(self) -> None:
        _wait(self.device)

    def wait_stream(self, stream: Stream) -> None:
        _check_same_kind(stream, Stream)

    def wait_event(self, event: Event) -> None:
        _check_same_kind(event, Event)

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Stream)
            and other.device == self.device
            and other.stream_id == self.stream_id
        )

    def __hash__(self) -> int:
        return hash((self.device, self.stream_id))

    def __enter__(self) -> Stream:
        self._previous = current_stream(self.device)
        set_stream(self)
        return self

    def __exit__(self, *exc) -> None:
        set_stream(self._previous)

    def __repr__(self) -> str:
        return (
            f"{settings.device_type}.Stream(device={self.device}, stream_id={self.stream_id}, "
            f"priority={self.priority})"
        )


#: torch's own types, accepted where ours are: code mixes ``torch.accelerator.current_stream()``
#: (a ``torch.Stream`` of the lazy device, index 0) with the device module's streams.
_TORCH_KIND = MappingProxyType({"Stream": torch.Stream, "Event": torch.Event})


def _check_same_kind(value, kind) -> None:
    if not isinstance(value, (kind, _TORCH_KIND[kind.__name__])):
        raise TypeError(
            f"lazygen: expected a {settings.device_type} {kind.__name__}, got "
            f"{type(value).__name__} (make one with torch.{settings.device_type}."
            f"{kind.__name__}())"
        )


class Event:
    """An event of a lazy device (CUDA's ``torch.cuda.Event`` API)."""

    _ids = itertools.count(1)

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        if interprocess:
            raise LazygenRuntimeError(
                "lazygen: interprocess events need device memory handles, which a lazy "
                "device does not have; synchronise processes with torch.distributed instead"
            )
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.event_id = next(self._ids)
        self.device: torch.device | None = None
        self._time: float | None = None

    @property
    def device_index(self) -> int | None:
        return None if self.device is None else self.device.index

    def record(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        _check_same_kind(stream, Stream)
        self.device = _device(stream.device)
        if self.enable_timing:
            _wait(self.device)
            self._time = time.perf_counter()

    def query(self) -> bool:
        return True if self.device is None else Stream(self.device, _stream_id=0).query()

    def synchronize(self) -> None:
        if self.device is not None:
            _wait(self.device)

    def wait(self, stream: Stream | None = None) -> None:
        if stream is not None:
            _check_same_kind(stream, Stream)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds of device work between this event's record and ``end_event``'s."""
        _check_same_kind(end_event, Event)
        if not (self.enable_timing and end_event.enable_timing):
            raise LazygenRuntimeError(
                "lazygen: both events must be created with enable_timing=True to measure "
                "the time between them"
            )
        if self._time is None or end_event._time is None:
            raise LazygenRuntimeError(
                "lazygen: record() both events before asking for the time between them"
            )
        return (end_event._time - self._time) * 1000.0

    def __repr__(self) -> str:
        return f"{settings.device_type}.Event(event_id={self.event_id}, device={self.device})"


def _currents() -> dict:
    """This thread's current streams (as CUDA's, per thread): index -> Stream; on the
    runtime object's ``per_thread``, so a reset makes the default streams current again."""
    per_thread = state.runtime.per_thread
    table = getattr(per_thread, "streams", None)
    if table is None:
        table = per_thread.streams = {}
    return table


def default_stream(device=None) -> Stream:
    device = _device(device)
    return Stream(device, _stream_id=0)


def current_stream(device=None) -> Stream:
    device = _device(device)
    return _currents().get(device.index) or default_stream(device)


def set_stream(stream: Stream) -> None:
    _check_same_kind(stream, Stream)
    _currents()[stream.device_index] = stream


class StreamContext:
    """``torch.<device>.stream(s)``: ``s`` is the current stream of its device inside the
    block (``None`` changes nothing)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
