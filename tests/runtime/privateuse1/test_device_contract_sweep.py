"""The device contract, swept: what code written for CUDA asks of an accelerator (the device
module, ``torch.accelerator``, generators, streams and events, storages, serialisation with
``map_location``, DLPack, the profiler, autocast), asked of the lazy device.

Each case either behaves as CUDA's documentation says (``case``) or is pinned to a
documented difference (``difference``): the case asserts the lazy device's documented
behaviour, and docs/device-contract.md names the case in its table of differences (checked
below). A difference that goes away makes its case fail, so the table stays true.
"""

import io
import re
import warnings
from pathlib import Path

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import devices
from lazygen.runtime.errors import LazygenRuntimeError

DOC = Path(__file__).resolve().parents[3] / "docs" / "device-contract.md"

CASES: dict = {}  # name -> (function, difference or None)


def case(function):
    CASES[function.__name__] = (function, None)
    return function


def difference(function):
    CASES[function.__name__] = (function, "documented difference")
    return function


@pytest.fixture(autouse=True)
def _current_index_zero():
    yield
    devices.set_current_index(0)


# The device module (torch.cuda's API) ------------------------------------------------------


@case
def module_is_available():
    module = torch.get_device_module("lazygen")
    assert module is torch.lazygen and module.is_available() and module.is_initialized()


@case
def module_device_count_and_current_device():
    assert torch.lazygen.device_count() >= 2
    assert torch.lazygen.current_device() == 0


@case
def module_set_device():
    torch.lazygen.set_device(1)
    assert torch.lazygen.current_device() == 1
    torch.lazygen.set_device("lazygen:0")
    assert torch.lazygen.current_device() == 0


@case
def module_set_device_out_of_range():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.lazygen.set_device(torch.lazygen.device_count())


@case
def module_device_context():
    with torch.lazygen.device(1):
        assert torch.zeros(1, device="lazygen").device.index == 1
    assert torch.lazygen.current_device() == 0


@case
def module_synchronize():
    x = torch.ones(2, device="lazygen") + 1
    torch.lazygen.synchronize()
    torch.lazygen.synchronize("lazygen:0")
    assert x.cpu().tolist() == [2.0, 2.0]


@case
def module_amp_dtypes():
    assert torch.bfloat16 in torch.lazygen.get_amp_supported_dtype()


@case
def module_manual_seed_repeats():
    torch.lazygen.manual_seed(11)
    first = torch.rand(4, device="lazygen").cpu()
    torch.lazygen.manual_seed(11)
    assert torch.equal(first, torch.rand(4, device="lazygen").cpu())


@case
def module_manual_seed_all_repeats():
    torch.lazygen.manual_seed_all(12)
    first = torch.rand(4, device="lazygen:1").cpu()
    torch.lazygen.manual_seed_all(12)
    assert torch.equal(first, torch.rand(4, device="lazygen:1").cpu())


@case
def module_seed_and_initial_seed():
    torch.lazygen.seed()
    torch.lazygen.seed_all()
    torch.lazygen.manual_seed(5)
    assert torch.lazygen.initial_seed() == 5


@case
def module_rng_state_round_trip():
    state = torch.lazygen.get_rng_state()
    first = torch.randn(3, device="lazygen").cpu()
    torch.lazygen.set_rng_state(state)
    assert torch.equal(first, torch.randn(3, device="lazygen").cpu())


@case
def module_rng_state_all_round_trip():
    states = torch.lazygen.get_rng_state_all()
    assert len(states) == torch.lazygen.device_count()
    first = torch.randn(3, device="lazygen").cpu()
    torch.lazygen.set_rng_state_all(states)
    assert torch.equal(first, torch.randn(3, device="lazygen").cpu())


@difference
def module_rng_is_the_backing_devices():
    """The lazy device draws from its backing device's generator (the CPU's): seeding one
    seeds the other, where CUDA's generators are separate from the CPU's."""
    torch.lazygen.manual_seed(21)
    lazy = torch.rand(3, device="lazygen").cpu()
    assert torch.default_generator.initial_seed() == 21
    torch.manual_seed(21)
    assert torch.equal(lazy, torch.rand(3))


