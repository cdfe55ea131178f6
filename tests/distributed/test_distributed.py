"""torch.distributed on the lazy device: the c10d backend, collectives as graph nodes (or
graph cuts), DDP against single-process eager.

Multi-process cases run 2 ranks on loopback (gloo) through ``launch.run``: a free port
chosen at run time, each rank in its own session, killed in a ``finally`` whatever
happens, every run bounded by a timeout."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from . import launch

HERE = Path(__file__).resolve().parent
TIMEOUT = 240.0  # per 2-process run; a healthy one takes ~15 s on 2 busy cores


def _ranks(script: str, *args: str, backend: str = "torchscript") -> launch.Result:
    env = {"LAZYGEN_BACKEND": backend}
    result = launch.run([str(HERE / script), *args], nproc=2, timeout=TIMEOUT, env=env)
    assert result.ok, result.report()
    return result


def test_one_process_registration_lowering_and_host_copies():
    """Nothing is registered on import; init() registers the c10d backend; an all-reduce
    of a lazy tensor is a node of the graph (TorchScript runs the functional collective);
    a lazy tensor copies into a host tensor (as DDP's construction does)."""
    code = textwrap.dedent("""
        import torch, torch.distributed as dist
        import lazygen.runtime as lr
        assert "LAZYGEN" not in dist.Backend._plugins
        lr.init()
        assert dist.Backend.backend_capability["lazygen"] == ["lazygen", "cpu"]
        dist.init_process_group("cpu:gloo,lazygen:lazygen", rank=0, world_size=1)
        x = torch.arange(4.0, device="lazygen")
        y = x * 2
        dist.all_reduce(y)
        text = lr.debug.dump_ir([y], "backend")
        assert "_c10d_functional::all_reduce" in text and "wait_tensor" in text, text
        host = torch.zeros(4)
        host.copy_(y)
        assert host.tolist() == [0.0, 2.0, 4.0, 6.0], host
        print("ok")
        dist.destroy_process_group()
        """)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(launch.free_port()))
    env["LAZYGEN_GC_FREEZE"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


#: Inductor compiles each graph (seconds per graph on 2 cores): its cases are slow.
_INDUCTOR = pytest.param("inductor", marks=pytest.mark.slow)
#: The jax backend runs collectives as ordered host callbacks of its XLA programs.
_NO_JAX = importlib.util.find_spec("jax") is None
_JAX = pytest.param(
    "jax",
    marks=pytest.mark.skipif(_NO_JAX, reason="the jax backend needs JAX: pip install lazygen[jax]"),
)


@pytest.mark.multiprocess
@pytest.mark.parametrize("backend", ["torchscript", "fx", _INDUCTOR, _JAX])
def test_collectives_in_the_graph_two_processes(backend):
    """Every built-in backend runs functional collectives inside its graphs: no cut."""
    result = _ranks("collectives_worker.py", "graph", backend=backend)
    assert all("DistributedGraphCut=0" in out for out in result.outputs), result.report()
    assert all("lazy::all_reduce=4" in out for out in result.outputs), result.report()


def test_a_refused_op_in_a_distributed_step_warns_once_with_the_op_and_its_count():
    """A call the backend refuses cuts the graph on every rank, like a collective outside
    it: the first step with such cuts warns once, naming the op and how often it cut."""
    pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")
    code = textwrap.dedent("""
        import warnings
        import torch, torch.distributed as dist
        import lazygen.runtime as lr
        lr.init(backend="jax")
        dist.init_process_group("cpu:gloo,lazygen:lazygen", rank=0, world_size=1)
        x = torch.arange(6.0, device="lazygen")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for step in range(2):
                y = x * 2
                dist.all_reduce(y)
                for _ in range(3):  # refused: integer division by a tensor (may hold 0)
                    k = y.long() + 1  # pending IR: the refusal cuts the graph here
                    y = y + torch.div(k, k, rounding_mode="floor")
                lr.mark_step()
        said = [str(w.message) for w in caught if issubclass(w.category, lr.GraphCutWarning)]
        assert len(said) == 1, said
        assert "aten::div (3x)" in said[0] and "distributed step" in said[0], said
        # the collective's host callback hands torch a writable copy of JAX's buffer
        noisy = [str(w.message) for w in caught if "not writable" in str(w.message)]
        assert not noisy, noisy
        print("ok")
        dist.destroy_process_group()
        """)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(launch.free_port()))
    env["LAZYGEN_GC_FREEZE"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.multiprocess
@pytest.mark.slow
def test_collectives_as_graph_cuts_two_processes():
    """A backend that declares it cannot run collectives in a graph cuts it at each one."""
    result = _ranks("collectives_worker.py", "cut")
    assert all("lazy::all_reduce=0" in out for out in result.outputs), result.report()


@pytest.mark.multiprocess
@pytest.mark.parametrize(
    ("backend", "scenarios"),
    [
        ("torchscript", "default,bucket_view,no_sync"),
        ("fx", "default,bucket_view,no_sync"),
        pytest.param("inductor", "default", marks=pytest.mark.slow),
        pytest.param("jax", "default,bucket_view,no_sync", marks=[*_JAX.marks, pytest.mark.slow]),
    ],
)
def test_ddp_matches_single_process_eager(backend, scenarios):
    """Default buckets, gradient_as_bucket_view, no_sync accumulation: parameters equal an
    eager run on the concatenated batch; a steady step is one graph and no cut."""
    result = _ranks("ddp_worker.py", scenarios, backend=backend)
    for out in result.outputs:
        for scenario in scenarios.split(","):
            assert f"{scenario}: graphs/step=1 cuts/step=0 ok=True" in out, result.report()


@pytest.mark.multiprocess
@pytest.mark.parametrize("backend", ["torchscript", _INDUCTOR])
def test_functional_collectives_in_compiled_regions(backend):
    """torch.compile(backend="lazygen") captures functional collectives (and dynamo's
    rewrite of in-place dist.all_reduce) as nodes of the compiled graph: results equal
    eager's on every replay, nothing recompiles, and a sync on one rank alone issues no
    stray collective."""
    result = _ranks("compiled_worker.py", backend)
    assert all("DistributedGraphCut=0 ok=True" in out for out in result.outputs), result.report()


@pytest.mark.multiprocess
@pytest.mark.slow
def test_ddp_find_unused_parameters_fails_cleanly():
    """find_unused_parameters=True does not work yet: DDP's reducer asks the PrivateUse1
    hooks for a pinned-memory allocator, which hooks registered from Python cannot give
    (torch 2.13). It must fail with a Python error on every rank, never a crash."""
    result = launch.run([str(HERE / "ddp_worker.py"), "unused"], nproc=2, timeout=TIMEOUT)
    assert result.returncodes == (1, 1), result.report()
    assert all("getPinnedMemoryAllocator" in out for out in result.outputs), result.report()


@pytest.mark.multiprocess
@pytest.mark.slow
def test_example_runs_under_torchrun(tmp_path):
    """examples/ddp/train.py as the README runs it (torchrun --standalone: a free port),
    in its own session, terminated (then killed) with its workers if it overruns."""
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed next to this Python")
    checkpoint = tmp_path / "ckpt.pt"
    argv = [str(torchrun), "--standalone", "--nproc-per-node", "2"]
    argv += [str(HERE.parents[1] / "examples" / "ddp" / "train.py"), "--steps", "5"]
    argv += ["--log-every", "5", "--checkpoint", str(checkpoint)]
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", LAZYGEN_GC_FREEZE="0")
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        launch.stop_session(proc)
    assert proc.returncode == 0, out[-4000:]
    assert "cuts: 0" in out, out[-4000:]
    saved = torch.load(checkpoint)
    assert saved["world"] == 2 and all(t.device.type == "cpu" for t in saved["model"].values())
