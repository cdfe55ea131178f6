"""The lazy device's random numbers: ``torch.<device>``'s seeding API and
``torch.Generator(device=<lazy device>)`` give eager's numbers for the same seed (issue #41,
items 1 and 2)."""

import io
import pickle

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import process
from lazygen.runtime.privateuse1 import rng


def _draw(device="lazygen", generator=None):
    return torch.randn(5, device=device, generator=generator).cpu()


def test_device_module_seeding_repeats_draws():
    """Item 2: ``manual_seed_all(42)`` before each of two draws gave different numbers."""
    torch.lazygen.manual_seed_all(42)
    first = _draw()
    torch.lazygen.manual_seed_all(42)
    assert torch.equal(first, _draw())
    torch.lazygen.manual_seed(7)
    again = _draw()
    torch.manual_seed(7)  # eager's numbers for the same seed
    assert torch.equal(again, torch.randn(5))


def test_seed_all_and_rng_state_round_trip():
    for name in ("seed", "seed_all", "get_rng_state_all", "set_rng_state_all", "initial_seed"):
        assert callable(getattr(torch.lazygen, name)), name
    torch.lazygen.seed_all()
    states = torch.lazygen.get_rng_state_all()
    assert len(states) == torch.lazygen.device_count()
    first = _draw()
    torch.lazygen.set_rng_state_all(states)
    assert torch.equal(first, _draw())
    state = torch.lazygen.get_rng_state("lazygen:0")
    first = torch.rand(3, device="lazygen").cpu()
    torch.lazygen.set_rng_state(state, "lazygen:0")
    assert torch.equal(first, torch.rand(3, device="lazygen").cpu())


def test_fork_rng_restores_the_device_state():
    before = torch.lazygen.get_rng_state()
    with torch.random.fork_rng(devices=[0], device_type="lazygen"):
        _draw()
    assert torch.equal(before, torch.lazygen.get_rng_state())


def test_rng_state_of_another_device_type_is_refused():
    with pytest.raises(ValueError, match="expected a lazygen device"):
        torch.lazygen.get_rng_state("cpu")


def test_device_generator_draws_eagers_numbers():
    """Item 1: ``torch.Generator(device="lazygen")`` raised NotImplementedError."""
    generator = torch.Generator(device="lazygen").manual_seed(0)
    assert isinstance(generator, torch.Generator)
    assert isinstance(torch.default_generator, torch.Generator)
    eager = torch.randn(5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(_draw(generator=generator), eager)
    x = torch.empty(6, device="lazygen").uniform_(
        generator=torch.Generator("lazygen:1").manual_seed(3)
    )
    assert torch.equal(x.cpu(), torch.empty(6).uniform_(generator=torch.Generator().manual_seed(3)))
    # A generator's own state is not the default one's: drawing from it leaves that alone.
    state = torch.lazygen.get_rng_state()
    _draw(generator=generator)
    assert torch.equal(state, torch.lazygen.get_rng_state())


def test_device_generator_pickles_and_compiles():
    generator = torch.Generator(device="lazygen").manual_seed(5)
    copy = pickle.loads(pickle.dumps(generator))
    assert torch.equal(copy.get_state(), generator.get_state())

    def step(t, gen):
        return t + torch.randn(3, device=t.device, generator=gen)

    compiled = torch.compile(step, backend="lazygen")
    got = compiled(torch.zeros(3, device="lazygen"), generator).cpu()
    assert torch.equal(got, torch.randn(3, generator=torch.Generator().manual_seed(5)))


def test_other_devices_keep_torchs_generator():
    assert type(torch.Generator()) is torch._C.Generator
    assert type(torch.Generator("cpu")) is torch._C.Generator
    assert issubclass(torch._C.Generator, torch.Generator)


def test_generator_effect_is_listed():
    assert "device_generators" in {e.name for e in process.EFFECTS}
    assert torch.Generator is rng.Generator
    assert lr.device_name() == "lazygen"


def test_device_seeding_under_compile_gives_eagers_numbers():
    def noisy(t):
        return t + torch.randn(4, device=t.device)

    compiled = torch.compile(noisy, backend="lazygen")
    torch.lazygen.manual_seed(9)
    got = compiled(torch.zeros(4, device="lazygen")).cpu()
    torch.manual_seed(9)
    assert torch.equal(got, torch.randn(4))
    torch.lazygen.manual_seed(9)
    assert torch.equal(compiled(torch.zeros(4, device="lazygen")).cpu(), got)


def test_checkpointed_rng_state_restores():
    """Checkpoints save the device's RNG states (as transformers' Trainer does for CUDA) and
    restoring them repeats the draws."""
    buffer = io.BytesIO()
    torch.save({"cpu": torch.get_rng_state(), "lazygen": torch.lazygen.get_rng_state_all()}, buffer)
    first = _draw()
    buffer.seek(0)
    saved = torch.load(buffer)
    torch.set_rng_state(saved["cpu"])
    torch.lazygen.set_rng_state_all(saved["lazygen"])
    assert torch.equal(first, _draw())