@case
def module_streams():
    assert torch.lazygen.current_stream() == torch.lazygen.default_stream()
    stream = torch.lazygen.Stream()
    with torch.lazygen.stream(stream):
        assert torch.lazygen.current_stream() == stream
    torch.lazygen.set_stream(torch.lazygen.default_stream())


# torch.accelerator -------------------------------------------------------------------------


@case
def accelerator_is_the_lazy_device():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("lazygen")


@case
def accelerator_device_count():
    assert torch.accelerator.device_count() == torch.lazygen.device_count()


@case
def accelerator_set_device_index():
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    assert torch.empty(1, device="lazygen").device.index == 1


@case
def accelerator_invalid_index():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.accelerator.set_device_index(torch.accelerator.device_count())


@case
def accelerator_device_index_context():
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
    with torch.accelerator.device_index(None):
        assert torch.accelerator.current_device_index() == 0


@case
def accelerator_device_capability():
    assert torch.float32 in torch.accelerator.get_device_capability("lazygen:0")["supported_dtypes"]


@case
def accelerator_synchronize_and_empty_cache():
    x = torch.ones(2, device="lazygen") * 3
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
    assert x.cpu().tolist() == [3.0, 3.0]


@difference
def accelerator_memory_statistics():
    """Device data lives in host memory, which no torch allocator counts (with a CUDA
    backing device the statistics are CUDA's)."""
    with pytest.raises(LazygenRuntimeError, match="no answer for the lazygen device"):
        torch.accelerator.memory_allocated()


@difference
def accelerator_current_stream_is_index_zero():
    """torch's own streams ask the C++ device guard, which a Python device answers only
    with its type: ``torch.accelerator.current_stream()`` is a ``torch.Stream`` on index 0."""
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_stream().device == torch.device("lazygen", 0)


@difference
def unindexed_to_goes_to_index_zero():
    """``.to("lazygen")`` and ``torch.tensor(..., device="lazygen")`` get their index from the
    C++ device guard (index 0); factories (``torch.empty``...) follow the current index."""
    with torch.accelerator.device_index(1):
        assert torch.ones(1).to("lazygen").device.index == 0
        assert torch.ones(1, device="lazygen").device.index == 1


# Tensors on several devices --------------------------------------------------------------


@case
def tensor_stays_on_its_device():
    x = torch.ones(2, device="lazygen:1")
    assert (x * 2).sum().device == torch.device("lazygen", 1)


@case
def tensor_moves_between_devices():
    x = torch.arange(3.0, device="lazygen:0").to("lazygen:1")
    assert x.device.index == 1 and x.cpu().tolist() == [0.0, 1.0, 2.0]


@case
def mixing_devices_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(2, device="lazygen:0") + torch.ones(2, device="lazygen:1")


@case
def tensor_device_methods():
    x = torch.ones(2).lazygen()
    assert x.is_lazygen and x.device.type == "lazygen"
    assert torch.nn.Linear(2, 2).lazygen().weight.is_lazygen


@difference
def backward_on_other_indices():
    """torch's autograd engine keeps a queue per device index the C++ guard reports; a
    Python guard reports one: backward() runs on ``lazygen:0`` only (a clear error else)."""
    w = torch.ones(2, device="lazygen:1", requires_grad=True)
    with pytest.raises(LazygenRuntimeError, match="index other than 0"):
        (w * 2).sum().backward()
    v = torch.ones(2, device="lazygen:0", requires_grad=True)
    (v * 2).sum().backward()
    assert v.grad.cpu().tolist() == [2.0, 2.0]


@difference
def tensor_strides_are_contiguous():
    """Lazy tensors have contiguous strides: a transpose is a copy in the graph."""
    t = torch.ones(2, 3, device="lazygen").t()
    assert t.stride() == (2, 1)


