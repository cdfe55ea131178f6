"""Streams, events and Dynamo's device interface of the lazy device (issue #41, items 4 and 8)."""

import pytest
import torch
import torch._dynamo.device_interface as device_interface

from lazygen.runtime import devices
from lazygen.runtime.errors import LazygenRuntimeError


def test_device_module_stream_has_its_index():
    """Item 4: ``torch.Stream(device="lazygen:1").device_index`` was 0."""
    stream = torch.lazygen.Stream(device="lazygen:1")
    assert stream.device_index == 1 and stream.device == torch.device("lazygen", 1)
    assert stream != torch.lazygen.Stream(device="lazygen:1")  # a new stream each time
    assert torch.lazygen.default_stream(1) == torch.lazygen.default_stream("lazygen:1")


def test_events_have_ids_and_synchronize():
    """Item 4: ``record_event().event_id`` was 0 and ``synchronize()`` raised."""
    stream = torch.lazygen.current_stream()
    first, second = stream.record_event(), stream.record_event()
    assert first.event_id != second.event_id and first.event_id > 0
    x = torch.ones(3, device="lazygen") * 2
    first.synchronize()
    assert first.query() and stream.query()
    stream.synchronize()
    torch.lazygen.synchronize()
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]


def test_elapsed_time_measures_device_work():
    start = torch.lazygen.Event(enable_timing=True)
    end = torch.lazygen.Event(enable_timing=True)
    start.record()
    x = torch.randn(64, 64, device="lazygen")
    for _ in range(5):
        x = x @ x / 64
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0.0
    with pytest.raises(LazygenRuntimeError, match="enable_timing=True"):
        torch.lazygen.Event().elapsed_time(end)
    with pytest.raises(LazygenRuntimeError, match="record"):
        torch.lazygen.Event(enable_timing=True).elapsed_time(end)


def test_wait_stream_and_stream_context():
    side = torch.lazygen.Stream()
    main = torch.lazygen.current_stream()
    side.wait_stream(main)
    with torch.lazygen.stream(side):
        assert torch.lazygen.current_stream() == side
        y = torch.ones(2, device="lazygen") + 1
    main.wait_stream(side)
    main.wait_event(side.record_event())
    assert torch.lazygen.current_stream() == main
    assert y.cpu().tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="lazygen Stream"):
        main.wait_stream(object())
    # torch's own stream of the device (what torch.accelerator answers) is accepted
    main.wait_stream(torch.accelerator.current_stream())
    assert torch.lazygen.Event().record(torch.accelerator.current_stream()) is None


def test_interprocess_events_are_refused():
    with pytest.raises(LazygenRuntimeError, match="interprocess"):
        torch.lazygen.Event(interprocess=True)


def test_dynamo_has_an_interface_for_the_device():
    """Item 8: ``get_interface_for_device("lazygen")`` raised NotImplementedError."""
    interface = device_interface.get_interface_for_device("lazygen")
    assert interface is device_interface.get_interface_for_device(torch.device("lazygen", 1))
    assert interface.device_count() == devices.device_count()
    assert interface.is_available() and interface.current_device() == 0
    assert interface.Stream is torch.lazygen.Stream and interface.Event is torch.lazygen.Event
    assert interface.current_stream().device_index == 0
    assert interface.is_dtype_supported(torch.bfloat16)
    assert interface.exchange_device(1) == 0
    assert interface.maybe_exchange_device(0) == 1
    assert interface.get_device_properties(0).index == 0


def test_compiled_code_with_device_streams():
    def step(x):
        stream = torch.lazygen.current_stream()
        stream.synchronize()
        return x * 3

    compiled = torch.compile(step, backend="lazygen")
    assert compiled(torch.ones(2, device="lazygen")).cpu().tolist() == [3.0, 3.0]


def test_torch_stream_keeps_index_zero_a_documented_difference():
    """torch's own ``torch.Stream`` asks the C++ guard, which a Python device answers only
    with its type: it stays on index 0 (docs/device-contract.md); index 0 keeps working."""
    assert torch.Stream(device="lazygen:1").device_index == 0
    assert torch.accelerator.current_stream().device == torch.device("lazygen", 0)
    with pytest.raises(RuntimeError, match="Backend doesn't support"):
        torch.Stream(device="lazygen:0").record_event().synchronize()
