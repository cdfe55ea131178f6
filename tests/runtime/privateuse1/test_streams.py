"""Streams and events of the lazy device (``privateuse1/streams.py``): what device-agnostic
code such as FSDP2 asks of ``torch.<device>`` (it failed with "'DeviceModule' has no
attribute 'Stream'"). The device has one order of work, so they order nothing themselves."""

from __future__ import annotations

import threading

import torch

import lazygen.runtime as lr


def test_stream_context_selects_the_current_stream_and_restores_it():
    module = torch.lazygen
    default = module.current_stream()
    assert default is module.default_stream()
    side = module.Stream(priority=-1)
    assert side.priority == -1
    with module.stream(side):
        assert module.current_stream() is side
        with module.stream(None):  # None changes nothing, as torch.cuda.stream(None)
            assert module.current_stream() is side
    assert module.current_stream() is default


def test_current_stream_is_per_thread():
    module = torch.lazygen
    seen = []
    with module.stream(module.Stream()):
        thread = threading.Thread(target=lambda: seen.append(module.current_stream()))
        thread.start()
        thread.join()
    assert seen == [module.default_stream()]


def test_events_record_wait_and_synchronize_after_the_graphs_ran():
    module = torch.lazygen
    x = torch.ones(3, device=lr.device()) * 3
    lr.mark_step()
    stream = module.current_stream()
    event = stream.record_event()
    assert isinstance(event, module.Event) and event.query()
    module.Stream().wait_event(event)
    module.Stream().wait_stream(stream)
    event.synchronize()
    stream.synchronize()
    assert module.Event().record() is not None
    assert x.cpu().tolist() == [3.0, 3.0, 3.0]