@difference
def tensor_data_ptr_is_zero():
    """Lazy tensors have no addressable memory."""
    assert torch.ones(2, device="lazygen").data_ptr() == 0


# Generators ------------------------------------------------------------------------------


@case
def generator_for_the_device():
    generator = torch.Generator(device="lazygen")
    assert isinstance(generator, torch.Generator)


@case
def generator_seed_gives_eagers_numbers():
    lazy = torch.randn(4, device="lazygen", generator=torch.Generator("lazygen").manual_seed(3))
    eager = torch.randn(4, generator=torch.Generator().manual_seed(3))
    assert torch.equal(lazy.cpu(), eager)


@case
def generator_state_round_trip():
    generator = torch.Generator("lazygen").manual_seed(4)
    state = generator.get_state()
    first = torch.rand(3, device="lazygen", generator=generator).cpu()
    generator.set_state(state)
    assert torch.equal(first, torch.rand(3, device="lazygen", generator=generator).cpu())
    assert generator.initial_seed() == 4


@difference
def generator_reports_the_backing_device():
    """``torch.Generator(device="lazygen")`` is a generator of the backing device: its
    ``device`` is ``cpu``, and CPU ops accept it (a CUDA generator's device is ``cuda``)."""
    generator = torch.Generator("lazygen")
    assert generator.device == torch.device("cpu")
    torch.randn(2, generator=generator)


@case
def checkpointed_rng_state_restores():
    buffer = io.BytesIO()
    torch.save({"lazygen": torch.lazygen.get_rng_state_all()}, buffer)
    first = torch.randn(3, device="lazygen").cpu()
    buffer.seek(0)
    torch.lazygen.set_rng_state_all(torch.load(buffer)["lazygen"])
    assert torch.equal(first, torch.randn(3, device="lazygen").cpu())


# Streams and events (the device module's) --------------------------------------------------


@case
def stream_device_index():
    assert torch.lazygen.Stream(device="lazygen:1").device_index == 1


@case
def event_ids_are_distinct():
    stream = torch.lazygen.current_stream()
    assert stream.record_event().event_id != stream.record_event().event_id


@case
def event_synchronize_and_query():
    event = torch.lazygen.current_stream().record_event()
    event.synchronize()
    assert event.query()


@case
def event_elapsed_time():
    start, end = (torch.lazygen.Event(enable_timing=True) for _ in range(2))
    start.record()
    (torch.randn(32, 32, device="lazygen") @ torch.randn(32, 32, device="lazygen")).sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0


@case
def stream_wait_stream_and_event():
    side = torch.lazygen.Stream()
    side.wait_stream(torch.lazygen.current_stream())
    torch.lazygen.current_stream().wait_event(side.record_event())
    side.synchronize()
    assert side.query()


@difference
def torch_event_cannot_synchronize():
    """``torch.Event``/``torch.Stream`` (torch's C++ types) ask the C++ guard; use
    ``torch.lazygen.Event``/``Stream``."""
    with pytest.raises(RuntimeError, match="Backend doesn't support synchronizing events"):
        torch.Stream(device="lazygen:0").record_event().synchronize()


@case
def dynamo_device_interface():
    import torch._dynamo.device_interface as device_interface

    interface = device_interface.get_interface_for_device("lazygen")
    assert interface.Stream is torch.lazygen.Stream and interface.device_count() >= 2


# Storages --------------------------------------------------------------------------------


@case
def storage_device_methods():
    x = torch.ones(2, device="lazygen")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert x.storage().is_lazygen
    assert x.untyped_storage().is_lazygen
    assert x.untyped_storage().device.type == "lazygen"


@difference
def storage_has_no_data():
    """Lazy tensors hold no addressable memory: a storage of the device cannot be made
    (its size is reported; its data cannot be read through it)."""
    with pytest.raises(LazygenRuntimeError, match="storages cannot be allocated"):
        torch.UntypedStorage(4, device="lazygen")


