"""A backend declines the recurrent layers' nodes (``LstmLayers``, ``GruLayers``) and the
fused cells' nodes through ``Backend.refused_ops`` (issue #39: refusing ``lstm`` was
silently ignored, and refusing a fused cell ended in torch's NotImplementedError, since
eager has no CPU kernel for it). Declined, a layer takes ATen's per-cell path and a cell
is traced op by op, each op refused or not on its own; results equal eager's, and the
decline is listed in ``metrics.fallback_report()``."""

from __future__ import annotations

import copy
import gc

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend

#: Training needs index 0 (torch 2.13's autograd engine runs backward there only): each
#: test switches it to its declining backend, then back.
DEVICE = "lazygen:0"
OTHER = "lazygen:4"  # a device whose backend declines nothing (forward only)


class _Declining(TorchScriptBackend):
    """TorchScript, refusing the ops it is made with."""

    name = "declining-recurrent"

    def __init__(self, refused) -> None:
        super().__init__()
        self.refused = refused

    def refused_ops(self) -> dict:
        return dict.fromkeys(self.refused)


@pytest.fixture
def refusing():
    """``refusing(*ops)``: ``lazygen:0`` runs a backend refusing ``ops`` until the test ends."""
    default = lr.backend(0)

    def install(*ops):
        lr.mark_step()
        gc.collect()  # tensors of earlier tests hold index 0 until collected
        lr.set_device_backend(0, _Declining(ops))
        lr.metrics.reset()

    yield install
    lr.mark_step()
    gc.collect()
    lr.set_device_backend(0, default)


def _train(module, inputs, device):
    """Outputs and every gradient (inputs and parameters) of a loss of all outputs."""
    module = copy.deepcopy(module).to(device)
    leaves = [t.clone().to(device).requires_grad_() for t in inputs]
    outputs = module(*leaves)
    flat = [t for t in torch.utils._pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    sum(t.sin().sum() for t in flat).backward()
    grads = [t.grad for t in (*leaves, *module.parameters())]
    return [t.detach().cpu() for t in flat], [g.cpu() for g in grads]


def _assert_equal_to_eager(module, inputs):
    lazy, eager = _train(module, inputs, DEVICE), _train(module, inputs, "cpu")
    for got, want in zip(lazy[0] + lazy[1], eager[0] + eager[1], strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def _layer(kind):
    torch.manual_seed(0)
    return getattr(torch.nn, kind)(4, 5, num_layers=2, bidirectional=True)


def _sequence():
    torch.manual_seed(1)
    return (torch.randn(3, 2, 4),)


def _declined_ops() -> set[str]:
    return {e.op for e in lr.metrics.fallback_report().declined}


@pytest.mark.parametrize(
    "kind, refused",
    [
        ("LSTM", "lstm"),
        ("LSTM", "aten::lstm.input"),
        ("LSTM", "_thnn_fused_lstm_cell"),
        ("GRU", "gru"),
        ("GRU", "aten::gru.input"),
        ("GRU", "_thnn_fused_gru_cell_backward"),
    ],
)
def test_a_declined_layer_takes_atens_per_cell_path_and_equals_eager(kind, refused, refusing):
    refusing(refused)
    model, (x,) = _layer(kind), _sequence()
    out = model.to(DEVICE)(x.to(DEVICE))[0]
    assert "_layers" not in lr.debug.dump_ir([out])  # no LstmLayers / GruLayers node
    counters = lr.metrics.counters()
    assert not any(name.endswith("_layers") for name in counters), counters
    assert f"aten::{kind.lower()}" in _declined_ops()
    assert lr.metrics.counter_value("lazy::mm")  # the per-cell path's matrix products
    assert "declined (traced as plain ops)" in str(lr.metrics.fallback_report())
    lr.mark_step()
    lr.metrics.reset()
    _assert_equal_to_eager(model, _sequence())
    assert lr.metrics.counter_value(f"lazy::{kind.lower()}_layers") is None
    assert lr.metrics.fallback_report().refused == ()  # nothing ran eagerly


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_not_declining_keeps_one_node(kind, refusing):
    refusing("relu")  # a refusal of an unrelated op
    _assert_equal_to_eager(_layer(kind), _sequence())
    assert lr.metrics.counter_value(f"lazy::{kind.lower()}_layers") == 1
    assert lr.metrics.counter_value(f"lazy::{kind.lower()}_layers_backward") == 1
    assert _declined_ops() == set()
    assert "declined" not in str(lr.metrics.fallback_report())


@pytest.mark.parametrize(
    "cell, refused",
    [
        ("LSTMCell", ("_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl")),
        ("LSTMCell", ("_thnn_fused_lstm_cell_backward_impl",)),
        ("GRUCell", ("_thnn_fused_gru_cell", "_thnn_fused_gru_cell_backward")),
    ],
)
def test_a_declined_cell_is_traced_op_by_op_and_equals_eager(cell, refused, refusing):
    """Refusing a fused cell ran it through the eager fallback, where the CPU has no kernel
    for it (NotImplementedError); it is traced op by op now."""
    refusing(*refused)
    torch.manual_seed(0)
    module = getattr(torch.nn, cell)(4, 5)
    inputs = (torch.randn(3, 4), torch.randn(3, 5))
    if cell == "LSTMCell":  # states as separate arguments, so each gets a gradient
        module, inputs = _Unpacked(module), (*inputs, torch.randn(3, 5))
    _assert_equal_to_eager(module, inputs)
    assert _declined_ops() == {f"aten::{name}" for name in refused}
    counters = lr.metrics.counters()
    assert not any(f"lazy::{name}" in counters for name in refused), counters
    assert not any(name.startswith("aten::") for name in counters), counters


class _Unpacked(torch.nn.Module):
    """An ``LSTMCell`` called with its states as separate arguments."""

    def __init__(self, cell) -> None:
        super().__init__()
        self.cell = cell

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


def test_the_cell_ops_of_a_declined_layer_are_refused_one_by_one(refusing):
    """Declined layer and cell: the cell's plain ops are traced, and those the backend
    refuses (``sigmoid`` here) run eagerly, listed as refused."""
    refusing("lstm", "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "sigmoid")
    _assert_equal_to_eager(_layer("LSTM"), _sequence())
    report = lr.metrics.fallback_report()
    assert [e.op for e in report.refused] == ["aten::sigmoid"]
    assert {"aten::lstm", "aten::_thnn_fused_lstm_cell"} <= _declined_ops()
    assert lr.metrics.counter_value("lazy::tanh")  # the cell's other ops traced
    # the same model on a device whose backend keeps the node still records it
    lr.metrics.reset()
    model = _layer("LSTM").to(OTHER)
    model(_sequence()[0].to(OTHER))[0].cpu()
    assert lr.metrics.counter_value("lazy::lstm_layers") == 1
