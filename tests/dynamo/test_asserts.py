"""Tensor assertions under ``torch.compile(backend="lazygen")``: Dynamo turns a Python
``assert`` on a tensor into ``aten._assert_async``, which the replay must check at every
call, as eager and torch's own backends do, not only on the values of the captured call
torch's ``F.one_hot`` checks its class values the same way (found compiling
SwitchTransformers, whose router calls it)."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr

from .conftest import count

# Compiled from source: pytest rewrites the ``assert`` statements of a test module.
_SOURCE = """
def positive_double(x):
    y = x * 2
    assert (y > 0).all(), "y must be positive"
    return (y * 3).sum()
"""
_namespace: dict = {"torch": torch}
exec(compile(_SOURCE, "<user code>", "exec"), _namespace)
_positive_double = _namespace["positive_double"]


def test_a_python_assert_is_checked_at_every_replay():
    run = torch.compile(_positive_double, backend="lazygen")
    assert run(torch.ones(3)) == 18
    with pytest.raises(RuntimeError, match="y must be positive"):
        run(-torch.ones(3))
    assert run(torch.full((3,), 2.0)) == 36
    assert count("DynamoCapture") == 1  # replayed, not captured again
    assert count("DynamoEagerGraph") == 0
    fallbacks = [k for k in lr.metrics.counters() if k.startswith("aten::")]
    assert not fallbacks, f"the assertion ran through the eager fallback: {fallbacks}"


def test_one_hot_checks_its_classes_at_every_replay():
    def route(labels):
        return torch.nn.functional.one_hot(labels, 4).float().sum(0)

    run = torch.compile(route, backend="lazygen")
    assert torch.equal(run(torch.tensor([0, 1, 1])), torch.tensor([1.0, 2.0, 0.0, 0.0]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        run(torch.tensor([0, 1, 7]))
    assert not [k for k in lr.metrics.counters() if k.startswith("aten::")]
