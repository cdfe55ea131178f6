"""``torch.compile(..., backend="lazygen", options={"backend": "jax"})``: the captured
graphs compiled by XLA, CPU tensors fed through ``to_data`` and results read back through
``from_data`` (the jax backend's data is not torch's)."""

from __future__ import annotations

import copy

import pytest
import torch

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

import lazygen.runtime as lr  # noqa: E402

from .conftest import count  # noqa: E402


def _step(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def test_a_training_step_compiles_with_xla_and_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    twin = copy.deepcopy(model)
    x = torch.randn(4, 8)
    compiled = torch.compile(_step(model), backend="lazygen", options={"backend": "jax"})
    eager = _step(twin)
    lr.metrics.reset()
    for _ in range(3):
        torch.testing.assert_close(compiled(x), eager(x))
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoGraphRun") >= 3