# Serialisation ---------------------------------------------------------------------------


def _saved():
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3.0, device="lazygen")}, buffer)
    buffer.seek(0)
    return buffer


@case
def load_keeps_the_device():
    assert torch.load(_saved())["w"].device == torch.device("lazygen", 0)


@case
def load_map_location_cpu():
    loaded = torch.load(_saved(), map_location="cpu")["w"]
    assert loaded.device.type == "cpu" and loaded.tolist() == [0.0, 1.0, 2.0]


@case
def load_map_location_other_index():
    assert torch.load(_saved(), map_location="lazygen:1")["w"].device.index == 1


@case
def load_map_location_dict():
    mapped = torch.load(_saved(), map_location={"lazygen:0": "lazygen:1"})["w"]
    assert mapped.device.index == 1


@case
def load_map_location_callable():
    assert torch.load(_saved(), map_location=lambda s, loc: s)["w"].device.type == "cpu"


@case
def load_onto_a_missing_index():
    with pytest.raises(RuntimeError, match=r"lazygen|device"):
        torch.load(_saved(), map_location="lazygen:99")


# DLPack ----------------------------------------------------------------------------------


@difference
def dlpack_export():
    """Lazy tensors have no memory to share: exporting raises, naming ``t.cpu()``."""
    with pytest.raises(LazygenRuntimeError, match="DLPack"):
        torch.utils.dlpack.to_dlpack(torch.ones(2, device="lazygen"))


@case
def dlpack_import_then_move():
    imported = torch.from_dlpack(torch.arange(3.0)).to("lazygen")
    assert imported.cpu().tolist() == [0.0, 1.0, 2.0]


# The profiler ----------------------------------------------------------------------------


@case
def profiler_names_the_graphs():
    lr.mark_step()
    with torch.profiler.profile() as prof:
        (torch.ones(4, device="lazygen") * 2).sum().cpu()
    assert any(e.name.startswith("lazygen::execute") for e in prof.events())


@case
def profiler_use_device():
    with torch.autograd.profiler.profile(use_device="lazygen") as prof:
        (torch.ones(4, device="lazygen") * 2).sum().cpu()
    assert all(e.cpu_time_total >= 0 for e in prof.key_averages())


@difference
def profiler_device_activity():
    """The device's graphs are host ranges (CPU events): device kernels reach torch's
    profiler through a native plug-in a Python device cannot register."""
    with torch.profiler.profile() as prof:
        (torch.ones(4, device="lazygen") + 5).sum().cpu()
    ranges = [e for e in prof.events() if e.name.startswith("lazygen::")]
    assert ranges and all(e.device_type == torch.autograd.DeviceType.CPU for e in ranges)


# Autocast --------------------------------------------------------------------------------


@case
def autocast_available():
    assert torch.amp.is_autocast_available("lazygen")


@case
def autocast_lowers_matmul():
    a = torch.randn(4, 4, device="lazygen")
    with torch.autocast("lazygen", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16
    assert (a @ a).dtype == torch.float32


@case
def autocast_default_dtype():
    assert torch.get_autocast_dtype("lazygen") == torch.float16


@case
def grad_scaler_on_the_device():
    scaler = torch.amp.GradScaler("lazygen")
    w = torch.ones(2, device="lazygen", requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    scaler.scale((w * 2).sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    assert w.cpu().tolist() == pytest.approx([0.8, 0.8])


# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_contract(name):
    function, _ = CASES[name]
    function()


def test_every_difference_is_documented():
    text = DOC.read_text()
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    differences = {name for name, (_, kind) in CASES.items() if kind}
    assert differences == documented
    counts = re.search(r"(\d+) cases: (\d+) as on CUDA, (\d+) documented differences", text)
    assert counts, "docs/device-contract.md states the sweep's counts"
    assert tuple(map(int, counts.groups())) == (
        len(CASES),
        len(CASES) - len(differences),
        len(differences),
    )
