"""``nn.LSTM`` over a dense sequence is one lazy node forward and one backward, and equals
eager (see ``lazygen/runtime/ops/lstm.py``).

Each case compares the output, ``h_n``, ``c_n`` and every gradient (input, initial states,
parameters) with eager's within 1e-5 and asserts the op counters: one ``lstm_layers`` and
one ``lstm_layers_backward`` per call, no per-cell kernels, nothing through the eager
fallback. What the node does not cover keeps ATen's per-cell path, checked the same way.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import lazygen.runtime as lr

LAZY = "lazygen"
NODE, BACKWARD = "lazy::lstm_layers", "lazy::lstm_layers_backward"
CELL = "lazy::_thnn_fused_lstm_cell"


def _lstm(dtype=torch.float32, **options):
    torch.manual_seed(0)
    return torch.nn.LSTM(4, 5, **options).to(dtype)


def _inputs(model, dtype, steps=4, batch=3, with_state=False):
    torch.manual_seed(2)
    shape = (batch, steps, 4) if model.batch_first else (steps, batch, 4)
    x = torch.randn(*shape, dtype=dtype)
    if not with_state:
        return x, None
    cells = model.num_layers * (2 if model.bidirectional else 1)
    state = tuple(torch.randn(cells, batch, 5, dtype=dtype) for _ in range(2))
    return x, state


def _run(model, x, state, device, loss_of=None):
    """Output, h_n, c_n and the gradients of a loss of them, on the CPU."""
    model = copy.deepcopy(model).to(device).train()
    x = x.clone().to(device).requires_grad_()
    leaves = [x]
    if state is None:
        out, (h, c) = model(x)
    else:
        state = tuple(s.clone().to(device).requires_grad_() for s in state)
        leaves += list(state)
        out, (h, c) = model(x, state)
    loss_of = loss_of or (lambda o, h, c: o.pow(2).sum() + h.sin().sum() + c.cos().sum())
    loss_of(out, h, c).backward()
    grads = [t.grad for t in (*leaves, *model.parameters())]
    return [t.detach().cpu() for t in (out, h, c)], grads


def _assert_same(lazy, eager):
    (lazy_results, lazy_grads), (eager_results, eager_grads) = lazy, eager
    for got, want in zip(lazy_results, eager_results, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert len(lazy_grads) == len(eager_grads)
    for got, want in zip(lazy_grads, eager_grads, strict=True):
        if want is None:
            assert got is None or not got.cpu().any()
            continue
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


def _assert_one_node_each_way(metrics):
    counters = metrics.counters()
    assert counters.get(NODE) == 1, counters
    assert counters.get(BACKWARD) == 1, counters
    assert CELL not in counters, counters
    fallbacks = [n for n in counters if n.startswith("aten::")]
    assert not fallbacks, fallbacks


#: (layer options, dtype, initial state given)
CASES = [
    ({}, torch.float32, False),
    ({}, torch.float64, True),
    ({"num_layers": 2}, torch.float32, True),
    ({"num_layers": 3, "bidirectional": True}, torch.float32, False),
    ({"bidirectional": True, "batch_first": True}, torch.float64, True),
    ({"num_layers": 2, "bidirectional": True, "batch_first": True}, torch.float32, True),
    ({"bias": False}, torch.float32, True),
    ({"num_layers": 2, "bias": False, "bidirectional": True}, torch.float64, False),
    ({"num_layers": 2, "batch_first": True, "bias": False}, torch.float32, False),
    ({"dropout": 0.5}, torch.float32, False),  # one layer: ATen applies no dropout
]


@pytest.mark.parametrize(
    "options,dtype,with_state",
    CASES,
    ids=[f"{'-'.join(f'{a}={b}' for a, b in o.items()) or 'default'}-{d}-{s}" for o, d, s in CASES],
)
def test_lstm_is_one_node_each_way_and_equals_eager(options, dtype, with_state, fresh_metrics):
    model = _lstm(dtype, **options)
    x, state = _inputs(model, dtype, with_state=with_state)
    eager = _run(model, x, state, "cpu")
    fresh_metrics.reset()
    lazy = _run(model, x, state, LAZY)
    _assert_one_node_each_way(fresh_metrics)
    _assert_same(lazy, eager)


@pytest.mark.parametrize("used", ["output", "h_n", "c_n"])
@pytest.mark.parametrize("options", [{"num_layers": 2}, {"bidirectional": True}])
def test_gradient_through_one_result_only(used, options, fresh_metrics):
    """The other results' incoming gradients are zeros (autograd materialises them)."""
    model = _lstm(**options)
    x, state = _inputs(model, torch.float32, with_state=True)

    def loss_of(out, h, c):
        return {"output": out, "h_n": h, "c_n": c}[used].tanh().sum()

    eager = _run(model, x, state, "cpu", loss_of)
    fresh_metrics.reset()
    lazy = _run(model, x, state, LAZY, loss_of)
    _assert_one_node_each_way(fresh_metrics)
    _assert_same(lazy, eager)


