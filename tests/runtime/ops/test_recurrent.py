"""Recurrent layers and cells run lazily, with their backward, and equal eager.

ATen sends non-CPU inputs of ``lstm``/``gru`` (and ``lstm_cell``/``gru_cell``) to the fused
cells ``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``, CUDA-only kernels the eager
fallback could not run ("Could not run 'aten::_thnn_fused_lstm_cell' with arguments from the
'CPU' backend"); they are lazy kernels now. Packed sequences failed because ``batch_sizes``
came back as a functional wrapper without data ("data is not allocated yet").

Each case compares the output, the final hidden state(s) and every gradient (input and
parameters) with eager's, and asserts that nothing ran through the eager fallback. The
cases cover each option at least once (a sweep of all 160 combinations of kind, direction,
layers, dropout, batch_first, proj_size and packing passed when the kernels were written;
it takes minutes, so it is not kept here).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import lazygen.runtime as lr

LAZY = "lazygen"


def _layer(kind, **options):
    torch.manual_seed(0)
    if kind == "LSTM":
        return torch.nn.LSTM(4, 5, **options)
    if kind == "GRU":
        return torch.nn.GRU(4, 5, **options)
    return torch.nn.RNN(4, 5, nonlinearity=kind.split("_")[1], **options)


def _run_layer(model, x, device, packing=None):
    """Output, final hidden state(s), input and parameter gradients, on the CPU."""
    model = copy.deepcopy(model).to(device).train()
    x = x.clone().to(device).requires_grad_()
    torch.manual_seed(1)  # dropout between layers draws the same numbers on both devices
    inputs = x
    if packing is not None:
        lengths, enforce_sorted = packing
        inputs = pack_padded_sequence(
            x, lengths, batch_first=model.batch_first, enforce_sorted=enforce_sorted
        )
    out, hidden = model(inputs)
    if packing is not None:
        out, _ = pad_packed_sequence(out, batch_first=model.batch_first)
    hidden = hidden if isinstance(hidden, tuple) else (hidden,)
    (out.pow(2).sum() + sum(h.sin().sum() for h in hidden)).backward()
    results = [out, *hidden, x.grad, *(p.grad for p in model.parameters())]
    return [t.detach().cpu() for t in results]


#: (kind, layer options, packing: None or (lengths, enforce_sorted))
LAYER_CASES = [
    ("LSTM", {}, None),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, None),
    ("LSTM", {"num_layers": 2, "dropout": 0.3, "batch_first": True}, None),
    ("LSTM", {"proj_size": 3, "bidirectional": True}, None),
    ("LSTM", {"bias": False}, None),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, ([4, 3, 2], True)),
    ("LSTM", {"proj_size": 3, "batch_first": True}, ([2, 4, 3], False)),
    ("GRU", {}, None),
    ("GRU", {"num_layers": 2, "dropout": 0.3, "bidirectional": True}, None),
    ("GRU", {"batch_first": True, "bias": False}, ([2, 4, 3], False)),
    ("GRU", {"bidirectional": True}, ([4, 3, 2], True)),
    ("RNN_tanh", {"num_layers": 2, "bidirectional": True}, None),
    ("RNN_tanh", {"batch_first": True}, ([2, 4, 3], False)),
    ("RNN_relu", {"num_layers": 2, "dropout": 0.3}, ([4, 3, 2], True)),
]


@pytest.mark.parametrize(
    "kind,options,packing",
    LAYER_CASES,
    ids=[f"{k}-{'-'.join(f'{a}={b}' for a, b in o.items())}-{p}" for k, o, p in LAYER_CASES],
)
def test_recurrent_layer_matches_eager_lazily(kind, options, packing, fresh_metrics):
    model = _layer(kind, **options)
    shape = (3, 4, 4) if options.get("batch_first") else (4, 3, 4)
    x = torch.randn(*shape)
    if packing is not None:
        packing = (torch.tensor(packing[0]), packing[1])
    eager = _run_layer(model, x, "cpu", packing)
    fresh_metrics.reset()
    lazy = _run_layer(model, x, LAZY, packing)
    fallbacks = [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]
    assert not fallbacks, fallbacks
    assert len(lazy) == len(eager)
    for got, want in zip(lazy, eager, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def _run_cell(cell, x, hidden, device, create_graph=False):
    cell = copy.deepcopy(cell).to(device)
    x = x.clone().to(device).requires_grad_()
    hidden = tuple(h.clone().to(device).requires_grad_() for h in hidden)
    out = cell(x, hidden if len(hidden) > 1 else hidden[0]) if hidden else cell(x)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum(o.pow(2).sum() for o in outs)
    inputs = [x, *hidden, *cell.parameters()]
    grads = torch.autograd.grad(loss, inputs, create_graph=create_graph)
    results = [*outs, *grads]
    if create_graph:  # the cells' differentiable backward (grad mode on during backward)
        results += torch.autograd.grad(sum(g.pow(2).sum() for g in grads), inputs)
    return [t.detach().cpu() for t in results]


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize(
    "bias,batched,with_hidden,create_graph",
    [
        (True, True, True, False),
        (False, True, False, False),
        (True, False, True, False),
        (True, True, True, True),
    ],
)
def test_recurrent_cell_matches_eager_lazily(
    kind, bias, batched, with_hidden, create_graph, fresh_metrics
):
    cell = getattr(torch.nn, kind)(4, 5, bias=bias)
    x = torch.randn(3, 4) if batched else torch.randn(4)
    size = (3, 5) if batched else (5,)
    hidden = ()
    if with_hidden:
        hidden = tuple(torch.randn(size) for _ in range(2 if kind == "LSTMCell" else 1))
    eager = _run_cell(cell, x, hidden, "cpu", create_graph)
    fresh_metrics.reset()
    lazy = _run_cell(cell, x, hidden, LAZY, create_graph)
    fallbacks = [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]
    assert not fallbacks, fallbacks
    for got, want in zip(lazy, eager, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_fused_cells_trace_lazily(fresh_metrics):
    """The fused cells and their backward ops are lazy kernels, not eager fallbacks (an
    LSTM with projections and a GRU over a packed sequence still run ATen's per-cell
    composite; dense ones are whole-layer nodes, see test_recurrent_layer_nodes.py)."""
    lstm, gru = torch.nn.LSTM(4, 5, proj_size=3).to(LAZY), torch.nn.GRU(4, 5).to(LAZY)
    x = torch.randn(2, 3, 4).to(LAZY)
    packed = pack_padded_sequence(x, torch.tensor([2, 2, 1]))
    (lstm(x)[0].sum() + gru(packed)[0].data.sum()).backward()
    lr.mark_step()
    names = fresh_metrics.counter_names()
    for op in (
        "_thnn_fused_lstm_cell",
        "_thnn_fused_lstm_cell_backward_impl",
        "_thnn_fused_gru_cell",
        "_thnn_fused_gru_cell_backward",
    ):
        assert f"lazy::{op}" in names, names


def test_packed_batch_sizes_is_a_host_tensor():
    """``batch_sizes`` is a plain CPU tensor with data, as eager's and CUDA's are."""
    x = torch.randn(3, 2, 4).to(LAZY)
    packed = pack_padded_sequence(x, torch.tensor([3, 2]))
    batch_sizes = packed.batch_sizes
    assert batch_sizes.device.type == "cpu"
    assert not torch._is_functional_tensor(batch_sizes)
    assert batch_sizes.data_ptr() != 0
    assert batch_sizes.tolist() == [2, 2, 1]
    assert packed.data.device.type == LAZY


@pytest.mark.parametrize("used", ["h", "c", "both"])
def test_lstm_cell_gradient_through_either_state(used, fresh_metrics):
    """The fused backward node's branches: gradient from hy only, cy only, or both."""

    def run(device):
        torch.manual_seed(0)
        cell = torch.nn.LSTMCell(4, 5).to(device)
        x = torch.randn(3, 4).to(device)
        h, c = cell(x)
        loss = {"h": h.sin().sum(), "c": c.cos().sum(), "both": (h * c).sum()}[used]
        loss.backward()
        return [t.detach().cpu() for t in (h, c, *(p.grad for p in cell.parameters()))]

    want = run("cpu")
    got = run(LAZY)
    for actual, expected in zip(got, want, strict=True):
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)


def test_an_lstm_cell_step_is_one_node_forward_and_one_backward(fresh_metrics):
    """Each cell step of ATen's per-cell path (here: an LSTM with projections) records one
    elementwise node each way (plus the concatenation of the gates and the bias sum), not
    the ~15 ops of its formula."""
    lstm = torch.nn.LSTM(4, 5, proj_size=3).to(LAZY)
    x = torch.randn(6, 2, 4).to(LAZY)
    lstm(x)[0].sum().backward()
    lr.mark_step()
    counters = fresh_metrics.counters()
    assert counters["lazy::_thnn_fused_lstm_cell"] == 6
    assert counters["lazy::_thnn_fused_lstm_cell_backward_impl"] == 6
    for elementwise in ("lazy::sigmoid", "lazy::tanh", "lazy::sigmoid_backward"):
        assert counters.get(elementwise, 0) == 0, counters
