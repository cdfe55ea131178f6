"""``torch.accelerator``'s memory and synchronisation functions with the lazy device as the
accelerator (``privateuse1/accelerator_api.py``): they raised torch's "device_allocator
INTERNAL ASSERT FAILED ... Allocator for lazygen is not a DeviceAllocator" (found by the
tensor-API sweep)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import lazygen.runtime as lr

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="CUDA, not the lazy device, is the accelerator"
)


def test_synchronize_waits_for_the_devices_graphs():
    x = torch.ones(3, device="lazygen") * 2
    lr.mark_step()
    torch.accelerator.synchronize()
    torch.accelerator.synchronize(0)
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]


def test_empty_caches_are_no_ops():
    torch.ones(3, device="lazygen").cpu()
    torch.accelerator.empty_cache()
    torch.accelerator.empty_host_cache()


@pytest.mark.parametrize(
    "name",
    [
        "memory_stats",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "reset_peak_memory_stats",
        "reset_accumulated_memory_stats",
        "get_memory_info",
    ],
)
def test_statistics_are_a_clear_error_on_a_cpu_backing_device(name):
    with pytest.raises(RuntimeError, match="LAZYGEN_BACKING_DEVICE=cuda") as raised:
        getattr(torch.accelerator, name)()
    assert "INTERNAL ASSERT" not in str(raised.value)
    with pytest.raises(RuntimeError, match="has no answer for the lazygen device"):
        getattr(torch.accelerator.memory, name)(0)


def test_opted_out_leaves_torchs_functions():
    code = (
        "import torch, lazygen.runtime as lr\n"
        "original = torch.accelerator.empty_cache\n"
        "lr.init()\n"
        "print(torch.accelerator.empty_cache is original)\n"
    )
    env = {**os.environ, "LAZYGEN_ACCELERATOR_API": "0"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert result.stdout.strip() == "True", result
