"""Why a graph compiles again (``lazygen.runtime.recompiles``), and what a graph key holds:
operand order and aliasing are part of it, so two graphs that differ only there never share
a compiled graph (torch_xla once returned wrong results from such a collision, its issue
8353)."""

from __future__ import annotations

import sys

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import graph
from lazygen.runtime.execution import executor
from lazygen.runtime.graph.recompiles import ADVICE as REASONS

DEVICE = "lazygen"


@pytest.fixture
def explaining(fresh_metrics):
    executor.clear_compile_cache()  # graphs of other tests would be "nearest" ones
    lr.config.set_explain_recompiles(True)
    yield fresh_metrics
    lr.config.set_explain_recompiles(False)


def _step(n: int, w: torch.Tensor) -> torch.Tensor:
    x = torch.ones(n, 8, device=DEVICE) * 0.5
    y = (x @ w).relu()  # THE-MM-LINE
    lr.mark_step()
    return y


def test_a_new_size_is_explained_naming_the_op_and_the_users_line(explaining, capsys):
    w = torch.ones(8, 4, device=DEVICE)
    lr.mark_step()
    for n in (3, 3):
        _step(n, w)
    err = capsys.readouterr().err  # w's graph and the step's: new; the second step: cached
    assert err.count("lazygen: compiling a new graph") == 2 and "recompiling" not in err, err
    _step(5, w)
    err = capsys.readouterr().err
    assert "recompiling" in err and "reason: shape" in err, err
    assert "float32[5, 8]" in err and "float32[3, 8]" in err, err
    assert "test_recompiles.py:" in err, err  # the user's line of the differing node
    assert explaining.counter_value("Recompile_shape") == 1


def test_a_backward_node_is_explained_as_the_backward(explaining, capsys):
    """A backward node traces with no user frame between it and autograd's engine (on the
    calling thread the user's ``loss.backward()`` line is further out): its nodes are said
    to come from the backward, not from "an unknown line" nor from that line."""
    w = torch.ones(8, 4, device=DEVICE, requires_grad=True)
    for n in (3, 5):
        x = torch.ones(n, 8, device=DEVICE)
        loss = (x @ w).sum()
        lr.mark_step()  # the forward alone: the backward's graph starts at x
        backward_line = sys._getframe().f_lineno + 1
        loss.backward()
        lr.mark_step()
        w.grad = None
    err = capsys.readouterr().err
    assert "backward (autograd's engine)" in err, err
    assert "an unknown line" not in err, err
    assert f"test_recompiles.py:{backward_line}\n" not in err, err


def test_a_changed_python_value_is_an_attribute_recompile(explaining, capsys):
    w = torch.randn(4, 6, device=DEVICE)
    lr.mark_step()
    for k in (2, 3):
        values = torch.topk(w, k, dim=1)[0] * 2
        lr.mark_step()
    err = capsys.readouterr().err
    assert "reason: attribute" in err and "aten::topk" in err, err
    assert explaining.counter_value("Recompile_attribute") == 1
    del values


def test_every_compile_is_explained_from_the_first_step(explaining, capsys):
    """One explanation per compile, whichever it is: the first graphs, the optimizer's
    first step (it creates its state: a new graph, not a variant), and each new size.
    Those of the second step were not explained: no cached graph was near enough."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    model = model.to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    for n in (4, 6, 6, 8):
        loss = model(torch.ones(n, 8, device=DEVICE)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        lr.mark_step()
    err = capsys.readouterr().err
    explained = err.count("lazygen: compiling a new graph") + err.count("lazygen: recompiling")
    compiles = explaining.counter_value("UncachedCompile")
    counted = sum(explaining.counter_value(f"Recompile_{reason}") or 0 for reason in REASONS)
    assert compiles >= 4 and explained == counted == compiles, err
    assert explaining.counter_value("Recompile_shape"), err


def test_explaining_is_off_by_default(fresh_metrics, capsys):
    w = torch.ones(8, 4, device=DEVICE)
    for n in (2, 7):
        _step(n, w)
    assert "recompiling" not in capsys.readouterr().err
    assert not fresh_metrics.counter_value("Recompile_shape")


def _key(tensors):
    outputs = [lr.inner(t)._value for t in tensors]
    order, position = graph.post_order(outputs)
    return graph.graph_key(order, position, outputs)


def test_operand_order_and_aliasing_are_part_of_the_key():
    x = torch.randn(3, device=DEVICE)
    y = torch.randn(3, device=DEVICE)
    lr.mark_step()
    computed = x * 2
    keys = {
        "x - y": _key([x - y]),
        "x - x": _key([x - x]),  # one input read twice: another graph
        "2x - y": _key([computed - y]),
        "y - 2x": _key([y - computed]),
    }
    assert len(set(keys.values())) == len(keys), keys
    for a, b in ((computed, y), (y, computed)):
        lazy = a - b
        lr.mark_step()
        torch.testing.assert_close(lazy.cpu(), a.cpu() - b.cpu())


def test_same_structure_other_order_shares_the_graph_and_stays_correct(fresh_metrics):
    """``a - b`` and ``b - a`` on two fresh inputs are one graph (param0 - param1): the
    inputs are fed in the order the graph reads them, so sharing it is right."""
    a = torch.tensor([5.0, 7.0], device=DEVICE)
    b = torch.tensor([1.0, 2.0], device=DEVICE)
    lr.mark_step()
    first, second = a - b, b - a
    lr.mark_step()
    assert first.cpu().tolist() == [4.0, 5.0] and second.cpu().tolist() == [-4.0, -5.0]
    third = b - a
    lr.mark_step()
    assert third.cpu().tolist() == [-4.0, -5.0]
