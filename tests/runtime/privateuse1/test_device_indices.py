"""Several lazy devices: ``torch.accelerator``'s index functions, the device module and the
ops honour ``lazygen:0``, ``lazygen:1``... (issue #41, item 3)."""

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import devices
from lazygen.runtime.errors import LazygenRuntimeError


@pytest.fixture(autouse=True)
def _index_zero_after():
    yield
    devices.set_current_index(0)


def test_set_device_index_is_honoured():
    assert torch.accelerator.device_count() == torch.lazygen.device_count() >= 2
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    assert torch.lazygen.current_device() == 1
    assert torch.empty(2, device="lazygen").device == torch.device("lazygen", 1)


def test_invalid_index_raises():
    count = torch.accelerator.device_count()
    with pytest.raises(LazygenRuntimeError, match="invalid device ordinal.*LAZYGEN_DEVICE_COUNT"):
        torch.accelerator.set_device_index(count)
    with pytest.raises(LazygenRuntimeError, match="invalid device ordinal"):
        torch.empty(1, device=f"lazygen:{count}")
    torch.accelerator.set_device_index(-1)  # as on CUDA: a negative index changes nothing
    assert torch.accelerator.current_device_index() == 0


def test_device_index_context():
    with torch.accelerator.device_index(1):
        assert torch.empty(3, device="lazygen").device == torch.device("lazygen", 1)
        assert torch.zeros(3, device="lazygen").device == torch.device("lazygen", 1)
    assert torch.accelerator.current_device_index() == 0
    with torch.lazygen.device("lazygen:1"):
        assert torch.lazygen.current_device() == 1
    assert torch.lazygen.current_device() == 0


def test_device_capability():
    capability = torch.accelerator.get_device_capability("lazygen:0")
    assert torch.float32 in capability["supported_dtypes"]


def test_tensor_stays_on_its_device_and_moves_between_devices():
    a = torch.ones(2, device="lazygen:1")
    assert (a * 2 + 1).device == torch.device("lazygen", 1)
    moved = torch.arange(3.0, device="lazygen:0").to("lazygen:1")
    assert moved.device == torch.device("lazygen", 1)
    assert moved.cpu().tolist() == [0.0, 1.0, 2.0]
    back = moved.to("lazygen:0", torch.float64)
    assert back.device == torch.device("lazygen", 0) and back.dtype == torch.float64


@pytest.mark.parametrize("op", ["add", "cat", "matmul"])
def test_mixing_devices_raises_eagers_error(op):
    a = torch.ones(2, 2, device="lazygen:1")
    b = torch.ones(2, 2, device="lazygen:0")
    call = {"add": lambda: a + b, "cat": lambda: torch.cat([a, b]), "matmul": lambda: a @ b}
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        call[op]()


def test_device_count_from_init_and_environment(monkeypatch):
    before = devices.device_count()
    try:
        devices.set_device_count(before + 2)
        assert torch.accelerator.device_count() == before + 2
    finally:
        devices.set_device_count(before)
    with pytest.raises(ValueError, match="positive integer"):
        devices.set_device_count(0)
    monkeypatch.setenv("LAZYGEN_DEVICE_COUNT", "3")
    assert devices._count_from_environment() == 3
    monkeypatch.setenv("LAZYGEN_DEVICE_COUNT", "many")
    with pytest.raises(ValueError, match="LAZYGEN_DEVICE_COUNT"):
        devices._count_from_environment()


def test_backward_on_another_index_says_why():
    """torch's engine has a queue for index 0 only (a Python guard reports one device): its
    internal assert ("please report a bug to PyTorch") becomes an error naming the cause."""
    w = torch.ones(2, device="lazygen:1", requires_grad=True)
    with pytest.raises(LazygenRuntimeError, match="Train on lazygen:0"):
        (w * 3).sum().backward()


def test_seeding_every_device_creates_none():
    """``torch.manual_seed`` seeds every lazy device (``manual_seed_all``); that must not
    create the devices (an existing second device makes every op check its inputs)."""
    unused = devices.device_count() - 1
    before = {d.index for d in devices.all_devices()}
    torch.lazygen.manual_seed_all(1)
    torch.lazygen.get_rng_state_all()
    torch.Generator(f"lazygen:{unused}")
    assert {d.index for d in devices.all_devices()} == before


@pytest.mark.parametrize("index", [-1, 1.0, "1", True])
def test_set_device_backend_refuses_what_is_no_device_index(index):
    """A negative or non-int index was stored, naming a device torch cannot make."""
    with pytest.raises(LazygenRuntimeError, match="takes a device index, an int from 0"):
        lr.set_device_backend(index, "torchscript")
    assert -1 not in devices._table().backend_of_index
