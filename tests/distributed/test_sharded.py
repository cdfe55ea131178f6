"""Sharded training on the lazy device with unchanged torch.distributed code: DeviceMesh,
DTensor, FSDP2 (``fully_shard``), against the same program on CPU tensors over gloo and
single-process eager. Ranks run ``sharded_worker.py`` through ``launch.run`` (loopback, a
free port, bounded, killed in a ``finally``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import launch

HERE = Path(__file__).resolve().parent
TIMEOUT = 300.0


def _ranks(scenarios: str, nproc: int = 2) -> launch.Result:
    env = {"LAZYGEN_BACKEND": "torchscript", "LAZYGEN_GC_FREEZE": "0"}
    argv = [str(HERE / "sharded_worker.py"), scenarios]
    result = launch.run(argv, nproc=nproc, timeout=TIMEOUT, env=env)
    assert result.ok, result.report()
    for out in result.outputs:
        for scenario in scenarios.split(","):
            assert f"{scenario}: ok=True" in out, result.report()
    return result


@pytest.mark.multiprocess
def test_device_mesh_on_the_lazy_device():
    """init_device_mesh on the lazy device type, 1-D and 2-D (dp x tp), sub-meshes by name
    and a group per dimension (it failed with "ProcessGroup name not set": c10d reads a
    group's name from its first registered backend, and the lazy group is a Python one)."""
    _ranks("mesh")
