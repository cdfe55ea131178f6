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


def test_a_cpu_model_is_uploaded_only_when_it_changed():
    """The model-on-CPU route uploads a host tensor again only when its version counter moved
    (``lazygen/dynamo/uploads.py``); the optimizer's write-back leaves the new values' arrays,
    so a steady step uploads nothing; a change made outside the step is uploaded."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    twin = copy.deepcopy(model)
    x = torch.randn(4, 8)
    compiled = torch.compile(_step(model), backend="lazygen", options={"backend": "jax"})
    eager = _step(twin)
    for _ in range(3):
        compiled(x)
        eager(x)
    lr.metrics.reset()
    torch.testing.assert_close(compiled(x), eager(x))
    # of the step's 15 host tensors (parameters, gradients, momentum buffers, the batch),
    # only what autograd makes anew per call: the backward's seed and one saved view
    steady = count("DynamoUpload")
    assert steady <= 2
    assert count("DynamoUploadKept") >= 13
    with torch.no_grad():  # a change outside the step: uploaded once more, and used
        model[0].weight.mul_(0.5)
        twin[0].weight.mul_(0.5)
    lr.metrics.reset()
    torch.testing.assert_close(compiled(x), eager(x))
    assert count("DynamoUpload") == steady + 1
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def _draws(x):
    """Random ops of each kind a program meets: dropout (``native_dropout``), factories
    (``randn``: ``normal_functional``; ``randint``: ``random.from``), ``rand_like``
    (``empty_like`` + ``uniform``) and ``bernoulli`` of a tensor of probabilities."""
    kept = torch.nn.functional.dropout(x, 0.25)
    coins = torch.bernoulli(x * 0.5)
    return kept, torch.randn(x.shape), torch.rand_like(x), coins, torch.randint(1, 5, x.shape)


def test_random_ops_stay_in_the_compiled_graph_with_fresh_seeds_at_every_call():
    """Issue #39: the jax backend draws from seeds (``random_numbers = "seed"``); the replay
    feeds each random op a fresh seed per call, drawn from torch's generator, so the graph
    is compiled once and no random op runs eagerly. The numbers are JAX's, not eager's: the
    distributions are checked (bounds at six standard deviations of each statistic)."""
    x = torch.ones(64, 64)
    n = x.numel()
    compiled = torch.compile(_draws, backend="lazygen", options={"backend": "jax"})
    torch.manual_seed(7)
    first = compiled(x)
    second = compiled(x)
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoPartitionedGraph") == 0
    assert count("DynamoCapture") == 1 and count("DynamoGraphRun") == 2
    report = lr.metrics.fallback_report()
    assert report.fallbacks == () and report.refused == ()
    kept, normal, uniform, coins, integers = first
    dropped = (kept == 0).float().mean().item()
    assert abs(dropped - 0.25) < 6 * (0.25 * 0.75 / n) ** 0.5
    torch.testing.assert_close(kept[kept != 0], torch.full_like(kept[kept != 0], 4 / 3))
    assert abs(normal.mean().item()) < 6 / n**0.5
    assert abs(normal.std().item() - 1) < 6 / (2 * n) ** 0.5
    assert uniform.min().item() >= 0 and uniform.max().item() < 1
    assert abs(uniform.mean().item() - 0.5) < 6 * (1 / 12 / n) ** 0.5
    assert set(coins.unique().tolist()) <= {0.0, 1.0}
    assert abs(coins.mean().item() - 0.5) < 6 * (0.25 / n) ** 0.5
    assert set(integers.unique().tolist()) == {1, 2, 3, 4}
    assert abs(integers.double().mean().item() - 2.5) < 6 * (15 / 12 / n) ** 0.5
    for a, b in zip(first, second, strict=True):  # each call draws its own numbers
        assert not a.equal(b)
    for a, b in zip(first[1:], first[2:], strict=False):  # each op its own stream
        assert not a.equal(b)
    torch.manual_seed(7)  # torch.manual_seed makes the calls repeatable, as on the device
    for a, b in zip(first, compiled(x), strict=True):
        assert a.equal(b)
    assert count("DynamoCapture") == 1


def test_dropout_trains_in_the_graph_and_its_gradient_uses_the_forwards_mask():
    """The forward and backward graphs are both compiled by XLA; the backward scales the
    gradient by the mask the forward drew (saved between the graphs), not a new draw."""

    def f(x):
        y = torch.nn.functional.dropout(x, 0.5)
        return y, (y * torch.arange(x.numel(), dtype=x.dtype).view(x.shape)).sum()

    x = torch.randn(32, 32, requires_grad=True)
    compiled = torch.compile(f, backend="lazygen", options={"backend": "jax"})
    y, loss = compiled(x)
    loss.backward()
    expected = (y != 0).float() * 2 * torch.arange(x.numel(), dtype=x.dtype).view(x.shape)
    torch.testing.assert_close(x.grad, expected)
    torch.testing.assert_close(y[y != 0], x.detach()[y != 0] * 2)
    assert 0.3 < (y == 0).float().mean().item() < 0.7
    assert count("DynamoEagerGraph") == 0 and count("DynamoPartitionedGraph") == 0
