"""``lazygen.dynamo.streams``: compiled frames get the lazy device's one stream from a
cache, not from torch's device guard on every call."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo.utils

import lazygen.runtime as lr
from lazygen.dynamo import streams
from lazygen.runtime.state import for_process


def _compiled_add():
    @torch.compile(backend="lazygen")
    def add(x):
        return x + 1

    return add


def test_compiled_frames_do_not_ask_the_device_guard(monkeypatch):
    """Dynamo registers the current stream in every frame it compiles while an
    accelerator is available; each call then looks it up. After the first, none of those
    lookups reaches torch (``torch._C._accelerator_getStream``, the Python device guard)."""
    add = _compiled_add()
    x = torch.ones(3)
    add(x)  # compiles; installs the cache
    asked = []
    original = torch._C._accelerator_getStream

    def counting(index):
        asked.append(index)
        return original(index)

    monkeypatch.setattr(torch._C, "_accelerator_getStream", counting)
    for _ in range(5):
        assert torch.equal(add(x), x + 1)
    assert asked == []
    assert torch._dynamo.utils.get_current_stream == for_process(streams.Streams).current_stream


def test_the_cached_stream_is_torchs_answer():
    _compiled_add()(torch.ones(2))
    device = torch.device(lr.device_name(), 0)
    first = streams.current_stream(device)
    assert first == torch.accelerator.current_stream(0)
    assert streams.current_stream(device) is first
    assert streams.current_stream(torch.device(lr.device_name())) == first  # index None


def test_other_devices_get_torchs_own_lookup():
    _compiled_add()(torch.ones(2))
    with pytest.raises(ValueError) as ours:
        streams.current_stream(torch.device("cpu"))
    with pytest.raises(ValueError) as torchs:
        torch.accelerator.current_stream(torch.device("cpu"))
    assert str(ours.value) == str(torchs.value)


def test_a_compiled_function_reading_the_current_stream_sees_eagers():
    @torch.compile(backend="lazygen")
    def which(x):
        return x * 2, torch.accelerator.current_stream()

    x = torch.ones(2, device=lr.device_name())
    out, stream = which(x)
    assert stream == torch.accelerator.current_stream()
    assert torch.equal(out.cpu(), torch.full((2,), 2.0))


def test_only_explicit_indices_are_cached_by_device():
    """Dynamo's bytecode asks with an explicit index; a device without one follows the
    current index, so its answer is never kept under that device."""
    _compiled_add()(torch.ones(2))
    name = lr.device_name()
    by_device = for_process(streams.Streams).by_device
    assert streams.current_stream(torch.device(name, 0)) is by_device[torch.device(name, 0)]
    streams.current_stream(torch.device(name))
    assert torch.device(name) not in by_device


def _counting_registry_stores(monkeypatch) -> list:
    """Calls of the registry refresh Dynamo's prologue makes before a frame's graph."""
    import torch._dynamo.graph_bytecode_inputs as registry

    stores = []
    original = registry.store_user_object_weakrefs

    def counting(*objects):
        stores.append(objects)
        return original(*objects)

    monkeypatch.setattr(registry, "store_user_object_weakrefs", counting)
    return stores


def test_a_frame_that_never_reads_its_stream_has_no_prologue(monkeypatch):
    """With the lazy device up before the frame is traced, Dynamo registers its current
    stream; nothing in ``x * 2 + 1`` reads it, so the backend drops the registration and
    the compiled frame refreshes no registry on its calls."""
    lr.init()
    stores = _counting_registry_stores(monkeypatch)

    @torch.compile(backend="lazygen")
    def affine(x):
        return x * 2 + 1

    x = torch.arange(3.0)
    for _ in range(3):
        assert torch.equal(affine(x), x * 2 + 1)
    assert stores == []


def test_a_frame_that_reads_its_stream_keeps_the_registration(monkeypatch):
    """A frame that asks for the current stream realises Dynamo's variable for it: the
    registration stays, and the stream it returns is eager's."""
    lr.init()
    forgotten = []
    original = streams.forget_unread_current_stream
    monkeypatch.setattr(
        streams,
        "forget_unread_current_stream",
        lambda gm: forgotten.append(original(gm)) or forgotten[-1],
    )

    @torch.compile(backend="lazygen")
    def with_stream(x):
        return x + 1, torch.accelerator.current_stream()

    out, stream = with_stream(torch.ones(2))
    assert stream == torch.accelerator.current_stream()
    assert torch.equal(out, torch.full((2,), 2.0))
    assert forgotten == [False]


def test_the_registration_is_kept_outside_dynamos_tracing():
    """Called without a frame being traced (a backend called by hand), nothing changes."""
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    assert streams.forget_unread_current_stream(gm) is False


@pytest.mark.parametrize(
    "target",
    [torch.ops.streams.fork, torch.ops.streams.fork.default],
    ids=["packet", "overload"],
)
def test_a_stream_op_in_the_graph_counts_as_reading_streams(target):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(target, (0, 1))
    graph.output(x)
    _, fork, _ = graph.nodes
    assert streams._reads_streams(fork)
    add = graph.call_function(torch.ops.aten.add.Tensor, (x, x))
    assert not streams._reads_streams(add)
