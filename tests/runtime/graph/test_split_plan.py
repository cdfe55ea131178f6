"""A step split for early results the same way twice is split from its plan afterwards
(``execution/split_plan.py``): both graphs launched by position, no walk, no rebuilt node,
with the results, errors and tensors the generic split gives."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lazygen.runtime as lr
from lazygen.runtime.execution import split_plan

LAZY = "lazygen"


@pytest.fixture
def early_results():
    saved = (lr.config.get_early_results(), lr.settings.early_results_max_nodes)
    lr.config.set_early_results(True)
    yield
    lr.config.set_early_results(saved[0])
    lr.settings.early_results_max_nodes = saved[1]


@pytest.fixture
def no_plans(monkeypatch):
    """The generic split at every step (what the plan must reproduce)."""
    monkeypatch.setattr(split_plan, "find", lambda device, tensors: None)


def _train(device, steps=6):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    x, y = torch.randn(5, 6).to(device), torch.randn(5, 3).to(device)
    losses, outs = [], []
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.item())
        outs.append(out.detach())  # computed by the first graph, read after the step
    params = [p.detach().cpu() for p in model.parameters()]
    return losses, params, [o.cpu() for o in outs]


def test_a_repeated_split_replays_its_plan_with_eager_results(early_results, fresh_metrics):
    want = _train("cpu")
    got = _train(LAZY)
    # steps 1 and 2 differ (AdamW's state is created), 2 and 3 file the plan, 4-6 replay it
    assert lr.metrics.counter_value("SplitPlanReplay") == 3
    assert lr.metrics.counter_value("EarlyResultGraph") == 6
    assert got[0] == pytest.approx(want[0], rel=1e-6)
    for actual, expected in zip(got[1] + got[2], want[1] + want[2], strict=True):
        torch.testing.assert_close(actual, expected)


def test_the_plan_and_the_generic_split_give_the_same_bits(early_results, monkeypatch):
    planned = _train(LAZY)
    monkeypatch.setattr(split_plan, "find", lambda device, tensors: None)
    generic = _train(LAZY)
    assert planned[0] == generic[0]
    for a, b in zip(planned[1] + planned[2], generic[1] + generic[2], strict=True):
        assert torch.equal(a, b)


def _step(x, w, scale):
    h = (x @ w).relu()
    loss = h.sum() * scale  # the first graph computes h and hands it over
    rest = (h * 2).exp()
    return loss, rest


def test_a_step_of_another_structure_misses_the_plan(early_results, fresh_metrics):
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    lx, lw = x.to(LAZY), w.to(LAZY)
    for scale in (1.0, 2.0, 3.0):
        loss, rest = _step(lx, lw, scale)
        lr.mark_step()
    assert lr.metrics.counter_value("SplitPlanReplay") == 1
    loss, rest = _step(lx, lw.t(), 4.0)  # another structure (a transposed weight)
    other = lx.sum() + 1  # and a third single-element result
    lr.mark_step()
    assert lr.metrics.counter_value("SplitPlanReplay") == 1
    assert lr.metrics.counter_value("SplitPlanMiss") >= 1
    h = (x @ w.t()).relu()
    torch.testing.assert_close(loss.cpu(), h.sum() * 4.0)
    torch.testing.assert_close(rest.cpu(), (h * 2).exp())
    torch.testing.assert_close(other.cpu(), x.sum() + 1)
    loss, rest = _step(lx, lw, 5.0)  # the planned structure again
    lr.mark_step()
    assert lr.metrics.counter_value("SplitPlanReplay") == 2
    torch.testing.assert_close(rest.cpu(), ((x @ w).relu() * 2).exp())


def _outcome(tensor):
    try:
        return ("value", tensor.cpu().tolist())
    except lr.LazyGraphError as error:
        return ("error", error.op_name, error.stage)


def _failing_steps(first_fails: bool):
    """Three good steps (the plan is filed), then one whose index is out of range: in the
    first graph's region (``first_fails``) or in the second graph, reading a value the first
    one hands over (its diagnosis needs the second graph's nodes rebuilt over that data)."""
    x = torch.arange(12.0).reshape(4, 3).to(LAZY)
    outcomes = []
    for bad in (False, False, False, True):
        index = torch.tensor([0, 7 if bad else 2]).to(LAZY)
        lr.mark_step()
        picked = x.index_select(0, index) if first_fails else x * 3
        loss = picked.sum()  # the first graph computes ``picked`` and hands it over
        gathered = picked * 5 if first_fails else picked.index_select(0, index)
        plain = x + 1  # independent of the failure
        try:
            lr.mark_step()
            lr.wait_device_ops()
            outcomes.append("ran")
        except lr.LazyGraphError as error:
            outcomes.append(("raised", error.op_name))
        outcomes += [_outcome(t) for t in (loss, gathered, plain)]
    lr.wait_device_ops()
    return outcomes


@pytest.mark.parametrize("first_fails", [False, True], ids=["second-graph", "first-graph"])
def test_a_failed_planned_split_fails_as_the_generic_one(
    early_results, fresh_metrics, monkeypatch, first_fails
):
    planned = _failing_steps(first_fails)
    assert lr.metrics.counter_value("SplitPlanReplay") >= 1
    monkeypatch.setattr(split_plan, "find", lambda device, tensors: None)
    generic = _failing_steps(first_fails)
    assert planned == generic
    assert any(o[0] == "error" and o[1] == "index_select" for o in planned if type(o) is tuple)
    assert planned[-1] == ("value", (torch.arange(12.0).reshape(4, 3) + 1).tolist())
