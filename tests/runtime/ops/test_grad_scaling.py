"""`ops.grad_scaling`: `torch.amp.GradScaler` on the lazy device runs its unscale and scale
update as lazy ops (they cut every mixed-precision step into three graphs through the eager
fallback), with the CPU kernels' results: the same unscaled gradients, skipped steps, scale
and growth tracker as eager."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr

# Fallback counters name the functional variants (what functionalization calls).
_OPS = ("aten::_amp_foreach_non_finite_check_and_unscale", "aten::_amp_update_scale")


def _train(device: str, steps: int = 6, overflow_at=(2,)):
    """SGD steps through a GradScaler that grows every 2 successful steps; the loss is
    infinite at the steps in ``overflow_at`` (their update is skipped, the scale backs off).
    Returns per step the scale, the growth tracker and the parameters."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = model.to(device)
    x, y = torch.randn(5, 6).to(device), torch.tensor([0, 1, 2, 1, 0]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    history = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if step in overflow_at:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        if device != "cpu":
            lr.mark_step()
        history.append(
            (
                scaler.get_scale(),
                int(scaler._growth_tracker.cpu()),
                [p.detach().cpu().clone() for p in model.parameters()],
            )
        )
    return history


def test_scaled_steps_match_eager_with_no_op_falling_back(fresh_metrics):
    lazy = _train(lr.device().type)
    eager = _train("cpu")
    for (scale, tracker, params), (want_scale, want_tracker, want_params) in zip(
        lazy, eager, strict=True
    ):
        assert (scale, tracker) == (want_scale, want_tracker)
        for got, want in zip(params, want_params, strict=True):
            torch.testing.assert_close(got, want)
    # grown after 2 successful steps, backed off at the overflow, grown again after 2 more
    assert [scale for scale, _, _ in eager] == [
        2.0**10,
        2.0**11,
        2.0**10,
        2.0**10,
        2.0**11,
        2.0**11,
    ]
    for op in _OPS:
        assert not fresh_metrics.counter_value(op)


@pytest.mark.parametrize("value", [float("nan"), float("-inf")])
def test_any_non_finite_element_is_found(value):
    grads = [torch.ones(3), torch.tensor([1.0, value])]
    lazy = [g.to(lr.device()) for g in grads]
    found = torch.zeros(1).to(lr.device())
    torch._amp_foreach_non_finite_check_and_unscale_(
        lazy, found, torch.full((1,), 0.5).to(lr.device())
    )
    assert found.cpu().item() == 1.0
    assert torch.equal(lazy[0].cpu(), torch.full((3,), 0.5))


def test_found_inf_keeps_its_value_when_every_gradient_is_finite():
    found = torch.full((1,), 1.0).to(lr.device())
    grad = torch.ones(2).to(lr.device())
    torch._amp_foreach_non_finite_check_and_unscale_([grad], found, torch.ones(1).to(lr.device()))
    assert found.cpu().item() == 1.0


def test_a_scale_that_would_overflow_does_not_grow():
    device = lr.device()
    scale = torch.full((1,), 3.0e38).to(device)
    tracker = torch.zeros(1, dtype=torch.int32).to(device)
    torch._amp_update_scale_(scale, tracker, torch.zeros(1).to(device), 2.0, 0.5, 1)
    assert scale.cpu().item() == pytest.approx(3.0e38) and int(tracker.cpu()) == 0
