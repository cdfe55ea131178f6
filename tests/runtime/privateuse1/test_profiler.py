"""The lazy device in torch's profilers (issue #41, item 9)."""

import subprocess
import sys

import torch

import lazygen.runtime as lr


def _work():
    x = torch.randn(8, 8, device="lazygen")
    return (x @ x + 1).sum().cpu()


def test_graphs_appear_as_named_ranges():
    lr.mark_step()
    with torch.profiler.profile() as prof:
        _work()
    names = [e.name for e in prof.events()]
    assert any(n.startswith("lazygen::execute (") for n in names), names
    lr.executor.clear_compile_cache()
    with torch.profiler.profile() as prof:
        _work()
    assert any(e.name.startswith("lazygen::compile (") for e in prof.events())


def test_use_device_reports_real_times():
    """``profile(use_device="lazygen")`` reported about -1e17 us per op."""
    with torch.autograd.profiler.profile(use_device="lazygen") as prof:
        _work()
    averages = prof.key_averages()
    assert averages and all(e.cpu_time_total >= 0 for e in averages)
    assert any(e.key.startswith("lazygen::") for e in averages)


def test_use_device_prints_no_warning_per_op():
    code = (
        "import torch, lazygen.runtime as lr\n"
        "lr.init()\n"
        "x = torch.randn(4, 4, device='lazygen')\n"
        "with torch.autograd.profiler.profile(use_device='lazygen'):\n"
        "    (x @ x).sum().cpu()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "PrivateUse1 used in profiler but not enabled" not in run.stderr