def test_single_step_and_single_element_batch(fresh_metrics):
    model = _lstm(num_layers=2, bidirectional=True)
    x, state = _inputs(model, torch.float32, steps=1, batch=1, with_state=True)
    eager = _run(model, x, state, "cpu")
    fresh_metrics.reset()
    lazy = _run(model, x, state, LAZY)
    _assert_one_node_each_way(fresh_metrics)
    _assert_same(lazy, eager)


class _Classifier(torch.nn.Module):
    def __init__(self, kind: str, **options) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.rnn = getattr(torch.nn, kind)(4, 6, **options)
        width = options.get("proj_size") or 6
        self.head = torch.nn.Linear(width * (2 if options.get("bidirectional") else 1), 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1] if self.rnn.batch_first else out[-1])


def _train(device, kind, steps=4, **options):
    model = _Classifier(kind, **options).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    torch.manual_seed(3)
    x = torch.randn(5, 7, 4)
    target = torch.randint(0, 3, (5,) if options.get("batch_first") else (7,))
    if not options.get("batch_first"):
        x = x.transpose(0, 1).contiguous()
        target = target[:5]
    x, target = x.to(device), target.to(device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        torch.manual_seed(4)  # dropout draws the same numbers on both devices
        loss = torch.nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize(
    "options,node",
    [
        ({"num_layers": 2, "batch_first": True}, True),
        ({"bidirectional": True}, True),
        ({"num_layers": 2, "dropout": 0.3}, False),  # dropout between layers: per-cell path
        ({"proj_size": 2, "batch_first": True}, False),
    ],
)
def test_training_with_adam_equals_eager(options, node, fresh_metrics):
    _assert_training_equals_eager("LSTM", options, node, (NODE, CELL), fresh_metrics)


def _assert_training_equals_eager(kind, options, node, counters_of, metrics):
    """Adam training of a classifier on ``kind`` equals eager's; the layer ran as the node
    pair (``node``) or through the per-cell path (``counters_of``: node, cell counters)."""
    want_losses, want_params = _train("cpu", kind, **options)
    metrics.reset()
    got_losses, got_params = _train(LAZY, kind, **options)
    counters = metrics.counters()
    node_counter, cell_counter = counters_of
    assert (counters.get(node_counter, 0) == 4) is node, counters
    assert (counters.get(cell_counter, 0) > 0) is not node, counters
    torch.testing.assert_close(got_losses, want_losses, atol=1e-5, rtol=1e-5)
    for got, want in zip(got_params, want_params, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_inference_records_the_forward_node_without_workspace(fresh_metrics):
    model = _lstm(num_layers=2, bidirectional=True)
    x, state = _inputs(model, torch.float32, with_state=True)
    with torch.no_grad():
        want = model(x, state)
        fresh_metrics.reset()
        lazy = copy.deepcopy(model).to(LAZY)
        out, (h, c) = lazy(x.to(LAZY), tuple(s.to(LAZY) for s in state))
        node = torch._from_functional_tensor(out)._value.node
    assert len(node.shapes) == 3  # output, h_n, c_n: no workspace
    counters = fresh_metrics.counters()
    assert counters.get(NODE) == 1 and BACKWARD not in counters, counters
    got = (out, (h, c))
    torch.testing.assert_close(got[0].cpu(), want[0], atol=1e-5, rtol=1e-5)
    for g, w in zip(got[1], want[1], strict=True):
        torch.testing.assert_close(g.cpu(), w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "options,packed",
    [
        ({"num_layers": 2, "dropout": 0.3}, False),
        ({"proj_size": 3, "bidirectional": True}, False),
        ({"num_layers": 2, "bidirectional": True}, True),
    ],
    ids=["dropout-between-layers", "projections", "packed"],
)
def test_uncovered_calls_keep_the_per_cell_path(options, packed, fresh_metrics):
    model = _lstm(**options)
    x, _ = _inputs(model, torch.float32)

    def run(device):
        m = copy.deepcopy(model).to(device).train()
        inputs = x.clone().to(device).requires_grad_()
        torch.manual_seed(1)
        feed = pack_padded_sequence(inputs, torch.tensor([4, 3, 2])) if packed else inputs
        out, (h, c) = m(feed)
        if packed:
            out, _ = pad_packed_sequence(out)
        (out.pow(2).sum() + h.sin().sum() + c.cos().sum()).backward()
        grads = [inputs.grad, *(p.grad for p in m.parameters())]
        return [t.detach().cpu() for t in (out, h, c)], grads

    eager = run("cpu")
    fresh_metrics.reset()
    lazy = run(LAZY)
    counters = fresh_metrics.counters()
    assert NODE not in counters and counters.get(CELL, 0) > 0, counters
    _assert_same(lazy, eager)


def test_mixed_dtypes_raise_as_in_eager(fresh_metrics):
    """``torch.lstm`` with a float64 input and float32 weights (``nn.LSTM`` refuses such a
    call before ATen sees it) is no node: ATen's per-cell path fails where it is called, as
    eager does (its ``mm`` sees the two dtypes when traced), and leaves nothing that fails
    later."""
    model = _lstm()
    x, state = _inputs(model, torch.float64, with_state=True)

    def call(device):
        weights = [w.to(device) for w in model._flat_weights]
        state_ = tuple(s.float().to(device) for s in state)
        return torch.lstm(x.to(device), state_, weights, True, 1, 0.0, True, False, False)

    with pytest.raises(RuntimeError) as eager:
        call("cpu")
    assert "same dtype" in str(eager.value)
    with pytest.raises(lr.LazygenRuntimeError, match="mm needs tensors of one dtype"):
        call(LAZY)
    assert NODE not in fresh_metrics.counters()
    lr.mark_step(wait=True)  # nothing of the failed call is left to fail
    y = torch.ones(3, device=LAZY) * 2
    lr.mark_step(wait=True)
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]


def test_lstm_on_cpu_tensors_is_untouched():
    """Only lazy inputs reach the lazy autograd kernel; a mix is ATen's device error."""
    model = _lstm()
    x, _ = _inputs(model, torch.float32)
    out, _ = model(x)
    assert out.device.type == "cpu"
    with pytest.raises(RuntimeError):
        model.to(LAZY)(x)


def test_same_length_reuses_the_compiled_graph(fresh_metrics):
    model = _lstm(num_layers=2).to(LAZY)
    x = torch.randn(6, 2, 4).to(LAZY)
    for _ in range(3):
        model(x)[0].sum().backward()
        lr.mark_step()
    first = fresh_metrics.counter_value("UncachedCompile")
    for _ in range(2):
        model(x)[0].sum().backward()
        lr.mark_step()
    assert fresh_metrics.counter_value("UncachedCompile") == first


# GRU (``lazygen/runtime/ops/gru.py``) ------------------------------------------------------------

GRU_NODE, GRU_BACKWARD = "lazy::gru_layers", "lazy::gru_layers_backward"
GRU_CELL = "lazy::_thnn_fused_gru_cell"


def _gru(dtype=torch.float32, **options):
    torch.manual_seed(0)
    return torch.nn.GRU(4, 5, **options).to(dtype)


def _run_gru(model, x, state, device, loss_of=None):
    model = copy.deepcopy(model).to(device).train()
    x = x.clone().to(device).requires_grad_()
    leaves = [x]
    if state is None:
        out, h = model(x)
    else:
        state = state[0].clone().to(device).requires_grad_()
        leaves.append(state)
        out, h = model(x, state)
    loss_of = loss_of or (lambda o, h: o.pow(2).sum() + h.sin().sum())
    loss_of(out, h).backward()
    grads = [t.grad for t in (*leaves, *model.parameters())]
    return [t.detach().cpu() for t in (out, h)], grads


GRU_CASES = [
    ({}, torch.float32, False),
    ({"num_layers": 2}, torch.float64, True),
    ({"num_layers": 2, "bidirectional": True, "batch_first": True}, torch.float32, True),
    ({"bias": False, "bidirectional": True}, torch.float32, False),
    ({"num_layers": 3, "batch_first": True, "bias": False}, torch.float64, True),
]


@pytest.mark.parametrize(
    "options,dtype,with_state",
    GRU_CASES,
    ids=[
        f"{'-'.join(f'{a}={b}' for a, b in o.items()) or 'default'}-{d}-{s}"
        for o, d, s in GRU_CASES
    ],
)
def test_gru_is_one_node_each_way_and_equals_eager(options, dtype, with_state, fresh_metrics):
    model = _gru(dtype, **options)
    x, state = _inputs(model, dtype, with_state=with_state)
    eager = _run_gru(model, x, state, "cpu")
    fresh_metrics.reset()
    lazy = _run_gru(model, x, state, LAZY)
    counters = fresh_metrics.counters()
    assert counters.get(GRU_NODE) == 1 and counters.get(GRU_BACKWARD) == 1, counters
    assert GRU_CELL not in counters, counters
    assert not [n for n in counters if n.startswith("aten::")], counters
    _assert_same(lazy, eager)


@pytest.mark.parametrize("used", ["output", "h_n"])
def test_gru_gradient_through_one_result_only(used, fresh_metrics):
    model = _gru(num_layers=2, bidirectional=True)
    x, state = _inputs(model, torch.float32, with_state=True)

    def loss_of(out, h):
        return {"output": out, "h_n": h}[used].tanh().sum()

    eager = _run_gru(model, x, state, "cpu", loss_of)
    fresh_metrics.reset()
    lazy = _run_gru(model, x, state, LAZY, loss_of)
    assert fresh_metrics.counters().get(GRU_BACKWARD) == 1
    _assert_same(lazy, eager)


@pytest.mark.parametrize(
    "options,node",
    [({"num_layers": 2, "batch_first": True}, True), ({"num_layers": 2, "dropout": 0.3}, False)],
)
def test_gru_training_with_adam_equals_eager(options, node, fresh_metrics):
    _assert_training_equals_eager("GRU", options, node, (GRU_NODE, GRU_CELL), fresh_metrics)


def test_unbatched_input_and_carried_state(fresh_metrics):
    """An unbatched sequence (``nn.LSTM`` adds the batch dimension) and a second call that
    starts from the first one's detached final state (truncated BPTT)."""
    model = _lstm(num_layers=2)

    def run(device):
        m = copy.deepcopy(model).to(device)
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1)).to(device)
        out, (h, c) = m(x)
        out2, (h2, c2) = m(x * 2, (h.detach(), c.detach()))
        (out.sum() + out2.pow(2).sum() + c2.sum()).backward()
        grads = [p.grad for p in m.parameters()]
        return [t.detach().cpu() for t in (out, out2, h2, c2)], grads

    eager = run("cpu")
    fresh_metrics.reset()
    lazy = run(LAZY)
    counters = fresh_metrics.counters()
    assert counters.get(NODE) == 2 and counters.get(BACKWARD) == 2, counters
    _assert_same(lazy, eager)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_gradient_of_the_gradient_equals_eager(kind, fresh_metrics):
    """``create_graph=True`` (e.g. a gradient penalty): the backward recomputes through
    ATen's composite, whose gradients autograd differentiates again."""
    torch.manual_seed(0)
    model = getattr(torch.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    x = torch.randn(4, 3, 4)

    def run(device):
        m = copy.deepcopy(model).to(device)
        inputs = x.clone().to(device).requires_grad_()
        out = m(inputs)[0]
        params = list(m.parameters())
        grads = torch.autograd.grad(out.pow(2).sum(), [inputs, *params], create_graph=True)
        penalty = sum(g.pow(2).sum() for g in grads)
        second = torch.autograd.grad(penalty, [inputs, *params])
        return [t.detach().cpu() for t in (out, *grads, *second)]

    want = run("cpu")
    fresh_metrics.reset()
    got = run(LAZY)
    counters = fresh_metrics.counters()
    assert counters.get(NODE if kind == "LSTM" else GRU_NODE) == 1, counters
    # The first backward recomputes; the second reaches the forward node again through
    # ``out`` (the penalty depends on it), without a graph: the backward node.
    assert counters.get(BACKWARD if kind == "LSTM" else GRU_BACKWARD) == 1, counters
    for actual, expected in zip(got, want, strict=True):
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
