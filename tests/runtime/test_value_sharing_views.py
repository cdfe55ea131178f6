"""``detach_copy`` and a ``view_copy`` to the input's own sizes give the input's value (no
node): IR is immutable, so two tensors may hold one value."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.builtin.hand_written.kernels import _same_sizes
from lazygen.runtime.tracing.tensor import inner

LAZY = "lazygen"


def test_detach_is_the_same_value_and_independent_afterwards():
    x = torch.randn(3, 4).to(LAZY)
    y = x * 2
    d = y.detach()
    assert inner(d)._value is inner(y)._value
    d.add_(1)  # a mutation of the detached alias is seen through y, as eager's
    torch.testing.assert_close(y.cpu(), x.cpu() * 2 + 1)
    z = x * 2
    w = z.detach().clone()
    w.add_(1)  # a clone is independent
    torch.testing.assert_close(z.cpu(), x.cpu() * 2)
    torch.testing.assert_close(w.cpu(), x.cpu() * 2 + 1)


def test_an_identity_view_is_the_same_value_and_others_are_nodes():
    x = torch.randn(2, 6).to(LAZY)
    lr.mark_step()
    same, inferred, other = x.view(2, 6), x.view(-1, 6), x.view(3, 4)
    assert inner(same)._value is inner(x)._value
    assert inner(inferred)._value is inner(x)._value
    assert inner(other)._value is not inner(x)._value
    torch.testing.assert_close(other.cpu(), x.cpu().view(3, 4))


@pytest.mark.parametrize(
    "sizes, size, same",
    [
        ((2, 6), [2, 6], True),
        ((2, 6), [-1, 6], True),
        ((2, 6), [2, -1], True),
        ((2, 6), [-1, -1], False),
        ((2, 6), [3, 4], False),
        ((2, 6), [12], False),
        ((), [], True),
    ],
)
def test_same_sizes(sizes, size, same):
    assert _same_sizes(sizes, size) is same


def test_training_with_shared_values_matches_eager():
    torch.manual_seed(0)
    eager = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    lazy = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    lazy.load_state_dict(eager.state_dict())
    lazy.to(LAZY)
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (eager, lazy)]
    x = torch.randn(5, 6)
    for _ in range(3):
        for model, opt, data in ((eager, opts[0], x), (lazy, opts[1], x.to(LAZY))):
            opt.zero_grad()
            model(data).square().mean().backward()
            opt.step()
        lr.mark_step()
    for a, b in zip(eager.parameters(), lazy.parameters(), strict=True):
        torch.testing.assert_close(b.cpu(), a, rtol=1e-5, atol=1e-6)
