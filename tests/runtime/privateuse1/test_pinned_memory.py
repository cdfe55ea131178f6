"""``pin_memory()`` of CPU tensors while the lazy device is torch's accelerator
(``privateuse1/pinned_memory.py``): it raised a NotImplementedError about
``PrivateUse1HooksInterface`` after ``init()``, and with it every ``DataLoader(...,
pin_memory=True)``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch


def test_pin_memory_of_a_cpu_tensor_is_an_unpinned_copy():
    x = torch.randn(3, 4)[:, 1:]
    pinned = x.pin_memory()
    assert pinned is not x and torch.equal(pinned, x) and pinned.is_contiguous()
    assert not pinned.is_pinned()  # truthfully: nothing page-locked it
    assert torch.equal(pinned.to("lazygen").cpu(), x)


def test_data_loader_pins_batches():
    data = torch.utils.data.TensorDataset(torch.arange(12.0).view(6, 2))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    batches = [batch.to("lazygen") * 2 for (batch,) in loader]
    assert torch.equal(torch.cat([b.cpu() for b in batches]), torch.arange(12.0).view(6, 2) * 2)


@pytest.mark.filterwarnings("ignore:The argument 'device':DeprecationWarning")
def test_pinning_for_another_device_type_keeps_torchs_kernel():
    """Named device types other than the lazy one reach torch's own kernel, which asks that
    device's hooks (here there is no CUDA, and it says so)."""
    with pytest.raises(Exception) as raised:
        torch.randn(3).pin_memory("cuda")
    assert "PrivateUse1HooksInterface" not in str(raised.value)


def test_opted_out_leaves_torchs_kernel():
    code = (
        "import torch, lazygen.runtime as lr\n"
        "lr.init()\n"
        "try:\n"
        "    torch.randn(3).pin_memory()\n"
        "except NotImplementedError as error:\n"
        "    print('torch:', error)\n"
    )
    env = {**os.environ, "LAZYGEN_PINNED_MEMORY": "0"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert "torch: You should register `PrivateUse1HooksInterface`" in result.stdout, result
