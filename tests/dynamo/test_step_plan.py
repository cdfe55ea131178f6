"""A captured step's sync replays the last whole step's plan (``execution/step_plan.py``):
the same results as the generic sync, a step whose graph differs falls back to it, a host
read between steps gives the current values, a backend breaking the results contract is
still named, and on jax a parameter's data someone holds is never donated."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import torch

from lazygen.runtime import devices
from lazygen.runtime.errors import LazyGraphError

from .test_captured_step import _training, count


def check_plan_replays_and_matches_eager(device: torch.device, steps: int = 5) -> None:
    """``steps`` AdamW steps: from step 1 on each whole step replays the plan; parameters
    read on the host after every step (and the loss) equal Dynamo's program run by torch's
    kernels. A detached view reads the updated values; a host view taken before a step
    (on jax, memory shared with the parameter's array) keeps its old ones: that array was
    not donated to the step while the view held it."""
    model, optimizer, twin, twin_optimizer, step = _training(device)
    x, y = torch.randn(4, 8), torch.tensor([0, 2, 1, 2])
    compiled = torch.compile(step, backend="lazygen")
    reference = torch.compile(step, backend="aot_eager")
    for _ in range(steps):
        detached = model[0].weight.detach()
        host = model[0].weight.cpu()
        before = host.clone()
        loss = compiled(model, optimizer, x.to(device), y.to(device)).item()
        assert loss == pytest.approx(reference(twin, twin_optimizer, x, y).item(), rel=1e-6)
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(p.cpu(), q.detach())
        assert torch.equal(host, before)
        assert torch.equal(detached.cpu(), model[0].weight.cpu())
        assert not torch.equal(model[0].weight.cpu(), before)
    assert count("StepPlanReplay") >= steps - 2  # step 0 (and at most step 1) file it
    assert count("StepPlanMiss") == 0


def test_a_planned_step_matches_eager_and_host_reads_see_current_values():
    check_plan_replays_and_matches_eager(torch.device("lazygen"))


def test_a_step_whose_graph_changes_takes_the_generic_sync():
    """Two step structures alternating (Dynamo guards on ``clip``): each whole step misses
    the other's plan, runs by the generic sync, and stays eager's."""
    device = torch.device("lazygen")
    model, optimizer, twin, twin_optimizer, step = _training(
        device, lambda p: torch.optim.SGD(p, lr=0.1)
    )

    def clipped_step(model, optimizer, x, y, clip):
        loss = step(model, optimizer, x, y)
        if clip:
            with torch.no_grad():
                for p in model.parameters():
                    p.clamp_(-0.2, 0.2)
        return loss

    compiled = torch.compile(clipped_step, backend="lazygen")
    x, y = torch.randn(4, 8), torch.tensor([0, 2, 1, 2])
    for i in range(6):
        compiled(model, optimizer, x.to(device), y.to(device), i % 2 == 1).item()
        clipped_step(twin, twin_optimizer, x, y, i % 2 == 1)
    assert count("StepPlanMiss") >= 3
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p.cpu(), q.detach())


def test_a_backend_breaking_the_results_contract_is_named_on_a_planned_step(monkeypatch):
    device = torch.device("lazygen")
    model, optimizer, _, _, step = _training(device, lambda p: torch.optim.SGD(p, lr=0.1))
    compiled = torch.compile(step, backend="lazygen")
    x, y = torch.randn(4, 8).to(device), torch.tensor([0, 2, 1, 2]).to(device)
    for _ in range(3):
        compiled(model, optimizer, x, y).item()
    assert count("StepPlanReplay") >= 1
    backend = devices.get_device(0).backend
    execute = type(backend).execute
    monkeypatch.setattr(
        type(backend), "execute", lambda self, e, inputs: execute(self, e, inputs)[:-1]
    )
    with pytest.raises(LazyGraphError, match="results for a graph of"):
        compiled(model, optimizer, x, y).item()


def test_the_same_on_the_jax_backend():
    """In a process of its own (backward runs on lazy device 0 only, which this session
    gives the default backend): the plan's steps donate the old state, never an array a
    host view shares."""
    pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")
    program = (
        "import torch, lazygen.runtime as lr; lr.init(backend='jax'); lr.metrics.reset(); "
        "from dynamo.test_step_plan import check_plan_replays_and_matches_eager as check; "
        "check(torch.device('lazygen')); "
        "from lazygen.runtime import devices; "
        "cache = devices.get_device(0).cache; "
        "donated = [len(getattr(e, 'donated', ())) for e in cache.executables.values()]; "
        "assert max(donated) >= 10, donated; "  # the step donates the old state...
        # ...but the parameters read on the host are copied, not donated
        "assert (lr.metrics.counter_value('JaxDonationCopies') or 0) >= 4, lr.metrics.counters()"
    )
    tests = pathlib.Path(__file__).parents[1]
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=tests, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
